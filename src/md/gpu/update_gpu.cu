/* GPU update (src/md/gpu/update_gpu.h): leap-frog, SETTLE, SHAKE, kinetic energy, force clearing
 * and molecule wrapping for the home atoms, in double.
 *
 * One thread per rigid water (leap-frog of its 3 atoms, then SETTLE: the analytical solution of
 * src/md/settle.c, whose derivation is described there, in double), one per SHAKE molecule
 * (leap-frog of its atoms into a per-thread array, then the sweeps of src/md/shake.h, the CPU's
 * own code: ethanol's 9 atoms and 6 constraints take ~10 sweeps, ~1000 flops in double, a few
 * microseconds for the few threads that have them) and one per remaining atom.
 * The kinetic energy is summed per block, the block sums by the last block in block order: the
 * same result at every run. Memory traffic per atom and step: positions and velocities in double
 * (48 bytes read and written), force and float positions (24 bytes): about 5 MB at 45k atoms,
 * ~1-2 us at the H200's bandwidth; the time is launch and latency, not bandwidth. */
#include "gpu/gpu_util.cuh"
#include "md/gpu/update_gpu.h"
#include "md/shake.h"

#include <limits.h>
#include <stddef.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Threads per block. k_update has a thread per water: 118 blocks at 45k atoms, fewer than the
 * 132 multiprocessors; blocks of 64 and 32 spread them over all of them but were not faster
 * (86.5 and 88.6 against 86.2 us per step at 45k, bench/results/h200-2026-12-04d/ab_*). */
#define UPD_THREADS 128

typedef struct upd_dev {
    double *x, *v, *invm, *m;
    int *settle; /* [3 nsettle] */
    int *free_at;
    int *mol_start;
    /* SHAKE: per molecule first atom and compact type; per compact type (natoms, constraints,
     * first constraint, first mass) into cons/mpos */
    int *sh_start, *sh_type;
    int4 *sh_tinfo;
    hx_constraint *sh_cons;
    double *sh_m;
    double shake_tol;
    int n, nsettle, nshake, nfree, nmol;
    double dt;
    double m_o, m_h, ra, rb, hc, d_oh, d_hh;
    /* reciprocals, so SETTLE's chain of dependent double operations has no divisions where
     * the divisor is a constant (each is a reciprocal iteration of ~10 dependent steps) */
    double im_o, im_h, inv_mt, inv_ra, inv_2hc;
    /* SETTLE group w is atoms settle0 + 3 w + (0, 1, 2) with masses m_o, m_h, m_h (water
     * boxes, the solvent of mixtures): no index or mass loads; -1 otherwise */
    int settle0;
    int periodic[3];
    double box[3];
    double *part;   /* [4 blocks] kinetic energy per block (scratch), then with ke_defer the
                       current, previous and uncommitted half steps' per-block sums */
    int nbk;        /* blocks of that array (part + nbk: current, + 2 nbk: previous, + 3 nbk) */
    int ke_defer;   /* HALOX_GPU_KE_DEFER=1: k_update leaves per-block sums, the fetch sums */
    unsigned *done; /* blocks finished (last-block pattern) */
    double *ke;     /* [2]: previous half step, current half step */
    unsigned *dev;  /* largest relative deviation, float bits (non-negative) */
    int *bad;       /* first water that SETTLE failed on, INT_MAX: none */
    int *bad_shake; /* 2 k (+1: no convergence) of the first SHAKE molecule k failed, INT_MAX */
} upd_dev;

/* The device buffers of upd_dev, as slots whose capacity is kept (hx_gpu_update_reset reuses
 * them: a repartition every nstlist steps would otherwise pay ~20 cudaFree/cudaMalloc pairs,
 * each cudaFree a device synchronisation, and a pinned allocation). */
enum {
    UB_X,
    UB_V,
    UB_INVM,
    UB_M,
    UB_SETTLE,
    UB_FREE_AT,
    UB_MOL_START,
    UB_SH_START,
    UB_SH_TYPE,
    UB_SH_TINFO,
    UB_SH_CONS,
    UB_SH_M,
    UB_PART,
    UB_DONE,
    UB_KE,
    UB_DEV,
    UB_BAD,
    UB_BAD_SHAKE,
    UB_N
};
static const size_t ub_offset[UB_N] = {
    offsetof(upd_dev, x),         offsetof(upd_dev, v),        offsetof(upd_dev, invm),
    offsetof(upd_dev, m),         offsetof(upd_dev, settle),   offsetof(upd_dev, free_at),
    offsetof(upd_dev, mol_start), offsetof(upd_dev, sh_start), offsetof(upd_dev, sh_type),
    offsetof(upd_dev, sh_tinfo),  offsetof(upd_dev, sh_cons),  offsetof(upd_dev, sh_m),
    offsetof(upd_dev, part),      offsetof(upd_dev, done),     offsetof(upd_dev, ke),
    offsetof(upd_dev, dev),       offsetof(upd_dev, bad),      offsetof(upd_dev, bad_shake)};

struct hx_gpu_update {
    hx_gpu_update_params p;
    upd_dev d;
    size_t cap[UB_N]; /* bytes allocated in each slot */
    /* the SHAKE tables of every constrained molecule type of ff, in its order, are on the
     * device (hx_gpu_update_reset_device: the lists come from the device with those types) */
    const hx_forcefield *shake_all;
    int nblocks;
    /* k_update variants (issue 28, to be measured; read at create and reset):
     * HALOX_GPU_UPDATE_EARLY=1 loads the slots of a staged block's waters with its staging
     * loads; HALOX_GPU_KE_DEFER=1 (d.ke_defer) */
    int early;
    int upd_blocks; /* k_update's grid: the per-block sums of ke_defer */
    struct {
        double ke[3];
        unsigned dev;
        int bad, bad_shake;
    } * h_res; /* pinned */
};

/* ---- SETTLE in double -------------------------------------------------------------------- */

static __device__ __forceinline__ void u_cross(const double a[3], const double b[3], double c[3])
{
    c[0] = a[1] * b[2] - a[2] * b[1];
    c[1] = a[2] * b[0] - a[0] * b[2];
    c[2] = a[0] * b[1] - a[1] * b[0];
}

static __device__ __forceinline__ double u_dot(const double a[3], const double b[3])
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

static __device__ __forceinline__ bool u_normalise(double a[3])
{
    const double in = rsqrt(u_dot(a, a));
    if (!(in > 0.0) || !isfinite(in))
        return false;
    a[0] *= in;
    a[1] *= in;
    a[2] *= in;
    return true;
}

