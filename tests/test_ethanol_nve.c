/* NVE energy conservation of an ethanol-water mixture with constraints at 2 fs.
 *
 * System: hx_build_mixture, 2500 atoms at ethanol mole fraction 0.1 (TIP3P water; ethanol with
 * SHAKE on its 6 bonds to hydrogen, water with SETTLE), velocities drawn at 300 K, rc 1.0 nm,
 * reaction field eps_rf = infinity, rlist from the default buffer tolerance, nstlist 10; 5 ps of
 * NVE at 2 fs (the brief's production step). Checks:
 *  - drift: slope of a least-squares line through the total energy after the first 0.5 ps,
 *    per atom, below 0.005 kJ/mol/ps: the buffer tolerance the pair list was sized for (the
 *    pair list is the only source of systematic drift here: leap-frog is symplectic, and with
 *    the constraints solved to 1e-10 relative a 2 fs step leaves an energy error far below the
 *    list's);
 *  - constraints: the largest relative deviation at every energy step below 2e-10 (SHAKE's
 *    tolerance 1e-10 with rounding; SETTLE is exact to rounding);
 *  - temperature: the means of 1.5-3 ps and 3.5-5 ps within 10 K (one sample's spread is
 *    T sqrt(2/ndf) = 5 K, a mean over 1.5 ps ~1 K; a drift at the tolerance moves it ~2.5 K);
 *  - missed pairs stay rare: below 1e-4 of the list per checked search.
 * The measured drift is printed (docs/design/ethanol.md quotes it). */
#include "halox/build.h"
#include "halox/log.h"
#include "test_ethanol_common.h"

#include <math.h>
#include <stdlib.h>

#define NSTEPS 2500
#define NSTE 10

int main(void)
{
    int ncases = 0;
    hx_log_set_level(HX_LOG_ERROR);
    hx_mixture_params mp;
    hx_mixture_params_default(&mp);
    mp.natoms = 2500;
    mp.seed = 4;
    hx_system *sys = NULL;
    T_OK(hx_build_mixture(&mp, &sys, NULL));
    if (!sys)
        return t_finish("test_ethanol_nve", ncases);
    hx_md_params p;
    t_md_params(&p, "oplsaa", 8);
    p.nthreads = 2;
    p.nstcheck = 1;
    hx_md *md = NULL;
    T_OK(hx_md_create(sys, &p, &md));
    if (!md) {
        hx_system_destroy(&sys);
        return t_finish("test_ethanol_nve", ncases);
    }
    const int n = NSTEPS / NSTE + 1;
    double *t = malloc(sizeof(double) * n), *etot = malloc(sizeof(double) * n),
           *temp = malloc(sizeof(double) * n);
    double devmax = 0;
    int k = 0;
    hx_status st = HX_OK;
    for (int s = 0; s <= NSTEPS && st == HX_OK; s++) {
        const int want = s % NSTE == 0;
        st = s < NSTEPS ? hx_md_step(md) : hx_md_evaluate(md);
        if (st != HX_OK || !want)
            continue;
        const hx_md_energies *e = hx_md_last_energies(md);
        t[k] = e->time;
        etot[k] = e->total;
        temp[k] = e->temperature;
        devmax = fmax(devmax, e->constraint_deviation);
        k++;
    }
    T_CHECK(st == HX_OK, "NVE run failed: %s", hx_last_error());
    if (st == HX_OK) {
        /* least-squares slope after 0.5 ps */
        double st_ = 0, se = 0, stt = 0, ste = 0;
        int m = 0;
        for (int i = 0; i < k; i++)
            if (t[i] >= 0.5) {
                st_ += t[i];
                se += etot[i];
                m++;
            }
        st_ /= m;
        se /= m;
        for (int i = 0; i < k; i++)
            if (t[i] >= 0.5) {
                stt += (t[i] - st_) * (t[i] - st_);
                ste += (t[i] - st_) * (etot[i] - se);
            }
        const double drift = ste / stt / sys->natoms;
        double t1 = 0, t2 = 0;
        int n1 = 0, n2 = 0;
        for (int i = 0; i < k; i++) {
            if (t[i] >= 1.5 && t[i] < 3.0)
                t1 += temp[i], n1++;
            if (t[i] >= 3.5)
                t2 += temp[i], n2++;
        }
        t1 /= n1;
        t2 /= n2;
        hx_md_timings tm;
        hx_md_get_timings(md, &tm);
        const double missed =
            tm.checked_searches > 0 ? (double)tm.missed_pairs / tm.checked_searches : 0.0;
        printf("ethanol-water NVE: %d atoms, rlist %.3f nm, %d steps at 2 fs: drift %.2e "
               "kJ/mol/ps per atom, largest constraint deviation %.2e, T %.1f K then %.1f K, "
               "%.1f missed pairs per search of %lld pairs\n",
               sys->natoms, hx_md_get_params(md)->rlist, NSTEPS, drift, devmax, t1, t2, missed,
               hx_md_npairs(md));
        ncases++;
        T_CHECK(fabs(drift) < 0.005, "energy drift %.3g kJ/mol/ps per atom (limit 0.005)", drift);
        ncases++;
        T_CHECK(devmax <= 2e-10, "constraint deviation %.3g (limit 2e-10)", devmax);
        ncases++;
        T_CHECK(fabs(t1 - t2) < 10.0, "temperature %.2f K then %.2f K", t1, t2);
        ncases++;
        T_CHECK(missed < 1e-4 * (double)hx_md_npairs(md), "%.1f missed pairs per search", missed);
    }
    free(t);
    free(etot);
    free(temp);
    hx_md_destroy(&md);
    hx_system_destroy(&sys);
    return t_finish("test_ethanol_nve", ncases);
}
