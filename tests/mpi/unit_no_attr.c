/* The attribute hooks datatype.c calls (src/mpi/attr.h), for the unit
 * tests that compile datatype.c without attr.c (which needs the whole
 * library): no datatype of these programs has attributes.  The datatype
 * attributes are tested through the library (test_datatype_more.c). */
#include <mpi.h>

#include "mpi/attr.h"

int pb_mpi_type_attr_copy(MPI_Datatype oldtype, MPI_Datatype newtype)
{
    (void)oldtype;
    (void)newtype;
    return MPI_SUCCESS;
}

int pb_mpi_type_attr_delete_all(MPI_Datatype type)
{
    (void)type;
    return MPI_SUCCESS;
}
