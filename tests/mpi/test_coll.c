/*
 * pbt-mpi-coll: the collectives (src/mpi/coll.c), run by
 * tests/python/test_mpi_coll.py under `postbox run -n N [--nodes K]`
 * (any N >= 1).  Written to the standard API only.  Every collective with
 * several counts (0, 1, 1000, 100000 elements), every root, the
 * MPI_IN_PLACE forms, every predefined op on int and double (MINLOC and
 * MAXLOC on MPI_DOUBLE_INT and MPI_2INT), a non-commutative user op (2x2
 * matrix product) against the rank-order product, derived datatypes, and
 * argument errors under MPI_ERRORS_RETURN.  Every rank prints one line per
 * failure and exits non-zero if any; rank 0 prints "coll: ok" at the end.
 *
 *   pbt-mpi-coll [case ...]   run the named cases (default: all)
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"

static int size;

#define SENTINEL (-7)

static const int counts[] = {0, 1, 1000, 100000};
#define NCOUNTS ((int)(sizeof(counts) / sizeof(counts[0])))
#define BIG 100000 /* the count only some cases run (time) */

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);

    if (p == NULL) {
        printf("coll FAIL rank %d: out of memory for %zu bytes\n", rank, n);
        exit(1);
    }
    return p;
}

static int *ints(size_t n, int value)
{
    int *p = xmalloc(n * sizeof(int));

    for (size_t i = 0; i < n; i++)
        p[i] = value;
    return p;
}

/* the value element @i of rank @r contributes to the data movements */
static int gval(int r, long i)
{
    return r * 1000003 + (int)i;
}

/* the index of the first of @n ints at @p that is not gval(@r, @first + k),
 * or -1 */
static long bad_gval(const int *p, long n, int r, long first)
{
    for (long k = 0; k < n; k++) {
        if (p[k] != gval(r, first + k))
            return k;
    }
    return -1;
}

static long bad_sentinel(const int *p, long n)
{
    for (long k = 0; k < n; k++) {
        if (p[k] != SENTINEL)
            return k;
    }
    return -1;
}

/* ---- barrier ----------------------------------------------------------------- */

static void case_barrier(void)
{
    double t0;

    for (int i = 0; i < 20; i++)
        OK(MPI_Barrier(MPI_COMM_WORLD));
    /* each rank in turn arrives 100 ms late: nobody may leave before it
     * arrives (on every node, whichever local rank is late) */
    for (int late = 0; late < size; late++) {
        if (rank == late)
            nanosleep(&(struct timespec){0, 100000000}, NULL);
        t0 = MPI_Wtime();
        OK(MPI_Barrier(MPI_COMM_WORLD));
        if (rank != late)
            CHECK(MPI_Wtime() - t0 > 0.05, "left the barrier %.3f s after entering, before rank %d",
                  MPI_Wtime() - t0, late);
    }
}

/* ---- broadcast ------------------------------------------------------------------ */

static void case_bcast(void)
{
    for (int k = 0; k < NCOUNTS; k++) {
        int n = counts[k];
        int *buf = ints((size_t)n + 1, SENTINEL);

        for (int root = 0; root < size; root++) {
            for (long i = 0; i < n; i++)
                buf[i] = rank == root ? gval(root, i) : SENTINEL;
            OK(MPI_Bcast(buf, n, MPI_INT, root, MPI_COMM_WORLD));
            CHECK(bad_gval(buf, n, root, 0) < 0, "count %d root %d: element %ld wrong", n, root,
                  bad_gval(buf, n, root, 0));
            CHECK(buf[n] == SENTINEL, "count %d root %d: wrote past the buffer", n, root);
        }
        free(buf);
    }
    /* doubles, and the same bytes as chars on some ranks */
    {
        enum {
            N = 5000
        };
        double *d = xmalloc(N * sizeof(double));

        for (int root = 0; root < size; root++) {
            for (int i = 0; i < N; i++)
                d[i] = rank == root ? i * 0.5 + root : -1.0;
            if (rank % 2)
                OK(MPI_Bcast(d, N * (int)sizeof(double), MPI_CHAR, root, MPI_COMM_WORLD));
            else
                OK(MPI_Bcast(d, N, MPI_DOUBLE, root, MPI_COMM_WORLD));
            for (int i = 0; i < N; i++) {
                if (d[i] != i * 0.5 + root) {
                    CHECK(0, "double root %d: element %d is %g", root, i, d[i]);
                    break;
                }
            }
        }
        free(d);
    }
}

/* ---- gathers and scatters ---------------------------------------------------- */

/* the count and place of rank r's block in the v-collectives: counts that
 * differ by rank and gaps of 2 elements between blocks */
static int vcount(int n, int r)
{
    return n == 0 ? 0 : n + r;
}

static int vdispl(int n, int r)
{
    int d = 0;

    for (int j = 0; j < r; j++)
        d += vcount(n, j) + 2;
    return d;
}

static void vec_arrays(int n, int *cnts, int *displs)
{
    for (int r = 0; r < size; r++) {
        cnts[r] = vcount(n, r);
        displs[r] = vdispl(n, r);
    }
}

static void case_gather(void)
{
    int *cnts = ints((size_t)size, 0), *displs = ints((size_t)size, 0);

    for (int k = 0; k < NCOUNTS; k++) {
        int n = counts[k];
        long total = (long)n * size, vtotal = vdispl(n, size);
        int *send = ints((size_t)vcount(n, rank), 0), *recv = ints((size_t)vtotal + 1, 0);

        vec_arrays(n, cnts, displs);
        for (long i = 0; i < vcount(n, rank); i++)
            send[i] = gval(rank, i);
        for (int root = 0; root < size; root++) {
            for (int in_place = 0; in_place < 2; in_place++) {
                const void *sbuf = in_place && rank == root ? MPI_IN_PLACE : send;

                /* MPI_Gather */
                for (long i = 0; i <= total; i++)
                    recv[i] = SENTINEL;
                if (in_place && rank == root)
                    memcpy(recv + (long)root * n, send, (size_t)n * sizeof(int));
                OK(MPI_Gather(sbuf, n, MPI_INT, recv, n, MPI_INT, root, MPI_COMM_WORLD));
                if (rank == root) {
                    for (int r = 0; r < size; r++)
                        CHECK(bad_gval(recv + (long)r * n, n, r, 0) < 0,
                              "count %d root %d in_place %d: block of rank %d wrong at %ld", n,
                              root, in_place, r, bad_gval(recv + (long)r * n, n, r, 0));
                    CHECK(recv[total] == SENTINEL, "count %d: wrote past the buffer", n);
                }
                /* MPI_Gatherv */
                for (long i = 0; i <= vtotal; i++)
                    recv[i] = SENTINEL;
                if (in_place && rank == root)
                    memcpy(recv + displs[root], send, (size_t)cnts[root] * sizeof(int));
                OK(MPI_Gatherv(sbuf, vcount(n, rank), MPI_INT, recv, cnts, displs, MPI_INT, root,
                               MPI_COMM_WORLD));
                if (rank == root) {
                    for (int r = 0; r < size; r++) {
                        CHECK(bad_gval(recv + displs[r], cnts[r], r, 0) < 0,
                              "v count %d root %d in_place %d: block of rank %d wrong", n, root,
                              in_place, r);
                        CHECK(bad_sentinel(recv + displs[r] + cnts[r], 2) < 0,
                              "v count %d root %d: the gap after rank %d's block was written", n,
                              root, r);
                    }
                }
            }
        }
        free(send);
        free(recv);
    }
    free(cnts);
    free(displs);
}

