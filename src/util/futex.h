/*
 * Futex waits and wakes on 32-bit words.  Always shared futexes (no
 * FUTEX_PRIVATE_FLAG): the words may live in a mapping shared with other
 * processes, and rsm_intr_signal_wait_pollfd waits on several words of
 * either kind with futex_waitv in shared mode.
 */
#ifndef PB_UTIL_FUTEX_H
#define PB_UTIL_FUTEX_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

/* Sleep while *@word holds @expected, at most @timeout_ms (-1: no limit).
 * @return 0 when woken (or the word differed: -1 with errno EAGAIN), -1
 * with errno ETIMEDOUT or EINTR (a signal handler ran). */
int pb_futex_wait(_Atomic uint32_t *word, uint32_t expected, int timeout_ms);

/* Wake every thread asleep on @word. */
void pb_futex_wake_all(_Atomic uint32_t *word);

/* Sleep until one of the @count words at @waits (struct futex_waitv from
 * linux/futex.h) changes from its val, or CLOCK_MONOTONIC reaches @until.
 * @return what futex_waitv returns: the index woken, or -1 with errno. */
long pb_futex_waitv(void *waits, unsigned count, const struct timespec *until);

#endif
