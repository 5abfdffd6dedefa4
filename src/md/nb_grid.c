/* Binning for the pair search: at every search the atoms of each zone go into columns of a 2D
 * x-y grid, are sorted by z within a column and cut into clusters of 4 (padded with dummy
 * slots) in the sorted layout the kernels read (see nonbonded.c for why this layout). */
#include "md/nb_impl.h"
#include "core/error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* 64-byte aligned (re)allocation without keeping contents: the vector loads want cluster rows
 * on cache-line boundaries. */
static void *realloc_aligned(void *old, size_t bytes)
{
    free(old);
    size_t b = (bytes + 63) / 64 * 64;
    return aligned_alloc(64, b > 0 ? b : 64);
}

hx_status hx_nbi_ensure_atoms(hx_nb *nb, int n)
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
        RE(nb->xs, N);
        RE(nb->ps, N);
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
hx_status hx_nbi_build_clusters(hx_nb *nb, const hx_local_set *set)
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
                    /* no masks: the whole molecule is excluded (rigid molecules) */
                    nb->xs[s] = set->excl ? set->excl[a] : 0xffffffffu;
                    nb->ps[s] = set->mol_pos ? set->mol_pos[a] : 0;
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
                    nb->xs[s] = 0xffffffffu;
                    nb->ps[s] = 0;
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