static void case_scatter(void)
{
    int *cnts = ints((size_t)size, 0), *displs = ints((size_t)size, 0);

    for (int k = 0; k < NCOUNTS; k++) {
        int n = counts[k];
        long total = (long)n * size, vtotal = vdispl(n, size);
        int *send = ints((size_t)(total > vtotal ? total : vtotal), 0);
        int *recv = ints((size_t)vcount(n, rank) + 1, 0);

        vec_arrays(n, cnts, displs);
        for (int root = 0; root < size; root++) {
            for (int in_place = 0; in_place < 2; in_place++) {
                void *rbuf = in_place && rank == root ? MPI_IN_PLACE : recv;

                /* MPI_Scatter: block r holds gval(r, i) */
                for (int r = 0; r < size; r++) {
                    for (long i = 0; i < n; i++)
                        send[(long)r * n + i] = rank == root ? gval(r, i) : SENTINEL;
                }
                for (long i = 0; i <= n; i++)
                    recv[i] = SENTINEL;
                OK(MPI_Scatter(send, n, MPI_INT, rbuf, n, MPI_INT, root, MPI_COMM_WORLD));
                if (rbuf != MPI_IN_PLACE) {
                    CHECK(bad_gval(recv, n, rank, 0) < 0, "count %d root %d: wrong at %ld", n, root,
                          bad_gval(recv, n, rank, 0));
                    CHECK(recv[n] == SENTINEL, "count %d root %d: wrote past the buffer", n, root);
                } else {
                    CHECK(bad_gval(send + (long)root * n, n, root, 0) < 0,
                          "count %d root %d: in place, the root's block changed", n, root);
                }
                /* MPI_Scatterv */
                for (int r = 0; r < size; r++) {
                    for (long i = 0; i < cnts[r]; i++)
                        send[displs[r] + i] = rank == root ? gval(r, i) : SENTINEL;
                }
                for (long i = 0; i <= vcount(n, rank); i++)
                    recv[i] = SENTINEL;
                OK(MPI_Scatterv(send, cnts, displs, MPI_INT, rbuf, vcount(n, rank), MPI_INT, root,
                                MPI_COMM_WORLD));
                if (rbuf != MPI_IN_PLACE) {
                    CHECK(bad_gval(recv, cnts[rank], rank, 0) < 0, "v count %d root %d: wrong", n,
                          root);
                    CHECK(recv[cnts[rank]] == SENTINEL, "v count %d root %d: wrote past", n, root);
                }
            }
        }
        free(send);
        free(recv);
    }
    free(cnts);
    free(displs);
}

static void case_allgather(void)
{
    int *cnts = ints((size_t)size, 0), *displs = ints((size_t)size, 0);

    for (int k = 0; k < NCOUNTS; k++) {
        int n = counts[k];
        long total = (long)n * size, vtotal = vdispl(n, size);
        int *send = ints((size_t)vcount(n, rank), 0);
        int *recv = ints((size_t)(total > vtotal ? total : vtotal) + 1, 0);

        vec_arrays(n, cnts, displs);
        for (long i = 0; i < vcount(n, rank); i++)
            send[i] = gval(rank, i);
        for (int in_place = 0; in_place < 2; in_place++) {
            const void *sbuf = in_place ? MPI_IN_PLACE : send;

            for (long i = 0; i <= total; i++)
                recv[i] = SENTINEL;
            if (in_place)
                memcpy(recv + (long)rank * n, send, (size_t)n * sizeof(int));
            OK(MPI_Allgather(sbuf, n, MPI_INT, recv, n, MPI_INT, MPI_COMM_WORLD));
            for (int r = 0; r < size; r++)
                CHECK(bad_gval(recv + (long)r * n, n, r, 0) < 0,
                      "count %d in_place %d: block of rank %d wrong", n, in_place, r);
            CHECK(recv[total] == SENTINEL, "count %d: wrote past the buffer", n);

            for (long i = 0; i <= vtotal; i++)
                recv[i] = SENTINEL;
            if (in_place)
                memcpy(recv + displs[rank], send, (size_t)cnts[rank] * sizeof(int));
            OK(MPI_Allgatherv(sbuf, cnts[rank], MPI_INT, recv, cnts, displs, MPI_INT,
                              MPI_COMM_WORLD));
            for (int r = 0; r < size; r++) {
                CHECK(bad_gval(recv + displs[r], cnts[r], r, 0) < 0,
                      "v count %d in_place %d: block of rank %d wrong", n, in_place, r);
                CHECK(bad_sentinel(recv + displs[r] + cnts[r], 2) < 0,
                      "v count %d: the gap after rank %d's block was written", n, r);
            }
        }
        free(send);
        free(recv);
    }
    free(cnts);
    free(displs);
}

/* what rank @from sends rank @to as element @i of its block */
static int aval(int from, int to, long i)
{
    return from * 7919 + to * 104729 + (int)i * 3;
}

/* Alltoallv's counts: symmetric, so rank a sends rank b what b expects */
static int acount(int n, int a, int b)
{
    return n == 0 ? 0 : n + (a + b) % 3;
}

