#include "util/log_limit.h"

#include <stdarg.h>
#include <stdio.h>

#include "util/log.h"
#include "util/time.h"

int pb_log_limited(pb_log_limit_t *limit, int interval_ms, const char *fmt, ...)
{
    int64_t now = pb_time_now_ms();
    char line[256];
    va_list ap;

    if (limit->last_ms != 0 && now - limit->last_ms < interval_ms) {
        limit->suppressed++;
        return 0;
    }
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (limit->suppressed > 0)
        pb_warn("%s (and %lu more like it in the last %lld ms)", line, limit->suppressed,
                (long long)(now - limit->last_ms));
    else
        pb_warn("%s", line);
    limit->last_ms = now;
    limit->suppressed = 0;
    return 1;
}
