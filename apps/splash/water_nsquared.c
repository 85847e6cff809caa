/*
 * WATER-nsquared: molecular dynamics of N molecules (water_common.h's
 * simplified physics), the O(N^2) way.  The molecules are cut into one
 * contiguous, page-aligned part per thread.  Each step:
 *
 *   1. every thread predicts its molecules;
 *   2. every thread computes, for each of its molecules i, the interactions
 *      with the N/2 molecules after it (cyclically), so that every pair is
 *      computed once; it sums the forces in private memory, then adds them
 *      to the shared molecules one part at a time under that part's lock
 *      (an array of locks), and the potential energy under a lock;
 *   3. every thread corrects its molecules and sums the kinetic energy.
 *
 * Barriers separate the phases.  main checks the molecules and energies
 * against a sequential run (water_common.h).
 */
#include "postbox/parmacs.h"

#include <unistd.h>

#include "water_common.h"

MAIN_ENV

#define MAX_THREADS 256

typedef struct global {
    LOCKDEC(id_lock)
    LOCKDEC(energy_lock)
    ALOCKDEC(part_locks, MAX_THREADS) /* one per part of the molecules */
    BARDEC(bar)
    int next_id;
    unsigned long start_us, end_us;
} global_t;

/* set by main before the threads start, read-only after */
static global_t *Global;
static long nmols, steps, part, part_stride;
static int nprocs;
static water_box_t Box;
static molecule_t *molecules;  /* the parts, each page-aligned */
static water_energy_t *energy; /* per step, summed by the threads */

static molecule_t *mol(long i)
{
    return molecules + (i / part) * part_stride + i % part;
}

static void slave(void)
{
    int id;
    LOCK(Global->id_lock);
    id = Global->next_id++;
    UNLOCK(Global->id_lock);

    long first = id * part < nmols ? id * part : nmols;
    long last = first + part < nmols ? first + part : nmols;
    double(*force)[3] = malloc((size_t)nmols * sizeof *force);
    if (force == NULL) {
        fprintf(stderr, "water_nsquared: thread %d: no memory\n", id);
        fflush(stderr);
        _exit(2); /* not exit: the globals are read-only while threads run */
    }
    for (long i = first; i < last; i++)
        water_initial(&Box, i, mol(i));

    BARRIER(Global->bar, nprocs);
    if (id == 0)
        CLOCK(Global->start_us);
    long half = nmols / 2;
    for (long s = 0; s < steps; s++) {
        for (long i = first; i < last; i++)
            water_predict(mol(i));
        BARRIER(Global->bar, nprocs);

        double potential = 0.0;
        memset(force, 0, (size_t)nmols * sizeof *force);
        for (long i = first; i < last; i++) {
            const molecule_t *a = mol(i);
            for (long off = 1; off <= half; off++) {
                long j = (i + off) % nmols;
                /* with N even, the pair N/2 apart is seen from both ends */
                if (off == half && nmols % 2 == 0 && i >= half)
                    continue;
                double f[3] = {0.0, 0.0, 0.0};
                potential += water_pair(&Box, a, mol(j), f);
                for (int k = 0; k < 3; k++) {
                    force[i][k] += f[k];
                    force[j][k] -= f[k];
                }
            }
        }
        for (int t = 0; t < nprocs; t++) {
            int p = (id + t) % nprocs;
            long lo = p * part < nmols ? p * part : nmols;
            long hi = lo + part < nmols ? lo + part : nmols;
            ALOCK(Global->part_locks, p);
            for (long i = lo; i < hi; i++)
                for (int k = 0; k < 3; k++)
                    mol(i)->f[k] += force[i][k];
            AULOCK(Global->part_locks, p);
        }
        LOCK(Global->energy_lock);
        energy[s].potential += potential;
        UNLOCK(Global->energy_lock);
        BARRIER(Global->bar, nprocs);

        double kinetic = 0.0;
        for (long i = first; i < last; i++)
            kinetic += water_correct(&Box, mol(i));
        LOCK(Global->energy_lock);
        energy[s].kinetic += kinetic;
        UNLOCK(Global->energy_lock);
    }
    BARRIER(Global->bar, nprocs);
    if (id == 0)
        CLOCK(Global->end_us);
    free(force);
}

int main(int argc, char **argv)
{
    app_option_t options[] = {
        {'n', "molecules", &nmols, 512, 4096, 2, 1L << 22, "molecules"},
        {'s', "steps", &steps, 3, 3, 1, 100000, "time steps"},
    };
    nprocs = app_parse(argc, argv, "water_nsquared", "O(N^2) molecular dynamics", options, 2);
    if (nprocs > MAX_THREADS) {
        fprintf(stderr, "water_nsquared: at most %d threads\n", MAX_THREADS);
        return 1;
    }
    Box = water_box(nmols);
    part = (nmols + nprocs - 1) / nprocs;
    /* parts start on page boundaries: the stride is a whole number of
     * molecules that fills whole pages */
    long unit = app_page_elements(sizeof(molecule_t));
    part_stride = (part + unit - 1) / unit * unit;
    size_t bytes = (size_t)(nprocs * part_stride) * sizeof(molecule_t);
    size_t energy_bytes = (size_t)steps * sizeof(water_energy_t);

    MAIN_INITENV(app_shared_bytes(bytes + energy_bytes + sizeof(global_t), 3));
    Global = G_MALLOC(sizeof(global_t));
    molecules = app_page_align(G_MALLOC(bytes + app_page_size()));
    energy = G_MALLOC(energy_bytes);
    for (long s = 0; s < steps; s++)
        energy[s] = (water_energy_t){0.0, 0.0};
    LOCKINIT(Global->id_lock);
    LOCKINIT(Global->energy_lock);
    ALOCKINIT(Global->part_locks, nprocs);
    BARINIT(Global->bar, nprocs);
    Global->next_id = 0;

    for (int i = 1; i < nprocs; i++)
        CREATE(slave);
    slave();
    WAIT_FOR_END(nprocs - 1);

    molecule_t **by_id = malloc((size_t)nmols * sizeof *by_id);
    int ok = by_id != NULL;
    for (long i = 0; ok && i < nmols; i++)
        by_id[i] = mol(i);
    ok = ok && water_verify("water_nsquared", &Box, steps, by_id, energy);
    free(by_id);
    char params[96];
    snprintf(params, sizeof params, "molecules=%ld steps=%ld", nmols, steps);
    app_report("water_nsquared", nprocs, params, Global->end_us - Global->start_us, ok);
    MAIN_EXIT(ok ? 0 : 1);
}
