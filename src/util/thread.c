#include "util/thread.h"

#include <signal.h>

int pb_thread_start_masked(void *(*main_fn)(void *), void *arg, int detached, size_t stack_size,
                           pthread_t *thread_p)
{
    sigset_t all, saved;
    pthread_attr_t attr;
    pthread_t thread;
    int ret;

    ret = pthread_attr_init(&attr);
    if (ret != 0)
        return ret;
    if (detached)
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (stack_size > 0) {
        ret = pthread_attr_setstacksize(&attr, stack_size);
        if (ret != 0)
            goto out;
    }
    /* the new thread inherits the mask in force when it is created */
    sigfillset(&all);
    sigdelset(&all, SIGSEGV);
    sigdelset(&all, SIGBUS);
    sigdelset(&all, SIGFPE);
    sigdelset(&all, SIGILL);
    pthread_sigmask(SIG_SETMASK, &all, &saved);
    ret = pthread_create(&thread, &attr, main_fn, arg);
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    if (ret == 0 && thread_p != NULL)
        *thread_p = thread;
out:
    pthread_attr_destroy(&attr);
    return ret;
}
