/*
 * Point-to-point bindings (p2p.h; docs/mpi.md, "The engine"): the
 * argument checks of MPI_Send .. MPI_Probe, then the engine (engine.h)
 * with the call's resolved objects: context id, world ranks, datatype.
 * Completion is in request.c, buffered mode in bsend.c.
 */
#include "mpi/p2p.h"

#include <stdlib.h>

#include "mpi/engine/engine.h"

/* ---- argument checks ------------------------------------------------------------ */

static int check_buffer(const char *func, MPI_Comm comm, const void *buf, MPI_Count count,
                        MPI_Datatype type, pb_datatype_t **type_p)
{
    int rc;

    if (count < 0)
        return pb_mpi_raise(comm, MPI_ERR_COUNT, func, "count %lld is negative", (long long)count);
    rc = pb_mpi_datatype_check(type);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(comm, rc, func, "the datatype is not a committed datatype");
    *type_p = pb_mpi_datatype(type);
    if (buf == NULL && count > 0 && pb_eng_type_size(*type_p) > 0 &&
        pb_eng_type_true_lb(*type_p) == 0)
        return pb_mpi_raise(comm, MPI_ERR_BUFFER, func, "buf is NULL with count %lld",
                            (long long)count);
    return MPI_SUCCESS;
}

int pb_mpi_check_send(const char *func, MPI_Comm comm, pb_comm_t **c_p, const void *buf,
                      MPI_Count count, MPI_Datatype type, int dest, int tag, pb_datatype_t **type_p)
{
    int rc = pb_mpi_comm_check(comm, func, c_p);

    if (rc != MPI_SUCCESS)
        return rc;
    rc = check_buffer(func, comm, buf, count, type, type_p);
    if (rc != MPI_SUCCESS)
        return rc;
    if (dest != MPI_PROC_NULL && (dest < 0 || dest >= (*c_p)->size))
        return pb_mpi_raise(comm, MPI_ERR_RANK, func, "rank %d is not in 0..%d", dest,
                            (*c_p)->size - 1);
    if (tag < 0)
        return pb_mpi_raise(comm, MPI_ERR_TAG, func, "tag %d is negative", tag);
    return MPI_SUCCESS;
}

static int check_recv(const char *func, MPI_Comm comm, pb_comm_t **c_p, const void *buf,
                      MPI_Count count, MPI_Datatype type, int source, int tag,
                      pb_datatype_t **type_p)
{
    int rc = pb_mpi_comm_check(comm, func, c_p);

    if (rc != MPI_SUCCESS)
        return rc;
    rc = check_buffer(func, comm, buf, count, type, type_p);
    if (rc != MPI_SUCCESS)
        return rc;
    if (source != MPI_PROC_NULL && source != MPI_ANY_SOURCE &&
        (source < 0 || source >= (*c_p)->size))
        return pb_mpi_raise(comm, MPI_ERR_RANK, func, "rank %d is not in 0..%d", source,
                            (*c_p)->size - 1);
    if (tag < 0 && tag != MPI_ANY_TAG)
        return pb_mpi_raise(comm, MPI_ERR_TAG, func, "tag %d is negative", tag);
    return MPI_SUCCESS;
}

/* ---- the engine's clients ------------------------------------------------------- */

/* The world rank of @rank of @c (MPI_PROC_NULL, MPI_ANY_SOURCE kept). */
static int world_of(const pb_comm_t *c, int rank)
{
    if (rank == MPI_PROC_NULL)
        return PB_ENG_PROC_NULL;
    if (rank == MPI_ANY_SOURCE)
        return PB_ENG_ANY_SOURCE;
    return c->world[rank];
}

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
    int rc = pb_eng_send_start(buf, count, pb_mpi_datatype(type), world_of(comm, dest), tag,
                               comm->context + (uint32_t)coll, PB_ENG_MODE_STANDARD, request);

    if (rc == MPI_SUCCESS)
        request_hold(*request, comm);
    return rc;
}

