/*
 * imb_coll: a collectives benchmark in the style of the Intel MPI Benchmarks
 * (IMB-MPI1), written to the standard MPI API only, so that it builds
 * unmodified with any MPI's mpicc (Postbox's postbox-cc, Open MPI, MPICH).
 * tests/python/test_mpi_coll.py builds it with postbox-cc and runs it under
 * `postbox run -n 4` (one node and two virtual nodes), and builds it with
 * Open MPI's mpicc too when the bench suite has installed it.
 *
 * For each benchmark (Barrier, Bcast, Reduce, Allreduce, Reduce_scatter,
 * Reduce_scatter_block, Allgather, Allgatherv, Gather, Gatherv, Scatter,
 * Scatterv, Alltoall, Alltoallv, Scan, Exscan) and each message size (0, 4,
 * 64, 1 KB, 16 KB, 128 KB) it makes one warm-up call, then a timed loop, and
 * prints, as IMB does, t_min/t_max/t_avg in microseconds over the ranks
 * (MPI_Reduce with MIN, MAX and SUM to rank 0).  Then it runs every benchmark
 * again on the even and the odd ranks at once (MPI_Comm_split), as IMB's
 * multi mode does.  Sizes are as IMB defines them: the bytes of MPI_INT
 * (MPI_FLOAT for Reduce, Reduce_scatter(_block), Scan and Exscan, as IMB
 * reduces floats) of one rank's block (Gather, Scatter, Allgather: the block
 * of one rank; Alltoall: the block to each rank) or of the whole vector
 * (Bcast, the reductions; Reduce_scatter: the vector before scattering).
 * Roots rotate with the iteration, as in IMB.
 *
 * Like IMB's -check, the results of the warm-up call and of the last timed
 * call are compared with values computed locally (every value depends on
 * the sending rank, the receiving rank and the index; the floats are small
 * integers, so their sums are exact); the warm-up Allreduce is MPI_IN_PLACE.
 * Rank 0 prints "imb_coll: ok" when no rank saw a mismatch, else
 * "imb_coll: N errors", and the exit status is then 1.
 *
 *   imb_coll [-iter N]   N: repetitions per size (default 50; sizes of
 *                        more than 64 KB do fewer, as IMB's volume limit)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    BARRIER,
    BCAST,
    REDUCE,
    ALLREDUCE,
    REDUCE_SCATTER,
    REDUCE_SCATTER_BLOCK,
    ALLGATHER,
    ALLGATHERV,
    GATHER,
    GATHERV,
    SCATTER,
    SCATTERV,
    ALLTOALL,
    ALLTOALLV,
    SCAN,
    EXSCAN,
    NBENCH
};

static const char *const names[NBENCH] = {
    "Barrier",   "Bcast",      "Reduce", "Allreduce", "Reduce_scatter", "Reduce_scatter_block",
    "Allgather", "Allgatherv", "Gather", "Gatherv",   "Scatter",        "Scatterv",
    "Alltoall",  "Alltoallv",  "Scan",   "Exscan"};

static const int sizes[] = {0, 4, 64, 1024, 16384, 131072}; /* bytes */
#define NSIZES ((int)(sizeof sizes / sizeof sizes[0]))
#define MAXBYTES 131072
#define VOLUME (4 << 20) /* at most this many bytes per rank and size, as IMB's OVERALL_VOL */
#define POISON (-1)      /* never a value of pat() */

/* one benchmark on one communicator with one count */
struct run {
    int bench;
    MPI_Comm comm;
    int rank, size, count; /* count: elements (4 bytes each) */
    int *counts, *displs;  /* per rank: count, and the block's place (reversed order) */
    int *rscounts;         /* Reduce_scatter's uneven blocks */
    void *sbuf, *rbuf;
};

static long errors;
static int world_rank;

/* the value index @i of the block that rank @from sends to block @to */
static int pat(int from, int to, int i)
{
    return (from * 131 + to * 37 + i * 7) % 1021 + 1;
}

