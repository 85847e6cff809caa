/*
 * parmacs_pthreads.h: the PARMACS macros of SPLASH-2 programs on plain POSIX
 * threads, in one process.  Include it through postbox/parmacs.h; the same
 * program builds on Postbox's DSM with postbox/parmacs_dsm.h.
 *
 * Every macro that can fail (a thread not created, a lock not initialized,
 * G_MALLOC beyond the size MAIN_INITENV declared) prints what failed on
 * stderr and ends the program with status 2.
 *
 * The DSM rules of apps/splash/README.md are checked here where they can
 * be: G_MALLOC counts its bytes against MAIN_INITENV's size (the DSM's
 * shared region has that size), and from the first CREATE until the last
 * thread is joined the program's C globals (its .data and .bss) are
 * read-only, so a thread or main writing a global then faults (SIGSEGV) as
 * it would silently go wrong on the DSM, where each process has its own
 * copy.  Build with -DPOSTBOX_PARMACS_GUARD_GLOBALS=0 to turn that off
 * (link with -z now, so that lazy binding writes no global: CMake does).
 */
#ifndef POSTBOX_PARMACS_PTHREADS_H
#define POSTBOX_PARMACS_PTHREADS_H

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#ifndef POSTBOX_PARMACS_GUARD_GLOBALS
#define POSTBOX_PARMACS_GUARD_GLOBALS 1
#endif

/* The environment MAIN_INITENV makes: main's own, never shared. */
typedef struct pb_parmacs_env {
    pthread_mutex_t mutex; /* guards the fields below */
    size_t budget;         /* bytes MAIN_INITENV declared */
    size_t allocated;      /* bytes G_MALLOC has handed out */
    pthread_t *threads;    /* the threads CREATE made, in order */
    int capacity;          /* slots of threads */
    int created;           /* threads CREATE made */
    int joined;            /* threads WAIT_FOR_END joined */
} pb_parmacs_env_t;

/* A barrier whose thread count is given at each BARRIER. */
typedef struct pb_parmacs_barrier {
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    unsigned long waiting; /* threads in the current round */
    unsigned long round;   /* rounds completed */
} pb_parmacs_barrier_t;

/* A global self-scheduling subscript (GETSUB). */
typedef struct pb_parmacs_gs {
    pthread_mutex_t mutex;
    int next;     /* the next subscript handed out */
    int finished; /* threads that found the subscripts exhausted */
} pb_parmacs_gs_t;

extern pb_parmacs_env_t *pb_parmacs_env;
/* the bounds of the program's writable data, from the linker and crt1 */
extern char __data_start[], _end[];

/* Print "parmacs: " and the message on stderr and end the program (status
 * 2), without running exit handlers (the globals may be read-only). */
__attribute__((format(printf, 1, 2), noreturn)) static inline void
pb_parmacs_fail(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    fputs("parmacs: ", stderr);
    vfprintf(stderr, format, args);
    fputc('\n', stderr);
    va_end(args);
    fflush(stdout);
    fflush(stderr);
    _exit(2);
}

/* end the program with "parmacs: WHAT: the text of ERR" */
static inline void pb_parmacs_die(const char *what, int err)
{
    pb_parmacs_fail("%s: %s", what, strerror(err));
}

/* the environment, or the end of the program if MAIN_INITENV has not run */
static inline pb_parmacs_env_t *pb_parmacs_env_of(const char *macro)
{
    if (pb_parmacs_env == NULL)
        pb_parmacs_fail("%s before MAIN_INITENV", macro);
    return pb_parmacs_env;
}

/* I, an index of an array of COUNT locks, or the end of the program */
static inline long pb_parmacs_index(long i, long count, const char *macro)
{
    if (i < 0 || i >= count)
        pb_parmacs_fail("%s: lock %ld of an array of %ld", macro, i, count);
    return i;
}

static inline void pb_parmacs_check(int ret, const char *what)
{
    if (ret != 0)
        pb_parmacs_die(what, ret);
}

/* Make the program's .data and .bss read-only (1) or writable again (0). */
static inline void pb_parmacs_guard_globals(int read_only)
{
#if POSTBOX_PARMACS_GUARD_GLOBALS
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t low = (uintptr_t)__data_start & ~(page - 1);
    uintptr_t high = ((uintptr_t)_end + page - 1) & ~(page - 1);
    int prot = read_only ? PROT_READ : PROT_READ | PROT_WRITE;
    if (mprotect((void *)low, high - low, prot) != 0)
        pb_parmacs_die("mprotect of the program's globals", errno);
#else
    (void)read_only;
#endif
}

