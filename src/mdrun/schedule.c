/* The step schedule: one order of work for every backend (docs/ARCHITECTURE.md,
 * "The step schedule"), written once.
 *
 *   search step:  [download] migrate, rebuild the plan, local topology, halo update,
 *                 set_local, coordinate halo, pair search                      (repartition)
 *   every step:   local forces | coordinate halo -> non-local forces -> force halo | update
 *
 * Home-home pairs need only home coordinates, so they are computed while the halo travels; on a
 * GPU backend the two chains run on different streams and overlap, on the CPU they run one
 * after the other. Host round trips and collectives happen only on search steps, energy steps
 * (potential energies reported) and thermostat steps (every nsttcouple steps with v-rescale);
 * a plain step enqueues work and returns, and a backend that can capture it replays it as one
 * CUDA graph. Local failures between those points are recorded and agreed at the next one, so
 * that no rank is left waiting in an exchange. */
#include "mdrun/md_impl.h"
#include "comm/comm_impl.h"
#include "halo/halo_dev.h"
#include "core/error.h"
#include "core/fault.h"
#include "core/timer.h"
#include "gpu/trace.h"
#include "halox/log.h"

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

hx_status hx_md_note(hx_md *md, hx_status st)
{
    if (st == HX_OK)
        return HX_OK;
    if (hx_comm_nranks(md->comm) == 1)
        return st; /* nobody waits for this process: report at once */
    if (md->pending == HX_OK) {
        md->pending = st;
        md->pending_step = md->step;
        snprintf(md->pending_msg, sizeof md->pending_msg, "%s", hx_last_error_message());
    }
    return HX_OK;
}

/* The failure noted since the last collective (hx_md_note), made the current error again and
 * returned; HX_OK when there is none. */
static hx_status take_pending(hx_md *md)
{
    hx_status st = md->pending;
    if (st != HX_OK) {
        md->pending = HX_OK;
        hx_error_set(st, __FILE__, __LINE__, __func__, "%s", md->pending_msg);
    }
    return st;
}

hx_status hx_md_agree(hx_md *md)
{
    return hx_comm_agree(md->comm, take_pending(md));
}

#define NOTE(call) HX_TRY(hx_md_note(md, (call)))

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

/* ---- the thermostat (Bussi, Donadio, Parrinello 2007) -------------------------------------- */

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

/* v-rescale factor for kinetic energy ke, coupling applied once per nsttcouple steps (the
 * coupling interval is nsttcouple * dt, as in GROMACS). Every rank draws the same numbers. */
static double vrescale_lambda(hx_md *md, double ke)
{
    if (ke <= 0)
        return 1.0;
    double kt = 0.5 * md->ndf * HX_BOLTZ * md->p.ref_t;
    double c = exp(-md->p.dt * md->p.nsttcouple / md->p.tau_t);
    double r1 = hx_rng_normal(&md->trng);
    double sr = rng_chisq(&md->trng, md->ndf - 1.0);
    double knew = ke + (1.0 - c) * (kt * (r1 * r1 + sr) / md->ndf - ke) +
                  2.0 * r1 * sqrt(c * (1.0 - c) * kt * ke / md->ndf);
    return knew > 0 ? sqrt(knew / ke) : 0.0;
}

/* ---- repartition ---------------------------------------------------------------------------- */

/* local: this process's status of the search step so far (the pair search's), agreed in the
 * same collective as the sums (on the device path: one collective where an agreement and a sum
 * were two; the host path agrees first, as it always has) */
