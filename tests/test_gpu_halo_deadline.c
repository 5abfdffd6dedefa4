/* The never-hang machinery of the NVSHMEM exchange, and the placement rules (2 ranks):
 *
 *  - a withheld signal (test hook HALOX_TEST_WITHHOLD=rank:x|f:pulse:step) is caught by the
 *    receiver's deadline, which reports exactly: rank, what it waited for, pulse, peer, step,
 *    expected and observed signal; the other rank stops with an error too (its partner stopped)
 *    and nothing hangs. Coordinates and forces, P2P and network paths;
 *  - two processes on one GPU without an MPS daemon are refused with a message that says what to
 *    do, and HALOX_ALLOW_NO_MPS=1 overrides (checked by pointing CUDA_MPS_PIPE_DIRECTORY
 *    elsewhere after CUDA has started: the check looks for the control pipe). */
#include "gpu_halo_fixture.h"
#include "halox/gpu.h"

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int ncases;

/* Steps 1..3 of exchanges with the hook set, then an update (the host's sync point): returns the
 * status and message of this rank. */
static hx_status withheld(gh_case *C, const gh_config *g, const char *hook, char *msg, int len)
{
    setenv("HALOX_TEST_WITHHOLD", hook, 1);
    hx_halo *h = NULL;
    hx_status st = gh_halo_create(C, g, 1.0, 0, &h);
    unsetenv("HALOX_TEST_WITHHOLD");
    T_OK(st);
    if (!h)
        return st;
    cudaStream_t s = (cudaStream_t)hx_gpu_context_stream(gh_gpu, HX_GPU_STREAM_NONLOCAL);
    const hx_domain_plan *p = hx_plan_domain(C->plan, 0);
    float *buf = calloc(3 * (size_t)p->n_local + 4, sizeof(float));
    hx_status first = HX_OK;
    for (int step = 1; step <= 3; step++) {
        gh_fill_x(C, step, buf);
        cudaMemcpy(hx_halo_x(h, 0), buf, 12 * (size_t)p->n_home, cudaMemcpyHostToDevice);
        hx_status a = hx_halo_exchange_x(h, s);
        hx_status b = hx_halo_exchange_f(h, s);
        if (first == HX_OK)
            first = a != HX_OK ? a : b;
    }
    cudaStreamSynchronize(s);
    st = hx_halo_update(h); /* collective: syncs the device, reads the deadline record */
    snprintf(msg, (size_t)len, "%s", hx_last_error_message());
    if (st == HX_OK && first != HX_OK)
        st = first;
    hx_halo_destroy(&h);
    free(buf);
    return st;
}

static void deadlines(gh_case *C, int rank)
{
    for (int i = 0; i < gh_nconfigs; i++) {
        const gh_config *g = &gh_configs[i];
        if (strcmp(g->backend, "nvshmem") != 0 || g->bulk || g->path == HX_HALO_PATH_AUTO)
            continue; /* forced P2P and forced network */
        char msg[1024];
        /* rank 1 withholds its coordinates of step 3: rank 0 (its lower neighbour) waits */
        hx_status st = withheld(C, g, "1:x:0:3", msg, (int)sizeof msg);
        if (rank == 0) {
            const char *want = "nvshmem halo: rank 0 waited 1 s for the coordinates of pulse 0 "
                               "from rank 1 (step 3): expected signal 3, observed 2";
            T_CHECK(st == HX_ERR_NVSHMEM && strcmp(msg, want) == 0,
                    "%s, withheld coordinates: rank 0 got %s '%s', expected HX_ERR_NVSHMEM '%s'",
                    g->label, hx_status_name(st), msg, want);
        } else {
            T_CHECK(st != HX_OK, "%s, withheld coordinates: rank 1 finished without an error",
                    g->label);
        }
        /* rank 0 withholds its forces of step 2: rank 1 (which sent it the atoms) waits */
        st = withheld(C, g, "0:f:0:2", msg, (int)sizeof msg);
        if (rank == 1) {
            const char *want = "nvshmem halo: rank 1 waited 1 s for the forces of pulse 0 from "
                               "rank 0 (step 2): expected signal 2, observed 1";
            T_CHECK(st == HX_ERR_NVSHMEM && strcmp(msg, want) == 0,
                    "%s, withheld forces: rank 1 got %s '%s', expected HX_ERR_NVSHMEM '%s'",
                    g->label, hx_status_name(st), msg, want);
        } else {
            T_CHECK(st != HX_OK, "%s, withheld forces: rank 0 finished without an error", g->label);
        }
        if (rank == 0)
            printf("  %s: both withheld signals reported\n", g->label);
        ncases += 2;
    }
}

