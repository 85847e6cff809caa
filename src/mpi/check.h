/*
 * The argument checks of the generated bindings (src/mpi/bindings.c, from
 * src/mpi/api/functions.txt): each checks one argument or group of
 * arguments of MPI function @func and raises what is wrong through
 * pb_mpi_raise on @comm (MPI_COMM_NULL: a call on no communicator), whose
 * return value it returns; MPI_SUCCESS when all is well.  @what names the
 * buffer in the message ("send", "receive", "" for the only one).
 */
#ifndef PB_MPI_CHECK_H
#define PB_MPI_CHECK_H

#include <limits.h>
#include <stddef.h>

#include "mpi/comm.h"
#include "mpi/datatype.h"

/* An array argument of MPI_X (int) or of MPI_X_c (MPI_Count or MPI_Aint),
 * as a binding passes it on: one pointer set, or neither (a NULL array). */
typedef struct {
    const int *i;
    const MPI_Count *c;
} pb_mpi_counts_t;

typedef struct {
    const int *i;
    const MPI_Aint *a;
} pb_mpi_displs_t;

static inline MPI_Count pb_mpi_counts_at(pb_mpi_counts_t v, int index)
{
    return v.i != NULL ? v.i[index] : v.c[index];
}

static inline MPI_Aint pb_mpi_displs_at(pb_mpi_displs_t v, int index)
{
    return v.i != NULL ? v.i[index] : v.a[index];
}

/* @root is a rank of @c (an intercommunicator: MPI_ROOT, MPI_PROC_NULL or
 * a rank of the remote group): MPI_ERR_ROOT. */
int pb_mpi_check_root(MPI_Comm comm, const char *func, int root, const pb_comm_t *c);

/* Whether this process is the root @root of a rooted collective on @c
 * (an intercommunicator's root passes MPI_ROOT): its receive buffer (send
 * buffer of a scatter) is significant. */
static inline int pb_mpi_is_root(const pb_comm_t *c, int root)
{
    return pb_mpi_comm_is_inter(c) ? root == MPI_ROOT : c->rank == root;
}

/* Whether the send buffer @buf of a gather or reduction (receive buffer of
 * a scatter) of a process of @c must be checked: on an intracommunicator
 * unless it is the root's MPI_IN_PLACE; on an intercommunicator in the
 * group that sends to the root only (neither MPI_ROOT nor MPI_PROC_NULL). */
static inline int pb_mpi_leaf_buffer_used(const pb_comm_t *c, int root, const void *buf)
{
    if (pb_mpi_comm_is_inter(c))
        return root != MPI_ROOT && root != MPI_PROC_NULL;
    return c->rank != root || buf != MPI_IN_PLACE;
}

/* @count elements of @type at @buf, where MPI_IN_PLACE is not allowed:
 * MPI_ERR_COUNT, MPI_ERR_TYPE, MPI_ERR_BUFFER (NULL with data, or
 * MPI_IN_PLACE). */
int pb_mpi_check_buf(MPI_Comm comm, const char *func, const char *what, const void *buf,
                     MPI_Count count, MPI_Datatype type);

/* A buffer of @count elements of @type for every rank (Gather's receive
 * buffer ...): errors as pb_mpi_check_buf. */
int pb_mpi_check_block(MPI_Comm comm, const char *func, const char *what, const void *buf,
                       MPI_Count count, MPI_Datatype type);

/* A buffer of @counts[i] elements of @type at @displs[i] for each rank i
 * of @c: MPI_ERR_ARG (a NULL array), then as pb_mpi_check_buf. */
int pb_mpi_check_vec(MPI_Comm comm, const char *func, const char *what, const void *buf,
                     pb_mpi_counts_t counts, pb_mpi_displs_t displs, MPI_Datatype type,
                     const pb_comm_t *c);

/* The arguments every reduction shares: @count, @type and @op (MPI_ERR_COUNT,
 * MPI_ERR_TYPE, MPI_ERR_OP). */
int pb_mpi_check_reduction(MPI_Comm comm, const char *func, MPI_Count count, MPI_Datatype type,
                           MPI_Op op);

/* The send and receive buffers of a reduction are not the same memory
 * (MPI_ERR_BUFFER: that is what MPI_IN_PLACE is for). */
