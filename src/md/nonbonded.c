/* Non-bonded interactions on a local atom set: a cluster-pair list (GROMACS nbnxm-like) and the
 * LJ + reaction-field kernel in double or mixed precision.
 *
 * Why this layout:
 *  - At every search the atoms of each zone are binned into columns of a 2D grid in x-y (column
 *    edge chosen so that 4 atoms span about a cube), sorted by z in each column and cut into
 *    clusters of 4 (padded with dummy slots). A cluster's 4 atoms are stored together
 *    (x[4] y[4] z[4] q[4]: 64 bytes in float), so one j cluster is one cache line and four
 *    vector loads.
 *  - The list holds entries (i cluster, image shift) each with a run of (j cluster, 16-bit
 *    mask) pairs. The mask drops padding, excluded pairs of a molecule (the local set's
 *    per-atom exclusion masks; every pair of a rigid molecule) and, for a cluster with itself,
 *    the lower triangle. Cluster pairs are culled by bounding-box distance and then by an atom
 *    check (at least one pair within rlist), so about half the computed pairs are inside rc.
 *  - One image shift per entry: the inner loop has no periodic arithmetic and open
 *    (decomposed) dimensions simply have zero shifts. Periodic atoms are binned at their
 *    wrapped position; the wrap offset is kept per slot and added to the positions until the
 *    next search, so the stored shifts stay valid while atoms cross the box edge.
 *  - Local (zone 0 x zone 0) and non-local cluster pairs go to separate lists, so a
 *    domain-decomposition engine can compute the local part while halo coordinates travel.
 *  - The search runs over 4 x nthreads blocks of i clusters, dynamically scheduled (the lists
 *    come out the same whoever searches a block). The kernel splits the concatenated list into
 *    nthreads ranges of equal cluster-pair counts (the half list gives early i clusters more
 *    partners, so equal i ranges were 56/44 unbalanced), each thread with its own force buffer,
 *    reduced per atom in thread order: results depend on nthreads only.
 *  - The kernel (src/md/nb_kernel.h) is instantiated in float and double, each for portable
 *    SSE2 and for AVX2+FMA chosen at run time.
 *
 * Files: this one is the API (set-up, the force call and its reduction, the home-atom terms);
 * nb_grid.c bins atoms into clusters, nb_search.c builds the lists, nb_kernels.c holds the
 * kernels and their run-time choice; nb_impl.h is the shared private data. */
#include "md/nb_impl.h"
#include "halox/log.h"
#include "core/error.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

/* ---- setup ------------------------------------------------------------------------------ */

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
    /* every pair of a molecule excluded; callers with flexible molecules set excl and mol_pos
     * (from sys->excl and the positions in the molecules) */
    set->excl = NULL;
    set->mol_pos = NULL;
    set->nranges = 1;
    set->ranges = range_store;
    set->ndim = 0;
    for (int d = 0; d < 3; d++) {
        set->periodic[d] = 1;
        set->box[d] = sys->box[d];
    }
}

hx_status hx_nb_set_precision(hx_nb *nb, hx_nb_precision precision)
{
    HX_CHECK(nb, HX_ERR_INVALID_ARG, "hx_nb_set_precision: NULL argument");
    HX_CHECK(precision == HX_NB_DOUBLE || precision == HX_NB_MIXED, HX_ERR_INVALID_ARG,
             "non-bonded precision %d: use HX_NB_DOUBLE (0) or HX_NB_MIXED (1)", (int)precision);
    hx_nbi_select_kernel(nb, precision);
    return HX_OK;
}

hx_nb_precision hx_nb_get_precision(const hx_nb *nb)
{
    return nb->precision;
}

