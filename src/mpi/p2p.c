/*
 * Point-to-point (p2p.h; docs/mpi.md, "The engine"): the work of MPI_Isend
 * .. MPI_Probe, the persistent sends and receives (MPI_Send_init ..),
 * MPI_Isendrecv and the matched probe (MPI_Mprobe ..) once the generated
 * bindings (bindings.c) checked their arguments, over the engine
 * (engine.h) with the call's resolved objects: context id, world ranks,
 * datatype.  The blocking sends and receive are inline in p2p_fast.h,
 * completion and MPI_Start are in request.c, buffered mode in bsend.c.
 */
#include "mpi/p2p.h"

#include <stdlib.h>

#include "mpi/bindings.h"
#include "mpi/engine/engine.h"
#include "mpi/engine/handle.h"

/* ---- the engine's clients ------------------------------------------------------- */

/* A request the program holds: it keeps its communicator alive (the
 * standard allows MPI_Comm_free with operations pending). */
static void request_hold(MPI_Request r, pb_comm_t *c)
{
    r->comm = c;
    pb_mpi_comm_retain(c);
}

int pb_mpi_isend_on(const void *buf, MPI_Count count, MPI_Datatype type, int dest, int tag,
                    pb_comm_t *comm, int coll, MPI_Request *request)
{
    int rc = pb_eng_send_start(buf, count, pb_mpi_datatype(type), pb_mpi_world_of(comm, dest), tag,
                               comm->context + (uint32_t)coll, PB_ENG_MODE_STANDARD, request);

    if (rc == MPI_SUCCESS)
        request_hold(*request, comm);
    return rc;
}

int pb_mpi_irecv_on(void *buf, MPI_Count count, MPI_Datatype type, int source, int tag,
                    pb_comm_t *comm, int coll, MPI_Request *request)
{
    int rc = pb_eng_recv_start(buf, count, pb_mpi_datatype(type), pb_mpi_world_of(comm, source),
                               tag, comm->context + (uint32_t)coll, request);

    if (rc == MPI_SUCCESS)
        request_hold(*request, comm);
    return rc;
}

int pb_mpi_wait_requests(int count, MPI_Request requests[])
{
    int rc = MPI_SUCCESS;

    for (int i = 0; i < count; i++) {
        MPI_Request r = requests[i];

        if (r == MPI_REQUEST_NULL)
            continue;
        pb_eng_wait(r);
        if (rc == MPI_SUCCESS && r->kind == PB_ENG_REQ_RECV)
            rc = r->status.MPI_ERROR;
        pb_mpi_request_release(r);
        requests[i] = MPI_REQUEST_NULL;
    }
    return rc;
}

int pb_mpi_p2p_init(void)
{
    return pb_eng_init();
}

void pb_mpi_p2p_finalize(void)
{
    /* receives the program left pending never complete: the engine
     * releases them, after they let go of their communicators */
    for (MPI_Request r = pb_eng.posted.head; r != NULL; r = r->next)
        pb_mpi_request_let_go(r);
    pb_eng_finalize();
}

/* ---- the MPI calls: sends and receives ------------------------------------------ */

int pb_mpi_send_wait(const char *func, const void *buf, MPI_Count count, pb_datatype_t *t, int dest,
                     int tag, pb_comm_t *c, int mode)
{
    size_t bytes;
    MPI_Request r;
    int rc;

    if (dest == MPI_PROC_NULL) /* @t may be NULL then (MPI_DATATYPE_NULL) */
        return MPI_SUCCESS;
    bytes = (size_t)count * pb_eng_type_size(t);
    if (mode != PB_ENG_MODE_SYNC && bytes <= PB_ENG_INLINE_MAX && !pb_eng_type_is_contiguous(t)) {
        char packed[PB_ENG_INLINE_MAX];

        pb_eng_type_pack_range(buf, count, t, 0, packed, bytes);
        if (pb_eng_send_short(packed, bytes, c->world[dest], tag, c->context))
            return MPI_SUCCESS;
    }
    rc = pb_eng_send_start(buf, count, t, pb_mpi_world_of(c, dest), tag, c->context, mode, &r);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(c->handle, rc, func, "cannot start the send");
    pb_eng_wait(r);
    pb_eng_request_release(r);
    return MPI_SUCCESS;
}

