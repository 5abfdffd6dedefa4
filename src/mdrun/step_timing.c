/* Step timing (hx_md_params.step_timing): the time of every step of hx_md_run, taken by the step
 * schedule itself, so that benchmarks measure the product's step and not a copy of it.
 *
 * A clock point is recorded at the run's start and after every committed step: on a GPU a CUDA
 * event on the stream that ends the step (the backend's clock op), recorded without waiting, so
 * the timed steps overlap host and device exactly as untimed ones do; on the host the wall clock.
 * A step's time is the distance between its point and the one before, read back after the run.
 * With HX_MD_STEP_BREAKDOWN the schedule also marks the step's start, the end of its local work
 * and the end of its update (inside the captured CUDA graph of a plain step: event nodes) and
 * reads them after each step, which makes every step wait for the device. */
#include "mdrun/md_impl.h"
#include "core/error.h"
#include "core/timer.h"

#include <math.h>
#include <stdlib.h>

static hx_status reserve_records(hx_md *md, long long n)
{
    if (n <= md->cap_st)
        return HX_OK;
    HX_CHECK(n < (1LL << 30), HX_ERR_INVALID_ARG,
             "step timing: %lld steps are too many to time in one run; time fewer steps", n);
    hx_md_step_time *r = realloc(md->st, sizeof *r * (size_t)n);
    HX_CHECK(r, HX_ERR_NOMEM, "out of memory for the times of %lld steps", n);
    md->st = r;
    md->cap_st = (int)n;
    return HX_OK;
}

hx_status hx_md_clock_start(hx_md *md)
{
    md->nst = md->st_read = 0;
    md->clock_on = 0;
    md->clock_end = md->step + md->p.steps;
    md->span_steps = 0;
    if (md->p.step_timing == HX_MD_STEP_TIMING_OFF)
        return HX_OK;
    /* what the run needs, before it starts: no allocation between its steps (a run of more
     * than a million steps grows its records as it goes) */
    long long n = md->p.steps + 1 < (1LL << 20) ? md->p.steps + 1 : (1LL << 20);
    if (md->p.step_timing == HX_MD_STEP_SPANS) /* two records per interval, and the last span */
        n = 2 * (md->p.steps / md->p.nstlist) + 4 < n ? 2 * (md->p.steps / md->p.nstlist) + 4 : n;
    hx_status st = reserve_records(md, n);
    if (st == HX_OK && md->B->clock_reserve)
        st = md->B->clock_reserve(md->bimpl, (int)n + 1);
    if (st == HX_OK && md->B->clock)
        st = md->B->clock(md->bimpl, 0);
    md->clock_host = hx_wtime();
    HX_TRY(hx_md_note(md, st));
    md->clock_on = st == HX_OK;
    return HX_OK;
}

void hx_md_clock_stop(hx_md *md)
{
    md->clock_on = 0;
}

hx_status hx_md_clock_step(hx_md *md, int search, int graph, int breakdown)
{
    if (!md->clock_on)
        return HX_OK;
    /* spans: no point inside a span of plain steps; one after the step before a search (the
     * next step searches when it is a multiple of nstlist, hx_md_do_step's rule), one after the
     * search step, one at the run's end */
    int nsteps = 1;
    if (md->p.step_timing == HX_MD_STEP_SPANS && !search) {
        const long long next = md->step + 1;
        md->span_steps++;
        if (next % md->p.nstlist != 0 && next < md->clock_end)
            return HX_OK;
        nsteps = md->span_steps;
    }
    md->span_steps = 0;
    if (md->nst == md->cap_st)
        HX_TRY(hx_md_note(md, reserve_records(md, 2LL * md->cap_st + 64)));
    if (md->nst == md->cap_st)
        return HX_OK; /* noted (several ranks) */
    hx_md_step_time *r = &md->st[md->nst];
    r->step = md->step;
    r->search = search;
    r->graph = graph;
    r->nsteps = nsteps;
    r->us = r->local_us = r->update_us = NAN;
    /* the point first: reading the breakdown below waits for the device, and the wait must fall
     * into neither this step nor the next */
    if (md->B->clock) {
        HX_TRY(hx_md_note(md, md->B->clock(md->bimpl, md->nst + 1)));
    } else {
        const double t = hx_wtime();
        r->us = 1e6 * (t - md->clock_host);
        md->clock_host = t;
    }
    md->nst++;
    if (breakdown) {
        double t[HX_MARK_N];
        const hx_status st = md->B->read_marks(md->bimpl, 0, t);
        HX_TRY(hx_md_note(md, st));
        if (st == HX_OK) {
            r->local_us = t[HX_MARK_LOCAL_END] - t[HX_MARK_LOCAL_BEGIN];
            r->update_us = t[HX_MARK_UPDATE_END] - t[HX_MARK_LOCAL_END];
        }
        if (!md->B->clock)
            md->clock_host = hx_wtime(); /* the reading is no step's */
    }
    return HX_OK;
}

hx_status hx_md_get_step_times(hx_md *md, hx_md_step_time *out, int cap, int *n)
{
    HX_CHECK(md && n && cap >= 0 && (out || cap == 0), HX_ERR_INVALID_ARG,
             "hx_md_get_step_times: bad argument");
    for (; md->st_read < md->nst && md->B->clock_elapsed; md->st_read++)
        HX_TRY(
            md->B->clock_elapsed(md->bimpl, md->st_read, md->st_read + 1, &md->st[md->st_read].us));
    for (int r = 0; r < md->nst && r < cap; r++)
        out[r] = md->st[r];
    *n = md->nst;
    return HX_OK;
}

hx_status hx_md_set_step_timing(hx_md *md, int mode)
{
    HX_CHECK(md, HX_ERR_INVALID_ARG, "hx_md_set_step_timing: NULL engine");
    HX_CHECK(mode == HX_MD_STEP_TIMING_OFF || mode == HX_MD_STEP_TIMES ||
                 mode == HX_MD_STEP_BREAKDOWN || mode == HX_MD_STEP_SPANS,
             HX_ERR_INVALID_ARG,
             "step timing %d: use HX_MD_STEP_TIMING_OFF, HX_MD_STEP_TIMES, HX_MD_STEP_BREAKDOWN "
             "or HX_MD_STEP_SPANS",
             mode);
    if (mode != md->p.step_timing && md->graph_valid) {
        /* the breakdown's points are nodes of the captured step: capture it again */
        if (md->B->invalidate_graph)
            md->B->invalidate_graph(md->bimpl);
        md->graph_valid = 0;
    }
    md->p.step_timing = mode;
    return HX_OK;
}
