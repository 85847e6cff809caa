/*
 * Channels: how one rank's bytes reach another's memory (docs/mpi.md,
 * "The engine").
 *
 * Every rank exports one *inbox* segment, on the shm controller for the
 * ranks of its node and on the tcp controller (the same memory) for the
 * others.  The inbox holds, for every sender, a ring of 64-byte postboxes
 * and a pool of blocks that only that sender allocates from, and a word
 * per peer where that peer acknowledges the postboxes it consumed of this
 * rank's.  A sender writes a postbox (its data first, its sequence word
 * last with release order) straight into the mapped inbox on its node, or
 * puts it over tcp; the receiver polls its rings, and acknowledges into
 * the sender's inbox so that postboxes and blocks are reused.  Channels are
 * half duplex and made on first use.
 */
#ifndef PB_MPI_CHANNEL_H
#define PB_MPI_CHANNEL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "mpi/datatype.h"

#define PBX_POSTBOX_SIZE 64
#define PBX_INLINE_MAX 32

/* postbox kinds */
enum {
    PBX_ENV_INLINE = 1, /* envelope, the whole message inline */
    PBX_ENV_EAGER,      /* envelope and the first piece of the data in blocks */
    PBX_EAGER_MORE,     /* the next piece of the last eager message */
    PBX_RTS,            /* envelope of a rendezvous message: ids.sreq */
    PBX_CTS,            /* receiver matched an RTS: ids.sreq, ids.rreq */
    PBX_RNDV_DATA,      /* a piece of a rendezvous message: ids.rreq */
    PBX_SYNC_ACK,       /* receiver matched a synchronous eager send: ids.sreq */
    PBX_RNDV_FIN,       /* receiver read an RTS's data itself (single copy): ids.sreq */
    PBX_CTS_WRITE,      /* receiver asks the sender to write bytes [total, total + len)
                           of an RTS's data to ids.addr in process ids.pid: ids.sreq, rreq */
    PBX_WRITE_DONE      /* sender wrote them (flags 0) or could not (1): ids.rreq */
};

/* postbox flags */
#define PBX_FLAG_SYNC 1 /* synchronous send: answer PBX_SYNC_ACK on match */

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
        uint8_t data[PBX_INLINE_MAX];
        struct {
            uint64_t sreq, rreq; /* the sender's / receiver's request (echoed) */
            uint64_t addr;       /* RTS on the node: the data's address in the sender */
            uint32_t pid;        /* ... and the sender's pid (0: stream it instead) */
            uint32_t reserved;
        } ids;
    } u;
} pbx_postbox_t;

_Static_assert(sizeof(pbx_postbox_t) == PBX_POSTBOX_SIZE, "a postbox is 64 bytes");

/* Where the bytes of a piece come from: packed bytes [@offset, @offset +
 * len) of @count elements of @type at @buf. */
typedef struct {
    const void *buf;
    MPI_Count count;
    const pb_datatype_t *type;
    size_t offset;
} pbx_src_t;

/* The tunables in force (POSTBOX_* variables, read at MPI_Init). */
typedef struct {
    int postboxes;      /* POSTBOX_NUMPOSTBOX: ring length per sender */
    int blocks;         /* POSTBOX_POOL_BLOCKS: pool blocks per sender on the node */
    int blocks_net;     /* POSTBOX_POOL_BLOCKS_NET: ... per sender on another node */
    size_t block_size;  /* POSTBOX_BLOCK_SIZE */
    size_t rendezvous;  /* POSTBOX_RENDEZVOUS: messages this long and longer */
    size_t split_copy;  /* POSTBOX_SPLIT_COPY: single-copy messages this long are
                           copied half by the receiver, half by the sender */
    size_t single_copy; /* POSTBOX_SINGLE_COPY: on-node messages this long and
                           longer are read by the receiver from the sender */
    int pollall;        /* POSTBOX_POLLALL */
    int spin;           /* POSTBOX_SPIN: polls before yielding */
    int yields;         /* POSTBOX_YIELDS: yields before sleeping */
} pbx_params_t;

extern pbx_params_t pbx_params;

/* Export and publish this rank's inbox and tell the job where it is
 * (ends with a fence: collective over the world).  @return MPI_SUCCESS or
 * an MPI error class (logged). */
int pbx_init(void);

/* Disconnect, unpublish, free.  Collective (a fence first, so that no peer
 * still writes into this inbox). */
void pbx_finalize(void);

/* Whether a postbox toward @dest is free (connecting the channel on first
 * use).  @return 1, 0 when the ring is full (the receiver has not consumed
 * yet), or a negative MPI error class when the channel cannot be made. */
int pbx_postbox_free(int dest);

/* Bytes the next piece toward @dest may carry in blocks (contiguous pool
 * blocks now free, at most half the pool), at most @want; 0 when no block
 * is free. */
size_t pbx_block_room(int dest, size_t want);

/* Write @pb to @dest's inbox with pb->len bytes of @src: inline for
 * PBX_ENV_INLINE, in pool blocks for the kinds that carry pieces (the
 * caller sized it with pbx_block_room), none for the others.  Requires
 * pbx_postbox_free(dest) == 1.  @return MPI_SUCCESS or an MPI error class. */
int pbx_post(int dest, pbx_postbox_t *pb, const pbx_src_t *src);

/* The next postbox from @source in this rank's inbox, or NULL. */
const pbx_postbox_t *pbx_peek(int source);

/* The data of a piece postbox @pb from @source (in this rank's pool). */
const void *pbx_piece_data(int source, const pbx_postbox_t *pb);

/* Done with the postbox @pb pbx_peek returned (and its blocks);
 * acknowledges to the sender at once when it freed blocks, else every
 * half ring. */
void pbx_consume(int source, const pbx_postbox_t *pb);

/* Acknowledge to every sender what was consumed since the last
 * acknowledgement (before sleeping, so no sender waits on us for room). */
void pbx_flush_acks(void);

/* Read what peers on other nodes sent (their puts into this inbox) now;
 * nothing when the job has one node.  For a rank polling its inbox. */
void pbx_poll_network(void);

/* Sleeping until a peer writes: pbx_sleep_begin announces it (peers on
 * the node then signal); the caller checks its condition once more, then
 * calls pbx_sleep (at most @timeout_ms) or pbx_sleep_cancel. */
void pbx_sleep_begin(void);
void pbx_sleep(int timeout_ms);
void pbx_sleep_cancel(void);

/* End the job with "postbox mpi: rank R: @what": for a failure the engine
 * meets where no MPI call can report it (an acknowledgement a peer waits
 * for cannot be written, a channel broke, no memory for a message). */
_Noreturn void pbx_fatal(const char *what);

/* Whether @rank runs on this rank's node. */
int pbx_same_node(int rank);

/* The controller name ("shm" or "tcp") this rank uses toward @rank
 * (POSTBOX_SHOW_TRANSPORTS). */
const char *pbx_transport_of(int rank);

#endif
