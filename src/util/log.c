#include "util/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/config.h"

int pb_log_current_level = PB_LOG_WARN;

static const char *const level_names[] = {"error", "warn", "info", "debug", "trace"};

void pb_log_init(void)
{
    const char *value = pb_config_get_string("POSTBOX_LOG_LEVEL");

    for (int i = 0; i < (int)PB_ARRAY_SIZE(level_names); i++) {
        if (value != NULL && strcasecmp(value, level_names[i]) == 0) {
            pb_log_current_level = i;
            return;
        }
    }
}

void pb_log_emit(pb_log_level_t level, const char *file, int line, const char *fmt, ...)
{
    int saved_errno = errno; /* so callers may use %m after the message */
    char msg[512];
    va_list ap;
    const char *base = strrchr(file, '/');

    va_start(ap, fmt);
    errno = saved_errno;
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "postbox[%d] %s %s:%d %s\n", (int)getpid(), level_names[level],
            base ? base + 1 : file, line, msg);
    errno = saved_errno;
}
