/* No rank left waiting: the MPI transport, the host halo backend and the CPU engine.
 *
 * One rank (the last) stops, skips, hangs or fails at one of the points where a job used to hang,
 * and every rank must return from halox within the deadline with a message that names what went
 * wrong. The step deadline is 5 s here (hx_wait_timeout_set; HALOX_WAIT_TIMEOUT in a run):
 *
 *  1. a rank stops exchanging at step 3 (a program whose rank failed and left): its neighbours'
 *     waits end at the deadline, HX_ERR_TIMEOUT "rank R waited 5 s for the coordinates of pulse
 *     0 from rank P ... " (blocking MPI_Sendrecv waited for ever);
 *  2. a rank skips the coordinate exchange of step 3 and sends its forces: messages are tagged
 *     by kind and pulse, so on 2 ranks (each the other's only neighbour) both report at once that
 *     the ranks are out of step (with one tag for every message the forces were taken for
 *     coordinates and the job went on); on 3 every rank's wait ends at the deadline;
 *  3. a rank skips an agreement: the collective's wait ends at the deadline;
 *  4. hx_md_run, a step hook fails on one rank at step 3: every rank returns an error with that
 *     rank's message, agreed at the next search step (10), with no deadline involved (the
 *     failing rank returned alone, and the others waited in the next exchange);
 *  5. hx_md_run, the energy file fails on rank 0 (/dev/full, unbuffered): the same, agreed at the
 *     next energy step;
 *  6. hx_md_run, a rank hangs in its hook at step 4 for two deadlines: the others report
 *     rank, peer, pulse and "(step 4)", and the hung rank returns an error once it wakes;
 *  7. hx_md_run, a pulse of the coordinate exchange fails on one rank (fault site "halo.pulse",
 *     src/core/fault.h) at a plain step (3) and at the search step (10), where the engine's
 *     repartition returned at once and left the others in its next agreement: the exchange
 *     completes its messages with failure markers, and every rank returns that rank's message at
 *     the search step.
 *
 * Each case runs on a communicator of its own (a timed-out one is unusable) and starts after an
 * agreement on the world communicator. A watchdog alarm turns a hang into a failure naming the
 * case; CTest's timeout is the backstop (tests/waits_fixture.h, shared with test_gpu_waits). */
#include "halox/halox.h"
#include "halox/error.h"
#include "core/fault.h"
#include "plan_fixture.h"
#include "test_md_common.h"
#include "waits_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WATCHDOG_SECONDS 60 /* a case that takes longer hung */

static int g_rank, g_size, g_culprit;
static hx_comm *g_world;

/* The host exchange on a 1D decomposition over the case's communicator. */
typedef struct hcase {
    hx_comm *c;
    hx_dd *dd;
    hx_plan *plan;
    hx_halo *h;
    sysgen s;
    int n_home;
    double *xh;
} hcase;

static int hcase_make(hcase *H)
{
    memset(H, 0, sizeof *H);
    H->c = tw_case_comm();
    const int grid[3] = {g_size, 1, 1};
    caseparams cp;
    t_rng r;
    for (uint64_t seed = 11;; seed++) {
        pf_draw(seed, grid, &cp, &H->s, &r);
        hx_dd_params dp = {{cp.box[0], cp.box[1], cp.box[2]}, {grid[0], 1, 1}, cp.r_comm, cp.rc};
        if (hx_dd_create(&dp, &H->dd) == HX_OK)
            break;
        pf_free(&H->s);
    }
    H->xh = malloc(sizeof(double) * 3 * ((size_t)H->s.natoms + 1));
    for (int a = 0; a < H->s.natoms; a++)
        if (hx_dd_domain_of_point(H->dd, &H->s.cen[3 * H->s.mol[a]]) == g_rank)
            memcpy(&H->xh[3 * H->n_home++], &H->s.x[3 * a], 3 * sizeof(double));
    T_OK(hx_plan_create(H->dd, H->c, &H->plan));
    T_OK(hx_plan_build(H->plan, &H->n_home, (const double *const *)&H->xh));
    T_OK(hx_halo_create(H->plan, H->c, NULL, &H->h));
    return H->h != NULL;
}

static void hcase_free(hcase *H)
{
    hx_halo_destroy(&H->h);
    hx_plan_destroy(&H->plan);
    hx_dd_destroy(&H->dd);
    hx_comm_destroy(&H->c); /* a timed-out communicator is left to MPI */
    free(H->xh);
    pf_free(&H->s);
}

static hx_status exchange_x(hcase *H, int step)
{
    double *x = hx_halo_x(H->h, 0);
    for (int k = 0; k < 3 * H->n_home; k++)
        x[k] = H->xh[k] + 1e-3 * step;
    return hx_halo_exchange_x(H->h, NULL);
}

