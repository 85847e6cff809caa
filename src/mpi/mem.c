/*
 * MPI_Alloc_mem and MPI_Free_mem: plain process memory (every path of the
 * engine copies through its own shared buffers, so no registration is
 * needed).  Blocks of 64 KiB and more start on a page, smaller ones on a
 * cache line.
 */
#include <stdlib.h>
#include <unistd.h>

#include "mpi/info.h"
#include "util/compiler.h"

/* blocks this large or larger are page aligned */
#define PB_ALLOC_PAGE_THRESHOLD (64 * 1024)

/* Allocate @size bytes and store their address in *(void **)@baseptr.
 * @info may be MPI_INFO_NULL; no key is read.
 * @return MPI_SUCCESS; MPI_ERR_ARG (negative size, NULL baseptr);
 *         MPI_ERR_INFO (not an info); MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr)
{
    PB_MPI_THREAD_GUARD;
    size_t align = PB_CACHE_LINE;
    void *p = NULL;
    int rc = pb_mpi_info_check(MPI_COMM_NULL, info, 1, "MPI_Alloc_mem");

    if (rc != MPI_SUCCESS)
        return rc;
    if (size < 0 || baseptr == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Alloc_mem",
                            size < 0 ? "size %ld is negative" : "baseptr is NULL", (long)size);
    if (size >= PB_ALLOC_PAGE_THRESHOLD) {
        long page = sysconf(_SC_PAGESIZE);

        align = page > 0 ? (size_t)page : 4096;
    }
    if (posix_memalign(&p, align, size > 0 ? (size_t)size : 1) != 0)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_NO_MEM, "MPI_Alloc_mem",
                            "cannot allocate %ld bytes", (long)size);
    *(void **)baseptr = p;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Alloc_mem, PMPI_Alloc_mem);

/* Free memory @base from MPI_Alloc_mem (NULL: nothing).
 * @return MPI_SUCCESS (another pointer is erroneous and not detected). */
PB_EXPORT int PMPI_Free_mem(void *base)
{
    PB_MPI_THREAD_GUARD;

    free(base);
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Free_mem, PMPI_Free_mem);
