/*
 * OCEAN (contiguous partitions), simplified: a barotropic vorticity model
 * on a square basin, the elliptic solve by multigrid with red-black
 * Gauss-Seidel smoothing.  Each time step:
 *
 *   1. solve  lap(psi) = q  for the stream function psi (Dirichlet walls)
 *      with `cycles` multigrid V-cycles, starting from the last step's psi;
 *   2. add the residual's squared norm to a global sum under a lock;
 *   3. step the vorticity explicitly:
 *      q += dt (-J(psi, q) + nu lap(q) + F - r q)   (F: a fixed forcing).
 *
 * The grids are cell-centred, N x N with a ring of wall cells that hold 0
 * (the wall condition enters the operator: a cell next to a wall counts
 * that neighbour as minus itself).  Multigrid: V(2, 2) cycles, residuals
 * restricted by averaging four cells, corrections prolonged bilinearly,
 * down to 2 x 2 cells, solved there by 10 sweeps.
 *
 * Partitioning: the rows of every grid of every level are cut into one
 * band per thread, each band contiguous and page-aligned; a thread updates
 * only its own rows and reads its neighbours' edge rows.  Barriers separate
 * the phases (each half-sweep of red-black smoothing is one).
 *
 * main checks the result two ways: the same computation run on one band
 * in private memory gives the same psi and q, bit for bit (no reduction
 * feeds the computation, and a red-black sweep does not depend on the
 * order of its updates); and the final psi solves lap(psi) = q to within
 * the tolerance, computed by plain code of its own.  See README.md for
 * what this keeps and leaves of SPLASH-2's OCEAN.
 */
#include "postbox/parmacs.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

MAIN_ENV

#define MAX_LEVELS 24
#define MAX_STEPS 100000
#define PRE_SWEEPS 2
#define POST_SWEEPS 2
#define COARSE_SWEEPS 10
#define DT 0.002
#define VISCOSITY 1e-5
#define FRICTION 0.1
/* the check's bound on the final solve's relative residual: this factor
 * per V-cycle (measured: 0.05 to 0.06 per cycle, 0.005 after one cycle
 * of a 1026 x 1026 grid's first step) */
#define RESIDUAL_PER_CYCLE 0.1

typedef struct global {
    LOCKDEC(id_lock)
    LOCKDEC(sum_lock)
    BARDEC(bar)
    int next_id;
    unsigned long start_us, end_us;
} global_t;

/* one multigrid level: (m + 2)^2 cells, rows in bands */
typedef struct level {
    long m;           /* interior cells per side */
    long band_rows;   /* rows per band (the wall rows included) */
    long band_stride; /* doubles from one band to the next */
    double h2;        /* the cell width squared */
    double *u, *f, *r;
} level_t;

/* one run of the model: the parallel one in shared memory, or main's
 * reference on one band in private memory */
typedef struct ocean {
    int nthreads;
    int parallel; /* 1: barriers and the lock between threads */
    int nlevels;
    level_t lev[MAX_LEVELS];
    double *q, *qnew; /* vorticity, shaped as level 0 */
    double *forcing;  /* shaped as level 0 */
    double *residual; /* per solve (steps + 1): the residual's squared norm */
} ocean_t;

/* set by main before the threads start, read-only after */
static global_t *Global;
static long grid_n, steps, cycles;
static int nprocs;
static ocean_t Ocean;

static double *row(const level_t *l, double *g, long i)
{
    return g + (i / l->band_rows) * l->band_stride + (i % l->band_rows) * (l->m + 2);
}

static void sync_threads(const ocean_t *o)
{
    if (o->parallel)
        BARRIER(Global->bar, o->nthreads);
}

/* the interior rows thread ID owns on level L: first..last-1 */
static void own_rows(const level_t *l, int id, long *first, long *last)
{
    long a = id * l->band_rows, b = a + l->band_rows;
    *first = a < 1 ? 1 : a;
    *last = b > l->m + 1 ? l->m + 1 : b;
}