static void case_alltoall(void)
{
    int *scnt = ints((size_t)size, 0), *sdis = ints((size_t)size, 0);
    int *rcnt = ints((size_t)size, 0), *rdis = ints((size_t)size, 0);

    for (int k = 0; k < NCOUNTS; k++) {
        int n = counts[k];
        long total = (long)n * size, stot = 0, rtot = 0;

        for (int r = 0; r < size; r++) {
            scnt[r] = acount(n, rank, r);
            sdis[r] = (int)stot;
            stot += scnt[r] + 1;
            rcnt[r] = acount(n, r, rank);
            rdis[r] = (int)rtot;
            rtot += rcnt[r] + 2;
        }
        int *send = ints((size_t)(total > stot ? total : stot), 0);
        int *recv = ints((size_t)(total > rtot ? total : rtot) + 1, 0);

        for (int in_place = 0; in_place < 2; in_place++) {
            /* MPI_Alltoall */
            int *src = in_place ? recv : send;

            for (long i = 0; i <= total; i++)
                recv[i] = SENTINEL;
            for (int r = 0; r < size; r++) {
                for (long i = 0; i < n; i++)
                    src[(long)r * n + i] = aval(rank, r, i);
            }
            OK(MPI_Alltoall(in_place ? MPI_IN_PLACE : send, n, MPI_INT, recv, n, MPI_INT,
                            MPI_COMM_WORLD));
            for (int r = 0; r < size; r++) {
                for (long i = 0; i < n; i++) {
                    if (recv[(long)r * n + i] != aval(r, rank, i)) {
                        CHECK(0, "count %d in_place %d: from rank %d element %ld is %d", n,
                              in_place, r, i, recv[(long)r * n + i]);
                        break;
                    }
                }
            }
            CHECK(recv[total] == SENTINEL, "count %d: wrote past the buffer", n);
            /* MPI_Alltoallv; in place, the receive counts and places serve both ways */
            for (long i = 0; i <= rtot; i++)
                recv[i] = SENTINEL;
            for (int r = 0; r < size; r++) {
                for (long i = 0; i < scnt[r]; i++)
                    src[(in_place ? rdis : sdis)[r] + i] = aval(rank, r, i);
            }
            OK(MPI_Alltoallv(in_place ? MPI_IN_PLACE : send, scnt, sdis, MPI_INT, recv, rcnt, rdis,
                             MPI_INT, MPI_COMM_WORLD));
            for (int r = 0; r < size; r++) {
                for (long i = 0; i < rcnt[r]; i++) {
                    if (recv[rdis[r] + i] != aval(r, rank, i)) {
                        CHECK(0, "v count %d in_place %d: from rank %d element %ld is %d", n,
                              in_place, r, i, recv[rdis[r] + i]);
                        break;
                    }
                }
                CHECK(bad_sentinel(recv + rdis[r] + rcnt[r], 2) < 0,
                      "v count %d: the gap after rank %d's block was written", n, r);
            }
        }
        free(send);
        free(recv);
    }
    free(scnt);
    free(sdis);
    free(rcnt);
    free(rdis);
}

/* ---- reductions with the predefined ops ---------------------------------------- */

typedef struct {
    MPI_Op op;
    const char *name;
    int on_double; /* defined on MPI_DOUBLE too */
} op_desc_t;

static const op_desc_t ops[] = {
    {MPI_SUM, "MPI_SUM", 1},   {MPI_PROD, "MPI_PROD", 1}, {MPI_MIN, "MPI_MIN", 1},
    {MPI_MAX, "MPI_MAX", 1},   {MPI_LAND, "MPI_LAND", 0}, {MPI_LOR, "MPI_LOR", 0},
    {MPI_LXOR, "MPI_LXOR", 0}, {MPI_BAND, "MPI_BAND", 0}, {MPI_BOR, "MPI_BOR", 0},
    {MPI_BXOR, "MPI_BXOR", 0},
};

/* element @i of rank @r's input for @op: small values, so that every sum and
 * product is exact in int and in double */
static double input(MPI_Op op, int is_double, int r, long i)
{
    if (op == MPI_PROD)
        return (r + i) % 3 == 0 ? (is_double ? 0.5 : 3) : 2;
    if (op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR)
        return (r * 2 + i) % 3 == 0 ? 0 : (double)(i % 5 + 1);
    if (op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR)
        return (double)(((uint32_t)r * 2654435761u + (uint32_t)i * 40503u) & 0x7fffffff);
    return ((r * 31 + i * 7) % 11 - 5) * (is_double ? 0.25 : 1);
}

static double combine(MPI_Op op, double a, double b)
{
    int64_t x = (int64_t)a, y = (int64_t)b;

    if (op == MPI_SUM)
        return a + b;
    if (op == MPI_PROD)
        return a * b;
    if (op == MPI_MIN)
        return a < b ? a : b;
    if (op == MPI_MAX)
        return a > b ? a : b;
    if (op == MPI_LAND)
        return (a != 0) && (b != 0);
    if (op == MPI_LOR)
        return (a != 0) || (b != 0);
    if (op == MPI_LXOR)
        return (a != 0) != (b != 0);
    if (op == MPI_BAND)
        return (double)(x & y);
    if (op == MPI_BOR)
        return (double)(x | y);
    return (double)(x ^ y);
}

/* the reduction of element @i over ranks @lo..@hi */
static double expect(MPI_Op op, int is_double, int lo, int hi, long i)
{
    double acc = input(op, is_double, lo, i);

    for (int r = lo + 1; r <= hi; r++)
        acc = combine(op, acc, input(op, is_double, r, i));
    return acc;
}

/* a buffer of @n ints or doubles */
typedef struct {
    int is_double;
    void *p;
} vals_t;

static vals_t vals_new(int is_double, long n)
{
    vals_t v = {is_double, xmalloc((size_t)(n + 1) * (is_double ? sizeof(double) : sizeof(int)))};

    return v;
}

static double vget(vals_t v, long i)
{
    return v.is_double ? ((double *)v.p)[i] : ((int *)v.p)[i];
}

static void vset(vals_t v, long i, double x)
{
    if (v.is_double)
        ((double *)v.p)[i] = x;
    else
        ((int *)v.p)[i] = (int)x;
}

/* fill elements [0, @n) of @v with rank @r's inputs of global index
 * @first + k */
static void vfill(vals_t v, MPI_Op op, int r, long first, long n)
{
    for (long k = 0; k < n; k++)
        vset(v, k, input(op, v.is_double, r, first + k));
}

static void vsentinel(vals_t v, long n)
{
    for (long k = 0; k < n; k++)
        vset(v, k, SENTINEL);
}

/* the index of the first of @n elements of @v that is not the reduction
 * over ranks @lo..@hi of global index @first + k, or -1 */
static long vbad(vals_t v, MPI_Op op, int lo, int hi, long first, long n)
{
    for (long k = 0; k < n; k++) {
        if (vget(v, k) != expect(op, v.is_double, lo, hi, first + k))
            return k;
    }
    return -1;
}

