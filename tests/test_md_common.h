/* Shared fixtures of the md tests: small water and argon systems built here (independent of the
 * builder in src/io) and an O(N^2) double-precision reference of the non-bonded energy. */
#ifndef HX_TEST_MD_COMMON_H
#define HX_TEST_MD_COMMON_H

#include "halox/md.h"
#include "testutil.h"

hx_system *tmd_system_alloc(int natoms, int nmol);

/* nside^3 rigid waters of the model on a cubic lattice at the model's density, random
 * orientations, O jittered by jitter nm. Force field not applied. */
hx_system *tmd_water_lattice(const char *model, int nside, double jitter, uint64_t seed);
/* The CPU engine on water system s as the NVE and buffer tests run it: rc 1.0 nm, the missed-pair
 * check at every search, velocities generated at 300 K (gen) with seed 2024, v-rescale at 300 K
 * with tau 0.05 ps (thermo) or NVE, the buffer tolerance tol (0: the default). */
hx_md *tmd_water_md(const hx_system *s, double dt, int nstlist, double tol, int thermo, int gen,
                    int nthreads);

/* nside^3 argon atoms on a lattice at the argon model's density, jittered. */
hx_system *tmd_argon_lattice(int nside, double jitter, uint64_t seed);

typedef struct tmd_ref {
    double lj, coulomb;
    double *f; /* [3n], malloc'ed */
} tmd_ref;
/* Minimum-image O(N^2) reference (types, q applied). */
void tmd_reference(const hx_system *s, const hx_forcefield *ff, double rc, double eps_rf,
                   double eps_r, tmd_ref *out);

#endif
