/*
 * water_common.h: what the two WATER applications share: the molecules,
 * their forces, the Gear predictor-corrector, and the sequential reference
 * run that main checks the parallel one against.
 *
 * Simplified physics (README.md): each molecule is one site of unit mass
 * in a periodic cubic box (density 0.8), interacting with every molecule
 * within the cutoff radius (the nearest image) through a Lennard-Jones
 * potential, V(r) = 4 (r^-12 - r^-6), in reduced units.  Motion is
 * integrated by a five-value Gear predictor-corrector for r'' = F / m;
 * record i holds r and its scaled derivatives dt^k / k! d^k r / dt^k.
 *
 * Included by one application source each; nothing here holds state.
 */
#ifndef POSTBOX_SPLASH_WATER_COMMON_H
#define POSTBOX_SPLASH_WATER_COMMON_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

#define WATER_DENSITY 0.8
#define WATER_CUTOFF 2.5
#define WATER_DT 0.002
#define WATER_ORDER 5 /* values per coordinate: r, dt r', dt^2/2 r'', ... */

typedef struct molecule {
    double r[WATER_ORDER][3]; /* position and scaled derivatives */
    double f[3];              /* the force at the predicted position */
    long id;                  /* its index in the initial order */
} molecule_t;

/* The box: side and cutoff for N molecules. */
typedef struct water_box {
    long n;
    double side;
    double cutoff;
} water_box_t;

static water_box_t water_box(long n)
{
    water_box_t box = {n, cbrt((double)n / WATER_DENSITY), WATER_CUTOFF};
    if (box.cutoff > box.side / 2.0)
        box.cutoff = box.side / 2.0;
    return box;
}

/* molecule I at the start: a site of a cubic lattice, slightly displaced,
 * with a random velocity (the mean velocity is not removed: momentum is
 * conserved whatever it is) */
static void water_initial(const water_box_t *box, long i, molecule_t *m)
{
    long k = (long)ceil(cbrt((double)box->n) - 1e-9);
    double a = box->side / (double)k;
    long site[3] = {i / (k * k), (i / k) % k, i % k};
    memset(m, 0, sizeof *m);
    m->id = i;
    for (int d = 0; d < 3; d++) {
        double jitter = 0.1 * (app_uniform(51 + (uint64_t)d, (uint64_t)i) - 0.5);
        m->r[0][d] = ((double)site[d] + 0.5 + jitter) * a;
        m->r[1][d] = (app_uniform(54 + (uint64_t)d, (uint64_t)i) - 0.5) * 2.0 * WATER_DT;
    }
}

/* the Taylor step of the predictor */
static void water_predict(molecule_t *m)
{
    for (int d = 0; d < 3; d++) {
        double *r0 = &m->r[0][d], *r1 = &m->r[1][d], *r2 = &m->r[2][d], *r3 = &m->r[3][d],
               *r4 = &m->r[4][d];
        *r0 += *r1 + *r2 + *r3 + *r4;
        *r1 += 2.0 * *r2 + 3.0 * *r3 + 4.0 * *r4;
        *r2 += 3.0 * *r3 + 6.0 * *r4;
        *r3 += 4.0 * *r4;
        m->f[d] = 0.0;
    }
}

/* the corrector, from the force in m->f; the position back into the box;
 * returns the kinetic energy */
static double water_correct(const water_box_t *box, molecule_t *m)
{
    static const double gear[WATER_ORDER] = {19.0 / 120.0, 3.0 / 4.0, 1.0, 1.0 / 2.0, 1.0 / 12.0};
    double kinetic = 0.0;
    for (int d = 0; d < 3; d++) {
        double delta = 0.5 * WATER_DT * WATER_DT * m->f[d] - m->r[2][d];
        for (int k = 0; k < WATER_ORDER; k++)
            m->r[k][d] += gear[k] * delta;
        m->r[0][d] -= box->side * floor(m->r[0][d] / box->side);
        double v = m->r[1][d] / WATER_DT;
        kinetic += 0.5 * v * v;
    }
    return kinetic;
}

/* the force on A from B (nearest image, within the cutoff) added to
 * force_a; returns the pair's potential energy (0 beyond the cutoff) */
