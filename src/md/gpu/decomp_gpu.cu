/* The decomposed search step on the device (src/md/gpu/decomp_gpu.h): migration, the new local
 * set, the plan's index maps and the local topology in kernels, messages through a transport,
 * counts to the host once.
 *
 * Per search step and local domain, in stream order (docs/design/gpu-search.md has the why):
 *
 *   k_mig_init     per home molecule: centre, wrap into the box, target cell, "moved too far";
 *                  the last block: the control record's counters reset
 *   per decomposed dimension d_k, both directions at once:
 *     k_mig_mark_scan  molecules leaving up or down marked; the last block numbers their records
 *                  and atoms within each direction's message and writes the headers
 *     k_mig_pack   records and atoms packed, the leavers taken off
 *     messages     up and down (up only with two cells along d_k: one neighbour)
 *     k_mig_unpack (one block) arrivals appended to the pool, from below then from above;
 *                  after the last dimension's, the same block: kept home and pool molecules,
 *                  the few arrivals rank-sorted (fin_a)
 *   k_fin_b        the two sorted lists merged by binary searches; the last block: the new
 *                  home's molecule starts, the sizes and offsets of its SETTLE/SHAKE/bonded/free
 *                  lists
 *   k_fin_d        the atoms copied into the new home; the lists, masses, the local arrays'
 *                  home part with the atoms' topology
 *   per pulse:
 *     k_pulse_sel_scan  every candidate's class under the selection with corner rounding; the
 *                  last block ranks them within the classes (stable order by the sender's zone)
 *     k_pulse_pack the index map into the device plan image, the atoms packed
 *     message
 *     k_pulse_recv the atoms appended to the local arrays, with their topology
 *   the control record to pinned host memory; one synchronisation
 *
 * The scans run in one block with a running carry over tiles of the block's size and touch a
 * few ints per element: the element counts of one domain are 10^3-10^4, where one block's loop
 * costs less than the three launches of a many-block scan. Where a many-block pass feeds a scan,
 * the scan is that kernel's last block (hx_last_block), not a kernel of its own: with 4-8 processes
 * on one GPU each kernel boundary costs 4-8 us. Whatever moves an atom's data runs in many
 * blocks (one block's loads and stores of 10^4 atoms took 60-90 µs on an H100: one SM's share
 * of the memory system). With a transport that moves data on the device the sequence is
 * captured once into a CUDA graph and replayed at every search step (its arguments never change
 * between growths: the home lists of the new home are copied over the old ones at the end, not
 * swapped). */
#include "md/gpu/decomp_gpu_impl.cuh"
#include "core/error.h"
#include "core/fault.h"
#include "core/timer.h"
#include "core/wait.h"
#include "dd/home.h"
#include "gpu/context.h"
#include "gpu/trace.h"
#include "dd/plan_image.h"
#include "halox/log.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- block scan ------------------------------------------------------------------------------ */

static __device__ __forceinline__ int4 i4(int x, int y, int z, int w)
{
    return make_int4(x, y, z, w);
}
static __device__ __forceinline__ int4 i4add(int4 a, int4 b)
{
    return make_int4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}
static __device__ __forceinline__ int4 i4sub(int4 a, int4 b)
{
    return make_int4(a.x - b.x, a.y - b.y, a.z - b.z, a.w - b.w);
}
static __device__ __forceinline__ int i4get(int4 a, int c)
{
    return c == 0 ? a.x : c == 1 ? a.y : c == 2 ? a.z : a.w;
}
static __device__ __forceinline__ int4 i4up(int4 v, int o)
{
    int4 r;
    r.x = __shfl_up_sync(HX_FULL_MASK, v.x, o);
    r.y = __shfl_up_sync(HX_FULL_MASK, v.y, o);
    r.z = __shfl_up_sync(HX_FULL_MASK, v.z, o);
    r.w = __shfl_up_sync(HX_FULL_MASK, v.w, o);
    return r;
}

#ifdef HX_CUDA_EMULATION
/* The emulation runs every warp shuffle as two barriers of host threads: a scan of tiles
 * costs tens of them per tile. By default it scans in shared memory with one thread instead
 * (three barriers); HALOX_EMU_SHUFFLE_SCAN=1 runs the GPU's code below (the tests do for one
 * case). Read by the host at every search step (launch). */
static int gdd_emu_shuffle = 0;
static int4 gdd_scan4_serial(int4 v, int4 *total)
{
    __shared__ int4 buf[GDD_BT + 1];
    buf[threadIdx.x] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        int4 acc = i4(0, 0, 0, 0);
        for (int t = 0; t < GDD_BT; t++) {
            const int4 x = buf[t];
            buf[t] = acc;
            acc = i4add(acc, x);
        }
        buf[GDD_BT] = acc;
    }
    __syncthreads();
    const int4 r = buf[threadIdx.x];
    *total = buf[GDD_BT];
    __syncthreads();
    return r;
}
#endif

/* Exclusive prefix of v over the block's GDD_BT threads (every thread calls it); *total: the
 * block's sum. s: GDD_NW + 1 int4 of shared memory. */
static __device__ int4 gdd_scan4(int4 v, int4 *total, int4 *s)
{
#ifdef HX_CUDA_EMULATION
    if (!gdd_emu_shuffle)
        return gdd_scan4_serial(v, total);
#endif
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    int4 inc = v;
    for (int o = 1; o < 32; o <<= 1) {
        const int4 t = i4up(inc, o);
        if (lane >= o)
            inc = i4add(inc, t);
    }
    if (lane == 31)
        s[w] = inc;
    __syncthreads();
    if (w == 0) {
        const int4 x = lane < GDD_NW ? s[lane] : i4(0, 0, 0, 0);
        int4 xi = x;
        for (int o = 1; o < 32; o <<= 1) {
            const int4 t = i4up(xi, o);
            if (lane >= o)
                xi = i4add(xi, t);
        }
        if (lane < GDD_NW)
            s[lane] = i4sub(xi, x);
        if (lane == 31)
            s[GDD_NW] = xi;
    }
    __syncthreads();
    const int4 r = i4add(s[w], i4sub(inc, v));
    *total = s[GDD_NW];
    __syncthreads(); /* s is reused by the next call */
    return r;
}

/* The scan after a many-block pass: run by that kernel's last block (hx_last_block). */
static __device__ __forceinline__ bool gdd_last(gdd_ctl *C)
{
    __shared__ int s_last;
    return hx_last_block(&C->tick, &s_last);
}

static __device__ __forceinline__ void need(gdd_ctl *C, int cap, long long n)
{
    atomicMax(&C->need[cap], n > INT_MAX ? INT_MAX : (int)n);
}

/* ---- geometry, exactly as hx_dd_domain_of_point -----------------------------------------------
 */

static __device__ __forceinline__ int cell_of(const gdd_dev &D, double c, int d)
{
    const double xd = gdd_sub(c, gdd_mul(floor(gdd_div(c, D.box[d])), D.box[d]));
    const int k = (int)gdd_div(xd, D.cell[d]);
    return k < 0 ? 0 : (k >= D.grid[d] ? D.grid[d] - 1 : k);
}

static __device__ __forceinline__ int tgt_coord(int tgt, int d)
{
    return (tgt >> (10 * d)) & 1023;
}

/* ---- kernels ------------------------------------------------------------------------------- */

/* Per home molecule: the centre (hx_molecule_centre), the wrap of hx_wrap_molecules (the
 * molecule shifted by box edges so that its centre is in [0, box)), the centre again from the
 * shifted atoms and the cell that owns it, as hx_migrate computes them. The current home's size
 * is the last commit's (device memory, so that the launch's arguments are the same at every
 * step). The last block then starts the step's control record: zeros, the current home, the
 * "moved too far" minimum the blocks gathered in D.far (one kernel, not a reset kernel before
 * it: nothing of this kernel but that minimum and the block count is in the record). */
__global__ void __launch_bounds__(GDD_MT) k_mig_init(gdd_dev D)
{
    __shared__ int s_last;
    const int m = blockIdx.x * blockDim.x + threadIdx.x;
    gdd_ctl *C = D.ctl;
    if (m < D.cur[0]) {
        const int a0 = D.ams[m], a1 = D.ams[m + 1];
        const double n = (double)(a1 - a0);
        double c[3] = {0.0, 0.0, 0.0}, s[3], c2[3] = {0.0, 0.0, 0.0};
        for (int a = a0; a < a1; a++)
            for (int d = 0; d < 3; d++)
                c[d] = gdd_add(c[d], D.ax[3 * a + d]);
        for (int d = 0; d < 3; d++) {
            c[d] = gdd_div(c[d], n);
            s[d] = gdd_mul(-floor(gdd_div(c[d], D.box[d])), D.box[d]);
            if (gdd_add(c[d], s[d]) >= D.box[d]) /* rounding at the upper edge */
                s[d] = gdd_sub(s[d], D.box[d]);
        }
        for (int a = a0; a < a1; a++)
            for (int d = 0; d < 3; d++) {
                double v = D.ax[3 * a + d];
                if (s[d] != 0.0)
                    v = gdd_add(v, s[d]);
                D.awx[3 * a + d] = v;
                c2[d] = gdd_add(c2[d], v);
            }
        int t[3];
        for (int d = 0; d < 3; d++)
            t[d] = cell_of(D, gdd_div(c2[d], n), d);
        D.atgt[m] = t[0] | (t[1] << 10) | (t[2] << 20);
        D.akeep[m] = 1;
        for (int k = 0; k < D.ndim; k++) {
            const int d = D.dims[k], g = D.grid[d];
            const int delta = ((t[d] - D.coord[d]) % g + g) % g;
            if (delta > 1 && delta < g - 1) {
                const int dom = (t[0] * D.grid[1] + t[1]) * D.grid[2] + t[2];
                atomicMin(D.far, ((unsigned long long)D.amg[m] << 32) | (unsigned)dom);
            }
        }
    }
    if (!hx_last_block(&C->tick, &s_last))
        return;
    int *w = (int *)C;
    for (size_t k = threadIdx.x; k < sizeof(gdd_ctl) / sizeof(int); k += blockDim.x)
        w[k] = 0;
    __syncthreads();
    if (threadIdx.x != 0)
        return;
    C->nmol_a = D.cur[0];
    C->n_home_a = D.cur[1];
    C->err_far = hx_ldv(D.far);
    *D.far = ~0ull;
    C->first_o = -1;
}

/* Molecule w of the migration's index space [home | pool]: its atom count if it leaves along d
 * in this dimension's pass, positive up (to the neighbour above), negative down; 0 if it stays. */
static __device__ __forceinline__ int mig_leaves(const gdd_dev &D, int w, int na, int d, int g)
{
    int keep, tgt, natoms;
    if (w < na) {
        keep = D.akeep[w];
        tgt = D.atgt[w];
        natoms = D.ams[w + 1] - D.ams[w];
    } else {
        keep = D.pkeep[w - na];
        tgt = D.ptgt[w - na];
        natoms = D.pna[w - na];
    }
    if (!keep)
        return 0;
    const int delta = ((tgt_coord(tgt, d) - D.coord[d]) % g + g) % g;
    if (delta == 0)
        return 0;
    /* with two cells both neighbours are the same domain: everything goes "up" */
    return delta == 1 ? natoms : -natoms;
}

/* Where a molecule's atoms are: the current home's (wrapped positions) or the pool's. */
typedef struct mol_src {
    const double *x, *v;
    const int *gid, *molg;
    int a0;
} mol_src;
static __device__ __forceinline__ mol_src home_or_pool(const gdd_dev &D, int home, int k)
{
    mol_src m;
    m.x = home ? D.awx : D.px;
    m.v = home ? D.av : D.pv;
    m.gid = home ? D.agid : D.pgid;
    m.molg = home ? D.amolg : D.pmolg;
    m.a0 = home ? D.ams[k] : D.pms[k];
    return m;
}

/* A migration message's header from the scan's totals (n records, natoms atoms): empty, with
 * the capacity it needs recorded, when it does not fit. */
static __device__ void mig_head(gdd_ctl *C, char *sbuf, long long cap_bytes, int n, int natoms)
{
    const long long bytes =
        (long long)sizeof(gdd_msg_head) + 16LL * n + (long long)sizeof(gdd_matom) * natoms;
    const int fits = bytes <= cap_bytes;
    if (!fits)
        need(C, GDD_CAP_MIG, bytes);
    gdd_msg_head h;
    memset(&h, 0, sizeof h);
    h.bytes = fits ? bytes : (long long)sizeof h;
    h.n = fits ? n : 0;
    h.natoms = fits ? natoms : 0;
    *(gdd_msg_head *)sbuf = h;
}

/* One pass of hx_migrate per decomposed dimension d_k: the molecules whose cell is the neighbour
 * along d_k above go into the message sbuf[0], those below into sbuf[1], each in the order of the
 * index space, and are removed. Both directions in one pass: a molecule that arrives from below
 * has this domain's coordinate along d_k (it moved at most one cell), so it never leaves the
 * other way in the same dimension, and the two directions' leavers are disjoint (with three cells
 * or more; with two, both neighbours are one domain and everything goes up: sbuf[1] is NULL and
 * no down message is sent). The sets and orders are those of the two passes of hx_migrate, up
 * then down. Two kernels: the mark and scan (blocks of GDD_BT: each molecule's signed atom count
 * in mgo; then the last block alone scans, both directions at once: each leaver's record and
 * first atom within its message, the messages' headers), the pack (many blocks: records and
 * atoms, the leavers taken off). */
typedef struct mig_bufs {
    char *b[2];
} mig_bufs;

