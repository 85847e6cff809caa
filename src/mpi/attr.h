/*
 * Communicator attributes (attr.c): the hooks the communicator life cycle
 * (comm.c) calls so that user attributes follow MPI_Comm_dup and
 * MPI_Comm_free as the standard says.
 */
#ifndef PB_MPI_ATTR_H
#define PB_MPI_ATTR_H

#include "mpi/comm.h"

/* Copy the attributes of @oldc to @newc (just made by MPI_Comm_dup, not
 * yet given to the program) through their keyvals' copy callbacks.
 * @return MPI_SUCCESS, or the error a callback returned (the attributes
 * copied so far are deleted again; the caller frees @newc). */
int pb_mpi_attr_copy(pb_comm_t *oldc, pb_comm_t *newc);

/* Delete every attribute of @c, last set first, through the delete
 * callbacks (MPI_Comm_free, before the communicator goes).
 * @return MPI_SUCCESS, or the first error a callback returned (the
 * attributes not deleted yet stay). */
int pb_mpi_attr_delete_all(pb_comm_t *c);

/* At MPI_Finalize, before anything else: delete the attributes of
 * MPI_COMM_SELF, then of MPI_COMM_WORLD, through their callbacks; drop
 * every other attribute and keyval.  @return as pb_mpi_attr_delete_all. */
int pb_mpi_attr_finalize(void);

#endif
