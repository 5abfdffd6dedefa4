/* GPU non-bonded interactions: set-up, the per-step kernels (gather, pair forces, prune, force
 * reduction) and their host ops (src/md/gpu/nb_gpu.h). The pair search is in search_gpu.cu.
 *
 * The pair kernel (nb_body): one block of 64 threads per list entry. Thread t = 8 tj + ti
 * computes, for every j cluster of the entry and every i cluster of the super-cluster that
 * interacts with it (mask bit ic), the pair (i atom ti of cluster ic, j atom tj). The 64 i atoms
 * (shifted by the entry's image shift, charges times epsfac) and the LJ table sit in shared
 * memory; each thread keeps the forces on its 8 i atoms (one per i cluster) in registers; the
 * force on its j atom is summed over the 8 ti lanes by 4 shuffles (a transposing reduction that
 * leaves x, y, z on lanes 0, 1, 2, which add it atomically); the i forces are summed over tj
 * through shared memory at the end of the entry. Masked lanes (beyond the cut-off, excluded,
 * padding) select 0 for 1/r and the force (never multiply: 1/r is infinite at r = 0), so
 * nothing of them reaches a sum. Energies are summed per lane in float over the i clusters of one
 * j cluster (at most 8 terms) and then in double. */
#include "md/gpu/nb_gpu_impl.cuh"
#include "halox/log.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- kernels ----------------------------------------------------------------------------- */

/* Home slots [0, nslots): positions into the cluster layout (skipped on steps whose update
 * wrote them, hx_gpu_nb_update_link). */
__global__ __launch_bounds__(128) void k_gather_home(gnb_dev d, const float *__restrict__ x,
                                                     int nslots)
{
    const int s = blockIdx.x * blockDim.x + threadIdx.x;
    const int a = s < nslots ? d.perm[s] : -1;
    if (a < 0)
        return;
    const float4 w = d.swq[s];
    d.xq[s] = make_float4(x[3 * a] + w.x, x[3 * a + 1] + w.y, x[3 * a + 2] + w.z, w.w);
}

/* The home atoms' self and excluded-pair reaction-field terms in double, as
 * src/md/nonbonded.c's home_terms, one thread per home slot. They need this step's positions
 * and add to f, which only the update reads: they run beside the pair kernel (on the prune's
 * stream), not before it, where they were 4-5 us of the step's critical path at 45k atoms
 * (three dependent loads: the slot's atom, its partners, their positions). */
__global__ __launch_bounds__(128) void k_home_terms(gnb_dev d, const float *__restrict__ x,
                                                    float *__restrict__ f, int nslots, int energy)
{
    __shared__ double s_red[32];
    const int s = blockIdx.x * blockDim.x + threadIdx.x;
    const int a = s < nslots ? d.perm[s] : -1;
    double ve = 0.0;
    if (a >= 0) {
        const float xa[3] = {x[3 * a], x[3 * a + 1], x[3 * a + 2]};
        const double qa = d.aqd[a];
        if (energy)
            ve = -0.5 * d.epsfac_d * d.crf_d * qa * qa;
        unsigned m = d.amask[a];
        const int f0 = d.afirst[a];
        double fa[3] = {0.0, 0.0, 0.0};
        bool any = false;
        while (m) {
            const int b = f0 + __ffs((int)m) - 1;
            m &= m - 1u;
            if (b <= a || b >= d.n)
                continue;
            double dx[3], r2 = 0.0;
#pragma unroll
            for (int k = 0; k < 3; k++) {
                dx[k] = (double)xa[k] - (double)x[3 * b + k];
                if (d.periodic[k])
                    dx[k] -= d.boxd[k] * rint(dx[k] / d.boxd[k]);
                r2 += dx[k] * dx[k];
            }
            if (r2 >= d.rc2_d)
                continue;
            const double qq = d.epsfac_d * qa * d.aqd[b];
            if (energy)
                ve += qq * (d.krf_d * r2 - d.crf_d);
            const double fs = -2.0 * qq * d.krf_d; /* F_a = -dV/dr r_hat = -2 qq krf d */
#pragma unroll
            for (int k = 0; k < 3; k++) {
                fa[k] += fs * dx[k];
                atomicAdd(&f[3 * b + k], (float)(-fs * dx[k]));
            }
            any = true;
        }
        if (any)
            for (int k = 0; k < 3; k++)
                atomicAdd(&f[3 * a + k], (float)fa[k]);
    }
    if (energy) {
        const double sum = hx_block_sum_d(ve, s_red);
        if (threadIdx.x == 0 && sum != 0.0)
            atomicAdd(&d.energy[1], sum);
    }
}

/* Halo slots [s0, s1): positions into the cluster layout; the halo atoms' forces cleared (the
 * non-local kernel and reduction add into them next). */
__global__ __launch_bounds__(128) void k_gather_halo(gnb_dev d, const float *__restrict__ x,
                                                     float *__restrict__ f, int s0, int s1)
{
    const int s = s0 + blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= s1)
        return;
    const int a = d.perm[s];
    if (a < 0)
        return;
    const float4 w = d.swq[s];
    d.xq[s] = make_float4(x[3 * a] + w.x, x[3 * a + 1] + w.y, x[3 * a + 2] + w.z, w.w);
    f[3 * a] = 0.0f;
    f[3 * a + 1] = 0.0f;
    f[3 * a + 2] = 0.0f;
}

/* Slots [s0, s1): cluster forces added to the atoms' forces, the accumulators zeroed. */
__global__ __launch_bounds__(128) void k_reduce(gnb_dev d, float *__restrict__ f, int s0, int s1)
{
    const int s = s0 + blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= s1)
        return;
    const int a = d.perm[s];
    float *fc = d.fcl + 3 * (size_t)s;
    const float fx = fc[0], fy = fc[1], fz = fc[2];
    fc[0] = 0.0f;
    fc[1] = 0.0f;
    fc[2] = 0.0f;
    if (a >= 0) {
        atomicAdd(&f[3 * a], fx);
        atomicAdd(&f[3 * a + 1], fy);
        atomicAdd(&f[3 * a + 2], fz);
    }
}

/* i forces at the end of an entry: each thread's 8 (one per i cluster) summed over the 8 tj
 * through shared memory s_f (3 x 8 x 64 floats); thread t then adds i slot t's. */
static __device__ __forceinline__ void nb_reduce_fi(const gnb_dev &d, const int sci,
                                                    const float (&fix)[GNB_SCC],
                                                    const float (&fiy)[GNB_SCC],
                                                    const float (&fiz)[GNB_SCC], float *s_f)
{
    const int t = threadIdx.x, ti = t & 7;
#pragma unroll
    for (int ic = 0; ic < GNB_SCC; ic++) {
        s_f[(3 * ic + 0) * GNB_SCA + t] = fix[ic];
        s_f[(3 * ic + 1) * GNB_SCA + t] = fiy[ic];
        s_f[(3 * ic + 2) * GNB_SCA + t] = fiz[ic];
    }
    __syncthreads();
    const int ic = t >> 3;
    float *fo = d.fcl + 3 * ((size_t)sci * GNB_SCA + t);
#pragma unroll
    for (int c = 0; c < 3; c++) {
        float sum = 0.0f;
#pragma unroll
        for (int u = 0; u < GNB_CL; u++)
            sum += s_f[(3 * ic + c) * GNB_SCA + u * GNB_CL + ti];
        if (sum != 0.0f)
            atomicAdd(&fo[c], sum);
    }
}

/* The j force of one item summed over the 8 ti lanes, added by lanes ti = 0, 1, 2 (x, y, z):
 * after the xor-1 step even lanes hold pair sums of x and odd lanes of y (z on both); after
 * xor-2 lane 0 holds x, 1 y, 2 (and 3) z of 4 lanes; xor-4 completes the 8. */
static __device__ __forceinline__ void nb_reduce_fj(const gnb_dev &d, const int js, const int ti,
                                                    const float fjx, const float fjy,
                                                    const float fjz)
{
    const int b0 = ti & 1, b1 = (ti >> 1) & 1;
    float keep = b0 ? fjy : fjx;
    keep += __shfl_xor_sync(HX_FULL_MASK, b0 ? fjx : fjy, 1);
    const float zs = fjz + __shfl_xor_sync(HX_FULL_MASK, fjz, 1);
    const float send = b1 ? keep : zs;
    keep = b1 ? zs : keep;
    keep += __shfl_xor_sync(HX_FULL_MASK, send, 2);
    keep += __shfl_xor_sync(HX_FULL_MASK, keep, 4);
    if (ti < 3)
        atomicAdd(&d.fcl[3 * (size_t)js + ti], keep);
}

/* 1/sqrt(r2) in double for the pair energies, from a float estimate y (any of the float
 * 1/sqrt's: the fast one's ~2 ulp or the correctly rounded one's half) by one Newton step:
 * relative error ~1e-13, below the float distance's own rounding, and the same value, to that,
 * whichever y it started from (so the energy kernels agree). */
static __device__ __forceinline__ double hx_rsqrt_d1(const float r2, const float y)
{
    const double yd = (double)y;
    return yd * fma(-0.5 * (double)r2, yd * yd, 1.5);
}

/* An entry's i atoms into shared memory (shifted positions, charges times epsfac, type rows)
 * and the LJ tables (float; double with energies), for the reference layout and the energy
 * kernel alike: thread t stages i atom t. */
static __device__ __forceinline__ void nb_stage_i(const gnb_dev &d, const int4 en,
                                                  const unsigned char *__restrict__ ljg,
                                                  float4 *s_xi, int *s_ti, double *s_qd,
                                                  float2 *s_lj, double2 *s_ljd, const bool energy)
{
    const int t = threadIdx.x, sci = en.x, nt2 = d.ntypes * d.ntypes;
    const float4 sh = d.shift[en.y];
    const float4 xi = d.xq[sci * GNB_SCA + t];
    s_xi[t] = make_float4(xi.x - sh.x, xi.y - sh.y, xi.z - sh.z, xi.w * d.epsfac);
    s_ti[t] = d.stype[sci * GNB_SCA + t] * d.ntypes;
    if (energy)
        s_qd[t] = d.sqd[sci * GNB_SCA + t] * d.epsfac_d;
    for (int k = t; k < nt2; k += GNB_SCA) {
        s_lj[k] = ((const float2 *)ljg)[k];
        if (energy)
            s_ljd[k] = ((const double2 *)(ljg + 16 * ((8 * nt2 + 15) / 16)))[k];
    }
}

/* The block's energy sums (fixed order) added to the step's totals by its first thread. */
static __device__ __forceinline__ void
nb_energy_out(const gnb_dev &d, const double elj, const double ec, const int npair, double *s_red)
{
    const double a = hx_block_sum_d(elj, s_red);
    const double b = hx_block_sum_d(ec, s_red);
    const double np = hx_block_sum_d((double)npair, s_red);
    if (threadIdx.x == 0) {
        atomicAdd(&d.energy[0], a);
        atomicAdd(&d.energy[1], b);
        atomicAdd(d.npairs, (unsigned long long)np);
    }
}

static __device__ __forceinline__ void nb_body(const gnb_dev &d, const int4 *__restrict__ ent,
                                               const uint2 *__restrict__ items,
                                               const unsigned short *__restrict__ masks,
                                               const unsigned char *__restrict__ ljg,
                                               const bool energy)
{
    /* static (not dynamic) shared tables: their addresses are immediate offsets in the loop */
    __shared__ float2 s_lj[GNB_MAXTYPES * GNB_MAXTYPES];   /* 6 c6, 12 c12 */
    __shared__ double2 s_ljd[GNB_MAXTYPES * GNB_MAXTYPES]; /* c6, c12 (energy kernel only) */
    __shared__ float4 s_xi[GNB_SCA];
    __shared__ int s_ti[GNB_SCA];
    __shared__ float s_f[3 * GNB_SCC * GNB_SCA];
    __shared__ double s_qd[GNB_SCA];
    __shared__ double s_red[32];
    const int t = threadIdx.x, ti = t & 7, tj = t >> 3, half = t >> 5;
    const int4 en = ent[blockIdx.x];
    const int sci = en.x;
    nb_stage_i(d, en, ljg, s_xi, s_ti, s_qd, s_lj, s_ljd, energy);
    __syncthreads();
    float fix[GNB_SCC], fiy[GNB_SCC], fiz[GNB_SCC];
#pragma unroll
    for (int ic = 0; ic < GNB_SCC; ic++)
        fix[ic] = fiy[ic] = fiz[ic] = 0.0f;
    double elj = 0.0, ec = 0.0;
    int npair = 0;
    const float rc2 = d.rc2, two_krf = d.two_krf;
    for (int k = en.z; k < en.w; k++) {
        /* this warp's half of the j cluster: skipped by the warp when pruned away */
        const unsigned im = (masks[k] >> (8 * half)) & 0xffu;
        if (im == 0u)
            continue;
        const uint2 it = items[k];
        const unsigned ex = it.y;
        const unsigned wm = ex ? (unsigned)__ldg(&d.excl[(size_t)ex * GNB_SCA + t]) : 0xffu;
        const int js = (int)it.x * GNB_CL + tj;
        const float4 xj = __ldg(&d.xq[js]);
        const int tyj = __ldg(&d.stype[js]);
        const double qjd = energy ? __ldg(&d.sqd[js]) : 0.0;
        float fjx = 0.0f, fjy = 0.0f, fjz = 0.0f;
#pragma unroll
        for (int ic = 0; ic < GNB_SCC; ic++) {
            if (im & (1u << ic)) {
                const float4 xi = s_xi[ic * GNB_CL + ti];
                const float dx = xi.x - xj.x, dy = xi.y - xj.y, dz = xi.z - xj.z;
                const float r2 = fmaf(dx, dx, fmaf(dy, dy, dz * dz));
                const bool in = r2 < rc2 && (wm & (1u << ic)) != 0u;
                /* energies need an unbiased 1/sqrt: the Coulomb sum of water is a small
                 * remainder of large terms (see include/halox/md.h, HX_NB_MIXED); they take
                 * hx_rsqrt_d1's from this one */
                const float rinv = in ? (energy ? __frsqrt_rn(r2) : hx_rsqrt_fast(r2)) : 0.0f;
                const float rinv2 = rinv * rinv;
                const float rinv6 = rinv2 * rinv2 * rinv2;
                const int tp = s_ti[ic * GNB_CL + ti] + tyj;
                const float2 c = s_lj[tp];
                const float qq = xi.w * xj.w;
                const float flj = (c.y * rinv6 - c.x) * rinv6; /* 12c12/r^12 - 6c6/r^6 */
                float fs = fmaf(rinv2, fmaf(qq, rinv, flj), -qq * two_krf);
                fs = in ? fs : 0.0f;
                fix[ic] = fmaf(fs, dx, fix[ic]);
                fiy[ic] = fmaf(fs, dy, fiy[ic]);
                fiz[ic] = fmaf(fs, dz, fiz[ic]);
                fjx = fmaf(-fs, dx, fjx);
                fjy = fmaf(-fs, dy, fjy);
                fjz = fmaf(-fs, dz, fjz);
                if (energy && in) {
                    /* in double from the float distance: the charges' and LJ parameters'
                     * float rounding would be the same for every pair of two types, and
                     * such systematic errors do not average out in the sums */
                    const double2 cd = s_ljd[tp];
                    const double rd = hx_rsqrt_d1(r2, rinv), rd2 = rd * rd, rd6 = rd2 * rd2 * rd2;
                    elj += cd.y * (rd6 * rd6 - d.irc12_d) - cd.x * (rd6 - d.irc6_d);
                    ec += s_qd[ic * GNB_CL + ti] * qjd * (rd + d.krf_d * (double)r2 - d.crf_d);
                    npair++;
                }
            }
        }
        nb_reduce_fj(d, js, ti, fjx, fjy, fjz);
    }
    nb_reduce_fi(d, sci, fix, fiy, fiz, s_f);
    if (energy)
        nb_energy_out(d, elj, ec, npair, s_red);
}