__global__ void __launch_bounds__(GDD_BT)
    k_mig_mark_scan(gdd_dev D, int k, mig_bufs sbuf, long long cap_bytes)
{
    __shared__ int4 s_scan[GDD_NW + 1];
    gdd_ctl *C = D.ctl;
    const int na = C->nmol_a, n = na + C->pool_nmol;
    {
        const int w = blockIdx.x * blockDim.x + threadIdx.x;
        const int d = D.dims[k];
        if (w < n)
            D.mgo[w] = mig_leaves(D, w, na, d, D.grid[d]);
    }
    if (!gdd_last(C))
        return;
    int4 carry = i4(0, 0, 0, 0); /* up records, up atoms, down records, down atoms */
    for (int base = 0; base < n; base += GDD_BT) {
        const int w = base + (int)threadIdx.x;
        const int g = w < n ? hx_ldv(&D.mgo[w]) : 0;
        const int up = g > 0 ? g : 0, down = g < 0 ? -g : 0;
        int4 t;
        const int4 ex = gdd_scan4(i4(up > 0, up, down > 0, down), &t, s_scan);
        if (up > 0) {
            D.mrec[w] = carry.x + ex.x;
            D.mfirst[w] = carry.y + ex.y;
        } else if (down > 0) {
            D.mrec[w] = carry.z + ex.z;
            D.mfirst[w] = carry.w + ex.w;
        }
        carry = i4add(carry, t);
    }
    if (threadIdx.x != 0)
        return;
    mig_head(C, sbuf.b[0], cap_bytes, carry.x, carry.y);
    if (sbuf.b[1])
        mig_head(C, sbuf.b[1], cap_bytes, carry.z, carry.w);
}

__global__ void __launch_bounds__(GDD_MT) k_mig_pack(gdd_dev D, mig_bufs sbuf)
{
    const gdd_ctl *C = D.ctl;
    const int na = C->nmol_a, n = na + C->pool_nmol;
    const int w = blockIdx.x * blockDim.x + threadIdx.x;
    if (w >= n)
        return;
    const int g = D.mgo[w];
    if (g == 0)
        return;
    const int na_w = g > 0 ? g : -g;
    char *buf = g > 0 ? sbuf.b[0] : sbuf.b[1]; /* a select, not an indexed (local) array */
    /* a home molecule (w < na) or one of the pool's (w - na) */
    const int home = w < na, k = home ? w : w - na;
    (home ? D.akeep : D.pkeep)[k] = 0;
    /* k_mig_mark_scan's header: no molecules when the message did not fit (there is a
     * leaver) */
    const int nrec = ((const gdd_msg_head *)buf)->n;
    if (nrec == 0)
        return;
    const int first = D.mfirst[w];
    gdd_mmol *recs = (gdd_mmol *)(buf + sizeof(gdd_msg_head));
    gdd_matom *atoms = (gdd_matom *)(buf + sizeof(gdd_msg_head) + 16 * (size_t)nrec);
    recs[D.mrec[w]] = {home ? D.amg[k] : D.pmg[k], na_w, home ? D.atgt[k] : D.ptgt[k], first};
    const mol_src m = home_or_pool(D, home, k);
    for (int j = 0; j < na_w; j++) {
        gdd_matom r;
        for (int c = 0; c < 3; c++) {
            r.x[c] = m.x[3 * (m.a0 + j) + c];
            r.v[c] = m.v[3 * (m.a0 + j) + c];
        }
        r.gid = m.gid[m.a0 + j];
        r.molg = m.molg[m.a0 + j];
        atoms[first + j] = r;
    }
}

static __device__ void fin_a(const gdd_dev &D, int pool_nmol);

/* The molecules of a dimension's migration messages join the pool: from below (rbuf[0], sent
 * up), then from above (rbuf[1], NULL with two cells), the order of hx_migrate's two passes.
 * After the last dimension's (fin 1) the same block goes on with the new local set's first part
 * (fin_a): a kernel boundary fewer. */
__global__ void __launch_bounds__(GDD_BT) k_mig_unpack(gdd_dev D, mig_bufs rbuf, int fin)
{
    gdd_ctl *C = D.ctl;
    const int pm0 = C->pool_nmol, pa0 = C->pool_natoms;
    gdd_msg_head h[2];
    memset(h, 0, sizeof h);
    for (int q = 0; q < 2; q++)
        if (rbuf.b[q])
            h[q] = *(const gdd_msg_head *)rbuf.b[q];
    const long long nm = (long long)h[0].n + h[1].n, nat = (long long)h[0].natoms + h[1].natoms;
    const int fits = pm0 + nm <= D.cap[GDD_CAP_PMOL] && pa0 + nat <= D.cap[GDD_CAP_POOL];
    int m0 = pm0, a0 = pa0;
    if (!fits && threadIdx.x == 0) {
        need(C, GDD_CAP_PMOL, (long long)pm0 + nm);
        need(C, GDD_CAP_POOL, (long long)pa0 + nat);
    }
    for (int q = 0; q < 2 && fits; q++) {
        if (!rbuf.b[q])
            continue;
        const char *rb = rbuf.b[q];
        const gdd_mmol *recs = (const gdd_mmol *)(rb + sizeof(gdd_msg_head));
        const gdd_matom *atoms =
            (const gdd_matom *)(rb + sizeof(gdd_msg_head) + 16 * (size_t)h[q].n);
        for (int j = threadIdx.x; j < h[q].n; j += blockDim.x) {
            const gdd_mmol r = recs[j];
            const int p = m0 + j;
            D.pmg[p] = r.gid;
            D.pna[p] = r.natoms;
            D.pms[p] = a0 + r.first;
            D.pkeep[p] = 1;
            D.ptgt[p] = r.tgt;
        }
        for (int j = threadIdx.x; j < h[q].natoms; j += blockDim.x) {
            const gdd_matom r = atoms[j];
            const int p = a0 + j;
            for (int c = 0; c < 3; c++) {
                D.px[3 * p + c] = r.x[c];
                D.pv[3 * p + c] = r.v[c];
            }
            D.pgid[p] = r.gid;
            D.pmolg[p] = r.molg;
        }
        m0 += h[q].n;
        a0 += h[q].natoms;
    }
    __syncthreads(); /* the pool's arrays, before fin_a reads them */
    if (threadIdx.x == 0) {
        C->pool_nmol = m0;
        C->pool_natoms = a0;
    }
    if (fin)
        fin_a(D, m0);
}

/* The kept molecules (home ones, already in increasing global index, and arrived ones), and the
 * arrivals sorted by global index: each one's rank among them (few per step), one block (the
 * last k_mig_unpack's, with the pool's final size). */
static __device__ void fin_a(const gdd_dev &D, int pool_nmol)
{
    __shared__ int4 s_scan[GDD_NW + 1];
    gdd_ctl *C = D.ctl;
    const int na = C->nmol_a, n = na + pool_nmol;
    int4 carry = i4(0, 0, 0, 0);
    for (int base = 0; base < n; base += GDD_BT) {
        const int w = base + (int)threadIdx.x;
        const int kh = w < na && D.akeep[w];
        const int kp = w >= na && w < n && D.pkeep[w - na];
        int4 t;
        const int4 ex = gdd_scan4(i4(kh, kp, 0, 0), &t, s_scan);
        if (kh) {
            D.hidx[carry.x + ex.x] = w;
            D.hgid[carry.x + ex.x] = D.amg[w];
        }
        if (kp) {
            D.plist[carry.y + ex.y] = w - na;
            D.pg[carry.y + ex.y] = D.pmg[w - na];
        }
        carry = i4add(carry, t);
    }
    if (threadIdx.x == 0) {
        C->nH = carry.x;
        C->nP = carry.y;
    }
    __syncthreads(); /* pg and plist of every thread */
    const int nP = carry.y;
    for (int t = threadIdx.x; t < nP; t += blockDim.x) {
        const int g = D.pg[t];
        int r = 0;
        for (int q = 0; q < nP; q++)
            r += D.pg[q] < g;
        D.psorted[r] = D.plist[t];
        D.psg[r] = g;
    }
}