/* x0: O, H, H at the start of the step; x1: unconstrained new positions, constrained in place. */
static __device__ __forceinline__ bool u_settle(const upd_dev &d, const double (*x0)[3],
                                                double (*x1)[3])
{
    const double mo = d.m_o, mh = d.m_h;
    double com[3], ra1[3], rb1[3], rc1[3], ob[3], oc[3];
#pragma unroll
    for (int k = 0; k < 3; k++) {
        com[k] = (mo * x1[0][k] + mh * (x1[1][k] + x1[2][k])) * d.inv_mt;
        ra1[k] = x1[0][k] - com[k];
        rb1[k] = x1[1][k] - com[k];
        rc1[k] = x1[2][k] - com[k];
        ob[k] = x0[1][k] - x0[0][k];
        oc[k] = x0[2][k] - x0[0][k];
    }
    double ez[3], ex[3], ey[3];
    u_cross(ob, oc, ez);
    if (!u_normalise(ez))
        return false;
    u_cross(ra1, ez, ex);
    if (!u_normalise(ex))
        return false;
    u_cross(ez, ex, ey);
    const double xb0 = u_dot(ob, ex), yb0 = u_dot(ob, ey), xc0 = u_dot(oc, ex), yc0 = u_dot(oc, ey);
    const double za1 = u_dot(ra1, ez);
    const double xb1 = u_dot(rb1, ex), yb1 = u_dot(rb1, ey), zb1 = u_dot(rb1, ez);
    const double xc1 = u_dot(rc1, ex), yc1 = u_dot(rc1, ey), zc1 = u_dot(rc1, ez);
    const double sphi = za1 * d.inv_ra;
    if (!(fabs(sphi) < 1.0))
        return false;
    /* cos(phi) and its reciprocal from one reciprocal square root */
    const double rcphi = rsqrt(1.0 - sphi * sphi), cphi = (1.0 - sphi * sphi) * rcphi;
    if (!(cphi > 0.0) || !isfinite(rcphi))
        return false;
    const double spsi = (zb1 - zc1) * d.inv_2hc * rcphi;
    if (!(fabs(spsi) <= 1.0))
        return false;
    const double cpsi = sqrt(1.0 - spsi * spsi);
    const double ya2 = d.ra * cphi;
    const double xb2 = -d.hc * cpsi;
    const double yb2 = -d.rb * cphi - d.hc * spsi * sphi;
    const double yc2 = -d.rb * cphi + d.hc * spsi * sphi;
    const double xc2 = -xb2;
    const double zb2 = -d.rb * sphi + d.hc * spsi * cphi;
    const double zc2 = -d.rb * sphi - d.hc * spsi * cphi;
    const double alpha = xb2 * (xb0 - xc0) + yb0 * yb2 + yc0 * yc2;
    const double beta = xb2 * (yc0 - yb0) + xb0 * yb2 + xc0 * yc2;
    const double gamma = xb0 * yb1 - yb0 * xb1 + xc0 * yc1 - yc0 * xc1;
    const double ab2 = alpha * alpha + beta * beta;
    const double disc = ab2 - gamma * gamma;
    if (!(disc >= 0.0) || !(ab2 > 0.0))
        return false;
    const double sth = (alpha * gamma - beta * sqrt(disc)) / ab2;
    const double cth = sqrt(1.0 - sth * sth);
    if (!isfinite(sth) || !isfinite(cth))
        return false;
    const double xa3 = -ya2 * sth, ya3 = ya2 * cth;
    const double xb3 = xb2 * cth - yb2 * sth, yb3 = xb2 * sth + yb2 * cth;
    const double xc3 = xc2 * cth - yc2 * sth, yc3 = xc2 * sth + yc2 * cth;
#pragma unroll
    for (int k = 0; k < 3; k++) {
        x1[0][k] = com[k] + xa3 * ex[k] + ya3 * ey[k] + za1 * ez[k];
        x1[1][k] = com[k] + xb3 * ex[k] + yb3 * ey[k] + zb2 * ez[k];
        x1[2][k] = com[k] + xc3 * ex[k] + yc3 * ey[k] + zc2 * ez[k];
    }
    return true;
}

/* ---- kernels ----------------------------------------------------------------------------- */

/* KED (HALOX_GPU_KE_DEFER=1): the block's sum is left in the per-block arrays, the current one
 * moved to the previous one (prev_b: this block's current sum, loaded at the kernel's start),
 * and summed in block order by k_ke_sum when the host fetches the results: the same sums in
 * the same order as ke_finish's, without its fence, counter atomic and last block's pass at the
 * end of every update. */
static __device__ __forceinline__ void ke_keep(const upd_dev &d, double ke, double *s_red,
                                               int commit, double prev_b)
{
    const double bs = hx_block_sum_d(ke, s_red);
    if (threadIdx.x == 0) {
        if (commit) {
            d.part[2 * d.nbk + blockIdx.x] = prev_b;
            d.part[d.nbk + blockIdx.x] = bs;
        } else {
            d.part[3 * d.nbk + blockIdx.x] = bs;
        }
    }
}

/* The last block to finish sums the per-block kinetic energies in block order and shifts the
 * half-step pair. With ke_defer (k_ke only: the upload's kinetic energy) it also sets the
 * per-block arrays to what ke_keep would leave: the previous half step's sums, and the new
 * total as block 0's current sum. */
static __device__ __forceinline__ void ke_finish(const upd_dev &d, double ke, double *s_red,
                                                 int commit)
{
    __shared__ int s_last;
    const double bs = hx_block_sum_d(ke, s_red);
    if (threadIdx.x == 0) {
        d.part[blockIdx.x] = bs;
        __threadfence();
        s_last = atomicAdd(d.done, 1u) == gridDim.x - 1u;
    }
    __syncthreads();
    if (!s_last)
        return;
    __threadfence();
    double s = 0.0;
    for (int b = threadIdx.x; b < (int)gridDim.x; b += blockDim.x)
        s += *(volatile double *)&d.part[b];
    s = hx_block_sum_d(s, s_red);
    if (threadIdx.x == 0) {
        if (commit) {
            d.ke[0] = d.ke[1];
            d.ke[1] = s;
        } else {
            d.ke[2] = s;
        }
        *d.done = 0u;
    }
    if (d.ke_defer && commit) {
        for (int b = threadIdx.x; b < d.nbk; b += blockDim.x) {
            d.part[2 * d.nbk + b] = d.part[d.nbk + b];
            d.part[d.nbk + b] = b == 0 ? s : 0.0;
        }
    }
}

/* The kinetic energies of ke_keep's per-block sums (nb blocks of k_update), summed in block
 * order as ke_finish sums them: previous, current and uncommitted half steps. One block. */
__global__ __launch_bounds__(UPD_THREADS) void k_ke_sum(upd_dev d, int nb)
{
    __shared__ double s_red[32];
    double r[3];
#pragma unroll
    for (int a = 0; a < 3; a++) {
        const double *p = d.part + (a == 0 ? 2 : a == 1 ? 1 : 3) * (size_t)d.nbk;
        double s = 0.0;
        for (int b = threadIdx.x; b < nb; b += blockDim.x)
            s += p[b];
        r[a] = hx_block_sum_d(s, s_red);
    }
    if (threadIdx.x == 0) {
        d.ke[0] = r[0];
        d.ke[1] = r[1];
        d.ke[2] = r[2];
    }
}

/* The pair module's layout for one step (hx_gpu_update_link); slot NULL: none. */
typedef struct upd_link {
    const int *slot;
    float *fcl;
    float4 *xq;
    const float4 *swq;
} upd_link;

/* Home atom a's slot, or -1 without a link. */
static __device__ __forceinline__ int upd_slot(const upd_link &l, int a)
{
    return l.slot ? __ldg(&l.slot[a]) : -1;
}

/* The shift of slot sl (upd_store), zero without one. */
static __device__ __forceinline__ float4 upd_shift(const upd_link &l, int sl)
{
    return sl >= 0 ? __ldg(&l.swq[sl]) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
}

/* The slot's stores of an updated atom: its pair force zeroed for the next step and, on
 * commit, its float position as the pair module's gather writes it (the float position plus
 * the slot's shift w, loaded with the other inputs: a load after a store here would wait a
 * round trip of its own). */
static __device__ __forceinline__ void upd_store_slot(const upd_link &l, int sl, float4 w,
                                                      const double xn[3], int commit)
{
    if (sl < 0)
        return;
    l.fcl[3 * sl] = 0.0f;
    l.fcl[3 * sl + 1] = 0.0f;
    l.fcl[3 * sl + 2] = 0.0f;
    if (commit)
        l.xq[sl] = make_float4((float)xn[0] + w.x, (float)xn[1] + w.y, (float)xn[2] + w.z, w.w);
}

/* Stores of an updated atom: the slot's (upd_store_slot), its force zeroed and, on commit, the
 * new position and velocity and the float position (xf). */
static __device__ __forceinline__ void upd_store(const upd_dev &d, const upd_link &l,
                                                 float *__restrict__ xf, float *__restrict__ f,
                                                 int a, int sl, float4 w, const double xn[3],
                                                 const double vn[3], int commit)
{
    upd_store_slot(l, sl, w, xn, commit);
    if (!commit)
        return;
#pragma unroll
    for (int k = 0; k < 3; k++) {
        f[3 * a + k] = 0.0f;
        d.x[3 * a + k] = xn[k];
        d.v[3 * a + k] = vn[k];
        xf[3 * a + k] = (float)xn[k];
    }
}

/* One thread per water (SETTLE), per SHAKE molecule, per other atom.
 * Every load of a thread is issued before its first store: the compiler must assume that the
 * stores alias the loads, and with stores between them (f zeroed atom by atom, as this kernel
 * did) it issued each atom's loads one round trip to memory after the previous atom's. With
 * one thread per water the grid is less than a wave, nothing hides that latency, and the
 * kernel was 15.7 us at 45k atoms, 52% of its stall samples waiting on those loads (ncu,
 * bench/results/h200-2026-12-04a). */
