/* Non-bonded interactions on a local atom set: a cluster-pair list (GROMACS nbnxm-like) and the
 * LJ + reaction-field kernel in double or mixed precision.
 *
 * Why this layout:
 *  - At every search the atoms of each zone are binned into columns of a 2D grid in x-y (column
 *    edge chosen so that 4 atoms span about a cube), sorted by z in each column and cut into
 *    clusters of 4 (padded with dummy slots). A cluster's 4 atoms are stored together
 *    (x[4] y[4] z[4] q[4]: 64 bytes in float), so one j cluster is one cache line and four
 *    vector loads.
 *  - The list holds entries (i cluster, image shift) each with a run of (j cluster, 16-bit
 *    mask) pairs. The mask drops padding, same-molecule pairs and, for a cluster with itself,
 *    the lower triangle. Cluster pairs are culled by bounding-box distance and then by an atom
 *    check (at least one pair within rlist), so about half the computed pairs are inside rc.
 *  - One image shift per entry: the inner loop has no periodic arithmetic and open
 *    (decomposed) dimensions simply have zero shifts. Periodic atoms are binned at their
 *    wrapped position; the wrap offset is kept per slot and added to the positions until the
 *    next search, so the stored shifts stay valid while atoms cross the box edge.
 *  - Local (zone 0 x zone 0) and non-local cluster pairs go to separate lists, so a
 *    domain-decomposition engine can compute the local part while halo coordinates travel.
 *  - The search runs over 4 x nthreads blocks of i clusters, dynamically scheduled (the lists
 *    come out the same whoever searches a block). The kernel splits the concatenated list into
 *    nthreads ranges of equal cluster-pair counts (the half list gives early i clusters more
 *    partners, so equal i ranges were 56/44 unbalanced), each thread with its own force buffer,
 *    reduced per atom in thread order: results depend on nthreads only.
 *  - The kernel (src/md/nb_kernel.h) is instantiated in float and double, each for portable
 *    SSE2 and for AVX2+FMA chosen at run time. */
#include "halox/md.h"
#include "halox/log.h"
#include "core/error.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

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
    double c6[16], c12[16];
    int has_lj[4]; /* type t has a Lennard-Jones interaction with some type */
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

/* ---- kernels --------------------------------------------------------------------------- */

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

/* Lane masks of 4 exclusion bits (lane l all ones when bit l is set): a load instead of a
 * 64-bit integer compare, which SSE2 does not have. */
#define HX_LM(b)                                                                                   \
    {                                                                                              \
        -((b)&1), -(((b) >> 1) & 1), -(((b) >> 2) & 1), -(((b) >> 3) & 1)                          \
    }
#define HX_LM16                                                                                    \
    {                                                                                              \
        HX_LM(0), HX_LM(1), HX_LM(2), HX_LM(3), HX_LM(4), HX_LM(5), HX_LM(6), HX_LM(7), HX_LM(8),  \
            HX_LM(9), HX_LM(10), HX_LM(11), HX_LM(12), HX_LM(13), HX_LM(14), HX_LM(15)             \
    }
static const vi4 lanes_i4[16] = HX_LM16;
static const vl4 lanes_l4[16] = HX_LM16;
#undef HX_LM
#undef HX_LM16

/* 1/sqrt by a correctly rounded sqrt and division. In float, Newton steps from a bit-level guess
 * are a few ulp off with a systematic bias (about -2e-8 relative), which the Coulomb sum of
 * water (pair terms and the self term cancel to a small total) amplifies; rounded sqrt and
 * division leave an unbiased per-pair error and were also faster on the AVX2 machine measured
 * (AMD EPYC, 37 vs 47 ms per 45k-atom force call on one thread). Explicit sqrt instructions
 * (builtins) rather than sqrt(): no errno branch, no dependence on -ffast-math. */
static inline void rsqrt_f4_portable(const vf4 *r2p, vf4 *out)
{
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
    *out = 1.0f / __builtin_ia32_sqrtps(*r2p);
#else
    for (int l = 0; l < 4; l++)
        (*out)[l] = 1.0f / sqrtf((*r2p)[l]);
#endif
}

/* The same in double (the AVX2 kernel uses vsqrtpd directly): correctly rounded, and faster
 * than four Newton steps from a bit-level guess (69 -> 56 ms per 45k call on one thread). */
static inline void rsqrt_d4_portable(const vd4 *r2p, vd4 *out)
{
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
    typedef double vd2 __attribute__((vector_size(16)));
    vd2 lo = {(*r2p)[0], (*r2p)[1]}, hi = {(*r2p)[2], (*r2p)[3]};
    lo = 1.0 / __builtin_ia32_sqrtpd(lo);
    hi = 1.0 / __builtin_ia32_sqrtpd(hi);
    vd4 y = {lo[0], lo[1], hi[0], hi[1]};
    *out = y;
#else
    for (int l = 0; l < 4; l++)
        (*out)[l] = 1.0 / sqrt((*r2p)[l]);
#endif
}

/* Float kernels. Pair energies are summed per lane in float over one entry's j clusters (at
 * most a few hundred terms) and then in double: double accumulators per pair cost two registers
 * more and spilled, 25% slower, for no measurable gain in accuracy (45k SPC/E: LJ 5.4e-7,
 * Coulomb 1.0e-7 relative to the double path either way). */
#define NBK_REAL float
#define NBK_NAME kernel_f_generic
#define NBK_ATTR
/* portable (SSE2): 1 i atom x 4 j atoms per 16-byte vector, i atom outermost. 8-wide vectors
 * split into SSE halves spilled and stalled on store forwarding: 7x slower than AVX2. */
#define NBK_V vf4
#define NBK_VI vi4
#define NBK_V4 vf4
#define NBK_VE vf4
#define NBK_W 4
#define NBK_GOUTER 1
#define NBK_DUP(v) (v)
#define NBK_FOLD(v) (v)
#define NBK_WIDE(v) (v)
#define NBK_RSQRT(y, r2) rsqrt_f4_portable(&(r2), &(y))
#define NBK_LANES(b4) lanes_i4[b4]
#define NBK_ENERGY 1
#include "nb_kernel.h"
#undef NBK_ENERGY
#define NBK_ENERGY 0
#include "nb_kernel.h"
#undef NBK_ENERGY
#undef NBK_LANES
#undef NBK_NAME
#undef NBK_ATTR
#undef NBK_RSQRT
#undef NBK_V
#undef NBK_VI
#undef NBK_V4
#undef NBK_VE
#undef NBK_W
#undef NBK_GOUTER
#undef NBK_DUP
#undef NBK_FOLD
#undef NBK_WIDE
#if HX_HAVE_AVX2_KERNELS
/* AVX2: 2 i atoms x 4 j atoms per 32-byte vector */
#define NBK_V vf8
#define NBK_VI vi8
#define NBK_V4 vf4
#define NBK_VE vf8
#define NBK_W 8
#define NBK_GOUTER 0
#define NBK_DUP(v) __builtin_shufflevector(v, v, 0, 1, 2, 3, 0, 1, 2, 3)
#define NBK_CAT(a, b) __builtin_shufflevector(a, b, 0, 1, 2, 3, 4, 5, 6, 7)
#define NBK_FOLD(v)                                                                                \
    (__builtin_shufflevector(v, v, 0, 1, 2, 3) + __builtin_shufflevector(v, v, 4, 5, 6, 7))
#define NBK_WIDE(v) (v)
#define NBK_NAME kernel_f_avx2
#define NBK_ATTR HX_AVX2_ATTR
#define NBK_RSQRT(y, r2) ((y) = 1.0f / __builtin_ia32_sqrtps256(r2))
#define NBK_ENERGY 1
#include "nb_kernel.h"
#undef NBK_ENERGY
#define NBK_ENERGY 0
#include "nb_kernel.h"
#undef NBK_ENERGY
#undef NBK_NAME
#undef NBK_ATTR
#undef NBK_RSQRT
#undef NBK_V
#undef NBK_VI
#undef NBK_V4
#undef NBK_VE
#undef NBK_W
#undef NBK_GOUTER
#undef NBK_DUP
#undef NBK_CAT
#undef NBK_FOLD
#undef NBK_WIDE
#endif
#undef NBK_REAL

