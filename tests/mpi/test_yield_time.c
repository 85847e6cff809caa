/*
 * How long a waiting rank yields before it sleeps (POSTBOX_YIELD_US,
 * src/mpi/engine/progress.c): rank 1 sends to rank 0 after WAIT_MS of
 * sleep, and rank 0 counts the processor time its MPI_Recv took.
 *
 *   pbt-mpi-yield-time sleeps   (POSTBOX_YIELD_US unset) rank 0 sleeps on
 *                               its doorbell after its few yields: almost
 *                               no processor time
 *   pbt-mpi-yield-time yields   (POSTBOX_YIELD_US=YIELD_US) rank 0 yields
 *                               for YIELD_US first (processor time, most of
 *                               it when the machine is idle, some of it
 *                               when busy), then sleeps: well under WAIT_MS
 */
#include <string.h>
#include <time.h>

#include "check.h"

#define WAIT_MS 600
#define YIELD_US 300000
/* below this, rank 0 slept; at least this, it kept yielding */
#define BUSY_MS 30

static double cpu_ms(void)
{
    struct timespec t;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

int main(int argc, char **argv)
{
    int yields = argc > 1 && strcmp(argv[1], "yields") == 0, size = 0, word = 1, status;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(argc > 1 && (yields || strcmp(argv[1], "sleeps") == 0),
          "usage: pbt-mpi-yield-time sleeps|yields");
    CHECK(size == 2, "run with 2 ranks, not %d", size);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (size == 2 && rank == 1) {
        struct timespec pause = {0, WAIT_MS * 1000L * 1000L};

        nanosleep(&pause, NULL);
        OK(MPI_Send(&word, 1, MPI_INT, 0, 7, MPI_COMM_WORLD));
    } else if (size == 2) {
        double before = cpu_ms(), used;

        OK(MPI_Recv(&word, 1, MPI_INT, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        used = cpu_ms() - before;
        printf("rank 0 waited %d ms in MPI_Recv with %.1f ms of processor time\n", WAIT_MS, used);
        if (yields) {
            CHECK(used >= BUSY_MS, "%.1f ms of processor time: it slept before %d us", used,
                  YIELD_US);
            CHECK(used < 0.5 * YIELD_US / 1e3 + 0.5 * WAIT_MS,
                  "%.1f ms of processor time: it did not sleep after %d us", used, YIELD_US);
        } else {
            CHECK(used < BUSY_MS, "%.1f ms of processor time: it did not sleep", used);
        }
    }
    status = check_summary("yield_time", MPI_COMM_WORLD, 99);
    MPI_Finalize();
    return status;
}
