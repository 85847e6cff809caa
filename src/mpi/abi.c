/* The ABI chapter: which version of the standard ABI this library is. */
#include <stddef.h>

#include "mpi/mpi_impl.h"

/* Store the ABI version this library implements (MPI_ABI_VERSION,
 * MPI_ABI_SUBVERSION: 1.0) in @abi_major and @abi_minor.  Callable before
 * MPI_Init and after MPI_Finalize.
 * @return MPI_SUCCESS, or MPI_ERR_ARG when a pointer is NULL. */
PB_EXPORT int PMPI_Abi_get_version(int *abi_major, int *abi_minor)
{
    if (abi_major == NULL || abi_minor == NULL)
        return MPI_ERR_ARG;
    *abi_major = MPI_ABI_VERSION;
    *abi_minor = MPI_ABI_SUBVERSION;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Abi_get_version, PMPI_Abi_get_version);