static double water_pair(const water_box_t *box, const molecule_t *a, const molecule_t *b,
                         double force_a[3])
{
    double d[3], r2 = 0.0;
    for (int k = 0; k < 3; k++) {
        d[k] = a->r[0][k] - b->r[0][k];
        if (d[k] > 0.5 * box->side)
            d[k] -= box->side;
        else if (d[k] < -0.5 * box->side)
            d[k] += box->side;
        r2 += d[k] * d[k];
    }
    if (r2 >= box->cutoff * box->cutoff)
        return 0.0;
    double inv2 = 1.0 / r2, inv6 = inv2 * inv2 * inv2;
    double scale = 24.0 * inv2 * inv6 * (2.0 * inv6 - 1.0);
    for (int k = 0; k < 3; k++)
        force_a[k] += scale * d[k];
    return 4.0 * inv6 * (inv6 - 1.0);
}

/* The reference: STEPS steps of all N molecules by one thread, every pair
 * once (i < j).  Fills mols (by id) and the energies after each step. */
typedef struct water_energy {
    double potential, kinetic;
} water_energy_t;

static void water_reference(const water_box_t *box, long steps, molecule_t *mols,
                            water_energy_t *energy)
{
    for (long i = 0; i < box->n; i++)
        water_initial(box, i, &mols[i]);
    for (long s = 0; s < steps; s++) {
        double potential = 0.0, kinetic = 0.0;
        for (long i = 0; i < box->n; i++)
            water_predict(&mols[i]);
        for (long i = 0; i < box->n; i++)
            for (long j = i + 1; j < box->n; j++) {
                double f[3] = {0.0, 0.0, 0.0};
                potential += water_pair(box, &mols[i], &mols[j], f);
                for (int k = 0; k < 3; k++) {
                    mols[i].f[k] += f[k];
                    mols[j].f[k] -= f[k];
                }
            }
        for (long i = 0; i < box->n; i++)
            kinetic += water_correct(box, &mols[i]);
        energy[s].potential = potential;
        energy[s].kinetic = kinetic;
    }
}

/* GOT (indexed by id; the parallel run's molecules and energies) against
 * the reference: positions to within 1e-8 (nearest image), energies to
 * within 1e-9 relative, and the total momentum conserved (Newton's third
 * law in the parallel forces).  Prints what is wrong; returns 1 if all is
 * right. */
static int water_verify(const char *app, const water_box_t *box, long steps, molecule_t *const *got,
                        const water_energy_t *got_energy)
{
    molecule_t *ref = malloc((size_t)box->n * sizeof *ref);
    water_energy_t *ref_energy = malloc((size_t)steps * sizeof *ref_energy);
    int ok = ref != NULL && ref_energy != NULL;
    if (!ok)
        fprintf(stderr, "%s: no memory for the check\n", app);
    if (ok)
        water_reference(box, steps, ref, ref_energy);
    double momentum[3] = {0.0, 0.0, 0.0}, start[3] = {0.0, 0.0, 0.0};
    for (long i = 0; ok && i < box->n; i++) {
        molecule_t init;
        water_initial(box, i, &init);
        for (int d = 0; d < 3; d++) {
            double diff = got[i]->r[0][d] - ref[i].r[0][d];
            diff -= box->side * nearbyint(diff / box->side);
            if (!(fabs(diff) <= 1e-8)) {
                fprintf(stderr,
                        "%s: wrong result: molecule %ld coordinate %d is %.17g, sequentially "
                        "%.17g\n",
                        app, i, d, got[i]->r[0][d], ref[i].r[0][d]);
                ok = 0;
                break;
            }
            momentum[d] += got[i]->r[1][d] / WATER_DT;
            start[d] += init.r[1][d] / WATER_DT;
        }
    }
    for (int d = 0; ok && d < 3; d++)
        if (!(fabs(momentum[d] - start[d]) <= 1e-9 * (double)box->n)) {
            fprintf(stderr, "%s: momentum not conserved: component %d went from %.17g to %.17g\n",
                    app, d, start[d], momentum[d]);
            ok = 0;
        }
    for (long s = 0; ok && s < steps; s++) {
        const water_energy_t *g = &got_energy[s], *r = &ref_energy[s];
        if (!(fabs(g->potential - r->potential) <= 1e-9 * fabs(r->potential)) ||
            !(fabs(g->kinetic - r->kinetic) <= 1e-9 * fabs(r->kinetic))) {
            fprintf(stderr,
                    "%s: wrong energies after step %ld: potential %.17g kinetic %.17g, "
                    "sequentially %.17g and %.17g\n",
                    app, s, g->potential, g->kinetic, r->potential, r->kinetic);
            ok = 0;
        }
    }
    free(ref);
    free(ref_energy);
    return ok;
}

#endif /* POSTBOX_SPLASH_WATER_COMMON_H */
