/* Internals of the GPU non-bonded module shared by nb_gpu.cu (per-step kernels, set-up) and
 * search_gpu.cu (the pair search). Layouts:
 *
 *  slot s = 64 * sc + 8 * c + k: atom k of cluster c of super-cluster sc. Per slot:
 *    perm[s]   local atom, -1 for padding
 *    xq[s]     float4 x, y, z, q: positions with the slot's wrap added (rewritten every step
 *              by the gather), charge
 *    swq[s]    float4 wrap offset (multiple of the box) and charge: the gather's input
 *    stype[s]  LJ type (0 for padding, which is masked everywhere)
 *    sfirst[s], smask[s]: exclusion description (first local atom of the molecule, mask)
 *    fcl[3s..] float force accumulator (kernels add atomically; the reductions read and zero it)
 *  cl_bb[2 cl], cl_bb[2 cl + 1]: bounding box lo (w = atoms in the cluster), hi of cluster cl.
 *  sc_bb likewise per super-cluster.
 *
 *  Lists, per class (0: zone 0 x zone 0, half list; 1: everything else):
 *    ent[e]     int4 (i super-cluster, shift index, item begin, item end)
 *    items[k]   uint2 (j cluster, excl index): excl 0: every atom pair of the cluster pairs
 *               interacts, else excl_tab[64 excl + t] is thread t's mask (t = 8 tj + ti: j atom
 *               tj, i atom ti; bit ic);
 *    mask[k]    16 bits: bit 8 h + ic: i cluster ic of the entry's super-cluster interacts with
 *               half h of the j cluster (j atoms 4h..4h+3, the atoms warp h of a block
 *               computes); pruned per half, so a warp skips a half-cluster out of range.
 *               masko: the outer (unpruned) mask, both halves equal (bounding boxes).
 *  Shift index (kx+1) + 3 (ky+1) + 9 (kz+1): the j atom's image is x_j + (kx Lx, ky Ly, kz Lz).
 */
#ifndef HX_GPU_NB_GPU_IMPL_CUH
#define HX_GPU_NB_GPU_IMPL_CUH

#include "gpu/gpu_util.cuh"
#include "md/gpu/nb_gpu.h"

#include <limits.h>
#include <string.h>

#define GNB_CL 8   /* atoms per cluster */
#define GNB_SCC 8  /* clusters per super-cluster */
#define GNB_SCA 64 /* atoms per super-cluster */
#define GNB_NSHIFT 27
#define GNB_CENTER 13
/* A list-build work item: i super-cluster, j zone from the i zone's first (GNB_LB_ALLZ: every
 * one in turn), image shift index */
#define GNB_LB_ALLZ 15
#define GNB_LB_ITEM(sci, jk, img) ((sci) << 9 | (jk) << 5 | (img))
#define GNB_LB_SCI(item) ((item) >> 9)
#define GNB_LB_JZ(item) (((item) >> 5) & 15)
#define GNB_LB_IMG(item) ((item)&31)
/* no item: a home super-cluster's central slot in the rest of a split search (GNB_PART_REST) */
#define GNB_LB_NONE (-1)
#define GNB_MAXZ 8
#define GNB_MAXTYPES 16 /* LJ types (static shared tables of the pair kernels) */
#define GNB_BIG 1.0e30f /* empty bounding boxes: [BIG, -BIG] */
#define GNB_FAR 1.0e7f  /* padding positions (masked everywhere; kept finite) */
#define GNB_ITEMBUF 512 /* list items buffered in shared memory per search block */

/* overflow bits of gnb_status.overflow: the search is redone with larger buffers */
enum {
    GNB_OVF_COLS = 1,
    GNB_OVF_SC = 2,
    GNB_OVF_SORT = 4,
    GNB_OVF_CAND = 8,
    GNB_OVF_ITEMS = 16,
    GNB_OVF_ENT = 32,
    GNB_OVF_EXCL = 64,
    GNB_OVF_EARLY = GNB_OVF_COLS | GNB_OVF_SC /* later search kernels must not run */
};

