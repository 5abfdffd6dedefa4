/* The MD engine: leap-frog + SETTLE, LJ + reaction field, pair list refreshed every nstlist
 * steps, optional v-rescale thermostat (Bussi, Donadio, Parrinello 2007), on one domain or on a
 * domain decomposition over a communicator (serial: every domain in this process; MPI: one
 * domain per rank). The single-domain engine is the decomposition 1x1x1.
 *
 * Step t: at a multiple of nstlist, repartition (molecules migrate to the domain of their centre,
 * the halo plan and the pair lists are rebuilt); coordinates forward through the halo; forces at
 * x(t) on [home | halo]; forces back to their owners; v(t+dt/2) = lambda v(t-dt/2) + f/m dt,
 * x(t+dt) = x(t) + v dt, SETTLE, v = (x(t+dt) - x(t)) / dt, on home atoms. The kinetic energy
 * of step t is the average of the two half-step kinetic energies (as GROMACS's leap-frog reports
 * it). lambda is 1 in NVE; with v-rescale it is drawn from the half-step kinetic energy before
 * the update, with one random stream that every rank draws identically. Energies are summed over
 * domains in domain order, so results do not depend on timing or on the MPI library. */
#include "halox/halo.h"
#include "halox/io.h"
#include "halox/log.h"
#include "halox/md.h"
#include "core/error.h"
#include "core/rng.h"
#include "core/timer.h"
#include "io/json.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the thermostat's gamma and chi-square draws (generators in src/core/rng.h) ------- */

/* Gamma(shape a >= 1, scale 1), Marsaglia & Tsang 2000. */
static double rng_gamma(hx_rng *r, double a)
{
    double d = a - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        double x, v;
        do {
            x = hx_rng_normal(r);
            v = 1.0 + c * x;
        } while (v <= 0.0);
        v = v * v * v;
        double u = hx_rng_uniform_open(r);
        if (log(u) < 0.5 * x * x + d - d * v + d * log(v))
            return d * v;
    }
}

/* Sum of n squared standard normals. */
static double rng_chisq(hx_rng *r, double n)
{
    if (n <= 0)
        return 0.0;
    if (n < 2.0) {
        double s = 0.0;
        for (int i = 0; i < (int)n; i++) {
            double g = hx_rng_normal(r);
            s += g * g;
        }
        return s;
    }
    return 2.0 * rng_gamma(r, 0.5 * n);
}

void hx_md_params_default(hx_md_params *p)
{
    memset(p, 0, sizeof *p);
    p->dt = 0.002;
    p->steps = 0;
    p->rc = 1.0;
    p->rlist = 0.0;
    p->verlet_buffer_tolerance = 0.005;
    p->nstlist = 10;
    p->nstcheck = 10;
    p->eps_rf = 0.0;
    p->eps_r = 1.0;
    p->model = "spce";
    p->gen_temp = 300.0;
    p->seed = 1;
    p->thermostat = HX_THERMOSTAT_NONE;
    p->tau_t = 0.1;
    p->ref_t = 300.0;
}

hx_status hx_md_params_check(const hx_md_params *p, const hx_system *sys)
{
    HX_CHECK(p, HX_ERR_INVALID_ARG, "NULL parameters");
    HX_CHECK(p->dt > 0 && isfinite(p->dt), HX_ERR_INVALID_ARG,
             "time step dt = %g ps: must be positive (typically 0.002)", p->dt);
    HX_CHECK(p->steps >= 0, HX_ERR_INVALID_ARG, "steps = %lld: must be >= 0", p->steps);
    HX_CHECK(p->nstlist >= 1, HX_ERR_INVALID_ARG, "nstlist = %d: must be >= 1", p->nstlist);
    HX_CHECK(p->nstcheck >= 0, HX_ERR_INVALID_ARG,
             "nstcheck = %d: must be >= 0 (0: no missed-pair check)", p->nstcheck);
    HX_CHECK(p->rc > 0 && isfinite(p->rc), HX_ERR_INVALID_ARG, "cut-off rc = %g nm: must be > 0",
             p->rc);
    HX_CHECK(p->rlist == 0 || p->rlist >= p->rc, HX_ERR_INVALID_ARG,
             "rlist = %g nm is shorter than the cut-off rc = %g nm: use rlist >= rc (or leave it "
             "out to take it from the buffer tolerance)",
             p->rlist, p->rc);
    HX_CHECK(p->rlist != 0 || p->verlet_buffer_tolerance > 0, HX_ERR_INVALID_ARG,
             "give rlist or a positive buffer tolerance");
    HX_CHECK(p->eps_rf == 0 || p->eps_rf >= 1, HX_ERR_INVALID_ARG,
             "eps_rf = %g: use 0 (infinity) or a value >= 1", p->eps_rf);
    HX_CHECK(p->eps_r > 0, HX_ERR_INVALID_ARG, "eps_r = %g: must be > 0", p->eps_r);
    HX_CHECK(!p->gen_vel || p->gen_temp >= 0, HX_ERR_INVALID_ARG,
             "generation temperature %g K: must be >= 0", p->gen_temp);
    HX_CHECK(p->thermostat == HX_THERMOSTAT_NONE || (p->tau_t > 0 && p->ref_t >= 0),
             HX_ERR_INVALID_ARG, "v-rescale needs tau_t > 0 (%g) and ref_t >= 0 (%g)", p->tau_t,
             p->ref_t);
    HX_CHECK(p->nthreads >= 0, HX_ERR_INVALID_ARG, "threads = %d: must be >= 0", p->nthreads);
    HX_CHECK(p->nb_precision == HX_NB_DOUBLE || p->nb_precision == HX_NB_MIXED, HX_ERR_INVALID_ARG,
             "non-bonded precision %d: use double or mixed", p->nb_precision);
    if (sys) {
        double rmax = p->rlist > p->rc ? p->rlist : p->rc;
        for (int d = 0; d < 3; d++)
            HX_CHECK(rmax < 0.5 * sys->box[d], HX_ERR_INVALID_ARG,
                     "cut-off/pair-list radius %g nm is not below half the box edge %c = %g nm: "
                     "use a shorter cut-off or a larger box",
                     rmax, "xyz"[d], sys -> box[d]);
        HX_CHECK(sys->natoms > 0, HX_ERR_INVALID_ARG, "the system has no atoms");
    }
    return HX_OK;
}

