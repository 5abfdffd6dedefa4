/* The single-domain engine: leap-frog + SETTLE, pair list refreshed every nstlist steps,
 * optional v-rescale thermostat (Bussi, Donadio, Parrinello 2007).
 *
 * Step t (hx_md_step): search if t is a multiple of nstlist (t > 0: the create call searched),
 * forces at x(t), v(t+dt/2) = lambda v(t-dt/2) + f/m dt, x(t+dt) = x(t) + v dt, SETTLE, then
 * v = (x(t+dt) - x(t)) / dt. The kinetic energy of step t is the average of the two half-step
 * kinetic energies (as GROMACS's leap-frog reports it). lambda is 1 in NVE; with v-rescale it is
 * drawn from the half-step kinetic energy before the update. */
#include "halox/io.h"
#include "halox/log.h"
#include "halox/md.h"
#include "core/error.h"
#include "core/timer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- a small RNG of our own (xoshiro256** seeded by splitmix64), stream per purpose ------- */

typedef struct md_rng {
    uint64_t s[4];
} md_rng;

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void rng_seed(md_rng *r, uint64_t seed, uint64_t stream)
{
    uint64_t x = seed ^ (stream * 0xd1342543de82ef95ULL);
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix(&x);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(md_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

static double rng_uniform(md_rng *r) /* (0, 1) */
{
    return ((double)(rng_next(r) >> 11) + 0.5) * 0x1.0p-53;
}

static double rng_normal(md_rng *r)
{
    double u1 = rng_uniform(r), u2 = rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

/* Gamma(shape a >= 1, scale 1), Marsaglia & Tsang 2000. */
static double rng_gamma(md_rng *r, double a)
{
    double d = a - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        double x, v;
        do {
            x = rng_normal(r);
            v = 1.0 + c * x;
        } while (v <= 0.0);
        v = v * v * v;
        double u = rng_uniform(r);
        if (log(u) < 0.5 * x * x + d - d * v + d * log(v))
            return d * v;
    }
}

/* Sum of n squared standard normals. */
static double rng_chisq(md_rng *r, double n)
{
    if (n <= 0)
        return 0.0;
    if (n < 2.0) {
        double s = 0.0;
        for (int i = 0; i < (int)n; i++) {
            double g = rng_normal(r);
            s += g * g;
        }
        return s;
    }
    return 2.0 * rng_gamma(r, 0.5 * n);
}

/* ---- the engine --------------------------------------------------------------------------- */

struct hx_md {
    hx_md_params p;
    char model[16];
    hx_system *sys;
    hx_forcefield *ff;
    hx_nb *nb;
    hx_settle *settle;
    int *mol;
    hx_zone_range range;
    hx_local_set set;
    double *f, *xn, *vn, *invm;
    double ndf;
    long long step;
    md_rng trng;
    hx_md_energies ener;
    hx_md_timings tm;
    long long last_missed;
};

void hx_md_params_default(hx_md_params *p)
{
    memset(p, 0, sizeof *p);
    p->dt = 0.002;
    p->steps = 0;
    p->rc = 1.0;
    p->rlist = 0.0;
    p->verlet_buffer_tolerance = 0.005;
    p->nstlist = 10;
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

static double kinetic(const hx_md *md, const double *v)
{
    double ke = 0.0;
    for (int a = 0; a < md->sys->natoms; a++) {
        double m = md->sys->m[a];
        ke += 0.5 * m *
              (v[3 * a] * v[3 * a] + v[3 * a + 1] * v[3 * a + 1] + v[3 * a + 2] * v[3 * a + 2]);
    }
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

static hx_status search(hx_md *md, int check)
{
    double t0 = hx_wtime();
    long long missed = 0;
    HX_TRY(hx_nb_search(md->nb, &md->set, md->p.rlist, check, &missed));
    md->last_missed = missed;
    md->tm.missed_pairs += missed;
    md->tm.searches++;
    if (missed > 0)
        hx_log(HX_LOG_WARN,
               "step %lld: %lld pairs inside the cut-off were missing from the pair list used "
               "since the previous search (rlist %.4f nm, nstlist %d): increase rlist or lower "
               "nstlist",
               md->step, missed, md->p.rlist, md->p.nstlist);
    else
        hx_log(HX_LOG_DEBUG, "step %lld: pair search, %lld pairs, 0 missed", md->step,
               hx_nb_npairs(md->nb));
    md->tm.search += hx_wtime() - t0;
    return HX_OK;
}

hx_status hx_md_create(const hx_system *sys, const hx_md_params *p, hx_md **out)
{
    HX_CHECK(sys && p && out, HX_ERR_INVALID_ARG, "hx_md_create: NULL argument");
    *out = NULL;
    HX_TRY(hx_md_params_check(p, sys));
    hx_status st = HX_OK;
    hx_md *md = calloc(1, sizeof *md);
    HX_CHECK(md, HX_ERR_NOMEM, "out of memory");
    md->p = *p;
    snprintf(md->model, sizeof md->model, "%s", p->model ? p->model : "spce");
    md->p.model = md->model;
    HX_TRY_GOTO(st, hx_system_copy(sys, &md->sys), fail);
    HX_TRY_GOTO(st, hx_forcefield_create(md->model, &md->ff), fail);
    HX_TRY_GOTO(st, hx_forcefield_apply(md->ff, md->sys), fail);
    hx_system *s = md->sys;
    size_t n = (size_t)s->natoms;
    md->mol = malloc(n * sizeof *md->mol);
    md->f = calloc(3 * n, sizeof *md->f);
    md->xn = calloc(3 * n, sizeof *md->xn);
    md->vn = calloc(3 * n, sizeof *md->vn);
    md->invm = calloc(n, sizeof *md->invm);
    if (!md->mol || !md->f || !md->xn || !md->vn || !md->invm)
        HX_FAIL_GOTO(st, HX_ERR_NOMEM, fail, "out of memory for %zu atoms", n);
    for (size_t a = 0; a < n; a++)
        md->invm[a] = 1.0 / s->m[a];
    make_whole(s);
    md->ndf = hx_forcefield_ndf(md->ff, s);
    if (hx_forcefield_is_water(md->ff)) {
        HX_TRY_GOTO(st, hx_settle_create(md->ff, s, &md->settle), fail);
        /* constrain the starting structure (a .gro keeps 3 decimals only) */
        memcpy(md->xn, s->x, 3 * n * sizeof(double));
        HX_TRY_GOTO(st, hx_settle_apply(md->settle, s->x, md->xn, NULL, p->dt, 0), fail);
        memcpy(s->x, md->xn, 3 * n * sizeof(double));
    }
    if (p->gen_vel) {
        md_rng r;
        rng_seed(&r, p->seed, 1);
        for (size_t a = 0; a < n; a++) {
            double sd = sqrt(HX_BOLTZ * p->gen_temp / s->m[a]);
            for (int d = 0; d < 3; d++)
                s->v[3 * a + d] = sd * rng_normal(&r);
        }
        s->has_velocities = 1;
    }
    if (s->has_velocities) {
        remove_com_velocity(s);
        if (md->settle) {
            /* drop velocity components along the bonds: constrain x + v dt */
            for (size_t k = 0; k < 3 * n; k++)
                md->xn[k] = s->x[k] + s->v[k] * p->dt;
            HX_TRY_GOTO(st, hx_settle_apply(md->settle, s->x, md->xn, s->v, p->dt, 0), fail);
        }
        if (p->gen_vel) {
            double t_now = 2.0 * kinetic(md, s->v) / (md->ndf * HX_BOLTZ);
            double scale = t_now > 0 ? sqrt(p->gen_temp / t_now) : 0.0;
            for (size_t k = 0; k < 3 * n; k++)
                s->v[k] *= scale;
        }
    }
    hx_nb_params nbp = {p->rc, p->eps_rf, p->eps_r};
    if (md->p.rlist == 0) {
        double t_est = 2.0 * kinetic(md, s->v) / (md->ndf * HX_BOLTZ);
        if (p->thermostat != HX_THERMOSTAT_NONE && p->ref_t > t_est)
            t_est = p->ref_t;
        if (t_est <= 0)
            t_est = 300.0; /* a cold start heats up; assume room temperature */
        HX_TRY_GOTO(st,
                    hx_nb_rlist_from_tolerance(md->ff, s, &nbp, p->dt, p->nstlist, t_est,
                                               p->verlet_buffer_tolerance, &md->p.rlist),
                    fail);
    }
    HX_TRY_GOTO(st, hx_md_params_check(&md->p, s), fail);
    HX_TRY_GOTO(st, hx_nb_create(md->ff, &nbp, p->nthreads, &md->nb), fail);
    md->p.nthreads = hx_nb_nthreads(md->nb);
    if (md->settle)
        hx_settle_set_threads(md->settle, md->p.nthreads);
    hx_local_set_from_system(&md->set, s, md->mol, &md->range);
    rng_seed(&md->trng, p->seed, 2);
    HX_TRY_GOTO(st, search(md, 0), fail);
    *out = md;
    return HX_OK;
fail:
    hx_md_destroy(&md);
    return st;
}

void hx_md_destroy(hx_md **mdp)
{
    if (!mdp || !*mdp)
        return;
    hx_md *md = *mdp;
    hx_system_destroy(&md->sys);
    hx_forcefield_destroy(&md->ff);
    hx_nb_destroy(&md->nb);
    hx_settle_destroy(&md->settle);
    free(md->mol);
    free(md->f);
    free(md->xn);
    free(md->vn);
    free(md->invm);
    free(md);
    *mdp = NULL;
}

/* Bussi v-rescale factor for kinetic energy ke over the step dt. */
static double vrescale_lambda(hx_md *md, double ke)
{
    if (ke <= 0)
        return 1.0;
    double kt = 0.5 * md->ndf * HX_BOLTZ * md->p.ref_t;
    double c = exp(-md->p.dt / md->p.tau_t);
    double r1 = rng_normal(&md->trng);
    double sr = rng_chisq(&md->trng, md->ndf - 1.0);
    double knew = ke + (1.0 - c) * (kt * (r1 * r1 + sr) / md->ndf - ke) +
                  2.0 * r1 * sqrt(c * (1.0 - c) * kt * ke / md->ndf);
    return knew > 0 ? sqrt(knew / ke) : 0.0;
}

static hx_status do_step(hx_md *md, int commit)
{
    hx_system *s = md->sys;
    const int n = s->natoms;
    const double dt = md->p.dt;
    if (md->step > 0 && md->step % md->p.nstlist == 0 && md->tm.searches > 0 && commit) {
        HX_TRY(search(md, 1));
    }
    double t0 = hx_wtime();
    hx_nb_energies e;
    HX_TRY(hx_nb_compute(md->nb, &md->set, md->f, &e, md->step));
    double t1 = hx_wtime();
    md->tm.force += t1 - t0;
    double ke_old = kinetic(md, s->v);
    double lambda = md->p.thermostat == HX_THERMOSTAT_VRESCALE ? vrescale_lambda(md, ke_old) : 1.0;
    const double *restrict x = s->x, *restrict v = s->v, *restrict f = md->f;
    double *restrict xn = md->xn, *restrict vn = md->vn;
    for (int a = 0; a < n; a++) {
        double im = md->invm[a] * dt;
        for (int d = 0; d < 3; d++) {
            int k = 3 * a + d;
            vn[k] = lambda * v[k] + f[k] * im;
            xn[k] = x[k] + vn[k] * dt;
        }
    }
    if (md->settle)
        HX_TRY(hx_settle_apply(md->settle, x, xn, vn, dt, md->step));
    double ke_new = kinetic(md, vn);
    md->ener.step = md->step;
    md->ener.time = md->step * dt;
    md->ener.lj = e.lj;
    md->ener.coulomb = e.coulomb;
    md->ener.potential = e.lj + e.coulomb;
    md->ener.kinetic = 0.5 * (ke_old + ke_new);
    md->ener.total = md->ener.potential + md->ener.kinetic;
    md->ener.temperature = 2.0 * md->ener.kinetic / (md->ndf * HX_BOLTZ);
    md->ener.constraint_deviation = md->settle ? hx_settle_deviation(md->settle, xn) : 0.0;
    HX_CHECK(isfinite(md->ener.kinetic), HX_ERR_PHYSICS,
             "step %lld: non-finite kinetic energy: the system blew up; use a smaller time step",
             md->step);
    if (commit) {
        double *tmp = s->x;
        s->x = md->xn;
        md->xn = tmp;
        tmp = s->v;
        s->v = md->vn;
        md->vn = tmp;
        md->set.x = s->x;
        md->step++;
        md->tm.steps++;
    }
    md->tm.update += hx_wtime() - t1;
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
    /* a search due at this step is still done, so the forces see a valid list */
    if (md->step > 0 && md->step % md->p.nstlist == 0)
        HX_TRY(search(md, 1));
    return do_step(md, 0);
}

void hx_md_energies_json(const hx_md_energies *e, char *buf, size_t len)
{
    snprintf(buf, len,
             "{\"step\": %lld, \"time\": %.6f, \"lj\": %.10g, \"coulomb\": %.10g, "
             "\"potential\": %.10g, \"kinetic\": %.10g, \"total\": %.10g, \"temperature\": "
             "%.8g}",
             e->step, e->time, e->lj, e->coulomb, e->potential, e->kinetic, e->total,
             e->temperature);
}

static hx_status write_outputs(hx_md *md, const hx_md_output *out, int energy_now)
{
    double t0 = hx_wtime();
    if (out && out->energy && energy_now) {
        char line[512];
        hx_md_energies_json(&md->ener, line, sizeof line);
        HX_CHECK(fprintf(out->energy, "%s\n", line) > 0, HX_ERR_IO,
                 "step %lld: writing the energy file failed", md->ener.step);
    }
    md->tm.output += hx_wtime() - t0;
    return HX_OK;
}

hx_status hx_md_run(hx_md *md, const hx_md_output *out)
{
    HX_CHECK(md, HX_ERR_INVALID_ARG, "hx_md_run: NULL engine");
    const long long nsteps = md->step + md->p.steps;
    const long long first = md->step;
    double start = hx_wtime(), last_report = start;
    for (;;) {
        long long s = md->step;
        if (out && out->traj && out->nstxout > 0 && s % out->nstxout == 0) {
            double t0 = hx_wtime();
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
    return HX_OK;
}

const hx_md_energies *hx_md_last_energies(const hx_md *md)
{
    return &md->ener;
}
const hx_system *hx_md_system(const hx_md *md)
{
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
    return hx_nb_npairs(md->nb);
}
void hx_md_get_timings(const hx_md *md, hx_md_timings *t)
{
    *t = md->tm;
}
