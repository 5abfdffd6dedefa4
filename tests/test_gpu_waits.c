/* No rank left waiting, on the GPU halo backends (2 ranks; across two GPUs where there are two).
 *
 * One rank (1) fails or hangs at a point where a job used to hang, and both ranks must return
 * from halox within the deadline (step deadline 5 s here, hx_wait_timeout_set) with the failing
 * rank's message, agreed as a program would agree (hx_comm_agree on the exchange's
 * communicator):
 *
 *  1. gpu-mpi (and gpu-direct on a GPU): a pulse of the coordinate exchange fails on rank 1 at
 *     step 2 (fault site "halo.pulse", src/core/fault.h, as a failing CUDA call): the exchange
 *     no longer returns mid-pulse while rank 0 waits in its receive; rank 1 sends a failure
 *     marker (gpu-direct: in its done token), rank 0 returns HX_ERR_REMOTE at once, and the
 *     agreement gives both rank 1's message;
 *  2. gpu-mpi: rank 1's stream does not finish (a host function holding it, released after the
 *     checks; cudaLaunchHostFunc, which the emulation models): its bounded host wait gives up at
 *     3/4 of the deadline, naming the pulse, before rank 0's wait for its message (the whole
 *     deadline); both get rank 1's report;
 *  3. gpu-direct: rank 1 cannot export its memory (fault site "halo.ipc") at set-up: the failure
 *     is agreed before the handle exchange, both ranks' hx_halo_create return rank 1's message;
 *  4. nvshmem on a GPU, the hang across GPUs: rank 1 withholds its coordinate signal of step 3
 *     (test hook HALOX_TEST_WITHHOLD) and no deadline is configured (cfg.wait_timeout < 0): the
 *     default device deadline (half the step deadline) ends rank 0's wait, the next update
 *     reports rank, peer, pulse and step on rank 0 and both ranks return errors in time. With
 *     the two ranks on two GPUs this is the hang of issue 25 (a test that ran 577 s).
 *
 * Runs on a GPU machine (label gpu) and in the CPU emulation (label emulation: cases 1-3, the
 * IPC handles mapped between the processes; case 4 on two emulated GPUs, NVSHMEM emulated over
 * shared memory); elsewhere it reports SKIPPED with the reason.
 * Each case has a communicator of its own (a timed-out one is unusable). A watchdog alarm turns
 * a hang into a failure naming the case (tests/waits_fixture.h, shared with test_waits). */
#include "gpu_halo_fixture.h"
#include "waits_fixture.h"
#include "halox/error.h"
#include "halox/gpu.h"
#include "core/fault.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WATCHDOG_SECONDS 90
#define CULPRIT 1

static int g_rank;
static hx_comm *g_world;

static const gh_config *config(const char *backend)
{
    for (int i = 0; i < gh_nconfigs; i++)
        if (strcmp(gh_configs[i].backend, backend) == 0 &&
            gh_configs[i].path == HX_HALO_PATH_AUTO && !gh_configs[i].bulk)
            return &gh_configs[i];
    return NULL;
}

/* A case on a communicator of its own, with the step deadline for every wait on it. */
static int make_case(gh_case *C)
{
    hx_comm *c = tw_case_comm();
    if (!c)
        return 0;
    static const int grid[3] = {2, 1, 1}; /* one pulse each way: each rank the other's neighbour */
    for (uint64_t seed = 3; seed < 40; seed++)
        if (gh_case_make(C, c, seed, grid, 0)) {
            gh_case_build(C, 1, 1);
            return 1;
        }
    T_FAIL("rank %d: no decomposition case on grid 2x1x1", g_rank);
    hx_comm_destroy(&c);
    return 0;
}

static void free_case(gh_case *C)
{
    hx_comm *c = C->world;
    gh_case_free(C);
    hx_comm_destroy(&c); /* a timed-out one is left to MPI */
}

