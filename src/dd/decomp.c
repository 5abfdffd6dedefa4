/* The decomposition layer (include/halox/decomp.h): r_comm and the grid, the initial
 * distribution of molecules, migration and plan rebuild at repartition, the local topology of
 * every domain, and the statistics. Everything that decides which atoms a domain holds lives
 * here, so `halox plan` and `halox md` cannot disagree. */
#include "halox/decomp.h"
#include "core/error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void hx_molecule_centre(const double *x, int a0, int a1, double c[3])
{
    c[0] = c[1] = c[2] = 0.0;
    for (int a = a0; a < a1; a++)
        for (int d = 0; d < 3; d++)
            c[d] += x[3 * a + d];
    for (int d = 0; d < 3; d++)
        c[d] /= (double)(a1 - a0);
}

double hx_system_molecule_radius(const hx_system *s)
{
    double r2max = 0.0;
    for (int k = 0; k < s->nmol; k++) {
        int a0 = s->mol_start[k], a1 = s->mol_start[k + 1];
        double c[3];
        hx_molecule_centre(s->x, a0, a1, c);
        for (int a = a0; a < a1; a++) {
            double r2 = 0;
            for (int d = 0; d < 3; d++)
                r2 += (s->x[3 * a + d] - c[d]) * (s->x[3 * a + d] - c[d]);
            r2max = fmax(r2max, r2);
        }
    }
    return sqrt(r2max);
}

void hx_system_make_whole(hx_system *s)
{
    for (int k = 0; k < s->nmol; k++) {
        int a0 = s->mol_start[k];
        for (int a = a0 + 1; a < s->mol_start[k + 1]; a++)
            for (int d = 0; d < 3; d++) {
                double dx = s->x[3 * a + d] - s->x[3 * a0 + d];
                dx -= s->box[d] * nearbyint(dx / s->box[d]);
                s->x[3 * a + d] = s->x[3 * a0 + d] + dx;
            }
    }
}

typedef struct dlocal {
    hx_decomp_local pub;
    hx_home home;
    int cap;               /* of the per-local-atom arrays */
    int *gid, *mol, *type; /* [cap] */
    double *q;             /* [cap] */
    uint32_t *excl;        /* [cap] */
    unsigned char *mpos;   /* [cap] */
    double *invmass;       /* [home cap] */
    int cap_home;
} dlocal;

struct hx_decomp {
    const hx_system *sys;
    hx_comm *comm;
    hx_dd *dd;
    hx_plan *plan;
    int nlocal;
    dlocal *loc;
    int *mol_of; /* [natoms] global molecule of each atom */
    double r_comm, mol_radius;
    hx_home **homes;   /* [nlocal] for hx_migrate */
    int **gptr;        /* [nlocal] for the integer exchange */
    int *nh;           /* [nlocal] */
    const double **xh; /* [nlocal] */
};

void hx_decomp_destroy(hx_decomp **dp)
{
    if (!dp || !*dp)
        return;
    hx_decomp *d = *dp;
    for (int i = 0; d->loc && i < d->nlocal; i++) {
        dlocal *l = &d->loc[i];
        hx_home_free(&l->home);
        free(l->gid);
        free(l->mol);
        free(l->type);
        free(l->q);
        free(l->excl);
        free(l->mpos);
        free(l->invmass);
    }
    free(d->loc);
    free(d->mol_of);
    free(d->homes);
    free(d->gptr);
    free(d->nh);
    free(d->xh);
    hx_plan_destroy(&d->plan);
    hx_dd_destroy(&d->dd);
    free(d);
    *dp = NULL;
}

/* Home molecules of local domain i: those whose centre (put in the box) lies in its cell. The
 * molecule is shifted with its centre, so it stays whole. Global order. The centre that decides
 * is computed from the shifted coordinates in the home store, exactly as migration computes it
 * at every later repartition, so both always agree on the owner. */
static hx_status home_room(hx_home *h, int natoms, int nmol, int me)
{
    if (natoms <= h->cap_atoms && nmol + 1 <= h->cap_mol)
        return HX_OK;
    int ca = h->cap_atoms ? h->cap_atoms : 1024, cm = h->cap_mol ? h->cap_mol : 512;
    while (ca < natoms)
        ca *= 2;
    while (cm < nmol + 1)
        cm *= 2;
    int *g = realloc(h->gid, (size_t)ca * sizeof *g);
    if (g)
        h->gid = g;
    double *x = realloc(h->x, 3 * (size_t)ca * sizeof *x);
    if (x)
        h->x = x;
    double *v = realloc(h->v, 3 * (size_t)ca * sizeof *v);
    if (v)
        h->v = v;
    int *ms = realloc(h->mol_start, (size_t)cm * sizeof *ms);
    if (ms)
        h->mol_start = ms;
    int *mg = realloc(h->mol_gid, (size_t)cm * sizeof *mg);
    if (mg)
        h->mol_gid = mg;
    HX_CHECK(g && x && v && ms && mg, HX_ERR_NOMEM, "out of memory for the home atoms of domain %d",
             me);
    h->cap_atoms = ca;
    h->cap_mol = cm;
    return HX_OK;
}