/* double, 1 i atom x 4 j atoms per vector */
#define NBK_REAL double
#define NBK_V vd4
#define NBK_VI vl4
#define NBK_V4 vd4
#define NBK_VE vd4
#define NBK_W 4
#define NBK_GOUTER 1
#define NBK_DUP(v) (v)
#define NBK_FOLD(v) (v)
#define NBK_WIDE(v) (v)
#define NBK_LANES(b4) lanes_l4[b4]
#define NBK_NAME kernel_d_generic
#define NBK_ATTR
#define NBK_RSQRT(y, r2) rsqrt_d4_portable(&(r2), &(y))
#define NBK_ENERGY 1
#include "nb_kernel.h"
#undef NBK_ENERGY
#define NBK_ENERGY 0
#include "nb_kernel.h"
#undef NBK_ENERGY
#undef NBK_NAME
#undef NBK_ATTR
#undef NBK_RSQRT
#if HX_HAVE_AVX2_KERNELS
#define NBK_NAME kernel_d_avx2
#define NBK_ATTR HX_AVX2_ATTR
#define NBK_RSQRT(y, r2) ((y) = 1.0 / __builtin_ia32_sqrtpd256(r2))
#define NBK_ENERGY 1
#include "nb_kernel.h"
#undef NBK_ENERGY
#define NBK_ENERGY 0
#include "nb_kernel.h"
#undef NBK_ENERGY
#undef NBK_NAME
#undef NBK_ATTR
#undef NBK_RSQRT
#endif

/* Adapters with one signature for the function pointer. */
#define NBK_ADAPT(name, real)                                                                      \
    static void name##_call(const nbk_args *a, const nb_list *L, int e0, int e1, void *fb,         \
                            double *vlj, double *vc)                                               \
    {                                                                                              \
        name(a, L, e0, e1, (real *)fb, vlj, vc);                                                   \
    }
NBK_ADAPT(kernel_f_generic_e1, float)
NBK_ADAPT(kernel_f_generic_e0, float)
NBK_ADAPT(kernel_d_generic_e1, double)
NBK_ADAPT(kernel_d_generic_e0, double)
#if HX_HAVE_AVX2_KERNELS
NBK_ADAPT(kernel_f_avx2_e1, float)
NBK_ADAPT(kernel_f_avx2_e0, float)
NBK_ADAPT(kernel_d_avx2_e1, double)
NBK_ADAPT(kernel_d_avx2_e0, double)
#endif

/* ---- setup ------------------------------------------------------------------------------ */

hx_rf_consts hx_rf_constants(const hx_nb_params *p)
{
    hx_rf_consts c;
    double eps_r = p->eps_r > 0 ? p->eps_r : 1.0;
    double rc3 = p->rc * p->rc * p->rc;
    c.epsfac = HX_ONE_4PI_EPS0 / eps_r;
    if (p->eps_rf == 0.0)
        c.k_rf = 1.0 / (2.0 * rc3);
    else
        c.k_rf = (p->eps_rf - eps_r) / ((2.0 * p->eps_rf + eps_r) * rc3);
    c.c_rf = 1.0 / p->rc + c.k_rf * p->rc * p->rc;
    return c;
}

void hx_local_set_from_system(hx_local_set *set, const hx_system *sys, int *mol_store,
                              hx_zone_range *range_store)
{
    memset(set, 0, sizeof *set);
    for (int k = 0; k < sys->nmol; k++)
        for (int a = sys->mol_start[k]; a < sys->mol_start[k + 1]; a++)
            mol_store[a] = k;
    range_store[0].begin = 0;
    range_store[0].end = sys->natoms;
    range_store[0].zone = 0;
    set->n = sys->natoms;
    set->x = sys->x;
    set->type = sys->type;
    set->q = sys->q;
    set->mol = mol_store;
    set->nranges = 1;
    set->ranges = range_store;
    set->ndim = 0;
    for (int d = 0; d < 3; d++) {
        set->periodic[d] = 1;
        set->box[d] = sys->box[d];
    }
}

static void search_chunk_generic(hx_nb *nb, nb_chunk *ch, const hx_local_set *set, double rlist,
                                 int check_missed);
#if HX_HAVE_AVX2_KERNELS
static void search_chunk_avx2(hx_nb *nb, nb_chunk *ch, const hx_local_set *set, double rlist,
                              int check_missed);
#endif

static void select_kernel(hx_nb *nb, hx_nb_precision prec)
{
    int mixed = prec == HX_NB_MIXED;
    nb->precision = prec;
    nb->kernel[1] = mixed ? kernel_f_generic_e1_call : kernel_d_generic_e1_call;
    nb->kernel[0] = mixed ? kernel_f_generic_e0_call : kernel_d_generic_e0_call;
    nb->kernel_name = mixed ? "float sse2" : "double sse2";
    nb->search = search_chunk_generic;
#if HX_HAVE_AVX2_KERNELS
    /* HALOX_NB_SIMD=sse2 forces the portable kernels (tests run both on AVX2 machines) */
    const char *force = getenv("HALOX_NB_SIMD");
    __builtin_cpu_init();
    if ((!force || strcmp(force, "sse2") != 0) && __builtin_cpu_supports("avx2") &&
        __builtin_cpu_supports("fma")) {
        nb->kernel[1] = mixed ? kernel_f_avx2_e1_call : kernel_d_avx2_e1_call;
        nb->kernel[0] = mixed ? kernel_f_avx2_e0_call : kernel_d_avx2_e0_call;
        nb->kernel_name = mixed ? "float avx2" : "double avx2";
        nb->search = search_chunk_avx2;
    }
#endif
}

hx_status hx_nb_set_precision(hx_nb *nb, hx_nb_precision precision)
{
    HX_CHECK(nb, HX_ERR_INVALID_ARG, "hx_nb_set_precision: NULL argument");
    HX_CHECK(precision == HX_NB_DOUBLE || precision == HX_NB_MIXED, HX_ERR_INVALID_ARG,
             "non-bonded precision %d: use HX_NB_DOUBLE (0) or HX_NB_MIXED (1)", (int)precision);
    select_kernel(nb, precision);
    return HX_OK;
}

hx_nb_precision hx_nb_get_precision(const hx_nb *nb)
{
    return nb->precision;
}

const char *hx_nb_kernel_name(const hx_nb *nb)
{
    return nb->kernel_name;
}

hx_status hx_nb_create(const hx_forcefield *ff, const hx_nb_params *p, int nthreads, hx_nb **out)
{
    HX_CHECK(ff && p && out, HX_ERR_INVALID_ARG, "hx_nb_create: NULL argument");
    *out = NULL;
    HX_CHECK(p->rc > 0 && isfinite(p->rc), HX_ERR_INVALID_ARG,
             "cut-off rc = %g nm: must be positive", p->rc);
    HX_CHECK(p->eps_rf == 0.0 || p->eps_rf >= 1.0, HX_ERR_INVALID_ARG,
             "eps_rf = %g: use 0 (infinity) or a value >= 1", p->eps_rf);
    int nt = hx_forcefield_ntypes(ff);
    HX_CHECK(nt >= 1 && nt <= 4, HX_ERR_INTERNAL, "force field with %d types", nt);
    if (nthreads <= 0) {
#ifdef _OPENMP
        nthreads = omp_get_max_threads();
#else
        nthreads = 1;
#endif
    }
    hx_nb *nb = calloc(1, sizeof *nb);
    HX_CHECK(nb, HX_ERR_NOMEM, "out of memory");
    nb->p = *p;
    if (nb->p.eps_r <= 0)
        nb->p.eps_r = 1.0;
    nb->rf = hx_rf_constants(&nb->p);
    nb->ntypes = nt;
    memcpy(nb->c6, hx_forcefield_c6(ff), (size_t)(nt * nt) * sizeof(double));
    memcpy(nb->c12, hx_forcefield_c12(ff), (size_t)(nt * nt) * sizeof(double));
    for (int t = 0; t < nt; t++)
        for (int u = 0; u < nt; u++)
            nb->has_lj[t] |= nb->c6[t * nt + u] != 0.0 || nb->c12[t * nt + u] != 0.0;
    nb->nthreads = nthreads;
    nb->nblocks = NB_BLOCKS_PER_THREAD * nthreads;
    nb->chunks = calloc((size_t)nb->nblocks, sizeof *nb->chunks);
    for (int k = 0; k < NCLASS; k++) {
        nb->split_b[k] = calloc((size_t)nthreads + 1, sizeof(int));
        nb->split_e[k] = calloc((size_t)nthreads + 1, sizeof(int));
    }
    if (!nb->chunks || !nb->split_b[0] || !nb->split_b[1] || !nb->split_e[0] || !nb->split_e[1]) {
        hx_nb_destroy(&nb);
        HX_FAIL(HX_ERR_NOMEM, "out of memory");
    }
    select_kernel(nb, HX_NB_DOUBLE);
    hx_log(HX_LOG_DEBUG, "non-bonded kernel: 4x4 cluster pairs, %s, %d threads", nb->kernel_name,
           nthreads);
    *out = nb;
    return HX_OK;
}