static hx_status exchange_f(hcase *H, int step)
{
    double *f = hx_halo_f(H->h, 0);
    const int n = hx_plan_domain(H->plan, 0)->n_local;
    for (int k = 0; k < 3 * n; k++)
        f[k] = 0.5 * (k % 7) - step;
    return hx_halo_exchange_f(H->h, NULL);
}

/* Whether this rank's message says it waited the deadline for a message, naming peer and pulse. */
static int says_waited(const char *msg)
{
    char head[64];
    snprintf(head, sizeof head, "rank %d waited %g s for ", g_rank, TW_DEADLINE);
    return strstr(msg, head) && strstr(msg, " of pulse ") &&
           (strstr(msg, " from rank ") || strstr(msg, " to receive "));
}

/* 1. A rank stops exchanging at step 3. */
static void case_stop(void)
{
    hcase H;
    hcase_make(&H);
    const double t0 = tw_begin("a rank stops exchanging at step 3");
    hx_status st = HX_OK;
    int step = 0;
    for (; step < 5 && st == HX_OK; step++) {
        if (g_rank == g_culprit && step == 3)
            break; /* as a program whose rank failed and left */
        st = exchange_x(&H, step);
        if (st == HX_OK)
            st = exchange_f(&H, step);
    }
    const double dt = hx_wtime() - t0;
    if (g_rank != g_culprit) {
        tw_report("stop", st, dt);
        const char *msg = hx_last_error_message();
        T_CHECK(st == HX_ERR_TIMEOUT && step - 1 == 3 && dt < 2 * TW_DEADLINE + TW_SLACK &&
                    says_waited(msg),
                "stop: rank %d returned %s at step %d after %.2f s (expected HX_ERR_TIMEOUT at "
                "step 3 within %g s, naming the wait): %s",
                g_rank, hx_status_name(st), step - 1, dt, 2 * TW_DEADLINE + TW_SLACK, msg);
        /* the neighbour that receives from the rank that stopped names it */
        const hx_pulse *P = &hx_plan_domain(H.plan, 0)->pulses[0];
        char want[128];
        snprintf(want, sizeof want, "for the coordinates of pulse 0 from rank %d", g_culprit);
        if (g_size == 2 && P->recv_rank == g_culprit)
            T_CHECK(strstr(msg, want), "stop: rank %d's message does not say '%s': %s", g_rank,
                    want, msg);
    }
    hcase_free(&H);
    tw_end();
}

/* 2. A rank skips the coordinate exchange of step 3 and sends its forces. */
static void case_out_of_step(void)
{
    hcase H;
    hcase_make(&H);
    const double t0 = tw_begin("a rank skips the coordinate exchange of step 3");
    hx_status st = HX_OK;
    int step = 0;
    for (; step < 5 && st == HX_OK; step++) {
        if (!(g_rank == g_culprit && step == 3))
            st = exchange_x(&H, step);
        if (st == HX_OK)
            st = exchange_f(&H, step);
    }
    const double dt = hx_wtime() - t0;
    const char *msg = hx_last_error_message();
    tw_report("out of step", st, dt);
    T_CHECK(st != HX_OK && step - 1 >= 3 && dt < 2 * TW_DEADLINE + TW_SLACK,
            "out of step: rank %d returned %s at step %d after %.2f s (expected an error at step "
            "3 or 4 within %g s): %s",
            g_rank, hx_status_name(st), step - 1, dt, 2 * TW_DEADLINE + TW_SLACK, msg);
    const int oos = st == HX_ERR_INTERNAL && strstr(msg, "the ranks are out of step") != NULL;
    if (g_size == 2) {
        /* both ranks exchange with each other only: each receives the other's wrong kind. On a
         * ring of 3 the skipping rank's forces go to the neighbour that waits for forces from it
         * (the right kind), and its missing coordinates end waits at the deadline */
        const char *want = g_rank == g_culprit ? "expected the forces of pulse "
                                               : "expected the coordinates of pulse 0 from rank";
        const char *got = g_rank == g_culprit ? "and received the coordinates of pulse "
                                              : "and received the forces of pulse ";
        T_CHECK(oos && step - 1 == 3 && dt < TW_DEADLINE && strstr(msg, want) && strstr(msg, got),
                "out of step: rank %d returned %s at step %d after %.2f s, expected at once "
                "HX_ERR_INTERNAL '... %s ... %s ...: the ranks are out of step': %s",
                g_rank, hx_status_name(st), step - 1, dt, want, got, msg);
    }
    hcase_free(&H);
    tw_end();
}

