/*
 * The sending side of the protocol (protocol.h): starting sends, and
 * writing envelopes, pieces and control postboxes as room allows.
 */
#include <postbox/job.h>
#include <stdlib.h>
#include <unistd.h>

#include "mpi/engine/protocol.h"

void pb_eng_send_control(int dest, const pb_eng_postbox_t *pb)
{
    pb_eng_control_t *c = malloc(sizeof(*c)), **p;

    if (c == NULL)
        pb_eng_fatal("out of memory for a control message");
    c->next = NULL;
    c->pb = *pb;
    for (p = &pb_eng.controls[dest]; *p != NULL; p = &(*p)->next)
        ;
    *p = c;
}

void pb_eng_send_check_done(MPI_Request r)
{
    if (r->cancel_asked)
        return; /* the receiver's answer completes it */
    if (r->phase == SEND_SENT &&
        (r->mode != PB_ENG_MODE_SYNC || r->rndv || r->sync_acked || r->cancelled)) {
        r->status.MPI_ERROR = MPI_SUCCESS;
        pb_eng_request_complete(r);
    }
}

/* Whether the path toward @dest copies straight between the two processes'
 * buffers (path.h: read_peer), making the channel first if needed. */
static int path_has_single_copy(int dest)
{
    const pb_eng_path_ops_t *path = pb_eng_channel_path(dest);

    return path != NULL && path->read_peer != NULL;
}

/* Write the next postbox of send @r (the head of @dest's queue), if room
 * allows.  @return 1 if one was written, 0 when no block is free. */
static int send_next(int dest, MPI_Request r)
{
    pb_eng_postbox_t pb = {0};
    pb_eng_src_t src = {r->copy != NULL ? r->copy : r->buf,
                        r->copy != NULL ? (MPI_Count)r->bytes : r->count,
                        r->copy != NULL ? pb_eng.byte_type : r->type, r->moved};
    size_t room;

    pb.tag = r->tag;
    pb.context = r->context;
    pb.total = r->bytes;
    if (r->phase == SEND_ENVELOPE)
        r->env_seq = pb_eng_channel.out[dest].written; /* the number a cancel names */
    if (r->phase == SEND_ENVELOPE && r->rndv) {
        pb.kind = PB_ENG_RTS;
        pb.u.ids.sreq = (uint64_t)(uintptr_t)r;
        if (r->single) {
            pb.u.ids.addr = (uint64_t)((uintptr_t)r->buf + (uintptr_t)pb_eng_type_true_lb(r->type));
            pb.u.ids.pid = (uint32_t)getpid();
        }
        if (pb_eng_channel_post(dest, &pb, &src) != MPI_SUCCESS)
            pb_eng_fatal("the channel to a rank broke");
        pb_eng.expect[dest]++; /* its CTS */
        if (r->single)
            pb_eng.offered[dest]++; /* ... or its RNDV_FIN */
        pb_eng_queue_remove(&pb_eng.sends[dest], r);
        r->phase = SEND_WAIT_CTS;
        return 1;
    }
    if (r->phase == SEND_ENVELOPE && r->bytes <= PB_ENG_INLINE_MAX && r->mode != PB_ENG_MODE_SYNC) {
        pb.kind = PB_ENG_ENV_INLINE;
        pb.len = (uint32_t)r->bytes;
        room = r->bytes;
    } else {
        room = pb_eng_channel_block_room(dest, r->bytes - r->moved);
        if (room == 0 && r->bytes > 0)
            return 0; /* no block free: wait for the receiver's acknowledgement */
        pb.len = (uint32_t)room;
        if (r->phase == SEND_ENVELOPE) {
            pb.kind = PB_ENG_ENV_EAGER;
            pb.flags = r->mode == PB_ENG_MODE_SYNC ? PB_ENG_FLAG_SYNC : 0;
            if (r->mode == PB_ENG_MODE_SYNC)
                pb_eng.expect[dest]++; /* its SYNC_ACK */
            pb.u.ids.sreq = (uint64_t)(uintptr_t)r;
        } else if (r->phase == SEND_EAGER_STREAM) {
            pb.kind = PB_ENG_EAGER_MORE;
        } else {
            pb.kind = PB_ENG_RNDV_DATA;
            pb.u.ids.rreq = r->rreq;
        }
    }
    if (pb_eng_channel_post(dest, &pb, &src) != MPI_SUCCESS)
        pb_eng_fatal("the channel to a rank broke");
    r->moved += room;
    if (r->phase == SEND_ENVELOPE)
        r->phase = SEND_EAGER_STREAM;
    if (r->moved == r->bytes) {
        pb_eng_queue_remove(&pb_eng.sends[dest], r);
        r->phase = SEND_SENT;
        pb_eng_send_check_done(r);
    }
    return 1;
}