static double wall_count(const level_t *l, long i, long j)
{
    return 4.0 + (i == 1) + (i == l->m) + (j == 1) + (j == l->m);
}

/* lap(g) at (i, j), the wall cells counting as minus the cell */
static double laplacian(const level_t *l, double *g, long i, long j)
{
    const double *up = row(l, g, i - 1), *mid = row(l, g, i), *down = row(l, g, i + 1);
    return (up[j] + down[j] + mid[j - 1] + mid[j + 1] - wall_count(l, i, j) * mid[j]) / l->h2;
}

static void smooth(const ocean_t *o, const level_t *l, int id, int sweeps)
{
    long first, last;
    own_rows(l, id, &first, &last);
    for (int s = 0; s < sweeps; s++)
        for (long parity = 0; parity < 2; parity++) {
            for (long i = first; i < last; i++) {
                const double *up = row(l, l->u, i - 1), *down = row(l, l->u, i + 1);
                double *u = row(l, l->u, i);
                const double *f = row(l, l->f, i);
                for (long j = 1 + ((i + 1 + parity) & 1); j <= l->m; j += 2)
                    u[j] = (up[j] + down[j] + u[j - 1] + u[j + 1] - l->h2 * f[j]) /
                           wall_count(l, i, j);
            }
            sync_threads(o);
        }
}

static void compute_residual(const level_t *l, int id)
{
    long first, last;
    own_rows(l, id, &first, &last);
    for (long i = first; i < last; i++) {
        double *r = row(l, l->r, i);
        const double *f = row(l, l->f, i);
        for (long j = 1; j <= l->m; j++)
            r[j] = f[j] - laplacian(l, l->u, i, j);
    }
}

/* the correction of coarse cell (i, j), a wall cell as minus its mirror */
static double coarse_value(const level_t *c, long i, long j)
{
    double sign = 1.0;
    if (i == 0 || i == c->m + 1) {
        i = i == 0 ? 1 : c->m;
        sign = -sign;
    }
    if (j == 0 || j == c->m + 1) {
        j = j == 0 ? 1 : c->m;
        sign = -sign;
    }
    return sign * row(c, c->u, i)[j];
}

static void vcycle(const ocean_t *o, int level, int id)
{
    const level_t *l = &o->lev[level];
    if (level == o->nlevels - 1) {
        smooth(o, l, id, COARSE_SWEEPS);
        return;
    }
    const level_t *c = &o->lev[level + 1];
    long first, last;

    smooth(o, l, id, PRE_SWEEPS);
    compute_residual(l, id);
    sync_threads(o);
    own_rows(c, id, &first, &last);
    for (long i = first; i < last; i++) {
        const double *r1 = row(l, l->r, 2 * i - 1), *r2 = row(l, l->r, 2 * i);
        double *f = row(c, c->f, i), *u = row(c, c->u, i);
        for (long j = 1; j <= c->m; j++) {
            f[j] = 0.25 * (r1[2 * j - 1] + r1[2 * j] + r2[2 * j - 1] + r2[2 * j]);
            u[j] = 0.0;
        }
    }
    sync_threads(o);
    vcycle(o, level + 1, id);
    own_rows(l, id, &first, &last);
    for (long i = first; i < last; i++) {
        double *u = row(l, l->u, i);
        long ci = (i + 1) / 2, di = (i & 1) ? -1 : 1;
        for (long j = 1; j <= l->m; j++) {
            long cj = (j + 1) / 2, dj = (j & 1) ? -1 : 1;
            u[j] += 0.5625 * coarse_value(c, ci, cj) + 0.1875 * coarse_value(c, ci + di, cj) +
                    0.1875 * coarse_value(c, ci, cj + dj) +
                    0.0625 * coarse_value(c, ci + di, cj + dj);
        }
    }
    sync_threads(o);
    smooth(o, l, id, POST_SWEEPS);
}

static double initial_vorticity(const level_t *l, long i, long j)
{
    double x = ((double)i - 0.5) / (double)l->m, y = ((double)j - 0.5) / (double)l->m;
    return sin(M_PI * x) * sin(M_PI * y) +
           0.01 * (app_uniform(41, (uint64_t)(i * (l->m + 2) + j)) - 0.5);
}

