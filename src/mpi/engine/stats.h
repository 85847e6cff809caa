/*
 * What the engine (and the one-sided calls, src/mpi/rma.c) count for the MPI_T performance
 * variables (src/mpi/tools.c; docs/mpi.md, "The tools interface (MPI_T)").
 *
 * Each counter is a per-process word that the engine bumps with a relaxed
 * load and store (plain moves: no locked instruction on the send and
 * receive paths) and the tools read with a relaxed load.  Only the thread
 * that makes progress writes them (the copy counters: the thread holding
 * the copy job, and the copy helper); should two threads ever bump one at
 * once, a count may be lost, never corrupted.  The waiting time is taken
 * only while a tool has a timer started (two clock reads per wait that
 * waits).
 */
#ifndef PB_ENG_STATS_H
#define PB_ENG_STATS_H

#include <stdatomic.h>
#include <stdint.h>

/* the protocols a send takes (protocol.h), as the sender chose it */
typedef enum {
    PB_ENG_PROTO_INLINE,      /* the data inside the envelope postbox */
    PB_ENG_PROTO_EAGER,       /* through pool blocks, before any match */
    PB_ENG_PROTO_RENDEZVOUS,  /* RTS/CTS, then through the pool */
    PB_ENG_PROTO_SINGLE_COPY, /* RTS offering the buffer to the receiver's read */
    PB_ENG_PROTOS
} pb_eng_proto_t;

/* the one-sided calls, counted at the origin (the R forms with their base) */
typedef enum {
    PB_ENG_RMA_PUT,
    PB_ENG_RMA_GET,
    PB_ENG_RMA_ACCUMULATE,
    PB_ENG_RMA_GET_ACCUMULATE,
    PB_ENG_RMA_FETCH_AND_OP,
    PB_ENG_RMA_COMPARE_AND_SWAP,
    PB_ENG_RMA_KINDS
} pb_eng_rma_kind_t;

typedef struct {
    _Atomic uint64_t messages[PB_ENG_PROTOS];     /* sends started, per protocol */
    _Atomic uint64_t bytes[PB_ENG_PROTOS];        /* their bytes */
    _Atomic uint64_t unexpected;                  /* messages that arrived before their receive */
    _Atomic uint64_t unexpected_queued;           /* ... and wait in the queue now */
    _Atomic uint64_t unexpected_most;             /* the queue's longest since MPI_Init */
    _Atomic uint64_t wait_ns;                     /* nanoseconds in pb_eng_wait_until, timed */
    _Atomic int timers;                           /* timers started: wait_ns is counted */
    _Atomic uint64_t rma_calls[PB_ENG_RMA_KINDS]; /* one-sided calls this process made */
    _Atomic uint64_t copy_bytes;        /* bytes of the copies offered to the copy helper */
    _Atomic uint64_t copy_helper_bytes; /* ... the helper copied (its own word: copy.c) */
} pb_eng_stats_t;

extern pb_eng_stats_t pb_eng_stats;

/* Add @n to counter @c (see above: not an atomic increment). */
static inline void pb_eng_stat_add(_Atomic uint64_t *c, uint64_t n)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

static inline uint64_t pb_eng_stat_get(_Atomic uint64_t *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

/* Count a send of @bytes by protocol @proto. */
static inline void pb_eng_stat_send(pb_eng_proto_t proto, uint64_t bytes)
{
    pb_eng_stat_add(&pb_eng_stats.messages[proto], 1);
    pb_eng_stat_add(&pb_eng_stats.bytes[proto], bytes);
}

/* An unexpected message joins the queue (@joined 1) or leaves it (0). */
static inline void pb_eng_stat_unexpected(int joined)
{
    uint64_t queued = pb_eng_stat_get(&pb_eng_stats.unexpected_queued);

    if (!joined) {
        atomic_store_explicit(&pb_eng_stats.unexpected_queued, queued - 1, memory_order_relaxed);
        return;
    }
    pb_eng_stat_add(&pb_eng_stats.unexpected, 1);
    atomic_store_explicit(&pb_eng_stats.unexpected_queued, queued + 1, memory_order_relaxed);
    if (queued + 1 > pb_eng_stat_get(&pb_eng_stats.unexpected_most))
        atomic_store_explicit(&pb_eng_stats.unexpected_most, queued + 1, memory_order_relaxed);
}

/* Called, when set, for each message that arrives before a receive
 * matches it (the MPI_T event postbox_p2p_unexpected, tools_event.c): the
 * sender's rank in the job, the tag and the message's bytes.  Set while a
 * tool has a callback for that event; NULL otherwise, when the cost is one
 * load and an untaken branch per unexpected message. */
typedef void pb_eng_unexpected_hook_t(int source, int tag, uint64_t bytes);
extern _Atomic(pb_eng_unexpected_hook_t *) pb_eng_unexpected_hook;

/* Nanoseconds of CLOCK_MONOTONIC (also the MPI_T source's timestamps). */
uint64_t pb_eng_stats_now_ns(void);

#endif
