/*
 * What every source of libmpi_abi.so.1 shares.
 *
 * Each MPI function is defined once, under its profiling name PMPI_<name>,
 * and exported; MPI_<name> is a weak alias of it, so a profiling library
 * (or the program) may define MPI_<name> itself and call PMPI_<name>.
 * The library is built with hidden visibility: only the PMPI_ definitions
 * (PB_EXPORT) and the MPI_ aliases leave it.
 */
#ifndef PB_MPI_IMPL_H
#define PB_MPI_IMPL_H

#include <mpi.h>

#include "util/compiler.h"

/* Make @mpi_name (MPI_X) a weak, exported alias of @pmpi_name (PMPI_X),
 * which must be defined above in the same file.  Both names are written out
 * so that grep finds each one. */
#define PB_MPI_WEAK_ALIAS(mpi_name, pmpi_name)                                                     \
    extern __typeof__(pmpi_name) mpi_name                                                          \
        __attribute__((weak, alias(#pmpi_name), visibility("default")))

#endif