static hx_status distribute(hx_decomp *d, int i)
{
    const hx_system *s = d->sys;
    hx_home *h = &d->loc[i].home;
    const int me = hx_comm_local_domain(d->comm, i);
    int na = 0, nm = 0;
    HX_TRY(home_room(h, 1, 1, me));
    for (int k = 0; k < s->nmol; k++) {
        const int a0 = s->mol_start[k], a1 = s->mol_start[k + 1];
        HX_TRY(home_room(h, na + (a1 - a0), nm + 1, me));
        double c[3], sh[3];
        hx_molecule_centre(s->x, a0, a1, c);
        for (int dd = 0; dd < 3; dd++) {
            sh[dd] = -floor(c[dd] / s->box[dd]) * s->box[dd];
            if (c[dd] + sh[dd] >= s->box[dd]) /* rounding at the upper edge */
                sh[dd] -= s->box[dd];
        }
        for (int a = a0; a < a1; a++)
            for (int dd = 0; dd < 3; dd++) {
                h->x[3 * (na + a - a0) + dd] = s->x[3 * a + dd] + sh[dd];
                h->v[3 * (na + a - a0) + dd] = s->v ? s->v[3 * a + dd] : 0.0;
            }
        hx_molecule_centre(h->x, na, na + (a1 - a0), c);
        if (hx_dd_domain_of_point(d->dd, c) != me)
            continue; /* not ours: overwritten by the next candidate */
        h->mol_start[nm] = na;
        h->mol_gid[nm] = k;
        nm++;
        for (int a = a0; a < a1; a++, na++)
            h->gid[na] = a;
    }
    h->natoms = na;
    h->nmol = nm;
    h->mol_start[nm] = na;
    return HX_OK;
}

static hx_status build_plan(hx_decomp *d)
{
    for (int i = 0; i < d->nlocal; i++) {
        d->nh[i] = d->loc[i].home.natoms;
        d->xh[i] = d->loc[i].home.x;
    }
    return hx_plan_build(d->plan, d->nh, d->xh);
}

hx_status hx_decomp_create(const hx_system *sys, const hx_decomp_params *p, hx_comm *comm,
                           hx_decomp **out)
{
    HX_CHECK(sys && p && comm && out, HX_ERR_INVALID_ARG, "hx_decomp_create: NULL argument");
    *out = NULL;
    HX_CHECK(sys->natoms > 0 && sys->nmol > 0, HX_ERR_INVALID_ARG, "the system has no atoms");
    HX_CHECK(p->rc > 0 && p->rlist >= p->rc, HX_ERR_INVALID_ARG,
             "pair-list radius %g nm below the cut-off %g nm: rlist must be >= rc", p->rlist,
             p->rc);
    hx_decomp *d = calloc(1, sizeof *d);
    HX_CHECK(d, HX_ERR_NOMEM, "out of memory");
    hx_status st = HX_OK;
    d->sys = sys;
    d->comm = comm;
    d->nlocal = hx_comm_nlocal(comm);
    d->mol_radius = hx_system_molecule_radius(sys);
    /* the halo must reach rlist beyond any atom of a molecule assigned by its centre */
    d->r_comm = p->rlist + d->mol_radius;
    int g[3] = {p->grid[0], p->grid[1], p->grid[2]};
    const int nd = hx_comm_ndomains(comm);
    if (g[0] <= 0 || g[1] <= 0 || g[2] <= 0) {
        HX_TRY_GOTO(st, hx_dd_choose_grid(sys->box, d->r_comm, p->rc, nd, g), fail);
    } else if (g[0] * g[1] * g[2] != nd) {
        st = hx_error_set(HX_ERR_INVALID_ARG, __FILE__, __LINE__, __func__,
                          "the domain grid %dx%dx%d has %d domains but the job has %d ranks: "
                          "give a grid whose product is %d, or leave --dd out to choose one",
                          g[0], g[1], g[2], g[0] * g[1] * g[2], nd, nd);
        goto fail;
    }
    hx_dd_params dp = {
        {sys->box[0], sys->box[1], sys->box[2]}, {g[0], g[1], g[2]}, d->r_comm, p->rc};
    HX_TRY_GOTO(st, hx_dd_create(&dp, &d->dd), fail);
    HX_TRY_GOTO(st, hx_plan_create(d->dd, comm, &d->plan), fail);
    size_t nl = (size_t)d->nlocal;
    d->loc = calloc(nl, sizeof *d->loc);
    d->homes = calloc(nl, sizeof *d->homes);
    d->gptr = calloc(nl, sizeof *d->gptr);
    d->nh = calloc(nl, sizeof *d->nh);
    d->xh = calloc(nl, sizeof *d->xh);
    d->mol_of = malloc(((size_t)sys->natoms + 1) * sizeof *d->mol_of);
    if (!d->loc || !d->homes || !d->gptr || !d->nh || !d->xh || !d->mol_of)
        HX_FAIL_GOTO(st, HX_ERR_NOMEM, fail, "out of memory");
    for (int k = 0; k < sys->nmol; k++)
        for (int a = sys->mol_start[k]; a < sys->mol_start[k + 1]; a++)
            d->mol_of[a] = k;
    for (int i = 0; i < d->nlocal && st == HX_OK; i++) {
        d->homes[i] = &d->loc[i].home;
        st = distribute(d, i);
        /* the home store is part of the local view from the start (topology: update_local) */
        d->loc[i].pub.home = &d->loc[i].home;
        d->loc[i].pub.n_home = d->loc[i].home.natoms;
    }
    /* agreed before the first collective of the plan build */
    HX_TRY_GOTO(st, hx_comm_agree(comm, st), fail);
    HX_TRY_GOTO(st, build_plan(d), fail);
    *out = d;
    return HX_OK;
fail:
    hx_decomp_destroy(&d);
    return st;
}