static void list_free(nb_list *l)
{
    free(l->ci);
    free(l->shift);
    free(l->jbeg);
    free(l->cj);
    free(l->mask);
}

void hx_nb_destroy(hx_nb **nbp)
{
    if (!nbp || !*nbp)
        return;
    hx_nb *nb = *nbp;
    for (int c = 0; c < nb->nblocks && nb->chunks; c++) {
        nb_chunk *ch = &nb->chunks[c];
        for (int k = 0; k < NCLASS; k++)
            list_free(&ch->list[k]);
        free(ch->fbuf);
        free(ch->cand_cj);
        free(ch->cand_key);
        free(ch->cand_mask);
    }
    free(nb->chunks);
    for (int k = 0; k < NCLASS; k++) {
        free(nb->split_b[k]);
        free(nb->split_e[k]);
    }
    free(nb->perm);
    free(nb->wrap);
    free(nb->xqd);
    free(nb->xqf);
    free(nb->lj6d);
    free(nb->lj12d);
    free(nb->lj6f);
    free(nb->lj12f);
    free(nb->ts);
    free(nb->ms);
    free(nb->bb);
    free(nb->bbf);
    free(nb->realm);
    free(nb->ljs);
    free(nb->dmax);
    free(nb->dslot);
    free(nb->xps);
    free(nb->colcl);
    free(nb->colbb);
    free(nb->colcount);
    free(nb->akey);
    free(nb->aord);
    free(nb->apos);
    free(nb->x_prev);
    free(nb);
    *nbp = NULL;
}

int hx_nb_nthreads(const hx_nb *nb)
{
    return nb->nthreads;
}

long long hx_nb_npairs(const hx_nb *nb)
{
    long long s = 0;
    for (int c = 0; c < nb->nblocks; c++)
        s += nb->chunks[c].npairs;
    return s;
}

/* Grow *p (elements of sz bytes) to hold at least n, contents kept. */
static int grow(void **p, int *cap, long long n, size_t sz)
{
    if (n <= *cap)
        return 1;
    if (n > INT32_MAX / 2)
        return 0;
    long long nc = *cap > 0 ? *cap : 256;
    while (nc < n)
        nc *= 2;
    void *q = realloc(*p, (size_t)nc * sz);
    if (!q)
        return 0;
    *p = q;
    *cap = (int)nc;
    return 1;
}

/* 64-byte aligned (re)allocation without keeping contents: the vector loads want cluster rows
 * on cache-line boundaries. */
static void *realloc_aligned(void *old, size_t bytes)
{
    free(old);
    size_t b = (bytes + 63) / 64 * 64;
    return aligned_alloc(64, b > 0 ? b : 64);
}

static hx_status ensure_atoms(hx_nb *nb, int n)
{
    if (n <= nb->cap_atoms)
        return HX_OK;
    size_t N = (size_t)n + (size_t)n / 4 + 16;
#define RE(ptr, cnt)                                                                               \
    do {                                                                                           \
        void *q_ = realloc((ptr), (cnt) * sizeof *(ptr));                                          \
        HX_CHECK(q_, HX_ERR_NOMEM, "out of memory for %zu atoms in the pair search", (cnt));       \
        (ptr) = q_;                                                                                \
    } while (0)
    RE(nb->akey, N);
    RE(nb->aord, N);
    RE(nb->apos, 3 * N);
    RE(nb->x_prev, 3 * N);
    nb->cap_atoms = (int)N;
    return HX_OK;
}

static hx_status ensure_slots(hx_nb *nb, int ncl)
{
    int nslot = 4 * ncl;
    if (nslot > nb->cap_slot) {
        size_t N = (size_t)nslot + (size_t)nslot / 4 + 64;
        size_t C = N / 4;
        RE(nb->perm, N);
        RE(nb->wrap, 3 * N);
        RE(nb->ts, N);
        RE(nb->ms, N);
        RE(nb->bb, 6 * C);
        RE(nb->bbf, 8 * C);
        RE(nb->realm, C);
        RE(nb->ljs, C);
        RE(nb->dmax, C);
        RE(nb->dslot, N);
        RE(nb->xps, 3 * N);
        size_t nt = (size_t)nb->ntypes;
        nb->xqd = realloc_aligned(nb->xqd, 4 * N * sizeof(double));
        nb->xqf = realloc_aligned(nb->xqf, 4 * N * sizeof(float));
        nb->lj6d = realloc_aligned(nb->lj6d, nt * N * sizeof(double));
        nb->lj12d = realloc_aligned(nb->lj12d, nt * N * sizeof(double));
        nb->lj6f = realloc_aligned(nb->lj6f, nt * N * sizeof(float));
        nb->lj12f = realloc_aligned(nb->lj12f, nt * N * sizeof(float));
        HX_CHECK(nb->xqd && nb->xqf && nb->lj6d && nb->lj12d && nb->lj6f && nb->lj12f, HX_ERR_NOMEM,
                 "out of memory for %d pair-search slots", nslot);
        nb->cap_slot = (int)N;
    }
    size_t fb = (size_t)nslot * 3 * sizeof(double);
    for (int c = 0; c < nb->nthreads; c++) {
        nb_chunk *ch = &nb->chunks[c];
        if (ch->cap_fbuf < fb || !ch->fbuf) {
            size_t b = fb + fb / 4 + 64 * 12 * sizeof(double);
            ch->fbuf = realloc_aligned(ch->fbuf, b);
            HX_CHECK(ch->fbuf, HX_ERR_NOMEM, "out of memory for force buffers");
            ch->cap_fbuf = b;
        }
    }
    return HX_OK;
}
#undef RE

/* Zone of every local atom (from the ranges), validated. */
static hx_status zones_of(const hx_local_set *set, int *zone)
{
    int covered = 0;
    for (int r = 0; r < set->nranges; r++) {
        const hx_zone_range *zr = &set->ranges[r];
        HX_CHECK(zr->begin == covered && zr->end >= zr->begin && zr->end <= set->n &&
                     zr->zone >= 0 && zr->zone < hx_zone_count(set->ndim),
                 HX_ERR_INVALID_ARG,
                 "zone range %d [%d,%d) zone %d does not continue the ranges at %d within %d "
                 "atoms and %d zones",
                 r, zr->begin, zr->end, zr->zone, covered, set->n, hx_zone_count(set->ndim));
        for (int a = zr->begin; a < zr->end; a++)
            zone[a] = zr->zone;
        covered = zr->end;
    }
    HX_CHECK(covered == set->n, HX_ERR_INVALID_ARG, "zone ranges cover %d of %d local atoms",
             covered, set->n);
    return HX_OK;
}

/* ---- pair search ------------------------------------------------------------------------ */

/* Insertion sort of a column's atoms by z (ties by local index: deterministic). Columns hold a
 * few tens of atoms; long ones (thin open zones) fall back to a shell sort. */
static void sort_column(int *a, int m, const double *pos)
{
    static const int gaps[] = {701, 301, 132, 57, 23, 10, 4, 1};
    for (int gi = 0; gi < 8; gi++) {
        int gap = gaps[gi];
        if (gap >= m || (m <= 64 && gap > 1))
            continue;
        for (int i = gap; i < m; i++) {
            int v = a[i];
            double zv = pos[3 * v + 2];
            int j = i;
            while (j >= gap) {
                int u = a[j - gap];
                double zu = pos[3 * u + 2];
                if (zu < zv || (zu == zv && u < v))
                    break;
                a[j] = u;
                j -= gap;
            }
            a[j] = v;
        }
    }
}

/* Does an atom of this type have LJ? (An invalid type is refused later, with its atom.) */
static inline int lj_atom(const hx_nb *nb, int type)
{
    return type >= 0 && type < nb->ntypes && nb->has_lj[type];
}

