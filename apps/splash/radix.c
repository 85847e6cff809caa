/*
 * RADIX: least-significant-digit radix sort of N integer keys in
 * [0, max_key), one digit of log2(radix) bits per pass.  The keys are cut
 * into one contiguous, page-aligned part per thread.  Each pass:
 *
 *   1. every thread counts the digits of its keys into its own histogram
 *      (one page-aligned row of a P x radix array);
 *   2. a parallel prefix: thread t sums the histograms over its share of
 *      the digits, then, given the sums of the shares before its own,
 *      writes for each of its digits d and each thread u the position where
 *      u's keys with digit d start;
 *   3. every thread moves its keys, in order, to those positions in the
 *      other key array (writes that land all over it: the permutation
 *      phase's false sharing that seed 004 describes).
 *
 * A barrier follows each phase.  Each thread's keys of one digit follow
 * those of the threads before it, so every pass is stable and the result
 * is the sorted keys; main compares it with a counting sort of the same
 * keys.
 */
#include "postbox/parmacs.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "app.h"

MAIN_ENV

#define MAX_THREADS 256

typedef struct global {
    LOCKDEC(id_lock)
    BARDEC(bar)
    int next_id;
    unsigned long start_us, end_us;
    long share_sum[MAX_THREADS]; /* keys in each thread's share of the digits */
} global_t;

/* set by main before the threads start, read-only after */
static global_t *Global;
static long nkeys, radix, max_key, part, passes, digit_bits, hist_stride;
static int nprocs;
static int *keys[2];  /* the keys and the array they move to, swapped each pass */
static long *hist;    /* nprocs rows of radix counts, each row page-aligned */
static long *offsets; /* nprocs rows: where thread t's keys of digit d go */

static int initial_key(long i)
{
    return (int)app_int(21, (uint64_t)i, 0, max_key - 1);
}

static void slave(void)
{
    int id;
    LOCK(Global->id_lock);
    id = Global->next_id++;
    UNLOCK(Global->id_lock);

    long first = id * part < nkeys ? id * part : nkeys;
    long last = first + part < nkeys ? first + part : nkeys;
    long d_share = (radix + nprocs - 1) / nprocs;
    long d_first = id * d_share < radix ? id * d_share : radix;
    long d_last = d_first + d_share < radix ? d_first + d_share : radix;
    long *mine = hist + id * hist_stride;
    long *position = malloc((size_t)radix * sizeof *position);
    if (position == NULL) {
        fprintf(stderr, "radix: thread %d: no memory\n", id);
        _exit(2); /* not exit: the globals are read-only while threads run */
    }
    for (long i = first; i < last; i++)
        keys[0][i] = initial_key(i);

    BARRIER(Global->bar, nprocs);
    if (id == 0)
        CLOCK(Global->start_us);
    for (long pass = 0; pass < passes; pass++) {
        const int *from = keys[pass & 1];
        int *to = keys[(pass + 1) & 1];
        long shift = pass * digit_bits, mask = radix - 1;

        for (long d = 0; d < radix; d++)
            mine[d] = 0;
        for (long i = first; i < last; i++)
            mine[(from[i] >> shift) & mask]++;
        BARRIER(Global->bar, nprocs);

        long sum = 0;
        for (long d = d_first; d < d_last; d++)
            for (int t = 0; t < nprocs; t++)
                sum += hist[t * hist_stride + d];
        Global->share_sum[id] = sum;
        BARRIER(Global->bar, nprocs);

        long base = 0;
        for (int t = 0; t < id; t++)
            base += Global->share_sum[t];
        for (long d = d_first; d < d_last; d++)
            for (int t = 0; t < nprocs; t++) {
                offsets[t * hist_stride + d] = base;
                base += hist[t * hist_stride + d];
            }
        BARRIER(Global->bar, nprocs);

        for (long d = 0; d < radix; d++)
            position[d] = offsets[id * hist_stride + d];
        for (long i = first; i < last; i++)
            to[position[(from[i] >> shift) & mask]++] = from[i];
        BARRIER(Global->bar, nprocs);
    }
    if (id == 0)
        CLOCK(Global->end_us);
    free(position);
}

/* the sorted keys against a counting sort of the same keys */
static int verify(void)
{
    long *count = calloc((size_t)max_key, sizeof *count);
    if (count == NULL) {
        fprintf(stderr, "radix: no memory for the check\n");
        return 0;
    }
    for (long i = 0; i < nkeys; i++)
        count[initial_key(i)]++;
    const int *sorted = keys[passes & 1];
    long i = 0;
    int ok = 1;
    for (long key = 0; ok && key < max_key; key++)
        for (long c = 0; ok && c < count[key]; c++, i++)
            if (sorted[i] != key) {
                fprintf(stderr, "radix: wrong result: key %ld is %d, the counting sort's %ld\n", i,
                        sorted[i], key);
                ok = 0;
            }
    free(count);
    return ok;
}

int main(int argc, char **argv)
{
    app_option_t options[] = {
        {'n', "keys", &nkeys, 65536, 1048576, 1, 1L << 28, "keys to sort"},
        {'r', "radix", &radix, 1024, 1024, 2, 1L << 20, "the radix (a power of 2)"},
        {'m', "max-key", &max_key, 524288, 524288, 1, 1L << 31, "keys are in [0, M)"},
    };
    nprocs = app_parse(argc, argv, "radix", "parallel radix sort", options, 3);
    if ((radix & (radix - 1)) != 0) {
        fprintf(stderr, "radix: -r %ld: the radix must be a power of 2\n", radix);
        return 1;
    }
    if (nprocs > MAX_THREADS) {
        fprintf(stderr, "radix: -p %d: at most %d threads\n", nprocs, MAX_THREADS);
        return 1;
    }
    for (digit_bits = 0; (1L << digit_bits) < radix; digit_bits++)
        ;
    for (passes = 1; passes * digit_bits < 31 && (1L << (passes * digit_bits)) < max_key; passes++)
        ;
    long page_keys = (long)(app_page_size() / sizeof(int));
    part = ((nkeys + nprocs - 1) / nprocs + page_keys - 1) / page_keys * page_keys;
    hist_stride = (long)(app_page_round((size_t)radix * sizeof(long)) / sizeof(long));
    size_t key_bytes = (size_t)(part * nprocs) * sizeof(int);
    size_t hist_bytes = (size_t)(nprocs * hist_stride) * sizeof(long);

    MAIN_INITENV(app_shared_bytes(2 * key_bytes + 2 * hist_bytes + sizeof(global_t), 5));
    Global = G_MALLOC(sizeof(global_t));
    keys[0] = app_page_align(G_MALLOC(key_bytes + app_page_size()));
    keys[1] = app_page_align(G_MALLOC(key_bytes + app_page_size()));
    hist = app_page_align(G_MALLOC(hist_bytes + app_page_size()));
    offsets = app_page_align(G_MALLOC(hist_bytes + app_page_size()));
    LOCKINIT(Global->id_lock);
    BARINIT(Global->bar, nprocs);
    Global->next_id = 0;

    for (int i = 1; i < nprocs; i++)
        CREATE(slave);
    slave();
    WAIT_FOR_END(nprocs - 1);

    int ok = verify();
    char params[128];
    snprintf(params, sizeof params, "keys=%ld radix=%ld max_key=%ld passes=%ld", nkeys, radix,
             max_key, passes);
    app_report("radix", nprocs, params, Global->end_us - Global->start_us, ok);
    MAIN_EXIT(ok ? 0 : 1);
}
