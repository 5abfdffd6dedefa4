/* The decomposed search step on the device (private to halox; C-callable).
 *
 * What hx_decomp does on the host at a repartition - migration of molecules between domains,
 * the new local set, the halo plan's index maps and the local topology - done by kernels on the
 * data that is already on the GPU. The host sees counts only: a record of a few integers per
 * domain and pulse (hx_gpu_dd_counts) at the end, never coordinates or index maps. The result is
 * identical to the host path's (tests/test_gpu_decomp.c compares them at every search step):
 *
 *  - molecules are assigned by their centre exactly as hx_molecule_centre / hx_migrate do it
 *    (the same operations in the same order, no contracted multiply-adds), migrate one cell per
 *    dimension along d_0, d_1, d_2 (up, then down) with forwarding, and the new home molecules
 *    are listed by increasing global index (a rank sort), as hx_migrate leaves them;
 *  - pulse by pulse the same selection (distance to the receiver's cell with corner rounding),
 *    the same stable order of every send map by the sender's zone, the same dependency sets;
 *  - the topology of every local atom (type, charge, exclusions, position in its molecule,
 *    masses) from per-molecule-class tables uploaded once, indexed by global molecule id.
 *
 * Messages between domains go through a transport (hx_gpu_dd_transport, below): every message
 * carries its own size in its first 8 bytes and lands in a receive buffer of fixed capacity, so
 * a transport that moves data on the device (NVSHMEM, the in-process one) needs no host round
 * trip, and a CPU-driven one reads the sizes after a synchronisation and moves bytes it does not
 * interpret. Every buffer has a capacity fixed at creation (the global maximum at the start plus
 * a margin); a kernel that would exceed one writes nothing beyond it and records the size it
 * needed. The host reads those needs with the counts, agrees on them in the one reduction of the
 * step, and when any domain overflowed every process grows the buffers and runs the step again
 * from the unchanged state (the slow path; the tests force it with the fault site
 * "gpu_dd.shrink", src/core/fault.h: hx_gpu_decomp_create's capacities divided by
 * HX_GPU_DD_TEST_SHRINK). */
#ifndef HX_GPU_DECOMP_GPU_H
#define HX_GPU_DECOMP_GPU_H

#include <stdint.h>

#include "gpu/stream.h"
#include "halox/decomp.h"
#include "halox/md.h"
#include "halox/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the fault site "gpu_dd.shrink" divides the capacities by (the current home still fits) */
#define HX_GPU_DD_TEST_SHRINK 8

/* ---- transport ------------------------------------------------------------------------------ */

/* Message channels. Channel c of every local domain has a send buffer and a receive buffer of
 * cap[c] bytes in device memory. A message is [int64 total bytes | payload], total <= cap. One
 * message per channel and search step, so a sender never overwrites a receive buffer still being
 * read (neighbours exchange halo data in both directions at every step in between). */
typedef struct hx_gpu_dd_transport {
    void *ctx;
    const char *name;
    /* 1: msg only enqueues device work (the step can be one CUDA graph) */
    int device_only;
    /* Collective: (re)allocate nchan channels with the given capacities (the same on every
     * process), contents lost. send[i][c], recv[i][c] receive the buffers of local domain i. */
    hx_status (*setup)(void *ctx, int nchan, const size_t *cap, void ***send, void ***recv);
    /* Enqueue on stream: every local domain i sends its message of channel c to domain dest[i]
     * and receives the one domain src[i] sends into its receive buffer of channel c. */
    hx_status (*msg)(void *ctx, int chan, const int *dest, const int *src, hx_stream stream);
    void (*destroy)(void *ctx);
} hx_gpu_dd_transport;

/* The in-process transport: every domain of a decomposition in this process on this device
 * (the serial communicator); messages are copies by a kernel that reads the size on the
 * device. */
hx_status hx_gpu_dd_transport_local(hx_comm *comm, hx_gpu_dd_transport *t);

/* ---- the device decomposition --------------------------------------------------------------- */

typedef struct hx_gpu_decomp hx_gpu_decomp;

/* The state of one local domain's home atoms on the device, in home order (the order of the
 * last search): double [3 n] positions and velocities. Read only. */
typedef struct hx_gpu_dd_state {
    const double *x, *v;
} hx_gpu_dd_state;

/* Counts of one local domain after a search step (host memory). */
typedef struct hx_gpu_dd_counts {
    int n_home, nmol, n_local, map_len;
    int send_zone_count[HX_MAX_PULSES][HX_MAX_ZONES];
    int recv_zone_count[HX_MAX_PULSES][HX_MAX_ZONES];
    uint64_t deps[HX_MAX_PULSES];
    /* home molecules by kind (as the GPU backend's set_local sorts them) */
    int nsettle, nshake, nbonded, nfree;
    int settle_consecutive; /* SETTLE group w is atoms settle[0] + 3 w + (0, 1, 2) */
    int settle_first;       /* settle[0] when consecutive (with standard masses), else -1 */
    int bonded_count[4];    /* bonds, angles, dihedrals, 1-4 pairs of the bonded molecules */
} hx_gpu_dd_counts;