/* Bin, sort and cluster the atoms; fills the sorted layout, bounding boxes and zone ranges. */
static hx_status build_clusters(hx_nb *nb, const hx_local_set *set)
{
    const int n = set->n;
    const int nz = hx_zone_count(set->ndim);
    int *zone = nb->akey;
    double *pos = nb->apos;
    HX_TRY(zones_of(set, zone));
    /* wrapped positions, atoms per zone, extents */
    int zcount[HX_MAX_ZONES] = {0};
    double zlo[HX_MAX_ZONES][3], zhi[HX_MAX_ZONES][3];
    for (int z = 0; z < nz; z++)
        for (int d = 0; d < 3; d++) {
            zlo[z][d] = INFINITY;
            zhi[z][d] = -INFINITY;
        }
    for (int a = 0; a < n; a++) {
        int z = zone[a];
        zcount[z]++;
        HX_CHECK(set->type[a] >= 0 && set->type[a] < nb->ntypes, HX_ERR_INVALID_ARG,
                 "atom %d has LJ type %d outside the force field's %d types", a + 1, set->type[a],
                 nb->ntypes);
        for (int d = 0; d < 3; d++) {
            double v = set->x[3 * a + d];
            HX_CHECK(isfinite(v), HX_ERR_PHYSICS,
                     "atom %d (local index %d) has a non-finite coordinate in the pair search",
                     a + 1, a);
            if (set->periodic[d]) {
                double L = set->box[d];
                double w = -L * floor(v / L);
                if (v + w >= L)
                    w -= L;
                v += w;
            }
            pos[3 * a + d] = v;
            zlo[z][d] = v < zlo[z][d] ? v : zlo[z][d];
            zhi[z][d] = v > zhi[z][d] ? v : zhi[z][d];
        }
    }
    /* column grids: edge a with 4 atoms per a^3 at the zone's density */
    int ncols = 0;
    for (int z = 0; z < nz; z++) {
        zone_grid *g = &nb->zg[z];
        g->col0 = ncols;
        if (zcount[z] == 0) {
            g->nc[0] = g->nc[1] = 0;
            continue;
        }
        double len[3];
        for (int d = 0; d < 3; d++) {
            if (set->periodic[d]) {
                len[d] = set->box[d];
                if (d < 2)
                    g->lo[d] = 0.0;
            } else {
                len[d] = (zhi[z][d] - zlo[z][d]) * (1.0 + 1e-12) + 1e-9;
                if (d < 2)
                    g->lo[d] = zlo[z][d];
            }
        }
        /* a thin zone (halo slab) would get a huge edge from its volume; use at least the
         * density of a 0.5 nm thick slab so that columns stay small */
        double vol = 1.0;
        for (int d = 0; d < 3; d++)
            vol *= len[d] > 0.5 ? len[d] : 0.5;
        double edge = cbrt(4.0 * vol / zcount[z]);
        for (int d = 0; d < 2; d++) {
            int c = (int)(len[d] / edge);
            c = c < 1 ? 1 : (c > 2048 ? 2048 : c);
            g->nc[d] = c;
            g->cw[d] = len[d] / c;
        }
        ncols += g->nc[0] * g->nc[1];
    }
    if (ncols + 1 > nb->cap_cols) {
        int cap = ncols + 1 + ncols / 4 + 16;
        int *a1 = realloc(nb->colcl, (size_t)cap * sizeof *a1);
        if (a1)
            nb->colcl = a1;
        int *a2 = realloc(nb->colcount, (size_t)cap * sizeof *a2);
        if (a2)
            nb->colcount = a2;
        double *a3 = realloc(nb->colbb, 4 * (size_t)cap * sizeof *a3);
        if (a3)
            nb->colbb = a3;
        HX_CHECK(a1 && a2 && a3, HX_ERR_NOMEM, "out of memory for %d search columns", ncols);
        nb->cap_cols = cap;
    }
    nb->ncols = ncols;
    /* column of every atom; counting sort */
    int *cnt = nb->colcount;
    memset(cnt, 0, (size_t)(ncols + 1) * sizeof *cnt);
    for (int a = 0; a < n; a++) {
        const zone_grid *g = &nb->zg[zone[a]];
        int c[2];
        for (int d = 0; d < 2; d++) {
            int cc = (int)((pos[3 * a + d] - g->lo[d]) / g->cw[d]);
            c[d] = cc < 0 ? 0 : (cc >= g->nc[d] ? g->nc[d] - 1 : cc);
        }
        int col = g->col0 + c[1] * g->nc[0] + c[0];
        zone[a] = col; /* zone no longer needed per atom: the column says it */
        cnt[col + 1]++;
    }
    for (int c = 0; c < ncols; c++)
        cnt[c + 1] += cnt[c];
    {
        /* stable fill; cnt[c] ends as the end of column c, restored below */
        for (int a = 0; a < n; a++)
            nb->aord[cnt[zone[a]]++] = a;
        for (int c = ncols; c > 0; c--)
            cnt[c] = cnt[c - 1];
        cnt[0] = 0;
    }
    /* clusters per column */
    int ncl = 0;
    for (int c = 0; c < ncols; c++) {
        nb->colcl[c] = ncl;
        ncl += (cnt[c + 1] - cnt[c] + 3) / 4;
    }
    nb->colcl[ncols] = ncl;
    for (int z = 0; z < nz; z++)
        nb->zcl[z] = nb->colcl[nb->zg[z].col0];
    nb->zcl[nz] = ncl;
    HX_TRY(ensure_slots(nb, ncl));
    nb->ncl = ncl;
    nb->nslot = 4 * ncl;
    /* fill slots column by column; columns are independent, so threads share them */
    const int nt = nb->ntypes;
    const size_t ns = (size_t)nb->nslot;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 16) num_threads(nb->nthreads)
#endif
    for (int c = 0; c < ncols; c++) {
        int *col = nb->aord + cnt[c];
        int m = cnt[c + 1] - cnt[c];
        sort_column(col, m, pos);
        /* Within each cluster, atoms with LJ first (stable): in water most clusters then have
         * an LJ-free second half, whose LJ terms the kernels skip (hydrogens have none). The
         * slot order inside a cluster changes neither its box nor its pairs. */
        for (int t0 = 0; t0 < m; t0 += 4) {
            int tmp[4], nl = 0, k = 0;
            const int te = t0 + 4 < m ? t0 + 4 : m;
            for (int t = t0; t < te; t++)
                if (lj_atom(nb, set->type[col[t]]))
                    tmp[nl++] = col[t];
            for (int t = t0; t < te; t++)
                if (!lj_atom(nb, set->type[col[t]]))
                    tmp[nl + k++] = col[t];
            memcpy(col + t0, tmp, (size_t)(te - t0) * sizeof *tmp);
        }
        double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
        for (int cl = nb->colcl[c]; cl < nb->colcl[c + 1]; cl++) {
            double lo[3] = {INFINITY, INFINITY, INFINITY},
                   hi[3] = {-INFINITY, -INFINITY, -INFINITY};
            unsigned rm = 0;
            for (int k = 0; k < 4; k++) {
                int s = 4 * cl + k, t = 4 * (cl - nb->colcl[c]) + k;
                double *xq = nb->xqd + 16 * cl;
                if (t < m) {
                    int a = col[t];
                    nb->perm[s] = a;
                    for (int d = 0; d < 3; d++) {
                        double v = pos[3 * a + d];
                        nb->wrap[3 * s + d] = v - set->x[3 * a + d];
                        xq[4 * d + k] = v;
                        lo[d] = v < lo[d] ? v : lo[d];
                        hi[d] = v > hi[d] ? v : hi[d];
                    }
                    xq[12 + k] = set->q[a];
                    nb->ts[s] = set->type[a];
                    nb->ms[s] = set->mol[a];
                    rm |= 1u << k;
                } else {
                    nb->perm[s] = -1;
                    for (int d = 0; d < 3; d++) {
                        nb->wrap[3 * s + d] = 0.0;
                        xq[4 * d + k] = -FAR_AWAY;
                    }
                    xq[12 + k] = 0.0;
                    nb->ts[s] = 0;
                    nb->ms[s] = -1;
                }
            }
            for (int d = 0; d < 3; d++) {
                nb->bb[6 * cl + d] = lo[d];
                nb->bb[6 * cl + 3 + d] = hi[d];
                nb->bbf[8 * cl + d] = nextafterf((float)lo[d], -INFINITY);
                nb->bbf[8 * cl + 4 + d] = nextafterf((float)hi[d], INFINITY);
            }
            nb->bbf[8 * cl + 3] = nb->bbf[8 * cl + 7] = 0.0f;
            nb->realm[cl] = (unsigned char)rm;
            unsigned lm = 0;
            for (int k = 0; k < 4; k++)
                if (nb->perm[4 * cl + k] >= 0 && nb->has_lj[nb->ts[4 * cl + k]])
                    lm |= 1u << k;
            nb->ljs[cl] = (unsigned char)lm;
            xlo = lo[0] < xlo ? lo[0] : xlo;
            xhi = hi[0] > xhi ? hi[0] : xhi;
            ylo = lo[1] < ylo ? lo[1] : ylo;
            yhi = hi[1] > yhi ? hi[1] : yhi;
        }
        nb->colbb[4 * c] = xlo;
        nb->colbb[4 * c + 1] = xhi;
        nb->colbb[4 * c + 2] = ylo;
        nb->colbb[4 * c + 3] = yhi;
    }
    /* LJ parameters of every j slot for each i type (padding: 0), float coordinates */
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(nb->nthreads)
#endif
    for (long long sl = 0; sl < (long long)ns; sl++) {
        const size_t s = (size_t)sl;
        const int real = nb->perm[s] >= 0;
        for (int ti = 0; ti < nt; ti++) {
            double c6 = real ? nb->c6[ti * nt + nb->ts[s]] : 0.0;
            double c12 = real ? nb->c12[ti * nt + nb->ts[s]] : 0.0;
            nb->lj6d[(size_t)ti * ns + s] = c6;
            nb->lj12d[(size_t)ti * ns + s] = c12;
            nb->lj6f[(size_t)ti * ns + s] = (float)c6;
            nb->lj12f[(size_t)ti * ns + s] = (float)c12;
        }
        for (int k = 0; k < 4; k++)
            nb->xqf[4 * s + (size_t)k] = (float)nb->xqd[4 * s + (size_t)k];
    }
    return HX_OK;
}