/* Forces only: the kernel of every non-energy step. 64 registers at most (16 blocks of 64
 * threads per multiprocessor). */
__global__ __launch_bounds__(64, 16) void k_nb_f(gnb_dev d, const int4 *__restrict__ ent,
                                                 const uint2 *__restrict__ items,
                                                 const unsigned short *__restrict__ masks,
                                                 const unsigned char *__restrict__ lj)
{
    nb_body(d, ent, items, masks, lj, false);
}

__global__ __launch_bounds__(64, 8) void k_nb_fe(gnb_dev d, const int4 *__restrict__ ent,
                                                 const uint2 *__restrict__ items,
                                                 const unsigned short *__restrict__ masks,
                                                 const unsigned char *__restrict__ lj)
{
    nb_body(d, ent, items, masks, lj, true);
}

/* ---- the fast forces-only pair kernel ---------------------------------------------------- */

/* Pairs of one item (the warp's half j cluster: j atom xj of this lane) with the i clusters of
 * mask im. COMB: c6, c12 (times 6, 12) are products of per-type factors (cj: the j atom's; ci_t:
 * the i atoms' in shared memory) instead of a table look-up whose address needs the i type
 * (one shared load and two integer instructions per pair less, and one dependent shared-memory
 * latency less). EXCL: only for items with an exclusion mask (17 % for water): the others skip
 * the mask test (2 instructions per pair). 1/r is computed for every pair and the force selected
 * (never multiplied) away for masked ones: r = 0 (an excluded self pair) gives infinities or NaN
 * that the select drops. */
template <bool COMB, bool EXCL>
static __device__ __forceinline__ void
nb_pairs_f(const unsigned im, const unsigned wm, const float4 xj, const float2 cj, const int tyj,
           const float4 *__restrict__ xi_t, const float2 *__restrict__ ci_t,
           const int *__restrict__ ti_t, const float2 *__restrict__ lj, const float rc2,
           const float two_krf, float (&fix)[GNB_SCC], float (&fiy)[GNB_SCC], float (&fiz)[GNB_SCC],
           float &fjx, float &fjy, float &fjz)
{
#pragma unroll
    for (int ic = 0; ic < GNB_SCC; ic++) {
        if (im & (1u << ic)) {
            const float4 xi = xi_t[ic * GNB_CL];
            const float dx = xi.x - xj.x, dy = xi.y - xj.y, dz = xi.z - xj.z;
            const float r2 = fmaf(dx, dx, fmaf(dy, dy, dz * dz));
            bool in = r2 < rc2;
            if (EXCL)
                in = in && ((wm >> ic) & 1u) != 0u;
            const float rinv = hx_rsqrt_fast(r2);
            const float rinv2 = rinv * rinv;
            const float rinv6 = rinv2 * rinv2 * rinv2;
            float c6, c12;
            if (COMB) {
                const float2 ci = ci_t[ic * GNB_CL];
                c6 = ci.x * cj.x;
                c12 = ci.y * cj.y;
            } else {
                const float2 c = lj[ti_t[ic * GNB_CL] + tyj];
                c6 = c.x;
                c12 = c.y;
            }
            /* the same ten lines as k_nb_f's on purpose: through one shared inline function
             * nvcc selected the range predicate differently, and this kernel ran 1.0-1.2 us
             * slower at 45k atoms (bench/results/h200-2026-12-03h/ab_pair_force_helper.txt) */
            const float qq = xi.w * xj.w;
            const float flj = (c12 * rinv6 - c6) * rinv6; /* 12c12/r^12 - 6c6/r^6 */
            float fs = fmaf(rinv2, fmaf(qq, rinv, flj), -qq * two_krf);
            fs = in ? fs : 0.0f;
            fix[ic] = fmaf(fs, dx, fix[ic]);
            fiy[ic] = fmaf(fs, dy, fiy[ic]);
            fiz[ic] = fmaf(fs, dz, fiz[ic]);
            fjx = fmaf(-fs, dx, fjx);
            fjy = fmaf(-fs, dy, fjy);
            fjz = fmaf(-fs, dz, fjz);
        }
    }
}

/* Forces only, same layout and results as k_nb_f (up to the summation order of nothing: the
 * same sums in the same order), fewer instructions per item and per pair (gpu-engine.md):
 *  - the warp's 8-bit mask goes through a shuffle from lane 0, which the compiler knows makes it
 *    warp-uniform: the branches on its bits lose their reconvergence (BSSY/BSYNC) pair;
 *  - items without an exclusion mask take a loop body without the mask test;
 *  - COMB: geometric-rule LJ (see nb_pairs_f), else the table as k_nb_f.
 * Loading the next item's mask and (j cluster, exclusion) one item ahead (a variant measured
 * on the H200) gained nothing and cost 2 blocks per multiprocessor: gone.
 * Occupancy (sm_90: 65536 registers, 228 KB shared memory, 32 blocks per multiprocessor):
 * static shared memory is 9.5 KB (+1 KB reserved) per block, 21 blocks; registers decide. At
 * 59-60 registers (what COMB needs when left to 64) the allocation rounds to 64 per thread, 16
 * blocks (32 warps); capped at 56 (18 blocks, 36 warps, as k_nb_f) COMB has no spill. */
template <bool COMB>
__global__ __launch_bounds__(64, 18) void k_nb_fast(gnb_dev d, const int4 *__restrict__ ent,
                                                    const uint2 *__restrict__ items,
                                                    const unsigned short *__restrict__ masks,
                                                    const unsigned char *__restrict__ ljg,
                                                    unsigned comb_off)
{
    __shared__ float2 s_lj[GNB_MAXTYPES * GNB_MAXTYPES]; /* table; COMB: per-type factors */
    __shared__ float4 s_xi[GNB_SCA];
    __shared__ float2 s_ci[GNB_SCA]; /* COMB: the i atoms' factors */
    __shared__ int s_ti[GNB_SCA];    /* table: the i atoms' type times ntypes */
    __shared__ float s_f[3 * GNB_SCC * GNB_SCA];
    const int t = threadIdx.x, ti = t & 7, tj = t >> 3, half = t >> 5;
    const int nt = d.ntypes;
    const float2 *combg = (const float2 *)(ljg + comb_off);
    const int4 en = ent[blockIdx.x];
    const int sci = en.x;
    if (COMB) {
        if (t < nt)
            s_lj[t] = combg[t];
    } else {
        for (int k = t; k < nt * nt; k += GNB_SCA)
            s_lj[k] = ((const float2 *)ljg)[k];
    }
    {
        const float4 sh = d.shift[en.y];
        const float4 xi = d.xq[sci * GNB_SCA + t];
        s_xi[t] = make_float4(xi.x - sh.x, xi.y - sh.y, xi.z - sh.z, xi.w * d.epsfac);
        const int ty = d.stype[sci * GNB_SCA + t];
        if (COMB)
            s_ci[t] = combg[ty];
        else
            s_ti[t] = ty * nt;
    }
    __syncthreads();
    float fix[GNB_SCC], fiy[GNB_SCC], fiz[GNB_SCC];
#pragma unroll
    for (int ic = 0; ic < GNB_SCC; ic++)
        fix[ic] = fiy[ic] = fiz[ic] = 0.0f;
    const float rc2 = d.rc2, two_krf = d.two_krf;
    const float4 *xi_t = s_xi + ti;
    const float2 *ci_t = s_ci + ti;
    const int *ti_t = s_ti + ti;
    const unsigned hshift = 8u * (unsigned)half;
    for (int k = en.z; k < en.w; k++) {
        const unsigned mk = __ldg(&masks[k]);
        const uint2 it = __ldg(&items[k]);
        const unsigned im = __shfl_sync(HX_FULL_MASK, (mk >> hshift) & 0xffu, 0);
        if (im == 0u)
            continue;
        const int js = (int)it.x * GNB_CL + tj;
        const float4 xj = __ldg(&d.xq[js]);
        const int tyj = __ldg(&d.stype[js]);
        const float2 cj = COMB ? s_lj[tyj] : make_float2(0.0f, 0.0f);
        float fjx = 0.0f, fjy = 0.0f, fjz = 0.0f;
        if (it.y == 0u) {
            nb_pairs_f<COMB, false>(im, 0xffu, xj, cj, tyj, xi_t, ci_t, ti_t, s_lj, rc2, two_krf,
                                    fix, fiy, fiz, fjx, fjy, fjz);
        } else {
            const unsigned wm = (unsigned)__ldg(&d.excl[(size_t)it.y * GNB_SCA + t]);
            nb_pairs_f<COMB, true>(im, wm, xj, cj, tyj, xi_t, ci_t, ti_t, s_lj, rc2, two_krf, fix,
                                   fiy, fiz, fjx, fjy, fjz);
        }
        nb_reduce_fj(d, js, ti, fjx, fjy, fjz);
    }
    nb_reduce_fi(d, sci, fix, fiy, fiz, s_f);
}

/* ---- the two-half forces-only pair kernel (issue 28) ------------------------------------- */

/* One pair of nb_pairs_f's loop body (the same arithmetic, in the same order, geometric-rule
 * LJ): i atom xi (shifted, charge times epsfac) with factors ci, j atom xj with cj; ex_in: the
 * pair is not excluded (EXCL). */
template <bool EXCL>
static __device__ __forceinline__ void
nb_pair2(const float4 xi, const float2 ci, const float4 xj, const float2 cj, const bool ex_in,
         const float rc2, const float two_krf, float &fix, float &fiy, float &fiz, float (&fj)[3])
{
    const float dx = xi.x - xj.x, dy = xi.y - xj.y, dz = xi.z - xj.z;
    const float r2 = fmaf(dx, dx, fmaf(dy, dy, dz * dz));
    bool in = r2 < rc2;
    if (EXCL)
        in = in && ex_in;
    const float rinv = hx_rsqrt_fast(r2);
    const float rinv2 = rinv * rinv;
    const float rinv6 = rinv2 * rinv2 * rinv2;
    const float c6 = ci.x * cj.x, c12 = ci.y * cj.y;
    const float qq = xi.w * xj.w;
    const float flj = (c12 * rinv6 - c6) * rinv6; /* 12c12/r^12 - 6c6/r^6 */
    float fs = fmaf(rinv2, fmaf(qq, rinv, flj), -qq * two_krf);
    fs = in ? fs : 0.0f;
    fix = fmaf(fs, dx, fix);
    fiy = fmaf(fs, dy, fiy);
    fiz = fmaf(fs, dz, fiz);
    fj[0] = fmaf(-fs, dx, fj[0]);
    fj[1] = fmaf(-fs, dy, fj[1]);
    fj[2] = fmaf(-fs, dz, fj[2]);
}

/* The pairs of one item for a lane that holds both halves' j atoms (xa: j atom tj of half 0, xb:
 * tj + 4 of half 1) with the i clusters of masks m0 (half 0) and m1 (half 1). Both masks are
 * warp-uniform; an i cluster's position and factors are loaded from shared memory once for both
 * halves, and each half's pair is computed only where its own bit is set (the per-half pruning
 * is kept). wa, wb: the exclusion masks of the two pairs (EXCL). */
template <bool EXCL>
static __device__ __forceinline__ void
nb_pairs2_f(const unsigned m0, const unsigned m1, const unsigned wa, const unsigned wb,
            const float4 xa, const float4 xb, const float2 ca, const float2 cb,
            const float4 *__restrict__ xi_t, const float2 *__restrict__ ci_t, const float rc2,
            const float two_krf, float (&fix)[GNB_SCC], float (&fiy)[GNB_SCC],
            float (&fiz)[GNB_SCC], float (&fa)[3], float (&fb)[3])
{
#pragma unroll
    for (int ic = 0; ic < GNB_SCC; ic++) {
        if ((m0 | m1) & (1u << ic)) {
            const float4 xi = xi_t[ic * GNB_CL];
            const float2 ci = ci_t[ic * GNB_CL];
            if (m0 & (1u << ic))
                nb_pair2<EXCL>(xi, ci, xa, ca, ((wa >> ic) & 1u) != 0u, rc2, two_krf, fix[ic],
                               fiy[ic], fiz[ic], fa);
            if (m1 & (1u << ic))
                nb_pair2<EXCL>(xi, ci, xb, cb, ((wb >> ic) & 1u) != 0u, rc2, two_krf, fix[ic],
                               fiy[ic], fiz[ic], fb);
        }
    }
}

/* The j forces of one item (fa on j atom js, fb on js + 4, this lane's partial sums) summed over
 * the 8 ti lanes and added to the cluster force buffer by 6 lanes: a transposing reduction of
 * the 6 values in 3 + 2 + 1 shuffles. After the xor-1 step even lanes hold (ax, az, by), odd
 * lanes (ay, bx, bz); after xor-2 the first two of those are split again (lane ti & 3: ax, ay,
 * az, bx) and the third is summed on both; xor-4 leaves the 8-lane sums: lanes 0-3 ax, ay, az,
 * bx, lanes 4, 5 by, bz (6, 7: copies, not written). */
static __device__ __forceinline__ void nb_reduce_fj2(const gnb_dev &d, const int js, const int ti,
                                                     const float (&fa)[3], const float (&fb)[3])
{
    const bool b0 = (ti & 1) != 0, b1 = (ti & 2) != 0, b2 = (ti & 4) != 0;
    float k0 = b0 ? fa[1] : fa[0], k1 = b0 ? fb[0] : fa[2], k2 = b0 ? fb[2] : fb[1];
    k0 += __shfl_xor_sync(HX_FULL_MASK, b0 ? fa[0] : fa[1], 1);
    k1 += __shfl_xor_sync(HX_FULL_MASK, b0 ? fa[2] : fb[0], 1);
    k2 += __shfl_xor_sync(HX_FULL_MASK, b0 ? fb[1] : fb[2], 1);
    float q = b1 ? k1 : k0;
    q += __shfl_xor_sync(HX_FULL_MASK, b1 ? k0 : k1, 2);
    k2 += __shfl_xor_sync(HX_FULL_MASK, k2, 2);
    float r = b2 ? k2 : q;
    r += __shfl_xor_sync(HX_FULL_MASK, b2 ? q : k2, 4);
    /* lane ti < 3: component ti of js; 3..5: component ti - 3 of js + 4 */
    if (ti < 6)
        atomicAdd(&d.fcl[3 * (size_t)js + ti + (ti >= 3 ? 9 : 0)], r);
}

