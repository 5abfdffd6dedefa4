/* GPU bonded interactions (src/md/gpu/bonded_gpu.h): the interaction list, its kernels and ops.
 *
 * Work: about 40 interactions per ethanol (2 bonds, 13 angles, 12 dihedrals, 12 pairs; the 6
 * bonds to hydrogen are constraints), 50k at 45k atoms with 1250 ethanols, some 100-200 flops
 * each: a few microseconds, small next to the pair kernel it overlaps (it runs on the
 * non-local stream, docs/ARCHITECTURE.md "The step schedule"). One thread per interaction keeps
 * every thread's work short and alike within a warp (interactions are grouped by kind); the atomics
 * spread over 9-atom molecules and are few. */
#define HX_BT_FLOAT /* the float instance of the shared arithmetic, for normal steps */
#include "md/gpu/bonded_gpu.h"
#include "gpu/cuda_check.h"
#include "gpu/gpu_util.cuh"
#include "md/bonded_terms.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define GBT_THREADS 128
#define GBT_NKIND 4 /* bonds, angles, dihedrals, 1-4 pairs */

/* One term of a molecule type: atom positions in the molecule and parameters
 * (bond: b0, kb; angle: theta0, ktheta; dihedral: c[0..5]; pair: c6, c12, qq). */
typedef struct gbt_term {
    int at[4];
    double p[6];
} gbt_term;

typedef struct gbt_dev {
    const gbt_term *terms;
    const int2 *items;  /* (first atom of the molecule, term) grouped by kind */
    int end[GBT_NKIND]; /* items of kind c: [end[c-1], end[c]) */
    double epsfac;
    double *energy; /* [5] */
    int *bad;       /* first atom of the first molecule with a non-finite force, INT_MAX: none */
} gbt_dev;

struct hx_gpu_bonded {
    const hx_forcefield *ff;
    double epsfac;
    int nmt;
    int (*toff)[GBT_NKIND]; /* [nmoltypes] first term of each kind in the table */
    gbt_term *d_terms;
    int2 *d_items, *h_items;
    int cap_items;
    int end[GBT_NKIND];
    double *d_energy;
    int *d_bad;
    struct {
        double e[5];
        int bad;
    } * h_res; /* pinned */
    /* the molecules of the list, for messages */
    int nmol, cap_mol;
    int *mstart, *mgid, *mtype;
    /* lists from the device (hx_gpu_bonded_set_molecules_device): read back for a message only */
    const int *dev_start, *dev_type, *dev_gid;
    int4 *d_toff, *d_kcount; /* per molecule type: first term and count of each kind */
};

/* ---- kernels ----------------------------------------------------------------------------- */

static __device__ __forceinline__ void gbt_diff_d(const double *__restrict__ x, int a, int b,
                                                  double *r)
{
#pragma unroll
    for (int k = 0; k < 3; k++)
        r[k] = x[3 * a + k] - x[3 * b + k];
}

/* formed in double, then rounded: the difference keeps float's relative precision */
static __device__ __forceinline__ void gbt_diff_f(const double *__restrict__ x, int a, int b,
                                                  float *r)
{
#pragma unroll
    for (int k = 0; k < 3; k++)
        r[k] = (float)(x[3 * a + k] - x[3 * b + k]);
}

static __device__ __forceinline__ bool gbt_add(float *__restrict__ f, int a, float fx, float fy,
                                               float fz)
{
    atomicAdd(&f[3 * a], fx);
    atomicAdd(&f[3 * a + 1], fy);
    atomicAdd(&f[3 * a + 2], fz);
    return isfinite(fx) && isfinite(fy) && isfinite(fz);
}

