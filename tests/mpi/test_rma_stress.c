/*
 * pbt-mpi-rma-stress: concurrent one-sided operations on the same memory,
 * run by CTest under `postbox run -n N [--nodes K]` (any N >= 1).  Written
 * to the standard API only.  Rank 0 prints "rma_stress: ok" at the end.
 *
 *   pbt-mpi-rma-stress [--iterations N] [--cpus N] [case ...]   (default: every case)
 *
 * accumulate  every rank adds into the same locations of the last rank's
 *             window, under lock_all and under shared locks: MPI_Accumulate
 *             (SUM) of a vector, and MPI_Fetch_and_op (SUM of 1) on one
 *             counter.  The sums are checked exactly; the values the
 *             fetch-and-adds returned, gathered from every rank, must be
 *             0 .. total-1 each exactly once (the atomicity of MPI-5.0
 *             12.7.1), and each rank's in increasing order (the default
 *             accumulate_ordering orders one origin's operations on a
 *             location).
 * mixed       fetch-and-adds of one element and accumulates of a vector
 *             over the same element, concurrently from every rank, with
 *             no-op reads of it between, and compare-and-swap increments of
 *             another location: on the default window (accumulate_ops
 *             same_op_no_op, where on-node origins use hardware atomics
 *             without the lock) and on one with accumulate_ops=none (the
 *             lock for all).  Sums checked exactly; each origin's reads of
 *             the growing element never decrease.
 * lock        every rank takes an exclusive lock on rank 0, reads a counter
 *             held twice, checks both copies agree, and writes each back
 *             plus one by a put of its own: a read-modify-write correct only
 *             under mutual exclusion.  Between, ranks read both copies under
 *             a shared lock and check they agree (no shared lock overlaps an
 *             exclusive one).  The final counter is checked exactly.
 *
 *   --iterations N   operations of each rank in each phase (default 300)
 *   --cpus N         run on the first N processors (before MPI_Init)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_setaffinity */
#endif
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"

static int size;
static int iterations = 300;

enum {
    LANES = 4
}; /* the accumulated vector */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return (x > y) - (x < y);
}

/* The fetched values of every rank (@mine[@n]) are @base .. @base + size *
 * n - 1, each once; @mine itself increases.  Collective. */
static void check_fetched(const int64_t *mine, int n, int64_t base, const char *what)
{
    for (int i = 1; i < n; i++)
        if (mine[i] <= mine[i - 1]) {
            CHECK(0, "%s: fetched %lld after %lld (one origin's operations out of order)", what,
                  (long long)mine[i], (long long)mine[i - 1]);
            break;
        }
    int64_t *all = rank == 0 ? malloc((size_t)size * (size_t)n * sizeof(int64_t)) : NULL;

    if (rank == 0 && all == NULL) {
        CHECK(0, "out of memory");
        return;
    }
    OK(MPI_Gather(mine, n, MPI_INT64_T, all, n, MPI_INT64_T, 0, MPI_COMM_WORLD));
    if (rank == 0) {
        qsort(all, (size_t)size * (size_t)n, sizeof(int64_t), cmp_i64);
        for (int64_t i = 0; i < (int64_t)size * n; i++)
            if (all[i] != base + i) {
                CHECK(0, "%s: the %lld-th smallest value fetched is %lld, expected %lld", what,
                      (long long)i, (long long)all[i], (long long)(base + i));
                break;
            }
        free(all);
    }
    MPI_Barrier(MPI_COMM_WORLD); /* no rank's next phase adds to the counter before this one ends */
}

