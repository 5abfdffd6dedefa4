/* What P processes sharing one GPU under MPS cost a kernel-per-step exchange, isolated from
 * halox's halo code (docs/design/gpu-results.md, "The halo exchange alone").
 *
 * The fused NVSHMEM exchange takes 15-18 us per dependency level on one H200 shared by 4-8
 * processes, against a 1.65 us signalling floor. Its step is two kernels per process, each
 * waiting for signals that peer processes' kernels write. This program measures the two
 * ingredients separately, on every rank at once (started together):
 *
 *  1. launch: K empty kernels back to back on one stream (CUDA events around them): the
 *     device-side cost of one more kernel in a process's stream while P processes do the same;
 *  2. ring, kernel per step: step s launches one kernel per process that stores s into the next
 *     rank's flag (system-scope release, through CUDA IPC) and waits (acquire) for its own flag
 *     to reach s: one signal hop per step, plus whatever a kernel launch costs under MPS;
 *  3. ring, persistent: one kernel per process runs all steps (same stores and waits): the hop
 *     alone, no launches.
 *
 * (2) - (3) per step is what a kernel boundary costs when it sits between signals of
 * processes sharing the GPU: the part of the exchange's time per level that is neither data
 * nor signalling. Every wait has a deadline (2 s): a missed signal is reported, never hung on.
 *
 *   mpirun -np P mps_dispatch [--steps N] [--launches K] [--json FILE]
 *
 * Uses halox's program-level MPI calls (hx_mpi_init, hx_comm_*): MPI itself is only called in
 * src/comm/mpi.c. */
#include "halox/comm.h"
#include "halox/status.h"

#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BENCH_NAME "mps_dispatch"
#include "bench_gpu.cuh"

__global__ void k_empty(void) {}

/* One ring hop per step for steps s0 .. s1-1: signal the next rank, wait for our own flag. On a
 * missed deadline: err = the step it waited for, and stop. */
__global__ void k_ring(uint64_t *flags, int rank, int nranks, uint64_t s0, uint64_t s1,
                       unsigned long long *err)
{
    if (threadIdx.x != 0 || blockIdx.x != 0)
        return;
    for (uint64_t s = s0; s < s1; s++) {
        st_rel(&flags[(rank + 1) % nranks], s);
        const uint64_t t0 = gtimer();
        while (ld_acq(&flags[rank]) < s) {
            if (gtimer() - t0 > DEADLINE_NS) {
                *err = s;
                return;
            }
        }
    }
}

/* Max over ranks of a per-rank time in us (exchanged in picoseconds). */
static int max_over_ranks(hx_comm *c, double v, double *out)
{
    long long in = (long long)(v * 1e6), m = 0;
    if (hx_comm_max_i64(c, &in, &m, 1) != HX_OK)
        return -1;
    *out = (double)m * 1e-6;
    return 0;
}