static int send_nonblocking(const char *func, const void *buf, MPI_Count count, MPI_Datatype type,
                            int dest, int tag, MPI_Comm comm, int mode, MPI_Request *request,
                            pb_comm_t *c)
{
    int rc = pb_eng_send_start(buf, count, pb_mpi_datatype(type), pb_mpi_world_of(c, dest), tag,
                               c->context, mode, request);

    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(comm, rc, func, "cannot start the send");
    request_hold(*request, c);
    return MPI_SUCCESS;
}

int pb_mpi_isend_impl(const char *func, const void *buf, MPI_Count count, MPI_Datatype datatype,
                      int dest, int tag, MPI_Comm comm, MPI_Request *request, pb_comm_t *c)
{
    return send_nonblocking(func, buf, count, datatype, dest, tag, comm, PB_ENG_MODE_STANDARD,
                            request, c);
}

int pb_mpi_issend_impl(const char *func, const void *buf, MPI_Count count, MPI_Datatype datatype,
                       int dest, int tag, MPI_Comm comm, MPI_Request *request, pb_comm_t *c)
{
    return send_nonblocking(func, buf, count, datatype, dest, tag, comm, PB_ENG_MODE_SYNC, request,
                            c);
}

int pb_mpi_irsend_impl(const char *func, const void *buf, MPI_Count count, MPI_Datatype datatype,
                       int dest, int tag, MPI_Comm comm, MPI_Request *request, pb_comm_t *c)
{
    return send_nonblocking(func, buf, count, datatype, dest, tag, comm, PB_ENG_MODE_READY, request,
                            c);
}

int pb_mpi_irecv_impl(const char *func, void *buf, MPI_Count count, MPI_Datatype datatype,
                      int source, int tag, MPI_Comm comm, MPI_Request *request, pb_comm_t *c)
{
    int rc = pb_eng_recv_start(buf, count, pb_mpi_datatype(datatype), pb_mpi_world_of(c, source),
                               tag, c->context, request);

    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(comm, rc, func, "cannot start the receive");
    request_hold(*request, c);
    return MPI_SUCCESS;
}

/* Wait for send @sr, then receive @rr (started by a Sendrecv on @c);
 * release both.  @return the receive's error (MPI_ERR_TRUNCATE). */
static int sendrecv_wait(MPI_Request sr, MPI_Request rr, pb_comm_t *c, MPI_Status *status)
{
    int rc;

    pb_eng_wait(sr);
    pb_eng_request_release(sr);
    pb_eng_wait(rr);
    pb_mpi_status_store(status, rr, c);
    rc = rr->status.MPI_ERROR;
    pb_eng_request_release(rr);
    return rc;
}

int pb_mpi_sendrecv_impl(const char *func, const void *sendbuf, MPI_Count sendcount,
                         MPI_Datatype sendtype, int dest, int sendtag, void *recvbuf,
                         MPI_Count recvcount, MPI_Datatype recvtype, int source, int recvtag,
                         MPI_Comm comm, MPI_Status *status, pb_comm_t *c)
{
    MPI_Request rr, sr;
    int rc = pb_eng_recv_start(recvbuf, recvcount, pb_mpi_datatype(recvtype),
                               pb_mpi_world_of(c, source), recvtag, c->context, &rr);

    if (rc == MPI_SUCCESS)
        rc = pb_eng_send_start(sendbuf, sendcount, pb_mpi_datatype(sendtype),
                               pb_mpi_world_of(c, dest), sendtag, c->context, PB_ENG_MODE_STANDARD,
                               &sr);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(comm, rc, func, "cannot start the transfers");
    rc = sendrecv_wait(sr, rr, c, status);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(comm, rc, func, "the message is longer than the buffer");
    return MPI_SUCCESS;
}