/* ---- the engine --------------------------------------------------------------------------- */

/* One domain of this process. During an nstlist interval the home store is authoritative for
 * positions and velocities; the local arrays ([home | halo]) are rebuilt from it each step
 * (positions) or at each repartition (topology). */
typedef struct md_dom {
    hx_home home;
    int n_local, cap_local;
    double *x, *f;          /* [3 n_local] */
    int *gid, *mol;         /* [n_local] global atom and molecule index */
    int *type;              /* [n_local] */
    double *q;              /* [n_local] */
    double *xn, *vn, *invm; /* [3 n_home], [3 n_home], [n_home] */
    int *htype;             /* [n_home] types of home atoms (SETTLE) */
    int cap_home;
    hx_local_set set;
    hx_nb *nb;
    hx_settle *settle;
} md_dom;

struct hx_md {
    hx_md_params p;
    char model[16];
    hx_system *sys; /* global: topology, and positions as of the last gather */
    hx_forcefield *ff;
    int *mol_of; /* [natoms] global molecule index of each atom */
    hx_comm *comm;
    hx_comm *own_comm; /* created by hx_md_create */
    hx_dd *dd;
    hx_plan *plan;
    hx_halo *halo;
    int ndim;
    int nlocal;
    md_dom *dom;
    double **xptr, **fptr; /* per local domain, for the exchange calls */
    /* per-step reduction inputs of the local domains, allocated once: [lj, coulomb, ke_old] per
     * domain, ke_new per domain, constraint deviation bits per domain */
    double *red_part, *ke_part;
    long long *dev_part;
    int **gptr;
    double ndf;
    long long step;
    long long last_search;
    int energy_interval; /* potential energies only on multiples of this (0: every step) */
    hx_rng trng;
    hx_md_energies ener;
    hx_md_timings tm;
    long long last_missed;
    int rlist_auto;    /* rlist chosen from the buffer tolerance: some missed pairs are by design */
    int missed_warned; /* the missed-pair warning is given once per run */
    hx_md_dd_info info;
    int gathered_step_valid;
};

/* Kinetic energy of the home atoms. Threads sum fixed blocks of atoms and the block sums are
 * added in order: the result depends on the atom count only, not on the thread count. */
#define KE_MAX_BLOCKS 256
static double kinetic_home(const md_dom *d, const double *v, const double *m_global, int nthreads)
{
    const int n = d->home.natoms;
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
            double m = m_global[d->home.gid[a]];
            ke += 0.5 * m *
                  (v[3 * a] * v[3 * a] + v[3 * a + 1] * v[3 * a + 1] + v[3 * a + 2] * v[3 * a + 2]);
        }
        part[b] = ke;
    }
    double ke = 0.0;
    for (int b = 0; b < nb; b++)
        ke += part[b];
    return ke;
}

static double kinetic_global(const hx_system *s, const double *v)
{
    double ke = 0.0;
    for (int a = 0; a < s->natoms; a++)
        ke += 0.5 * s->m[a] *
              (v[3 * a] * v[3 * a] + v[3 * a + 1] * v[3 * a + 1] + v[3 * a + 2] * v[3 * a + 2]);
    return ke;
}

static void remove_com_velocity(hx_system *s)
{
    double p[3] = {0}, mt = 0;
    for (int a = 0; a < s->natoms; a++) {
        mt += s->m[a];
        for (int d = 0; d < 3; d++)
            p[d] += s->m[a] * s->v[3 * a + d];
    }
    for (int a = 0; a < s->natoms; a++)
        for (int d = 0; d < 3; d++)
            s->v[3 * a + d] -= p[d] / mt;
}

static void make_whole(hx_system *s)
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

/* Largest distance of an atom from its molecule's centre of geometry: molecules are assigned
 * whole by their centre, so the halo must reach this much further than rlist. */
static double max_molecule_radius(const hx_system *s)
{
    double rmax = 0.0;
    for (int k = 0; k < s->nmol; k++) {
        int a0 = s->mol_start[k], a1 = s->mol_start[k + 1];
        double c[3] = {0, 0, 0};
        for (int a = a0; a < a1; a++)
            for (int d = 0; d < 3; d++)
                c[d] += s->x[3 * a + d] / (a1 - a0);
        for (int a = a0; a < a1; a++) {
            double r2 = 0;
            for (int d = 0; d < 3; d++)
                r2 += (s->x[3 * a + d] - c[d]) * (s->x[3 * a + d] - c[d]);
            rmax = fmax(rmax, sqrt(r2));
        }
    }
    return rmax;
}

static hx_status grow_local(md_dom *d, int n)
{
    if (n <= d->cap_local)
        return HX_OK;
    int cap = d->cap_local ? d->cap_local : 256;
    while (cap < n)
        cap *= 2;
    double *x = realloc(d->x, 3 * (size_t)cap * sizeof *x);
    if (x)
        d->x = x;
    double *f = realloc(d->f, 3 * (size_t)cap * sizeof *f);
    if (f)
        d->f = f;
    int *g = realloc(d->gid, (size_t)cap * sizeof *g);
    if (g)
        d->gid = g;
    int *m = realloc(d->mol, (size_t)cap * sizeof *m);
    if (m)
        d->mol = m;
    int *t = realloc(d->type, (size_t)cap * sizeof *t);
    if (t)
        d->type = t;
    double *q = realloc(d->q, (size_t)cap * sizeof *q);
    if (q)
        d->q = q;
    HX_CHECK(x && f && g && m && t && q, HX_ERR_NOMEM, "out of memory for %d local atoms", cap);
    d->cap_local = cap;
    return HX_OK;
}

static hx_status grow_home(md_dom *d, int n)
{
    if (n <= d->cap_home)
        return HX_OK;
    int cap = d->cap_home ? d->cap_home : 256;
    while (cap < n)
        cap *= 2;
    double *xn = realloc(d->xn, 3 * (size_t)cap * sizeof *xn);
    if (xn)
        d->xn = xn;
    double *vn = realloc(d->vn, 3 * (size_t)cap * sizeof *vn);
    if (vn)
        d->vn = vn;
    double *im = realloc(d->invm, (size_t)cap * sizeof *im);
    if (im)
        d->invm = im;
    int *ht = realloc(d->htype, (size_t)cap * sizeof *ht);
    if (ht)
        d->htype = ht;
    HX_CHECK(xn && vn && im && ht, HX_ERR_NOMEM, "out of memory for %d home atoms", cap);
    d->cap_home = cap;
    return HX_OK;
}