/* The block's staged loads and stores are 9 unrolled rounds of registers, all loads before
 * the first shared-memory store and all shared loads before the first global store (issue 28).
 * As loops each round waited a round trip to memory: a round's shared store waits for its global
 * loads, and the next round's loads were not issued before it; in the write-back a round's
 * registers are reused only once the previous round's stores have read them (ncu at 180k atoms:
 * 24 % of the stall samples on the first loop's shared store, 35 % in the write-back loop,
 * bench/results/h200-2026-12-04f-roofline). Unrolled, the step at 45k atoms took 1.6 us less
 * (h200-2026-12-04g-roofab); SETTLE in float instead of double gained nothing more and missed
 * test_gpu_ethanol's constraint bars: dropped. */
/* EARLY, KED (issue 28, to be measured): the slots of a staged block's waters loaded with the
 * staging loads (one round trip less after the staging barrier); the kinetic energy left as
 * per-block sums (ke_keep).
 * PDL (HALOX_GPU_PDL=1, issue 28, to be measured): launched through a programmatic edge from the
 * local pair kernel (hx_gpu_update_step), the kernel may start while the pair kernel's last
 * blocks still run. Before hx_pdl_wait it reads only what that kernel does not write: x, v, the
 * slots and shifts (written by the search), the constraint tables, its own block sums; f, the
 * pair forces fcl and every store come after it (the pair kernel reads the xq and fcl this
 * kernel writes). Every thread passes hx_pdl_wait, whichever path it takes below. */
template <bool EARLY, bool KED, bool PDL>
__global__ __launch_bounds__(UPD_THREADS) void k_update(upd_dev d, upd_link l,
                                                        float *__restrict__ xf,
                                                        float *__restrict__ f, double lambda,
                                                        int want_dev, int commit)
{
    __shared__ double s_red[32];
    /* consecutive waters (settle0): the block's 9 x blockDim coordinates of x, v and f move
     * between memory and shared memory in coalesced lines, not as 9 strided accesses per thread
     * (which made this kernel L2-bound: 47% of L2 throughput and the load-store queue full for a
     * few MB of data) */
    __shared__ double s_x[9 * UPD_THREADS], s_v[9 * UPD_THREADS];
    __shared__ float s_f[9 * UPD_THREADS];
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    const double dt = d.dt, idt = 1.0 / dt;
    double ke = 0.0;
    const int t0 = blockIdx.x * blockDim.x;
    const bool staged = d.settle0 >= 0 && t0 < d.nsettle; /* the same for the whole block */
    const int nst = staged ? 9 * hx_imin((int)blockDim.x, d.nsettle - t0) : 0;
    const size_t c0 = 3 * ((size_t)d.settle0 + 3 * (size_t)t0); /* first staged coordinate */
    double prev_b = 0.0; /* KED: this block's current half-step sum, moved to the previous one */
    if (KED && commit && threadIdx.x == 0)
        prev_b = d.part[d.nbk + blockIdx.x];
    int sle[3] = {-1, -1, -1};
    const bool early = EARLY && staged && t < d.nsettle;
    /* EARLY: the slots' loads first, beside the staging loads, so that the pair forces and
     * shifts can be loaded right after the barrier (loaded before it too, ptxas issued them
     * ahead of the staging loads, or split the staging in two rounds of round trips: SASS) */
    if (early) {
#pragma unroll
        for (int j = 0; j < 3; j++)
            sle[j] = upd_slot(l, d.settle0 + 3 * t + j);
    }
    {
        double rx[9], rv[9];
        float rf[9];
#pragma unroll
        for (int r = 0; r < 9; r++) {
            const int i = threadIdx.x + r * UPD_THREADS;
            if (i < nst) {
                rx[r] = d.x[c0 + i];
                rv[r] = d.v[c0 + i];
                if (!PDL)
                    rf[r] = f[c0 + i];
            }
        }
        if (PDL) {
            /* the loads above are in flight while the pair kernel ends */
            hx_pdl_wait();
#pragma unroll
            for (int r = 0; r < 9; r++) {
                const int i = threadIdx.x + r * UPD_THREADS;
                if (i < nst)
                    rf[r] = f[c0 + i];
            }
        }
#pragma unroll
        for (int r = 0; r < 9; r++) {
            const int i = threadIdx.x + r * UPD_THREADS;
            if (i < nst) {
                s_x[i] = rx[r];
                s_v[i] = rv[r];
                s_f[i] = rf[r];
            }
        }
    }
    if (staged)
        __syncthreads();
    if (t < d.nsettle) {
        int id[3], sl[3];
        double x0[3][3], x1[3][3], vn[3][3], im[3], ms[3];
        float fa[3][3];
        float4 w[3];
        const int o = 9 * threadIdx.x; /* this water in the staged block */
#pragma unroll
        for (int j = 0; j < 3; j++)
            id[j] = staged ? d.settle0 + 3 * t + j : __ldg(&d.settle[3 * t + j]);
#pragma unroll
        for (int j = 0; j < 3; j++) {
            im[j] = staged ? (j ? d.im_h : d.im_o) : __ldg(&d.invm[id[j]]);
            ms[j] = staged ? (j ? d.m_h : d.m_o) : __ldg(&d.m[id[j]]);
            sl[j] = early ? sle[j] : upd_slot(l, id[j]);
#pragma unroll
            for (int k = 0; k < 3; k++) {
                x0[j][k] = staged ? s_x[o + 3 * j + k] : d.x[3 * id[j] + k];
                vn[j][k] = staged ? s_v[o + 3 * j + k] : d.v[3 * id[j] + k];
                fa[j][k] = staged ? s_f[o + 3 * j + k] : f[3 * id[j] + k];
            }
        }
#pragma unroll
        for (int j = 0; j < 3; j++)
            w[j] = upd_shift(l, sl[j]);
#pragma unroll
        for (int j = 0; j < 3; j++)
#pragma unroll
            for (int k = 0; k < 3; k++) {
                if (sl[j] >= 0)
                    fa[j][k] += l.fcl[3 * sl[j] + k];
                vn[j][k] = lambda * vn[j][k] + (double)fa[j][k] * (im[j] * dt);
                x1[j][k] = x0[j][k] + vn[j][k] * dt;
            }
        if (!u_settle(d, x0, x1)) {
            atomicMin(d.bad, t);
        }
#pragma unroll
        for (int j = 0; j < 3; j++) {
            double v2 = 0.0;
#pragma unroll
            for (int k = 0; k < 3; k++) {
                vn[j][k] = (x1[j][k] - x0[j][k]) * idt;
                v2 += vn[j][k] * vn[j][k];
            }
            ke += 0.5 * ms[j] * v2;
        }
        if (staged) {
            /* the slot's stores here, the rest below for the whole block */
#pragma unroll
            for (int j = 0; j < 3; j++) {
                upd_store_slot(l, sl[j], w[j], x1[j], commit);
#pragma unroll
                for (int k = 0; k < 3; k++) {
                    s_x[o + 3 * j + k] = x1[j][k];
                    s_v[o + 3 * j + k] = vn[j][k];
                }
            }
        } else {
#pragma unroll
            for (int j = 0; j < 3; j++)
                upd_store(d, l, xf, f, id[j], sl[j], w[j], x1[j], vn[j], commit);
        }
        if (want_dev) {
            const int pr[3][2] = {{0, 1}, {0, 2}, {1, 2}};
            float dmax = 0.0f;
#pragma unroll
            for (int p = 0; p < 3; p++) {
                double r2 = 0.0;
#pragma unroll
                for (int k = 0; k < 3; k++) {
                    const double u = x1[pr[p][0]][k] - x1[pr[p][1]][k];
                    r2 += u * u;
                }
                const double d0 = p < 2 ? d.d_oh : d.d_hh;
                const double rel = fabs(sqrt(r2) - d0) / d0;
                const float rf = isfinite(rel) ? (float)rel : 3.0e38f;
                dmax = fmaxf(dmax, rf);
            }
            atomicMax(d.dev, __float_as_uint(dmax));
        }
    } else if (t - d.nsettle < d.nshake) {
        const int k = t - d.nsettle, a0 = d.sh_start[k];
        const int4 ti = d.sh_tinfo[d.sh_type[k]]; /* natoms, constraints, first of each */
        const hx_constraint *cs = d.sh_cons + ti.z;
        const double *ms = d.sh_m + ti.w;
        double x1[3 * HX_MAX_MOL_ATOMS];
        for (int j = 0; j < 3 * ti.x; j++) {
            const int a = 3 * a0 + j, sl = upd_slot(l, a0 + j / 3);
            const float fj = f[a] + (sl >= 0 ? l.fcl[3 * sl + j % 3] : 0.0f);
            const double vn = lambda * d.v[a] + (double)fj * (d.invm[a0 + j / 3] * dt);
            x1[j] = d.x[a] + vn * dt;
        }
        const int rc = hx_shake_molecule(ti.y, cs, ms, d.x + 3 * (size_t)a0, x1, d.shake_tol,
                                         HX_SHAKE_MAXITER);
        if (rc < 0)
            atomicMin(d.bad_shake, 2 * k + (rc == -2));
        if (want_dev) {
            float dmax = 0.0f;
            for (int q = 0; q < ti.y; q++) {
                double r2 = 0.0;
                for (int c = 0; c < 3; c++) {
                    const double u = x1[3 * cs[q].i + c] - x1[3 * cs[q].j + c];
                    r2 += u * u;
                }
                const double rel = fabs(sqrt(r2) - cs[q].d) / cs[q].d;
                dmax = fmaxf(dmax, isfinite(rel) ? (float)rel : 3.0e38f);
            }
            atomicMax(d.dev, __float_as_uint(dmax));
        }
        for (int j = 0; j < ti.x; j++) {
            const int a = a0 + j;
            double vn[3], v2 = 0.0;
            for (int c = 0; c < 3; c++) {
                vn[c] = (x1[3 * j + c] - d.x[3 * a + c]) * idt;
                v2 += vn[c] * vn[c];
            }
            ke += 0.5 * d.m[a] * v2;
            /* a molecule's atoms one after another: few molecules take this path (ethanol in
             * water), so the loads here may wait behind the previous atom's stores */
            const int sl = upd_slot(l, a);
            upd_store(d, l, xf, f, a, sl, upd_shift(l, sl), x1 + 3 * j, vn, commit);
        }
    } else if (t - d.nsettle - d.nshake < d.nfree) {
        const int a = d.free_at[t - d.nsettle - d.nshake], sl = upd_slot(l, a);
        const float4 w = upd_shift(l, sl);
        const double im = d.invm[a] * dt;
        double xn[3], vn[3], v2 = 0.0;
#pragma unroll
        for (int k = 0; k < 3; k++) {
            const float fk = f[3 * a + k] + (sl >= 0 ? l.fcl[3 * sl + k] : 0.0f);
            vn[k] = lambda * d.v[3 * a + k] + (double)fk * im;
            xn[k] = d.x[3 * a + k] + vn[k] * dt;
            v2 += vn[k] * vn[k];
        }
        ke = 0.5 * d.m[a] * v2;
        upd_store(d, l, xf, f, a, sl, w, xn, vn, commit);
    }
    if (staged) {
        __syncthreads();
        if (commit) {
            double rx[9], rv[9];
#pragma unroll
            for (int r = 0; r < 9; r++) {
                const int i = threadIdx.x + r * UPD_THREADS;
                if (i < nst) {
                    rx[r] = s_x[i];
                    rv[r] = s_v[i];
                }
            }
#pragma unroll
            for (int r = 0; r < 9; r++) {
                const int i = threadIdx.x + r * UPD_THREADS;
                if (i < nst) {
                    d.x[c0 + i] = rx[r];
                    d.v[c0 + i] = rv[r];
                    xf[c0 + i] = (float)rx[r];
                    f[c0 + i] = 0.0f;
                }
            }
        }
    }
    if (KED)
        ke_keep(d, ke, s_red, commit, prev_b);
    else
        ke_finish(d, ke, s_red, commit);
}