/* The i forces of a warp at the end of its share of an entry: each lane's 24 partial sums (8 i
 * clusters x 3 components, i atom ti, summed over its j atoms) summed over the 4 tj lanes by a
 * transposing reduction (12 + 6 shuffles), which leaves each lane 6 of the 24 sums: value
 * q = 4 m + 2 (tj & 1) + (tj >> 1), m = 0..5, i.e. i cluster q / 3, component q % 3. */
static __device__ __forceinline__ void nb_reduce_fi2(const gnb_dev &d, const int sci,
                                                     const int lane, const float (&fix)[GNB_SCC],
                                                     const float (&fiy)[GNB_SCC],
                                                     const float (&fiz)[GNB_SCC])
{
    const int ti = lane & 7, tj = lane >> 3;
    const bool b3 = (tj & 1) != 0, b4 = (tj & 2) != 0;
    float v[3 * GNB_SCC];
#pragma unroll
    for (int ic = 0; ic < GNB_SCC; ic++) {
        v[3 * ic] = fix[ic];
        v[3 * ic + 1] = fiy[ic];
        v[3 * ic + 2] = fiz[ic];
    }
    float u[12];
#pragma unroll
    for (int k = 0; k < 12; k++) {
        u[k] = b4 ? v[2 * k + 1] : v[2 * k];
        u[k] += __shfl_xor_sync(HX_FULL_MASK, b4 ? v[2 * k] : v[2 * k + 1], 16);
    }
    float *fo = d.fcl + 3 * ((size_t)sci * GNB_SCA + ti);
    const int r = 2 * (tj & 1) + (tj >> 1);
#pragma unroll
    for (int m = 0; m < 6; m++) {
        float w = b3 ? u[2 * m + 1] : u[2 * m];
        w += __shfl_xor_sync(HX_FULL_MASK, b3 ? u[2 * m] : u[2 * m + 1], 8);
        const int q = 4 * m + r, ic = (q * 11) >> 5; /* q / 3 for q < 24 */
        if (w != 0.0f)
            atomicAdd(&fo[3 * GNB_CL * ic + (q - 3 * ic)], w);
    }
}

/* Forces only, the same pairs as k_nb_fast, each j cluster computed whole by one warp (issue
 * 28, docs/design/gpu-engine.md "Roofline"; comb-2hs, the default where the force field obeys
 * the geometric rule): lane t = 8 tj + ti holds j atoms tj (half 0) and tj + 4 (half 1), and the
 * block's two warps take alternate items of the entry. What that saves per pair evaluation,
 * against one warp per half (k_nb_fast; 66.0 -> 60.1 us at 45k atoms on the H200):
 *  - an i cluster's position and factors are read from shared memory once for both halves (a
 *    128-bit shared load of 8 distinct addresses costs 4 wavefronts, the factors 2: the shared
 *    memory pipe was 51 % busy at 45k atoms);
 *  - the per-item work (mask, item, j loads, the j-force reduction and its atomic) is done once
 *    per j cluster, not once per half: it was half of the kernel's instructions;
 *  - two independent pairs per i cluster where both halves are in range: twice the work between
 *    dependent latencies;
 *  - the i forces are reduced by shuffles within each warp and added atomically (no shared
 *    memory, so no bank conflicts, no block barrier at the end);
 *  - the j atoms' geometric-rule factors come from a per-slot array (gnb_dev.scomb, written with
 *    the search), one load beside the position's instead of the type's load and a dependent
 *    shared-memory look-up.
 * Measured and dropped: the same with the type table (never faster where the rule holds), with
 * the type's factors (comb-2h, 3 us slower) and with the warp's masks loaded at once (72
 * registers, 28 warps per multiprocessor against 32: 1.4 us slower), and with the item loaded
 * beside its mask (comb-2hsi: ptxas sank the load behind the test all the same; 0.6-0.9 us
 * slower on an H100). 64 registers, 16 blocks.
 * PF (comb-2hsn, issue 28): the next item's mask and item are loaded while this one is
 * computed, so that a non-empty item waits for one latency (its j atoms) instead of the chain
 * mask -> item -> j atoms (ptxas sinks an item's load behind its mask's test: SASS of this kernel,
 * k_nb_fast and k_prune; loaded one item ahead the value is live across the loop's back edge
 * and cannot be sunk). Three registers more. MINB: resident blocks per multiprocessor the
 * kernel is compiled for (HALOX_GPU_NB_RESIDENT): 16 caps the registers at 64, where ptxas
 * spills and recomputes ~28 instructions per item; 14 and 12 allow 72 and 80 for 28 and 24
 * warps per multiprocessor instead of 32. */
template <bool PF, int MINB>
__global__ __launch_bounds__(64, MINB) void k_nb_2h(gnb_dev d, const int4 *__restrict__ ent,
                                                    const uint2 *__restrict__ items,
                                                    const unsigned short *__restrict__ masks)
{
    hx_pdl_trigger(); /* HALOX_GPU_PDL=1: k_update may start (src/md/gpu/update_gpu.cu) */
    __shared__ float4 s_xi[GNB_SCA];
    __shared__ float2 s_ci[GNB_SCA]; /* the i atoms' geometric-rule factors */
    const int t = threadIdx.x, lane = t & 31, ti = lane & 7, tj = lane >> 3, w = t >> 5;
    const int4 en = ent[blockIdx.x];
    const int sci = en.x;
    {
        const float4 sh = d.shift[en.y];
        const float4 xi = d.xq[sci * GNB_SCA + t];
        s_xi[t] = make_float4(xi.x - sh.x, xi.y - sh.y, xi.z - sh.z, xi.w * d.epsfac);
        s_ci[t] = d.scomb[sci * GNB_SCA + t];
    }
    __syncthreads();
    float fix[GNB_SCC], fiy[GNB_SCC], fiz[GNB_SCC];
#pragma unroll
    for (int ic = 0; ic < GNB_SCC; ic++)
        fix[ic] = fiy[ic] = fiz[ic] = 0.0f;
    const float rc2 = d.rc2, two_krf = d.two_krf;
    const float4 *xi_t = s_xi + ti;
    const float2 *ci_t = s_ci + ti;
    int k = en.z + w;
    /* PF: the mask and item of this warp's next item (k < en.w: an entry holds at least one) */
    unsigned mw_next = 0u;
    uint2 it_next = make_uint2(0u, 0u);
    if (PF && k < en.w) {
        mw_next = (unsigned)__ldg(&masks[k]);
        it_next = __ldg(&items[k]);
    }
    for (; k < en.w; k += 2) {
        uint2 it = it_next;
        unsigned mw = mw_next;
        if (PF) {
            /* one item ahead, the last one loaded again rather than a branch */
            const int kn = k + 2 < en.w ? k + 2 : k;
            mw_next = (unsigned)__ldg(&masks[kn]);
            it_next = __ldg(&items[kn]);
        } else {
            mw = (unsigned)__ldg(&masks[k]);
        }
        const unsigned mk = __shfl_sync(HX_FULL_MASK, mw, 0);
        if (mk == 0u)
            continue;
        if (!PF)
            it = __ldg(&items[k]);
        const int js = (int)it.x * GNB_CL + tj;
        const float4 xa = __ldg(&d.xq[js]), xb = __ldg(&d.xq[js + 4]);
        const float2 ca = __ldg(&d.scomb[js]), cb = __ldg(&d.scomb[js + 4]);
        float fa[3] = {0.0f, 0.0f, 0.0f}, fb[3] = {0.0f, 0.0f, 0.0f};
        const unsigned m0 = mk & 0xffu, m1 = mk >> 8;
        if (it.y == 0u) {
            nb_pairs2_f<false>(m0, m1, 0xffu, 0xffu, xa, xb, ca, cb, xi_t, ci_t, rc2, two_krf, fix,
                               fiy, fiz, fa, fb);
        } else {
            const uint8_t *ex = d.excl + (size_t)it.y * GNB_SCA;
            const unsigned wa = (unsigned)__ldg(&ex[lane]), wb = (unsigned)__ldg(&ex[lane + 32]);
            nb_pairs2_f<true>(m0, m1, wa, wb, xa, xb, ca, cb, xi_t, ci_t, rc2, two_krf, fix, fiy,
                              fiz, fa, fb);
        }
        nb_reduce_fj2(d, js, ti, fa, fb);
    }
    nb_reduce_fi2(d, sci, lane, fix, fiy, fiz);
}

/* One pair of an energy step (k_nb_2he): the forces kernels' force (the fast 1/r, the table's
 * LJ factors) and nb_body's energies in double from the float distance, with 1/r from one
 * Newton step (hx_rsqrt_d1), so that an energy step gives the reference kernel's energies up to
 * the order of the sums. The energies are computed for every lane and selected (no branch per
 * pair: within a warp some pairs are in range and some not). c, cd: the pair's table entries;
 * qq_d: the charges' product times epsfac in double; ex_in: the pair is not excluded. */
static __device__ __forceinline__ void
nb_pair_e(const gnb_dev &d, const float4 xi, const float4 xj, const float2 c, const double2 cd,
          const double qq_d, const bool ex_in, const float rc2, const float two_krf, float &fix,
          float &fiy, float &fiz, float (&fj)[3], double &elj, double &ec, int &np)
{
    const float dx = xi.x - xj.x, dy = xi.y - xj.y, dz = xi.z - xj.z;
    const float r2 = fmaf(dx, dx, fmaf(dy, dy, dz * dz));
    const bool in = r2 < rc2 && ex_in;
    const float rinv = hx_rsqrt_fast(r2);
    const float rinv2 = rinv * rinv;
    const float rinv6 = rinv2 * rinv2 * rinv2;
    const float qq = xi.w * xj.w;
    const float flj = (c.y * rinv6 - c.x) * rinv6; /* 12c12/r^12 - 6c6/r^6 */
    float fs = fmaf(rinv2, fmaf(qq, rinv, flj), -qq * two_krf);
    fs = in ? fs : 0.0f;
    fix = fmaf(fs, dx, fix);
    fiy = fmaf(fs, dy, fiy);
    fiz = fmaf(fs, dz, fiz);
    fj[0] = fmaf(-fs, dx, fj[0]);
    fj[1] = fmaf(-fs, dy, fj[1]);
    fj[2] = fmaf(-fs, dz, fj[2]);
    /* r2 = 0 (an excluded self pair) gives NaN here, which the selects drop */
    const double rd = hx_rsqrt_d1(r2, rinv), rd2 = rd * rd, rd6 = rd2 * rd2 * rd2;
    const double el = cd.y * (rd6 * rd6 - d.irc12_d) - cd.x * (rd6 - d.irc6_d);
    const double ecc = qq_d * (rd + d.krf_d * (double)r2 - d.crf_d);
    elj += in ? el : 0.0;
    ec += in ? ecc : 0.0;
    np += in ? 1 : 0;
}

/* Energies and forces (the energy steps) in k_nb_2h's layout: lane t = 8 tj + ti holds j atoms
 * tj and tj + 4 of the item's j cluster, the block's two warps take alternate items, an i
 * cluster's position, type and charge are read from shared memory once for both halves, and the
 * j and i forces are reduced by shuffles (nb_reduce_fj2, nb_reduce_fi2). Each pair is
 * nb_pair_e: the energies of k_nb_fe (HALOX_GPU_NB_KERNEL=ref), which takes a warp per half j
 * cluster (the per-item work twice per j cluster, each i cluster's shared loads twice) and
 * reduces the i forces through shared memory with bank conflicts: 176 us at 45k atoms on the
 * H200 against 60 for the forces alone. With k_nb_fe's correctly rounded 1/r and its branch per
 * pair this layout saved only ~35 us of it (bench/results/h100-2026-12-07b-energykernel): the
 * per-pair arithmetic was the cost. The LJ factors come from the type tables, so any force
 * field. 12 resident blocks: 80 registers without a spill. */
__global__ __launch_bounds__(64, 12) void k_nb_2he(gnb_dev d, const int4 *__restrict__ ent,
                                                   const uint2 *__restrict__ items,
                                                   const unsigned short *__restrict__ masks,
                                                   const unsigned char *__restrict__ ljg)
{
    __shared__ float2 s_lj[GNB_MAXTYPES * GNB_MAXTYPES];   /* 6 c6, 12 c12 */
    __shared__ double2 s_ljd[GNB_MAXTYPES * GNB_MAXTYPES]; /* c6, c12 */
    __shared__ float4 s_xi[GNB_SCA];
    __shared__ int s_ti[GNB_SCA];
    __shared__ double s_qd[GNB_SCA];
    __shared__ double s_red[32];
    const int t = threadIdx.x, lane = t & 31, ti = lane & 7, tj = lane >> 3, w = t >> 5;
    const int4 en = ent[blockIdx.x];
    const int sci = en.x;
    nb_stage_i(d, en, ljg, s_xi, s_ti, s_qd, s_lj, s_ljd, true);
    __syncthreads();
    float fix[GNB_SCC], fiy[GNB_SCC], fiz[GNB_SCC];
#pragma unroll
    for (int ic = 0; ic < GNB_SCC; ic++)
        fix[ic] = fiy[ic] = fiz[ic] = 0.0f;
    double elj = 0.0, ec = 0.0;
    int npair = 0;
    const float rc2 = d.rc2, two_krf = d.two_krf;
    for (int k = en.z + w; k < en.w; k += 2) {
        const unsigned mk = __shfl_sync(HX_FULL_MASK, (unsigned)__ldg(&masks[k]), 0);
        if (mk == 0u)
            continue;
        const uint2 it = __ldg(&items[k]);
        const int js = (int)it.x * GNB_CL + tj;
        const float4 xa = __ldg(&d.xq[js]), xb = __ldg(&d.xq[js + 4]);
        const int ta = __ldg(&d.stype[js]), tb = __ldg(&d.stype[js + 4]);
        const double qa = __ldg(&d.sqd[js]), qb = __ldg(&d.sqd[js + 4]);
        unsigned wa = 0xffu, wb = 0xffu;
        if (it.y != 0u) {
            const uint8_t *ex = d.excl + (size_t)it.y * GNB_SCA;
            wa = (unsigned)__ldg(&ex[lane]);
            wb = (unsigned)__ldg(&ex[lane + 32]);
        }
        float fa[3] = {0.0f, 0.0f, 0.0f}, fb[3] = {0.0f, 0.0f, 0.0f};
        const unsigned m0 = mk & 0xffu, m1 = mk >> 8;
#pragma unroll
        for (int ic = 0; ic < GNB_SCC; ic++) {
            if ((m0 | m1) & (1u << ic)) {
                const float4 xi = s_xi[ic * GNB_CL + ti];
                const int tyi = s_ti[ic * GNB_CL + ti];
                const double qi = s_qd[ic * GNB_CL + ti];
                if (m0 & (1u << ic))
                    nb_pair_e(d, xi, xa, s_lj[tyi + ta], s_ljd[tyi + ta], qi * qa,
                              ((wa >> ic) & 1u) != 0u, rc2, two_krf, fix[ic], fiy[ic], fiz[ic], fa,
                              elj, ec, npair);
                if (m1 & (1u << ic))
                    nb_pair_e(d, xi, xb, s_lj[tyi + tb], s_ljd[tyi + tb], qi * qb,
                              ((wb >> ic) & 1u) != 0u, rc2, two_krf, fix[ic], fiy[ic], fiz[ic], fb,
                              elj, ec, npair);
            }
        }
        nb_reduce_fj2(d, js, ti, fa, fb);
    }
    nb_reduce_fi2(d, sci, lane, fix, fiy, fiz);
    nb_energy_out(d, elj, ec, npair, s_red);
}

