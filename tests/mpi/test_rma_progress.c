/*
 * pbt-mpi-rma-progress: passive-target epochs complete while the target
 * computes without calling MPI.  Written to the standard API only; run by
 * CTest under `postbox run -n 2 --nodes 2` (Postbox applies remote
 * operations without the target's application thread: issue 15).  Other
 * MPI libraries over TCP do not progress such epochs, and fail.
 *
 * Rank 0 is the target: after a barrier it computes for --compute seconds
 * without any MPI call.  Every other rank, from the same barrier, runs
 * --epochs epochs of MPI_Win_lock (exclusive) / 8-byte MPI_Put /
 * MPI_Win_unlock toward it, and must finish them within --limit seconds,
 * well before the computation ends.  Then the target checks that its
 * window holds every origin's last value.  Rank 0 prints each origin's
 * time and "rma_progress: ok".
 *
 *   pbt-mpi-rma-progress [--epochs N] [--compute S] [--limit S]
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* work for @seconds without calling MPI; returns a value that depends on
 * the work, so that the compiler keeps it */
static uint64_t compute(double seconds)
{
    double end = now() + seconds;
    uint64_t x = 88172645463325252ull;

    while (now() < end)
        for (int i = 0; i < 1000; i++) { /* xorshift */
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
    return x;
}

int main(int argc, char **argv)
{
    int epochs = 1000, size;
    double seconds = 1.0, limit = 0.5;

    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--epochs") == 0 && a + 1 < argc) {
            epochs = atoi(argv[++a]);
        } else if (strcmp(argv[a], "--compute") == 0 && a + 1 < argc) {
            seconds = atof(argv[++a]);
        } else if (strcmp(argv[a], "--limit") == 0 && a + 1 < argc) {
            limit = atof(argv[++a]);
        } else {
            fprintf(stderr, "usage: pbt-mpi-rma-progress [--epochs N] [--compute S] [--limit S]\n");
            return 2;
        }
    }
    if (epochs < 1 || seconds <= 0 || limit <= 0) {
        fprintf(stderr, "rma_progress: --epochs, --compute and --limit must be positive\n");
        return 2;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        if (rank == 0)
            printf("rma_progress: needs 2 ranks or more\n");
        MPI_Finalize();
        return 1;
    }

    /* a slot of 8 bytes for each origin */
    int64_t *base = NULL;
    MPI_Win win;

    OK(MPI_Win_allocate(rank == 0 ? (MPI_Aint)size * 8 : 0, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                        &win));
    if (rank == 0) {
        OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
        memset(base, 0, (size_t)size * 8);
        OK(MPI_Win_unlock(0, win));
    }
    MPI_Barrier(MPI_COMM_WORLD);

    double elapsed = 0;

    if (rank == 0) {
        double start = now();
        uint64_t work = compute(seconds);

        elapsed = now() - start;
        printf("rma_progress: the target computed %.3f s without MPI (%llx)\n", elapsed,
               (unsigned long long)(work & 0xf));
    } else {
        double start = now();

        for (int64_t e = 1; e <= epochs; e++) {
            OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
            OK(MPI_Put(&e, 1, MPI_INT64_T, 0, rank, 1, MPI_INT64_T, win));
            OK(MPI_Win_unlock(0, win));
        }
        elapsed = now() - start;
        CHECK(elapsed < limit,
              "%d lock/put/unlock epochs toward a computing target took %.3f s (limit %.3f s, the "
              "target computes %.3f s)",
              epochs, elapsed, limit, seconds);
    }

    /* each origin's time, printed by rank 0; then the values */
    double *times = rank == 0 ? malloc((size_t)size * sizeof(double)) : NULL;

    OK(MPI_Gather(&elapsed, 1, MPI_DOUBLE, times, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD));
    if (rank == 0) {
        for (int r = 1; r < size && times != NULL; r++)
            printf("rma_progress: rank %d: %d epochs in %.3f s\n", r, epochs, times[r]);
        free(times);
        OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        for (int r = 1; r < size; r++)
            CHECK(base[r] == epochs, "origin %d's slot holds %lld, expected %d", r,
                  (long long)base[r], epochs);
        OK(MPI_Win_unlock(0, win));
    }
    OK(MPI_Win_free(&win));
    int status = check_summary("rma_progress", MPI_COMM_WORLD, 99);

    MPI_Finalize();
    return status;
}