static inline double gap(double a, double b)
{
    /* max(0, a, b) without libm's fmax call (it is not inlined with the project's flags) */
    double m = a > b ? a : b;
    return m > 0.0 ? m : 0.0;
}

/* Interaction mask of a cluster pair: bit 4*ii + jj set when slots ii of i and jj of j both hold
 * atoms of different molecules (same molecule: excluded; padding has molecule -1). Lane jj of
 * row ii compares j's molecule with mi[ii], i's molecule ii broadcast; rowbits[ii] holds bit
 * 4*ii + jj in lane jj, or 0 where slot ii is padding. Branch-free, one horizontal OR. */
static inline unsigned pair_mask(const vi4 mi[4], const vi4 rowbits[4], const int *msj)
{
    vi4 mj;
    memcpy(&mj, msj, sizeof mj);
    vi4 acc = (mj != mi[0]) & rowbits[0];
    for (int ii = 1; ii < 4; ii++)
        acc |= (mj != mi[ii]) & rowbits[ii];
    acc &= mj >= 0;
    return (unsigned)(acc[0] | acc[1] | acc[2] | acc[3]);
}

/* Pairs of a 16-bit mask, two table lookups (no popcount instruction in baseline x86-64). */
static inline int popcount16(unsigned m)
{
    static const unsigned char pc8[256] = {
#define HX_B2(n) n, n + 1, n + 1, n + 2
#define HX_B4(n) HX_B2(n), HX_B2(n + 1), HX_B2(n + 1), HX_B2(n + 2)
#define HX_B6(n) HX_B4(n), HX_B4(n + 1), HX_B4(n + 1), HX_B4(n + 2)
        HX_B6(0), HX_B6(1), HX_B6(1), HX_B6(2)
#undef HX_B2
#undef HX_B4
#undef HX_B6
    };
    return pc8[m & 0xffu] + pc8[(m >> 8) & 0xffu];
}

/* v minus the nearest multiple of L; no libm call (nearbyint is one without SSE4.1). Ties and
 * |v| beyond 2^52 L do not matter here: the result only feeds distance comparisons. */
static inline double min_image(double v, double L)
{
    double t = v / L;
    double r = (double)(long long)(t + (t >= 0 ? 0.5 : -0.5));
    return v - L * r;
}

/* Could clusters i and j (j shifted by sh) hold an atom pair within rlist? In float, from
 * outward-rounded boxes and float coordinates, against rl2f, which carries a margin far above
 * float rounding (the callers use 1e-4 relative): a pair inside rlist is never refused, and one
 * just outside may be accepted, which costs only kernel work (the kernel cuts at rc). Boxes
 * closer than rprune2f (rlist - 0.35 nm) practically always hold such a pair: accepted without
 * looking at atoms. Otherwise the 16 distances, branch-free; padding slots sit far away. */
static inline int pair_in_range(const float *ib, const float *jb, const float *xi, const float *xj,
                                vf4 sh, float rl2f, float rprune2f)
{
    vf4 ilo, ihi, jlo, jhi;
    memcpy(&ilo, ib, sizeof ilo);
    memcpy(&ihi, ib + 4, sizeof ihi);
    memcpy(&jlo, jb, sizeof jlo);
    memcpy(&jhi, jb + 4, sizeof jhi);
    const vf4 a = jlo + sh - ihi, b = ilo - jhi - sh;
    const vi4 ab = a > b;
    vi4 g = ((vi4)a & ab) | ((vi4)b & ~ab);
    g &= (vf4)g > (vf4){0, 0, 0, 0};
    const vf4 gf = (vf4)g, g2 = gf * gf;
    const float d2 = g2[0] + g2[1] + g2[2];
    if (d2 >= rl2f)
        return 0;
    if (d2 < rprune2f)
        return 1;
    vf4 xj4, yj4, zj4;
    memcpy(&xj4, xj, sizeof xj4);
    memcpy(&yj4, xj + 4, sizeof yj4);
    memcpy(&zj4, xj + 8, sizeof zj4);
    vi4 within = {0, 0, 0, 0};
    for (int ii = 0; ii < 4; ii++) {
        const vf4 dx = (xi[ii] - sh[0]) - xj4, dy = (xi[4 + ii] - sh[1]) - yj4,
                  dz = (xi[8 + ii] - sh[2]) - zj4;
        within |= (dx * dx + dy * dy + dz * dz) < rl2f;
    }
    return (within[0] | within[1] | within[2] | within[3]) != 0;
}

/* The i-cluster range of one chunk, searched; candidates of each i cluster are grouped by
 * (class, shift) into list entries. */