/* Prune: for each item of the outer list, keep the i clusters that have an (interacting) atom
 * pair within rlist_inner of each half of the j cluster now. One warp per item (lane: i atom
 * ti, j atoms ja of half 0 and ja + 4 of half 1), GNB_PRUNE_WARPS warps per entry (one block),
 * striding over its items. parts == 0: every entry (grid = entries); parts > 0: entries e with
 * e % parts == the current part (grid = ceil(entries / parts)); the last block to finish advances
 * the part counter, so the launch is the same every step (graph-capturable).
 * Why 8 warps and not 2: an entry has 21-28 items (rlist 1.18-1.41 nm), a warp's items are a
 * chain of dependent loads (mask and item, then positions), and a rolling part of 45k atoms is
 * ~1800 entries: with 2 warps per entry that is 27 warps per multiprocessor, too few to hide
 * those latencies (29 us measured for 51k items at 1.41 nm, ~3x its instruction count; 4 warps:
 * 20.6 us, and 16.6 us for 39k items at 1.18 nm, still ~3x). The outer mask goes through a
 * shuffle (warp-uniform to the compiler: plain branches per i cluster), and each lane collects
 * its in-range bits of both halves for one OR reduction over the warp per item instead of two
 * votes per i cluster. */
#define GNB_PRUNE_WARPS 8

/* One item of the prune (k_prune): mask of the i clusters of the inner list, from the outer mask
 * mo and the item it (j cluster, exclusion index), at this step's positions. */
static __device__ __forceinline__ unsigned prune_item(const gnb_dev &d, const unsigned mo,
                                                      const uint2 it, const float4 *xi_t,
                                                      const int ti, const int ja, const float r2in)
{
    const int jb = ja + 4;
    const unsigned im = (mo | (mo >> 8)) & 0xffu;
    if (!im)
        return 0u;
    const unsigned ex = it.y;
    const unsigned wa =
        ex ? (unsigned)__ldg(&d.excl[(size_t)ex * GNB_SCA + ja * GNB_CL + ti]) : 0xffu;
    const unsigned wb =
        ex ? (unsigned)__ldg(&d.excl[(size_t)ex * GNB_SCA + jb * GNB_CL + ti]) : 0xffu;
    const float4 xa = __ldg(&d.xq[it.x * GNB_CL + ja]);
    const float4 xb = __ldg(&d.xq[it.x * GNB_CL + jb]);
    unsigned bits = 0;
#pragma unroll
    for (int ic = 0; ic < GNB_SCC; ic++) {
        if ((im >> ic) & 1u) {
            const float4 xi = xi_t[ic * GNB_CL];
            const float ax = xi.x - xa.x, ay = xi.y - xa.y, az = xi.z - xa.z;
            const float bx = xi.x - xb.x, by = xi.y - xb.y, bz = xi.z - xb.z;
            const float ra = fmaf(ax, ax, fmaf(ay, ay, az * az));
            const float rb = fmaf(bx, bx, fmaf(by, by, bz * bz));
            bits |= (ra < r2in ? 1u : 0u) << ic;
            bits |= (rb < r2in ? 1u : 0u) << (8 + ic);
        }
    }
    /* exclusion masks: bit ic of wa (half 0), of wb (half 1) */
    bits &= wa | (wb << 8);
    return __reduce_or_sync(HX_FULL_MASK, bits) & mo;
}

/* Prune (k_prune; the layout and why GNB_PRUNE_WARPS warps per entry: above, at its definition).
 * FAST (the default; HALOX_GPU_PRUNE=classic for the other, issue 28): a warp's items' outer masks
 * and items are loaded at once, a lane each, and taken by shuffles, so that an item waits for one
 * latency (its j positions) instead of three (mask, item sunk behind the mask's test by ptxas,
 * positions); and no __threadfence before the part counter's atomic (it waited for the block's mask
 * stores: nothing reads them before the next launch, which orders them anyway). */
template <bool FAST>
__global__ __launch_bounds__(32 * GNB_PRUNE_WARPS,
                             8) void k_prune(gnb_dev d, const int4 *__restrict__ ent,
                                             const uint2 *__restrict__ items,
                                             const unsigned short *__restrict__ masko,
                                             unsigned short *__restrict__ mask, int nent, int parts,
                                             int cls, int count)
{
    __shared__ float4 s_xi[GNB_SCA];
    __shared__ int s_part, s_last;
    const int t = threadIdx.x;
    if (nent < 0) {
        /* at the search (gnb_prune_search): the list's size from the search's status, read
         * here and not by the host; nothing when the search overflowed a buffer (the host
         * grows them and searches again) */
        const gnb_status *st = d.st;
        if (st->overflow || st->nsc > d.cap_sc || st->nitems[cls] > d.cap_items[cls] ||
            st->nent[cls] > d.cap_ent[cls] || st->nexcl + 1 > d.cap_excl)
            return;
        nent = st->nent[cls];
    }
    if (parts > 0) {
        if (t == 0)
            s_part = (int)(d.prune_ctr[cls] % (unsigned)parts);
        __syncthreads();
    }
    const int e = parts > 0 ? (int)blockIdx.x * parts + s_part : (int)blockIdx.x;
    const bool active = e < nent;
    int4 en = make_int4(0, 0, 0, 0);
    if (active) {
        en = ent[e];
        if (t < GNB_SCA) {
            const float4 sh = d.shift[en.y];
            const float4 xi = d.xq[en.x * GNB_SCA + t];
            s_xi[t] = make_float4(xi.x - sh.x, xi.y - sh.y, xi.z - sh.z, 0.0f);
        }
    }
    __syncthreads();
    unsigned ncp = 0;
    if (active) {
        const int lane = t & 31, w = t >> 5, ti = lane & 7, ja = lane >> 3;
        const float r2in = d.rinner2;
        const float4 *xi_t = s_xi + ti;
        if (FAST) {
            const int k0 = en.z + w;
            /* the warp's item count through a shuffle from lane 0: the same on every lane
             * anyway (w = t / 32), but only so does ptxas know it, and then the item index q, the
             * shuffled mask and the branches on its bits are warp-uniform: no BSSY/BSYNC pair
             * per i cluster (SASS) */
            const int nq =
                __shfl_sync(HX_FULL_MASK,
                            en.w > k0 ? (en.w - k0 + GNB_PRUNE_WARPS - 1) / GNB_PRUNE_WARPS : 0, 0);
            for (int q0 = 0; q0 < nq; q0 += 32) {
                const int kl = k0 + GNB_PRUNE_WARPS * (q0 + lane);
                unsigned mall = 0u;
                uint2 iall = make_uint2(0u, 0u);
                if (q0 + lane < nq) {
                    mall = __ldg(&masko[kl]);
                    iall = __ldg(&items[kl]);
                }
                const int nqc = hx_imin(32, nq - q0);
                for (int q = 0; q < nqc; q++) {
                    const unsigned mo = __shfl_sync(HX_FULL_MASK, mall, q);
                    const uint2 it = make_uint2(__shfl_sync(HX_FULL_MASK, iall.x, q),
                                                __shfl_sync(HX_FULL_MASK, iall.y, q));
                    const unsigned nm = prune_item(d, mo, it, xi_t, ti, ja, r2in);
                    if (lane == 0)
                        mask[k0 + GNB_PRUNE_WARPS * (q0 + q)] = (unsigned short)nm;
                    ncp += (unsigned)__popc(nm);
                }
            }
        } else {
            /* the default: mask, item and positions one after the other per item */
            for (int k = en.z + w; k < en.w; k += GNB_PRUNE_WARPS) {
                /* the item is loaded with its mask in the source; ptxas sinks it behind the
                 * mask's test (SASS), FAST above does not */
                const unsigned mo = __shfl_sync(HX_FULL_MASK, (unsigned)__ldg(&masko[k]), 0);
                const unsigned nm = prune_item(d, mo, __ldg(&items[k]), xi_t, ti, ja, r2in);
                if (lane == 0)
                    mask[k] = (unsigned short)nm;
                ncp += (unsigned)__popc(nm);
            }
        }
        if (count && (t & 31) == 0 && ncp)
            atomicAdd(&d.st->ncp_inner[cls], (unsigned long long)ncp);
    }
    if (parts > 0) {
        __syncthreads();
        if (t == 0) {
            if (!FAST)
                __threadfence();
            s_last = atomicAdd(&d.prune_done[cls], 1u) == gridDim.x - 1u;
        }
        __syncthreads();
        if (s_last && t == 0) {
            d.prune_done[cls] = 0u;
            d.prune_ctr[cls] = d.prune_ctr[cls] + 1u;
            if (!FAST)
                __threadfence();
        }
    }
}

/* ---- set-up ------------------------------------------------------------------------------ */

#define FREE_DEV(p)                                                                                \
    do {                                                                                           \
        cudaFree(p);                                                                               \
        (p) = NULL;                                                                                \
    } while (0)

extern "C" void hx_gpu_nb_destroy(hx_gpu_nb **nbp)
{
    if (!nbp || !*nbp)
        return;
    hx_gpu_nb *nb = *nbp;
    gnb_dev *d = &nb->d;
    FREE_DEV(d->azone);
    FREE_DEV(d->atype);
    FREE_DEV(d->afirst);
    FREE_DEV(d->amask);
    FREE_DEV(d->aq);
    FREE_DEV(d->aqd);
    FREE_DEV(d->wpos);
    FREE_DEV(d->awrap);
    FREE_DEV(d->aslot);
    FREE_DEV(d->colatoms);
    FREE_DEV(d->colfill);
    FREE_DEV(d->col_count);
    FREE_DEV(d->col_start);
    FREE_DEV(d->col_sc);
    FREE_DEV(d->col_bb);
    FREE_DEV(d->sc_bb);
    FREE_DEV(d->cl_bb);
    FREE_DEV(d->perm);
    FREE_DEV(d->stype);
    FREE_DEV(d->sfirst);
    FREE_DEV(d->smask);
    FREE_DEV(d->xq);
    FREE_DEV(d->swq);
    FREE_DEV(d->sqd);
    FREE_DEV(d->fcl);
    FREE_DEV(d->scomb);
    for (int c = 0; c < 2; c++) {
        FREE_DEV(d->ent[c]);
        FREE_DEV(d->items[c]);
        FREE_DEV(d->mask[c]);
        FREE_DEV(d->masko[c]);
    }
    FREE_DEV(d->excl);
    FREE_DEV(d->lb_work);
    FREE_DEV(d->grid);
    FREE_DEV(d->st);
    FREE_DEV(d->energy);
    FREE_DEV(d->npairs);
    FREE_DEV(d->prune_ctr);
    FREE_DEV(d->prune_done);
    FREE_DEV(nb->d_lj);
    if (nb->h_st)
        cudaFreeHost(nb->h_st);
    if (nb->h_energy)
        cudaFreeHost(nb->h_energy);
    if (nb->ev_gather)
        cudaEventDestroy(nb->ev_gather);
    if (nb->ev_nonlocal)
        cudaEventDestroy(nb->ev_nonlocal);
    if (nb->ev_prune)
        cudaEventDestroy(nb->ev_prune);
    if (nb->ev_pairs)
        cudaEventDestroy(nb->ev_pairs);
    if (nb->ev_prune_upd)
        cudaEventDestroy(nb->ev_prune_upd);
    if (nb->s_prune)
        cudaStreamDestroy(nb->s_prune);
    if (nb->ev_gather_nl)
        cudaEventDestroy(nb->ev_gather_nl);
    if (nb->ev_prune_nl)
        cudaEventDestroy(nb->ev_prune_nl);
    for (int k = 0; k <= HX_GPU_SEARCH_STAGES; k++)
        if (nb->ev_stage[k])
            cudaEventDestroy(nb->ev_stage[k]);
    for (int k = 0; k < GNB_NPARTS; k++)
        if (nb->search_exec[k])
            cudaGraphExecDestroy(nb->search_exec[k]);
    if (nb->s_capture)
        cudaStreamDestroy(nb->s_capture);
    if (nb->s_prune_nl)
        cudaStreamDestroy(nb->s_prune_nl);
    free(nb);
    *nbp = NULL;
}

/* A count of blocks per multiprocessor from environment variable name (1..most; 0 when unset).
 * what: the blocks named in the message. */
static hx_status env_blocks(const char *name, long most, const char *what, int *out)
{
    *out = 0;
    const char *e = getenv(name);
    if (!e || !e[0])
        return HX_OK;
    char *end = NULL;
    const long v = strtol(e, &end, 10);
    HX_CHECK(end && *end == '\0' && v >= 1 && v <= most, HX_ERR_INVALID_ARG,
             "%s=%s: use a whole number of %s per multiprocessor from 1 to %ld", name, e, what,
             most);
    *out = (int)v;
    return HX_OK;
}

/* A switch of two values from the environment: 1 for on (the default, also when unset), 0 for
 * off; anything else refused with both named. */
static hx_status env_switch(const char *name, const char *on, const char *on_what, const char *off,
                            const char *off_what, int *out)
{
    *out = 1;
    const char *e = getenv(name);
    if (!e || !e[0])
        return HX_OK;
    HX_CHECK(strcmp(e, on) == 0 || strcmp(e, off) == 0, HX_ERR_INVALID_ARG,
             "%s=%s: use %s (%s) or %s (%s)", name, e, on, on_what, off, off_what);
    *out = strcmp(e, on) == 0;
    return HX_OK;
}