/* every reduction with @op on @n elements of int or double */
static void reductions(const op_desc_t *d, int is_double, int n)
{
    MPI_Datatype type = is_double ? MPI_DOUBLE : MPI_INT;
    MPI_Op op = d->op;
    long whole = (long)n * size;
    vals_t in = vals_new(is_double, whole), out = vals_new(is_double, whole);
    const char *tn = is_double ? "double" : "int";
    int *rcounts = ints((size_t)size, 0), first = 0;

    for (int in_place = 0; in_place < 2; in_place++) {
        const void *sbuf = in_place ? MPI_IN_PLACE : in.p;

        /* MPI_Reduce, every root (in place only on the root) */
        for (int root = 0; root < size; root++) {
            int here = in_place && rank == root;

            vfill(in, op, rank, 0, n);
            vsentinel(out, n + 1);
            if (here)
                vfill(out, op, rank, 0, n);
            OK(MPI_Reduce(here ? MPI_IN_PLACE : in.p, out.p, n, type, op, root, MPI_COMM_WORLD));
            if (rank == root) {
                CHECK(vbad(out, op, 0, size - 1, 0, n) < 0,
                      "Reduce %s %s count %d root %d in_place %d: element %ld is %g", d->name, tn,
                      n, root, in_place, vbad(out, op, 0, size - 1, 0, n),
                      vget(out, vbad(out, op, 0, size - 1, 0, n)));
                CHECK(vget(out, n) == SENTINEL, "Reduce count %d: wrote past the buffer", n);
            }
        }
        /* MPI_Allreduce */
        vfill(in, op, rank, 0, n);
        vsentinel(out, n + 1);
        if (in_place)
            vfill(out, op, rank, 0, n);
        OK(MPI_Allreduce(sbuf, out.p, n, type, op, MPI_COMM_WORLD));
        CHECK(vbad(out, op, 0, size - 1, 0, n) < 0,
              "Allreduce %s %s count %d in_place %d: element %ld wrong", d->name, tn, n, in_place,
              vbad(out, op, 0, size - 1, 0, n));
        CHECK(vget(out, n) == SENTINEL, "Allreduce count %d: wrote past the buffer", n);
        /* MPI_Scan */
        vsentinel(out, n + 1);
        if (in_place)
            vfill(out, op, rank, 0, n);
        OK(MPI_Scan(sbuf, out.p, n, type, op, MPI_COMM_WORLD));
        CHECK(vbad(out, op, 0, rank, 0, n) < 0, "Scan %s %s count %d in_place %d: element %ld",
              d->name, tn, n, in_place, vbad(out, op, 0, rank, 0, n));
        /* MPI_Exscan (rank 0's result is undefined) */
        vsentinel(out, n + 1);
        if (in_place)
            vfill(out, op, rank, 0, n);
        OK(MPI_Exscan(sbuf, out.p, n, type, op, MPI_COMM_WORLD));
        if (rank > 0)
            CHECK(vbad(out, op, 0, rank - 1, 0, n) < 0,
                  "Exscan %s %s count %d in_place %d: element %ld", d->name, tn, n, in_place,
                  vbad(out, op, 0, rank - 1, 0, n));
        CHECK(vget(out, n) == SENTINEL, "Exscan count %d: wrote past the buffer", n);
        /* MPI_Reduce_scatter_block: rank r gets block r of @n elements */
        vfill(in, op, rank, 0, whole);
        vsentinel(out, whole + 1);
        if (in_place)
            vfill(out, op, rank, 0, whole);
        OK(MPI_Reduce_scatter_block(sbuf, out.p, n, type, op, MPI_COMM_WORLD));
        CHECK(vbad(out, op, 0, size - 1, (long)rank * n, n) < 0,
              "Reduce_scatter_block %s %s count %d in_place %d: element %ld", d->name, tn, n,
              in_place, vbad(out, op, 0, size - 1, (long)rank * n, n));
        if (!in_place)
            CHECK(vget(out, n) == SENTINEL, "Reduce_scatter_block: wrote past the buffer");
        /* MPI_Reduce_scatter: @n elements split unevenly */
        first = 0;
        for (int r = 0; r < size; r++) {
            rcounts[r] = n / size + (r < n % size);
            if (r < rank)
                first += rcounts[r];
        }
        vfill(in, op, rank, 0, n);
        vsentinel(out, n + 1);
        if (in_place)
            vfill(out, op, rank, 0, n);
        OK(MPI_Reduce_scatter(sbuf, out.p, rcounts, type, op, MPI_COMM_WORLD));
        CHECK(vbad(out, op, 0, size - 1, first, rcounts[rank]) < 0,
              "Reduce_scatter %s %s count %d in_place %d: element %ld", d->name, tn, n, in_place,
              vbad(out, op, 0, size - 1, first, rcounts[rank]));
        if (!in_place)
            CHECK(vget(out, rcounts[rank]) == SENTINEL, "Reduce_scatter: wrote past the buffer");
    }
    free(in.p);
    free(out.p);
    free(rcounts);
}

static void case_reduce(void)
{
    for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
        for (int is_double = 0; is_double < 2; is_double++) {
            if (is_double && !ops[o].on_double)
                continue;
            for (int k = 0; k < NCOUNTS; k++) {
                if (counts[k] >= BIG && ops[o].op != MPI_SUM)
                    continue;
                reductions(&ops[o], is_double, counts[k]);
            }
        }
    }
}

/* MINLOC and MAXLOC on MPI_DOUBLE_INT and MPI_2INT: the value of rank r
 * is (3r + i) % 4, its index r; ties go to the lower index */
typedef struct {
    double v;
    int i;
} double_int_t;

typedef struct {
    int v;
    int i;
} int_int_t;

static void loc_expect(int is_max, int lo, int hi, long i, int *v_p, int *idx_p)
{
    *v_p = (int)((3 * lo + i) % 4);
    *idx_p = lo;
    for (int r = lo + 1; r <= hi; r++) {
        int v = (int)((3 * r + i) % 4);

        if (is_max ? v > *v_p : v < *v_p) {
            *v_p = v;
            *idx_p = r;
        }
    }
}