static inline __attribute__((always_inline)) void
search_chunk_body(hx_nb *nb, nb_chunk *ch, const hx_local_set *set, double rlist, int check_missed)
{
    const double rl2 = rlist * rlist, rc2 = nb->p.rc * nb->p.rc;
    const double rp2 = nb->rlist_prev * nb->rlist_prev;
    const double buf_prev = nb->rlist_prev - nb->p.rc;
    const float rl2f = (float)(rl2 * (1.0 + 1e-4));
    const float rprune2f = rlist > 0.35 ? (float)((rlist - 0.35) * (rlist - 0.35)) : 0.0f;
    const float *xqf = nb->xqf, *bbf = nb->bbf;
    const double *xqd = nb->xqd;
    ch->missed = 0;
    ch->npairs = 0;
    ch->st = HX_OK;
    for (int k = 0; k < NCLASS; k++) {
        ch->list[k].nent = 0;
        ch->list[k].ncj = 0;
    }
    const int nz = hx_zone_count(set->ndim);
    for (int ci = ch->cl_begin; ci < ch->cl_end; ci++) {
        if (!nb->realm[ci])
            continue;
        int iz = 0;
        while (iz + 1 < nz && ci >= nb->zcl[iz + 1])
            iz++;
        const double *ib = nb->bb + 6 * ci;
        const double *xi = xqd + 16 * ci;
        const float *xif = xqf + 16 * ci, *ibf = bbf + 8 * ci;
        vi4 mi[4], rowbits[4];
        for (int ii = 0; ii < 4; ii++) {
            const int m = nb->ms[4 * ci + ii], b = m >= 0 ? 1 << (4 * ii) : 0;
            mi[ii] = (vi4){m, m, m, m};
            rowbits[ii] = (vi4){b, b << 1, b << 2, b << 3};
        }
        int j0, j1;
        hx_izone_jrange(set->ndim, iz, &j0, &j1);
        ch->ncand = 0;
        for (int jz = j0; jz < j1; jz++) {
            if (nb->zcl[jz] == nb->zcl[jz + 1])
                continue;
            const zone_grid *g = &nb->zg[jz];
            const int half = iz == 0 && jz == 0;
            const int cls = half ? 0 : 1;
            int vlo[2], vhi[2];
            for (int d = 0; d < 2; d++) {
                vlo[d] = (int)floor((ib[d] - rlist - g->lo[d]) / g->cw[d]);
                vhi[d] = (int)floor((ib[3 + d] + rlist - g->lo[d]) / g->cw[d]);
                if (!set->periodic[d]) {
                    vlo[d] = vlo[d] < 0 ? 0 : vlo[d];
                    vhi[d] = vhi[d] >= g->nc[d] ? g->nc[d] - 1 : vhi[d];
                }
            }
            /* z images: j atoms lie in [0, Lz), so the image below can only reach an i cluster
             * near the bottom, the one above only one near the top */
            const int kz0 = set->periodic[2] && ib[2] - rlist < 0.0 ? -1 : 0;
            const int kz1 = set->periodic[2] && ib[5] + rlist >= set->box[2] ? 1 : 0;
            for (int vy = vlo[1]; vy <= vhi[1]; vy++) {
                int ky = 0, cy = vy;
                if (set->periodic[1]) {
                    ky = vy < 0 ? -1 : (vy >= g->nc[1] ? 1 : 0); /* rlist < L/2 */
                    cy = vy - ky * g->nc[1];
                }
                const double sy = ky * set->box[1];
                for (int vx = vlo[0]; vx <= vhi[0]; vx++) {
                    int kx = 0, cx = vx;
                    if (set->periodic[0]) {
                        kx = vx < 0 ? -1 : (vx >= g->nc[0] ? 1 : 0);
                        cx = vx - kx * g->nc[0];
                    }
                    const double sx = kx * set->box[0];
                    const int col = g->col0 + cy * g->nc[0] + cx;
                    const int cb = nb->colcl[col], ce = nb->colcl[col + 1];
                    /* half list: a column of clusters all before ci has nothing for ci */
                    if (cb == ce || (half && ce <= ci))
                        continue;
                    const double *cbb = nb->colbb + 4 * col;
                    double gx = gap(cbb[0] + sx - ib[3], ib[0] - cbb[1] - sx);
                    double gy = gap(cbb[2] + sy - ib[4], ib[1] - cbb[3] - sy);
                    const double dxy2 = gx * gx + gy * gy;
                    if (dxy2 >= rl2)
                        continue;
                    /* z window: what is left of rlist after the column's x-y distance */
                    const double rz = sqrt(rl2 - dxy2) * (1.0 + 1e-12);
                    for (int kz = kz0; kz <= kz1; kz++) {
                        const double sz = kz * set->box[2];
                        const double wlo = ib[2] - rz - sz, whi = ib[5] + rz - sz;
                        /* first cluster whose top reaches wlo: z tops rise along a column */
                        int lo = cb, hi = ce;
                        while (lo < hi) {
                            int mid = (lo + hi) / 2;
                            if (nb->bb[6 * mid + 5] < wlo)
                                lo = mid + 1;
                            else
                                hi = mid;
                        }
                        /* half list: nothing before ci */
                        if (half && lo < ci)
                            lo = ci;
                        const int sidx = (kx + 1) + 3 * (ky + 1) + 9 * (kz + 1);
                        const vf4 sh = {(float)sx, (float)sy, (float)sz, 0.0f};
                        /* The clusters of the z window that are in range form (nearly) one
                         * run: test only from both ends inwards and take everything between
                         * the first and the last one in range, as GROMACS does. A cluster
                         * pair in between that is out of range costs kernel work only (the
                         * kernel cuts at rc); one inside rlist is never left out. */
                        int end = lo;
                        while (end < ce && nb->bb[6 * end + 2] <= whi)
                            end++;
                        int first = lo;
                        while (first < end && !pair_in_range(ibf, bbf + 8 * first, xif,
                                                             xqf + 16 * first, sh, rl2f, rprune2f))
                            first++;
                        if (first == end)
                            continue;
                        int last = end - 1;
                        while (last > first && !pair_in_range(ibf, bbf + 8 * last, xif,
                                                              xqf + 16 * last, sh, rl2f, rprune2f))
                            last--;
                        for (int cj = first; cj <= last; cj++) {
                            if (half && cj == ci && sidx < SHIFT_ZERO)
                                continue;
                            const double *xj = xqd + 16 * cj;
                            const int self = half && cj == ci && sidx == SHIFT_ZERO;
                            /* self pair: each atom pair once (jj > ii) */
                            const unsigned mask = pair_mask(mi, rowbits, nb->ms + 4 * cj) &
                                                  (self ? 0x08ceu : 0xffffu);
                            if (!mask)
                                continue;
                            if (check_missed && nb->dmax[ci] + nb->dmax[cj] > buf_prev) {
                                /* pairs inside rc now whose atoms moved far enough together to
                                 * have come from beyond rlist_prev: a 16-bit set, branch-free */
                                vd4 xj4, yj4, zj4, dj4;
                                memcpy(&xj4, xj, sizeof xj4);
                                memcpy(&yj4, xj + 4, sizeof yj4);
                                memcpy(&zj4, xj + 8, sizeof zj4);
                                memcpy(&dj4, nb->dslot + 4 * cj, sizeof dj4);
                                const vl4 lanebit = {1, 2, 4, 8};
                                unsigned chk = 0;
                                for (int ii = 0; ii < 4; ii++) {
                                    const vd4 dx = (xi[ii] - sx) - xj4,
                                              dy = (xi[4 + ii] - sy) - yj4,
                                              dz = (xi[8 + ii] - sz) - zj4;
                                    const vl4 c = ((nb->dslot[4 * ci + ii] + dj4) > buf_prev) &
                                                  ((dx * dx + dy * dy + dz * dz) < rc2) & lanebit;
                                    chk |= (unsigned)(c[0] | c[1] | c[2] | c[3]) << (4 * ii);
                                }
                                chk &= mask;
                                while (chk) {
                                    const int b = __builtin_ctz(chk);
                                    chk &= chk - 1;
                                    /* distance at the previous build, minimum image */
                                    const double *pa = nb->xps + 3 * (4 * ci + (b >> 2));
                                    const double *pb = nb->xps + 3 * (4 * cj + (b & 3));
                                    double p2 = 0.0;
                                    for (int d = 0; d < 3; d++) {
                                        double v = pa[d] - pb[d];
                                        if (set->periodic[d])
                                            v = min_image(v, set->box[d]);
                                        p2 += v * v;
                                    }
                                    if (p2 >= rp2)
                                        ch->missed++;
                                }
                            }
                            ch->npairs += popcount16(mask);
                            if (ch->ncand >= ch->cap_cand) {
                                int cap = ch->cap_cand;
                                if (!grow((void **)&ch->cand_cj, &cap, ch->ncand + 1,
                                          sizeof(int)) ||
                                    !grow((void **)&ch->cand_key, &ch->cap_cand, ch->ncand + 1,
                                          sizeof(int))) {
                                    ch->st = HX_ERR_NOMEM;
                                    return;
                                }
                                void *q =
                                    realloc(ch->cand_mask, (size_t)ch->cap_cand * sizeof(uint16_t));
                                if (!q) {
                                    ch->st = HX_ERR_NOMEM;
                                    return;
                                }
                                ch->cand_mask = q;
                            }
                            ch->cand_cj[ch->ncand] = cj;
                            ch->cand_key[ch->ncand] = cls * NSHIFT + sidx;
                            ch->cand_mask[ch->ncand] = (uint16_t)mask;
                            ch->ncand++;
                        }
                    }
                }
            }
        }
        if (ch->ncand == 0)
            continue;
        /* one entry per (class, shift), in key order; candidates in discovery order */
        int count[NCLASS * NSHIFT] = {0};
        for (int t = 0; t < ch->ncand; t++)
            count[ch->cand_key[t]]++;
        for (int key = 0; key < NCLASS * NSHIFT; key++) {
            if (!count[key])
                continue;
            nb_list *l = &ch->list[key / NSHIFT];
            if (l->nent + 2 > l->cap_ent) {
                int c1 = l->cap_ent, c2 = l->cap_ent, c3 = l->cap_ent;
                if (!grow((void **)&l->ci, &c1, l->nent + 2, sizeof(int)) ||
                    !grow((void **)&l->shift, &c2, l->nent + 2, sizeof(int)) ||
                    !grow((void **)&l->jbeg, &c3, l->nent + 2, sizeof(int))) {
                    ch->st = HX_ERR_NOMEM;
                    return;
                }
                l->cap_ent = c1;
            }
            if (l->ncj + count[key] > l->cap_cj) {
                int c1 = l->cap_cj;
                if (!grow((void **)&l->cj, &c1, (long long)l->ncj + count[key], sizeof(int))) {
                    ch->st = HX_ERR_NOMEM;
                    return;
                }
                void *q = realloc(l->mask, (size_t)c1 * sizeof(uint16_t));
                if (!q) {
                    ch->st = HX_ERR_NOMEM;
                    return;
                }
                l->mask = q;
                l->cap_cj = c1;
            }
            l->ci[l->nent] = ci;
            l->shift[l->nent] = key % NSHIFT;
            l->jbeg[l->nent] = l->ncj;
            const int nkey = count[key];
            count[key] = l->ncj; /* from here on: where the key's next candidate goes */
            l->ncj += nkey;
            l->nent++;
            l->jbeg[l->nent] = l->ncj;
        }
        /* counting sort: one pass scatters the candidates to their entries */
        for (int t = 0; t < ch->ncand; t++) {
            const int key = ch->cand_key[t];
            nb_list *l = &ch->list[key / NSHIFT];
            const int at = count[key]++;
            l->cj[at] = ch->cand_cj[t];
            l->mask[at] = ch->cand_mask[t];
        }
    }
}

