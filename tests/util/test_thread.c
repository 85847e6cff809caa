/*
 * Background threads (src/util/thread.c): a thread started with
 * pb_thread_start_masked blocks every signal but the fault signals, is
 * detached or joinable as asked, gets the stack size asked for, and leaves
 * its starter's signal mask as it was.
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stddef.h>

#include "harness.h"
#include "util/thread.h"

/* what the thread saw of itself */
typedef struct {
    sigset_t mask;
    int detach_state;
    size_t stack_size;
    sem_t done;
} seen_t;

static void *observe(void *arg)
{
    seen_t *seen = arg;
    pthread_attr_t attr;

    pthread_sigmask(SIG_SETMASK, NULL, &seen->mask);
    seen->detach_state = -1;
    seen->stack_size = 0;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        pthread_attr_getdetachstate(&attr, &seen->detach_state);
        pthread_attr_getstacksize(&attr, &seen->stack_size);
        pthread_attr_destroy(&attr);
    }
    sem_post(&seen->done);
    return arg;
}

/* every signal blocked but SIGSEGV, SIGBUS, SIGFPE and SIGILL */
static void check_mask(const sigset_t *mask)
{
    static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
    static const int others[] = {SIGINT, SIGTERM, SIGUSR1, SIGCHLD, SIGALRM, SIGPIPE};

    for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); i++)
        CHECK_MSG(!sigismember(mask, faults[i]), "fault signal %d blocked", faults[i]);
    for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++)
        CHECK_MSG(sigismember(mask, others[i]), "signal %d not blocked", others[i]);
    CHECK_MSG(sigismember(mask, SIGRTMIN), "SIGRTMIN not blocked");
}

/* joinable by default, with the default stack; the caller's mask unchanged */
static void case_joinable(void)
{
    seen_t seen;
    sigset_t before, after;
    pthread_t thread;
    void *ret = NULL;

    CHECK(sem_init(&seen.done, 0, 0) == 0);
    pthread_sigmask(SIG_SETMASK, NULL, &before);
    CHECK(!sigismember(&before, SIGUSR1));
    CHECK(pb_thread_start_masked(observe, &seen, 0, 0, &thread) == 0);
    pthread_sigmask(SIG_SETMASK, NULL, &after);
    CHECK_MSG(!sigismember(&after, SIGUSR1) && !sigismember(&after, SIGINT),
              "the starter's mask changed");
    CHECK(pthread_join(thread, &ret) == 0);
    CHECK(ret == &seen);
    check_mask(&seen.mask);
    CHECK_MSG(seen.detach_state == PTHREAD_CREATE_JOINABLE, "detach state %d", seen.detach_state);
    sem_destroy(&seen.done);
}

/* detached, with the stack size asked for, no id wanted */
static void case_detached(void)
{
    static seen_t seen; /* outlives this case: the thread is not joined */
    size_t asked = 256 * 1024;

    CHECK(sem_init(&seen.done, 0, 0) == 0);
    CHECK(pb_thread_start_masked(observe, &seen, 1, asked, NULL) == 0);
    while (sem_wait(&seen.done) != 0)
        ;
    check_mask(&seen.mask);
    CHECK_MSG(seen.detach_state == PTHREAD_CREATE_DETACHED, "detach state %d", seen.detach_state);
    CHECK_MSG(seen.stack_size >= asked, "stack of %zu bytes, %zu asked", seen.stack_size, asked);
}

/* a stack size below the minimum is refused with its error number */
static void case_bad_stack(void)
{
    seen_t seen;

    CHECK(pb_thread_start_masked(observe, &seen, 0, 1, NULL) == EINVAL);
}

static const pbt_case_t cases[] = {
    PBT_CASE(joinable),
    PBT_CASE(detached),
    PBT_CASE(bad_stack),
};

int main(int argc, char **argv)
{
    return pbt_main(argc, argv, cases, PBT_NCASES(cases));
}