static hx_status exchange(gh_case *C, hx_halo *h, long long step, float *buf, int forces)
{
    cudaStream_t s = (cudaStream_t)hx_gpu_context_stream(gh_gpu, HX_GPU_STREAM_NONLOCAL);
    const hx_domain_plan *p = hx_plan_domain(C->plan, 0);
    if (!forces) {
        gh_fill_x(C, step, buf);
        cudaMemcpy(hx_halo_x(h, 0), buf, 12 * (size_t)p->n_home, cudaMemcpyHostToDevice);
        return hx_halo_exchange_x(h, s);
    }
    gh_fill_f(C, step, p->n_local, 0, buf);
    cudaMemcpy(hx_halo_f(h, 0), buf, 12 * (size_t)p->n_local, cudaMemcpyHostToDevice);
    return hx_halo_exchange_f(h, s);
}

static void report(const char *what, const char *phase, hx_status st, double dt)
{
    char label[160];
    snprintf(label, sizeof label, "%s, %s", what, phase);
    tw_report(label, st, dt);
}

/* After the agreement: rank 1's status and exactly its message, rank 0 HX_ERR_REMOTE with it. */
static void expect_agreed(const char *what, hx_status st, double dt, double within, hx_status want,
                          const char *msg)
{
    report(what, "agreed", st, dt);
    char exp[1024];
    hx_status want_st;
    const int agreed = tw_agreed(st, CULPRIT, want, msg, 0, &want_st, exp, sizeof exp);
    T_CHECK(agreed && dt < within,
            "%s: rank %d returned %s '%s' after %.2f s; expected %s '%s' within %g s", what, g_rank,
            hx_status_name(st), hx_last_error_message(), dt, hx_status_name(want_st), exp, within);
}

/* 1. A pulse of the coordinate exchange fails on rank 1 at step 2. */
static void case_pulse(const char *backend)
{
    gh_case C;
    if (!make_case(&C))
        return;
    hx_halo *h = NULL;
    T_OK(gh_halo_create(&C, config(backend), 20.0, 0, &h));
    float *buf = calloc(3 * (size_t)hx_plan_domain(C.plan, 0)->n_local + 4, sizeof(float));
    char name[96];
    snprintf(name, sizeof name, "%s: a pulse fails on rank 1 at step 2", backend);
    const double t0 = tw_begin(name);
    hx_status st = h ? HX_OK : HX_ERR_INTERNAL;
    for (long long step = 1; step <= 3 && st == HX_OK; step++) {
        if (step == 2 && g_rank == CULPRIT)
            hx_fault_arm("halo.pulse");
        st = exchange(&C, h, step, buf, 0);
        hx_fault_arm(NULL);
        if (st == HX_OK)
            st = exchange(&C, h, step, buf, 1);
    }
    report(backend, "exchange", st, hx_wtime() - t0);
    /* the exchange returned on both ranks; a program agrees before it goes on */
    st = hx_comm_agree(C.world, st);
    char msg[160];
    snprintf(msg, sizeof msg,
             "rank %d: the coordinates of pulse 0 failed (fault injected by the test)", CULPRIT);
    expect_agreed(name, st, hx_wtime() - t0, TW_DEADLINE, HX_ERR_CUDA, msg);
    hx_halo_destroy(&h);
    free(buf);
    free_case(&C);
    tw_end();
}

/* 2. Rank 1's stream does not finish: a host function holds it until the checks are done. */
static volatile int g_release;