static void case_minloc(void)
{
    enum {
        N = 1000
    };
    double_int_t *din = xmalloc(N * sizeof(*din)), *dout = xmalloc(N * sizeof(*dout));
    int_int_t *iin = xmalloc(N * sizeof(*iin)), *iout = xmalloc(N * sizeof(*iout));

    for (int is_max = 0; is_max < 2; is_max++) {
        MPI_Op op = is_max ? MPI_MAXLOC : MPI_MINLOC;
        const char *name = is_max ? "MAXLOC" : "MINLOC";

        for (long i = 0; i < N; i++) {
            din[i] = (double_int_t){(double)((3 * rank + i) % 4), rank};
            iin[i] = (int_int_t){(int)((3 * rank + i) % 4), rank};
        }
        for (int root = 0; root < size; root++) {
            memset(dout, 0xff, N * sizeof(*dout));
            OK(MPI_Reduce(din, dout, N, MPI_DOUBLE_INT, op, root, MPI_COMM_WORLD));
            for (long i = 0; rank == root && i < N; i++) {
                int v, idx;

                loc_expect(is_max, 0, size - 1, i, &v, &idx);
                if (dout[i].v != v || dout[i].i != idx) {
                    CHECK(0, "%s DOUBLE_INT root %d: element %ld is (%g, %d), not (%d, %d)", name,
                          root, i, dout[i].v, dout[i].i, v, idx);
                    break;
                }
            }
        }
        memset(iout, 0xff, N * sizeof(*iout));
        OK(MPI_Allreduce(iin, iout, N, MPI_2INT, op, MPI_COMM_WORLD));
        memset(dout, 0xff, N * sizeof(*dout));
        OK(MPI_Scan(din, dout, N, MPI_DOUBLE_INT, op, MPI_COMM_WORLD));
        for (long i = 0; i < N; i++) {
            int v, idx, sv, sidx;

            loc_expect(is_max, 0, size - 1, i, &v, &idx);
            loc_expect(is_max, 0, rank, i, &sv, &sidx);
            if (iout[i].v != v || iout[i].i != idx) {
                CHECK(0, "%s 2INT Allreduce: element %ld is (%d, %d), not (%d, %d)", name, i,
                      iout[i].v, iout[i].i, v, idx);
                break;
            }
            if (dout[i].v != sv || dout[i].i != sidx) {
                CHECK(0, "%s DOUBLE_INT Scan: element %ld is (%g, %d), not (%d, %d)", name, i,
                      dout[i].v, dout[i].i, sv, sidx);
                break;
            }
        }
    }
    free(din);
    free(dout);
    free(iin);
    free(iout);
}

/* ---- a non-commutative user op: 2x2 matrix product mod 997 ----------------------- */

typedef struct {
    int a[4]; /* row major */
} mat_t;

static void mat_mul(const mat_t *x, const mat_t *y, mat_t *z)
{
    mat_t t;

    t.a[0] = (x->a[0] * y->a[0] + x->a[1] * y->a[2]) % 997;
    t.a[1] = (x->a[0] * y->a[1] + x->a[1] * y->a[3]) % 997;
    t.a[2] = (x->a[2] * y->a[0] + x->a[3] * y->a[2]) % 997;
    t.a[3] = (x->a[2] * y->a[1] + x->a[3] * y->a[3]) % 997;
    *z = t;
}

static int user_calls_bad;

/* inout[k] = in[k] * inout[k], as the standard's user function must */
static void mat_op(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    if (*len < 0)
        user_calls_bad++;
    for (int k = 0; k < *len; k++)
        mat_mul((const mat_t *)in + k, (mat_t *)inout + k, (mat_t *)inout + k);
}

static mat_t mat_of(int r, long k)
{
    mat_t m = {{(int)((r + k) % 5) + 1, r + 1, (int)(r % 3), 1 + (int)(k % 2)}};

    return m;
}

/* M(lo) * M(lo+1) * ... * M(hi), element @k */
static mat_t mat_expect(int lo, int hi, long k)
{
    mat_t acc = mat_of(lo, k);

    for (int r = lo + 1; r <= hi; r++) {
        mat_t m = mat_of(r, k);

        mat_mul(&acc, &m, &acc);
    }
    return acc;
}

static long mat_bad(const mat_t *m, int lo, int hi, long first, long n)
{
    for (long k = 0; k < n; k++) {
        mat_t e = mat_expect(lo, hi, first + k);

        if (memcmp(&m[k], &e, sizeof(e)) != 0)
            return k;
    }
    return -1;
}

static void case_user_op(void)
{
    static const int ns[] = {0, 1, 1000, 20000}; /* 20000: 320 KB, by rendezvous */
    MPI_Datatype mat;
    MPI_Op op;
    int *rcounts = ints((size_t)size, 0);

    OK(MPI_Type_contiguous(4, MPI_INT, &mat));
    OK(MPI_Type_commit(&mat));
    OK(MPI_Op_create(mat_op, 0, &op));
    {
        /* the order must show: M(0) M(1) != M(1) M(0) */
        mat_t a = mat_of(0, 0), b = mat_of(1, 0), ab, ba;

        mat_mul(&a, &b, &ab);
        mat_mul(&b, &a, &ba);
        CHECK(memcmp(&ab, &ba, sizeof(ab)) != 0, "the test's matrices commute");
    }
    for (size_t t = 0; t < sizeof(ns) / sizeof(ns[0]); t++) {
        long n = ns[t], whole = n * size;
        mat_t *in = xmalloc((size_t)(whole + 1) * sizeof(mat_t));
        mat_t *out = xmalloc((size_t)(whole + 1) * sizeof(mat_t));

        for (int in_place = 0; in_place < 2; in_place++) {
            const void *sbuf = in_place ? MPI_IN_PLACE : in;

            for (long k = 0; k < whole; k++)
                in[k] = mat_of(rank, k);
            for (int root = 0; root < size; root++) {
                int here = in_place && rank == root;

                memset(out, 0, (size_t)(whole + 1) * sizeof(mat_t));
                if (here)
                    memcpy(out, in, (size_t)n * sizeof(mat_t));
                OK(MPI_Reduce(here ? MPI_IN_PLACE : in, out, (int)n, mat, op, root,
                              MPI_COMM_WORLD));
                if (rank == root)
                    CHECK(mat_bad(out, 0, size - 1, 0, n) < 0,
                          "Reduce count %ld root %d in_place %d: matrix %ld out of order", n, root,
                          in_place, mat_bad(out, 0, size - 1, 0, n));
            }
            memcpy(out, in, (size_t)whole * sizeof(mat_t));
            OK(MPI_Allreduce(sbuf, out, (int)n, mat, op, MPI_COMM_WORLD));
            CHECK(mat_bad(out, 0, size - 1, 0, n) < 0,
                  "Allreduce count %ld in_place %d: matrix %ld out of order", n, in_place,
                  mat_bad(out, 0, size - 1, 0, n));
            memcpy(out, in, (size_t)whole * sizeof(mat_t));
            OK(MPI_Scan(sbuf, out, (int)n, mat, op, MPI_COMM_WORLD));
            CHECK(mat_bad(out, 0, rank, 0, n) < 0, "Scan count %ld in_place %d: matrix %ld", n,
                  in_place, mat_bad(out, 0, rank, 0, n));
            memcpy(out, in, (size_t)whole * sizeof(mat_t));
            OK(MPI_Exscan(sbuf, out, (int)n, mat, op, MPI_COMM_WORLD));
            if (rank > 0)
                CHECK(mat_bad(out, 0, rank - 1, 0, n) < 0,
                      "Exscan count %ld in_place %d: matrix %ld", n, in_place,
                      mat_bad(out, 0, rank - 1, 0, n));
            memcpy(out, in, (size_t)whole * sizeof(mat_t));
            OK(MPI_Reduce_scatter_block(sbuf, out, (int)n, mat, op, MPI_COMM_WORLD));
            CHECK(mat_bad(out, 0, size - 1, rank * n, n) < 0,
                  "Reduce_scatter_block count %ld in_place %d: matrix %ld", n, in_place,
                  mat_bad(out, 0, size - 1, rank * n, n));
            long first = 0;

            for (int r = 0; r < size; r++) {
                rcounts[r] = (int)(n / size + (r < n % size));
                if (r < rank)
                    first += rcounts[r];
            }
            memcpy(out, in, (size_t)whole * sizeof(mat_t));
            OK(MPI_Reduce_scatter(sbuf, out, rcounts, mat, op, MPI_COMM_WORLD));
            CHECK(mat_bad(out, 0, size - 1, first, rcounts[rank]) < 0,
                  "Reduce_scatter count %ld in_place %d: matrix %ld", n, in_place,
                  mat_bad(out, 0, size - 1, first, rcounts[rank]));
        }
        free(in);
        free(out);
    }
    CHECK(user_calls_bad == 0, "the user function got a negative length");
    OK(MPI_Op_free(&op));
    OK(MPI_Type_free(&mat));
    free(rcounts);
}

