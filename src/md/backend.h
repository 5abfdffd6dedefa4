/* The MD backend contract: what the one step schedule (src/mdrun/schedule.c) asks of the code that
 * computes forces and integrates, on the host ("cpu", src/md/cpu_backend.c) or on a GPU ("gpu",
 * src/md/gpu/). The schedule owns the order (docs/ARCHITECTURE.md, "The step schedule"); a backend
 * owns its data and streams.
 *
 * Per step t, for every local domain i (the decomposition layer and the halo exchange are the
 * schedule's):
 *
 *   [search step]  download(i) -> home store; repartition; set_local(i, ...); halo x;
 *                  search(i)
 *   forces(i, LOCAL)      home-home pairs; f cleared first         (local stream)
 *   halo exchange_x       on halo_stream(i)                        (non-local stream)
 *   forces(i, NONLOCAL)   pairs with halo atoms, added to f        (non-local stream)
 *   halo exchange_f       on halo_stream(i)
 *   [thermostat step] kinetic(i) -> schedule sums, draws lambda
 *   update(i, lambda)     leap-frog + constraints of home atoms    (update stream: waits for
 *                         the local forces and for everything enqueued on halo_stream so far;
 *                         afterwards the local and non-local streams wait for the update)
 *   [energy step]  energies(i) -> schedule sums over domains
 *
 * Every call that returns data to the host (kinetic, energies, download, npairs) synchronises
 * with the device; the others only enqueue. A schedule step without energies, thermostat or
 * search makes no host round trip, so a GPU backend can capture it in a CUDA graph. */
#ifndef HX_MD_BACKEND_H
#define HX_MD_BACKEND_H

#include "dd/plan_counts.h"
#include "gpu/stream.h"
#include "halox/decomp.h"
#include "halox/halo.h"
#include "halox/migrate.h"
#include "halox/md.h"

/* the points of a step that mark() records (metrics steps, and every step of a step-timing
 * breakdown, where a GPU backend records them inside the captured step) */
enum {
    HX_MARK_LOCAL_BEGIN,
    HX_MARK_LOCAL_END,
    HX_MARK_NL_BEGIN,
    HX_MARK_NL_END,
    HX_MARK_UPDATE_END, /* after the update (on the local stream, which joins it) */
    HX_MARK_N
};

/* indices of energies() output. The schedule zeroes the array before the call, so a backend
 * that computes no bonded terms may leave HX_E_BOND..HX_E_COUL14 untouched. */
enum {
    HX_E_LJ,
    HX_E_COUL,
    HX_E_KE_NEW,
    HX_E_DEV,
    HX_E_BOND, /* bonded terms of home molecules (hx_bonded_energies) */
    HX_E_ANGLE,
    HX_E_DIH,
    HX_E_LJ14,
    HX_E_COUL14,
    HX_E_N
};

/* Device times of a search step on the device (dd_search), s. */
typedef struct hx_md_dd_times {
    double migrate, local_set, plan; /* device time of the parts */
    double device;                   /* launch to synchronisation (wall) */
    double counts;                   /* the counts read and agreed (one reduction) */
    int retries;                     /* slow-path runs (buffers grown) */
    long long stats[4];              /* home atoms max, min, halo atoms max, min over the job */
} hx_md_dd_times;