typedef struct gnb_zone_grid {
    float lo[2], cw[2]; /* column grid origin and edge along x, y */
    int nc[2];          /* columns along x, y (0: empty zone) */
    int col0;           /* first column of the zone (global numbering) */
    int natoms;         /* atoms of the zone */
    int pad[2];
} gnb_zone_grid;

/* Written by the search kernels, read by the host after the search. */
typedef struct gnb_status {
    int n; /* atoms of the next search (the kernels' count): written where the atoms are set */
    int overflow;
    int ncols, nsc;
    int zsc[GNB_MAXZ + 1];  /* first super-cluster of each zone, zsc[nzones] = nsc */
    int nent[2], nitems[2]; /* needed list sizes (may exceed the capacities) */
    int nexcl;              /* exclusion masks used (index 0 excluded) */
    int max_col_atoms;      /* largest column */
    int max_cand;           /* most candidate j super-clusters of one search group */
    int bad_atom;           /* first atom with a non-finite coordinate, INT_MAX: none */
    int bad_excl;           /* first atom with an excluded partner too far, INT_MAX: none */
    int zext[GNB_MAXZ][6];  /* open zones' extents as float keys: lo xyz, hi xyz */
    unsigned long long ncp_outer[2], ncp_inner[2];
    int nwork_extra; /* list-build work items past the first (one per i super-cluster) */
    int wnext;       /* the next work item a list-build block takes */
    unsigned tick;   /* blocks finished of the running kernel (hx_last_block; 0 between) */
} gnb_status;

/* The status record as a search finds it: nothing counted, no bad atom, empty extents; n atoms.
 * On the host for the record's first value; on the device by the block that copies a search's
 * record out (gnb_status_out), so that the next search needs no upload of it. */
static __host__ __device__ inline void gnb_status_fresh(gnb_status *s, int n)
{
    memset(s, 0, sizeof *s);
    s->n = n;
    s->bad_atom = INT_MAX;
    s->bad_excl = INT_MAX;
    const float big = GNB_BIG, nbig = -GNB_BIG;
    int kb, knb;
    memcpy(&kb, &big, 4);
    memcpy(&knb, &nbig, 4);
    knb ^= 0x7fffffff; /* hx_float_key of a negative float */
    for (int z = 0; z < GNB_MAXZ; z++)
        for (int k = 0; k < 3; k++) {
            s->zext[z][k] = kb;
            s->zext[z][3 + k] = knb;
        }
}

/* A search's status record st into the host's pinned copy h_st (its device address), then st
 * made fresh for the next search, its atom count kept. Called by every thread of the one block
 * that writes it (the last to finish of the search's last kernel). */
static __device__ __forceinline__ void gnb_status_out(gnb_status *h_st, gnb_status *st)
{
    hx_block_to_host(h_st, st, sizeof(gnb_status));
    __syncthreads(); /* every thread has read its words of st */
    if (threadIdx.x == 0) {
        gnb_status r;
        gnb_status_fresh(&r, hx_ldv(&st->n));
        *st = r;
    }
}

/* Parts of a search (gnb_dev.part). A decomposed domain's home zone is known before its halo:
 * its grid, columns, super-clusters and the local list (zone 0 x zone 0) are built by
 * GNB_PART_HOME while the host still makes the halo's plan; GNB_PART_REST then runs the same
 * kernels on the other zones only (zone 0's atoms, columns, super-clusters and column counts
 * are kept) and builds every other list entry. The status record carries the home part's results
 * (the local list's sizes, the exclusion masks used, overflows, the zone's extents) into the
 * rest, whose last block writes it for the host. */
enum { GNB_PART_ALL = 0, GNB_PART_HOME = 1, GNB_PART_REST = 2, GNB_NPARTS = 3 };

