/* The single-GPU MD step as the product runs it: the engine (hx_md_create with the "gpu" backend,
 * the step schedule of src/mdrun, graph-replayed plain steps, its thermostat) against the CPU
 * engine. The GPU engine starts from the CPU engine's state exactly as it is (a continuation).
 *  1. energies of the same starting state (potential at step 0, the first step's kinetic
 *     energy): LJ and Coulomb within 1e-6 relative (5e-5 kJ/mol per atom for a total that is a
 *     small remainder), kinetic within 1e-6 (its half step after the update comes from float
 *     forces);
 *  2. at every search of a run, the GPU list holds every pair within rlist of the search
 *     positions (tg_check_list: missing pairs must be 0, printed per search);
 *  3. NVE energy drift over 10 ps at 2 fs of a thermalised 3000-atom SPC/E box (the protocol
 *     of tests/test_md_nve.c, buffer from the tolerance 0.005 kJ/mol/ps/atom), on the CPU
 *     engine (double) and on the GPU from the same state, nstlist 10, and on the GPU with
 *     nstlist 40 and the rolling prune (inner list at the product's tolerance, a hundredth of
 *     the run's): |drift| <= 7.6e-4 kJ/mol/ps/atom and <= 1.5 x the CPU's
 *     (+ 1e-4 for the scatter of a fitted slope), constraint deviation < 1e-6 (SETTLE in double,
 *     positions published in float);
 *  4. 100 ps NVE on the GPU stays at its temperature (mean of the last 10 ps within 10 K of the
 *     first 10 ps: a drift at the bar would move it ~5 K); 20 ps of v-rescale at 300 K (every
 *     10 steps) holds 300 K (mean of the last 10 ps within 3 K, ~5 standard errors);
 *  5. steps replayed from a CUDA graph equal steps launched one by one (hx_md_params.no_graph;
 *     same state after 100 steps: total energy within 1e-5 relative, positions within 1e-4 nm:
 *     atomics make the force sums' order, and so the last bits, vary), and the graph was used;
 *     the engine's step timing (HX_MD_STEP_TIMES: one record per step, searches and graph
 *     replays where the schedule does them; HX_MD_STEP_BREAKDOWN: local work and update inside
 *     the step) changes nothing of the trajectory;
 *  6. v-rescale from 100 K with a coupling far stronger than the interval (each coupling a
 *     fresh canonical draw at 300 K, every 2 steps): the GPU engine's temperature follows the
 *     CPU engine's (the same random draws, 1e-3 relative), and the mean temperature of the steps
 *     after 4 (quick) or 20 couplings is 300 K within 4 standard deviations of that mean
 *     (5.9 K at 648 atoms, 1.2 K at 3000) + 5 K (one step of the start's potential energy
 *     turning into kinetic energy).
 * Runs of runs of steps go through hx_md_run, as halox md does: energies only on output steps,
 * the steps between them replayed from the graph.
 * --quick (the CPU emulation and compute-sanitizer): 648 atoms, rc 0.7 nm, a few dozen steps of
 * parts 1, 2, 5 and 6 only. */
#include "test_gpu_common.h"

#include "halox/build.h"
#include "halox/error.h"
#include "halox/log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int ncases;

/* The settings of one engine (CPU or GPU). */
typedef struct eng_cfg {
    const char *backend;
    double dt, rc, rlist, rlist_inner;
    int nstlist, prune_parts;
    int vrescale, nsttcouple;
    double tau_t, ref_t;
    int gen;         /* velocities at gen_temp (the start constrained, as a new run) */
    double gen_temp; /* otherwise the start is taken exactly as given (a continuation) */
    int no_graph, step_timing;
} eng_cfg;

static void cfg_default(eng_cfg *c, const char *backend, double rc, double rlist)
{
    memset(c, 0, sizeof *c);
    c->backend = backend;
    c->dt = 0.002;
    c->rc = rc;
    c->rlist = rlist;
    c->nstlist = 10;
    c->nsttcouple = 10;
    c->tau_t = 0.1;
    c->ref_t = 300.0;
}

static hx_md *engine(const hx_system *s, const eng_cfg *c)
{
    hx_md_params p;
    hx_md_params_default(&p);
    p.backend = c->backend;
    p.gpu = strcmp(c->backend, "gpu") == 0 ? tg_gpu() : NULL;
    p.dt = c->dt;
    p.rc = c->rc;
    p.rlist = c->rlist;
    p.nstlist = c->nstlist;
    p.nstcheck = 0;
    p.prune_parts = c->prune_parts;
    p.rlist_inner = c->prune_parts > 0 ? c->rlist_inner : 0.0;
    p.thermostat = c->vrescale ? HX_THERMOSTAT_VRESCALE : HX_THERMOSTAT_NONE;
    p.nsttcouple = c->nsttcouple;
    p.tau_t = c->tau_t;
    p.ref_t = c->ref_t;
    p.seed = 1;
    p.gen_vel = c->gen;
    p.gen_temp = c->gen_temp;
    p.continuation = !c->gen;
    p.no_graph = c->no_graph;
    p.step_timing = c->step_timing;
    hx_md *md = NULL;
    T_OK(hx_md_create(s, &p, &md));
    return md;
}

