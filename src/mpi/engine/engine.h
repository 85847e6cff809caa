/*
 * The MPI point-to-point engine (docs/mpi.md, "The engine"): requests,
 * matching, the eager and rendezvous protocols, progress and waiting.
 *
 * Layers: API file (src/mpi/p2p.c, request.c, bsend.c, coll.c,
 * coll_p2p.c, sched.c) -> engine (this header: protocol; channel.h: rings
 * and pools) -> path (path.h: self, shm, tcp) -> RSM.  The engine takes resolved objects (context
 * ids, world ranks, datatype layouts) and never calls an API file.
 */
#ifndef PB_ENG_ENGINE_H
#define PB_ENG_ENGINE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mpi/engine/channel.h"
#include "mpi/engine/path.h"
#include "mpi/engine/stats.h"
#include "mpi/engine/tunables.h"
#include "mpi/engine/typerep.h"
#include "mpi/mpi_impl.h" /* the status's library part (pb_mpi_status_*) */

enum {
    PB_ENG_REQ_SEND = 1,
    PB_ENG_REQ_RECV,
    PB_ENG_REQ_COLL,  /* a nonblocking or persistent collective: the API's
                         schedule (src/mpi/sched.h) completes it */
    PB_ENG_REQ_PSEND, /* a partitioned send or receive: src/mpi/part.c runs it */
    PB_ENG_REQ_PRECV,
    PB_ENG_REQ_GREQ /* a generalized request: the program completes it
                       (src/mpi/grequest.c) */
};

/* send modes */
enum {
    PB_ENG_MODE_STANDARD,
    PB_ENG_MODE_SYNC,
    PB_ENG_MODE_READY,
    PB_ENG_MODE_BUFFERED /* the engine sends from a copy it makes at once */
};

/* peers of pb_eng_send_start and pb_eng_recv_start besides world ranks */
#define PB_ENG_ANY_SOURCE (-1)
#define PB_ENG_PROC_NULL (-2)

typedef struct MPI_ABI_Request pb_eng_request_t;

/* what a request's completion does besides marking it (its freed bits) */
#define PB_ENG_FREED_RELEASE 1 /* release it (MPI_Request_free, a buffered send's copy) */
#define PB_ENG_FREED_JOINED 2  /* a request joined to another (pb_eng_request_join) */

struct MPI_ABI_Request {
    int kind, mode;
    MPI_Request next; /* in a queue: posted receives, a destination's sends */
    int complete;     /* status is final */
    int freed;        /* what completion does besides (PB_ENG_FREED_*); 0: nothing */
    int cancelled;
    int init_peer;       /* persistent send or receive: the peer it names, at each start */
    void *comm;          /* the API's: the communicator, or NULL (never read here) */
    pb_datatype_t *type; /* retained while the request lives */
    void *buf;
    MPI_Count count;
    int peer; /* world rank; PB_ENG_ANY_SOURCE */
    int tag;
    uint32_t context;
    int cancel_asked; /* send: a PB_ENG_CANCEL went and its answer has not come */
    size_t bytes;     /* send: the message; receive: room in the buffer */
    size_t moved;     /* bytes written (send) or received (receive) */
    /* send */
    int phase, rndv, sync_acked;
    int single; /* rendezvous offered for a single copy */
    uint64_t rreq;
    void *copy; /* buffered mode: the message's copy */
    /* receive */
    size_t total;  /* the matched message's bytes */
    int expecting; /* rendezvous data asked for (counted in pb_eng.expect) */
    /* a split single copy: the receiver reads the first part, the sender
     * writes the rest; FIN goes once both are done */
    int split, split_read, split_written, split_stream;
    /* one request of the program over several of the engine's
     * (MPI_Isendrecv): the program's completes once its own part and every
     * request joined to it (pb_eng_request_join) are complete */
    uint16_t parts_open; /* the program's: joined parts not complete yet */
    uint8_t own_done;    /* the program's: its own part is complete */
    union {
        uint64_t split_sreq; /* receive: the split copy's sender request */
        /* send: its envelope's number in the ring toward peer, which names
         * the message to the receiver when it is cancelled (docs/mpi.md,
         * "Cancelling a send") */
        uint64_t env_seq;
    };
    union {
        /* a collective (PB_ENG_REQ_COLL): made by pb_eng_request_coll, run
         * and completed by the API through pb_eng_progress_hook */
        void *sched;        /* its schedule (never read here) */
        MPI_Request joined; /* a joined part (PB_ENG_FREED_JOINED): the program's request */
    };
    int persistent; /* kept when complete, started again (MPI_Start) */
    int active;     /* persistent: started and not yet completed by a wait or test */
    /* a partitioned or generalized request's state (the API's; never read here) */
    void *ext;
    /* MPI_SOURCE is the sender's world rank (the API translates it) */
    MPI_Status status;
};

