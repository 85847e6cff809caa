/*
 * The monotonic clock, in the units the library's waits count in.  Inline:
 * a waiter that spins reads it once a pass.
 */
#ifndef PB_UTIL_TIME_H
#define PB_UTIL_TIME_H

#include <limits.h>
#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in milliseconds. */
static inline int64_t pb_time_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* CLOCK_MONOTONIC in nanoseconds. */
static inline int64_t pb_time_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Milliseconds left before @deadline_ms (pb_time_now_ms; -1: none), at
 * most @cap_ms (-1: no cap).  @return @cap_ms when there is no deadline,
 * 0 once it has passed, never more than INT_MAX. */
static inline int pb_time_remaining_ms(int64_t deadline_ms, int cap_ms)
{
    int64_t left;

    if (deadline_ms < 0)
        return cap_ms;
    left = deadline_ms - pb_time_now_ms();
    if (left <= 0)
        return 0;
    if (cap_ms >= 0 && left >= cap_ms)
        return cap_ms;
    return left > INT_MAX ? INT_MAX : (int)left;
}

#endif