static inline void pb_parmacs_main_init(size_t global_size)
{
    if (pb_parmacs_env != NULL)
        pb_parmacs_fail("MAIN_INITENV a second time");
    pb_parmacs_env_t *env = calloc(1, sizeof *env);
    if (env == NULL)
        pb_parmacs_die("MAIN_INITENV", ENOMEM);
    pb_parmacs_check(pthread_mutex_init(&env->mutex, NULL), "MAIN_INITENV: mutex");
    env->budget = global_size;
    pb_parmacs_env = env;
}

/* Shared memory of SIZE bytes, 64-byte aligned, counted against the budget. */
static inline void *pb_parmacs_malloc(size_t size)
{
    pb_parmacs_env_t *env = pb_parmacs_env_of("G_MALLOC");
    size_t counted = (size + 63) & ~(size_t)63;
    void *p = NULL;
    pthread_mutex_lock(&env->mutex);
    if (env->allocated + counted > env->budget)
        pb_parmacs_fail("G_MALLOC(%zu): %zu bytes already allocated of the %zu MAIN_INITENV "
                        "declared",
                        size, env->allocated, env->budget);
    env->allocated += counted;
    pthread_mutex_unlock(&env->mutex);
    if (posix_memalign(&p, 64, counted ? counted : 64) != 0)
        pb_parmacs_die("G_MALLOC", ENOMEM);
    return p;
}

static inline void *pb_parmacs_start(void *arg)
{
    void (*entry)(void) = (void (*)(void))arg;
    entry();
    return NULL;
}

static inline void pb_parmacs_create(void (*entry)(void))
{
    pb_parmacs_env_t *env = pb_parmacs_env_of("CREATE");
    if (entry == NULL)
        pb_parmacs_fail("CREATE of a NULL function");
    if (env->created == env->capacity) {
        int capacity = env->capacity ? 2 * env->capacity : 16;
        pthread_t *threads = realloc(env->threads, (size_t)capacity * sizeof *threads);
        if (threads == NULL)
            pb_parmacs_die("CREATE", ENOMEM);
        env->threads = threads;
        env->capacity = capacity;
    }
    if (env->created == env->joined)
        pb_parmacs_guard_globals(1);
    pb_parmacs_check(
        pthread_create(&env->threads[env->created], NULL, pb_parmacs_start, (void *)entry),
        "CREATE");
    env->created++;
}

static inline void pb_parmacs_wait_for_end(int count)
{
    pb_parmacs_env_t *env = pb_parmacs_env_of("WAIT_FOR_END");
    if (count < 0 || count > env->created - env->joined)
        pb_parmacs_fail("WAIT_FOR_END(%d): %d threads are running", count,
                        env->created - env->joined);
    for (int i = 0; i < count; i++)
        pb_parmacs_check(pthread_join(env->threads[env->joined++], NULL), "WAIT_FOR_END");
    if (env->joined == env->created)
        pb_parmacs_guard_globals(0);
}

static inline void pb_parmacs_barrier_init(pb_parmacs_barrier_t *bar)
{
    pb_parmacs_check(pthread_mutex_init(&bar->mutex, NULL), "BARINIT");
    pb_parmacs_check(pthread_cond_init(&bar->cond, NULL), "BARINIT");
    bar->waiting = 0;
    bar->round = 0;
}

static inline void pb_parmacs_barrier(pb_parmacs_barrier_t *bar, long nthreads)
{
    if (nthreads < 1)
        pb_parmacs_fail("BARRIER of %ld threads: at least 1", nthreads);
    pthread_mutex_lock(&bar->mutex);
    unsigned long round = bar->round;
    if (++bar->waiting >= (unsigned long)nthreads) {
        bar->waiting = 0;
        bar->round++;
        pthread_cond_broadcast(&bar->cond);
    } else {
        while (bar->round == round)
            pthread_cond_wait(&bar->cond, &bar->mutex);
    }
    pthread_mutex_unlock(&bar->mutex);
}

static inline void pb_parmacs_gs_init(pb_parmacs_gs_t *gs)
{
    pb_parmacs_check(pthread_mutex_init(&gs->mutex, NULL), "GSINIT");
    gs->next = 0;
    gs->finished = 0;
}

/* The next subscript of 0..MAX, or -1 once they are all handed out; the
 * NPROC-th thread to be told -1 starts the subscripts over. */
static inline int pb_parmacs_getsub(pb_parmacs_gs_t *gs, int max, int nproc)
{
    int sub;
    pthread_mutex_lock(&gs->mutex);
    if (gs->next <= max) {
        sub = gs->next++;
    } else {
        sub = -1;
        if (++gs->finished >= nproc) {
            gs->next = 0;
            gs->finished = 0;
        }
    }
    pthread_mutex_unlock(&gs->mutex);
    return sub;
}

