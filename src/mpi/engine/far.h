/*
 * Far peers: which ranks of this node a sender should hand its
 * medium-sized messages by single copy.
 *
 * Through the pool a message crosses between the two cores twice: the
 * sender stores it into blocks that the receiver read last time (every
 * line must first be taken back from the receiver's cache), then the
 * receiver reads it.  Between cores that share a cache that is cheap, and
 * the pool beats the kernel's single copy (process_vm_readv) up to
 * POSTBOX_SINGLE_COPY; between cores far apart (another socket or core
 * complex, where a cache line's trip takes a few hundred nanoseconds) the
 * sender's stores run at a quarter of the speed and the single copy wins
 * from POSTBOX_SINGLE_COPY_FAR bytes (docs/notes/2026-11-28-far-peers.md
 * has the measurements).
 *
 * So the sender times its copies of contiguous pieces of PB_ENG_FAR_PIECE
 * bytes and more into a peer's pool (one in PB_ENG_FAR_SAMPLE while the
 * peer looks near, every one while it looks far), and after
 * PB_ENG_FAR_ROUND of them calls the peer far when even the fastest ran
 * below POSTBOX_FAR_COPY_RATE (a copy that was preempted only looks
 * slower, so the fastest is the one to trust).  While a peer is far, one
 * in PB_ENG_FAR_RECHECK of the messages the single copy takes in its
 * place still goes through the pool, so that its copy is timed and the
 * peer found near again when the scheduler moves the ranks.  Those
 * rechecks write blocks the far core has long since dropped from its
 * caches, so they often look near even where the peer is still far: the
 * peer then goes back to the pool until a round of sampled copies finds
 * it far again.  So at most PB_ENG_FAR_ROUND * (PB_ENG_FAR_SAMPLE + 1) of
 * every PB_ENG_FAR_ROUND * PB_ENG_FAR_RECHECK messages toward a far peer
 * take the slow way (3.5 %).
 */
#ifndef PB_ENG_FAR_H
#define PB_ENG_FAR_H

#include <stddef.h>
#include <stdint.h>

#include "mpi/engine/tunables.h"

/* pieces shorter than this are not timed (a few cache lines' trips
 * would weigh more than the copy) */
#define PB_ENG_FAR_PIECE 16384
/* timed pieces per verdict */
#define PB_ENG_FAR_ROUND 8
/* while the peer looks near, one piece in this many is timed */
#define PB_ENG_FAR_SAMPLE 8
/* while it looks far, one message in this many goes through the pool */
#define PB_ENG_FAR_RECHECK 256

/* What a sender learned of the copies toward one peer of its node. */
typedef struct {
    uint64_t best_bytes, best_ns; /* the fastest timed piece of this round */
    uint32_t timed;               /* pieces timed in this round */
    uint32_t untimed;             /* pieces since the last timed one */
    uint32_t single_sends;        /* messages sent by single copy in place of
                                     the pool since the last one through it */
    int far;                      /* the last round's verdict */
} pb_eng_far_t;

/* Whether the sender should time its copy of a contiguous piece of @len
 * bytes into the peer's pool: counts the piece. */
static inline int pb_eng_far_time_piece(pb_eng_far_t *f, size_t len)
{
    if (pb_eng_params.far_copy_rate == 0 || len < PB_ENG_FAR_PIECE)
        return 0;
    if (f->far || ++f->untimed >= PB_ENG_FAR_SAMPLE) {
        f->untimed = 0;
        return 1;
    }
    return 0;
}

/* Record a timed piece of @len bytes copied in @ns nanoseconds; the
 * round's last one gives the verdict. */
void pb_eng_far_record(pb_eng_far_t *f, size_t len, int64_t ns);

/* Whether a contiguous message of @bytes toward the peer goes by single
 * copy (the path offers it): from POSTBOX_SINGLE_COPY bytes always, from
 * POSTBOX_SINGLE_COPY_FAR while the peer is far (and POSTBOX_FAR_COPY_RATE
 * is not 0) but for the rechecks (counted here); never when
 * POSTBOX_SINGLE_COPY is 0. */
int pb_eng_far_single_copy(pb_eng_far_t *f, size_t bytes);

/* Whether a message of @bytes is long enough to go by single copy toward
 * some peer (near or far): the cheap test before the path's and the
 * datatype's. */
static inline int pb_eng_far_single_copy_size(size_t bytes)
{
    size_t from = pb_eng_params.single_copy;

    if (pb_eng_params.single_copy_far != 0 && pb_eng_params.single_copy_far < from)
        from = pb_eng_params.single_copy_far;
    return from > 0 && bytes >= from;
}

#endif