/* The search, compiled for baseline x86-64 and, where the compiler can, for AVX2 (chosen with
 * the kernels in select_kernel): the float range tests and the mask are vector code. */
static void search_chunk_generic(hx_nb *nb, nb_chunk *ch, const hx_local_set *set, double rlist,
                                 int check_missed)
{
    search_chunk_body(nb, ch, set, rlist, check_missed);
}

#if HX_HAVE_AVX2_KERNELS
HX_AVX2_ATTR static void search_chunk_avx2(hx_nb *nb, nb_chunk *ch, const hx_local_set *set,
                                           double rlist, int check_missed)
{
    search_chunk_body(nb, ch, set, rlist, check_missed);
}
#endif

/* Kernel ranges: the concatenated entries of each class cut into nthreads pieces of about equal
 * cluster-pair counts. Depends only on the lists and nthreads. */
static void split_work(hx_nb *nb)
{
    const int nth = nb->nthreads;
    for (int k = 0; k < NCLASS; k++) {
        long long total = 0;
        for (int b = 0; b < nb->nblocks; b++)
            total += nb->chunks[b].list[k].ncj;
        nb->ncj_class[k] = total;
        int t = 1;
        long long done = 0;
        nb->split_b[k][0] = 0;
        nb->split_e[k][0] = 0;
        for (int b = 0; b < nb->nblocks && t < nth; b++) {
            const nb_list *l = &nb->chunks[b].list[k];
            for (int e = 0; e < l->nent && t < nth; e++) {
                while (t < nth && done >= total * t / nth) {
                    nb->split_b[k][t] = b;
                    nb->split_e[k][t] = e;
                    t++;
                }
                done += l->jbeg[e + 1] - l->jbeg[e];
            }
        }
        for (; t <= nth; t++) {
            nb->split_b[k][t] = nb->nblocks;
            nb->split_e[k][t] = 0;
        }
    }
}

/* Thread t's share of class k. */
static void run_kernel(const hx_nb *nb, const nbk_args *ka, int k, int t, int energy, nb_chunk *th)
{
    const int b0 = nb->split_b[k][t], e0 = nb->split_e[k][t];
    const int b1 = nb->split_b[k][t + 1], e1 = nb->split_e[k][t + 1];
    for (int b = b0; b <= b1 && b < nb->nblocks; b++) {
        const nb_list *l = &nb->chunks[b].list[k];
        int eb = b == b0 ? e0 : 0, ee = b == b1 ? e1 : l->nent;
        if (ee > eb)
            nb->kernel[energy](ka, l, eb, ee, th->fbuf, &th->vlj, &th->vc);
    }
}

hx_status hx_nb_search(hx_nb *nb, const hx_local_set *set, double rlist, int check_missed,
                       long long *missed)
{
    HX_CHECK(nb && set && set->n >= 0, HX_ERR_INVALID_ARG, "hx_nb_search: NULL argument");
    HX_CHECK(rlist >= nb->p.rc, HX_ERR_INVALID_ARG,
             "pair-list radius rlist = %g nm is shorter than the cut-off %g nm: use rlist >= rc",
             rlist, nb->p.rc);
    HX_CHECK(set->ndim >= 0 && set->ndim <= 3, HX_ERR_INVALID_ARG, "ndim = %d", set->ndim);
    for (int d = 0; d < 3; d++)
        HX_CHECK(!set->periodic[d] || (set->box[d] > 0 && rlist < 0.5 * set->box[d]),
                 HX_ERR_GEOMETRY,
                 "pair-list radius %g nm is not below half the box (%g nm) along %c: use a "
                 "shorter cut-off/rlist or a larger box",
                 rlist, set->box[d], "xyz"[d]);
    if (missed)
        *missed = 0;
    const int n = set->n;
    HX_TRY(ensure_atoms(nb, n));
    HX_TRY(build_clusters(nb, set));
    nb->n = n;
    int do_missed = check_missed && missed && nb->have_prev && nb->n_prev == n;
    if (do_missed) {
        /* displacement of every atom since the previous build, largest per cluster: a pair can
         * only have come from beyond rlist_prev to inside rc if its two atoms moved by more
         * than rlist_prev - rc together */
        for (int cl = 0; cl < nb->ncl; cl++) {
            double m = 0.0;
            for (int k = 0; k < 4; k++) {
                int a = nb->perm[4 * cl + k];
                nb->dslot[4 * cl + k] = 0.0;
                if (a < 0)
                    continue;
                for (int d = 0; d < 3; d++)
                    nb->xps[3 * (4 * cl + k) + d] = nb->x_prev[3 * a + d];
                double d2 = 0.0;
                for (int d = 0; d < 3; d++) {
                    double v = set->x[3 * a + d] - nb->x_prev[3 * a + d];
                    if (set->periodic[d])
                        v = min_image(v, set->box[d]);
                    d2 += v * v;
                }
                double dd = sqrt(d2) * (1.0 + 1e-12) + 1e-12;
                nb->dslot[4 * cl + k] = dd;
                m = dd > m ? dd : m;
            }
            nb->dmax[cl] = m;
        }
    }
    for (int kz = -1; kz <= 1; kz++)
        for (int ky = -1; ky <= 1; ky++)
            for (int kx = -1; kx <= 1; kx++) {
                int sidx = (kx + 1) + 3 * (ky + 1) + 9 * (kz + 1);
                nb->shiftvec[sidx][0] = set->periodic[0] ? kx * set->box[0] : 0.0;
                nb->shiftvec[sidx][1] = set->periodic[1] ? ky * set->box[1] : 0.0;
                nb->shiftvec[sidx][2] = set->periodic[2] ? kz * set->box[2] : 0.0;
            }
    /* i clusters: zones below the i-zone count come first in sorted order */
    int nci = nb->zcl[hx_izone_count(set->ndim)];
    const int nblk = nb->nblocks;
    for (int c = 0; c < nblk; c++) {
        nb->chunks[c].cl_begin = (int)((long long)nci * c / nblk);
        nb->chunks[c].cl_end = (int)((long long)nci * (c + 1) / nblk);
    }
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(nb->nthreads)
#endif
    for (int c = 0; c < nblk; c++)
        nb->search(nb, &nb->chunks[c], set, rlist, do_missed);
    long long mtot = 0;
    for (int c = 0; c < nblk; c++) {
        nb_chunk *ch = &nb->chunks[c];
        HX_CHECK(ch->st == HX_OK, ch->st, "out of memory for the pair list");
        mtot += ch->missed;
    }
    if (hx_log_get_level() >= HX_LOG_DEBUG)
        for (int c = 0; c < nblk; c++)
            hx_log(HX_LOG_DEBUG, "pair search block %d: %d + %d cluster pairs", c,
                   nb->chunks[c].list[0].ncj, nb->chunks[c].list[1].ncj);
    split_work(nb);
    if (missed)
        *missed = do_missed ? mtot : 0;
    if (n > 0) /* an empty set may come with no arrays at all */
        memcpy(nb->x_prev, set->x, (size_t)n * 3 * sizeof(double));
    nb->n_prev = n;
    nb->rlist_prev = rlist;
    nb->rlist = rlist;
    nb->have_prev = 1;
    nb->ndim = set->ndim;
    for (int d = 0; d < 3; d++) {
        nb->periodic[d] = set->periodic[d];
        nb->box[d] = set->box[d];
    }
    return HX_OK;
}

/* ---- forces ----------------------------------------------------------------------------- */

/* Home atoms [b, e): self term and the reaction-field part of excluded (same-molecule) pairs
 * within the cut-off, in double in both precisions (a few pairs per molecule). Called inside
 * the parallel region: the work is shared by first atoms of molecules, so a molecule's forces
 * belong to one thread, and each thread's energy goes to its own chunk (summed in thread order
 * afterwards: deterministic for a given thread count). */
