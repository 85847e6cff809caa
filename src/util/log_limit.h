/*
 * Rate-limited log lines, for what a peer can cause again and again (a
 * refused connection, a malformed request): one line per kind and
 * interval, and the next one that is logged says how many were left out.
 */
#ifndef PB_UTIL_LOG_LIMIT_H
#define PB_UTIL_LOG_LIMIT_H

#include <stdint.h>

#include "util/compiler.h"

/* one kind of line: when it was last logged, and how many were left out
 * since (zero-initialised: nothing logged yet) */
typedef struct {
    _Atomic int64_t last_ms;
    _Atomic unsigned long suppressed;
} pb_log_limit_t;

/* Log @fmt as a warning unless a line of @limit's kind was logged less
 * than @interval_ms ago, in which case it is only counted.  Lock-free, so
 * callable from any thread holding any lock (and no lock is left held
 * across a fork).  @return 1 if the line was logged, 0 if it was counted. */
int pb_log_limited(pb_log_limit_t *limit, int interval_ms, const char *fmt, ...) PB_PRINTF(3, 4);

#endif
