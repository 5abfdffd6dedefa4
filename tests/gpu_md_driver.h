/* A small single-GPU MD loop over the GPU modules (src/gpu: nb_gpu, update_gpu), for the GPU
 * tests and bench/gpu_md_bench.c. Not the engine: the library's step schedule lives in src/md;
 * this drives the per-step ops the same way (local stream: forces; update stream: integration;
 * events between them), captures a normal step in a CUDA graph after every search and replays
 * it, and times steps with CUDA events.
 *
 * Step t (from x(t), v(t - dt/2)): at a multiple of nstlist, wrap molecules and search; forces
 * at x(t) (local stream), then the update to x(t + dt), v(t + dt/2) (update stream), then the
 * rolling prune (local stream, overlapping the update). Energies of step t (when asked): the
 * potential at x(t) and the kinetic energy as the average of the two half steps (the CPU
 * engine's convention). v-rescale every nsttcouple steps with the half-step kinetic energy
 * before the update, its random numbers drawn on the host (the only host reads of a step). */
#ifndef HX_TESTS_GPU_MD_DRIVER_H
#define HX_TESTS_GPU_MD_DRIVER_H

#include <stdint.h>

#include "halox/md.h"
#include "md/gpu/nb_gpu.h"
#include "md/gpu/update_gpu.h"

typedef struct gmd_params {
    double dt;
    int nstlist;
    double rc, rlist, rlist_inner; /* nm; rlist_inner 0: = rlist */
    int prune_parts;               /* rolling prune (0: at the search only) */
    double eps_rf, eps_r;
    int vrescale; /* 1: v-rescale every nsttcouple steps */
    int nsttcouple;
    double tau_t, ref_t;
    uint64_t seed;
    int use_graph; /* replay normal steps from a CUDA graph */
    int timing;    /* record an event after every step (gmd_step_times) */
} gmd_params;

void gmd_params_default(gmd_params *p);

typedef struct gmd_energies {
    long long step;
    double lj, coulomb, potential, kinetic, total, temperature;
    double constraint_deviation;
    long long npairs; /* pairs within the cut-off computed at this step */
} gmd_energies;

typedef struct gmd gmd;

/* sys: force field applied (types, charges, masses), positions and velocities v(-dt/2). */
hx_status gmd_create(const hx_system *sys, const hx_forcefield *ff, const gmd_params *p, gmd **out);
void gmd_destroy(gmd **g);
/* One step; e (may be NULL) receives the energies of the step just done (potential at the
 * starting positions). */
hx_status gmd_step(gmd *g, gmd_energies *e);
long long gmd_current_step(const gmd *g);
/* Positions x(t) and velocities v(t - dt/2) into sys (same atoms as at creation). */
hx_status gmd_download(gmd *g, hx_system *sys);
/* Device positions (float [3n]) as they are now, to the host. */
hx_status gmd_positions_float(gmd *g, float *x);
hx_gpu_nb *gmd_nb(gmd *g);
double gmd_ndf(const gmd *g);
/* Per-step device times in ms since the last gmd_reset_times (timing on): steps[k] is the k-th
 * step, is_search[k] whether it searched. Returns the number of steps. */
int gmd_step_times(gmd *g, double *ms, int *is_search, int cap);
void gmd_reset_times(gmd *g);
/* Searches done and the wall time (ms) spent in them (host clock: they synchronise). */
void gmd_search_stats(const gmd *g, int *searches, double *ms);
/* Where a step's time goes (benchmarks): `steps` more steps, graph-replayed with event nodes at
 * the step's start, after the local work (the pair kernel with what runs beside it joined) and
 * after the update (with what its stream joins), each step synchronised; medians over the
 * non-search steps of the local work and of the rest up to the update's end, in us (NaN when
 * the events could not be timed). */
hx_status gmd_breakdown(gmd *g, int steps, double *local_us, double *update_us);

#endif