/* The pair kernel: the one asked for, else HALOX_GPU_NB_KERNEL, else the fastest measured
 * (docs/design/gpu-engine.md); the geometric-rule kernels fall back to the table when the force
 * field does not obey the rule. HALOX_GPU_NB_RESIDENT (16, 14 or 12; 14 by default): the
 * resident blocks per multiprocessor the comb-2hs kernels are compiled for (register caps 64,
 * 72, 80). The default, comb-2hsn at 14, measured on an H100 (bench/results/
 * h100-2026-12-06a-nbvar): the pair kernel 58.8 against comb-2hs at 16's 59.6 us at 45k, 194.5
 * against 197.1 at 180k; `halox md --gpu` 45k on 8 ranks of one GPU 892 against 853 ns/day, on
 * 4 ranks equal. HALOX_GPU_NB_ENTRY_BLOCKS (1-1024): the blocks per multiprocessor the entries
 * are cut for (default 48; 24 and 96 measured 4-5 us slower at 45k there). Each process under
 * MPS cuts for the whole GPU: cut for its share (12 or 6 per multiprocessor on 4 or 8 ranks)
 * the runs there were 1.6-2.5x slower. HALOX_GPU_LB_BLOCKS (1-7): the list build's blocks
 * launched per multiprocessor (default 6, search_gpu.cu's LB_BLOCKS_PER_SM; 8, from a second
 * instance compiled for them, measured no faster on an H100: bench/results/
 * h100-2026-12-06r-suite-lb). HALOX_GPU_LB_ZONES (0 or 1): a list-build work item per j zone
 * (1, the default) or one per image taking its j zones in turn (0; the same lists); per zone,
 * the list build of a decomposed domain took 31-49 % less time and the search step 50-145 us
 * less on 4 and 8 ranks of one H100 (bench/results/h100-2026-12-06t-zones-compare).
 * HALOX_GPU_COL_SORT (bin or rank): the search's column sort ranks each atom within its z-bin
 * of the column (bin, the default) or against the whole column (rank, the code before; the same
 * order). */
static hx_status choose_kernel(hx_gpu_nb *nb)
{
    static const char *const names[HX_GPU_NB_KERNEL_N] = {"auto", "ref",      "table",
                                                          "comb", "comb-2hs", "comb-2hsn"};
    int k = nb->p.kernel;
    const char *env = getenv("HALOX_GPU_NB_KERNEL");
    if (k == HX_GPU_NB_KERNEL_AUTO && env && env[0]) {
        int found = -1;
        for (int i = 0; i < HX_GPU_NB_KERNEL_N; i++)
            if (strcmp(env, names[i]) == 0)
                found = i;
        HX_CHECK(found >= 0, HX_ERR_INVALID_ARG,
                 "HALOX_GPU_NB_KERNEL=%s: use auto, ref, table, comb, comb-2hs or comb-2hsn", env);
        k = found;
    }
    if (k == HX_GPU_NB_KERNEL_AUTO)
        k = HX_GPU_NB_KERNEL_COMB_2HSN;
    if (!nb->lj_geometric && (k == HX_GPU_NB_KERNEL_COMB || k == HX_GPU_NB_KERNEL_COMB_2HS ||
                              k == HX_GPU_NB_KERNEL_COMB_2HSN))
        k = HX_GPU_NB_KERNEL_TABLE;
    nb->kernel = k;
    nb->resident = 14;
    const char *r = getenv("HALOX_GPU_NB_RESIDENT");
    if (r && r[0]) {
        HX_CHECK(strcmp(r, "16") == 0 || strcmp(r, "14") == 0 || strcmp(r, "12") == 0,
                 HX_ERR_INVALID_ARG, "HALOX_GPU_NB_RESIDENT=%s: use 16, 14 or 12", r);
        nb->resident = atoi(r);
    }
    HX_TRY(env_blocks("HALOX_GPU_NB_ENTRY_BLOCKS", 1024, "blocks", &nb->entry_blocks));
    HX_TRY(env_blocks("HALOX_GPU_LB_BLOCKS", 7, "list-build blocks", &nb->lb_blocks));
    HX_TRY(env_switch("HALOX_GPU_LB_ZONES", "1", "a list-build work item per j zone, the default",
                      "0", "an item takes every j zone of its image in turn", &nb->d.lb_zones));
    HX_TRY(env_switch("HALOX_GPU_COL_SORT", "bin",
                      "each atom ranked within its z-bin of the column, the default", "rank",
                      "against the whole column", &nb->d.sort_bins));
    HX_TRY(env_switch("HALOX_GPU_SEARCH_HOME", "1",
                      "a decomposed domain's home zone searched as soon as it is set, the default",
                      "0", "the whole search after the halo", &nb->home_split));
    return HX_OK;
}

extern "C" hx_status hx_gpu_nb_create(const hx_forcefield *ff, const hx_gpu_nb_params *p,
                                      hx_gpu_nb **out)
{
    HX_CHECK(ff && p && out, HX_ERR_INVALID_ARG, "hx_gpu_nb_create: NULL argument");
    *out = NULL;
    HX_CHECK(p->rc > 0 && isfinite(p->rc), HX_ERR_INVALID_ARG, "cut-off rc = %g nm: must be > 0",
             p->rc);
    HX_CHECK(p->rlist >= p->rc, HX_ERR_INVALID_ARG,
             "pair-list radius rlist = %g nm is shorter than the cut-off %g nm", p->rlist, p->rc);
    HX_CHECK(p->rlist_inner == 0 || (p->rlist_inner >= p->rc && p->rlist_inner <= p->rlist),
             HX_ERR_INVALID_ARG,
             "inner list radius %g nm: use 0 or a value in [rc, rlist] = [%g, %g]", p->rlist_inner,
             p->rc, p->rlist);
    HX_CHECK(p->prune_parts >= 0 && p->prune_parts <= 1000, HX_ERR_INVALID_ARG,
             "prune_parts = %d: use 0 (prune at the search only) to 1000", p->prune_parts);
    HX_CHECK(p->eps_rf == 0.0 || p->eps_rf >= 1.0, HX_ERR_INVALID_ARG,
             "eps_rf = %g: use 0 (infinity) or a value >= 1", p->eps_rf);
    HX_CHECK(p->max_excl_dist >= 0, HX_ERR_INVALID_ARG, "max_excl_dist = %g nm: must be >= 0",
             p->max_excl_dist);
    HX_CHECK(p->kernel >= 0 && p->kernel < HX_GPU_NB_KERNEL_N, HX_ERR_INVALID_ARG,
             "pair kernel %d: use 0 (auto) to %d", p->kernel, HX_GPU_NB_KERNEL_N - 1);
    const int nt = hx_forcefield_ntypes(ff);
    HX_CHECK(nt >= 1 && nt <= GNB_MAXTYPES, HX_ERR_UNSUPPORTED,
             "the GPU kernels take at most %d atom types, the force field has %d", GNB_MAXTYPES,
             nt);
    hx_gpu_nb *nb = (hx_gpu_nb *)calloc(1, sizeof *nb);
    HX_CHECK(nb, HX_ERR_NOMEM, "out of memory");
    hx_status st = HX_OK;
    nb->p = *p;
    if (nb->p.rlist_inner == 0)
        nb->p.rlist_inner = nb->p.rlist;
    if (nb->p.max_excl_dist == 0)
        nb->p.max_excl_dist = 0.5;
    if (nb->p.eps_r <= 0)
        nb->p.eps_r = 1.0;
    hx_nb_params nbp = {nb->p.rc, nb->p.eps_rf, nb->p.eps_r};
    nb->rf = hx_rf_constants(&nbp);
    nb->ntypes = nt;
    const double *c6 = hx_forcefield_c6(ff), *c12 = hx_forcefield_c12(ff);
    gnb_dev *d = &nb->d;
    const double rc2 = nb->p.rc * nb->p.rc;
    d->rc2 = (float)rc2;
    d->rc2_d = rc2;
    d->rlist = (float)nb->p.rlist;
    d->rlist2 = (float)(nb->p.rlist * nb->p.rlist);
    d->rinner2 = (float)(nb->p.rlist_inner * nb->p.rlist_inner);
    d->rolling = nb->p.prune_parts > 0;
    d->excl2 = (float)(nb->p.max_excl_dist * nb->p.max_excl_dist);
    d->ntypes = nt;
    d->epsfac = (float)nb->rf.epsfac;
    d->krf = (float)nb->rf.k_rf;
    d->crf = (float)nb->rf.c_rf;
    d->two_krf = (float)(2.0 * nb->rf.k_rf);
    d->irc6_d = 1.0 / (rc2 * rc2 * rc2);
    d->irc12_d = d->irc6_d * d->irc6_d;
    d->epsfac_d = nb->rf.epsfac;
    d->krf_d = nb->rf.k_rf;
    d->crf_d = nb->rf.c_rf;
    int dev = 0;
    HX_CUDA_GOTO(st, cudaGetDevice(&dev), fail);
    HX_CUDA_GOTO(st, cudaDeviceGetAttribute(&nb->sm_count, cudaDevAttrMultiProcessorCount, dev),
                 fail);
    HX_CUDA_GOTO(
        st, cudaDeviceGetAttribute(&nb->smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev),
        fail);
    {
        /* nt^2 float2 (6 c6, 12 c12), then (16-byte aligned) nt^2 double2 (c6, c12), then nt
         * float2 geometric-rule factors */
        const size_t off = 16 * (((size_t)8 * nt * nt + 15) / 16);
        nb->lj_comb_off = off + sizeof(double2) * (size_t)(nt * nt);
        const size_t bytes = nb->lj_comb_off + sizeof(float2) * (size_t)nt;
        unsigned char *h = (unsigned char *)calloc(1, bytes);
        if (!h)
            HX_FAIL_GOTO(st, HX_ERR_NOMEM, fail, "out of memory");
        for (int k = 0; k < nt * nt; k++) {
            ((float2 *)h)[k] = make_float2((float)(6.0 * c6[k]), (float)(12.0 * c12[k]));
            ((double2 *)(h + off))[k] = make_double2(c6[k], c12[k]);
        }
        /* geometric rule (OPLS-AA, GROMOS, SPC/E, TIP3P): c_ij = sqrt(c_ii c_jj) for c6 and c12,
         * to 1e-6 of the largest parameter (the float table's own rounding is 6e-8) */
        nb->lj_geometric = 1;
        double c6max = 0.0, c12max = 0.0;
        for (int k = 0; k < nt * nt; k++) {
            c6max = fmax(c6max, fabs(c6[k]));
            c12max = fmax(c12max, fabs(c12[k]));
        }
        for (int i = 0; i < nt; i++) {
            if (c6[i * nt + i] < 0 || c12[i * nt + i] < 0)
                nb->lj_geometric = 0;
            for (int j = 0; j < nt && nb->lj_geometric; j++) {
                const double g6 = sqrt(fmax(c6[i * nt + i], 0.0) * fmax(c6[j * nt + j], 0.0));
                const double g12 = sqrt(fmax(c12[i * nt + i], 0.0) * fmax(c12[j * nt + j], 0.0));
                if (fabs(c6[i * nt + j] - g6) > 1e-6 * c6max ||
                    fabs(c12[i * nt + j] - g12) > 1e-6 * c12max)
                    nb->lj_geometric = 0;
            }
            ((float2 *)(h + nb->lj_comb_off))[i] =
                make_float2((float)sqrt(6.0 * fmax(c6[i * nt + i], 0.0)),
                            (float)sqrt(12.0 * fmax(c12[i * nt + i], 0.0)));
        }
        cudaError_t rc = cudaMalloc((void **)&nb->d_lj, bytes);
        if (rc == cudaSuccess)
            rc = cudaMemcpy(nb->d_lj, h, bytes, cudaMemcpyHostToDevice);
        free(h);
        HX_CUDA_GOTO(st, rc, fail);
    }
    HX_TRY_GOTO(st, choose_kernel(nb), fail);
    HX_CUDA_GOTO(st, cudaMalloc((void **)&d->grid, sizeof(gnb_zone_grid) * GNB_MAXZ), fail);
    HX_CUDA_GOTO(st, cudaMalloc((void **)&d->st, sizeof(gnb_status)), fail);
    {
        /* the first search's record; each search leaves the next one's (gnb_status_out) */
        gnb_status fresh;
        gnb_status_fresh(&fresh, 0);
        HX_CUDA_GOTO(st, cudaMemcpy(d->st, &fresh, sizeof fresh, cudaMemcpyHostToDevice), fail);
    }
    HX_CUDA_GOTO(st, cudaMalloc((void **)&d->energy, 2 * sizeof(double)), fail);
    HX_CUDA_GOTO(st, cudaMalloc((void **)&d->npairs, sizeof(unsigned long long)), fail);
    HX_CUDA_GOTO(st, cudaMalloc((void **)&d->prune_ctr, 2 * sizeof(unsigned)), fail);
    HX_CUDA_GOTO(st, cudaMalloc((void **)&d->prune_done, 2 * sizeof(unsigned)), fail);
    HX_CUDA_GOTO(st, cudaMemset(d->energy, 0, 2 * sizeof(double)), fail);
    HX_CUDA_GOTO(st, cudaMemset(d->npairs, 0, sizeof(unsigned long long)), fail);
    HX_CUDA_GOTO(st, cudaMemset(d->prune_ctr, 0, 2 * sizeof(unsigned)), fail);
    HX_CUDA_GOTO(st, cudaMemset(d->prune_done, 0, 2 * sizeof(unsigned)), fail);
    HX_CUDA_GOTO(st, cudaMallocHost((void **)&nb->h_st, sizeof(gnb_status)), fail);
    HX_CUDA_GOTO(st, cudaHostGetDevicePointer((void **)&nb->h_st_d, nb->h_st, 0), fail);
    HX_CUDA_GOTO(st, cudaMallocHost((void **)&nb->h_energy, 2 * sizeof(double) + sizeof(long long)),
                 fail);
    memset(nb->h_energy, 0, 2 * sizeof(double) + sizeof(long long));
    nb->h_npairs = (unsigned long long *)(nb->h_energy + 2);
    HX_CUDA_GOTO(st, cudaEventCreateWithFlags(&nb->ev_gather, cudaEventDisableTiming), fail);
    HX_CUDA_GOTO(st, cudaEventCreateWithFlags(&nb->ev_nonlocal, cudaEventDisableTiming), fail);
    HX_CUDA_GOTO(st, cudaEventCreateWithFlags(&nb->ev_prune, cudaEventDisableTiming), fail);
    HX_CUDA_GOTO(st, cudaStreamCreateWithFlags(&nb->s_prune, cudaStreamNonBlocking), fail);
    HX_CUDA_GOTO(st, cudaEventCreateWithFlags(&nb->ev_gather_nl, cudaEventDisableTiming), fail);
    HX_CUDA_GOTO(st, cudaEventCreateWithFlags(&nb->ev_prune_nl, cudaEventDisableTiming), fail);
    HX_CUDA_GOTO(st, cudaStreamCreateWithFlags(&nb->s_prune_nl, cudaStreamNonBlocking), fail);
    HX_CUDA_GOTO(st, cudaEventCreateWithFlags(&nb->ev_pairs, cudaEventDisableTiming), fail);
    HX_CUDA_GOTO(st, cudaEventCreateWithFlags(&nb->ev_prune_upd, cudaEventDisableTiming), fail);
    {
        /* the rolling prune's variants (issue 28): k_prune<true> is the default since it
         * measured 1.1 us (1.4 %) faster per step at 45k and 0.9-1 % at 180k/360k, in every
         * round (docs/design/gpu-engine.md, "Round-2 variants: measured");
         * HALOX_GPU_PRUNE=classic keeps k_prune<false>. And the prune beside the update instead
         * of beside the pair kernel (measured slower: not the default) */
        const char *pf = getenv("HALOX_GPU_PRUNE");
        nb->prune_fast = !(pf && strcmp(pf, "classic") == 0);
        const char *pa = getenv("HALOX_GPU_PRUNE_AT");
        nb->prune_at_update = pa && strcmp(pa, "update") == 0;
    }
    {
        /* HALOX_GPU_PDL=1 (issue 28, to be measured): the update's graph edge from the local
         * pair kernel made programmatic (hx_gpu_nb_local, hx_gpu_update_step); only where
         * griddepcontrol exists (sm_90 and later) */
        const char *e = getenv("HALOX_GPU_PDL");
        if (e && strcmp(e, "0") != 0 && strcmp(e, "1") != 0)
            HX_FAIL_GOTO(st, HX_ERR_INVALID_ARG, fail,
                         "HALOX_GPU_PDL='%s': give 0 (off, the default) or 1 (programmatic "
                         "dependent launch of the update after the pair kernel)",
                         e);
        int major = 0;
        HX_CUDA_GOTO(st, cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev),
                     fail);
        nb->pdl = e && e[0] == '1' && major >= 9 && HX_PDL_CAPTURE;
    }
    {
        const char *e = getenv("HALOX_GPU_SEARCH_TIMING");
        nb->time_stages = e && e[0] == '1';
        const char *g = getenv("HALOX_GPU_SEARCH_GRAPH");
        nb->search_graph = !(g && g[0] == '0');
        if (nb->search_graph)
            HX_CUDA_GOTO(st, cudaStreamCreateWithFlags(&nb->s_capture, cudaStreamNonBlocking),
                         fail);
        for (int k = 0; nb->time_stages && k <= HX_GPU_SEARCH_STAGES; k++)
            HX_CUDA_GOTO(st, cudaEventCreate(&nb->ev_stage[k]), fail);
    }
    *out = nb;
    return HX_OK;