int pb_mpi_sendrecv_replace_impl(const char *func, void *buf, MPI_Count count,
                                 MPI_Datatype datatype, int dest, int sendtag, int source,
                                 int recvtag, MPI_Comm comm, MPI_Status *status, pb_comm_t *c)
{
    pb_datatype_t *t = pb_mpi_datatype(datatype);
    size_t bytes = (size_t)count * pb_eng_type_size(t);
    MPI_Request rr, sr;
    void *copy = malloc(bytes ? bytes : 1);
    int rc;

    if (copy == NULL)
        return pb_mpi_raise(comm, MPI_ERR_NO_MEM, func, "out of memory");
    pb_eng_type_pack_range(buf, count, t, 0, copy, bytes);
    /* the copy goes as bytes, whose number may not fit an int */
    rc = pb_eng_recv_start(buf, count, t, pb_mpi_world_of(c, source), recvtag, c->context, &rr);
    if (rc == MPI_SUCCESS)
        rc = pb_eng_send_start(copy, (MPI_Count)bytes, pb_mpi_datatype(MPI_BYTE),
                               pb_mpi_world_of(c, dest), sendtag, c->context, PB_ENG_MODE_STANDARD,
                               &sr);
    if (rc != MPI_SUCCESS) {
        free(copy);
        return pb_mpi_raise(comm, rc, func, "cannot start the transfers");
    }
    rc = sendrecv_wait(sr, rr, c, status);
    free(copy);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(comm, rc, func, "the message is longer than the buffer");
    return MPI_SUCCESS;
}

/* ---- probing ---------------------------------------------------------------------- */

static void probe_status(MPI_Status *status, const pb_comm_t *c, const pb_eng_probe_t *found)
{
    if (status == MPI_STATUS_IGNORE)
        return;
    status->MPI_SOURCE = c->local[found->source];
    status->MPI_TAG = found->tag;
    status->MPI_ERROR = MPI_SUCCESS;
    pb_mpi_status_set_bytes(status, found->total);
    pb_mpi_status_set_cancelled(status, 0);
}

static void probe_proc_null(MPI_Status *status)
{
    pb_mpi_status_empty(status);
    if (status != MPI_STATUS_IGNORE)
        status->MPI_SOURCE = MPI_PROC_NULL;
}

int pb_mpi_iprobe_impl(const char *func, int source, int tag, MPI_Comm comm, int *flag,
                       MPI_Status *status, pb_comm_t *c)
{
    pb_eng_probe_t found;

    (void)func;
    (void)comm;
    if (source == MPI_PROC_NULL) {
        *flag = 1;
        probe_proc_null(status);
        return MPI_SUCCESS;
    }
    *flag = pb_eng_recv_probe(c->context, pb_mpi_world_of(c, source), tag, 0, &found);
    if (*flag)
        probe_status(status, c, &found);
    return MPI_SUCCESS;
}

int pb_mpi_probe_impl(const char *func, int source, int tag, MPI_Comm comm, MPI_Status *status,
                      pb_comm_t *c)
{
    pb_eng_probe_t found;

    (void)func;
    (void)comm;
    if (source == MPI_PROC_NULL) {
        probe_proc_null(status);
        return MPI_SUCCESS;
    }
    pb_eng_recv_probe(c->context, pb_mpi_world_of(c, source), tag, 1, &found);
    probe_status(status, c, &found);
    return MPI_SUCCESS;
}

/* ---- persistent sends and receives --------------------------------------------- */

/* A persistent request of @kind (send in @mode, or receive) with the
 * arguments checked once, here: MPI_Start only starts it. */
static int persistent_init(const char *func, int kind, const void *buf, MPI_Count count,
                           MPI_Datatype type, int peer, int tag, MPI_Comm comm, int mode,
                           MPI_Request *request, pb_comm_t *c)
{
    int rc = pb_eng_request_persistent(kind, (void *)buf, count, pb_mpi_datatype(type),
                                       pb_mpi_world_of(c, peer), tag, c->context, mode, request);

    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(comm, rc, func, "cannot make the request");
    request_hold(*request, c);
    return MPI_SUCCESS;
}

int pb_mpi_send_init_impl(const char *func, const void *buf, MPI_Count count, MPI_Datatype datatype,
                          int dest, int tag, MPI_Comm comm, MPI_Request *request, pb_comm_t *c)
{
    return persistent_init(func, PB_ENG_REQ_SEND, buf, count, datatype, dest, tag, comm,
                           PB_ENG_MODE_STANDARD, request, c);
}

