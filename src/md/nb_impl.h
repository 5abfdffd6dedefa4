/* Private data of the non-bonded module (src/md/nonbonded.c and its parts nb_grid.c,
 * nb_search.c, nb_kernels.c): the cluster layout, the pair lists and the handle. Not a public
 * header. Functions shared between the parts carry the prefix hx_nbi_. */
#ifndef HX_MD_NB_IMPL_H
#define HX_MD_NB_IMPL_H

#include "halox/md.h"

#include <stddef.h>
#include <stdint.h>

#define NSHIFT 27
#define SHIFT_ZERO 13
#define NCLASS 2 /* list 0: zone 0 x zone 0; list 1: every other zone pair */
#define FAR_AWAY 1.0e4
#define NB_BLOCKS_PER_THREAD 4

typedef struct nb_list {
    int nent, cap_ent;
    int *ci, *shift, *jbeg; /* [nent], [nent], [nent+1] */
    int ncj, cap_cj;
    int *cj;
    uint16_t *mask; /* bit 4*ii + jj: pair (i atom ii, j atom jj) interacts */
} nb_list;

/* A search block (lists and scratch); the first nthreads also hold a kernel thread's force
 * buffer and energies. */
typedef struct nb_chunk {
    nb_list list[NCLASS];
    void *fbuf; /* [12 * ncl] reals, cluster-major: fx[4] fy[4] fz[4] */
    size_t cap_fbuf;
    /* search scratch: candidates of one i cluster */
    int ncand, cap_cand;
    int *cand_cj, *cand_key;
    uint16_t *cand_mask;
    long long missed, npairs;
    double vlj, vc;
    double vhome; /* self and excluded-pair reaction-field energy of this thread's molecules */
    int cl_begin, cl_end; /* i clusters */
    hx_status st;
} nb_chunk;

typedef struct nbk_args {
    const void *xq, *lj6, *lj12;
    const int *ts;
    const unsigned char *ljs; /* [ncl] bit k: slot k holds an atom with Lennard-Jones */
    int nslot;
    const double (*shiftvec)[3];
    double rc2, irc6, irc12, krf, crf, epsfac;
} nbk_args;

typedef void (*nbk_fn)(const nbk_args *, const nb_list *, int, int, void *, double *, double *);

typedef struct zone_grid {
    int nc[2];
    double lo[2], cw[2];
    int col0; /* first column of this zone in the global column numbering */
} zone_grid;

struct hx_nb {
    hx_nb_params p;
    hx_rf_consts rf;
    int ntypes;
    double c6[HX_MAX_TYPES * HX_MAX_TYPES], c12[HX_MAX_TYPES * HX_MAX_TYPES];
    int has_lj[HX_MAX_TYPES]; /* type t has a Lennard-Jones interaction with some type */
    int nthreads;
    int nblocks; /* search blocks, NB_BLOCKS_PER_THREAD * nthreads */
    nb_chunk *chunks;
    /* kernel ranges: thread t does class k from (split_b, split_e)[k][t] to [k][t+1] */
    int *split_b[NCLASS], *split_e[NCLASS];
    long long ncj_class[NCLASS]; /* cluster pairs of each class */
    hx_nb_precision precision;
    nbk_fn kernel[2]; /* [1]: with energies, [0]: forces only */
    /* the pair search of one block of i clusters (instruction set chosen with the kernels) */
    void (*search)(hx_nb *, nb_chunk *, const hx_local_set *, double, int);
    const char *kernel_name;
    /* sorted layout */
    int n;                /* local atoms of the list */
    int ncl, nslot;       /* clusters, 4 * clusters */
    int cap_slot;         /* slots allocated */
    int *perm;            /* [nslot] local atom of a slot, -1 for padding */
    double *wrap;         /* [3 nslot] added to x until the next search */
    double *xqd;          /* [16 ncl] double x,y,z,q per cluster (search, double kernel) */
    float *xqf;           /* [16 ncl] float copy (mixed kernel) */
    double *lj6d, *lj12d; /* [ntypes nslot]: c6/c12 of every j slot for each i type */
    float *lj6f, *lj12f;
    int *ts, *ms;         /* [nslot] type (0 for padding), molecule (-1 for padding) */
    uint32_t *xs;         /* [nslot] exclusion mask over the slot atom's molecule (set->excl) */
    unsigned char *ps;    /* [nslot] the slot atom's position in its molecule (set->mol_pos) */
    double *bb;           /* [6 ncl] lo xyz, hi xyz */
    float *bbf;           /* [8 ncl] lo xyz 0, hi xyz 0 rounded outwards: the range tests */
    unsigned char *realm; /* [ncl] bit k: slot k holds an atom */
    unsigned char *ljs;   /* [ncl] bit k: slot k holds an atom with LJ (these come first) */
    double *dmax;         /* [ncl] largest displacement since the previous search */
    double *dslot;        /* [nslot] displacement of each slot's atom (0 for padding) */
    double *xps;          /* [3 nslot] previous-build positions in slot order (cache-friendly) */
    int zcl[HX_MAX_ZONES + 1];
    zone_grid zg[HX_MAX_ZONES];
    int ncols, cap_cols;
    int *colcl;    /* [ncols+1] first cluster of each column */
    double *colbb; /* [4 ncols] x lo, x hi, y lo, y hi */
    int *colcount; /* [ncols+1] scratch */
    /* per-atom scratch (local order) */
    int cap_atoms;
    int *akey, *aord;
    double *apos; /* [3n] wrapped positions */
    /* previous build, for the missed-pair count */
    double *x_prev;
    int n_prev;
    double rlist_prev;
    int have_prev;
    double rlist;
    double shiftvec[NSHIFT][3];
    int ndim;
    int periodic[3];
    double box[3];
};