/* CPU engine from sys (force field applied or not) for the thermalisation and the reference. */
static hx_md *cpu_md(const hx_system *s, double dt, double rc, double rlist, int nstlist,
                     int thermo, int gen)
{
    hx_md_params p;
    hx_md_params_default(&p);
    p.dt = dt;
    p.rc = rc;
    p.rlist = rlist;
    p.nstlist = nstlist;
    p.nstcheck = 0;
    p.gen_vel = gen;
    p.gen_temp = 300;
    p.seed = 2024;
    p.thermostat = thermo ? HX_THERMOSTAT_VRESCALE : HX_THERMOSTAT_NONE;
    p.tau_t = 0.05;
    p.ref_t = 300;
    hx_md *md = NULL;
    T_OK(hx_md_create(s, &p, &md));
    return md;
}

static void cpu_run(hx_md *md, int steps)
{
    for (int i = 0; i < steps && md; i++)
        if (hx_md_step(md) != HX_OK) {
            T_FAIL("CPU step %lld: %s", hx_md_current_step(md), hx_last_error());
            return;
        }
}

typedef struct fit {
    double st, se, stt, ste;
    int m;
} fit;
static void fit_add(fit *f, double t, double e)
{
    f->st += t;
    f->se += e;
    f->stt += t * t;
    f->ste += t * e;
    f->m++;
}
static double fit_slope(const fit *f)
{
    return (f->m * f->ste - f->st * f->se) / (f->m * f->stt - f->st * f->st);
}

/* A GPU run of nsteps from step 0 through hx_md_run with energies every nste steps: the slope
 * of the total energy, temperature means of the first and last tlen steps; with check_lists the
 * list of every search, against the positions it was built on. */
typedef struct run_out {
    double drift; /* kJ/mol/ps/atom */
    double t_first, t_last, maxdev;
    long long missing;
    int searches_checked;
} run_out;

typedef struct run_ctx {
    const char *what;
    const eng_cfg *c;
    int nsteps, tlen, natoms;
    run_out *o;
    fit f;
    int nfirst, nlast;
    int check_lists;
    double *x0, *moved; /* home positions at the last search step, and how far they moved */
    long long x0_step;  /* -1: none */
} run_ctx;

static void take_energies(run_ctx *r, const hx_md_energies *e)
{
    const long long i = e->step;
    if (!isfinite(e->total)) {
        T_FAIL("%s: step %lld: non-finite energy", r->what, i);
        return;
    }
    fit_add(&r->f, i * r->c->dt, e->total);
    r->o->maxdev = fmax(r->o->maxdev, e->constraint_deviation);
    if (i < r->tlen) {
        r->o->t_first += e->temperature;
        r->nfirst++;
    }
    if (i > r->nsteps - r->tlen) {
        r->o->t_last += e->temperature;
        r->nlast++;
    }
}

/* The list built at step r->x0_step, checked one step later: the positions of that step, and
 * how far its update moved them (the fused update writes the next positions into the list's
 * slots; tg_check_list takes them back). */
static void check_list(run_ctx *r, hx_md *md)
{
    const hx_decomp_local *loc = tg_md_local(md);
    const int n = loc->n_home;
    for (int k = 0; k < 3 * n; k++) {
        const double bx = loc->box[k % 3], v = loc->home->x[k] - r->x0[k];
        r->moved[k] = v - bx * nearbyint(v / bx); /* a step moves an atom far less than a box */
    }
    hx_local_set set;
    tg_local_set(loc, &set); /* positions: the list's own (set.x NULL) */
    char w[160];
    snprintf(w, sizeof w, "%s search at step %lld", r->what, r->x0_step);
    tg_list_report rep;
    tg_check_list(tg_md_nb(md), &set, r->moved, r->c->rlist,
                  r->c->prune_parts > 0 ? r->c->rlist_inner : r->c->rlist, w, &rep);
    r->o->missing += rep.missing_outer + rep.missing_inner;
    r->o->searches_checked++;
    if (r->x0_step < 3 * r->c->nstlist)
        printf("%-40s pairs < rlist %lld, missing %lld (outer) %lld (inner)\n", w, rep.ref_outer,
               rep.missing_outer, rep.missing_inner);
}

