/*
 * Channels: how one rank's bytes reach another's memory (docs/mpi.md,
 * "The engine").  Layers: API file (src/mpi/p2p.c) -> engine protocol
 * (engine.h) -> channel (this file) -> path (path.h: self, shm, tcp) -> RSM.
 *
 * Every node has one *postbox area* (Sun MPI's remote buffer placement):
 * exported on the shm controller by the node's first rank and mapped by
 * every rank there, each of which also exports its mapping on the tcp
 * controller for the other nodes.  In it every sender of the job owns a
 * ring of 64-byte postboxes toward each rank of the node and one pool of
 * blocks, shared by those ranks, that only the sender allocates from; and
 * each rank of the node has a word per peer where that peer acknowledges
 * the postboxes it consumed of this rank's.  A sender writes a postbox
 * (its data first, its sequence word last with release order) through the
 * path chosen when the channel was made (path.h); the receiver polls its
 * rings, and acknowledges into the sender's node's area so that postboxes
 * and blocks are reused.  Channels are half duplex and made on first use.
 */
#ifndef PB_ENG_CHANNEL_H
#define PB_ENG_CHANNEL_H

#include <postbox/rsm.h>
#include <poll.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "mpi/engine/far.h"
#include "mpi/engine/typerep.h"
#include "mpi/engine/tunables.h"
#include "util/compiler.h"

/*
 * The layouts that live in a node's area, declared here only.
 *
 * A postbox (64 bytes, one cache line), written by its sender only:
 *
 *   0      4    5     6        8    12   16       20           24      32          64
 *   +------+----+-----+--------+----+----+--------+------------+-------+-----------+
 *   | seq  |kind|flags|nblocks |len |tag |context |first_block |total  | data/ids  |
 *   +------+----+-----+--------+----+----+--------+------------+-------+-----------+
 *
 * seq is stored last with release order; the receiver loads it with
 * acquire order and reads the rest after.  An acknowledgement is two
 * 64-bit words (a count, then its complement), written by the receiver.
 */
#define PB_ENG_POSTBOX_SIZE 64
#define PB_ENG_INLINE_MAX 32
#define PB_ENG_ACK_SIZE 16
#define PB_ENG_LINE 64
/* blocks of a sender's pool only messages to one receiver use: with them a
 * message always finds room once its own receiver has consumed, whatever
 * the node's other receivers hold */
#define PB_ENG_RESERVE_BLOCKS 2

/* postbox kinds */
enum {
    PB_ENG_ENV_INLINE = 1, /* envelope, the whole message inline */
    PB_ENG_ENV_EAGER,      /* envelope and the first piece of the data in blocks */
    PB_ENG_EAGER_MORE,     /* the next piece of the last eager message */
    PB_ENG_RTS,            /* envelope of a rendezvous message: ids.sreq */
    PB_ENG_CTS,            /* receiver matched an RTS: ids.sreq, ids.rreq */
    PB_ENG_RNDV_DATA,      /* a piece of a rendezvous message: ids.rreq */
    PB_ENG_SYNC_ACK,       /* receiver matched a synchronous eager send: ids.sreq */
    PB_ENG_RNDV_FIN,       /* receiver read an RTS's data itself (single copy): ids.sreq */
    PB_ENG_CTS_WRITE,      /* receiver asks the sender to write bytes [total, total + len)
                              of an RTS's data to ids.addr in process ids.pid: ids.sreq, rreq */
    PB_ENG_WRITE_DONE,     /* sender wrote them (flags 0) or could not (1): ids.rreq */
    PB_ENG_CANCEL,         /* sender asks to take back its message whose envelope was its
                              postbox number ids.addr toward this rank: ids.sreq */
    PB_ENG_CANCEL_ANSWER   /* receiver took it back (flags 1) or had matched it (0): ids.sreq */
};

/* postbox flags */
#define PB_ENG_FLAG_SYNC 1 /* synchronous send: answer PB_ENG_SYNC_ACK on match */

