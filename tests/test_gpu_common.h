/* Helpers of the GPU tests: device arrays, local sets of domain decompositions, and the check
 * of a GPU pair list against a reference enumeration of every pair. */
#ifndef HX_TESTS_GPU_COMMON_H
#define HX_TESTS_GPU_COMMON_H

#include "halox/decomp.h"
#include "halox/md.h"
#include "md/gpu/nb_gpu.h"
#include "testutil.h"

/* The GPU context of the test process (include/halox/gpu.h): created by tg_gpu_begin on comm
 * (collective; node-local rank modulo the devices, the device made current for the test's own
 * CUDA calls), or at the first tg_gpu() on a communicator of this process alone. Engines get it
 * as hx_md_params.gpu, the driver and the tests take their streams from it. tg_gpu_end destroys
 * it (before the communicator). */
hx_gpu_context *tg_gpu_begin(hx_comm *comm);
hx_gpu_context *tg_gpu(void);
void tg_gpu_end(void);

/* The short form of a GPU test (the CPU emulation's, and compute-sanitizer's): "--quick" as its
 * first argument, or HALOX_GPU_TEST_QUICK set to a positive number. */
int tg_quick(int argc, char **argv);

/* Device float [cap][3] with x (double [3n]) converted; entries beyond n are NaN (a read of
 * them shows in the results). cudaFree it. */
float *tg_upload_x(const double *x, int n, int cap);
/* Copy x[3*a0 .. 3*a1) (double) into an existing device array as float. */
void tg_copy_x(float *dx, const double *x, int a0, int a1);
/* Device array of 3n floats set to v (v may be NaN). */
void tg_fill(float *d, int n3, float v);
/* Device float [3n] to host double. */
void tg_download_f(const float *d, double *f, int n3);

/* t_domain_build (tests/testutil.h) with home = molecules whose first atom is in the domain's
 * cell (the system's molecules must be whole with first atoms in the box). */
typedef t_domain tg_domain;
void tg_domain_build(const hx_system *s, const int g[3], int dom, tg_domain *ds);
void tg_domain_free(tg_domain *ds);
/* Put every molecule whole with its first atom in the box. */
void tg_wrap_molecules(hx_system *s);

typedef struct tg_list_report {
    long long ref_outer, ref_inner; /* reference pairs within rlist and rlist_inner */
    long long listed_outer, listed_inner;
    long long missing_outer, missing_inner;
    long long duplicates, excluded, padding, wrong_zone, wrong_image;
    long long column_order; /* grid-column places out of (z, atom) order, or not a permutation */
    long long sc_layout;    /* super-clusters not split 2 x 2 x 2 by x, y, z as the search must */
} tg_list_report;
/* Download the list of nb (just searched on set's positions) and check it: every pair of
 * different molecules whose zones the i-zone x j-zone table pairs, closer than rlist (minimum
 * image along periodic dimensions) less a 2e-5 nm band for float rounding, is listed exactly
 * once within rlist, with the image that brings it closest (in small boxes a pair may also be
 * listed with a farther image, beyond rlist, which the kernel's cut-off drops); the pruned list
 * holds those within rlist_inner; no padding, excluded or wrongly zoned pair is listed. Failures
 * are printed and counted (up to a few of each kind with atoms and distances). set->x NULL: the
 * positions the list was built on are taken from its slots. moved (3 per atom of set, or NULL):
 * how far each atom moved since the search; the slots hold the positions of the search less that
 * (the update fused with the pair forces, hx_gpu_nb_update_link, writes the next positions into
 * the slots). Returns the number of failed checks. */
int tg_check_list(const hx_gpu_nb *nb, const hx_local_set *set, const double *moved, double rlist,
                  double rinner, const char *what, tg_list_report *rep);

/* Whether a decomposed domain's pair search is expected to run split (its home zone's part
 * first, hx_gpu_nb_search_home): the default, unless HALOX_GPU_SEARCH_HOME=0 or the stage
 * timing (HALOX_GPU_SEARCH_TIMING=1, which runs every search whole) is set. */
int tg_split_search_expected(void);

/* The engine's own GPU pair module and local set of its first local domain (the gpu backend's;
 * NULL for another backend): tests check the lists the engine's schedule built, benchmarks time
 * its kernels alone. */
hx_gpu_nb *tg_md_nb(hx_md *md);
const hx_decomp_local *tg_md_local(hx_md *md);
/* The local set of loc as the gpu backend gives it to its pair module (positions NULL). */
void tg_local_set(const hx_decomp_local *loc, hx_local_set *set);

/* The seven potential terms of e (LJ, Coulomb, bonds, angles, dihedrals, LJ-14, Coulomb-14). */
void tg_energy_terms(const hx_md_energies *e, double v[7]);
/* Total energy at the start and every 10 steps of nsteps into e[0 .. nsteps/10], run in chunks
 * of 10 (the steps between energy steps are the plain, graph-replayed ones); max_dev (unless
 * NULL) gets the largest constraint deviation seen. */
hx_status tg_trajectory(hx_md *md, int nsteps, double *e, double *max_dev);
/* Drift of an energy series e[0 .. n-1] sampled every interval_ps: the least-squares slope per
 * atom (kJ/mol/ps per atom, signed) into *slope, and into *se its standard error from nblocks
 * equal blocks (the standard deviation of the blocks' slopes over sqrt(nblocks)). The total
 * energy of a float NVE run wanders as well as drifts, so one fitted slope scatters from run to
 * run; the blocks measure by how much. */
void tg_drift(const double *e, int n, double interval_ps, int natoms, int nblocks, double *slope,
              double *se);

#endif
