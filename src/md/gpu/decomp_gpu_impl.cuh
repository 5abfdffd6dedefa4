/* Private layouts of the device decomposition (src/md/gpu/decomp_gpu.cu): the per-domain device
 * struct its kernels take by value, the control record (counters, results, needs) each domain
 * keeps in device memory and mirrors to pinned host memory once per search step, the message
 * formats, and the exact double arithmetic of the host path. */
#ifndef HX_GPU_DECOMP_GPU_IMPL_CUH
#define HX_GPU_DECOMP_GPU_IMPL_CUH

#include "md/gpu/decomp_gpu.h"
#include "gpu/gpu_util.cuh"

/* Threads of the single-block kernels (scans with a running carry over tiles of this many
 * elements). On the GPU a whole block of 1024: a domain of 11k atoms is 11 tiles. The emulation
 * starts a host thread per CUDA thread at every launch, so there a smaller block. */
#ifdef HX_CUDA_EMULATION
#define GDD_BT 32
#define GDD_MT 64
#else
#define GDD_BT 1024
#define GDD_MT 256 /* threads of the many-block kernels */
#endif
#define GDD_NW (GDD_BT / 32)

/* Capacities the kernels check; need[] in the control record says how much each search step
 * wanted. */
enum {
    GDD_CAP_HOME,  /* atoms of the home store */
    GDD_CAP_HMOL,  /* molecules of the home store */
    GDD_CAP_POOL,  /* atoms arriving by migration in one search step */
    GDD_CAP_PMOL,  /* molecules arriving */
    GDD_CAP_LOCAL, /* local atoms (home + halo) */
    GDD_CAP_MAP,   /* index map entries of all pulses */
    GDD_CAP_MIG,   /* bytes of a migration message */
    GDD_CAP_PMSG,  /* bytes of a plan pulse message */
    GDD_NCAP
};

typedef struct gdd_ctl {
    int nmol_a, n_home_a;       /* the current home (set by k_mig_init's last block) */
    int pool_nmol, pool_natoms; /* molecules arrived so far in this step */
    int nH, nP;                 /* kept home and pool molecules at the end of migration */
    int n_home, nmol;           /* the new home */
    int n_local, map_len;       /* plan: atoms so far, map entries so far */
    int nsettle, nshake, nbonded, nfree;
    int settle_bad;             /* SETTLE groups not consecutive (or not of standard masses) */
    int first_o;                /* oxygen of the first SETTLE group */
    int bcount[4];              /* bonded interactions by kind */
    unsigned long long err_far; /* (molecule << 32) | target domain moved more than a cell */
    int need[GDD_NCAP];
    int atom_offset[HX_MAX_PULSES];
    int recv_count[HX_MAX_PULSES];
    int send_zc[HX_MAX_PULSES][HX_MAX_ZONES];
    int recv_zc[HX_MAX_PULSES][HX_MAX_ZONES];
    unsigned long long deps[HX_MAX_PULSES];
    int pstart[4]; /* the pulse being built: its classes' starts in its message */
    int pmap0;     /* its first index map entry */
    int pmap_fits; /* its index map fits (the message's fit is in its header) */
    unsigned tick; /* blocks finished of the running many-block kernel (0 between; gdd_last) */
} gdd_ctl;

/* Per pulse, host-computed geometry (kernel argument). */
typedef struct gdd_pulse {
    int dim, k, pin; /* cartesian dimension, index k of d_k, pulse within the dimension */
    int chan;
    double lo;               /* our cell's lower boundary along dim */
    double hi_prev[3];       /* upper boundaries along d_0..d_{k-1} */
    double shift[3];         /* added to what we send */
    int zone_of_ci[4];       /* zone number of candidate class ci (the zone bits of d_0..d_{k-1}) */
    int rz[HX_MAX_ZONES];    /* receiver zone of a sender zone */
    int zbits[HX_MAX_ZONES]; /* bit k set when zone z is shifted along d_k */
} gdd_pulse;

/* The tables every domain shares: per global molecule its class and first atom, per class
 * (molecules with identical per-atom topology and the same molecule type) its atoms. */