typedef struct hx_md_backend_ops {
    const char *name; /* "cpu", "gpu" */
    hx_memspace mem;  /* where the halo's x and f arrays live */
    hx_real real;     /* their element type */
    /* nd local domains; the global system (force field applied), parameters resolved */
    hx_status (*create)(const hx_system *sys, const hx_forcefield *ff, const hx_md_params *p,
                        int nlocal, void **impl);
    void (*destroy)(void *impl);
    /* Repartition of local domain i: new local set (home store authoritative for x and v),
     * coordinate and force arrays of the halo exchange (cap atoms, fixed until the next
     * set_local). Writes the home coordinates into x. */
    hx_status (*set_local)(void *impl, int i, const hx_decomp_local *loc, void *x, void *f);
    /* Pair search on the local set once its halo coordinates are in x. check_missed: count the
     * pairs the previous list missed (single domain). */
    hx_status (*search)(void *impl, int i, double rlist, int check_missed, long long *missed);
    long long (*npairs)(void *impl, int i);
    /* HX_NB_LOCAL (clears f, copies the current home positions into x first; adds the bonded
     * forces of the home molecules) or HX_NB_NONLOCAL (adds). Energies are kept for energies()
     * when want_energy. */
    hx_status (*forces)(void *impl, int i, int part, int want_energy, long long step);
    /* the stream the schedule gives the halo exchange (NULL for the CPU backend) */
    hx_stream (*halo_stream)(void *impl, int i);
    /* Kinetic energy of the current half-step velocities v(t - dt/2) of home atoms. */
    hx_status (*kinetic)(void *impl, int i, double *ke);
    /* v' = lambda v + f/m dt, x' = x + v' dt, constraints (SETTLE for water, SHAKE for the
     * bonds to hydrogen of other molecules), v' = (x' - x)/dt. commit = 0 leaves
     * the state as it was (energies of the current step only). want_energy keeps KE(v') and
     * the constraint deviation for energies(). */
    hx_status (*update)(void *impl, int i, double lambda, int want_energy, int commit,
                        long long step);
    /* [HX_E_N] of the last forces/update with want_energy. */
    hx_status (*energies)(void *impl, int i, double out[HX_E_N]);
    /* Positions and velocities of the home atoms into the home store (no-op on the host). */
    hx_status (*download)(void *impl, int i, hx_home *home);
    /* Optional (NULL: not available): capture the enqueued work of one step into a graph and
     * replay it. The schedule calls capture_begin, enqueues a step as usual, capture_end; then
     * replay for each following step until the next search/energy/thermostat step. */
    hx_status (*capture_begin)(void *impl);
    hx_status (*capture_end)(void *impl);
    hx_status (*replay)(void *impl);
    void (*invalidate_graph)(void *impl);
    /* Metrics steps: record a point of the step (HX_MARK_NL_* on halo_stream, the others on the
     * local stream), then read them back (waits), as µs after the step began. Between capture_begin
     * and capture_end the points become part of the captured step, recorded at every replay. */
    void (*mark)(void *impl, int i, int which);
    hx_status (*read_marks)(void *impl, int i, double t_us[HX_MARK_N]);
    /* Wait until everything enqueued has finished (NULL: nothing runs asynchronously). */
    hx_status (*sync)(void *impl);
    /* One line for the log: kernels, device. */
    const char *(*describe)(void *impl);
    /* Optional (NULL: the schedule reads the host clock, the work being done when a call
     * returns): clock points for step timing (hx_md_params.step_timing). clock_reserve(n): room
     * for points 0 .. n-1, made before a timed run so that none is made while it runs;
     * clock(k): record point k after everything enqueued so far, waiting for nothing;
     * clock_elapsed(k0, k1): µs from point k0 to point k1 (waits for k1). */
    hx_status (*clock_reserve)(void *impl, int n);
    hx_status (*clock)(void *impl, int k);
    hx_status (*clock_elapsed)(void *impl, int k0, int k1, double *us);
    /* Optional (NULL: the search step runs on the host): the decomposed search step on the
     * device (src/md/gpu/decomp_gpu.h), on the state the backend keeps there.
     *   dd_start     collective, after the first repartition (set_local done): takes the
     *                decomposition's homes and plan as they are; messages go through halo
     *   dd_search    collective, at a search step instead of download + hx_decomp_repartition
     *                + hx_decomp_update_local: migration, the new local set and the plan's
     *                maps on the device; gmax: the job's maxima for hx_plan_set_counts; local:
     *                this process's status on entry, agreed inside (the step runs, then fails
     *                on every process)
     *   dd_counts    local domain i's counts, for hx_plan_set_counts
     *   dd_set_local as set_local, from the device arrays of the last dd_search (after the
     *                plan was set from the counts and the halo refreshed)
     *   dd_set_home  optional (NULL: dd_set_local does it all): right after dd_search and
     *                dd_counts, before the plan, the modules' set-up for the home atoms and
     *                whatever of the next search needs no halo (the pair search's home zone),
     *                enqueued while the host makes the plan; x, f as the halo has them now
     *                (dd_set_local redoes it when the halo's refresh moved them)
     * From dd_start on, download also brings the home molecule lists to the host store. */
    hx_status (*dd_start)(void *impl, hx_decomp *dec, hx_halo *halo);
    hx_status (*dd_search)(void *impl, long long step, hx_status local, long long *gmax,
                           hx_md_dd_times *t);
    hx_status (*dd_counts)(void *impl, int i, hx_plan_domain_counts *c);
    hx_status (*dd_set_local)(void *impl, int i, void *x, void *f);
    hx_status (*dd_set_home)(void *impl, int i, void *x, void *f);
} hx_md_backend_ops;

#ifdef __cplusplus
extern "C" {
#endif
extern const hx_md_backend_ops hx_md_backend_cpu;
/* src/md/gpu/gpu_backend.cu, in builds with CUDA (HX_MD_HAVE_GPU) */
extern const hx_md_backend_ops hx_md_backend_gpu;
/* The pair module of local domain i of a gpu backend's impl: tests check its lists and
 * benchmarks time its kernels alone, in the engine's own run. */
typedef struct hx_gpu_nb hx_gpu_nb;
hx_gpu_nb *hx_md_backend_gpu_nb(void *impl, int i);
#ifdef __cplusplus
}
#endif

#endif
