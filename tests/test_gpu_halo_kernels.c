/* The device pack and unpack shared by every GPU halo backend (src/halo/halo_pack.cuh), in one
 * process (the compute-sanitizer target: memcheck, racecheck, synccheck):
 *
 *  - every domain of in-process plans (1D/2D/3D, multi-pulse, empty domains, a large case) is
 *    uploaded as its device image; its local coordinates come from the host backend;
 *  - pack of every pulse, with vector stores and through the bulk-copy engine, into destinations
 *    at the four alignments of an atom against 16 bytes (head, body and tail paths): equal bit
 *    for bit to the host backend's element function; the guard words before and after the
 *    message are untouched;
 *  - unpack of every pulse, plain and atomic: equal bit for bit to the host's accumulation. */
#include "dd/pack.h"
#include "halo/halo_gpu.h"
#include "halox/gpu.h"
#include "plan_fixture.h"

#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>

#define T_CUDA(call)                                                                               \
    do {                                                                                           \
        cudaError_t t_rc_ = (call);                                                                \
        if (t_rc_ != cudaSuccess)                                                                  \
            T_FAIL("%s failed: %s", #call, cudaGetErrorString(t_rc_));                             \
    } while (0)

#define GUARD 8 /* floats checked on each side of a message */

static const float canary = -12345.5f;

static void check_pulse(const hx_gpu_plan *gp, const hx_domain_plan *p, int q, const float *x,
                        float *dx, const char *name)
{
    const hx_pulse *P = &p->pulses[q];
    const int n = P->send_count;
    const int *map = p->index_map + P->map_offset;
    const size_t nf = 3 * (size_t)n;
    float *want = malloc(sizeof(float) * (nf + 1));
    float *got = malloc(sizeof(float) * (nf + 2 * GUARD + 16));
    for (int e = 0; e < n; e++)
        hx_pack_x_elem_f32(e, map, x, (float)P->shift[0], (float)P->shift[1], (float)P->shift[2],
                           want);
    float *dout = NULL;
    const size_t cap = nf + 2 * GUARD + 16;
    T_CUDA(cudaMalloc((void **)&dout, sizeof(float) * cap));
    for (int bulk = 0; bulk < 2; bulk++)
        for (int align = 0; align < 4; align++) {
            /* entry 0 at GUARD + 3 align floats: 12 align bytes past a 32-byte boundary */
            const size_t off = GUARD + 3 * (size_t)align;
            for (size_t i = 0; i < cap; i++)
                got[i] = canary;
            T_CUDA(cudaMemcpy(dout, got, sizeof(float) * cap, cudaMemcpyHostToDevice));
            T_OK(hx_gpu_pack_x(gp, q, dx, dout + off, bulk, NULL));
            T_CUDA(cudaDeviceSynchronize());
            T_CUDA(cudaMemcpy(got, dout, sizeof(float) * cap, cudaMemcpyDeviceToHost));
            long long bad = 0;
            for (size_t i = 0; i < nf; i++)
                if (memcmp(&got[off + i], &want[i], sizeof(float)) != 0 && bad++ < 4)
                    T_FAIL("%s domain %d pulse %d (%s, alignment %d): entry %zu dim %zu: expected "
                           "%a got %a",
                           name, p->domain, q, bulk ? "bulk copy" : "vector stores", align, i / 3,
                           i % 3, (double)want[i], (double)got[off + i]);
            for (size_t i = 0; i < off; i++)
                if (got[i] != canary && bad++ < 8)
                    T_FAIL("%s domain %d pulse %d (%s, alignment %d): wrote before the message "
                           "(float %zu)",
                           name, p->domain, q, bulk ? "bulk" : "vector", align, i);
            for (size_t i = off + nf; i < cap; i++)
                if (got[i] != canary && bad++ < 8)
                    T_FAIL("%s domain %d pulse %d (%s, alignment %d): wrote past the message "
                           "(float %zu of %zu)",
                           name, p->domain, q, bulk ? "bulk" : "vector", align, i - off, nf);
        }
    cudaFree(dout);
    free(want);
    free(got);
}

static void check_unpack(const hx_gpu_plan *gp, const hx_domain_plan *p, int q, t_rng *r,
                         const char *name)
{
    const hx_pulse *P = &p->pulses[q];
    const int n = P->send_count, nl = p->n_local;
    const int *map = p->index_map + P->map_offset;
    float *buf = malloc(12 * (size_t)n + 4), *f = malloc(12 * (size_t)nl + 4);
    float *want = malloc(12 * (size_t)nl + 4), *got = malloc(12 * (size_t)nl + 4);
    for (int i = 0; i < 3 * n; i++)
        buf[i] = (float)(2.0 * t_rng_uniform(r) - 1.0);
    for (int i = 0; i < 3 * nl; i++)
        f[i] = (float)(2.0 * t_rng_uniform(r) - 1.0);
    memcpy(want, f, 12 * (size_t)nl);
    for (int e = 0; e < n; e++)
        hx_unpack_f_elem_f32(e, map, buf, want);
    float *db = NULL, *df = NULL;
    T_CUDA(cudaMalloc((void **)&db, 12 * (size_t)n + 16));
    T_CUDA(cudaMalloc((void **)&df, 12 * (size_t)nl + 16));
    for (int atomic = 0; atomic < 2; atomic++) {
        T_CUDA(cudaMemcpy(db, buf, 12 * (size_t)n, cudaMemcpyHostToDevice));
        T_CUDA(cudaMemcpy(df, f, 12 * (size_t)nl, cudaMemcpyHostToDevice));
        T_OK(hx_gpu_unpack_f(gp, q, db, df, atomic, NULL));
        T_CUDA(cudaDeviceSynchronize());
        T_CUDA(cudaMemcpy(got, df, 12 * (size_t)nl, cudaMemcpyDeviceToHost));
        long long bad = 0;
        for (int i = 0; i < 3 * nl; i++)
            if (memcmp(&got[i], &want[i], sizeof(float)) != 0 && bad++ < 4)
                T_FAIL("%s domain %d pulse %d (%s unpack): local atom %d dim %d: expected %a got "
                       "%a",
                       name, p->domain, q, atomic ? "atomic" : "plain", i / 3, i % 3,
                       (double)want[i], (double)got[i]);
    }
    cudaFree(db);
    cudaFree(df);
    free(buf);
    free(f);
    free(want);
    free(got);
}

static int run_case(uint64_t seed, const int grid[3], int big)
{
    t_rng r;
    caseparams c;
    sysgen s;
    if (big) {
        t_rng_seed(&r, seed);
        while (!pf_choose_case(&r, grid, &c)) {
        }
        pf_make_system(&r, 0, big, 0.5 * (c.r_comm - c.rc), c.box, &s);
    } else {
        pf_draw(seed, grid, &c, &s, &r);
    }
    hx_dd_params dp = {{c.box[0], c.box[1], c.box[2]}, {grid[0], grid[1], grid[2]}, c.r_comm, c.rc};
    hx_dd *dd = NULL;
    if (hx_dd_create(&dp, &dd) != HX_OK) {
        pf_free(&s);
        return 0;
    }
    const int nd = hx_dd_ndomains(dd);
    hx_comm *comm = NULL;
    hx_plan *plan = NULL;
    hx_halo *h = NULL;
    T_OK(hx_comm_create_serial(nd, &comm));
    T_OK(hx_plan_create(dd, comm, &plan));
    int *nhome = calloc((size_t)nd, sizeof(int));
    double **xh = calloc((size_t)nd, sizeof(double *));
    for (int d = 0; d < nd; d++)
        xh[d] = malloc(sizeof(double) * 3 * ((size_t)s.natoms + 1));
    for (int a = 0; a < s.natoms; a++) {
        const int d = hx_dd_domain_of_point(dd, &s.cen[3 * s.mol[a]]);
        memcpy(&xh[d][3 * nhome[d]++], &s.x[3 * a], 3 * sizeof(double));
    }
    T_OK(hx_plan_build(plan, nhome, (const double *const *)xh));
    hx_halo_config cfg;
    hx_halo_config_default(&cfg);
    cfg.real = HX_REAL_F32;
    T_OK(hx_halo_create(plan, comm, &cfg, &h));
    char name[96];
    snprintf(name, sizeof name, "grid %dx%dx%d seed %llu", grid[0], grid[1], grid[2],
             (unsigned long long)seed);
    if (h) {
        for (int d = 0; d < nd; d++) {
            const hx_domain_plan *p = hx_plan_domain(plan, d);
            float *x = hx_halo_x(h, d);
            for (int k = 0; k < 3 * p->n_home; k++)
                x[k] = (float)xh[d][k];
        }
        T_OK(hx_halo_exchange_x(h, NULL)); /* every domain's halo, for forwarded entries */
        for (int d = 0; d < nd; d++) {
            const hx_domain_plan *p = hx_plan_domain(plan, d);
            hx_gpu_plan gp;
            memset(&gp, 0, sizeof gp);
            T_OK(hx_gpu_plan_upload(&gp, plan, d, NULL));
            float *dx = NULL;
            T_CUDA(cudaMalloc((void **)&dx, 12 * (size_t)p->n_local + 16));
            T_CUDA(
                cudaMemcpy(dx, hx_halo_x(h, d), 12 * (size_t)p->n_local, cudaMemcpyHostToDevice));
            for (int q = 0; q < p->npulses; q++) {
                check_pulse(&gp, p, q, hx_halo_x(h, d), dx, name);
                check_unpack(&gp, p, q, &r, name);
            }
            cudaFree(dx);
            hx_gpu_plan_free(&gp);
        }
    }
    hx_halo_destroy(&h);
    for (int d = 0; d < nd; d++)
        free(xh[d]);
    free(xh);
    free(nhome);
    hx_plan_destroy(&plan);
    hx_comm_destroy(&comm);
    hx_dd_destroy(&dd);
    pf_free(&s);
    return 1;
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    if (!t_gpu_require("test_gpu_halo_kernels"))
        return T_SKIP_CODE;
    static const int grids[][3] = {{2, 1, 1}, {4, 1, 1}, {2, 2, 1}, {1, 3, 4},
                                   {2, 2, 2}, {3, 3, 2}, {4, 2, 3}};
    int n = 0;
    for (int g = 0; g < (int)(sizeof grids / sizeof grids[0]); g++)
        for (uint64_t seed = 1; seed <= 3; seed++)
            n += run_case(seed + 10 * (uint64_t)g, grids[g], 0);
    /* large pulses: several blocks, long vector bodies, several bulk copies per warp */
    n += run_case(501, grids[4], 40000);
    return t_finish("test_gpu_halo_kernels", n);
}