/* Interaction t of kind c in double: forces added to f, energy into e[5]. */
static __device__ __forceinline__ bool gbt_term_d(const gbt_dev &d, const double *__restrict__ x,
                                                  float *__restrict__ f, int c, int a0,
                                                  const gbt_term &tm, double *e)
{
    const int i = a0 + tm.at[0], j = a0 + tm.at[1], k = a0 + tm.at[2], l = a0 + tm.at[3];
    bool ok = true;
    if (c == 0) {
        double r[3], fi[3];
        gbt_diff_d(x, i, j, r);
        e[0] += hx_bt_bond_d(r, tm.p[0], tm.p[1], fi);
        ok &= gbt_add(f, i, (float)fi[0], (float)fi[1], (float)fi[2]);
        ok &= gbt_add(f, j, (float)-fi[0], (float)-fi[1], (float)-fi[2]);
    } else if (c == 1) {
        double rij[3], rkj[3], fi[3], fk[3];
        gbt_diff_d(x, i, j, rij);
        gbt_diff_d(x, k, j, rkj);
        e[1] += hx_bt_angle_d(rij, rkj, tm.p[0], tm.p[1], fi, fk);
        ok &= gbt_add(f, i, (float)fi[0], (float)fi[1], (float)fi[2]);
        ok &= gbt_add(f, k, (float)fk[0], (float)fk[1], (float)fk[2]);
        ok &= gbt_add(f, j, (float)-(fi[0] + fk[0]), (float)-(fi[1] + fk[1]),
                      (float)-(fi[2] + fk[2]));
    } else if (c == 2) {
        double rij[3], rkj[3], rkl[3], fd[4][3];
        gbt_diff_d(x, i, j, rij);
        gbt_diff_d(x, k, j, rkj);
        gbt_diff_d(x, k, l, rkl);
        e[2] += hx_bt_dihedral_d(rij, rkj, rkl, tm.p, fd);
        const int at[4] = {i, j, k, l};
#pragma unroll
        for (int u = 0; u < 4; u++)
            ok &= gbt_add(f, at[u], (float)fd[u][0], (float)fd[u][1], (float)fd[u][2]);
    } else {
        double r[3], fi[3], elj, ec;
        gbt_diff_d(x, i, j, r);
        hx_bt_pair14_d(r, tm.p[0], tm.p[1], d.epsfac, tm.p[2], &elj, &ec, fi);
        e[3] += elj;
        e[4] += ec;
        ok &= gbt_add(f, i, (float)fi[0], (float)fi[1], (float)fi[2]);
        ok &= gbt_add(f, j, (float)-fi[0], (float)-fi[1], (float)-fi[2]);
    }
    return ok && isfinite(e[0] + e[1] + e[2] + e[3] + e[4]);
}

/* The same in float (forces only), from double differences and float parameters. */
static __device__ __forceinline__ bool gbt_term_f(const gbt_dev &d, const double *__restrict__ x,
                                                  float *__restrict__ f, int c, int a0,
                                                  const gbt_term &tm)
{
    const int i = a0 + tm.at[0], j = a0 + tm.at[1], k = a0 + tm.at[2], l = a0 + tm.at[3];
    bool ok = true;
    if (c == 0) {
        float r[3], fi[3];
        gbt_diff_f(x, i, j, r);
        (void)hx_bt_bond_f(r, (float)tm.p[0], (float)tm.p[1], fi);
        ok &= gbt_add(f, i, fi[0], fi[1], fi[2]);
        ok &= gbt_add(f, j, -fi[0], -fi[1], -fi[2]);
    } else if (c == 1) {
        float rij[3], rkj[3], fi[3], fk[3];
        gbt_diff_f(x, i, j, rij);
        gbt_diff_f(x, k, j, rkj);
        (void)hx_bt_angle_f(rij, rkj, (float)tm.p[0], (float)tm.p[1], fi, fk);
        ok &= gbt_add(f, i, fi[0], fi[1], fi[2]);
        ok &= gbt_add(f, k, fk[0], fk[1], fk[2]);
        ok &= gbt_add(f, j, -(fi[0] + fk[0]), -(fi[1] + fk[1]), -(fi[2] + fk[2]));
    } else if (c == 2) {
        float rij[3], rkj[3], rkl[3], fd[4][3], cf[6];
        gbt_diff_f(x, i, j, rij);
        gbt_diff_f(x, k, j, rkj);
        gbt_diff_f(x, k, l, rkl);
#pragma unroll
        for (int p = 0; p < 6; p++)
            cf[p] = (float)tm.p[p];
        (void)hx_bt_dihedral_f(rij, rkj, rkl, cf, fd);
        const int at[4] = {i, j, k, l};
#pragma unroll
        for (int u = 0; u < 4; u++)
            ok &= gbt_add(f, at[u], fd[u][0], fd[u][1], fd[u][2]);
    } else {
        float r[3], fi[3], elj, ec;
        gbt_diff_f(x, i, j, r);
        hx_bt_pair14_f(r, (float)tm.p[0], (float)tm.p[1], (float)d.epsfac, (float)tm.p[2], &elj,
                       &ec, fi);
        ok &= gbt_add(f, i, fi[0], fi[1], fi[2]);
        ok &= gbt_add(f, j, -fi[0], -fi[1], -fi[2]);
    }
    return ok;
}

