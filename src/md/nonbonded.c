/* Non-bonded interactions on a local atom set: cell-list pair search into a flat Verlet list and
 * the LJ + reaction-field kernel.
 *
 * Why this layout:
 *  - Atoms are sorted by (zone, cell) at every search, and the kernel works on sorted SoA copies
 *    (xs, ys, zs, q, type) refreshed each step: j atoms of one i are then close in memory.
 *  - The list is CSR-like: entries (i, image shift, [jbeg, jend)) into one j array. Every j of an
 *    entry shares the image shift, so the inner loop has no per-pair periodic arithmetic and the
 *    same code serves open (decomposed) dimensions, where the shift is always zero.
 *  - Periodic atoms are binned at their wrapped position; the wrap offset (a multiple of the box)
 *    is stored per atom and added to the positions until the next search, so the stored image
 *    shifts stay valid while atoms cross the box edge.
 *  - The inner loop only computes (no scatter), writing per-pair force vectors to a scratch
 *    array, so gcc vectorises it with portable flags; a second scalar loop subtracts them from the
 *    j atoms. The cut-off test is a multiply by 0/1 inside the loop.
 *  - Work is split into nthreads chunks of i atoms fixed at search time, each with its own force
 *    buffer, reduced in chunk order: results depend on nthreads, not on OpenMP scheduling. */
#include "halox/md.h"
#include "core/error.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#define NSHIFT 27
#define SHIFT_ZERO 13

typedef struct nb_chunk {
    /* list */
    int nent, cap_ent;
    int *ei;     /* [nent] sorted i index */
    int *eshift; /* [nent] shift index */
    int *ejbeg;  /* [nent+1] */
    long long npair, cap_pair;
    int *jl; /* [npair] sorted j index */
    /* forces (sorted order) */
    double *fx, *fy, *fz;
    double *tx, *ty, *tz;                 /* scratch per pair of one entry: pair forces */
    double *gx, *gy, *gz, *gq, *g6, *g12; /* gathered j data */
    int cap_tmp;
    /* search scratch */
    int *cand_j, *cand_s;
    int cap_cand;
    long long missed;
    double vlj, vc;
    int i_begin, i_end; /* sorted i range */
    hx_status st;
} nb_chunk;

struct hx_nb {
    hx_nb_params p;
    hx_rf_consts rf;
    int ntypes;
    double c6[16], c12[16];
    int nthreads;
    nb_chunk *chunks;
    /* sorted atoms */
    int n, cap_n;
    int *perm;    /* sorted -> local */
    double *wrap; /* [3n] local order: added to x until the next search */
    double *xs, *ys, *zs, *qs;
    int *ts, *ms, *zs_zone;
    /* previous build, for the missed-pair count */
    double *x_prev;
    int n_prev;
    double rlist_prev;
    int have_prev;
    double rlist;
    double shiftvec[NSHIFT][3];
    /* grid */
    int ncell[3], nrange[3];
    double cell_lo[3], cell_size[3];
    int nzone_key;
    int *cellstart; /* [nzones*ncells+1] */
    int cap_cellstart;
    int *key;
    int cap_key;
    int ndim;
    int periodic[3];
    double box[3];
};

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
    nb->nthreads = nthreads;
    nb->chunks = calloc((size_t)nthreads, sizeof *nb->chunks);
    if (!nb->chunks) {
        free(nb);
        HX_FAIL(HX_ERR_NOMEM, "out of memory");
    }
    *out = nb;
    return HX_OK;
}

static void chunk_free(nb_chunk *c)
{
    free(c->ei);
    free(c->eshift);
    free(c->ejbeg);
    free(c->jl);
    free(c->fx);
    free(c->fy);
    free(c->fz);
    free(c->tx);
    free(c->ty);
    free(c->tz);
    free(c->gx);
    free(c->gy);
    free(c->gz);
    free(c->gq);
    free(c->g6);
    free(c->g12);
    free(c->cand_j);
    free(c->cand_s);
}