fail:
    hx_gpu_nb_destroy(&nb);
    return st;
}

static hx_status ensure_atoms(hx_gpu_nb *nb, int n)
{
    if (n <= nb->cap_atoms && nb->d.azone)
        return HX_OK;
    gnb_dev *d = &nb->d;
    const size_t N = (size_t)n + (size_t)n / 4 + 64;
    void **ptrs[] = {(void **)&d->azone, (void **)&d->atype, (void **)&d->afirst,
                     (void **)&d->amask, (void **)&d->aq,    (void **)&d->aqd,
                     (void **)&d->wpos,  (void **)&d->awrap, (void **)&d->colatoms,
                     (void **)&d->aslot};
    const size_t sz[] = {sizeof(int),   sizeof(int),    sizeof(int),    sizeof(unsigned),
                         sizeof(float), sizeof(double), sizeof(float4), sizeof(float4),
                         sizeof(int),   sizeof(int)};
    for (size_t k = 0; k < sizeof ptrs / sizeof ptrs[0]; k++) {
        HX_CUDA(cudaFree(*ptrs[k]));
        *ptrs[k] = NULL;
        HX_CUDA(cudaMalloc(ptrs[k], N * sz[k]));
    }
    nb->cap_atoms = (int)N;
    return HX_OK;
}

/* What a set of atoms fixes besides the per-atom arrays: counts, the zone tables, the periodic
 * images, the atoms per zone zcount (to the device on stream s; NULL: a kernel of the caller's
 * writes the zones' grid records itself, k_set_atoms_dev). */
static hx_status nb_set_geometry(hx_gpu_nb *nb, int n, int ndim, const int periodic[3],
                                 const double box[3], const int *zcount, cudaStream_t s)
{
    gnb_dev *d = &nb->d;
    const int nz = hx_zone_count(ndim);
    d->n = n;
    d->nz = nz;
    d->nzi = hx_izone_count(ndim);
    d->ndim = ndim;
    for (int iz = 0; iz < d->nzi; iz++)
        hx_izone_jrange(ndim, iz, &d->jz0[iz], &d->jz1[iz]);
    for (int k = 0; k < 3; k++) {
        d->periodic[k] = periodic[k] != 0;
        d->box[k] = (float)box[k];
        d->boxd[k] = box[k];
        HX_CHECK(!d->periodic[k] || box[k] > 0, HX_ERR_INVALID_ARG, "periodic box edge %c = %g",
                 "xyz"[k], box[k]);
    }
    for (int kz = -1; kz <= 1; kz++)
        for (int ky = -1; ky <= 1; ky++)
            for (int kx = -1; kx <= 1; kx++) {
                const int sidx = (kx + 1) + 3 * (ky + 1) + 9 * (kz + 1);
                d->shift[sidx] = make_float4(d->periodic[0] ? (float)(kx * box[0]) : 0.0f,
                                             d->periodic[1] ? (float)(ky * box[1]) : 0.0f,
                                             d->periodic[2] ? (float)(kz * box[2]) : 0.0f, 0.0f);
            }
    if (zcount) {
        gnb_zone_grid g[GNB_MAXZ];
        memset(g, 0, sizeof g);
        for (int z = 0; z < GNB_MAXZ; z++)
            g[z].natoms = nb->zcount_set[z] = z < nz ? zcount[z] : 0;
        /* from pageable memory: staged before the call returns */
        HX_CUDA(cudaMemcpyAsync(d->grid, g, sizeof g, cudaMemcpyHostToDevice, s));
    }
    nb->have_set = 1;
    nb->have_list = 0;
    nb->home_x_ready = 0;
    return HX_OK;
}

/* The per-atom arrays of hx_gpu_nb_set_atoms from device arrays (the device search step): the
 * first atom of each atom's run (same molecule, same zone, contiguous: at most 32 atoms) and
 * its exclusion mask over the run, charges in float and double. */
__global__ __launch_bounds__(128) void k_set_atoms_dev(gnb_dev d, hx_gpu_nb_dev_set set)
{
    const int a = blockIdx.x * blockDim.x + threadIdx.x;
    /* with set.first > 0 the home atoms and zone 0's record (its grid, by the home part of the
     * search) stay as the call before set them */
    if (a < GNB_MAXZ && (set.first == 0 || a > 0)) {
        /* the zones' grid records, as nb_set_geometry's upload would write them: a pageable
         * copy at a search step may wait for the stream, i.e. behind the kernels just enqueued
         * and, on a GPU shared under MPS, the other processes' */
        gnb_zone_grid g;
        memset(&g, 0, sizeof g);
        g.natoms = a < d.nz ? set.zone_count[a] : 0;
        d.grid[a] = g;
    }
    if (a == 0)
        d.st->n = set.n; /* the next search's atoms (its record is otherwise fresh) */
    if (a < set.first || a >= set.n)
        return;
    const int m = set.mol[a], z = set.zone[a];
    int f0 = a;
    while (f0 > 0 && a - f0 < 32 && set.mol[f0 - 1] == m && set.zone[f0 - 1] == z)
        f0--;
    int end = a + 1;
    while (end < set.n && end - f0 < 32 && set.mol[end] == m && set.zone[end] == z)
        end++;
    unsigned mask = 0;
    const uint32_t ex = set.excl[a];
    for (int b = f0; b < end; b++)
        if ((ex >> set.mol_pos[b]) & 1u)
            mask |= 1u << (b - f0);
    d.azone[a] = z;
    d.atype[a] = set.type[a];
    d.afirst[a] = f0;
    d.amask[a] = mask;
    d.aq[a] = (float)set.q[a];
    d.aqd[a] = set.q[a];
}

/* A fresh status record where the home part of a search was launched and the rest will not
 * run (hx_gpu_nb_set_atoms_device's fallback to a whole set). */
__global__ void k_status_reset(gnb_dev d)
{
    gnb_status_fresh(d.st, 0);
}

/* The home part of a search was launched but its rest will not run: once it has finished, a
 * fresh status record for the whole search that will. */
static hx_status home_cancel(hx_gpu_nb *nb, cudaStream_t s)
{
    if (!nb->home_pending)
        return HX_OK;
    nb->home_pending = 0;
    HX_CUDA(cudaStreamSynchronize(nb->home_stream));
    HX_LAUNCH(k_status_reset, 1, 1, 0, s, nb->d);
    HX_CUDA_LAUNCH("k_status_reset");
    return HX_OK;
}

extern "C" hx_status hx_gpu_nb_reserve(hx_gpu_nb *nb, int n)
{
    HX_CHECK(nb && n >= 0, HX_ERR_INVALID_ARG, "hx_gpu_nb_reserve: bad argument");
    return ensure_atoms(nb, n);
}

extern "C" hx_status hx_gpu_nb_set_atoms_device(hx_gpu_nb *nb, const hx_gpu_nb_dev_set *set,
                                                hx_stream s)
{
    HX_CHECK(nb && set && set->n >= 0 && set->ndim >= 0 && set->ndim <= 3, HX_ERR_INVALID_ARG,
             "hx_gpu_nb_set_atoms_device: bad argument");
    HX_CHECK(
        set->n == 0 || (set->zone && set->type && set->q && set->mol && set->excl && set->mol_pos),
        HX_ERR_INVALID_ARG, "hx_gpu_nb_set_atoms_device: %d atoms without their arrays", set->n);
    HX_CHECK(set->first >= 0 && set->first <= set->n, HX_ERR_INVALID_ARG,
             "hx_gpu_nb_set_atoms_device: first atom %d of %d", set->first, set->n);
    hx_gpu_nb_dev_set v = *set;
    /* not the rest of the home atoms the search's home part took, or room must be made: every
     * atom is set, and the search runs whole */
    if (v.first > 0 && !(nb->home_pending && v.first == nb->d.n && v.n <= nb->cap_atoms &&
                         v.ndim == nb->d.ndim && v.zone_count[0] == v.first))
        v.first = 0;
    if (v.first == 0)
        HX_TRY(home_cancel(nb, s));
    HX_TRY(ensure_atoms(nb, v.n));
    /* the geometry first: the kernel reads the zone count from nb->d */
    HX_TRY(nb_set_geometry(nb, v.n, v.ndim, v.periodic, v.box, NULL, s));
    for (int z = 0; z < GNB_MAXZ; z++)
        nb->zcount_set[z] = z < nb->d.nz ? v.zone_count[z] : 0;
    const int blocks = (int)hx_div_up(v.n > GNB_MAXZ ? v.n : GNB_MAXZ, 128);
    HX_LAUNCH(k_set_atoms_dev, blocks, 128, 0, s, nb->d, v);
    HX_CUDA_LAUNCH("k_set_atoms_dev");
    return HX_OK;
}

extern "C" hx_status hx_gpu_nb_set_atoms(hx_gpu_nb *nb, const hx_local_set *set,
                                         const uint32_t *excl, hx_stream stream)
{
    HX_CHECK(nb && set, HX_ERR_INVALID_ARG, "hx_gpu_nb_set_atoms: NULL argument");
    const int n = set->n;
    HX_CHECK(n >= 0 && (n == 0 || (set->type && set->q && set->mol)), HX_ERR_INVALID_ARG,
             "hx_gpu_nb_set_atoms: %d atoms without type, charge or molecule arrays", n);
    HX_CHECK(set->ndim >= 0 && set->ndim <= 3, HX_ERR_INVALID_ARG, "ndim = %d", set->ndim);
    cudaStream_t s = stream;
    gnb_dev *d = &nb->d;
    HX_TRY(home_cancel(nb, s)); /* a whole new set: the search runs whole */
    const int nz = hx_zone_count(set->ndim);
    int *zone = (int *)malloc(sizeof(int) * (size_t)(n + 1));
    int *first = (int *)malloc(sizeof(int) * (size_t)(n + 1));
    unsigned *mask = (unsigned *)malloc(sizeof(unsigned) * (size_t)(n + 1));
    float *qf = (float *)malloc(sizeof(float) * (size_t)(n + 1));
    hx_status st = HX_OK;
    int zcount[GNB_MAXZ] = {0};
    if (!zone || !first || !mask || !qf)
        HX_FAIL_GOTO(st, HX_ERR_NOMEM, done, "out of memory for %d atoms", n);
    {
        int covered = 0;
        for (int r = 0; r < set->nranges; r++) {
            const hx_zone_range *zr = &set->ranges[r];
            if (!(zr->begin == covered && zr->end >= zr->begin && zr->end <= n && zr->zone >= 0 &&
                  zr->zone < nz))
                HX_FAIL_GOTO(st, HX_ERR_INVALID_ARG, done,
                             "zone range %d [%d,%d) zone %d does not continue the ranges at %d "
                             "within %d atoms and %d zones",
                             r, zr->begin, zr->end, zr->zone, covered, n, nz);
            for (int a = zr->begin; a < zr->end; a++)
                zone[a] = zr->zone;
            zcount[zr->zone] += zr->end - zr->begin;
            covered = zr->end;
        }
        if (covered != n)
            HX_FAIL_GOTO(st, HX_ERR_INVALID_ARG, done, "zone ranges cover %d of %d local atoms",
                         covered, n);
    }
    for (int a = 0; a < n; a++) {
        if (set->type[a] < 0 || set->type[a] >= nb->ntypes)
            HX_FAIL_GOTO(st, HX_ERR_INVALID_ARG, done,
                         "atom %d has LJ type %d outside the force field's %d types", a + 1,
                         set->type[a], nb->ntypes);
        first[a] =
            (a > 0 && set->mol[a] == set->mol[a - 1] && zone[a] == zone[a - 1]) ? first[a - 1] : a;
        if (a - first[a] >= 32)
            HX_FAIL_GOTO(st, HX_ERR_UNSUPPORTED, done,
                         "molecule %d has more than 32 atoms (local atoms %d..%d): the GPU "
                         "exclusion masks take 32",
                         set->mol[a], first[a], a);
        qf[a] = (float)set->q[a];
    }
    for (int a = n - 1; a >= 0; a--) {
        /* whole molecule: bits for every atom of it */
        int end = a + 1;
        while (end < n && first[end] == first[a])
            end++;
        const int size = end - first[a];
        const unsigned all = size >= 32 ? 0xffffffffu : ((1u << size) - 1u);
        if (excl) {
            mask[a] = excl[a] & all;
        } else if (set->excl && set->mol_pos) {
            /* the local set's masks are over positions in the molecule; the kernels' over
             * offsets from the first local atom of the run (a halo may hold part of one) */
            unsigned m = 0;
            for (int b = first[a]; b < end; b++)
                if ((set->excl[a] >> set->mol_pos[b]) & 1u)
                    m |= 1u << (b - first[a]);
            mask[a] = m;
        } else {
            mask[a] = all;
        }
    }
    HX_TRY_GOTO(st, ensure_atoms(nb, n), done);
    if (n > 0) {
        HX_CUDA_GOTO(st, cudaMemcpy(d->azone, zone, sizeof(int) * n, cudaMemcpyHostToDevice), done);
        HX_CUDA_GOTO(st, cudaMemcpy(d->atype, set->type, sizeof(int) * n, cudaMemcpyHostToDevice),
                     done);
        HX_CUDA_GOTO(st, cudaMemcpy(d->afirst, first, sizeof(int) * n, cudaMemcpyHostToDevice),
                     done);
        HX_CUDA_GOTO(st, cudaMemcpy(d->amask, mask, sizeof(unsigned) * n, cudaMemcpyHostToDevice),
                     done);
        HX_CUDA_GOTO(st, cudaMemcpy(d->aq, qf, sizeof(float) * n, cudaMemcpyHostToDevice), done);
        HX_CUDA_GOTO(st, cudaMemcpy(d->aqd, set->q, sizeof(double) * n, cudaMemcpyHostToDevice),
                     done);
    }
    HX_TRY_GOTO(st, nb_set_geometry(nb, n, set->ndim, set->periodic, set->box, zcount, s), done);
    /* the next search's atoms (its record is otherwise fresh) */
    HX_CUDA_GOTO(st, cudaMemcpy(&d->st->n, &n, sizeof n, cudaMemcpyHostToDevice), done);
    HX_CUDA_GOTO(st, cudaStreamSynchronize(s), done);
done:
    free(zone);
    free(first);
    free(mask);
    free(qf);
    return st;
}