static __device__ __forceinline__ void gbt_body(const gbt_dev &d, const double *__restrict__ x,
                                                float *__restrict__ f, const bool energy)
{
    __shared__ double s_red[32];
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    double e[5] = {0.0, 0.0, 0.0, 0.0, 0.0};
    if (t < d.end[GBT_NKIND - 1]) {
        const int c = t < d.end[0] ? 0 : t < d.end[1] ? 1 : t < d.end[2] ? 2 : 3;
        const int2 it = d.items[t];
        const gbt_term tm = d.terms[it.y];
        const bool ok =
            energy ? gbt_term_d(d, x, f, c, it.x, tm, e) : gbt_term_f(d, x, f, c, it.x, tm);
        if (!ok)
            atomicMin(d.bad, it.x);
    }
    if (energy) {
#pragma unroll
        for (int c = 0; c < 5; c++) {
            const double s = hx_block_sum_d(e[c], s_red);
            if (threadIdx.x == 0 && s != 0.0)
                atomicAdd(&d.energy[c], s);
        }
    }
}

__global__ __launch_bounds__(GBT_THREADS) void k_bonded_f(gbt_dev d, const double *__restrict__ x,
                                                          float *__restrict__ f)
{
    gbt_body(d, x, f, false);
}

__global__ __launch_bounds__(GBT_THREADS) void k_bonded_fe(gbt_dev d, const double *__restrict__ x,
                                                           float *__restrict__ f)
{
    gbt_body(d, x, f, true);
}

/* ---- host -------------------------------------------------------------------------------- */

extern "C" void hx_gpu_bonded_destroy(hx_gpu_bonded **bp)
{
    if (!bp || !*bp)
        return;
    hx_gpu_bonded *b = *bp;
    cudaFree(b->d_terms);
    cudaFree(b->d_items);
    cudaFree(b->d_energy);
    cudaFree(b->d_bad);
    if (b->h_res)
        cudaFreeHost(b->h_res);
    free(b->h_items);
    free(b->toff);
    cudaFree(b->d_toff);
    cudaFree(b->d_kcount);
    free(b->mstart);
    free(b->mgid);
    free(b->mtype);
    free(b);
    *bp = NULL;
}

/* terms of kind c of molecule type t */
static int kind_count(const hx_moltype *t, int c)
{
    return c == 0 ? t->nbonds : c == 1 ? t->nangles : c == 2 ? t->ndihedrals : t->npairs;
}

static gbt_term make_term(const hx_moltype *t, int c, int q)
{
    gbt_term r;
    memset(&r, 0, sizeof r);
    if (c == 0) {
        r.at[0] = t->bonds[q].i;
        r.at[1] = t->bonds[q].j;
        r.p[0] = t->bonds[q].b0;
        r.p[1] = t->bonds[q].kb;
    } else if (c == 1) {
        r.at[0] = t->angles[q].i;
        r.at[1] = t->angles[q].j;
        r.at[2] = t->angles[q].k;
        r.p[0] = t->angles[q].theta0;
        r.p[1] = t->angles[q].ktheta;
    } else if (c == 2) {
        r.at[0] = t->dihedrals[q].i;
        r.at[1] = t->dihedrals[q].j;
        r.at[2] = t->dihedrals[q].k;
        r.at[3] = t->dihedrals[q].l;
        memcpy(r.p, t->dihedrals[q].c, sizeof r.p);
    } else {
        r.at[0] = t->pairs[q].i;
        r.at[1] = t->pairs[q].j;
        r.p[0] = t->pairs[q].c6;
        r.p[1] = t->pairs[q].c12;
        r.p[2] = t->pairs[q].qq;
    }
    return r;
}