static __device__ __forceinline__ int lower_bound(const int *a, int n, int key)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        const int mid = (lo + hi) >> 1;
        if (a[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Per new home molecule of global index g: its kind and what it adds to the SETTLE / SHAKE /
 * bonded / free lists (v1) and to the bonded interactions by kind (v2). */
static __device__ __forceinline__ void mol_kind(const gdd_dev &D, int g, int *cls, int4 *info,
                                                int4 *v1, int4 *v2)
{
    *cls = D.tab.mol_class[g];
    *info = D.tab.cl_info[*cls];
    const int kind = info->z;
    const int st = (kind & GDD_K_SETTLE) != 0, sh = (kind & GDD_K_SHAKE) != 0;
    const int bd = (kind & GDD_K_BONDED) != 0;
    *v1 = i4(st, sh, bd, st || sh ? 0 : info->x);
    *v2 = bd ? D.tab.cl_bcount[*cls] : i4(0, 0, 0, 0);
}

/* The same for new home molecule m (its global index from bmg). */
static __device__ __forceinline__ void home_mol(const gdd_dev &D, int m, int *g, int *cls,
                                                int4 *info, int4 *v1, int4 *v2)
{
    *g = D.bmg[m];
    mol_kind(D, *g, cls, info, v1, v2);
}

/* Every kept molecule's place in the merged order (blocks of GDD_BT, binary searches in the
 * other list); then the last block alone, in one pass over the new home (tiles of GDD_BT, three
 * scans each): the molecule starts (the atoms are copied by k_fin_d's many blocks), and the
 * SETTLE / SHAKE / bonded / free lists of the new home by kind, in home order as the GPU
 * backend's set_local builds them: each molecule's offsets into the lists (ho1, ho2) and the
 * lists' sizes. (Two passes before, the second reading back what the first wrote.) */
__global__ void __launch_bounds__(GDD_BT) k_fin_b(gdd_dev D)
{
    __shared__ int4 s_scan[GDD_NW + 1];
    gdd_ctl *C = D.ctl;
    const int nH = C->nH, nP = C->nP, nm = nH + nP;
    const int room = nm <= D.cap[GDD_CAP_HMOL];
    {
        const int t = blockIdx.x * blockDim.x + threadIdx.x;
        if (!room) {
            if (t == 0)
                need(C, GDD_CAP_HMOL, (long long)nm);
        } else if (t < nH) {
            D.fsrc[t + lower_bound(D.psg, nP, D.hgid[t])] = D.hidx[t];
        } else if (t < nm) {
            D.fsrc[(t - nH) + lower_bound(D.hgid, nH, D.psg[t - nH])] = -1 - D.psorted[t - nH];
        }
    }
    if (!gdd_last(C))
        return;
    /* without room the home stays empty: nmol 0 */
    const int nmol = room ? nm : 0;
    int4 carry = i4(0, 0, 0, 0), c1 = i4(0, 0, 0, 0), c2 = i4(0, 0, 0, 0);
    int first = -1;
    for (int base = 0; base < nmol; base += GDD_BT) {
        const int f = base + (int)threadIdx.x;
        int na_f = 0, cls = 0;
        int4 info = i4(0, 0, 0, 0), v1 = i4(0, 0, 0, 0), v2 = i4(0, 0, 0, 0);
        if (f < nmol) {
            const int src = hx_ldv(&D.fsrc[f]);
            na_f = src >= 0 ? D.ams[src + 1] - D.ams[src] : D.pna[-1 - src];
            const int g = src >= 0 ? D.amg[src] : D.pmg[-1 - src];
            D.bmg[f] = g;
            mol_kind(D, g, &cls, &info, &v1, &v2);
        }
        int4 t, t1, t2;
        const int4 ex = gdd_scan4(i4(na_f, 0, 0, 0), &t, s_scan);
        const int4 e1 = i4add(c1, gdd_scan4(v1, &t1, s_scan));
        const int4 e2 = i4add(c2, gdd_scan4(v2, &t2, s_scan));
        if (f < nmol) {
            const int a0 = carry.x + ex.x;
            D.bms[f] = a0;
            D.ho1[f] = e1;
            D.ho2[f] = e2;
            if (v1.x && e1.x == 0)
                first = a0 + D.tab.cl_settle[cls].x;
        }
        carry = i4add(carry, t);
        c1 = i4add(c1, t1);
        c2 = i4add(c2, t2);
    }
    /* a home past its store's capacity is no home (nmol 0, empty lists): the step runs again
     * once it grew (carry is the same in every thread) */
    const int fits = carry.x <= D.cap[GDD_CAP_HOME];
    if (!fits) {
        c1 = i4(0, 0, 0, 0);
        c2 = i4(0, 0, 0, 0);
    }
    if (fits && first >= 0) /* one thread: the first SETTLE group's oxygen */
        C->first_o = first;
    if (threadIdx.x == 0) {
        if (!fits)
            need(C, GDD_CAP_HOME, carry.x);
        C->n_home = fits ? carry.x : 0;
        C->nmol = fits ? nmol : 0;
        D.bms[nmol] = carry.x;
        /* the home part of the local arrays must fit: else no local set (the step runs again) */
        const int local_ok = C->n_home <= D.cap[GDD_CAP_LOCAL];
        C->nsettle = c1.x;
        C->nshake = c1.y;
        C->nbonded = c1.z;
        C->nfree = c1.w;
        C->bcount[0] = c2.x;
        C->bcount[1] = c2.y;
        C->bcount[2] = c2.z;
        C->bcount[3] = c2.w;
        C->n_local = local_ok ? C->n_home : 0;
        C->map_len = 0;
        if (!local_ok)
            need(C, GDD_CAP_LOCAL, C->n_home);
    }
}

/* Topology of local atom a, an atom of global molecule m with global index gid, from the class
 * tables: type, charge, exclusions, position in the molecule. */
static __device__ __forceinline__ void local_topo(const gdd_dev &D, int a, int m, int gid)
{
    const int cls = D.tab.mol_class[m];
    const int pos = gid - D.tab.mol_first[m];
    const int ca = D.tab.cl_info[cls].y + pos;
    D.ltype[a] = D.tab.ca_type[ca];
    D.lq[a] = D.tab.ca_q[ca];
    D.lexcl[a] = D.tab.ca_excl[ca];
    D.lmpos[a] = (unsigned char)pos;
}

/* The new home, a thread per molecule (none when k_fin_b found no room: nmol 0): its atoms
 * copied, then the lists k_fin_b sized, the masses, and the home part of the local arrays with
 * the atoms' topology. */
__global__ void __launch_bounds__(GDD_MT) k_fin_d(gdd_dev D)
{
    const int f = blockIdx.x * blockDim.x + threadIdx.x;
    gdd_ctl *C = D.ctl;
    if (f >= C->nmol)
        return;
    const int src = D.fsrc[f], a0 = D.bms[f], na_f = D.bms[f + 1] - a0;
    {
        const mol_src m = home_or_pool(D, src >= 0, src >= 0 ? src : -1 - src);
        for (int j = 0; j < na_f; j++) {
            for (int c = 0; c < 3; c++) {
                D.bx[3 * (a0 + j) + c] = m.x[3 * (m.a0 + j) + c];
                D.bv[3 * (a0 + j) + c] = m.v[3 * (m.a0 + j) + c];
            }
            D.bgid[a0 + j] = m.gid[m.a0 + j];
            D.bmolg[a0 + j] = m.molg[m.a0 + j];
        }
    }
    const int local_ok = C->n_home <= D.cap[GDD_CAP_LOCAL];
    int4 info, v1, v2;
    int g, cls;
    home_mol(D, f, &g, &cls, &info, &v1, &v2);
    const int4 e1 = D.ho1[f], e2 = D.ho2[f];
    const int kind = info.z;
    if (v1.x) {
        const int4 so = D.tab.cl_settle[cls];
        D.settle[3 * e1.x + 0] = a0 + so.x;
        D.settle[3 * e1.x + 1] = a0 + so.y;
        D.settle[3 * e1.x + 2] = a0 + so.z;
        /* the update's fast path: water w is atoms first + 3 w + (0, 1, 2), standard masses */
        const int o = C->first_o + 3 * e1.x;
        if (!(kind & GDD_K_STDWATER) || a0 + so.x != o || a0 + so.y != o + 1 || a0 + so.z != o + 2)
            atomicOr(&C->settle_bad, 1);
    }
    if (v1.y) {
        D.shs[e1.y] = a0;
        D.sht[e1.y] = D.tab.cl_settle[cls].w;
        D.shg[e1.y] = g;
    }
    if (v1.z) {
        D.bds[e1.z] = a0;
        D.bdt[e1.z] = info.w;
        D.bdg[e1.z] = g;
        D.boff[e1.z] = e2;
    }
    for (int q = 0; q < v1.w; q++)
        D.freeat[e1.w + q] = a0 + q;
    for (int q = 0; q < info.x; q++) {
        const int a = a0 + q;
        D.hm[a] = D.tab.ca_m[info.y + q];
        D.him[a] = D.tab.ca_invm[info.y + q];
        if (!local_ok)
            continue;
        for (int c = 0; c < 3; c++)
            D.lx[3 * a + c] = D.bx[3 * a + c];
        const int gid = D.bgid[a];
        D.lgid[a] = gid;
        D.lmol[a] = g;
        D.lzone[a] = 0;
        D.lfrom[a] = -1;
        local_topo(D, a, g, gid);
    }
}

/* hx_plan's selection of an atom for pulse P: distance to the receiver's cell along d_k from
 * our lower boundary, plus, along earlier dimensions in which the atom is a halo atom, the
 * squared distance past our upper boundary (corner rounding). */
static __device__ __forceinline__ int pulse_select(const gdd_dev &D, const gdd_pulse &P, int a,
                                                   int *ci)
{
    const double *xa = &D.lx[3 * a];
    const double t = gdd_sub(xa[P.dim], P.lo);
    double d2 = t > 0.0 ? gdd_mul(t, t) : 0.0;
    const int bits = P.zbits[D.lzone[a]];
    for (int kk = 0; kk < P.k; kk++) {
        if (bits & (1 << kk)) {
            const double u = gdd_sub(xa[D.dims[kk]], P.hi_prev[kk]);
            if (u > 0.0)
                d2 = gdd_add(d2, gdd_mul(u, u));
        }
    }
    *ci = bits & ((1 << P.k) - 1);
    return d2 < D.rc2;
}

/* Candidates of pulse p at the sender: every local atom for the first pulse of a dimension,
 * else what the previous pulse received. */
static __device__ __forceinline__ void pulse_cands(const gdd_ctl *C, const gdd_pulse &P, int p,
                                                   int *c0, int *n)
{
    *c0 = 0;
    *n = C->n_local;
    if (P.pin > 0) {
        *c0 = C->atom_offset[p - 1];
        *n = C->recv_count[p - 1];
    }
}

/* One pulse of hx_plan_build at the sender, in two kernels: the selection and scan (blocks of
 * GDD_BT: each candidate's class, 1 + its corner bits, or 0, its rank in its class within the
 * block, the block's class counts and the pulse's dependencies; then the last block scans the
 * blocks' counts: each block's offsets, the totals, the message's header), the map and the
 * packed atoms (many blocks: a selected candidate's place is its class's start, its block's
 * offset and its rank in the block), in a stable order by zone number (zone 0 first:
 * dep_offset). The last block used to rank every candidate itself, a tile of GDD_BT at a time
 * (11 tiles for a domain of 11k atoms, one after the other); the blocks' ranks run at once. */
__global__ void __launch_bounds__(GDD_BT)
    k_pulse_sel_scan(gdd_dev D, gdd_pulse P, int p, char *sbuf, long long cap_bytes)
{
    __shared__ unsigned long long s_deps;
    __shared__ int4 s_scan[GDD_NW + 1];
    gdd_ctl *C = D.ctl;
    int c0, n;
    pulse_cands(C, P, p, &c0, &n);
    if (threadIdx.x == 0)
        s_deps = 0;
    __syncthreads();
    {
        const int e = blockIdx.x * blockDim.x + threadIdx.x;
        int code = 0;
        if (e < n) {
            int ci = 0;
            const int a = c0 + e;
            const int sel = pulse_select(D, P, a, &ci);
            code = sel ? 1 + ci : 0;
            D.psel[e] = (unsigned char)code;
            if (sel && D.lfrom[a] >= 0)
                atomicOr(&s_deps, 1ull << D.lfrom[a]);
        }
        int4 t;
        const int4 ex = gdd_scan4(i4(code == 1, code == 2, code == 3, code == 4), &t, s_scan);
        if (code)
            D.prank[e] = i4get(ex, code - 1);
        if (threadIdx.x == 0)
            D.pblk[blockIdx.x] = t;
    }
    __syncthreads();
    if (threadIdx.x == 0 && s_deps)
        atomicOr(&C->deps[p], s_deps);
    if (!gdd_last(C))
        return;
    /* the blocks' class counts into offsets (exclusive, in block order), the totals in carry */
    const int nb = (n + GDD_BT - 1) / GDD_BT;
    int4 carry = i4(0, 0, 0, 0);
    for (int base = 0; base < nb; base += GDD_BT) {
        const int b = base + (int)threadIdx.x;
        const int *pb = (const int *)&D.pblk[b];
        const int4 v = b < nb ? i4(hx_ldv(pb), hx_ldv(pb + 1), hx_ldv(pb + 2), hx_ldv(pb + 3))
                              : i4(0, 0, 0, 0);
        int4 t;
        const int4 ex = gdd_scan4(v, &t, s_scan);
        if (b < nb)
            D.pblk[b] = i4add(carry, ex);
        carry = i4add(carry, t);
    }
    if (threadIdx.x != 0)
        return;
    const int4 tot = carry;
    /* counting sort by zone number: the classes' starts in the order of their zones */
    for (int ci = 0; ci < 4; ci++) {
        int start = 0;
        for (int cj = 0; cj < 4; cj++)
            if (P.zone_of_ci[cj] < P.zone_of_ci[ci])
                start += i4get(tot, cj);
        C->pstart[ci] = start;
    }
    const int count = tot.x + tot.y + tot.z + tot.w;
    const int map0 = C->map_len;
    C->atom_offset[p] = C->n_local; /* where k_pulse_recv stores what this domain receives */
    const long long bytes = (long long)sizeof(gdd_pmsg_head) + (long long)sizeof(gdd_patom) * count;
    const int fits_map = map0 + count <= D.cap[GDD_CAP_MAP];
    const int fits = bytes <= cap_bytes;
    C->pmap0 = map0;
    C->pmap_fits = fits_map;
    gdd_pmsg_head h;
    memset(&h, 0, sizeof h);
    h.bytes = fits ? bytes : (long long)sizeof h;
    h.n = fits ? count : 0;
    for (int ci = 0; ci < 4; ci++)
        if (fits && i4get(tot, ci) > 0)
            h.zc[P.zone_of_ci[ci]] = i4get(tot, ci);
    *(gdd_pmsg_head *)sbuf = h;
    for (int ci = 0; ci < 4; ci++)
        if (i4get(tot, ci) > 0)
            C->send_zc[p][P.zone_of_ci[ci]] = i4get(tot, ci);
    C->map_len = map0 + count;
    if (!fits_map)
        need(C, GDD_CAP_MAP, (long long)map0 + count);
    if (!fits)
        need(C, GDD_CAP_PMSG, bytes);
}

__global__ void __launch_bounds__(GDD_MT) k_pulse_pack(gdd_dev D, gdd_pulse P, int p, char *sbuf)
{
    const gdd_ctl *C = D.ctl;
    int c0, n;
    pulse_cands(C, P, p, &c0, &n);
    const int e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= n)
        return;
    const int code = D.psel[e];
    if (!code)
        return;
    const int a = c0 + e,
              pos = C->pstart[code - 1] + i4get(D.pblk[e / GDD_BT], code - 1) + D.prank[e];
    if (C->pmap_fits)
        D.imap[C->pmap0 + pos] = a;
    if (((const gdd_pmsg_head *)sbuf)->n > 0) { /* k_pulse_sel_scan's header: 0: no fit */
        gdd_patom r;
        for (int c = 0; c < 3; c++)
            r.x[c] = gdd_add(D.lx[3 * a + c], P.shift[c]);
        r.gid = D.lgid[a];
        r.mol = D.lmol[a];
        ((gdd_patom *)(sbuf + sizeof(gdd_pmsg_head)))[pos] = r;
    }
}

/* One pulse at the receiver: the atoms stored at the end of the local arrays, in the sender's
 * zone order, each as the zone one cell further up along d_k; a thread per atom. The first
 * free slot is atom_offset[p], which this domain's k_pulse_sel_scan set from n_local (unchanged
 * since): block 0 moves n_local on while other blocks still store. hout (the last pulse only):
 * the last block then writes the finished control record into the host's pinned mirror, which
 * the host reads after its one wait (a copy node after this kernel was one more node per domain
 * in the step's graph). */
__global__ void __launch_bounds__(GDD_MT)
    k_pulse_recv(gdd_dev D, gdd_pulse P, int p, const char *rbuf, gdd_ctl *hout)
{
    gdd_ctl *C = D.ctl;
    const gdd_pmsg_head h = *(const gdd_pmsg_head *)rbuf;
    const int base = C->atom_offset[p];
    const int fits = base + h.n <= D.cap[GDD_CAP_LOCAL];
    const int e = blockIdx.x * blockDim.x + threadIdx.x;
    if (fits && e < h.n) {
        const gdd_patom r = ((const gdd_patom *)(rbuf + sizeof(gdd_pmsg_head)))[e];
        const int a = base + e;
        int z = 0, end = h.zc[0];
        while (z < HX_MAX_ZONES - 1 && e >= end)
            end += h.zc[++z];
        for (int c = 0; c < 3; c++)
            D.lx[3 * a + c] = r.x[c];
        D.lgid[a] = r.gid;
        D.lmol[a] = r.mol;
        D.lzone[a] = P.rz[z];
        D.lfrom[a] = p;
        local_topo(D, a, r.mol, r.gid);
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        C->recv_count[p] = fits ? h.n : 0;
        for (int z = 0; z < HX_MAX_ZONES; z++)
            C->recv_zc[p][z] = fits ? h.zc[z] : 0;
        if (fits)
            C->n_local = base + h.n;
        else
            need(C, GDD_CAP_LOCAL, (long long)base + h.n);
    }
    if (hout && gdd_last(C))
        hx_block_to_host(hout, C, sizeof(gdd_ctl));
}

/* The new home's lists become the current ones (copied, so that every launch's arguments stay
 * the same from one search step to the next: a captured graph replays). */
__global__ void __launch_bounds__(GDD_MT) k_commit(gdd_dev D)
{
    const gdd_ctl *C = D.ctl;
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < C->n_home) {
        D.agid[t] = D.bgid[t];
        D.amolg[t] = D.bmolg[t];
    }
    if (t < C->nmol)
        D.amg[t] = D.bmg[t];
    if (t <= C->nmol)
        D.ams[t] = D.bms[t];
    if (t == 0) {
        D.cur[0] = C->nmol;
        D.cur[1] = C->n_home;
    }
}

/* ---- the in-process transport ------------------------------------------------------------- */