/* Doubles >= 0 compare like their bit patterns as signed 64-bit integers, so a max over ranks
 * of non-negative doubles can use the integer reduction exactly. */
static long long dbits(double v)
{
    long long b;
    if (!(v >= 0.0))
        v = isnan(v) ? INFINITY : 0.0;
    memcpy(&b, &v, sizeof b);
    return b;
}

static double bitsd(long long b)
{
    double v;
    memcpy(&v, &b, sizeof v);
    return v;
}

/* Reduce the decomposition statistics over all domains. */
static hx_status update_dd_info(hx_md *md)
{
    long long *mx = calloc((size_t)md->nlocal * 4 + 4, sizeof *mx);
    double *sm = calloc((size_t)md->nlocal * 2 + 2, sizeof *sm);
    HX_CHECK(mx && sm, HX_ERR_NOMEM, "out of memory");
    for (int i = 0; i < md->nlocal; i++) {
        const hx_domain_plan *dp = hx_plan_domain(md->plan, i);
        long long halo = dp->n_local - dp->n_home;
        mx[4 * i + 0] = dp->n_home;
        mx[4 * i + 1] = -(long long)dp->n_home;
        mx[4 * i + 2] = halo;
        mx[4 * i + 3] = -halo;
        sm[2 * i + 0] = (double)halo;
        sm[2 * i + 1] = (double)hx_nb_npairs(md->dom[i].nb);
    }
    long long r[4];
    double t[2];
    hx_status st = hx_comm_max_i64(md->comm, mx, r, 4);
    if (st == HX_OK)
        st = hx_comm_sum_f64(md->comm, sm, t, 2);
    free(mx);
    free(sm);
    HX_TRY(st);
    md->info.home_max = r[0];
    md->info.home_min = -r[1];
    md->info.halo_max = r[2];
    md->info.halo_min = -r[3];
    md->info.halo_total = (long long)t[0];
    md->info.pairs_total = (long long)t[1];
    return HX_OK;
}

/* Repartition: molecules migrate to the domain of their centre, the halo plan is rebuilt, the
 * local topology (types, charges, molecule ids of halo atoms) is exchanged, and the pair lists
 * are rebuilt. With one domain nothing moves and the missed-pair check can compare lists. */
static hx_status repartition(hx_md *md, int first)
{
    double t0 = hx_wtime();
    hx_status st = HX_OK;
    if (!first) {
        hx_home **hp = malloc((size_t)md->nlocal * sizeof *hp);
        HX_CHECK(hp, HX_ERR_NOMEM, "out of memory");
        for (int i = 0; i < md->nlocal; i++)
            hp[i] = &md->dom[i].home;
        st = hx_migrate(md->dd, md->comm, hp, md->step);
        free(hp);
        HX_TRY(st);
    }
    int *nh = malloc((size_t)md->nlocal * sizeof *nh);
    const double **xh = malloc((size_t)md->nlocal * sizeof *xh);
    HX_CHECK(nh && xh, HX_ERR_NOMEM, "out of memory");
    for (int i = 0; i < md->nlocal; i++) {
        nh[i] = md->dom[i].home.natoms;
        xh[i] = md->dom[i].home.x;
    }
    st = hx_plan_build(md->plan, nh, xh);
    free(nh);
    free(xh);
    HX_TRY(st);
    if (!md->halo)
        HX_TRY(hx_halo_create(md->plan, md->comm, &md->halo));
    else
        HX_TRY(hx_halo_update(md->halo));
    const hx_system *s = md->sys;
    for (int i = 0; i < md->nlocal && st == HX_OK; i++) {
        md_dom *d = &md->dom[i];
        const hx_domain_plan *dp = hx_plan_domain(md->plan, i);
        st = grow_local(d, dp->n_local + 1);
        if (st == HX_OK)
            st = grow_home(d, d->home.natoms + 1);
        if (st != HX_OK)
            break;
        memcpy(d->gid, d->home.gid, (size_t)d->home.natoms * sizeof *d->gid);
        d->n_local = dp->n_local;
        md->gptr[i] = d->gid;
    }
    HX_TRY(hx_comm_agree(md->comm, st));
    HX_TRY(hx_halo_exchange_int(md->halo, md->gptr, 1));
    long long missed_total = 0;
    for (int i = 0; i < md->nlocal && st == HX_OK; i++) {
        md_dom *d = &md->dom[i];
        const hx_domain_plan *dp = hx_plan_domain(md->plan, i);
        for (int a = 0; a < d->n_local; a++) {
            int g = d->gid[a];
            d->type[a] = s->type[g];
            d->q[a] = s->q[g];
            d->mol[a] = md->mol_of[g];
        }
        for (int a = 0; a < d->home.natoms; a++) {
            d->invm[a] = 1.0 / s->m[d->home.gid[a]];
            d->htype[a] = s->type[d->home.gid[a]];
        }
        memcpy(d->x, d->home.x, 3 * (size_t)d->home.natoms * sizeof(double));
        md->xptr[i] = d->x;
        md->fptr[i] = d->f;
        d->set.n = d->n_local;
        d->set.x = d->x;
        d->set.type = d->type;
        d->set.q = d->q;
        d->set.mol = d->mol;
        d->set.nranges = dp->nranges;
        d->set.ranges = dp->ranges;
        d->set.ndim = dp->ndim;
        hx_dd_box(md->dd, d->set.box);
        int grid[3];
        hx_dd_grid(md->dd, grid);
        for (int k = 0; k < 3; k++)
            d->set.periodic[k] = grid[k] == 1;
        if (hx_forcefield_is_water(md->ff) && (first || md->ndim > 0)) {
            hx_settle_destroy(&d->settle);
            st = hx_settle_create_local(md->ff, d->home.nmol, d->home.mol_start, d->htype,
                                        &d->settle);
            if (st == HX_OK)
                hx_settle_set_threads(d->settle, md->p.nthreads);
        }
    }
    HX_TRY(hx_comm_agree(md->comm, st));
    /* Halo coordinates for the search (positions of this step). */
    HX_TRY(hx_halo_exchange_x(md->halo, (void *const *)md->xptr, HX_REAL_F64, HX_MEM_HOST, NULL));
    /* The count compares the positions of this step with the previous list: pairs now inside
     * rc that were beyond rlist when the list was built. It is an upper bound of the pairs the
     * list missed (a pair that entered during the last step is counted, though the new list is
     * used from this step on), and meaningless when the list is rebuilt every step. */
    const int check = !first && md->ndim == 0 && md->p.nstlist > 1 && md->p.nstcheck > 0 &&
                      md->step % ((long long)md->p.nstcheck * md->p.nstlist) == 0;
    for (int i = 0; i < md->nlocal && st == HX_OK; i++) {
        long long missed = 0;
        st = hx_nb_search(md->dom[i].nb, &md->dom[i].set, md->p.rlist, check, &missed);
        missed_total += missed;
    }
    HX_TRY(hx_comm_agree(md->comm, st));
    HX_TRY(update_dd_info(md));
    md->last_missed = check ? missed_total : -1;
    if (check) {
        md->tm.checked_searches++;
        md->tm.missed_pairs += missed_total;
        /* With rlist from the buffer tolerance a few pairs entering the cut-off unlisted are the
         * design (as in GROMACS): the tolerance bounds the energy drift they cause. With an
         * explicit rlist the user is told once; every count is a debug line, and the log's
         * summary has the total. */
        if (missed_total > 0 && !md->rlist_auto && !md->missed_warned) {
            md->missed_warned = 1;
            hx_log(HX_LOG_WARN,
                   "step %lld: %lld pairs inside the cut-off were missing from the pair list "
                   "used since the previous search (rlist %.4f nm, nstlist %d); they add energy "
                   "drift: increase rlist, lower nstlist, or leave rlist out to choose it from "
                   "the buffer tolerance (later counts: HALOX_LOG=debug; the total is in the log)",
                   md->step, missed_total, md->p.rlist, md->p.nstlist);
        } else if (missed_total > 0) {
            hx_log(HX_LOG_DEBUG,
                   "step %lld: %lld pairs inside the cut-off were missing from the pair list",
                   md->step, missed_total);
        }
    } else if (md->ndim > 0) {
        md->tm.missed_pairs = -1;
    }
    md->tm.searches++;
    md->last_search = md->step;
    md->tm.search += hx_wtime() - t0;
    return HX_OK;
}

