/* The engine object shared by src/mdrun/engine.c (API, start-up, run loop, output) and
 * src/mdrun/schedule.c (repartition and the step schedule). Not a public header. */
#ifndef HX_MD_IMPL_H
#define HX_MD_IMPL_H

#include "core/rng.h"
#include "halox/decomp.h"
#include "halox/md.h"
#include "md/backend.h"

#define HX_MD_NRED 9 /* values per domain in the energy reduction */

struct hx_md {
    hx_md_params p;
    char model[16], backend[16], halo_backend[16];
    hx_system *sys; /* global: topology, and positions as of the last gather */
    hx_forcefield *ff;
    hx_comm *comm;
    hx_comm *own_comm; /* created by hx_md_create */
    hx_decomp *dec;
    hx_halo *halo;
    const hx_md_backend_ops *B;
    void *bimpl;
    int ndim;
    int nlocal;
    double ndf;
    long long step;
    long long last_search;
    int energy_interval; /* potential energies only on multiples of this (0: every step) */
    int log_interval;    /* ... and of this (0: none) */
    hx_rng trng;
    /* The energy v-rescale has added in the committed steps so far, sum of (lambda^2 - 1)
     * ke_old: a host double, the same on every rank (lambda and the summed ke_old are). */
    double thermostat_work;
    hx_md_energies ener;
    hx_md_timings tm;
    long long last_missed;
    int rlist_auto; /* rlist chosen from the buffer tolerance: some missed pairs are by design */
    hx_md_list_setup list; /* how nstlist, rlist and the prune were chosen */
    int missed_warned;     /* the missed-pair warning is given once per run */
    hx_md_dd_info info;
    int gathered_step_valid;
    /* A local failure between agreement points (multi-rank runs): recorded here, the step loop
     * goes on (its exchanges keep the other ranks moving), and the next agreement point - a
     * search, energy or thermostat step - fails on every rank with this message. */
    hx_status pending;
    char pending_msg[1024];
    long long pending_step;
    /* per-step reduction inputs of the local domains, allocated once */
    double *red;    /* [nlocal][HX_MD_NRED]: lj, coulomb, ke_old, ke_new, then the bonded terms
                     * bonds, angles, dihedrals, lj14, coulomb14 */
    double *ke_old; /* [nlocal] */
    long long *dev; /* [nlocal] constraint deviation bits */
    /* CUDA graph of a plain step (backend and halo permitting) */
    int graph_ok;     /* both can capture */
    int graph_valid;  /* captured for the current partition */
    int trace_own;    /* this engine opened the search trace (gpu/trace.h) */
    int halo_x_fresh; /* the repartition exchanged this step's halo coordinates already */
    /* step timing (hx_md_params.step_timing, src/mdrun/step_timing.c): the records of the latest
     * run; record r ends at clock point r + 1 (point 0: the run's start), st_read of them have
     * their time read back; clock_host: the last point on the host clock (backends without
     * device clock points); clock_end: the step the run ends before; span_steps: plain steps
     * since the latest point (HX_MD_STEP_SPANS) */
    hx_md_step_time *st;
    int nst, cap_st, st_read;
    long long clock_end;
    int span_steps;
    int clock_on;
    double clock_host;
    /* the search step runs on the device (backend dd_* ops, halo with device messages) */
    int dd_device;
};

/* src/mdrun/schedule.c */
/* HALOX_GPU_DD is not 0: a decomposed GPU run may take its search steps to the device */
int hx_md_device_search_allowed(void);
hx_status hx_md_repartition(hx_md *md, int first);
hx_status hx_md_do_step(hx_md *md, int commit);
/* Record a local failure (multi-rank) or return it (single process). */
hx_status hx_md_note(hx_md *md, hx_status st);
/* Agreement point: every rank fails if any recorded a failure. */
hx_status hx_md_agree(hx_md *md);

/* src/mdrun/step_timing.c: hx_md_run starts and stops the clock (step_timing on); the schedule
 * marks the end of every committed step, reading the breakdown's points when asked */
hx_status hx_md_clock_start(hx_md *md);
void hx_md_clock_stop(hx_md *md);
hx_status hx_md_clock_step(hx_md *md, int search, int graph, int breakdown);

/* list_setup.c: halo pulses of the decomposition of s with pair-list radius r, molecule radius
 * rmol and cut-off rc (on grid, or on the grid hx_dd_choose_grid picks for ndomains when grid is
 * NULL or {0,...}); -1 when no grid fits. The interval choice stops where it would add a pulse;
 * tests/test_md_list_setup.c recomputes that rule with it. */
int hx_md_dd_pulses(const hx_system *s, double rc, double rmol, double r, int ndomains,
                    const int grid[3]);

#endif
