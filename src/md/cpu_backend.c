/* The "cpu" MD backend: forces (src/md/nonbonded*, bonded terms of home molecules from
 * src/md/bonded.c), leap-frog and constraints (SETTLE for water, SHAKE for other molecules,
 * src/md/constraints.c) on the host in double (non-bonded arithmetic double or mixed), OpenMP
 * threads. Called by the step schedule; the home store of the decomposition is the
 * authoritative state (positions and velocities in double). Bonded terms and constraints act
 * on whole home molecules, so they read home positions only and need nothing from the halo. */
#include "md/backend.h"
#include "core/error.h"
#include "core/timer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cpu_dom {
    const hx_decomp_local *loc;
    hx_home *home;
    double *x, *f;   /* the halo's arrays [cap][3] */
    double *xn, *vn; /* [3 n_home] the update's output */
    int cap_home;
    hx_local_set set;
    hx_nb *nb;
    hx_constr *constr;
    int constr_nmol; /* molecules of the home store the constraints were made for */
    /* home molecules with bonded terms: first atom, type, global index */
    int nbmol, cap_bmol;
    int *bstart, *btype, *bgid;
    double e[HX_E_N];
    hx_nb_energies nbe_local, nbe_nonlocal;
    hx_bonded_energies be;
    double marks[HX_MARK_N]; /* host wall time, s */
} cpu_dom;

typedef struct cpu_impl {
    const hx_system *sys;
    const hx_forcefield *ff;
    hx_md_params p;
    int nlocal;
    int has_constraints, has_bonded;
    double epsfac; /* of the 1-4 Coulomb */
    cpu_dom *dom;
    char desc[128];
} cpu_impl;

static void cpu_destroy(void *vimpl)
{
    cpu_impl *c = vimpl;
    if (!c)
        return;
    for (int i = 0; c->dom && i < c->nlocal; i++) {
        hx_nb_destroy(&c->dom[i].nb);
        hx_constr_destroy(&c->dom[i].constr);
        free(c->dom[i].bstart);
        free(c->dom[i].btype);
        free(c->dom[i].bgid);
        free(c->dom[i].xn);
        free(c->dom[i].vn);
    }
    free(c->dom);
    free(c);
}

static hx_status cpu_create(const hx_system *sys, const hx_forcefield *ff, const hx_md_params *p,
                            int nlocal, void **out)
{
    cpu_impl *c = calloc(1, sizeof *c);
    HX_CHECK(c, HX_ERR_NOMEM, "out of memory");
    c->sys = sys;
    c->ff = ff;
    c->p = *p;
    c->nlocal = nlocal;
    c->dom = calloc((size_t)nlocal, sizeof *c->dom);
    hx_status st =
        c->dom ? HX_OK : hx_error_set(HX_ERR_NOMEM, __FILE__, __LINE__, __func__, "out of memory");
    hx_nb_params nbp = {.rc = p->rc, .eps_rf = p->eps_rf, .eps_r = p->eps_r};
    c->epsfac = hx_rf_constants(&nbp).epsfac;
    c->has_bonded = hx_forcefield_has_bonded(ff);
    for (int k = 0; k < hx_forcefield_nmoltypes(ff); k++) {
        const hx_moltype *t = hx_forcefield_moltype(ff, k);
        c->has_constraints |= t->rigid_water || t->nconstraints > 0;
    }
    for (int i = 0; i < nlocal && st == HX_OK; i++) {
        st = hx_nb_create(ff, &nbp, p->nthreads, &c->dom[i].nb);
        if (st == HX_OK)
            st = hx_nb_set_precision(c->dom[i].nb, (hx_nb_precision)p->nb_precision);
    }
    if (st != HX_OK) {
        cpu_destroy(c);
        return st;
    }
    snprintf(c->desc, sizeof c->desc, "cpu: %s kernels, %d threads",
             hx_nb_kernel_name(c->dom[0].nb), hx_nb_nthreads(c->dom[0].nb));
    *out = c;
    return HX_OK;
}