static void md_free(hx_md *md)
{
    if (!md)
        return;
    for (int i = 0; md->dom && i < md->nlocal; i++) {
        md_dom *d = &md->dom[i];
        hx_home_free(&d->home);
        free(d->x);
        free(d->f);
        free(d->gid);
        free(d->mol);
        free(d->type);
        free(d->q);
        free(d->xn);
        free(d->vn);
        free(d->invm);
        free(d->htype);
        hx_nb_destroy(&d->nb);
        hx_settle_destroy(&d->settle);
    }
    free(md->dom);
    free(md->xptr);
    free(md->fptr);
    free(md->red_part);
    free(md->ke_part);
    free(md->dev_part);
    free(md->gptr);
    hx_halo_destroy(&md->halo);
    hx_plan_destroy(&md->plan);
    hx_dd_destroy(&md->dd);
    hx_system_destroy(&md->sys);
    hx_forcefield_destroy(&md->ff);
    free(md->mol_of);
    hx_comm_destroy(&md->own_comm);
    free(md);
}

void hx_md_destroy(hx_md **mdp)
{
    if (!mdp || !*mdp)
        return;
    md_free(*mdp);
    *mdp = NULL;
}

/* Everything that is the same on every rank: force field, whole molecules, a constrained
 * start, velocities, the pair-list radius. Done on the global system, identically everywhere,
 * so that the decomposition cannot change the starting state. */
static hx_status prepare_global(hx_md *md, const hx_system *sys, const hx_md_params *p)
{
    md->p = *p;
    snprintf(md->model, sizeof md->model, "%s", p->model ? p->model : "spce");
    md->p.model = md->model;
    HX_TRY(hx_system_copy(sys, &md->sys));
    HX_TRY(hx_forcefield_create(md->model, &md->ff));
    HX_TRY(hx_forcefield_apply(md->ff, md->sys));
    hx_system *s = md->sys;
    size_t n = (size_t)s->natoms;
    md->mol_of = malloc((n + 1) * sizeof *md->mol_of);
    double *xn = malloc((3 * n + 1) * sizeof *xn);
    if (!md->mol_of || !xn) {
        free(xn);
        HX_FAIL(HX_ERR_NOMEM, "out of memory for %zu atoms", n);
    }
    for (int k = 0; k < s->nmol; k++)
        for (int a = s->mol_start[k]; a < s->mol_start[k + 1]; a++)
            md->mol_of[a] = k;
    if (!p->continuation)
        make_whole(s); /* a continuation's molecules are whole already, bit for bit */
    md->ndf = hx_forcefield_ndf(md->ff, s);
    hx_status st = HX_OK;
    hx_settle *settle = NULL;
    if (p->continuation) {
        /* a running state: exactly as it was written */
        HX_CHECK(md->p.rlist > 0, HX_ERR_INVALID_ARG,
                 "a continuation needs the pair-list radius of the original run");
        free(xn);
        return hx_md_params_check(&md->p, s);
    }
    if (hx_forcefield_is_water(md->ff)) {
        HX_TRY_GOTO(st, hx_settle_create(md->ff, s, &settle), out);
        /* constrain the starting structure (a .gro keeps 3 decimals only) */
        memcpy(xn, s->x, 3 * n * sizeof(double));
        HX_TRY_GOTO(st, hx_settle_apply(settle, s->x, xn, NULL, p->dt, 0), out);
        memcpy(s->x, xn, 3 * n * sizeof(double));
    }
    if (p->gen_vel) {
        hx_rng r;
        hx_rng_seed(&r, p->seed, 1);
        for (size_t a = 0; a < n; a++) {
            double sd = sqrt(HX_BOLTZ * p->gen_temp / s->m[a]);
            for (int d = 0; d < 3; d++)
                s->v[3 * a + d] = sd * hx_rng_normal(&r);
        }
        s->has_velocities = 1;
    }
    if (s->has_velocities) {
        remove_com_velocity(s);
        if (settle) {
            /* drop velocity components along the bonds: constrain x + v dt */
            for (size_t k = 0; k < 3 * n; k++)
                xn[k] = s->x[k] + s->v[k] * p->dt;
            HX_TRY_GOTO(st, hx_settle_apply(settle, s->x, xn, s->v, p->dt, 0), out);
        }
        if (p->gen_vel) {
            double t_now = 2.0 * kinetic_global(s, s->v) / (md->ndf * HX_BOLTZ);
            double scale = t_now > 0 ? sqrt(p->gen_temp / t_now) : 0.0;
            for (size_t k = 0; k < 3 * n; k++)
                s->v[k] *= scale;
        }
    }
    if (md->p.rlist == 0) {
        md->rlist_auto = 1;
        hx_nb_params nbp = {.rc = p->rc, .eps_rf = p->eps_rf, .eps_r = p->eps_r};
        double t_est = 2.0 * kinetic_global(s, s->v) / (md->ndf * HX_BOLTZ);
        if (p->thermostat != HX_THERMOSTAT_NONE && p->ref_t > t_est)
            t_est = p->ref_t;
        if (t_est <= 0)
            t_est = 300.0; /* a cold start heats up; assume room temperature */
        HX_TRY_GOTO(st,
                    hx_nb_rlist_from_tolerance(md->ff, s, &nbp, p->dt, p->nstlist, t_est,
                                               p->verlet_buffer_tolerance, &md->p.rlist),
                    out);
    }
    HX_TRY_GOTO(st, hx_md_params_check(&md->p, s), out);
out:
    hx_settle_destroy(&settle);
    free(xn);
    return st;
}