typedef struct {
    MPI_Request head, tail;
} pb_eng_queue_t;

struct pb_eng_control;
struct pb_eng_unexpected;
struct pb_eng_stream;

/* The engine's state (engine.c); the inline send reads it. */
typedef struct {
    int size;
    pb_eng_queue_t posted; /* receives waiting for a message */
    struct pb_eng_unexpected *unexp, **unexp_tail;
    pb_eng_queue_t *sends;            /* per destination: sends still writing postboxes */
    struct pb_eng_control **controls; /* per destination: control postboxes to write */
    struct pb_eng_stream *streams;    /* per source */
    int *expect;                      /* per peer: answers or data still to come from it */
    int *offered;                     /* per peer: this rank's messages it was offered to
                                         read (single copy) and has not answered yet */
    int probing;                      /* a probe waits: probe_source is polled too */
    int probe_source;                 /* world rank, or -1 for any */
    int single_copy_off;              /* the kernel refused process_vm_readv once */
    long sends_open;                  /* sends started and not complete, freed ones too */
    size_t copies_held; /* bytes of buffered sends' copies (+ MPI_BSEND_OVERHEAD each) */
    uint64_t completed; /* requests completed so far: a progress hook that
                           watches requests looks again only when it moved */
    MPI_Request spare;  /* released requests kept for reuse (list by next) */
    int spares;
    const pb_datatype_t *byte_type;
} pb_eng_t;

extern pb_eng_t pb_eng;

/* Set up the channels and the protocol (MPI_Init; collective over the
 * world).  @return MPI_SUCCESS or an MPI error class (logged). */
int pb_eng_init(void);

/* Send what is still owed (buffered sends, acknowledgements), then tear
 * down (MPI_Finalize; collective). */
void pb_eng_finalize(void);

/* Start a send of @count elements of @type at @buf to world rank @world
 * (or PB_ENG_PROC_NULL) with @tag on context @context in @mode.  The
 * request, in *@request_p, has comm NULL.  @return MPI_SUCCESS or
 * MPI_ERR_NO_MEM. */
int pb_eng_send_start(const void *buf, MPI_Count count, pb_datatype_t *type, int world, int tag,
                      uint32_t context, int mode, MPI_Request *request_p);

/* Start a receive from world rank @world (or PB_ENG_ANY_SOURCE,
 * PB_ENG_PROC_NULL) with @tag (or MPI_ANY_TAG) on context @context.
 * @return MPI_SUCCESS or MPI_ERR_NO_MEM. */
int pb_eng_recv_start(void *buf, MPI_Count count, pb_datatype_t *type, int world, int tag,
                      uint32_t context, MPI_Request *request_p);

/* Cancel receive @r if it has not matched yet (it completes, cancelled);
 * nothing for any other request. */
void pb_eng_recv_cancel(MPI_Request r);

/* Cancel send @r if no receive has matched it: at once when its envelope
 * is not written yet, else by asking the receiver, which takes an
 * unmatched message back (its answer completes @r, marked cancelled or
 * not); a send already complete is reopened until the answer comes.
 * Nothing for a send to MPI_PROC_NULL, a buffered send's request, or one
 * cancelled already. */
void pb_eng_send_cancel(MPI_Request r);

/* A persistent send or receive (MPI_Send_init ... MPI_Recv_init) with the
 * arguments of pb_eng_send_start or pb_eng_recv_start (@kind
 * PB_ENG_REQ_SEND or PB_ENG_REQ_RECV), inactive: complete, nothing
 * started.  @return MPI_SUCCESS or MPI_ERR_NO_MEM. */
int pb_eng_request_persistent(int kind, void *buf, MPI_Count count, pb_datatype_t *type, int world,
                              int tag, uint32_t context, int mode, MPI_Request *request_p);

/* Start the inactive persistent send or receive @r again (not a buffered
 * send, which the API copies itself): its state is reset, its arguments
 * kept. */
void pb_eng_request_restart(MPI_Request r);

/* What a probe found: the sender's world rank, the tag, the bytes. */
typedef struct {
    int source, tag;
    size_t total;
} pb_eng_probe_t;

/* Whether a message from world rank @world (or PB_ENG_ANY_SOURCE) with
 * @tag (or MPI_ANY_TAG) on @context can be received now, after one round
 * of progress (@wait = 0), or once one can (@wait = 1).  @return 1 with
 * *@found_p filled, or 0. */
int pb_eng_recv_probe(uint32_t context, int world, int tag, int wait, pb_eng_probe_t *found_p);

/* A message a matched probe took out of matching (MPI_Mprobe): no
 * receive but the one started on it can take it. */
typedef struct pb_eng_unexpected pb_eng_message_t;

/* As pb_eng_recv_probe, and the message found is dequeued: *@message_p
 * is it, for pb_eng_recv_message. */
int pb_eng_recv_mprobe(uint32_t context, int world, int tag, int wait, pb_eng_probe_t *found_p,
                       pb_eng_message_t **message_p);

