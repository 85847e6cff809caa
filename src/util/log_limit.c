#include "util/log_limit.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>

#include "util/log.h"
#include "util/time.h"

int pb_log_limited(pb_log_limit_t *limit, int interval_ms, const char *fmt, ...)
{
    int64_t now = pb_time_now_ms(), last = atomic_load(&limit->last_ms);
    unsigned long more;
    char line[256];
    va_list ap;

    /* one thread wins the right to log this interval's line; the others count */
    if ((last != 0 && now - last < interval_ms) ||
        !atomic_compare_exchange_strong(&limit->last_ms, &last, now)) {
        atomic_fetch_add(&limit->suppressed, 1);
        return 0;
    }
    more = atomic_exchange(&limit->suppressed, 0);
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (more > 0)
        pb_warn("%s (and %lu more like it in the last %lld ms)", line, more,
                (long long)(now - last));
    else
        pb_warn("%s", line);
    return 1;
}