int pb_mpi_bsend_init_impl(const char *func, const void *buf, MPI_Count count,
                           MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                           MPI_Request *request, pb_comm_t *c)
{
    return persistent_init(func, PB_ENG_REQ_SEND, buf, count, datatype, dest, tag, comm,
                           PB_ENG_MODE_BUFFERED, request, c);
}

int pb_mpi_ssend_init_impl(const char *func, const void *buf, MPI_Count count,
                           MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                           MPI_Request *request, pb_comm_t *c)
{
    return persistent_init(func, PB_ENG_REQ_SEND, buf, count, datatype, dest, tag, comm,
                           PB_ENG_MODE_SYNC, request, c);
}

int pb_mpi_rsend_init_impl(const char *func, const void *buf, MPI_Count count,
                           MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                           MPI_Request *request, pb_comm_t *c)
{
    return persistent_init(func, PB_ENG_REQ_SEND, buf, count, datatype, dest, tag, comm,
                           PB_ENG_MODE_READY, request, c);
}

int pb_mpi_recv_init_impl(const char *func, void *buf, MPI_Count count, MPI_Datatype datatype,
                          int source, int tag, MPI_Comm comm, MPI_Request *request, pb_comm_t *c)
{
    return persistent_init(func, PB_ENG_REQ_RECV, buf, count, datatype, source, tag, comm,
                           PB_ENG_MODE_STANDARD, request, c);
}

int pb_mpi_p2p_start(const char *func, MPI_Request r)
{
    if (r->mode == PB_ENG_MODE_BUFFERED) { /* the copy goes out on its own: done at once */
        int rc = pb_mpi_bsend_copy(func, r->buf, r->count, r->type, r->init_peer, r->tag, r->comm);

        if (rc != MPI_SUCCESS)
            return rc;
        r->active = 1;
        r->complete = 1;
        r->cancelled = 0;
        return MPI_SUCCESS;
    }
    pb_eng_request_restart(r);
    return MPI_SUCCESS;
}

/* ---- MPI_Isendrecv, MPI_Isendrecv_replace ------------------------------------------ */

/* The program's request of an Isendrecv is its receive @rr, to which the
 * send @sr is joined: it completes once both have, with the receive's
 * status. */
static int isendrecv_join(const char *func, MPI_Comm comm, int rc, MPI_Request rr, MPI_Request sr,
                          MPI_Request *request, pb_comm_t *c)
{
    if (rc != MPI_SUCCESS) {
        if (rr != MPI_REQUEST_NULL) { /* the receive was posted: take it back */
            pb_eng_recv_cancel(rr);
            pb_eng_request_free(rr);
        }
        return pb_mpi_raise(comm, rc, func, "cannot start the transfers");
    }
    pb_eng_request_join(rr, sr);
    request_hold(rr, c);
    *request = rr;
    return MPI_SUCCESS;
}

int pb_mpi_isendrecv_impl(const char *func, const void *sendbuf, MPI_Count sendcount,
                          MPI_Datatype sendtype, int dest, int sendtag, void *recvbuf,
                          MPI_Count recvcount, MPI_Datatype recvtype, int source, int recvtag,
                          MPI_Comm comm, MPI_Request *request, pb_comm_t *c)
{
    MPI_Request rr = MPI_REQUEST_NULL, sr = MPI_REQUEST_NULL;
    int rc = pb_eng_recv_start(recvbuf, recvcount, pb_mpi_datatype(recvtype),
                               pb_mpi_world_of(c, source), recvtag, c->context, &rr);

    if (rc == MPI_SUCCESS)
        rc = pb_eng_send_start(sendbuf, sendcount, pb_mpi_datatype(sendtype),
                               pb_mpi_world_of(c, dest), sendtag, c->context, PB_ENG_MODE_STANDARD,
                               &sr);
    return isendrecv_join(func, comm, rc, rr, sr, request, c);
}