/* Kinetic energy of the uploaded velocities: becomes the current half step's. */
__global__ __launch_bounds__(UPD_THREADS) void k_ke(upd_dev d)
{
    __shared__ double s_red[32];
    const int a = blockIdx.x * blockDim.x + threadIdx.x;
    double ke = 0.0;
    if (a < d.n) {
        const double *v = d.v + 3 * a;
        ke = 0.5 * d.m[a] * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    }
    ke_finish(d, ke, s_red, 1);
}

__global__ __launch_bounds__(UPD_THREADS) void k_wrap(upd_dev d, float *__restrict__ xf)
{
    const int mol = blockIdx.x * blockDim.x + threadIdx.x;
    const int nm = d.mol_start ? d.nmol : d.n;
    if (mol >= nm)
        return;
    const int a0 = d.mol_start ? d.mol_start[mol] : mol;
    const int a1 = d.mol_start ? d.mol_start[mol + 1] : mol + 1;
    double sh[3];
#pragma unroll
    for (int k = 0; k < 3; k++)
        sh[k] = d.periodic[k] ? -d.box[k] * floor(d.x[3 * a0 + k] / d.box[k]) : 0.0;
    if (sh[0] == 0.0 && sh[1] == 0.0 && sh[2] == 0.0)
        return;
    for (int a = a0; a < a1; a++)
        for (int k = 0; k < 3; k++) {
            const double v = d.x[3 * a + k] + sh[k];
            d.x[3 * a + k] = v;
            xf[3 * a + k] = (float)v;
        }
}

__global__ __launch_bounds__(UPD_THREADS) void k_to_float(upd_dev d, float *__restrict__ xf)
{
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < 3 * d.n)
        xf[k] = (float)d.x[k];
}

/* hx_gpu_update_reset_device in one launch: the device search step's arrays copied in
 * (positions also to float), the per-run scratch and result words reset. One kernel instead of
 * ~15 copies and sets: each API call is a few microseconds of the host's on the search step,
 * more with several processes sharing the GPU. */
__global__ __launch_bounds__(UPD_THREADS) void k_reset_from(upd_dev d, hx_gpu_update_dev_lists L,
                                                            float *__restrict__ xf)
{
    const long long t0 = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long k = t0; k < 3LL * d.n; k += step) {
        const double x = L.x[k];
        d.x[k] = x;
        d.v[k] = L.v[k];
        xf[k] = (float)x;
    }
    for (long long k = t0; k < d.n; k += step) {
        d.invm[k] = L.invm[k];
        d.m[k] = L.mass[k];
    }
    for (long long k = t0; k < d.nfree; k += step)
        d.free_at[k] = L.free_at[k];
    for (long long k = t0; k < 3LL * d.nsettle; k += step)
        d.settle[k] = L.settle[k];
    for (long long k = t0; k <= d.nmol; k += step)
        d.mol_start[k] = L.mol_start[k];
    for (long long k = t0; k < d.nshake; k += step) {
        d.sh_start[k] = L.shake_start[k];
        d.sh_type[k] = L.shake_type[k];
    }
    for (long long k = t0; k < 4LL * d.nbk; k += step)
        d.part[k] = 0.0;
    if (t0 == 0) {
        *d.done = 0;
        d.ke[0] = d.ke[1] = d.ke[2] = 0.0;
        *d.dev = 0;
        *d.bad = INT_MAX;
        *d.bad_shake = INT_MAX;
    }
}

/* ---- host -------------------------------------------------------------------------------- */

extern "C" void hx_gpu_update_destroy(hx_gpu_update **up)
{
    if (!up || !*up)
        return;
    hx_gpu_update *u = *up;
    for (int k = 0; k < UB_N; k++)
        cudaFree(*(void **)((char *)&u->d + ub_offset[k]));
    if (u->h_res)
        cudaFreeHost(u->h_res);
    free(u);
    *up = NULL;
}

/* Slot k holds at least `bytes` afterwards (grown by a quarter more when it grows, so that a
 * domain whose atom count wanders does not reallocate at every repartition). */
static hx_status ub_reserve(hx_gpu_update *u, int k, size_t bytes)
{
    void **ptr = (void **)((char *)&u->d + ub_offset[k]);
    if (*ptr && u->cap[k] >= bytes)
        return HX_OK;
    if (*ptr)
        HX_CUDA(cudaFree(*ptr));
    *ptr = NULL;
    u->cap[k] = 0;
    const size_t want = bytes + bytes / 4;
    HX_CUDA(cudaMalloc(ptr, want));
    u->cap[k] = want;
    return HX_OK;
}

static hx_status update_fill(hx_gpu_update *u, const hx_gpu_update_params *p);