/* Home molecules of each local domain, by centre of geometry (molecules put in the box). */
static hx_status distribute(hx_md *md)
{
    const hx_system *s = md->sys;
    for (int i = 0; i < md->nlocal; i++) {
        md_dom *d = &md->dom[i];
        int me = hx_comm_local_domain(md->comm, i);
        int na = 0, nm = 0;
        for (int k = 0; k < s->nmol; k++) {
            double c[3] = {0, 0, 0};
            int a0 = s->mol_start[k], a1 = s->mol_start[k + 1];
            for (int a = a0; a < a1; a++)
                for (int dd = 0; dd < 3; dd++)
                    c[dd] += s->x[3 * a + dd] / (a1 - a0);
            if (hx_dd_domain_of_point(md->dd, c) != me)
                continue;
            if (na + (a1 - a0) > d->home.cap_atoms || nm + 2 > d->home.cap_mol) {
                int ca = d->home.cap_atoms ? 2 * d->home.cap_atoms : 1024;
                int cm = d->home.cap_mol ? 2 * d->home.cap_mol : 512;
                int *g = realloc(d->home.gid, (size_t)ca * sizeof *g);
                double *x = g ? realloc(d->home.x, 3 * (size_t)ca * sizeof *x) : NULL;
                double *v = x ? realloc(d->home.v, 3 * (size_t)ca * sizeof *v) : NULL;
                if (g)
                    d->home.gid = g;
                if (x)
                    d->home.x = x;
                if (v)
                    d->home.v = v;
                int *ms = realloc(d->home.mol_start, (size_t)cm * sizeof *ms);
                if (ms)
                    d->home.mol_start = ms;
                int *mg = ms ? realloc(d->home.mol_gid, (size_t)cm * sizeof *mg) : NULL;
                if (mg)
                    d->home.mol_gid = mg;
                HX_CHECK(g && x && v && ms && mg, HX_ERR_NOMEM, "out of memory");
                d->home.cap_atoms = ca;
                d->home.cap_mol = cm;
            }
            d->home.mol_start[nm] = na;
            d->home.mol_gid[nm] = k;
            nm++;
            for (int a = a0; a < a1; a++, na++) {
                d->home.gid[na] = a;
                memcpy(&d->home.x[3 * na], &s->x[3 * a], 3 * sizeof(double));
                memcpy(&d->home.v[3 * na], &s->v[3 * a], 3 * sizeof(double));
            }
        }
        /* an empty domain still gets (small) arrays, so that no copy ever sees NULL */
        if (!d->home.mol_start) {
            d->home.mol_start = malloc(sizeof(int));
            d->home.mol_gid = malloc(sizeof(int));
            HX_CHECK(d->home.mol_start && d->home.mol_gid, HX_ERR_NOMEM, "out of memory");
            d->home.cap_mol = 1;
        }
        if (!d->home.gid) {
            d->home.gid = malloc(sizeof(int));
            d->home.x = malloc(3 * sizeof(double));
            d->home.v = malloc(3 * sizeof(double));
            HX_CHECK(d->home.gid && d->home.x && d->home.v, HX_ERR_NOMEM, "out of memory");
            d->home.cap_atoms = 1;
        }
        d->home.natoms = na;
        d->home.nmol = nm;
        d->home.mol_start[nm] = na;
    }
    return HX_OK;
}

