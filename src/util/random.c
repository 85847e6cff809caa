#include "util/random.h"

#include <errno.h>
#include <stdint.h>
#include <sys/random.h>
#include <sys/types.h>

int pb_random_bytes(void *buf, size_t len)
{
    uint8_t *out = buf;

    while (len > 0) {
        ssize_t got = getrandom(out, len, 0);

        if (got < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        out += got;
        len -= (size_t)got;
    }
    return 0;
}