int pb_eng_send_push(int dest)
{
    int posted = 0, room_ok;

    while ((room_ok = pb_eng_channel_postbox_free(dest)) == 1) {
        pb_eng_control_t *c = pb_eng.controls[dest];
        MPI_Request r = pb_eng.sends[dest].head;

        if (c != NULL) {
            if (pb_eng_channel_post(dest, &c->pb, NULL) != MPI_SUCCESS)
                pb_eng_fatal("the channel to a rank broke");
            pb_eng.controls[dest] = c->next;
            free(c);
            posted++;
            continue;
        }
        if (r == NULL || !send_next(dest, r))
            break;
        posted++;
    }
    if (room_ok < 0)
        pb_eng_fatal("cannot open a channel to a rank");
    return posted;
}

int pb_eng_send_start(const void *buf, MPI_Count count, pb_datatype_t *type, int world, int tag,
                      uint32_t context, int mode, MPI_Request *request_p)
{
    MPI_Request r;

    if (world == PB_ENG_PROC_NULL) {
        r = pb_eng_request_done(tag);
        if (r == NULL)
            return MPI_ERR_NO_MEM;
        *request_p = r;
        return MPI_SUCCESS;
    }
    r = pb_eng_request_new(PB_ENG_REQ_SEND, buf, count, type, world, tag, context);
    if (r == NULL)
        return MPI_ERR_NO_MEM;
    r->mode = mode;
    if (mode == PB_ENG_MODE_BUFFERED) {
        r->copy = malloc(r->bytes ? r->bytes : 1);
        if (r->copy == NULL) {
            pb_eng_request_release(r);
            return MPI_ERR_NO_MEM;
        }
        pb_eng.copies_held += r->bytes + MPI_BSEND_OVERHEAD;
        pb_eng_type_pack_range(buf, count, r->type, 0, r->copy, r->bytes);
    }
    pb_eng_send_begin(r);
    *request_p = r;
    return MPI_SUCCESS;
}

void pb_eng_send_begin(MPI_Request r)
{
    int world = r->peer;

    /* on the node, a contiguous message from POSTBOX_SINGLE_COPY bytes (from
     * POSTBOX_SINGLE_COPY_FAR toward a far rank: far.h) is offered for the
     * receiver to read in one copy */
    r->single = r->mode != PB_ENG_MODE_BUFFERED && !pb_eng.single_copy_off &&
                pb_eng_far_single_copy_size(r->bytes) && pb_eng_type_is_contiguous(r->type) &&
                path_has_single_copy(world) &&
                pb_eng_far_single_copy(&pb_eng_channel.out[world].far, r->bytes);
    r->rndv =
        r->mode != PB_ENG_MODE_BUFFERED && (r->single || r->bytes >= pb_eng_params.rendezvous);
    r->phase = SEND_ENVELOPE;
    pb_eng_stat_send(r->single ? PB_ENG_PROTO_SINGLE_COPY
                     : r->rndv ? PB_ENG_PROTO_RENDEZVOUS
                     : r->bytes <= PB_ENG_INLINE_MAX && r->mode != PB_ENG_MODE_SYNC
                         ? PB_ENG_PROTO_INLINE
                         : PB_ENG_PROTO_EAGER,
                     r->bytes);
    pb_eng.sends_open++;
    pb_eng_queue_push(&pb_eng.sends[world], r);
    pb_eng_send_push(world);
}

/* ---- cancelling ------------------------------------------------------------------ */

void pb_eng_send_cancel(MPI_Request r)
{
    pb_eng_postbox_t ask = {.kind = PB_ENG_CANCEL};

    if (r->kind != PB_ENG_REQ_SEND || r->peer < 0 || r->mode == PB_ENG_MODE_BUFFERED ||
        r->cancelled || r->cancel_asked)
        return;
    if (r->phase == SEND_ENVELOPE) { /* nothing written: the receiver never knew */
        pb_eng_queue_remove(&pb_eng.sends[r->peer], r);
        r->cancelled = 1;
        r->phase = SEND_SENT;
        pb_eng_request_complete(r);
        return;
    }
    if (r->complete) { /* sent eagerly: the message may still be unmatched there */
        r->complete = 0;
        pb_eng.sends_open++;
    }
    r->cancel_asked = 1;
    pb_eng.expect[r->peer]++; /* its answer */
    ask.u.ids.sreq = (uint64_t)(uintptr_t)r;
    ask.u.ids.addr = r->env_seq;
    pb_eng_send_control(r->peer, &ask);
    pb_eng_send_push(r->peer);
}

void pb_eng_send_cancel_answer(int source, MPI_Request r, int taken_back)
{
    pb_eng.expect[source]--;
    r->cancel_asked = 0;
    if (taken_back) {
        r->cancelled = 1;
        if (r->phase == SEND_WAIT_CTS) { /* no CTS will come */
            pb_eng.expect[source]--;
            if (r->single)
                pb_eng.offered[source]--;
            r->phase = SEND_SENT;
        } else if (r->mode == PB_ENG_MODE_SYNC && !r->rndv && !r->sync_acked) {
            pb_eng.expect[source]--; /* nor a SYNC_ACK */
        }
    }
    /* a stream under way goes on to its end (the receiver drops it) */
    if (!r->complete)
        pb_eng_send_check_done(r);
}
