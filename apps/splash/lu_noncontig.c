/*
 * LU, non-contiguous blocks: the same blocked LU factorization (no
 * pivoting) and 2-D scatter of B x B blocks as lu_contig.c, but the matrix
 * is one N x N row-major array: a block's rows are N doubles apart, so the
 * blocks of different threads share pages (the false sharing seed 004
 * found in LU-n).  main checks L U x against A x.
 */
#include "postbox/parmacs.h"

#include "lu_common.h"

MAIN_ENV

typedef struct global {
    LOCKDEC(id_lock)
    BARDEC(bar)
    int next_id;
    unsigned long start_us, end_us;
} global_t;

/* set by main before the threads start, read-only after */
static global_t *Global;
static long n, b, nb; /* matrix size, block size, blocks per side */
static int nprocs;
static double *matrix; /* n x n, row-major, in shared memory */

static double *block(long bi, long bj)
{
    return matrix + bi * b * n + bj * b;
}

static double element(long i, long j)
{
    return matrix[i * n + j];
}

static void barrier(void)
{
    BARRIER(Global->bar, nprocs);
}

static void slave(void)
{
    int id;
    LOCK(Global->id_lock);
    id = Global->next_id++;
    UNLOCK(Global->id_lock);

    lu_fill_owned(id, nprocs, n, nb, b, n, block);
    BARRIER(Global->bar, nprocs);
    if (id == 0)
        CLOCK(Global->start_us);
    lu_factor_owned(id, nprocs, nb, b, n, block, barrier);
    if (id == 0)
        CLOCK(Global->end_us);
}

int main(int argc, char **argv)
{
    app_option_t options[] = {
        {'n', "size", &n, 128, 1024, 1, 16384, "the matrix is N x N"},
        {'b', "block", &b, 16, 32, 1, 16384, "blocks are B x B (B must divide N)"},
    };
    nprocs = app_parse(argc, argv, "lu_noncontig", "blocked LU in one N x N array", options, 2);
    if (n % b != 0) {
        fprintf(stderr, "lu_noncontig: the block size %ld does not divide %ld\n", b, n);
        return 1;
    }
    nb = n / b;
    size_t bytes = (size_t)(n * n) * sizeof(double);

    MAIN_INITENV(app_shared_bytes(bytes + sizeof(global_t), 2));
    Global = G_MALLOC(sizeof(global_t));
    matrix = app_page_align(G_MALLOC(bytes + app_page_size()));
    LOCKINIT(Global->id_lock);
    BARINIT(Global->bar, nprocs);
    Global->next_id = 0;

    for (int i = 1; i < nprocs; i++)
        CREATE(slave);
    slave();
    WAIT_FOR_END(nprocs - 1);

    int ok = lu_verify("lu_noncontig", n, element);
    char params[96];
    snprintf(params, sizeof params, "n=%ld block=%ld", n, b);
    app_report("lu_noncontig", nprocs, params, Global->end_us - Global->start_us, ok);
    MAIN_EXIT(ok ? 0 : 1);
}
