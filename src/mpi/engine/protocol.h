/*
 * What the engine's files share and its API does not show (engine.h):
 * the queues, and the calls between requests, sending, receiving and
 * progress.
 *
 * Protocols, as Sun MPI over RSM ("Ultra-High Performance Communication
 * with MPI and the Sun Fire Link Interconnect", section 3), on the
 * channels of channel.h:
 *
 *   inline     a message of at most 32 bytes travels inside its postbox
 *   eager      the envelope postbox carries the first piece of the data in
 *              pool blocks; PB_ENG_EAGER_MORE postboxes carry the rest, in
 *              order, before the sender starts another envelope to that rank
 *   rendezvous from POSTBOX_RENDEZVOUS bytes: an RTS postbox; the receiver
 *              answers CTS when a receive matches, and the sender then
 *              streams PB_ENG_RNDV_DATA pieces naming the receiver's request
 *   synchronous  an eager synchronous send asks for PB_ENG_SYNC_ACK on match
 *   single copy  on the node (the shm path), a contiguous message of
 *              POSTBOX_SINGLE_COPY bytes or more sends an RTS with its
 *              address; the receiver reads it (the path's read_peer) into the
 *              receive buffer and answers PB_ENG_RNDV_FIN (if the kernel
 *              refuses, or the receive buffer is not contiguous, it answers
 *              CTS and the data streams through the pool instead)
 *   split copy   from POSTBOX_SPLIT_COPY bytes the receiver first sends
 *              PB_ENG_CTS_WRITE asking the sender to write the second half
 *              into the receive buffer, reads the first half itself
 *              meanwhile, and answers RNDV_FIN once the sender's
 *              PB_ENG_WRITE_DONE came: two cores copy at once.  If either
 *              copy fails the whole message streams through the pool (CTS).
 */
#ifndef PB_ENG_PROTOCOL_H
#define PB_ENG_PROTOCOL_H

#include "mpi/engine/engine.h"

enum {
    SEND_ENVELOPE,
    SEND_EAGER_STREAM,
    SEND_WAIT_CTS,
    SEND_RNDV_STREAM,
    SEND_SENT
};

/* control postboxes waiting for room toward a rank */
typedef struct pb_eng_control {
    struct pb_eng_control *next;
    pb_eng_postbox_t pb;
} pb_eng_control_t;

/* a message that arrived before its receive was posted */
typedef struct pb_eng_unexpected {
    struct pb_eng_unexpected *next;
    int source, tag;
    uint32_t context;
    size_t total, got;
    char *data;    /* eager: the bytes so far */
    int rts, sync; /* rendezvous; synchronous eager */
    uint64_t sreq;
    uint64_t addr; /* single copy offered: the data in the sender */
    uint32_t pid;
    uint64_t seq;  /* its envelope's postbox number from source (a cancel names it) */
    int cancelled; /* the sender took it back while its pieces still come: they are
                      dropped, and it is freed after the last */
} pb_eng_unexpected_t;

/* where the pieces of the eager message a channel is in the middle of go */
typedef struct pb_eng_stream {
    MPI_Request recv;
    pb_eng_unexpected_t *unexp;
} pb_eng_stream_t;

static inline void pb_eng_queue_push(pb_eng_queue_t *q, MPI_Request r)
{
    r->next = NULL;
    if (q->tail != NULL)
        q->tail->next = r;
    else
        q->head = r;
    q->tail = r;
}

/* Remove @r from @q if it is there.  @return 1 if it was, else 0. */
int pb_eng_queue_remove(pb_eng_queue_t *q, MPI_Request r);

/* A new request (a spare one if any), or NULL without memory. */
MPI_Request pb_eng_request_new(int kind, const void *buf, MPI_Count count, pb_datatype_t *type,
                               int peer, int tag, uint32_t context);

/* Mark @r complete (released if it was freed). */
void pb_eng_request_complete(MPI_Request r);

/* Queue control postbox @pb toward @dest (ends the job without memory). */
void pb_eng_send_control(int dest, const pb_eng_postbox_t *pb);

/* Write what can be written toward @dest now.  @return how many postboxes. */
int pb_eng_send_push(int dest);

/* Complete send @r if it is sent (and acknowledged, synchronous), and no
 * cancel waits for its answer. */
void pb_eng_send_check_done(MPI_Request r);

/* Queue the new send @r (peer, mode, bytes set) toward its peer and write
 * what can be written. */
void pb_eng_send_begin(MPI_Request r);

/* The receiver @source answered the cancel of send @r: it took the
 * message back (@taken_back) or had matched it. */
void pb_eng_send_cancel_answer(int source, MPI_Request r, int taken_back);

/* Start the new receive @r (not from MPI_PROC_NULL): it takes the
 * earliest unexpected message that matches, or is posted. */
void pb_eng_recv_begin(MPI_Request r);

/* Receive @r has all its message (or nothing comes: MPI_PROC_NULL):
 * its status's count and error, then complete. */
void pb_eng_recv_finish(MPI_Request r);

/* Handle postbox @pb from @source: envelopes, pieces, answers. */
void pb_eng_recv_postbox(int source, const pb_eng_postbox_t *pb);

#endif