static void initialize(const ocean_t *o, int id)
{
    for (int k = 0; k < o->nlevels; k++) {
        const level_t *l = &o->lev[k];
        long first = id * l->band_rows, last = first + l->band_rows;
        last = last > l->m + 2 ? l->m + 2 : last;
        for (long i = first; i < last; i++) {
            memset(row(l, l->u, i), 0, (size_t)(l->m + 2) * sizeof(double));
            memset(row(l, l->r, i), 0, (size_t)(l->m + 2) * sizeof(double));
            if (k > 0)
                memset(row(l, l->f, i), 0, (size_t)(l->m + 2) * sizeof(double));
        }
    }
    const level_t *l = &o->lev[0];
    long first = id * l->band_rows, last = first + l->band_rows;
    last = last > l->m + 2 ? l->m + 2 : last;
    for (long i = first; i < last; i++)
        for (long j = 0; j < l->m + 2; j++) {
            int wall = i == 0 || i == l->m + 1 || j == 0 || j == l->m + 1;
            double y = ((double)j - 0.5) / (double)l->m;
            row(l, o->q, i)[j] = wall ? 0.0 : initial_vorticity(l, i, j);
            row(l, o->qnew, i)[j] = 0.0;
            row(l, o->forcing, i)[j] = wall ? 0.0 : -sin(2.0 * M_PI * y);
        }
}

/* q += dt (-J(psi, q) + nu lap(q) + F - r q) into qnew, own rows */
static void step_vorticity(const ocean_t *o, const double *q_in, double *q_out, int id)
{
    const level_t *l = &o->lev[0];
    long first, last;
    own_rows(l, id, &first, &last);
    for (long i = first; i < last; i++) {
        const double *pu = row(l, l->u, i - 1), *pm = row(l, l->u, i), *pd = row(l, l->u, i + 1);
        const double *qu = row(l, (double *)q_in, i - 1), *qm = row(l, (double *)q_in, i),
                     *qd = row(l, (double *)q_in, i + 1);
        const double *forcing = row(l, o->forcing, i);
        double *out = row(l, q_out, i);
        for (long j = 1; j <= l->m; j++) {
            double jac = ((pd[j] - pu[j]) * (qm[j + 1] - qm[j - 1]) -
                          (pm[j + 1] - pm[j - 1]) * (qd[j] - qu[j])) /
                         (4.0 * l->h2);
            double lap =
                (qu[j] + qd[j] + qm[j - 1] + qm[j + 1] - wall_count(l, i, j) * qm[j]) / l->h2;
            out[j] = qm[j] + DT * (-jac + VISCOSITY * lap + forcing[j] - FRICTION * qm[j]);
        }
    }
}

static double own_residual_norm(const ocean_t *o, const double *q, int id)
{
    const level_t *l = &o->lev[0];
    long first, last;
    double sum = 0.0;
    own_rows(l, id, &first, &last);
    for (long i = first; i < last; i++)
        for (long j = 1; j <= l->m; j++) {
            double r = row(l, (double *)q, i)[j] - laplacian(l, l->u, i, j);
            sum += r * r;
        }
    return sum;
}

/* solve lap(psi) = q (psi from the last solve), and add the residual's
 * squared norm to o->residual[slot] */
static void solve(ocean_t *o, double *q, long slot, int id)
{
    o->lev[0].f = q;
    for (long c = 0; c < cycles; c++)
        vcycle(o, 0, id);
    double local = own_residual_norm(o, q, id);
    if (o->parallel) {
        LOCK(Global->sum_lock);
        o->residual[slot] += local;
        UNLOCK(Global->sum_lock);
    } else {
        o->residual[slot] += local;
    }
}

/* the time steps, as thread ID of o->nthreads, then a last solve for the
 * final q; the result in o->q and o->lev[0].u */
