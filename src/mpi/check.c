/*
 * The argument checks of the generated bindings (check.h), with the
 * messages the collectives and point-to-point have always given.
 */
#include "mpi/check.h"

#include <stdint.h>

#include "mpi/datatype.h"
#include "mpi/op.h"

int pb_mpi_check_root(MPI_Comm comm, const char *func, int root, const pb_comm_t *c)
{
    if (pb_mpi_comm_is_inter(c)) {
        if (root != MPI_ROOT && root != MPI_PROC_NULL && (root < 0 || root >= c->size))
            return pb_mpi_raise(comm, MPI_ERR_ROOT, func,
                                "root %d is not MPI_ROOT, MPI_PROC_NULL or in 0..%d of the "
                                "remote group",
                                root, c->size - 1);
        return MPI_SUCCESS;
    }
    if (root < 0 || root >= c->size)
        return pb_mpi_raise(comm, MPI_ERR_ROOT, func, "root %d is not in 0..%d", root, c->size - 1);
    return MPI_SUCCESS;
}

static int check_type(MPI_Comm comm, const char *func, const char *what, MPI_Datatype type)
{
    int rc = pb_mpi_datatype_check(type);

    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(comm, rc, func, "the %s datatype is not a committed datatype", what);
    return MPI_SUCCESS;
}

/* A NULL buffer holding data is an error unless the datatype's data lies
 * at absolute addresses (MPI_BOTTOM with a true lower bound), the same for every call. */
static int buffer_missing(const void *buf, MPI_Count count, MPI_Datatype type)
{
    const pb_datatype_t *t = pb_mpi_datatype(type);

    return buf == NULL && count > 0 && pb_eng_type_size(t) > 0 && pb_eng_type_true_lb(t) == 0;
}

/* The checks of a buffer between its counts and NULL: @type, and
 * MPI_IN_PLACE, which the caller allows where it is allowed. */
static int check_type_in_place(MPI_Comm comm, const char *func, const char *what, const void *buf,
                               MPI_Datatype type)
{
    int rc = check_type(comm, func, what, type);

    if (rc != MPI_SUCCESS)
        return rc;
    if (buf == MPI_IN_PLACE)
        return pb_mpi_raise(comm, MPI_ERR_BUFFER, func,
                            "MPI_IN_PLACE is not allowed as the %s buffer here", what);
    return MPI_SUCCESS;
}

/* A NULL buffer of a collective whose blocks hold data if @any. */
static int check_null(MPI_Comm comm, const char *func, const char *what, const void *buf, int any,
                      MPI_Datatype type)
{
    if (buffer_missing(buf, any, type))
        return pb_mpi_raise(comm, MPI_ERR_BUFFER, func, "the %s buffer is NULL", what);
    return MPI_SUCCESS;
}

int pb_mpi_check_buf(MPI_Comm comm, const char *func, const char *what, const void *buf,
                     MPI_Count count, MPI_Datatype type)
{
    int rc;

    if (count < 0)
        return pb_mpi_raise(comm, MPI_ERR_COUNT, func, "the %s count %lld is negative", what,
                            (long long)count);
    rc = check_type_in_place(comm, func, what, buf, type);
    if (rc != MPI_SUCCESS)
        return rc;
    if (buffer_missing(buf, count, type))
        return pb_mpi_raise(comm, MPI_ERR_BUFFER, func, "the %s buffer is NULL with count %lld",
                            what, (long long)count);
    return MPI_SUCCESS;
}

int pb_mpi_check_block(MPI_Comm comm, const char *func, const char *what, const void *buf,
                       MPI_Count count, MPI_Datatype type)
{
    int rc;

    if (count < 0)
        return pb_mpi_raise(comm, MPI_ERR_COUNT, func, "the %s count %lld is negative", what,
                            (long long)count);
    rc = check_type_in_place(comm, func, what, buf, type);
    return rc != MPI_SUCCESS ? rc : check_null(comm, func, what, buf, count > 0, type);
}