hx_status hx_decomp_repartition(hx_decomp *d, long long step)
{
    HX_CHECK(d, HX_ERR_INVALID_ARG, "hx_decomp_repartition: NULL argument");
    HX_TRY(hx_migrate(d->dd, d->comm, d->homes, step));
    HX_TRY(build_plan(d));
    return HX_OK;
}

static hx_status local_reserve(dlocal *l, int n_local, int n_home)
{
    if (n_local + 1 > l->cap) {
        int cap = l->cap ? l->cap : 256;
        while (cap < n_local + 1)
            cap *= 2;
        int *g = realloc(l->gid, (size_t)cap * sizeof *g);
        if (g)
            l->gid = g;
        int *m = realloc(l->mol, (size_t)cap * sizeof *m);
        if (m)
            l->mol = m;
        int *t = realloc(l->type, (size_t)cap * sizeof *t);
        if (t)
            l->type = t;
        double *q = realloc(l->q, (size_t)cap * sizeof *q);
        if (q)
            l->q = q;
        uint32_t *e = realloc(l->excl, (size_t)cap * sizeof *e);
        if (e)
            l->excl = e;
        unsigned char *mp = realloc(l->mpos, (size_t)cap * sizeof *mp);
        if (mp)
            l->mpos = mp;
        HX_CHECK(g && m && t && q && e && mp, HX_ERR_NOMEM, "out of memory for %d local atoms",
                 cap);
        l->cap = cap;
    }
    if (n_home + 1 > l->cap_home) {
        int cap = l->cap_home ? l->cap_home : 256;
        while (cap < n_home + 1)
            cap *= 2;
        double *im = realloc(l->invmass, (size_t)cap * sizeof *im);
        HX_CHECK(im, HX_ERR_NOMEM, "out of memory for %d home atoms", cap);
        l->invmass = im;
        l->cap_home = cap;
    }
    return HX_OK;
}

hx_status hx_decomp_update_local(hx_decomp *d)
{
    HX_CHECK(d, HX_ERR_INVALID_ARG, "hx_decomp_update_local: NULL argument");
    const hx_system *s = d->sys;
    hx_status st = HX_OK;
    for (int i = 0; i < d->nlocal && st == HX_OK; i++) {
        dlocal *l = &d->loc[i];
        const hx_domain_plan *dp = hx_plan_domain(d->plan, i);
        st = local_reserve(l, dp->n_local, l->home.natoms);
        if (st != HX_OK)
            break;
        memcpy(l->gid, l->home.gid, (size_t)l->home.natoms * sizeof *l->gid);
        d->gptr[i] = l->gid;
    }
    HX_TRY(hx_comm_agree(d->comm, st));
    HX_TRY(hx_plan_exchange_int(d->plan, d->gptr, 1));
    int grid[3];
    hx_dd_grid(d->dd, grid);
    for (int i = 0; i < d->nlocal; i++) {
        dlocal *l = &d->loc[i];
        const hx_domain_plan *dp = hx_plan_domain(d->plan, i);
        for (int a = 0; a < dp->n_local; a++) {
            int g = l->gid[a];
            l->mol[a] = d->mol_of[g];
            l->type[a] = s->type ? s->type[g] : 0;
            l->q[a] = s->q ? s->q[g] : 0.0;
            /* without a force field's exclusions: the whole molecule (the rule of rigid
             * molecules) */
            l->excl[a] = s->excl ? s->excl[g] : 0xffffffffu;
            l->mpos[a] = (unsigned char)(g - s->mol_start[l->mol[a]]);
        }
        for (int a = 0; a < l->home.natoms; a++)
            l->invmass[a] = s->m ? 1.0 / s->m[l->home.gid[a]] : 0.0;
        hx_decomp_local *pub = &l->pub;
        pub->home = &l->home;
        pub->n_home = dp->n_home;
        pub->n_local = dp->n_local;
        pub->gid = l->gid;
        pub->mol = l->mol;
        pub->type = l->type;
        pub->q = l->q;
        pub->excl = l->excl;
        pub->mol_pos = l->mpos;
        pub->invmass = l->invmass;
        pub->plan = dp;
        pub->ndim = dp->ndim;
        hx_dd_box(d->dd, pub->box);
        for (int k = 0; k < 3; k++)
            pub->periodic[k] = grid[k] == 1;
    }
    return HX_OK;
}