extern "C" hx_status hx_gpu_update_create(const hx_gpu_update_params *p, hx_gpu_update **out)
{
    HX_CHECK(out, HX_ERR_INVALID_ARG, "hx_gpu_update_create: NULL output");
    *out = NULL;
    hx_gpu_update *u = (hx_gpu_update *)calloc(1, sizeof *u);
    HX_CHECK(u, HX_ERR_NOMEM, "out of memory");
    hx_status st = update_fill(u, p);
    if (st != HX_OK) {
        hx_gpu_update_destroy(&u);
        return st;
    }
    *out = u;
    return HX_OK;
}

extern "C" hx_status hx_gpu_update_reset(hx_gpu_update **up, const hx_gpu_update_params *p)
{
    HX_CHECK(up, HX_ERR_INVALID_ARG, "hx_gpu_update_reset: NULL handle");
    if (!*up)
        return hx_gpu_update_create(p, up);
    hx_status st = update_fill(*up, p);
    if (st != HX_OK)
        hx_gpu_update_destroy(up);
    return st;
}

/* What both resets set alike (hx_gpu_update_reset from host tables, hx_gpu_update_reset_device
 * from the device search's lists): the variant switches, the sizes, the water geometry's SETTLE
 * constants, the box, the grids, and the buffers whose size follows from them. nfree: atoms
 * integrated alone; nmol: molecules (atoms when there are no molecule ranges); settle0: the
 * first atom of consecutive SETTLE waters, or -1. The per-block sums (UB_PART) hold four arrays
 * of nbk blocks: the scratch of ke_finish and, with ke_defer, ke_keep's current, previous and
 * uncommitted half steps. */
static hx_status upd_common(hx_gpu_update *u, const hx_gpu_update_params *p, int nfree, int nmol,
                            int settle0)
{
    upd_dev *d = &u->d;
    const int n = p->n;
    const size_t N = (size_t)n + 1;
    {
        const char *e = getenv("HALOX_GPU_UPDATE_EARLY");
        u->early = e && e[0] == '1';
        const char *k = getenv("HALOX_GPU_KE_DEFER");
        d->ke_defer = k && k[0] == '1';
    }
    d->n = n;
    d->nsettle = p->nsettle;
    d->nshake = p->nshake;
    d->nfree = nfree;
    d->nmol = nmol;
    d->dt = p->dt;
    d->shake_tol = p->shake_tol > 0 ? p->shake_tol : HX_SHAKE_TOL;
    d->m_o = p->m_o;
    d->m_h = p->m_h;
    d->d_oh = p->d_oh;
    d->d_hh = p->d_hh;
    d->settle0 = -1;
    if (p->nsettle > 0) {
        d->hc = 0.5 * p->d_hh;
        const double h = sqrt(p->d_oh * p->d_oh - d->hc * d->hc);
        d->ra = 2.0 * p->m_h * h / (p->m_o + 2.0 * p->m_h);
        d->rb = h - d->ra;
        d->im_o = 1.0 / p->m_o;
        d->im_h = 1.0 / p->m_h;
        d->inv_mt = 1.0 / (p->m_o + 2.0 * p->m_h);
        d->inv_ra = 1.0 / d->ra;
        d->inv_2hc = 1.0 / (2.0 * d->hc);
        d->settle0 = settle0;
    }
    for (int k = 0; k < 3; k++) {
        d->periodic[k] = p->periodic[k] != 0;
        d->box[k] = p->box[k];
    }
    const int nwork = p->nsettle + p->nshake + nfree; /* k_update's threads */
    const int nt = nwork > n ? nwork : n;             /* k_ke's and k_to_float's too */
    u->nblocks = (int)hx_div_up(nt > 0 ? nt : 1, UPD_THREADS);
    u->upd_blocks = (int)hx_div_up(nwork > 0 ? nwork : 1, UPD_THREADS);
    d->nbk = u->nblocks;
    HX_TRY(ub_reserve(u, UB_X, 3 * N * sizeof(double)));
    HX_TRY(ub_reserve(u, UB_V, 3 * N * sizeof(double)));
    HX_TRY(ub_reserve(u, UB_INVM, N * sizeof(double)));
    HX_TRY(ub_reserve(u, UB_M, N * sizeof(double)));
    HX_TRY(ub_reserve(u, UB_SETTLE, (3 * (size_t)p->nsettle + 1) * sizeof(int)));
    HX_TRY(ub_reserve(u, UB_FREE_AT, N * sizeof(int)));
    HX_TRY(ub_reserve(u, UB_PART, 4 * (size_t)u->nblocks * sizeof(double)));
    HX_TRY(ub_reserve(u, UB_DONE, sizeof(unsigned)));
    HX_TRY(ub_reserve(u, UB_KE, 3 * sizeof(double)));
    HX_TRY(ub_reserve(u, UB_DEV, sizeof(unsigned)));
    HX_TRY(ub_reserve(u, UB_BAD, sizeof(int)));
    HX_TRY(ub_reserve(u, UB_BAD_SHAKE, sizeof(int)));
    if (!u->h_res)
        HX_CUDA(cudaMallocHost((void **)&u->h_res, sizeof *u->h_res));
    memset(u->h_res, 0, sizeof *u->h_res);
    return HX_OK;
}

/* Everything create does but allocating the handle: checks, host tables, device buffers
 * (reserved in their slots), uploads, counters reset. */