/* Microseconds of a monotonic clock. */
static inline unsigned long pb_parmacs_clock_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long)ts.tv_sec * 1000000UL + (unsigned long)ts.tv_nsec / 1000UL;
}

static inline void pb_parmacs_main_end(int status)
{
    pb_parmacs_env_t *env = pb_parmacs_env_of("MAIN_END");
    if (env->joined != env->created)
        pb_parmacs_fail("MAIN_END: %d threads were never waited for", env->created - env->joined);
    free(env->threads);
    pthread_mutex_destroy(&env->mutex);
    free(env);
    exit(status);
}

/* --- the macros --------------------------------------------------------- */

#define MAIN_ENV pb_parmacs_env_t *pb_parmacs_env;
#define EXTERN_ENV
/* the last of one or two macro arguments: (size) or (, size) */
#define PB_PARMACS_SIZE_ARG(...)                                                                   \
    PB_PARMACS_PICK(__VA_ARGS__, PB_PARMACS_SECOND, PB_PARMACS_FIRST)(__VA_ARGS__)
#define PB_PARMACS_PICK(a, b, name, ...) name
#define PB_PARMACS_FIRST(a) (a)
#define PB_PARMACS_SECOND(a, b) (b)

/* set up, with SIZE bytes for all G_MALLOCs together: MAIN_INITENV(size),
 * or the m4 macros' MAIN_INITENV(, size) */
#define MAIN_INITENV(...) pb_parmacs_main_init(PB_PARMACS_SIZE_ARG(__VA_ARGS__))
#define MAIN_END pb_parmacs_main_end(0)
/* Postbox's addition: end the program with STATUS (SPLASH's MAIN_END is 0) */
#define MAIN_EXIT(status) pb_parmacs_main_end(status)

/* start a thread running void fn(void) */
#define CREATE(fn) pb_parmacs_create(fn)
/* join the N threads CREATE made that are not joined yet */
#define WAIT_FOR_END(n) pb_parmacs_wait_for_end(n)

#define G_MALLOC(size) pb_parmacs_malloc(size)
#define G_FREE(p) free(p)

#define LOCKDEC(l) pthread_mutex_t l;
#define LOCKINIT(l) pb_parmacs_check(pthread_mutex_init(&(l), NULL), "LOCKINIT")
#define LOCK(l) pb_parmacs_check(pthread_mutex_lock(&(l)), "LOCK")
#define UNLOCK(l) pb_parmacs_check(pthread_mutex_unlock(&(l)), "UNLOCK")

#define ALOCKDEC(a, n) pthread_mutex_t a[n];
#define ALOCKINIT(a, n)                                                                            \
    do {                                                                                           \
        long pb_n_ = (long)(n);                                                                    \
        if (pb_n_ > (long)(sizeof(a) / sizeof((a)[0])))                                            \
            pb_parmacs_fail("ALOCKINIT of %ld locks: the array has %ld", pb_n_,                    \
                            (long)(sizeof(a) / sizeof((a)[0])));                                   \
        for (long pb_i_ = 0; pb_i_ < pb_n_; pb_i_++)                                               \
            pb_parmacs_check(pthread_mutex_init(&(a)[pb_i_], NULL), "ALOCKINIT");                  \
    } while (0)
#define PB_PARMACS_LOCK_OF(a, i, macro)                                                            \
    (&(a)[pb_parmacs_index((long)(i), (long)(sizeof(a) / sizeof((a)[0])), macro)])
#define ALOCK(a, i) pb_parmacs_check(pthread_mutex_lock(PB_PARMACS_LOCK_OF(a, i, "ALOCK")), "ALOCK")
#define AULOCK(a, i)                                                                               \
    pb_parmacs_check(pthread_mutex_unlock(PB_PARMACS_LOCK_OF(a, i, "AULOCK")), "AULOCK")

#define BARDEC(b) pb_parmacs_barrier_t b;
/* BARINIT(b) or BARINIT(b, n): the count is BARRIER's */
#define BARINIT(b, ...) pb_parmacs_barrier_init(&(b))
#define BARRIER(b, n) pb_parmacs_barrier(&(b), (long)(n))

#define GSDEC(gs) pb_parmacs_gs_t gs;
#define GSINIT(gs) pb_parmacs_gs_init(&(gs))
#define GETSUB(gs, sub, max, nproc) ((sub) = pb_parmacs_getsub(&(gs), (max), (nproc)))

#define CLOCK(t) ((t) = pb_parmacs_clock_us())

#endif /* POSTBOX_PARMACS_PTHREADS_H */