typedef struct gdd_tab {
    const int *mol_class, *mol_first; /* [nmol], [nmol + 1] */
    const int4 *cl_info;   /* natoms, first class atom, kind bits (GDD_K_*), force-field moltype */
    const int4 *cl_settle; /* O, H, H positions in the molecule; compact SHAKE type */
    const int4 *cl_bcount; /* bonds, angles, dihedrals, 1-4 pairs */
    const int *ca_type;
    const double *ca_q, *ca_m, *ca_invm;
    const uint32_t *ca_excl;
} gdd_tab;

enum { GDD_K_SETTLE = 1, GDD_K_SHAKE = 2, GDD_K_BONDED = 4, GDD_K_STDWATER = 8 };

/* One local domain (kernel argument by value). A: the home of the previous search (lists
 * here, positions from the caller); B: the new home; pool: molecules arrived by migration. */
typedef struct gdd_dev {
    gdd_ctl *ctl;
    int *cur; /* molecules and atoms of the current home (k_commit writes them) */
    /* k_mig_init's "moved too far" minimum while it runs: ~0 between runs (its last block
     * moves it into ctl->err_far and resets it) */
    unsigned long long *far;
    gdd_tab tab;
    const double *ax, *av;
    double *awx; /* A positions wrapped into the box, as hx_migrate wraps the home store */
    int *agid, *amolg, *amg, *ams;
    int *akeep, *atgt;
    double *px, *pv;
    int *pgid, *pmolg, *pmg, *pms, *pna, *pkeep, *ptgt;
    int *hidx, *hgid, *plist, *pg, *psorted, *psg, *fsrc; /* final ordering */
    double *bx, *bv;
    int *bgid, *bmolg, *bmg, *bms;
    double *lx;
    int *lgid, *lmol, *lzone, *lfrom, *ltype;
    double *lq;
    uint32_t *lexcl;
    unsigned char *lmpos;
    double *hm, *him;
    int *settle, *freeat, *shs, *sht, *shg, *bds, *bdt, *bdg;
    int4 *boff;          /* per bonded molecule: first interaction of each kind within its kind */
    int4 *ho1, *ho2;     /* per new home molecule: its offsets into the lists (k_fin_b) */
    unsigned char *psel; /* per pulse candidate: 0, or 1 + its class (k_pulse_sel_scan) */
    int *prank;          /* per selected candidate: its rank within its class and block */
    int4 *pblk;          /* per block of k_pulse_sel_scan: its class counts, then (its last
                            block) the blocks before it: the class ranks' offsets */
    int *mgo, *mrec, *mfirst; /* migration pass, per molecule of [home | pool]: its atoms if it
                                 leaves (else 0), its record and first atom in the message */
    int *imap;
    int cap[GDD_NCAP];
    int me, coord[3], grid[3], ndim, dims[3];
    double box[3], cell[3], rc2;
} gdd_dev;

/* Message header: 32 bytes. bytes: the whole message (the transport moves this many). */
typedef struct gdd_msg_head {
    long long bytes;
    int n, natoms; /* migration: molecules, atoms; pulse: atoms */
    int zc[4];     /* unused (migration) */
} gdd_msg_head;
/* migration: molecule records after the header, then the atoms */
typedef struct gdd_mmol {
    int gid, natoms, tgt, first; /* first: index of its first atom record */
} gdd_mmol;
typedef struct gdd_matom {
    double x[3], v[3];
    int gid, molg;
} gdd_matom;
/* pulse: 64-byte header (zone counts by the sender's zone number), then the atoms */
typedef struct gdd_pmsg_head {
    long long bytes;
    int n, pad;
    int zc[HX_MAX_ZONES];
    int pad2[4];
} gdd_pmsg_head;
typedef struct gdd_patom {
    double x[3];
    int gid, mol;
} gdd_patom;

/* The host path's double arithmetic, operation by operation: no multiply-add contraction
 * (nvcc contracts a * b + c by default; the host code has no FMA), so that a molecule lands on
 * the same domain and an atom is selected for the same pulse as on the host. */
#ifdef HX_CUDA_EMULATION
static inline double gdd_add(double a, double b)
{
    return a + b;
}
static inline double gdd_sub(double a, double b)
{
    return a - b;
}
static inline double gdd_mul(double a, double b)
{
    return a * b;
}
static inline double gdd_div(double a, double b)
{
    return a / b;
}
#else
#define gdd_add __dadd_rn
#define gdd_sub __dsub_rn
#define gdd_mul __dmul_rn
#define gdd_div __ddiv_rn
#endif

#endif