static void case_accumulate(void)
{
    int target = size - 1;
    int64_t *base = NULL, one = 1, lanes[LANES];
    int64_t *fetched = malloc((size_t)iterations * sizeof(int64_t));
    MPI_Win win;

    if (fetched == NULL) {
        CHECK(0, "out of memory");
        return;
    }
    OK(MPI_Win_allocate(8 * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                        &win));
    OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
    memset(base, 0, (1 + LANES) * sizeof(int64_t));
    OK(MPI_Win_unlock(rank, win));
    for (int i = 0; i < LANES; i++)
        lanes[i] = (int64_t)(rank + 1) << (8 * i);
    MPI_Barrier(MPI_COMM_WORLD);

    /* under lock_all, a flush now and then */
    OK(MPI_Win_lock_all(0, win));
    for (int it = 0; it < iterations; it++) {
        OK(MPI_Accumulate(lanes, LANES, MPI_INT64_T, target, 1, LANES, MPI_INT64_T, MPI_SUM, win));
        OK(MPI_Fetch_and_op(&one, &fetched[it], MPI_INT64_T, target, 0, MPI_SUM, win));
        if (it % 16 == 15)
            OK(MPI_Win_flush(target, win));
    }
    OK(MPI_Win_unlock_all(win));
    check_fetched(fetched, iterations, 0, "Fetch_and_op under lock_all");

    /* an epoch of a shared lock for each operation */
    for (int it = 0; it < iterations; it++) {
        OK(MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win));
        OK(MPI_Fetch_and_op(&one, &fetched[it], MPI_INT64_T, target, 0, MPI_SUM, win));
        OK(MPI_Accumulate(lanes, LANES, MPI_INT64_T, target, 1, LANES, MPI_INT64_T, MPI_SUM, win));
        OK(MPI_Win_unlock(target, win));
    }
    check_fetched(fetched, iterations, (int64_t)size * iterations,
                  "Fetch_and_op under shared locks");
    MPI_Barrier(MPI_COMM_WORLD);

    if (rank == target) {
        int64_t ranks_sum = (int64_t)size * (size + 1) / 2;

        OK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
        CHECK(base[0] == 2 * (int64_t)size * iterations, "the counter is %lld, expected %lld",
              (long long)base[0], 2 * (long long)size * iterations);
        for (int i = 0; i < LANES; i++) {
            int64_t want = 2 * (int64_t)iterations * (ranks_sum << (8 * i));

            CHECK(base[1 + i] == want, "accumulated lane %d is %lld, expected %lld", i,
                  (long long)base[1 + i], (long long)want);
        }
        OK(MPI_Win_unlock(rank, win));
    }
    OK(MPI_Win_free(&win));
    free(fetched);
}

/* The mixed case on a window made with @info (@what names it). */
static void mixed_on(MPI_Info info, const char *what)
{
    int target = size - 1;
    int64_t *base = NULL, one = 1, ones[LANES], seen = 0, last = 0;
    MPI_Win win;

    for (int i = 0; i < LANES; i++)
        ones[i] = 1;
    OK(MPI_Win_allocate(8 * sizeof(int64_t), sizeof(int64_t), info, MPI_COMM_WORLD, &base, &win));
    memset(base, 0, 8 * sizeof(int64_t));
    MPI_Barrier(MPI_COMM_WORLD);
    OK(MPI_Win_lock_all(0, win));
    for (int it = 0; it < iterations; it++) {
        int64_t fetched, expect, old;

        OK(MPI_Fetch_and_op(&one, &fetched, MPI_INT64_T, target, 0, MPI_SUM, win));
        OK(MPI_Accumulate(ones, LANES, MPI_INT64_T, target, 0, LANES, MPI_INT64_T, MPI_SUM, win));
        OK(MPI_Get_accumulate(NULL, 0, MPI_INT64_T, &seen, 1, MPI_INT64_T, target, 0, 1,
                              MPI_INT64_T, MPI_NO_OP, win));
        OK(MPI_Win_flush(target, win));
        CHECK(seen >= last && seen > fetched, "%s: read %lld after %lld (fetched %lld)", what,
              (long long)seen, (long long)last, (long long)fetched);
        last = seen;
        /* compare-and-swap: add one to element 6 */
        OK(MPI_Fetch_and_op(NULL, &expect, MPI_INT64_T, target, 6, MPI_NO_OP, win));
        OK(MPI_Win_flush(target, win));
        for (;;) {
            int64_t next = expect + 1;

            OK(MPI_Compare_and_swap(&next, &expect, &old, MPI_INT64_T, target, 6, win));
            OK(MPI_Win_flush(target, win));
            if (old == expect)
                break;
            expect = old;
        }
    }
    OK(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == target) {
        int64_t n = (int64_t)size * iterations;

        OK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
        CHECK(base[0] == 2 * n, "%s: the shared element is %lld, expected %lld", what,
              (long long)base[0], 2 * (long long)n);
        for (int i = 1; i < LANES; i++)
            CHECK(base[i] == n, "%s: element %d is %lld, expected %lld", what, i,
                  (long long)base[i], (long long)n);
        CHECK(base[6] == n, "%s: the compare-and-swap counter is %lld, expected %lld", what,
              (long long)base[6], (long long)n);
        OK(MPI_Win_unlock(rank, win));
    }
    OK(MPI_Win_free(&win));
}

