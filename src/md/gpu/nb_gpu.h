/* GPU non-bonded interactions on one local atom set (private to halox; C-callable).
 *
 * What it does: Lennard-Jones (potential shift) + reaction field in the conventions of the CPU
 * path (src/md/nonbonded.c), on cluster-pair lists built on the GPU, for the atoms of an
 * hx_local_set: one GPU alone (ndim 0, one zone, all periodic) or one domain of a
 * decomposition (zones, open decomposed dimensions). docs/design/gpu-engine.md explains the
 * layout; in short:
 *  - atoms are binned into columns, sorted, and cut into super-clusters of 64 atoms, each split
 *    2 x 2 x 2 into clusters of 8; a list entry is (i super-cluster, image shift, run of j
 *    clusters), each j cluster with a mask of the i clusters each of its halves (4 atoms)
 *    interacts with and an optional per-thread exclusion mask;
 *  - a block of 64 threads computes an entry: thread (j atom tj, i atom ti) loops over the j
 *    clusters and the i clusters, i forces in registers, j forces reduced by warp shuffles;
 *  - the outer list (radius rlist) is pruned to an inner one (radius rlist_inner) on the GPU:
 *    all at once at the search, then one part per step ("rolling"), when prune_parts > 0;
 *  - excluded pairs (same molecule, from a per-atom exclusion mask) are skipped by the pair
 *    kernel; their reaction-field term and the self term are computed per home atom in double,
 *    exactly as the CPU path does.
 *
 * Data exchanged with the caller, all on the device:
 *  - positions: float [cap][3], local atom order (home atoms, then halo atoms as the halo
 *    exchange delivers them), never re-wrapped between searches;
 *  - forces: float [cap][3], local atom order. The ops ADD into it; the caller clears home
 *    atoms' forces (the GPU update does, after using them); hx_gpu_nb_nonlocal clears the halo
 *    atoms' forces before it adds the non-local forces.
 *
 * Per-step ops take a CUDA stream (hx_stream, NULL for the default stream) of the current device
 * (the owner, the MD backend, makes its GPU context's device current), never synchronise,
 * never allocate and launch fixed configurations between two searches, so that a step can be
 * captured in a CUDA graph. hx_gpu_nb_search is the exception: it synchronises once at its end
 * (to read the list sizes and grow buffers), and grids may change after it: capture again. */
#ifndef HX_GPU_NB_GPU_H
#define HX_GPU_NB_GPU_H

#include <stdint.h>

#include "halox/md.h"
#include "halox/status.h"
#include "gpu/stream.h"
#include "md/gpu/update_gpu.h" /* hx_gpu_update_link */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hx_gpu_nb hx_gpu_nb;

typedef struct hx_gpu_nb_params {
    double rc;          /* cut-off, nm */
    double eps_rf;      /* reaction-field dielectric; 0: infinity */
    double eps_r;       /* relative dielectric (1 when 0) */
    double rlist;       /* outer pair-list radius, >= rc */
    double rlist_inner; /* pruned list radius in [rc, rlist]; 0: rlist (no rolling prune) */
    int prune_parts;    /* rolling prune: the outer list is re-pruned in this many parts, one per
                           step (0: pruned once at the search only) */
    /* Excluded atom pairs are never farther apart than this (nm); the search uses it to find
     * the cluster pairs that may hold exclusions and checks it (0: 0.5 nm). Rigid water: 0.25. */
    double max_excl_dist;
    /* Pair kernel (HX_GPU_NB_KERNEL_*; 0: auto, the fastest one the force field allows, or the
     * environment variable HALOX_GPU_NB_KERNEL = ref, table, comb, comb-2hs, comb-2hsn). */
    int kernel;
} hx_gpu_nb_params;

/* Variants of the forces-only pair kernel (the energy kernel is always the reference one).
 * docs/design/gpu-engine.md, "The pair kernel" and "Roofline", gives their instruction counts
 * and times; the variants that lost on the H200 (prefetch, comb-2h, comb-2hsp, table-2h,
 * comb-2hsi) are gone. */
