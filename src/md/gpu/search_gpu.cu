/* Pair search on the GPU (hx_gpu_nb_search): binning, clusters and bounding boxes, cluster-pair
 * list construction. Layouts are described in nb_gpu_impl.cuh; the reasoning behind them in
 * docs/design/gpu-engine.md.
 *
 * Stages, on the caller's stream, in five kernels (the grid and the scan are run by the last
 * block of the kernel before them, the work items by the super-clusters' blocks):
 *  1. prep: wrap periodic coordinates into the box (the wrap offset is kept per atom and
 *     added to the positions until the next search), extents of open (decomposed) dimensions
 *     per zone, and checks (finite coordinates, excluded pairs close enough).
 *  2. grid: per zone a grid of x-y columns whose cross-section holds about one super-cluster
 *     (64 atoms) per column edge of height.
 *  3-5. bin and scan: each atom into its column's bucket (counts by atomics), then the
 *     columns' starts (the scan of the counts).
 *  6. column sort: atoms of each column sorted by z (ranked within z-bins in shared memory).
 *  7. super-clusters: every 64 consecutive atoms of a column form a super-cluster, split
 *     2 x 2 x 2 (by x, then y, then z) into clusters of 8; slots, bounding boxes, and the list
 *     build's work items (an i super-cluster, a periodic image, a j zone).
 *  8. list build: resident blocks take the work items in turn; an item's block finds the j
 *     super-clusters within rlist of its box, then the j clusters within rlist of each of its
 *     8 clusters' boxes (the 8-bit masks), and the per-thread exclusion masks where padding,
 *     the half-list diagonal or a shared molecule require one.
 *
 * The host then reads one status record (the only synchronisation): list sizes, overflow flags
 * and errors, written into pinned host memory by the search's last block, which leaves the
 * device's record fresh for the next search (no upload before it; the atom count is written
 * where the atoms are set, so that a decomposed run's search graph replays although its count
 * changes at every search). On overflow the buffers grow and the search runs again. The outer
 * list is then pruned by atom distances (nb_gpu.cu) to the inner list the force kernels use.
 *
 * Every result is deterministic except the order of list entries and items between search
 * blocks (atomic reservations), which changes only the order of floating-point sums. */
#include "md/gpu/nb_gpu_impl.cuh"
#include "gpu/trace.h"
#include "halox/log.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- 1. prep ----------------------------------------------------------------------------- */

static __device__ void zone_grids(gnb_dev &d);

/* Per atom: the wrapped position, the non-finite and far-exclusion checks, the open zones'
 * extents; the column counts cleared for the binning. The last block then lays out the zones'
 * grids from the extents (zone_grids): one kernel, not two (hx_last_block). */
__global__ __launch_bounds__(256) void k_prep(const float *__restrict__ x, gnb_dev d)
{
    __shared__ int s_last;
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    /* the rest of a split search keeps the home zone's atoms, and its columns with their counts
     * (zone 0's columns come first) */
    const bool rest = d.part == GNB_PART_REST;
    const int a = (rest ? d.grid[0].natoms : 0) + t;
    const int c0 = rest ? d.grid[0].nc[0] * d.grid[0].nc[1] : 0;
    const int n = d.st->n;
    for (int c = c0 + t; c <= d.cap_cols; c += gridDim.x * blockDim.x)
        d.col_count[c] = 0;
    if (t < 2) {
        /* the rolling prune starts again from part 0 with the new list (kernels, not two memset
         * nodes in the search's graph) */
        d.prune_ctr[t] = 0u;
        d.prune_done[t] = 0u;
    }
    const bool valid = a < n;
    const int z = valid ? d.azone[a] : 0;
    float w[3] = {0.0f, 0.0f, 0.0f};
    if (valid) {
        float off[3] = {0.0f, 0.0f, 0.0f};
#pragma unroll
        for (int k = 0; k < 3; k++) {
            float v = x[3 * a + k];
            if (!isfinite(v)) {
                atomicMin(&d.st->bad_atom, a);
                v = 0.0f;
            }
            float p = v;
            if (d.periodic[k]) {
                /* off is a whole number of box edges, so positions + off stay the same
                 * physics; the two corrections catch rounding at the box edges */
                const float L = d.box[k];
                off[k] = -floorf(v / L) * L;
                p = v + off[k];
                if (p >= L) {
                    off[k] -= L;
                    p = v + off[k];
                }
                if (p < 0.0f) {
                    off[k] += L;
                    p = v + off[k];
                }
                p = fminf(fmaxf(p, 0.0f), L * 0.99999994f);
            }
            w[k] = p;
        }
        d.wpos[a] = make_float4(w[0], w[1], w[2], 0.0f);
        d.awrap[a] = make_float4(off[0], off[1], off[2], 0.0f);
        /* excluded partners later in the molecule must be within max_excl_dist: the list build
         * looks for exclusions only between clusters that close */
        unsigned m = d.amask[a];
        const int f0 = d.afirst[a];
        while (m) {
            const int b = f0 + __ffs((int)m) - 1;
            m &= m - 1u;
            if (b <= a || b >= n)
                continue;
            float r2 = 0.0f;
#pragma unroll
            for (int k = 0; k < 3; k++) {
                float dx = x[3 * b + k] - x[3 * a + k];
                if (d.periodic[k])
                    dx -= d.box[k] * rintf(dx / d.box[k]);
                r2 += dx * dx;
            }
            if (!(r2 <= d.excl2))
                atomicMin(&d.st->bad_excl, a);
        }
    }
    if (d.ndim > 0) {
        /* extents of the open dimensions per zone; zones are long atom ranges, so a warp
         * nearly always has one zone and reduces before its atomics */
        const int lane = threadIdx.x & 31;
        const int z0 = __shfl_sync(HX_FULL_MASK, z, 0);
        const bool same = __all_sync(HX_FULL_MASK, !valid || z == z0);
#pragma unroll
        for (int k = 0; k < 3; k++) {
            if (d.periodic[k])
                continue;
            float lo = valid ? w[k] : GNB_BIG, hi = valid ? w[k] : -GNB_BIG;
            if (same) {
                lo = hx_warp_min(lo);
                hi = hx_warp_max(hi);
                if (lane == 0 && lo <= hi) {
                    atomicMin(&d.st->zext[z0][k], hx_float_key(lo));
                    atomicMax(&d.st->zext[z0][3 + k], hx_float_key(hi));
                }
            } else if (valid) {
                atomicMin(&d.st->zext[z][k], hx_float_key(lo));
                atomicMax(&d.st->zext[z][3 + k], hx_float_key(hi));
            }
        }
    }
    if (hx_last_block(&d.st->tick, &s_last))
        zone_grids(d);
}

/* ---- 2. grid ----------------------------------------------------------------------------- */

/* Each zone's column grid from its extents (every block's, k_prep), by k_prep's last block:
 * thread z for zone z, thread 0 the columns' numbering. */
static __device__ void zone_grids(gnb_dev &d)
{
    __shared__ gnb_zone_grid s_g[GNB_MAXZ];
    const int z = threadIdx.x;
    if (z < d.nz) {
        gnb_zone_grid g = d.grid[z];
        float len[3];
        float lo[3];
        for (int k = 0; k < 3; k++) {
            if (d.periodic[k]) {
                lo[k] = 0.0f;
                len[k] = d.box[k];
            } else {
                const float elo = hx_key_float(hx_ldv(&d.st->zext[z][k]));
                const float ehi = hx_key_float(hx_ldv(&d.st->zext[z][3 + k]));
                if (g.natoms == 0 || !(elo <= ehi)) {
                    lo[k] = 0.0f;
                    len[k] = 1.0f;
                } else {
                    lo[k] = elo;
                    len[k] = (ehi - elo) * (1.0f + 1e-5f) + 1e-4f;
                }
            }
        }
        if (g.natoms == 0) {
            g.nc[0] = g.nc[1] = 0;
            g.cw[0] = g.cw[1] = 1.0f;
        } else {
            /* a thin zone (halo slab) would get a huge edge from its volume: count at least
             * 0.5 nm of thickness so that columns stay small */
            float vol = 1.0f;
            for (int k = 0; k < 3; k++)
                vol *= fmaxf(len[k], 0.5f);
            const float edge = cbrtf((float)GNB_SCA * vol / (float)g.natoms);
            for (int k = 0; k < 2; k++) {
                int c = (int)(len[k] / edge);
                c = c < 1 ? 1 : (c > 1024 ? 1024 : c);
                g.nc[k] = c;
                g.cw[k] = len[k] / (float)c;
            }
        }
        g.lo[0] = lo[0];
        g.lo[1] = lo[1];
        s_g[z] = g;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        int c = 0;
        for (int k = 0; k < d.nz; k++) {
            s_g[k].col0 = c;
            c += s_g[k].nc[0] * s_g[k].nc[1];
            d.grid[k] = s_g[k];
        }
        d.st->ncols = c;
        if (c > d.cap_cols)
            atomicOr(&d.st->overflow, GNB_OVF_COLS);
    }
}

/* ---- 3-5. bin and scan ------------------------------------------------------------------- */

/* Exclusive scan of v over the block (a multiple of 32 threads, at most 1024); *total receives
 * the block's sum. */
static __device__ int block_excl_scan(int v, int *s_warp, int *total)
{
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    int inc = v;
    for (int o = 1; o < 32; o <<= 1) {
        const int u = __shfl_up_sync(HX_FULL_MASK, inc, o);
        if (lane >= o)
            inc += u;
    }
    __syncthreads();
    if (lane == 31)
        s_warp[w] = inc;
    __syncthreads();
    if (w == 0) {
        int s = lane < (int)(blockDim.x >> 5) ? s_warp[lane] : 0;
        for (int o = 1; o < 32; o <<= 1) {
            const int u = __shfl_up_sync(HX_FULL_MASK, s, o);
            if (lane >= o)
                s += u;
        }
        s_warp[lane] = s; /* inclusive prefix of the warp sums */
    }
    __syncthreads();
    *total = s_warp[(blockDim.x >> 5) - 1];
    return inc - v + (w > 0 ? s_warp[w - 1] : 0);
}

/* Per atom its column and place in it (the columns' counts by atomics), the atom written into
 * its column's bucket (colfill: sort_cap atoms per column, so that no scan of the columns is
 * needed before it); then the last block scans the columns (column_starts): one kernel, where
 * there were three (the scan's, and a fill of the atoms at the scanned starts). */
static __device__ void column_starts(gnb_dev &d);

