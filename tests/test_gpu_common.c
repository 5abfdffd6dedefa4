/* Helpers of the GPU tests (see test_gpu_common.h). */
#include "test_gpu_common.h"
#include "mdrun/md_impl.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TG_CUDA(call)                                                                              \
    do {                                                                                           \
        cudaError_t tg_rc_ = (call);                                                               \
        if (tg_rc_ != cudaSuccess)                                                                 \
            T_FAIL("%s failed: %s", #call, cudaGetErrorString(tg_rc_));                            \
    } while (0)

static hx_gpu_context *g_tg_gpu;
static hx_comm *g_tg_comm; /* the one-process communicator of a context made by tg_gpu() */

hx_gpu_context *tg_gpu_begin(hx_comm *comm)
{
    if (g_tg_gpu)
        return g_tg_gpu;
    hx_gpu_context_params gp;
    hx_gpu_context_params_default(&gp);
    gp.make_current = 1;
    T_OK(hx_gpu_context_create(&gp, comm, &g_tg_gpu));
    return g_tg_gpu;
}

hx_gpu_context *tg_gpu(void)
{
    if (!g_tg_gpu) {
        T_OK(hx_comm_create_serial(1, &g_tg_comm));
        if (g_tg_comm)
            tg_gpu_begin(g_tg_comm);
    }
    return g_tg_gpu;
}

void tg_gpu_end(void)
{
    hx_gpu_context_destroy(&g_tg_gpu);
    hx_comm_destroy(&g_tg_comm);
}

int tg_quick(int argc, char **argv)
{
    const char *e = getenv("HALOX_GPU_TEST_QUICK");
    return (argc > 1 && strcmp(argv[1], "--quick") == 0) || (e && atoi(e) > 0);
}

float *tg_upload_x(const double *x, int n, int cap)
{
    if (cap < n)
        cap = n;
    float *h = malloc(sizeof(float) * 3 * (size_t)(cap + 1));
    for (int k = 0; k < 3 * cap + 3; k++)
        h[k] = k < 3 * n ? (float)x[k] : NAN;
    float *d = NULL;
    TG_CUDA(cudaMalloc((void **)&d, sizeof(float) * 3 * (size_t)(cap + 1)));
    TG_CUDA(cudaMemcpy(d, h, sizeof(float) * 3 * (size_t)(cap + 1), cudaMemcpyHostToDevice));
    free(h);
    return d;
}

void tg_copy_x(float *dx, const double *x, int a0, int a1)
{
    if (a1 <= a0)
        return;
    size_t m = 3 * (size_t)(a1 - a0);
    float *h = malloc(sizeof(float) * m);
    for (size_t k = 0; k < m; k++)
        h[k] = (float)x[3 * (size_t)a0 + k];
    TG_CUDA(cudaMemcpy(dx + 3 * (size_t)a0, h, sizeof(float) * m, cudaMemcpyHostToDevice));
    free(h);
}

void tg_fill(float *d, int n3, float v)
{
    if (n3 <= 0)
        return;
    float *h = malloc(sizeof(float) * (size_t)n3);
    for (int k = 0; k < n3; k++)
        h[k] = v;
    TG_CUDA(cudaMemcpy(d, h, sizeof(float) * (size_t)n3, cudaMemcpyHostToDevice));
    free(h);
}

void tg_download_f(const float *d, double *f, int n3)
{
    if (n3 <= 0)
        return;
    float *h = malloc(sizeof(float) * (size_t)n3);
    TG_CUDA(cudaMemcpy(h, d, sizeof(float) * (size_t)n3, cudaMemcpyDeviceToHost));
    for (int k = 0; k < n3; k++)
        f[k] = h[k];
    free(h);
}

void tg_wrap_molecules(hx_system *s)
{
    for (int m = 0; m < s->nmol; m++) {
        int a0 = s->mol_start[m];
        for (int d = 0; d < 3; d++) {
            double L = s->box[d];
            for (int a = a0 + 1; a < s->mol_start[m + 1]; a++) {
                double dx = s->x[3 * a + d] - s->x[3 * a0 + d];
                s->x[3 * a + d] = s->x[3 * a0 + d] + dx - L * nearbyint(dx / L);
            }
            double sh = -L * floor(s->x[3 * a0 + d] / L);
            for (int a = a0; a < s->mol_start[m + 1]; a++)
                s->x[3 * a + d] += sh;
        }
    }
}

void tg_domain_build(const hx_system *s, const int g[3], int dom, tg_domain *ds)
{
    int *owner = malloc(sizeof(int) * (size_t)(s->nmol + 1));
    for (int m = 0; m < s->nmol; m++) {
        int a0 = s->mol_start[m], cc[3];
        for (int d = 0; d < 3; d++) {
            cc[d] = (int)(s->x[3 * a0 + d] / (s->box[d] / g[d]));
            cc[d] = cc[d] < 0 ? 0 : (cc[d] >= g[d] ? g[d] - 1 : cc[d]);
        }
        owner[m] = (cc[0] * g[1] + cc[1]) * g[2] + cc[2];
    }
    t_domain_build(s, owner, g, dom, ds);
    free(owner);
}

void tg_domain_free(tg_domain *ds)
{
    t_domain_free(ds);
}

/* ---- list check ------------------------------------------------------------------------- */

typedef struct pair_rec {
    uint64_t key; /* (min atom << 32) | max atom */
    double r;     /* distance with the listed image */
} pair_rec;

static int cmp_rec(const void *a, const void *b)
{
    uint64_t x = ((const pair_rec *)a)->key, y = ((const pair_rec *)b)->key;
    return x < y ? -1 : (x > y ? 1 : 0);
}

static uint64_t pkey(int a, int b)
{
    int lo = a < b ? a : b, hi = a < b ? b : a;
    return ((uint64_t)(uint32_t)lo << 32) | (uint32_t)hi;
}

/* distance with the minimum image along periodic dimensions */
static double ref_dist(const hx_local_set *s, int a, int b)
{
    double r2 = 0.0;
    for (int d = 0; d < 3; d++) {
        double v = s->x[3 * a + d] - s->x[3 * b + d];
        if (s->periodic[d])
            v -= s->box[d] * nearbyint(v / s->box[d]);
        r2 += v * v;
    }
    return sqrt(r2);
}

static int covered(int ndim, int za, int zb)
{
    int nzi = hx_izone_count(ndim);
    for (int pass = 0; pass < 2; pass++) {
        int iz = pass ? zb : za, jz = pass ? za : zb;
        if (iz < nzi) {
            int j0, j1;
            hx_izone_jrange(ndim, iz, &j0, &j1);
            if (jz >= j0 && jz < j1)
                return 1;
        }
    }
    return 0;
}

static const pair_rec *find(const pair_rec *v, long long n, uint64_t key)
{
    long long lo = 0, hi = n - 1;
    while (lo <= hi) {
        long long mid = (lo + hi) / 2;
        if (v[mid].key == key)
            return &v[mid];
        if (v[mid].key < key)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return NULL;
}

typedef struct ref_ctx {
    const hx_local_set *set;
    const int *zone;
    double rlist, rinner, band;
    const pair_rec *outer, *inner;
    long long nouter, ninner;
    tg_list_report *rep;
    const char *what;
    int printed;
} ref_ctx;

static void ref_pair(ref_ctx *c, int a, int b)
{
    const hx_local_set *s = c->set;
    if (s->mol[a] == s->mol[b] || !covered(s->ndim, c->zone[a], c->zone[b]))
        return;
    double r = ref_dist(s, a, b);
    if (r >= c->rlist - c->band)
        return;
    c->rep->ref_outer++;
    uint64_t k = pkey(a, b);
    if (!find(c->outer, c->nouter, k)) {
        c->rep->missing_outer++;
        if (c->printed++ < 5)
            T_FAIL("%s: pair (%d, %d) zones (%d, %d) at %.6f nm < rlist %.4f is not in the list",
                   c->what, a, b, c->zone[a], c->zone[b], r, c->rlist);
    }
    if (r < c->rinner - c->band) {
        c->rep->ref_inner++;
        if (!find(c->inner, c->ninner, k)) {
            c->rep->missing_inner++;
            if (c->printed++ < 5)
                T_FAIL("%s: pair (%d, %d) at %.6f nm < rlist_inner %.4f is not in the pruned list",
                       c->what, a, b, r, c->rinner);
        }
    }
}

/* The search's grid columns: together a permutation of the n atoms, each column ascending in z
 * as the search saw it (wrapped), atoms of the same z by index. The lists do not depend on this
 * order (the super-clusters' boxes do), so the list checks cannot see it. */
static long long check_columns(const hx_gpu_nb_list_host *L, int n, const char *what)
{
    long long bad = 0;
    if (L->ncols < 0 || L->col_start[0] != 0 || L->col_start[L->ncols] != n) {
        T_FAIL("%s: the search's %d columns hold atoms [%d, %d), not the %d local atoms", what,
               L->ncols, L->ncols >= 0 ? L->col_start[0] : -1,
               L->ncols >= 0 ? L->col_start[L->ncols] : -1, n);
        return 1;
    }
    char *seen = calloc((size_t)n + 1, 1);
    for (int c = 0; c < L->ncols; c++) {
        const int b = L->col_start[c], e = L->col_start[c + 1];
        for (int k = b; k < e; k++) {
            const int a = L->col_atoms[k];
            if (a < 0 || a >= n || seen[a]) {
                if (bad++ < 5)
                    T_FAIL("%s: column %d place %d: atom %d out of range or listed twice", what, c,
                           k - b, a);
                continue;
            }
            seen[a] = 1;
            if (k == b)
                continue;
            const int p = L->col_atoms[k - 1];
            if (p < 0 || p >= n)
                continue;
            const float zp = L->wpos[3 * p + 2], za = L->wpos[3 * a + 2];
            if (zp > za || (zp == za && p > a)) {
                if (bad++ < 5)
                    T_FAIL("%s: column %d (%d atoms) places %d, %d: atom %d at z %.7f before "
                           "atom %d at z %.7f",
                           what, c, e - b, k - 1 - b, k - b, p, (double)zp, a, (double)za);
            }
        }
    }
    free(seen);
    return bad;
}

/* The super-clusters' inner layout (the lists do not depend on it either): each holds m real
 * atoms in ceil(m / 8) clusters, split by x into two halves of whole clusters (the first half
 * ceil(clusters / 2) of them, unless the rest is empty), each half by y likewise into two
 * quadrants, each quadrant's atoms in slot order ascending in z; only the last quadrant's last
 * cluster may be partly padding. Checked from the search's own wrapped positions: the first
 * half's largest x at most the second's smallest, the same for y within a half, z ascending
 * within a quadrant. */
static int ceil8(int v)
{
    return (v + 7) / 8;
}

static long long check_superclusters(const hx_gpu_nb_list_host *L, int n, const char *what)
{
    long long bad = 0;
    for (int sc = 0; sc * 64 < L->nslots; sc++) {
        const int *perm = L->perm + 64 * sc;
        int m = 0;
        for (int k = 0; k < 64; k++)
            m += perm[k] >= 0 && perm[k] < n;
        const int nc = ceil8(m);
        const int nx0 = 8 * ((nc + 1) / 2) < m ? 8 * ((nc + 1) / 2) : m;
        const int nh[2] = {nx0, m - nx0};
        int nq[4], q0[4]; /* atoms and first slot of each quadrant */
        for (int h = 0; h < 2; h++) {
            const int c = ceil8(nh[h]), ny = 8 * ((c + 1) / 2) < nh[h] ? 8 * ((c + 1) / 2) : nh[h];
            nq[2 * h] = ny;
            nq[2 * h + 1] = nh[h] - ny;
        }
        q0[0] = 0;
        for (int q = 1; q < 4; q++)
            q0[q] = q0[q - 1] + 8 * ceil8(nq[q - 1]);
        float lo[4][3], hi[4][3];
        int ok = 1;
        for (int q = 0; q < 4 && ok; q++) {
            for (int d = 0; d < 3; d++) {
                lo[q][d] = 1e30f;
                hi[q][d] = -1e30f;
            }
            for (int k = 0; k < nq[q] && ok; k++) {
                const int a = perm[q0[q] + k];
                if (a < 0 || a >= n) {
                    if (bad++ < 5)
                        T_FAIL("%s: super-cluster %d (%d atoms): slot %d of quadrant %d is "
                               "padding, the quadrant should hold %d atoms from slot %d",
                               what, sc, m, q0[q] + k, q, nq[q], q0[q]);
                    ok = 0;
                    break;
                }
                const float *w = L->wpos + 3 * (size_t)a;
                if (k > 0) {
                    const int p = perm[q0[q] + k - 1];
                    const float zp = L->wpos[3 * (size_t)p + 2];
                    if (zp > w[2] || (zp == w[2] && p > a)) {
                        if (bad++ < 5)
                            T_FAIL("%s: super-cluster %d quadrant %d: atom %d at z %.7f in slot "
                                   "%d before atom %d at z %.7f",
                                   what, sc, q, p, (double)zp, q0[q] + k - 1, a, (double)w[2]);
                        ok = 0;
                    }
                }
                for (int d = 0; d < 3; d++) {
                    lo[q][d] = w[d] < lo[q][d] ? w[d] : lo[q][d];
                    hi[q][d] = w[d] > hi[q][d] ? w[d] : hi[q][d];
                }
            }
        }
        if (!ok)
            continue;
        /* by x between the halves (quadrants 0, 1 against 2, 3), by y within each half */
        const float hx0 = hi[0][0] > hi[1][0] ? hi[0][0] : hi[1][0];
        const float lx1 = lo[2][0] < lo[3][0] ? lo[2][0] : lo[3][0];
        if (nh[1] > 0 && hx0 > lx1 && bad++ < 5)
            T_FAIL("%s: super-cluster %d (%d atoms): its first x half reaches x %.7f, beyond the "
                   "second half's lowest %.7f",
                   what, sc, m, (double)hx0, (double)lx1);
        for (int h = 0; h < 2; h++)
            if (nq[2 * h + 1] > 0 && hi[2 * h][1] > lo[2 * h + 1][1] && bad++ < 5)
                T_FAIL("%s: super-cluster %d x half %d: its first y quadrant reaches y %.7f, "
                       "beyond the second's lowest %.7f",
                       what, sc, h, (double)hi[2 * h][1], (double)lo[2 * h + 1][1]);
    }
    return bad;
}

int tg_check_list(const hx_gpu_nb *nb, const hx_local_set *set, const double *moved, double rlist,
                  double rinner, const char *what, tg_list_report *rep)
{
    int fails0 = hx_test_failures;
    memset(rep, 0, sizeof *rep);
    hx_gpu_nb_list_host L;
    hx_status st = hx_gpu_nb_list_download(nb, &L);
    if (st != HX_OK) {
        T_FAIL("%s: list download: %s", what, hx_last_error());
        return 1;
    }
    const int n = set->n;
    rep->column_order = check_columns(&L, n, what);
    rep->sc_layout = check_superclusters(&L, n, what);
    /* the slots back at the search: the fused update has moved them on since */
    if (moved)
        for (int sl = 0; sl < L.nslots; sl++)
            if (L.perm[sl] >= 0 && L.perm[sl] < n)
                for (int d = 0; d < 3; d++)
                    L.xq[4 * (size_t)sl + d] -= (float)moved[3 * (size_t)L.perm[sl] + d];
    /* no positions given: the ones the list was built on, from its slots */
    hx_local_set own = *set;
    double *xown = NULL;
    if (!set->x) {
        xown = calloc(3 * (size_t)(n + 1), sizeof(double));
        for (int sl = 0; sl < L.nslots; sl++)
            if (L.perm[sl] >= 0 && L.perm[sl] < n)
                for (int d = 0; d < 3; d++)
                    xown[3 * L.perm[sl] + d] = L.xq[4 * (size_t)sl + d];
        own.x = xown;
        set = &own;
    }
    int *zone = malloc(sizeof(int) * (size_t)(n + 1));
    for (int r = 0; r < set->nranges; r++)
        for (int a = set->ranges[r].begin; a < set->ranges[r].end; a++)
            zone[a] = set->ranges[r].zone;
    long long cap = 0;
    for (int c = 0; c < 2; c++)
        for (int k = 0; k < L.nitems[c]; k++)
            cap += 32 * (long long)__builtin_popcount(L.masko[c][k]);
    pair_rec *outer = malloc(sizeof(pair_rec) * (size_t)(cap + 1));
    pair_rec *inner = malloc(sizeof(pair_rec) * (size_t)(cap + 1));
    long long no = 0, ni = 0;
    int printed = 0;
    for (int c = 0; c < 2; c++) {
        for (int e = 0; e < L.nent[c]; e++) {
            const int *en = &L.ent[c][4 * e];
            const int sci = en[0], sidx = en[1];
            if (sidx < 0 || sidx >= 27 || sci < 0 || sci * 64 >= L.nslots || en[2] < 0 ||
                en[3] > L.nitems[c] || en[2] > en[3]) {
                T_FAIL("%s: list %d entry %d is corrupt (%d %d %d %d)", what, c, e, en[0], en[1],
                       en[2], en[3]);
                continue;
            }
            for (int k = en[2]; k < en[3]; k++) {
                const uint32_t cj = L.items[c][2 * k], ex = L.items[c][2 * k + 1];
                const uint32_t wo = L.masko[c][k], wi = L.mask[c][k];
                if ((wi & ~wo) != 0 || (wo & 0xffu) != (wo >> 8) || (int)ex > L.nexcl ||
                    (int)cj * 8 >= L.nslots) {
                    T_FAIL("%s: list %d item %d: cluster %u, exclusion mask %u, masks pruned %#x "
                           "outer %#x: out of range or pruned not within outer",
                           what, c, k, cj, ex, wi, wo);
                    continue;
                }
                for (int ic = 0; ic < 8; ic++) {
                    if (!((wo >> ic) & 1))
                        continue;
                    for (int t = 0; t < 64; t++) {
                        const int ti = t & 7, tj = t >> 3;
                        const int bi = (wi >> (8 * (tj >> 2) + ic)) & 1;
                        if (ex && !((L.excl[64 * (size_t)ex + t] >> ic) & 1))
                            continue;
                        const int sa = sci * 64 + ic * 8 + ti, sb = (int)cj * 8 + tj;
                        const int a = L.perm[sa], b = L.perm[sb];
                        if (a < 0 || b < 0) {
                            rep->padding++;
                            if (printed++ < 8)
                                T_FAIL("%s: list %d lists padding (slots %d, %d)", what, c, sa, sb);
                            continue;
                        }
                        const float *xa = L.xq + 4 * (size_t)sa, *xb = L.xq + 4 * (size_t)sb;
                        double r2 = 0.0;
                        for (int d = 0; d < 3; d++) {
                            double v = (double)xa[d] - ((double)xb[d] + L.shift[sidx][d]);
                            r2 += v * v;
                        }
                        const double r = sqrt(r2);
                        if (a == b || set->mol[a] == set->mol[b]) {
                            /* The search wraps atoms, not molecules: a molecule across the box's
                             * face has atoms in two images, and in a small box (648 atoms, 1.86
                             * nm) a cluster pair can reach across, listing two of its atoms (or
                             * an atom and its own image) a box edge apart. The kernel's cut-off
                             * drops such a pair; within rlist it would be computed. */
                            if (r >= rlist + 1e-3)
                                continue;
                            rep->excluded++;
                            if (printed++ < 8)
                                T_FAIL("%s: list %d lists the excluded pair (%d, %d) (slots %d, "
                                       "%d, shift %d)",
                                       what, c, a, b, sa, sb, sidx);
                            continue;
                        }
                        const int zi = zone[a], zj = zone[b];
                        int zok;
                        if (c == 0) {
                            zok = zi == 0 && zj == 0;
                        } else {
                            int j0 = 0, j1 = 0;
                            if (zi < hx_izone_count(set->ndim))
                                hx_izone_jrange(set->ndim, zi, &j0, &j1);
                            zok = !(zi == 0 && zj == 0) && zj >= j0 && zj < j1;
                        }
                        if (!zok) {
                            rep->wrong_zone++;
                            if (printed++ < 8)
                                T_FAIL("%s: list %d lists (%d, %d) of zones (%d, %d)", what, c, a,
                                       b, zi, zj);
                            continue;
                        }
                        const double rr = ref_dist(set, a, b);
                        /* In a small box a cluster pair can be within rlist under two shifts,
                         * so an atom pair may also be listed with an image beyond rlist; the
                         * kernel's cut-off drops that one (rc < L/2: only one image can be
                         * inside it). Listings within rlist must be the nearest image. */
                        if (r >= rlist + 1e-3)
                            continue;
                        if (fabs(r - rr) > 1e-3) {
                            rep->wrong_image++;
                            if (printed++ < 8)
                                T_FAIL("%s: pair (%d, %d) listed with shift %d at %.6f nm, its "
                                       "nearest image is at %.6f nm",
                                       what, a, b, sidx, r, rr);
                        }
                        pair_rec pr = {pkey(a, b), r};
                        outer[no++] = pr;
                        if (bi)
                            inner[ni++] = pr;
                    }
                }
            }
        }
    }
    qsort(outer, (size_t)no, sizeof *outer, cmp_rec);
    qsort(inner, (size_t)ni, sizeof *inner, cmp_rec);
    for (long long k = 1; k < no; k++)
        if (outer[k].key == outer[k - 1].key) {
            rep->duplicates++;
            if (printed++ < 8)
                T_FAIL("%s: pair (%d, %d) is listed twice within rlist (at %.6f and %.6f nm)", what,
                       (int)(outer[k].key >> 32), (int)(outer[k].key & 0xffffffffu), outer[k].r,
                       outer[k - 1].r);
        }
    for (long long k = 0; k < no; k++)
        rep->listed_outer += outer[k].r < rlist;
    for (long long k = 0; k < ni; k++)
        rep->listed_inner += inner[k].r < rinner;
    /* reference: a cell list with the minimum image when every dimension is periodic and has
     * at least 3 cells, otherwise all pairs */
    ref_ctx rc = {set, zone, rlist, rinner, 2e-5, outer, inner, no, ni, rep, what, 0};
    int ncell[3], cellok = set->ndim == 0;
    for (int d = 0; d < 3; d++) {
        ncell[d] = set->periodic[d] ? (int)(set->box[d] / rlist) : 0;
        cellok = cellok && set->periodic[d] && ncell[d] >= 3;
    }
    if (cellok) {
        const int nc = ncell[0] * ncell[1] * ncell[2];
        int *head = malloc(sizeof(int) * (size_t)nc), *next = malloc(sizeof(int) * (size_t)n);
        int *cell = malloc(sizeof(int) * (size_t)n);
        for (int k = 0; k < nc; k++)
            head[k] = -1;
        for (int a = 0; a < n; a++) {
            int cc[3];
            for (int d = 0; d < 3; d++) {
                double bl = set->box[d], w = set->x[3 * a + d] - bl * floor(set->x[3 * a + d] / bl);
                cc[d] = (int)(w / bl * ncell[d]);
                cc[d] = cc[d] < 0 ? 0 : (cc[d] >= ncell[d] ? ncell[d] - 1 : cc[d]);
            }
            cell[a] = (cc[2] * ncell[1] + cc[1]) * ncell[0] + cc[0];
            next[a] = head[cell[a]];
            head[cell[a]] = a;
        }
        for (int a = 0; a < n; a++) {
            const int cx = cell[a] % ncell[0], cy = (cell[a] / ncell[0]) % ncell[1],
                      cz = cell[a] / (ncell[0] * ncell[1]);
            for (int dz = -1; dz <= 1; dz++)
                for (int dy = -1; dy <= 1; dy++)
                    for (int dx = -1; dx <= 1; dx++) {
                        const int nx = (cx + dx + ncell[0]) % ncell[0],
                                  ny = (cy + dy + ncell[1]) % ncell[1],
                                  nz = (cz + dz + ncell[2]) % ncell[2];
                        for (int b = head[(nz * ncell[1] + ny) * ncell[0] + nx]; b >= 0;
                             b = next[b])
                            if (b > a)
                                ref_pair(&rc, a, b);
                    }
        }
        free(head);
        free(next);
        free(cell);
    } else {
        for (int a = 0; a < n; a++)
            for (int b = a + 1; b < n; b++)
                ref_pair(&rc, a, b);
    }
    free(outer);
    free(inner);
    free(zone);
    free(xown);
    hx_gpu_nb_list_host_free(&L);
    return hx_test_failures - fails0;
}

void tg_energy_terms(const hx_md_energies *e, double v[7])
{
    v[0] = e->lj;
    v[1] = e->coulomb;
    v[2] = e->bonds;
    v[3] = e->angles;
    v[4] = e->dihedrals;
    v[5] = e->lj14;
    v[6] = e->coulomb14;
}

int tg_split_search_expected(void)
{
    const char *home = getenv("HALOX_GPU_SEARCH_HOME"), *stages = getenv("HALOX_GPU_SEARCH_TIMING");
    return !(home && home[0] == '0') && !(stages && stages[0] == '1');
}

hx_gpu_nb *tg_md_nb(hx_md *md)
{
    return md && md->B == &hx_md_backend_gpu ? hx_md_backend_gpu_nb(md->bimpl, 0) : NULL;
}

const hx_decomp_local *tg_md_local(hx_md *md)
{
    return md ? hx_decomp_get_local(md->dec, 0) : NULL;
}

void tg_local_set(const hx_decomp_local *loc, hx_local_set *set)
{
    memset(set, 0, sizeof *set);
    set->n = loc->n_local;
    set->type = loc->type;
    set->q = loc->q;
    set->mol = loc->mol;
    set->excl = loc->excl;
    set->mol_pos = loc->mol_pos;
    set->nranges = loc->plan->nranges;
    set->ranges = loc->plan->ranges;
    set->ndim = loc->ndim;
    for (int k = 0; k < 3; k++) {
        set->periodic[k] = loc->periodic[k];
        set->box[k] = loc->box[k];
    }
}

hx_status tg_trajectory(hx_md *md, int nsteps, double *e, double *max_dev)
{
    hx_status st = hx_md_evaluate(md);
    if (st != HX_OK)
        return st;
    e[0] = hx_md_last_energies(md)->total;
    if (max_dev)
        *max_dev = 0;
    hx_md_output out;
    memset(&out, 0, sizeof out);
    out.nstenergy = 10;
    for (int k = 1; k <= nsteps / 10; k++) {
        hx_md_set_steps(md, 10);
        if ((st = hx_md_run(md, &out)) != HX_OK)
            return st;
        e[k] = hx_md_last_energies(md)->total;
        if (max_dev)
            *max_dev = fmax(*max_dev, hx_md_last_energies(md)->constraint_deviation);
    }
    return HX_OK;
}

static double lsq_slope(const double *e, int n, double dt)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (int k = 0; k < n; k++) {
        const double t = dt * k;
        sx += t;
        sy += e[k];
        sxx += t * t;
        sxy += t * e[k];
    }
    const double den = n * sxx - sx * sx;
    return den > 0 ? (n * sxy - sx * sy) / den : 0.0;
}

void tg_drift(const double *e, int n, double interval_ps, int natoms, int nblocks, double *slope,
              double *se)
{
    *slope = lsq_slope(e, n, interval_ps) / natoms;
    *se = 0.0;
    const int len = nblocks > 1 ? n / nblocks : 0;
    if (len < 3)
        return;
    double m = 0, m2 = 0;
    for (int b = 0; b < nblocks; b++) {
        const double d = lsq_slope(e + (size_t)b * len, len, interval_ps) / natoms;
        m += d;
        m2 += d * d;
    }
    m /= nblocks;
    const double var = (m2 - nblocks * m * m) / (nblocks - 1);
    *se = var > 0 ? sqrt(var / nblocks) : 0.0;
}