/* sum of pat(s, 0, i) over the ranks lo <= s < hi */
static int sum(int lo, int hi, int i)
{
    int s, total = 0;
    for (s = lo; s < hi; s++)
        total += pat(s, 0, i);
    return total;
}

static int is_float(int b)
{
    return b == REDUCE || b == REDUCE_SCATTER || b == REDUCE_SCATTER_BLOCK || b == SCAN ||
           b == EXSCAN;
}

/* block j of the v-forms goes at the reversed place: checks the displacements */
static int vplace(const struct run *r, int j)
{
    return (r->size - 1 - j) * r->count;
}

/* send buffer: block j holds pat(rank, j, i) (at vplace for Scatterv and
 * Alltoallv); the receive buffer is poisoned */
static void fill(const struct run *r)
{
    int j, i, n = r->size, c = r->count;
    for (j = 0; j < n; j++) {
        int at = (r->bench == SCATTERV || r->bench == ALLTOALLV) ? vplace(r, j) : j * c;
        for (i = 0; i < c; i++) {
            if (is_float(r->bench))
                ((float *)r->sbuf)[at + i] = (float)pat(r->rank, j, i);
            else
                ((int *)r->sbuf)[at + i] = pat(r->rank, j, i);
        }
    }
    for (i = 0; i < n * c; i++)
        ((int *)r->rbuf)[i] = POISON;
}

/* one call of the collective; the root is it % size */
static void call(const struct run *r, int it)
{
    int n = r->size, c = r->count, root = it % n;
    void *s = r->sbuf, *d = r->rbuf;
    MPI_Comm comm = r->comm;

    switch (r->bench) {
    case BARRIER: MPI_Barrier(comm); break;
    case BCAST: MPI_Bcast(r->rank == root ? s : d, c, MPI_INT, root, comm); break;
    case REDUCE: MPI_Reduce(s, d, c, MPI_FLOAT, MPI_SUM, root, comm); break;
    case ALLREDUCE: MPI_Allreduce(s, d, c, MPI_INT, MPI_SUM, comm); break;
    case REDUCE_SCATTER: MPI_Reduce_scatter(s, d, r->rscounts, MPI_FLOAT, MPI_SUM, comm); break;
    case REDUCE_SCATTER_BLOCK:
        MPI_Reduce_scatter_block(s, d, c / n, MPI_FLOAT, MPI_SUM, comm);
        break;
    case ALLGATHER: MPI_Allgather(s, c, MPI_INT, d, c, MPI_INT, comm); break;
    case ALLGATHERV: MPI_Allgatherv(s, c, MPI_INT, d, r->counts, r->displs, MPI_INT, comm); break;
    case GATHER: MPI_Gather(s, c, MPI_INT, d, c, MPI_INT, root, comm); break;
    case GATHERV: MPI_Gatherv(s, c, MPI_INT, d, r->counts, r->displs, MPI_INT, root, comm); break;
    case SCATTER: MPI_Scatter(s, c, MPI_INT, d, c, MPI_INT, root, comm); break;
    case SCATTERV: MPI_Scatterv(s, r->counts, r->displs, MPI_INT, d, c, MPI_INT, root, comm); break;
    case ALLTOALL: MPI_Alltoall(s, c, MPI_INT, d, c, MPI_INT, comm); break;
    case ALLTOALLV:
        MPI_Alltoallv(s, r->counts, r->displs, MPI_INT, d, r->counts, r->displs, MPI_INT, comm);
        break;
    case SCAN: MPI_Scan(s, d, c, MPI_FLOAT, MPI_SUM, comm); break;
    case EXSCAN: MPI_Exscan(s, d, c, MPI_FLOAT, MPI_SUM, comm); break;
    }
}

