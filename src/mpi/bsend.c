/*
 * Buffered mode (p2p.h): MPI_Buffer_attach/detach, and the work of MPI_Bsend
 * and MPI_Ibsend once the generated bindings (bindings.c) checked them.
 * The engine sends a buffered message from a copy it makes at once
 * (PB_ENG_MODE_BUFFERED) and counts the bytes its copies hold; this file
 * owns the attached buffer and refuses a message it has no room for.
 */
#include "mpi/p2p.h"

#include "mpi/bindings.h"
#include "mpi/engine/engine.h"

static struct {
    char *buf; /* MPI_Buffer_attach */
    size_t size;
} bsend;

/* Start a buffered send of @count elements of @type (checked) at @buf to
 * @dest of @c: the copy goes out in the background, through a request the
 * engine lets go of when it completes.  @return MPI_SUCCESS, or the error
 * raised (MPI_ERR_BUFFER: the attached buffer has no room). */
int pb_mpi_bsend_copy(const char *func, const void *buf, MPI_Count count, pb_datatype_t *t,
                      int world, int tag, pb_comm_t *c)
{
    size_t bytes;
    MPI_Request r;
    int rc;

    if (world == PB_ENG_PROC_NULL) /* @t may be NULL then (MPI_DATATYPE_NULL) */
        return MPI_SUCCESS;
    bytes = (size_t)count * pb_eng_type_size(t);
    if (pb_eng.copies_held + bytes + MPI_BSEND_OVERHEAD > bsend.size)
        return pb_mpi_raise(c->handle, MPI_ERR_BUFFER, func, "the attached buffer has no room");
    rc = pb_eng_send_start(buf, count, t, world, tag, c->context, PB_ENG_MODE_BUFFERED, &r);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(c->handle, rc, func, "cannot start the send");
    pb_eng_request_free(r);
    return MPI_SUCCESS;
}

static int bsend_start(const char *func, const void *buf, MPI_Count count, MPI_Datatype type,
                       int dest, int tag, pb_comm_t *c)
{
    return pb_mpi_bsend_copy(func, buf, count, pb_mpi_datatype(type), pb_mpi_world_of(c, dest), tag,
                             c);
}

int pb_mpi_bsend_impl(const char *func, const void *buf, MPI_Count count, MPI_Datatype datatype,
                      int dest, int tag, MPI_Comm comm, pb_comm_t *c)
{
    (void)comm;
    return bsend_start(func, buf, count, datatype, dest, tag, c);
}

int pb_mpi_ibsend_impl(const char *func, const void *buf, MPI_Count count, MPI_Datatype datatype,
                       int dest, int tag, MPI_Comm comm, MPI_Request *request, pb_comm_t *c)
{
    int rc = bsend_start(func, buf, count, datatype, dest, tag, c);

    if (rc != MPI_SUCCESS)
        return rc;
    *request = pb_eng_request_done(tag);
    if (*request == NULL)
        return pb_mpi_raise(comm, MPI_ERR_NO_MEM, func, "cannot start the send");
    (*request)->comm = c;
    pb_mpi_comm_retain(c);
    return MPI_SUCCESS;
}

/* Give MPI @size bytes at @buffer for buffered sends (one buffer at a
 * time; Postbox accounts for its use, MPI_BSEND_OVERHEAD per message, and
 * keeps the copies itself).  @return MPI_SUCCESS; MPI_ERR_BUFFER (one is
 * attached already, NULL, negative size). */
PB_EXPORT int PMPI_Buffer_attach(void *buffer, int size)
{
    if (bsend.buf != NULL || buffer == NULL || size < 0)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_BUFFER, "MPI_Buffer_attach",
                            bsend.buf != NULL ? "a buffer is attached already"
                                              : "bad buffer or size");
    bsend.buf = buffer;
    bsend.size = (size_t)size;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Buffer_attach, PMPI_Buffer_attach);

static int bsends_done(void *arg)
{
    (void)arg;
    return pb_eng.copies_held == 0;
}

/* Wait until every buffered send went out, then give the buffer back:
 * *(void **)@buffer_addr and *@size.  @return MPI_SUCCESS; MPI_ERR_BUFFER
 * (none attached); MPI_ERR_ARG. */
PB_EXPORT int PMPI_Buffer_detach(void *buffer_addr, int *size)
{
    if (buffer_addr == NULL || size == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Buffer_detach", "NULL argument");
    if (bsend.buf == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_BUFFER, "MPI_Buffer_detach",
                            "no buffer is attached");
    pb_eng_wait_until(bsends_done, NULL);
    *(void **)buffer_addr = bsend.buf;
    *size = (int)bsend.size;
    bsend.buf = NULL;
    bsend.size = 0;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Buffer_detach, PMPI_Buffer_detach);
