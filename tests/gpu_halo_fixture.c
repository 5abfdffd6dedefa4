#include "gpu_halo_fixture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const gh_config gh_configs[] = {
    {"gpu-mpi", "gpu-mpi", HX_HALO_PATH_AUTO, 0, 1},
    {"gpu-direct", "gpu-direct", HX_HALO_PATH_AUTO, 0, 1},
    {"nvshmem/auto", "nvshmem", HX_HALO_PATH_AUTO, 0, 0},
    {"nvshmem/p2p", "nvshmem", HX_HALO_PATH_P2P, 0, 0},
    {"nvshmem/network", "nvshmem", HX_HALO_PATH_NETWORK, 0, 0},
    {"nvshmem/p2p+bulk", "nvshmem", HX_HALO_PATH_P2P, 1, 0},
};
const int gh_nconfigs = (int)(sizeof gh_configs / sizeof gh_configs[0]);

hx_gpu_context *gh_gpu;

hx_gpu_context *gh_gpu_begin(hx_comm *world)
{
    hx_gpu_context_params gp;
    hx_gpu_context_params_default(&gp);
    gp.make_current = 1;
    T_OK(hx_gpu_context_create(&gp, world, &gh_gpu));
    if (gh_gpu && hx_comm_rank(world) == 0)
        printf("rank 0: %s\n", hx_gpu_context_describe(gh_gpu));
    return gh_gpu;
}

void gh_gpu_end(void)
{
    hx_gpu_context_destroy(&gh_gpu);
}

int gh_config_available(const gh_config *g)
{
    return hx_halo_backend_available(g->backend) == HX_OK;
}

int gh_case_make(gh_case *C, hx_comm *world, uint64_t seed, const int grid[3], int big)
{
    memset(C, 0, sizeof *C);
    C->world = world;
    C->rank = hx_comm_rank(world);
    C->seed = (long long)seed;
    t_rng r;
    if (big > 0) {
        t_rng_seed(&r, seed);
        while (!pf_choose_case(&r, grid, &C->c)) {
        }
        const int nd = grid[0] * grid[1] * grid[2];
        /* molecules of 1-3 atoms: about 2 atoms each */
        pf_make_system(&r, 0, big * nd / 2, 0.5 * (C->c.r_comm - C->c.rc), C->c.box, &C->s);
    } else {
        pf_draw(seed, grid, &C->c, &C->s, &r);
    }
    hx_dd_params dp = {
        {C->c.box[0], C->c.box[1], C->c.box[2]}, {grid[0], grid[1], grid[2]}, C->c.r_comm, C->c.rc};
    if (hx_dd_create(&dp, &C->dd) != HX_OK) {
        pf_free(&C->s);
        return 0;
    }
    C->nd = hx_dd_ndomains(C->dd);
    C->npulses = hx_dd_npulses(C->dd);
    for (int d = 0; d < 3; d++)
        C->pulses_dim[d] = hx_dd_pulses_dim(C->dd, d);
    C->owner = malloc(sizeof(int) * ((size_t)C->s.nmol + 1));
    for (int m = 0; m < C->s.nmol; m++)
        C->owner[m] = hx_dd_domain_of_point(C->dd, &C->s.cen[3 * m]);
    C->xh = malloc(sizeof(double) * 3 * ((size_t)C->s.natoms + 1));
    T_OK(hx_plan_create(C->dd, world, &C->plan));
    return C->plan != NULL;
}

void gh_case_build(gh_case *C, int keep, int of)
{
    C->n_home = 0;
    for (int a = 0; a < C->s.natoms; a++) {
        const int m = C->s.mol[a];
        if (m % of >= keep || C->owner[m] != C->rank)
            continue;
        memcpy(&C->xh[3 * C->n_home++], &C->s.x[3 * a], 3 * sizeof(double));
    }
    T_OK(hx_plan_build(C->plan, &C->n_home, (const double *const *)&C->xh));
    double mine = C->n_home == 0 ? 1.0 : 0.0, all = 0;
    T_OK(hx_comm_sum_f64(C->world, &mine, &all, 1));
    C->empty = (int)all;
    snprintf(C->name, sizeof C->name, "grid %dx%dx%d seed %lld (pulses %d+%d+%d, %d empty)",
             C->c.grid[0], C->c.grid[1], C->c.grid[2], C->seed, C->pulses_dim[0], C->pulses_dim[1],
             C->pulses_dim[2], C->empty);
}

void gh_case_free(gh_case *C)
{
    hx_plan_destroy(&C->plan);
    hx_dd_destroy(&C->dd);
    free(C->owner);
    free(C->xh);
    pf_free(&C->s);
    memset(C, 0, sizeof *C);
}