static hx_status update_fill(hx_gpu_update *u, const hx_gpu_update_params *p)
{
    HX_CHECK(p && p->n >= 0 && (p->n == 0 || p->mass), HX_ERR_INVALID_ARG,
             "hx_gpu_update_create: bad argument");
    HX_CHECK(p->dt > 0, HX_ERR_INVALID_ARG, "hx_gpu_update_create: dt = %g", p->dt);
    HX_CHECK(p->nsettle == 0 || (p->settle && p->m_o > 0 && p->m_h > 0 && p->d_oh > 0 &&
                                 p->d_hh > 0 && p->d_hh < 2 * p->d_oh),
             HX_ERR_INVALID_ARG, "hx_gpu_update_create: SETTLE groups without a water geometry");
    HX_CHECK(!p->mol_start || p->nmol >= 0, HX_ERR_INVALID_ARG, "nmol = %d", p->nmol);
    HX_CHECK(p->nshake == 0 || (p->nshake > 0 && p->ff && p->shake_start && p->shake_type),
             HX_ERR_INVALID_ARG, "hx_gpu_update_create: SHAKE molecules without their types");
    hx_status st = HX_OK;
    const int n = p->n;
    const int int_max = INT_MAX;
    upd_dev *d = &u->d;
    u->p = *p;
    u->p.mass = NULL;
    u->p.mol_start = NULL;
    u->p.settle = NULL;
    u->shake_all = NULL; /* the tables below are of the types in use only */
    /* atoms not in a SETTLE group are integrated alone */
    char *in_settle = (char *)calloc((size_t)n + 1, 1);
    const int nmt = p->nshake > 0 ? hx_forcefield_nmoltypes(p->ff) : 0;
    int *tmap = (int *)malloc(sizeof(int) * ((size_t)nmt + 1));
    int4 *tinfo = (int4 *)malloc(sizeof(int4) * ((size_t)nmt + 1));
    hx_constraint *hcons = NULL;
    double *hm = NULL;
    int *shtype = (int *)malloc(sizeof(int) * ((size_t)p->nshake + 1));
    int *free_at = (int *)malloc(sizeof(int) * ((size_t)n + 1));
    double *invm = (double *)malloc(sizeof(double) * ((size_t)n + 1));
    if (!in_settle || !free_at || !invm || !tmap || !tinfo || !shtype)
        HX_FAIL_GOTO(st, HX_ERR_NOMEM, done, "out of memory for %d atoms", n);
    for (int w = 0; w < p->nsettle; w++)
        for (int j = 0; j < 3; j++) {
            const int a = p->settle[3 * w + j];
            if (a < 0 || a >= n || in_settle[a])
                HX_FAIL_GOTO(st, HX_ERR_INVALID_ARG, done,
                             "SETTLE group %d: atom %d is outside [0, %d) or in two groups", w, a,
                             n);
            in_settle[a] = 1;
        }
    {
        /* SHAKE: the molecule types in use, compacted; their atoms are not integrated alone */
        int ntu = 0, ncons = 0, nm = 0;
        for (int k = 0; k < nmt; k++)
            tmap[k] = -1;
        for (int k = 0; k < p->nshake; k++) {
            const int ty = p->shake_type[k];
            const hx_moltype *t = ty >= 0 && ty < nmt ? hx_forcefield_moltype(p->ff, ty) : NULL;
            if (!t || t->nconstraints < 1 || t->natoms > HX_MAX_MOL_ATOMS)
                HX_FAIL_GOTO(st, HX_ERR_INVALID_ARG, done,
                             "SHAKE molecule %d: type %d has no constraints (or too many atoms)", k,
                             ty);
            if (tmap[ty] < 0) {
                tmap[ty] = ntu;
                tinfo[ntu++] = make_int4(t->natoms, t->nconstraints, ncons, nm);
                ncons += t->nconstraints;
                nm += t->natoms;
            }
            shtype[k] = tmap[ty];
            for (int a = p->shake_start[k]; a < p->shake_start[k] + t->natoms; a++) {
                if (a < 0 || a >= n || in_settle[a])
                    HX_FAIL_GOTO(st, HX_ERR_INVALID_ARG, done,
                                 "SHAKE molecule %d: atom %d is outside [0, %d) or constrained "
                                 "twice",
                                 k, a, n);
                in_settle[a] = 1;
            }
        }
        hcons = (hx_constraint *)malloc(sizeof *hcons * ((size_t)ncons + 1));
        hm = (double *)malloc(sizeof *hm * ((size_t)nm + 1));
        if (!hcons || !hm)
            HX_FAIL_GOTO(st, HX_ERR_NOMEM, done, "out of memory for the SHAKE tables");
        for (int ty = 0; ty < nmt; ty++) {
            if (tmap[ty] < 0)
                continue;
            const hx_moltype *t = hx_forcefield_moltype(p->ff, ty);
            const int4 ti = tinfo[tmap[ty]];
            memcpy(hcons + ti.z, t->constraints, sizeof *hcons * (size_t)t->nconstraints);
            memcpy(hm + ti.w, t->m, sizeof *hm * (size_t)t->natoms);
        }
        d->nshake = p->nshake;
        d->shake_tol = p->shake_tol > 0 ? p->shake_tol : HX_SHAKE_TOL;
        const size_t S = (size_t)p->nshake + 1;
        HX_TRY_GOTO(st, ub_reserve(u, UB_SH_START, S * sizeof(int)), done);
        HX_TRY_GOTO(st, ub_reserve(u, UB_SH_TYPE, S * sizeof(int)), done);
        HX_TRY_GOTO(st, ub_reserve(u, UB_SH_TINFO, ((size_t)ntu + 1) * sizeof(int4)), done);
        HX_TRY_GOTO(st, ub_reserve(u, UB_SH_CONS, ((size_t)ncons + 1) * sizeof *hcons), done);
        HX_TRY_GOTO(st, ub_reserve(u, UB_SH_M, ((size_t)nm + 1) * sizeof(double)), done);
        if (p->nshake > 0) {
            HX_CUDA_GOTO(st,
                         cudaMemcpy(d->sh_start, p->shake_start, (size_t)p->nshake * sizeof(int),
                                    cudaMemcpyHostToDevice),
                         done);
            HX_CUDA_GOTO(st,
                         cudaMemcpy(d->sh_type, shtype, (size_t)p->nshake * sizeof(int),
                                    cudaMemcpyHostToDevice),
                         done);
            HX_CUDA_GOTO(
                st,
                cudaMemcpy(d->sh_tinfo, tinfo, (size_t)ntu * sizeof(int4), cudaMemcpyHostToDevice),
                done);
            HX_CUDA_GOTO(st,
                         cudaMemcpy(d->sh_cons, hcons, (size_t)ncons * sizeof *hcons,
                                    cudaMemcpyHostToDevice),
                         done);
            HX_CUDA_GOTO(
                st, cudaMemcpy(d->sh_m, hm, (size_t)nm * sizeof(double), cudaMemcpyHostToDevice),
                done);
        }
    }
    d->nfree = 0;
    for (int a = 0; a < n; a++) {
        if (!(p->mass[a] > 0))
            HX_FAIL_GOTO(st, HX_ERR_INVALID_ARG, done, "atom %d has mass %g", a + 1, p->mass[a]);
        invm[a] = 1.0 / p->mass[a];
        if (!in_settle[a])
            free_at[d->nfree++] = a;
    }
    {
        /* SETTLE's waters consecutive (O, H, H) from the first group's oxygen: the update's
         * staged path (k_update) */
        int settle0 = -1;
        if (p->nsettle > 0) {
            int fast = 1;
            for (int w = 0; w < p->nsettle && fast; w++)
                for (int j = 0; j < 3; j++) {
                    const int a = p->settle[3 * w + j];
                    fast &= a == p->settle[0] + 3 * w + j && p->mass[a] == (j ? p->m_h : p->m_o);
                }
            settle0 = fast ? p->settle[0] : -1;
        }
        HX_TRY_GOTO(st, upd_common(u, p, d->nfree, p->mol_start ? p->nmol : n, settle0), done);
    }
    if (n > 0) {
        HX_CUDA_GOTO(st, cudaMemcpy(d->invm, invm, n * sizeof(double), cudaMemcpyHostToDevice),
                     done);
        HX_CUDA_GOTO(st, cudaMemcpy(d->m, p->mass, n * sizeof(double), cudaMemcpyHostToDevice),
                     done);
    }
    if (d->nfree > 0)
        HX_CUDA_GOTO(
            st, cudaMemcpy(d->free_at, free_at, d->nfree * sizeof(int), cudaMemcpyHostToDevice),
            done);
    if (p->nsettle > 0)
        HX_CUDA_GOTO(st,
                     cudaMemcpy(d->settle, p->settle, 3 * (size_t)p->nsettle * sizeof(int),
                                cudaMemcpyHostToDevice),
                     done);
    if (!p->mol_start && d->mol_start) {
        /* the kernels read a NULL mol_start as one molecule per atom */
        HX_CUDA_GOTO(st, cudaFree(d->mol_start), done);
        d->mol_start = NULL;
        u->cap[UB_MOL_START] = 0;
    }
    if (p->mol_start) {
        for (int k = 0; k < p->nmol; k++)
            if (!(p->mol_start[k] >= 0 && p->mol_start[k] < p->mol_start[k + 1] &&
                  p->mol_start[k + 1] <= n))
                HX_FAIL_GOTO(st, HX_ERR_INVALID_ARG, done, "molecule %d: bad atom range", k);
        HX_TRY_GOTO(st, ub_reserve(u, UB_MOL_START, ((size_t)p->nmol + 1) * sizeof(int)), done);
        HX_CUDA_GOTO(st,
                     cudaMemcpy(d->mol_start, p->mol_start, ((size_t)p->nmol + 1) * sizeof(int),
                                cudaMemcpyHostToDevice),
                     done);
    }
    HX_CUDA_GOTO(st, cudaMemset(d->done, 0, sizeof(unsigned)), done);
    HX_CUDA_GOTO(st, cudaMemset(d->ke, 0, 3 * sizeof(double)), done);
    HX_CUDA_GOTO(st, cudaMemset(d->part, 0, 4 * (size_t)u->nblocks * sizeof(double)), done);
    HX_CUDA_GOTO(st, cudaMemset(d->dev, 0, sizeof(unsigned)), done);
    HX_CUDA_GOTO(st, cudaMemcpy(d->bad, &int_max, sizeof int_max, cudaMemcpyHostToDevice), done);
    HX_CUDA_GOTO(st, cudaMemcpy(d->bad_shake, &int_max, sizeof int_max, cudaMemcpyHostToDevice),
                 done);
    u->h_res->bad = u->h_res->bad_shake = INT_MAX;
done:
    free(tmap);
    free(tinfo);
    free(hcons);
    free(hm);
    free(shtype);
    free(in_settle);
    free(free_at);
    free(invm);
    return st;
}

/* The SHAKE tables of every constrained molecule type of ff (compact index = rank among them in
 * the force field's order), uploaded once. */
