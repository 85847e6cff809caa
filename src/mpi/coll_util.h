/*
 * Typed local copies and scratch buffers that the collectives share: the
 * blocking algorithms (coll_p2p.c), the node path (coll_node.c) and the
 * schedules of the nonblocking and persistent collectives (sched.c).
 */
#ifndef PB_MPI_COLL_UTIL_H
#define PB_MPI_COLL_UTIL_H

#include <stddef.h>

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
 * out: the buffer to use with @type, and in *@mem_p what to free.
 * @return NULL (and *@mem_p NULL) when out of memory. */
void *pb_coll_scratch_alloc(MPI_Count count, MPI_Datatype type, void **mem_p);

#endif