extern "C" hx_status hx_gpu_bonded_create(const hx_forcefield *ff, double epsfac,
                                          hx_gpu_bonded **out)
{
    HX_CHECK(ff && out, HX_ERR_INVALID_ARG, "hx_gpu_bonded_create: NULL argument");
    HX_CHECK(isfinite(epsfac) && epsfac > 0, HX_ERR_INVALID_ARG, "epsfac = %g", epsfac);
    *out = NULL;
    hx_gpu_bonded *b = (hx_gpu_bonded *)calloc(1, sizeof *b);
    HX_CHECK(b, HX_ERR_NOMEM, "out of memory");
    hx_status st = HX_OK;
    gbt_term *h = NULL;
    const int int_max = INT_MAX;
    b->ff = ff;
    b->epsfac = epsfac;
    b->nmt = hx_forcefield_nmoltypes(ff);
    b->toff = (int(*)[GBT_NKIND])calloc((size_t)b->nmt + 1, sizeof *b->toff);
    if (!b->toff)
        HX_FAIL_GOTO(st, HX_ERR_NOMEM, fail, "out of memory");
    {
        /* every molecule type's terms, kind by kind */
        int nterm = 0;
        for (int k = 0; k < b->nmt; k++)
            for (int c = 0; c < GBT_NKIND; c++) {
                b->toff[k][c] = nterm;
                nterm += kind_count(hx_forcefield_moltype(ff, k), c);
            }
        h = (gbt_term *)calloc((size_t)nterm + 1, sizeof *h);
        if (!h)
            HX_FAIL_GOTO(st, HX_ERR_NOMEM, fail, "out of memory for %d bonded terms", nterm);
        for (int k = 0; k < b->nmt; k++) {
            const hx_moltype *t = hx_forcefield_moltype(ff, k);
            for (int c = 0; c < GBT_NKIND; c++)
                for (int q = 0; q < kind_count(t, c); q++)
                    h[b->toff[k][c] + q] = make_term(t, c, q);
        }
        HX_CUDA_GOTO(st, cudaMalloc((void **)&b->d_terms, sizeof *h * ((size_t)nterm + 1)), fail);
        HX_CUDA_GOTO(
            st, cudaMemcpy(b->d_terms, h, sizeof *h * ((size_t)nterm + 1), cudaMemcpyHostToDevice),
            fail);
    }
    HX_CUDA_GOTO(st, cudaMalloc((void **)&b->d_energy, 5 * sizeof(double)), fail);
    HX_CUDA_GOTO(st, cudaMemset(b->d_energy, 0, 5 * sizeof(double)), fail);
    HX_CUDA_GOTO(st, cudaMalloc((void **)&b->d_bad, sizeof(int)), fail);
    HX_CUDA_GOTO(st, cudaMemcpy(b->d_bad, &int_max, sizeof int_max, cudaMemcpyHostToDevice), fail);
    HX_CUDA_GOTO(st, cudaMallocHost((void **)&b->h_res, sizeof *b->h_res), fail);
    memset(b->h_res, 0, sizeof *b->h_res);
    b->h_res->bad = INT_MAX;
    free(h);
    *out = b;
    return HX_OK;
fail:
    free(h);
    hx_gpu_bonded_destroy(&b);
    return st;
}

