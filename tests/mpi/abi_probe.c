/*
 * A program of the MPI standard ABI that runs on any ABI library: built
 * once (with postbox-cc, or with another library's ABI wrapper such as
 * MPICH's mpicc_abi) and run on Postbox's libmpi_abi.so.1 or on another one
 * (LD_LIBRARY_PATH), by tests/python/test_mpi_tools.py.
 *
 * It prints what the environment queries return, which need no MPI_Init.
 * With the argument "clock" it also reads MPI_Wtime and MPI_Wtick (which
 * MPICH refuses before MPI_Init).  With "init" it initializes MPI, passes an
 * int around MPI_COMM_WORLD and finalizes, when the library it runs on has
 * MPI_Init: those functions are weak references, so the program links
 * against a library that lacks them (Postbox's, so far) and finds them at
 * run time in one that has them.
 */
#include <stdio.h>
#include <string.h>

#include <mpi.h>

#pragma weak MPI_Init
#pragma weak MPI_Finalize
#pragma weak MPI_Comm_rank
#pragma weak MPI_Comm_size
#pragma weak MPI_Sendrecv

static void exchange(int *argc, char ***argv)
{
    int rank, size, out, in = -1;
    double t0;

    MPI_Init(argc, argv);
    t0 = MPI_Wtime();
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    out = 100 + rank;
    MPI_Sendrecv(&out, 1, MPI_INT, (rank + 1) % size, 7, &in, 1, MPI_INT, (rank + size - 1) % size,
                 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("rank %d of %d received %d wtime %s\n", rank, size, in,
           MPI_Wtime() >= t0 ? "ok" : "backwards");
    MPI_Finalize();
}

int main(int argc, char **argv)
{
    char library[MPI_MAX_LIBRARY_VERSION_STRING], message[MPI_MAX_ERROR_STRING];
    int version = 0, subversion = 0, abi_major = 0, abi_minor = 0, len = 0, cls = -1;
    char *newline;

    MPI_Get_version(&version, &subversion);
    MPI_Abi_get_version(&abi_major, &abi_minor);
    MPI_Get_library_version(library, &len);
    newline = strchr(library, '\n');
    if (newline != NULL)
        *newline = '\0';
    MPI_Error_class(MPI_ERR_TRUNCATE, &cls);
    MPI_Error_string(MPI_ERR_TRUNCATE, message, &len);
    printf("version %d.%d\n", version, subversion);
    printf("abi %d.%d\n", abi_major, abi_minor);
    printf("library %s\n", library);
    printf("class %d\n", cls);
    printf("message %s\n", message);

    if (argc > 1 && strcmp(argv[1], "clock") == 0) {
        double t0 = MPI_Wtime(), t1 = MPI_Wtime();
        printf("wtime %s tick %s\n", t0 > 0.0 && t1 >= t0 ? "ok" : "bad",
               MPI_Wtick() > 0.0 ? "ok" : "bad");
    }
    if (argc > 1 && strcmp(argv[1], "init") == 0) {
        if (MPI_Init == NULL) {
            printf("no MPI_Init\n");
            return 0;
        }
        exchange(&argc, &argv);
    }
    return 0;
}
