/*
 * MATMULT: C = A * B for dense n x n matrices of doubles, with a block row
 * distribution.  The rows are cut into `blocks` blocks of n / blocks rows;
 * every block of every matrix starts on a page boundary, and thread t owns
 * blocks t, t + P, t + 2P, ...: it initializes its blocks of A, B and C and
 * computes its blocks of C, so no page of C is written by two threads.
 *
 * The entries of A and B are small integers, so every product and sum is
 * exact; main checks C x = A (B x) exactly for an integer vector x.
 */
#include "postbox/parmacs.h"

#include <stdio.h>
#include <stdlib.h>

#include "app.h"

MAIN_ENV

#define TILE 64 /* rows of B a thread streams through at once */

typedef struct global {
    LOCKDEC(id_lock)
    BARDEC(bar)
    int next_id;
    unsigned long start_us, end_us;
} global_t;

/* set by main before the threads start, read-only after */
static global_t *Global;
static long n, blocks, block_rows, block_stride;
static int nprocs;
static double *A, *B, *C;

static double *row(double *m, long i)
{
    return m + (i / block_rows) * block_stride + (i % block_rows) * n;
}

static void init_block(long blk)
{
    for (long i = blk * block_rows; i < (blk + 1) * block_rows; i++) {
        double *a = row(A, i), *b = row(B, i), *c = row(C, i);
        for (long j = 0; j < n; j++) {
            a[j] = (double)app_int(1, (uint64_t)(i * n + j), -4, 4);
            b[j] = (double)app_int(2, (uint64_t)(i * n + j), -4, 4);
            c[j] = 0.0;
        }
    }
}

static void multiply_block(long blk)
{
    for (long k0 = 0; k0 < n; k0 += TILE) {
        long k1 = k0 + TILE < n ? k0 + TILE : n;
        for (long i = blk * block_rows; i < (blk + 1) * block_rows; i++) {
            const double *a = row(A, i);
            double *c = row(C, i);
            for (long k = k0; k < k1; k++) {
                const double aik = a[k], *b = row(B, k);
                for (long j = 0; j < n; j++)
                    c[j] += aik * b[j];
            }
        }
    }
}

static void slave(void)
{
    int id;
    LOCK(Global->id_lock);
    id = Global->next_id++;
    UNLOCK(Global->id_lock);

    for (long blk = id; blk < blocks; blk += nprocs)
        init_block(blk);
    BARRIER(Global->bar, nprocs);
    if (id == 0)
        CLOCK(Global->start_us);
    for (long blk = id; blk < blocks; blk += nprocs)
        multiply_block(blk);
    BARRIER(Global->bar, nprocs);
    if (id == 0)
        CLOCK(Global->end_us);
}

/* C x == A (B x) for an integer x, exactly (every value is an integer). */
static int verify(void)
{
    double *x = malloc((size_t)n * sizeof *x), *bx = malloc((size_t)n * sizeof *bx);
    int ok = x != NULL && bx != NULL;
    for (long j = 0; ok && j < n; j++)
        x[j] = (double)app_int(3, (uint64_t)j, -8, 8);
    for (long i = 0; ok && i < n; i++) {
        double s = 0.0;
        for (long j = 0; j < n; j++)
            s += row(B, i)[j] * x[j];
        bx[i] = s;
    }
    for (long i = 0; ok && i < n; i++) {
        double cx = 0.0, abx = 0.0;
        for (long j = 0; j < n; j++) {
            cx += row(C, i)[j] * x[j];
            abx += row(A, i)[j] * bx[j];
        }
        if (cx != abx) {
            fprintf(stderr, "matmult: wrong result: row %ld of C x is %.17g, of A B x %.17g\n", i,
                    cx, abx);
            ok = 0;
        }
    }
    free(x);
    free(bx);
    return ok;
}

int main(int argc, char **argv)
{
    app_option_t options[] = {
        {'n', "size", &n, 128, 1024, 1, 8192, "the matrices are N x N"},
        {'b', "blocks", &blocks, 8, 16, 1, 8192, "blocks of rows (must divide N)"},
    };
    nprocs = app_parse(argc, argv, "matmult", "C = A B with a block row distribution", options, 2);
    if (n % blocks != 0) {
        fprintf(stderr, "matmult: %ld blocks do not divide %ld rows\n", blocks, n);
        return 1;
    }
    block_rows = n / blocks;
    block_stride =
        (long)(app_page_round((size_t)(block_rows * n) * sizeof(double)) / sizeof(double));
    size_t matrix = (size_t)(blocks * block_stride) * sizeof(double);

    MAIN_INITENV(app_shared_bytes(3 * matrix + sizeof(global_t), 4));
    Global = G_MALLOC(sizeof(global_t));
    A = app_page_align(G_MALLOC(matrix + app_page_size()));
    B = app_page_align(G_MALLOC(matrix + app_page_size()));
    C = app_page_align(G_MALLOC(matrix + app_page_size()));
    LOCKINIT(Global->id_lock);
    BARINIT(Global->bar, nprocs);
    Global->next_id = 0;

    for (int i = 1; i < nprocs; i++)
        CREATE(slave);
    slave();
    WAIT_FOR_END(nprocs - 1);

    int ok = verify();
    char params[96];
    snprintf(params, sizeof params, "n=%ld blocks=%ld", n, blocks);
    app_report("matmult", nprocs, params, Global->end_us - Global->start_us, ok);
    MAIN_EXIT(ok ? 0 : 1);
}
