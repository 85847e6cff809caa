/*
 * The node path of the collectives (src/mpi/coll_node*.c) when one rank
 * runs out of memory: malloc fails on that rank, for requests of 16 KiB
 * or more, during one collective call, each rank in turn, and every rank
 * must return (CTest runs this under the launcher with a timeout: a rank
 * left waiting fails the test), each with the right data or an error:
 *
 *   allreduce, reduce   sums of 4 MB on one node (through the cells or by
 *                       single copy); Reduce of 256 KB across nodes (the
 *                       tree).  Not the reductions through the leaders:
 *                       their step is a point-to-point collective, and a
 *                       leader's partial result is still allocated
 *                       (docs/mpi.md)
 *   bcast               4 MB from the failing rank, its buffer strided
 *   movers              Gather, Scatter, Allgather, Alltoall with blocks
 *                       that fit a cell, and (single copy) larger ones
 *
 * A strided buffer read by single copy is packed first: into memory of
 * its own, else into its rank's cell when it fits, else that rank returns
 * MPI_ERR_NO_MEM and the ranks that would read it MPI_ERR_OTHER; the only
 * errors allowed are those, in those calls.  Every other call must
 * succeed on every rank with the right data.  After each call a Barrier
 * and a short Allreduce check that the ranks still agree on the area.
 *
 * argv[1]: "cma" when POSTBOX_COLL_ALGORITHM forces node_cma, "cells"
 * when it forces node; argv[2]: the nodes the ranks are on.  Runs with
 * the default cell (1 MiB).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define FAIL_FROM 16384
#define CELL 1048576

/* glibc's allocator, under the malloc below */
extern void *__libc_malloc(size_t bytes);

/* while not 0, malloc fails for requests of at least this many bytes */
static _Atomic size_t fail_from;

/* The malloc of the whole process (the library's calls find the
 * executable's first). */
__attribute__((visibility("default"))) void *malloc(size_t bytes)
{
    size_t limit = fail_from;

    if (limit != 0 && bytes >= limit) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_malloc(bytes);
}

static int cma, me, size, nodes;

static int value(int q, long i)
{
    return (int)((i * 7 + q * 13) % 100003);
}

/* rank q's element i of its block for rank d */
static int block_value(int q, int d, long i)
{
    return q * 1000003 + d * 10007 + (int)i;
}

/* After @call ran on every rank with @victim failing: @rc this rank's
 * return code, @may_fail whether an error is allowed (victim:
 * MPI_ERR_NO_MEM, the others MPI_ERR_OTHER), @bad the first wrong element
 * (-1: none) when it succeeded.  Then the ranks must still agree. */
static void judge(const char *call, long blk, int victim, int rc, int may_fail, long bad)
{
    int cls = MPI_SUCCESS, sum = 0, one = 1;

    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &cls);
    if (cls == MPI_SUCCESS)
        CHECK(bad < 0, "%s of %ld, rank %d out of memory: element %ld wrong", call, blk, victim,
              bad);
    else if (may_fail)
        CHECK(cls == (me == victim ? MPI_ERR_NO_MEM : MPI_ERR_OTHER),
              "%s of %ld, rank %d out of memory: error class %d", call, blk, victim, cls);
    else
        CHECK(0, "%s of %ld, rank %d out of memory: error class %d, not success", call, blk, victim,
              cls);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(sum == size, "after %s of %ld: Allreduce gave %d", call, blk, sum);
}

/* rc = the call, with malloc failing on @victim */
#define ON(victim, call)                                                                           \
    do {                                                                                           \
        fail_from = me == (victim) ? FAIL_FROM : 0;                                                \
        rc = (call);                                                                               \
        fail_from = 0;                                                                             \
    } while (0)