/* compare element @k of the receive buffer with @want; count a mismatch */
static void expect(const struct run *r, const char *when, int k, int want)
{
    int got;
    if (is_float(r->bench)) {
        float f = ((const float *)r->rbuf)[k];
        if (f == (float)want)
            return;
        got = (int)f;
    } else {
        got = ((const int *)r->rbuf)[k];
        if (got == want)
            return;
    }
    if (errors++ < 10)
        fprintf(stderr, "imb_coll: rank %d (%d of %d): %s %d bytes, %s: rbuf[%d] = %d, want %d\n",
                world_rank, r->rank, r->size, names[r->bench], r->count * 4, when, k, got, want);
}

/* check the results of call(r, it) */
static void check(const struct run *r, int it, const char *when)
{
    int n = r->size, c = r->count, me = r->rank, root = it % n;
    int i, j, off = 0;

    switch (r->bench) {
    case BARRIER: break;
    case BCAST:
        for (i = 0; me != root && i < c; i++)
            expect(r, when, i, pat(root, 0, i));
        break;
    case REDUCE:
    case ALLREDUCE:
        for (i = 0; (r->bench == ALLREDUCE || me == root) && i < c; i++)
            expect(r, when, i, sum(0, n, i));
        break;
    case REDUCE_SCATTER:
        for (j = 0; j < me; j++)
            off += r->rscounts[j];
        for (i = 0; i < r->rscounts[me]; i++)
            expect(r, when, i, sum(0, n, off + i));
        break;
    case REDUCE_SCATTER_BLOCK:
        for (i = 0; i < c / n; i++)
            expect(r, when, i, sum(0, n, me * (c / n) + i));
        break;
    case ALLGATHER:
    case GATHER:
        for (j = 0; (r->bench == ALLGATHER || me == root) && j < n; j++)
            for (i = 0; i < c; i++)
                expect(r, when, j * c + i, pat(j, 0, i));
        break;
    case ALLGATHERV:
    case GATHERV:
        for (j = 0; (r->bench == ALLGATHERV || me == root) && j < n; j++)
            for (i = 0; i < c; i++)
                expect(r, when, vplace(r, j) + i, pat(j, 0, i));
        break;
    case SCATTER:
    case SCATTERV:
        for (i = 0; i < c; i++)
            expect(r, when, i, pat(root, me, i));
        break;
    case ALLTOALL:
    case ALLTOALLV:
        for (j = 0; j < n; j++)
            for (i = 0; i < c; i++)
                expect(r, when, (r->bench == ALLTOALL ? j * c : vplace(r, j)) + i, pat(j, me, i));
        break;
    case SCAN:
    case EXSCAN: /* Exscan's result on rank 0 is undefined */
        for (i = 0; (r->bench == SCAN || me > 0) && i < c; i++)
            expect(r, when, i, sum(0, r->bench == SCAN ? me + 1 : me, i));
        break;
    }
}

/* the warm-up: one call, checked (Allreduce in place) */
static void warm_up(struct run *r)
{
    fill(r);
    if (r->bench == ALLREDUCE) {
        memcpy(r->rbuf, r->sbuf, (size_t)r->count * sizeof(int));
        MPI_Allreduce(MPI_IN_PLACE, r->rbuf, r->count, MPI_INT, MPI_SUM, r->comm);
    } else {
        call(r, 0);
    }
    check(r, 0, "warm-up");
}

/* repetitions for @bytes: at most @iter, and at most VOLUME bytes in all */
static int repetitions(int bytes, int iter)
{
    int reps = bytes > 0 ? VOLUME / bytes : iter;
    if (reps > iter)
        reps = iter;
    return reps > 0 ? reps : 1;
}