const char *hx_nb_kernel_name(const hx_nb *nb)
{
    return nb->kernel_name;
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
    HX_CHECK(nt >= 1 && nt <= HX_MAX_TYPES, HX_ERR_INTERNAL, "force field with %d types", nt);
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
    for (int t = 0; t < nt; t++)
        for (int u = 0; u < nt; u++)
            nb->has_lj[t] |= nb->c6[t * nt + u] != 0.0 || nb->c12[t * nt + u] != 0.0;
    nb->nthreads = nthreads;
    nb->nblocks = NB_BLOCKS_PER_THREAD * nthreads;
    nb->chunks = calloc((size_t)nb->nblocks, sizeof *nb->chunks);
    for (int k = 0; k < NCLASS; k++) {
        nb->split_b[k] = calloc((size_t)nthreads + 1, sizeof(int));
        nb->split_e[k] = calloc((size_t)nthreads + 1, sizeof(int));
    }
    if (!nb->chunks || !nb->split_b[0] || !nb->split_b[1] || !nb->split_e[0] || !nb->split_e[1]) {
        hx_nb_destroy(&nb);
        HX_FAIL(HX_ERR_NOMEM, "out of memory");
    }
    hx_nbi_select_kernel(nb, HX_NB_DOUBLE);
    hx_log(HX_LOG_DEBUG, "non-bonded kernel: 4x4 cluster pairs, %s, %d threads", nb->kernel_name,
           nthreads);
    *out = nb;
    return HX_OK;
}

static void list_free(nb_list *l)
{
    free(l->ci);
    free(l->shift);
    free(l->jbeg);
    free(l->cj);
    free(l->mask);
}

void hx_nb_destroy(hx_nb **nbp)
{
    if (!nbp || !*nbp)
        return;
    hx_nb *nb = *nbp;
    for (int c = 0; c < nb->nblocks && nb->chunks; c++) {
        nb_chunk *ch = &nb->chunks[c];
        for (int k = 0; k < NCLASS; k++)
            list_free(&ch->list[k]);
        free(ch->fbuf);
        free(ch->cand_cj);
        free(ch->cand_key);
        free(ch->cand_mask);
    }
    free(nb->chunks);
    for (int k = 0; k < NCLASS; k++) {
        free(nb->split_b[k]);
        free(nb->split_e[k]);
    }
    free(nb->perm);
    free(nb->wrap);
    free(nb->xqd);
    free(nb->xqf);
    free(nb->lj6d);
    free(nb->lj12d);
    free(nb->lj6f);
    free(nb->lj12f);
    free(nb->ts);
    free(nb->ms);
    free(nb->xs);
    free(nb->ps);
    free(nb->bb);
    free(nb->bbf);
    free(nb->realm);
    free(nb->ljs);
    free(nb->dmax);
    free(nb->dslot);
    free(nb->xps);
    free(nb->colcl);
    free(nb->colbb);
    free(nb->colcount);
    free(nb->akey);
    free(nb->aord);
    free(nb->apos);
    free(nb->x_prev);
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
    for (int c = 0; c < nb->nblocks; c++)
        s += nb->chunks[c].npairs;
    return s;
}

/* Thread t's share of class k. */
static void run_kernel(const hx_nb *nb, const nbk_args *ka, int k, int t, int energy, nb_chunk *th)
{
    const int b0 = nb->split_b[k][t], e0 = nb->split_e[k][t];
    const int b1 = nb->split_b[k][t + 1], e1 = nb->split_e[k][t + 1];
    for (int b = b0; b <= b1 && b < nb->nblocks; b++) {
        const nb_list *l = &nb->chunks[b].list[k];
        int eb = b == b0 ? e0 : 0, ee = b == b1 ? e1 : l->nent;
        if (ee > eb)
            nb->kernel[energy](ka, l, eb, ee, th->fbuf, &th->vlj, &th->vc);
    }
}

/* ---- forces ----------------------------------------------------------------------------- */

/* Home atoms [b, e): self term and the reaction-field part of excluded pairs (pairs of a
 * molecule whose exclusion mask bit is set: every pair of a rigid water, pairs up to nrexcl
 * bonds apart in ethanol, its 1-4 pairs included, as GROMACS's Verlet scheme) within the
 * cut-off, in double in both precisions (a few pairs per molecule). Called inside
 * the parallel region: the work is shared by first atoms of molecules, so a molecule's forces
 * belong to one thread, and each thread's energy goes to its own chunk (summed in thread order
 * afterwards: deterministic for a given thread count). */
