#include "util/futex.h"

#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

int pb_futex_wait(_Atomic uint32_t *word, uint32_t expected, int timeout_ms)
{
    struct timespec rel, *relp = NULL;

    if (timeout_ms >= 0) {
        rel.tv_sec = timeout_ms / 1000;
        rel.tv_nsec = (long)(timeout_ms % 1000) * 1000000L;
        relp = &rel;
    }
    return (int)syscall(SYS_futex, word, FUTEX_WAIT, expected, relp, NULL, 0);
}

void pb_futex_wake_all(_Atomic uint32_t *word)
{
    syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

long pb_futex_waitv(void *waits, unsigned count, const struct timespec *until)
{
    return syscall(SYS_futex_waitv, waits, count, 0, until, CLOCK_MONOTONIC);
}
