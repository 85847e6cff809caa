/*
 * Communicator and datatype attributes (attr.c): the hooks the
 * communicator life cycle (comm.c) and the datatype constructors
 * (datatype.c) call so that user attributes follow MPI_Comm_dup,
 * MPI_Comm_free, MPI_Type_dup and MPI_Type_free as the standard says.
 */
#ifndef PB_MPI_ATTR_H
#define PB_MPI_ATTR_H

#include "mpi/comm.h"

/* Copy the attributes of @oldc to @newc (just made by MPI_Comm_dup, not
 * yet given to the program) through their keyvals' copy callbacks.
 * @return MPI_SUCCESS, or the error a callback returned (the attributes
 * copied so far are deleted again; the caller frees @newc). */
int pb_mpi_attr_copy(pb_comm_t *oldc, pb_comm_t *newc);

/* @c's context changed from @old (a nonblocking duplicate's, agreed after
 * its attributes were copied): its attributes stay its own. */
void pb_mpi_attr_context_changed(pb_comm_t *c, uint32_t old);

/* Delete every attribute of @c (NULL: nothing), last set first, through
 * the delete callbacks (MPI_Comm_free, before the communicator goes).
 * @return MPI_SUCCESS, or the first error a callback returned (the
 * attributes not deleted yet stay). */
int pb_mpi_attr_delete_all(pb_comm_t *c);

/* Copy the attributes of datatype @oldtype to @newtype (just made by
 * MPI_Type_dup, not yet given to the program) through their keyvals' copy
 * callbacks.  @return as pb_mpi_attr_copy (the caller frees @newtype). */
int pb_mpi_type_attr_copy(MPI_Datatype oldtype, MPI_Datatype newtype);

/* Delete every attribute of datatype @type, last set first, through the
 * delete callbacks (MPI_Type_free, before the handle goes).  @return as
 * pb_mpi_attr_delete_all. */
int pb_mpi_type_attr_delete_all(MPI_Datatype type);

/* At MPI_Finalize, before anything else: delete the attributes of
 * MPI_COMM_SELF, then of MPI_COMM_WORLD, through their callbacks; drop
 * every other attribute and keyval.  @return as pb_mpi_attr_delete_all. */
int pb_mpi_attr_finalize(void);

#endif