int pb_mpi_irecv_on(void *buf, MPI_Count count, MPI_Datatype type, int source, int tag,
                    pb_comm_t *comm, int coll, MPI_Request *request)
{
    int rc = pb_eng_recv_start(buf, count, pb_mpi_datatype(type), world_of(comm, source), tag,
                               comm->context + (uint32_t)coll, request);

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

/* A blocking send of @count elements of @t (checked) at @buf in @mode
 * (standard, synchronous or ready) to @dest of @c: a short one goes
 * straight into a postbox (pb_eng_send_short), any other through a
 * request the call waits for. */
static int send_blocking(const char *func, const void *buf, int count, pb_datatype_t *t, int dest,
                         int tag, pb_comm_t *c, int mode)
{
    size_t bytes = (size_t)count * pb_eng_type_size(t);
    MPI_Request r;
    int rc;

    if (mode != PB_ENG_MODE_SYNC && dest != MPI_PROC_NULL && bytes <= PB_ENG_INLINE_MAX) {
        char packed[PB_ENG_INLINE_MAX];
        const void *data = packed;

        if (pb_eng_type_is_contiguous(t))
            data = (const char *)buf + pb_eng_type_true_lb(t);
        else
            pb_eng_type_pack_range(buf, count, t, 0, packed, bytes);
        if (pb_eng_send_short(data, bytes, c->world[dest], tag, c->context))
            return MPI_SUCCESS;
    }
    rc = pb_eng_send_start(buf, count, t, world_of(c, dest), tag, c->context, mode, &r);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(c->handle, rc, func, "cannot start the send");
    pb_eng_wait(r);
    pb_eng_request_release(r);
    return MPI_SUCCESS;
}

/* Send @count elements of @type at @buf to rank @dest of @comm with @tag
 * (standard mode: returns once the buffer may be reused).
 * @return MPI_SUCCESS; MPI_ERR_COMM, MPI_ERR_COUNT, MPI_ERR_TYPE,
 *         MPI_ERR_BUFFER, MPI_ERR_RANK, MPI_ERR_TAG (through the handler). */
PB_EXPORT int PMPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                        MPI_Comm comm)
{
    pb_comm_t *c;
    pb_datatype_t *t;
    int rc = pb_mpi_check_send("MPI_Send", comm, &c, buf, count, datatype, dest, tag, &t);

    if (rc != MPI_SUCCESS)
        return rc;
    return send_blocking("MPI_Send", buf, count, t, dest, tag, c, PB_ENG_MODE_STANDARD);
}
PB_MPI_WEAK_ALIAS(MPI_Send, PMPI_Send);

/* MPI_Send that returns only once the receive has matched.  Errors as MPI_Send. */
PB_EXPORT int PMPI_Ssend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                         MPI_Comm comm)
{
    pb_comm_t *c;
    pb_datatype_t *t;
    int rc = pb_mpi_check_send("MPI_Ssend", comm, &c, buf, count, datatype, dest, tag, &t);

    if (rc != MPI_SUCCESS)
        return rc;
    return send_blocking("MPI_Ssend", buf, count, t, dest, tag, c, PB_ENG_MODE_SYNC);
}
PB_MPI_WEAK_ALIAS(MPI_Ssend, PMPI_Ssend);

/* MPI_Send for when the receive is known to be posted (sent as standard).
 * Errors as MPI_Send. */
PB_EXPORT int PMPI_Rsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                         MPI_Comm comm)
{
    pb_comm_t *c;
    pb_datatype_t *t;
    int rc = pb_mpi_check_send("MPI_Rsend", comm, &c, buf, count, datatype, dest, tag, &t);

    if (rc != MPI_SUCCESS)
        return rc;
    return send_blocking("MPI_Rsend", buf, count, t, dest, tag, c, PB_ENG_MODE_READY);
}
PB_MPI_WEAK_ALIAS(MPI_Rsend, PMPI_Rsend);

static int send_nonblocking(const char *func, const void *buf, int count, MPI_Datatype type,
                            int dest, int tag, MPI_Comm comm, int mode, MPI_Request *request)
{
    pb_comm_t *c;
    pb_datatype_t *t;
    int rc = pb_mpi_check_send(func, comm, &c, buf, count, type, dest, tag, &t);

    if (rc != MPI_SUCCESS)
        return rc;
    if (request == NULL)
        return pb_mpi_raise(comm, MPI_ERR_ARG, func, "request is NULL");
    rc = pb_eng_send_start(buf, count, t, world_of(c, dest), tag, c->context, mode, request);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(comm, rc, func, "cannot start the send");
    request_hold(*request, c);
    return MPI_SUCCESS;
}