/* step_hook: before step s the engine holds the energies of step s - 1 (NaN off output steps)
 * and the state of step s */
static hx_status run_hook(void *user, hx_md *md, long long s)
{
    run_ctx *r = user;
    const hx_md_energies *e = hx_md_last_energies(md);
    if (s > 0 && e->step == s - 1 && isfinite(e->potential))
        take_energies(r, e);
    if (!r->check_lists)
        return HX_OK;
    if (r->x0_step >= 0 && r->x0_step == s - 1) {
        HX_TRY(hx_md_gather(md)); /* the home store holds the positions of step s */
        check_list(r, md);
        r->x0_step = -1;
    }
    if (s % r->c->nstlist == 0) {
        HX_TRY(hx_md_gather(md));
        const hx_decomp_local *loc = tg_md_local(md);
        memcpy(r->x0, loc->home->x, sizeof(double) * 3 * (size_t)loc->n_home);
        r->x0_step = s;
    }
    return HX_OK;
}

static void gpu_run(const char *what, const hx_system *s, const eng_cfg *c, int nsteps, int nste,
                    int tlen, int check_lists, run_out *o)
{
    memset(o, 0, sizeof *o);
    hx_md *md = engine(s, c);
    if (!md)
        return;
    run_ctx r;
    memset(&r, 0, sizeof r);
    r.what = what;
    r.c = c;
    r.nsteps = nsteps;
    r.tlen = tlen;
    r.o = o;
    r.check_lists = check_lists;
    r.x0_step = -1;
    if (check_lists) {
        r.x0 = malloc(sizeof(double) * 3 * (size_t)s->natoms);
        r.moved = malloc(sizeof(double) * 3 * (size_t)s->natoms);
    }
    hx_md_output out;
    memset(&out, 0, sizeof out);
    out.nstenergy = nste;
    out.step_hook = run_hook;
    out.user = &r;
    hx_md_set_steps(md, nsteps);
    if (hx_md_run(md, &out) != HX_OK)
        T_FAIL("%s: GPU run stopped at step %lld: %s", what, hx_md_current_step(md),
               hx_last_error());
    else
        take_energies(&r, hx_md_last_energies(md)); /* step nsteps, hx_md_run's evaluation */
    o->drift = fit_slope(&r.f) / s->natoms;
    o->t_first /= r.nfirst > 0 ? r.nfirst : 1;
    o->t_last /= r.nlast > 0 ? r.nlast : 1;
    free(r.x0);
    free(r.moved);
    hx_md_destroy(&md);
}

/* hx_md_run of steps steps from step 0, without output: the energies of the last step and the
 * positions then into x (3n) */
static hx_md *plain_run(const hx_system *s, const eng_cfg *c, int steps, hx_md_energies *e,
                        double *x)
{
    hx_md *md = engine(s, c);
    if (!md)
        return NULL;
    hx_md_set_steps(md, steps);
    T_OK(hx_md_run(md, NULL));
    *e = *hx_md_last_energies(md);
    memcpy(x, hx_md_system(md)->x, sizeof(double) * 3 * (size_t)s->natoms);
    return md;
}

static double max_dx(const double *a, const double *b, int n3)
{
    double dx = 0;
    for (int k = 0; k < n3; k++)
        dx = fmax(dx, fabs(a[k] - b[k]));
    return dx;
}

/* 5. graph replay against direct launches; the step timing's records, and that timing leaves the
 * trajectory alone. Passes: graph (step times), direct launches (step times), graph with the
 * breakdown; the first is left out in the emulation (npass 2), where the breakdown's run is the
 * graph run compared with direct launches. */
