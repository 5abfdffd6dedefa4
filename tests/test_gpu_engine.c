/* The "gpu" MD backend (src/md/gpu/gpu_backend.cu) in the engine's step schedule, against the
 * "cpu" backend on the same start, over MPI ranks (1: one domain; 2+: a decomposition whose
 * halos move through the gpu-mpi halo backend), 3000 SPC/E atoms:
 *  - energies of step 0: LJ and Coulomb within 1e-6 relative (or 5e-5 kJ/mol per atom),
 *    kinetic within 1e-6 (the half step after the update comes from float forces);
 *  - after 100 steps run by hx_md_run without energies (normal steps replayed from a CUDA graph,
 *    searches every 10 steps), the energies of step 100 within 2e-4 relative of the CPU
 *    backend's (the trajectories part slowly: float forces) and the total energy within
 *    0.05 kJ/mol per atom of step 0's (no blow-up, no drift beyond the buffer's);
 *  - steps without energies report NaN, not the last energy step's values (graph replays);
 *  - v-rescale heating from 100 to 300 K: the conserved energy drifts below the NVE bar
 *    (0.005 kJ/mol/ps per atom) on the GPU as on the CPU, while the total rises.
 * Arguments: [halo backend] (default gpu-mpi). */
#include "halox/gpu.h"
#include "halox/build.h"
#include "halox/md.h"
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static hx_gpu_context *g_gpu; /* this rank's GPU, chosen once */

static hx_md *make_t(const hx_system *s, const char *backend, const char *halo, hx_comm *comm,
                     double gen_temp, int vrescale)
{
    hx_md_params p;
    hx_md_params_default(&p);
    p.gen_vel = 1;
    p.gen_temp = gen_temp;
    if (vrescale) {
        p.thermostat = HX_THERMOSTAT_VRESCALE;
        p.ref_t = 300;
        p.tau_t = 0.1;
    }
    p.seed = 5;
    p.nstlist = 10;
    p.rlist = 1.1;
    p.steps = 100;
    p.backend = backend;
    p.halo = halo;
    p.gpu = strcmp(backend, "gpu") == 0 ? g_gpu : NULL;
    hx_md *md = NULL;
    T_OK(hx_md_create_dd(s, &p, comm, NULL, &md));
    return md;
}

/* step_hook: counts the steps after the first whose energies (seen at the next step) are
 * finite: none may be, as the run computes energies at step 0 and the last step only; a replayed
 * graph step left the previous energies in place (and halox md's log counted them again) */
static hx_status count_stale(void *user, hx_md *md, long long step)
{
    const hx_md_energies *e = hx_md_last_energies(md);
    if (step >= 2 && e->step == step - 1 && isfinite(e->potential))
        (*(int *)user)++;
    return HX_OK;
}

static hx_md *make(const hx_system *s, const char *backend, const char *halo, hx_comm *comm)
{
    return make_t(s, backend, halo, comm, 300, 0);
}

/* nsteps steps; least-squares slopes of the total and the conserved energy against time, per
 * atom (kJ/mol/ps per atom), from every 10th step */