/* ---- derived datatypes ------------------------------------------------------------- */

/* vec: 3 blocks of 2 ints, 4 apart: extent 10 ints, 6 ints of data at
 * offsets 0 1 4 5 8 9 */
static int vec_data_offset(int k)
{
    return (k / 2) * 4 + k % 2;
}

static void case_derived(void)
{
    MPI_Datatype vec, every_other;
    static const int nvs[] = {1, 100, 30000}; /* the last goes by rendezvous */
    int *buf = ints(30000 * 10 + 1, SENTINEL);

    OK(MPI_Type_vector(3, 2, 4, MPI_INT, &vec));
    OK(MPI_Type_commit(&vec));
    /* every_other: 6 ints 2 apart, extent 11 ints */
    OK(MPI_Type_vector(6, 1, 2, MPI_INT, &every_other));
    OK(MPI_Type_commit(&every_other));

    /* Bcast of nv vecs; odd ranks receive them as 6 * nv plain ints */
    for (size_t t = 0; t < sizeof(nvs) / sizeof(nvs[0]); t++) {
        int nv = nvs[t];

        for (int root = 0; root < size; root++) {
            for (int i = 0; i < nv * 10 + 1; i++)
                buf[i] = SENTINEL;
            if (rank == root) {
                for (int e = 0; e < nv; e++)
                    for (int k = 0; k < 6; k++)
                        buf[e * 10 + vec_data_offset(k)] = gval(root, e * 6 + k);
                OK(MPI_Bcast(buf, nv, vec, root, MPI_COMM_WORLD));
            } else if (rank % 2) {
                OK(MPI_Bcast(buf, nv * 6, MPI_INT, root, MPI_COMM_WORLD));
                CHECK(bad_gval(buf, nv * 6, root, 0) < 0, "Bcast %d vec->int root %d: element %ld",
                      nv, root, bad_gval(buf, nv * 6, root, 0));
            } else {
                OK(MPI_Bcast(buf, nv, vec, root, MPI_COMM_WORLD));
                for (int e = 0; e < nv; e++) {
                    for (int i = 0; i < 10; i++) {
                        int k = (i / 4) * 2 + i % 4, data = i % 4 < 2;

                        if (data ? buf[e * 10 + i] != gval(root, e * 6 + k)
                                 : buf[e * 10 + i] != SENTINEL) {
                            CHECK(0, "Bcast %d vec root %d: element %d int %d is %d", nv, root, e,
                                  i, buf[e * 10 + i]);
                            e = nv;
                            break;
                        }
                    }
                }
            }
        }
    }
    /* Gather: each rank sends one vec, the root receives 6 ints per rank,
     * and then one every_other per rank */
    {
        int send[10], *recv = ints((size_t)size * 11 + 1, SENTINEL);

        for (int k = 0; k < 10; k++)
            send[k] = SENTINEL;
        for (int k = 0; k < 6; k++)
            send[vec_data_offset(k)] = gval(rank, k);
        for (int root = 0; root < size; root++) {
            for (int i = 0; i < size * 11 + 1; i++)
                recv[i] = SENTINEL;
            OK(MPI_Gather(send, 1, vec, recv, 6, MPI_INT, root, MPI_COMM_WORLD));
            for (int r = 0; rank == root && r < size; r++)
                CHECK(bad_gval(recv + r * 6, 6, r, 0) < 0, "Gather vec->int root %d: rank %d", root,
                      r);
            for (int i = 0; i < size * 11 + 1; i++)
                recv[i] = SENTINEL;
            OK(MPI_Gather(send, 1, vec, recv, 1, every_other, root, MPI_COMM_WORLD));
            for (int r = 0; rank == root && r < size; r++) {
                for (int i = 0; i < 11; i++) {
                    int want = i % 2 == 0 ? gval(r, i / 2) : SENTINEL;

                    if (recv[r * 11 + i] != want) {
                        CHECK(0, "Gather vec->every_other root %d: rank %d int %d is %d", root, r,
                              i, recv[r * 11 + i]);
                        break;
                    }
                }
            }
        }
        free(recv);
    }
    /* Allreduce with MPI_SUM on vecs: the gaps of the result stay untouched */
    {
        int in[2 * 10], out[2 * 10];

        for (int i = 0; i < 20; i++) {
            in[i] = rank + i;
            out[i] = SENTINEL;
        }
        OK(MPI_Allreduce(in, out, 2, vec, MPI_SUM, MPI_COMM_WORLD));
        for (int i = 0; i < 20; i++) {
            int data = i % 10 % 4 < 2;
            int want = data ? size * (size - 1) / 2 + size * i : SENTINEL;

            CHECK(out[i] == want, "Allreduce vec: int %d is %d, not %d", i, out[i], want);
        }
    }
    OK(MPI_Type_free(&vec));
    OK(MPI_Type_free(&every_other));
    free(buf);
}

