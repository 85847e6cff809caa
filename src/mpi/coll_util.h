/*
 * What the collectives share: typed local copies and scratch buffers (the
 * blocking algorithms of coll_p2p.c, the node path of coll_node.c, the
 * schedules of sched.c), the per-rank counts and displacements of the
 * v-collectives, and the checks and error messages of the MPI calls
 * (coll.c, nbc.c, coll_neighbor.c).
 */
#ifndef PB_MPI_COLL_UTIL_H
#define PB_MPI_COLL_UTIL_H

#include <stddef.h>

#include "mpi/check.h"
#include "mpi/coll_scratch.h"
#include "mpi/mpi_impl.h"

/* Copy the @scount elements of @stype at @src into the @dcount elements of
 * @dtype at @dst, as a message between them would (either side may be
 * non-contiguous).  @return MPI_SUCCESS, or MPI_ERR_TRUNCATE (nothing
 * copied) when the data does not fit. */
int pb_coll_copy_typed(const void *src, MPI_Count scount, MPI_Datatype stype, void *dst,
                       MPI_Count dcount, MPI_Datatype dtype);

/* The bytes a buffer for @count elements of @type needs, laid out as the
 * type says (its extent between elements; each element's span covers both
 * its bounds, lb .. lb + extent, since the predefined ops store whole C
 * structs for the pair types, and its data, true lb .. true ub); in
 * *@offset_p what to add to the start of such memory to get the buffer to
 * use with @type.  Never 0. */
size_t pb_coll_scratch_span(MPI_Count count, MPI_Datatype type, MPI_Aint *offset_p);

/* Memory for @count elements of @type as pb_coll_scratch_span lays it
 * out: the buffer to use with @type, and in *@mem_p what to give back to
 * pb_coll_scratch_put.  @return NULL (and *@mem_p NULL) when out of
 * memory. */
void *pb_coll_scratch_alloc(MPI_Count count, MPI_Datatype type, void **mem_p);

/*
 * The counts and displacements of a v-collective, in elements of its
 * datatype: from the arrays of MPI_X or MPI_X_c, or, for the plain
 * collective (MPI_Gather ...), one count for every rank with rank i's
 * block at i * count.
 */
typedef struct {
    int arrays;             /* 1: the counts come from an array */
    pb_mpi_counts_t counts; /* the program's counts, or none */
    pb_mpi_displs_t displs; /* the program's (or computed) displacements, or none */
    MPI_Count block;        /* without arrays: every count, and the stride */
} pb_coll_vec_t;

/* Every rank @block elements, rank i's at i * @block. */
static inline pb_coll_vec_t pb_coll_vec_block(MPI_Count block)
{
    return (pb_coll_vec_t){0, {NULL, NULL}, {NULL, NULL}, block};
}

/* The program's arrays (@displs none where only the counts are meant:
 * Reduce_scatter's). */
static inline pb_coll_vec_t pb_coll_vec_arrays(pb_mpi_counts_t counts, pb_mpi_displs_t displs)
{
    return (pb_coll_vec_t){1, counts, displs, 0};
}

/* Rank @i's count. */
static inline MPI_Count pb_coll_vec_count(const pb_coll_vec_t *v, int i)
{
    return v->arrays ? pb_mpi_counts_at(v->counts, i) : v->block;
}

/* Rank @i's displacement, in elements (bytes for Alltoallw's). */
static inline MPI_Aint pb_coll_vec_displ(const pb_coll_vec_t *v, int i)
{
    return v->displs.i != NULL || v->displs.a != NULL ? pb_mpi_displs_at(v->displs, i)
                                                      : (MPI_Aint)i * (MPI_Aint)v->block;
}

/* Raise @rc, the error of a collective's communication itself (a
 * truncated block, no memory for a temporary buffer, a failed transfer),
 * for @func through @comm's handler.  @return MPI_SUCCESS when @rc is, or
 * what pb_mpi_raise returns. */
int pb_coll_failed(MPI_Comm comm, const char *func, int rc);

/* The checks of MPI_Reduce_scatter(_block) and their nonblocking and
 * persistent forms, which the generated bindings leave to the call: the
 * counts (@counts, rank i's block), the reduction over their sum, the
 * buffers.  @return MPI_SUCCESS, with the sum in *@total_p, or the error
 * raised for @func on @comm (MPI_ERR_COUNT, MPI_ERR_ARG, MPI_ERR_TYPE,
 * MPI_ERR_OP, MPI_ERR_BUFFER). */
int pb_coll_check_reduce_scatter(MPI_Comm comm, const char *func, const void *sendbuf,
                                 const void *recvbuf, const pb_coll_vec_t *counts,
                                 MPI_Datatype datatype, MPI_Op op, const pb_comm_t *c,
                                 MPI_Count *total_p);

#endif
