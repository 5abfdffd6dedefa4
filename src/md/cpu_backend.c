/* The "cpu" MD backend: forces (src/md/nonbonded*), leap-frog and SETTLE on the host in double
 * (non-bonded arithmetic double or mixed), OpenMP threads. Called by the step schedule; the home
 * store of the decomposition is the authoritative state (positions and velocities in double). */
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
    hx_settle *settle;
    int settle_nmol; /* molecules of the home store SETTLE was made for (-1: none) */
    const int *settle_gid0;
    double e[HX_E_N];
    hx_nb_energies nbe_local, nbe_nonlocal;
    double marks[HX_MARK_N]; /* host wall time, s */
} cpu_dom;

typedef struct cpu_impl {
    const hx_system *sys;
    const hx_forcefield *ff;
    hx_md_params p;
    int nlocal;
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
        hx_settle_destroy(&c->dom[i].settle);
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
    d->set.nranges = loc->plan->nranges;
    d->set.ranges = loc->plan->ranges;
    d->set.ndim = loc->ndim;
    memcpy(d->set.box, loc->box, sizeof d->set.box);
    memcpy(d->set.periodic, loc->periodic, sizeof d->set.periodic);
    /* SETTLE's molecule list follows the home store; with one domain it never changes */
    if (hx_forcefield_is_water(c->ff) &&
        (!d->settle || loc->ndim > 0 || d->settle_nmol != d->home->nmol)) {
        hx_settle_destroy(&d->settle);
        int *ht = malloc(((size_t)nh + 1) * sizeof *ht);
        HX_CHECK(ht, HX_ERR_NOMEM, "out of memory");
        for (int a = 0; a < nh; a++)
            ht[a] = loc->type[a];
        hx_status st =
            hx_settle_create_local(c->ff, d->home->nmol, d->home->mol_start, ht, &d->settle);
        free(ht);
        HX_TRY(st);
        hx_settle_set_threads(d->settle, c->p.nthreads);
        d->settle_nmol = d->home->nmol;
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
    return hx_nb_compute_part(d->nb, &d->set, d->f, want_energy ? e : NULL, step, part);
}

static void *cpu_halo_stream(void *vimpl, int i)
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
    if (d->settle && d->home->nmol > 0)
        st = hx_settle_apply(d->settle, x, xn, vn, dt, step);
    d->e[HX_E_LJ] = d->nbe_local.lj + d->nbe_nonlocal.lj;
    d->e[HX_E_COUL] = d->nbe_local.coulomb + d->nbe_nonlocal.coulomb;
    if (want_energy) {
        d->e[HX_E_KE_NEW] = kinetic_home(d, vn, c->sys->m, c->p.nthreads);
        /* the constraint deviation is reported with the energies: measured only then */
        d->e[HX_E_DEV] = d->settle && n > 0 ? hx_settle_deviation(d->settle, xn) : 0.0;
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