/* Start a standard send; complete it with MPI_Wait/Test.  Errors as
 * MPI_Send, and MPI_ERR_ARG for a NULL request. */
PB_EXPORT int PMPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                         MPI_Comm comm, MPI_Request *request)
{
    return send_nonblocking("MPI_Isend", buf, count, datatype, dest, tag, comm,
                            PB_ENG_MODE_STANDARD, request);
}
PB_MPI_WEAK_ALIAS(MPI_Isend, PMPI_Isend);

/* Start a synchronous send.  Errors as MPI_Isend. */
PB_EXPORT int PMPI_Issend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                          MPI_Comm comm, MPI_Request *request)
{
    return send_nonblocking("MPI_Issend", buf, count, datatype, dest, tag, comm, PB_ENG_MODE_SYNC,
                            request);
}
PB_MPI_WEAK_ALIAS(MPI_Issend, PMPI_Issend);

/* Start a ready send.  Errors as MPI_Isend. */
PB_EXPORT int PMPI_Irsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                          MPI_Comm comm, MPI_Request *request)
{
    return send_nonblocking("MPI_Irsend", buf, count, datatype, dest, tag, comm, PB_ENG_MODE_READY,
                            request);
}
PB_MPI_WEAK_ALIAS(MPI_Irsend, PMPI_Irsend);

/* Receive into @count elements of @type at @buf a message from @source
 * (or MPI_ANY_SOURCE) with @tag (or MPI_ANY_TAG) on @comm.
 * @return MPI_SUCCESS; MPI_ERR_TRUNCATE (a longer message: the buffer holds
 *         its start); MPI_ERR_COMM, _COUNT, _TYPE, _BUFFER, _RANK, _TAG. */
PB_EXPORT int PMPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag,
                        MPI_Comm comm, MPI_Status *status)
{
    pb_comm_t *c;
    pb_datatype_t *t;
    MPI_Request r;
    int rc = check_recv("MPI_Recv", comm, &c, buf, count, datatype, source, tag, &t);

    if (rc != MPI_SUCCESS)
        return rc;
    rc = pb_eng_recv_start(buf, count, t, world_of(c, source), tag, c->context, &r);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(comm, rc, "MPI_Recv", "cannot start the receive");
    pb_eng_wait(r);
    pb_mpi_status_store(status, r, c);
    rc = r->status.MPI_ERROR;
    pb_eng_request_release(r);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(comm, rc, "MPI_Recv", "the message is longer than the buffer");
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Recv, PMPI_Recv);

/* Start a receive; complete it with MPI_Wait/Test.  Errors as MPI_Recv's
 * argument checks, and MPI_ERR_ARG for a NULL request. */
PB_EXPORT int PMPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag,
                         MPI_Comm comm, MPI_Request *request)
{
    pb_comm_t *c;
    pb_datatype_t *t;
    int rc = check_recv("MPI_Irecv", comm, &c, buf, count, datatype, source, tag, &t);

    if (rc != MPI_SUCCESS)
        return rc;
    if (request == NULL)
        return pb_mpi_raise(comm, MPI_ERR_ARG, "MPI_Irecv", "request is NULL");
    rc = pb_eng_recv_start(buf, count, t, world_of(c, source), tag, c->context, request);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(comm, rc, "MPI_Irecv", "cannot start the receive");
    request_hold(*request, c);
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Irecv, PMPI_Irecv);

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

/* Send one message and receive another at once (no deadlock between two
 * ranks exchanging).  Errors as MPI_Send and MPI_Recv. */
PB_EXPORT int PMPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest,
                            int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                            int source, int recvtag, MPI_Comm comm, MPI_Status *status)
{
    pb_comm_t *c;
    pb_datatype_t *st, *rt;
    MPI_Request rr, sr;
    int rc = pb_mpi_check_send("MPI_Sendrecv", comm, &c, sendbuf, sendcount, sendtype, dest,
                               sendtag, &st);

    if (rc == MPI_SUCCESS)
        rc = check_recv("MPI_Sendrecv", comm, &c, recvbuf, recvcount, recvtype, source, recvtag,
                        &rt);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = pb_eng_recv_start(recvbuf, recvcount, rt, world_of(c, source), recvtag, c->context, &rr);
    if (rc == MPI_SUCCESS)
        rc = pb_eng_send_start(sendbuf, sendcount, st, world_of(c, dest), sendtag, c->context,
                               PB_ENG_MODE_STANDARD, &sr);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(comm, rc, "MPI_Sendrecv", "cannot start the transfers");
    rc = sendrecv_wait(sr, rr, c, status);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(comm, rc, "MPI_Sendrecv", "the message is longer than the buffer");
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Sendrecv, PMPI_Sendrecv);