__global__ __launch_bounds__(256) void k_bin(gnb_dev d)
{
    __shared__ int s_last;
    if (d.st->overflow & GNB_OVF_EARLY)
        return; /* every block: k_prep's last block set it */
    /* the rest of a split search: zone 0's atoms are in their columns already */
    const int a =
        (d.part == GNB_PART_REST ? d.grid[0].natoms : 0) + blockIdx.x * blockDim.x + threadIdx.x;
    /* every lane of the warp takes part in the column match below: past the atoms as -1 */
    int col = -1;
    if (a < d.st->n) {
        const gnb_zone_grid g = d.grid[d.azone[a]];
        const float4 w = d.wpos[a];
        int cx = (int)floorf((w.x - g.lo[0]) / g.cw[0]);
        int cy = (int)floorf((w.y - g.lo[1]) / g.cw[1]);
        cx = hx_imin(hx_imax(cx, 0), g.nc[0] - 1);
        cy = hx_imin(hx_imax(cy, 0), g.nc[1] - 1);
        col = g.col0 + cy * g.nc[0] + cx;
    }
    /* one atomic per column a warp touches, not per atom: atoms of a molecule and of
     * neighbouring molecules share columns (45k water: 64 columns of ~700 atoms, and
     * same-address atomics serialise in L2). The order within a column is the sort's. */
    const unsigned peers = __match_any_sync(HX_FULL_MASK, col);
    const int leader = __ffs(peers) - 1, lane = threadIdx.x & 31;
    int base = 0;
    if (lane == leader && col >= 0)
        base = atomicAdd(&d.col_count[col], __popc(peers));
    base = __shfl_sync(HX_FULL_MASK, base, leader);
    /* into the column's bucket (sort_cap atoms, k_col_sort's limit: a longer column overflows
     * there, and the host grows both) */
    const int pos = base + __popc(peers & ((1u << lane) - 1u));
    if (col >= 0 && pos < d.sort_cap)
        d.colfill[(size_t)col * d.sort_cap + pos] = a;
    if (hx_last_block(&d.st->tick, &s_last))
        column_starts(d);
}

/* Each column's first atom and super-cluster (a scan over the columns' counts, which every block
 * of k_bin added to), the largest column, the zones' first super-clusters: by k_bin's last
 * block. */
static __device__ void column_starts(gnb_dev &d)
{
    __shared__ int s_warp[32];
    __shared__ int s_max;
    const int ncols = d.st->ncols;
    if (threadIdx.x == 0)
        s_max = 0;
    __syncthreads();
    int carry_a = 0, carry_s = 0, mymax = 0;
    for (int base = 0; base < ncols; base += blockDim.x) {
        const int c = base + threadIdx.x;
        const int cnt = c < ncols ? hx_ldv(&d.col_count[c]) : 0;
        mymax = cnt > mymax ? cnt : mymax;
        int tot_a, tot_s;
        const int ea = block_excl_scan(cnt, s_warp, &tot_a);
        const int es = block_excl_scan((cnt + GNB_SCA - 1) / GNB_SCA, s_warp, &tot_s);
        if (c < ncols) {
            d.col_start[c] = carry_a + ea;
            d.col_sc[c] = carry_s + es;
        }
        carry_a += tot_a;
        carry_s += tot_s;
    }
    atomicMax(&s_max, mymax);
    if (threadIdx.x == 0) {
        d.col_start[ncols] = carry_a;
        d.col_sc[ncols] = carry_s;
        d.st->nsc = carry_s;
        if (carry_s > d.cap_sc)
            atomicOr(&d.st->overflow, GNB_OVF_SC);
    }
    __syncthreads();
    if (threadIdx.x == 0)
        d.st->max_col_atoms = s_max;
    if ((int)threadIdx.x < d.nz)
        d.st->zsc[threadIdx.x] = d.col_sc[d.grid[threadIdx.x].col0];
    if ((int)threadIdx.x == d.nz)
        d.st->zsc[d.nz] = carry_s;
}

/* ---- 6. column sort ------------------------------------------------------------------------ */

/* Bitonic sort of n2 (a power of two) (key, val) pairs in shared memory, ascending by key then
 * val, by all threads of the block. */
static __device__ void bitonic_kv(float *key, int *val, int n2)
{
    for (int k = 2; k <= n2; k <<= 1) {
        for (int j = k >> 1; j > 0; j >>= 1) {
            for (int i = threadIdx.x; i < n2; i += blockDim.x) {
                const int l = i ^ j;
                if (l > i) {
                    const bool up = (i & k) == 0;
                    const bool gt = key[i] > key[l] || (key[i] == key[l] && val[i] > val[l]);
                    if (gt == up) {
                        const float tk = key[i];
                        key[i] = key[l];
                        key[l] = tk;
                        const int tv = val[i];
                        val[i] = val[l];
                        val[l] = tv;
                    }
                }
            }
            __syncthreads();
        }
    }
}

/* Ascending order of m distinct 64-bit keys in shared memory by rank: each element counts the
 * keys below it and its value goes to that place in out. A column of 700 atoms (45k water) is
 * 40 us of dependent bitonic stages (55 stages of load, compare, swap, barrier on one block);
 * ranking is O(m^2) independent comparisons, two keys per shared load, and the column's blocks
 * (col_sort_split) each rank a share of it (HALOX_GPU_COL_SORT=rank; bin_rank_sort below is the
 * default). Padding up to an even count is all ones: never
 * below a real key. */
static __device__ void rank_sort(const unsigned long long *key, int m, int first, int stride,
                                 int *out)
{
    const int m2 = (m + 1) >> 1;
    const ulonglong2 *k2 = (const ulonglong2 *)key;
    for (int i = first; i < m; i += stride) {
        const unsigned long long ki = key[i];
        int r = 0;
        for (int j = 0; j < m2; j++) {
            const ulonglong2 kj = k2[j];
            r += (kj.x < ki) + (kj.y < ki);
        }
        out[r] = (int)(unsigned)ki; /* the low half is the atom */
    }
}