hx_status hx_md_create_dd(const hx_system *sys, const hx_md_params *p, hx_comm *comm,
                          const int grid[3], hx_md **out)
{
    HX_CHECK(sys && p && comm && out, HX_ERR_INVALID_ARG, "hx_md_create_dd: NULL argument");
    *out = NULL;
    HX_TRY(hx_md_params_check(p, sys));
    hx_md *md = calloc(1, sizeof *md);
    HX_CHECK(md, HX_ERR_NOMEM, "out of memory");
    md->comm = comm;
    hx_status st = prepare_global(md, sys, p);
    st = hx_comm_agree(comm, st);
    if (st != HX_OK)
        goto fail;
    hx_wrap_molecules(md->sys->x, md->sys->mol_start, md->sys->nmol, md->sys->box);
    /* Decomposition: r_comm = rlist + the largest molecule radius. */
    int g[3] = {grid ? grid[0] : 0, grid ? grid[1] : 0, grid ? grid[2] : 0};
    double r_comm = md->p.rlist + max_molecule_radius(md->sys);
    int nd = hx_comm_ndomains(comm);
    if (g[0] <= 0 || g[1] <= 0 || g[2] <= 0) {
        HX_TRY_GOTO(st, hx_dd_choose_grid(md->sys->box, r_comm, md->p.rc, nd, g), fail);
    } else if (g[0] * g[1] * g[2] != nd) {
        st = hx_error_set(HX_ERR_INVALID_ARG, __FILE__, __LINE__, __func__,
                          "the domain grid %dx%dx%d has %d domains but the job has %d ranks: "
                          "give a grid whose product is %d, or leave --dd out to choose one",
                          g[0], g[1], g[2], g[0] * g[1] * g[2], nd, nd);
        goto fail;
    }
    hx_dd_params dp = {
        {md->sys->box[0], md->sys->box[1], md->sys->box[2]}, {g[0], g[1], g[2]}, r_comm, md->p.rc};
    HX_TRY_GOTO(st, hx_dd_create(&dp, &md->dd), fail);
    md->ndim = hx_dd_ndim(md->dd, NULL);
    for (int d = 0; d < 3; d++) {
        md->info.grid[d] = g[d];
        md->info.pulses[d] = hx_dd_pulses_dim(md->dd, d);
        md->info.cell[d] = hx_dd_cell_size(md->dd, d);
    }
    md->info.r_comm = r_comm;
    HX_TRY_GOTO(st, hx_plan_create(md->dd, comm, &md->plan), fail);
    md->nlocal = hx_comm_nlocal(comm);
    md->dom = calloc((size_t)md->nlocal, sizeof *md->dom);
    md->xptr = calloc((size_t)md->nlocal, sizeof *md->xptr);
    md->fptr = calloc((size_t)md->nlocal, sizeof *md->fptr);
    md->gptr = calloc((size_t)md->nlocal, sizeof *md->gptr);
    md->red_part = calloc(3 * (size_t)md->nlocal, sizeof *md->red_part);
    md->ke_part = calloc((size_t)md->nlocal, sizeof *md->ke_part);
    md->dev_part = calloc((size_t)md->nlocal, sizeof *md->dev_part);
    if (!md->dom || !md->xptr || !md->fptr || !md->gptr || !md->red_part || !md->ke_part ||
        !md->dev_part)
        HX_FAIL_GOTO(st, HX_ERR_NOMEM, fail, "out of memory");
    hx_nb_params nbp = {.rc = md->p.rc, .eps_rf = md->p.eps_rf, .eps_r = md->p.eps_r};
    st = HX_OK;
    for (int i = 0; i < md->nlocal && st == HX_OK; i++) {
        st = hx_nb_create(md->ff, &nbp, p->nthreads, &md->dom[i].nb);
        if (st == HX_OK)
            st = hx_nb_set_precision(md->dom[i].nb, (hx_nb_precision)p->nb_precision);
    }
    if (st == HX_OK)
        st = distribute(md);
    HX_TRY_GOTO(st, hx_comm_agree(comm, st), fail);
    md->p.nthreads = hx_nb_nthreads(md->dom[0].nb);
    hx_rng_seed(&md->trng, p->seed, 2);
    if (p->continuation) {
        md->step = p->start_step;
        if (p->has_rng_state)
            memcpy(md->trng.s, p->rng_state, sizeof md->trng.s);
    }
    HX_TRY_GOTO(st, repartition(md, 1), fail);
    md->gathered_step_valid = 1;
    *out = md;
    return HX_OK;
fail:
    md_free(md);
    return st;
}

hx_status hx_md_create(const hx_system *sys, const hx_md_params *p, hx_md **out)
{
    HX_CHECK(sys && p && out, HX_ERR_INVALID_ARG, "hx_md_create: NULL argument");
    hx_comm *c = NULL;
    HX_TRY(hx_comm_create_serial(1, &c));
    static const int one[3] = {1, 1, 1};
    hx_status st = hx_md_create_dd(sys, p, c, one, out);
    if (st != HX_OK) {
        hx_comm_destroy(&c);
        return st;
    }
    (*out)->own_comm = c;
    return HX_OK;
}

/* Bussi v-rescale factor for kinetic energy ke over the step dt. */
static double vrescale_lambda(hx_md *md, double ke)
{
    if (ke <= 0)
        return 1.0;
    double kt = 0.5 * md->ndf * HX_BOLTZ * md->p.ref_t;
    double c = exp(-md->p.dt / md->p.tau_t);
    double r1 = hx_rng_normal(&md->trng);
    double sr = rng_chisq(&md->trng, md->ndf - 1.0);
    double knew = ke + (1.0 - c) * (kt * (r1 * r1 + sr) / md->ndf - ke) +
                  2.0 * r1 * sqrt(c * (1.0 - c) * kt * ke / md->ndf);
    return knew > 0 ? sqrt(knew / ke) : 0.0;
}

