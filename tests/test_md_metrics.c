/* The paper's metrics in the step schedule (hx_md_timings: local work, non-local work,
 * non-overlap), through the CPU backend on an in-process 2x1x1 decomposition:
 *  - sampled exactly every nstmetrics steps on every local domain, never with nstmetrics 0;
 *  - local and non-local work are positive; on the host the phases run one after the other, so
 *    the non-overlap is the non-local work plus the gap between two timestamps (>= it, and at
 *    most 50 µs more per sample);
 *  - sampling changes no result: energies bit-identical to an unsampled run;
 *  - a second hx_md_run reports its own steps and searches (halox bench md's warm-up);
 *  - the engine's step timing (hx_md_params.step_timing) on the host clock: one record per
 *    step of the latest run, in order, searches flagged where the schedule searched, positive
 *    times; with HX_MD_STEP_BREAKDOWN the local work and the update of each step fit in its
 *    time, without it they are NaN; timing changes no result either; with HX_MD_STEP_SPANS a
 *    record per search step and per span of plain steps between searches. */
#include "halox/md.h"
#include "test_md_common.h"

#include <math.h>
#include <string.h>

static hx_md *run_t(const hx_system *sys, int nstmetrics, int step_timing, hx_comm *comm,
                    double *etot)
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
    p.step_timing = step_timing;
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

static hx_md *run(const hx_system *sys, int nstmetrics, hx_comm *comm, double *etot)
{
    return run_t(sys, nstmetrics, HX_MD_STEP_TIMING_OFF, comm, etot);
}

/* The records of md's latest run: n steps from first, searches every 10 steps (the default
 * nstlist) but at the run's first step (the engine's creation, or the previous run's closing
 * evaluation, searched there), breakdown parts or NaN. */
static void check_times(hx_md *md, long long first, int n, int breakdown)
{
    hx_md_step_time rec[32];
    int got = -1;
    T_OK(hx_md_get_step_times(md, rec, 32, &got));
    T_CHECK(got == n, "%d step records, want %d", got, n);
    int bad = 0;
    for (int k = 0; k < got && k < 32; k++) {
        const hx_md_step_time *r = &rec[k];
        const long long step = first + k;
        const int search = k > 0 && step % 10 == 0;
        int ok = r->step == step && r->search == search && !r->graph && r->us > 0 && r->nsteps == 1;
        if (breakdown)
            ok = ok && r->local_us > 0 && r->update_us > 0 && r->local_us + r->update_us <= r->us;
        else
            ok = ok && isnan(r->local_us) && isnan(r->update_us);
        if (!ok && bad++ < 4)
            T_FAIL("step record %d: step %lld (want %lld), search %d (want %d), graph %d, %.3g us, "
                   "local %.3g us, update %.3g us (breakdown %d)",
                   k, r->step, step, r->search, search, r->graph, r->us, r->local_us, r->update_us,
                   breakdown);
    }
}

/* HX_MD_STEP_SPANS over n steps from first (searches every 10 steps, not at the run's first
 * step): a record per search step and one per span of plain steps between them, the spans'
 * steps adding up to the run, on the host clock positive times. */
static void check_spans(hx_md *md, long long first, int n)
{
    hx_md_step_time rec[32];
    int got = -1;
    T_OK(hx_md_get_step_times(md, rec, 32, &got));
    long long step = first;
    int k = 0, bad = 0;
    while (step < first + n && k < got && k < 32) {
        const hx_md_step_time *r = &rec[k];
        const int search = step > first && step % 10 == 0;
        /* a span ends before the next search or at the run's end */
        long long last = step;
        if (!search) {
            while (last + 1 < first + n && (last + 1) % 10 != 0)
                last++;
        }
        const int want_n = (int)(last - step + 1);
        if ((r->step != last || r->search != search || r->nsteps != want_n || !(r->us > 0)) &&
            bad++ < 4)
            T_FAIL("span record %d: step %lld search %d nsteps %d %.3g us; want step %lld search "
                   "%d nsteps %d, us > 0",
                   k, r->step, r->search, r->nsteps, r->us, last, search, want_n);
        step = last + 1;
        k++;
    }
    T_CHECK(step == first + n && k == got,
            "spans: %d records cover steps %lld..%lld, want %d records covering %lld..%lld", got,
            first, step - 1, k, first, first + n - 1);
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
    /* step timing, with the metrics sampled too (both read the same marks) */
    double ec = 0;
    hx_md *c = run_t(sys, 5, HX_MD_STEP_BREAKDOWN, comm, &ec);
    if (a && c) {
        T_CHECK(ec == e0, "step timing changed the energy: %.17g vs %.17g", ec, e0);
        hx_md_timings tc;
        hx_md_get_timings(c, &tc);
        T_CHECK(tc.metric_samples == 8, "with the breakdown: %lld metric samples, want 8",
                tc.metric_samples);
        check_times(c, 0, 20, 1);
        /* switched between runs; a run of 10 more steps */
        T_OK(hx_md_set_step_timing(c, HX_MD_STEP_TIMES));
        T_CHECK(hx_md_set_step_timing(c, 4) == HX_ERR_INVALID_ARG, "step timing 4 accepted");
        hx_md_set_steps(c, 10);
        T_OK(hx_md_run(c, NULL));
        check_times(c, 20, 10, 0);
        /* spans: steps 30..54, searches at 40 and 50 (halox bench md's split of the device time
         * between search steps and plain ones) */
        T_OK(hx_md_set_step_timing(c, HX_MD_STEP_SPANS));
        hx_md_set_steps(c, 25);
        T_OK(hx_md_run(c, NULL));
        check_spans(c, 30, 25);
        T_OK(hx_md_set_step_timing(c, HX_MD_STEP_TIMING_OFF));
        T_OK(hx_md_run(c, NULL));
        int n = -1;
        T_OK(hx_md_get_step_times(c, NULL, 0, &n));
        T_CHECK(n == 0, "step timing off: %d records", n);
    }
    hx_md_destroy(&a);
    hx_md_destroy(&b);
    hx_md_destroy(&c);
    hx_comm_destroy(&comm);
    hx_system_destroy(&sys);
    return t_finish("test_md_metrics", 1);
}
