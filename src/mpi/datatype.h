/*
 * Datatype handles: the datatype a handle stands for, checked at the API
 * edge; the layout it gives is the datatype engine's
 * (src/mpi/engine/typerep.h), read by the send path without a look-up.
 *
 * A predefined handle is one of the ABI's constants below 0x400
 * (MPI_INT = 0x209), mapped to the engine's static layout.  A created
 * handle is an object of the handle registry (handle.h).
 */
#ifndef PB_MPI_DATATYPE_H
#define PB_MPI_DATATYPE_H

#include <stdint.h>

#include "mpi/engine/handle.h"
#include "mpi/engine/typerep.h"
#include "mpi/mpi_impl.h"

/* The datatype of the created handle @handle (pb_mpi_datatype's slow path):
 * NULL when it is no live datatype.  No lock. */
pb_datatype_t *pb_mpi_datatype_created(MPI_Datatype handle);

/* The datatype @handle stands for, or NULL when @handle is no datatype
 * (MPI_DATATYPE_NULL, a freed or made-up handle, a predefined value the
 * library does not support, such as the Fortran types).  No lock; a
 * predefined handle costs one table read. */
static inline pb_datatype_t *pb_mpi_datatype(MPI_Datatype handle)
{
    if ((uintptr_t)handle < PB_ENG_HANDLE_INT_BASE)
        return pb_eng_type_predefined((uintptr_t)handle);
    return pb_mpi_datatype_created(handle);
}

/* Check @handle for use in communication: MPI_SUCCESS, MPI_ERR_TYPE when
 * it is no datatype or (for a created one) not committed. */
int pb_mpi_datatype_check(MPI_Datatype handle);

/* A copy of @type for the library's own use (a nonblocking collective's
 * schedule), in *@held, that the program's MPI_Type_free of @type does not
 * end: MPI_Type_dup without the attributes (no callback of the program
 * runs, now or at its PMPI_Type_free).  @return MPI_SUCCESS, or the error
 * raised (MPI_ERR_TYPE, MPI_ERR_NO_MEM). */
int pb_mpi_type_hold(MPI_Datatype type, MPI_Datatype *held);

#endif
