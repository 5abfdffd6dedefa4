/* The paper's metrics in the step schedule (hx_md_timings: local work, non-local work,
 * non-overlap), through the CPU backend on an in-process 2x1x1 decomposition:
 *  - sampled exactly every nstmetrics steps on every local domain, never with nstmetrics 0;
 *  - local and non-local work are positive; on the host the phases run one after the other, so
 *    the non-overlap is the non-local work plus the gap between two timestamps (>= it, and at
 *    most 50 µs more per sample);
 *  - sampling changes no result: energies bit-identical to an unsampled run;
 *  - a second hx_md_run reports its own steps and searches (halox bench md's warm-up). */
#include "halox/md.h"
#include "test_md_common.h"

#include <math.h>
#include <string.h>

static hx_md *run(const hx_system *sys, int nstmetrics, hx_comm *comm, double *etot)
{
    hx_md_params p;
    hx_md_params_default(&p);
    p.rc = 0.9;
    p.rlist = 1.0;
    p.steps = 20;
    p.gen_vel = 1;
    p.gen_temp = 300;
    p.nthreads = 1;
    p.nstmetrics = nstmetrics;
    hx_md *md = NULL;
    static const int grid[3] = {2, 1, 1};
    T_OK(hx_md_create_dd(sys, &p, comm, grid, &md));
    if (!md)
        return NULL;
    hx_md_output out;
    memset(&out, 0, sizeof out);
    out.nstenergy = 10;
    T_OK(hx_md_run(md, &out));
    *etot = hx_md_last_energies(md)->total;
    return md;
}

int main(void)
{
    hx_system *sys = tmd_water_lattice("spce", 8, 0.02, 11);
    hx_comm *comm = NULL;
    T_OK(hx_comm_create_serial(2, &comm));
    double e0 = 0, e5 = 0;
    hx_md *a = run(sys, 0, comm, &e0), *b = run(sys, 5, comm, &e5);
    if (a && b) {
        hx_md_timings ta, tb;
        hx_md_get_timings(a, &ta);
        hx_md_get_timings(b, &tb);
        T_CHECK(ta.metric_samples == 0, "nstmetrics 0: %lld samples", ta.metric_samples);
        /* steps 0, 5, 10, 15 of 20, on 2 domains */
        T_CHECK(tb.metric_samples == 8, "nstmetrics 5, 20 steps, 2 domains: %lld samples, want 8",
                tb.metric_samples);
        T_CHECK(tb.local_work_us > 0 && tb.nonlocal_work_us > 0,
                "local work %.3f us, non-local work %.3f us: both must be > 0", tb.local_work_us,
                tb.nonlocal_work_us);
        T_CHECK(tb.non_overlap_us >= tb.nonlocal_work_us &&
                    tb.non_overlap_us <= tb.nonlocal_work_us + 50.0 * (double)tb.metric_samples,
                "host schedule: non-overlap %.3f us should be the non-local work %.3f us plus a "
                "timestamp gap",
                tb.non_overlap_us, tb.nonlocal_work_us);
        T_CHECK(e0 == e5, "sampling the metrics changed the energy: %.17g vs %.17g", e0, e5);
        /* the search step's parts tile it: consecutive intervals from its start to its end */
        const double parts[6] = {tb.search_download, tb.search_migrate,   tb.search_plan,
                                 tb.search_halo,     tb.search_set_local, tb.search_pairs};
        double sum = 0;
        for (int k = 0; k < 6; k++) {
            T_CHECK(parts[k] >= 0, "search part %d: %.3g s < 0", k, parts[k]);
            sum += parts[k];
        }
        T_CHECK(tb.searches > 0 && fabs(sum - tb.search) <= 1e-9 * (double)tb.searches,
                "the search parts sum to %.6f s, the search took %.6f s over %lld searches", sum,
                tb.search, tb.searches);
        T_CHECK(tb.search_migrate > 0 && tb.search_pairs > 0,
                "migration %.3g s and pair search %.3g s must both be measured", tb.search_migrate,
                tb.search_pairs);
        printf("per sample: local %.1f us, non-local %.1f us, non-overlap %.1f us\n",
               tb.local_work_us / tb.metric_samples, tb.nonlocal_work_us / tb.metric_samples,
               tb.non_overlap_us / tb.metric_samples);
        /* a second run (as halox bench md runs its warm-up, then the measured steps): its
         * timings count its own steps and searches, not the warm-up's (per-step averages
         * divide this run's time by them) */
        hx_md_output out;
        memset(&out, 0, sizeof out);
        hx_md_set_steps(b, 10);
        T_OK(hx_md_run(b, &out));
        hx_md_timings t2;
        hx_md_get_timings(b, &t2);
        printf("second run: %lld steps, %lld searches (the first: %lld, %lld)\n", t2.steps,
               t2.searches, tb.steps, tb.searches);
        T_CHECK(t2.steps == 10 && t2.searches >= 1 && t2.searches <= 2,
                "a second run of 10 steps (nstlist 10) reports %lld steps and %lld searches: "
                "counts of the earlier run kept",
                t2.steps, t2.searches);
    }
    hx_md_destroy(&a);
    hx_md_destroy(&b);
    hx_comm_destroy(&comm);
    hx_system_destroy(&sys);
    return t_finish("test_md_metrics", 1);
}
