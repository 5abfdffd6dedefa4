/* The MD engine's public side: parameters, start-up, the run loop with its output, gathering
 * the state, and the accessors. The work of a step is the step schedule's (src/mdrun/schedule.c),
 * executed by a backend (src/md/backend.h: "cpu" here in src/md, "gpu" in src/gpu) and by the
 * halo exchange; the decomposition layer (include/halox/decomp.h) owns the molecules.
 *
 * Physics: leap-frog + SETTLE, LJ + reaction field, pair list refreshed every nstlist steps,
 * optional v-rescale thermostat (Bussi, Donadio, Parrinello 2007), on one domain or on a domain
 * decomposition over a communicator (serial: every domain in this process; MPI: one domain per
 * rank). The single-domain engine is the decomposition 1x1x1. The kinetic energy of step t is
 * the average of the two half-step kinetic energies (as GROMACS's leap-frog reports it).
 * Energies are summed over domains in domain order, so results do not depend on timing or on the
 * MPI library. */
#include "mdrun/md_impl.h"
#include "comm/comm_impl.h"
#include "halox/io.h"
#include "halox/log.h"
#include "halox/version.h"
#include "core/error.h"
#include "core/timer.h"
#include "gpu/trace.h"
#include "halox/json.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    p->nsttcouple = 10;
    p->halo_wait_timeout = -1.0;
    p->prune_parts = -1;
    p->rlist_inner = 0.0;
}