static hx_status do_step(hx_md *md, int commit)
{
    const double dt = md->p.dt;
    const int nl = md->nlocal;
    hx_status st = HX_OK;
    if (md->step % md->p.nstlist == 0 && md->step != md->last_search)
        HX_TRY(repartition(md, 0));
    /* The schedule of a GPU-resident step, on the CPU: home-home pairs need only home
     * coordinates, so they are computed before the halo arrives; then the halo, the pairs that
     * involve halo atoms, and the forces back to their owners. */
    double t0 = hx_wtime();
    /* per local domain: [lj, coulomb, ke_old] for the ordered reduction */
    double *part = md->red_part;
    /* Energies cost 20-25% of the kernel; hx_md_run asks for them only on output steps. */
    const int want_e = !commit || md->energy_interval <= 0 || md->step % md->energy_interval == 0;
    for (int i = 0; i < nl && st == HX_OK; i++) {
        hx_nb_energies e = {0.0, 0.0};
        memcpy(md->dom[i].x, md->dom[i].home.x,
               3 * (size_t)md->dom[i].home.natoms * sizeof(double));
        st = hx_nb_compute_part(md->dom[i].nb, &md->dom[i].set, md->dom[i].f, want_e ? &e : NULL,
                                md->step, HX_NB_LOCAL);
        part[3 * i + 0] = e.lj;
        part[3 * i + 1] = e.coulomb;
    }
    double t1 = hx_wtime();
    md->tm.nb_local += t1 - t0;
    /* The exchanges run even after a local failure: the neighbours are waiting for them, and
     * the agreement after the force exchange tells every rank. */
    hx_status st_x =
        hx_halo_exchange_x(md->halo, (void *const *)md->xptr, HX_REAL_F64, HX_MEM_HOST, NULL);
    if (st == HX_OK)
        st = st_x;
    double t2 = hx_wtime();
    md->tm.halo_x += t2 - t1;
    for (int i = 0; i < nl && st == HX_OK && md->ndim > 0; i++) {
        hx_nb_energies e = {0.0, 0.0};
        st = hx_nb_compute_part(md->dom[i].nb, &md->dom[i].set, md->dom[i].f, want_e ? &e : NULL,
                                md->step, HX_NB_NONLOCAL);
        part[3 * i + 0] += e.lj;
        part[3 * i + 1] += e.coulomb;
    }
    double t3 = hx_wtime();
    md->tm.nb_nonlocal += t3 - t2;
    st_x = hx_halo_exchange_f(md->halo, (void *const *)md->fptr, HX_REAL_F64, HX_MEM_HOST, NULL);
    if (st == HX_OK)
        st = st_x;
    md->tm.halo_f += hx_wtime() - t3;
    HX_TRY(hx_comm_agree(md->comm, st));
    for (int i = 0; i < nl; i++)
        part[3 * i + 2] = kinetic_home(&md->dom[i], md->dom[i].home.v, md->sys->m, md->p.nthreads);
    double red[3];
    double t4 = hx_wtime();
    st = hx_comm_sum_f64(md->comm, part, red, 3);
    md->tm.reduce += hx_wtime() - t4;
    HX_TRY(st);
    const double ke_old = red[2];
    double lambda = md->p.thermostat == HX_THERMOSTAT_VRESCALE ? vrescale_lambda(md, ke_old) : 1.0;
    double t5 = hx_wtime();
    double *ke_new_part = md->ke_part;
    long long *dev_part = md->dev_part;
    for (int i = 0; i < nl && st == HX_OK; i++) {
        md_dom *d = &md->dom[i];
        const int n = d->home.natoms;
        const double *restrict x = d->home.x, *restrict v = d->home.v, *restrict f = d->f;
        double *restrict xn = d->xn, *restrict vn = d->vn;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(md->p.nthreads)
#endif
        for (int a = 0; a < n; a++) {
            double im = d->invm[a] * dt;
            for (int k = 0; k < 3; k++) {
                int j = 3 * a + k;
                vn[j] = lambda * v[j] + f[j] * im;
                xn[j] = x[j] + vn[j] * dt;
            }
        }
        if (d->settle && d->home.nmol > 0)
            st = hx_settle_apply(d->settle, x, xn, vn, dt, md->step);
        ke_new_part[i] = kinetic_home(d, vn, md->sys->m, md->p.nthreads);
        /* the constraint deviation is reported with the energies: measured only then */
        dev_part[i] =
            dbits(want_e && d->settle && n > 0 ? hx_settle_deviation(d->settle, xn) : 0.0);
    }
    st = hx_comm_agree(md->comm, st);
    double ke_new = 0;
    long long dev = 0;
    if (st == HX_OK) {
        double t6 = hx_wtime();
        st = hx_comm_sum_f64(md->comm, ke_new_part, &ke_new, 1);
        if (st == HX_OK && want_e)
            st = hx_comm_max_i64(md->comm, dev_part, &dev, 1);
        double t7 = hx_wtime();
        md->tm.reduce += t7 - t6;
        t5 += t7 - t6; /* keep the reduction out of the update time */
    }
    HX_TRY(st);
    md->ener.step = md->step;
    md->ener.time = md->step * dt;
    md->ener.lj = want_e ? red[0] : NAN;
    md->ener.coulomb = want_e ? red[1] : NAN;
    md->ener.potential = want_e ? red[0] + red[1] : NAN;
    md->ener.kinetic = 0.5 * (ke_old + ke_new);
    md->ener.total = md->ener.potential + md->ener.kinetic;
    md->ener.temperature = 2.0 * md->ener.kinetic / (md->ndf * HX_BOLTZ);
    md->ener.constraint_deviation = want_e ? bitsd(dev) : NAN;
    HX_CHECK(isfinite(md->ener.kinetic) && (!want_e || isfinite(md->ener.potential)),
             HX_ERR_PHYSICS,
             "step %lld: non-finite energy (kinetic %g, potential %g): the system blew up; use a "
             "smaller time step or check the starting structure",
             md->step, md->ener.kinetic, md->ener.potential);
    if (commit) {
        for (int i = 0; i < nl; i++) {
            md_dom *d = &md->dom[i];
            memcpy(d->home.x, d->xn, 3 * (size_t)d->home.natoms * sizeof(double));
            memcpy(d->home.v, d->vn, 3 * (size_t)d->home.natoms * sizeof(double));
        }
        md->step++;
        md->tm.steps++;
        md->gathered_step_valid = 0;
    }
    md->tm.update += hx_wtime() - t5;
    return HX_OK;
}

hx_status hx_md_step(hx_md *md)
{
    HX_CHECK(md, HX_ERR_INVALID_ARG, "hx_md_step: NULL engine");
    return do_step(md, 1);
}

hx_status hx_md_evaluate(hx_md *md)
{
    HX_CHECK(md, HX_ERR_INVALID_ARG, "hx_md_evaluate: NULL engine");
    return do_step(md, 0);
}