void hx_nb_destroy(hx_nb **nbp)
{
    if (!nbp || !*nbp)
        return;
    hx_nb *nb = *nbp;
    for (int c = 0; c < nb->nthreads; c++)
        chunk_free(&nb->chunks[c]);
    free(nb->chunks);
    free(nb->perm);
    free(nb->wrap);
    free(nb->xs);
    free(nb->ys);
    free(nb->zs);
    free(nb->qs);
    free(nb->ts);
    free(nb->ms);
    free(nb->zs_zone);
    free(nb->x_prev);
    free(nb->cellstart);
    free(nb->key);
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
    for (int c = 0; c < nb->nthreads; c++)
        s += nb->chunks[c].npair;
    return s;
}

/* Grow *p to at least n elements of size sz (contents kept). */
static int grow(void **p, long long *cap, long long n, size_t sz)
{
    if (n <= *cap)
        return 1;
    long long nc = *cap > 0 ? *cap : 64;
    while (nc < n)
        nc *= 2;
    void *q = realloc(*p, (size_t)nc * sz);
    if (!q)
        return 0;
    *p = q;
    *cap = nc;
    return 1;
}

static int grow_i(void **p, int *cap, int n, size_t sz)
{
    long long c = *cap;
    int ok = grow(p, &c, n, sz);
    *cap = (int)c;
    return ok;
}

static hx_status ensure_atoms(hx_nb *nb, int n)
{
    if (n <= nb->cap_n)
        return HX_OK;
    int cap = n + n / 4 + 16;
    size_t N = (size_t)cap;
#define RE(ptr, cnt)                                                                               \
    do {                                                                                           \
        void *q_ = realloc((ptr), (cnt) * sizeof *(ptr));                                          \
        HX_CHECK(q_, HX_ERR_NOMEM, "out of memory for %d atoms in the pair search", n);            \
        (ptr) = q_;                                                                                \
    } while (0)
    RE(nb->perm, N);
    RE(nb->wrap, 3 * N);
    RE(nb->xs, N);
    RE(nb->ys, N);
    RE(nb->zs, N);
    RE(nb->qs, N);
    RE(nb->ts, N);
    RE(nb->ms, N);
    RE(nb->zs_zone, N);
    RE(nb->x_prev, 3 * N);
    RE(nb->key, N);
    for (int c = 0; c < nb->nthreads; c++) {
        nb_chunk *ch = &nb->chunks[c];
        RE(ch->fx, N);
        RE(ch->fy, N);
        RE(ch->fz, N);
    }
#undef RE
    nb->cap_n = cap;
    return HX_OK;
}

/* Zone of every local atom (from the ranges) into key[], validated. */
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

/* Copy positions in sorted order with the wrap offsets of the last search. */
static void load_sorted(hx_nb *nb, const hx_local_set *set)
{
    const double *x = set->x;
    for (int s = 0; s < nb->n; s++) {
        int a = nb->perm[s];
        nb->xs[s] = x[3 * a] + nb->wrap[3 * a];
        nb->ys[s] = x[3 * a + 1] + nb->wrap[3 * a + 1];
        nb->zs[s] = x[3 * a + 2] + nb->wrap[3 * a + 2];
    }
}

/* Grid over the local atoms: periodic dims span the box, open dims the atoms' extent. Cells are
 * at least rlist/2 wide and searched over +-ceil(rlist/size) neighbours: a tighter fit around
 * the cut-off sphere than rlist-wide cells at little extra bookkeeping. */