int pb_mpi_isendrecv_replace_impl(const char *func, void *buf, MPI_Count count,
                                  MPI_Datatype datatype, int dest, int sendtag, int source,
                                  int recvtag, MPI_Comm comm, MPI_Request *request, pb_comm_t *c)
{
    pb_datatype_t *t = pb_mpi_datatype(datatype);
    size_t bytes = (size_t)count * pb_eng_type_size(t);
    MPI_Request rr = MPI_REQUEST_NULL, sr = MPI_REQUEST_NULL;
    void *copy = malloc(bytes ? bytes : 1);
    int rc;

    if (copy == NULL)
        return pb_mpi_raise(comm, MPI_ERR_NO_MEM, func, "out of memory");
    /* what is in @buf now goes, from a copy the send owns (freed with it) */
    pb_eng_type_pack_range(buf, count, t, 0, copy, bytes);
    rc = pb_eng_recv_start(buf, count, t, pb_mpi_world_of(c, source), recvtag, c->context, &rr);
    if (rc == MPI_SUCCESS)
        rc = pb_eng_send_start(copy, (MPI_Count)bytes, pb_mpi_datatype(MPI_BYTE),
                               pb_mpi_world_of(c, dest), sendtag, c->context, PB_ENG_MODE_STANDARD,
                               &sr);
    if (rc == MPI_SUCCESS)
        sr->copy = copy;
    else
        free(copy);
    return isendrecv_join(func, comm, rc, rr, sr, request, c);
}

/* ---- matched probe and receive ------------------------------------------------------ */

/* A message a matched probe took (MPI_Message): the engine's, and the
 * communicator it came on (held until it is received). */
struct MPI_ABI_Message {
    pb_eng_message_t *msg;
    pb_comm_t *comm;
};

static int mprobe(const char *func, int source, int tag, MPI_Comm comm, int wait, int *flag,
                  MPI_Message *message, MPI_Status *status, pb_comm_t *c)
{
    pb_eng_probe_t found;
    pb_eng_message_t *msg;
    MPI_Message m;

    if (source == MPI_PROC_NULL) {
        *flag = 1;
        *message = MPI_MESSAGE_NO_PROC;
        probe_proc_null(status);
        return MPI_SUCCESS;
    }
    m = pb_eng_handle_new(PB_ENG_HANDLE_MESSAGE, sizeof(*m));
    if (m == NULL)
        return pb_mpi_raise(comm, MPI_ERR_NO_MEM, func, "out of memory");
    *flag = pb_eng_recv_mprobe(c->context, pb_mpi_world_of(c, source), tag, wait, &found, &msg);
    if (!*flag) {
        pb_eng_handle_delete(PB_ENG_HANDLE_MESSAGE, m);
        return MPI_SUCCESS;
    }
    m->msg = msg;
    m->comm = c;
    pb_mpi_comm_retain(c);
    *message = m;
    probe_status(status, c, &found);
    return MPI_SUCCESS;
}

int pb_mpi_mprobe_impl(const char *func, int source, int tag, MPI_Comm comm, MPI_Message *message,
                       MPI_Status *status, pb_comm_t *c)
{
    int flag;

    return mprobe(func, source, tag, comm, 1, &flag, message, status, c);
}

int pb_mpi_improbe_impl(const char *func, int source, int tag, MPI_Comm comm, int *flag,
                        MPI_Message *message, MPI_Status *status, pb_comm_t *c)
{
    return mprobe(func, source, tag, comm, 0, flag, message, status, c);
}

/* Start the receive of *@message (checked: a message or MPI_MESSAGE_NO_PROC)
 * into @request, and set *@message to MPI_MESSAGE_NULL. */
static int message_receive(const char *func, void *buf, MPI_Count count, MPI_Datatype datatype,
                           MPI_Message *message, MPI_Request *request)
{
    MPI_Message m = *message;
    pb_comm_t *c;
    int rc;

    if (m == MPI_MESSAGE_NO_PROC) {
        rc = pb_eng_recv_start(buf, 0, pb_mpi_datatype(MPI_BYTE), PB_ENG_PROC_NULL, MPI_ANY_TAG, 0,
                               request);
        if (rc != MPI_SUCCESS)
            return pb_mpi_raise(MPI_COMM_NULL, rc, func, "cannot start the receive");
        *message = MPI_MESSAGE_NULL;
        return MPI_SUCCESS;
    }
    c = m->comm;
    rc = pb_eng_recv_message(buf, count, pb_mpi_datatype(datatype), m->msg, request);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(c->handle, rc, func, "cannot start the receive");
    request_hold(*request, c);
    pb_mpi_comm_release(c);
    pb_eng_handle_delete(PB_ENG_HANDLE_MESSAGE, m);
    *message = MPI_MESSAGE_NULL;
    return MPI_SUCCESS;
}

