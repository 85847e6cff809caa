#include "util/siphash.h"

#include <endian.h>
#include <string.h>

static inline uint64_t rotl64(uint64_t x, int b)
{
    return (x << b) | (x >> (64 - b));
}

/* (a memcpy the compiler makes one load: twice the speed of assembling
 * the word byte by byte, which it does not merge) */
static inline uint64_t load_le64(const uint8_t *p)
{
    uint64_t v;

    memcpy(&v, p, sizeof(v));
    return le64toh(v);
}

static inline void sip_round(uint64_t v[4])
{
    v[0] += v[1];
    v[1] = rotl64(v[1], 13);
    v[1] ^= v[0];
    v[0] = rotl64(v[0], 32);
    v[2] += v[3];
    v[3] = rotl64(v[3], 16);
    v[3] ^= v[2];
    v[0] += v[3];
    v[3] = rotl64(v[3], 21);
    v[3] ^= v[0];
    v[2] += v[1];
    v[1] = rotl64(v[1], 17);
    v[1] ^= v[2];
    v[2] = rotl64(v[2], 32);
}

uint64_t pb_siphash24(const uint8_t key[16], const void *data, size_t len)
{
    const uint8_t *in = data;
    uint64_t k0 = load_le64(key), k1 = load_le64(key + 8);
    uint64_t v[4] = {k0 ^ 0x736f6d6570736575ULL, k1 ^ 0x646f72616e646f6dULL,
                     k0 ^ 0x6c7967656e657261ULL, k1 ^ 0x7465646279746573ULL};
    size_t full = len & ~(size_t)7;
    uint8_t tail[8] = {0};
    uint64_t m;

    for (size_t off = 0; off < full; off += 8) {
        m = load_le64(in + off);
        v[3] ^= m;
        sip_round(v);
        sip_round(v);
        v[0] ^= m;
    }
    memcpy(tail, in + full, len - full);
    m = load_le64(tail) | ((uint64_t)(len & 0xff) << 56);
    v[3] ^= m;
    sip_round(v);
    sip_round(v);
    v[0] ^= m;
    v[2] ^= 0xff;
    for (int i = 0; i < 4; i++)
        sip_round(v);
    return v[0] ^ v[1] ^ v[2] ^ v[3];
}

static inline void sip_compress(uint64_t v[4], uint64_t m)
{
    v[3] ^= m;
    sip_round(v);
    sip_round(v);
    v[0] ^= m;
}

void pb_siphash_init(pb_siphash_t *state, const uint8_t key[16])
{
    uint64_t k0 = load_le64(key), k1 = load_le64(key + 8);

    state->v[0] = k0 ^ 0x736f6d6570736575ULL;
    state->v[1] = k1 ^ 0x646f72616e646f6dULL;
    state->v[2] = k0 ^ 0x6c7967656e657261ULL;
    state->v[3] = k1 ^ 0x7465646279746573ULL;
    state->total = 0;
    state->tail_len = 0;
}

void pb_siphash_update(pb_siphash_t *state, const void *data, size_t len)
{
    const uint8_t *in = data;

    state->total += len;
    if (state->tail_len > 0) {
        size_t take = 8 - state->tail_len < len ? 8 - state->tail_len : len;

        memcpy(state->tail + state->tail_len, in, take);
        state->tail_len += take;
        in += take;
        len -= take;
        if (state->tail_len < 8)
            return;
        sip_compress(state->v, load_le64(state->tail));
        state->tail_len = 0;
    }
    for (; len >= 8; in += 8, len -= 8)
        sip_compress(state->v, load_le64(in));
    memcpy(state->tail, in, len);
    state->tail_len = len;
}

uint64_t pb_siphash_final(const pb_siphash_t *state)
{
    uint64_t v[4] = {state->v[0], state->v[1], state->v[2], state->v[3]};
    uint8_t last[8] = {0};

    memcpy(last, state->tail, state->tail_len);
    sip_compress(v, load_le64(last) | ((uint64_t)(state->total & 0xff) << 56));
    v[2] ^= 0xff;
    for (int i = 0; i < 4; i++)
        sip_round(v);
    return v[0] ^ v[1] ^ v[2] ^ v[3];
}