static hx_status shake_tables_all(hx_gpu_update *u, const hx_forcefield *ff)
{
    if (u->shake_all == ff)
        return HX_OK;
    const int nmt = ff ? hx_forcefield_nmoltypes(ff) : 0;
    int ntu = 0, ncons = 0, nm = 0;
    int4 *tinfo = (int4 *)malloc(sizeof(int4) * ((size_t)nmt + 1));
    HX_CHECK(tinfo, HX_ERR_NOMEM, "out of memory");
    for (int k = 0; k < nmt; k++) {
        const hx_moltype *t = hx_forcefield_moltype(ff, k);
        if (!t || t->rigid_water || t->nconstraints < 1)
            continue;
        if (t->natoms > HX_MAX_MOL_ATOMS) {
            free(tinfo);
            HX_FAIL(HX_ERR_INVALID_ARG, "molecule type %d: %d atoms for SHAKE", k, t->natoms);
        }
        tinfo[ntu++] = make_int4(t->natoms, t->nconstraints, ncons, nm);
        ncons += t->nconstraints;
        nm += t->natoms;
    }
    hx_constraint *hcons = (hx_constraint *)malloc(sizeof *hcons * ((size_t)ncons + 1));
    double *hm = (double *)malloc(sizeof *hm * ((size_t)nm + 1));
    hx_status st = HX_OK;
    if (!hcons || !hm)
        HX_FAIL_GOTO(st, HX_ERR_NOMEM, out, "out of memory for the SHAKE tables");
    for (int k = 0, j = 0; k < nmt; k++) {
        const hx_moltype *t = hx_forcefield_moltype(ff, k);
        if (!t || t->rigid_water || t->nconstraints < 1)
            continue;
        memcpy(hcons + tinfo[j].z, t->constraints, sizeof *hcons * (size_t)t->nconstraints);
        memcpy(hm + tinfo[j].w, t->m, sizeof *hm * (size_t)t->natoms);
        j++;
    }
    HX_TRY_GOTO(st, ub_reserve(u, UB_SH_TINFO, ((size_t)ntu + 1) * sizeof(int4)), out);
    HX_TRY_GOTO(st, ub_reserve(u, UB_SH_CONS, ((size_t)ncons + 1) * sizeof *hcons), out);
    HX_TRY_GOTO(st, ub_reserve(u, UB_SH_M, ((size_t)nm + 1) * sizeof(double)), out);
    if (ntu > 0) {
        HX_CUDA_GOTO(
            st,
            cudaMemcpy(u->d.sh_tinfo, tinfo, (size_t)ntu * sizeof(int4), cudaMemcpyHostToDevice),
            out);
        HX_CUDA_GOTO(
            st,
            cudaMemcpy(u->d.sh_cons, hcons, (size_t)ncons * sizeof *hcons, cudaMemcpyHostToDevice),
            out);
        HX_CUDA_GOTO(st,
                     cudaMemcpy(u->d.sh_m, hm, (size_t)nm * sizeof(double), cudaMemcpyHostToDevice),
                     out);
    }
    u->shake_all = ff;
out:
    free(tinfo);
    free(hcons);
    free(hm);
    return st;
}

extern "C" hx_status hx_gpu_update_reset_device(hx_gpu_update **up, const hx_gpu_update_params *p,
                                                const hx_gpu_update_dev_lists *L, float *xf,
                                                hx_stream s)
{
    HX_CHECK(up && p && L && p->n >= 0 && p->dt > 0 && (p->n == 0 || (xf && L->x && L->v)),
             HX_ERR_INVALID_ARG, "hx_gpu_update_reset_device: bad argument");
    HX_CHECK(p->nsettle == 0 ||
                 (p->m_o > 0 && p->m_h > 0 && p->d_oh > 0 && p->d_hh > 0 && p->d_hh < 2 * p->d_oh),
             HX_ERR_INVALID_ARG,
             "hx_gpu_update_reset_device: SETTLE groups without a water "
             "geometry");
    if (!*up) {
        *up = (hx_gpu_update *)calloc(1, sizeof **up);
        HX_CHECK(*up, HX_ERR_NOMEM, "out of memory");
    }
    hx_gpu_update *u = *up;
    upd_dev *d = &u->d;
    const int n = p->n;
    u->p = *p;
    u->p.mass = NULL;
    u->p.mol_start = NULL;
    u->p.settle = NULL;
    u->p.shake_start = u->p.shake_type = NULL;
    if (p->nshake > 0)
        HX_TRY(shake_tables_all(u, p->ff));
    HX_TRY(upd_common(u, p, L->nfree, p->nmol, L->settle_first));
    HX_TRY(ub_reserve(u, UB_MOL_START, ((size_t)p->nmol + 1) * sizeof(int)));
    HX_TRY(ub_reserve(u, UB_SH_START, ((size_t)p->nshake + 1) * sizeof(int)));
    HX_TRY(ub_reserve(u, UB_SH_TYPE, ((size_t)p->nshake + 1) * sizeof(int)));
    u->h_res->bad = u->h_res->bad_shake = INT_MAX;
    {
        const long long most = 3LL * (n > p->nsettle ? n : p->nsettle) + p->nmol + 1 + 4LL * d->nbk;
        const unsigned blocks =
            (unsigned)(most < 256LL * UPD_THREADS ? hx_div_up(most, UPD_THREADS)
                                                  : 256); /* grid-stride past that */
        HX_LAUNCH(k_reset_from, blocks > 0 ? blocks : 1, UPD_THREADS, 0, s, u->d, *L, xf);
        HX_CUDA_LAUNCH("k_reset_from");
    }
    if (n > 0) {
        HX_LAUNCH(k_ke, hx_div_up(n, UPD_THREADS), UPD_THREADS, 0, s, u->d);
        HX_CUDA_LAUNCH("k_ke");
    }
    return HX_OK;
}

extern "C" hx_status hx_gpu_update_upload(hx_gpu_update *u, const double *x, const double *v,
                                          float *xf, hx_stream stream)
{
    HX_CHECK(u && (u->d.n == 0 || (x && v && xf)), HX_ERR_INVALID_ARG,
             "hx_gpu_update_upload: NULL argument");
    cudaStream_t s = stream;
    const int n = u->d.n;
    if (n == 0)
        return HX_OK;
    HX_CUDA(cudaMemcpyAsync(u->d.x, x, 3 * (size_t)n * sizeof(double), cudaMemcpyHostToDevice, s));
    HX_CUDA(cudaMemcpyAsync(u->d.v, v, 3 * (size_t)n * sizeof(double), cudaMemcpyHostToDevice, s));
    HX_LAUNCH(k_to_float, hx_div_up(3LL * n, UPD_THREADS), UPD_THREADS, 0, s, u->d, xf);
    HX_CUDA_LAUNCH("k_to_float");
    HX_LAUNCH(k_ke, hx_div_up(n, UPD_THREADS), UPD_THREADS, 0, s, u->d);
    HX_CUDA_LAUNCH("k_ke");
    HX_CUDA(cudaStreamSynchronize(s));
    return HX_OK;
}

extern "C" hx_status hx_gpu_update_download(hx_gpu_update *u, double *x, double *v,
                                            hx_stream stream)
{
    HX_CHECK(u, HX_ERR_INVALID_ARG, "hx_gpu_update_download: NULL argument");
    cudaStream_t s = stream;
    const size_t b = 3 * (size_t)u->d.n * sizeof(double);
    if (x && b)
        HX_CUDA(cudaMemcpyAsync(x, u->d.x, b, cudaMemcpyDeviceToHost, s));
    if (v && b)
        HX_CUDA(cudaMemcpyAsync(v, u->d.v, b, cudaMemcpyDeviceToHost, s));
    HX_CUDA(cudaStreamSynchronize(s));
    return HX_OK;
}

template <bool PDL>
static void upd_launch(const hx_gpu_update *u, unsigned grid, cudaStream_t s, const upd_link &l,
                       float *xf, float *f, double lambda, int want_dev, int commit)
{
    if (u->early && u->d.ke_defer)
        HX_LAUNCH((k_update<true, true, PDL>), grid, UPD_THREADS, 0, s, u->d, l, xf, f, lambda,
                  want_dev, commit);
    else if (u->early)
        HX_LAUNCH((k_update<true, false, PDL>), grid, UPD_THREADS, 0, s, u->d, l, xf, f, lambda,
                  want_dev, commit);
    else if (u->d.ke_defer)
        HX_LAUNCH((k_update<false, true, PDL>), grid, UPD_THREADS, 0, s, u->d, l, xf, f, lambda,
                  want_dev, commit);
    else
        HX_LAUNCH((k_update<false, false, PDL>), grid, UPD_THREADS, 0, s, u->d, l, xf, f, lambda,
                  want_dev, commit);
}