/* 3. A rank skips an agreement. */
static void case_collective(void)
{
    hx_comm *c = tw_case_comm();
    const double t0 = tw_begin("a rank skips an agreement");
    if (g_rank != g_culprit && c) {
        hx_status st = hx_comm_agree(c, HX_OK);
        const double dt = hx_wtime() - t0;
        tw_report("collective", st, dt);
        char want[96];
        snprintf(want, sizeof want, "rank %d waited %g s in an agreement of all %d ranks", g_rank,
                 TW_DEADLINE, g_size);
        T_CHECK(st == HX_ERR_TIMEOUT && dt < TW_DEADLINE + TW_SLACK &&
                    strstr(hx_last_error_message(), want),
                "collective: rank %d returned %s after %.2f s, expected HX_ERR_TIMEOUT '%s ...': "
                "%s",
                g_rank, hx_status_name(st), dt, want, hx_last_error_message());
        /* unusable afterwards, at once */
        const double t1 = hx_wtime();
        st = hx_comm_agree(c, HX_OK);
        T_CHECK(st == HX_ERR_TIMEOUT && hx_wtime() - t1 < 0.5 &&
                    strstr(hx_last_error_message(), "(the communicator is unusable since)"),
                "collective: the next call on rank %d returned %s: %s", g_rank, hx_status_name(st),
                hx_last_error_message());
    }
    hx_comm_destroy(&c);
    tw_end();
}

/* ---- the engine --------------------------------------------------------------------------- */

typedef struct hook_arg {
    int mode;       /* 1: fail at step 3 on the culprit; 2: hang at step 4 for two deadlines; */
    long long step; /* 3: arm "halo.pulse" before step `step` on the culprit */
} hook_arg;

static hx_status hook(void *user, hx_md *md, long long step)
{
    (void)md;
    const hook_arg *a = user;
    if (g_rank != g_culprit)
        return HX_OK;
    if (a->mode == 1 && step == 3)
        HX_FAIL(HX_ERR_IO, "test hook: rank %d failed before step %lld", g_rank, step);
    if (a->mode == 3 && step == a->step)
        hx_fault_arm("halo.pulse"); /* the step's first pulse fails on this rank */
    if (a->mode == 2 && step == 4) {
        struct timespec ts = {(time_t)(2 * TW_DEADLINE), 0};
        while (nanosleep(&ts, &ts) != 0) {
        }
    }
    return HX_OK;
}

static hx_md *engine(hx_comm *c)
{
    hx_system *sys = tmd_water_lattice("spce", 8, 0.02, 5);
    hx_md_params p;
    hx_md_params_default(&p);
    p.rc = 0.9;
    p.rlist = 1.0;
    p.nstlist = 10;
    p.steps = 40;
    p.gen_vel = 1;
    hx_md *md = NULL;
    T_OK(hx_md_create_dd(sys, &p, c, NULL, &md));
    hx_system_destroy(&sys);
    return md;
}

/* The failing rank's own status and message, the others HX_ERR_REMOTE naming it; all stopped at
 * the agreement point `at` (the time is reported: no deadline is involved, the steps up to `at`
 * take what they take on a loaded machine). */
static void expect_agreed(const char *what, hx_status st, double dt, long long reached, int culprit,
                          hx_status want, const char *msg, long long at)
{
    tw_report(what, st, dt);
    char exp[512];
    hx_status want_st;
    const int agreed = tw_agreed(st, culprit, want, msg, 0, &want_st, exp, sizeof exp);
    T_CHECK(agreed && reached == at,
            "%s: rank %d returned %s '%s' at step %lld after %.2f s; expected %s '%s' at step "
            "%lld",
            what, g_rank, hx_status_name(st), hx_last_error_message(), reached, dt,
            hx_status_name(want_st), exp, at);
}

/* 4. A step hook fails on one rank. */
static void case_hook(void)
{
    hx_comm *c = tw_case_comm();
    hx_md *md = engine(c);
    hook_arg a = {1, 0};
    hx_md_output out = {0};
    out.nstenergy = 100; /* no energy step before the search at step 10 */
    out.step_hook = hook;
    out.user = &a;
    const double t0 = tw_begin("hx_md_run: a step hook fails on one rank at step 3");
    hx_status st = md ? hx_md_run(md, &out) : HX_ERR_INTERNAL;
    char msg[128];
    snprintf(msg, sizeof msg, "test hook: rank %d failed before step 3", g_culprit);
    expect_agreed("hook", st, hx_wtime() - t0, md ? hx_md_current_step(md) : -1, g_culprit,
                  HX_ERR_IO, msg, 10);
    hx_md_destroy(&md);
    hx_comm_destroy(&c);
    tw_end();
}