__global__ void __launch_bounds__(GDD_MT) k_copy_msg(const int4 *src, int4 *dst, long long cap)
{
    const long long bytes = *(const long long *)src;
    const long long words = ((bytes < cap ? bytes : cap) + 15) / 16;
    for (long long w = blockIdx.x * (long long)blockDim.x + threadIdx.x; w < words;
         w += (long long)gridDim.x * blockDim.x)
        dst[w] = src[w];
}

typedef struct local_tr {
    hx_comm *comm;
    int nlocal, nchan;
    int *local_of; /* [ndomains] local index of a domain */
    size_t *cap;
    void ***send, ***recv; /* [nlocal][nchan] */
} local_tr;

static void local_free_bufs(local_tr *t)
{
    for (int i = 0; t->send && i < t->nlocal; i++) {
        for (int c = 0; c < t->nchan; c++) {
            cudaFree(t->send[i][c]);
            cudaFree(t->recv[i][c]);
        }
        free(t->send[i]);
        free(t->recv[i]);
    }
    free(t->send);
    free(t->recv);
    free(t->cap);
    t->send = t->recv = NULL;
    t->cap = NULL;
    t->nchan = 0;
}

static hx_status local_setup(void *ctx, int nchan, const size_t *cap, void ***send, void ***recv)
{
    local_tr *t = (local_tr *)ctx;
    local_free_bufs(t);
    t->send = (void ***)calloc((size_t)t->nlocal, sizeof *t->send);
    t->recv = (void ***)calloc((size_t)t->nlocal, sizeof *t->recv);
    t->cap = (size_t *)calloc((size_t)nchan + 1, sizeof *t->cap);
    HX_CHECK(t->send && t->recv && t->cap, HX_ERR_NOMEM, "out of memory");
    t->nchan = nchan;
    for (int c = 0; c < nchan; c++)
        t->cap[c] = (cap[c] + 15) & ~(size_t)15;
    for (int i = 0; i < t->nlocal; i++) {
        t->send[i] = (void **)calloc((size_t)nchan + 1, sizeof(void *));
        t->recv[i] = (void **)calloc((size_t)nchan + 1, sizeof(void *));
        HX_CHECK(t->send[i] && t->recv[i], HX_ERR_NOMEM, "out of memory");
        for (int c = 0; c < nchan; c++) {
            HX_CUDA(cudaMalloc(&t->send[i][c], t->cap[c]));
            HX_CUDA(cudaMalloc(&t->recv[i][c], t->cap[c]));
            HX_CUDA(cudaMemset(t->send[i][c], 0, 16));
            HX_CUDA(cudaMemset(t->recv[i][c], 0, 16));
        }
        send[i] = t->send[i];
        recv[i] = t->recv[i];
    }
    return HX_OK;
}

static hx_status local_msg(void *ctx, int chan, const int *dest, const int *src, hx_stream s)
{
    local_tr *t = (local_tr *)ctx;
    (void)src; /* every domain is here: the copies by sender cover every receiver */
    for (int i = 0; i < t->nlocal; i++) {
        const int j = t->local_of[dest[i]];
        HX_CHECK(j >= 0, HX_ERR_INTERNAL, "in-process transport: domain %d is not here", dest[i]);
        const unsigned nb = hx_div_up((long long)(t->cap[chan] / 16), GDD_MT);
        HX_LAUNCH(k_copy_msg, nb < 64 ? nb : 64, GDD_MT, 0, s, (const int4 *)t->send[i][chan],
                  (int4 *)t->recv[j][chan], (long long)t->cap[chan]);
        HX_CUDA_LAUNCH("k_copy_msg");
    }
    return HX_OK;
}

static void local_destroy(void *ctx)
{
    local_tr *t = (local_tr *)ctx;
    if (!t)
        return;
    local_free_bufs(t);
    free(t->local_of);
    free(t);
}

extern "C" hx_status hx_gpu_dd_transport_local(hx_comm *comm, hx_gpu_dd_transport *tr)
{
    HX_CHECK(comm && tr, HX_ERR_INVALID_ARG, "hx_gpu_dd_transport_local: NULL argument");
    HX_CHECK(hx_comm_nranks(comm) == 1, HX_ERR_UNSUPPORTED,
             "the in-process transport of the device decomposition needs every domain in this "
             "process (the serial communicator); this job has %d processes",
             hx_comm_nranks(comm));
    memset(tr, 0, sizeof *tr);
    local_tr *t = (local_tr *)calloc(1, sizeof *t);
    HX_CHECK(t, HX_ERR_NOMEM, "out of memory");
    t->comm = comm;
    t->nlocal = hx_comm_nlocal(comm);
    const int nd = hx_comm_ndomains(comm);
    t->local_of = (int *)malloc(sizeof(int) * (size_t)(nd + 1));
    if (!t->local_of) {
        free(t);
        HX_FAIL(HX_ERR_NOMEM, "out of memory");
    }
    for (int d = 0; d < nd; d++)
        t->local_of[d] = -1;
    for (int i = 0; i < t->nlocal; i++)
        t->local_of[hx_comm_local_domain(comm, i)] = i;
    tr->ctx = t;
    tr->name = "in-process";
    tr->device_only = 1;
    tr->setup = local_setup;
    tr->msg = local_msg;
    tr->destroy = local_destroy;
    return HX_OK;
}

/* ---- host side ------------------------------------------------------------------------------ */

typedef struct gdd_dom {
    gdd_dev D;       /* device pointers and constants: the kernels' argument */
    gdd_ctl *hctl;   /* pinned mirror of D.ctl */
    gdd_ctl *hctl_d; /* the same memory as the device addresses it (k_pulse_recv writes it) */
    hx_gpu_dd_counts counts;
    hx_gpu_dd_local view;
    int n_home_a, nmol_a; /* the current home (committed) */
    char *img;            /* device plan image: header and per-pulse fields (the host's), maps */
    size_t img_cap;
    gdd_pulse pulse[HX_MAX_PULSES];
    int mig_dest[6], mig_src[6]; /* per migration channel 2 k + dir */
    int pdest[HX_MAX_PULSES], psrc[HX_MAX_PULSES];
} gdd_dom;

#define GDD_KT_EV 1024  /* events per run: past them a run's later launches go untimed */
#define GDD_KT_NAMES 32 /* distinct kernels (and "message") */

struct hx_gpu_decomp {
    const hx_decomp *dec;
    const hx_system *sys;
    const hx_forcefield *ff;
    hx_comm *comm;
    hx_gpu_dd_transport tr;
    int nlocal, ndim, dims[3], grid[3], npulses, nchan;
    double box[3], cell[3], r_comm;
    gdd_dom *dom;
    int cap[GDD_NCAP];
    size_t map_off;
    void ***sendb, ***recvb; /* [nlocal][nchan], the transport's */
    int growths;
    long long stats[4]; /* home max, -home min, halo max, -halo min of the last step */
    /* tables (device) */
    int nclass;
    int *mol_class, *mol_first, *ca_type;
    int4 *cl_info, *cl_settle, *cl_bcount;
    double *ca_q, *ca_m, *ca_invm;
    uint32_t *ca_excl;
    /* the graph of a search step (device-only transports) */
    int use_graph, timing;
    cudaGraphExec_t exec; /* the three parts, events between them recorded at each replay */
    const double *graph_x[64], *graph_v[64]; /* the inputs it was captured with (first 64) */
    cudaEvent_t ev[4];
    /* dest/src arrays for the transport, per channel */
    int *cdest, *csrc; /* [nchan][nlocal] */
    /* HALOX_GPU_DD_KTIMES=1 (diagnosis, kt_mark below): an event after every launch and message
     * of a run, the gaps summed per kernel */
    int kt, kn, nkn;
    long long kruns, kdropped;
    cudaEvent_t *kev;             /* [GDD_KT_EV] */
    const char *kname[GDD_KT_EV]; /* the launch behind each event of the run (literals) */
    int tr_idx;                   /* the next search-trace point's number (gpu/trace.h) */
    const char *kt_name[GDD_KT_NAMES];
    double kt_ms[GDD_KT_NAMES];
    long long kt_calls[GDD_KT_NAMES];
};

static hx_status dmalloc(void *pp, size_t bytes)
{
    void **p = (void **)pp;
    *p = NULL;
    HX_CUDA(cudaMalloc(p, bytes > 0 ? bytes : 16));
    return HX_OK;
}

/* ---- class tables ---- */

typedef struct cls_host {
    int natoms, off, kind, moltype;
    int4 settle, bcount;
} cls_host;

static int same_class(const hx_system *s, int k, int mt, const cls_host *c, const int *ty,
                      const double *q, const double *m, const uint32_t *ex)
{
    const int a0 = s->mol_start[k], n = s->mol_start[k + 1] - a0;
    if (n != c->natoms || mt != c->moltype)
        return 0;
    for (int j = 0; j < n; j++) {
        const int a = a0 + j;
        const int t = s->type ? s->type[a] : 0;
        const double qa = s->q ? s->q[a] : 0.0;
        const double ma = s->m ? s->m[a] : 0.0;
        const uint32_t ea = s->excl ? s->excl[a] : 0xffffffffu;
        if (t != ty[c->off + j] || memcmp(&qa, &q[c->off + j], sizeof qa) ||
            memcmp(&ma, &m[c->off + j], sizeof ma) || ea != ex[c->off + j])
            return 0;
    }
    return 1;
}

/* Molecules with the same molecule type and the same per-atom type, charge, mass and
 * exclusions form a class; its kind follows the GPU backend's set_local (rigid water with a
 * water model: SETTLE; otherwise SHAKE when the type has constraints, bonded terms when it has
 * any). Masses as the host path hands them to the update: m' = 1 / (1 / m), invm = 1 / m'. */