/* ---- argument errors under MPI_ERRORS_RETURN --------------------------------------- */

static void expect_class(int rc, int want, const char *what)
{
    int cls = -1;

    MPI_Error_class(rc, &cls);
    CHECK(cls == want, "%s: error class %d, not %d", what, cls, want);
}

static void case_errors(void)
{
    int v[4] = {1, 2, 3, 4}, w[4] = {0}, c4[64];
    double d = 1.0, e = 0.0;
    MPI_Comm world = MPI_COMM_WORLD;

    for (int i = 0; i < 64; i++)
        c4[i] = 1;
    OK(MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN));
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));

    expect_class(MPI_Bcast(v, 1, MPI_INT, size, world), MPI_ERR_ROOT, "Bcast root size");
    expect_class(MPI_Bcast(v, 1, MPI_INT, -1, world), MPI_ERR_ROOT, "Bcast root -1");
    expect_class(MPI_Reduce(v, w, 1, MPI_INT, MPI_SUM, size + 3, world), MPI_ERR_ROOT,
                 "Reduce root size+3");
    expect_class(MPI_Gather(v, 1, MPI_INT, w, 1, MPI_INT, MPI_ROOT, world), MPI_ERR_ROOT,
                 "Gather root MPI_ROOT");
    expect_class(MPI_Scatterv(v, c4, c4, MPI_INT, w, 1, MPI_INT, MPI_PROC_NULL, world),
                 MPI_ERR_ROOT, "Scatterv root MPI_PROC_NULL");

    expect_class(MPI_Reduce(v, w, 1, MPI_INT, MPI_OP_NULL, 0, world), MPI_ERR_OP,
                 "Reduce MPI_OP_NULL");
    expect_class(MPI_Allreduce(&d, &e, 1, MPI_DOUBLE, MPI_BAND, world), MPI_ERR_OP,
                 "Allreduce MPI_BAND on MPI_DOUBLE");
    expect_class(MPI_Allreduce(v, w, 1, MPI_INT, MPI_MAXLOC, world), MPI_ERR_OP,
                 "Allreduce MPI_MAXLOC on MPI_INT");
    expect_class(MPI_Scan(v, w, 1, MPI_INT, MPI_REPLACE, world), MPI_ERR_OP, "Scan MPI_REPLACE");

    expect_class(MPI_Bcast(v, -1, MPI_INT, 0, world), MPI_ERR_COUNT, "Bcast count -1");
    expect_class(MPI_Allreduce(v, w, -2, MPI_INT, MPI_SUM, world), MPI_ERR_COUNT,
                 "Allreduce count -2");
    expect_class(MPI_Gather(v, -1, MPI_INT, w, -1, MPI_INT, 0, world), MPI_ERR_COUNT,
                 "Gather count -1");
    expect_class(MPI_Alltoall(v, -1, MPI_INT, w, -1, MPI_INT, world), MPI_ERR_COUNT,
                 "Alltoall count -1");
    expect_class(MPI_Reduce_scatter_block(v, w, -1, MPI_INT, MPI_SUM, world), MPI_ERR_COUNT,
                 "Reduce_scatter_block count -1");

    expect_class(MPI_Bcast(v, 1, MPI_DATATYPE_NULL, 0, world), MPI_ERR_TYPE,
                 "Bcast MPI_DATATYPE_NULL");
    expect_class(MPI_Allgather(v, 1, MPI_DATATYPE_NULL, w, 1, MPI_INT, world), MPI_ERR_TYPE,
                 "Allgather MPI_DATATYPE_NULL");

    expect_class(MPI_Bcast(NULL, 1, MPI_INT, 0, world), MPI_ERR_BUFFER, "Bcast NULL buffer");
    expect_class(MPI_Bcast(MPI_IN_PLACE, 1, MPI_INT, 0, world), MPI_ERR_BUFFER,
                 "Bcast MPI_IN_PLACE");
    expect_class(MPI_Allreduce(v, MPI_IN_PLACE, 1, MPI_INT, MPI_SUM, world), MPI_ERR_BUFFER,
                 "Allreduce recvbuf MPI_IN_PLACE");
    expect_class(MPI_Allreduce(v, v, 1, MPI_INT, MPI_SUM, world), MPI_ERR_BUFFER,
                 "Allreduce aliased buffers");
    expect_class(MPI_Allgather(v, 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, world), MPI_ERR_BUFFER,
                 "Allgather recvbuf MPI_IN_PLACE");

    expect_class(MPI_Reduce_scatter(v, w, NULL, MPI_INT, MPI_SUM, world), MPI_ERR_ARG,
                 "Reduce_scatter NULL recvcounts");
    expect_class(MPI_Alltoallv(v, NULL, c4, MPI_INT, w, c4, c4, MPI_INT, world), MPI_ERR_ARG,
                 "Alltoallv NULL sendcounts");
    expect_class(MPI_Allgatherv(v, 1, MPI_INT, w, c4, NULL, MPI_INT, world), MPI_ERR_ARG,
                 "Allgatherv NULL displs");

    expect_class(MPI_Barrier(MPI_COMM_NULL), MPI_ERR_COMM, "Barrier MPI_COMM_NULL");
    expect_class(MPI_Allreduce(v, w, 1, MPI_INT, MPI_SUM, MPI_COMM_NULL), MPI_ERR_COMM,
                 "Allreduce MPI_COMM_NULL");

    OK(MPI_Comm_set_errhandler(world, MPI_ERRORS_ARE_FATAL));
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL));
    /* nothing of the failed calls lingers: the communicator still works */
    v[0] = rank + 1;
    OK(MPI_Allreduce(v, w, 1, MPI_INT, MPI_SUM, world));
    CHECK(w[0] == size * (size + 1) / 2, "Allreduce after the errors: %d", w[0]);
}

/* ---- other communicators ------------------------------------------------------------ */

/* MPI_COMM_SELF, and a split of the world into even and odd ranks (the
 * collectives of different communicators never mix) */
