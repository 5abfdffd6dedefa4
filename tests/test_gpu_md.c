/* The single-GPU MD step (tests/gpu_md_driver.c over src/gpu) against the CPU engine:
 *  1. energies of the same starting state (potential at step 0, the first step's kinetic
 *     energy): LJ and Coulomb within 1e-6 relative (5e-5 kJ/mol per atom for a total that is a
 *     small remainder), kinetic within 1e-6 (its half step after the update comes from float
 *     forces);
 *  2. at every search of a run, the GPU list holds every pair within rlist of the search
 *     positions (tg_check_list: missing pairs must be 0, printed per search);
 *  3. NVE energy drift over 10 ps at 2 fs of a thermalised 3000-atom SPC/E box (the protocol
 *     of tests/test_md_nve.c, buffer from the tolerance 0.005 kJ/mol/ps/atom), on the CPU
 *     engine (double) and on the GPU from the same state, nstlist 10, and on the GPU with
 *     nstlist 40 and the rolling prune: |drift| <= 7.6e-4 kJ/mol/ps/atom and <= 1.5 x the CPU's
 *     (+ 1e-4 for the scatter of a fitted slope), constraint deviation < 1e-6 (SETTLE in double,
 *     positions published in float);
 *  4. 100 ps NVE on the GPU stays at its temperature (mean of the last 10 ps within 10 K of the
 *     first 10 ps: a drift at the bar would move it ~5 K); 20 ps of v-rescale at 300 K (every
 *     10 steps) holds 300 K (mean of the last 10 ps within 3 K, ~5 standard errors);
 *  5. steps replayed from a CUDA graph equal steps launched one by one (same state after 100
 *     steps: total energy within 1e-6 relative, positions within 1e-4 nm: atomics make the
 *     force sums' order, and so the last bits, vary).
 * --quick (CPU emulation): 1500 atoms, a few dozen steps of parts 1, 2 and 5 only. */
#include "gpu_md_driver.h"
#include "test_gpu_common.h"

#include "halox/build.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int ncases;

/* CPU engine from sys (force field applied or not), NVE or v-rescale. */
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

