/*
 * The checks of the MPI test programs (tests/mpi/test_*.c run under
 * `postbox run`), written to the standard API only.
 *
 * A program sets `rank` after MPI_Init and checks with CHECK and OK; a
 * failed check prints one line and counts, and the program goes on, so
 * that one run reports every failure.  At the end check_summary() sums
 * every rank's failures at rank 0, which prints "NAME: ok" or
 * "NAME: N failures"; the program returns what it returns, so the
 * launcher's exit status says whether any rank failed.
 *
 * Include it in one source file of a program: it defines the two
 * counters.
 */
#ifndef PBT_CHECK_H
#define PBT_CHECK_H

#include <mpi.h>
#include <stdatomic.h>
#include <stdio.h>

static int rank;             /* this process's rank in MPI_COMM_WORLD (the program sets it) */
static _Atomic int failures; /* checks this rank failed (threads may check at once) */

/* @cond must hold; else print "FAIL rank R: function:line: " and the
 * printf-style message, and count the failure */
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            printf("FAIL rank %d: %s:%d: ", rank, __func__, __LINE__);                             \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
            fflush(stdout);                                                                        \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* the MPI call @call must return MPI_SUCCESS */
#define OK(call)                                                                                   \
    do {                                                                                           \
        int check_rc_ = (call);                                                                    \
        CHECK(check_rc_ == MPI_SUCCESS, "%s returned %d", #call, check_rc_);                       \
    } while (0)

/* Every rank's failures of @comm summed at its rank 0 by point-to-point
 * messages with @tag (no collective: a program may test the collectives),
 * which prints "@name: ok" or "@name: N failures".  Returns the exit
 * status for main: 1 if this rank (at rank 0: any rank) failed. */
static inline int check_summary(const char *name, MPI_Comm comm, int tag)
{
    int me = 0, size = 1, total = failures;

    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    if (me == 0) {
        for (int r = 1; r < size; r++) {
            int theirs = 0;

            MPI_Recv(&theirs, 1, MPI_INT, r, tag, comm, MPI_STATUS_IGNORE);
            total += theirs;
        }
        if (total == 0)
            printf("%s: ok\n", name);
        else
            printf("%s: %d failures\n", name, total);
        fflush(stdout);
    } else {
        MPI_Send(&total, 1, MPI_INT, 0, tag, comm);
    }
    return total != 0;
}

#endif