static void placement(gh_case *C, int rank)
{
    int n = 0;
    hx_gpu_device_count(&n, NULL);
    if (n != 1) {
        if (rank == 0)
            printf("  placement: %d GPUs, the two ranks do not share one: not checked\n", n);
        return;
    }
    const char *old = getenv("CUDA_MPS_PIPE_DIRECTORY");
    char *saved = old ? strdup(old) : NULL;
    setenv("CUDA_MPS_PIPE_DIRECTORY", "/nonexistent/halox-test", 1);
    hx_halo *h = NULL;
    const gh_config *g = NULL;
    for (int i = 0; i < gh_nconfigs; i++)
        if (strcmp(gh_configs[i].backend, "nvshmem") == 0)
            g = &gh_configs[i];
    hx_status st = gh_halo_create(C, g, 1.0, 0, &h);
    /* who shares a GPU comes from the GPUs' UUIDs: on one GPU both ranks do (refused without
     * MPS), with one rank per GPU nobody does (accepted without MPS) */
    const int shared = hx_gpu_context_ranks_on_gpu(gh_gpu) > 1;
    char want[64];
    snprintf(want, sizeof want, "2 processes share GPU %d", hx_gpu_context_device(gh_gpu));
    if (shared)
        T_CHECK(st == HX_ERR_UNSUPPORTED && strstr(hx_last_error_message(), want) &&
                    strstr(hx_last_error_message(), "HALOX_ALLOW_NO_MPS=1"),
                "two PEs on one GPU without MPS: %s '%s'", hx_status_name(st),
                hx_last_error_message());
    else
        T_CHECK(st == HX_OK, "one PE per GPU without MPS: %s '%s'", hx_status_name(st),
                hx_last_error_message());
    hx_halo_destroy(&h);
    setenv("HALOX_ALLOW_NO_MPS", "1", 1);
    T_OK(gh_halo_create(C, g, 1.0, 0, &h));
    hx_halo_destroy(&h);
    unsetenv("HALOX_ALLOW_NO_MPS");
    if (saved)
        setenv("CUDA_MPS_PIPE_DIRECTORY", saved, 1);
    else
        unsetenv("CUDA_MPS_PIPE_DIRECTORY");
    free(saved);
    ncases += 2;
    if (rank == 0)
        printf("  placement: %s\n", shared ? "refused without MPS, accepted with "
                                             "HALOX_ALLOW_NO_MPS=1"
                                           : "one rank per GPU: no MPS needed");
}

int main(int argc, char **argv)
{
    hx_comm *world = NULL;
    int rank = 0, size = 1;
    t_mpi_begin(&argc, &argv, &world, &rank, &size);
    if (!t_gpu_require("test_gpu_halo_deadline") || hx_halo_backend_available("nvshmem") != HX_OK ||
        size != 2) {
        if (rank == 0)
            printf("test_gpu_halo_deadline: SKIPPED: needs a GPU, the nvshmem backend and 2 "
                   "ranks\n");
        hx_comm_destroy(&world);
        hx_mpi_finalize();
        return T_SKIP_CODE;
    }
    if (!gh_gpu_begin(world))
        return t_mpi_end(&world, "test_gpu_halo_deadline", ncases);
    static const int grid[3] = {2, 1, 1}; /* one pulse: each rank waits for exactly one peer */
    gh_case C;
    uint64_t seed = 3;
    while (gh_case_make(&C, world, seed, grid, 0) == 0)
        seed++;
    gh_case_build(&C, 1, 1);
    if (rank == 0)
        printf("%s\n", C.name);
    deadlines(&C, rank);
    placement(&C, rank);
    gh_case_free(&C);
    gh_gpu_end();
    return t_mpi_end(&world, "test_gpu_halo_deadline", ncases);
}