/* Device pointers and constants, passed by value to the kernels. */
typedef struct gnb_dev {
    /* per local atom */
    int *azone, *atype, *afirst;
    unsigned *amask;
    float *aq;
    double *aqd;   /* charges in double (self and excluded-pair terms) */
    float4 *wpos;  /* wrapped position at the search */
    float4 *awrap; /* wrap offset at the search */
    int *colatoms; /* the atoms by column, each column's in z order (k_col_sort) */
    /* per column: a bucket of sort_cap atoms as binned (k_bin), before k_col_sort orders them */
    int *colfill;
    int *aslot; /* slot of each atom in the cluster layout (the search's) */
    /* per column */
    int *col_count, *col_start, *col_sc;
    float4 *col_bb; /* x lo, x hi, y lo, y hi */
    /* per super-cluster / cluster / slot */
    float4 *sc_bb, *cl_bb;
    int *perm, *stype, *sfirst;
    unsigned *smask;
    float4 *xq, *swq;
    double *sqd;   /* charges in double (energy kernel) */
    float2 *scomb; /* geometric-rule factors (sqrt(6 c6), sqrt(12 c12)) of the slot's type,
                      written by the search's k_sc_build; read by k_nb_2h */
    float *fcl;
    /* lists */
    int4 *ent[2];
    uint2 *items[2];
    unsigned short *mask[2], *masko[2];
    uint8_t *excl;
    /* list-build work items (GNB_LB_ITEM): the central image of every i super-cluster against
     * its first j zone at [sci], then its other images and zones (lb_work_items); 27 per
     * super-cluster at most (3^(3-k) images times at most 2^k j zones with k decomposed
     * dimensions) */
    int *lb_work;
    /* misc */
    gnb_zone_grid *grid;
    gnb_status *st;
    double *energy;                   /* [2]: LJ, Coulomb */
    unsigned long long *npairs;       /* pairs within the cut-off (energy kernels) */
    unsigned *prune_ctr, *prune_done; /* [2] each: rolling prune part counter, block counter */
    /* capacities */
    int cap_cols, cap_sc, cap_ent[2], cap_items[2], cap_excl, sort_cap, cand_cap;
    /* constants */
    int n, nz, nzi, ndim;
    int jz0[4], jz1[4];
    int periodic[3];
    float box[3];
    double boxd[3];
    float rlist2, rinner2, rc2, excl2;
    int rolling;  /* the rolling prune is on (prune_parts > 0) */
    int lb_zones; /* one list-build item per j zone (HALOX_GPU_LB_ZONES, default 1) */
    /* which part of a search the kernels run (GNB_PART_*): the whole search, or the home zone's
     * part alone (launched as soon as the home atoms are known) and later the rest */
    int part;
    /* the column sort: ranked within z-bins (1, HALOX_GPU_COL_SORT=bin, the default) or
     * against the whole column (0, rank; col_sort_split blocks per column) */
    int sort_bins;
    float rlist;
    int max_cj;
    int ntypes;
    float epsfac, krf, crf, two_krf;
    double epsfac_d, krf_d, crf_d, rc2_d, irc6_d, irc12_d;
    float4 shift[GNB_NSHIFT];
} gnb_dev;

