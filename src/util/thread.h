/*
 * Background threads that take no signals.  A library's own threads (the
 * RSM service thread, the MPI engine's copy helper) must not take a signal
 * the application means for its threads, so they start with every signal
 * blocked but those their own faults raise (SIGSEGV, SIGBUS, SIGFPE,
 * SIGILL): blocked, those would kill the process past any handler (a
 * crash reporter's, a sanitizer's).
 */
#ifndef PB_UTIL_THREAD_H
#define PB_UTIL_THREAD_H

#include <pthread.h>
#include <stddef.h>

/* Start a thread running @main_fn(@arg) with every signal blocked but the
 * fault signals; the caller's signal mask is left as it was.  @detached:
 * start it detached (else joinable); @stack_size: its stack in bytes, 0
 * for the default.  The thread's id goes to *@thread_p when not NULL.
 * @return 0, or the error number of pthread_attr_setstacksize or
 * pthread_create (EAGAIN, EINVAL, ...): nothing is logged, the caller
 * says what could not start. */
int pb_thread_start_masked(void *(*main_fn)(void *), void *arg, int detached, size_t stack_size,
                           pthread_t *thread_p);

#endif