enum {
    HX_GPU_NB_KERNEL_AUTO = 0,
    HX_GPU_NB_KERNEL_REF = 1,   /* the first kernel (per-cluster divergent branches, table) */
    HX_GPU_NB_KERNEL_TABLE = 2, /* uniform mask branches, no-exclusion fast path, LJ table */
    HX_GPU_NB_KERNEL_COMB = 3,  /* as TABLE, LJ by the geometric rule (when the table obeys it) */
    /* one warp per whole j cluster (both halves), i data shared between them, i forces reduced
     * by shuffles, geometric-rule factors per slot (issue 28) */
    HX_GPU_NB_KERNEL_COMB_2HS = 4,
    /* comb-2hs with the next item's mask and item loaded while this one is computed (the
     * item's chain of dependent loads is then the j atoms' alone): the default where the force
     * field obeys the rule, compiled for 14 resident blocks (measured: nb_gpu.cu) */
    HX_GPU_NB_KERNEL_COMB_2HSN = 5,
    HX_GPU_NB_KERNEL_N = 6
};

/* ff: the force field (types, LJ tables); at most 32 types. */
hx_status hx_gpu_nb_create(const hx_forcefield *ff, const hx_gpu_nb_params *p, hx_gpu_nb **out);
void hx_gpu_nb_destroy(hx_gpu_nb **nb);

/* The local atom set's topology (set->x is not read: positions come from the device array).
 * excl: [n] exclusion masks, bit k of atom a set when a is excluded from atom (first atom of a's
 * molecule) + k; molecules are contiguous, at most 32 atoms. NULL: every pair within a molecule
 * is excluded (rigid water). Call at every repartition, before hx_gpu_nb_search. Synchronous. */
hx_status hx_gpu_nb_set_atoms(hx_gpu_nb *nb, const hx_local_set *set, const uint32_t *excl,
                              hx_stream stream);

/* The same from device arrays (the device search step, src/md/gpu/decomp_gpu.h): zone, LJ type,
 * global molecule, charge, exclusions over positions in the molecule and the position, per
 * local atom; zone_count: atoms per zone. Enqueued on the stream, no synchronisation; buffers
 * are allocated only when n exceeds the capacity (hx_gpu_nb_reserve ahead avoids it). */
typedef struct hx_gpu_nb_dev_set {
    int n, ndim;
    /* 0: every atom. Else the home atoms (zone 0), as many as first, were set by the call
     * before (with no other zone) and the home part of the search launched on them
     * (hx_gpu_nb_search_home): they stay, and the next hx_gpu_nb_search runs the rest of it.
     * Where that does not hold every atom is set, and the search runs whole. */
    int first;
    int periodic[3];
    double box[3];
    int zone_count[8];
    const int *zone, *type, *mol;
    const double *q;
    const uint32_t *excl;
    const unsigned char *mol_pos;
} hx_gpu_nb_dev_set;
hx_status hx_gpu_nb_set_atoms_device(hx_gpu_nb *nb, const hx_gpu_nb_dev_set *set, hx_stream stream);
/* Room for n atoms (synchronous when it grows). */
hx_status hx_gpu_nb_reserve(hx_gpu_nb *nb, int n);

/* Pair search on device positions x (float [n][3]). Builds the local and non-local lists and
 * prunes them. Synchronises the stream once; on buffer overflow it grows and searches again. A
 * non-finite coordinate or an excluded pair farther than max_excl_dist is HX_ERR_PHYSICS. */
hx_status hx_gpu_nb_search(hx_gpu_nb *nb, const float *x, hx_stream stream);
/* The home part of the next search of a decomposed domain, enqueued on the stream with no
 * synchronisation, once the home atoms alone are set (hx_gpu_nb_set_atoms_device with only
 * zone 0): zone 0's grid, super-clusters and the local list, while the host still prepares the
 * halo. Then hx_gpu_nb_set_atoms_device with first = the home atoms sets the halo's, and
 * hx_gpu_nb_search (on a stream ordered after both) builds the rest. A no-op with one zone,
 * with HALOX_GPU_SEARCH_HOME=0 or with the stage timing (the search then runs whole). */