extern "C" hx_status hx_gpu_bonded_set_molecules(hx_gpu_bonded *b, const hx_mol_list *ml)
{
    HX_CHECK(b && ml && (ml->nmol == 0 || (ml->start && ml->type)), HX_ERR_INVALID_ARG,
             "hx_gpu_bonded_set_molecules: NULL argument");
    const int nmol = ml->nmol;
    long long cnt[GBT_NKIND] = {0, 0, 0, 0};
    for (int m = 0; m < nmol; m++) {
        HX_CHECK(ml->type[m] >= 0 && ml->type[m] < b->nmt, HX_ERR_INVALID_ARG,
                 "molecule %d has type %d of %d", m + 1, ml->type[m], b->nmt);
        const hx_moltype *t = hx_forcefield_moltype(b->ff, ml->type[m]);
        for (int c = 0; c < GBT_NKIND; c++)
            cnt[c] += kind_count(t, c);
    }
    const long long n = cnt[0] + cnt[1] + cnt[2] + cnt[3];
    HX_CHECK(n < INT_MAX / 2, HX_ERR_UNSUPPORTED, "%lld bonded interactions in one domain", n);
    if (n + 1 > b->cap_items || !b->h_items) {
        const int cap = (int)(n + n / 4 + 64);
        int2 *hi = (int2 *)realloc(b->h_items, sizeof *hi * (size_t)cap);
        HX_CHECK(hi, HX_ERR_NOMEM, "out of memory for %lld bonded interactions", n);
        b->h_items = hi;
        HX_CUDA(cudaFree(b->d_items));
        b->d_items = NULL;
        HX_CUDA(cudaMalloc((void **)&b->d_items, sizeof *hi * (size_t)cap));
        b->cap_items = cap;
    }
    if (nmol + 1 > b->cap_mol) {
        const int cap = nmol + nmol / 4 + 64;
        int *s = (int *)realloc(b->mstart, sizeof(int) * (size_t)cap);
        if (s)
            b->mstart = s;
        int *g = (int *)realloc(b->mgid, sizeof(int) * (size_t)cap);
        if (g)
            b->mgid = g;
        int *y = (int *)realloc(b->mtype, sizeof(int) * (size_t)cap);
        if (y)
            b->mtype = y;
        HX_CHECK(s && g && y, HX_ERR_NOMEM, "out of memory for %d molecules", nmol);
        b->cap_mol = cap;
    }
    int pos[GBT_NKIND];
    pos[0] = 0;
    for (int c = 1; c < GBT_NKIND; c++)
        pos[c] = pos[c - 1] + (int)cnt[c - 1];
    for (int c = 0; c < GBT_NKIND; c++)
        b->end[c] = pos[c] + (int)cnt[c];
    for (int m = 0; m < nmol; m++) {
        const int ty = ml->type[m];
        const hx_moltype *t = hx_forcefield_moltype(b->ff, ty);
        for (int c = 0; c < GBT_NKIND; c++)
            for (int q = 0; q < kind_count(t, c); q++)
                b->h_items[pos[c]++] = make_int2(ml->start[m], b->toff[ty][c] + q);
        b->mstart[m] = ml->start[m];
        b->mgid[m] = ml->gid ? ml->gid[m] : m;
        b->mtype[m] = ty;
    }
    b->nmol = nmol;
    b->dev_start = b->dev_type = b->dev_gid = NULL;
    if (n > 0)
        HX_CUDA(
            cudaMemcpy(b->d_items, b->h_items, sizeof(int2) * (size_t)n, cudaMemcpyHostToDevice));
    return HX_OK;
}

/* Items of the device lists: molecule m's terms of kind c at pos0[c] + off[m].c + q. */
__global__ __launch_bounds__(128) void k_bd_items(const int *start, const int *type,
                                                  const int4 *off, const int4 *toff, const int4 *kc,
                                                  int nmol, int4 pos0, int2 *items)
{
    const int m = blockIdx.x * blockDim.x + threadIdx.x;
    if (m >= nmol)
        return;
    const int ty = type[m], a0 = start[m];
    const int4 o = off[m], t = toff[ty], k = kc[ty];
    for (int q = 0; q < k.x; q++)
        items[pos0.x + o.x + q] = make_int2(a0, t.x + q);
    for (int q = 0; q < k.y; q++)
        items[pos0.y + o.y + q] = make_int2(a0, t.y + q);
    for (int q = 0; q < k.z; q++)
        items[pos0.z + o.z + q] = make_int2(a0, t.z + q);
    for (int q = 0; q < k.w; q++)
        items[pos0.w + o.w + q] = make_int2(a0, t.w + q);
}