/* MPI_Sendrecv with one buffer: what was in @buf is sent, what arrives
 * replaces it.  Errors as MPI_Sendrecv, and MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Sendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest,
                                    int sendtag, int source, int recvtag, MPI_Comm comm,
                                    MPI_Status *status)
{
    pb_comm_t *c;
    pb_datatype_t *t;
    MPI_Request rr, sr;
    size_t bytes;
    void *copy;
    int rc = pb_mpi_check_send("MPI_Sendrecv_replace", comm, &c, buf, count, datatype, dest,
                               sendtag, &t);

    if (rc == MPI_SUCCESS)
        rc =
            check_recv("MPI_Sendrecv_replace", comm, &c, buf, count, datatype, source, recvtag, &t);
    if (rc != MPI_SUCCESS)
        return rc;
    bytes = (size_t)count * pb_eng_type_size(t);
    copy = malloc(bytes ? bytes : 1);
    if (copy == NULL)
        return pb_mpi_raise(comm, MPI_ERR_NO_MEM, "MPI_Sendrecv_replace", "out of memory");
    pb_eng_type_pack_range(buf, count, t, 0, copy, bytes);
    /* the copy goes as bytes, whose number may not fit an int */
    rc = pb_eng_recv_start(buf, count, t, world_of(c, source), recvtag, c->context, &rr);
    if (rc == MPI_SUCCESS)
        rc = pb_eng_send_start(copy, (MPI_Count)bytes, pb_mpi_datatype(MPI_BYTE), world_of(c, dest),
                               sendtag, c->context, PB_ENG_MODE_STANDARD, &sr);
    if (rc != MPI_SUCCESS) {
        free(copy);
        return pb_mpi_raise(comm, rc, "MPI_Sendrecv_replace", "cannot start the transfers");
    }
    rc = sendrecv_wait(sr, rr, c, status);
    free(copy);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(comm, rc, "MPI_Sendrecv_replace",
                            "the message is longer than the buffer");
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Sendrecv_replace, PMPI_Sendrecv_replace);

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

/* *@flag = whether a message from @source with @tag can be received now;
 * if so, @status describes it.  Errors as MPI_Recv's checks. */
PB_EXPORT int PMPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status)
{
    pb_comm_t *c;
    pb_datatype_t *t;
    pb_eng_probe_t found;
    int rc = check_recv("MPI_Iprobe", comm, &c, NULL, 0, MPI_BYTE, source, tag, &t);

    if (rc != MPI_SUCCESS)
        return rc;
    if (flag == NULL)
        return pb_mpi_raise(comm, MPI_ERR_ARG, "MPI_Iprobe", "flag is NULL");
    if (source == MPI_PROC_NULL) {
        *flag = 1;
        probe_proc_null(status);
        return MPI_SUCCESS;
    }
    *flag = pb_eng_recv_probe(c->context, world_of(c, source), tag, 0, &found);
    if (*flag)
        probe_status(status, c, &found);
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Iprobe, PMPI_Iprobe);

/* Wait until a message from @source with @tag can be received; @status
 * describes it.  Errors as MPI_Recv's checks. */
PB_EXPORT int PMPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    pb_comm_t *c;
    pb_datatype_t *t;
    pb_eng_probe_t found;
    int rc = check_recv("MPI_Probe", comm, &c, NULL, 0, MPI_BYTE, source, tag, &t);

    if (rc != MPI_SUCCESS)
        return rc;
    if (source == MPI_PROC_NULL) {
        probe_proc_null(status);
        return MPI_SUCCESS;
    }
    pb_eng_recv_probe(c->context, world_of(c, source), tag, 1, &found);
    probe_status(status, c, &found);
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Probe, PMPI_Probe);