static hx_status cpu_set_local(void *vimpl, int i, const hx_decomp_local *loc, void *x, void *f)
{
    cpu_impl *c = vimpl;
    cpu_dom *d = &c->dom[i];
    d->loc = loc;
    d->home = loc->home;
    d->x = x;
    d->f = f;
    const int nh = loc->n_home;
    if (nh + 1 > d->cap_home) {
        int cap = d->cap_home ? d->cap_home : 256;
        while (cap < nh + 1)
            cap *= 2;
        double *xn = realloc(d->xn, 3 * (size_t)cap * sizeof *xn);
        if (xn)
            d->xn = xn;
        double *vn = realloc(d->vn, 3 * (size_t)cap * sizeof *vn);
        if (vn)
            d->vn = vn;
        HX_CHECK(xn && vn, HX_ERR_NOMEM, "out of memory for %d home atoms", cap);
        d->cap_home = cap;
    }
    memcpy(d->x, d->home->x, 3 * (size_t)nh * sizeof(double));
    d->set.n = loc->n_local;
    d->set.x = d->x;
    d->set.type = loc->type;
    d->set.q = loc->q;
    d->set.mol = loc->mol;
    d->set.excl = loc->excl;
    d->set.mol_pos = loc->mol_pos;
    d->set.nranges = loc->plan->nranges;
    d->set.ranges = loc->plan->ranges;
    d->set.ndim = loc->ndim;
    memcpy(d->set.box, loc->box, sizeof d->set.box);
    memcpy(d->set.periodic, loc->periodic, sizeof d->set.periodic);
    /* The home molecules' types, for bonded terms and constraints */
    const hx_home *h = d->home;
    if (h->nmol + 1 > d->cap_bmol) {
        int cap = d->cap_bmol ? d->cap_bmol : 256;
        while (cap < h->nmol + 1)
            cap *= 2;
        int *a = realloc(d->bstart, (size_t)cap * sizeof *a);
        if (a)
            d->bstart = a;
        int *b = realloc(d->btype, (size_t)cap * sizeof *b);
        if (b)
            d->btype = b;
        int *g = realloc(d->bgid, (size_t)cap * sizeof *g);
        if (g)
            d->bgid = g;
        HX_CHECK(a && b && g, HX_ERR_NOMEM, "out of memory for %d home molecules", cap);
        d->cap_bmol = cap;
    }
    /* The constraints' molecule list follows the home store; with one domain it never changes */
    if (c->has_constraints && (!d->constr || loc->ndim > 0 || d->constr_nmol != h->nmol)) {
        hx_constr_destroy(&d->constr);
        for (int k = 0; k < h->nmol; k++) {
            d->bstart[k] = h->mol_start[k];
            d->btype[k] = c->sys->mol_type[h->mol_gid[k]];
            d->bgid[k] = h->mol_gid[k];
        }
        hx_mol_list ml = {h->nmol, d->bstart, d->btype, d->bgid};
        HX_TRY(hx_constr_create(c->ff, &ml, loc->type, &d->constr));
        hx_constr_set_threads(d->constr, c->p.nthreads);
        d->constr_nmol = h->nmol;
    }
    /* the molecules with bonded terms */
    d->nbmol = 0;
    if (c->has_bonded)
        for (int k = 0; k < h->nmol; k++) {
            const int mt = c->sys->mol_type[h->mol_gid[k]];
            const hx_moltype *t = hx_forcefield_moltype(c->ff, mt);
            if (t->nbonds || t->nangles || t->ndihedrals || t->npairs) {
                d->bstart[d->nbmol] = h->mol_start[k];
                d->btype[d->nbmol] = mt;
                d->bgid[d->nbmol] = h->mol_gid[k];
                d->nbmol++;
            }
        }
    return HX_OK;
}

static hx_status cpu_search(void *vimpl, int i, double rlist, int check_missed, long long *missed)
{
    cpu_impl *c = vimpl;
    return hx_nb_search(c->dom[i].nb, &c->dom[i].set, rlist, check_missed, missed);
}

static long long cpu_npairs(void *vimpl, int i)
{
    return hx_nb_npairs(((cpu_impl *)vimpl)->dom[i].nb);
}

static hx_status cpu_forces(void *vimpl, int i, int part, int want_energy, long long step)
{
    cpu_impl *c = vimpl;
    cpu_dom *d = &c->dom[i];
    hx_nb_energies *e = part == HX_NB_LOCAL ? &d->nbe_local : &d->nbe_nonlocal;
    e->lj = e->coulomb = 0.0;
    if (part == HX_NB_LOCAL) /* the positions of this step */
        memcpy(d->x, d->home->x, 3 * (size_t)d->home->natoms * sizeof(double));
    else if (d->loc->ndim == 0)
        return HX_OK; /* one domain: no halo pairs */
    HX_TRY(hx_nb_compute_part(d->nb, &d->set, d->f, want_energy ? e : NULL, step, part));
    if (part == HX_NB_LOCAL) {
        /* bonded terms of the home molecules, added after the pair forces (which overwrite f) */
        memset(&d->be, 0, sizeof d->be);
        if (d->nbmol > 0) {
            hx_mol_list ml = {d->nbmol, d->bstart, d->btype, d->bgid};
            HX_TRY(hx_bonded_compute(c->ff, &ml, d->x, d->f, c->epsfac, c->p.nthreads,
                                     want_energy ? &d->be : NULL, step));
        }
    }
    return HX_OK;
}

static hx_stream cpu_halo_stream(void *vimpl, int i)
{
    (void)vimpl;
    (void)i;
    return NULL;
}

/* Kinetic energy of the home atoms. Threads sum fixed blocks of atoms and the block sums are
 * added in order: the result depends on the atom count only, not on the thread count. */