int main(int argc, char **argv)
{
    int steps = 20000, launches = 20000, parallel = 0, rank = 0;
    const char *json = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--steps") && i + 1 < argc)
            steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--launches") && i + 1 < argc)
            launches = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--json") && i + 1 < argc)
            json = argv[++i];
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: mpirun -np P mps_dispatch [--steps N] [--launches K] [--json FILE]\n"
                   "Kernel launch cost and one-hop signalling, kernel per step against one\n"
                   "persistent kernel, for P processes sharing a GPU (see the file's header).\n");
            return 0;
        } else {
            fprintf(stderr, "mps_dispatch: unknown option '%s' (see --help)\n", argv[i]);
            return 2;
        }
    }
    if (steps < 100 || launches < 100) {
        fprintf(stderr, "mps_dispatch: --steps and --launches must be at least 100\n");
        return 2;
    }
    hx_comm *c = NULL;
    uint64_t *flags = NULL, *flags_owned = NULL;
    unsigned long long *err = NULL, herr = 0;
    cudaStream_t st = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    int own = 0, rc = 1, P = 1, ndev = 0;
    uint64_t s = 1; /* the step: the ring's flag values */
    double us_launch = 0, us_ring_k = 0, us_ring_p = 0, m_launch = 0, m_k = 0, m_p = 0;
    float ms = 0;
    /* (C++ compiles this file: every variable is declared before the first goto) */
    HK(hx_mpi_init(&argc, &argv, &parallel));
    HK(hx_comm_create_world(&c));
    rank = hx_comm_rank(c);
    P = hx_comm_nranks(c);
    CK(cudaGetDeviceCount(&ndev));
    CK(cudaSetDevice(rank % ndev));
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cudaMalloc((void **)&err, sizeof *err));
    CK(cudaMemset(err, 0, sizeof *err));
    {
        /* rank 0's flags, opened by every other rank through CUDA IPC */
        cudaIpcMemHandle_t h;
        memset(&h, 0, sizeof h);
        if (rank == 0) {
            CK(cudaMalloc((void **)&flags, 64 * sizeof *flags));
            CK(cudaMemset(flags, 0, 64 * sizeof *flags));
            CK(cudaIpcGetMemHandle(&h, flags));
            flags_owned = flags;
            own = 1;
        }
        HK(hx_comm_bcast_bytes(c, &h, sizeof h));
        if (rank != 0)
            CK(cudaIpcOpenMemHandle((void **)&flags, h, cudaIpcMemLazyEnablePeerAccess));
    }
    if (P > 64) {
        fprintf(stderr, "mps_dispatch: at most 64 ranks\n");
        goto fail;
    }
    CK(cudaDeviceSynchronize());

    /* 1. back-to-back empty kernels */
    for (int i = 0; i < 200; i++)
        k_empty<<<1, 32, 0, st>>>();
    CK(cudaStreamSynchronize(st));
    HK(hx_comm_agree(c, HX_OK));
    CK(cudaEventRecord(e0, st));
    for (int i = 0; i < launches; i++)
        k_empty<<<1, 32, 0, st>>>();
    CK(cudaEventRecord(e1, st));
    CK(cudaStreamSynchronize(st));
    {
        CK(cudaEventElapsedTime(&ms, e0, e1));
        us_launch = 1e3 * ms / launches;
    }
    /* 2. ring, one kernel per step (warm-up steps 1..100, then `steps` timed) */
    HK(hx_comm_agree(c, HX_OK));
    for (; s <= 100; s++)
        k_ring<<<1, 32, 0, st>>>(flags, rank, P, s, s + 1, err);
    CK(cudaStreamSynchronize(st));
    HK(hx_comm_agree(c, HX_OK));
    CK(cudaEventRecord(e0, st));
    for (int i = 0; i < steps; i++, s++)
        k_ring<<<1, 32, 0, st>>>(flags, rank, P, s, s + 1, err);
    CK(cudaEventRecord(e1, st));
    CK(cudaStreamSynchronize(st));
    {
        CK(cudaEventElapsedTime(&ms, e0, e1));
        us_ring_k = 1e3 * ms / steps;
    }
    /* 3. ring, one persistent kernel */
    HK(hx_comm_agree(c, HX_OK));
    CK(cudaEventRecord(e0, st));
    k_ring<<<1, 32, 0, st>>>(flags, rank, P, s, s + (uint64_t)steps, err);
    CK(cudaEventRecord(e1, st));
    CK(cudaStreamSynchronize(st));
    s += (uint64_t)steps;
    {
        CK(cudaEventElapsedTime(&ms, e0, e1));
        us_ring_p = 1e3 * ms / steps;
    }
    CK(cudaMemcpy(&herr, err, sizeof herr, cudaMemcpyDeviceToHost));
    if (herr) {
        fprintf(stderr,
                "mps_dispatch: rank %d: no signal from rank %d for step %llu within %.1f s\n", rank,
                (rank + P - 1) % P, herr, DEADLINE_NS * 1e-9);
        (void)hx_comm_agree(c, HX_ERR_INTERNAL);
        goto fail;
    }
    HK(hx_comm_agree(c, HX_OK));
    if (max_over_ranks(c, us_launch, &m_launch) || max_over_ranks(c, us_ring_k, &m_k) ||
        max_over_ranks(c, us_ring_p, &m_p)) {
        fprintf(stderr, "mps_dispatch: rank %d: gathering the timings failed\n", rank);
        goto fail;
    }
    if (rank == 0) {
        cudaDeviceProp prop;
        int drv = 0, rt = 0;
        CK(cudaGetDeviceProperties(&prop, 0));
        CK(cudaDriverGetVersion(&drv));
        CK(cudaRuntimeGetVersion(&rt));
        printf("%d processes on %d GPU(s) (%s): slowest rank\n", P, ndev, prop.name);
        printf("  empty kernel, back to back      %8.2f us per kernel\n", m_launch);
        printf("  ring hop, kernel per step       %8.2f us per step\n", m_k);
        printf("  ring hop, persistent kernel     %8.2f us per step\n", m_p);
        printf("  kernel boundary between signals %8.2f us\n", m_k - m_p);
        if (json) {
            char tmp[4096];
            snprintf(tmp, sizeof tmp, "%s.tmp", json);
            FILE *f = fopen(tmp, "w");
            if (!f) {
                fprintf(stderr, "mps_dispatch: cannot write '%s'\n", tmp);
                goto fail;
            }
            char date[32];
            time_t now = time(NULL);
            strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
            const char *rev = getenv("HALOX_GIT_REVISION");
            fprintf(
                f,
                "{\n \"meta\": {\"git_revision\": \"%s\", \"date\": \"%s\", \"gpu\": \"%s\", "
                "\"driver\": %d, \"cuda_runtime\": %d, \"command\": \"mpirun -np %d "
                "mps_dispatch --steps %d --launches %d\"},\n"
                " \"runs\": [{\"mode\": \"mps_dispatch\", \"ranks\": %d, \"gpus\": %d, "
                "\"steps\": %d, \"launches\": %d, \"us_empty_kernel\": %.4f, "
                "\"us_ring_kernel_per_step\": %.4f, \"us_ring_persistent\": %.4f, "
                "\"us_kernel_boundary\": %.4f, \"timing\": \"slowest rank; CUDA events\"}]\n}\n",
                rev ? rev : "unknown", date, prop.name, drv, rt, P, steps, launches, P, ndev, steps,
                launches, m_launch, m_k, m_p, m_k - m_p);
            if (fclose(f) != 0 || rename(tmp, json) != 0) {
                fprintf(stderr, "mps_dispatch: cannot write '%s'\n", json);
                goto fail;
            }
        }
    }
    /* the others unmap rank 0's flags before rank 0 frees them */
    if (!own)
        CK(cudaIpcCloseMemHandle(flags));
    flags = NULL;
    HK(hx_comm_agree(c, HX_OK));
    rc = 0;
fail:
    if (flags && !own)
        cudaIpcCloseMemHandle(flags);
    if (flags_owned)
        cudaFree(flags_owned);
    if (err)
        cudaFree(err);
    if (e0)
        cudaEventDestroy(e0);
    if (e1)
        cudaEventDestroy(e1);
    if (st)
        cudaStreamDestroy(st);
    if (rc != 0 && c)
        hx_comm_abort(c, 1);
    hx_comm_destroy(&c);
    hx_mpi_finalize();
    return rc;
}