static void home_terms(const hx_nb *nb, const hx_local_set *set, int b, int e, double *f,
                       double *vhome)
{
    const double epsfac = nb->rf.epsfac, krf = nb->rf.k_rf, crf = nb->rf.c_rf;
    const double rc2 = nb->p.rc * nb->p.rc;
    double vself = 0.0, vexcl = 0.0;
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
    for (int i0 = b; i0 < e; i0++) {
        if (i0 > b && set->mol[i0 - 1] == set->mol[i0])
            continue; /* not the first atom of its molecule */
        for (int i = i0; i < e && set->mol[i] == set->mol[i0]; i++) {
            const double qi = set->q[i];
            vself -= 0.5 * epsfac * qi * qi * crf;
            for (int j = i + 1; j < e && set->mol[j] == set->mol[i]; j++) {
                double d[3], r2 = 0.0;
                for (int k = 0; k < 3; k++) {
                    d[k] = set->x[3 * i + k] - set->x[3 * j + k];
                    if (set->periodic[k])
                        d[k] = min_image(d[k], set->box[k]);
                    r2 += d[k] * d[k];
                }
                if (r2 >= rc2)
                    continue;
                const double qq = epsfac * qi * set->q[j];
                vexcl += qq * (krf * r2 - crf);
                const double fs = -2.0 * qq * krf; /* F_i = -dV/dr r_hat = -2 qq krf d */
                for (int k = 0; k < 3; k++) {
                    f[3 * i + k] += fs * d[k];
                    f[3 * j + k] -= fs * d[k];
                }
            }
        }
    }
    *vhome += vexcl + vself;
}

hx_status hx_nb_compute_part(hx_nb *nb, const hx_local_set *set, double *f, hx_nb_energies *e,
                             long long step, int part)
{
    HX_CHECK(nb && set && f, HX_ERR_INVALID_ARG, "hx_nb_compute: NULL argument");
    const int energy = e != NULL;
    HX_CHECK(part == HX_NB_ALL || part == HX_NB_LOCAL || part == HX_NB_NONLOCAL, HX_ERR_INVALID_ARG,
             "hx_nb_compute_part: part %d is not HX_NB_ALL, HX_NB_LOCAL or "
             "HX_NB_NONLOCAL",
             part);
    HX_CHECK(nb->have_prev && set->n == nb->n, HX_ERR_INVALID_ARG,
             "hx_nb_compute: the local set has %d atoms but the pair list was built for %d: "
             "call hx_nb_search after the atom set changes",
             set->n, nb->have_prev ? nb->n : -1);
    const int mixed = nb->precision == HX_NB_MIXED;
    const int n = nb->n, nth = nb->nthreads;
    if (part == HX_NB_NONLOCAL && nb->ncj_class[1] == 0) {
        /* no halo pairs (a single domain): nothing to add */
        if (e)
            e->lj = e->coulomb = 0.0;
        return HX_OK;
    }
    /* LOCAL reads and reduces only zone-0 clusters (halo positions may not have arrived) */
    const int cl_end = part == HX_NB_LOCAL ? nb->zcl[1] : nb->ncl;
    const double rc = nb->p.rc, rc2 = rc * rc;
    nbk_args ka;
    ka.xq = mixed ? (const void *)nb->xqf : (const void *)nb->xqd;
    ka.lj6 = mixed ? (const void *)nb->lj6f : (const void *)nb->lj6d;
    ka.lj12 = mixed ? (const void *)nb->lj12f : (const void *)nb->lj12d;
    ka.ts = nb->ts;
    ka.ljs = nb->ljs;
    ka.nslot = nb->nslot;
    ka.shiftvec = (const double(*)[3])nb->shiftvec;
    ka.rc2 = rc2;
    ka.irc6 = 1.0 / (rc2 * rc2 * rc2);
    ka.irc12 = ka.irc6 * ka.irc6;
    ka.krf = nb->rf.k_rf;
    ka.crf = nb->rf.c_rf;
    ka.epsfac = nb->rf.epsfac;
    const size_t rsz = mixed ? sizeof(float) : sizeof(double);
    if (part == HX_NB_LOCAL) {
        /* halo atoms get nothing from the local part (the reduction below writes only
         * zone-0 clusters) */
        for (int r = 0; r < set->nranges; r++)
            if (set->ranges[r].zone != 0)
                memset(f + 3 * (size_t)set->ranges[r].begin, 0,
                       3 * (size_t)(set->ranges[r].end - set->ranges[r].begin) * sizeof *f);
    }
    int bad = INT_MAX;
#ifdef _OPENMP
#pragma omp parallel num_threads(nth)
#endif
    {
        /* positions with the wrap offsets of the last search, sorted layout */
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int cl = 0; cl < cl_end; cl++) {
            for (int k = 0; k < 4; k++) {
                int s = 4 * cl + k, a = nb->perm[s];
                if (a < 0)
                    continue;
                for (int d = 0; d < 3; d++) {
                    double v = set->x[3 * a + d] + nb->wrap[3 * s + d];
                    if (mixed)
                        nb->xqf[16 * cl + 4 * d + k] = (float)v;
                    else
                        nb->xqd[16 * cl + 4 * d + k] = v;
                }
            }
        }
#ifdef _OPENMP
#pragma omp for schedule(static, 1)
#endif
        for (int c = 0; c < nth; c++) {
            nb_chunk *ch = &nb->chunks[c];
            memset(ch->fbuf, 0, (size_t)cl_end * 12 * rsz);
            ch->vlj = ch->vc = ch->vhome = 0.0;
            if (part != HX_NB_NONLOCAL)
                run_kernel(nb, &ka, 0, c, energy, ch);
            if (part != HX_NB_LOCAL)
                run_kernel(nb, &ka, 1, c, energy, ch);
        }
        /* reduce in chunk order into local order */
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int cl = 0; cl < cl_end; cl++) {
            for (int k = 0; k < 4; k++) {
                int a = nb->perm[4 * cl + k];
                if (a < 0)
                    continue;
                for (int d = 0; d < 3; d++) {
                    double s = 0.0;
                    size_t idx = 12 * (size_t)cl + 4 * (size_t)d + (size_t)k;
                    for (int c = 0; c < nth; c++)
                        s += mixed ? (double)((const float *)nb->chunks[c].fbuf)[idx]
                                   : ((const double *)nb->chunks[c].fbuf)[idx];
                    if (part == HX_NB_NONLOCAL)
                        f[3 * a + d] += s;
                    else
                        f[3 * a + d] = s;
                }
            }
        }
        if (part != HX_NB_NONLOCAL) {
#ifdef _OPENMP
            nb_chunk *me = &nb->chunks[omp_get_thread_num()];
#else
            nb_chunk *me = &nb->chunks[0];
#endif
            for (int r = 0; r < set->nranges; r++)
                if (set->ranges[r].zone == 0)
                    home_terms(nb, set, set->ranges[r].begin, set->ranges[r].end, f, &me->vhome);
        }
        /* a non-finite force: the first one (lowest index) is reported */
#ifdef _OPENMP
#pragma omp for schedule(static) reduction(min : bad)
#endif
        for (int k = 0; k < 3 * n; k++)
            if (!isfinite(f[k]) && k < bad)
                bad = k;
    }
    double vlj = 0.0, vc = 0.0, vhome = 0.0;
    for (int c = 0; c < nth; c++) {
        vlj += nb->chunks[c].vlj;
        vc += nb->chunks[c].vc;
        vhome += nb->chunks[c].vhome;
    }
    HX_CHECK(bad == INT_MAX, HX_ERR_PHYSICS,
             "step %lld: non-finite force on atom %d (local index %d): atoms overlap or the "
             "system blew up; check the input structure and use a smaller time step",
             step, bad / 3 + 1, bad / 3);
    if (!e)
        return HX_OK;
    e->lj = vlj;
    e->coulomb = vc + vhome;
    HX_CHECK(isfinite(e->lj) && isfinite(e->coulomb), HX_ERR_PHYSICS,
             "step %lld: non-finite non-bonded energy (LJ %g, Coulomb %g): atoms overlap or the "
             "system blew up; check the input structure and use a smaller time step",
             step, e->lj, e->coulomb);
    return HX_OK;
}

hx_status hx_nb_compute(hx_nb *nb, const hx_local_set *set, double *f, hx_nb_energies *e,
                        long long step)
{
    return hx_nb_compute_part(nb, set, f, e, step, HX_NB_ALL);
}