int pb_mpi_check_aliased(MPI_Comm comm, const char *func, const void *sendbuf, const void *recvbuf,
                         MPI_Count count);

/*
 * The checks of point-to-point, inline: the bindings of MPI_Send and
 * MPI_Recv run them on every call, and only what is wrong goes out of line.
 */

/* The failure of pb_mpi_check_data: MPI_ERR_COUNT (negative, or more
 * bytes than a process can address), MPI_ERR_TYPE, MPI_ERR_BUFFER (NULL
 * with data); MPI_SUCCESS when the buffer is fine after all (a NULL one
 * whose datatype's data lies at absolute addresses; no data of
 * MPI_DATATYPE_NULL toward @peer MPI_PROC_NULL). */
int pb_mpi_check_data_fail(MPI_Comm comm, const char *func, const void *buf, MPI_Count count,
                           MPI_Datatype type, int peer);

/* The failure of pb_mpi_check_rank and _source: MPI_ERR_RANK. */
int pb_mpi_check_rank_fail(MPI_Comm comm, const char *func, int rank, const pb_comm_t *c);

/* The failure of pb_mpi_check_tag and _anytag: MPI_ERR_TAG. */
int pb_mpi_check_tag_fail(MPI_Comm comm, const char *func, int tag);

/* @count elements of @type at @buf, the buffer of a send to or receive
 * from @peer (MPI_UNDEFINED: none named): errors as
 * pb_mpi_check_data_fail.  A count above INT_MAX (an _c form) is checked
 * out of line, and so is MPI_DATATYPE_NULL, which a call with no data
 * toward MPI_PROC_NULL may pass (MPI-5.0 3.11: nothing is sent or
 * received). */
static inline int pb_mpi_check_data(MPI_Comm comm, const char *func, const void *buf,
                                    MPI_Count count, MPI_Datatype type, int peer)
{
    if (PB_UNLIKELY((unsigned long long)count > INT_MAX ||
                    pb_mpi_datatype_check(type) != MPI_SUCCESS || (buf == NULL && count > 0)))
        return pb_mpi_check_data_fail(comm, func, buf, count, type, peer);
    return MPI_SUCCESS;
}

/* @rank is a rank of @c or MPI_PROC_NULL (a destination): MPI_ERR_RANK. */
static inline int pb_mpi_check_rank(MPI_Comm comm, const char *func, int rank, const pb_comm_t *c)
{
    if (PB_UNLIKELY(rank != MPI_PROC_NULL && (rank < 0 || rank >= c->size)))
        return pb_mpi_check_rank_fail(comm, func, rank, c);
    return MPI_SUCCESS;
}

/* @rank is a rank of @c, MPI_PROC_NULL or MPI_ANY_SOURCE (a source):
 * MPI_ERR_RANK. */
static inline int pb_mpi_check_source(MPI_Comm comm, const char *func, int rank, const pb_comm_t *c)
{
    if (PB_UNLIKELY(rank != MPI_PROC_NULL && rank != MPI_ANY_SOURCE &&
                    (rank < 0 || rank >= c->size)))
        return pb_mpi_check_rank_fail(comm, func, rank, c);
    return MPI_SUCCESS;
}

/* @tag is a tag a message can carry (not negative): MPI_ERR_TAG. */
static inline int pb_mpi_check_tag(MPI_Comm comm, const char *func, int tag)
{
    if (PB_UNLIKELY(tag < 0))
        return pb_mpi_check_tag_fail(comm, func, tag);
    return MPI_SUCCESS;
}

/* @tag is a tag or MPI_ANY_TAG (a receive's): MPI_ERR_TAG. */
static inline int pb_mpi_check_anytag(MPI_Comm comm, const char *func, int tag)
{
    if (PB_UNLIKELY(tag < 0 && tag != MPI_ANY_TAG))
        return pb_mpi_check_tag_fail(comm, func, tag);
    return MPI_SUCCESS;
}

/* The output argument @ptr, named @name, is not NULL: MPI_ERR_ARG. */
static inline int pb_mpi_check_ptr(MPI_Comm comm, const char *func, const void *ptr,
                                   const char *name)
{
    if (PB_UNLIKELY(ptr == NULL))
        return pb_mpi_raise(comm, MPI_ERR_ARG, func, "%s is NULL", name);
    return MPI_SUCCESS;
}

#endif