/* HALOX_GPU_PDL=1: the edge of the next node captured in s (k_update) from the pair kernel's node
 * `from` made programmatic; *pdl = 1 when it was, 0 when s is not capturing or `from` is not
 * among its dependencies (then k_update is the plain one, behind full edges).
 *
 * Why the edge is built here and not with a launch attribute: the update runs on its own
 * stream and joins the local and the halo streams through events, and the documented effect
 * of cudaLaunchAttributeProgrammaticStreamSerialization is an overlap with the previous
 * kernel in the same stream, which the update does not have. Moving the update onto the
 * local stream would serialise what now overlaps the pair kernel (the home terms and rolling
 * prune on the prune's stream, the bonded terms and halo work on the halo stream) or need a
 * programmatic event per joined stream. Edge data in the capture (cudaGraphEdgeData, CUDA
 * 12.3) says exactly what is meant: of k_update's dependencies, only the one on the local
 * pair kernel becomes programmatic (port cudaGraphKernelNodePortProgrammatic: it fires when
 * every block of that kernel has called griddepcontrol.launch_dependents, k_nb_2h's first
 * instruction, or ended); every other dependency stays a full one, and a dependency that
 * also reaches the pair kernel through another node (an energy fetch, a step-timing mark)
 * keeps the update behind its completion, as before. Outside a capture (the first step,
 * search and energy steps) nothing changes.
 *
 * Why an early trigger is safe: griddepcontrol.wait (cudaGridDependencySynchronize) waits
 * until the prerequisite grids have completed and their memory operations are performed and
 * visible to the waiting grid (CUDA programming guide, programmatic dependent launch), not
 * only until they triggered: the trigger only decides when k_update's blocks may be scheduled,
 * and every read of data the pair kernel writes, and every write of data it reads, comes after
 * hx_pdl_wait in k_update. */
static hx_status upd_pdl_edge(cudaStream_t s, cudaGraphNode_t from, int *pdl)
{
    *pdl = 0;
#if HX_PDL_CAPTURE
    enum { MAXDEP = 64 };
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    const cudaGraphNode_t *deps = NULL;
    const cudaGraphEdgeData *ed = NULL;
    size_t n = 0;
    HX_CUDA(HX_CAPTURE_INFO(s, &cs, &deps, &ed, &n));
    if (cs != cudaStreamCaptureStatusActive || n == 0 || n > MAXDEP)
        return HX_OK;
    /* copies: the driver's arrays are valid only until the next call on the stream */
    cudaGraphNode_t nd[MAXDEP];
    cudaGraphEdgeData e[MAXDEP];
    int found = 0;
    for (size_t k = 0; k < n; k++) {
        nd[k] = deps[k];
        if (ed)
            e[k] = ed[k];
        else
            memset(&e[k], 0, sizeof e[k]);
        if (nd[k] == from && e[k].type == cudaGraphDependencyTypeDefault && e[k].from_port == 0) {
            e[k].type = cudaGraphDependencyTypeProgrammatic;
            e[k].from_port = cudaGraphKernelNodePortProgrammatic;
            found = 1;
        }
    }
    if (!found)
        return HX_OK;
    HX_CUDA(HX_CAPTURE_SET(s, nd, e, n));
    *pdl = 1;
#else
    (void)s;
    (void)from;
#endif
    return HX_OK;
}

extern "C" hx_status hx_gpu_update_step(hx_gpu_update *u, float *xf, float *f, double lambda,
                                        int flags, const hx_gpu_update_link *link, hx_stream stream)
{
    HX_CHECK(u && (u->d.n == 0 || (xf && f)), HX_ERR_INVALID_ARG,
             "hx_gpu_update_step: NULL argument");
    cudaStream_t s = stream;
    const int want_dev = (flags & HX_GPU_UPDATE_DEVIATION) ? 1 : 0;
    if (want_dev)
        HX_CUDA(cudaMemsetAsync(u->d.dev, 0, sizeof(unsigned), s));
    const int commit = (flags & HX_GPU_UPDATE_NO_COMMIT) ? 0 : 1;
    upd_link l = {NULL, NULL, NULL, NULL};
    if (link && link->slot) {
        l.slot = link->slot;
        l.fcl = link->fcl;
        l.xq = (float4 *)link->xq;
        l.swq = (const float4 *)link->swq;
    }
    /* a thread per water, SHAKE molecule and other atom: the grid covers that, not the atoms */
    const int nt = u->d.nsettle + u->d.nshake + u->d.nfree;
    const unsigned grid = (unsigned)hx_div_up(nt > 0 ? nt : 1, UPD_THREADS);
    u->upd_blocks = (int)grid;
    int pdl = 0;
    if (link && link->pdl_from)
        HX_TRY(upd_pdl_edge(s, (cudaGraphNode_t)link->pdl_from, &pdl));
    if (pdl)
        upd_launch<true>(u, grid, s, l, xf, f, lambda, want_dev, commit);
    else
        upd_launch<false>(u, grid, s, l, xf, f, lambda, want_dev, commit);
    HX_CUDA_LAUNCH("k_update");
    if (link && link->join)
        HX_CUDA(cudaStreamWaitEvent(s, (cudaEvent_t)link->join, 0));
    return HX_OK;
}

extern "C" hx_status hx_gpu_update_wrap(hx_gpu_update *u, float *xf, hx_stream stream)
{
    HX_CHECK(u && (u->d.n == 0 || xf), HX_ERR_INVALID_ARG, "hx_gpu_update_wrap: NULL argument");
    const int nm = u->d.mol_start ? u->d.nmol : u->d.n;
    if (nm == 0)
        return HX_OK;
    HX_LAUNCH(k_wrap, hx_div_up(nm, UPD_THREADS), UPD_THREADS, 0, stream, u->d, xf);
    HX_CUDA_LAUNCH("k_wrap");
    return HX_OK;
}

extern "C" hx_status hx_gpu_update_fetch(hx_gpu_update *u, hx_stream stream)
{
    HX_CHECK(u, HX_ERR_INVALID_ARG, "hx_gpu_update_fetch: NULL argument");
    cudaStream_t s = stream;
    if (u->d.ke_defer) {
        HX_LAUNCH(k_ke_sum, 1, UPD_THREADS, 0, s, u->d, u->upd_blocks);
        HX_CUDA_LAUNCH("k_ke_sum");
    }
    HX_CUDA(cudaMemcpyAsync(u->h_res->ke, u->d.ke, 3 * sizeof(double), cudaMemcpyDeviceToHost, s));
    HX_CUDA(cudaMemcpyAsync(&u->h_res->dev, u->d.dev, sizeof(unsigned), cudaMemcpyDeviceToHost, s));
    HX_CUDA(cudaMemcpyAsync(&u->h_res->bad, u->d.bad, sizeof(int), cudaMemcpyDeviceToHost, s));
    HX_CUDA(cudaMemcpyAsync(&u->h_res->bad_shake, u->d.bad_shake, sizeof(int),
                            cudaMemcpyDeviceToHost, s));
    return HX_OK;
}

extern "C" void hx_gpu_update_read(const hx_gpu_update *u, hx_gpu_update_result *r)
{
    r->ke_prev_half = u->h_res->ke[0];
    r->ke_half = u->h_res->ke[1];
    r->ke_eval = u->h_res->ke[2];
    float dv;
    memcpy(&dv, &u->h_res->dev, sizeof dv);
    r->deviation = dv;
    r->bad_molecule = u->h_res->bad == INT_MAX ? -1 : u->h_res->bad;
    r->bad_shake = u->h_res->bad_shake == INT_MAX ? -1 : u->h_res->bad_shake / 2;
    r->shake_noconv = u->h_res->bad_shake != INT_MAX && (u->h_res->bad_shake & 1);
}

extern "C" const double *hx_gpu_update_positions(const hx_gpu_update *u)
{
    return u ? u->d.x : NULL;
}

extern "C" const double *hx_gpu_update_velocities(const hx_gpu_update *u)
{
    return u ? u->d.v : NULL;
}