extern "C" hx_status hx_gpu_bonded_set_molecules_device(hx_gpu_bonded *b, int nmol,
                                                        const int *start, const int *type,
                                                        const int *gid, const int *off,
                                                        const int count[4], hx_stream stream)
{
    HX_CHECK(b && nmol >= 0 && count && (nmol == 0 || (start && type && gid && off)),
             HX_ERR_INVALID_ARG, "hx_gpu_bonded_set_molecules_device: bad argument");
    if (!b->d_toff) {
        int4 *ht = (int4 *)malloc(sizeof(int4) * ((size_t)b->nmt + 1));
        int4 *hk = (int4 *)malloc(sizeof(int4) * ((size_t)b->nmt + 1));
        HX_CHECK(ht && hk, HX_ERR_NOMEM, "out of memory");
        for (int k = 0; k < b->nmt; k++) {
            const hx_moltype *t = hx_forcefield_moltype(b->ff, k);
            ht[k] = make_int4(b->toff[k][0], b->toff[k][1], b->toff[k][2], b->toff[k][3]);
            hk[k] =
                make_int4(kind_count(t, 0), kind_count(t, 1), kind_count(t, 2), kind_count(t, 3));
        }
        hx_status st = HX_OK;
        /* on the stream of k_bd_items below, which reads them: a cudaMemcpy runs on the legacy
         * default stream, which does not order the context's non-blocking streams, and from
         * pageable memory it may return before its DMA has landed (the async form stages the
         * pageable source before it returns, so ht and hk may be freed at once) */
        if (cudaMalloc((void **)&b->d_toff, sizeof(int4) * ((size_t)b->nmt + 1)) != cudaSuccess ||
            cudaMalloc((void **)&b->d_kcount, sizeof(int4) * ((size_t)b->nmt + 1)) != cudaSuccess ||
            cudaMemcpyAsync(b->d_toff, ht, sizeof(int4) * (size_t)b->nmt, cudaMemcpyHostToDevice,
                            stream) != cudaSuccess ||
            cudaMemcpyAsync(b->d_kcount, hk, sizeof(int4) * (size_t)b->nmt, cudaMemcpyHostToDevice,
                            stream) != cudaSuccess)
            st = hx_error_set(HX_ERR_CUDA, __FILE__, __LINE__, __func__,
                              "bonded tables to the device: %s",
                              cudaGetErrorString(cudaGetLastError()));
        free(ht);
        free(hk);
        HX_TRY(st);
    }
    const long long n = (long long)count[0] + count[1] + count[2] + count[3];
    HX_CHECK(n < INT_MAX / 2, HX_ERR_UNSUPPORTED, "%lld bonded interactions in one domain", n);
    if (n + 1 > b->cap_items) {
        const int cap = (int)(n + n / 4 + 64);
        HX_CUDA(cudaFree(b->d_items));
        b->d_items = NULL;
        HX_CUDA(cudaMalloc((void **)&b->d_items, sizeof(int2) * (size_t)cap));
        free(b->h_items);
        b->h_items = NULL;
        b->cap_items = cap;
    }
    const int4 pos0 = make_int4(0, count[0], count[0] + count[1], count[0] + count[1] + count[2]);
    b->end[0] = count[0];
    b->end[1] = pos0.z;
    b->end[2] = pos0.w;
    b->end[3] = (int)n;
    b->nmol = nmol;
    b->dev_start = start;
    b->dev_type = type;
    b->dev_gid = gid;
    if (nmol > 0) {
        HX_LAUNCH(k_bd_items, hx_div_up(nmol, 128), 128, 0, stream, start, type, (const int4 *)off,
                  (const int4 *)b->d_toff, (const int4 *)b->d_kcount, nmol, pos0, b->d_items);
        HX_CUDA_LAUNCH("k_bd_items");
    }
    return HX_OK;
}

extern "C" long long hx_gpu_bonded_count(const hx_gpu_bonded *b)
{
    return b ? b->end[GBT_NKIND - 1] : 0;
}