/* A float's bits as an unsigned integer of the same order (negative values reversed). */
static __device__ __forceinline__ unsigned float_order(float f)
{
    const unsigned u = __float_as_uint(f);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
/* float_order's inverse. */
static __device__ __forceinline__ unsigned float_unorder(unsigned k)
{
    return (k & 0x80000000u) ? (k & 0x7fffffffu) : ~k;
}

/* Most z-bins of a column (bin_rank_sort): ~8 atoms per bin up to GNB_RANK_SORT_MAX atoms. */
#define GNB_SORT_BINS 256

/* The same order (m distinct keys in shared memory, ascending into out) ranked within z-bins:
 * a column of ~700 atoms is a full z-stack, and ranking it against all of itself costs
 * O(m^2) comparisons. The bins split the column's z range [zlo, zhi] in nbin equal parts; a
 * key's bin, (z - zlo) * scale truncated and clamped, never decreases as the key grows (IEEE
 * subtraction and multiplication by a positive number are monotone, and keys of equal z have
 * equal bins), so a key's place is the atoms of the bins below it plus its rank among its own
 * bin's ~8 (the same places as rank_sort's). Every thread of the block takes part (barriers);
 * cnt: 2 (GNB_SORT_BINS + 1) ints (the bins' starts, then their fill), binned: m keys, both
 * shared. */
static __device__ __forceinline__ int key_zbin(unsigned long long key, float zlo, float scale,
                                               int nbin)
{
    const float z = __uint_as_float(float_unorder((unsigned)(key >> 32)));
    return min(nbin - 1, max(0, (int)((z - zlo) * scale)));
}
static __device__ void bin_rank_sort(const unsigned long long *key, int m, float zlo, float zhi,
                                     int *cnt, unsigned long long *binned, int *out)
{
    const int nbin = zhi > zlo ? min(GNB_SORT_BINS, max(1, m >> 3)) : 1;
    const float scale = nbin > 1 ? (float)nbin / (zhi - zlo) : 0.0f;
    for (int b = threadIdx.x; b <= nbin; b += blockDim.x)
        cnt[b] = 0;
    __syncthreads();
    for (int i = threadIdx.x; i < m; i += blockDim.x)
        atomicAdd(&cnt[key_zbin(key[i], zlo, scale, nbin)], 1);
    __syncthreads();
    /* the bins' starts: nbin <= 256 counts, one warp, up to 8 per lane (a lane's run, then the
     * scan of the runs); cnt[b] becomes the start of bin b */
    if (threadIdx.x < 32) {
        const int per = (nbin + 31) >> 5, b0 = (int)threadIdx.x * per;
        int run = 0;
        for (int b = b0; b < b0 + per && b < nbin; b++)
            run += cnt[b];
        int inc = run;
        for (int o = 1; o < 32; o <<= 1) {
            const int t = __shfl_up_sync(0xffffffffu, inc, o);
            if ((int)threadIdx.x >= o)
                inc += t;
        }
        int at = inc - run;
        for (int b = b0; b < b0 + per && b < nbin; b++) {
            const int c = cnt[b];
            cnt[b] = at;
            at += c;
        }
    }
    __syncthreads();
    /* scatter by bin (any order within a bin), then each key ranked among its bin */
    int *fill = cnt + GNB_SORT_BINS + 1;
    for (int b = threadIdx.x; b < nbin; b += blockDim.x)
        fill[b] = cnt[b];
    __syncthreads();
    for (int i = threadIdx.x; i < m; i += blockDim.x)
        binned[atomicAdd(&fill[key_zbin(key[i], zlo, scale, nbin)], 1)] = key[i];
    __syncthreads();
    for (int i = threadIdx.x; i < m; i += blockDim.x) {
        const unsigned long long ki = key[i];
        const int b = key_zbin(ki, zlo, scale, nbin);
        const int b0 = cnt[b], b1 = b + 1 < nbin ? cnt[b + 1] : m;
        int r = b0;
        for (int j = b0; j < b1; j++)
            r += binned[j] < ki;
        out[r] = (int)(unsigned)ki; /* the low half is the atom */
    }
}

/* Up to this many atoms a column is sorted by rank, above by the bitonic network (one block). */
#define GNB_RANK_SORT_MAX 2048

/* Blocks per column of k_col_sort: the whole-column ranking's O(m^2) comparisons shared by 4,
 * the binned ranking's few by one. */
static __host__ __device__ __forceinline__ int col_sort_split(const gnb_dev &d)
{
    return d.sort_bins ? 1 : 4;
}

static __device__ int pow2_at_least(int m)
{
    int n2 = 1;
    while (n2 < m)
        n2 <<= 1;
    return n2;
}

/* Sort of each column's atoms by z (ties by atom), and the column's x-y bounding box.
 * col_sort_split blocks per column (the ranking's share of each; 1 with the binned ranking, whose
 * work is small); k_bin wrote the atoms to the column's bucket in colfill, so the blocks read
 * there while they write colatoms. Shared memory: the keys, and with the binned ranking as many
 * again (sort_smem). */
__global__ __launch_bounds__(256) void k_col_sort(gnb_dev d)
{
    HX_DYN_SMEM(smem);
    __shared__ float s_bb[6][8];
    __shared__ int s_cnt[2 * (GNB_SORT_BINS + 1)];
    if (d.st->overflow & GNB_OVF_EARLY)
        return;
    const int split = col_sort_split(d);
    const int c = blockIdx.x / split, part = blockIdx.x % split;
    if (c >= d.st->ncols)
        return;
    if (d.part == GNB_PART_REST && c < d.grid[1].col0)
        return; /* zone 0's column: sorted by the home part */
    const int start = d.col_start[c];
    const int m = d.col_start[c + 1] - start;
    if (m > d.sort_cap) {
        if (threadIdx.x == 0 && part == 0)
            atomicOr(&d.st->overflow, GNB_OVF_SORT);
        return;
    }
    const bool rank = m <= GNB_RANK_SORT_MAX;
    if (!rank && part != 0)
        return;
    /* rank: (z order, atom) as one 64-bit key; bitonic: keys and values apart */
    unsigned long long *key64 = (unsigned long long *)smem;
    float *key = (float *)smem;
    int *val = (int *)(key + d.sort_cap);
    const int n2 = pow2_at_least(m), npad = rank ? m + (m & 1) : n2;
    float xlo = GNB_BIG, xhi = -GNB_BIG, ylo = GNB_BIG, yhi = -GNB_BIG, zlo = GNB_BIG,
          zhi = -GNB_BIG;
    for (int i = threadIdx.x; i < npad; i += blockDim.x) {
        if (i < m) {
            const int a = d.colfill[(size_t)c * d.sort_cap + i];
            const float4 w = d.wpos[a];
            if (rank) {
                key64[i] = (unsigned long long)float_order(w.z) << 32 | (unsigned)a;
            } else {
                key[i] = w.z;
                val[i] = a;
            }
            xlo = fminf(xlo, w.x);
            xhi = fmaxf(xhi, w.x);
            ylo = fminf(ylo, w.y);
            yhi = fmaxf(yhi, w.y);
            zlo = fminf(zlo, w.z);
            zhi = fmaxf(zhi, w.z);
        } else if (rank) {
            key64[i] = ~0ull;
        } else {
            key[i] = __int_as_float(0x7f800000); /* +inf: padding sorts last */
            val[i] = INT_MAX;
        }
    }
    xlo = hx_warp_min(xlo);
    xhi = hx_warp_max(xhi);
    ylo = hx_warp_min(ylo);
    yhi = hx_warp_max(yhi);
    zlo = hx_warp_min(zlo);
    zhi = hx_warp_max(zhi);
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    if (lane == 0) {
        s_bb[0][w] = xlo;
        s_bb[1][w] = xhi;
        s_bb[2][w] = ylo;
        s_bb[3][w] = yhi;
        s_bb[4][w] = zlo;
        s_bb[5][w] = zhi;
    }
    __syncthreads();
    if (rank && d.sort_bins) {
        for (int k = 0; k < nw; k++) {
            zlo = fminf(zlo, s_bb[4][k]);
            zhi = fmaxf(zhi, s_bb[5][k]);
        }
        bin_rank_sort(key64, m, zlo, zhi, s_cnt, key64 + d.sort_cap, d.colatoms + start);
    } else if (rank) {
        rank_sort(key64, m, part * blockDim.x + threadIdx.x, split * blockDim.x,
                  d.colatoms + start);
    } else {
        bitonic_kv(key, val, n2);
        for (int i = threadIdx.x; i < m; i += blockDim.x)
            d.colatoms[start + i] = val[i];
    }
    if (threadIdx.x == 0 && part == 0) {
        float4 bb = make_float4(GNB_BIG, -GNB_BIG, GNB_BIG, -GNB_BIG);
        for (int k = 0; k < nw; k++) {
            bb.x = fminf(bb.x, s_bb[0][k]);
            bb.y = fmaxf(bb.y, s_bb[1][k]);
            bb.z = fminf(bb.z, s_bb[2][k]);
            bb.w = fmaxf(bb.w, s_bb[3][k]);
        }
        d.col_bb[c] = bb;
    }
}

/* ---- 7. super-clusters ---------------------------------------------------------------------- */

/* Order of the 64 elements of a super-cluster by (segment, coordinate, atom), by rank: idx[r]
 * is the element of rank r. Each thread's element gets one 64-bit key (segment 3 bits, the
 * coordinate's order 32, the local atom 29; padding, seg 15, as segment 7 after every real one,
 * by element) and counts the keys below it: one pair of barriers where a bitonic network of 64
 * had 21, each behind dependent shared loads (the stage's time at 45k atoms was that chain).
 * Real atoms' keys are distinct (their atoms are), so the order is the one any sort by that key
 * gives. */
static __device__ void rank64(int *idx, unsigned long long *key, const int *seg, const float4 *w,
                              int comp, const int *atom)
{
    const int e = threadIdx.x;
    const float4 we = w[e];
    const float c = comp == 0 ? we.x : (comp == 1 ? we.y : we.z);
    const int sg = seg[e];
    const unsigned long long k = sg >= 15 ? (7ull << 61) | (unsigned long long)e
                                          : ((unsigned long long)sg << 61) |
                                                ((unsigned long long)float_order(c) << 29) |
                                                (unsigned long long)(unsigned)atom[e];
    key[e] = k;
    __syncthreads();
    int r = 0;
#pragma unroll 16
    for (int u = 0; u < GNB_SCA; u++)
        r += key[u] < k;
    idx[r] = e;
    __syncthreads();
}

static __device__ void lb_work_items(const gnb_dev &d, int sci, float4 slo, float4 shi);

/* A block per super-cluster: its atoms split into 2 x 2 x 2 clusters, their slots' data and
 * boxes; with combg (the types' geometric-rule factors; NULL: none) each slot's factors for
 * k_nb_2h; then, for an i super-cluster, its list-build work items (lb_work_items). */
__global__ __launch_bounds__(64) void k_sc_build(gnb_dev d, const float2 *__restrict__ combg)
{
    __shared__ int s_idx[GNB_SCA], s_seg[GNB_SCA], s_atom[GNB_SCA], s_perm[GNB_SCA];
    __shared__ unsigned long long s_key[GNB_SCA];
    __shared__ float4 s_w[GNB_SCA];
    __shared__ float4 s_red[2][2];
    if (d.st->overflow & GNB_OVF_EARLY)
        return;
    const int sc = blockIdx.x;
    if (sc >= d.st->nsc)
        return;
    const int t = threadIdx.x;
    if (d.part == GNB_PART_REST && sc < d.st->zsc[1]) {
        /* built by the home part: only its work items against the other zones */
        if (t == 0)
            lb_work_items(d, sc, d.sc_bb[2 * sc], d.sc_bb[2 * sc + 1]);
        return;
    }
    /* the column holding this super-cluster: the last one starting at or before it */
    int lo = 0, hi = d.st->ncols - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) >> 1;
        if (d.col_sc[mid] <= sc)
            lo = mid;
        else
            hi = mid - 1;
    }
    const int c = lo;
    const int first = d.col_start[c] + GNB_SCA * (sc - d.col_sc[c]);
    const int m = hx_imin(GNB_SCA, d.col_start[c + 1] - first);
    const int a = t < m ? d.colatoms[first + t] : -1;
    s_atom[t] = a >= 0 ? a : INT_MAX;
    s_w[t] = a >= 0 ? d.wpos[a] : make_float4(GNB_BIG, GNB_BIG, GNB_BIG, 0.0f);
    s_idx[t] = t;
    s_seg[t] = t < m ? 0 : 15;
    s_perm[t] = -1;
    __syncthreads();
    /* Split into 2 x 2 x 2 clusters: first part of every split gets a multiple of 8 atoms
     * (half the clusters, rounded up) unless the rest is empty, so only the last quadrant can
     * hold a partial cluster and the clusters used are ceil(m / 8). */
    const int nc = (m + GNB_CL - 1) / GNB_CL;
    const int nx0 = hx_imin(GNB_CL * ((nc + 1) / 2), m);
    const int nh[2] = {nx0, m - nx0};
    int ny0[2];
    for (int h = 0; h < 2; h++) {
        const int nch = (nh[h] + GNB_CL - 1) / GNB_CL;
        ny0[h] = hx_imin(GNB_CL * ((nch + 1) / 2), nh[h]);
    }
    rank64(s_idx, s_key, s_seg, s_w, 0, s_atom);
    if (t < m)
        s_seg[s_idx[t]] = t < nx0 ? 0 : 1;
    __syncthreads();
    rank64(s_idx, s_key, s_seg, s_w, 1, s_atom);
    if (t < m) {
        const int h = t < nx0 ? 0 : 1;
        const int o = h ? t - nx0 : t;
        s_seg[s_idx[t]] = 2 * h + (o < ny0[h] ? 0 : 1);
    }
    __syncthreads();
    rank64(s_idx, s_key, s_seg, s_w, 2, s_atom);
    if (t < m) {
        const int nq[4] = {ny0[0], nh[0] - ny0[0], ny0[1], nh[1] - ny0[1]};
        const int qs[4] = {0, ny0[0], nx0, nx0 + ny0[1]};
        const int e = s_idx[t];
        const int q = s_seg[e];
        int cb = 0;
        for (int k = 0; k < q; k++)
            cb += (nq[k] + GNB_CL - 1) / GNB_CL;
        const int o = t - qs[q];
        s_perm[(cb + o / GNB_CL) * GNB_CL + (o % GNB_CL)] = e;
    }
    __syncthreads();
    /* thread t now owns slot t */
    const int e = s_perm[t];
    const int at = e >= 0 ? s_atom[e] : -1;
    const size_t s = (size_t)sc * GNB_SCA + t;
    d.perm[s] = at;
    /* the slot's type (padding: type 0, as every kernel reads it) and, with combg, its factors */
    const int ty = at >= 0 ? d.atype[at] : 0;
    d.stype[s] = ty;
    if (combg)
        d.scomb[s] = ty >= 0 && ty < d.ntypes ? combg[ty] : make_float2(0.0f, 0.0f);
    float4 blo, bhi;
    if (at >= 0) {
        d.aslot[at] = (int)s;
        const float4 w = s_w[e];
        const float q = d.aq[at];
        const float4 wr = d.awrap[at];
        d.xq[s] = make_float4(w.x, w.y, w.z, q);
        d.swq[s] = make_float4(wr.x, wr.y, wr.z, q);
        d.sqd[s] = d.aqd[at];
        d.sfirst[s] = d.afirst[at];
        d.smask[s] = d.amask[at];
        blo = make_float4(w.x, w.y, w.z, 0.0f);
        bhi = blo;
    } else {
        d.xq[s] = make_float4(GNB_FAR, GNB_FAR, GNB_FAR, 0.0f);
        d.swq[s] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        d.sqd[s] = 0.0;
        d.sfirst[s] = -1;
        d.smask[s] = 0u;
        blo = make_float4(GNB_BIG, GNB_BIG, GNB_BIG, 0.0f);
        bhi = make_float4(-GNB_BIG, -GNB_BIG, -GNB_BIG, 0.0f);
    }
    d.fcl[3 * s + 0] = 0.0f;
    d.fcl[3 * s + 1] = 0.0f;
    d.fcl[3 * s + 2] = 0.0f;
    /* cluster boxes: min/max over the 8 lanes of a cluster, then over the super-cluster */
    const unsigned real = __ballot_sync(HX_FULL_MASK, at >= 0);
    const int lane = t & 31;
    for (int o = 1; o < 32; o <<= 1) {
        blo.x = fminf(blo.x, __shfl_xor_sync(HX_FULL_MASK, blo.x, o));
        blo.y = fminf(blo.y, __shfl_xor_sync(HX_FULL_MASK, blo.y, o));
        blo.z = fminf(blo.z, __shfl_xor_sync(HX_FULL_MASK, blo.z, o));
        bhi.x = fmaxf(bhi.x, __shfl_xor_sync(HX_FULL_MASK, bhi.x, o));
        bhi.y = fmaxf(bhi.y, __shfl_xor_sync(HX_FULL_MASK, bhi.y, o));
        bhi.z = fmaxf(bhi.z, __shfl_xor_sync(HX_FULL_MASK, bhi.z, o));
        if (o == 4 && (lane & 7) == 0) {
            const int cl = sc * GNB_SCC + (t >> 3);
            const int cnt = __popc((real >> (lane & 24)) & 0xffu);
            d.cl_bb[2 * cl] = make_float4(blo.x, blo.y, blo.z, (float)cnt);
            d.cl_bb[2 * cl + 1] = make_float4(bhi.x, bhi.y, bhi.z, 0.0f);
        }
    }
    if (lane == 0) {
        s_red[t >> 5][0] = blo;
        s_red[t >> 5][1] = bhi;
    }
    __syncthreads();
    if (t == 0) {
        const float4 l0 = s_red[0][0], l1 = s_red[1][0], h0 = s_red[0][1], h1 = s_red[1][1];
        const float4 slo =
            make_float4(fminf(l0.x, l1.x), fminf(l0.y, l1.y), fminf(l0.z, l1.z), (float)m);
        const float4 shi =
            make_float4(fmaxf(h0.x, h1.x), fmaxf(h0.y, h1.y), fmaxf(h0.z, h1.z), 0.0f);
        d.sc_bb[2 * sc] = slo;
        d.sc_bb[2 * sc + 1] = shi;
        if (sc < d.st->zsc[d.nzi])
            lb_work_items(d, sc, slo, shi);
    }
}