static hx_status update_dd_info(hx_md *md, hx_status local, const long long *dev_stats)
{
    if (!dev_stats)
        HX_TRY(hx_comm_agree(md->comm, local));
    hx_decomp_stats s;
    if (dev_stats) {
        /* from the device search step's reduction: no collective of their own */
        memset(&s, 0, sizeof s);
        const hx_dd *dd = hx_decomp_dd(md->dec);
        hx_dd_grid(dd, s.grid);
        for (int k = 0; k < 3; k++) {
            s.pulses[k] = hx_dd_pulses_dim(dd, k);
            s.cell[k] = hx_dd_cell_size(dd, k);
        }
        s.r_comm = hx_decomp_r_comm(md->dec);
        s.home_max = dev_stats[0];
        s.home_min = dev_stats[1];
        s.halo_max = dev_stats[2];
        s.halo_min = dev_stats[3];
    } else {
        HX_TRY(hx_decomp_get_stats(md->dec, &s));
    }
    double *np = md->red; /* [nlocal] scratch */
    for (int i = 0; i < md->nlocal; i++)
        np[i] = (double)md->B->npairs(md->bimpl, i);
    /* with the device statistics the halo total rides along with the pair count */
    if (dev_stats)
        for (int i = 0; i < md->nlocal; i++) {
            const hx_domain_plan *p = hx_plan_domain(hx_decomp_plan(md->dec), i);
            md->red[md->nlocal + i] = (double)(p->n_local - p->n_home);
        }
    double tot[2] = {0.0, 0.0};
    if (dev_stats) {
        /* [nlocal][2] interleaved for the reduction */
        double *v = md->red + 2 * md->nlocal;
        for (int i = 0; i < md->nlocal; i++) {
            v[2 * i] = np[i];
            v[2 * i + 1] = md->red[md->nlocal + i];
        }
        HX_TRY(hx_comm_agree_sum_f64(md->comm, local, v, tot, 2));
        s.halo_total = (long long)tot[1];
    } else {
        HX_TRY(hx_comm_sum_f64(md->comm, np, tot, 1));
    }
    for (int d = 0; d < 3; d++) {
        md->info.grid[d] = s.grid[d];
        md->info.pulses[d] = s.pulses[d];
        md->info.cell[d] = s.cell[d];
    }
    md->info.r_comm = s.r_comm;
    md->info.home_min = s.home_min;
    md->info.home_max = s.home_max;
    md->info.halo_min = s.halo_min;
    md->info.halo_max = s.halo_max;
    md->info.halo_total = s.halo_total;
    md->info.pairs_total = (long long)tot[0];
    return HX_OK;
}

/* Whether the search steps of this run go to the device: a backend that can, a decomposition,
 * a halo backend with device messages; HALOX_GPU_DD=0 keeps them on the host (the reference).
 * The same answer on every process (same backend, grid and environment). */
int hx_md_device_search_allowed(void)
{
    const char *e = getenv("HALOX_GPU_DD");
    return !(e && e[0] == '0');
}

static int want_device_search(const hx_md *md)
{
    if (!hx_md_device_search_allowed())
        return 0;
    return md->B->dd_start && md->B->dd_search && md->ndim > 0 && md->halo &&
           hx_halo_msg_kind(md->halo) > 0;
}

/* The home atoms' set-up of every local domain on the halo's x and f as they are now (a backend
 * without dd_set_home does it all in dd_set_local). */
static hx_status set_home(hx_md *md)
{
    hx_status st = HX_OK;
    for (int i = 0; i < md->nlocal && st == HX_OK && md->B->dd_set_home; i++)
        st = hx_fault_hit("md.dd_set_home")
                 ? hx_error_set(HX_ERR_INTERNAL, __FILE__, __LINE__, __func__,
                                "domain %d: the modules could not be set up for the new home "
                                "atoms (fault injected by a test)",
                                hx_comm_local_domain(md->comm, i))
                 : md->B->dd_set_home(md->bimpl, i, hx_halo_x(md->halo, i), hx_halo_f(md->halo, i));
    return st;
}

/* The search step on the device (docs/design/gpu-search.md): migration, the new local set and
 * the plan's maps in kernels; the host gets counts, makes the plan from them and refreshes the
 * halo (no collective allocation unless a capacity grew), the backend sets its modules up from
 * the device arrays, then the coordinate halo and the pair search as on the host path. */