hx_status hx_md_params_check(const hx_md_params *p, const hx_system *sys)
{
    HX_CHECK(p, HX_ERR_INVALID_ARG, "NULL parameters");
    HX_CHECK(p->dt > 0 && isfinite(p->dt), HX_ERR_INVALID_ARG,
             "time step dt = %g ps: must be positive (typically 0.002)", p->dt);
    HX_CHECK(p->steps >= 0, HX_ERR_INVALID_ARG, "steps = %lld: must be >= 0", p->steps);
    HX_CHECK(p->nstlist >= 1, HX_ERR_INVALID_ARG, "nstlist = %d: must be >= 1", p->nstlist);
    HX_CHECK(p->nstlist_divides >= 0 &&
                 (p->nstlist_divides == 0 || p->nstlist_divides % p->nstlist == 0),
             HX_ERR_INVALID_ARG,
             "nstlist_divides = %d: use 0 (any interval) or a multiple of nstlist (%d)",
             p->nstlist_divides, p->nstlist);
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
    HX_CHECK(p->prune_parts >= -1 && p->prune_parts <= 1000, HX_ERR_INVALID_ARG,
             "prune_parts = %d: use -1 (backend default), 0 (no rolling prune) or up to 1000",
             p->prune_parts);
    HX_CHECK(p->rlist_inner == 0 ||
                 (p->rlist_inner >= p->rc && (p->rlist == 0 || p->rlist_inner <= p->rlist)),
             HX_ERR_INVALID_ARG,
             "rlist_inner = %g nm: use 0 (buffer estimate) or a radius in [rc, rlist] = [%g, %g]",
             p->rlist_inner, p->rc, p->rlist);
    HX_CHECK(p->eps_rf == 0 || p->eps_rf >= 1, HX_ERR_INVALID_ARG,
             "eps_rf = %g: use 0 (infinity) or a value >= 1", p->eps_rf);
    HX_CHECK(p->eps_r > 0, HX_ERR_INVALID_ARG, "eps_r = %g: must be > 0", p->eps_r);
    HX_CHECK(!p->gen_vel || p->gen_temp >= 0, HX_ERR_INVALID_ARG,
             "generation temperature %g K: must be >= 0", p->gen_temp);
    HX_CHECK(p->thermostat == HX_THERMOSTAT_NONE || (p->tau_t > 0 && p->ref_t >= 0),
             HX_ERR_INVALID_ARG, "v-rescale needs tau_t > 0 (%g) and ref_t >= 0 (%g)", p->tau_t,
             p->ref_t);
    HX_CHECK(p->thermostat == HX_THERMOSTAT_NONE || p->nsttcouple >= 1, HX_ERR_INVALID_ARG,
             "nsttcouple = %d: the thermostat needs an interval >= 1 step", p->nsttcouple);
    HX_CHECK(!p->backend || strcmp(p->backend, "cpu") == 0 || strcmp(p->backend, "gpu") == 0,
             HX_ERR_INVALID_ARG, "MD backend '%s': use cpu or gpu", p->backend);
    HX_CHECK(p->nstmetrics >= 0, HX_ERR_INVALID_ARG, "nstmetrics = %d: must be >= 0",
             p->nstmetrics);
    HX_CHECK(p->nthreads >= 0, HX_ERR_INVALID_ARG, "threads = %d: must be >= 0", p->nthreads);
    HX_CHECK(p->step_timing >= HX_MD_STEP_TIMING_OFF && p->step_timing <= HX_MD_STEP_SPANS,
             HX_ERR_INVALID_ARG,
             "step_timing = %d: use HX_MD_STEP_TIMING_OFF, HX_MD_STEP_TIMES, "
             "HX_MD_STEP_BREAKDOWN or HX_MD_STEP_SPANS",
             p->step_timing);
    HX_CHECK(p->nb_precision == HX_NB_DOUBLE || p->nb_precision == HX_NB_MIXED, HX_ERR_INVALID_ARG,
             "non-bonded precision %d: use double or mixed", p->nb_precision);
    if (sys) {
        double rmax = p->rlist > p->rc ? p->rlist : p->rc;
        for (int d = 0; d < 3; d++)
            HX_CHECK(rmax < 0.5 * sys->box[d], HX_ERR_INVALID_ARG,
                     "cut-off/pair-list radius %g nm is not below half the box edge along %c "
                     "(the edge is %g nm, half of it %g nm): use a shorter cut-off or a larger "
                     "box",
                     rmax, "xyz"[d], sys -> box[d], 0.5 * sys -> box[d]);
        HX_CHECK(sys->natoms > 0, HX_ERR_INVALID_ARG, "the system has no atoms");
    }
    return HX_OK;
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

static void md_free(hx_md *md)
{
    if (!md)
        return;
    if (md->trace_own)
        hx_gpu_trace_close();
    if (md->B && md->bimpl)
        md->B->destroy(md->bimpl);
    hx_halo_destroy(&md->halo);
    hx_decomp_destroy(&md->dec);
    free(md->red);
    free(md->ke_old);
    free(md->dev);
    free(md->st);
    hx_system_destroy(&md->sys);
    hx_forcefield_destroy(&md->ff);
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
static hx_status prepare_global(hx_md *md, const hx_system *sys, const hx_md_params *p,
                                int ndomains, const int grid[3])
{
    md->p = *p;
    snprintf(md->model, sizeof md->model, "%s", p->model ? p->model : "spce");
    md->p.model = md->model;
    HX_TRY(hx_system_copy(sys, &md->sys));
    HX_TRY(hx_forcefield_create(md->model, &md->ff));
    HX_TRY(hx_forcefield_apply(md->ff, md->sys));
    hx_system *s = md->sys;
    size_t n = (size_t)s->natoms;
    /* The pair lists first, from the input as given: `halox plan` calls the same function on
     * the same file and so predicts this run's decomposition; every rank computes the same. */
    md->rlist_auto = p->rlist_from_tolerance || p->rlist == 0;
    HX_TRY(hx_md_list_setup_resolve(sys, p, ndomains, grid, &md->list));
    md->p.nstlist = md->list.nstlist;
    md->p.rlist = md->list.rlist;
    md->p.prune_parts = md->list.prune_parts;
    md->p.rlist_inner = md->list.rlist_inner;
    double *xn = malloc((3 * n + 1) * sizeof *xn);
    HX_CHECK(xn, HX_ERR_NOMEM, "out of memory for %zu atoms", n);
    if (!p->continuation)
        hx_system_make_whole(s); /* a continuation's molecules are whole already, bit for bit */
    md->ndf = hx_forcefield_ndf(md->ff, s);
    md->ener.has_bonded = hx_forcefield_has_bonded(md->ff);
    hx_status st = HX_OK;
    hx_constr *constr = NULL;
    int *mstart = NULL;
    if (p->continuation) {
        /* a running state: exactly as it was written */
        HX_CHECK(md->p.rlist > 0, HX_ERR_INVALID_ARG,
                 "a continuation needs the pair-list radius of the original run");
        free(xn);
        return hx_md_params_check(&md->p, s);
    }
    /* every molecule's constraints: SETTLE for water, SHAKE for the bonds to hydrogen (none
     * with GROMACS's continuation = yes: the input is constrained already) */
    mstart = malloc(((size_t)s->nmol + 1) * sizeof *mstart);
    if (!mstart)
        HX_FAIL_GOTO(st, HX_ERR_NOMEM, out, "out of memory for %d molecules", s->nmol);
    memcpy(mstart, s->mol_start, (size_t)s->nmol * sizeof *mstart);
    hx_mol_list ml = {s->nmol, mstart, s->mol_type, NULL};
    if (!p->no_start_constraints)
        HX_TRY_GOTO(st, hx_constr_create(md->ff, &ml, s->type, &constr), out);
    if (constr && hx_constr_count(constr) == 0)
        hx_constr_destroy(&constr);
    if (constr) {
        /* constrain the starting structure (a .gro keeps 3 decimals only) */
        memcpy(xn, s->x, 3 * n * sizeof(double));
        HX_TRY_GOTO(st, hx_constr_apply(constr, s->x, xn, NULL, p->dt, 0), out);
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
        if (constr) {
            /* drop velocity components along the bonds: constrain x + v dt */
            for (size_t k = 0; k < 3 * n; k++)
                xn[k] = s->x[k] + s->v[k] * p->dt;
            HX_TRY_GOTO(st, hx_constr_apply(constr, s->x, xn, s->v, p->dt, 0), out);
        }
        if (p->gen_vel) {
            double t_now = 2.0 * kinetic_global(s, s->v) / (md->ndf * HX_BOLTZ);
            double scale = t_now > 0 ? sqrt(p->gen_temp / t_now) : 0.0;
            for (size_t k = 0; k < 3 * n; k++)
                s->v[k] *= scale;
        }
    }
    HX_TRY_GOTO(st, hx_md_params_check(&md->p, s), out);
out:
    hx_constr_destroy(&constr);
    free(mstart);
    free(xn);
    return st;
}

static const hx_md_backend_ops *find_backend(const char *name)
{
    if (!name || strcmp(name, "cpu") == 0)
        return &hx_md_backend_cpu;
#ifndef HX_MD_HAVE_GPU
#define HX_MD_HAVE_GPU 0 /* set by the build once the GPU backend (src/gpu) is compiled in */
#endif
#if HX_MD_HAVE_GPU
    if (strcmp(name, "gpu") == 0)
        return &hx_md_backend_gpu;
#endif
    return NULL;
}

hx_status hx_md_backend_available(const char *name)
{
    HX_CHECK(name, HX_ERR_INVALID_ARG, "hx_md_backend_available: NULL name");
    HX_CHECK(strcmp(name, "cpu") == 0 || strcmp(name, "gpu") == 0, HX_ERR_INVALID_ARG,
             "unknown MD backend '%s': use cpu or gpu", name);
    HX_CHECK(find_backend(name), HX_ERR_NOT_COMPILED,
             "the %s MD backend was not compiled into this halox: rebuild with CUDA (nvcc found "
             "at configure time)",
             name);
    return HX_OK;
}

hx_status hx_md_create_dd(const hx_system *sys, const hx_md_params *p, hx_comm *comm,
                          const int grid[3], hx_md **out)
{
    HX_CHECK(sys && p && comm && out, HX_ERR_INVALID_ARG, "hx_md_create_dd: NULL argument");
    *out = NULL;
    HX_TRY(hx_md_params_check(p, sys));
    HX_TRY(hx_md_backend_available(p->backend ? p->backend : "cpu"));
    const hx_md_backend_ops *B = find_backend(p->backend);
    /* Default halo backend: the host one for the CPU; on GPUs the GPU-initiated one when
     * there are several ranks and it was compiled, otherwise gpu-mpi (with one process there
     * is one domain and no pulse, so nothing is ever sent). */
    const char *halo = p->halo;
    if (!halo && B->mem == HX_MEM_HOST)
        halo = "host";
    else if (!halo)
        halo = hx_comm_nranks(comm) > 1 && hx_halo_backend_available("nvshmem") == HX_OK
                   ? "nvshmem"
                   : "gpu-mpi";
    hx_clear_error();
    HX_TRY(hx_halo_backend_available(halo));
    /* agreed with prepare_global's status below: a rank without a context must not leave the
     * others in the engine's collectives */
    const hx_status st_gpu =
        B->mem == HX_MEM_HOST || p->gpu
            ? HX_OK
            : hx_error_set(HX_ERR_INVALID_ARG, __FILE__, __LINE__, __func__,
                           "the %s MD backend runs on a GPU context and none was given: create "
                           "one with hx_gpu_context_create(&params, comm, &ctx) on the engine's "
                           "communicator (it chooses the device, by node-local rank or a device "
                           "list, and owns the streams) and set hx_md_params.gpu = ctx",
                           B->name);
    hx_md *md = calloc(1, sizeof *md);
    HX_CHECK(md, HX_ERR_NOMEM, "out of memory");
    md->comm = comm;
    md->B = B;
    hx_status st =
        st_gpu == HX_OK ? prepare_global(md, sys, p, hx_comm_ndomains(comm), grid) : st_gpu;
    st = hx_comm_agree(comm, st);
    if (st != HX_OK)
        goto fail;
    snprintf(md->backend, sizeof md->backend, "%s", B->name);
    snprintf(md->halo_backend, sizeof md->halo_backend, "%s", halo);
    md->p.backend = md->backend;
    md->p.halo = md->halo_backend;
    hx_decomp_params dp = {md->p.rc, md->p.rlist, {0, 0, 0}};
    if (grid)
        memcpy(dp.grid, grid, sizeof dp.grid);
    HX_TRY_GOTO(st, hx_decomp_create(md->sys, &dp, comm, &md->dec), fail);
    md->ndim = hx_dd_ndim(hx_decomp_dd(md->dec), NULL);
    md->nlocal = hx_comm_nlocal(comm);
    md->red = calloc(HX_MD_NRED * (size_t)md->nlocal, sizeof *md->red);
    md->ke_old = calloc((size_t)md->nlocal, sizeof *md->ke_old);
    md->dev = calloc((size_t)md->nlocal, sizeof *md->dev);
    st = md->red && md->ke_old && md->dev
             ? HX_OK
             : hx_error_set(HX_ERR_NOMEM, __FILE__, __LINE__, __func__, "out of memory");
    /* the search steps' timeline (HALOX_SEARCH_TRACE, a diagnosis of the GPU runs) */
    if (st == HX_OK && B->mem != HX_MEM_HOST && !hx_gpu_trace_on()) {
        st = hx_gpu_trace_open(hx_comm_rank(comm), hx_comm_nranks(comm));
        md->trace_own = hx_gpu_trace_on();
    }
    if (st == HX_OK)
        st = B->create(md->sys, md->ff, &md->p, md->nlocal, &md->bimpl);
    HX_TRY_GOTO(st, hx_comm_agree(comm, st), fail);
    hx_rng_seed(&md->trng, p->seed, 2);
    md->ener.has_thermostat = p->thermostat != HX_THERMOSTAT_NONE;
    if (p->continuation) {
        md->step = p->start_step;
        if (p->has_rng_state)
            memcpy(md->trng.s, p->rng_state, sizeof md->trng.s);
        md->thermostat_work = p->thermostat_work;
    }
    HX_TRY_GOTO(st, hx_md_repartition(md, 1), fail);
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

/* A step's waits take the step deadline (include/halox/timer.h). */
static hx_status step_phase(hx_md *md, int commit)
{
    const int prev = hx_comm_set_in_step(md->comm, 1);
    const hx_status st = hx_md_do_step(md, commit);
    hx_comm_set_in_step(md->comm, prev);
    return st;
}

hx_status hx_md_step(hx_md *md)
{
    HX_CHECK(md, HX_ERR_INVALID_ARG, "hx_md_step: NULL engine");
    return step_phase(md, 1);
}

hx_status hx_md_evaluate(hx_md *md)
{
    HX_CHECK(md, HX_ERR_INVALID_ARG, "hx_md_evaluate: NULL engine");
    return step_phase(md, 0);
}

hx_status hx_md_gather(hx_md *md)
{
    HX_CHECK(md, HX_ERR_INVALID_ARG, "hx_md_gather: NULL engine");
    if (md->gathered_step_valid)
        return HX_OK;
    const int nl = md->nlocal;
    HX_TRY(hx_md_agree(md)); /* a collective: a pending failure ends it on every rank first */
    hx_status st = HX_OK;
    for (int i = 0; i < nl && st == HX_OK; i++)
        st = md->B->download(md->bimpl, i, hx_decomp_get_local(md->dec, i)->home);
    /* Records of (gid, x, v) as doubles: 7 per atom. */
    double **rec = calloc((size_t)nl, sizeof *rec);
    size_t *bytes = calloc((size_t)nl, sizeof *bytes);
    if (st == HX_OK && (!rec || !bytes))
        st = hx_error_set(HX_ERR_NOMEM, __FILE__, __LINE__, __func__, "out of memory");
    for (int i = 0; i < nl && st == HX_OK; i++) {
        const hx_home *h = hx_decomp_get_local(md->dec, i)->home;
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
    st = hx_comm_agree(md->comm, st); /* the gather is entered by all ranks or by none */
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
    for (int i = 0; rec && i < nl; i++)
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

double hx_md_thermostat_work(const hx_md *md)
{
    return md->thermostat_work;
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
    /* the timings describe this run only (creation did a first repartition already, a warm-up
     * run may have come before): times and counts alike, so that per-step and per-search
     * averages divide this run's times by this run's counts. The missed-pair count stays "not
     * checked" (-1) where the decomposition never checks. */
    const long long missed0 = md->tm.missed_pairs < 0 ? -1 : 0;
    memset(&md->tm, 0, sizeof md->tm);
    md->tm.missed_pairs = missed0;
    md->energy_interval = out && out->nstenergy > 0 ? out->nstenergy : INT_MAX;
    md->log_interval = out && out->nstlog > 0 ? out->nstlog : 0;
    /* Graceful stop: see hx_md_output.stop. Several processes must stop at the same step, so
     * they agree on the flag, at pair-search steps only (one small max-reduction there). */
    const int parallel = hx_comm_nranks(md->comm) > 1;
    const int parallel_stop = out && out->stop && parallel;
    long long *stop_in = NULL;
    if (parallel_stop) {
        /* agreed: the others would wait in the first stop reduction for this rank */
        stop_in = calloc((size_t)md->nlocal + 1, sizeof *stop_in);
        HX_TRY(hx_comm_agree(md->comm, stop_in ? HX_OK
                                               : hx_error_set(HX_ERR_NOMEM, __FILE__, __LINE__,
                                                              __func__, "out of memory")));
    }
    /* No rank is left waiting for one whose hook or output failed: such a failure is noted
     * (hx_md_note) and agreed at the next collective of the step schedule (a search, energy or
     * thermostat step, at most nstlist steps later; the last step is an energy step), with a
     * last agreement after the loop, so that every rank returns it with the failing rank's
     * message. Returning from here at once left the others in the next exchange; only a
     * program's MPI_Abort ended them. The waits of the loop take the step deadline. */
    const int was_in_step = hx_comm_set_in_step(md->comm, 1);
    double start = hx_wtime(), last_report = start;
    hx_status st = hx_md_clock_start(md);
    if (st != HX_OK)
        goto done;
    for (;;) {
        long long s = md->step;
        int stop_now = 0;
        if (out && out->stop && s != nsteps) {
            const int search_step = s % md->p.nstlist == 0;
            if (parallel_stop && search_step) {
                long long agreed = 0;
                for (int i = 0; i < md->nlocal; i++)
                    stop_in[i] = *out->stop != 0;
                double t0 = hx_wtime();
                st = hx_comm_max_i64(md->comm, stop_in, &agreed, 1);
                md->tm.reduce += hx_wtime() - t0;
                if (st != HX_OK)
                    goto done;
                stop_now = agreed != 0;
            } else if (!parallel_stop) {
                stop_now = *out->stop != 0 && (!out->stop_at_search || search_step);
            }
        }
        hx_comm_set_step(md->comm, s);
        if (out && out->step_hook)
            HX_TRY_GOTO(st, hx_md_note(md, out->step_hook(out->user, md, s)), done);
        if (out && out->nstxout > 0 && s % out->nstxout == 0) {
            double t0 = hx_wtime();
            HX_TRY_GOTO(st, hx_md_gather(md), done);
            if (out->traj)
                HX_TRY_GOTO(
                    st, hx_md_note(md, hx_gro_write_frame(out->traj, md->sys, s * md->p.dt, s, 0)),
                    done);
            md->tm.output += hx_wtime() - t0;
        }
        int last = (s == nsteps) || stop_now;
        if (last)
            HX_TRY_GOTO(st, hx_md_evaluate(md), done);
        else
            HX_TRY_GOTO(st, hx_md_step(md), done);
        int nste = out ? out->nstenergy : 0;
        HX_TRY_GOTO(st, hx_md_note(md, write_outputs(md, out, (nste > 0 && s % nste == 0) || last)),
                    done);
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
    /* every rank ends here at the same step: what the last step's output noted */
    if (parallel)
        st = hx_md_agree(md);
done:
    hx_comm_set_in_step(md->comm, was_in_step);
    hx_md_clock_stop(md);
    free(stop_in);
    md->tm.total += hx_wtime() - start;
    md->energy_interval = md->log_interval = 0;
    return st;
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

void hx_md_set_steps(hx_md *md, long long steps)
{
    md->p.steps = steps;
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

void hx_md_get_list_setup(const hx_md *md, hx_md_list_setup *s)
{
    *s = md->list;
}