/* The search's last kernel where a prune of the whole list follows the list build (without the
 * rolling prune; with it the list build's last block does this): one block writes the status
 * record into the host's pinned copy h_st, which the host reads once it has waited for the
 * stream. A copy node instead, and two counter resets before it (now k_prep's), were three
 * more nodes in the search's graph, each a few us under MPS. */
__global__ __launch_bounds__(256) void k_search_tail(gnb_dev d, gnb_status *h_st)
{
    gnb_status_out(h_st, d.st);
}

/* ---- ops --------------------------------------------------------------------------------- */

/* The prune of the whole outer list at a search, enqueued behind the search's kernels before the
 * host has read the list's size: a grid of the entry capacity, whose blocks past the entry
 * count (read on the device) return at once. The host then waits once, for the search and the
 * prune together; reading the size first cost a second round trip of the host per search step.
 * With the rolling prune the list build's inner masks (cluster boxes within rlist_inner at the
 * search's positions) serve until each part's first rolling prune, at most prune_parts steps
 * later; the whole-list prune here (53 us at 45k atoms, each search) is left out then. */
hx_status gnb_prune_search(hx_gpu_nb *nb, cudaStream_t s)
{
    gnb_dev *d = &nb->d;
    for (int c = 0; !d->rolling && c < (d->nz > 1 ? 2 : 1); c++) {
        if (d->cap_ent[c] <= 0)
            continue;
        if (nb->prune_fast)
            HX_LAUNCH(k_prune<true>, (unsigned)d->cap_ent[c], 32 * GNB_PRUNE_WARPS, 0, s, *d,
                      d->ent[c], d->items[c], d->masko[c], d->mask[c], -1, 0, c, 1);
        else
            HX_LAUNCH(k_prune<false>, (unsigned)d->cap_ent[c], 32 * GNB_PRUNE_WARPS, 0, s, *d,
                      d->ent[c], d->items[c], d->masko[c], d->mask[c], -1, 0, c, 1);
        HX_CUDA_LAUNCH("k_prune");
    }
    return HX_OK;
}

hx_status gnb_search_tail(hx_gpu_nb *nb, cudaStream_t s)
{
    HX_LAUNCH(k_search_tail, 1, 256, 0, s, nb->d, nb->h_st_d);
    HX_CUDA_LAUNCH("k_search_tail");
    return HX_OK;
}

template <bool PF, int MINB>
static void launch_2h_as(const gnb_dev *d, unsigned grid, int cls, cudaStream_t s)
{
    void (*const kern)(gnb_dev, const int4 *, const uint2 *, const unsigned short *) =
        k_nb_2h<PF, MINB>;
    HX_LAUNCH(kern, grid, GNB_SCA, 0, s, *d, d->ent[cls], d->items[cls], d->mask[cls]);
}

static void launch_2h(const hx_gpu_nb *nb, unsigned grid, int cls, cudaStream_t s)
{
    const bool pf = nb->kernel == HX_GPU_NB_KERNEL_COMB_2HSN;
    const gnb_dev *d = &nb->d;
    if (nb->resident == 14)
        pf ? launch_2h_as<true, 14>(d, grid, cls, s) : launch_2h_as<false, 14>(d, grid, cls, s);
    else if (nb->resident == 12)
        pf ? launch_2h_as<true, 12>(d, grid, cls, s) : launch_2h_as<false, 12>(d, grid, cls, s);
    else
        pf ? launch_2h_as<true, 16>(d, grid, cls, s) : launch_2h_as<false, 16>(d, grid, cls, s);
}

static hx_status run_pairs(hx_gpu_nb *nb, int cls, int flags, cudaStream_t s)
{
    gnb_dev *d = &nb->d;
    if (nb->nent[cls] == 0)
        return HX_OK;
    const size_t lj_smem = 0;
    if (flags & HX_GPU_NB_ENERGY) {
        /* the reference kernel's layout with HALOX_GPU_NB_KERNEL=ref, k_nb_2h's otherwise: the
         * same pairs and arithmetic */
        if (nb->kernel == HX_GPU_NB_KERNEL_REF)
            HX_LAUNCH(k_nb_fe, (unsigned)nb->nent[cls], GNB_SCA, lj_smem, s, *d, d->ent[cls],
                      d->items[cls], d->mask[cls], nb->d_lj);
        else
            HX_LAUNCH(k_nb_2he, (unsigned)nb->nent[cls], GNB_SCA, lj_smem, s, *d, d->ent[cls],
                      d->items[cls], d->mask[cls], nb->d_lj);
        HX_CUDA_LAUNCH("energy pair kernel");
    } else {
        const unsigned grid = (unsigned)nb->nent[cls], off = (unsigned)nb->lj_comb_off;
        switch (nb->kernel) {
        case HX_GPU_NB_KERNEL_REF:
            HX_LAUNCH(k_nb_f, grid, GNB_SCA, lj_smem, s, *d, d->ent[cls], d->items[cls],
                      d->mask[cls], nb->d_lj);
            break;
        case HX_GPU_NB_KERNEL_TABLE:
            HX_LAUNCH(k_nb_fast<false>, grid, GNB_SCA, lj_smem, s, *d, d->ent[cls], d->items[cls],
                      d->mask[cls], nb->d_lj, off);
            break;
        case HX_GPU_NB_KERNEL_COMB:
            HX_LAUNCH(k_nb_fast<true>, grid, GNB_SCA, lj_smem, s, *d, d->ent[cls], d->items[cls],
                      d->mask[cls], nb->d_lj, off);
            break;
        default:
            /* comb-2hs / comb-2hsn at the resident blocks asked for */
            launch_2h(nb, grid, cls, s);
            break;
        }
        HX_CUDA_LAUNCH("k_nb_f");
    }
    return HX_OK;
}

/* The next part of list's outer list pruned at the positions of this step (k_prune). */
static hx_status launch_rolling_prune(hx_gpu_nb *nb, int list, cudaStream_t s)
{
    const int parts = nb->p.prune_parts;
    if (parts == 0 || nb->nent[list] == 0)
        return HX_OK;
    gnb_dev *d = &nb->d;
    const unsigned grid = hx_div_up(nb->nent[list], parts);
    if (nb->prune_fast)
        HX_LAUNCH(k_prune<true>, grid, 32 * GNB_PRUNE_WARPS, 0, s, *d, d->ent[list], d->items[list],
                  d->masko[list], d->mask[list], nb->nent[list], parts, list, 0);
    else
        HX_LAUNCH(k_prune<false>, grid, 32 * GNB_PRUNE_WARPS, 0, s, *d, d->ent[list],
                  d->items[list], d->masko[list], d->mask[list], nb->nent[list], parts, list, 0);
    HX_CUDA_LAUNCH("k_prune");
    return HX_OK;
}

extern "C" hx_status hx_gpu_nb_local(hx_gpu_nb *nb, const float *x, float *f, int flags,
                                     hx_stream stream)
{
    HX_CHECK(nb && nb->have_list, HX_ERR_INVALID_ARG,
             "hx_gpu_nb_local: no pair list (call hx_gpu_nb_search after hx_gpu_nb_set_atoms)");
    cudaStream_t s = stream;
    gnb_dev *d = &nb->d;
    if (flags & HX_GPU_NB_ENERGY) {
        HX_CUDA(cudaMemsetAsync(d->energy, 0, 2 * sizeof(double), s));
        HX_CUDA(cudaMemsetAsync(d->npairs, 0, sizeof(unsigned long long), s));
    }
    const int home_slots = nb->zsc[1] * GNB_SCA;
    /* skipped when the last update wrote the slots; a search since then wrote them too (from
     * the same positions, k_sc_build), so the flag outlives it */
    if (home_slots > 0 && !nb->home_x_ready) {
        HX_LAUNCH(k_gather_home, hx_div_up(home_slots, 128), 128, 0, s, *d, x, home_slots);
        HX_CUDA_LAUNCH("k_gather_home");
    }
    nb->home_x_ready = 0;
    HX_CUDA(cudaEventRecord(nb->ev_gather, s));
    /* Beside the pair kernel, on the prune's stream: the home atoms' reaction-field terms
     * (k_home_terms), and the rolling prune of the local list on this step's positions. The
     * prune there instead of after the kernel: run after it, it added its whole time to the
     * step (16.6 us of 101 at 45k atoms, 4 parts; the update it overlapped takes ~5). Both read
     * the masks of the part being pruned while the prune rewrites them: either value is a valid
     * list for this step (the old one was pruned for steps up to this one, the new one at these
     * very positions), each warp reads its half's 8 bits from one 16-bit word, so the kernel
     * sees one or the other. The caller's stream waits for both after the pair kernel: the
     * update reads f and rewrites the positions they read. */
    const int rolling = nb->p.prune_parts > 0 && nb->nent[0] > 0;
    /* HALOX_GPU_PRUNE_AT=update: the prune waits for the pair kernel and runs beside the update
     * (launched by hx_gpu_nb_update_link); a step whose prune was never launched (no update
     * linked) has it here, as by default */
    const int defer = rolling && nb->prune_at_update && !nb->prune_due;
    const int side = (rolling && !defer) || home_slots > 0;
    nb->prune_due = 0;
    if (side)
        HX_CUDA(cudaStreamWaitEvent(nb->s_prune, nb->ev_gather, 0));
    if (home_slots > 0) {
        HX_LAUNCH(k_home_terms, hx_div_up(home_slots, 128), 128, 0, nb->s_prune, *d, x, f,
                  home_slots, (flags & HX_GPU_NB_ENERGY) ? 1 : 0);
        HX_CUDA_LAUNCH("k_home_terms");
    }
    if (rolling && !defer)
        HX_TRY(launch_rolling_prune(nb, 0, nb->s_prune));
    if (side)
        HX_CUDA(cudaEventRecord(nb->ev_prune, nb->s_prune));
    HX_TRY(run_pairs(nb, 0, flags, s));
    nb->pdl_node = NULL;
#if HX_PDL_CAPTURE
    if (nb->pdl && nb->nent[0] > 0) {
        /* in a capture the stream's dependency set is now the pair kernel's node alone: kept
         * for the update, whose edge from it becomes programmatic (hx_gpu_nb_update_link) */
        cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
        const cudaGraphNode_t *deps = NULL;
        const cudaGraphEdgeData *ed = NULL;
        size_t nd = 0;
        HX_CUDA(HX_CAPTURE_INFO(s, &cs, &deps, &ed, &nd));
        if (cs == cudaStreamCaptureStatusActive && nd == 1)
            nb->pdl_node = deps[0];
    }
#endif
    if (side)
        HX_CUDA(cudaStreamWaitEvent(s, nb->ev_prune, 0));
    if (defer) {
        HX_CUDA(cudaEventRecord(nb->ev_pairs, s));
        nb->prune_due = 1;
    }
    return HX_OK;
}

extern "C" int hx_gpu_nb_fuse_update(void)
{
    const char *e = getenv("HALOX_GPU_FUSE_UPDATE");
    return !(e && e[0] == '0');
}

extern "C" hx_status hx_gpu_nb_update_link(hx_gpu_nb *nb, int commit, hx_gpu_update_link *link)
{
    HX_CHECK(nb && nb->have_list && link, HX_ERR_INVALID_ARG,
             "hx_gpu_nb_update_link: no pair list, or NULL link");
    gnb_dev *d = &nb->d;
    link->slot = d->aslot;
    link->fcl = d->fcl;
    link->xq = (float *)d->xq;
    link->swq = (const float *)d->swq;
    link->join = NULL;
    link->pdl_from = (void *)nb->pdl_node; /* NULL unless captured with HALOX_GPU_PDL=1 */
    nb->pdl_links += nb->pdl_node != NULL;
    nb->pdl_node = NULL;
    nb->home_x_ready = commit != 0;
    if (nb->prune_due) {
        /* The local list's rolling prune beside the update (HALOX_GPU_PRUNE_AT=update, issue
         * 28): after the pair kernel, which then has the GPU to itself, on the prune's stream;
         * the update's stream joins it after the update (hx_gpu_update_step waits on
         * link->join), so the next step's pair kernel sees the pruned part. The update rewrites
         * the home slots' positions while the prune reads them: an atom's position is then
         * this step's or the next one's (either coordinate of it, at worst), each within the
         * inner list's lifetime of prune_parts steps from the step it is used at, so the list
         * is as valid as one pruned at this step. */
        HX_CUDA(cudaStreamWaitEvent(nb->s_prune, nb->ev_pairs, 0));
        HX_TRY(launch_rolling_prune(nb, 0, nb->s_prune));
        HX_CUDA(cudaEventRecord(nb->ev_prune_upd, nb->s_prune));
        link->join = (void *)nb->ev_prune_upd;
        nb->prune_due = 0;
    }
    return HX_OK;
}