static hx_status repartition_device(hx_md *md, double t0)
{
    hx_status st = HX_OK;
    long long gmax[HX_MAX_PULSES + 1];
    hx_md_dd_times dt;
    memset(&dt, 0, sizeof dt);
    hx_gpu_trace_search_begin(md->step); /* HALOX_SEARCH_TRACE's points (gpu/trace.h) */
    /* A failure noted since the last collective goes into the device step's one reduction,
     * which every process enters anyway: no agreement of its own before the step (the host path
     * has one), so a process that arrives first launches its step instead of waiting. */
    hx_status local = take_pending(md);
    if (local == HX_OK && hx_fault_hit("md.dd_pending"))
        local = hx_error_set(HX_ERR_INTERNAL, __FILE__, __LINE__, __func__,
                             "a failure noted before the search step of step %lld (fault injected "
                             "by a test)",
                             md->step);
    HX_TRY(md->B->dd_search(md->bimpl, md->step, local, gmax, &dt)); /* collective, agreed */
    const double t1 = hx_wtime();
    hx_gpu_trace_host("dd_search");
    hx_plan_domain_counts pc[64];
    hx_plan_domain_counts *pcp = md->nlocal <= 64 ? pc : malloc(sizeof *pcp * (size_t)md->nlocal);
    if (!pcp)
        st = hx_error_set(HX_ERR_NOMEM, __FILE__, __LINE__, __func__, "out of memory");
    for (int i = 0; i < md->nlocal && st == HX_OK; i++)
        st = hx_fault_hit("md.dd_counts")
                 ? hx_error_set(HX_ERR_INTERNAL, __FILE__, __LINE__, __func__,
                                "domain %d: the device search step's counts could not be read "
                                "(fault injected by a test)",
                                hx_comm_local_domain(md->comm, i))
                 : md->B->dd_counts(md->bimpl, i, &pcp[i]);
    /* the home atoms' set-up and the home zone's pair search, enqueued now: the device works
     * on them while this process makes the plan and waits in its agreements */
    hx_gpu_trace_host("counts");
    const double th0 = hx_wtime();
    if (st == HX_OK)
        st = set_home(md);
    const double th = hx_wtime() - th0;
    hx_gpu_trace_host("set_home");
    /* a failure to get the counts (or to set the home atoms up) goes to the neighbours as
     * hx_plan_set_counts's failure markers and to every process in the agreement below */
    const double tp0 = hx_wtime();
    st = hx_plan_set_counts(hx_decomp_plan(md->dec), st, st == HX_OK ? pcp : NULL, gmax);
    const double tp1 = hx_wtime();
    hx_gpu_trace_host("plan");
    if (pcp != pc)
        free(pcp);
    /* hx_plan_set_counts's failures (the counts', passed on as failure markers; its last part,
     * the image, is local) agreed here, so that no process goes on into the next collective
     * without the others */
    HX_TRY(hx_comm_agree(md->comm, st));
    const double t2 = hx_wtime();
    hx_gpu_trace_host("agree_plan");
    double agree = t2 - tp1;
    /* local unless a capacity grew (then collective on every process alike: the plan's
     * capacities are global maxima with headroom, so this is rare) */
    int halo_updated = 0;
    /* the uploads on the coordinate halo's stream, before its exchange below: no wait for the
     * device here (it has only the home set-up to do), except before the rare update, which
     * makes the buffers that work reads again (dd_set_local then sets everything up anew) */
    const hx_status sst =
        hx_halo_refresh_grows(md->halo) && md->B->sync ? md->B->sync(md->bimpl) : HX_OK;
    /* entered by every process alike (the update is collective), a failed wait or not */
    st = hx_halo_refresh(md->halo, md->B->halo_stream(md->bimpl, 0), &halo_updated);
    if (st == HX_OK)
        st = sst;
    if (halo_updated) {
        md->tm.dd_halo_updates++;
        hx_log(HX_LOG_INFO,
               "step %lld: the halo plan's capacities grew (%d local atoms per domain): the halo "
               "exchange was updated on every process (its one collective allocation path)",
               md->step, hx_plan_domain(hx_decomp_plan(md->dec), 0)->cap_local);
        /* the home set-up again, on the new buffers (the old ones' content is gone, even where
         * an address came back the same) */
        if (st == HX_OK)
            st = set_home(md);
    }
    if (md->graph_valid && md->B->invalidate_graph)
        md->B->invalidate_graph(md->bimpl);
    md->graph_valid = 0;
    const double t3 = hx_wtime();
    hx_gpu_trace_host("halo_refresh");
    for (int i = 0; i < md->nlocal && st == HX_OK; i++)
        st =
            hx_fault_hit("md.dd_set_local")
                ? hx_error_set(HX_ERR_INTERNAL, __FILE__, __LINE__, __func__,
                               "domain %d: the modules could not be set up for the new local "
                               "set (fault injected by a test)",
                               hx_comm_local_domain(md->comm, i))
                : md->B->dd_set_local(md->bimpl, i, hx_halo_x(md->halo, i), hx_halo_f(md->halo, i));
    const double ta = hx_wtime();
    hx_gpu_trace_host("set_local");
    /* Agreed here, before the coordinate halo. Agreed instead with the pair search's statistics
     * (the failing process still sending its halo), the wait for the slowest process moved into
     * that agreement and the search step was no shorter (H100, 4 ranks of one GPU:
     * bench/results/h100-2026-12-07f-lbwarp). */
    HX_TRY(hx_comm_agree(md->comm, st));
    const double t4 = hx_wtime();
    hx_gpu_trace_host("agree_set_local");
    agree += t4 - ta;
    /* as on the host path: a failure of the coordinate halo is agreed with the search's */
    st = hx_halo_exchange_x(md->halo, md->B->halo_stream(md->bimpl, 0));
    md->halo_x_fresh = 1;
    const double t5 = hx_wtime();
    hx_gpu_trace_host("x_halo");
    for (int i = 0; i < md->nlocal && st == HX_OK; i++)
        st = hx_fault_hit("md.dd_pairs")
                 ? hx_error_set(HX_ERR_INTERNAL, __FILE__, __LINE__, __func__,
                                "domain %d: the pair search failed (fault injected by a test)",
                                hx_comm_local_domain(md->comm, i))
                 : md->B->search(md->bimpl, i, md->p.rlist, 0, NULL);
    const double tb = hx_wtime();
    hx_gpu_trace_host("pair_search");
    HX_TRY(update_dd_info(md, st, dt.stats)); /* agrees st */
    const double t6 = hx_wtime();
    hx_gpu_trace_search_end();
    agree += t6 - tb;
    /* device parts are sub-intervals of [t0, t1]; the columns keep tiling [t0, t6] */
    const double dev = dt.migrate + dt.local_set + dt.plan;
    const double wall1 = t1 - t0;
    md->tm.search_download += 0.0;
    md->tm.search_migrate += dt.migrate;
    md->tm.search_plan +=
        (wall1 > dev ? wall1 - dt.migrate - dt.local_set : dt.plan) + (t2 - t1) - th;
    md->tm.search_halo += t3 - t2;
    md->tm.search_set_local += dt.local_set + (t4 - t3) + th;
    md->tm.search_halo_x += t5 - t4;
    md->tm.search_pairs += t6 - t4;
    md->tm.search_dev_migrate += dt.migrate;
    md->tm.search_dev_local_set += dt.local_set;
    md->tm.search_dev_plan += dt.plan;
    md->tm.search_counts += dt.counts + (t2 - t1) - th;
    md->tm.search_plan_counts += tp1 - tp0;
    md->tm.search_agree += agree;
    md->tm.dd_searches++;
    md->tm.dd_retries += dt.retries;
    return HX_OK;
}