/* 5. Rank 0's energy file cannot be written. */
static void case_output(void)
{
    FILE *full = fopen("/dev/full", "w");
    int have = full != NULL, all = 0;
    long long mine = have ? 0 : 1, none = 0;
    T_OK(hx_comm_max_i64(g_world, &mine, &none, 1));
    all = none == 0;
    if (!all) {
        if (g_rank == 0)
            printf("  output: SKIPPED (no /dev/full here)\n");
        if (full)
            fclose(full);
        return;
    }
    setvbuf(full, NULL, _IONBF, 0); /* the first line fails at once */
    hx_comm *c = tw_case_comm();
    hx_md *md = engine(c);
    hx_md_output out = {0};
    out.energy = g_rank == 0 ? full : NULL;
    out.nstenergy = 5;
    const double t0 = tw_begin("hx_md_run: rank 0's energy file fails at step 0");
    hx_status st = md ? hx_md_run(md, &out) : HX_ERR_INTERNAL;
    expect_agreed("output", st, hx_wtime() - t0, md ? hx_md_current_step(md) : -1, 0, HX_ERR_IO,
                  "step 0: writing the energy file failed (disk full?)", 5);
    hx_md_destroy(&md);
    hx_comm_destroy(&c);
    fclose(full);
    tw_end();
}

/* 6. A rank hangs in its hook at step 4 for two deadlines. */
static void case_hang(void)
{
    hx_comm *c = tw_case_comm();
    hx_md *md = engine(c);
    hook_arg a = {2, 0};
    hx_md_output out = {0};
    out.nstenergy = 100;
    out.step_hook = hook;
    out.user = &a;
    const double t0 = tw_begin("hx_md_run: a rank hangs at step 4");
    hx_status st = md ? hx_md_run(md, &out) : HX_ERR_INTERNAL;
    const double dt = hx_wtime() - t0;
    const char *msg = hx_last_error_message();
    tw_report("hang", st, dt);
    if (g_rank != g_culprit)
        T_CHECK(st == HX_ERR_TIMEOUT && strstr(msg, "(step 4)") && says_waited(msg) &&
                    dt < 2 * TW_DEADLINE + TW_SLACK,
                "hang: rank %d returned %s after %.2f s, expected HX_ERR_TIMEOUT naming the wait "
                "and '(step 4)' within %g s: %s",
                g_rank, hx_status_name(st), dt, 2 * TW_DEADLINE + TW_SLACK, msg);
    else
        T_CHECK(st != HX_OK && dt < 4 * TW_DEADLINE + TW_SLACK,
                "hang: the hung rank %d returned %s after %.2f s (expected an error within %g s)",
                g_rank, hx_status_name(st), dt, 4 * TW_DEADLINE + TW_SLACK);
    hx_md_destroy(&md);
    hx_comm_destroy(&c);
    tw_end();
}

/* 7. A pulse fails on one rank at step `at` (3: a plain step; 10: the search step). */
static void case_pulse(long long at)
{
    hx_comm *c = tw_case_comm();
    hx_md *md = engine(c);
    hook_arg a = {3, at};
    hx_md_output out = {0};
    out.nstenergy = 100;
    out.step_hook = hook;
    out.user = &a;
    const double t0 = tw_begin(at == 10 ? "hx_md_run: a pulse fails on one rank at the search step"
                                        : "hx_md_run: a pulse fails on one rank at step 3");
    hx_status st = md ? hx_md_run(md, &out) : HX_ERR_INTERNAL;
    hx_fault_arm(NULL);
    char msg[128];
    snprintf(msg, sizeof msg,
             "rank %d: the coordinates of pulse 0 failed (fault injected by the test)", g_culprit);
    expect_agreed(at == 10 ? "pulse at search" : "pulse", st, hx_wtime() - t0,
                  md ? hx_md_current_step(md) : -1, g_culprit, HX_ERR_INTERNAL, msg, 10);
    hx_md_destroy(&md);
    hx_comm_destroy(&c);
    tw_end();
}

int main(int argc, char **argv)
{
    t_mpi_begin(&argc, &argv, &g_world, &g_rank, &g_size);
    tw_init("test_waits", g_world, WATCHDOG_SECONDS);
    hx_log_set_level(HX_LOG_ERROR);
    if (g_world && g_size >= 2) {
        g_culprit = g_size - 1;
        /* the step deadline of the cases; set-up (creating communicators, engines) keeps room */
        hx_wait_timeout_set(TW_DEADLINE, 60.0);
        case_stop();
        case_out_of_step();
        case_collective();
        case_hook();
        case_output();
        case_hang();
        case_pulse(3);
        case_pulse(10);
    } else if (g_rank == 0) {
        printf("test_waits: needs 2 or more ranks\n");
    }
    return t_mpi_end(&g_world, "test_waits", tw_cases());
}