static hx_status build_tables(hx_gpu_decomp *g)
{
    const hx_system *s = g->sys;
    const hx_forcefield *ff = g->ff;
    const int nmol = s->nmol;
    hx_status st = HX_OK;
    int ncl = 0, capc = 16, capa = 256, na = 0;
    cls_host *cl = (cls_host *)malloc(sizeof *cl * (size_t)capc);
    int *ty = (int *)malloc(sizeof(int) * (size_t)capa);
    double *q = (double *)malloc(sizeof(double) * (size_t)capa);
    double *m = (double *)malloc(sizeof(double) * (size_t)capa);
    uint32_t *ex = (uint32_t *)malloc(sizeof(uint32_t) * (size_t)capa);
    int *mcls = (int *)malloc(sizeof(int) * ((size_t)nmol + 1));
    double *cm = NULL, *cim = NULL;
    int4 *ci = NULL, *cs = NULL, *cb = NULL;
    const hx_water_model *w = ff ? hx_forcefield_water(ff) : NULL;
    const int to = ff ? hx_forcefield_water_o_type(ff) : -1;
    const int nmt = ff ? hx_forcefield_nmoltypes(ff) : 0;
    int *tmap = (int *)malloc(sizeof(int) * ((size_t)nmt + 1));
    if (!cl || !ty || !q || !m || !ex || !mcls || !tmap)
        HX_FAIL_GOTO(st, HX_ERR_NOMEM, done, "out of memory for the molecule classes");
    {
        /* compact SHAKE types: the force field's constrained molecule types in its order (the
         * GPU update's table when its lists come from the device) */
        int nsh = 0;
        for (int k = 0; k < nmt; k++) {
            const hx_moltype *t = hx_forcefield_moltype(ff, k);
            tmap[k] = t && !t->rigid_water && t->nconstraints > 0 ? nsh++ : -1;
        }
    }
    for (int k = 0; k < nmol; k++) {
        const int mt = s->mol_type ? s->mol_type[k] : -1;
        int c = k > 0 ? mcls[k - 1] : -1;
        if (c < 0 || !same_class(s, k, mt, &cl[c], ty, q, m, ex)) {
            for (c = 0; c < ncl; c++)
                if (same_class(s, k, mt, &cl[c], ty, q, m, ex))
                    break;
        }
        if (c == ncl) {
            const int a0 = s->mol_start[k], n = s->mol_start[k + 1] - a0;
            if (n > HX_MAX_MOL_ATOMS)
                HX_FAIL_GOTO(st, HX_ERR_UNSUPPORTED, done,
                             "molecule %d has %d atoms: the device decomposition takes molecules "
                             "of at most %d",
                             k + 1, n, HX_MAX_MOL_ATOMS);
            if (ncl == capc) {
                capc *= 2;
                cls_host *nc = (cls_host *)realloc(cl, sizeof *cl * (size_t)capc);
                if (!nc)
                    HX_FAIL_GOTO(st, HX_ERR_NOMEM, done, "out of memory");
                cl = nc;
            }
            while (na + n > capa) {
                capa *= 2;
                int *t1 = (int *)realloc(ty, sizeof(int) * (size_t)capa);
                if (t1)
                    ty = t1;
                double *t2 = (double *)realloc(q, sizeof(double) * (size_t)capa);
                if (t2)
                    q = t2;
                double *t3 = (double *)realloc(m, sizeof(double) * (size_t)capa);
                if (t3)
                    m = t3;
                uint32_t *t4 = (uint32_t *)realloc(ex, sizeof(uint32_t) * (size_t)capa);
                if (t4)
                    ex = t4;
                if (!t1 || !t2 || !t3 || !t4)
                    HX_FAIL_GOTO(st, HX_ERR_NOMEM, done, "out of memory");
            }
            cls_host *C = &cl[ncl];
            memset(C, 0, sizeof *C);
            C->natoms = n;
            C->off = na;
            C->moltype = mt;
            for (int j = 0; j < n; j++) {
                const int a = a0 + j;
                ty[na + j] = s->type ? s->type[a] : 0;
                q[na + j] = s->q ? s->q[a] : 0.0;
                m[na + j] = s->m ? s->m[a] : 0.0;
                ex[na + j] = s->excl ? s->excl[a] : 0xffffffffu;
            }
            const hx_moltype *t = ff && mt >= 0 ? hx_forcefield_moltype(ff, mt) : NULL;
            if (!t || t->rigid_water) {
                if (w) {
                    int no = 0, nh = 0, pos[3] = {-1, -1, -1};
                    for (int j = 0; j < n; j++) {
                        if (ty[na + j] == to) {
                            pos[0] = j;
                            no++;
                        } else if (nh < 2) {
                            pos[1 + nh++] = j;
                        }
                    }
                    if (no != 1 || nh != 2)
                        HX_FAIL_GOTO(st, HX_ERR_INVALID_ARG, done,
                                     "water molecule %d has %d oxygens and %d hydrogens", k + 1, no,
                                     nh);
                    C->kind = GDD_K_SETTLE;
                    C->settle = make_int4(pos[0], pos[1], pos[2], -1);
                    const double mo = 1.0 / (1.0 / m[na + pos[0]]);
                    const double mh1 = 1.0 / (1.0 / m[na + pos[1]]);
                    const double mh2 = 1.0 / (1.0 / m[na + pos[2]]);
                    if (mo == w->m_o && mh1 == w->m_h && mh2 == w->m_h)
                        C->kind |= GDD_K_STDWATER;
                }
            } else {
                if (t->nconstraints > 0) {
                    C->kind |= GDD_K_SHAKE;
                    C->settle = make_int4(-1, -1, -1, tmap[mt]);
                }
                if (t->nbonds || t->nangles || t->ndihedrals || t->npairs) {
                    C->kind |= GDD_K_BONDED;
                    C->bcount = make_int4(t->nbonds, t->nangles, t->ndihedrals, t->npairs);
                }
            }
            na += n;
            ncl++;
        }
        mcls[k] = c;
    }
    cm = (double *)malloc(sizeof(double) * (size_t)(na + 1));
    cim = (double *)malloc(sizeof(double) * (size_t)(na + 1));
    ci = (int4 *)malloc(sizeof(int4) * (size_t)(ncl + 1));
    cs = (int4 *)malloc(sizeof(int4) * (size_t)(ncl + 1));
    cb = (int4 *)malloc(sizeof(int4) * (size_t)(ncl + 1));
    if (!cm || !cim || !ci || !cs || !cb)
        HX_FAIL_GOTO(st, HX_ERR_NOMEM, done, "out of memory");
    for (int a = 0; a < na; a++) {
        /* hx_decomp_update_local: invmass = 1 / m (0 without masses); the GPU backend's
         * set_local: mass = 1 / invmass; the update: invm = 1 / mass */
        const double inv = s->m ? 1.0 / m[a] : 0.0;
        cm[a] = 1.0 / inv;
        cim[a] = 1.0 / cm[a];
    }
    for (int c = 0; c < ncl; c++) {
        ci[c] = make_int4(cl[c].natoms, cl[c].off, cl[c].kind, cl[c].moltype);
        cs[c] = cl[c].settle;
        cb[c] = cl[c].bcount;
    }
    g->nclass = ncl;
    HX_TRY_GOTO(st, dmalloc(&g->mol_class, sizeof(int) * ((size_t)nmol + 1)), done);
    HX_TRY_GOTO(st, dmalloc(&g->mol_first, sizeof(int) * ((size_t)nmol + 1)), done);
    HX_TRY_GOTO(st, dmalloc(&g->cl_info, sizeof(int4) * (size_t)ncl), done);
    HX_TRY_GOTO(st, dmalloc(&g->cl_settle, sizeof(int4) * (size_t)ncl), done);
    HX_TRY_GOTO(st, dmalloc(&g->cl_bcount, sizeof(int4) * (size_t)ncl), done);
    HX_TRY_GOTO(st, dmalloc(&g->ca_type, sizeof(int) * (size_t)na), done);
    HX_TRY_GOTO(st, dmalloc(&g->ca_q, sizeof(double) * (size_t)na), done);
    HX_TRY_GOTO(st, dmalloc(&g->ca_m, sizeof(double) * (size_t)na), done);
    HX_TRY_GOTO(st, dmalloc(&g->ca_invm, sizeof(double) * (size_t)na), done);
    HX_TRY_GOTO(st, dmalloc(&g->ca_excl, sizeof(uint32_t) * (size_t)na), done);
    HX_CUDA_GOTO(st,
                 cudaMemcpy(g->mol_class, mcls, sizeof(int) * (size_t)nmol, cudaMemcpyHostToDevice),
                 done);
    HX_CUDA_GOTO(st,
                 cudaMemcpy(g->mol_first, s->mol_start, sizeof(int) * ((size_t)nmol + 1),
                            cudaMemcpyHostToDevice),
                 done);
    HX_CUDA_GOTO(st, cudaMemcpy(g->cl_info, ci, sizeof(int4) * (size_t)ncl, cudaMemcpyHostToDevice),
                 done);
    HX_CUDA_GOTO(
        st, cudaMemcpy(g->cl_settle, cs, sizeof(int4) * (size_t)ncl, cudaMemcpyHostToDevice), done);
    HX_CUDA_GOTO(
        st, cudaMemcpy(g->cl_bcount, cb, sizeof(int4) * (size_t)ncl, cudaMemcpyHostToDevice), done);
    HX_CUDA_GOTO(st, cudaMemcpy(g->ca_type, ty, sizeof(int) * (size_t)na, cudaMemcpyHostToDevice),
                 done);
    HX_CUDA_GOTO(st, cudaMemcpy(g->ca_q, q, sizeof(double) * (size_t)na, cudaMemcpyHostToDevice),
                 done);
    HX_CUDA_GOTO(st, cudaMemcpy(g->ca_m, cm, sizeof(double) * (size_t)na, cudaMemcpyHostToDevice),
                 done);
    HX_CUDA_GOTO(
        st, cudaMemcpy(g->ca_invm, cim, sizeof(double) * (size_t)na, cudaMemcpyHostToDevice), done);
    HX_CUDA_GOTO(st,
                 cudaMemcpy(g->ca_excl, ex, sizeof(uint32_t) * (size_t)na, cudaMemcpyHostToDevice),
                 done);
done:
    free(cl);
    free(ty);
    free(q);
    free(m);
    free(ex);
    free(mcls);
    free(tmap);
    free(cm);
    free(cim);
    free(ci);
    free(cs);
    free(cb);
    return st;
}

/* ---- per-domain buffers ---- */

#define GDD_NPTR 64
/* Every device array of a domain with its size for the capacities in g->cap; keep: the current
 * home's lists (contents kept across a growth). */
typedef struct dom_arr {
    void **p;
    size_t bytes;
    int keep;
} dom_arr;

static int dom_arrays(const hx_gpu_decomp *g, gdd_dev *D, dom_arr *a)
{
    const size_t H = (size_t)g->cap[GDD_CAP_HOME] + 1, M = (size_t)g->cap[GDD_CAP_HMOL] + 2;
    const size_t P = (size_t)g->cap[GDD_CAP_POOL] + 1, Q = (size_t)g->cap[GDD_CAP_PMOL] + 1;
    const size_t L = (size_t)g->cap[GDD_CAP_LOCAL] + 1;
    const size_t I = sizeof(int), F = sizeof(double);
    int n = 0;
#define ARR(ptr, b, k) a[n++] = dom_arr{(void **)&(ptr), (b), (k)}
    ARR(D->awx, 3 * H * F, 0);
    ARR(D->agid, H * I, 1);
    ARR(D->amolg, H * I, 1);
    ARR(D->amg, M * I, 1);
    ARR(D->ams, M * I, 1);
    ARR(D->akeep, M * I, 0);
    ARR(D->atgt, M * I, 0);
    ARR(D->px, 3 * P * F, 0);
    ARR(D->pv, 3 * P * F, 0);
    ARR(D->pgid, P * I, 0);
    ARR(D->pmolg, P * I, 0);
    ARR(D->pmg, Q * I, 0);
    ARR(D->pms, Q * I, 0);
    ARR(D->pna, Q * I, 0);
    ARR(D->pkeep, Q * I, 0);
    ARR(D->ptgt, Q * I, 0);
    ARR(D->hidx, M * I, 0);
    ARR(D->hgid, M * I, 0);
    ARR(D->plist, Q * I, 0);
    ARR(D->pg, Q * I, 0);
    ARR(D->psorted, Q * I, 0);
    ARR(D->psg, Q * I, 0);
    ARR(D->fsrc, M * I, 0);
    ARR(D->bx, 3 * H * F, 0);
    ARR(D->bv, 3 * H * F, 0);
    ARR(D->bgid, H * I, 0);
    ARR(D->bmolg, H * I, 0);
    ARR(D->bmg, M * I, 0);
    ARR(D->bms, M * I, 0);
    ARR(D->lx, 3 * L * F, 0);
    ARR(D->lgid, L * I, 0);
    ARR(D->lmol, L * I, 0);
    ARR(D->lzone, L * I, 0);
    ARR(D->lfrom, L * I, 0);
    ARR(D->ltype, L * I, 0);
    ARR(D->lq, L * F, 0);
    ARR(D->lexcl, L * sizeof(uint32_t), 0);
    ARR(D->lmpos, L, 0);
    ARR(D->hm, H * F, 0);
    ARR(D->him, H * F, 0);
    ARR(D->settle, 3 * M * I, 0);
    ARR(D->freeat, H * I, 0);
    ARR(D->shs, M * I, 0);
    ARR(D->sht, M * I, 0);
    ARR(D->shg, M * I, 0);
    ARR(D->bds, M * I, 0);
    ARR(D->bdt, M * I, 0);
    ARR(D->bdg, M * I, 0);
    ARR(D->boff, M * sizeof(int4), 0);
    ARR(D->ho1, M * sizeof(int4), 0);
    ARR(D->ho2, M * sizeof(int4), 0);
    ARR(D->psel, L, 0);
    ARR(D->prank, L * I, 0);
    ARR(D->pblk, (L / GDD_BT + 1) * sizeof(int4), 0);
    ARR(D->mgo, (M + Q) * I, 0);
    ARR(D->mrec, (M + Q) * I, 0);
    ARR(D->mfirst, (M + Q) * I, 0);
#undef ARR
    return n;
}

static void dom_free(hx_gpu_decomp *g, gdd_dom *d)
{
    dom_arr a[GDD_NPTR];
    const int n = dom_arrays(g, &d->D, a);
    for (int k = 0; k < n; k++) {
        cudaFree(*a[k].p);
        *a[k].p = NULL;
    }
    cudaFree(d->D.ctl);
    d->D.ctl = NULL;
    cudaFree(d->D.cur);
    d->D.cur = NULL;
    cudaFree(d->D.far);
    d->D.far = NULL;
    if (d->hctl)
        cudaFreeHost(d->hctl);
    d->hctl = d->hctl_d = NULL;
    cudaFree(d->img);
    d->img = NULL;
}

/* (Re)allocate a domain's arrays for g->cap; the current home's lists survive. */
static hx_status dom_alloc(hx_gpu_decomp *g, gdd_dom *d)
{
    gdd_dev old = d->D;
    dom_arr a[GDD_NPTR], ao[GDD_NPTR];
    const int n = dom_arrays(g, &d->D, a);
    (void)dom_arrays(g, &old, ao);
    hx_status st = HX_OK;
    for (int k = 0; k < n && st == HX_OK; k++) {
        void *p = NULL;
        st = dmalloc(&p, a[k].bytes);
        if (st != HX_OK)
            break;
        if (a[k].keep && *ao[k].p) {
            /* the lists of the current home: n_home_a atoms, nmol_a (+ 1) molecules */
            const size_t need = (a[k].p == (void **)&d->D.agid || a[k].p == (void **)&d->D.amolg)
                                    ? (size_t)d->n_home_a * sizeof(int)
                                    : ((size_t)d->nmol_a + 1) * sizeof(int);
            HX_CUDA_GOTO(st, cudaMemcpy(p, *ao[k].p, need, cudaMemcpyDeviceToDevice), out);
        }
    out:
        if (*ao[k].p)
            cudaFree(*ao[k].p);
        *a[k].p = p;
    }
    HX_TRY(st);
    if (!d->D.ctl) {
        HX_TRY(dmalloc(&d->D.ctl, sizeof(gdd_ctl)));
        /* the block count of the first kernel that counts its blocks (hx_last_block) */
        HX_CUDA(cudaMemset(d->D.ctl, 0, sizeof(gdd_ctl)));
    }
    if (!d->D.cur)
        HX_TRY(dmalloc(&d->D.cur, 2 * sizeof(int)));
    if (!d->D.far) {
        HX_TRY(dmalloc(&d->D.far, sizeof(unsigned long long)));
        HX_CUDA(cudaMemset(d->D.far, 0xff, sizeof(unsigned long long))); /* ~0: none */
    }
    if (!d->hctl) {
        HX_CUDA(cudaMallocHost((void **)&d->hctl, sizeof(gdd_ctl)));
        HX_CUDA(cudaHostGetDevicePointer((void **)&d->hctl_d, d->hctl, 0));
    }
    const size_t ib = g->map_off + sizeof(int) * ((size_t)g->cap[GDD_CAP_MAP] + 1);
    if (ib > d->img_cap) {
        cudaFree(d->img);
        d->img = NULL;
        HX_TRY(dmalloc(&d->img, ib));
        HX_CUDA(cudaMemset(d->img, 0, ib));
        d->img_cap = ib;
    }
    d->D.imap = (int *)(d->img + g->map_off);
    for (int c = 0; c < GDD_NCAP; c++)
        d->D.cap[c] = g->cap[c];
    return HX_OK;
}