/* ---- 8. list build ------------------------------------------------------------------------- */

static __device__ __forceinline__ float gap1(float jlo, float jhi, float ilo, float ihi, float sh)
{
    return fmaxf(0.0f, fmaxf(jlo + sh - ihi, ilo - jhi - sh));
}

/* Candidate columns of an i super-cluster with box [slo, shi] in zone grid g, one more on each
 * side against rounding (their boxes decide), in periodic column numbering; kz0..kz1: the z
 * images within reach. */
typedef struct lb_range {
    int vlo[2], vhi[2], kz0, kz1;
} lb_range;

static __device__ __forceinline__ void lb_columns(const gnb_dev &d, const gnb_zone_grid &g,
                                                  float4 slo, float4 shi, lb_range &R)
{
    const float rl = d.rlist;
    const float blo[2] = {slo.x, slo.y}, bhi[2] = {shi.x, shi.y};
    for (int k = 0; k < 2; k++) {
        R.vlo[k] = (int)floorf((blo[k] - rl - g.lo[k]) / g.cw[k]) - 1;
        R.vhi[k] = (int)floorf((bhi[k] + rl - g.lo[k]) / g.cw[k]) + 1;
        if (d.periodic[k]) {
            R.vlo[k] = hx_imax(R.vlo[k], -g.nc[k]);
            R.vhi[k] = hx_imin(R.vhi[k], 2 * g.nc[k] - 1);
        } else {
            R.vlo[k] = hx_imax(R.vlo[k], 0);
            R.vhi[k] = hx_imin(R.vhi[k], g.nc[k] - 1);
        }
    }
    R.kz0 = R.kz1 = 0;
    if (d.periodic[2]) {
        R.kz0 = slo.z - rl < 1e-3f ? -1 : 0;
        R.kz1 = shi.z + rl > d.box[2] - 1e-3f ? 1 : 0;
    }
}

/* The columns of image (kx, ky, kz) within R; false when there are none (or kz is out of
 * reach). */
static __device__ __forceinline__ bool lb_image_columns(const gnb_zone_grid &g, const lb_range &R,
                                                        int kx, int ky, int kz, int &vx0, int &vx1,
                                                        int &vy0, int &vy1)
{
    if (kz < R.kz0 || kz > R.kz1)
        return false;
    vx0 = hx_imax(R.vlo[0], kx * g.nc[0]);
    vx1 = hx_imin(R.vhi[0], kx * g.nc[0] + g.nc[0] - 1);
    vy0 = hx_imax(R.vlo[1], ky * g.nc[1]);
    vy1 = hx_imin(R.vhi[1], ky * g.nc[1] + g.nc[1] - 1);
    return vx0 <= vx1 && vy0 <= vy1;
}

/* Zone of i super-cluster sci. */
static __device__ __forceinline__ int lb_izone(const gnb_dev &d, int sci)
{
    int iz = 0;
    while (iz + 1 < d.nzi && d.st->zsc[iz + 1] <= sci)
        iz++;
    return iz;
}

/* The list build's work items (gnb_dev.lb_work) of i super-cluster sci, whose box is slo, shi:
 * one per periodic image and j zone with candidate columns (GNB_LB_ITEM). Near the box's faces,
 * edges and corners a super-cluster reaches 2, 4 or 8 images, and in a decomposed domain 2 to 8
 * j zones; each pair has the fixed cost of a candidate search, sort and flush, and in one block
 * per super-cluster they ran in sequence. As separate items, taken by the resident blocks in
 * turn, they spread over the GPU. The central image of every super-cluster against its first j
 * zone comes first (index sci: the heaviest items start first), the others after them in any
 * order. With d.lb_zones 0 (HALOX_GPU_LB_ZONES=0) an item takes every j zone of its image in
 * turn, as before the zones were split. Run by one thread of k_sc_build's block of sci, once
 * the block has its box: a kernel of its own after k_sc_build was one more kernel boundary per
 * search (a few us each with several processes on the GPU). */
static __device__ void lb_work_items(const gnb_dev &d, int sci, float4 slo, float4 shi)
{
    /* per j zone (relative to the i zone's first; all in [0] without the split) */
    unsigned mask[GNB_MAXZ];
    const int iz = lb_izone(d, sci);
    const int kx0 = d.periodic[0] ? -1 : 0, ky0 = d.periodic[1] ? -1 : 0;
    const int jzf = d.jz0[iz];
    int nj = d.jz1[iz] - jzf, n = 0;
    for (int k = 0; k < GNB_MAXZ; k++)
        mask[k] = 0;
    for (int jz = jzf; jz < jzf + nj; jz++) {
        const gnb_zone_grid g = d.grid[jz];
        if (g.nc[0] == 0)
            continue;
        lb_range R;
        lb_columns(d, g, slo, shi, R);
        unsigned m = 0;
        for (int kz = R.kz0; kz <= R.kz1; kz++)
            for (int ky = ky0; ky <= -ky0; ky++)
                for (int kx = kx0; kx <= -kx0; kx++) {
                    int vx0, vx1, vy0, vy1;
                    if (lb_image_columns(g, R, kx, ky, kz, vx0, vx1, vy0, vy1))
                        m |= 1u << ((kx + 1) + 3 * (ky + 1) + 9 * (kz + 1));
                }
        mask[d.lb_zones ? jz - jzf : 0] |= m;
    }
    /* the central image against the first j zone always runs (the super-cluster's own column
     * when that zone is its own): at [sci]; but in the rest of a split search a home
     * super-cluster's items against zone 0 were the home part's (with one item for all zones,
     * lb_item_list leaves zone 0 out instead) */
    if (d.part == GNB_PART_REST && iz == 0 && d.lb_zones) {
        d.lb_work[sci] = GNB_LB_NONE;
        mask[0] = 0u;
    } else {
        d.lb_work[sci] = GNB_LB_ITEM(sci, d.lb_zones ? 0 : GNB_LB_ALLZ, GNB_CENTER);
        mask[0] &= ~(1u << GNB_CENTER);
    }
    if (!d.lb_zones)
        nj = 1;
    for (int k = 0; k < nj; k++)
        n += __popc(mask[k]);
    if (n == 0)
        return;
    /* the other items after every super-cluster's central one */
    int base = d.st->zsc[d.nzi] + atomicAdd(&d.st->nwork_extra, n);
    for (int k = 0; k < nj; k++)
        for (unsigned m = mask[k]; m; m &= m - 1u)
            d.lb_work[base++] = GNB_LB_ITEM(sci, d.lb_zones ? k : GNB_LB_ALLZ, __ffs((int)m) - 1);
}

/* Threads (warps) of one list-build block, which builds the list of one work item at a time.
 * Four warps take 16 candidates per pass and a quarter of the flagged items each. What made the
 * kernel slow was not the warps: with two or four per block it took 131-137 us at 45k atoms, and
 * 182 us with the work items below, until the pair counts' atomics went from one per thread to
 * one per warp (lb_flush): 55 us (bench/results/h200-2026-12-04d). */
#define LB_NW 4
#define LB_NT (32 * LB_NW)
#define LB_WBUF (GNB_ITEMBUF / LB_NW) /* items buffered per warp */

/* Shared state of one list-build block. */
typedef struct lb_smem {
    float4 ibb[2 * GNB_SCC];
    float4 sbb[2];
    int iperm[GNB_SCA], ifirst[GNB_SCA];
    unsigned imask[GNB_SCA];
    int ncand, base, ebase, wn[LB_NW], xcount[LB_NW], xbase[LB_NW];
    /* the buffered items: warp w's wn[w] from w * LB_WBUF (each warp appends to its own part,
     * with no block barrier between its passes) */
    int it_cj[GNB_ITEMBUF], it_excl[GNB_ITEMBUF];
    unsigned char it_mask[GNB_ITEMBUF], it_flag[GNB_ITEMBUF];
    unsigned char it_maski[GNB_ITEMBUF]; /* the i clusters whose box is within rlist_inner */
    /* flagged items, compacted: warp w's from w * LB_WBUF */
    unsigned short it_list[GNB_ITEMBUF];
} lb_smem;

/* The i side of the exclusion test for one lane's atom ti of each i cluster ic, in registers:
 * the same for every item of the block. */
typedef struct lb_iside {
    int first[GNB_SCC];     /* first atom of the molecule */
    unsigned mask[GNB_SCC]; /* its excluded atoms, by position in the molecule */
    unsigned real;          /* bit ic: the slot holds an atom (not padding) */
} lb_iside;

/* The i side for this lane's ti = lane % 8 (read again by each pass: fewer live registers). */
static __device__ __forceinline__ lb_iside lb_iload(const lb_smem *S, int lane)
{
    lb_iside I;
    I.real = 0;
#pragma unroll
    for (int ic = 0; ic < GNB_SCC; ic++) {
        const int ip = ic * GNB_CL + (lane & 7);
        I.first[ic] = S->ifirst[ip];
        I.mask[ic] = S->imask[ip];
        I.real |= (S->iperm[ip] >= 0 ? 1u : 0u) << ic;
    }
    return I;
}

/* Exclusion bits of slot (tj, ti) of one item: bit ic of the item's cluster mask im is cleared
 * for padding on either side, an excluded pair, or the self cluster's pairs counted on the
 * other side (icself: the i cluster that is the item's j cluster, -1 for none); bits outside im
 * stay set. */