/* ---- vector types and instruction sets ---------------------------------------------------- */

typedef float vf8 __attribute__((vector_size(32)));
typedef int32_t vi8 __attribute__((vector_size(32)));
typedef float vf4 __attribute__((vector_size(16)));
typedef int32_t vi4 __attribute__((vector_size(16)));
typedef double vd4 __attribute__((vector_size(32)));
typedef int64_t vl4 __attribute__((vector_size(32)));

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(HX_NO_CLONES)
#define HX_HAVE_AVX2_KERNELS 1
/* fp-contract: the project builds with -std=c11, which turns off FMA contraction */
#define HX_AVX2_ATTR __attribute__((target("avx2,fma"), optimize("fp-contract=fast")))
#else
#define HX_HAVE_AVX2_KERNELS 0
#endif

/* v minus the nearest multiple of L; no libm call (nearbyint is one without SSE4.1). Ties and
 * |v| beyond 2^52 L do not matter here: the result only feeds distance comparisons and the
 * minimum-image differences of excluded pairs, which are far below L/2. */
static inline double min_image(double v, double L)
{
    double t = v / L;
    double r = (double)(long long)(t + (t >= 0 ? 0.5 : -0.5));
    return v - L * r;
}

/* ---- nb_grid.c: binning atoms into clusters ------------------------------------------------ */

/* Per-atom scratch for n local atoms. */
hx_status hx_nbi_ensure_atoms(hx_nb *nb, int n);
/* Bin, sort and cluster the atoms; fills the sorted layout, bounding boxes and zone ranges. */
hx_status hx_nbi_build_clusters(hx_nb *nb, const hx_local_set *set);

/* ---- nb_search.c: the cluster-pair search -------------------------------------------------- */

/* One block of i clusters searched, for baseline x86-64 and (where the compiler can) AVX2. */
void hx_nbi_search_chunk_generic(hx_nb *nb, nb_chunk *ch, const hx_local_set *set, double rlist,
                                 int check_missed);
#if HX_HAVE_AVX2_KERNELS
void hx_nbi_search_chunk_avx2(hx_nb *nb, nb_chunk *ch, const hx_local_set *set, double rlist,
                              int check_missed);
#endif

/* ---- nb_kernels.c: the pair kernels -------------------------------------------------------- */

/* Kernels and search for the precision and the instruction set of this CPU (AVX2+FMA when it
 * has them, unless HALOX_NB_SIMD=sse2). */
void hx_nbi_select_kernel(hx_nb *nb, hx_nb_precision prec);

#endif