static void case_mixed(void)
{
    MPI_Info info;

    mixed_on(MPI_INFO_NULL, "same_op_no_op window");
    OK(MPI_Info_create(&info));
    OK(MPI_Info_set(info, "accumulate_ops", "none"));
    mixed_on(info, "accumulate_ops=none window");
    OK(MPI_Info_free(&info));
}

static void case_lock(void)
{
    int64_t *base = NULL, copies[2], next;
    MPI_Win win;
    int torn = 0, seen_back = 0;
    int64_t last = -1;

    OK(MPI_Win_allocate(2 * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                        &win));
    OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
    base[0] = base[1] = 0;
    OK(MPI_Win_unlock(rank, win));
    MPI_Barrier(MPI_COMM_WORLD);

    for (int it = 0; it < iterations; it++) {
        OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
        OK(MPI_Get(copies, 2, MPI_INT64_T, 0, 0, 2, MPI_INT64_T, win));
        OK(MPI_Win_flush(0, win));
        torn += copies[0] != copies[1];
        seen_back += copies[0] <= last; /* the counter only grows */
        last = copies[0];
        next = copies[0] + 1;
        nanosleep(&(struct timespec){0, 20000}, NULL); /* widen the critical section */
        OK(MPI_Put(&next, 1, MPI_INT64_T, 0, 0, 1, MPI_INT64_T, win));
        OK(MPI_Put(&next, 1, MPI_INT64_T, 0, 1, 1, MPI_INT64_T, win));
        OK(MPI_Win_unlock(0, win));
        if (it % 4 == 3) {
            OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
            OK(MPI_Get(copies, 2, MPI_INT64_T, 0, 0, 2, MPI_INT64_T, win));
            OK(MPI_Win_unlock(0, win));
            torn += copies[0] != copies[1];
        }
    }
    CHECK(torn == 0, "%d reads saw the two copies differ (a lock let another rank in)", torn);
    CHECK(seen_back == 0, "%d exclusive epochs saw the counter no larger than before", seen_back);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        CHECK(base[0] == (int64_t)size * iterations && base[1] == base[0],
              "the counter is %lld and %lld, expected %lld", (long long)base[0], (long long)base[1],
              (long long)size * iterations);
        OK(MPI_Win_unlock(0, win));
    }
    OK(MPI_Win_free(&win));
}

static const struct {
    const char *name;
    void (*run)(void);
} cases[] = {
    {"accumulate", case_accumulate},
    {"mixed", case_mixed},
    {"lock", case_lock},
};

static int keep_cpus(int n)
{
    cpu_set_t allowed, kept;

    if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
        return -1;
    CPU_ZERO(&kept);
    for (int cpu = 0; cpu < CPU_SETSIZE && n > 0; cpu++)
        if (CPU_ISSET(cpu, &allowed)) {
            CPU_SET(cpu, &kept);
            n--;
        }
    return sched_setaffinity(0, sizeof(kept), &kept);
}

int main(int argc, char **argv)
{
    int first = 1;
    const int ncases = (int)(sizeof(cases) / sizeof(cases[0]));

    for (; first < argc && argv[first][0] == '-'; first++) {
        if (strcmp(argv[first], "--iterations") == 0 && first + 1 < argc) {
            iterations = atoi(argv[++first]);
        } else if (strcmp(argv[first], "--cpus") == 0 && first + 1 < argc) {
            if (keep_cpus(atoi(argv[++first])) != 0)
                perror("rma_stress: sched_setaffinity");
        } else {
            fprintf(stderr, "usage: pbt-mpi-rma-stress [--iterations N] [--cpus N] [case ...]\n");
            return 2;
        }
    }
    if (iterations < 1) {
        fprintf(stderr, "rma_stress: --iterations must be at least 1\n");
        return 2;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int c = 0; c < ncases; c++) {
        int wanted = first == argc;

        for (int a = first; a < argc; a++)
            wanted |= strcmp(argv[a], cases[c].name) == 0;
        if (wanted)
            cases[c].run();
        MPI_Barrier(MPI_COMM_WORLD);
    }
    for (int a = first; a < argc; a++) {
        int known = 0;

        for (int c = 0; c < ncases; c++)
            known |= strcmp(argv[a], cases[c].name) == 0;
        CHECK(known, "no case %s", argv[a]);
    }
    int status = check_summary("rma_stress", MPI_COMM_WORLD, 99);

    MPI_Finalize();
    return status;
}