typedef struct {
    _Atomic uint32_t seq; /* written last: the postbox's number + 1 (low bits) */
    uint8_t kind;
    uint8_t flags;
    uint16_t nblocks; /* blocks of this piece */
    uint32_t len;     /* bytes carried: inline, or in the blocks */
    int32_t tag;
    uint32_t context;     /* communicator context id */
    uint32_t first_block; /* pool index of the piece's first block */
    uint64_t total;       /* envelopes: the message's bytes */
    union {
        uint8_t data[PB_ENG_INLINE_MAX];
        struct {
            uint64_t sreq, rreq; /* the sender's / receiver's request (echoed) */
            uint64_t addr;       /* RTS on the node: the data's address in the sender */
            uint32_t pid;        /* ... and the sender's pid (0: stream it instead) */
            uint32_t reserved;
        } ids;
    } u;
} pb_eng_postbox_t;

_Static_assert(sizeof(pb_eng_postbox_t) == PB_ENG_POSTBOX_SIZE, "a postbox is 64 bytes");
_Static_assert(offsetof(pb_eng_postbox_t, seq) == 0, "the sequence word is the first word");
_Static_assert(offsetof(pb_eng_postbox_t, total) == 24, "total follows first_block");
_Static_assert(offsetof(pb_eng_postbox_t, u) == PB_ENG_POSTBOX_SIZE - PB_ENG_INLINE_MAX,
               "the inline data fills the postbox's second half");
_Static_assert(PB_ENG_ACK_SIZE == 2 * sizeof(uint64_t), "an acknowledgement is a count pair");

/* Where the bytes of a piece come from: packed bytes [@offset, @offset +
 * len) of @count elements of @type at @buf. */
typedef struct {
    const void *buf;
    MPI_Count count;
    const pb_datatype_t *type;
    size_t offset;
} pb_eng_src_t;

typedef struct pb_eng_path_ops pb_eng_path_ops_t;

/* This rank's pool in one node's area. */
typedef struct {
    size_t base;    /* its offset in that area */
    int shared;     /* blocks [0, shared) serve every receiver */
    int nblocks;    /* shared + PB_ENG_RESERVE_BLOCKS per receiver */
    int cursor;     /* where the next search for free blocks starts */
    uint64_t *used; /* a bit per block */
    size_t my_area; /* this rank's area in that node's area */
} pb_eng_pool_t;

/* this rank's side of the channel toward one destination */
typedef struct {
    const pb_eng_path_ops_t *ops;    /* the path, chosen when connected; NULL before */
    int failed;                      /* the channel could not be made */
    _Atomic uint64_t *ack_pair;      /* where the destination acknowledges to us */
    size_t ack_at;                   /* where we acknowledge to it, in its node's area */
    rsm_memseg_import_handle_t im;   /* tcp: the destination's export of its area */
    rsm_memseg_import_handle_t bell; /* shm: its doorbell, imported on first wake */
    pb_eng_pool_t *pool;             /* this rank's pool on the destination's node */
    size_t ring;                     /* offset of the ring in that area */
    uint64_t written;                /* postboxes written */
    uint64_t acked;                  /* postboxes the destination said it consumed */
    uint64_t freed;                  /* postboxes whose blocks went back to the pool */
    uint32_t *slot_first;            /* blocks of postbox k: at k % postboxes */
    uint32_t *slot_blocks;
    uint32_t next_first, next_blocks; /* what pb_eng_channel_block_room found */
    char *scratch;                    /* packing room for puts of non-contiguous data */
    pb_eng_far_t far;                 /* shm: how fast copies into its pool run (far.h) */
} pb_eng_out_t;

/* this rank's side of the channel from one source */
typedef struct {
    const char *ring;  /* the source's ring toward this rank, in this node's area */
    const char *pool;  /* its pool there */
    uint64_t consumed; /* postboxes handled */
    uint64_t ack_sent; /* consumed as last written to the source */
    int remote;        /* the source is on another node: acknowledgements wait */
    int shared;        /* the source's pool blocks below this are shared, the
                          rest reserved per receiver */
    int ack_blocks;    /* blocks owed that make an acknowledgement go at once */
    int blocks_owed;   /* pool blocks consumed since ack_sent */
} pb_eng_in_t;