hx_status gh_halo_create(const gh_case *C, const gh_config *g, double timeout,
                         unsigned long long stress, hx_halo **out)
{
    hx_halo_config cfg;
    hx_halo_config_default(&cfg);
    cfg.backend = g->backend;
    cfg.real = HX_REAL_F32;
    cfg.mem = HX_MEM_DEVICE;
    cfg.path = g->path;
    cfg.bulk_copy = g->bulk;
    cfg.wait_timeout = timeout;
    cfg.stress_seed = stress;
    cfg.gpu = gh_gpu;
    return hx_halo_create(C->plan, C->world, &cfg, out);
}

hx_status gh_host_create(const gh_case *C, hx_halo **out)
{
    hx_halo_config cfg;
    hx_halo_config_default(&cfg);
    cfg.real = HX_REAL_F32;
    return hx_halo_create(C->plan, C->world, &cfg, out);
}

static uint64_t mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void gh_fill_x(const gh_case *C, long long step, float *x)
{
    for (int a = 0; a < C->n_home; a++)
        for (int k = 0; k < 3; k++)
            x[3 * a + k] = (float)(C->xh[3 * a + k] + 1e-3 * (double)((step * 7 + a + 5 * k) % 13));
}

void gh_fill_f(const gh_case *C, long long step, int n_local, int integer, float *f)
{
    for (int a = 0; a < n_local; a++)
        for (int k = 0; k < 3; k++) {
            uint64_t h = mix((uint64_t)C->seed * 0x100000001b3ULL ^
                             mix((uint64_t)step * 1000003ULL + (uint64_t)C->rank * 7919ULL +
                                 (uint64_t)a * 3ULL + (uint64_t)k));
            f[3 * a + k] = integer ? (float)((int)(h % 33) - 16)
                                   : (float)((double)(h >> 11) * 0x1.0p-52 - 1.0);
        }
}

void gh_origin(const hx_domain_plan *p, int a, int *pulse, int *peer)
{
    *pulse = -1;
    *peer = p->domain;
    for (int q = 0; q < p->npulses; q++) {
        const hx_pulse *P = &p->pulses[q];
        if (a >= P->atom_offset && a < P->atom_offset + P->recv_count) {
            *pulse = q;
            *peer = P->recv_pe;
        }
    }
}

long long gh_compare_x(const gh_case *C, const char *what, long long step, const float *want,
                       const float *got, int maxp)
{
    const hx_domain_plan *p = hx_plan_domain(C->plan, 0);
    long long bad = 0;
    for (int a = p->n_home; a < p->n_local; a++)
        for (int k = 0; k < 3; k++) {
            if (memcmp(&want[3 * a + k], &got[3 * a + k], sizeof(float)) == 0)
                continue;
            if (bad++ < maxp) {
                int q, peer;
                gh_origin(p, a, &q, &peer);
                T_FAIL("%s %s: rank %d step %lld: x of local atom %d (pulse %d from rank %d, "
                       "entry %d) dim %d: expected %a (%.9g), got %a (%.9g)",
                       what, C->name, C->rank, step, a, q, peer,
                       q >= 0 ? a - p->pulses[q].atom_offset : -1, k, (double)want[3 * a + k],
                       (double)want[3 * a + k], (double)got[3 * a + k], (double)got[3 * a + k]);
            } else {
                hx_test_failures++;
            }
        }
    if (bad > maxp)
        fprintf(stderr, "  ... %s: rank %d step %lld: %lld coordinate mismatches in all\n", what,
                C->rank, step, bad);
    return bad;
}

long long gh_compare_f(const gh_case *C, const char *what, long long step, const float *want,
                       const float *got, const double *tol, int maxp)
{
    const hx_domain_plan *p = hx_plan_domain(C->plan, 0);
    long long bad = 0;
    for (int a = 0; a < p->n_local; a++)
        for (int k = 0; k < 3; k++) {
            const float w = want[3 * a + k], g = got[3 * a + k];
            const int ok =
                tol ? fabs((double)w - (double)g) <= tol[a] : memcmp(&w, &g, sizeof(float)) == 0;
            if (ok)
                continue;
            if (bad++ < maxp) {
                int q, peer;
                gh_origin(p, a, &q, &peer);
                T_FAIL("%s %s: rank %d step %lld: f of local atom %d (%s, pulse %d from rank %d) "
                       "dim %d: expected %a (%.9g), got %a (%.9g), tolerance %.3g",
                       what, C->name, C->rank, step, a, a < p->n_home ? "home" : "halo", q, peer, k,
                       (double)w, (double)w, (double)g, (double)g, tol ? tol[a] : 0.0);
            } else {
                hx_test_failures++;
            }
        }
    if (bad > maxp)
        fprintf(stderr, "  ... %s: rank %d step %lld: %lld force mismatches in all\n", what,
                C->rank, step, bad);
    return bad;
}