static __device__ __forceinline__ unsigned lb_bits(const lb_iside &I, unsigned im, int icself,
                                                   int tj, int ti, int ja, int jf)
{
    unsigned clr = ja < 0 ? 0xffu : ~I.real;
    const int pos = ja - jf;
    if (ja >= 0 && pos >= 0 && pos < 32) {
#pragma unroll
        for (int ic = 0; ic < GNB_SCC; ic++)
            if (I.first[ic] == jf && ((I.mask[ic] >> pos) & 1u))
                clr |= 1u << ic; /* excluded pair */
    }
    if (icself >= 0 && icself < GNB_SCC && tj <= ti)
        clr |= 1u << icself; /* a cluster with itself: each pair once */
    return 0xffu & ~(clr & im);
}

/* j atom (perm) and its molecule's first atom (sfirst) of atom lane % 8 of this warp's item
 * list[i] (if i < n; with skip, not if the item's it_excl is 0); lb_item_bits passes them on to
 * the other lanes by shuffle. */
static __device__ __forceinline__ void lb_jload(const gnb_dev &d, const lb_smem *S,
                                                const unsigned short *list, int n, int i, bool skip,
                                                int lane, int &ja, int &jf)
{
    ja = -1;
    jf = 0;
    if (i < n && !(skip && S->it_excl[list[i]] == 0)) {
        const int js = S->it_cj[list[i]] * GNB_CL + (lane & 7);
        ja = __ldg(&d.perm[js]);
        jf = __ldg(&d.sfirst[js]);
    }
}

/* Exclusion bits of item k for this lane's two slots, lane (low byte) and lane + 32 (high
 * byte), i.e. (tj, ti) = (lane / 8, lane % 8) and (lane / 8 + 4, lane % 8); g: the item's place
 * in its group of 4 of lb_jload, ja, jf: that group's loads. Called by the whole warp. */
static __device__ __forceinline__ unsigned lb_item_bits(const lb_smem *S, const lb_iside &I, int k,
                                                        int g, int ja, int jf, int sci, int sidx,
                                                        int lane)
{
    const int cj = S->it_cj[k];
    const unsigned im = S->it_mask[k];
    const int icself = sidx == GNB_CENTER ? cj - sci * GNB_SCC : -1;
    const int tj = lane >> 3, ti = lane & 7, src = g * GNB_CL + tj;
    const int ja0 = __shfl_sync(HX_FULL_MASK, ja, src), jf0 = __shfl_sync(HX_FULL_MASK, jf, src);
    const int ja1 = __shfl_sync(HX_FULL_MASK, ja, src + 4);
    const int jf1 = __shfl_sync(HX_FULL_MASK, jf, src + 4);
    const unsigned lo = lb_bits(I, im, icself, tj, ti, ja0, jf0);
    const unsigned hi = lb_bits(I, im, icself, tj + 4, ti, ja1, jf1);
    return lo | hi << 8;
}

/* One warp's pass over its flagged items list[0 .. n-1], 8 at a time so that their loads overlap.
 * Without store: it_excl[k] = the item's rank (from 1) among this warp's items that need a mask
 * (some bit cleared), 0 for none; returns how many need one. With store: the masks of those
 * items, recomputed (the loads now hit the cache), go to index e0 + rank. No block barrier. */
static __device__ __forceinline__ int lb_excl_pass(const gnb_dev &d, lb_smem *S, const lb_iside &I,
                                                   const unsigned short *list, int n, int sci,
                                                   int sidx, int lane, bool store, int e0)
{
    int nneed = 0;
    for (int i0 = 0; i0 < n; i0 += 8) {
        int ja0, jf0, ja1, jf1;
        lb_jload(d, S, list, n, i0 + (lane >> 3), store, lane, ja0, jf0);
        lb_jload(d, S, list, n, i0 + 4 + (lane >> 3), store, lane, ja1, jf1);
#pragma unroll
        for (int u = 0; u < 8; u++) {
            if (i0 + u >= n)
                break;
            const int k = list[i0 + u];
            if (store && S->it_excl[k] == 0)
                continue;
            const unsigned b =
                lb_item_bits(S, I, k, u & 3, u < 4 ? ja0 : ja1, u < 4 ? jf0 : jf1, sci, sidx, lane);
            if (store) {
                const int e = e0 + S->it_excl[k];
                if (e < d.cap_excl) {
                    d.excl[(size_t)e * GNB_SCA + lane] = (uint8_t)b;
                    d.excl[(size_t)e * GNB_SCA + lane + 32] = (uint8_t)(b >> 8);
                }
            } else {
                const int need = __any_sync(HX_FULL_MASK, b != 0xffffu);
                nneed += need;
                if (lane == 0)
                    S->it_excl[k] = need ? nneed : 0;
            }
        }
    }
    return nneed;
}

/* Exclusion masks of the buffered items that need one, then the items and their entries to
 * global memory (entries of at most max_cj items): warp 0's items first, then warp 1's, and so
 * on. Called by all threads, each warp with its own item count wn.
 * The masks take two warp passes with one reservation between them (not a block barrier and a
 * global atomic per item, which made this the list build's critical path): the first finds
 * which items need a mask, the second stores them at the reserved indices. A warp reads and
 * stores only its own items, so the block meets only at the two barriers around the
 * reservation (the flush had five, and each of the passes that fill the buffer three). */
static __device__ __forceinline__ void lb_flush(const gnb_dev &d, lb_smem *S, int sci, int sidx,
                                                int cls, int wn)
{
    const int t = threadIdx.x, lane = t & 31, w = t >> 5;
    /* this warp's flagged items, compacted into its share of it_list */
    const int k0 = w * LB_WBUF;
    unsigned short *list = S->it_list + k0;
    int n = 0;
    for (int i0 = 0; i0 < wn; i0 += 32) {
        const int k = k0 + i0 + lane;
        const bool in = i0 + lane < wn;
        const int fl = in && S->it_flag[k];
        const unsigned bal = __ballot_sync(HX_FULL_MASK, fl);
        if (fl)
            list[n + __popc(bal & ((1u << lane) - 1u))] = (unsigned short)k;
        else if (in)
            S->it_excl[k] = 0;
        n += __popc(bal);
    }
    __syncwarp();
    const int nneed =
        n ? lb_excl_pass(d, S, lb_iload(S, lane), list, n, sci, sidx, lane, false, 0) : 0;
    if (lane == 0) {
        S->wn[w] = wn;
        S->xcount[w] = nneed;
    }
    __syncthreads();
    int cnt = 0, pre = 0; /* all the block's items; the warps' before this one's */
#pragma unroll
    for (int v = 0; v < LB_NW; v++) {
        const int c = S->wn[v];
        pre += v < w ? c : 0;
        cnt += c;
    }
    if (cnt == 0)
        return;
    const int np = (cnt + d.max_cj - 1) / d.max_cj;
    if (t == 0) {
        S->base = atomicAdd(&d.st->nitems[cls], cnt);
        S->ebase = atomicAdd(&d.st->nent[cls], np);
        /* mask indices eidx + 1 .. eidx + total (index 0 is "no mask"): warp 0's, then warp
         * 1's, ... */
        int nx = 0;
        for (int v = 0; v < LB_NW; v++)
            nx += S->xcount[v];
        int e = nx ? atomicAdd(&d.st->nexcl, nx) : 0;
        for (int v = 0; v < LB_NW; v++) {
            S->xbase[v] = e;
            e += S->xcount[v];
        }
    }
    __syncthreads();
    /* read before any warp can reach the next flush's reservation, which needs every warp at
     * that flush's first barrier */
    const int base = S->base, ebase = S->ebase, xb = S->xbase[w];
    if (nneed)
        lb_excl_pass(d, S, lb_iload(S, lane), list, n, sci, sidx, lane, true, xb);
    unsigned ncp = 0, ncpi = 0;
    for (int i = lane; i < wn; i += 32) {
        const int k = k0 + i, g = base + pre + i;
        const unsigned m = S->it_mask[k], mi = S->it_maski[k];
        if (g < d.cap_items[cls]) {
            const int x = S->it_excl[k];
            d.items[cls][g] = make_uint2((unsigned)S->it_cj[k], (unsigned)(x ? xb + x : 0));
            d.masko[cls][g] = (unsigned short)(m | (m << 8));
            d.mask[cls][g] = (unsigned short)(mi | (mi << 8));
        }
        ncp += 2u * (unsigned)__popc(m);
        ncpi += 2u * (unsigned)__popc(mi);
    }
    for (int p = t; p < np; p += LB_NT)
        if (ebase + p < d.cap_ent[cls])
            d.ent[cls][ebase + p] =
                make_int4(sci, sidx, base + p * d.max_cj, base + hx_imin((p + 1) * d.max_cj, cnt));
    /* the counts summed over the warp first: one atomic per warp and counter. An atomic per
     * thread, on the same two addresses from every block, serialise in L2 behind each other
     * (two warps per block: ~130,000 per search at 45k atoms; four warps and an item per
     * periodic image: ~540,000) */
    for (int o = 16; o > 0; o >>= 1) {
        ncp += __shfl_xor_sync(HX_FULL_MASK, ncp, o);
        ncpi += __shfl_xor_sync(HX_FULL_MASK, ncpi, o);
    }
    if (lane == 0 && ncp)
        atomicAdd(&d.st->ncp_outer[cls], (unsigned long long)ncp);
    if (lane == 0 && ncpi && d.rolling) /* else the prune at the search counts them */
        atomicAdd(&d.st->ncp_inner[cls], (unsigned long long)ncpi);
    /* no barrier at the end: a warp's next items go to its own part of the buffer, which only
     * it reads here, and the next flush begins with one */
}

/* The list of one work item: i super-cluster sci against the j super-clusters of image want in
 * j zone jk of its i zone (counted from the i zone's first), or in every one (GNB_LB_ALLZ). */
