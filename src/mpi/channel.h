/*
 * Channels: how one rank's bytes reach another's memory (docs/mpi.md,
 * "The engine").
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
 * mapping on its node, or puts it over tcp into the receiver's export; the
 * receiver polls its rings, and acknowledges into the sender's node's area
 * so that postboxes and blocks are reused.  Channels are half duplex and
 * made on first use.
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
    int blocks;         /* POSTBOX_POOL_BLOCKS: shared pool blocks of a sender on its node */
    int blocks_net;     /* POSTBOX_POOL_BLOCKS_NET: ... of a sender on each other node */
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

/* Make or map this node's postbox area, export this rank's doorbell (and
 * its mapping of the area on tcp) and tell the job where they are (two
 * fences: collective over the world).  @return MPI_SUCCESS or an MPI
 * error class (logged). */
int pbx_init(void);

/* Disconnect, unpublish, free.  Collective (a fence first, so that no peer
 * still writes into this node's area). */
void pbx_finalize(void);

/* Whether a postbox toward @dest is free (connecting the channel on first
 * use).  @return 1, 0 when the ring is full (the receiver has not consumed
 * yet), or a negative MPI error class when the channel cannot be made. */
int pbx_postbox_free(int dest);

/* Bytes the next piece toward @dest may carry in blocks (contiguous free
 * blocks of this rank's pool on @dest's node, at most half its shared
 * blocks, else @dest's reserved ones), at most @want; 0 when no block is
 * free.  The blocks found are the next pbx_post's. */
size_t pbx_block_room(int dest, size_t want);

/* Write @pb to @dest's ring with pb->len bytes of @src: inline for
 * PBX_ENV_INLINE, in pool blocks for the kinds that carry pieces (the
 * caller sized it with pbx_block_room), none for the others.  Requires
 * pbx_postbox_free(dest) == 1.  @return MPI_SUCCESS or an MPI error class. */
int pbx_post(int dest, pbx_postbox_t *pb, const pbx_src_t *src);

/* The next postbox from @source in its ring toward this rank, or NULL. */
const pbx_postbox_t *pbx_peek(int source);

/* The data of a piece postbox @pb from @source (in @source's pool on this
 * node). */
const void *pbx_piece_data(int source, const pbx_postbox_t *pb);

/* Done with the postbox @pb pbx_peek returned (and its blocks); on the
 * node acknowledges at once when it freed blocks, else every half ring;
 * across nodes once half the ring or this rank's share of half the pool
 * is owed (sooner, riding on a postbox back: pbx_post). */
void pbx_consume(int source, const pbx_postbox_t *pb);

/* Acknowledge to every sender what was consumed since the last
 * acknowledgement (before sleeping, so no sender waits on us for room). */
void pbx_flush_acks(void);

/* Read what peers on other nodes sent (their puts into this node's area)
 * now; nothing when the job has one node.  For a rank polling its rings. */
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
