/*
 * Random bytes from the kernel, for nonces, keys and job secrets.
 */
#ifndef PB_UTIL_RANDOM_H
#define PB_UTIL_RANDOM_H

#include <stddef.h>

/* Fill @buf with @len bytes from the kernel's random source (getrandom).
 * @return 0, or -1 with errno set. */
int pb_random_bytes(void *buf, size_t len);

#endif