extern "C" hx_status hx_gpu_nb_nonlocal(hx_gpu_nb *nb, const float *x, float *f, int flags,
                                        hx_stream stream)
{
    HX_CHECK(nb && nb->have_list, HX_ERR_INVALID_ARG, "hx_gpu_nb_nonlocal: no pair list");
    if (nb->d.nz == 1)
        return HX_OK;
    cudaStream_t s = stream;
    gnb_dev *d = &nb->d;
    HX_CUDA(cudaStreamWaitEvent(s, nb->ev_gather, 0));
    const int s0 = nb->zsc[1] * GNB_SCA, s1 = nb->nsc * GNB_SCA;
    if (s1 > s0) {
        HX_LAUNCH(k_gather_halo, hx_div_up(s1 - s0, 128), 128, 0, s, *d, x, f, s0, s1);
        HX_CUDA_LAUNCH("k_gather_halo");
    }
    /* the non-local list's rolling prune beside its pair kernel, as the local one's (the
     * update, which may rewrite the home slots' positions, waits for both) */
    const int rolling = nb->p.prune_parts > 0 && nb->nent[1] > 0;
    if (rolling) {
        HX_CUDA(cudaEventRecord(nb->ev_gather_nl, s));
        HX_CUDA(cudaStreamWaitEvent(nb->s_prune_nl, nb->ev_gather_nl, 0));
        HX_TRY(launch_rolling_prune(nb, 1, nb->s_prune_nl));
        HX_CUDA(cudaEventRecord(nb->ev_prune_nl, nb->s_prune_nl));
    }
    HX_TRY(run_pairs(nb, 1, flags, s));
    if (rolling)
        HX_CUDA(cudaStreamWaitEvent(s, nb->ev_prune_nl, 0));
    if (s1 > s0) {
        HX_LAUNCH(k_reduce, hx_div_up(s1 - s0, 128), 128, 0, s, *d, f, s0, s1);
        HX_CUDA_LAUNCH("k_reduce");
    }
    HX_CUDA(cudaEventRecord(nb->ev_nonlocal, s));
    nb->nonlocal_pending = 1;
    return HX_OK;
}

extern "C" hx_status hx_gpu_nb_reduce_home(hx_gpu_nb *nb, float *f, hx_stream stream)
{
    HX_CHECK(nb && nb->have_list, HX_ERR_INVALID_ARG, "hx_gpu_nb_reduce_home: no pair list");
    cudaStream_t s = stream;
    if (nb->nonlocal_pending) {
        HX_CUDA(cudaStreamWaitEvent(s, nb->ev_nonlocal, 0));
        nb->nonlocal_pending = 0;
    }
    if (nb->prune_due) {
        /* HALOX_GPU_PRUNE_AT=update without the update linked: the prune in the stream */
        HX_TRY(launch_rolling_prune(nb, 0, s));
        nb->prune_due = 0;
    }
    const int home_slots = nb->zsc[1] * GNB_SCA;
    if (home_slots > 0) {
        HX_LAUNCH(k_reduce, hx_div_up(home_slots, 128), 128, 0, s, nb->d, f, 0, home_slots);
        HX_CUDA_LAUNCH("k_reduce");
    }
    return HX_OK;
}

extern "C" hx_status hx_gpu_nb_time_kernels(hx_gpu_nb *nb, int list, int flags, int reps,
                                            hx_stream stream, double *pair_ms, double *prune_ms)
{
    HX_CHECK(nb && nb->have_list && (list == 0 || list == 1) && reps > 0, HX_ERR_INVALID_ARG,
             "hx_gpu_nb_time_kernels: bad argument");
    cudaStream_t s = stream;
    gnb_dev *d = &nb->d;
    cudaEvent_t e0 = NULL, e1 = NULL;
    hx_status st = HX_OK;
    float ms = 0.0f;
    *pair_ms = 0.0;
    if (prune_ms)
        *prune_ms = 0.0;
    if (nb->nent[list] == 0)
        return HX_OK;
    /* the pair kernel without the prune */
    const int parts = nb->p.prune_parts;
    nb->p.prune_parts = 0;
    HX_CUDA_GOTO(st, cudaEventCreate(&e0), out);
    HX_CUDA_GOTO(st, cudaEventCreate(&e1), out);
    HX_TRY_GOTO(st, run_pairs(nb, list, flags, s), out);
    HX_CUDA_GOTO(st, cudaEventRecord(e0, s), out);
    for (int r = 0; r < reps; r++)
        HX_TRY_GOTO(st, run_pairs(nb, list, flags, s), out);
    HX_CUDA_GOTO(st, cudaEventRecord(e1, s), out);
    HX_CUDA_GOTO(st, cudaEventSynchronize(e1), out);
    HX_CUDA_GOTO(st, cudaEventElapsedTime(&ms, e0, e1), out);
    *pair_ms = ms / reps;
    nb->p.prune_parts = parts;
    if (prune_ms && parts > 0) {
        HX_CUDA_GOTO(st, cudaEventRecord(e0, s), out);
        for (int r = 0; r < reps; r++)
            HX_TRY_GOTO(st, launch_rolling_prune(nb, list, s), out);
        HX_CUDA_GOTO(st, cudaEventRecord(e1, s), out);
        HX_CUDA_GOTO(st, cudaEventSynchronize(e1), out);
        HX_CUDA_GOTO(st, cudaEventElapsedTime(&ms, e0, e1), out);
        *prune_ms = ms / reps;
    }
    HX_CUDA_GOTO(st, cudaMemsetAsync(d->fcl, 0, sizeof(float) * 3 * (size_t)nb->nsc * GNB_SCA, s),
                 out);
    HX_CUDA_GOTO(st, cudaStreamSynchronize(s), out);
out:
    nb->p.prune_parts = parts;
    if (e0)
        cudaEventDestroy(e0);
    if (e1)
        cudaEventDestroy(e1);
    return st;
}

extern "C" hx_status hx_gpu_nb_fetch_energies(hx_gpu_nb *nb, hx_stream stream)
{
    HX_CHECK(nb, HX_ERR_INVALID_ARG, "hx_gpu_nb_fetch_energies: NULL argument");
    cudaStream_t s = stream;
    HX_CUDA(
        cudaMemcpyAsync(nb->h_energy, nb->d.energy, 2 * sizeof(double), cudaMemcpyDeviceToHost, s));
    HX_CUDA(cudaMemcpyAsync(nb->h_npairs, nb->d.npairs, sizeof(unsigned long long),
                            cudaMemcpyDeviceToHost, s));
    return HX_OK;
}

extern "C" void hx_gpu_nb_read_energies(const hx_gpu_nb *nb, hx_nb_energies *e, long long *npairs)
{
    if (e) {
        e->lj = nb->h_energy[0];
        e->coulomb = nb->h_energy[1];
    }
    if (npairs)
        *npairs = (long long)*nb->h_npairs;
}

extern "C" hx_status hx_gpu_nb_set_kernel(hx_gpu_nb *nb, int kernel)
{
    HX_CHECK(nb && kernel >= 0 && kernel < HX_GPU_NB_KERNEL_N, HX_ERR_INVALID_ARG,
             "hx_gpu_nb_set_kernel: kernel %d: use 0 (auto) to %d", kernel, HX_GPU_NB_KERNEL_N - 1);
    nb->p.kernel = kernel;
    return choose_kernel(nb);
}

extern "C" void hx_gpu_nb_get_stats(const hx_gpu_nb *nb, hx_gpu_nb_stats *s)
{
    memset(s, 0, sizeof *s);
    s->natoms = nb->d.n;
    s->nzones = nb->d.nz;
    s->nsc = nb->nsc;
    s->nslots = nb->nsc * GNB_SCA;
    s->ncols = nb->ncols;
    for (int c = 0; c < 2; c++) {
        s->nent[c] = nb->nent[c];
        s->nitems[c] = nb->nitems[c];
        s->ncp_outer[c] = nb->ncp_outer[c];
        s->ncp_inner[c] = nb->ncp_inner[c];
    }
    s->nexcl = nb->nexcl;
    s->max_cj_per_entry = nb->d.max_cj;
    s->rlist = nb->p.rlist;
    s->rlist_inner = nb->p.rlist_inner;
    s->prune_parts = nb->p.prune_parts;
    s->searches = nb->searches;
    s->regrows = nb->regrows;
    s->search_captures = nb->search_captures;
    s->home_parts = nb->home_parts;
    s->pdl_links = nb->pdl_links;
    for (int k = 0; k < HX_GPU_SEARCH_STAGES; k++)
        s->search_stage_ms[k] = nb->stage_ms[k];
}

extern "C" const char *hx_gpu_search_stage_name(int stage)
{
    static const char *const names[HX_GPU_SEARCH_STAGES] = {
        "prepare", "bin", "column sort", "super-clusters", "list build", "prune", "status"};
    return stage >= 0 && stage < HX_GPU_SEARCH_STAGES ? names[stage] : "?";
}

extern "C" void hx_gpu_nb_list_host_free(hx_gpu_nb_list_host *l)
{
    if (!l)
        return;
    free(l->perm);
    free(l->xq);
    for (int c = 0; c < 2; c++) {
        free(l->ent[c]);
        free(l->items[c]);
        free(l->mask[c]);
        free(l->masko[c]);
    }
    free(l->excl);
    free(l->col_start);
    free(l->col_atoms);
    free(l->wpos);
    memset(l, 0, sizeof *l);
}

extern "C" hx_status hx_gpu_nb_list_download(const hx_gpu_nb *nb, hx_gpu_nb_list_host *l)
{
    HX_CHECK(nb && l, HX_ERR_INVALID_ARG, "hx_gpu_nb_list_download: NULL argument");
    HX_CHECK(nb->have_list, HX_ERR_INVALID_ARG, "hx_gpu_nb_list_download: no list");
    memset(l, 0, sizeof *l);
    const gnb_dev *d = &nb->d;
    hx_status st = HX_OK;
    float4 *w = NULL; /* the wrapped positions */
    l->nslots = nb->nsc * GNB_SCA;
    l->nexcl = nb->nexcl;
    l->perm = (int *)malloc(sizeof(int) * (size_t)(l->nslots + 1));
    l->xq = (float *)malloc(sizeof(float4) * (size_t)(l->nslots + 1));
    l->excl = (uint8_t *)malloc((size_t)GNB_SCA * (size_t)(l->nexcl + 1));
    if (!l->perm || !l->xq || !l->excl)
        HX_FAIL_GOTO(st, HX_ERR_NOMEM, fail, "out of memory");
    if (l->nslots > 0) {
        HX_CUDA_GOTO(
            st,
            cudaMemcpy(l->perm, d->perm, sizeof(int) * (size_t)l->nslots, cudaMemcpyDeviceToHost),
            fail);
        HX_CUDA_GOTO(
            st,
            cudaMemcpy(l->xq, d->xq, sizeof(float4) * (size_t)l->nslots, cudaMemcpyDeviceToHost),
            fail);
        HX_CUDA_GOTO(st,
                     cudaMemcpy(l->excl, d->excl, (size_t)GNB_SCA * (size_t)(l->nexcl + 1),
                                cudaMemcpyDeviceToHost),
                     fail);
    }
    for (int c = 0; c < 2; c++) {
        l->nent[c] = nb->nent[c];
        l->nitems[c] = nb->nitems[c];
        l->ent[c] = (int *)malloc(sizeof(int4) * (size_t)(l->nent[c] + 1));
        l->items[c] = (uint32_t *)malloc(sizeof(uint2) * (size_t)(l->nitems[c] + 1));
        l->mask[c] = (uint16_t *)malloc(sizeof(uint16_t) * (size_t)(l->nitems[c] + 1));
        l->masko[c] = (uint16_t *)malloc(sizeof(uint16_t) * (size_t)(l->nitems[c] + 1));
        if (!l->ent[c] || !l->items[c] || !l->mask[c] || !l->masko[c])
            HX_FAIL_GOTO(st, HX_ERR_NOMEM, fail, "out of memory");
        if (l->nent[c] > 0)
            HX_CUDA_GOTO(st,
                         cudaMemcpy(l->ent[c], d->ent[c], sizeof(int4) * (size_t)l->nent[c],
                                    cudaMemcpyDeviceToHost),
                         fail);
        if (l->nitems[c] > 0) {
            HX_CUDA_GOTO(st,
                         cudaMemcpy(l->items[c], d->items[c], sizeof(uint2) * (size_t)l->nitems[c],
                                    cudaMemcpyDeviceToHost),
                         fail);
            HX_CUDA_GOTO(st,
                         cudaMemcpy(l->mask[c], d->mask[c], sizeof(uint16_t) * (size_t)l->nitems[c],
                                    cudaMemcpyDeviceToHost),
                         fail);
            HX_CUDA_GOTO(st,
                         cudaMemcpy(l->masko[c], d->masko[c],
                                    sizeof(uint16_t) * (size_t)l->nitems[c],
                                    cudaMemcpyDeviceToHost),
                         fail);
        }
    }
    {
        /* the columns (the search's order before the super-clusters), and the wrapped
         * positions it sorted them and the super-clusters by */
        const int n = d->n;
        l->ncols = nb->ncols;
        l->col_start = (int *)malloc(sizeof(int) * (size_t)(l->ncols + 1));
        l->col_atoms = (int *)malloc(sizeof(int) * (size_t)(n + 1));
        l->wpos = (float *)malloc(3 * sizeof(float) * (size_t)(n + 1));
        w = (float4 *)malloc(sizeof(float4) * (size_t)(n + 1));
        if (!l->col_start || !l->col_atoms || !l->wpos || !w)
            HX_FAIL_GOTO(st, HX_ERR_NOMEM, fail, "out of memory");
        HX_CUDA_GOTO(st,
                     cudaMemcpy(l->col_start, d->col_start, sizeof(int) * (size_t)(l->ncols + 1),
                                cudaMemcpyDeviceToHost),
                     fail);
        if (n > 0) {
            HX_CUDA_GOTO(st,
                         cudaMemcpy(l->col_atoms, d->colatoms, sizeof(int) * (size_t)n,
                                    cudaMemcpyDeviceToHost),
                         fail);
            HX_CUDA_GOTO(st,
                         cudaMemcpy(w, d->wpos, sizeof(float4) * (size_t)n, cudaMemcpyDeviceToHost),
                         fail);
        }
        for (int a = 0; a < n; a++) {
            l->wpos[3 * a] = w[a].x;
            l->wpos[3 * a + 1] = w[a].y;
            l->wpos[3 * a + 2] = w[a].z;
        }
        free(w);
        w = NULL;
    }
    for (int k = 0; k < GNB_NSHIFT; k++) {
        l->shift[k][0] = d->periodic[0] ? (double)((k % 3) - 1) * d->boxd[0] : 0.0;
        l->shift[k][1] = d->periodic[1] ? (double)((k / 3) % 3 - 1) * d->boxd[1] : 0.0;
        l->shift[k][2] = d->periodic[2] ? (double)(k / 9 - 1) * d->boxd[2] : 0.0;
    }
    return HX_OK;
fail:
    free(w);
    hx_gpu_nb_list_host_free(l);
    return st;
}