/* A search step that ended at now, begun at t0: counted, its time added to the total; returns
 * its time for the caller's column. */
static double search_counted(hx_md *md, double t0, double now)
{
    md->tm.searches++;
    md->last_search = md->step;
    md->tm.search += now - t0;
    return now - t0;
}

hx_status hx_md_repartition(hx_md *md, int first)
{
    /* the steps before have finished, so that their device time is not counted as search time
     * (the paper's time per step leaves out search and repartition steps) */
    if (md->B->sync)
        HX_TRY(hx_md_note(md, md->B->sync(md->bimpl)));
    double t0 = hx_wtime();
    if (!first && md->dd_device) {
        HX_TRY(repartition_device(md, t0)); /* agrees a pending failure itself */
        md->tm.missed_pairs = -1;
        md->last_missed = -1;
        md->tm.search_dd += search_counted(md, t0, hx_wtime());
        return HX_OK;
    }
    HX_TRY(hx_md_agree(md));
    hx_status st = HX_OK;
    if (!first && md->ndim == 0 && md->B->mem == HX_MEM_DEVICE) {
        /* One domain on a device: nothing migrates and the plan has no pulse, so the state
         * stays on the device and only the pair search runs (it wraps the coordinates into the
         * box itself). No host round trip but the list statistics. */
        for (int i = 0; i < md->nlocal && st == HX_OK; i++)
            st = md->B->search(md->bimpl, i, md->p.rlist, 0, NULL);
        HX_TRY(hx_comm_agree(md->comm, st));
        /* the list's sizes changed: launches of the captured step with the old ones would miss
         * entries or run past them */
        if (md->graph_valid && md->B->invalidate_graph)
            md->B->invalidate_graph(md->bimpl);
        md->graph_valid = 0;
        md->last_missed = -1;
        md->tm.search_pairs += search_counted(md, t0, hx_wtime());
        return HX_OK;
    }
    double t1 = t0;
    if (!first) {
        /* the state comes home (a no-op on the host) for migration */
        for (int i = 0; i < md->nlocal && st == HX_OK; i++)
            st = md->B->download(md->bimpl, i, hx_decomp_get_local(md->dec, i)->home);
        HX_TRY(hx_comm_agree(md->comm, st));
        t1 = hx_wtime();
        md->tm.search_download += t1 - t0;
        HX_TRY(hx_decomp_repartition(md->dec, md->step));
    }
    double t2 = hx_wtime();
    md->tm.search_migrate += t2 - t1;
    HX_TRY(hx_decomp_update_local(md->dec));
    double t3 = hx_wtime();
    md->tm.search_plan += t3 - t2;
    if (!md->halo) {
        hx_halo_config hc;
        hx_halo_config_default(&hc);
        hc.backend = md->halo_backend;
        hc.real = md->B->real;
        hc.mem = md->B->mem;
        hc.path = (hx_halo_path)md->p.halo_path;
        hc.bulk_copy = md->p.halo_bulk_copy;
        hc.wait_timeout = md->p.halo_wait_timeout;
        hc.stress_seed = md->p.halo_stress_seed;
        hc.gpu = md->p.gpu;
        HX_TRY(hx_halo_create(hx_decomp_plan(md->dec), md->comm, &hc, &md->halo));
        /* one domain (no decomposed dimension) has no pulse: no exchange blocks, whichever the
         * halo backend, and a plain step can be captured */
        md->graph_ok = !md->p.no_graph && md->B->capture_begin &&
                       (hx_halo_capturable(md->halo) || md->ndim == 0);
    } else {
        HX_TRY(hx_halo_update(md->halo));
    }
    if (md->graph_valid && md->B->invalidate_graph)
        md->B->invalidate_graph(md->bimpl); /* addresses and sizes may have changed */
    md->graph_valid = 0;
    double t4 = hx_wtime();
    md->tm.search_halo += t4 - t3;
    for (int i = 0; i < md->nlocal && st == HX_OK; i++)
        st = md->B->set_local(md->bimpl, i, hx_decomp_get_local(md->dec, i), hx_halo_x(md->halo, i),
                              hx_halo_f(md->halo, i));
    HX_TRY(hx_comm_agree(md->comm, st));
    double t5 = hx_wtime();
    md->tm.search_set_local += t5 - t4;
    /* Halo coordinates for the search (positions of this step). The step's own force
     * computation uses them as they are: exchanging the same coordinates twice would break the
     * x, f, x, f alternation that the GPU backends' overwrite protection relies on. A failure
     * here is agreed after the search, with the search's: returning at once left the others in
     * that agreement. */
    st = hx_halo_exchange_x(md->halo, md->B->halo_stream(md->bimpl, 0));
    md->halo_x_fresh = 1;
    const double t5x = hx_wtime();
    md->tm.search_halo_x += t5x - t5;
    /* The count compares the positions of this step with the previous list: pairs now inside
     * rc that were beyond rlist when the list was built. It is an upper bound of the pairs the
     * list missed (a pair that entered during the last step is counted, though the new list is
     * used from this step on), and meaningless when the list is rebuilt every step. */
    const int check = !first && md->ndim == 0 && md->p.nstlist > 1 && md->p.nstcheck > 0 &&
                      md->step % ((long long)md->p.nstcheck * md->p.nstlist) == 0;
    long long missed_total = 0;
    for (int i = 0; i < md->nlocal && st == HX_OK; i++) {
        long long missed = 0;
        st = md->B->search(md->bimpl, i, md->p.rlist, check, &missed);
        missed_total += missed;
    }
    HX_TRY(update_dd_info(md, st, NULL)); /* agrees st */
    const double t6 = hx_wtime();         /* the end of the search: its parts tile [t0, t6] */
    md->tm.search_pairs += t6 - t5;
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
    search_counted(md, t0, t6);
    if (first && !md->dd_device && want_device_search(md)) {
        /* from the next search step on, on the device: the decomposition takes the homes and
         * plan as they are now (collective; a start-up cost, outside the timed steps). Its
         * failure is agreed (every process gets it), so every process can go on with the
         * search steps on the host instead. */
        const hx_status st2 = md->B->dd_start(md->bimpl, md->dec, md->halo);
        if (st2 == HX_OK)
            md->dd_device = 1;
        else
            hx_log(HX_LOG_WARN,
                   "the search steps stay on the host (download, host decomposition, upload: "
                   "slower): the device search step could not start: %s",
                   hx_last_error_message());
    }
    return HX_OK;
}