/* ---- creation ---- */

void hx_gpu_decomp_destroy(hx_gpu_decomp **gp)
{
    if (!gp || !*gp)
        return;
    hx_gpu_decomp *g = *gp;
    for (int i = 0; g->dom && i < g->nlocal; i++)
        dom_free(g, &g->dom[i]);
    free(g->dom);
    if (g->tr.destroy)
        g->tr.destroy(g->tr.ctx);
    free(g->sendb);
    free(g->recvb);
    free(g->cdest);
    free(g->csrc);
    void *tabs[] = {g->mol_class, g->mol_first, g->ca_type, g->cl_info, g->cl_settle,
                    g->cl_bcount, g->ca_q,      g->ca_m,    g->ca_invm, g->ca_excl};
    for (size_t k = 0; k < sizeof tabs / sizeof tabs[0]; k++)
        cudaFree(tabs[k]);
    if (g->exec)
        cudaGraphExecDestroy(g->exec);
    for (int k = 0; k < 4; k++)
        if (g->ev[k])
            cudaEventDestroy(g->ev[k]);
    if (g->kt && g->kruns > 0) {
        hx_log(HX_LOG_INFO,
               "device search step by kernel (HALOX_GPU_DD_KTIMES=1: direct launches, an event "
               "after each; %lld runs, %d local domain(s)%s): kernel, launches per run, device "
               "us per run",
               g->kruns, g->nlocal,
               g->kdropped ? ", some launches past the event limit untimed" : "");
        for (int j = 0; j < g->nkn; j++)
            hx_log(HX_LOG_INFO, "  %-16s %6.1f %9.1f", g->kt_name[j],
                   (double)g->kt_calls[j] / (double)g->kruns, 1e3 * g->kt_ms[j] / (double)g->kruns);
    }
    for (int k = 0; g->kev && k < GDD_KT_EV; k++)
        if (g->kev[k])
            cudaEventDestroy(g->kev[k]);
    free(g->kev);
    free(g);
    *gp = NULL;
}

extern "C" int hx_gpu_decomp_kernel_times(const hx_gpu_decomp *g, int max, const char **name,
                                          double *ms, long long *launches, long long *runs)
{
    if (runs)
        *runs = g && g->kt ? g->kruns : 0;
    if (!g || !g->kt)
        return 0;
    const int n = g->nkn < max ? g->nkn : max;
    for (int j = 0; j < n; j++) {
        if (name)
            name[j] = g->kt_name[j];
        if (ms)
            ms[j] = g->kt_ms[j];
        if (launches)
            launches[j] = g->kt_calls[j];
    }
    return n;
}

static int env_int(const char *name, int dflt)
{
    const char *e = getenv(name);
    return e && e[0] ? atoi(e) : dflt;
}

static int cap_more(long long need, int cur)
{
    long long c = need + need / 4 + 64;
    if (c < 2LL * cur)
        c = 2LL * cur; /* a slow path is rare: grow enough that it stays so */
    return c > INT_MAX / 64 ? INT_MAX / 64 : (int)c;
}

static hx_status setup_channels(hx_gpu_decomp *g)
{
    size_t cap[6 + HX_MAX_PULSES];
    for (int c = 0; c < g->nchan; c++)
        cap[c] = (size_t)(c < 2 * g->ndim ? g->cap[GDD_CAP_MIG] : g->cap[GDD_CAP_PMSG]);
    return g->tr.setup(g->tr.ctx, g->nchan, cap, g->sendb, g->recvb);
}

/* Local geometry of the pulses and neighbours (host numbers, as hx_plan_build computes them). */
static void dom_geometry(hx_gpu_decomp *g, gdd_dom *d, int i)
{
    const hx_dd *dd = hx_decomp_dd(g->dec);
    const hx_domain_plan *pl = hx_plan_domain(hx_decomp_plan(g->dec), i);
    gdd_dev *D = &d->D;
    D->me = pl->domain;
    for (int k = 0; k < 3; k++) {
        D->coord[k] = pl->coord[k];
        D->grid[k] = g->grid[k];
        D->box[k] = g->box[k];
        D->cell[k] = g->cell[k];
        D->dims[k] = k < g->ndim ? g->dims[k] : 0;
    }
    D->ndim = g->ndim;
    D->rc2 = g->r_comm * g->r_comm;
    for (int k = 0; k < g->ndim; k++)
        for (int dir = 0; dir < 2; dir++) {
            int c[3] = {D->coord[0], D->coord[1], D->coord[2]};
            c[g->dims[k]] += dir == 0 ? 1 : -1;
            d->mig_dest[2 * k + dir] = hx_dd_domain_at(dd, c);
            c[g->dims[k]] = D->coord[g->dims[k]] + (dir == 0 ? -1 : 1);
            d->mig_src[2 * k + dir] = hx_dd_domain_at(dd, c);
        }
    int zbits[HX_MAX_ZONES];
    for (int z = 0; z < HX_MAX_ZONES; z++) {
        int s[3];
        hx_zone_shift(z, s);
        zbits[z] = s[0] | (s[1] << 1) | (s[2] << 2);
    }
    for (int p = 0; p < g->npulses; p++) {
        const hx_pulse *P = &pl->pulses[p];
        gdd_pulse *G = &d->pulse[p];
        memset(G, 0, sizeof *G);
        G->dim = P->dim;
        G->k = P->dim_index;
        G->pin = P->pulse_in_dim;
        G->chan = 2 * g->ndim + p;
        double hi;
        hx_dd_cell_bounds(dd, P->dim, D->coord[P->dim], &G->lo, &hi);
        for (int kk = 0; kk < G->k; kk++) {
            double lo2;
            hx_dd_cell_bounds(dd, g->dims[kk], D->coord[g->dims[kk]], &lo2, &G->hi_prev[kk]);
        }
        for (int c = 0; c < 3; c++)
            G->shift[c] = P->shift[c];
        for (int z = 0; z < HX_MAX_ZONES; z++) {
            G->zbits[z] = zbits[z];
            const int b = zbits[z] | (1 << G->k);
            const int s[3] = {b & 1, (b >> 1) & 1, (b >> 2) & 1};
            G->rz[z] = hx_zone_from_shift(s);
        }
        for (int ci = 0; ci < 4; ci++) {
            if (ci >= (1 << G->k)) {
                G->zone_of_ci[ci] = 100 + ci; /* no such candidates: after every zone */
                continue;
            }
            const int b = ci | (G->pin > 0 ? 1 << G->k : 0);
            const int s[3] = {b & 1, (b >> 1) & 1, (b >> 2) & 1};
            G->zone_of_ci[ci] = hx_zone_from_shift(s);
        }
        d->pdest[p] = P->send_rank;
        d->psrc[p] = P->recv_rank;
    }
}

/* The current home's lists of local domain i to the device (creation: the one time they come
 * from the host). */
static hx_status upload_home(hx_gpu_decomp *g, gdd_dom *d, const hx_home *h)
{
    d->n_home_a = h->natoms;
    d->nmol_a = h->nmol;
    int *molg = (int *)malloc(sizeof(int) * ((size_t)h->natoms + 1));
    HX_CHECK(molg, HX_ERR_NOMEM, "out of memory");
    for (int k = 0; k < h->nmol; k++)
        for (int a = h->mol_start[k]; a < h->mol_start[k + 1]; a++)
            molg[a] = h->mol_gid[k];
    hx_status st = HX_OK;
    if (h->natoms > 0) {
        HX_CUDA_GOTO(
            st,
            cudaMemcpy(d->D.agid, h->gid, sizeof(int) * (size_t)h->natoms, cudaMemcpyHostToDevice),
            out);
        HX_CUDA_GOTO(
            st,
            cudaMemcpy(d->D.amolg, molg, sizeof(int) * (size_t)h->natoms, cudaMemcpyHostToDevice),
            out);
    }
    if (h->nmol > 0)
        HX_CUDA_GOTO(
            st,
            cudaMemcpy(d->D.amg, h->mol_gid, sizeof(int) * (size_t)h->nmol, cudaMemcpyHostToDevice),
            out);
    HX_CUDA_GOTO(st,
                 cudaMemcpy(d->D.ams, h->mol_start, sizeof(int) * ((size_t)h->nmol + 1),
                            cudaMemcpyHostToDevice),
                 out);
    {
        const int cur[2] = {h->nmol, h->natoms};
        HX_CUDA_GOTO(st, cudaMemcpy(d->D.cur, cur, sizeof cur, cudaMemcpyHostToDevice), out);
    }
out:
    free(molg);
    (void)g;
    return st;
}

extern "C" hx_status hx_gpu_decomp_create(const hx_decomp *dec, const hx_system *sys,
                                          const hx_forcefield *ff, const hx_gpu_dd_transport *t,
                                          hx_gpu_decomp **out)
{
    HX_CHECK(dec && sys && t && out && t->setup && t->msg, HX_ERR_INVALID_ARG,
             "hx_gpu_decomp_create: NULL argument");
    *out = NULL;
    hx_gpu_decomp *g = (hx_gpu_decomp *)calloc(1, sizeof *g);
    if (!g) {
        if (t->destroy)
            t->destroy(t->ctx);
        HX_FAIL(HX_ERR_NOMEM, "out of memory");
    }
    g->tr = *t;
    g->dec = dec;
    g->sys = sys;
    g->ff = ff;
    g->comm = hx_decomp_comm(dec);
    g->nlocal = hx_decomp_nlocal(dec);
    const hx_dd *dd = hx_decomp_dd(dec);
    g->ndim = hx_dd_ndim(dd, g->dims);
    hx_dd_grid(dd, g->grid);
    hx_dd_box(dd, g->box);
    for (int k = 0; k < 3; k++)
        g->cell[k] = hx_dd_cell_size(dd, k);
    g->r_comm = hx_dd_r_comm(dd);
    g->npulses = hx_dd_npulses(dd);
    g->nchan = 2 * g->ndim + g->npulses;
    g->map_off = hx_plan_image_map_offset(g->npulses);
    /* graphs where the transport moves data on the device (a CPU-driven one synchronises
     * inside the parts); HALOX_GPU_DD_GRAPH=0: direct launches */
    g->use_graph = t->device_only && env_int("HALOX_GPU_DD_GRAPH", 1);
    /* HALOX_GPU_DD_KTIMES=1: each kernel's device time (a graph cannot be timed inside: direct
     * launches then) */
    g->kt = env_int("HALOX_GPU_DD_KTIMES", 0) == 1;
    if (g->kt)
        g->use_graph = 0;
    hx_status st = HX_OK;
    for (int k = 0; k < 3; k++)
        if (g->grid[k] >= 1024)
            st = hx_error_set(HX_ERR_UNSUPPORTED, __FILE__, __LINE__, __func__,
                              "device decomposition: %d cells along %c, at most 1023", g->grid[k],
                              "xyz"[k]);
    if (st == HX_OK)
        st = build_tables(g);
    g->dom = (gdd_dom *)calloc((size_t)g->nlocal, sizeof *g->dom);
    g->sendb = (void ***)calloc((size_t)g->nlocal, sizeof *g->sendb);
    g->recvb = (void ***)calloc((size_t)g->nlocal, sizeof *g->recvb);
    g->cdest = (int *)calloc((size_t)(g->nchan + 1) * (size_t)g->nlocal, sizeof(int));
    g->csrc = (int *)calloc((size_t)(g->nchan + 1) * (size_t)g->nlocal, sizeof(int));
    if (st == HX_OK && (!g->dom || !g->sendb || !g->recvb || !g->cdest || !g->csrc))
        st = hx_error_set(HX_ERR_NOMEM, __FILE__, __LINE__, __func__, "out of memory");
    /* the global maxima of the start: home atoms and molecules, local atoms, map entries, the
     * largest pulse */
    long long *mx = (long long *)calloc((size_t)g->nlocal * 5 + 5, sizeof(long long));
    long long gm[5] = {0, 0, 0, 0, 0};
    if (st == HX_OK && !mx)
        st = hx_error_set(HX_ERR_NOMEM, __FILE__, __LINE__, __func__, "out of memory");
    for (int i = 0; st == HX_OK && i < g->nlocal; i++) {
        const hx_decomp_local *l = hx_decomp_get_local(dec, i);
        const hx_domain_plan *p = hx_plan_domain(hx_decomp_plan(dec), i);
        mx[5 * i + 0] = l->home->natoms;
        mx[5 * i + 1] = l->home->nmol;
        mx[5 * i + 2] = p->n_local;
        mx[5 * i + 3] = p->index_map_len;
        for (int q = 0; q < p->npulses; q++)
            if (p->pulses[q].send_count > mx[5 * i + 4])
                mx[5 * i + 4] = p->pulses[q].send_count;
        dom_geometry(g, &g->dom[i], i);
    }
    st = hx_comm_agree(g->comm, st);
    if (st == HX_OK)
        st = hx_comm_max_i64(g->comm, mx, gm, 5);
    free(mx);
    if (st == HX_OK) {
        g->cap[GDD_CAP_HOME] = (int)(gm[0] + gm[0] / 4 + 64);
        g->cap[GDD_CAP_HMOL] = (int)(gm[1] + gm[1] / 4 + 32);
        g->cap[GDD_CAP_LOCAL] = (int)(gm[2] + gm[2] / 4 + 64);
        g->cap[GDD_CAP_MAP] = (int)(gm[3] + gm[3] / 4 + 64);
        g->cap[GDD_CAP_POOL] = g->cap[GDD_CAP_HOME] / 4 + 64;
        g->cap[GDD_CAP_PMOL] = g->cap[GDD_CAP_HMOL] / 4 + 32;
        g->cap[GDD_CAP_MIG] = (int)(sizeof(gdd_msg_head) + 16 * (size_t)g->cap[GDD_CAP_PMOL] +
                                    sizeof(gdd_matom) * (size_t)g->cap[GDD_CAP_POOL]);
        g->cap[GDD_CAP_PMSG] =
            (int)(sizeof(gdd_pmsg_head) + sizeof(gdd_patom) * (size_t)(gm[4] + gm[4] / 4 + 64));
        if (hx_fault_hit("gpu_dd.shrink")) {
            /* tests (src/core/fault.h; armed on every process): every capacity far too small,
             * so the first search step takes the slow path (every process grows together, the
             * step runs again). A fault site, not an environment variable, so that nothing a
             * user's environment holds can change the product's capacities. */
            const int shrink = HX_GPU_DD_TEST_SHRINK;
            for (int c = 0; c < GDD_NCAP; c++) {
                const int minimum = c == GDD_CAP_MIG || c == GDD_CAP_PMSG ? 128 : 4;
                g->cap[c] = g->cap[c] / shrink > minimum ? g->cap[c] / shrink : minimum;
            }
            /* the current home must fit, it is uploaded */
            g->cap[GDD_CAP_HOME] = (int)gm[0] + 1;
            g->cap[GDD_CAP_HMOL] = (int)gm[1] + 1;
        }
    }
    for (int i = 0; st == HX_OK && i < g->nlocal; i++) {
        st = dom_alloc(g, &g->dom[i]);
        if (st == HX_OK)
            st = upload_home(g, &g->dom[i], hx_decomp_get_local(dec, i)->home);
        gdd_tab *T = &g->dom[i].D.tab;
        T->mol_class = g->mol_class;
        T->mol_first = g->mol_first;
        T->cl_info = g->cl_info;
        T->cl_settle = g->cl_settle;
        T->cl_bcount = g->cl_bcount;
        T->ca_type = g->ca_type;
        T->ca_q = g->ca_q;
        T->ca_m = g->ca_m;
        T->ca_invm = g->ca_invm;
        T->ca_excl = g->ca_excl;
    }
    for (int i = 0; st == HX_OK && i < g->nlocal; i++) {
        for (int c = 0; c < 2 * g->ndim; c++) {
            g->cdest[c * g->nlocal + i] = g->dom[i].mig_dest[c];
            g->csrc[c * g->nlocal + i] = g->dom[i].mig_src[c];
        }
        for (int p = 0; p < g->npulses; p++) {
            g->cdest[(2 * g->ndim + p) * g->nlocal + i] = g->dom[i].pdest[p];
            g->csrc[(2 * g->ndim + p) * g->nlocal + i] = g->dom[i].psrc[p];
        }
    }
    for (int k = 0; k < 4 && st == HX_OK; k++)
        if (cudaEventCreate(&g->ev[k]) != cudaSuccess)
            st = hx_error_set(HX_ERR_CUDA, __FILE__, __LINE__, __func__, "cudaEventCreate failed");
    if (st == HX_OK && g->kt) {
        g->kev = (cudaEvent_t *)calloc(GDD_KT_EV, sizeof *g->kev);
        if (!g->kev)
            st = hx_error_set(HX_ERR_NOMEM, __FILE__, __LINE__, __func__, "out of memory");
        for (int k = 0; k < GDD_KT_EV && st == HX_OK; k++)
            if (cudaEventCreate(&g->kev[k]) != cudaSuccess)
                st = hx_error_set(HX_ERR_CUDA, __FILE__, __LINE__, __func__,
                                  "cudaEventCreate failed (HALOX_GPU_DD_KTIMES)");
    }
    /* collective from here: every rank allocates its channels (symmetric memory) together */
    st = hx_comm_agree(g->comm, st);
    if (st == HX_OK)
        st = hx_comm_agree(g->comm, setup_channels(g));
    /* the tables, the homes' lists and the cleared buffers went by cudaMemcpy / cudaMemset
     * (the legacy default stream): done before the first step runs on the caller's stream,
     * which is one of the context's non-blocking ones */
    if (st == HX_OK)
        st = hx_comm_agree(g->comm, hx_gpu_stream_wait(NULL, hx_wait_timeout_gpu(HX_WAIT_SETUP),
                                                       hx_comm_rank(g->comm),
                                                       "the device search step's set-up copies"));
    if (st != HX_OK) {
        hx_gpu_decomp_destroy(&g);
        return st;
    }
    *out = g;
    return HX_OK;
}

