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
        r->freed = 1;
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
    if (r->freed)
        pb_eng_request_release(r);
}