hx_status hx_gpu_nb_search_home(hx_gpu_nb *nb, const float *x, hx_stream stream);

enum {
    HX_GPU_NB_ENERGY = 1 /* compute energies (double sums); fetch them with the calls below */
};

/* Local work: gather home positions into the cluster layout (unless the last update wrote
 * them, hx_gpu_nb_update_link), the zone 0 x zone 0 pairs, and beside the pair kernel, on a
 * stream of its own that the given stream joins after it (capturable): the home atoms' self
 * and excluded-pair reaction-field terms (forces added to f) and, with prune_parts > 0, the
 * local list's rolling prune. */
hx_status hx_gpu_nb_local(hx_gpu_nb *nb, const float *x, float *f, int flags, hx_stream stream);
/* Non-local work, after the halo coordinates are in x: waits (on the device) for the local
 * gather, gathers the halo positions, clears the halo atoms' forces in f, computes every pair
 * with a halo atom and adds the halo atoms' forces to f (home atoms' get theirs in
 * hx_gpu_nb_reduce_home or the update). With prune_parts > 0 the non-local list's rolling
 * prune runs beside the pair kernel, as the local one's. A no-op without halo zones. */
hx_status hx_gpu_nb_nonlocal(hx_gpu_nb *nb, const float *x, float *f, int flags, hx_stream stream);
/* Adds the home atoms' pair forces to f (atomically). Waits (on the device) for this step's
 * non-local work when there was any; call it after hx_gpu_nb_local (and _nonlocal). */
hx_status hx_gpu_nb_reduce_home(hx_gpu_nb *nb, float *f, hx_stream stream);

/* Hands the home atoms' force reduction and position gather to this step's GPU update
 * (update_gpu.h, hx_gpu_update_link): link receives the cluster layout of the current list.
 * The caller then skips hx_gpu_nb_reduce_home for the step and passes link to
 * hx_gpu_update_step; commit: that update commits (writes the positions), and the next
 * hx_gpu_nb_local skips its gather. Call it after hx_gpu_nb_local and before the update: with
 * HALOX_GPU_PRUNE_AT=update it launches the step's rolling prune beside the update and hands
 * the update an event to join (link->join). */
hx_status hx_gpu_nb_update_link(hx_gpu_nb *nb, int commit, hx_gpu_update_link *link);
/* Whether step schedules hand the reduction and gather to the update (above): yes, unless the
 * environment sets HALOX_GPU_FUSE_UPDATE=0 (the separate kernels, for comparison). */
int hx_gpu_nb_fuse_update(void);

/* Energies of the latest step computed with HX_GPU_NB_ENERGY: fetch copies them to host memory
 * on the stream (capturable); read them after synchronising it. npairs: pairs within the
 * cut-off that were computed (may be NULL). */
hx_status hx_gpu_nb_fetch_energies(hx_gpu_nb *nb, hx_stream stream);
void hx_gpu_nb_read_energies(const hx_gpu_nb *nb, hx_nb_energies *e, long long *npairs);

/* Switches the forces-only pair kernel (HX_GPU_NB_KERNEL_*, AUTO: the default choice) between
 * steps (tests and benchmarks compare the variants on one list); the geometric-rule ones fall
 * back to the table when the force field does not obey the rule. Not inside a capture. */
hx_status hx_gpu_nb_set_kernel(hx_gpu_nb *nb, int kernel);

/* The stages of a pair search, in order: status upload and preparation (k_prep), binning
 * (grid, bin, scan, fill), column sort, super-clusters (boxes, layout), list build, the full
 * prune, status download. */