int pb_mpi_check_vec(MPI_Comm comm, const char *func, const char *what, const void *buf,
                     pb_mpi_counts_t counts, pb_mpi_displs_t displs, MPI_Datatype type,
                     const pb_comm_t *c)
{
    int rc, any = 0;

    if (counts.i == NULL && counts.c == NULL)
        return pb_mpi_raise(comm, MPI_ERR_ARG, func, "the %s counts are NULL", what);
    if (displs.i == NULL && displs.a == NULL)
        return pb_mpi_raise(comm, MPI_ERR_ARG, func, "the %s displacements are NULL", what);
    for (int i = 0; i < c->size; i++) {
        MPI_Count n = pb_mpi_counts_at(counts, i);

        if (n < 0)
            return pb_mpi_raise(comm, MPI_ERR_COUNT, func,
                                "the %s count of rank %d, %lld, is negative", what, i,
                                (long long)n);
        any |= n > 0;
    }
    rc = check_type_in_place(comm, func, what, buf, type);
    return rc != MPI_SUCCESS ? rc : check_null(comm, func, what, buf, any, type);
}

int pb_mpi_check_reduction(MPI_Comm comm, const char *func, MPI_Count count, MPI_Datatype type,
                           MPI_Op op)
{
    int rc;

    if (count < 0)
        return pb_mpi_raise(comm, MPI_ERR_COUNT, func, "count %lld is negative", (long long)count);
    rc = check_type(comm, func, "", type);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = pb_mpi_op_check(op, type);
    if (rc == MPI_ERR_TYPE)
        return pb_mpi_raise(comm, rc, func, "the datatype is not one the op reduces");
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(comm, rc, func,
                            "the op is no operation, or not one defined on the datatype");
    return MPI_SUCCESS;
}

int pb_mpi_check_aliased(MPI_Comm comm, const char *func, const void *sendbuf, const void *recvbuf,
                         MPI_Count count)
{
    if (count > 0 && sendbuf != NULL && sendbuf == recvbuf)
        return pb_mpi_raise(comm, MPI_ERR_BUFFER, func,
                            "the send and receive buffers are the same (use MPI_IN_PLACE)");
    return MPI_SUCCESS;
}

int pb_mpi_check_data_fail(MPI_Comm comm, const char *func, const void *buf, MPI_Count count,
                           MPI_Datatype type, int peer)
{
    int rc;
    MPI_Count bytes;

    if (peer == MPI_PROC_NULL && count == 0 && type == MPI_DATATYPE_NULL)
        return MPI_SUCCESS;
    if (count < 0)
        return pb_mpi_raise(comm, MPI_ERR_COUNT, func, "count %lld is negative", (long long)count);
    rc = pb_mpi_datatype_check(type);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(comm, rc, func, "the datatype is not a committed datatype");
    if (__builtin_mul_overflow(count, (MPI_Count)pb_eng_type_size(pb_mpi_datatype(type)), &bytes) ||
        bytes > PTRDIFF_MAX)
        return pb_mpi_raise(comm, MPI_ERR_COUNT, func,
                            "count %lld of the datatype is more bytes than a process can address",
                            (long long)count);
    if (buffer_missing(buf, count, type))
        return pb_mpi_raise(comm, MPI_ERR_BUFFER, func, "buf is NULL with count %lld",
                            (long long)count);
    return MPI_SUCCESS;
}

int pb_mpi_check_rank_fail(MPI_Comm comm, const char *func, int rank, const pb_comm_t *c)
{
    return pb_mpi_raise(comm, MPI_ERR_RANK, func, "rank %d is not in 0..%d", rank, c->size - 1);
}

int pb_mpi_check_tag_fail(MPI_Comm comm, const char *func, int tag)
{
    return pb_mpi_raise(comm, MPI_ERR_TAG, func, "tag %d is negative", tag);
}
