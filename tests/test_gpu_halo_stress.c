/* Stress: the NVSHMEM exchange with random delays injected into its blocks (0-20 us at five
 * points of the kernels) and into each PE (host pauses, delay kernels ahead of an exchange),
 * run for thousands of steps: a missing wait, a wrong memory order or a region overwritten while
 * it is read shows up as a changed result.
 *
 * Steps are enqueued in batches (default 50) with no host wait inside a batch, so PEs drift as
 * far apart as the protocol allows: each step copies new home coordinates and new forces in,
 * exchanges, and copies the halo coordinates and the accumulated forces out (all asynchronous,
 * pinned buffers per step). The host backend computes the same steps over MPI meanwhile; then
 * every step is compared bit for bit. Forces are small integers, whose float sums are exact in
 * any order, so the atomics of the force kernel must give exactly the host's result.
 *
 *   test_gpu_halo_stress [--steps N] [--batch B] [--seed S]   (per configuration and case) */
#include "gpu_halo_fixture.h"
#include "halox/gpu.h"

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T_CUDA(call)                                                                               \
    do {                                                                                           \
        cudaError_t t_rc_ = (call);                                                                \
        if (t_rc_ != cudaSuccess)                                                                  \
            T_FAIL("%s failed: %s", #call, cudaGetErrorString(t_rc_));                             \
    } while (0)

static int ncases;

static void stress(gh_case *C, const gh_config *g, int nsteps, int batch, unsigned long long seed,
                   cudaStream_t s)
{
    hx_halo *ref = NULL, *gpu = NULL;
    T_OK(gh_host_create(C, &ref));
    T_OK(gh_halo_create(C, g, 20.0, seed, &gpu));
    if (!ref || !gpu) {
        hx_halo_destroy(&ref);
        hx_halo_destroy(&gpu);
        return;
    }
    if (C->rank == 0)
        printf("  %-18s %s\n", g->label, hx_halo_describe(gpu));
    const hx_domain_plan *p = hx_plan_domain(C->plan, 0);
    const size_t nl = 3 * (size_t)p->n_local + 4, nh = 3 * (size_t)p->n_home + 4;
    float *xin, *fin, *xout, *fout;
    T_CUDA(cudaMallocHost((void **)&xin, sizeof(float) * nh * batch));
    T_CUDA(cudaMallocHost((void **)&fin, sizeof(float) * nl * batch));
    T_CUDA(cudaMallocHost((void **)&xout, sizeof(float) * nl * batch));
    T_CUDA(cudaMallocHost((void **)&fout, sizeof(float) * nl * batch));
    float *refx = malloc(sizeof(float) * nl * batch), *reff = malloc(sizeof(float) * nl * batch);
    float *xd = hx_halo_x(gpu, 0), *fd = hx_halo_f(gpu, 0);
    const size_t bl = 12 * (size_t)p->n_local, bh = 12 * (size_t)p->n_home;
    long long bad = 0;
    for (int base = 0; base < nsteps && bad == 0; base += batch) {
        const int nb = nsteps - base < batch ? nsteps - base : batch;
        for (int i = 0; i < nb; i++) {
            gh_fill_x(C, base + i + 1, xin + nh * i);
            gh_fill_f(C, base + i + 1, p->n_local, 1, fin + nl * i);
        }
        for (int i = 0; i < nb; i++) {
            if (bh)
                T_CUDA(cudaMemcpyAsync(xd, xin + nh * i, bh, cudaMemcpyHostToDevice, s));
            T_OK(hx_halo_exchange_x(gpu, s));
            if (bl)
                T_CUDA(cudaMemcpyAsync(xout + nl * i, xd, bl, cudaMemcpyDeviceToHost, s));
            if (bl)
                T_CUDA(cudaMemcpyAsync(fd, fin + nl * i, bl, cudaMemcpyHostToDevice, s));
            T_OK(hx_halo_exchange_f(gpu, s));
            if (bl)
                T_CUDA(cudaMemcpyAsync(fout + nl * i, fd, bl, cudaMemcpyDeviceToHost, s));
        }
        /* the reference, while the GPU works */
        float *xr = hx_halo_x(ref, 0), *fr = hx_halo_f(ref, 0);
        for (int i = 0; i < nb; i++) {
            memcpy(xr, xin + nh * i, bh);
            T_OK(hx_halo_exchange_x(ref, NULL));
            memcpy(refx + nl * i, xr, bl);
            memcpy(fr, fin + nl * i, bl);
            T_OK(hx_halo_exchange_f(ref, NULL));
            memcpy(reff + nl * i, fr, bl);
        }
        T_CUDA(cudaStreamSynchronize(s));
        for (int i = 0; i < nb; i++) {
            bad += gh_compare_x(C, g->label, base + i + 1, refx + nl * i, xout + nl * i, 4);
            bad += gh_compare_f(C, g->label, base + i + 1, reff + nl * i, fout + nl * i, NULL, 4);
        }
        /* a rank that failed stops after this batch; so do the others (collective loop) */
        double mine = (double)bad, all = 0;
        T_OK(hx_comm_sum_f64(C->world, &mine, &all, 1));
        bad = (long long)all;
    }
    if (C->rank == 0)
        printf("    %d steps: %s\n", nsteps, bad ? "MISMATCHES (see above)" : "identical");
    ncases++;
    cudaFreeHost(xin);
    cudaFreeHost(fin);
    cudaFreeHost(xout);
    cudaFreeHost(fout);
    free(refx);
    free(reff);
    hx_halo_destroy(&gpu);
    hx_halo_destroy(&ref);
}

int main(int argc, char **argv)
{
    hx_comm *world = NULL;
    int rank = 0, size = 1, nsteps = 2000, batch = 50;
    unsigned long long seed = 12345;
    t_mpi_begin(&argc, &argv, &world, &rank, &size);
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--steps") == 0)
            nsteps = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--batch") == 0)
            batch = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--seed") == 0)
            seed = strtoull(argv[i + 1], NULL, 10);
    }
    if (batch < 1)
        batch = 1;
    if (!t_gpu_require("test_gpu_halo_stress") || hx_halo_backend_available("nvshmem") != HX_OK) {
        if (rank == 0 && hx_halo_backend_available("nvshmem") != HX_OK)
            printf("test_gpu_halo_stress: SKIPPED: %s\n", hx_last_error_message());
        hx_comm_destroy(&world);
        hx_mpi_finalize();
        return T_SKIP_CODE;
    }
    int grid[3] = {size, 1, 1};
    if (size == 4)
        grid[0] = grid[1] = 2;
    if (size == 8)
        grid[0] = grid[1] = grid[2] = 2;
    if (!gh_gpu_begin(world))
        return t_mpi_end(&world, "test_gpu_halo_stress", ncases);
    cudaStream_t s = (cudaStream_t)hx_gpu_context_stream(gh_gpu, HX_GPU_STREAM_NONLOCAL);
    /* a small case (1 block per pulse: dependency waits dominate) and a large one (several
     * blocks per pulse: the block counters and the last-block notification) */
    for (int k = 0; k < 2; k++) {
        gh_case C;
        if (!gh_case_make(&C, world, 77 + (uint64_t)k, grid, k ? 4000 : 0))
            continue;
        gh_case_build(&C, 1, 1);
        if (rank == 0)
            printf("%s, %d atoms\n", C.name, C.s.natoms);
        for (int i = 0; i < gh_nconfigs; i++) {
            const gh_config *g = &gh_configs[i];
            if (strcmp(g->backend, "nvshmem") != 0 || (g->path == HX_HALO_PATH_P2P && !g->bulk))
                continue; /* auto (P2P here), network, bulk copy */
            stress(&C, g, nsteps, batch, seed + (unsigned long long)i, s);
        }
        gh_case_free(&C);
    }
    gh_gpu_end();
    return t_mpi_end(&world, "test_gpu_halo_stress", ncases);
}