/* ---- the search step ---- */

/* HALOX_GPU_DD_KTIMES=1: an event after the launch or message just enqueued. The gap to the
 * event before it is that launch's device time where the GPU is the bottleneck (long kernels),
 * the host's launch interval where it is not (short ones): a diagnosis of where a search step's
 * device parts go, not a figure of the graph-replayed step. */
static hx_status kt_mark(hx_gpu_decomp *g, const char *name, hx_stream s)
{
    if (!g->kt)
        return HX_OK;
    if (g->kn >= GDD_KT_EV) {
        g->kdropped++;
        return HX_OK;
    }
    HX_CUDA(cudaEventRecord(g->kev[g->kn], s));
    g->kname[g->kn++] = name;
    return HX_OK;
}

/* After the run's stream wait: the gaps from the run's first event (ev[0]) summed per name. */
static void kt_collect(hx_gpu_decomp *g)
{
    cudaEvent_t prev = g->ev[0];
    for (int j = 0; j < g->kn; j++) {
        float ms = 0.0f;
        if (cudaEventElapsedTime(&ms, prev, g->kev[j]) != cudaSuccess)
            ms = 0.0f;
        prev = g->kev[j];
        int q = 0;
        while (q < g->nkn && strcmp(g->kt_name[q], g->kname[j]) != 0)
            q++;
        if (q == g->nkn) {
            if (g->nkn == GDD_KT_NAMES)
                continue;
            g->kt_name[g->nkn++] = g->kname[j];
        }
        g->kt_ms[q] += ms;
        g->kt_calls[q]++;
    }
    g->kn = 0;
    g->kruns++;
}