/* Device arrays of one local domain after a search step (valid until the next one). */
typedef struct hx_gpu_dd_local {
    const hx_gpu_dd_counts *c;
    /* new home, home order: positions (wrapped, as hx_migrate leaves them) and velocities */
    const double *x, *v;            /* [3 n_home] */
    const int *gid;                 /* [n_home] global atom index */
    const int *mol_gid, *mol_start; /* [nmol], [nmol + 1] */
    /* local atoms [home | pulse 0 | pulse 1 | ...] */
    const int *type, *mol;        /* [n_local] LJ type, global molecule index */
    const double *q;              /* [n_local] */
    const uint32_t *excl;         /* [n_local] exclusions over positions in the molecule */
    const unsigned char *mol_pos; /* [n_local] */
    const int *lgid;              /* [n_local] global atom index */
    const int *zone;              /* [n_local] zone */
    /* home atoms */
    const double *mass, *invmass; /* [n_home] as the host path computes them */
    const int *settle;            /* [3 nsettle] O, H, H (local indices) */
    const int *free_at;           /* [nfree] atoms in neither a SETTLE nor a SHAKE group */
    const int *shake_start, *shake_type, *shake_gid;    /* [nshake] (type: of the force field) */
    const int *bonded_start, *bonded_type, *bonded_gid; /* [nbonded] */
    /* [4 nbonded]: each bonded molecule's first interaction of each kind (bonds, angles,
     * dihedrals, 1-4 pairs) within the kind */
    const int *bonded_off;
    /* the index maps, written into the device plan image (hx_plan_set_device_image) */
    const int *index_map; /* [map_len] */
} hx_gpu_dd_local;

/* Times of the last search step, s. */
typedef struct hx_gpu_dd_times {
    double device; /* launch to synchronisation (wall time) */
    /* device time of the parts (events between them): migration, the new home and its lists,
     * plan maps with the local topology */
    double migrate, local_set, plan;
    double counts; /* reading the counts and the step's reduction */
    int retries;   /* slow-path runs (capacities grown) */
} hx_gpu_dd_times;

/* Collective. dec: the host decomposition after its first plan build (geometry, the plan's
 * pulses, the homes as distributed); sys with the force field applied (ff: its moltypes decide
 * SETTLE, SHAKE and bonded molecules as the GPU backend does; NULL: none), the same on every
 * rank. t: the transport (taken over: destroyed with the decomposition). Capacities from the
 * global maxima of the current plan plus a margin; the homes' molecule lists are uploaded (the
 * one time they travel), their positions stay where the caller keeps them. */
hx_status hx_gpu_decomp_create(const hx_decomp *dec, const hx_system *sys, const hx_forcefield *ff,
                               const hx_gpu_dd_transport *t, hx_gpu_decomp **out);
void hx_gpu_decomp_destroy(hx_gpu_decomp **g);

/* With HALOX_GPU_DD_KTIMES=1 in the environment at create (a diagnosis; the step then launches
 * directly, never as graphs): each kernel's device time, from an event after every launch and
 * message ("message"), summed over the runs of the search step so far (a run: one launch of
 * the step; slow-path runs count). Up to max entries in launch order of first appearance:
 * name (a string literal), ms (total), launches (total); returns the count and *runs; 0 when
 * off. The destroy logs the table (info level). */
int hx_gpu_decomp_kernel_times(const hx_gpu_decomp *g, int max, const char **name, double *ms,
                               long long *launches, long long *runs);

/* Collective: the search step. in[i]: the home state of local domain i in the order of the
 * previous search (the homes of dec at creation); step: for messages; local: this process's
 * status on entry (a failure noted since the last collective: the step still runs, so that the
 * neighbours get their messages, and the failure is agreed in the step's one reduction, which
 * then fails on every process with nothing committed; so the step needs no agreement of its own
 * before it). Runs migration, the new
 * local set and the plan's index maps on the device, reads the counts, agrees on them (one
 * reduction over the job: failures, overflows, maxima) and, when a capacity overflowed anywhere,
 * grows and runs again. gmax receives the global maxima [n_local, send_count of each pulse] that
 * the plan's capacities need (hx_plan_set_counts). On return the results of every local domain
 * are in hx_gpu_decomp_local; the home order of the next step is the new one. stream: where the
 * step's parts run, replayed as graphs (HALOX_GPU_DD_GRAPH, default on); NULL, the legacy default
 * stream, cannot be captured, so there they are launched directly. */
hx_status hx_gpu_decomp_run(hx_gpu_decomp *g, long long step, hx_status local,
                            const hx_gpu_dd_state *in, hx_stream stream, long long *gmax,
                            hx_gpu_dd_times *times);
const hx_gpu_dd_local *hx_gpu_decomp_local(const hx_gpu_decomp *g, int i);
/* Home molecule lists of local domain i into a host home store (output, checkpoints: not on the
 * search step). Positions and velocities are not touched. */
hx_status hx_gpu_decomp_home_lists(const hx_gpu_decomp *g, int i, hx_home *home);
/* Growths so far (slow-path runs), for logs and tests. */
int hx_gpu_decomp_growths(const hx_gpu_decomp *g);
/* The device plan image of local domain i (header and per-pulse fields come from the host's
 * image, the maps are written by the search step): register it with the plan
 * (hx_plan_set_device_image) so that the halo backends use it. Moves only at a growth. */
hx_status hx_gpu_decomp_image(const hx_gpu_decomp *g, int i, void **img, size_t *cap);
/* Home and halo atom extremes over the job, from the last step's reduction. */
void hx_gpu_decomp_stats(const hx_gpu_decomp *g, long long *home_max, long long *home_min,
                         long long *halo_max, long long *halo_min);

#ifdef __cplusplus
}
#endif
#endif
