/*
 * lu_common.h: what the two LU applications share: the block kernels of a
 * blocked LU factorization without pivoting, the owner of a block, the
 * matrix and the check.  The two differ only in where a block lives:
 * lu_contig.c stores each block contiguously (leading dimension = block
 * size), lu_noncontig.c keeps one N x N array (leading dimension N).
 *
 * Included by one application source each; nothing here holds state.
 */
#ifndef POSTBOX_SPLASH_LU_COMMON_H
#define POSTBOX_SPLASH_LU_COMMON_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "app.h"

/* A(i, j): uniform in [-1, 1), plus n on the diagonal so that no pivoting
 * is needed. */
static double lu_initial(long n, long i, long j)
{
    double v = 2.0 * app_uniform(11, (uint64_t)(i * n + j)) - 1.0;
    return i == j ? v + (double)n : v;
}

/* The process grid rows x cols = nprocs, rows the largest divisor of
 * nprocs not above its square root; block (I, J) belongs to thread
 * (I mod rows) * cols + (J mod cols). */
static int lu_grid_rows(int nprocs)
{
    int rows = 1;
    for (int r = 1; r * r <= nprocs; r++)
        if (nprocs % r == 0)
            rows = r;
    return rows;
}

static int lu_owner(long bi, long bj, int nprocs)
{
    int rows = lu_grid_rows(nprocs), cols = nprocs / rows;
    return (int)(bi % rows) * cols + (int)(bj % cols);
}

/* D = L U in place (L unit lower), D b x b with leading dimension ld */
static void lu_factor_diagonal(double *d, long b, long ld)
{
    for (long k = 0; k < b; k++)
        for (long i = k + 1; i < b; i++) {
            double l = d[i * ld + k] /= d[k * ld + k];
            for (long j = k + 1; j < b; j++)
                d[i * ld + j] -= l * d[k * ld + j];
        }
}

/* A = L^-1 A, L the unit lower triangle of the factored diagonal block D */
static void lu_solve_row_block(const double *d, long ldd, double *a, long lda, long b)
{
    for (long k = 0; k < b; k++)
        for (long i = k + 1; i < b; i++) {
            double l = d[i * ldd + k];
            for (long j = 0; j < b; j++)
                a[i * lda + j] -= l * a[k * lda + j];
        }
}

/* A = A U^-1, U the upper triangle of the factored diagonal block D */
static void lu_solve_column_block(const double *d, long ldd, double *a, long lda, long b)
{
    for (long i = 0; i < b; i++)
        for (long k = 0; k < b; k++) {
            double x = a[i * lda + k] /= d[k * ldd + k];
            for (long j = k + 1; j < b; j++)
                a[i * lda + j] -= x * d[k * ldd + j];
        }
}

/* A -= L U for b x b blocks */
static void lu_update_block(const double *l, long ldl, const double *u, long ldu, double *a,
                            long lda, long b)
{
    for (long i = 0; i < b; i++)
        for (long k = 0; k < b; k++) {
            double x = l[i * ldl + k];
            for (long j = 0; j < b; j++)
                a[i * lda + j] -= x * u[k * ldu + j];
        }
}

/* Where the blocks live: the first element of block (BI, BJ); the rows of
 * a block are the application's leading dimension apart. */
typedef double *(*lu_block_fn)(long bi, long bj);

/* Thread ID of NPROCS writes the initial values of the blocks it owns, of
 * the NB x NB blocks of B x B (leading dimension LD) of an N x N matrix. */
static void lu_fill_owned(int id, int nprocs, long n, long nb, long b, long ld, lu_block_fn block)
{
    for (long bi = 0; bi < nb; bi++)
        for (long bj = 0; bj < nb; bj++)
            if (lu_owner(bi, bj, nprocs) == id)
                for (long i = 0; i < b; i++)
                    for (long j = 0; j < b; j++)
                        block(bi, bj)[i * ld + j] = lu_initial(n, bi * b + i, bj * b + j);
}

/* Thread ID's part of every step of the factorization (the file comments
 * of lu_contig.c and lu_noncontig.c).  BARRIER, which every thread calls
 * the same number of times, follows the diagonal block's factorization
 * and the perimeter's solves; none follows the trailing update, as in
 * SPLASH-2's LU: step K + 1's diagonal and perimeter blocks are updated,
 * then factored or solved, by their one owner, and no block written in
 * step K + 1 before its first barrier is read by the update of step K. */
static void lu_factor_owned(int id, int nprocs, long nb, long b, long ld, lu_block_fn block,
                            void (*barrier)(void))
{
    for (long k = 0; k < nb; k++) {
        const double *d = block(k, k);
        if (lu_owner(k, k, nprocs) == id)
            lu_factor_diagonal(block(k, k), b, ld);
        barrier();
        for (long j = k + 1; j < nb; j++) {
            if (lu_owner(k, j, nprocs) == id)
                lu_solve_row_block(d, ld, block(k, j), ld, b);
            if (lu_owner(j, k, nprocs) == id)
                lu_solve_column_block(d, ld, block(j, k), ld, b);
        }
        barrier();
        for (long i = k + 1; i < nb; i++)
            for (long j = k + 1; j < nb; j++)
                if (lu_owner(i, j, nprocs) == id)
                    lu_update_block(block(i, k), ld, block(k, j), ld, block(i, j), ld, b);
    }
}

/* L (U x) against A x for a random x: the factors ELEMENT(i, j) (L below
 * the diagonal with a unit diagonal, U on and above it) reproduce A to
 * within rounding.  Returns 1 when they do; prints the worst row if not. */
static int lu_verify(const char *app, long n, double (*element)(long i, long j))
{
    double *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
    int ok = x != NULL && y != NULL;
    if (!ok)
        fprintf(stderr, "%s: no memory for the check\n", app);
    for (long j = 0; ok && j < n; j++)
        x[j] = 2.0 * app_uniform(12, (uint64_t)j) - 1.0;
    for (long i = 0; ok && i < n; i++) { /* y = U x */
        double s = 0.0;
        for (long j = i; j < n; j++)
            s += element(i, j) * x[j];
        y[i] = s;
    }
    double worst = 0.0, scale = 0.0;
    long worst_row = -1;
    for (long i = 0; ok && i < n; i++) { /* L y against A x */
        double lu = y[i], ax = 0.0;
        for (long j = 0; j < i; j++)
            lu += element(i, j) * y[j];
        for (long j = 0; j < n; j++)
            ax += lu_initial(n, i, j) * x[j];
        scale = fmax(scale, fabs(ax));
        if (!(fabs(lu - ax) <= worst)) {
            worst = fabs(lu - ax);
            worst_row = i;
        }
    }
    if (ok && !(worst <= 1e-10 * scale)) {
        fprintf(stderr,
                "%s: wrong result: row %ld of L U x is off A x by %.3g (|A x| up to %.3g)\n", app,
                worst_row, worst, scale);
        ok = 0;
    }
    free(x);
    free(y);
    return ok;
}

#endif /* POSTBOX_SPLASH_LU_COMMON_H */
