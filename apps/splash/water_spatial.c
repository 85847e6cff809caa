/*
 * WATER-spatial: the molecular dynamics of water_nsquared.c (the same
 * simplified physics, water_common.h) with a grid of cells: the box is cut
 * into cells no narrower than the cutoff radius, so a molecule interacts
 * only with molecules of its own and the 26 neighbouring cells.  A cell
 * holds the records of its molecules; each thread owns a contiguous range
 * of cells, stored together in a page-aligned region.  Each step:
 *
 *   1. every thread predicts the molecules of its cells;
 *   2. every thread computes the force on each of its molecules from all
 *      molecules in the neighbouring cells (each pair is thus computed by
 *      both owners: no thread writes another's molecules), and adds half
 *      the potential energy under a lock;
 *   3. every thread corrects its molecules, sums the kinetic energy, and
 *      takes out of its cells the molecules that left them;
 *   4. every thread puts those molecules into their new cells, under the
 *      cell's lock (an array of locks): the communication seed 004 names,
 *      molecules moving between cells.
 *
 * Barriers separate the phases.  main checks that every molecule is in
 * exactly one cell, the right one, and the molecules and energies against
 * a sequential all-pairs run (water_common.h).
 */
#include "postbox/parmacs.h"

#include <unistd.h>

#include "water_common.h"

MAIN_ENV

#define CELL_LOCKS 1024 /* cell c takes lock c mod CELL_LOCKS */

typedef struct global {
    LOCKDEC(id_lock)
    LOCKDEC(energy_lock)
    ALOCKDEC(cell_locks, CELL_LOCKS)
    BARDEC(bar)
    int next_id;
    unsigned long start_us, end_us;
} global_t;

typedef struct cell {
    long count;      /* molecules in the cell */
    long pad[7];     /* (the records start on a cache line) */
    molecule_t m[1]; /* capacity records follow */
} cell_t;

/* set by main before the threads start, read-only after */
static global_t *Global;
static long nmols, steps, per_side, ncells, capacity, cells_per_thread;
static size_t cell_bytes, region_bytes;
static int nprocs;
static water_box_t Box;
static char *cells;            /* the regions of cells, each page-aligned */
static water_energy_t *energy; /* per step, summed by the threads */

static cell_t *cell(long c)
{
    return (cell_t *)(cells + (size_t)(c / cells_per_thread) * region_bytes +
                      (size_t)(c % cells_per_thread) * cell_bytes);
}

static long cell_of(const molecule_t *m)
{
    long xyz[3];
    for (int d = 0; d < 3; d++) {
        xyz[d] = (long)(m->r[0][d] / (Box.side / (double)per_side));
        xyz[d] = xyz[d] < 0 ? 0 : xyz[d] >= per_side ? per_side - 1 : xyz[d];
    }
    return (xyz[0] * per_side + xyz[1]) * per_side + xyz[2];
}

/* the distinct cells next to C, C included (fewer than 27 when the grid
 * has fewer than 3 cells a side); returns how many */
static int neighbours(long c, long out[27])
{
    long x = c / (per_side * per_side), y = (c / per_side) % per_side, z = c % per_side;
    int count = 0;
    for (long dx = -1; dx <= 1; dx++)
        for (long dy = -1; dy <= 1; dy++)
            for (long dz = -1; dz <= 1; dz++) {
                long nx = (x + dx + per_side) % per_side, ny = (y + dy + per_side) % per_side,
                     nz = (z + dz + per_side) % per_side;
                long n = (nx * per_side + ny) * per_side + nz;
                int seen = 0;
                for (int k = 0; k < count; k++)
                    seen |= out[k] == n;
                if (!seen)
                    out[count++] = n;
            }
    return count;
}

static void cell_overflow(long c)
{
    fprintf(stderr, "water_spatial: cell %ld holds more than %ld molecules\n", c, capacity);
    fflush(stderr);
    _exit(2); /* not exit: the globals are read-only while threads run */
}

typedef struct moving {
    long to; /* the new cell */
    molecule_t m;
} moving_t;