/* The channels of this rank (channel.c); the paths and the inline send
 * read it. */
typedef struct {
    int rank, size, nodes;
    /* the ranks started with this one (its world of a universe of slots;
     * every rank without one): world_first .. world_end - 1 */
    int world_first, world_end;
    rsm_node_id_t node;
    int local;       /* this rank's index among its node's ranks */
    int *node_of;    /* [size]: each rank's node */
    int *local_of;   /* [size]: its index there */
    int *node_ranks; /* [nodes]: ranks per node */
    char *area;      /* this node's area, mapped */
    size_t area_size;
    size_t ring_size;
    rsmapi_controller_handle_t shm_ctl, tcp_ctl;
    rsm_memseg_export_handle_t area_ex; /* the node's first rank: the area on shm */
    rsm_memseg_import_handle_t area_im; /* the others: their import of it */
    rsm_memseg_export_handle_t bell_ex, tcp_ex;
    rsm_memseg_id_t area_id, bell_id, tcp_id;
    char *bell;
    struct pollfd fds[2];
    void *fd_segs[2];
    int nfds;
    pb_eng_out_t *out;
    pb_eng_in_t *in;
    pb_eng_pool_t **pools; /* [nodes]: made on first use */
    int tcp_claimed;       /* this rank polls its tcp traffic itself */
} pb_eng_channel_t;

extern pb_eng_channel_t pb_eng_channel;

/* Make or map this node's postbox area, export this rank's doorbell (and
 * its mapping of the area on tcp) and tell the job where they are (two
 * fences: collective over the world).  @return MPI_SUCCESS or an MPI
 * error class (logged). */
int pb_eng_channel_init(void);

/* Disconnect, unpublish, free.  Collective (a fence first, so that no peer
 * still writes into this node's area). */
void pb_eng_channel_finalize(void);

/* Make the channel toward @dest, choosing its path (self, shm or tcp).
 * @return MPI_SUCCESS or MPI_ERR_OTHER (logged once; the channel stays
 * failed). */
int pb_eng_channel_connect(int dest);

/* Whether @rank was started with this one (postbox_job_world_first): a
 * rank of another world of a universe (a spawned process, or its parents)
 * may end while this one runs, so what this rank still owes it (an
 * acknowledgement) is dropped when it cannot be delivered. */
static inline int pb_eng_channel_same_world(int rank)
{
    return rank >= pb_eng_channel.world_first && rank < pb_eng_channel.world_end;
}

/* The ids @dest published: its doorbell's (shm) and its area's export on
 * tcp.  @return 0, or -1 (logged). */
int pb_eng_channel_rank_ids(int dest, unsigned *bell_id, unsigned *tcp_id);

/* Give back the blocks of @dest's postboxes acknowledged since last time. */
void pb_eng_channel_reclaim(int dest);

/* How many of this rank's postboxes the destination of @o consumed: the
 * acknowledgement pair when it is whole and moves forward, else the last
 * value believed. */
static inline uint64_t pb_eng_channel_acked(pb_eng_out_t *o)
{
    uint64_t check = atomic_load_explicit(&o->ack_pair[1], memory_order_acquire);
    uint64_t count = atomic_load_explicit(&o->ack_pair[0], memory_order_relaxed);

    if (count == ~check && count > o->acked && count <= o->written)
        o->acked = count;
    return o->acked;
}

/* Whether a postbox toward @dest is free (connecting the channel on first
 * use).  @return 1, 0 when the ring is full (the receiver has not consumed
 * yet), or a negative MPI error class when the channel cannot be made. */
