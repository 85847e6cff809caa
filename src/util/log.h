/*
 * Logging.  The level comes from POSTBOX_LOG_LEVEL (error, warn, info,
 * debug, trace; default warn).  Messages above PB_MAX_LOG_LEVEL compile
 * away, so trace calls cost nothing in release hot paths.  The first
 * function to decide an error logs it; callers only propagate.
 */
#ifndef PB_UTIL_LOG_H
#define PB_UTIL_LOG_H

#include "util/compiler.h"

typedef enum {
    PB_LOG_ERROR = 0,
    PB_LOG_WARN = 1,
    PB_LOG_INFO = 2,
    PB_LOG_DEBUG = 3,
    PB_LOG_TRACE = 4
} pb_log_level_t;

#ifndef PB_MAX_LOG_LEVEL
#define PB_MAX_LOG_LEVEL PB_LOG_DEBUG
#endif

extern int pb_log_current_level;

/* Write one line "postbox[pid] <level> <file>:<line> <message>" to stderr. */
void pb_log_emit(pb_log_level_t level, const char *file, int line, const char *fmt, ...)
    PB_PRINTF(4, 5);

/* Read POSTBOX_LOG_LEVEL; called once by the library constructor path. */
void pb_log_init(void);

#define pb_log(level, ...)                                                                         \
    do {                                                                                           \
        if ((level) <= PB_MAX_LOG_LEVEL && (level) <= pb_log_current_level)                        \
            pb_log_emit((level), __FILE__, __LINE__, __VA_ARGS__);                                 \
    } while (0)

#define pb_error(...) pb_log(PB_LOG_ERROR, __VA_ARGS__)
#define pb_warn(...) pb_log(PB_LOG_WARN, __VA_ARGS__)
#define pb_info(...) pb_log(PB_LOG_INFO, __VA_ARGS__)
#define pb_debug(...) pb_log(PB_LOG_DEBUG, __VA_ARGS__)
#define pb_trace(...) pb_log(PB_LOG_TRACE, __VA_ARGS__)

#endif
