/*
 * SipHash-2-4, a keyed pseudo-random function (Aumasson & Bernstein).
 * Postbox uses it as the MAC of its challenge-response handshakes (the job
 * secret is the key and never crosses a socket), as the function that
 * derives a tcp connection's session keys, and as the MAC of every tcp
 * frame under those keys.
 */
#ifndef PB_UTIL_SIPHASH_H
#define PB_UTIL_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

/* The 64-bit SipHash-2-4 of @data[0..@len) under the 16-byte @key. */
uint64_t pb_siphash24(const uint8_t key[16], const void *data, size_t len);

/* SipHash-2-4 of a message given in pieces: init, any number of updates,
 * final; the result is pb_siphash24 of the pieces put together. */
typedef struct {
    uint64_t v[4];
    uint64_t total; /* bytes given so far */
    uint8_t tail[8];
    size_t tail_len; /* bytes of tail[] waiting for a full word */
} pb_siphash_t;

void pb_siphash_init(pb_siphash_t *state, const uint8_t key[16]);
void pb_siphash_update(pb_siphash_t *state, const void *data, size_t len);
uint64_t pb_siphash_final(const pb_siphash_t *state);

#endif
