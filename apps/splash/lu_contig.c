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
 * A barrier follows the first two phases (lu_common.h says why the third
 * needs none).  main checks L U x against A x.
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

    lu_fill_owned(id, nprocs, n, nb, b, b, block);
    BARRIER(Global->bar, nprocs);
    if (id == 0)
        CLOCK(Global->start_us);
    lu_factor_owned(id, nprocs, nb, b, b, block, barrier);
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
