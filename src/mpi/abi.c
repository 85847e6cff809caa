/* The ABI chapter: which version of the standard ABI this library is, and
 * the handle conversions (MPI-5.0 section 20.3.4) of files, of which
 * Postbox has only the predefined handle (the other kinds convert in the
 * files that make them: messages in p2p.c, sessions in session.c). */
#include <stddef.h>

#include "mpi/engine/handle.h"
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

/* ---- objects Postbox does not make: only their predefined handles ------------------- */

/* The integer of a handle of a kind Postbox never creates: its ABI value
 * when it is predefined; any other value is no handle (raises
 * MPI_ERR_ARG) and gives @null's. */
static int predefined_only_toint(uintptr_t handle, uintptr_t null, const char *func)
{
    if (handle < PB_ENG_HANDLE_INT_BASE)
        return (int)handle;
    pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func,
                 "the handle (%p) is not one (Postbox makes no such objects yet)", (void *)handle);
    return (int)null;
}

/* MPI_FILE_NULL converts to its ABI value (0x118) and back; no file is
 * ever open, so any other integer gives MPI_FILE_NULL. */
PB_EXPORT int PMPI_File_toint(MPI_File file)
{
    return predefined_only_toint((uintptr_t)file, (uintptr_t)MPI_FILE_NULL, "MPI_File_toint");
}
PB_MPI_WEAK_ALIAS(MPI_File_toint, PMPI_File_toint);

PB_EXPORT MPI_File PMPI_File_fromint(int file)
{
    (void)file;
    return MPI_FILE_NULL;
}
PB_MPI_WEAK_ALIAS(MPI_File_fromint, PMPI_File_fromint);