/* *@message is a message a matched probe returned: MPI_ERR_ARG (NULL),
 * MPI_ERR_REQUEST (MPI_MESSAGE_NULL, received already, made up). */
static int check_message(const char *func, MPI_Message *message)
{
    if (message == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func, "message is NULL");
    if (*message == MPI_MESSAGE_NO_PROC)
        return MPI_SUCCESS;
    if (*message == MPI_MESSAGE_NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_REQUEST, func,
                            "the message is MPI_MESSAGE_NULL (received already?)");
    if (!pb_eng_handle_valid(PB_ENG_HANDLE_MESSAGE, *message))
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_REQUEST, func,
                            "not a message of MPI_Mprobe or MPI_Improbe (received already?)");
    return MPI_SUCCESS;
}

int pb_mpi_mrecv_impl(const char *func, void *buf, MPI_Count count, MPI_Datatype datatype,
                      MPI_Message *message, MPI_Status *status)
{
    MPI_Request r;
    pb_comm_t *c;
    int rc = check_message(func, message);

    if (rc != MPI_SUCCESS)
        return rc;
    c = *message != MPI_MESSAGE_NO_PROC ? (*message)->comm : NULL;
    rc = message_receive(func, buf, count, datatype, message, &r);
    if (rc != MPI_SUCCESS)
        return rc;
    pb_eng_wait(r);
    pb_mpi_status_store(status, r, c);
    rc = r->status.MPI_ERROR;
    pb_mpi_request_release(r);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(c != NULL ? c->handle : MPI_COMM_NULL, rc, func,
                            "the message is longer than the buffer");
    return MPI_SUCCESS;
}

int pb_mpi_imrecv_impl(const char *func, void *buf, MPI_Count count, MPI_Datatype datatype,
                       MPI_Message *message, MPI_Request *request)
{
    int rc = check_message(func, message);

    return rc != MPI_SUCCESS ? rc : message_receive(func, buf, count, datatype, message, request);
}

/* The integer of @message (the ABI's conversion for other languages):
 * MPI_MESSAGE_NULL's and MPI_MESSAGE_NO_PROC's ABI values (0x128, 0x129),
 * or one from PB_ENG_HANDLE_INT_BASE up while the message is not received.
 * A bad handle raises MPI_ERR_ARG and gives MPI_MESSAGE_NULL's. */
PB_EXPORT int PMPI_Message_toint(MPI_Message message)
{
    if (message == MPI_MESSAGE_NULL || message == MPI_MESSAGE_NO_PROC)
        return (int)(uintptr_t)message;
    if (!pb_eng_handle_valid(PB_ENG_HANDLE_MESSAGE, message)) {
        pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Message_toint", "not a message");
        return (int)(uintptr_t)MPI_MESSAGE_NULL;
    }
    return pb_eng_handle_toint(PB_ENG_HANDLE_MESSAGE, message);
}
PB_MPI_WEAK_ALIAS(MPI_Message_toint, PMPI_Message_toint);

/* The message of integer @message (MPI_Message_toint), or MPI_MESSAGE_NULL
 * when no message not yet received has it. */
PB_EXPORT MPI_Message PMPI_Message_fromint(int message)
{
    MPI_Message m;

    if (message == (int)(uintptr_t)MPI_MESSAGE_NO_PROC)
        return MPI_MESSAGE_NO_PROC;
    if (message < PB_ENG_HANDLE_INT_BASE)
        return MPI_MESSAGE_NULL;
    m = pb_eng_handle_fromint(PB_ENG_HANDLE_MESSAGE, message);
    return m != NULL ? m : MPI_MESSAGE_NULL;
}
PB_MPI_WEAK_ALIAS(MPI_Message_fromint, PMPI_Message_fromint);