#define KE_MAX_BLOCKS 256
static double kinetic_home(const cpu_dom *d, const double *v, const double *m_global, int nthreads)
{
    const int n = d->home->natoms;
    const int bs = n / KE_MAX_BLOCKS + 1 > 1024 ? n / KE_MAX_BLOCKS + 1 : 1024;
    const int nb = (n + bs - 1) / bs;
    double part[KE_MAX_BLOCKS + 1];
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(nthreads) if (nb > 1)
#endif
    for (int b = 0; b < nb; b++) {
        const int a1 = (b + 1) * bs < n ? (b + 1) * bs : n;
        double ke = 0.0;
        for (int a = b * bs; a < a1; a++) {
            double m = m_global[d->home->gid[a]];
            ke += 0.5 * m *
                  (v[3 * a] * v[3 * a] + v[3 * a + 1] * v[3 * a + 1] + v[3 * a + 2] * v[3 * a + 2]);
        }
        part[b] = ke;
    }
    (void)nthreads;
    double ke = 0.0;
    for (int b = 0; b < nb; b++)
        ke += part[b];
    return ke;
}

static hx_status cpu_kinetic(void *vimpl, int i, double *ke)
{
    cpu_impl *c = vimpl;
    *ke = kinetic_home(&c->dom[i], c->dom[i].home->v, c->sys->m, c->p.nthreads);
    return HX_OK;
}

static hx_status cpu_update(void *vimpl, int i, double lambda, int want_energy, int commit,
                            long long step)
{
    cpu_impl *c = vimpl;
    cpu_dom *d = &c->dom[i];
    const double dt = c->p.dt;
    const int n = d->home->natoms;
    const double *restrict x = d->home->x, *restrict v = d->home->v, *restrict f = d->f;
    const double *restrict invm = d->loc->invmass;
    double *restrict xn = d->xn, *restrict vn = d->vn;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(c->p.nthreads)
#endif
    for (int a = 0; a < n; a++) {
        double im = invm[a] * dt;
        for (int k = 0; k < 3; k++) {
            int j = 3 * a + k;
            vn[j] = lambda * v[j] + f[j] * im;
            xn[j] = x[j] + vn[j] * dt;
        }
    }
    hx_status st = HX_OK;
    if (d->constr && d->home->nmol > 0)
        st = hx_constr_apply(d->constr, x, xn, vn, dt, step);
    d->e[HX_E_LJ] = d->nbe_local.lj + d->nbe_nonlocal.lj;
    d->e[HX_E_COUL] = d->nbe_local.coulomb + d->nbe_nonlocal.coulomb;
    d->e[HX_E_BOND] = d->be.bonds;
    d->e[HX_E_ANGLE] = d->be.angles;
    d->e[HX_E_DIH] = d->be.dihedrals;
    d->e[HX_E_LJ14] = d->be.lj14;
    d->e[HX_E_COUL14] = d->be.coulomb14;
    if (want_energy) {
        d->e[HX_E_KE_NEW] = kinetic_home(d, vn, c->sys->m, c->p.nthreads);
        /* the constraint deviation is reported with the energies: measured only then */
        d->e[HX_E_DEV] = d->constr && n > 0 ? hx_constr_deviation(d->constr, xn) : 0.0;
    }
    if (commit) {
        memcpy(d->home->x, xn, 3 * (size_t)n * sizeof(double));
        memcpy(d->home->v, vn, 3 * (size_t)n * sizeof(double));
    }
    return st;
}

static hx_status cpu_energies(void *vimpl, int i, double out[HX_E_N])
{
    cpu_impl *c = vimpl;
    memcpy(out, c->dom[i].e, sizeof c->dom[i].e);
    return HX_OK;
}

static hx_status cpu_download(void *vimpl, int i, hx_home *home)
{
    (void)vimpl;
    (void)i;
    (void)home; /* the home store is the state */
    return HX_OK;
}

/* On the host the phases run one after the other: the marks are wall-clock times. */
static void cpu_mark(void *vimpl, int i, int which)
{
    ((cpu_impl *)vimpl)->dom[i].marks[which] = hx_wtime();
}

static hx_status cpu_read_marks(void *vimpl, int i, double t_us[HX_MARK_N])
{
    const double *m = ((cpu_impl *)vimpl)->dom[i].marks;
    for (int k = 0; k < HX_MARK_N; k++)
        t_us[k] = 1e6 * (m[k] - m[HX_MARK_LOCAL_BEGIN]);
    return HX_OK;
}

static const char *cpu_describe(void *vimpl)
{
    return ((cpu_impl *)vimpl)->desc;
}

const hx_md_backend_ops hx_md_backend_cpu = {
    .name = "cpu",
    .mem = HX_MEM_HOST,
    .real = HX_REAL_F64,
    .create = cpu_create,
    .destroy = cpu_destroy,
    .set_local = cpu_set_local,
    .search = cpu_search,
    .npairs = cpu_npairs,
    .forces = cpu_forces,
    .halo_stream = cpu_halo_stream,
    .kinetic = cpu_kinetic,
    .update = cpu_update,
    .energies = cpu_energies,
    .download = cpu_download,
    .mark = cpu_mark,
    .read_marks = cpu_read_marks,
    .describe = cpu_describe,
};
