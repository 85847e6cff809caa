/*
 * FFT: the six-step 1-D FFT of n = 2^m complex doubles (m even), the data
 * seen as an r x r matrix, r = sqrt(n).  With j = j1 + r j2 and
 * k = k2 + r k1,
 *
 *   X[k] = sum_j1 w_r^(j1 k1) w_n^(j1 k2) sum_j2 x[j1 + r j2] w_r^(j2 k2)
 *
 * so, x held as the matrix M[j2][j1]: (1) transpose M into T[j1][j2],
 * (2) FFT every row of T, (3) multiply T[j1][k2] by w_n^(j1 k2), (4)
 * transpose into M[k2][j1], (5) FFT every row of M, (6) transpose into
 * T[k1][k2], which is X in order.  The rows of both matrices (and of the
 * twiddle factors of step 3) are cut into one page-aligned band per thread;
 * a thread writes only its own rows, and the three transposes are the
 * all-to-all phases.  Barriers separate the steps.
 *
 * main checks the result against a plain radix-2 FFT of the whole input.
 */
#include "postbox/parmacs.h"

#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

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
static long log2n, n, r, band_rows, band_stride;
static int nprocs;
static double complex *mat, *trans, *twiddle; /* r x r, in bands */
static double complex *roots;                 /* w_r^k, k < r / 2 */

static double complex *row(double complex *m, long i)
{
    return m + (i / band_rows) * band_stride + (i % band_rows) * r;
}

static double complex initial_value(long j)
{
    return CMPLX(2.0 * app_uniform(31, (uint64_t)j) - 1.0,
                 2.0 * app_uniform(32, (uint64_t)j) - 1.0);
}

/* w_len^k = exp(-2 pi i k / len) */
static double complex root_of_unity(long k, long len)
{
    double angle = -2.0 * M_PI * (double)k / (double)len;
    return CMPLX(cos(angle), sin(angle));
}

/* in-place radix-2 FFT of a[0..len-1]; w[k] = w_len^k, k < len / 2 */
static void fft_radix2(double complex *a, long len, const double complex *w)
{
    for (long i = 1, j = 0; i < len; i++) {
        long bit = len >> 1;
        for (; j & bit; bit >>= 1)
            j ^= bit;
        j |= bit;
        if (i < j) {
            double complex tmp = a[i];
            a[i] = a[j];
            a[j] = tmp;
        }
    }
    for (long half = 1; half < len; half <<= 1) {
        long step = len / (2 * half);
        for (long start = 0; start < len; start += 2 * half)
            for (long k = 0; k < half; k++) {
                double complex u = a[start + k], v = a[start + k + half] * w[k * step];
                a[start + k] = u + v;
                a[start + k + half] = u - v;
            }
    }
}

/* DST's rows first..last-1 = the columns of SRC */
static void transpose(double complex *dst, double complex *src, long first, long last)
{
    for (long j0 = 0; j0 < r; j0 += 16)
        for (long i = first; i < last; i++) {
            double complex *d = row(dst, i);
            for (long j = j0; j < j0 + 16 && j < r; j++)
                d[j] = row(src, j)[i];
        }
}

static void slave(void)
{
    int id;
    LOCK(Global->id_lock);
    id = Global->next_id++;
    UNLOCK(Global->id_lock);

    long first = id * band_rows < r ? id * band_rows : r;
    long last = first + band_rows < r ? first + band_rows : r;
    for (long i = first; i < last; i++)
        for (long j = 0; j < r; j++) {
            row(mat, i)[j] = initial_value(j + r * i);
            row(twiddle, i)[j] = root_of_unity((i * j) % n, n);
        }

    BARRIER(Global->bar, nprocs);
    if (id == 0)
        CLOCK(Global->start_us);
    transpose(trans, mat, first, last);
    BARRIER(Global->bar, nprocs);
    for (long i = first; i < last; i++) {
        double complex *t = row(trans, i);
        const double complex *w = row(twiddle, i);
        fft_radix2(t, r, roots);
        for (long j = 0; j < r; j++)
            t[j] *= w[j];
    }
    BARRIER(Global->bar, nprocs);
    transpose(mat, trans, first, last);
    BARRIER(Global->bar, nprocs);
    for (long i = first; i < last; i++)
        fft_radix2(row(mat, i), r, roots);
    BARRIER(Global->bar, nprocs);
    transpose(trans, mat, first, last);
    BARRIER(Global->bar, nprocs);
    if (id == 0)
        CLOCK(Global->end_us);
}

/* against a radix-2 FFT of the whole input */
static int verify(void)
{
    double complex *a = malloc((size_t)n * sizeof *a), *w = calloc((size_t)n / 2 + 1, sizeof *w);
    if (a == NULL || w == NULL) {
        fprintf(stderr, "fft: no memory for the check\n");
        free(a);
        free(w);
        return 0;
    }
    for (long j = 0; j < n; j++)
        a[j] = initial_value(j);
    for (long k = 0; k < n / 2; k++)
        w[k] = root_of_unity(k, n);
    fft_radix2(a, n, w);
    double worst = 0.0, scale = 0.0;
    long worst_k = 0;
    for (long k = 0; k < n; k++) {
        double err = cabs(row(trans, k / r)[k % r] - a[k]);
        scale = fmax(scale, cabs(a[k]));
        if (!(err <= worst)) {
            worst = err;
            worst_k = k;
        }
    }
    free(a);
    free(w);
    if (!(worst <= 1e-10 * scale)) {
        fprintf(stderr, "fft: wrong result: X[%ld] is off by %.3g (|X| up to %.3g)\n", worst_k,
                worst, scale);
        return 0;
    }
    return 1;
}

int main(int argc, char **argv)
{
    app_option_t options[] = {
        {'m', "log2n", &log2n, 12, 20, 2, 28, "n = 2^M complex points (M even)"},
    };
    nprocs = app_parse(argc, argv, "fft", "six-step 1-D complex FFT", options, 1);
    if (log2n % 2 != 0) {
        fprintf(stderr, "fft: -m %ld: the six-step FFT here needs an even M\n", log2n);
        return 1;
    }
    n = 1L << log2n;
    r = 1L << (log2n / 2);
    band_rows = (r + nprocs - 1) / nprocs;
    band_stride = (long)(app_page_round((size_t)(band_rows * r) * sizeof(double complex)) /
                         sizeof(double complex));
    size_t matrix = (size_t)(nprocs * band_stride) * sizeof(double complex);
    size_t root_bytes = (size_t)(r / 2 + 1) * sizeof(double complex);

    MAIN_INITENV(app_shared_bytes(3 * matrix + root_bytes + sizeof(global_t), 5));
    Global = G_MALLOC(sizeof(global_t));
    mat = app_page_align(G_MALLOC(matrix + app_page_size()));
    trans = app_page_align(G_MALLOC(matrix + app_page_size()));
    twiddle = app_page_align(G_MALLOC(matrix + app_page_size()));
    roots = G_MALLOC(root_bytes);
    for (long k = 0; k < r / 2; k++)
        roots[k] = root_of_unity(k, r);
    LOCKINIT(Global->id_lock);
    BARINIT(Global->bar, nprocs);
    Global->next_id = 0;

    for (int i = 1; i < nprocs; i++)
        CREATE(slave);
    slave();
    WAIT_FOR_END(nprocs - 1);

    int ok = verify();
    char params[64];
    snprintf(params, sizeof params, "points=%ld", n);
    app_report("fft", nprocs, params, Global->end_us - Global->start_us, ok);
    MAIN_EXIT(ok ? 0 : 1);
}