static __device__ __forceinline__ void lb_item_list(const gnb_dev &d, lb_smem &S, int *cand,
                                                    int sci, int jk, int want)
{
    const int t = threadIdx.x;
    if (t < 2 * GNB_SCC)
        S.ibb[t] = d.cl_bb[2 * GNB_SCC * sci + t];
    if (t < 2)
        S.sbb[t] = d.sc_bb[2 * sci + t];
    if (t < GNB_SCA) {
        S.iperm[t] = d.perm[sci * GNB_SCA + t];
        S.ifirst[t] = d.sfirst[sci * GNB_SCA + t];
        S.imask[t] = d.smask[sci * GNB_SCA + t];
    }
    const int iz = lb_izone(d, sci);
    __syncthreads();
    const float4 slo = S.sbb[0], shi = S.sbb[1];
    const int jza = jk == GNB_LB_ALLZ ? d.jz0[iz] : d.jz0[iz] + jk;
    const int jzb = jk == GNB_LB_ALLZ ? d.jz1[iz] : jza + 1;
    for (int jz = jza; jz < jzb; jz++) {
        const gnb_zone_grid g = d.grid[jz];
        if (g.nc[0] == 0)
            continue;
        const bool half = iz == 0 && jz == 0;
        if (half && d.part == GNB_PART_REST)
            continue; /* the local list: built by the home part */
        const int cls = half ? 0 : 1;
        lb_range R;
        lb_columns(d, g, slo, shi, R);
        const int kx = want % 3 - 1, ky = (want / 3) % 3 - 1, kz = want / 9 - 1;
        {
            int vx0, vx1, vy0, vy1;
            if (!lb_image_columns(g, R, kx, ky, kz, vx0, vx1, vy0, vy1))
                continue;
            const int sidx = want;
            const float4 sh = d.shift[sidx];
            /* stage 1: j super-clusters within rlist of the i super-cluster's box */
            if (t == 0)
                S.ncand = 0;
            __syncthreads();
            const int ncx = vx1 - vx0 + 1, ncy = vy1 - vy0 + 1;
            for (int f = t; f < ncx * ncy; f += LB_NT) {
                const int cx = vx0 + f % ncx - kx * g.nc[0];
                const int cy = vy0 + f / ncx - ky * g.nc[1];
                const int col = g.col0 + cy * g.nc[0] + cx;
                const float4 cb = d.col_bb[col];
                const float gx = gap1(cb.x, cb.y, slo.x, shi.x, sh.x);
                const float gy = gap1(cb.z, cb.w, slo.y, shi.y, sh.y);
                if (gx * gx + gy * gy >= d.rlist2)
                    continue;
                const int je = d.col_sc[col + 1];
                int j0 = d.col_sc[col];
                if (half)
                    j0 = hx_imax(j0, sci); /* lower ones: all their clusters come first */
                /* the column's boxes 32 at a time, with no shared atomic between their
                 * loads (so that these overlap), then one atomic for the hits (their
                 * order does not matter: sorted below) */
                for (; j0 < je; j0 += 32) {
                    const int jn = hx_imin(32, je - j0);
                    unsigned hit = 0;
#pragma unroll 4
                    for (int u = 0; u < jn; u++) {
                        const float4 jl = __ldg(&d.sc_bb[2 * (j0 + u)]);
                        const float4 jh = __ldg(&d.sc_bb[2 * (j0 + u) + 1]);
                        const float ax = gap1(jl.x, jh.x, slo.x, shi.x, sh.x);
                        const float ay = gap1(jl.y, jh.y, slo.y, shi.y, sh.y);
                        const float az = gap1(jl.z, jh.z, slo.z, shi.z, sh.z);
                        if (ax * ax + ay * ay + az * az < d.rlist2)
                            hit |= 1u << u;
                    }
                    if (hit) {
                        int p = atomicAdd(&S.ncand, __popc(hit));
                        for (; hit; hit &= hit - 1u, p++)
                            if (p < d.cand_cap)
                                cand[p] = j0 + __ffs((int)hit) - 1;
                    }
                }
            }
            __syncthreads();
            int ncand = S.ncand;
            if (t == 0)
                atomicMax(&d.st->max_cand, ncand);
            if (ncand > d.cand_cap) {
                if (t == 0)
                    atomicOr(&d.st->overflow, GNB_OVF_CAND);
                ncand = d.cand_cap;
            }
            /* sorted: the list does not depend on the order threads found them */
            if (ncand <= 2 * LB_NT) {
                /* the usual few: each value's place is the count of smaller ones (they
                 * are distinct: each column is read once), two barriers instead of one
                 * per bitonic stage */
                const int v0 = t < ncand ? cand[t] : 0;
                const int v1 = t + LB_NT < ncand ? cand[t + LB_NT] : 0;
                int r0 = 0, r1 = 0;
                for (int i = 0; i < ncand; i++) {
                    const int c = cand[i];
                    r0 += c < v0;
                    r1 += c < v1;
                }
                __syncthreads();
                if (t < ncand)
                    cand[r0] = v0;
                if (t + LB_NT < ncand)
                    cand[r1] = v1;
                __syncthreads();
            } else {
                const int n2 = pow2_at_least(ncand);
                for (int i = ncand + t; i < n2; i += LB_NT)
                    cand[i] = INT_MAX;
                __syncthreads();
                for (int k = 2; k <= n2; k <<= 1)
                    for (int j = k >> 1; j > 0; j >>= 1) {
                        for (int i = t; i < n2; i += LB_NT) {
                            const int l = i ^ j;
                            if (l > i && ((cand[i] > cand[l]) == ((i & k) == 0))) {
                                const int tmp = cand[i];
                                cand[i] = cand[l];
                                cand[l] = tmp;
                            }
                        }
                        __syncthreads();
                    }
            }
            /* stages 2 and 3: LB_NT / 8 candidates x 8 clusters per pass. Each warp appends
             * its items to its own part of the buffer (at most 32 per pass), so the passes
             * need no block barrier: the block meets only once some warp's part may not hold
             * another pass (here: never before the fifth pass since the last flush), to see
             * whether one is full, and at the flushes. The passes had three barriers each. */
            const int lane = t & 31, w = t >> 5;
            int wn = 0, since = 0;
            /* the next pass's candidate cluster and its box, loaded while this pass computes
             * (each pass began by waiting for its own) */
            int cjn = -1;
            float4 jln = make_float4(0.0f, 0.0f, 0.0f, 0.0f), jhn = jln;
            if ((t >> 3) < ncand) {
                cjn = cand[t >> 3] * GNB_SCC + (t & 7);
                jln = d.cl_bb[2 * cjn];
                jhn = d.cl_bb[2 * cjn + 1];
            }
            for (int b0 = 0; b0 < ncand; b0 += LB_NT / GNB_CL) {
                if (since >= LB_WBUF / 32 && __syncthreads_or(wn > LB_WBUF - 32)) {
                    lb_flush(d, &S, sci, sidx, cls, wn);
                    wn = 0;
                    since = 0;
                }
                since++;
                const int ci0 = sci * GNB_SCC;
                const int cj = cjn; /* -1: no candidate for this thread in this pass */
                const float4 jl = jln, jh = jhn;
                {
                    const int cn = b0 + LB_NT / GNB_CL + (t >> 3);
                    cjn = -1;
                    if (cn < ncand) {
                        cjn = cand[cn] * GNB_SCC + (t & 7);
                        jln = d.cl_bb[2 * cjn];
                        jhn = d.cl_bb[2 * cjn + 1];
                    }
                }
                unsigned im = 0, imi = 0;
                int flag = 0;
                if (cj >= 0) {
                    const int jn = (int)jl.w;
                    for (int ic = 0; ic < GNB_SCC && jn > 0; ic++) {
                        const float4 il = S.ibb[2 * ic], ih = S.ibb[2 * ic + 1];
                        const int in_ = (int)il.w;
                        if (in_ == 0)
                            continue;
                        if (half && (cj < ci0 + ic || (cj == ci0 + ic && sidx < GNB_CENTER)))
                            continue;
                        const float ax = gap1(jl.x, jh.x, il.x, ih.x, sh.x);
                        const float ay = gap1(jl.y, jh.y, il.y, ih.y, sh.y);
                        const float az = gap1(jl.z, jh.z, il.z, ih.z, sh.z);
                        const float d2 = ax * ax + ay * ay + az * az;
                        if (d2 < d.rlist2) {
                            im |= 1u << ic;
                            if (d2 < d.rinner2)
                                imi |= 1u << ic;
                            if (d2 < d.excl2 || in_ < GNB_CL)
                                flag = 1;
                        }
                    }
                    if (im && jn < GNB_CL)
                        flag = 1;
                }
                const int pred = im != 0;
                const unsigned bal = __ballot_sync(HX_FULL_MASK, pred);
                if (pred) {
                    const int at = w * LB_WBUF + wn + __popc(bal & ((1u << lane) - 1u));
                    S.it_cj[at] = cj;
                    S.it_mask[at] = (unsigned char)im;
                    S.it_maski[at] = (unsigned char)imi;
                    S.it_flag[at] = (unsigned char)flag;
                }
                wn += __popc(bal);
            }
            __syncwarp(); /* the warp's items, for lb_flush's compaction */
            lb_flush(d, &S, sci, sidx, cls, wn);
        }
    }
}

/* One block per ~SM slot, taking work items (k_lb_work) in turn until none is left.
 * LB_BLOCKS_PER_SM: the blocks launched per multiprocessor (HALOX_GPU_LB_BLOCKS overrides it).
 * ptxas is left its register choice: 80 (4 bytes spilled, in the prologue), so 6 blocks fit.
 * An earlier form of the kernel compiled for 8 resident blocks (64 registers) and launched 8 per
 * multiprocessor was no faster on an H100, on one GPU or on 4 ranks (docs/design/gpu-search.md,
 * "The list build's resident blocks"): an item's chain of barriers and dependent loads, not the
 * items in flight, sets the kernel's time. */
#define LB_BLOCKS_PER_SM 6
static __device__ __forceinline__ void lb_blocks_run(const gnb_dev &d, lb_smem &S, int &s_w,
                                                     int *cand)
{
    if (d.st->overflow & GNB_OVF_EARLY)
        return;
    const int nwork = d.st->zsc[d.nzi] + d.st->nwork_extra;
    for (;;) {
        if (threadIdx.x == 0)
            s_w = atomicAdd(&d.st->wnext, 1);
        __syncthreads();
        const int w = s_w;
        __syncthreads(); /* read by all before thread 0 takes the next */
        if (w >= nwork)
            return;
        const int item = d.lb_work[w];
        if (item == GNB_LB_NONE)
            continue;
        lb_item_list(d, S, cand, GNB_LB_SCI(item), GNB_LB_JZ(item), GNB_LB_IMG(item));
    }
}

/* h_st (the status record's pinned host copy, its device address; NULL: a prune of the whole
 * list follows at this search, and gnb_search_tail writes it): written by the last block to
 * finish, so that the search's graph needs no kernel after this one. */
__global__ __launch_bounds__(LB_NT) void k_list_build(gnb_dev d, gnb_status *h_st)
{
    __shared__ lb_smem S;
    __shared__ int s_w, s_last;
    HX_DYN_SMEM(smem);
    lb_blocks_run(d, S, s_w, (int *)smem);
    if (d.part == GNB_PART_HOME) {
        /* the record goes on into the rest of the search: only the work items' counters start
         * again (the rest's items are its own) */
        if (hx_last_block(&d.st->tick, &s_last) && threadIdx.x == 0) {
            d.st->wnext = 0;
            d.st->nwork_extra = 0;
        }
    } else if (h_st && hx_last_block(&d.st->tick, &s_last)) {
        gnb_status_out(h_st, d.st);
    }
}

/* ---- host side ----------------------------------------------------------------------------- */

static hx_status dev_alloc(void **p, size_t bytes)
{
    HX_CUDA(cudaMalloc(p, bytes > 0 ? bytes : 16));
    return HX_OK;
}

#define GROW_TO(need, cap) ((need) + (need) / 4 + 64 > (cap) ? (need) + (need) / 4 + 64 : (cap))

/* (Re)allocate the search buffers for the capacities in nb->d (contents are not kept); s: the
 * stream the search then runs on. */