static void slave(void)
{
    int id;
    LOCK(Global->id_lock);
    id = Global->next_id++;
    UNLOCK(Global->id_lock);

    long first = id * cells_per_thread < ncells ? id * cells_per_thread : ncells;
    long last = first + cells_per_thread < ncells ? first + cells_per_thread : ncells;
    size_t moving_cap = 64;
    moving_t *out = malloc(moving_cap * sizeof *out);
    if (out == NULL) {
        fprintf(stderr, "water_spatial: thread %d: no memory\n", id);
        fflush(stderr);
        _exit(2);
    }
    for (long c = first; c < last; c++)
        cell(c)->count = 0;
    for (long i = 0; i < nmols; i++) {
        molecule_t m;
        water_initial(&Box, i, &m);
        long c = cell_of(&m);
        if (c >= first && c < last) {
            if (cell(c)->count == capacity)
                cell_overflow(c);
            cell(c)->m[cell(c)->count++] = m;
        }
    }

    BARRIER(Global->bar, nprocs);
    if (id == 0)
        CLOCK(Global->start_us);
    for (long s = 0; s < steps; s++) {
        for (long c = first; c < last; c++)
            for (long k = 0; k < cell(c)->count; k++)
                water_predict(&cell(c)->m[k]);
        BARRIER(Global->bar, nprocs);

        double potential = 0.0;
        for (long c = first; c < last; c++) {
            long near[27];
            int nnear = neighbours(c, near);
            cell_t *home = cell(c);
            for (long k = 0; k < home->count; k++) {
                molecule_t *a = &home->m[k];
                for (int n = 0; n < nnear; n++) {
                    const cell_t *other = cell(near[n]);
                    for (long j = 0; j < other->count; j++)
                        if (&other->m[j] != a)
                            potential += water_pair(&Box, a, &other->m[j], a->f);
                }
            }
        }
        LOCK(Global->energy_lock);
        energy[s].potential += 0.5 * potential;
        UNLOCK(Global->energy_lock);
        BARRIER(Global->bar, nprocs);

        double kinetic = 0.0;
        size_t nout = 0;
        for (long c = first; c < last; c++) {
            cell_t *home = cell(c);
            for (long k = 0; k < home->count;) {
                kinetic += water_correct(&Box, &home->m[k]);
                long to = cell_of(&home->m[k]);
                if (to == c) {
                    k++;
                    continue;
                }
                if (nout == moving_cap) {
                    moving_t *more = realloc(out, 2 * moving_cap * sizeof *out);
                    if (more == NULL) {
                        fprintf(stderr, "water_spatial: thread %d: no memory\n", id);
                        fflush(stderr);
                        _exit(2);
                    }
                    out = more;
                    moving_cap *= 2;
                }
                out[nout].to = to;
                out[nout++].m = home->m[k];
                home->m[k] = home->m[--home->count];
            }
        }
        LOCK(Global->energy_lock);
        energy[s].kinetic += kinetic;
        UNLOCK(Global->energy_lock);
        BARRIER(Global->bar, nprocs);

        for (size_t k = 0; k < nout; k++) {
            long to = out[k].to;
            ALOCK(Global->cell_locks, to % CELL_LOCKS);
            cell_t *dest = cell(to);
            if (dest->count == capacity)
                cell_overflow(to);
            dest->m[dest->count++] = out[k].m;
            AULOCK(Global->cell_locks, to % CELL_LOCKS);
        }
        BARRIER(Global->bar, nprocs);
    }
    if (id == 0)
        CLOCK(Global->end_us);
    free(out);
}

/* every molecule in exactly one cell, the one its position is in */
static int check_cells(molecule_t **by_id)
{
    for (long i = 0; i < nmols; i++)
        by_id[i] = NULL;
    for (long c = 0; c < ncells; c++)
        for (long k = 0; k < cell(c)->count; k++) {
            molecule_t *m = &cell(c)->m[k];
            if (m->id < 0 || m->id >= nmols || by_id[m->id] != NULL || cell_of(m) != c) {
                fprintf(stderr,
                        "water_spatial: wrong cells: molecule %ld in cell %ld (its cell %ld)%s\n",
                        m->id, c, cell_of(m), by_id[m->id] != NULL ? ", a second time" : "");
                return 0;
            }
            by_id[m->id] = m;
        }
    for (long i = 0; i < nmols; i++)
        if (by_id[i] == NULL) {
            fprintf(stderr, "water_spatial: wrong cells: molecule %ld is in none\n", i);
            return 0;
        }
    return 1;
}

int main(int argc, char **argv)
{
    app_option_t options[] = {
        {'n', "molecules", &nmols, 1000, 1000, 2, 1L << 22, "molecules"},
        {'s', "steps", &steps, 3, 3, 1, 100000, "time steps"},
    };
    nprocs =
        app_parse(argc, argv, "water_spatial", "molecular dynamics with a cell grid", options, 2);
    Box = water_box(nmols);
    per_side = (long)(Box.side / Box.cutoff);
    per_side = per_side < 1 ? 1 : per_side;
    ncells = per_side * per_side * per_side;
    /* room for four times the mean, and more: molecules move little per step */
    capacity = 4 * ((nmols + ncells - 1) / ncells) + 16;
    cell_bytes = (sizeof(cell_t) + (size_t)(capacity - 1) * sizeof(molecule_t) + 63) / 64 * 64;
    cells_per_thread = (ncells + nprocs - 1) / nprocs;
    region_bytes = app_page_round((size_t)cells_per_thread * cell_bytes);
    size_t bytes = (size_t)nprocs * region_bytes;
    size_t energy_bytes = (size_t)steps * sizeof(water_energy_t);

    MAIN_INITENV(app_shared_bytes(bytes + energy_bytes + sizeof(global_t), 3));
    Global = G_MALLOC(sizeof(global_t));
    cells = app_page_align(G_MALLOC(bytes + app_page_size()));
    energy = G_MALLOC(energy_bytes);
    for (long s = 0; s < steps; s++)
        energy[s] = (water_energy_t){0.0, 0.0};
    LOCKINIT(Global->id_lock);
    LOCKINIT(Global->energy_lock);
    ALOCKINIT(Global->cell_locks, ncells < CELL_LOCKS ? ncells : CELL_LOCKS);
    BARINIT(Global->bar, nprocs);
    Global->next_id = 0;

    for (int i = 1; i < nprocs; i++)
        CREATE(slave);
    slave();
    WAIT_FOR_END(nprocs - 1);

    molecule_t **by_id = malloc((size_t)nmols * sizeof *by_id);
    int ok = by_id != NULL && check_cells(by_id) &&
             water_verify("water_spatial", &Box, steps, by_id, energy);
    free(by_id);
    char params[96];
    snprintf(params, sizeof params, "molecules=%ld steps=%ld cells=%ld", nmols, steps, ncells);
    app_report("water_spatial", nprocs, params, Global->end_us - Global->start_us, ok);
    MAIN_EXIT(ok ? 0 : 1);
}