/* Start a receive of @count elements of @type at @buf of @message (which
 * it frees).  @return MPI_SUCCESS or MPI_ERR_NO_MEM (@message then kept). */
int pb_eng_recv_message(void *buf, MPI_Count count, pb_datatype_t *type, pb_eng_message_t *message,
                        MPI_Request *request_p);

/* One round: write what can be written, read what arrived.  @return the
 * number of postboxes moved. */
int pb_eng_progress(void);

/*
 * Work of the API that the engine's progress drives (the schedules of the
 * nonblocking and persistent collectives, src/mpi/sched.c; the partitioned
 * requests, src/mpi/part.c): every pb_eng_progress calls each hook added at
 * the end of its round, so that the work advances whatever the program
 * waits for.  A hook returns the number of steps it made (0: nothing to do
 * now).  The API adds its hook while it has such work and removes it
 * after; the engine knows nothing else of it.  At most
 * PB_ENG_PROGRESS_HOOKS hooks at once; adding one already added does
 * nothing.
 */
typedef int (*pb_eng_progress_hook_t)(void);
#define PB_ENG_PROGRESS_HOOKS 4
void pb_eng_progress_hook_add(pb_eng_progress_hook_t hook);
void pb_eng_progress_hook_remove(pb_eng_progress_hook_t hook);

/* Forget every hook (pb_eng_finalize: none survives into a later start). */
void pb_eng_progress_hooks_clear(void);

typedef int (*pb_eng_done_func_t)(void *arg);

/* Make progress until @done(@arg): spin, then yield, then sleep. */
void pb_eng_wait_until(pb_eng_done_func_t done, void *arg);

/* Make progress until @r is complete. */
void pb_eng_wait(MPI_Request r);

/* Whether @r is a live request of the engine: the handle registry's
 * lock-free check (handle.h), which dereferences nothing else. */
int pb_eng_request_valid(MPI_Request r);

/* Release @r (complete, or never to complete): its datatype, its copy. */
void pb_eng_request_release(MPI_Request r);

/* Let go of @r: released now when complete, else by the engine when it
 * completes. */
void pb_eng_request_free(MPI_Request r);

/* Join the started send @part (hidden from the program) to @whole, the
 * program's receive: @whole completes only once @part has too, and @part
 * is released when complete. */
void pb_eng_request_join(MPI_Request whole, MPI_Request part);

/* A request of kind PB_ENG_REQ_COLL for schedule @sched, not complete
 * (its owner sets complete and status.MPI_ERROR), or NULL without memory. */
MPI_Request pb_eng_request_coll(void *sched);

/* A request of kind PB_ENG_REQ_PSEND, _PRECV or _GREQ, not complete,
 * whose owner (an API file) completes it and keeps its state in ext; or
 * NULL without memory. */
MPI_Request pb_eng_request_api(int kind);

/* A request that is complete at once (MPI_PROC_NULL sends, a buffered
 * send's request for the program), or NULL without memory. */
MPI_Request pb_eng_request_done(int tag);

/*
 * The short send: a message of at most PB_ENG_INLINE_MAX contiguous bytes
 * at @data to world rank @world, with nothing queued before it there and
 * a free postbox, goes straight into the postbox through the channel's
 * path: no request.  @return 1 if it went, 0 if it must take
 * pb_eng_send_start.
 */
static inline int pb_eng_send_short(const void *data, size_t bytes, int world, int tag,
                                    uint32_t context)
{
    pb_eng_out_t *o = &pb_eng_channel.out[world];
    pb_eng_postbox_t pb = {.kind = PB_ENG_ENV_INLINE,
                           .len = (uint32_t)bytes,
                           .tag = tag,
                           .context = context,
                           .total = bytes};
    uint64_t k;
    size_t slot;

    if (bytes > PB_ENG_INLINE_MAX || pb_eng.sends[world].head != NULL ||
        pb_eng.controls[world] != NULL || pb_eng_channel_postbox_free(world) != 1)
        return 0;
    k = o->written;
    slot = (size_t)(k % (uint64_t)pb_eng_params.postboxes);
    /* slot k's last postbox was acknowledged: its blocks go back first */
    if (PB_UNLIKELY(o->freed < o->acked))
        pb_eng_channel_reclaim(world);
    o->slot_blocks[slot] = 0;
    if (bytes > 0) /* @data may be NULL then */
        memcpy(pb.u.data, data, bytes);
    if (o->ops->post(o, world, &pb, (uint32_t)(k + 1), o->ring + slot * PB_ENG_POSTBOX_SIZE, NULL,
                     0) != MPI_SUCCESS)
        pb_eng_fatal("the channel to a rank broke");
    o->written = k + 1;
    pb_eng_stat_send(PB_ENG_PROTO_INLINE, bytes);
    return 1;
}

#endif