static void simulate(ocean_t *o, int id)
{
    level_t *fine = &o->lev[0];
    double *q = o->q, *qnew = o->qnew;
    for (long s = 0; s < steps; s++) {
        solve(o, q, s, id);
        step_vorticity(o, q, qnew, id);
        sync_threads(o);
        double *t = q;
        q = qnew;
        qnew = t;
    }
    /* an odd number of steps leaves q in qnew: copy it back */
    if (q != o->q) {
        long first, last;
        own_rows(fine, id, &first, &last);
        for (long i = first; i < last; i++)
            memcpy(row(fine, o->q, i), row(fine, q, i), (size_t)(fine->m + 2) * sizeof(double));
        sync_threads(o);
    }
    solve(o, o->q, steps, id);
}

static void slave(void)
{
    int id;
    LOCK(Global->id_lock);
    id = Global->next_id++;
    UNLOCK(Global->id_lock);

    ocean_t o = Ocean; /* the level-0 right-hand side changes per step */
    initialize(&o, id);
    BARRIER(Global->bar, nprocs);
    if (id == 0)
        CLOCK(Global->start_us);
    simulate(&o, id);
    BARRIER(Global->bar, nprocs);
    if (id == 0)
        CLOCK(Global->end_us);
}

/* Lay out the levels of an N x N model for NTHREADS bands in the memory
 * at BASE (page-aligned); with BASE NULL only count.  Returns the bytes
 * the layout takes. */
static size_t layout(ocean_t *o, int nthreads, char *base)
{
    size_t total = 0;
    o->nthreads = nthreads;
    o->nlevels = 0;
    for (long m = grid_n - 2; m >= 2 && o->nlevels < MAX_LEVELS; m /= 2) {
        level_t *l = &o->lev[o->nlevels++];
        l->m = m;
        l->band_rows = (m + 2 + nthreads - 1) / nthreads;
        l->band_stride = (long)(app_page_round((size_t)(l->band_rows * (m + 2)) * sizeof(double)) /
                                sizeof(double));
        l->h2 = 1.0 / ((double)m * (double)m);
        size_t bytes = (size_t)(nthreads * l->band_stride) * sizeof(double); /* whole pages */
        double **grids[5] = {&l->u, &l->r, &l->f, &o->qnew, &o->forcing};
        /* level 0: u, r, f (which is q), qnew, forcing; the others u, r, f */
        for (int g = 0; g < (o->nlevels == 1 ? 5 : 3); g++) {
            if (base != NULL)
                *grids[g] = (double *)(base + total);
            total += bytes;
        }
        if (base != NULL && o->nlevels == 1)
            o->q = l->f;
    }
    if (base != NULL) {
        o->residual = (double *)(base + total);
        for (long s = 0; s <= steps; s++)
            o->residual[s] = 0.0;
    }
    total += (size_t)(steps + 1) * sizeof(double);
    return total;
}

static void *private_alloc(size_t bytes)
{
    void *p = calloc(1, bytes);
    if (p == NULL) {
        fprintf(stderr, "ocean: no memory for the check\n");
        exit(1);
    }
    return p;
}

/* || q - lap(psi) || / || q || for the final fields, by plain code of its
 * own on flat copies (a wall neighbour counts as minus the cell) */
static double final_residual(const ocean_t *o)
{
    const level_t *l = &o->lev[0];
    long m = l->m, w = m + 2;
    double *psi = private_alloc((size_t)(w * w) * sizeof(double));
    double *q = private_alloc((size_t)(w * w) * sizeof(double));
    for (long i = 0; i < w; i++)
        for (long j = 0; j < w; j++) {
            psi[i * w + j] = row(l, l->u, i)[j];
            q[i * w + j] = row(l, o->q, i)[j];
        }
    double rr = 0.0, qq = 0.0;
    for (long i = 1; i <= m; i++)
        for (long j = 1; j <= m; j++) {
            double c = psi[i * w + j];
            double n = i > 1 ? psi[(i - 1) * w + j] : -c, s = i < m ? psi[(i + 1) * w + j] : -c;
            double west = j > 1 ? psi[i * w + j - 1] : -c, e = j < m ? psi[i * w + j + 1] : -c;
            double r = q[i * w + j] - (n + s + west + e - 4.0 * c) * (double)(m * m);
            rr += r * r;
            qq += q[i * w + j] * q[i * w + j];
        }
    free(psi);
    free(q);
    return sqrt(rr / qq);
}