extern "C" hx_status hx_gpu_bonded_compute(hx_gpu_bonded *b, const double *x, float *f, int flags,
                                           hx_stream stream)
{
    HX_CHECK(b, HX_ERR_INVALID_ARG, "hx_gpu_bonded_compute: NULL argument");
    cudaStream_t s = stream;
    const int energy = (flags & HX_GPU_BONDED_ENERGY) != 0;
    if (energy)
        HX_CUDA(cudaMemsetAsync(b->d_energy, 0, 5 * sizeof(double), s));
    const int n = b->end[GBT_NKIND - 1];
    if (n == 0)
        return HX_OK;
    HX_CHECK(x && f, HX_ERR_INVALID_ARG, "hx_gpu_bonded_compute: NULL positions or forces");
    gbt_dev d;
    d.terms = b->d_terms;
    d.items = b->d_items;
    for (int c = 0; c < GBT_NKIND; c++)
        d.end[c] = b->end[c];
    d.epsfac = b->epsfac;
    d.energy = b->d_energy;
    d.bad = b->d_bad;
    if (energy) {
        HX_LAUNCH(k_bonded_fe, hx_div_up(n, GBT_THREADS), GBT_THREADS, 0, s, d, x, f);
        HX_CUDA_LAUNCH("k_bonded_fe");
    } else {
        HX_LAUNCH(k_bonded_f, hx_div_up(n, GBT_THREADS), GBT_THREADS, 0, s, d, x, f);
        HX_CUDA_LAUNCH("k_bonded_f");
    }
    return HX_OK;
}

extern "C" hx_status hx_gpu_bonded_fetch(hx_gpu_bonded *b, hx_stream stream)
{
    HX_CHECK(b, HX_ERR_INVALID_ARG, "hx_gpu_bonded_fetch: NULL argument");
    cudaStream_t s = stream;
    HX_CUDA(
        cudaMemcpyAsync(b->h_res->e, b->d_energy, 5 * sizeof(double), cudaMemcpyDeviceToHost, s));
    HX_CUDA(cudaMemcpyAsync(&b->h_res->bad, b->d_bad, sizeof(int), cudaMemcpyDeviceToHost, s));
    return HX_OK;
}

extern "C" void hx_gpu_bonded_read_energies(const hx_gpu_bonded *b, hx_bonded_energies *e)
{
    e->bonds = b->h_res->e[0];
    e->angles = b->h_res->e[1];
    e->dihedrals = b->h_res->e[2];
    e->lj14 = b->h_res->e[3];
    e->coulomb14 = b->h_res->e[4];
}

extern "C" hx_status hx_gpu_bonded_check(const hx_gpu_bonded *b, long long step)
{
    HX_CHECK(b, HX_ERR_INVALID_ARG, "hx_gpu_bonded_check: NULL argument");
    const int bad = b->h_res->bad;
    if (bad == INT_MAX)
        return HX_OK;
    if (b->dev_start && b->nmol > 0) {
        /* the lists are on the device (a device search step's): read them back for the
         * message */
        hx_gpu_bonded *w = (hx_gpu_bonded *)b;
        if (w->cap_mol < w->nmol + 1) {
            const int cap = w->nmol + w->nmol / 4 + 64;
            int *s1 = (int *)realloc(w->mstart, sizeof(int) * (size_t)cap);
            if (s1)
                w->mstart = s1;
            int *s2 = (int *)realloc(w->mgid, sizeof(int) * (size_t)cap);
            if (s2)
                w->mgid = s2;
            int *s3 = (int *)realloc(w->mtype, sizeof(int) * (size_t)cap);
            if (s3)
                w->mtype = s3;
            HX_CHECK(s1 && s2 && s3, HX_ERR_NOMEM, "out of memory");
            w->cap_mol = cap;
        }
        const size_t bytes = sizeof(int) * (size_t)w->nmol;
        HX_CUDA(cudaMemcpy(w->mstart, w->dev_start, bytes, cudaMemcpyDeviceToHost));
        HX_CUDA(cudaMemcpy(w->mgid, w->dev_gid, bytes, cudaMemcpyDeviceToHost));
        HX_CUDA(cudaMemcpy(w->mtype, w->dev_type, bytes, cudaMemcpyDeviceToHost));
    }
    int m = 0;
    while (m < b->nmol && b->mstart[m] != bad)
        m++;
    const hx_moltype *t = m < b->nmol ? hx_forcefield_moltype(b->ff, b->mtype[m]) : NULL;
    HX_FAIL(HX_ERR_PHYSICS,
            "step %lld (or an earlier step since the last check): non-finite bonded force in "
            "molecule %d (%s): atoms of the molecule overlap or the system blew up; check the "
            "input structure and use a smaller time step",
            step, m < b->nmol ? b->mgid[m] + 1 : -1, t ? t->name : "?");
}