static inline int pb_eng_channel_postbox_free(int dest)
{
    pb_eng_out_t *o = &pb_eng_channel.out[dest];

    if (PB_UNLIKELY(o->ops == NULL) && pb_eng_channel_connect(dest) != MPI_SUCCESS)
        return -MPI_ERR_OTHER;
    return o->written - pb_eng_channel_acked(o) < (uint64_t)pb_eng_params.postboxes;
}

/* Bytes the next piece toward @dest may carry in blocks (contiguous free
 * blocks of this rank's pool on @dest's node, at most half its shared
 * blocks, else @dest's reserved ones), at most @want; 0 when no block is
 * free.  The blocks found are the next pb_eng_channel_post's. */
size_t pb_eng_channel_block_room(int dest, size_t want);

/* Write @pb to @dest's ring with pb->len bytes of @src: inline for
 * PB_ENG_ENV_INLINE, in pool blocks for the kinds that carry pieces (the
 * caller sized it with pb_eng_channel_block_room), none for the others.
 * Requires pb_eng_channel_postbox_free(dest) == 1.  @return MPI_SUCCESS or
 * an MPI error class (logged). */
int pb_eng_channel_post(int dest, pb_eng_postbox_t *pb, const pb_eng_src_t *src);

/* Copy packed bytes of @src to @dst (local memory). */
void pb_eng_channel_copy_piece(void *dst, const pb_eng_src_t *src, size_t len);

/* The next postbox from @source in its ring toward this rank, or NULL. */
static inline const pb_eng_postbox_t *pb_eng_channel_peek(int source)
{
    pb_eng_in_t *in = &pb_eng_channel.in[source];
    const pb_eng_postbox_t *pb =
        (const pb_eng_postbox_t *)(in->ring +
                                   (size_t)(in->consumed % (uint64_t)pb_eng_params.postboxes) *
                                       PB_ENG_POSTBOX_SIZE);

    /* acquire: the postbox's other words are read after its sequence word */
    if (atomic_load_explicit(&pb->seq, memory_order_acquire) == (uint32_t)(in->consumed + 1))
        return pb;
    return NULL;
}

/* The data of a piece postbox @pb from @source (in @source's pool on this
 * node). */
const void *pb_eng_channel_piece_data(int source, const pb_eng_postbox_t *pb);

/* Done with the postbox @pb pb_eng_channel_peek returned (and its blocks);
 * on the node acknowledges at once when it freed blocks, else every half
 * ring; across nodes once half the ring or this rank's share of half the
 * pool is owed (sooner, riding on a postbox back: the tcp path). */
void pb_eng_channel_consume(int source, const pb_eng_postbox_t *pb);

/* Acknowledge to every sender what was consumed since the last
 * acknowledgement (before sleeping, so no sender waits on us for room). */
void pb_eng_channel_flush_acks(void);

/* Read what peers on other nodes sent (their puts into this node's area)
 * now; nothing when the job has one node.  For a rank polling its rings. */
void pb_eng_channel_poll_network(void);

/* Sleeping until a peer writes: pb_eng_channel_sleep_begin announces it
 * (peers on the node then signal); the caller checks its condition once
 * more, then calls pb_eng_channel_sleep (at most @timeout_ms) or
 * pb_eng_channel_sleep_cancel. */
void pb_eng_channel_sleep_begin(void);
/* Wake world rank @dest, a rank of this node, if it sleeps: after a store
 * into memory it waits on (a collective area's flag; docs/mpi.md). */
void pb_eng_channel_wake(int dest);
void pb_eng_channel_sleep(int timeout_ms);
void pb_eng_channel_sleep_cancel(void);

/* The path of the channel toward @dest (path.h), making the channel first
 * if needed; NULL when it cannot be made. */
const pb_eng_path_ops_t *pb_eng_channel_path(int dest);

/* End the job with "postbox mpi: rank R: @what": for a failure the engine
 * meets where no MPI call can report it (an acknowledgement a peer waits
 * for cannot be written, a channel broke, no memory for a message). */
_Noreturn void pb_eng_fatal(const char *what);

#endif
