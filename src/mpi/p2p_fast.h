/*
 * The point-to-point calls on the hot path, inline (docs/mpi.md,
 * "Generated bindings"): the generated PMPI_Send, PMPI_Recv ... compile
 * their checks and these _impls into one function, and a short send goes
 * from the program's call straight into a postbox (pb_eng_send_short).
 * What is not the fast path is in p2p.c.
 */
#ifndef PB_MPI_P2P_FAST_H
#define PB_MPI_P2P_FAST_H

#include "mpi/engine/engine.h"
#include "mpi/p2p.h"

/* The world rank of @rank of @c (MPI_PROC_NULL, MPI_ANY_SOURCE kept). */
static inline int pb_mpi_world_of(const pb_comm_t *c, int rank)
{
    if (rank == MPI_PROC_NULL)
        return PB_ENG_PROC_NULL;
    if (rank == MPI_ANY_SOURCE)
        return PB_ENG_ANY_SOURCE;
    return c->world[rank];
}

/* A blocking send of @count elements of @type (checked) at @buf in @mode
 * (standard, synchronous or ready) to @dest of @c: a short contiguous one
 * goes straight into a postbox, any other through pb_mpi_send_wait.
 * @return MPI_SUCCESS, or the error raised. */
static PB_ALWAYS_INLINE int pb_mpi_send_blocking(const char *func, const void *buf, MPI_Count count,
                                                 MPI_Datatype type, int dest, int tag, pb_comm_t *c,
                                                 int mode)
{
    pb_datatype_t *t = pb_mpi_datatype(type); /* NULL: MPI_DATATYPE_NULL toward MPI_PROC_NULL */

    if (mode != PB_ENG_MODE_SYNC && dest != MPI_PROC_NULL &&
        (size_t)count * pb_eng_type_size(t) <= PB_ENG_INLINE_MAX && pb_eng_type_is_contiguous(t) &&
        /* in integers: @buf may be MPI_BOTTOM (NULL), the datatype's data
         * at absolute addresses */
        pb_eng_send_short((const char *)((uintptr_t)buf + (uintptr_t)pb_eng_type_true_lb(t)),
                          (size_t)count * pb_eng_type_size(t), c->world[dest], tag, c->context))
        return MPI_SUCCESS;
    return pb_mpi_send_wait(func, buf, count, t, dest, tag, c, mode);
}

/* MPI_Send (standard mode) once its checks passed. */
static inline int pb_mpi_send_impl(const char *func, const void *buf, MPI_Count count,
                                   MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                                   pb_comm_t *c)
{
    (void)comm;
    return pb_mpi_send_blocking(func, buf, count, datatype, dest, tag, c, PB_ENG_MODE_STANDARD);
}

/* MPI_Ssend (synchronous mode) once its checks passed. */
static inline int pb_mpi_ssend_impl(const char *func, const void *buf, MPI_Count count,
                                    MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                                    pb_comm_t *c)
{
    (void)comm;
    return pb_mpi_send_blocking(func, buf, count, datatype, dest, tag, c, PB_ENG_MODE_SYNC);
}

/* MPI_Rsend (ready mode, sent as standard) once its checks passed. */
static inline int pb_mpi_rsend_impl(const char *func, const void *buf, MPI_Count count,
                                    MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                                    pb_comm_t *c)
{
    (void)comm;
    return pb_mpi_send_blocking(func, buf, count, datatype, dest, tag, c, PB_ENG_MODE_READY);
}

/* MPI_Recv once its checks passed: MPI_ERR_TRUNCATE for a longer message
 * (the buffer holds its start), MPI_ERR_NO_MEM. */
static inline int pb_mpi_recv_impl(const char *func, void *buf, MPI_Count count,
                                   MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                                   MPI_Status *status, pb_comm_t *c)
{
    MPI_Request r;
    int rc = pb_eng_recv_start(buf, count, pb_mpi_datatype(datatype), pb_mpi_world_of(c, source),
                               tag, c->context, &r);

    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(comm, rc, func, "cannot start the receive");
    pb_eng_wait(r);
    pb_mpi_status_store(status, r, c);
    rc = r->status.MPI_ERROR;
    pb_eng_request_release(r);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(comm, rc, func, "the message is longer than the buffer");
    return MPI_SUCCESS;
}

#endif