static hx_status alloc_search(hx_gpu_nb *nb, cudaStream_t s)
{
    gnb_dev *d = &nb->d;
    void **ptrs[] = {
        (void **)&d->col_count, (void **)&d->col_start, (void **)&d->col_sc,  (void **)&d->col_bb,
        (void **)&d->sc_bb,     (void **)&d->cl_bb,     (void **)&d->perm,    (void **)&d->stype,
        (void **)&d->sfirst,    (void **)&d->smask,     (void **)&d->xq,      (void **)&d->swq,
        (void **)&d->sqd,       (void **)&d->fcl,       (void **)&d->ent[0],  (void **)&d->ent[1],
        (void **)&d->items[0],  (void **)&d->items[1],  (void **)&d->mask[0], (void **)&d->mask[1],
        (void **)&d->masko[0],  (void **)&d->masko[1],  (void **)&d->excl,    (void **)&d->lb_work,
        (void **)&d->scomb,     (void **)&d->colfill};
    for (size_t k = 0; k < sizeof ptrs / sizeof ptrs[0]; k++) {
        HX_CUDA(cudaFree(*ptrs[k]));
        *ptrs[k] = NULL;
    }
    /* GNB_LB_ITEM keeps a super-cluster's index in 22 bits */
    HX_CHECK(d->cap_sc < (1 << 22), HX_ERR_UNSUPPORTED,
             "the pair search takes at most %d super-clusters of %d atoms per domain (%d asked "
             "for): use more domains",
             (1 << 22) - 1, GNB_SCA, d->cap_sc);
    const size_t cols = (size_t)d->cap_cols + 1, sc = (size_t)d->cap_sc;
    const size_t slots = sc * GNB_SCA;
    HX_TRY(dev_alloc((void **)&d->col_count, cols * sizeof(int)));
    HX_TRY(dev_alloc((void **)&d->col_start, cols * sizeof(int)));
    HX_TRY(dev_alloc((void **)&d->col_sc, cols * sizeof(int)));
    HX_TRY(dev_alloc((void **)&d->col_bb, cols * sizeof(float4)));
    HX_TRY(dev_alloc((void **)&d->colfill, (size_t)d->cap_cols * d->sort_cap * sizeof(int)));
    HX_TRY(dev_alloc((void **)&d->sc_bb, 2 * sc * sizeof(float4)));
    HX_TRY(dev_alloc((void **)&d->cl_bb, 2 * sc * GNB_SCC * sizeof(float4)));
    HX_TRY(dev_alloc((void **)&d->perm, slots * sizeof(int)));
    HX_TRY(dev_alloc((void **)&d->stype, slots * sizeof(int)));
    HX_TRY(dev_alloc((void **)&d->sfirst, slots * sizeof(int)));
    HX_TRY(dev_alloc((void **)&d->smask, slots * sizeof(unsigned)));
    HX_TRY(dev_alloc((void **)&d->xq, slots * sizeof(float4)));
    HX_TRY(dev_alloc((void **)&d->swq, slots * sizeof(float4)));
    HX_TRY(dev_alloc((void **)&d->sqd, slots * sizeof(double)));
    HX_TRY(dev_alloc((void **)&d->fcl, 3 * slots * sizeof(float)));
    HX_TRY(dev_alloc((void **)&d->scomb, slots * sizeof(float2)));
    for (int c = 0; c < 2; c++) {
        HX_TRY(dev_alloc((void **)&d->ent[c], (size_t)d->cap_ent[c] * sizeof(int4)));
        HX_TRY(dev_alloc((void **)&d->items[c], (size_t)d->cap_items[c] * sizeof(uint2)));
        HX_TRY(dev_alloc((void **)&d->mask[c], (size_t)d->cap_items[c] * sizeof(unsigned short)));
        HX_TRY(dev_alloc((void **)&d->masko[c], (size_t)d->cap_items[c] * sizeof(unsigned short)));
    }
    HX_TRY(dev_alloc((void **)&d->excl, (size_t)d->cap_excl * GNB_SCA));
    HX_TRY(dev_alloc((void **)&d->lb_work, 27 * sc * sizeof(int)));
    /* mask 0 is "no exclusions"; never read, but defined: on the search's stream, which a
     * plain cudaMemset (legacy default stream) does not order against */
    HX_CUDA(cudaMemsetAsync(d->excl, 0xff, GNB_SCA, s));
    return HX_OK;
}

/* First capacities from the atom count: a 64-atom super-cluster per 0.64 nm^3 of water, about
 * 110 j clusters per super-cluster at rlist 1.1 nm (grown when a search needs more). */
static void initial_caps(hx_gpu_nb *nb)
{
    gnb_dev *d = &nb->d;
    const int n = d->n > 0 ? d->n : 1;
    const int nsc = n / GNB_SCA + 1;
    const double r = nb->p.rlist;
    const double per_sc = 30.0 * (r + 1.0) * (r + 1.0) * (r + 1.0); /* ~280 at 1.1 nm, full */
    d->cap_cols = nsc + 64 * nb->d.nz + 64;
    d->cap_sc = nsc + nsc / 4 + 16 * nb->d.nz + 64;
    for (int c = 0; c < 2; c++) {
        const double share = c == 0 ? 0.5 : (d->nz > 1 ? 1.0 : 0.0);
        d->cap_items[c] = (int)(share * per_sc * d->cap_sc) + 1024;
        d->cap_ent[c] = d->cap_items[c] / 8 + 1024;
    }
    d->cap_excl = d->cap_sc * 16 + 1024;
    d->sort_cap = 1024;
    d->cand_cap = 512;
}

static hx_status enqueue_search(hx_gpu_nb *nb, const float *x, cudaStream_t s);

/* k_col_sort's shared memory: a 64-bit key per atom (the bitonic network's float and int), and
 * with the binned ranking the keys scattered by bin as well. */
static size_t sort_smem_bytes(const gnb_dev *d)
{
    return (size_t)d->sort_cap * (d->sort_bins ? 16 : 8);
}

/* One search, or one part of it (gnb_dev.part): its work launched (or its graph replayed) on s;
 * then, unless it was the home part, the host waits for the status (the list's sizes,
 * overflows, errors). */
static hx_status run_search(hx_gpu_nb *nb, const float *x, cudaStream_t s, int part)
{
    gnb_dev *d = &nb->d;
    d->part = part;
    /* the shared-memory limits, set outside any capture */
    const size_t sort_smem = sort_smem_bytes(d);
    if (sort_smem > 48 * 1024)
        HX_CUDA(cudaFuncSetAttribute((const void *)k_col_sort,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sort_smem));
    const size_t cand_smem = (size_t)d->cand_cap * sizeof(int);
    if (cand_smem > 40 * 1024) {
        HX_CUDA(cudaFuncSetAttribute((const void *)k_list_build,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize, (int)cand_smem));
    }
    /* a graph, but not with the stage timing: events recorded by a graph do not time */
    if (nb->search_graph && !nb->time_stages) {
        /* captured again when anything the launches take changed: buffers or capacities
         * after a growth, the entry length, the atoms, the positions' address; on a stream of
         * its own (the caller's may be the legacy default stream, which cannot capture) */
        gnb_dev cmp = *d;
        cmp.n = nb->search_d[part].n; /* the kernels take n from the status record */
        if (!nb->search_exec[part] || nb->search_x[part] != x ||
            memcmp(&nb->search_d[part], &cmp, sizeof cmp) != 0) {
            cudaGraph_t graph = NULL;
            HX_CUDA(cudaStreamBeginCapture(nb->s_capture, cudaStreamCaptureModeThreadLocal));
            const hx_status est = enqueue_search(nb, x, nb->s_capture);
            const cudaError_t ce = cudaStreamEndCapture(nb->s_capture, &graph);
            if (est != HX_OK) {
                if (graph)
                    cudaGraphDestroy(graph);
                return est;
            }
            HX_CUDA(ce);
            cudaGraphExec_t *exec = &nb->search_exec[part];
            if (*exec) {
                cudaGraphExecUpdateResultInfo info;
                if (cudaGraphExecUpdate(*exec, graph, &info) != cudaSuccess) {
                    (void)cudaGetLastError();
                    cudaGraphExecDestroy(*exec);
                    *exec = NULL;
                }
            }
            hx_status ist = HX_OK;
            if (!*exec)
                HX_CUDA_GOTO(ist, cudaGraphInstantiate(exec, graph, 0), captured);
        captured:
            cudaGraphDestroy(graph);
            HX_TRY(ist);
            nb->search_d[part] = *d;
            nb->search_x[part] = x;
            nb->search_captures++;
        }
        HX_CUDA(cudaGraphLaunch(nb->search_exec[part], s));
    } else {
        HX_TRY(enqueue_search(nb, x, s));
    }
    if (part == GNB_PART_HOME)
        return HX_OK; /* the rest of the search follows on the device; its end is waited for */
    HX_CUDA(cudaStreamSynchronize(s));
    for (int k = 0; nb->time_stages && k < HX_GPU_SEARCH_STAGES; k++) {
        float ms = 0.0f;
        HX_CUDA(cudaEventElapsedTime(&ms, nb->ev_stage[k], nb->ev_stage[k + 1]));
        nb->stage_ms[k] += ms;
    }
    return HX_OK;
}

/* The search's work on stream s, from k_prep to the status record in pinned host memory:
 * launched directly or captured once into a graph (run_search). With direct launches the device
 * waited on the host's launch calls between the short kernels of the first stages: 20 us for the
 * status record's upload (gone since) and k_prep (5 us of kernel), 28 us for the binning (16 us
 * of kernels) at 45k atoms on the H200. */
static hx_status enqueue_search(hx_gpu_nb *nb, const float *x, cudaStream_t s)
{
    gnb_dev *d = &nb->d;
    /* the search trace's names of the stages' ends (gpu/trace.h) */
    static const char *const stage_label[HX_GPU_SEARCH_STAGES + 1] = {
        "nb.start",      "nb.k_prep",       "nb.k_bin", "nb.k_col_sort",
        "nb.k_sc_build", "nb.k_list_build", "nb.prune", "nb.status"};
/* an event at the end of stage k (HALOX_GPU_SEARCH_TIMING), and the trace's point */
#define STAGE(k)                                                                                   \
    do {                                                                                           \
        if (nb->time_stages)                                                                       \
            HX_CUDA(cudaEventRecord(nb->ev_stage[k], s));                                          \
        HX_TRY(hx_gpu_trace_mark(nb, d->part, k, stage_label[k], s));                              \
    } while (0)
    STAGE(0);
    /* sized for the capacity: the atom count is the status record's (gnb_status.n) */
    const unsigned ga = hx_div_up(nb->cap_atoms > d->n ? nb->cap_atoms : d->n, 256);
    HX_LAUNCH(k_prep, ga, 256, 0, s, x, *d);
    HX_CUDA_LAUNCH("k_prep");
    STAGE(1);
    HX_LAUNCH(k_bin, ga, 256, 0, s, *d);
    HX_CUDA_LAUNCH("k_bin");
    STAGE(2);
    HX_LAUNCH(k_col_sort, (unsigned)d->cap_cols * (unsigned)col_sort_split(*d), 256,
              sort_smem_bytes(d), s, *d);
    HX_CUDA_LAUNCH("k_col_sort");
    STAGE(3);
    /* the slots' geometric-rule factors for k_nb_2h, and the list build's work items */
    HX_LAUNCH(k_sc_build, (unsigned)d->cap_sc, GNB_SCA, 0, s, *d,
              nb->lj_geometric ? (const float2 *)(nb->d_lj + nb->lj_comb_off) : NULL);
    HX_CUDA_LAUNCH("k_sc_build");
    STAGE(4);
    const size_t cand_smem = (size_t)d->cand_cap * sizeof(int);
    {
        const int per_sm = nb->lb_blocks > 0 ? nb->lb_blocks : LB_BLOCKS_PER_SM;
        const unsigned slots = (unsigned)(per_sm * (nb->sm_count > 0 ? nb->sm_count : 132));
        const unsigned most = 27u * (unsigned)d->cap_sc;
        /* with the rolling prune nothing follows the list build at a search: its last block
         * writes the status (the host's copy, no copy node, no kernel of its own) */
        HX_LAUNCH(k_list_build, slots < most ? slots : most, LB_NT, cand_smem, s, *d,
                  d->rolling && d->part != GNB_PART_HOME ? nb->h_st_d : NULL);
    }
    HX_CUDA_LAUNCH("k_list_build");
    STAGE(5);
    /* the home part's list is pruned, and the status written, by the rest of the search */
    if (d->part != GNB_PART_HOME)
        HX_TRY(gnb_prune_search(nb, s));
    STAGE(6);
    if (!d->rolling && d->part != GNB_PART_HOME)
        HX_TRY(gnb_search_tail(nb, s)); /* the status into nb->h_st, no copy node */
    STAGE(7);
#undef STAGE
    return HX_OK;
}

