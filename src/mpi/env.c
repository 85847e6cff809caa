/*
 * Environment queries that need no running MPI: the version of the
 * standard and of the library, and the clock.  All of them may be called
 * before MPI_Init and after MPI_Finalize.
 */
#include <stdio.h>
#include <time.h>

#include "mpi/mpi_impl.h"
#include "postbox/build.h"

/* Store the version of the MPI standard this library follows (MPI_VERSION,
 * MPI_SUBVERSION: 5.0) in @version and @subversion.
 * @return MPI_SUCCESS, or MPI_ERR_ARG when a pointer is NULL. */
PB_EXPORT int PMPI_Get_version(int *version, int *subversion)
{
    if (version == NULL || subversion == NULL)
        return MPI_ERR_ARG;
    *version = MPI_VERSION;
    *subversion = MPI_SUBVERSION;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Get_version, PMPI_Get_version);

/* Write "Postbox <version> (MPI 5.0, standard ABI 1.0)", NUL-terminated,
 * into @version (which holds MPI_MAX_LIBRARY_VERSION_STRING chars) and its
 * length without the NUL into @resultlen.
 * @return MPI_SUCCESS, or MPI_ERR_ARG when a pointer is NULL. */
PB_EXPORT int PMPI_Get_library_version(char *version, int *resultlen)
{
    int len;

    if (version == NULL || resultlen == NULL)
        return MPI_ERR_ARG;
    len = snprintf(version, MPI_MAX_LIBRARY_VERSION_STRING,
                   "Postbox %s (MPI %d.%d, standard ABI %d.%d)", PB_VERSION, MPI_VERSION,
                   MPI_SUBVERSION, MPI_ABI_VERSION, MPI_ABI_SUBVERSION);
    if (len < 0)
        return MPI_ERR_INTERN;
    *resultlen = len;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Get_library_version, PMPI_Get_library_version);

/* Seconds since an arbitrary moment in the past that does not change while
 * the process runs: CLOCK_MONOTONIC, so it never jumps with the wall clock.
 * Not synchronized between processes (MPI_WTIME_IS_GLOBAL is false).
 * Returns 0.0 if the clock cannot be read, which Linux never refuses. */
PB_EXPORT double PMPI_Wtime(void)
{
    struct timespec now;

    if (clock_gettime(CLOCK_MONOTONIC, &now) != 0)
        return 0.0;
    return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}
PB_MPI_WEAK_ALIAS(MPI_Wtime, PMPI_Wtime);

/* The resolution of MPI_Wtime in seconds: the resolution the kernel reports
 * for CLOCK_MONOTONIC (1e-9 on Linux with high-resolution timers), or one
 * microsecond if it cannot be read. */
PB_EXPORT double PMPI_Wtick(void)
{
    struct timespec res;

    if (clock_getres(CLOCK_MONOTONIC, &res) != 0 || (res.tv_sec == 0 && res.tv_nsec == 0))
        return 1e-6;
    return (double)res.tv_sec + (double)res.tv_nsec * 1e-9;
}
PB_MPI_WEAK_ALIAS(MPI_Wtick, PMPI_Wtick);
