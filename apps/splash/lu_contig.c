/*
 * LU, contiguous blocks: the blocked LU factorization (no pivoting) of a
 * dense N x N matrix of doubles, cut into B x B blocks that are dealt to
 * the threads in a 2-D scatter (lu_common.h).  Each block is stored
 * contiguously, and all blocks of one thread lie together in a region of
 * its own that starts on a page boundary: a thread writes only its own
 * pages.
 *
 * Step K: the owner of the diagonal block (K, K) factors it; the owners of
 * the blocks of row K and column K right of and below it solve them with
 * it; the owners of the blocks (I, J), I, J > K, subtract L(I, K) U(K, J).
 * A barrier follows each phase.  main checks L U x against A x.
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
static double **blocks; /* nb x nb pointers to the blocks, in shared memory */

static double *block(long bi, long bj)
{
    return blocks[bi * nb + bj];
}

static double element(long i, long j)
{
    return block(i / b, j / b)[(i % b) * b + j % b];
}

static void slave(void)
{
    int id;
    LOCK(Global->id_lock);
    id = Global->next_id++;
    UNLOCK(Global->id_lock);

    for (long bi = 0; bi < nb; bi++)
        for (long bj = 0; bj < nb; bj++)
            if (lu_owner(bi, bj, nprocs) == id)
                for (long i = 0; i < b; i++)
                    for (long j = 0; j < b; j++)
                        block(bi, bj)[i * b + j] = lu_initial(n, bi * b + i, bj * b + j);
    BARRIER(Global->bar, nprocs);
    if (id == 0)
        CLOCK(Global->start_us);
    for (long k = 0; k < nb; k++) {
        const double *d = block(k, k);
        if (lu_owner(k, k, nprocs) == id)
            lu_factor_diagonal(block(k, k), b, b);
        BARRIER(Global->bar, nprocs);
        for (long j = k + 1; j < nb; j++) {
            if (lu_owner(k, j, nprocs) == id)
                lu_solve_row_block(d, b, block(k, j), b, b);
            if (lu_owner(j, k, nprocs) == id)
                lu_solve_column_block(d, b, block(j, k), b, b);
        }
        BARRIER(Global->bar, nprocs);
        for (long i = k + 1; i < nb; i++)
            for (long j = k + 1; j < nb; j++)
                if (lu_owner(i, j, nprocs) == id)
                    lu_update_block(block(i, k), b, block(k, j), b, block(i, j), b, b);
        BARRIER(Global->bar, nprocs);
    }
    if (id == 0)
        CLOCK(Global->end_us);
}

int main(int argc, char **argv)
{
    app_option_t options[] = {
        {'n', "size", &n, 128, 2048, 1, 16384, "the matrix is N x N"},
        {'b', "block", &b, 16, 128, 1, 16384, "blocks are B x B (B must divide N)"},
    };
    nprocs = app_parse(argc, argv, "lu_contig", "blocked LU, each block contiguous", options, 2);
    if (n % b != 0) {
        fprintf(stderr, "lu_contig: the block size %ld does not divide %ld\n", b, n);
        return 1;
    }
    nb = n / b;

    /* each thread's region: its blocks, one after another */
    long *owned = calloc((size_t)nprocs, sizeof *owned);
    if (owned == NULL)
        return 1;
    for (long bi = 0; bi < nb; bi++)
        for (long bj = 0; bj < nb; bj++)
            owned[lu_owner(bi, bj, nprocs)]++;
    size_t data = 0;
    for (int t = 0; t < nprocs; t++)
        data += app_page_round((size_t)(owned[t] * b * b) * sizeof(double));

    size_t table = (size_t)(nb * nb) * sizeof(double *);
    MAIN_INITENV(app_shared_bytes(data + table + sizeof(global_t), 2 + nprocs));
    Global = G_MALLOC(sizeof(global_t));
    blocks = G_MALLOC(table);
    for (int t = 0; t < nprocs; t++) {
        size_t bytes = app_page_round((size_t)(owned[t] * b * b) * sizeof(double));
        double *region = app_page_align(G_MALLOC(bytes + app_page_size()));
        long next = 0;
        for (long bi = 0; bi < nb; bi++)
            for (long bj = 0; bj < nb; bj++)
                if (lu_owner(bi, bj, nprocs) == t)
                    blocks[bi * nb + bj] = region + (next++) * b * b;
    }
    free(owned);
    LOCKINIT(Global->id_lock);
    BARINIT(Global->bar, nprocs);
    Global->next_id = 0;

    for (int i = 1; i < nprocs; i++)
        CREATE(slave);
    slave();
    WAIT_FOR_END(nprocs - 1);

    int ok = lu_verify("lu_contig", n, element);
    char params[96];
    snprintf(params, sizeof params, "n=%ld block=%ld", n, b);
    app_report("lu_contig", nprocs, params, Global->end_us - Global->start_us, ok);
    MAIN_EXIT(ok ? 0 : 1);
}
