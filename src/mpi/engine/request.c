/*
 * Requests (engine.h): made, completed, released, kept for reuse.
 */
#include <stdlib.h>
#include <string.h>

#include "mpi/engine/handle.h"
#include "mpi/engine/protocol.h"

/* released requests kept for the next ones: a calloc and a free less per
 * message */
#define REQUEST_SPARES_MAX 64

int pb_eng_queue_remove(pb_eng_queue_t *q, MPI_Request r)
{
    MPI_Request prev = NULL;

    for (MPI_Request it = q->head; it != NULL; prev = it, it = it->next) {
        if (it != r)
            continue;
        if (prev != NULL)
            prev->next = it->next;
        else
            q->head = it->next;
        if (q->tail == it)
            q->tail = prev;
        it->next = NULL;
        return 1;
    }
    return 0;
}

MPI_Request pb_eng_request_new(int kind, const void *buf, MPI_Count count, pb_datatype_t *type,
                               int peer, int tag, uint32_t context)
{
    MPI_Request r = pb_eng.spare;

    if (r != NULL) {
        pb_eng.spare = r->next;
        pb_eng.spares--;
        memset(r, 0, sizeof(*r));
        pb_eng_handle_revive(PB_ENG_HANDLE_REQUEST, r);
    } else {
        r = pb_eng_handle_new(PB_ENG_HANDLE_REQUEST, sizeof(*r));
        if (r == NULL)
            return NULL;
    }
    r->kind = kind;
    r->buf = (void *)buf;
    r->count = count;
    r->type = type;
    pb_eng_type_retain(r->type); /* MPI_Type_free may come before completion */
    r->peer = peer;
    r->tag = tag;
    r->context = context;
    r->bytes = (size_t)count * pb_eng_type_size(r->type);
    return r;
}

MPI_Request pb_eng_request_done(int tag)
{
    MPI_Request r = pb_eng_request_new(PB_ENG_REQ_SEND, NULL, 0, (pb_datatype_t *)pb_eng.byte_type,
                                       PB_ENG_ANY_SOURCE, tag, 0);

    if (r == NULL)
        return NULL;
    r->phase = SEND_SENT;
    r->status.MPI_SOURCE = MPI_PROC_NULL;
    pb_eng_request_complete(r);
    return r;
}

MPI_Request pb_eng_request_coll(void *sched)
{
    MPI_Request r = pb_eng_request_new(PB_ENG_REQ_COLL, NULL, 0, (pb_datatype_t *)pb_eng.byte_type,
                                       PB_ENG_ANY_SOURCE, MPI_ANY_TAG, 0);

    if (r != NULL)
        r->sched = sched;
    return r;
}

MPI_Request pb_eng_request_api(int kind)
{
    return pb_eng_request_new(kind, NULL, 0, (pb_datatype_t *)pb_eng.byte_type, PB_ENG_ANY_SOURCE,
                              MPI_ANY_TAG, 0);
}

void pb_eng_request_release(MPI_Request r)
{
    if (r->copy != NULL) {
        free(r->copy);
        if (r->mode == PB_ENG_MODE_BUFFERED)
            pb_eng.copies_held -= r->bytes + MPI_BSEND_OVERHEAD;
    }
    pb_eng_type_release(r->type);
    pb_eng_handle_retire(PB_ENG_HANDLE_REQUEST, r);
    if (pb_eng.spares < REQUEST_SPARES_MAX) {
        r->next = pb_eng.spare;
        pb_eng.spare = r;
        pb_eng.spares++;
    } else {
        pb_eng_handle_delete(PB_ENG_HANDLE_REQUEST, r);
    }
}

void pb_eng_request_free(MPI_Request r)
{
    if (r->complete)
        pb_eng_request_release(r);
    else
        r->freed |= PB_ENG_FREED_RELEASE;
}

void pb_eng_request_join(MPI_Request whole, MPI_Request part)
{
    if (part->complete) {
        pb_eng_request_release(part);
        return;
    }
    part->joined = whole;
    part->freed |= PB_ENG_FREED_RELEASE | PB_ENG_FREED_JOINED;
    whole->parts_open++;
    whole->freed |= PB_ENG_FREED_JOINED;
    if (whole->complete) { /* its own part was quick: it waits for @part now */
        whole->complete = 0;
        whole->own_done = 1;
    }
}

/* What completing @r does besides (its freed bits). */
static void request_completed(MPI_Request r)
{
    if (r->freed & PB_ENG_FREED_JOINED) {
        MPI_Request whole = r->kind == PB_ENG_REQ_SEND ? r->joined : NULL; /* a part */

        if (whole == NULL && r->parts_open > 0) {
            r->complete = 0; /* its own part only */
            r->own_done = 1;
            return;
        }
        if (whole != NULL && --whole->parts_open == 0 && whole->own_done) {
            whole->own_done = 0;
            pb_eng_request_complete(whole);
        }
    }
    if (r->freed & PB_ENG_FREED_RELEASE)
        pb_eng_request_release(r);
}

int pb_eng_request_valid(MPI_Request r)
{
    return pb_eng_handle_valid(PB_ENG_HANDLE_REQUEST, r);
}

void pb_eng_request_complete(MPI_Request r)
{
    if (r->kind == PB_ENG_REQ_SEND && r->peer >= 0)
        pb_eng.sends_open--;
    r->complete = 1;
    pb_eng.completed++;
    if (PB_UNLIKELY(r->freed))
        request_completed(r);
}

int pb_eng_request_persistent(int kind, void *buf, MPI_Count count, pb_datatype_t *type, int world,
                              int tag, uint32_t context, int mode, MPI_Request *request_p)
{
    /* MPI_PROC_NULL moves nothing: @type may be NULL (MPI_DATATYPE_NULL) */
    MPI_Request r = world == PB_ENG_PROC_NULL
                        ? pb_eng_request_new(kind, buf, 0, (pb_datatype_t *)pb_eng.byte_type, world,
                                             tag, context)
                        : pb_eng_request_new(kind, buf, count, type, world, tag, context);

    if (r == NULL)
        return MPI_ERR_NO_MEM;
    r->mode = mode;
    r->persistent = 1;
    r->init_peer = world;
    r->phase = SEND_SENT;
    r->complete = 1; /* inactive: a wait returns at once */
    *request_p = r;
    return MPI_SUCCESS;
}

void pb_eng_request_restart(MPI_Request r)
{
    struct MPI_ABI_Request kept = *r;

    /* what the init set stays; every field of the last run starts over */
    memset(r, 0, sizeof(*r));
    r->kind = kept.kind;
    r->mode = kept.mode;
    r->comm = kept.comm;
    r->type = kept.type;
    r->buf = kept.buf;
    r->count = kept.count;
    r->peer = r->init_peer = kept.init_peer;
    r->tag = kept.tag;
    r->context = kept.context;
    r->bytes = kept.bytes;
    r->persistent = 1;
    r->active = 1;
    if (r->peer == PB_ENG_PROC_NULL) {
        r->phase = SEND_SENT;
        r->status.MPI_SOURCE = MPI_PROC_NULL;
        r->status.MPI_TAG = MPI_ANY_TAG;
        if (r->kind == PB_ENG_REQ_RECV)
            pb_eng_recv_finish(r);
        else
            r->complete = 1;
        return;
    }
    if (r->kind == PB_ENG_REQ_SEND)
        pb_eng_send_begin(r);
    else
        pb_eng_recv_begin(r);
}