#define LAUNCH(k, grid, block, ...)                                                                \
    do {                                                                                           \
        HX_LAUNCH(k, grid, block, 0, s, __VA_ARGS__);                                              \
        HX_CUDA_LAUNCH(#k);                                                                        \
        HX_TRY(kt_mark(g, #k, s));                                                                 \
        HX_TRY(hx_gpu_trace_mark(g, 0, g->tr_idx++, #k, s));                                       \
    } while (0)

static hx_status msg(hx_gpu_decomp *g, int chan, hx_stream s)
{
    HX_TRY(g->tr.msg(g->tr.ctx, chan, g->cdest + (size_t)chan * g->nlocal,
                     g->csrc + (size_t)chan * g->nlocal, s));
    HX_TRY(hx_gpu_trace_mark(g, 0, g->tr_idx++, "message", s));
    return kt_mark(g, "message", s);
}

/* Part k of the step: 0 migration, 1 the new home and its lists, 2 the plan's pulses, the local
 * topology and the control records to the host. */
static hx_status enqueue_part(hx_gpu_decomp *g, int part, hx_stream s)
{
    const int nl = g->nlocal;
    static const char *const part_label[3] = {"dd.migration", "dd.local_set", "dd.plan"};
    HX_TRY(hx_gpu_trace_mark(g, 0, g->tr_idx++, part_label[part], s));
    if (part == 0) {
        for (int i = 0; i < nl; i++) {
            gdd_dom *d = &g->dom[i];
            LAUNCH(k_mig_init, hx_div_up(g->cap[GDD_CAP_HMOL], GDD_MT), GDD_MT, d->D);
        }
        const unsigned nmig = hx_div_up(g->cap[GDD_CAP_HMOL] + g->cap[GDD_CAP_PMOL], GDD_MT);
        const unsigned nmig_b = hx_div_up(g->cap[GDD_CAP_HMOL] + g->cap[GDD_CAP_PMOL], GDD_BT);
        for (int k = 0; k < g->ndim; k++) {
            /* channel 2 k up, 2 k + 1 down; with two cells along d_k only up (mig_leaves) */
            const int c = 2 * k, two = g->grid[g->dims[k]] == 2;
            for (int i = 0; i < nl; i++) {
                mig_bufs sb = {{(char *)g->sendb[i][c], two ? NULL : (char *)g->sendb[i][c + 1]}};
                LAUNCH(k_mig_mark_scan, nmig_b, GDD_BT, g->dom[i].D, k, sb,
                       (long long)g->cap[GDD_CAP_MIG]);
                LAUNCH(k_mig_pack, nmig, GDD_MT, g->dom[i].D, sb);
            }
            HX_TRY(msg(g, c, s));
            if (!two)
                HX_TRY(msg(g, c + 1, s));
            for (int i = 0; i < nl; i++) {
                mig_bufs rb = {{(char *)g->recvb[i][c], two ? NULL : (char *)g->recvb[i][c + 1]}};
                LAUNCH(k_mig_unpack, 1, GDD_BT, g->dom[i].D, rb, k == g->ndim - 1);
            }
        }
        return HX_OK;
    }
    if (part == 1) {
        const unsigned nbm = hx_div_up(g->cap[GDD_CAP_HMOL] + g->cap[GDD_CAP_PMOL], GDD_BT);
        const unsigned nhm = hx_div_up(g->cap[GDD_CAP_HMOL], GDD_MT);
        for (int i = 0; i < nl; i++) {
            const gdd_dev &D = g->dom[i].D;
            LAUNCH(k_fin_b, nbm, GDD_BT, D);
            LAUNCH(k_fin_d, nhm, GDD_MT, D);
        }
        return HX_OK;
    }
    for (int p = 0; p < g->npulses; p++) {
        const int c = 2 * g->ndim + p;
        const unsigned nbl = hx_div_up(g->cap[GDD_CAP_LOCAL], GDD_MT);
        const unsigned nbl_b = hx_div_up(g->cap[GDD_CAP_LOCAL], GDD_BT);
        for (int i = 0; i < nl; i++) {
            const gdd_dev &D = g->dom[i].D;
            LAUNCH(k_pulse_sel_scan, nbl_b, GDD_BT, D, g->dom[i].pulse[p], p,
                   (char *)g->sendb[i][c], (long long)g->cap[GDD_CAP_PMSG]);
            LAUNCH(k_pulse_pack, nbl, GDD_MT, D, g->dom[i].pulse[p], p, (char *)g->sendb[i][c]);
        }
        HX_TRY(msg(g, c, s));
        for (int i = 0; i < nl; i++)
            LAUNCH(k_pulse_recv, nbl, GDD_MT, g->dom[i].D, g->dom[i].pulse[p], p,
                   (const char *)g->recvb[i][c], p == g->npulses - 1 ? g->dom[i].hctl_d : NULL);
    }
    /* the control records reach the host from the last k_pulse_recv; a grid without pulses
     * (none decomposed: the tests' one-domain cases) copies them here */
    for (int i = 0; i < nl && g->npulses == 0; i++)
        HX_CUDA(cudaMemcpyAsync(g->dom[i].hctl, g->dom[i].D.ctl, sizeof(gdd_ctl),
                                cudaMemcpyDeviceToHost, s));
    return HX_OK;
}

/* Launch the step, part by part (events between them time each part), directly or as the
 * graphs captured for the current buffers. */
static hx_status launch(hx_gpu_decomp *g, hx_stream s)
{
#ifdef HX_CUDA_EMULATION
    {
        const char *e = getenv("HALOX_EMU_SHUFFLE_SCAN");
        gdd_emu_shuffle = e && e[0] == '1';
    }
#endif
    /* the legacy default stream (NULL) cannot be captured: direct launches there */
    const int graph = g->use_graph && s != NULL;
    g->tr_idx = 0; /* the trace's points, numbered in launch order (gpu/trace.h) */
    int same = g->exec != NULL;
    for (int i = 0; same && i < g->nlocal && i < 64; i++)
        same = g->graph_x[i] == g->dom[i].D.ax && g->graph_v[i] == g->dom[i].D.av;
    if (graph && !same) {
        if (g->exec)
            cudaGraphExecDestroy(g->exec);
        g->exec = NULL;
        /* one graph of the three parts (a graph launch, not three): the events between them are
         * recorded at every replay (external records), so the parts are still timed */
        cudaGraph_t cg = NULL;
        /* captured on the caller's stream (one of the GPU context's: no stream of our own),
         * which runs nothing else meanwhile: capture only records */
        HX_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
        hx_status est = HX_OK;
        for (int k = 0; k < 3 && est == HX_OK; k++) {
            est = enqueue_part(g, k, s);
            if (est == HX_OK && k < 2 &&
                cudaEventRecordWithFlags(g->ev[k + 1], s, cudaEventRecordExternal) != cudaSuccess)
                est = hx_error_set(HX_ERR_CUDA, __FILE__, __LINE__, __func__,
                                   "cudaEventRecordWithFlags in the search step's capture failed");
        }
        const cudaError_t ce = cudaStreamEndCapture(s, &cg);
        if (est != HX_OK) {
            if (cg)
                cudaGraphDestroy(cg);
            return est;
        }
        HX_CUDA(ce);
        const cudaError_t ie = cudaGraphInstantiate(&g->exec, cg, 0);
        cudaGraphDestroy(cg);
        HX_CUDA(ie);
        for (int i = 0; i < g->nlocal && i < 64; i++) {
            g->graph_x[i] = g->dom[i].D.ax;
            g->graph_v[i] = g->dom[i].D.av;
        }
    }
    HX_CUDA(cudaEventRecord(g->ev[0], s));
    g->kn = 0;
    if (graph) {
        HX_CUDA(cudaGraphLaunch(g->exec, s));
    } else {
        for (int k = 0; k < 2; k++) {
            HX_TRY(enqueue_part(g, k, s));
            HX_CUDA(cudaEventRecord(g->ev[k + 1], s));
        }
        HX_TRY(enqueue_part(g, 2, s));
    }
    HX_CUDA(cudaEventRecord(g->ev[3], s));
    return HX_OK;
}

/* The counts of domain i from its control record; HX_ERR_PHYSICS for a molecule that moved
 * more than one cell (hx_migrate's message). */
static hx_status read_counts(hx_gpu_decomp *g, gdd_dom *d, long long step)
{
    const gdd_ctl *C = d->hctl;
    hx_gpu_dd_counts *o = &d->counts;
    memset(o, 0, sizeof *o);
    o->n_home = C->n_home;
    o->nmol = C->nmol;
    o->n_local = C->n_local;
    o->map_len = C->map_len;
    for (int p = 0; p < g->npulses; p++) {
        memcpy(o->send_zone_count[p], C->send_zc[p], sizeof o->send_zone_count[p]);
        memcpy(o->recv_zone_count[p], C->recv_zc[p], sizeof o->recv_zone_count[p]);
        o->deps[p] = C->deps[p];
    }
    o->nsettle = C->nsettle;
    o->nshake = C->nshake;
    o->nbonded = C->nbonded;
    o->nfree = C->nfree;
    o->settle_consecutive = !C->settle_bad;
    o->settle_first = C->settle_bad ? -1 : C->first_o;
    for (int k = 0; k < 4; k++)
        o->bonded_count[k] = C->bcount[k];
    if (C->err_far != ~0ull) {
        const int mol = (int)(C->err_far >> 32), to = (int)(C->err_far & 0xffffffffu);
        const hx_dd *dd = hx_decomp_dd(g->dec);
        int ct[3], dim = 0;
        hx_dd_coord_of(dd, to, ct);
        for (int k = g->ndim - 1; k >= 0; k--) {
            const int dk = g->dims[k], gk = g->grid[dk];
            const int delta = ((ct[dk] - d->D.coord[dk]) % gk + gk) % gk;
            if (delta > 1 && delta < gk - 1)
                dim = dk;
        }
        HX_FAIL(HX_ERR_PHYSICS,
                "at step %lld molecule %d (global index, 0-based) moved more than one cell along "
                "%c since the last repartition: from domain %d to domain %d; the system is "
                "unstable or nstlist is too long",
                step, mol, "xyz"[dim], d -> D.me, to);
    }
    return HX_OK;
}

extern "C" hx_status hx_gpu_decomp_run(hx_gpu_decomp *g, long long step, hx_status local,
                                       const hx_gpu_dd_state *in, hx_stream s, long long *gmax,
                                       hx_gpu_dd_times *times)
{
    HX_CHECK(g && in, HX_ERR_INVALID_ARG, "hx_gpu_decomp_run: NULL argument");
    const int nl = g->nlocal, np = g->npulses;
    /* reduction: failure, needs, n_local and send counts (the plan's capacities), home and
     * halo extremes (statistics) */
    const int nv = 1 + GDD_NCAP + 1 + np + 4;
    long long *vec = (long long *)calloc((size_t)nv * (size_t)(nl + 1), sizeof(long long));
    HX_CHECK(vec, HX_ERR_NOMEM, "out of memory");
    long long *red = vec + (size_t)nv * nl;
    hx_gpu_dd_times tm;
    memset(&tm, 0, sizeof tm);
    /* A failure on entry (noted since the last collective) still runs the step: with a
     * host-driven transport the neighbours wait for this process's messages inside the step, so
     * it sends them, and the failure goes into the reduction below, which every process reaches
     * (its message then travels with the agreement there). Nothing is committed then. */
    char local_msg[512] = "";
    if (local != HX_OK)
        snprintf(local_msg, sizeof local_msg, "%s", hx_last_error_message());
    hx_status st = HX_OK;
    for (int attempt = 0;; attempt++) {
        const double t0 = hx_wtime();
        for (int i = 0; i < nl; i++) {
            g->dom[i].D.ax = in[i].x;
            g->dom[i].D.av = in[i].v;
        }
        st = launch(g, s);
        hx_gpu_trace_host("dd.launched");
        /* bounded (the step deadline; NVSHMEM's message waits have their device deadline
         * inside it): a stuck GPU becomes a failure every process agrees on below */
        if (st == HX_OK)
            st = hx_gpu_stream_wait(s, hx_wait_timeout_gpu(HX_WAIT_STEP), hx_comm_rank(g->comm),
                                    "the device search step of step %lld", step);
        const double t1 = hx_wtime();
        hx_gpu_trace_host("dd.waited");
        tm.device += t1 - t0;
        if (st == HX_OK) {
            float ms[3] = {0, 0, 0};
            for (int k = 0; k < 3; k++)
                if (cudaEventElapsedTime(&ms[k], g->ev[k], g->ev[k + 1]) != cudaSuccess)
                    ms[k] = 0;
            tm.migrate += 1e-3 * ms[0];
            tm.local_set += 1e-3 * ms[1];
            tm.plan += 1e-3 * ms[2];
            if (g->kt)
                kt_collect(g);
        }
        memset(vec, 0, sizeof(long long) * (size_t)nv * nl);
        for (int i = 0; i < nl && st == HX_OK; i++) {
            gdd_dom *d = &g->dom[i];
            st = read_counts(g, d, step);
            long long *v = vec + (size_t)nv * i;
            const gdd_ctl *C = d->hctl;
            for (int c = 0; c < GDD_NCAP; c++)
                v[1 + c] = C->need[c];
            v[1 + GDD_NCAP] = C->n_local;
            for (int p = 0; p < np; p++) {
                int n = 0;
                for (int z = 0; z < HX_MAX_ZONES; z++)
                    n += C->send_zc[p][z];
                v[2 + GDD_NCAP + p] = n;
            }
            v[2 + GDD_NCAP + np] = C->n_home;
            v[3 + GDD_NCAP + np] = -(long long)C->n_home;
            v[4 + GDD_NCAP + np] = C->n_local - C->n_home;
            v[5 + GDD_NCAP + np] = -(long long)(C->n_local - C->n_home);
        }
        if (st == HX_OK && local != HX_OK)
            st = hx_error_set(local, __FILE__, __LINE__, __func__, "%s", local_msg);
        if (st != HX_OK)
            for (int i = 0; i < nl; i++)
                vec[(size_t)nv * i] = 1;
        /* the one collective of the step: failures, overflows, maxima */
        hx_status rst = hx_comm_max_i64(g->comm, vec, red, nv);
        if (rst == HX_OK && red[0])
            rst = hx_comm_agree(g->comm, st); /* someone failed: its message everywhere */
        tm.counts += hx_wtime() - t1;
        hx_gpu_trace_host("dd.reduced");
        if (rst != HX_OK) {
            free(vec);
            return rst;
        }
        int grow = 0;
        for (int c = 0; c < GDD_NCAP; c++)
            if (red[1 + c] > g->cap[c])
                grow = 1;
        if (!grow)
            break;
        /* the slow path, entered by every process together: grow what overflowed anywhere and
         * run the step again from the unchanged home */
        HX_CHECK(attempt < 8, HX_ERR_INTERNAL,
                 "device decomposition: buffers still too small after %d growths", attempt + 1);
        const int old_mig = g->cap[GDD_CAP_MIG], old_pmsg = g->cap[GDD_CAP_PMSG];
        for (int c = 0; c < GDD_NCAP; c++)
            if (red[1 + c] > g->cap[c])
                g->cap[c] = cap_more(red[1 + c], g->cap[c]);
        /* growing the home store grows what is derived from it */
        if (g->cap[GDD_CAP_POOL] < g->cap[GDD_CAP_HOME] / 8)
            g->cap[GDD_CAP_POOL] = g->cap[GDD_CAP_HOME] / 8;
        hx_log(HX_LOG_INFO,
               "step %lld: device decomposition buffers grown (home %d atoms / %d molecules, "
               "arrivals %d / %d, local %d, map %d, messages %d / %d bytes): running the search "
               "step again",
               step, g->cap[GDD_CAP_HOME], g->cap[GDD_CAP_HMOL], g->cap[GDD_CAP_POOL],
               g->cap[GDD_CAP_PMOL], g->cap[GDD_CAP_LOCAL], g->cap[GDD_CAP_MAP],
               g->cap[GDD_CAP_MIG], g->cap[GDD_CAP_PMSG]);
        st = HX_OK;
        for (int i = 0; i < nl && st == HX_OK; i++)
            st = dom_alloc(g, &g->dom[i]);
        /* dom_alloc's copies of the kept lists and its clearing of a grown plan image ran on
         * the legacy default stream, which does not order the stream the step runs again on */
        if (st == HX_OK)
            st = hx_gpu_stream_wait(NULL, hx_wait_timeout_gpu(HX_WAIT_STEP), hx_comm_rank(g->comm),
                                    "the growth of the device search step's buffers");
        st = hx_comm_agree(g->comm, st);
        if (st == HX_OK && (g->cap[GDD_CAP_MIG] != old_mig || g->cap[GDD_CAP_PMSG] != old_pmsg))
            st = hx_comm_agree(g->comm, setup_channels(g));
        if (g->exec)
            cudaGraphExecDestroy(g->exec);
        g->exec = NULL;
        g->growths++;
        tm.retries++;
        if (st != HX_OK) {
            free(vec);
            return st;
        }
    }
    /* commit: the new home becomes the current one */
    for (int i = 0; i < nl && st == HX_OK; i++) {
        gdd_dom *d = &g->dom[i];
        const int nt = (g->cap[GDD_CAP_HOME] > g->cap[GDD_CAP_HMOL] ? g->cap[GDD_CAP_HOME]
                                                                    : g->cap[GDD_CAP_HMOL]) +
                       2;
        HX_LAUNCH(k_commit, hx_div_up(nt, GDD_MT), GDD_MT, 0, s, d->D);
        if (cudaGetLastError() != cudaSuccess)
            st = hx_error_set(HX_ERR_CUDA, __FILE__, __LINE__, __func__, "k_commit launch failed");
        d->n_home_a = d->counts.n_home;
        d->nmol_a = d->counts.nmol;
        hx_gpu_dd_local *v = &d->view;
        const gdd_dev *D = &d->D;
        v->c = &d->counts;
        v->x = D->bx;
        v->v = D->bv;
        v->gid = D->bgid;
        v->mol_gid = D->bmg;
        v->mol_start = D->bms;
        v->type = D->ltype;
        v->mol = D->lmol;
        v->q = D->lq;
        v->excl = D->lexcl;
        v->mol_pos = D->lmpos;
        v->lgid = D->lgid;
        v->zone = D->lzone;
        v->mass = D->hm;
        v->invmass = D->him;
        v->settle = D->settle;
        v->free_at = D->freeat;
        v->shake_start = D->shs;
        v->shake_type = D->sht;
        v->shake_gid = D->shg;
        v->bonded_start = D->bds;
        v->bonded_type = D->bdt;
        v->bonded_gid = D->bdg;
        v->bonded_off = (const int *)D->boff;
        v->index_map = D->imap;
    }
    if (gmax)
        for (int k = 0; k <= np; k++)
            gmax[k] = red[1 + GDD_NCAP + k];
    for (int k = 0; k < 4; k++)
        g->stats[k] = red[2 + GDD_NCAP + np + k];
    free(vec);
    if (times)
        *times = tm;
    return st;
}

extern "C" const hx_gpu_dd_local *hx_gpu_decomp_local(const hx_gpu_decomp *g, int i)
{
    return &g->dom[i].view;
}

extern "C" hx_status hx_gpu_decomp_image(const hx_gpu_decomp *g, int i, void **img, size_t *cap)
{
    HX_CHECK(g && i >= 0 && i < g->nlocal && img && cap, HX_ERR_INVALID_ARG,
             "hx_gpu_decomp_image: bad argument");
    *img = g->dom[i].img;
    *cap = g->dom[i].img_cap;
    return HX_OK;
}

extern "C" void hx_gpu_decomp_stats(const hx_gpu_decomp *g, long long *home_max,
                                    long long *home_min, long long *halo_max, long long *halo_min)
{
    *home_max = g->stats[0];
    *home_min = -g->stats[1];
    *halo_max = g->stats[2];
    *halo_min = -g->stats[3];
}

extern "C" hx_status hx_gpu_decomp_home_lists(const hx_gpu_decomp *g, int i, hx_home *h)
{
    HX_CHECK(g && h && i >= 0 && i < g->nlocal, HX_ERR_INVALID_ARG,
             "hx_gpu_decomp_home_lists: bad argument");
    const gdd_dom *d = &g->dom[i];
    HX_TRY(hx_home_reserve(h, d->n_home_a, d->nmol_a));
    if (d->n_home_a > 0)
        HX_CUDA(cudaMemcpy(h->gid, d->D.agid, sizeof(int) * (size_t)d->n_home_a,
                           cudaMemcpyDeviceToHost));
    if (d->nmol_a > 0)
        HX_CUDA(cudaMemcpy(h->mol_gid, d->D.amg, sizeof(int) * (size_t)d->nmol_a,
                           cudaMemcpyDeviceToHost));
    HX_CUDA(cudaMemcpy(h->mol_start, d->D.ams, sizeof(int) * ((size_t)d->nmol_a + 1),
                       cudaMemcpyDeviceToHost));
    h->natoms = d->n_home_a;
    h->nmol = d->nmol_a;
    return HX_OK;
}

extern "C" int hx_gpu_decomp_growths(const hx_gpu_decomp *g)
{
    return g->growths;
}