/* ---- one step -------------------------------------------------------------------------------- */

/* Enqueue the force part of a step: local forces, the coordinate halo, non-local forces, the
 * force halo. On the host every call completes before it returns. */
static void mark(hx_md *md, int marks, int which)
{
    if (marks)
        for (int i = 0; i < md->nlocal; i++)
            md->B->mark(md->bimpl, i, which);
}

static hx_status enqueue_forces(hx_md *md, int want_e, int marks)
{
    const hx_md_backend_ops *B = md->B;
    hx_stream stream = B->halo_stream(md->bimpl, 0);
    double t0 = hx_wtime();
    mark(md, marks, HX_MARK_LOCAL_BEGIN);
    for (int i = 0; i < md->nlocal; i++)
        NOTE(B->forces(md->bimpl, i, HX_NB_LOCAL, want_e, md->step));
    mark(md, marks, HX_MARK_LOCAL_END);
    double t1 = hx_wtime();
    md->tm.nb_local += t1 - t0;
    /* The exchanges run even after a local failure: the neighbours are waiting for them. */
    mark(md, marks, HX_MARK_NL_BEGIN);
    if (md->halo_x_fresh)
        md->halo_x_fresh = 0; /* exchanged by this step's repartition */
    else
        NOTE(hx_halo_exchange_x(md->halo, stream));
    double t2 = hx_wtime();
    md->tm.halo_x += t2 - t1;
    for (int i = 0; i < md->nlocal; i++)
        NOTE(B->forces(md->bimpl, i, HX_NB_NONLOCAL, want_e, md->step));
    double t3 = hx_wtime();
    md->tm.nb_nonlocal += t3 - t2;
    NOTE(hx_halo_exchange_f(md->halo, stream));
    mark(md, marks, HX_MARK_NL_END);
    md->tm.halo_f += hx_wtime() - t3;
    return HX_OK;
}

