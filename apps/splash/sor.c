/*
 * SOR: red-black successive over-relaxation on an M x N grid of doubles
 * (rows x columns, the border included and held fixed).  In each iteration
 * every interior point whose i + j is even (red) is set to the average of
 * its four neighbours, then every odd (black) point.
 *
 * The rows are cut into one band per thread; each band is contiguous and
 * starts on a page boundary, so threads share only the rows at the edges of
 * their bands.  A red point reads only black points and the reverse, so the
 * result does not depend on the thread count: main computes the same
 * iterations on one plain array and compares every point exactly.
 */
#include "postbox/parmacs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

MAIN_ENV

typedef struct global {
    LOCKDEC(id_lock)
    BARDEC(bar)
    int next_id;
    unsigned long start_us, end_us;
} global_t;

/* set by main before the threads start, read-only after */
static global_t *Global;
static long rows, cols, iterations, band_rows, band_stride;
static int nprocs;
static double *grid;

static double *row(long i)
{
    return grid + (i / band_rows) * band_stride + (i % band_rows) * cols;
}

static double initial_value(long i, long j)
{
    if (i == 0)
        return 1.0;
    if (i == rows - 1 || j == 0 || j == cols - 1)
        return 0.0;
    return app_uniform(7, (uint64_t)(i * cols + j));
}

/* update the points of colour PARITY (0 red, 1 black) in rows first..last-1 */
static void relax(long first, long last, long parity)
{
    for (long i = first; i < last; i++) {
        const double *up = row(i - 1), *down = row(i + 1);
        double *g = row(i);
        for (long j = 1 + ((i + 1 + parity) & 1); j < cols - 1; j += 2)
            g[j] = 0.25 * (up[j] + down[j] + g[j - 1] + g[j + 1]);
    }
}

static void slave(void)
{
    int id;
    LOCK(Global->id_lock);
    id = Global->next_id++;
    UNLOCK(Global->id_lock);

    long first = id * band_rows, last = first + band_rows < rows ? first + band_rows : rows;
    for (long i = first; i < last; i++)
        for (long j = 0; j < cols; j++)
            row(i)[j] = initial_value(i, j);
    /* the interior rows of the band */
    first = first < 1 ? 1 : first;
    last = last > rows - 1 ? rows - 1 : last;

    BARRIER(Global->bar, nprocs);
    if (id == 0)
        CLOCK(Global->start_us);
    for (long it = 0; it < iterations; it++) {
        relax(first, last, 0);
        BARRIER(Global->bar, nprocs);
        relax(first, last, 1);
        BARRIER(Global->bar, nprocs);
    }
    if (id == 0)
        CLOCK(Global->end_us);
}

/* the same iterations on one plain array, compared point by point */
static int verify(void)
{
    double *g = malloc((size_t)(rows * cols) * sizeof *g);
    if (g == NULL) {
        fprintf(stderr, "sor: no memory for the check\n");
        return 0;
    }
    for (long i = 0; i < rows; i++)
        for (long j = 0; j < cols; j++)
            g[i * cols + j] = initial_value(i, j);
    for (long it = 0; it < iterations; it++)
        for (long parity = 0; parity < 2; parity++)
            for (long i = 1; i < rows - 1; i++)
                for (long j = 1; j < cols - 1; j++)
                    if (((i + j) & 1) == parity)
                        g[i * cols + j] = 0.25 * (g[(i - 1) * cols + j] + g[(i + 1) * cols + j] +
                                                  g[i * cols + j - 1] + g[i * cols + j + 1]);
    int ok = 1;
    for (long i = 0; ok && i < rows; i++)
        for (long j = 0; ok && j < cols; j++)
            if (row(i)[j] != g[i * cols + j]) {
                fprintf(stderr, "sor: wrong result at (%ld, %ld): %.17g, sequentially %.17g\n", i,
                        j, row(i)[j], g[i * cols + j]);
                ok = 0;
            }
    free(g);
    return ok;
}

int main(int argc, char **argv)
{
    app_option_t options[] = {
        {'m', "rows", &rows, 130, 2002, 3, 100000, "grid rows, the border included"},
        {'n', "cols", &cols, 66, 1002, 3, 100000, "grid columns, the border included"},
        {'i', "iterations", &iterations, 20, 100, 1, 1000000, "red-black iterations"},
    };
    nprocs = app_parse(argc, argv, "sor", "red-black SOR on a grid", options, 3);
    band_rows = (rows + nprocs - 1) / nprocs;
    band_stride =
        (long)(app_page_round((size_t)(band_rows * cols) * sizeof(double)) / sizeof(double));
    size_t bytes = (size_t)(nprocs * band_stride) * sizeof(double);

    MAIN_INITENV(app_shared_bytes(bytes + sizeof(global_t), 2));
    Global = G_MALLOC(sizeof(global_t));
    grid = app_page_align(G_MALLOC(bytes + app_page_size()));
    LOCKINIT(Global->id_lock);
    BARINIT(Global->bar, nprocs);
    Global->next_id = 0;

    for (int i = 1; i < nprocs; i++)
        CREATE(slave);
    slave();
    WAIT_FOR_END(nprocs - 1);

    int ok = verify();
    char params[96];
    snprintf(params, sizeof params, "rows=%ld cols=%ld iterations=%ld", rows, cols, iterations);
    app_report("sor", nprocs, params, Global->end_us - Global->start_us, ok);
    MAIN_EXIT(ok ? 0 : 1);
}