static void home_terms(const hx_nb *nb, const hx_local_set *set, int b, int e, double *f,
                       double *vhome)
{
    const double epsfac = nb->rf.epsfac, krf = nb->rf.k_rf, crf = nb->rf.c_rf;
    const double rc2 = nb->p.rc * nb->p.rc;
    double vself = 0.0, vexcl = 0.0;
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
    for (int i0 = b; i0 < e; i0++) {
        if (i0 > b && set->mol[i0 - 1] == set->mol[i0])
            continue; /* not the first atom of its molecule */
        for (int i = i0; i < e && set->mol[i] == set->mol[i0]; i++) {
            const double qi = set->q[i];
            vself -= 0.5 * epsfac * qi * qi * crf;
            for (int j = i + 1; j < e && set->mol[j] == set->mol[i]; j++) {
                double d[3], r2 = 0.0;
                for (int k = 0; k < 3; k++) {
                    d[k] = set->x[3 * i + k] - set->x[3 * j + k];
                    if (set->periodic[k])
                        d[k] = min_image(d[k], set->box[k]);
                    r2 += d[k] * d[k];
                }
                if (r2 >= rc2)
                    continue;
                /* only excluded pairs: the others are in the pair list like any pair */
                if (set->excl && !((set->excl[i] >> set->mol_pos[j]) & 1u))
                    continue;
                const double qq = epsfac * qi * set->q[j];
                vexcl += qq * (krf * r2 - crf);
                const double fs = -2.0 * qq * krf; /* F_i = -dV/dr r_hat = -2 qq krf d */
                for (int k = 0; k < 3; k++) {
                    f[3 * i + k] += fs * d[k];
                    f[3 * j + k] -= fs * d[k];
                }
            }
        }
    }
    *vhome += vexcl + vself;
}