const hx_dd *hx_decomp_dd(const hx_decomp *d)
{
    return d->dd;
}

hx_plan *hx_decomp_plan(const hx_decomp *d)
{
    return d->plan;
}

hx_comm *hx_decomp_comm(const hx_decomp *d)
{
    return d->comm;
}

int hx_decomp_nlocal(const hx_decomp *d)
{
    return d->nlocal;
}

const hx_decomp_local *hx_decomp_get_local(const hx_decomp *d, int local)
{
    return &d->loc[local].pub;
}

double hx_decomp_r_comm(const hx_decomp *d)
{
    return d->r_comm;
}

double hx_decomp_molecule_radius(const hx_decomp *d)
{
    return d->mol_radius;
}

hx_status hx_decomp_get_stats(hx_decomp *d, hx_decomp_stats *s)
{
    HX_CHECK(d && s, HX_ERR_INVALID_ARG, "hx_decomp_get_stats: NULL argument");
    memset(s, 0, sizeof *s);
    hx_dd_grid(d->dd, s->grid);
    for (int k = 0; k < 3; k++) {
        s->pulses[k] = hx_dd_pulses_dim(d->dd, k);
        s->cell[k] = hx_dd_cell_size(d->dd, k);
    }
    s->r_comm = d->r_comm;
    s->molecule_radius = d->mol_radius;
    /* min via max of negated values; the small per-call arrays live on the stack for the usual
     * one domain per process, so the collective below is entered by every rank */
    enum { NQ = 5 };
    long long stack[NQ * 2];
    long long *mx = d->nlocal <= 1 ? stack : malloc(sizeof(long long) * NQ * (size_t)d->nlocal);
    hx_status st =
        mx ? HX_OK : hx_error_set(HX_ERR_NOMEM, __FILE__, __LINE__, __func__, "out of memory");
    HX_TRY(hx_comm_agree(d->comm, st));
    for (int i = 0; i < d->nlocal; i++) {
        const hx_domain_plan *dp = hx_plan_domain(d->plan, i);
        long long halo = dp->n_local - dp->n_home;
        mx[NQ * i + 0] = dp->n_home;
        mx[NQ * i + 1] = -(long long)dp->n_home;
        mx[NQ * i + 2] = halo;
        mx[NQ * i + 3] = -halo;
        mx[NQ * i + 4] = 0;
    }
    long long r[NQ];
    st = hx_comm_max_i64(d->comm, mx, r, NQ);
    double *hs = d->nlocal <= 1 ? NULL : malloc(sizeof(double) * (size_t)d->nlocal);
    double h1 = 0.0, tot = 0.0;
    for (int i = 0; i < d->nlocal; i++) {
        const hx_domain_plan *dp = hx_plan_domain(d->plan, i);
        if (hs)
            hs[i] = (double)(dp->n_local - dp->n_home);
        else
            h1 = (double)(dp->n_local - dp->n_home);
    }
    if (st == HX_OK && d->nlocal > 1 && !hs)
        st = hx_error_set(HX_ERR_NOMEM, __FILE__, __LINE__, __func__, "out of memory");
    st = hx_comm_agree(d->comm, st);
    if (st == HX_OK)
        st = hx_comm_sum_f64(d->comm, hs ? hs : &h1, &tot, 1);
    if (mx != stack)
        free(mx);
    free(hs);
    HX_TRY(st);
    s->home_max = r[0];
    s->home_min = -r[1];
    s->halo_max = r[2];
    s->halo_min = -r[3];
    s->halo_total = (long long)tot;
    return HX_OK;
}