static hx_status setup_grid(hx_nb *nb, const hx_local_set *set, double rlist)
{
    long long ncells = 1;
    double target = 0.5 * rlist;
    for (int d = 0; d < 3; d++) {
        double lo, len;
        if (set->periodic[d]) {
            HX_CHECK(set->box[d] > 0 && rlist < 0.5 * set->box[d], HX_ERR_GEOMETRY,
                     "pair-list radius %g nm is not below half the box (%g nm) along %c: use a "
                     "shorter cut-off/rlist or a larger box",
                     rlist, set->box[d], "xyz"[d]);
            lo = 0.0;
            len = set->box[d];
        } else {
            double mn = INFINITY, mx = -INFINITY;
            for (int a = 0; a < set->n; a++) {
                double v = set->x[3 * a + d];
                mn = v < mn ? v : mn;
                mx = v > mx ? v : mx;
            }
            if (set->n == 0)
                mn = mx = 0.0;
            HX_CHECK(isfinite(mn) && isfinite(mx), HX_ERR_PHYSICS,
                     "non-finite coordinate along %c in the pair search", "xyz"[d]);
            lo = mn;
            len = (mx - mn) * (1.0 + 1e-12) + 1e-9;
        }
        int nc = (int)(len / target);
        if (nc < 1)
            nc = 1;
        if (nc > 1024)
            nc = 1024;
        nb->ncell[d] = nc;
        nb->cell_lo[d] = lo;
        nb->cell_size[d] = len / nc;
        int nr = (int)ceil(rlist / nb->cell_size[d] - 1e-12);
        if (nr > nc && !set->periodic[d])
            nr = nc;
        HX_CHECK(!set->periodic[d] || nr <= nc, HX_ERR_INTERNAL, "search range %d > cells %d", nr,
                 nc);
        nb->nrange[d] = nr;
        ncells *= nc;
    }
    HX_CHECK(ncells <= 64 * 1024 * 1024, HX_ERR_GEOMETRY,
             "pair search grid of %lld cells: the local atoms span too large a region", ncells);
    return HX_OK;
}

static inline int cell_index(const hx_nb *nb, int cx, int cy, int cz)
{
    return (cz * nb->ncell[1] + cy) * nb->ncell[0] + cx;
}