hx_status hx_md_gather(hx_md *md)
{
    HX_CHECK(md, HX_ERR_INVALID_ARG, "hx_md_gather: NULL engine");
    if (md->gathered_step_valid)
        return HX_OK;
    const int nl = md->nlocal;
    /* Records of (gid, x, v) as doubles: 7 per atom. */
    double **rec = calloc((size_t)nl, sizeof *rec);
    size_t *bytes = calloc((size_t)nl, sizeof *bytes);
    HX_CHECK(rec && bytes, HX_ERR_NOMEM, "out of memory");
    hx_status st = HX_OK;
    for (int i = 0; i < nl && st == HX_OK; i++) {
        const hx_home *h = &md->dom[i].home;
        rec[i] = malloc((size_t)h->natoms * 7 * sizeof(double) + 8);
        if (!rec[i]) {
            st = hx_error_set(HX_ERR_NOMEM, __FILE__, __LINE__, __func__, "out of memory");
            break;
        }
        for (int a = 0; a < h->natoms; a++) {
            rec[i][7 * a] = h->gid[a];
            memcpy(&rec[i][7 * a + 1], &h->x[3 * a], 3 * sizeof(double));
            memcpy(&rec[i][7 * a + 4], &h->v[3 * a], 3 * sizeof(double));
        }
        bytes[i] = (size_t)h->natoms * 7 * sizeof(double);
    }
    st = hx_comm_agree(md->comm, st);
    void *all = NULL;
    size_t *counts = calloc((size_t)hx_comm_ndomains(md->comm), sizeof *counts);
    if (st == HX_OK && !counts)
        st = hx_error_set(HX_ERR_NOMEM, __FILE__, __LINE__, __func__, "out of memory");
    if (st == HX_OK)
        st = hx_comm_gather_bytes(md->comm, (const void *const *)rec, bytes, &all, counts);
    size_t total = 0;
    for (int d = 0; all && d < hx_comm_ndomains(md->comm); d++)
        total += counts[d];
    free(counts);
    if (st == HX_OK && all && total != (size_t)md->sys->natoms * 7 * sizeof(double))
        st = hx_error_set(HX_ERR_INTERNAL, __FILE__, __LINE__, __func__,
                          "gathered %zu atoms from the domains, the system has %d",
                          total / (7 * sizeof(double)), md->sys->natoms);
    if (st == HX_OK && all) {
        /* On the root: every domain's records, in domain order. */
        const double *r = all;
        size_t nrec = total / (7 * sizeof(double));
        for (size_t k = 0; k < nrec; k++) {
            int g = (int)r[7 * k];
            memcpy(&md->sys->x[3 * g], &r[7 * k + 1], 3 * sizeof(double));
            memcpy(&md->sys->v[3 * g], &r[7 * k + 4], 3 * sizeof(double));
        }
        md->sys->has_velocities = 1;
    }
    free(all);
    for (int i = 0; i < nl; i++)
        free(rec[i]);
    free(rec);
    free(bytes);
    HX_TRY(st);
    md->gathered_step_valid = 1;
    return HX_OK;
}

void hx_md_get_rng_state(const hx_md *md, uint64_t state[4])
{
    memcpy(state, md->trng.s, sizeof md->trng.s);
}

void hx_md_get_dd_info(const hx_md *md, hx_md_dd_info *info)
{
    *info = md->info;
}

int hx_md_is_root(const hx_md *md)
{
    return hx_comm_rank(md->comm) == 0;
}

/* The JSON is written by src/io/json.c (cJSON, exact numbers, null for non-finite values). */
void hx_md_energies_json(const hx_md_energies *e, char *buf, size_t len)
{
    char *text = NULL;
    if (!buf || len == 0)
        return;
    buf[0] = '\0';
    if (hx_json_energies(e, &text) == HX_OK && strlen(text) < len)
        memcpy(buf, text, strlen(text) + 1);
    cJSON_free(text);
}

static hx_status write_outputs(hx_md *md, const hx_md_output *out, int energy_now)
{
    double t0 = hx_wtime();
    if (out && out->energy && energy_now) {
        char *line = NULL;
        HX_TRY(hx_json_energies(&md->ener, &line));
        int ok = fprintf(out->energy, "%s\n", line) > 0;
        cJSON_free(line);
        HX_CHECK(ok, HX_ERR_IO, "step %lld: writing the energy file failed (disk full?)",
                 md->ener.step);
    }
    md->tm.output += hx_wtime() - t0;
    return HX_OK;
}

hx_status hx_md_run(hx_md *md, const hx_md_output *out)
{
    HX_CHECK(md, HX_ERR_INVALID_ARG, "hx_md_run: NULL engine");
    const long long nsteps = md->step + md->p.steps;
    const long long first = md->step;
    /* the timings describe this run only (creation did a first repartition already) */
    double *times[] = {&md->tm.nb_local, &md->tm.nb_nonlocal, &md->tm.halo_x,
                       &md->tm.halo_f,   &md->tm.search,      &md->tm.update,
                       &md->tm.reduce,   &md->tm.output,      &md->tm.total};
    for (size_t k = 0; k < sizeof times / sizeof times[0]; k++)
        *times[k] = 0.0;
    md->energy_interval = out && out->nstenergy > 0 ? out->nstenergy : INT_MAX;
    double start = hx_wtime(), last_report = start;
    for (;;) {
        long long s = md->step;
        if (out && out->step_hook)
            HX_TRY(out->step_hook(out->user, md, s));
        if (out && out->nstxout > 0 && s % out->nstxout == 0) {
            double t0 = hx_wtime();
            HX_TRY(hx_md_gather(md));
            if (out->traj)
                HX_TRY(hx_gro_write_frame(out->traj, md->sys, s * md->p.dt, s, 0));
            md->tm.output += hx_wtime() - t0;
        }
        int last = (s == nsteps);
        if (last)
            HX_TRY(hx_md_evaluate(md));
        else
            HX_TRY(hx_md_step(md));
        int nste = out ? out->nstenergy : 0;
        HX_TRY(write_outputs(md, out, (nste > 0 && s % nste == 0) || last));
        if (last)
            break;
        double now = hx_wtime();
        if (out && out->progress && out->progress_interval > 0 &&
            now - last_report >= out->progress_interval) {
            last_report = now;
            double per_step = (now - start) / (double)(md->step - first);
            double nsday = md->p.dt * 1e-3 * 86400.0 / per_step;
            out->progress(out->user, md->step, nsteps, nsday, per_step * (nsteps - md->step));
        }
    }
    md->tm.total += hx_wtime() - start;
    md->energy_interval = 0;
    return HX_OK;
}

const hx_md_energies *hx_md_last_energies(const hx_md *md)
{
    return &md->ener;
}

const hx_system *hx_md_system(const hx_md *md)
{
    /* the single-domain engine has nobody to gather from: keep the copy current */
    if (!md->gathered_step_valid && md->own_comm)
        hx_md_gather((hx_md *)md);
    return md->sys;
}

const hx_md_params *hx_md_get_params(const hx_md *md)
{
    return &md->p;
}

double hx_md_ndf(const hx_md *md)
{
    return md->ndf;
}

long long hx_md_current_step(const hx_md *md)
{
    return md->step;
}

long long hx_md_last_missed(const hx_md *md)
{
    return md->last_missed;
}

long long hx_md_npairs(const hx_md *md)
{
    return md->info.pairs_total;
}

void hx_md_get_timings(const hx_md *md, hx_md_timings *t)
{
    *t = md->tm;
}
