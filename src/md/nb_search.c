/* The cluster-pair search: for each i cluster, the j clusters of the zones it interacts with
 * whose bounding boxes and atoms come within rlist, grouped into list entries by (class, image
 * shift), with exclusion masks; the missed-pair count; the split of the lists into equal kernel
 * work per thread. The search body is compiled twice (baseline and AVX2, chosen with the
 * kernels): its float range tests and masks are vector code. */
#include "md/nb_impl.h"
#include "halox/log.h"
#include "core/error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

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

static inline double gap(double a, double b)
{
    /* max(0, a, b) without libm's fmax call (it is not inlined with the project's flags) */
    double m = a > b ? a : b;
    return m > 0.0 ? m : 0.0;
}

/* Interaction mask of a cluster pair: bit 4*ii + jj set when slots ii of i and jj of j both hold
 * atoms of different molecules (same molecule: see intra_pairs; padding has molecule -1). Lane jj
 * of row ii compares j's molecule with mi[ii], i's molecule ii broadcast; rowbits[ii] holds bit
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

/* The bits of a cluster pair whose two slots hold atoms of the same molecule (padding: none).
 * Same shape as pair_mask. */
static inline unsigned same_mask(const vi4 mi[4], const vi4 rowbits[4], const int *msj)
{
    vi4 mj;
    memcpy(&mj, msj, sizeof mj);
    vi4 acc = (mj == mi[0]) & rowbits[0];
    for (int ii = 1; ii < 4; ii++)
        acc |= (mj == mi[ii]) & rowbits[ii];
    acc &= mj >= 0;
    return (unsigned)(acc[0] | acc[1] | acc[2] | acc[3]);
}

/* Of the same-molecule bits `same` of cluster pair (ci, cj), those whose atoms interact: not
 * excluded by the i atom's mask at the j atom's position (flexible molecules: pairs more than
 * nrexcl bonds apart, e.g. ethanol's methyl hydrogens and its hydroxyl hydrogen). Rigid water
 * and single atoms have every bit set, so nothing is added and their lists are unchanged. Only
 * cluster pairs that hold one molecule's atoms on both sides get here (a few per molecule). */
static inline unsigned intra_pairs(const hx_nb *nb, int ci, int cj, unsigned same)
{
    unsigned add = 0;
    while (same) {
        const int b = __builtin_ctz(same);
        same &= same - 1;
        const int si = 4 * ci + (b >> 2), sj = 4 * cj + (b & 3);
        if (!((nb->xs[si] >> nb->ps[sj]) & 1u))
            add |= 1u << b;
    }
    return add;
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
                            unsigned mask = pair_mask(mi, rowbits, nb->ms + 4 * cj);
                            const unsigned same = same_mask(mi, rowbits, nb->ms + 4 * cj);
                            if (same)
                                mask |= intra_pairs(nb, ci, cj, same);
                            mask &= self ? 0x08ceu : 0xffffu;
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
 * the kernels in hx_nbi_select_kernel): the float range tests and the mask are vector code. */
void hx_nbi_search_chunk_generic(hx_nb *nb, nb_chunk *ch, const hx_local_set *set, double rlist,
                                 int check_missed)
{
    search_chunk_body(nb, ch, set, rlist, check_missed);
}

#if HX_HAVE_AVX2_KERNELS
HX_AVX2_ATTR void hx_nbi_search_chunk_avx2(hx_nb *nb, nb_chunk *ch, const hx_local_set *set,
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
    HX_TRY(hx_nbi_ensure_atoms(nb, n));
    HX_TRY(hx_nbi_build_clusters(nb, set));
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