#define HX_GPU_SEARCH_STAGES 7
typedef struct hx_gpu_nb_stats {
    int natoms, nzones;
    int nsc, nslots;           /* super-clusters, atom slots (64 per super-cluster) */
    int ncols;                 /* grid columns */
    int nent[2], nitems[2];    /* list entries and (entry, j cluster) items: local, non-local */
    long long ncp_outer[2];    /* cluster-pair halves (8 x 4 atoms) in the outer list */
    long long ncp_inner[2];    /* ... in the inner list after the search: cluster boxes within
                                * rlist_inner with the rolling prune (until each part's first
                                * rolling prune), else pruned by atom distances */
    int nexcl;                 /* items with an exclusion mask */
    int max_cj_per_entry;      /* entry length cap (work split) */
    double rlist, rlist_inner; /* nm */
    int prune_parts;
    int searches, regrows; /* searches done, buffer growths (a search is redone after one) */
    int search_captures;   /* captures of the search's graph (first, then after changes) */
    int home_parts; /* searches whose home part ran ahead (hx_gpu_nb_search_home) and served */
    /* HALOX_GPU_PDL=1: captured steps whose update was handed the local pair kernel's graph
     * node, for its programmatic edge (hx_gpu_nb_update_link) */
    int pdl_links;
    /* device time of each stage of the search, summed over the searches (ms), with
     * HALOX_GPU_SEARCH_TIMING=1 at create (events between the stages), else zero; names from
     * hx_gpu_search_stage_name */
    double search_stage_ms[HX_GPU_SEARCH_STAGES];
} hx_gpu_nb_stats;
const char *hx_gpu_search_stage_name(int stage);
void hx_gpu_nb_get_stats(const hx_gpu_nb *nb, hx_gpu_nb_stats *s);

/* Benchmark helper: the pair kernel of list 0 (local) or 1 (non-local) alone, reps launches
 * back to back timed with CUDA events on the stream (after one warm-up launch), the rolling
 * prune kernel likewise when prune is set; ms per launch. The forces the launches accumulate
 * are discarded (the cluster force buffer is zeroed afterwards). Synchronous; call it between
 * steps, never inside a capture. */
hx_status hx_gpu_nb_time_kernels(hx_gpu_nb *nb, int list, int flags, int reps, hx_stream stream,
                                 double *pair_ms, double *prune_ms);

/* The list as host data, for tests: positions and masks are those of the last search. */
typedef struct hx_gpu_nb_list_host {
    int nslots;
    int *perm;           /* [nslots] local atom of a slot, -1 for padding */
    float *xq;           /* [4 nslots] positions (wrapped as the search saw them; the gather of
                            every step rewrites them) and charges */
    int nent[2];         /* entries per class (0 local, 1 non-local) */
    int *ent[2];         /* [4 nent]: i super-cluster, shift index, item begin, item end */
    int nitems[2];       /* items per class */
    uint32_t *items[2];  /* [2 nitems]: j cluster, exclusion mask index */
    uint16_t *mask[2];   /* [nitems] pruned: bit 8 h + ic: i cluster ic x half h of the j cluster */
    uint16_t *masko[2];  /* [nitems] the same, unpruned */
    int nexcl;           /* exclusion masks 1..nexcl (0: none) */
    uint8_t *excl;       /* [64 (nexcl + 1)]: byte tj*8+ti, bit ic: pair interacts */
    double shift[27][3]; /* shift index -> vector added to the j atom */
    int ncols;           /* the search's grid columns */
    int *col_start;      /* [ncols + 1] each column's first place in col_atoms */
    int *col_atoms;      /* [n] local atoms, each column's sorted by z (ties by atom) */
    float *wpos;         /* [3 n] each local atom's position as the search saw it (wrapped) */
} hx_gpu_nb_list_host;
hx_status hx_gpu_nb_list_download(const hx_gpu_nb *nb, hx_gpu_nb_list_host *out);
void hx_gpu_nb_list_host_free(hx_gpu_nb_list_host *l);

#ifdef __cplusplus
}
#endif
#endif