/* the parallel run against REF, the same run on one band */
static int compare(const ocean_t *ref)
{
    const level_t *l = &Ocean.lev[0], *rl = &ref->lev[0];
    for (long i = 0; i < l->m + 2; i++)
        for (long j = 0; j < l->m + 2; j++) {
            double p = row(l, l->u, i)[j], rp = row(rl, rl->u, i)[j];
            double q = row(l, Ocean.q, i)[j], rq = row(rl, ref->q, i)[j];
            if (p != rp || q != rq || !isfinite(p) || !isfinite(q)) {
                fprintf(stderr,
                        "ocean: wrong result at (%ld, %ld): psi %.17g q %.17g, on one band psi "
                        "%.17g q %.17g\n",
                        i, j, p, q, rp, rq);
                return 0;
            }
        }
    /* the sums of the lock-protected reduction, in another order */
    for (long s = 0; s <= steps; s++)
        if (!(fabs(Ocean.residual[s] - ref->residual[s]) <= 1e-9 * ref->residual[s])) {
            fprintf(stderr, "ocean: wrong residual sum of solve %ld: %.17g, on one band %.17g\n", s,
                    Ocean.residual[s], ref->residual[s]);
            return 0;
        }
    double residual = final_residual(&Ocean), tolerance = pow(RESIDUAL_PER_CYCLE, (double)cycles);
    if (!(residual <= tolerance)) {
        fprintf(stderr, "ocean: the final psi leaves a relative residual of %.3g (at most %.3g)\n",
                residual, tolerance);
        return 0;
    }
    return 1;
}

static int verify(void)
{
    ocean_t ref;
    void *memory = private_alloc(layout(&ref, 1, NULL) + app_page_size());
    layout(&ref, 1, app_page_align(memory));
    ref.parallel = 0;
    initialize(&ref, 0);
    simulate(&ref, 0);
    int ok = compare(&ref);
    free(memory);
    return ok;
}

int main(int argc, char **argv)
{
    app_option_t options[] = {
        {'n', "grid", &grid_n, 66, 258, 4, 1L << 16, "the grid is N x N, N - 2 a power of 2"},
        {'s', "steps", &steps, 4, 10, 1, MAX_STEPS, "time steps"},
        {'c', "cycles", &cycles, 3, 3, 1, 1000, "multigrid V-cycles per time step"},
    };
    nprocs =
        app_parse(argc, argv, "ocean", "a simplified OCEAN (contiguous partitions)", options, 3);
    long m = grid_n - 2;
    if ((m & (m - 1)) != 0) {
        fprintf(stderr, "ocean: -n %ld: N - 2 must be a power of 2\n", grid_n);
        return 1;
    }
    size_t bytes = layout(&Ocean, nprocs, NULL);

    MAIN_INITENV(app_shared_bytes(bytes + sizeof(global_t), 2));
    Global = G_MALLOC(sizeof(global_t));
    layout(&Ocean, nprocs, app_page_align(G_MALLOC(bytes + app_page_size())));
    Ocean.parallel = 1;
    LOCKINIT(Global->id_lock);
    LOCKINIT(Global->sum_lock);
    BARINIT(Global->bar, nprocs);
    Global->next_id = 0;

    for (int i = 1; i < nprocs; i++)
        CREATE(slave);
    slave();
    WAIT_FOR_END(nprocs - 1);

    int ok = verify();
    char params[96];
    snprintf(params, sizeof params, "grid=%ld steps=%ld cycles=%ld", grid_n, steps, cycles);
    app_report("ocean", nprocs, params, Global->end_us - Global->start_us, ok);
    MAIN_EXIT(ok ? 0 : 1);
}