/* The paper's metrics of a sampled step, from the marks (after the step's update). */
static hx_status read_metrics(hx_md *md)
{
    for (int i = 0; i < md->nlocal; i++) {
        double t[HX_MARK_N];
        HX_TRY(hx_md_note(md, md->B->read_marks(md->bimpl, i, t)));
        const double local = t[HX_MARK_LOCAL_END] - t[HX_MARK_LOCAL_BEGIN];
        const double nonlocal = t[HX_MARK_NL_END] - t[HX_MARK_NL_BEGIN];
        const double over = t[HX_MARK_NL_END] - t[HX_MARK_LOCAL_END];
        md->tm.local_work_us += local;
        md->tm.nonlocal_work_us += nonlocal;
        md->tm.non_overlap_us += over > 0 ? over : 0.0;
        md->tm.metric_samples++;
    }
    return HX_OK;
}

/* A step without energies: NaN, so that nobody takes the last energy step's values for this
 * step's (the graph replay left them in place, and the log's averages counted them again). */
static void no_energies(hx_md *md)
{
    md->ener.time = md->step * md->p.dt;
    md->ener.lj = md->ener.coulomb = md->ener.potential = NAN;
    md->ener.bonds = md->ener.angles = md->ener.dihedrals = NAN;
    md->ener.lj14 = md->ener.coulomb14 = NAN;
    md->ener.kinetic = md->ener.total = md->ener.temperature = NAN;
    md->ener.constraint_deviation = md->ener.conserved = NAN;
}

