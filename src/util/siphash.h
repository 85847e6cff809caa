/*
 * SipHash-2-4, a keyed pseudo-random function (Aumasson & Bernstein).
 * Postbox uses it as the MAC of its challenge-response handshakes: the job
 * secret is the key and never crosses a socket.
 */
#ifndef PB_UTIL_SIPHASH_H
#define PB_UTIL_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

/* The 64-bit SipHash-2-4 of @data[0..@len) under the 16-byte @key. */
uint64_t pb_siphash24(const uint8_t key[16], const void *data, size_t len);

#endif