hx_status hx_nb_compute_part(hx_nb *nb, const hx_local_set *set, double *f, hx_nb_energies *e,
                             long long step, int part)
{
    HX_CHECK(nb && set && f, HX_ERR_INVALID_ARG, "hx_nb_compute: NULL argument");
    const int energy = e != NULL;
    HX_CHECK(part == HX_NB_ALL || part == HX_NB_LOCAL || part == HX_NB_NONLOCAL, HX_ERR_INVALID_ARG,
             "hx_nb_compute_part: part %d is not HX_NB_ALL, HX_NB_LOCAL or "
             "HX_NB_NONLOCAL",
             part);
    HX_CHECK(nb->have_prev && set->n == nb->n, HX_ERR_INVALID_ARG,
             "hx_nb_compute: the local set has %d atoms but the pair list was built for %d: "
             "call hx_nb_search after the atom set changes",
             set->n, nb->have_prev ? nb->n : -1);
    const int mixed = nb->precision == HX_NB_MIXED;
    const int n = nb->n, nth = nb->nthreads;
    if (part == HX_NB_NONLOCAL && nb->ncj_class[1] == 0) {
        /* no halo pairs (a single domain): nothing to add */
        if (e)
            e->lj = e->coulomb = 0.0;
        return HX_OK;
    }
    /* LOCAL reads and reduces only zone-0 clusters (halo positions may not have arrived) */
    const int cl_end = part == HX_NB_LOCAL ? nb->zcl[1] : nb->ncl;
    const double rc = nb->p.rc, rc2 = rc * rc;
    nbk_args ka;
    ka.xq = mixed ? (const void *)nb->xqf : (const void *)nb->xqd;
    ka.lj6 = mixed ? (const void *)nb->lj6f : (const void *)nb->lj6d;
    ka.lj12 = mixed ? (const void *)nb->lj12f : (const void *)nb->lj12d;
    ka.ts = nb->ts;
    ka.ljs = nb->ljs;
    ka.nslot = nb->nslot;
    ka.shiftvec = (const double(*)[3])nb->shiftvec;
    ka.rc2 = rc2;
    ka.irc6 = 1.0 / (rc2 * rc2 * rc2);
    ka.irc12 = ka.irc6 * ka.irc6;
    ka.krf = nb->rf.k_rf;
    ka.crf = nb->rf.c_rf;
    ka.epsfac = nb->rf.epsfac;
    const size_t rsz = mixed ? sizeof(float) : sizeof(double);
    if (part == HX_NB_LOCAL) {
        /* halo atoms get nothing from the local part (the reduction below writes only
         * zone-0 clusters) */
        for (int r = 0; r < set->nranges; r++)
            if (set->ranges[r].zone != 0)
                memset(f + 3 * (size_t)set->ranges[r].begin, 0,
                       3 * (size_t)(set->ranges[r].end - set->ranges[r].begin) * sizeof *f);
    }
    int bad = INT_MAX;
#ifdef _OPENMP
#pragma omp parallel num_threads(nth)
#endif
    {
        /* positions with the wrap offsets of the last search, sorted layout */
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int cl = 0; cl < cl_end; cl++) {
            for (int k = 0; k < 4; k++) {
                int s = 4 * cl + k, a = nb->perm[s];
                if (a < 0)
                    continue;
                for (int d = 0; d < 3; d++) {
                    double v = set->x[3 * a + d] + nb->wrap[3 * s + d];
                    if (mixed)
                        nb->xqf[16 * cl + 4 * d + k] = (float)v;
                    else
                        nb->xqd[16 * cl + 4 * d + k] = v;
                }
            }
        }
#ifdef _OPENMP
#pragma omp for schedule(static, 1)
#endif
        for (int c = 0; c < nth; c++) {
            nb_chunk *ch = &nb->chunks[c];
            memset(ch->fbuf, 0, (size_t)cl_end * 12 * rsz);
            ch->vlj = ch->vc = ch->vhome = 0.0;
            if (part != HX_NB_NONLOCAL)
                run_kernel(nb, &ka, 0, c, energy, ch);
            if (part != HX_NB_LOCAL)
                run_kernel(nb, &ka, 1, c, energy, ch);
        }
        /* reduce in chunk order into local order */
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int cl = 0; cl < cl_end; cl++) {
            for (int k = 0; k < 4; k++) {
                int a = nb->perm[4 * cl + k];
                if (a < 0)
                    continue;
                for (int d = 0; d < 3; d++) {
                    double s = 0.0;
                    size_t idx = 12 * (size_t)cl + 4 * (size_t)d + (size_t)k;
                    for (int c = 0; c < nth; c++)
                        s += mixed ? (double)((const float *)nb->chunks[c].fbuf)[idx]
                                   : ((const double *)nb->chunks[c].fbuf)[idx];
                    if (part == HX_NB_NONLOCAL)
                        f[3 * a + d] += s;
                    else
                        f[3 * a + d] = s;
                }
            }
        }
        if (part != HX_NB_NONLOCAL) {
#ifdef _OPENMP
            nb_chunk *me = &nb->chunks[omp_get_thread_num()];
#else
            nb_chunk *me = &nb->chunks[0];
#endif
            for (int r = 0; r < set->nranges; r++)
                if (set->ranges[r].zone == 0)
                    home_terms(nb, set, set->ranges[r].begin, set->ranges[r].end, f, &me->vhome);
        }
        /* a non-finite force: the first one (lowest index) is reported */
#ifdef _OPENMP
#pragma omp for schedule(static) reduction(min : bad)
#endif
        for (int k = 0; k < 3 * n; k++)
            if (!isfinite(f[k]) && k < bad)
                bad = k;
    }
    double vlj = 0.0, vc = 0.0, vhome = 0.0;
    for (int c = 0; c < nth; c++) {
        vlj += nb->chunks[c].vlj;
        vc += nb->chunks[c].vc;
        vhome += nb->chunks[c].vhome;
    }
    HX_CHECK(bad == INT_MAX, HX_ERR_PHYSICS,
             "step %lld: non-finite force on atom %d (local index %d): atoms overlap or the "
             "system blew up; check the input structure and use a smaller time step",
             step, bad / 3 + 1, bad / 3);
    if (!e)
        return HX_OK;
    e->lj = vlj;
    e->coulomb = vc + vhome;
    HX_CHECK(isfinite(e->lj) && isfinite(e->coulomb), HX_ERR_PHYSICS,
             "step %lld: non-finite non-bonded energy (LJ %g, Coulomb %g): atoms overlap or the "
             "system blew up; check the input structure and use a smaller time step",
             step, e->lj, e->coulomb);
    return HX_OK;
}

hx_status hx_nb_compute(hx_nb *nb, const hx_local_set *set, double *f, hx_nb_energies *e,
                        long long step)
{
    return hx_nb_compute_part(nb, set, f, e, step, HX_NB_ALL);
}