hx_status hx_md_do_step(hx_md *md, int commit)
{
    const hx_md_backend_ops *B = md->B;
    const int nl = md->nlocal;
    hx_comm_set_step(md->comm, md->step); /* the step a timed-out wait names */
    const int search = md->step % md->p.nstlist == 0 && md->step != md->last_search;
    if (search)
        HX_TRY(hx_md_repartition(md, 0));
    /* Energies cost 20-25% of the kernel; hx_md_run asks for them only on output steps. */
    const int want_e = !commit || md->energy_interval <= 0 || md->step % md->energy_interval == 0 ||
                       (md->log_interval > 0 && md->step % md->log_interval == 0);
    const int tcouple =
        md->p.thermostat == HX_THERMOSTAT_VRESCALE && md->step % md->p.nsttcouple == 0;
    const int marks = commit && md->p.nstmetrics > 0 && md->step % md->p.nstmetrics == 0 &&
                      md->B->mark && md->B->read_marks;
    /* the step-timing breakdown marks every committed step, inside its graph too */
    const int bd =
        commit && md->p.step_timing == HX_MD_STEP_BREAKDOWN && md->B->mark && md->B->read_marks;

    /* A plain step: replay the captured graph (or capture it now) where the backend can. A
     * search step that left the graph invalid launches its work directly and the capture waits
     * for the next step: the search has just waited for the device, so a capture now would keep
     * the device idle for the capture's host time (15-45 us per search on one H100), while at the
     * next step it runs as the device computes this one. (A decomposed search step exchanges
     * the coordinate halo itself, halo_x_fresh, and runs directly anyway.) */
    const int defer_capture = search && !md->graph_valid;
    if (md->graph_ok && commit && !want_e && !tcouple && !marks && !md->halo_x_fresh &&
        !defer_capture) {
        double t0 = hx_wtime();
        if (!md->graph_valid) {
            NOTE(B->capture_begin(md->bimpl));
            HX_TRY(enqueue_forces(md, 0, bd));
            for (int i = 0; i < nl; i++)
                NOTE(B->update(md->bimpl, i, 1.0, 0, 1, md->step));
            mark(md, bd, HX_MARK_UPDATE_END);
            NOTE(B->capture_end(md->bimpl));
            md->graph_valid = 1;
            md->tm.graph_captures++;
            md->tm.graph_capture += hx_wtime() - t0;
        }
        NOTE(B->replay(md->bimpl));
        md->tm.update += hx_wtime() - t0;
        md->ener.step = md->step;
        no_energies(md);
        md->tm.graph_steps++;
        HX_TRY(hx_md_clock_step(md, search, 1, bd));
        md->step++;
        md->tm.steps++;
        md->gathered_step_valid = 0;
        return HX_OK;
    }

    HX_TRY(enqueue_forces(md, want_e, marks || bd));
    double t5 = hx_wtime();
    double lambda = 1.0, ke_old = NAN, work = 0.0;
    if (tcouple || want_e)
        for (int i = 0; i < nl; i++)
            NOTE(B->kinetic(md->bimpl, i, &md->ke_old[i]));
    if (tcouple) {
        HX_TRY(hx_md_agree(md));
        double t6 = hx_wtime();
        HX_TRY(hx_comm_sum_f64(md->comm, md->ke_old, &ke_old, 1));
        md->tm.reduce += hx_wtime() - t6;
        t5 += hx_wtime() - t6; /* keep the reduction out of the update time */
        /* hx_md_evaluate leaves the state as it was, the thermostat's random stream included:
         * a checkpoint written after it (at the end of a run, or where a signal stopped it)
         * continues with the draw the uninterrupted run makes at this step */
        hx_rng keep = md->trng;
        lambda = vrescale_lambda(md, ke_old);
        if (!commit)
            md->trng = keep;
        /* the energy the thermostat adds: v(t - dt/2) scaled by lambda changes the half-step
         * kinetic energy ke_old by (lambda^2 - 1) ke_old (GROMACS's thermostat integral) */
        work = (lambda * lambda - 1.0) * ke_old;
    }
    for (int i = 0; i < nl; i++)
        NOTE(B->update(md->bimpl, i, lambda, want_e, commit, md->step));
    mark(md, marks || bd, HX_MARK_UPDATE_END);
    if (marks)
        HX_TRY(read_metrics(md));
    md->ener.step = md->step;
    md->ener.time = md->step * md->p.dt;
    if (want_e) {
        hx_status st = HX_OK;
        for (int i = 0; i < nl && st == HX_OK; i++) {
            double e[HX_E_N] = {0}; /* entries a backend does not compute stay 0 */
            st = B->energies(md->bimpl, i, e);
            double *r = &md->red[HX_MD_NRED * i];
            r[0] = e[HX_E_LJ];
            r[1] = e[HX_E_COUL];
            r[2] = md->ke_old[i];
            r[3] = e[HX_E_KE_NEW];
            r[4] = e[HX_E_BOND];
            r[5] = e[HX_E_ANGLE];
            r[6] = e[HX_E_DIH];
            r[7] = e[HX_E_LJ14];
            r[8] = e[HX_E_COUL14];
            md->dev[i] = dbits(e[HX_E_DEV]);
        }
        NOTE(st);
        HX_TRY(hx_md_agree(md));
        double t6 = hx_wtime();
        double red[HX_MD_NRED];
        long long dev = 0;
        HX_TRY(hx_comm_sum_f64(md->comm, md->red, red, HX_MD_NRED));
        HX_TRY(hx_comm_max_i64(md->comm, md->dev, &dev, 1));
        md->tm.reduce += hx_wtime() - t6;
        t5 += hx_wtime() - t6;
        md->ener.lj = red[0];
        md->ener.coulomb = red[1];
        md->ener.bonds = red[4];
        md->ener.angles = red[5];
        md->ener.dihedrals = red[6];
        md->ener.lj14 = red[7];
        md->ener.coulomb14 = red[8];
        /* LJ + Coulomb first: with no bonded terms (water, argon) the sum is that of the
         * non-bonded engine bit for bit */
        md->ener.potential = red[0] + red[1];
        if (md->ener.has_bonded)
            md->ener.potential += red[4] + red[5] + red[6] + red[7] + red[8];
        md->ener.kinetic = 0.5 * (red[2] + red[3]);
        md->ener.total = md->ener.potential + md->ener.kinetic;
        /* The kinetic energy of step t averages the half step before the coupling (red[2],
         * unscaled) and the one after it: on a coupling step half of its work is in the total,
         * so half of it is taken off here, the other half from the next step on. (GROMACS
         * couples at the step after an energy step, where the question does not arise; halox
         * couples on multiples of nsttcouple, which energy steps are.) */
        md->ener.conserved = md->ener.total - (md->thermostat_work + 0.5 * work);
        md->ener.temperature = 2.0 * md->ener.kinetic / (md->ndf * HX_BOLTZ);
        md->ener.constraint_deviation = bitsd(dev);
        HX_CHECK(isfinite(md->ener.kinetic) && isfinite(md->ener.potential), HX_ERR_PHYSICS,
                 "step %lld: non-finite energy (kinetic %g, potential %g): the system blew up; "
                 "use a smaller time step or check the starting structure",
                 md->step, md->ener.kinetic, md->ener.potential);
    } else {
        no_energies(md);
    }
    if (commit) {
        md->thermostat_work += work;
        HX_TRY(hx_md_clock_step(md, search, 0, bd));
        md->step++;
        md->tm.steps++;
        md->gathered_step_valid = 0;
    }
    md->tm.update += hx_wtime() - t5;
    return HX_OK;
}
