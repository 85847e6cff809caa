/*
 * pbt-mpi-coll-algorithms: the algorithms src/mpi/coll.c chooses by
 * message size, on both sides of each threshold, against a serial
 * reference computed here: Allreduce and Reduce split over the ranks
 * (reduce-scatter, then allgather or gather), Reduce_scatter(_block) by
 * recursive halving, Bcast by scatter and allgather, Allgather by
 * recursive doubling.  Counts not divisible by the number of ranks, fewer
 * elements than ranks, MPI_IN_PLACE, a vector of doubles (whose gaps must
 * stay untouched), a non-commutative user op (which must keep rank
 * order) and a commutative one, and every rank's Allreduce result
 * bitwise the same when floating-point sums round.  Run under `postbox
 * run -n N [--nodes K]`, any N >= 1; rank 0 prints "coll-algorithms: ok".
 *
 *   pbt-mpi-coll-algorithms [case ...]   run the named cases (default: all)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int size;

/* element counts on both sides of the thresholds of coll.c (32 KB, 64 KB
 * and 512 KB in doubles: 4096, 8192 and 65536), odd, and some below the
 * number of ranks */
static const int counts[] = {1, 2, 3, 7, 1000, 2047, 2051, 16390, 70001};
#define NCOUNTS ((int)(sizeof(counts) / sizeof(counts[0])))

/* the fill of the gaps of the vector type and of buffers past their data */
#define SENTINEL (-12345.0)

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);

    if (p == NULL) {
        printf("FAIL rank %d: out of memory for %zu bytes\n", rank, n);
        exit(1);
    }
    return p;
}

/* the value rank @r contributes as element @i: integers, so that sums in
 * any order are exact */
static double val(int r, long i)
{
    return (double)((r + 1) * 1000 + i % 977);
}

/* the sum of val over the ranks */
static double sum_val(long i)
{
    double s = 0;

    for (int r = 0; r < size; r++)
        s += val(r, i);
    return s;
}

static int ival(int r, long i)
{
    return (int)((i * 31 + r * 17) % 1001);
}

static int max_ival(long i)
{
    int m = ival(0, i);

    for (int r = 1; r < size; r++)
        m = ival(r, i) > m ? ival(r, i) : m;
    return m;
}

static double *doubles(long n, int r)
{
    double *p = xmalloc((size_t)n * sizeof(double));

    for (long i = 0; i < n; i++)
        p[i] = r >= 0 ? val(r, i) : SENTINEL;
    return p;
}

/* the first index of the @n doubles at @p that is not the sum over the
 * ranks of elements @first.., or -1 */
static long bad_sum(const double *p, long n, long first)
{
    for (long i = 0; i < n; i++) {
        if (p[i] != sum_val(first + i))
            return i;
    }
    return -1;
}

/* ---- Allreduce --------------------------------------------------------------------------------
 */