/* Search the i atoms [ib, ie) of one chunk. */
static void search_chunk(hx_nb *nb, nb_chunk *ch, const hx_local_set *set, double rlist,
                         int check_missed)
{
    const double rl2 = rlist * rlist, rc2 = nb->p.rc * nb->p.rc;
    const double rp2 = nb->rlist_prev * nb->rlist_prev;
    const int nct = nb->ncell[0] * nb->ncell[1] * nb->ncell[2];
    const int nizone = hx_izone_count(set->ndim);
    ch->nent = 0;
    ch->npair = 0;
    ch->missed = 0;
    ch->st = HX_OK;
    long long capp = ch->cap_pair;
    int cap_e = ch->cap_ent, cap_c = ch->cap_cand;
    int nc = 0;
    for (int s = ch->i_begin; s < ch->i_end; s++) {
        int iz = nb->zs_zone[s];
        if (iz >= nizone)
            continue;
        double xi = nb->xs[s], yi = nb->ys[s], zi = nb->zs[s];
        int mi = nb->ms[s];
        int ci[3];
        double xv[3] = {xi, yi, zi};
        for (int d = 0; d < 3; d++) {
            int c = (int)((xv[d] - nb->cell_lo[d]) / nb->cell_size[d]);
            ci[d] = c < 0 ? 0 : (c >= nb->ncell[d] ? nb->ncell[d] - 1 : c);
        }
        int j0, j1;
        hx_izone_jrange(set->ndim, iz, &j0, &j1);
        nc = 0;
        for (int jz = j0; jz < j1; jz++) {
            int half = (iz == 0 && jz == 0);
            for (int oz = -nb->nrange[2]; oz <= nb->nrange[2]; oz++)
                for (int oy = -nb->nrange[1]; oy <= nb->nrange[1]; oy++)
                    for (int ox = -nb->nrange[0]; ox <= nb->nrange[0]; ox++) {
                        if (half && (oz < 0 || (oz == 0 && (oy < 0 || (oy == 0 && ox < 0)))))
                            continue;
                        int o[3] = {ox, oy, oz}, cj[3], k[3];
                        double dmin2 = 0.0, sh[3];
                        int skip = 0;
                        for (int d = 0; d < 3 && !skip; d++) {
                            int c = ci[d] + o[d];
                            k[d] = 0;
                            if (set->periodic[d]) {
                                while (c < 0) {
                                    c += nb->ncell[d];
                                    k[d]--;
                                }
                                while (c >= nb->ncell[d]) {
                                    c -= nb->ncell[d];
                                    k[d]++;
                                }
                            } else if (c < 0 || c >= nb->ncell[d]) {
                                skip = 1;
                                break;
                            }
                            cj[d] = c;
                            sh[d] = set->periodic[d] ? k[d] * set->box[d] : 0.0;
                            double lo = nb->cell_lo[d] + c * nb->cell_size[d] + sh[d];
                            double hi = lo + nb->cell_size[d];
                            double dd = xv[d] < lo ? lo - xv[d] : (xv[d] > hi ? xv[d] - hi : 0.0);
                            dmin2 += dd * dd;
                        }
                        /* a periodic image on the other side of a small grid */
                        if (skip || dmin2 >= rl2)
                            continue;
                        int cell = cell_index(nb, cj[0], cj[1], cj[2]);
                        int jb = nb->cellstart[jz * nct + cell];
                        int je = nb->cellstart[jz * nct + cell + 1];
                        if (half && ox == 0 && oy == 0 && oz == 0 && jb <= s)
                            jb = s + 1;
                        if (je <= jb)
                            continue;
                        int sidx = (k[0] + 1) + 3 * (k[1] + 1) + 9 * (k[2] + 1);
                        double xq = xi - sh[0], yq = yi - sh[1], zq = zi - sh[2];
                        if (nc + (je - jb) > cap_c) {
                            if (!grow_i((void **)&ch->cand_j, &cap_c, nc + (je - jb),
                                        sizeof(int)) ||
                                !grow_i((void **)&ch->cand_s, &ch->cap_cand, nc + (je - jb),
                                        sizeof(int))) {
                                ch->st = HX_ERR_NOMEM;
                                return;
                            }
                            ch->cap_cand = cap_c;
                        }
                        for (int j = jb; j < je; j++) {
                            double dx = xq - nb->xs[j], dy = yq - nb->ys[j], dz = zq - nb->zs[j];
                            double r2 = dx * dx + dy * dy + dz * dz;
                            if (r2 < rl2 && nb->ms[j] != mi) {
                                ch->cand_j[nc] = j;
                                ch->cand_s[nc] = sidx;
                                nc++;
                                if (check_missed && r2 < rc2) {
                                    /* distance at the previous build, minimum image */
                                    int a = nb->perm[s], b = nb->perm[j];
                                    double d2 = 0.0;
                                    for (int d = 0; d < 3; d++) {
                                        double v = nb->x_prev[3 * a + d] - nb->x_prev[3 * b + d];
                                        if (set->periodic[d])
                                            v -= set->box[d] * nearbyint(v / set->box[d]);
                                        d2 += v * v;
                                    }
                                    if (d2 >= rp2)
                                        ch->missed++;
                                }
                            }
                        }
                    }
        }
        if (nc == 0)
            continue;
        /* emit one entry per image shift, shifts in index order (deterministic) */
        int count[NSHIFT] = {0};
        for (int t = 0; t < nc; t++)
            count[ch->cand_s[t]]++;
        for (int sidx = 0; sidx < NSHIFT; sidx++) {
            if (!count[sidx])
                continue;
            if (ch->nent + 2 > cap_e) {
                int nce = cap_e > 0 ? 2 * cap_e : 1024;
                int *a = realloc(ch->ei, (size_t)nce * sizeof *a);
                if (a)
                    ch->ei = a;
                int *b = realloc(ch->eshift, (size_t)nce * sizeof *b);
                if (b)
                    ch->eshift = b;
                int *c = realloc(ch->ejbeg, ((size_t)nce + 1) * sizeof *c);
                if (c)
                    ch->ejbeg = c;
                if (!a || !b || !c) {
                    ch->st = HX_ERR_NOMEM;
                    return;
                }
                cap_e = ch->cap_ent = nce;
            }
            if (ch->npair + count[sidx] > capp) {
                if (!grow((void **)&ch->jl, &capp, ch->npair + count[sidx], sizeof(int))) {
                    ch->st = HX_ERR_NOMEM;
                    return;
                }
                ch->cap_pair = capp;
            }
            ch->ei[ch->nent] = s;
            ch->eshift[ch->nent] = sidx;
            ch->ejbeg[ch->nent] = (int)ch->npair;
            for (int t = 0; t < nc; t++)
                if (ch->cand_s[t] == sidx)
                    ch->jl[ch->npair++] = ch->cand_j[t];
            ch->nent++;
        }
    }
    if (ch->ei)
        ch->ejbeg[ch->nent] = (int)ch->npair;
}