static void header(int b, MPI_Comm comm, int multi)
{
    int n, wsize, r;
    MPI_Comm_size(comm, &n);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    if (world_rank != 0)
        return;
    printf("\n#----------------------------------------------------------------\n");
    printf("# Benchmarking %s%s\n", multi ? "Multi-" : "", names[b]);
    if (multi) {
        printf("# ( %d groups of %d processes each running simultaneous )\n", wsize > 1 ? 2 : 1, n);
        for (int g = 0; g < 2 && g < wsize; g++) {
            printf("# Group %2d:", g);
            for (r = g; r < wsize; r += 2)
                printf(" %5d", r);
            printf("\n");
        }
    } else {
        printf("# #processes = %d\n", n);
    }
    printf("#----------------------------------------------------------------\n");
    printf("%13s%13s%13s%13s%13s\n", "#bytes", "#repetitions", "t_min[usec]", "t_max[usec]",
           "t_avg[usec]");
}

/* one benchmark on @comm, every size; the times are reduced over all ranks */
static void bench(int b, MPI_Comm comm, int multi, int iter, void *sbuf, void *rbuf)
{
    struct run r;
    int s, j, it, wsize;

    memset(&r, 0, sizeof r);
    r.bench = b;
    r.comm = comm;
    r.sbuf = sbuf;
    r.rbuf = rbuf;
    MPI_Comm_rank(comm, &r.rank);
    MPI_Comm_size(comm, &r.size);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    r.counts = malloc(3 * (size_t)r.size * sizeof(int));
    r.displs = r.counts + r.size;
    r.rscounts = r.displs + r.size;
    header(b, comm, multi);

    for (s = 0; s < NSIZES; s++) {
        int reps = repetitions(sizes[s], iter);
        double t0, t, tmin, tmax, tsum;

        if (b == BARRIER && s > 0)
            break; /* no message: one line, as IMB */
        r.count = sizes[s] / 4;
        for (j = 0; j < r.size; j++) {
            r.counts[j] = r.count;
            r.displs[j] = vplace(&r, j);
            r.rscounts[j] = r.count / r.size + (j < r.count % r.size);
        }
        warm_up(&r);

        fill(&r);
        MPI_Barrier(comm);
        t0 = MPI_Wtime();
        for (it = 0; it < reps; it++)
            call(&r, it);
        t = (MPI_Wtime() - t0) / reps * 1e6;
        check(&r, reps - 1, "last timed call");

        MPI_Reduce(&t, &tmin, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
        MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        MPI_Reduce(&t, &tsum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (world_rank == 0)
            printf("%13d%13d%13.2f%13.2f%13.2f\n", sizes[s], reps, tmin, tmax, tsum / wsize);
    }
    if (world_rank == 0)
        fflush(stdout);
    free(r.counts);
}

int main(int argc, char **argv)
{
    int iter = 50, wsize, b, i;
    long total = 0;
    void *sbuf, *rbuf;
    MPI_Comm half;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-iter") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0) {
            iter = atoi(argv[++i]);
        } else {
            if (world_rank == 0)
                fprintf(stderr, "usage: imb_coll [-iter N]\n");
            MPI_Finalize();
            return 2;
        }
    }

    /* Alltoall's buffers: a block of MAXBYTES for each rank */
    sbuf = malloc((size_t)wsize * MAXBYTES);
    rbuf = malloc((size_t)wsize * MAXBYTES);
    if (sbuf == NULL || rbuf == NULL) {
        fprintf(stderr, "imb_coll: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (world_rank == 0)
        printf("# imb_coll: IMB-MPI1 style collectives, %d processes, -iter %d, with -check\n",
               wsize, iter);

    for (b = 0; b < NBENCH; b++)
        bench(b, MPI_COMM_WORLD, 0, iter, sbuf, rbuf);

    /* multi mode: the even and the odd ranks at once, each on its own communicator */
    MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &half);
    for (b = 0; b < NBENCH; b++)
        bench(b, half, 1, iter, sbuf, rbuf);
    MPI_Comm_free(&half);

    MPI_Allreduce(&errors, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (world_rank == 0) {
        if (total == 0)
            printf("\nimb_coll: ok\n");
        else
            printf("\nimb_coll: %ld errors\n", total);
        fflush(stdout);
    }
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
