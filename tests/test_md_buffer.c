/* The Verlet buffer model (src/md/buffer.c) against what it predicts: pairs missed by a list.
 *
 * The buffer estimate rests on a model of how far atoms move during a list's lifetime
 * (ballistic translation, bounded rotation of rigid waters). hx_nb_buffer_missed_pairs gives
 * that model's expected number of pairs that start beyond rlist and end inside rc a time t
 * later; the CPU engine counts exactly those pairs at every search (nstcheck 1: inside rc now,
 * beyond rlist at the previous search). A model that under-estimates the motion, which would
 * make every rlist it chooses too short, shows as more missed pairs than predicted.
 *
 * 1000 SPC/E waters, thermalised at 300 K, then NVE at dt 2 fs for each (nstlist, tolerance):
 * short lists (nstlist 10), where the model is ballistic, and long ones (25, 50), where the
 * rotation bound decides; the larger tolerance there gives short enough buffers that pairs are
 * missed at all. Checks per configuration:
 *  - measured <= predicted + 3 sqrt(predicted) + 3 (Poisson scatter of the prediction, plus a
 *    few pairs of slack for predictions near zero);
 *  - the check can fail: where pairs were missed, a model with half the displacement (the
 *    prediction for half the lifetime, as a model without the waters' rotation roughly is for
 *    the hydrogens) predicts fewer than were measured.
 * It prints measured and predicted counts, which say how conservative the model is. Measured
 * when it was written: 3341 against 7452 at nstlist 10 (the ballistic regime: the model is 2x
 * conservative), 88 against 10911 at nstlist 25 and 0 against 5191 at nstlist 50 (over 50-100 fs
 * a water's centre of mass is no longer ballistic: its cage turns it back, which the model
 * leaves out on the safe side). */
#include "test_md_common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static hx_md *make(const hx_system *s, double dt, int nstlist, double tol, int thermo, int gen)
{
    return tmd_water_md(s, dt, nstlist, tol, thermo, gen, 2);
}

static int run(hx_md *md, int steps, double *tsum)
{
    for (int i = 0; i < steps; i++) {
        if (hx_md_step(md) != HX_OK) {
            T_FAIL("step %lld failed: %s", hx_md_current_step(md), hx_last_error());
            return 0;
        }
        if (tsum)
            *tsum += hx_md_last_energies(md)->temperature;
    }
    return 1;
}

int main(void)
{
    hx_system *s = tmd_water_lattice("spce", 10, 0.02, 7);
    hx_md *a = make(s, 0.0005, 10, 0.005, 1, 1);
    run(a, 400, NULL);
    hx_md *b = make(hx_md_system(a), 0.002, 10, 0.005, 1, 0);
    run(b, 500, NULL);
    hx_forcefield *ff = NULL;
    hx_system *sf = NULL;
    T_OK(hx_forcefield_create("spce", &ff));
    T_OK(hx_system_copy(hx_md_system(b), &sf));
    T_OK(hx_forcefield_apply(ff, sf));
    const struct {
        int nstlist;
        double tol;
        int searches;
    } cfg[] = {{10, 0.005, 60}, {25, 0.05, 40}, {50, 0.05, 30}};
    for (size_t c = 0; c < sizeof cfg / sizeof cfg[0]; c++) {
        hx_md *md = make(hx_md_system(b), 0.002, cfg[c].nstlist, cfg[c].tol, 0, 0);
        double tsum = 0.0;
        const int steps = cfg[c].nstlist * cfg[c].searches;
        if (!run(md, steps, &tsum))
            break;
        hx_md_timings tm;
        hx_md_get_timings(md, &tm);
        const double temp = tsum / steps, rlist = hx_md_get_params(md)->rlist;
        const double life = cfg[c].nstlist * 0.002;
        hx_nb_params nbp = {.rc = 1.0, .eps_rf = 0.0, .eps_r = 1.0};
        double pred = 0.0, half = 0.0;
        T_OK(hx_nb_buffer_missed_pairs(ff, sf, &nbp, life, temp, rlist, &pred));
        T_OK(hx_nb_buffer_missed_pairs(ff, sf, &nbp, 0.5 * life, temp, rlist, &half));
        const double n = (double)tm.checked_searches;
        const double meas = (double)tm.missed_pairs, ptot = pred * n, htot = half * n;
        printf("nstlist %d, tolerance %g: rlist %.3f nm, T %.1f K, %lld checked searches: "
               "%.0f pairs missed, model %.1f (%.2f per search; measured/model %.3f), "
               "half-displacement model %.2f\n",
               cfg[c].nstlist, cfg[c].tol, rlist, temp, tm.checked_searches, meas, ptot, pred,
               ptot > 0 ? meas / ptot : 0.0, htot);
        /* every search but the first, which has no list before it */
        T_CHECK(tm.checked_searches == cfg[c].searches - 1,
                "nstlist %d: %lld searches checked, expected %d", cfg[c].nstlist,
                tm.checked_searches, cfg[c].searches - 1);
        T_CHECK(meas <= ptot + 3.0 * sqrt(ptot) + 3.0,
                "nstlist %d, rlist %.3f: %.0f pairs missed in %lld searches, the buffer model "
                "predicts %.1f: it under-estimates the motion",
                cfg[c].nstlist, rlist, meas, tm.checked_searches, ptot);
        if (meas >= 10.0)
            T_CHECK(htot + 3.0 * sqrt(htot) < meas,
                    "nstlist %d: a model with half the displacement predicts %.1f, not below the "
                    "%.0f measured: the check above would not catch it",
                    cfg[c].nstlist, htot, meas);
        hx_md_destroy(&md);
    }
    hx_system_destroy(&sf);
    hx_forcefield_destroy(&ff);
    hx_md_destroy(&a);
    hx_md_destroy(&b);
    hx_system_destroy(&s);
    return t_finish("test_md_buffer", 3);
}