static void graph_checks(const hx_system *s, double rc, double rlist, int steps, int nstlist,
                         int npass)
{
    const int n = s->natoms;
    eng_cfg c;
    cfg_default(&c, "gpu", rc, rlist);
    c.nstlist = nstlist;
    double *x[3] = {NULL, NULL, NULL};
    hx_md_energies e[3];
    hx_md_timings tm[3];
    hx_md_step_time *rec[3] = {NULL, NULL, NULL};
    int nrec[3] = {0, 0, 0};
    int links[3] = {0, 0, 0}; /* captured updates handed the pair kernel's node (HALOX_GPU_PDL) */
    const char *name[3] = {"graph", "direct", "graph, breakdown"};
    const int first = 3 - npass, g = npass == 3 ? 0 : 2; /* the graph run compared with direct */
    for (int pass = first; pass < 3; pass++) {
        x[pass] = calloc(3 * (size_t)n, sizeof(double));
        memset(&e[pass], 0, sizeof e[pass]);
        memset(&tm[pass], 0, sizeof tm[pass]);
        c.no_graph = pass == 1;
        c.step_timing = pass == 2 ? HX_MD_STEP_BREAKDOWN : HX_MD_STEP_TIMES;
        hx_md *md = plain_run(s, &c, steps, &e[pass], x[pass]);
        if (!md)
            continue;
        hx_md_get_timings(md, &tm[pass]);
        hx_gpu_nb_stats ns;
        hx_gpu_nb_get_stats(tg_md_nb(md), &ns);
        links[pass] = ns.pdl_links;
        rec[pass] = calloc((size_t)steps + 1, sizeof *rec[pass]);
        T_OK(hx_md_get_step_times(md, rec[pass], steps + 1, &nrec[pass]));
        hx_md_destroy(&md);
    }
    if (!x[g] || !x[1] || !x[2])
        return;
    const double dx = max_dx(x[g], x[1], 3 * n);
    const double re = t_reldiff(e[g].total, e[1].total, 1e-3);
    printf("%s vs direct launches, %d steps: max |dx| %.2e nm, total energy %.10g vs %.10g "
           "(rel %.1e); %lld and %lld steps replayed\n",
           name[g], steps, dx, e[g].total, e[1].total, re, tm[g].graph_steps, tm[1].graph_steps);
    ncases += 3;
    T_CHECK(dx <= 1e-4, "graph vs direct: positions differ by %.3g nm", dx);
    /* The two runs differ only in the order of the float force sums (the j forces'
     * atomics), so their positions part by ~1e-7 nm in these steps and the total energy
     * by about sqrt(3N) x F_rms x dx = 67 x 1e3 x 1e-7 = 7e-3 kJ/mol at 1500 atoms, 4e-6
     * of it: under compute-sanitizer (kernels serialised differently) 1.5e-6 was seen
     * against a bar of 1e-6 (bench/results/h200-2026-12-04d/sanitize_aca04fa/). Shown to
     * fail (CPU emulation): with the local pair kernel left out of the captured step,
     * positions differ by 0.2 nm and the energy is 9217 against -1576 kJ/mol. Leaving out
     * the home reaction-field terms instead changed nothing (1.8e-7): they are forces
     * within rigid waters, which SETTLE takes out again. */
    T_CHECK(re <= 1e-5, "graph vs direct: total energy %.12g vs %.12g", e[g].total, e[1].total);
    /* every step but step 0 (energies) and the search steps (their capture waits for the next
     * step, when the device is busy) is replayed, the graph captured again after each search;
     * none with no_graph */
    const int searches = (steps - 1) / nstlist, replayed = steps - 1 - searches;
    T_CHECK(tm[g].graph_steps == replayed && tm[1].graph_steps == 0 &&
                tm[2].graph_steps == replayed,
            "steps replayed from the graph: %lld, %lld (no_graph), %lld (breakdown); expected "
            "%d, 0, %d",
            tm[g].graph_steps, tm[1].graph_steps, tm[2].graph_steps, replayed, replayed);
    /* HALOX_GPU_PDL=1: every capture (the first replay, then the step after each search that
     * has one) handed the update its pair kernel's node, direct launches never; off: none */
    {
        const char *pe = getenv("HALOX_GPU_PDL");
        const int pdl = pe && !strcmp(pe, "1");
        const int captures = 1 + (steps >= 2 ? (steps - 2) / nstlist : 0);
        ncases++;
        T_CHECK(links[1] == 0 && links[2] == (pdl ? captures : 0) &&
                    (g == 2 || links[g] == (pdl ? captures : 0)),
                "HALOX_GPU_PDL=%d: captured updates with the pair kernel's node: %d, %d (direct), "
                "%d (breakdown); expected %d, 0, %d",
                pdl, links[g], links[1], links[2], pdl ? captures : 0, pdl ? captures : 0);
    }
    /* the records: one per step in order, the search (after step 0's, made at the engine's
     * creation) and graph flags where the schedule searched and replayed, positive times */
    for (int pass = first; pass < 3; pass++) {
        ncases++;
        int bad = 0;
        double sum = 0, loc = 0, upd = 0;
        int nbd = 0;
        T_CHECK(nrec[pass] == steps, "%s run: %d step times, expected %d", name[pass], nrec[pass],
                steps);
        for (int k = 0; k < nrec[pass] && k < steps; k++) {
            const hx_md_step_time *r = &rec[pass][k];
            const int search = k > 0 && k % nstlist == 0, graph = pass != 1 && k > 0 && !search;
            int ok = r->step == k && r->search == search && r->graph == graph && r->us > 0 &&
                     isfinite(r->us);
            if (pass == 2 && ok) {
                /* the step's start and end lie between its clock point and the one before
                 * (0.5 us: the resolution of CUDA events) */
                ok = r->local_us > 0 && r->update_us > 0 &&
                     r->local_us + r->update_us <= r->us + 0.5;
                loc += r->local_us;
                upd += r->update_us;
                nbd++;
            } else if (ok) {
                ok = isnan(r->local_us) && isnan(r->update_us);
            }
            if (!ok && bad++ < 4)
                T_FAIL("%s run: step record %d: step %lld, search %d (expected %d), graph %d "
                       "(expected %d), %.3g us, local %.3g us, update %.3g us",
                       name[pass], k, r->step, r->search, search, r->graph, graph, r->us,
                       r->local_us, r->update_us);
            sum += r->us;
        }
        printf("%s run: %d step times, mean %.1f us", name[pass], nrec[pass],
               nrec[pass] > 0 ? sum / nrec[pass] : 0.0);
        if (nbd > 0)
            printf(", local work %.1f us, update %.1f us (means)", loc / nbd, upd / nbd);
        printf("\n");
    }
    if (g == 0) {
        const double dxb = max_dx(x[0], x[2], 3 * n);
        const double reb = t_reldiff(e[0].total, e[2].total, 1e-3);
        printf("graph with the breakdown's events vs without: max |dx| %.2e nm, total energy "
               "rel %.1e\n",
               dxb, reb);
        ncases += 2;
        T_CHECK(dxb <= 1e-4, "breakdown vs plain graph: positions differ by %.3g nm", dxb);
        T_CHECK(reb <= 1e-5, "breakdown vs plain graph: total energy %.12g vs %.12g", e[2].total,
                e[0].total);
    }
    for (int pass = 0; pass < 3; pass++) {
        free(x[pass]);
        free(rec[pass]);
    }
}