struct hx_gpu_nb {
    hx_gpu_nb_params p;
    hx_rf_consts rf;
    int ntypes;
    /* LJ table: nt^2 float2 (6 c6, 12 c12) for the forces, then nt^2 double2 (c6, c12) for
     * the energies (16-byte aligned: 8 + 16 bytes per type pair), then nt float2 (sqrt(6 c6_tt),
     * sqrt(12 c12_tt)), the geometric-rule factors (lj_comb_off: their byte offset) */
    unsigned char *d_lj;
    size_t lj_comb_off;
    int lj_geometric; /* every c6_ij, c12_ij is the geometric mean of the types' own */
    int kernel;       /* HX_GPU_NB_KERNEL_* in use (never AUTO) */
    int resident; /* comb-2hs(n): resident blocks per multiprocessor compiled for (16, 14, 12) */
    int entry_blocks; /* HALOX_GPU_NB_ENTRY_BLOCKS (0: 48 per multiprocessor) */
    int lb_blocks;    /* HALOX_GPU_LB_BLOCKS (0: LB_BLOCKS_PER_SM) */
    gnb_dev d;
    /* set */
    int cap_atoms;
    int have_set, have_list;
    /* host-known results of the last search */
    gnb_status *h_st;   /* pinned */
    gnb_status *h_st_d; /* the same memory as the device addresses it (the list
                           build's last block or k_search_tail writes it) */
    double *h_energy;   /* pinned [2] */
    unsigned long long *h_npairs;
    int nsc, ncols, zsc[GNB_MAXZ + 1], nent[2], nitems[2], nexcl;
    long long ncp_outer[2], ncp_inner[2];
    int sm_count, smem_optin;
    int searches, regrows;
    long long items_est;
    /* per-step state */
    cudaEvent_t ev_gather, ev_nonlocal;
    /* the local list's rolling prune runs beside the local pair kernel (hx_gpu_nb_local), or
     * with HALOX_GPU_PRUNE_AT=update (prune_at_update) beside the update: prune_due from the
     * pair kernel (ev_pairs) to its launch by hx_gpu_nb_update_link (ev_prune_upd: its end) */
    cudaStream_t s_prune;
    cudaEvent_t ev_prune, ev_pairs, ev_prune_upd;
    int prune_at_update, prune_due;
    int prune_fast; /* k_prune<true> (the default; HALOX_GPU_PRUNE=classic: k_prune<false>) */
    /* and the non-local list's beside the non-local pair kernel (hx_gpu_nb_nonlocal) */
    cudaStream_t s_prune_nl;
    cudaEvent_t ev_gather_nl, ev_prune_nl;
    int nonlocal_pending;
    /* HALOX_GPU_SEARCH_TIMING=1 (read at create): events between the search's stages, their
     * device times summed over the searches (hx_gpu_nb_stats.search_stage_ms) */
    int time_stages;
    cudaEvent_t ev_stage[HX_GPU_SEARCH_STAGES + 1];
    double stage_ms[HX_GPU_SEARCH_STAGES];
    /* the search's launches as a graph (HALOX_GPU_SEARCH_GRAPH=0 at create: direct launches),
     * with what it was captured for */
    int search_graph;
    cudaStream_t s_capture;
    int search_captures;
    cudaGraphExec_t search_exec[GNB_NPARTS]; /* per part (gnb_dev.part) */
    gnb_dev search_d[GNB_NPARTS];
    const float *search_x[GNB_NPARTS];
    /* the home zone's part of the next search was launched (hx_gpu_nb_search_home): the next
     * hx_gpu_nb_search runs the rest; HALOX_GPU_SEARCH_HOME=0 (read at create): never */
    int home_pending, home_split;
    int home_parts;           /* searches whose home part served (hx_gpu_nb_stats.home_parts) */
    cudaStream_t home_stream; /* where the home part ran */
    int zcount_set[GNB_MAXZ]; /* atoms per zone of the last set */
    /* the last update wrote the home slots' positions (hx_gpu_nb_update_link): the next local
     * step's gather is skipped */
    int home_x_ready;
    /* HALOX_GPU_PDL=1 (read at create, off below sm_90): the graph node of the local pair
     * kernel of the step being captured, for the update's programmatic edge (hx_gpu_nb_local
     * to hx_gpu_nb_update_link); NULL when not capturing */
    int pdl, pdl_links;
    cudaGraphNode_t pdl_node;
};

/* nb_gpu.cu: the full prune of both lists, enqueued by the search behind its kernels */
hx_status gnb_prune_search(hx_gpu_nb *nb, cudaStream_t s);
/* the search's last kernel after gnb_prune_search's prunes: the status record into nb->h_st
 * (with the rolling prune the list build's last block writes it instead) */
hx_status gnb_search_tail(hx_gpu_nb *nb, cudaStream_t s);

#endif