static int pow2_ceil(int v)
{
    int p = 1;
    while (p < v)
        p <<= 1;
    return p;
}

/* What every search (or its home part) checks and sets up before its launches: the geometry,
 * the buffers at the first search, the entry length. */
static hx_status search_prepare(hx_gpu_nb *nb, cudaStream_t s)
{
    gnb_dev *d = &nb->d;
    for (int k = 0; k < 3; k++)
        HX_CHECK(!d->periodic[k] || nb->p.rlist < 0.5 * d->box[k], HX_ERR_GEOMETRY,
                 "pair-list radius %g nm is not below half the box (%g nm) along %c: use a "
                 "shorter cut-off/rlist or a larger box",
                 nb->p.rlist, (double)d->box[k], "xyz"[k]);
    if (!d->perm) {
        initial_caps(nb);
        HX_TRY(alloc_search(nb, s));
    }
    /* entry length: enough entries to fill the GPU several times over (64-thread blocks; 14-16
     * resident per multiprocessor: 48 are about 3 waves). Processes that share the GPU under
     * MPS each cut for the whole GPU: their entries are shorter, each paying a block's set-up
     * and its i forces' reduction, but cut for their share they measured far slower (a few
     * long entries end each process's kernel late: choose_kernel in nb_gpu.cu). */
    {
        const long long per_sm = nb->entry_blocks > 0 ? nb->entry_blocks : 48;
        const long long target = per_sm * (nb->sm_count > 0 ? nb->sm_count : 132);
        long long mc = nb->items_est > 0 ? (nb->items_est + target - 1) / target : 16;
        mc = mc < 8 ? 8 : (mc > 64 ? 64 : mc);
        /* kept while within an eighth: a new value changes every launch's arguments, and the
         * search's graph is captured again */
        if (d->max_cj <= 0 || llabs(mc - d->max_cj) > d->max_cj / 8)
            d->max_cj = (int)mc;
    }
    return HX_OK;
}

extern "C" hx_status hx_gpu_nb_search_home(hx_gpu_nb *nb, const float *x, hx_stream stream)
{
    HX_CHECK(nb && (x || nb->d.n == 0), HX_ERR_INVALID_ARG, "hx_gpu_nb_search_home: NULL argument");
    HX_CHECK(nb->have_set, HX_ERR_INVALID_ARG,
             "hx_gpu_nb_search_home: call hx_gpu_nb_set_atoms_device before the search");
    HX_CHECK(!nb->home_pending, HX_ERR_INVALID_ARG,
             "hx_gpu_nb_search_home: the home part was launched already; set the atoms first");
    /* with the stage timing the search runs whole, so that its stages are timed as one */
    const gnb_dev *d = &nb->d;
    if (!nb->home_split || nb->time_stages || d->nz <= 1 || d->n == 0)
        return HX_OK;
    for (int z = 1; z < d->nz; z++)
        HX_CHECK(nb->zcount_set[z] == 0, HX_ERR_INVALID_ARG,
                 "hx_gpu_nb_search_home: zone %d has %d atoms; set the home atoms alone first", z,
                 nb->zcount_set[z]);
    HX_TRY(search_prepare(nb, stream));
    nb->have_list = 0;
    nb->nonlocal_pending = 0;
    HX_TRY(run_search(nb, x, stream, GNB_PART_HOME));
    nb->home_pending = 1;
    nb->home_stream = stream;
    return HX_OK;
}

extern "C" hx_status hx_gpu_nb_search(hx_gpu_nb *nb, const float *x, hx_stream stream)
{
    HX_CHECK(nb && (x || nb->d.n == 0), HX_ERR_INVALID_ARG, "hx_gpu_nb_search: NULL argument");
    HX_CHECK(nb->have_set, HX_ERR_INVALID_ARG,
             "hx_gpu_nb_search: call hx_gpu_nb_set_atoms before the first search");
    cudaStream_t s = stream;
    gnb_dev *d = &nb->d;
    /* the rest of a search whose home part ran (hx_gpu_nb_search_home), else all of it */
    int part = nb->home_pending ? GNB_PART_REST : GNB_PART_ALL;
    nb->home_pending = 0;
    nb->have_list = 0;
    nb->nonlocal_pending = 0;
    if (d->n == 0) {
        nb->nsc = nb->ncols = nb->nexcl = 0;
        for (int z = 0; z <= GNB_MAXZ; z++)
            nb->zsc[z] = 0;
        for (int c = 0; c < 2; c++) {
            nb->nent[c] = nb->nitems[c] = 0;
            nb->ncp_outer[c] = nb->ncp_inner[c] = 0;
        }
        nb->have_list = 1;
        nb->searches++;
        return HX_OK;
    }
    if (part == GNB_PART_ALL)
        HX_TRY(search_prepare(nb, s)); /* else done for the home part, kept for its list */
    const gnb_status *st = nb->h_st;
    int attempt = 0;
    for (;; attempt++) {
        HX_TRY(run_search(nb, x, s, part));
        HX_CHECK(st->bad_atom == INT_MAX, HX_ERR_PHYSICS,
                 "pair search: atom %d (local index %d) has a non-finite coordinate: the system "
                 "blew up; use a smaller time step or check the input",
                 st->bad_atom + 1, st->bad_atom);
        HX_CHECK(st->bad_excl == INT_MAX, HX_ERR_PHYSICS,
                 "pair search: atom %d (local index %d) is farther than max_excl_dist = %g nm "
                 "from an atom it is excluded from: the molecule is broken, or max_excl_dist "
                 "is too small for this model",
                 st->bad_excl + 1, st->bad_excl, nb->p.max_excl_dist);
        int grow = 0;
        if (st->ncols > d->cap_cols) {
            d->cap_cols = GROW_TO(st->ncols, d->cap_cols);
            grow = 1;
        }
        if (st->overflow & GNB_OVF_COLS) {
            grow = 1; /* nothing after the grid ran: sizes below are unknown */
        } else {
            if (st->nsc > d->cap_sc) {
                d->cap_sc = GROW_TO(st->nsc, d->cap_sc);
                grow = 1;
            }
            if (!(st->overflow & GNB_OVF_EARLY)) {
                if (st->max_col_atoms > d->sort_cap) {
                    d->sort_cap = pow2_ceil(st->max_col_atoms + st->max_col_atoms / 4);
                    HX_CHECK(sort_smem_bytes(d) <= (size_t)nb->smem_optin, HX_ERR_UNSUPPORTED,
                             "pair search: a grid column holds %d atoms, more than the %d the "
                             "shared-memory sort can take",
                             st->max_col_atoms,
                             (int)((size_t)nb->smem_optin / (sort_smem_bytes(d) / d->sort_cap)));
                    grow = 1;
                }
                if (st->max_cand > d->cand_cap) {
                    d->cand_cap = pow2_ceil(st->max_cand + st->max_cand / 4);
                    HX_CHECK((size_t)d->cand_cap * 4 + sizeof(lb_smem) <= (size_t)nb->smem_optin,
                             HX_ERR_UNSUPPORTED,
                             "pair search: %d candidate super-clusters for one list entry",
                             st->max_cand);
                    grow = 1;
                }
                for (int c = 0; c < 2; c++) {
                    if (st->nitems[c] > d->cap_items[c]) {
                        d->cap_items[c] = GROW_TO(st->nitems[c], d->cap_items[c]);
                        grow = 1;
                    }
                    if (st->nent[c] > d->cap_ent[c]) {
                        d->cap_ent[c] = GROW_TO(st->nent[c], d->cap_ent[c]);
                        grow = 1;
                    }
                }
                if (st->nexcl + 1 > d->cap_excl) {
                    d->cap_excl = GROW_TO(st->nexcl + 1, d->cap_excl);
                    HX_CHECK(d->cap_excl < (1 << 24), HX_ERR_UNSUPPORTED,
                             "pair search: %d exclusion masks exceed the 24-bit index", st->nexcl);
                    grow = 1;
                }
            }
        }
        if (!grow)
            break;
        HX_CHECK(attempt < 6, HX_ERR_INTERNAL,
                 "pair search: buffers still too small after %d attempts (overflow flags %#x)",
                 attempt + 1, st->overflow);
        nb->regrows++;
        hx_log(HX_LOG_DEBUG,
               "GPU pair search: growing buffers (columns %d, super-clusters %d, items %d+%d, "
               "entries %d+%d, exclusion masks %d, column sort %d, candidates %d) and searching "
               "again",
               d->cap_cols, d->cap_sc, d->cap_items[0], d->cap_items[1], d->cap_ent[0],
               d->cap_ent[1], d->cap_excl, d->sort_cap, d->cand_cap);
        HX_TRY(alloc_search(nb, s));
        part = GNB_PART_ALL; /* the home part's results went with the buffers */
    }
    nb->nsc = st->nsc;
    nb->ncols = st->ncols;
    for (int z = 0; z <= d->nz; z++)
        nb->zsc[z] = st->zsc[z];
    for (int c = 0; c < 2; c++) {
        nb->nent[c] = st->nent[c];
        nb->nitems[c] = st->nitems[c];
        nb->ncp_outer[c] = (long long)st->ncp_outer[c];
        nb->ncp_inner[c] = (long long)st->ncp_inner[c];
    }
    nb->nexcl = st->nexcl;
    nb->items_est = (long long)st->nitems[0] + st->nitems[1];
    nb->have_list = 1;
    nb->searches++;
    nb->home_parts += part == GNB_PART_REST;
    return HX_OK;
}