hx_status hx_nb_search(hx_nb *nb, const hx_local_set *set, double rlist, int check_missed,
                       long long *missed)
{
    HX_CHECK(nb && set && set->n >= 0, HX_ERR_INVALID_ARG, "hx_nb_search: NULL argument");
    HX_CHECK(rlist >= nb->p.rc, HX_ERR_INVALID_ARG,
             "pair-list radius rlist = %g nm is shorter than the cut-off %g nm: use rlist >= rc",
             rlist, nb->p.rc);
    HX_CHECK(set->ndim >= 0 && set->ndim <= 3, HX_ERR_INVALID_ARG, "ndim = %d", set->ndim);
    if (missed)
        *missed = 0;
    int n = set->n;
    HX_TRY(ensure_atoms(nb, n));
    HX_TRY(zones_of(set, nb->key));
    HX_TRY(setup_grid(nb, set, rlist));
    int do_missed = check_missed && missed && nb->have_prev && nb->n_prev == n;
    const int nct = nb->ncell[0] * nb->ncell[1] * nb->ncell[2];
    int nz = hx_zone_count(set->ndim);
    int ncs = nz * nct + 1;
    if (ncs > nb->cap_cellstart) {
        int *q = realloc(nb->cellstart, (size_t)ncs * sizeof *q);
        HX_CHECK(q, HX_ERR_NOMEM, "out of memory for %d search cells", ncs);
        nb->cellstart = q;
        nb->cap_cellstart = ncs;
    }
    /* bin: key = zone * ncells + cell; wrap periodic coordinates */
    int *zone = nb->key; /* holds zones now; converted to keys below */
    memset(nb->cellstart, 0, (size_t)ncs * sizeof(int));
    for (int a = 0; a < n; a++) {
        int c[3];
        for (int d = 0; d < 3; d++) {
            double v = set->x[3 * a + d];
            HX_CHECK(isfinite(v), HX_ERR_PHYSICS,
                     "atom %d (local index %d) has a non-finite coordinate in the pair search",
                     a + 1, a);
            double w = 0.0;
            if (set->periodic[d]) {
                double L = set->box[d];
                w = -L * floor(v / L);
                if (v + w >= L)
                    w -= L;
            }
            nb->wrap[3 * a + d] = w;
            int cc = (int)((v + w - nb->cell_lo[d]) / nb->cell_size[d]);
            c[d] = cc < 0 ? 0 : (cc >= nb->ncell[d] ? nb->ncell[d] - 1 : cc);
        }
        int k = zone[a] * nct + cell_index(nb, c[0], c[1], c[2]);
        zone[a] = k;
        nb->cellstart[k + 1]++;
    }
    for (int k = 0; k < ncs - 1; k++)
        nb->cellstart[k + 1] += nb->cellstart[k];
    /* stable counting sort; fill uses a moving cursor copied from cellstart */
    {
        int *cursor = malloc((size_t)ncs * sizeof *cursor);
        HX_CHECK(cursor, HX_ERR_NOMEM, "out of memory");
        memcpy(cursor, nb->cellstart, (size_t)ncs * sizeof *cursor);
        for (int a = 0; a < n; a++)
            nb->perm[cursor[zone[a]]++] = a;
        free(cursor);
    }
    nb->n = n;
    for (int s = 0; s < n; s++) {
        int a = nb->perm[s];
        nb->qs[s] = set->q[a];
        nb->ts[s] = set->type[a];
        nb->ms[s] = set->mol[a];
        nb->zs_zone[s] = zone[a] / nct;
        HX_CHECK(set->type[a] >= 0 && set->type[a] < nb->ntypes, HX_ERR_INVALID_ARG,
                 "atom %d has LJ type %d outside the force field's %d types", a + 1, set->type[a],
                 nb->ntypes);
    }
    load_sorted(nb, set);
    for (int kz = -1; kz <= 1; kz++)
        for (int ky = -1; ky <= 1; ky++)
            for (int kx = -1; kx <= 1; kx++) {
                int sidx = (kx + 1) + 3 * (ky + 1) + 9 * (kz + 1);
                nb->shiftvec[sidx][0] = set->periodic[0] ? kx * set->box[0] : 0.0;
                nb->shiftvec[sidx][1] = set->periodic[1] ? ky * set->box[1] : 0.0;
                nb->shiftvec[sidx][2] = set->periodic[2] ? kz * set->box[2] : 0.0;
            }
    /* i atoms: zones below the i-zone count come first in sorted order */
    int ni = nb->cellstart[hx_izone_count(set->ndim) * nct];
    for (int c = 0; c < nb->nthreads; c++) {
        nb->chunks[c].i_begin = (int)((long long)ni * c / nb->nthreads);
        nb->chunks[c].i_end = (int)((long long)ni * (c + 1) / nb->nthreads);
    }
#ifdef _OPENMP
#pragma omp parallel for schedule(static, 1) num_threads(nb->nthreads)
#endif
    for (int c = 0; c < nb->nthreads; c++)
        search_chunk(nb, &nb->chunks[c], set, rlist, do_missed);
    long long mtot = 0;
    for (int c = 0; c < nb->nthreads; c++) {
        nb_chunk *ch = &nb->chunks[c];
        HX_CHECK(ch->st == HX_OK, ch->st, "out of memory for the pair list");
        mtot += ch->missed;
        if (!ch->ejbeg) {
            ch->ejbeg = calloc(1, sizeof(int));
            HX_CHECK(ch->ejbeg, HX_ERR_NOMEM, "out of memory");
            ch->cap_ent = 0;
        }
        int need = 0;
        for (int e = 0; e < ch->nent; e++) {
            int len = ch->ejbeg[e + 1] - ch->ejbeg[e];
            need = len > need ? len : need;
        }
        if (need > ch->cap_tmp) {
            size_t N = (size_t)need + 8;
            double **arrs[9] = {&ch->tx, &ch->ty, &ch->tz, &ch->gx, &ch->gy,
                                &ch->gz, &ch->gq, &ch->g6, &ch->g12};
            for (int k = 0; k < 9; k++) {
                double *q = realloc(*arrs[k], N * sizeof *q);
                HX_CHECK(q, HX_ERR_NOMEM, "out of memory for kernel scratch");
                *arrs[k] = q;
            }
            ch->cap_tmp = need + 8;
        }
    }
    if (missed)
        *missed = do_missed ? mtot : 0;
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

/* 1/sqrt(r2) without the sqrt call: gcc keeps sqrt's errno path (a branch that blocks
 * vectorisation) unless -fno-math-errno is given on the command line, which the project's
 * portable flags do not. A bit-level first guess (relative error < 3.5%) and four Newton steps
 * reach double precision (< 1e-15 relative); all of it vectorises with SSE2. r2 > 0 for every
 * listed pair of distinct atoms; overlapping atoms give a non-finite result that the check after
 * the kernel reports. */
static inline double rsqrt_nr(double r2)
{
    uint64_t i;
    memcpy(&i, &r2, sizeof i);
    i = 0x5fe6eb50c7b537a9ULL - (i >> 1);
    double y;
    memcpy(&y, &i, sizeof y);
    const double h = 0.5 * r2;
    y = y * (1.5 - h * y * y);
    y = y * (1.5 - h * y * y);
    y = y * (1.5 - h * y * y);
    y = y * (1.5 - h * y * y);
    return y;
}

/* With gcc on x86-64 an AVX2+FMA clone of the kernel is selected at run time on CPUs that have
 * it; the default clone keeps the binary portable. Same machine, same clone: results stay
 * bit-identical. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(HX_NO_CLONES)
#define HX_KERNEL_ATTR __attribute__((target_clones("arch=haswell", "default")))
#else
#define HX_KERNEL_ATTR
#endif

typedef struct kconst {
    double rc2, irc6, irc12, krf, crf, two_krf;
} kconst;

/* Pair interactions of one i atom with len gathered j atoms: element-wise only (no sums, no
 * indirect access) and with restrict arguments, so that gcc vectorises it. On return gq holds
 * the LJ and g6 the Coulomb energy of each pair, t* the force on i from each pair. */
HX_KERNEL_ATTR __attribute__((noinline)) static void
pair_loop(int len, double xi, double yi, double zi, double qi, const kconst *kc,
          const double *restrict gx, const double *restrict gy, const double *restrict gz,
          double *restrict gq, double *restrict g6, const double *restrict g12, double *restrict tx,
          double *restrict ty, double *restrict tz)
{
    const double rc2 = kc->rc2, irc6 = kc->irc6, irc12 = kc->irc12;
    const double krf = kc->krf, crf = kc->crf, two_krf = kc->two_krf;
    for (int k = 0; k < len; k++) {
        const double dx = xi - gx[k], dy = yi - gy[k], dz = zi - gz[k];
        const double r2 = dx * dx + dy * dy + dz * dz;
        const double in = r2 < rc2 ? 1.0 : 0.0;
        const double rinv = rsqrt_nr(r2);
        const double rinv2 = rinv * rinv;
        const double rinv6 = rinv2 * rinv2 * rinv2;
        const double c6 = g6[k], c12 = g12[k];
        const double qq = qi * gq[k];
        const double vr12 = c12 * rinv6 * rinv6, vr6 = c6 * rinv6;
        const double v_lj = (vr12 - c12 * irc12) - (vr6 - c6 * irc6);
        const double v_c = qq * (rinv + krf * r2 - crf);
        const double fs = in * ((12.0 * vr12 - 6.0 * vr6) * rinv2 + qq * (rinv * rinv2 - two_krf));
        gq[k] = in * v_lj;
        g6[k] = in * v_c;
        tx[k] = fs * dx;
        ty[k] = fs * dy;
        tz[k] = fs * dz;
    }
}

/* Kernel over one chunk's entries. Forces in sorted order into the chunk's buffers. */
static void kernel_chunk(const hx_nb *nb, nb_chunk *ch)
{
    const double *restrict xs = nb->xs, *restrict ys = nb->ys, *restrict zs = nb->zs;
    const double *restrict qs = nb->qs;
    const int *restrict ts = nb->ts;
    double *restrict fx = ch->fx, *restrict fy = ch->fy, *restrict fz = ch->fz;
    double *restrict tx = ch->tx, *restrict ty = ch->ty, *restrict tz = ch->tz;
    double *restrict gx = ch->gx, *restrict gy = ch->gy, *restrict gz = ch->gz;
    double *restrict gq = ch->gq, *restrict g6 = ch->g6, *restrict g12 = ch->g12;
    const int nt = nb->ntypes;
    const double rc = nb->p.rc, rc2 = rc * rc;
    const double irc6 = 1.0 / (rc2 * rc2 * rc2), irc12 = irc6 * irc6;
    const kconst kc = {rc2, irc6, irc12, nb->rf.k_rf, nb->rf.c_rf, 2.0 * nb->rf.k_rf};
    double vlj = 0.0, vc = 0.0;
    memset(fx, 0, (size_t)nb->n * sizeof *fx);
    memset(fy, 0, (size_t)nb->n * sizeof *fy);
    memset(fz, 0, (size_t)nb->n * sizeof *fz);
    for (int e = 0; e < ch->nent; e++) {
        const int i = ch->ei[e];
        const double *sv = nb->shiftvec[ch->eshift[e]];
        const double xi = xs[i] - sv[0], yi = ys[i] - sv[1], zi = zs[i] - sv[2];
        const double qi = nb->rf.epsfac * qs[i];
        const double *restrict c6r = nb->c6 + ts[i] * nt;
        const double *restrict c12r = nb->c12 + ts[i] * nt;
        const int *restrict jl = ch->jl + ch->ejbeg[e];
        const int len = ch->ejbeg[e + 1] - ch->ejbeg[e];
        double fix = 0.0, fiy = 0.0, fiz = 0.0, elj = 0.0, ec = 0.0;
        /* gather j data into contiguous scratch: the compute loop then vectorises */
        for (int k = 0; k < len; k++) {
            const int j = jl[k];
            gx[k] = xs[j];
            gy[k] = ys[j];
            gz[k] = zs[j];
            gq[k] = qs[j];
            g6[k] = c6r[ts[j]];
            g12[k] = c12r[ts[j]];
        }
        pair_loop(len, xi, yi, zi, qi, &kc, gx, gy, gz, gq, g6, g12, tx, ty, tz);
        for (int k = 0; k < len; k++) {
            const int j = jl[k];
            fx[j] -= tx[k];
            fy[j] -= ty[k];
            fz[j] -= tz[k];
            fix += tx[k];
            fiy += ty[k];
            fiz += tz[k];
            elj += gq[k];
            ec += g6[k];
        }
        fx[i] += fix;
        fy[i] += fiy;
        fz[i] += fiz;
        vlj += elj;
        vc += ec;
    }
    ch->vlj = vlj;
    ch->vc = vc;
}

hx_status hx_nb_compute(hx_nb *nb, const hx_local_set *set, double *f, hx_nb_energies *e,
                        long long step)
{
    HX_CHECK(nb && set && f && e, HX_ERR_INVALID_ARG, "hx_nb_compute: NULL argument");
    HX_CHECK(nb->have_prev && set->n == nb->n, HX_ERR_INVALID_ARG,
             "hx_nb_compute: the local set has %d atoms but the pair list was built for %d: "
             "call hx_nb_search after the atom set changes",
             set->n, nb->have_prev ? nb->n : -1);
    load_sorted(nb, set);
#ifdef _OPENMP
#pragma omp parallel for schedule(static, 1) num_threads(nb->nthreads)
#endif
    for (int c = 0; c < nb->nthreads; c++)
        kernel_chunk(nb, &nb->chunks[c]);
    double vlj = 0.0, vc = 0.0;
    for (int c = 0; c < nb->nthreads; c++) {
        vlj += nb->chunks[c].vlj;
        vc += nb->chunks[c].vc;
    }
    /* reduce in chunk order into local order */
    const int n = nb->n, nth = nb->nthreads;
    for (int s = 0; s < n; s++) {
        double sx = 0.0, sy = 0.0, sz = 0.0;
        for (int c = 0; c < nth; c++) {
            sx += nb->chunks[c].fx[s];
            sy += nb->chunks[c].fy[s];
            sz += nb->chunks[c].fz[s];
        }
        int a = nb->perm[s];
        f[3 * a] = sx;
        f[3 * a + 1] = sy;
        f[3 * a + 2] = sz;
    }
    /* home atoms: self term and the reaction-field part of excluded (same-molecule) pairs */
    const double epsfac = nb->rf.epsfac, krf = nb->rf.k_rf, crf = nb->rf.c_rf;
    const double rc2 = nb->p.rc * nb->p.rc;
    double vself = 0.0, vexcl = 0.0;
    for (int r = 0; r < set->nranges; r++) {
        if (set->ranges[r].zone != 0)
            continue;
        int b = set->ranges[r].begin, en = set->ranges[r].end;
        for (int i = b; i < en; i++) {
            double qi = set->q[i];
            vself -= 0.5 * epsfac * qi * qi * crf;
            for (int j = i + 1; j < en && set->mol[j] == set->mol[i]; j++) {
                double d[3], r2 = 0.0;
                for (int k = 0; k < 3; k++) {
                    d[k] = set->x[3 * i + k] - set->x[3 * j + k];
                    if (set->periodic[k])
                        d[k] -= set->box[k] * nearbyint(d[k] / set->box[k]);
                    r2 += d[k] * d[k];
                }
                if (r2 >= rc2)
                    continue;
                double qq = epsfac * qi * set->q[j];
                vexcl += qq * (krf * r2 - crf);
                double fs = -2.0 * qq * krf; /* F_i = -dV/dr r_hat = -2 qq krf d */
                for (int k = 0; k < 3; k++) {
                    f[3 * i + k] += fs * d[k];
                    f[3 * j + k] -= fs * d[k];
                }
            }
        }
    }
    for (int a = 0; a < 3 * n; a++) {
        if (!isfinite(f[a]))
            HX_FAIL(HX_ERR_PHYSICS,
                    "step %lld: non-finite force on atom %d (local index %d): atoms overlap or "
                    "the system blew up; check the input structure and use a smaller time step",
                    step, a / 3 + 1, a / 3);
    }
    e->lj = vlj;
    e->coulomb = vc + vexcl + vself;
    HX_CHECK(isfinite(e->lj) && isfinite(e->coulomb), HX_ERR_PHYSICS,
             "step %lld: non-finite non-bonded energy (LJ %g, Coulomb %g): atoms overlap or the "
             "system blew up; check the input structure and use a smaller time step",
             step, e->lj, e->coulomb);
    return HX_OK;
}