/* A copy of the engine's current state with the force field applied. */
static hx_system *state_of(hx_md *md, hx_forcefield **ff)
{
    hx_system *s = NULL;
    T_OK(hx_system_copy(hx_md_system(md), &s));
    T_OK(hx_forcefield_create(hx_md_get_params(md)->model, ff));
    T_OK(hx_forcefield_apply(*ff, s));
    return s;
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

/* GPU run of nsteps from sys; energies every nste steps into the slope fit; temperature means
 * of the first and last tlen steps. */
typedef struct run_out {
    double drift; /* kJ/mol/ps/atom */
    double t_first, t_last, maxdev;
    long long missing;
    int searches_checked;
    gmd_energies e0;
} run_out;

static void gpu_run(const char *what, const hx_system *s, const hx_forcefield *ff,
                    const gmd_params *gp, int nsteps, int nste, int tlen, int check_lists,
                    run_out *o)
{
    memset(o, 0, sizeof *o);
    gmd *g = NULL;
    T_OK(gmd_create(s, ff, gp, &g));
    if (!g)
        return;
    fit f = {0, 0, 0, 0, 0};
    int nfirst = 0, nlast = 0;
    /* positions before and after a search step: the list check needs how far the step moved the
     * atoms (the fused update writes the next positions into the list's slots) */
    hx_system *xs0 = NULL, *xs1 = NULL;
    if (check_lists) {
        T_OK(hx_system_copy(s, &xs0));
        T_OK(hx_system_copy(s, &xs1));
    }
    double *moved = check_lists ? malloc(sizeof(double) * 3 * (size_t)s->natoms) : NULL;
    for (int i = 0; i <= nsteps; i++) {
        gmd_energies e;
        const int want = i % nste == 0 || i == nsteps;
        const int check = check_lists && xs0 && xs1 && moved && i % gp->nstlist == 0;
        if (check)
            T_OK(gmd_download(g, xs0));
        hx_status st = gmd_step(g, want ? &e : NULL);
        if (st != HX_OK) {
            T_FAIL("%s: GPU step %d: %s", what, i, hx_last_error());
            break;
        }
        if (check) {
            T_OK(gmd_download(g, xs1));
            /* a step moves an atom by far less than half the box; the search may wrap it */
            for (int k = 0; k < 3 * s->natoms; k++) {
                const double bx = s->box[k % 3], v = xs1->x[k] - xs0->x[k];
                moved[k] = v - bx * nearbyint(v / bx);
            }
            /* the list built at this step, against the positions it was built on */
            hx_local_set set;
            hx_zone_range rg = {0, s->natoms, 0};
            memset(&set, 0, sizeof set);
            set.n = s->natoms;
            set.x = NULL; /* tg_check_list: take the search positions from the list */
            set.mol = NULL;
            int *mol = malloc(sizeof(int) * (size_t)s->natoms);
            for (int m = 0; m < s->nmol; m++)
                for (int a = s->mol_start[m]; a < s->mol_start[m + 1]; a++)
                    mol[a] = m;
            set.mol = mol;
            set.type = s->type;
            set.q = s->q;
            set.nranges = 1;
            set.ranges = &rg;
            for (int d = 0; d < 3; d++) {
                set.periodic[d] = 1;
                set.box[d] = s->box[d];
            }
            char w[160];
            snprintf(w, sizeof w, "%s search at step %d", what, i);
            tg_list_report rep;
            tg_check_list(gmd_nb(g), &set, moved, gp->rlist,
                          gp->rlist_inner > 0 ? gp->rlist_inner : gp->rlist, w, &rep);
            o->missing += rep.missing_outer + rep.missing_inner;
            o->searches_checked++;
            if (i < 3 * gp->nstlist)
                printf("%-40s pairs < rlist %lld, missing %lld (outer) %lld (inner)\n", w,
                       rep.ref_outer, rep.missing_outer, rep.missing_inner);
            free(mol);
        }
        if (!want)
            continue;
        if (i == 0)
            o->e0 = e;
        if (!isfinite(e.total)) {
            T_FAIL("%s: step %d: non-finite energy", what, i);
            break;
        }
        fit_add(&f, i * gp->dt, e.total);
        o->maxdev = fmax(o->maxdev, e.constraint_deviation);
        if (i < tlen) {
            o->t_first += e.temperature;
            nfirst++;
        }
        if (i > nsteps - tlen) {
            o->t_last += e.temperature;
            nlast++;
        }
    }
    o->drift = fit_slope(&f) / s->natoms;
    o->t_first /= nfirst > 0 ? nfirst : 1;
    o->t_last /= nlast > 0 ? nlast : 1;
    free(moved);
    hx_system_destroy(&xs0);
    hx_system_destroy(&xs1);
    gmd_destroy(&g);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!t_gpu_require("test_gpu_md"))
        return T_SKIP_CODE;
    /* --quick or HALOX_GPU_TEST_QUICK=1 (compute-sanitizer runs): small systems, few steps */
    const char *qenv = getenv("HALOX_GPU_TEST_QUICK");
    const int quick = (argc > 1 && !strcmp(argv[1], "--quick")) || (qenv && atoi(qenv) > 0);
    const int natoms = quick ? 1500 : 3000;
    const double rc = quick ? 0.9 : 1.0;
    /* thermalised start: the protocol of test_md_nve */
    hx_system *lat = NULL;
    T_OK(hx_build_water("spce", natoms, 0, 7, &lat));
    if (!lat)
        return t_finish("test_gpu_md", 0);
    hx_md *a = cpu_md(lat, 0.0005, rc, 0, 10, 1, 1);
    cpu_run(a, quick ? 20 : 400);
    hx_md *b = a ? cpu_md(hx_md_system(a), 0.002, rc, 0, 10, 1, 0) : NULL;
    cpu_run(b, quick ? 20 : 500);
    if (!b)
        return t_finish("test_gpu_md", 0);
    /* NVE reference on the CPU, buffer from the tolerance */
    hx_md *ref = cpu_md(hx_md_system(b), 0.002, rc, 0, 10, 0, 0);
    if (!ref)
        return t_finish("test_gpu_md", 0);
    const double rlist = hx_md_get_params(ref)->rlist;
    hx_forcefield *ff = NULL;
    hx_system *s = state_of(ref, &ff);
    const int n = s->natoms;

    /* 1. energies of the same state */
    {
        T_OK(hx_md_evaluate(ref));
        const hx_md_energies *ec = hx_md_last_energies(ref);
        gmd_params gp;
        gmd_params_default(&gp);
        gp.rc = rc;
        gp.rlist = rlist;
        gmd *g = NULL;
        T_OK(gmd_create(s, ff, &gp, &g));
        gmd_energies eg;
        memset(&eg, 0, sizeof eg);
        if (g)
            T_OK(gmd_step(g, &eg));
        gmd_destroy(&g);
        const double rlj = t_reldiff(eg.lj, ec->lj, 1e-3),
                     rco = t_reldiff(eg.coulomb, ec->coulomb, 1e-3);
        const double rke = t_reldiff(eg.kinetic, ec->kinetic, 1e-3);
        printf("energies of step 0, %d atoms, rlist %.4f: LJ GPU %.10g CPU %.10g (rel %.1e), "
               "Coulomb GPU %.10g CPU %.10g (rel %.1e), kinetic rel %.1e, pairs within rc %lld\n",
               n, rlist, eg.lj, ec->lj, rlj, eg.coulomb, ec->coulomb, rco, rke, eg.npairs);
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

    /* 2. lists at every search of a short run, with and without the rolling prune */
    {
        gmd_params gp;
        gmd_params_default(&gp);
        gp.rc = rc;
        gp.rlist = rlist + 0.1;
        gp.rlist_inner = rlist;
        gp.prune_parts = 4;
        gp.nstlist = 20;
        run_out o;
        gpu_run("lists (rolling prune)", s, ff, &gp, quick ? 41 : 200, 10, 1, 1, &o);
        ncases++;
        printf("lists: %d searches checked, %lld pairs missing in total\n", o.searches_checked,
               o.missing);
        T_CHECK(o.missing == 0 && o.searches_checked > 1,
                "%lld pairs missing from the GPU lists over %d searches", o.missing,
                o.searches_checked);
    }

    /* 5. graph replay equals direct launches */
    {
        gmd_params gp;
        gmd_params_default(&gp);
        gp.rc = rc;
        gp.rlist = rlist;
        gp.nstlist = 10;
        const int steps = quick ? 25 : 100;
        hx_system *s1 = NULL, *s2 = NULL;
        T_OK(hx_system_copy(s, &s1));
        T_OK(hx_system_copy(s, &s2));
        gmd_energies e1, e2;
        memset(&e1, 0, sizeof e1);
        memset(&e2, 0, sizeof e2);
        for (int pass = 0; pass < 2; pass++) {
            gp.use_graph = pass == 0;
            gmd *g = NULL;
            T_OK(gmd_create(s, ff, &gp, &g));
            for (int i = 0; g && i < steps; i++)
                T_OK(gmd_step(g, NULL));
            if (g)
                T_OK(gmd_step(g, pass == 0 ? &e1 : &e2));
            if (g)
                T_OK(gmd_download(g, pass == 0 ? s1 : s2));
            gmd_destroy(&g);
        }
        double dx = 0;
        for (int k = 0; k < 3 * n; k++)
            dx = fmax(dx, fabs(s1->x[k] - s2->x[k]));
        const double re = t_reldiff(e1.total, e2.total, 1e-3);
        printf("graph replay vs direct launches, %d steps: max |dx| %.2e nm, total energy %.10g "
               "vs %.10g (rel %.1e)\n",
               steps, dx, e1.total, e2.total, re);
        ncases += 2;
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
        T_CHECK(re <= 1e-5, "graph vs direct: total energy %.12g vs %.12g", e1.total, e2.total);
        hx_system_destroy(&s1);
        hx_system_destroy(&s2);
    }

    if (!quick) {
        /* 3. NVE drift: CPU engine, GPU nstlist 10, GPU nstlist 40 + rolling prune */
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
        gmd_params gp;
        gmd_params_default(&gp);
        gp.rc = rc;
        gp.rlist = rlist;
        gp.nstlist = 10;
        run_out o1, o2;
        gpu_run("NVE nstlist 10", s, ff, &gp, nsteps, nste, 1000, 0, &o1);
        /* nstlist 40: outer buffer for 40 steps, inner for 5 (rolling prune in 4 parts) */
        double r40 = rlist, r5 = rlist;
        {
            hx_nb_params nbp = {rc, 0.0, 1.0};
            T_OK(hx_nb_rlist_from_tolerance(ff, s, &nbp, 0.002, 40, 300.0, 0.005, &r40));
            T_OK(hx_nb_rlist_from_tolerance(ff, s, &nbp, 0.002, 5, 300.0, 0.005, &r5));
        }
        gp.nstlist = 40;
        gp.rlist = r40;
        gp.rlist_inner = r5;
        gp.prune_parts = 4;
        gpu_run("NVE nstlist 40 prune 4", s, ff, &gp, nsteps, nste, 1000, 0, &o2);
        printf("NVE 10 ps, %d atoms: drift CPU %.3e, GPU (nstlist 10, rlist %.4f) %.3e, GPU "
               "(nstlist 40, rlist %.4f/%.4f, prune 4) %.3e kJ/mol/ps/atom; max constraint "
               "deviation %.1e / %.1e\n",
               n, dcpu, rlist, o1.drift, r40, r5, o2.drift, o1.maxdev, o2.maxdev);
        const run_out *os[2] = {&o1, &o2};
        for (int k = 0; k < 2; k++) {
            ncases += 3;
            T_CHECK(fabs(os[k]->drift) <= 7.6e-4,
                    "GPU run %d: NVE drift %.3e kJ/mol/ps/atom exceeds 7.6e-4", k, os[k]->drift);
            /* 1.5 x the CPU's: for the run with the CPU's settings (nstlist 10, the same
             * rlist); the pruned nstlist-40 run has another list and only the absolute bar */
            T_CHECK(k == 1 || fabs(os[k]->drift) <= 1.5 * fabs(dcpu) + 1e-4,
                    "GPU run %d: NVE drift %.3e exceeds 1.5 x the CPU's %.3e (+1e-4)", k,
                    os[k]->drift, dcpu);
            T_CHECK(os[k]->maxdev < 1e-6, "GPU run %d: constraint deviation %.3g", k,
                    os[k]->maxdev);
        }

        /* 4. 100 ps NVE and 20 ps v-rescale */
        gmd_params gq;
        gmd_params_default(&gq);
        gq.rc = rc;
        gq.rlist = rlist;
        gq.nstlist = 10;
        run_out o3, o4;
        gpu_run("NVE 100 ps", s, ff, &gq, 50000, 100, 5000, 0, &o3);
        gq.vrescale = 1;
        gq.nsttcouple = 10;
        gq.tau_t = 0.1;
        gq.ref_t = 300.0;
        gpu_run("v-rescale 20 ps", s, ff, &gq, 10000, 10, 5000, 0, &o4);
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
    hx_forcefield_destroy(&ff);
    hx_md_destroy(&a);
    hx_md_destroy(&b);
    hx_md_destroy(&ref);
    hx_system_destroy(&lat);
    tg_gpu_end();
    return t_finish("test_gpu_md", ncases);
}