static void heat(hx_md *md, int nsteps, int natoms, double *slope_total, double *slope_cons)
{
    double st = 0, sc = 0, stt = 0, stc = 0, stot = 0, sttot = 0;
    int k = 0;
    for (int i = 0; i <= nsteps; i++) {
        hx_status rc = i < nsteps ? hx_md_step(md) : hx_md_evaluate(md);
        if (rc != HX_OK) {
            T_FAIL("v-rescale step %d: %s", i, hx_last_error());
            break;
        }
        if (i % 10)
            continue;
        const hx_md_energies *e = hx_md_last_energies(md);
        st += e->time;
        stt += e->time * e->time;
        sc += e->conserved;
        stc += e->time * e->conserved;
        stot += e->total;
        sttot += e->time * e->total;
        k++;
    }
    const double den = k * stt - st * st;
    *slope_cons = den > 0 ? (k * stc - st * sc) / den / natoms : NAN;
    *slope_total = den > 0 ? (k * sttot - st * stot) / den / natoms : NAN;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    hx_comm *world = NULL;
    int rank = 0, size = 1;
    t_mpi_begin(&argc, &argv, &world, &rank, &size);
    int ncases = 0;
    if (!t_gpu_require("test_gpu_engine")) {
        t_mpi_end(&world, "test_gpu_engine", 0);
        return T_SKIP_CODE;
    }
    const char *halo = argc > 1 ? argv[1] : "gpu-mpi";
    hx_gpu_context_params gp;
    hx_gpu_context_params_default(&gp);
    T_OK(hx_gpu_context_create(&gp, world, &g_gpu));
    hx_system *s = NULL;
    T_OK(hx_build_water("spce", 3000, 0, 7, &s));
    hx_md *cpu = s ? make(s, "cpu", NULL, world) : NULL;
    hx_md *gpu = s ? make(s, "gpu", halo, world) : NULL;
    if (cpu && gpu) {
        hx_md_energies e0c, e0g, e1c, e1g;
        T_OK(hx_md_evaluate(cpu));
        e0c = *hx_md_last_energies(cpu);
        T_OK(hx_md_evaluate(gpu));
        e0g = *hx_md_last_energies(gpu);
        const int n = s->natoms;
        const double tl = fmax(1e-6 * fabs(e0c.lj), 5e-5 * n);
        const double tc = fmax(1e-6 * fabs(e0c.coulomb), 5e-5 * n);
        const double rk = t_reldiff(e0g.kinetic, e0c.kinetic, 1e-3);
        if (rank == 0)
            printf("ranks %d, halo %s: step 0 LJ GPU %.10g CPU %.10g, Coulomb GPU %.10g CPU "
                   "%.10g, kinetic rel %.1e\n",
                   size, halo, e0g.lj, e0c.lj, e0g.coulomb, e0c.coulomb, rk);
        ncases += 3;
        T_CHECK(fabs(e0g.lj - e0c.lj) <= tl, "step 0 LJ: GPU %.12g CPU %.12g", e0g.lj, e0c.lj);
        T_CHECK(fabs(e0g.coulomb - e0c.coulomb) <= tc, "step 0 Coulomb: GPU %.12g CPU %.12g",
                e0g.coulomb, e0c.coulomb);
        T_CHECK(rk <= 1e-6, "step 0 kinetic: GPU %.12g CPU %.12g", e0g.kinetic, e0c.kinetic);
        hx_md_output out;
        memset(&out, 0, sizeof out);
        int stale = 0;
        out.step_hook = count_stale;
        out.user = &stale;
        T_OK(hx_md_run(cpu, &out));
        e1c = *hx_md_last_energies(cpu);
        T_OK(hx_md_run(gpu, &out));
        e1g = *hx_md_last_energies(gpu);
        ncases++;
        T_CHECK(stale == 0, "%d steps without energies reported the previous step's", stale);
        hx_md_timings tg;
        hx_md_get_timings(gpu, &tg);
        const double rp = t_reldiff(e1g.potential, e1c.potential, 1e-3);
        const double rt = t_reldiff(e1g.temperature, e1c.temperature, 1e-3);
        const double de = fabs(e1g.total - e0g.total) / n;
        if (rank == 0)
            printf("step %lld: potential GPU %.10g CPU %.10g (rel %.1e), T GPU %.4f CPU %.4f, "
                   "total energy change GPU %.3e CPU %.3e kJ/mol/atom; %lld steps, %lld searches, "
                   "%.1f us/step\n",
                   e1g.step, e1g.potential, e1c.potential, rp, e1g.temperature, e1c.temperature, de,
                   fabs(e1c.total - e0c.total) / n, tg.steps, tg.searches,
                   tg.steps > 0 ? 1e6 * tg.total / tg.steps : 0.0);
        ncases += 3;
        T_CHECK(rp <= 2e-4, "step 100 potential: GPU %.12g CPU %.12g", e1g.potential,
                e1c.potential);
        T_CHECK(rt <= 2e-4, "step 100 temperature: GPU %.8g CPU %.8g", e1g.temperature,
                e1c.temperature);
        T_CHECK(de <= 0.05, "GPU total energy moved by %.3g kJ/mol/atom in 100 steps", de);
        /* the step's graph is captured once, then again only after a search (a replayed step
         * with stale list sizes would miss pairs): at most one capture per search and the run's
         * first, each timed */
        ncases++;
        T_CHECK(tg.graph_steps == 0 ||
                    (tg.graph_captures >= 1 && tg.graph_captures <= tg.searches + 1 &&
                     tg.graph_capture > 0.0),
                "step graph: %lld captures (%.1f us) for %lld replayed steps and %lld searches",
                tg.graph_captures, 1e6 * tg.graph_capture, tg.graph_steps, tg.searches);
        if (rank == 0)
            printf("step graph: %lld captures, %.1f us each, %lld steps replayed\n",
                   tg.graph_captures,
                   tg.graph_captures > 0 ? 1e6 * tg.graph_capture / tg.graph_captures : 0.0,
                   tg.graph_steps);
    } else {
        T_FAIL("engine set-up failed (cpu %p, gpu %p)", (void *)cpu, (void *)gpu);
    }
    hx_md_destroy(&cpu);
    hx_md_destroy(&gpu);
    /* v-rescale heating the box from 100 to 300 K (the total energy rises ~1 kJ/mol/ps per
     * atom): the conserved energy, total minus the thermostat's work (a host double in the
     * step schedule, shared by both backends), stays within the NVE bar of 0.005 kJ/mol/ps per
     * atom on the GPU as on the CPU (CPU measured 4e-4 over 1 ps) */
    if (s) {
        const int nst = 300;
        double tc = NAN, cc = NAN, tg = NAN, cg = NAN;
        cpu = make_t(s, "cpu", NULL, world, 100, 1);
        gpu = make_t(s, "gpu", halo, world, 100, 1);
        if (cpu && gpu) {
            heat(cpu, nst, s->natoms, &tc, &cc);
            heat(gpu, nst, s->natoms, &tg, &cg);
        }
        if (rank == 0)
            printf("v-rescale 100 -> 300 K, %d steps: total-energy drift GPU %.3g CPU %.3g, "
                   "conserved-energy drift GPU %.3g CPU %.3g kJ/mol/ps per atom\n",
                   nst, tg, tc, cg, cc);
        ncases += 2;
        T_CHECK(fabs(cg) < 0.005 && fabs(cc) < 0.005,
                "conserved-energy drift GPU %.3g CPU %.3g kJ/mol/ps per atom (bar 0.005)", cg, cc);
        T_CHECK(tg > 0.1 && tc > 0.1,
                "total-energy drift GPU %.3g CPU %.3g: the thermostat did not heat (the check "
                "above is void)",
                tg, tc);
        hx_md_destroy(&cpu);
        hx_md_destroy(&gpu);
    }
    hx_gpu_context_destroy(&g_gpu);
    hx_system_destroy(&s);
    return t_mpi_end(&world, "test_gpu_engine", ncases);
}