/* 6. v-rescale from 100 K to 300 K on the GPU and the CPU engine from the same state. With
 * tau_t far below the coupling interval (exp(-nsttcouple dt / tau_t) = 0) each coupling draws
 * the kinetic energy afresh from the canonical distribution at ref_t, whatever it was: the
 * temperature of the step after each of ncouple couplings (every 2 steps from step 0) is one
 * independent draw, plus what one step turns from potential into kinetic energy. */
static void heat_checks(const hx_system *s, double rc, double rlist, int ncouple)
{
    const int steps = 2 * ncouple;
    double tmean[2] = {0, 0}, tlast[2] = {0, 0}, ndf = 0;
    for (int b = 0; b < 2; b++) {
        eng_cfg c;
        cfg_default(&c, b == 0 ? "gpu" : "cpu", rc, rlist);
        c.vrescale = 1;
        c.nsttcouple = 2;
        c.tau_t = 1e-4;
        c.gen = 1;
        c.gen_temp = 100;
        hx_md *md = engine(s, &c);
        if (md)
            ndf = hx_md_ndf(md);
        for (int i = 0; md && i < steps; i++) {
            if (hx_md_step(md) != HX_OK) {
                T_FAIL("v-rescale %s step %d: %s", c.backend, i, hx_last_error());
                break;
            }
            tlast[b] = hx_md_last_energies(md)->temperature;
            if (i % 2 == 1)
                tmean[b] += tlast[b] / ncouple;
        }
        hx_md_destroy(&md);
    }
    const double rt = t_reldiff(tlast[0], tlast[1], 1e-3);
    /* one draw scatters by sqrt(2 / ndf) of ref_t: 12 K at 648 atoms, 5.5 K at 3000 */
    const double sd = 300.0 * sqrt(2.0 / (ndf > 0 ? ndf : 1)) / sqrt(ncouple);
    printf("v-rescale from 100 K at 300 K, %d couplings: mean T after them GPU %.2f K, CPU %.2f K "
           "(their scatter %.1f K); T at step %d GPU %.4f CPU %.4f (rel %.1e)\n",
           ncouple, tmean[0], tmean[1], sd, steps - 1, tlast[0], tlast[1], rt);
    ncases += 2;
    /* the same draws on both (one thermostat, the schedule's), lambda from each backend's
     * kinetic energy: float forces part the trajectories by ~1e-6 in these steps */
    T_CHECK(rt <= 1e-3, "v-rescale: T at step %d GPU %.8g CPU %.8g", steps - 1, tlast[0], tlast[1]);
    /* 4 standard deviations of the mean of the draws, and 5 K for the potential energy of a
     * 300 K structure turning into kinetic energy in one step (the start was at 100 K) */
    T_CHECK(fabs(tmean[0] - 300.0) < 4.0 * sd + 5.0,
            "v-rescale: mean T after %d couplings %.2f K, not 300 K within %.1f K", ncouple,
            tmean[0], 4.0 * sd + 5.0);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!t_gpu_require("test_gpu_md"))
        return T_SKIP_CODE;
    /* --quick or HALOX_GPU_TEST_QUICK=1 (compute-sanitizer runs): small systems, few steps */
    const int quick = tg_quick(argc, argv);
    const int natoms = quick ? 648 : 3000;
    const double rc = quick ? 0.7 : 1.0;
    /* thermalised start: the protocol of test_md_nve */
    hx_system *lat = NULL;
    hx_log_set_level(HX_LOG_ERROR); /* 648 atoms: a lattice, thermalised below */
    T_OK(hx_build_water("spce", natoms, 0, 7, &lat));
    hx_log_set_level(HX_LOG_WARN);
    if (!lat)
        return t_finish("test_gpu_md", 0);
    hx_md *a = cpu_md(lat, 0.0005, rc, 0, 10, 1, 1);
    cpu_run(a, quick ? 200 : 400); /* quick: 648 atoms, a lattice start */
    hx_md *b = a ? cpu_md(hx_md_system(a), 0.002, rc, 0, 10, 1, 0) : NULL;
    cpu_run(b, 500);
    if (!b)
        return t_finish("test_gpu_md", 0);
    /* NVE reference on the CPU, buffer from the tolerance */
    hx_md *ref = cpu_md(hx_md_system(b), 0.002, rc, 0, 10, 0, 0);
    if (!ref)
        return t_finish("test_gpu_md", 0);
    const double rlist = hx_md_get_params(ref)->rlist;
    hx_system *s = NULL;
    T_OK(hx_system_copy(hx_md_system(ref), &s));
    if (!s)
        return t_finish("test_gpu_md", 0);
    const int n = s->natoms;

    /* 1. energies of the same state */
    {
        T_OK(hx_md_evaluate(ref));
        const hx_md_energies *ec = hx_md_last_energies(ref);
        eng_cfg c;
        cfg_default(&c, "gpu", rc, rlist);
        hx_md *g = engine(s, &c);
        hx_md_energies eg;
        memset(&eg, 0, sizeof eg);
        long long npairs = 0;
        if (g) {
            T_OK(hx_md_evaluate(g));
            eg = *hx_md_last_energies(g);
            hx_nb_energies ne;
            hx_gpu_nb_read_energies(tg_md_nb(g), &ne, &npairs);
        }
        hx_md_destroy(&g);
        const double rlj = t_reldiff(eg.lj, ec->lj, 1e-3),
                     rco = t_reldiff(eg.coulomb, ec->coulomb, 1e-3);
        const double rke = t_reldiff(eg.kinetic, ec->kinetic, 1e-3);
        printf("energies of step 0, %d atoms, rlist %.4f: LJ GPU %.10g CPU %.10g (rel %.1e), "
               "Coulomb GPU %.10g CPU %.10g (rel %.1e), kinetic rel %.1e, pairs within rc %lld\n",
               n, rlist, eg.lj, ec->lj, rlj, eg.coulomb, ec->coulomb, rco, rke, npairs);
        ncases += 3;
        /* 1e-6 relative, or 5e-5 kJ/mol per atom for a total that is a small remainder (see
         * tests/test_gpu_nb.c) */
        T_CHECK(fabs(eg.lj - ec->lj) <= fmax(1e-6 * fabs(ec->lj), 5e-5 * n),
                "step 0 LJ: GPU %.12g CPU %.12g", eg.lj, ec->lj);
        T_CHECK(fabs(eg.coulomb - ec->coulomb) <= fmax(1e-6 * fabs(ec->coulomb), 5e-5 * n),
                "step 0 Coulomb: GPU %.12g CPU %.12g", eg.coulomb, ec->coulomb);
        /* v(+dt/2) comes from float forces (3e-6 of the RMS force): ~1e-8 of the kinetic energy */
        T_CHECK(rke <= 1e-6, "step 0 kinetic: GPU %.12g CPU %.12g", eg.kinetic, ec->kinetic);
    }

    /* 2. lists at every search of a short run, with the rolling prune */
    {
        eng_cfg c;
        /* 648 atoms: an outer radius below half the box (0.93 nm) */
        cfg_default(&c, "gpu", rc, rlist + (quick ? 0.05 : 0.1));
        c.rlist_inner = rlist;
        c.prune_parts = 4;
        /* quick: the emulation's few steps, 3 searches as in the full run's first 41 */
        c.prune_parts = quick ? 2 : 4;
        c.nstlist = quick ? 4 : 20;
        run_out o;
        gpu_run("lists (rolling prune)", s, &c, quick ? 9 : 200, quick ? 3 : 10, 1, 1, &o);
        ncases++;
        printf("lists: %d searches checked, %lld pairs missing in total\n", o.searches_checked,
               o.missing);
        T_CHECK(o.missing == 0 && o.searches_checked > 1,
                "%lld pairs missing from the GPU lists over %d searches", o.missing,
                o.searches_checked);
    }

    /* 5. graph replay equals direct launches; step timing (quick: a search at step 3, its graph
     * captured again) */
    graph_checks(s, rc, rlist, quick ? 5 : 100, quick ? 3 : 10, quick ? 2 : 3);

    /* 5b. the same with HALOX_GPU_PDL=1 (issue 28, read at the pair module's creation): the
     * captured update behind a programmatic edge from the pair kernel (k_update waits for it in
     * the kernel); then a bad value, refused at the engine's creation with its name */
    char pdl_keep[16] = "";
    const char *pdl0 = getenv("HALOX_GPU_PDL"); /* a run with it set (the H200 probe's) */
    if (pdl0)
        snprintf(pdl_keep, sizeof pdl_keep, "%s", pdl0);
    setenv("HALOX_GPU_PDL", "1", 1);
    printf("with HALOX_GPU_PDL=1:\n");
    graph_checks(s, rc, rlist, quick ? 5 : 100, quick ? 3 : 10, quick ? 2 : 3);
    setenv("HALOX_GPU_PDL", "yes", 1);
    {
        hx_md_params p;
        hx_md_params_default(&p);
        p.backend = "gpu";
        p.gpu = tg_gpu();
        p.rc = rc;
        p.rlist = rlist;
        p.continuation = 1;
        hx_md *bad = NULL;
        const hx_status st = hx_md_create(s, &p, &bad);
        ncases++;
        T_CHECK(st != HX_OK && !bad && strstr(hx_last_error(), "HALOX_GPU_PDL='yes'"),
                "HALOX_GPU_PDL=yes: engine created (status %d), or the message '%s' does not name "
                "it",
                (int)st, hx_last_error());
        hx_md_destroy(&bad);
    }
    if (pdl0)
        setenv("HALOX_GPU_PDL", pdl_keep, 1);
    else
        unsetenv("HALOX_GPU_PDL");

    /* 6. v-rescale heating */
    heat_checks(s, rc, rlist, quick ? 4 : 20);

    if (!quick) {
        /* 3. NVE drift: CPU engine, GPU nstlist 10, GPU nstlist 40 + rolling prune in 4 parts,
         * GPU nstlist 80 + rolling prune in 8 parts (the engine's choice for an outer list at
         * least twice the nstlist-10 one, as a decomposed run's at nstlist 100: 2.3x here; 100
         * itself would need rlist 1.558 nm, over half this 3.107 nm box) */
        const int nsteps = 5000, nste = 10;
        fit fc = {0, 0, 0, 0, 0};
        hx_md *cm = cpu_md(s, 0.002, rc, rlist, 10, 0, 0);
        for (int i = 0; cm && i <= nsteps; i++) {
            if (hx_md_step(cm) != HX_OK) {
                T_FAIL("CPU NVE step %d: %s", i, hx_last_error());
                break;
            }
            if (i % nste == 0)
                fit_add(&fc, i * 0.002, hx_md_last_energies(cm)->total);
        }
        hx_md_destroy(&cm);
        const double dcpu = fit_slope(&fc) / n;
        eng_cfg c;
        cfg_default(&c, "gpu", rc, rlist);
        run_out o1, o2;
        gpu_run("NVE nstlist 10", s, &c, nsteps, nste, 1000, 0, &o1);
        /* nstlist 40: outer buffer for 40 steps, inner for 5 (rolling prune in 4 parts: a part
         * pruned at step t serves t+1 .. t+4), the inner one at the product's tolerance, a
         * hundredth of the run's (src/mdrun/list_setup.c). At the run's whole tolerance (inner
         * 1.026 nm, as this test had it) the inner list's own missed pairs set the drift:
         * 5.6-6.3e-4 on the H200 with the classic prune, 8.0e-4 once on an H100 with the fast
         * one (same masks; bench/results/h100-2026-12-05d-waitcost-autonstlist), at the bar. */
        double r40 = rlist, r5 = rlist, r80 = rlist, r9 = rlist;
        {
            hx_forcefield *ff = NULL;
            hx_system *sf = NULL;
            T_OK(hx_forcefield_create("spce", &ff));
            T_OK(hx_system_copy(s, &sf));
            if (ff && sf)
                T_OK(hx_forcefield_apply(ff, sf));
            hx_nb_params nbp = {rc, 0.0, 1.0};
            T_OK(hx_nb_rlist_from_tolerance(ff, sf, &nbp, 0.002, 40, 300.0, 0.005, &r40));
            T_OK(hx_nb_rlist_from_tolerance(ff, sf, &nbp, 0.002, 5, 300.0, 0.005 * 0.01, &r5));
            T_OK(hx_nb_rlist_from_tolerance(ff, sf, &nbp, 0.002, 80, 300.0, 0.005, &r80));
            T_OK(hx_nb_rlist_from_tolerance(ff, sf, &nbp, 0.002, 9, 300.0, 0.005 * 0.01, &r9));
            hx_system_destroy(&sf);
            hx_forcefield_destroy(&ff);
        }
        c.nstlist = 40;
        c.rlist = r40;
        c.rlist_inner = r5;
        c.prune_parts = 4;
        gpu_run("NVE nstlist 40 prune 4", s, &c, nsteps, nste, 1000, 0, &o2);
        run_out o5;
        c.nstlist = 80;
        c.rlist = r80;
        c.rlist_inner = r9;
        c.prune_parts = 8;
        gpu_run("NVE nstlist 80 prune 8", s, &c, nsteps, nste, 1000, 0, &o5);
        printf("NVE 10 ps, %d atoms: drift CPU %.3e, GPU (nstlist 10, rlist %.4f) %.3e, GPU "
               "(nstlist 40, rlist %.4f/%.4f, prune 4) %.3e, GPU (nstlist 80, rlist %.4f/%.4f, "
               "prune 8) %.3e kJ/mol/ps/atom; max constraint deviation %.1e / %.1e / %.1e\n",
               n, dcpu, rlist, o1.drift, r40, r5, o2.drift, r80, r9, o5.drift, o1.maxdev, o2.maxdev,
               o5.maxdev);
        const run_out *os[3] = {&o1, &o2, &o5};
        for (int k = 0; k < 3; k++) {
            ncases += 3;
            T_CHECK(fabs(os[k]->drift) <= 7.6e-4,
                    "GPU run %d: NVE drift %.3e kJ/mol/ps/atom exceeds 7.6e-4", k, os[k]->drift);
            /* 1.5 x the CPU's: for the run with the CPU's settings (nstlist 10, the same
             * rlist), and the nstlist-80 run in 8 parts (both its lists are estimated for
             * their lifetimes, and the estimate only grows more cautious with the lifetime, so
             * it must not drift more than the nstlist-10 list); the pruned nstlist-40 run (its
             * inner list's drift measured near the absolute bar before the inner tolerance was
             * a hundredth) has the absolute bar only */
            T_CHECK(k == 1 || fabs(os[k]->drift) <= 1.5 * fabs(dcpu) + 1e-4,
                    "GPU run %d: NVE drift %.3e exceeds 1.5 x the CPU's %.3e (+1e-4)", k,
                    os[k]->drift, dcpu);
            T_CHECK(os[k]->maxdev < 1e-6, "GPU run %d: constraint deviation %.3g", k,
                    os[k]->maxdev);
        }

        /* 4. 100 ps NVE and 20 ps v-rescale */
        eng_cfg q;
        cfg_default(&q, "gpu", rc, rlist);
        run_out o3, o4;
        gpu_run("NVE 100 ps", s, &q, 50000, 100, 5000, 0, &o3);
        q.vrescale = 1;
        q.nsttcouple = 10;
        q.tau_t = 0.1;
        q.ref_t = 300.0;
        gpu_run("v-rescale 20 ps", s, &q, 10000, 10, 5000, 0, &o4);
        printf("100 ps NVE: T first 10 ps %.2f K, last 10 ps %.2f K, drift %.3e; 20 ps "
               "v-rescale (300 K): T last 10 ps %.2f K\n",
               o3.t_first, o3.t_last, o3.drift, o4.t_last);
        ncases += 2;
        T_CHECK(fabs(o3.t_last - o3.t_first) < 10.0, "100 ps NVE: T moved from %.2f to %.2f K",
                o3.t_first, o3.t_last);
        T_CHECK(fabs(o4.t_last - 300.0) < 3.0, "v-rescale: mean T of the last 10 ps %.2f K",
                o4.t_last);
    }
    hx_system_destroy(&s);
    hx_md_destroy(&a);
    hx_md_destroy(&b);
    hx_md_destroy(&ref);
    hx_system_destroy(&lat);
    tg_gpu_end();
    return t_finish("test_gpu_md", ncases);
}