static void case_allreduce(void)
{
    for (int k = 0; k < NCOUNTS; k++) {
        int n = counts[k];
        double *in = doubles(n, rank), *out = doubles(n, -1);
        int *iin = xmalloc((size_t)n * sizeof(int)), *iout = xmalloc((size_t)n * sizeof(int));
        long bad;

        OK(MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
        bad = bad_sum(out, n, 0);
        CHECK(bad < 0, "Allreduce SUM of %d doubles: [%ld] = %g, expected %g", n, bad,
              bad < 0 ? 0 : out[bad], bad < 0 ? 0 : sum_val(bad));
        /* in place */
        OK(MPI_Allreduce(MPI_IN_PLACE, in, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
        bad = bad_sum(in, n, 0);
        CHECK(bad < 0, "Allreduce SUM in place of %d doubles: [%ld] = %g, expected %g", n, bad,
              bad < 0 ? 0 : in[bad], bad < 0 ? 0 : sum_val(bad));
        for (long i = 0; i < n; i++)
            iin[i] = ival(rank, i);
        OK(MPI_Allreduce(iin, iout, n, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
        for (long i = 0; i < n; i++) {
            if (iout[i] != max_ival(i)) {
                CHECK(0, "Allreduce MAX of %d ints: [%ld] = %d, expected %d", n, i, iout[i],
                      max_ival(i));
                break;
            }
        }
        free(in);
        free(out);
        free(iin);
        free(iout);
    }
}

/* Values whose sums round differently in different orders: every rank
 * must still get the same bits (checked by point-to-point at rank 0). */
static void case_allreduce_same_bits(void)
{
    static const int ns[] = {5, 2051, 70001};

    for (int k = 0; k < 3; k++) {
        int n = ns[k];
        double *in = xmalloc((size_t)n * sizeof(double)),
               *out = xmalloc((size_t)n * sizeof(double));
        float *fin = xmalloc((size_t)n * sizeof(float)), *fout = xmalloc((size_t)n * sizeof(float));

        for (long i = 0; i < n; i++) {
            in[i] = 1.0 / (double)(3 + rank + i % 13) * (1.0 + (double)i * 1e-7);
            fin[i] = (float)in[i] * (rank % 2 ? 1e7f : 1e-3f);
        }
        OK(MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
        OK(MPI_Allreduce(fin, fout, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
        if (rank == 0) {
            double *theirs = xmalloc((size_t)n * sizeof(double));
            float *ftheirs = xmalloc((size_t)n * sizeof(float));

            for (int r = 1; r < size; r++) {
                MPI_Recv(theirs, n, MPI_DOUBLE, r, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Recv(ftheirs, n, MPI_FLOAT, r, 78, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                CHECK(memcmp(theirs, out, (size_t)n * sizeof(double)) == 0,
                      "Allreduce of %d doubles: rank %d's result differs from rank 0's", n, r);
                CHECK(memcmp(ftheirs, fout, (size_t)n * sizeof(float)) == 0,
                      "Allreduce of %d floats: rank %d's result differs from rank 0's", n, r);
            }
            free(theirs);
            free(ftheirs);
        } else {
            MPI_Send(out, n, MPI_DOUBLE, 0, 77, MPI_COMM_WORLD);
            MPI_Send(fout, n, MPI_FLOAT, 0, 78, MPI_COMM_WORLD);
        }
        free(in);
        free(out);
        free(fin);
        free(fout);
    }
}

/* ---- Reduce ------------------------------------------------------------------------------------
 */

static void case_reduce(void)
{
    for (int k = 0; k < NCOUNTS; k++) {
        int n = counts[k];

        for (int root = 0; root < size; root++) {
            double *in = doubles(n, rank), *out = doubles(n, -1);
            long bad;

            OK(MPI_Reduce(in, out, n, MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD));
            if (rank == root) {
                bad = bad_sum(out, n, 0);
                CHECK(bad < 0, "Reduce SUM of %d doubles to %d: [%ld] = %g, expected %g", n, root,
                      bad, bad < 0 ? 0 : out[bad], bad < 0 ? 0 : sum_val(bad));
            } else {
                CHECK(out[0] == SENTINEL && out[n - 1] == SENTINEL,
                      "Reduce to %d wrote the receive buffer of rank %d", root, rank);
            }
            /* in place at the root */
            OK(MPI_Reduce(rank == root ? MPI_IN_PLACE : in, rank == root ? in : out, n, MPI_DOUBLE,
                          MPI_SUM, root, MPI_COMM_WORLD));
            if (rank == root) {
                bad = bad_sum(in, n, 0);
                CHECK(bad < 0, "Reduce SUM in place of %d doubles to %d: [%ld] = %g", n, root, bad,
                      bad < 0 ? 0 : in[bad]);
            } else {
                CHECK(in[n - 1] == val(rank, n - 1), "Reduce changed the send buffer of rank %d",
                      rank);
            }
            free(in);
            free(out);
        }
    }
}

/* ---- Reduce_scatter(_block) --------------------------------------------------------------------
 */

static void case_reduce_scatter_block(void)
{
    static const int blocks[] = {1, 3, 255, 1001, 9001};

    for (int k = 0; k < 5; k++) {
        int b = blocks[k];
        long total = (long)b * size;
        double *in = doubles(total, rank), *out = doubles(b + 1, -1);
        long bad;

        OK(MPI_Reduce_scatter_block(in, out, b, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
        bad = bad_sum(out, b, (long)rank * b);
        CHECK(bad < 0, "Reduce_scatter_block of %d: [%ld] = %g, expected %g", b, bad,
              bad < 0 ? 0 : out[bad], bad < 0 ? 0 : sum_val((long)rank * b + bad));
        CHECK(out[b] == SENTINEL, "Reduce_scatter_block of %d wrote past the block", b);
        OK(MPI_Reduce_scatter_block(MPI_IN_PLACE, in, b, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
        bad = bad_sum(in, b, (long)rank * b);
        CHECK(bad < 0, "Reduce_scatter_block in place of %d: [%ld] = %g", b, bad,
              bad < 0 ? 0 : in[bad]);
        free(in);
        free(out);
    }
}

/* blocks of unequal lengths, some empty */
static void case_reduce_scatter(void)
{
    static const int scales[] = {1, 5, 2777};

    for (int k = 0; k < 3; k++) {
        int *rcounts = xmalloc((size_t)size * sizeof(int));
        long total = 0, first = 0;

        for (int r = 0; r < size; r++) {
            rcounts[r] = ((r * 7 + k) % 5) * scales[k];
            if (r < rank)
                first += rcounts[r];
            total += rcounts[r];
        }
        if (total == 0)
            rcounts[size - 1] = 1, total = 1;
        double *in = doubles(total, rank), *out = doubles(rcounts[rank] + 1, -1);
        long bad;

        OK(MPI_Reduce_scatter(in, out, rcounts, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
        bad = bad_sum(out, rcounts[rank], first);
        CHECK(bad < 0, "Reduce_scatter (scale %d): [%ld] = %g, expected %g", scales[k], bad,
              bad < 0 ? 0 : out[bad], bad < 0 ? 0 : sum_val(first + bad));
        CHECK(out[rcounts[rank]] == SENTINEL, "Reduce_scatter wrote past the block");
        OK(MPI_Reduce_scatter(MPI_IN_PLACE, in, rcounts, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
        bad = bad_sum(in, rcounts[rank], first);
        CHECK(bad < 0, "Reduce_scatter in place (scale %d): [%ld] = %g", scales[k], bad,
              bad < 0 ? 0 : in[bad]);
        free(in);
        free(out);
        free(rcounts);
    }
}

/* ---- Bcast and Allgather ------------------------------------------------------------------- */

static void case_bcast(void)
{
    static const int ns[] = {1, 3, 7, 16389, 70001};

    for (int k = 0; k < 5; k++) {
        int n = ns[k];

        for (int root = 0; root < size; root++) {
            double *buf = doubles(n, rank == root ? root : -1);
            long i;

            OK(MPI_Bcast(buf, n, MPI_DOUBLE, root, MPI_COMM_WORLD));
            for (i = 0; i < n && buf[i] == val(root, i); i++)
                ;
            CHECK(i == n, "Bcast of %d doubles from %d: [%ld] = %g, expected %g", n, root, i,
                  i < n ? buf[i] : 0, i < n ? val(root, i) : 0);
            free(buf);
        }
    }
}

static void case_allgather(void)
{
    static const int ns[] = {1, 3, 100, 2049, 20000};

    for (int k = 0; k < 5; k++) {
        int n = ns[k];
        long total = (long)n * size, i;
        int *mine = xmalloc((size_t)n * sizeof(int)), *all = xmalloc((size_t)total * sizeof(int));

        for (i = 0; i < n; i++)
            mine[i] = ival(rank, i) + rank * 5000;
        for (int in_place = 0; in_place < 2; in_place++) {
            for (i = 0; i < total; i++)
                all[i] = in_place && i / n == rank ? mine[i % n] : -1;
            OK(MPI_Allgather(in_place ? MPI_IN_PLACE : mine, n, MPI_INT, all, n, MPI_INT,
                             MPI_COMM_WORLD));
            for (i = 0; i < total && all[i] == ival((int)(i / n), i % n) + (int)(i / n) * 5000; i++)
                ;
            CHECK(i == total, "Allgather%s of %d ints: [%ld] = %d", in_place ? " in place" : "", n,
                  i, i < total ? all[i] : 0);
        }
        free(mine);
        free(all);
    }
}

/* ---- a vector of doubles --------------------------------------------------------------------- */

/* MPI_Type_vector(2, 1, 3, MPI_DOUBLE): an element is doubles 0 and 3 of
 * 4; 1 and 2 are gaps that no collective may write */
#define VSPAN 4

static int vec_used(long d)
{
    return d % VSPAN == 0 || d % VSPAN == 3;
}

/* the index of the element-th used double */
static long vec_at(long e)
{
    return e / 2 * VSPAN + (e % 2 ? 3 : 0);
}

static double *vec_buf(long n, int r)
{
    double *p = xmalloc((size_t)n * VSPAN * sizeof(double));

    for (long d = 0; d < n * VSPAN; d++)
        p[d] = SENTINEL;
    for (long e = 0; r >= 0 && e < 2 * n; e++)
        p[vec_at(e)] = val(r, e);
    return p;
}

/* -1, or the first double of the @n elements at @p that is wrong: a gap
 * not SENTINEL, a used one not the sum (@sum) or val(@r, .) */
static long vec_bad(const double *p, long n, long first, int sum, int r)
{
    for (long d = 0; d < n * VSPAN; d++) {
        long e = 2 * first + d / VSPAN * 2 + (d % VSPAN == 3);
        double want = !vec_used(d) ? SENTINEL : sum ? sum_val(e) : val(r, e);

        if (p[d] != want)
            return d;
    }
    return -1;
}

static void case_vector_type(void)
{
    static const int ns[] = {1, 5, 1029, 40001};
    MPI_Datatype v;

    OK(MPI_Type_vector(2, 1, 3, MPI_DOUBLE, &v));
    OK(MPI_Type_commit(&v));
    for (int k = 0; k < 4; k++) {
        int n = ns[k];
        double *in = vec_buf(n, rank), *out = vec_buf(n, -1);
        long bad;

        OK(MPI_Allreduce(in, out, n, v, MPI_SUM, MPI_COMM_WORLD));
        bad = vec_bad(out, n, 0, 1, 0);
        CHECK(bad < 0, "Allreduce of %d vectors: double %ld is %g", n, bad, bad < 0 ? 0 : out[bad]);
        for (int root = 0; root<size; root += size> 2 ? size - 1 : 1) {
            double *rout = vec_buf(n, -1);

            OK(MPI_Reduce(in, rout, n, v, MPI_SUM, root, MPI_COMM_WORLD));
            bad = rank == root ? vec_bad(rout, n, 0, 1, 0) : -1;
            CHECK(bad < 0, "Reduce of %d vectors to %d: double %ld is %g", n, root, bad,
                  bad < 0 ? 0 : rout[bad]);
            free(rout);
            double *b = vec_buf(n, rank == root ? root : -1);
            OK(MPI_Bcast(b, n, v, root, MPI_COMM_WORLD));
            bad = vec_bad(b, n, 0, 0, root);
            CHECK(bad < 0, "Bcast of %d vectors from %d: double %ld is %g", n, root, bad,
                  bad < 0 ? 0 : b[bad]);
            free(b);
        }
        free(in);
        free(out);
        /* Reduce_scatter_block: n elements each (at most 1029: the
         * algorithm does not depend on the size) */
        n = n < 1029 ? n : 1029;
        in = vec_buf((long)n * size, rank);
        out = vec_buf(n, -1);
        OK(MPI_Reduce_scatter_block(in, out, n, v, MPI_SUM, MPI_COMM_WORLD));
        bad = vec_bad(out, n, (long)rank * n, 1, 0);
        CHECK(bad < 0, "Reduce_scatter_block of %d vectors: double %ld is %g", n, bad,
              bad < 0 ? 0 : out[bad]);
        free(in);
        free(out);
    }
    OK(MPI_Type_free(&v));
}

/* ---- user ops ------------------------------------------------------------------------------ */

/* An affine map x -> m x + c (mod 2^32); "f op g" is f, then g: associative
 * and not commutative, so the result tells the order of the ranks. */
typedef struct {
    uint32_t m, c;
} affine_t;

static void affine_then(void *in, void *inout, int *len, MPI_Datatype *type)
{
    const affine_t *f = in;
    affine_t *g = inout;

    for (int i = 0; i < *len; i++) {
        affine_t r = {f[i].m * g[i].m, f[i].c * g[i].m + g[i].c};

        g[i] = r;
    }
}

static affine_t affine_of(int r, long i)
{
    return (affine_t){(uint32_t)(3 + 2 * r + (i % 5)), (uint32_t)(r * 7 + i)};
}

/* ranks [@lo, @hi)'s maps at @i, composed in rank order */
static affine_t affine_ranks(long i, int lo, int hi)
{
    affine_t acc = affine_of(lo, i);

    for (int r = lo + 1; r < hi; r++) {
        affine_t g = affine_of(r, i);

        acc = (affine_t){acc.m * g.m, acc.c * g.m + g.c};
    }
    return acc;
}

static long affine_bad(const affine_t *p, long n, long first)
{
    for (long i = 0; i < n; i++) {
        affine_t want = affine_ranks(first + i, 0, size);

        if (p[i].m != want.m || p[i].c != want.c)
            return i;
    }
    return -1;
}

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *type)
{
    const double *a = in;
    double *b = inout;

    for (int i = 0; i < *len; i++)
        b[i] += a[i];
}

static void case_user_ops(void)
{
    static const int ns[] = {3, 2051, 70001};
    MPI_Datatype pair;
    MPI_Op then, sum;

    OK(MPI_Type_contiguous(2, MPI_UINT32_T, &pair));
    OK(MPI_Type_commit(&pair));
    OK(MPI_Op_create(affine_then, 0, &then));
    OK(MPI_Op_create(user_sum, 1, &sum));
    for (int k = 0; k < 3; k++) {
        int n = ns[k];
        affine_t *in = xmalloc((size_t)n * size * sizeof(affine_t));
        affine_t *out = xmalloc((size_t)n * size * sizeof(affine_t));
        double *d = doubles(n, rank), *dout = doubles(n, -1);
        long bad;
        int *rcounts = xmalloc((size_t)size * sizeof(int));

        for (long i = 0; i < (long)n * size; i++)
            in[i] = affine_of(rank, i);
        OK(MPI_Allreduce(in, out, n, pair, then, MPI_COMM_WORLD));
        bad = affine_bad(out, n, 0);
        CHECK(bad < 0, "Allreduce of %d with a non-commutative op: [%ld] out of rank order", n,
              bad);
        for (int root = 0; root < size; root++) {
            memset(out, 0, (size_t)n * sizeof(affine_t));
            OK(MPI_Reduce(in, out, n, pair, then, root, MPI_COMM_WORLD));
            bad = rank == root ? affine_bad(out, n, 0) : -1;
            CHECK(bad < 0, "Reduce of %d to %d with a non-commutative op: [%ld] out of rank order",
                  n, root, bad);
        }
        OK(MPI_Reduce_scatter_block(in, out, n, pair, then, MPI_COMM_WORLD));
        bad = affine_bad(out, n, (long)rank * n);
        CHECK(bad < 0, "Reduce_scatter_block of %d with a non-commutative op: [%ld]", n, bad);
        for (int r = 0; r < size; r++)
            rcounts[r] = n * (r % 2 + 1) / 2;
        long first = 0;
        for (int r = 0; r < rank; r++)
            first += rcounts[r];
        OK(MPI_Reduce_scatter(in, out, rcounts, pair, then, MPI_COMM_WORLD));
        bad = affine_bad(out, rcounts[rank], first);
        CHECK(bad < 0, "Reduce_scatter of %d with a non-commutative op: [%ld]", n, bad);
        /* a commutative user op takes the split algorithms, called on parts */
        OK(MPI_Allreduce(d, dout, n, MPI_DOUBLE, sum, MPI_COMM_WORLD));
        bad = bad_sum(dout, n, 0);
        CHECK(bad < 0, "Allreduce of %d with a commutative user op: [%ld] = %g", n, bad,
              bad < 0 ? 0 : dout[bad]);
        OK(MPI_Reduce(d, dout, n, MPI_DOUBLE, sum, size - 1, MPI_COMM_WORLD));
        bad = rank == size - 1 ? bad_sum(dout, n, 0) : -1;
        CHECK(bad < 0, "Reduce of %d with a commutative user op: [%ld] = %g", n, bad,
              bad < 0 ? 0 : dout[bad]);
        free(in);
        free(out);
        free(d);
        free(dout);
        free(rcounts);
    }
    OK(MPI_Op_free(&then));
    OK(MPI_Op_free(&sum));
    OK(MPI_Type_free(&pair));
}

static const struct {
    const char *name;
    void (*run)(void);
} cases[] = {
    {"allreduce", case_allreduce},
    {"allreduce_same_bits", case_allreduce_same_bits},
    {"reduce", case_reduce},
    {"reduce_scatter_block", case_reduce_scatter_block},
    {"reduce_scatter", case_reduce_scatter},
    {"bcast", case_bcast},
    {"allgather", case_allgather},
    {"vector_type", case_vector_type},
    {"user_ops", case_user_ops},
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
        if (wanted)
            cases[i].run();
    }
    status = check_summary("coll-algorithms", MPI_COMM_WORLD, 1 << 21);
    MPI_Finalize();
    return status;
}
