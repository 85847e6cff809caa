/*
 * A library that grants at most MPI_THREAD_FUNNELED, for the test of
 * mpi_p2p --thread-level when the library grants less than was asked
 * (bench_mpi_p2p_thread_level_not_granted): linked into the program, this
 * MPI_Init_thread takes the place of the library's and asks the library
 * itself (PMPI_Init_thread) for FUNNELED at most, so that MPI_Query_thread
 * answers FUNNELED as a library with no more thread support would.
 */
#include <mpi.h>

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    return PMPI_Init_thread(
        argc, argv, required < MPI_THREAD_FUNNELED ? required : MPI_THREAD_FUNNELED, provided);
}
