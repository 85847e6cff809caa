/* Whether a rank has libfabric in it after MPI_Init and a message to
 * every other rank (src/rsm/ofi/lib.c loads it only for the ofi
 * controller), and that no handler of its providers' libraries catches a
 * fatal or stopping signal.
 *   pbt-mpi-libfabric-loaded absent    (POSTBOX_TRANSPORT=tcp, or one node)
 *   pbt-mpi-libfabric-loaded present   (POSTBOX_TRANSPORT=ofi, several nodes) */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

/* whether a file whose name contains @part is mapped in this process */
static int mapped(const char *part)
{
    FILE *maps = fopen("/proc/self/maps", "re");
    char line[1024];
    int found = 0;

    if (maps == NULL)
        return -1;
    while (!found && fgets(line, sizeof(line), maps) != NULL)
        found = strstr(line, part) != NULL;
    fclose(maps);
    return found;
}

/* a handler of a fatal or stopping signal that lives in libinfinipath or
 * libpsm: fail for each */
static void check_no_provider_handler(void)
{
    static const int sigs[] = {SIGSEGV, SIGBUS,  SIGILL, SIGFPE, SIGABRT,
                               SIGINT,  SIGTERM, SIGHUP, SIGQUIT};

    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
        struct sigaction current;
        Dl_info where;
        void *handler;

        if (sigaction(sigs[i], NULL, &current) != 0)
            continue;
        handler = (current.sa_flags & SA_SIGINFO) ? (void *)current.sa_sigaction
                                                  : (void *)current.sa_handler;
        if (handler == (void *)SIG_DFL || handler == (void *)SIG_IGN ||
            dladdr(handler, &where) == 0 || where.dli_fname == NULL)
            continue;
        CHECK(strstr(where.dli_fname, "libinfinipath") == NULL &&
                  strstr(where.dli_fname, "libpsm") == NULL,
              "signal %d is caught by a handler in %s", sigs[i], where.dli_fname);
    }
}

int main(int argc, char **argv)
{
    int size, want_present, token = 0, status;

    if (argc != 2 || (strcmp(argv[1], "absent") != 0 && strcmp(argv[1], "present") != 0)) {
        fprintf(stderr, "usage: %s absent|present\n", argv[0]);
        return 2;
    }
    want_present = strcmp(argv[1], "present") == 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* a message around the ring: every rank's path to its neighbours is up */
    if (size > 1) {
        int next = (rank + 1) % size, prev = (rank + size - 1) % size;

        OK(MPI_Sendrecv_replace(&token, 1, MPI_INT, next, 1, prev, 1, MPI_COMM_WORLD,
                                MPI_STATUS_IGNORE));
    }
    CHECK(mapped("/libfabric.so") == want_present, "libfabric is %s, expected %s",
          mapped("/libfabric.so") ? "loaded" : "not loaded", argv[1]);
    if (!want_present)
        CHECK(mapped("libinfinipath") == 0 && mapped("libpsm") == 0 && mapped("libibverbs") == 0,
              "a provider's library is loaded without libfabric");
    check_no_provider_handler();
    status = check_summary("libfabric_loaded", MPI_COMM_WORLD, 99);
    MPI_Finalize();
    return status;
}