static void case_comms(void)
{
    MPI_Comm half;
    int v = rank, w = -1, hrank, hsize;

    OK(MPI_Allreduce(&v, &w, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF));
    CHECK(w == rank, "Allreduce on MPI_COMM_SELF: %d", w);
    OK(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half));
    OK(MPI_Comm_rank(half, &hrank));
    OK(MPI_Comm_size(half, &hsize));
    for (int i = 0; i < 10; i++) {
        int sum = 0;

        OK(MPI_Allreduce(&v, &w, 1, MPI_INT, MPI_SUM, half));
        for (int r = rank % 2; r < size; r += 2)
            sum += r;
        CHECK(w == sum, "Allreduce on the split: %d, not %d", w, sum);
        w = hrank == 0 ? 1000 + i : -1;
        OK(MPI_Bcast(&w, 1, MPI_INT, 0, half));
        CHECK(w == 1000 + i, "Bcast on the split: %d", w);
        OK(MPI_Barrier(MPI_COMM_WORLD));
    }
    OK(MPI_Comm_free(&half));
}

/* A wildcard receive of the program's, posted across collectives of every
 * kind, matches none of their messages (they travel on the communicator's
 * collective context), then the program's own message on a tag the
 * collectives use too. */
static void case_isolation(void)
{
    int got = -1, token = 4242 + rank, v = rank, flag = 1;
    int to = (rank + 1) % size, from = (rank - 1 + size) % size;
    int *all = ints((size_t)size, 0), *back = ints((size_t)size, 0);
    MPI_Request req;
    MPI_Status st;
    MPI_Comm iso; /* the program's only messages on it are the tokens */

    OK(MPI_Comm_dup(MPI_COMM_WORLD, &iso));
    OK(MPI_Irecv(&got, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, iso, &req));
    OK(MPI_Barrier(iso));
    OK(MPI_Bcast(&v, 1, MPI_INT, size - 1, iso));
    OK(MPI_Allreduce(&rank, &v, 1, MPI_INT, MPI_SUM, iso));
    OK(MPI_Reduce(&rank, &v, 1, MPI_INT, MPI_MAX, 0, iso));
    OK(MPI_Gather(&rank, 1, MPI_INT, all, 1, MPI_INT, 0, iso));
    OK(MPI_Scatter(all, 1, MPI_INT, &v, 1, MPI_INT, 0, iso));
    OK(MPI_Allgather(&rank, 1, MPI_INT, all, 1, MPI_INT, iso));
    OK(MPI_Alltoall(all, 1, MPI_INT, back, 1, MPI_INT, iso));
    OK(MPI_Scan(&rank, &v, 1, MPI_INT, MPI_SUM, iso));
    OK(MPI_Exscan(&rank, &v, 1, MPI_INT, MPI_SUM, iso));
    OK(MPI_Reduce_scatter_block(all, &v, 1, MPI_INT, MPI_SUM, iso));
    OK(MPI_Test(&req, &flag, &st));
    CHECK(!flag, "a collective's message matched the program's wildcard receive (%d from %d)", got,
          st.MPI_SOURCE);
    OK(MPI_Barrier(iso)); /* every rank has tested before any sends */
    OK(MPI_Send(&token, 1, MPI_INT, to, 18, iso));
    if (!flag)
        OK(MPI_Wait(&req, &st));
    CHECK(got == 4242 + from && st.MPI_SOURCE == from && st.MPI_TAG == 18,
          "the wildcard receive got %d from %d tag %d", got, st.MPI_SOURCE, st.MPI_TAG);
    OK(MPI_Comm_free(&iso));
    free(all);
    free(back);
}

/* ---- the large-count forms ---------------------------------------------------------- */

/* The MPI_X_c functions share the code of MPI_X: one call of each, with
 * MPI_Count counts and MPI_Aint displacements. */
static void case_large_count(void)
{
    enum {
        N = 300
    };
    MPI_Count *cnts = xmalloc((size_t)size * sizeof(MPI_Count));
    MPI_Aint *displs = xmalloc((size_t)size * sizeof(MPI_Aint));
    int *send = ints((size_t)N * size, 0), *recv = ints((size_t)N * size + 1, SENTINEL);
    int root = size - 1;

    for (int r = 0; r < size; r++) {
        cnts[r] = vcount(N, r);
        displs[r] = vdispl(N, r);
    }
    for (long i = 0; i < (long)N * size; i++)
        send[i] = gval(rank, i);
    OK(MPI_Bcast_c(send, N, MPI_INT, 0, MPI_COMM_SELF));
    OK(MPI_Allreduce_c(send, recv, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    for (long i = 0; i < N; i++) {
        long want = 0;

        for (int r = 0; r < size; r++)
            want += gval(r, i);
        if (recv[i] != (int)want) {
            CHECK(0, "Allreduce_c: element %ld is %d", i, recv[i]);
            break;
        }
    }
    free(recv);
    recv = ints((size_t)vdispl(N, size) + 1, SENTINEL);
    OK(MPI_Gatherv_c(send, cnts[rank], MPI_INT, recv, cnts, displs, MPI_INT, root, MPI_COMM_WORLD));
    for (int r = 0; rank == root && r < size; r++)
        CHECK(bad_gval(recv + displs[r], cnts[r], r, 0) < 0, "Gatherv_c: block of rank %d", r);
    for (int r = 0; r < size; r++)
        cnts[r] = N;
    for (long i = 0; i < (long)N * size; i++)
        send[i] = gval(rank, i);
    OK(MPI_Reduce_scatter_c(MPI_IN_PLACE, send, cnts, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
    CHECK(bad_gval(send, N, size - 1, (long)rank * N) < 0, "Reduce_scatter_c: element %ld",
          bad_gval(send, N, size - 1, (long)rank * N));
    free(cnts);
    free(displs);
    free(send);
    free(recv);
}

/* ---- main ------------------------------------------------------------------------------ */

static const struct {
    const char *name;
    void (*run)(void);
} cases[] = {
    {"barrier", case_barrier},     {"bcast", case_bcast},
    {"gather", case_gather},       {"scatter", case_scatter},
    {"allgather", case_allgather}, {"alltoall", case_alltoall},
    {"reduce", case_reduce},       {"minloc", case_minloc},
    {"user_op", case_user_op},     {"derived", case_derived},
    {"errors", case_errors},       {"comms", case_comms},
    {"isolation", case_isolation}, {"large_count", case_large_count},
};

int main(int argc, char **argv)
{
    int status;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int wanted = argc <= 1;

        for (int a = 1; a < argc; a++)
            wanted |= strcmp(argv[a], cases[i].name) == 0;
        if (!wanted)
            continue;
        cases[i].run();
    }
    /* summed by point-to-point, not by the collectives under test */
    status = check_summary("coll", MPI_COMM_WORLD, 1 << 21);
    MPI_Finalize();
    return status;
}