static void reductions(long n, int victim)
{
    int *a = __libc_malloc((size_t)n * sizeof(int)), *b = __libc_malloc((size_t)n * sizeof(int));
    int rc;
    long bad = -1;

    for (long i = 0; i < n; i++)
        a[i] = value(me, i);
    /* across nodes the leaders' step of an Allreduce is a point-to-point
     * collective, not the node path */
    if (nodes == 1) {
        ON(victim, MPI_Allreduce(a, b, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        for (long i = 0; i < n && bad < 0; i++) {
            long want = 0;

            for (int q = 0; q < size; q++)
                want += value(q, i);
            bad = b[i] == (int)want ? -1 : i;
        }
        judge("Allreduce", n, victim, rc, 0, bad);
    }
    for (int root = 0; root < size; root++) {
        memset(b, 0, (size_t)n * sizeof(int));
        ON(victim, MPI_Reduce(a, b, (int)n, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD));
        bad = -1;
        for (long i = 0; me == root && i < n && bad < 0; i++) {
            long want = 0;

            for (int q = 0; q < size; q++)
                want += value(q, i);
            bad = b[i] == (int)want ? -1 : i;
        }
        judge("Reduce", n, victim, rc, 0, bad);
    }
    free(a);
    free(b);
}

static void bcast(long n, int victim)
{
    int *strided = __libc_malloc((size_t)n * 2 * sizeof(int));
    int rc;
    long bad = -1;
    MPI_Datatype every_other;

    MPI_Type_vector((int)n, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    memset(strided, 0, (size_t)n * 2 * sizeof(int));
    for (long i = 0; me == victim && i < n; i++)
        strided[2 * i] = value(victim, i);
    ON(victim, MPI_Bcast(strided, 1, every_other, victim, MPI_COMM_WORLD));
    for (long i = 0; i < n && bad < 0; i++)
        bad = strided[2 * i] == value(victim, i) ? -1 : i;
    judge("Bcast", n, victim, rc, 0, bad);
    MPI_Type_free(&every_other);
    free(strided);
}

/* Gather, Scatter, Allgather, Alltoall of blocks of @blk ints; the send
 * side strided when @strided (single copy packs it), and Allgather's
 * receive side too (single copy across nodes packs that). */
static void movers(long blk, int victim, int strided)
{
    size_t all = (size_t)(blk * size);
    int *s = __libc_malloc(all * 2 * sizeof(int)), *d = __libc_malloc(all * 2 * sizeof(int));
    int rc, root = (victim + 1) % size;
    /* a packed copy larger than a cell, by single copy */
    int packs = cma && strided, big = blk * (long)sizeof(int) > CELL;
    long bad = -1;
    /* strided: block q's element i at [2 * (q * blk + i)] */
    MPI_Datatype blk_type = MPI_INT;
    MPI_Count one = strided ? 1 : blk;

    if (strided) {
        MPI_Datatype v;

        MPI_Type_vector((int)blk, 1, 2, MPI_INT, &v);
        MPI_Type_create_resized(v, 0, (MPI_Aint)(2 * blk * sizeof(int)), &blk_type);
        MPI_Type_commit(&blk_type);
        MPI_Type_free(&v);
    }

    /* Gather to the next rank */
    for (long i = 0; i < blk; i++)
        s[(strided ? 2 : 1) * i] = block_value(me, 0, i);
    ON(victim, MPI_Gather_c(s, one, blk_type, d, blk, MPI_INT, root, MPI_COMM_WORLD));
    for (long i = 0; me == root && i < (long)all && bad < 0; i++)
        bad = d[i] == block_value((int)(i / blk), 0, i % blk) ? -1 : i;
    judge("Gather", blk, victim, rc, packs && big, bad);

    /* Scatter from the failing rank (its blocks packed whole) */
    for (long i = 0; me == victim && i < (long)all; i++)
        s[(strided ? 2 : 1) * i] = block_value(victim, (int)(i / blk), i % blk);
    memset(d, 0, all * sizeof(int));
    ON(victim, MPI_Scatter_c(s, one, blk_type, d, blk, MPI_INT, victim, MPI_COMM_WORLD));
    bad = -1;
    for (long i = 0; i < blk && bad < 0; i++)
        bad = d[i] == block_value(victim, me, i) ? -1 : i;
    judge("Scatter", blk, victim, rc, packs && (size_t)blk * (size_t)size * sizeof(int) > CELL,
          bad);

    /* Allgather */
    for (long i = 0; i < blk; i++)
        s[(strided ? 2 : 1) * i] = block_value(me, 1, i);
    ON(victim, MPI_Allgather_c(s, one, blk_type, d, blk, MPI_INT, MPI_COMM_WORLD));
    bad = -1;
    for (long i = 0; i < (long)all && bad < 0; i++)
        bad = d[i] == block_value((int)(i / blk), 1, i % blk) ? -1 : i;
    judge("Allgather", blk, victim, rc, packs && big, bad);

    /* Allgather into strided blocks (across nodes by single copy: each
     * rank packs the blocks it received for the others to read) */
    if (strided) {
        for (long i = 0; i < blk; i++)
            s[i] = block_value(me, 2, i);
        memset(d, 0, all * 2 * sizeof(int));
        ON(victim, MPI_Allgather_c(s, blk, MPI_INT, d, 1, blk_type, MPI_COMM_WORLD));
        bad = -1;
        for (long i = 0; i < (long)all && bad < 0; i++)
            bad = d[2 * i] == block_value((int)(i / blk), 2, i % blk) ? -1 : i;
        judge("Allgather into strided", blk, victim, rc,
              cma && nodes > 1 && (size_t)blk * (size_t)nodes * sizeof(int) > CELL, bad);
    }

    /* Alltoall */
    for (long i = 0; i < (long)all; i++)
        s[(strided ? 2 : 1) * i] = block_value(me, (int)(i / blk), i % blk);
    ON(victim, MPI_Alltoall_c(s, one, blk_type, d, blk, MPI_INT, MPI_COMM_WORLD));
    bad = -1;
    for (long i = 0; i < (long)all && bad < 0; i++)
        bad = d[i] == block_value((int)(i / blk), me, i % blk) ? -1 : i;
    judge("Alltoall", blk, victim, rc, packs && (size_t)blk * (size_t)size * sizeof(int) > CELL,
          bad);

    if (strided) {
        MPI_Type_free(&blk_type);
    }
    free(s);
    free(d);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    rank = me;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    cma = argc > 1 && strcmp(argv[1], "cma") == 0;
    nodes = argc > 2 ? atoi(argv[2]) : 1;
    /* channels between ranks are opened at their first message, with
     * memory: open every one before any malloc fails */
    for (int d = 1; d < size; d++) {
        int out = me, in = -1;

        OK(MPI_Sendrecv(&out, 1, MPI_INT, (me + d) % size, 0, &in, 1, MPI_INT,
                        (me - d + size) % size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    }
    for (int victim = 0; victim < size; victim++) {
        if (nodes == 1)
            reductions(1L << 20, victim); /* 4 MB: the cells or single copy */
        else if (!cma)
            reductions(1L << 16, victim); /* 256 KB: the tree across nodes */
        bcast(1L << 20, victim);
        movers(16384, victim, 0);
        movers(16384, victim, 1);
        if (cma)
            movers(1L << 19, victim, 1); /* 2 MB blocks: packed copies beyond a cell */
    }
    {
        int rc = check_summary("coll_nomem", MPI_COMM_WORLD, 99);

        MPI_Finalize();
        return rc;
    }
}