static void hold(void *user)
{
    (void)user;
    const double t0 = hx_wtime();
    while (!g_release && hx_wtime() - t0 < 60.0) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

static void case_stall(void)
{
    gh_case C;
    if (!make_case(&C))
        return;
    hx_halo *h = NULL;
    T_OK(gh_halo_create(&C, config("gpu-mpi"), 20.0, 0, &h));
    float *buf = calloc(3 * (size_t)hx_plan_domain(C.plan, 0)->n_local + 4, sizeof(float));
    g_release = 0;
    const double t0 = tw_begin("gpu-mpi: rank 1's stream hangs at step 2");
    hx_status st = h ? HX_OK : HX_ERR_INTERNAL;
    for (long long step = 1; step <= 3 && st == HX_OK; step++) {
        if (step == 2 && g_rank == CULPRIT)
            T_CHECK(cudaLaunchHostFunc(
                        (cudaStream_t)hx_gpu_context_stream(gh_gpu, HX_GPU_STREAM_NONLOCAL), hold,
                        NULL) == cudaSuccess,
                    "rank %d: cudaLaunchHostFunc failed", g_rank);
        st = exchange(&C, h, step, buf, 0);
        if (st == HX_OK)
            st = exchange(&C, h, step, buf, 1);
    }
    const double dt = hx_wtime() - t0;
    report("gpu-mpi stall", "exchange", st, dt);
    char want[160];
    snprintf(want, sizeof want,
             "rank %d: the GPU did not finish the packing of the coordinates of pulse 0 (gpu-mpi, "
             "exchange 1) within %g s",
             CULPRIT, 0.75 * TW_DEADLINE);
    if (g_rank == CULPRIT)
        T_CHECK(st == HX_ERR_TIMEOUT && strstr(hx_last_error_message(), want) &&
                    dt > 0.75 * TW_DEADLINE - 0.1,
                "stall: rank %d returned %s after %.2f s, expected HX_ERR_TIMEOUT '%s ...': %s",
                g_rank, hx_status_name(st), dt, want, hx_last_error_message());
    /* agreed: rank 1's report on both (a timed-out wait ranks before a forwarded failure) */
    st = hx_comm_agree(C.world, st);
    const double dt2 = hx_wtime() - t0;
    report("gpu-mpi stall", "agreed", st, dt2);
    char exp[400];
    hx_status want_st;
    const int agreed = tw_agreed(st, CULPRIT, HX_ERR_TIMEOUT, want, 1, &want_st, exp, sizeof exp);
    T_CHECK(agreed && dt2 < TW_DEADLINE + TW_SLACK,
            "stall: rank %d agreed on %s '%s' after %.2f s; expected %s '%s ...' within %g s",
            g_rank, hx_status_name(st), hx_last_error_message(), dt2, hx_status_name(want_st), exp,
            TW_DEADLINE + TW_SLACK);
    g_release = 1;
    hx_halo_destroy(&h); /* stuck: its device memory is left allocated */
    free(buf);
    free_case(&C);
    tw_end();
}

/* 3. gpu-direct: rank 1 cannot export its memory at set-up. */
static void case_ipc(void)
{
    gh_case C;
    if (!make_case(&C))
        return;
    const double t0 = tw_begin("gpu-direct: rank 1 cannot export its memory at set-up");
    if (g_rank == CULPRIT)
        hx_fault_arm("halo.ipc");
    hx_halo *h = NULL;
    hx_status st = gh_halo_create(&C, config("gpu-direct"), 20.0, 0, &h);
    hx_fault_arm(NULL);
    char msg[160];
    snprintf(msg, sizeof msg,
             "gpu-direct: rank %d could not export its memory (fault injected by the test)",
             CULPRIT);
    expect_agreed("gpu-direct set-up", st, hx_wtime() - t0, TW_DEADLINE, HX_ERR_CUDA, msg);
    hx_halo_destroy(&h);
    free_case(&C);
    tw_end();
}

/* 4. nvshmem: rank 1 withholds its coordinates of step 3; the default device deadline. */
static void case_withhold(void)
{
    gh_case C;
    if (!make_case(&C))
        return;
    setenv("HALOX_TEST_WITHHOLD", "1:x:0:3", 1);
    hx_halo *h = NULL;
    hx_status st = gh_halo_create(&C, config("nvshmem"), -1.0, 0, &h); /* the default deadline */
    unsetenv("HALOX_TEST_WITHHOLD");
    T_OK(st);
    float *buf = calloc(3 * (size_t)hx_plan_domain(C.plan, 0)->n_local + 4, sizeof(float));
    const int gpus = hx_gpu_context_gpus(gh_gpu);
    const double t0 = tw_begin("nvshmem: rank 1 withholds a signal across GPUs");
    hx_status first = h ? HX_OK : HX_ERR_INTERNAL;
    for (long long step = 1; step <= 4 && h; step++) {
        hx_status a = exchange(&C, h, step, buf, 0);
        hx_status b = exchange(&C, h, step, buf, 1);
        if (first == HX_OK)
            first = a != HX_OK ? a : b;
    }
    st = h ? hx_halo_update(h) : first; /* the host's sync point: reads the deadline record */
    if (st == HX_OK)
        st = first;
    const double dt = hx_wtime() - t0;
    report(gpus > 1 ? "nvshmem across 2 GPUs" : "nvshmem on 1 GPU", "update", st, dt);
    char want[160];
    snprintf(want, sizeof want,
             "nvshmem halo: rank 0 waited %g s for the coordinates of pulse 0 from rank 1 "
             "(step 3)",
             0.5 * TW_DEADLINE);
    if (g_rank == 0)
        T_CHECK((st == HX_ERR_NVSHMEM && strstr(hx_last_error_message(), want)) ||
                    (st == HX_ERR_REMOTE && strstr(hx_last_error_message(), want)),
                "withhold: rank 0 returned %s, expected the device deadline's report '%s ...': %s",
                hx_status_name(st), want, hx_last_error_message());
    T_CHECK(st != HX_OK && dt < 2 * TW_DEADLINE + TW_SLACK,
            "withhold: rank %d returned %s after %.2f s (expected an error within %g s)", g_rank,
            hx_status_name(st), dt, 2 * TW_DEADLINE + TW_SLACK);
    hx_halo_destroy(&h);
    free(buf);
    free_case(&C);
    tw_end();
    if (g_rank == 0)
        printf("  nvshmem: %s\n", gpus > 1 ? "the two ranks ran on two GPUs (across NVLink)"
                                           : "one GPU: the hang across GPUs was not checked");
}

int main(int argc, char **argv)
{
    int size = 1;
    t_mpi_begin(&argc, &argv, &g_world, &g_rank, &size);
    tw_init("test_gpu_waits", g_world, WATCHDOG_SECONDS);
    hx_log_set_level(HX_LOG_ERROR);
    const int gpu = t_gpu_require("test_gpu_waits");
    if (!gpu || size != 2 || hx_halo_backend_available("gpu-mpi") != HX_OK) {
        if (g_rank == 0)
            printf("test_gpu_waits: SKIPPED: needs a GPU (or the CPU emulation build, "
                   "-DHALOX_GPU_EMULATE=ON), the gpu-mpi backend (CUDA and MPI) and 2 ranks\n");
        hx_comm_destroy(&g_world);
        hx_mpi_finalize();
        return T_SKIP_CODE;
    }
    if (!gh_gpu_begin(g_world))
        return t_mpi_end(&g_world, "test_gpu_waits", tw_cases());
    hx_wait_timeout_set(TW_DEADLINE, 60.0);
    case_pulse("gpu-mpi");
    if (hx_halo_backend_available("gpu-direct") == HX_OK)
        case_pulse("gpu-direct");
    case_stall();
    if (hx_halo_backend_available("gpu-direct") == HX_OK)
        case_ipc();
    if (hx_halo_backend_available("nvshmem") == HX_OK)
        case_withhold();
    else if (g_rank == 0)
        printf("  nvshmem: not compiled here (the hang across GPUs runs on the GPU machine)\n");
    gh_gpu_end();
    return t_mpi_end(&g_world, "test_gpu_waits", tw_cases());
}
