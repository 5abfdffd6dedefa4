/* Shared by the GPU halo tests (test_gpu_halo, test_gpu_halo_stress, test_gpu_halo_deadline):
 * decomposition cases over the MPI world (one domain per rank), the backend configurations
 * every GPU test runs, step data, and where a local atom came from (for failure messages). */
#ifndef HX_TEST_GPU_HALO_FIXTURE_H
#define HX_TEST_GPU_HALO_FIXTURE_H

#include "halox/halox.h"
#include "plan_fixture.h"

typedef struct gh_case {
    hx_comm *world;
    hx_dd *dd;
    hx_plan *plan;
    sysgen s;
    caseparams c;
    int rank, nd, npulses, pulses_dim[3];
    int *owner;     /* [nmol] domain of each molecule's centre */
    int n_home;     /* this rank's home atoms (after gh_case_build) */
    double *xh;     /* [n_home][3] */
    int empty;      /* domains without home atoms in the last build */
    long long seed; /* the case's seed */
    char name[128]; /* "grid 2x2x2 seed 7 (pulses 1+2+1, 2 empty domains, 8123 atoms)" */
} gh_case;

/* Draw a case on `grid` from `seed` (the same on every rank). big: about `big` atoms per domain
 * (pulses of thousands of atoms: several blocks per pulse); 0: the plan fixture's small systems.
 * Returns 0 (and frees) when the geometry is refused. */
int gh_case_make(gh_case *C, hx_comm *world, uint64_t seed, const int grid[3], int big);
/* Assign molecules m with m % of < keep to the domain of their centre and build the plan (MPI,
 * collective); updates name/empty. */
void gh_case_build(gh_case *C, int keep, int of);
void gh_case_free(gh_case *C);

/* The GPU context of the test process: created on the world communicator by gh_gpu_begin
 * (collective: node-local rank modulo the devices, the device made current for the test's own
 * copies and synchronisations), before any stream; every GPU exchange of the fixture runs on it
 * and the tests take their streams from it. gh_gpu_end destroys it (before the world). */
extern hx_gpu_context *gh_gpu;
hx_gpu_context *gh_gpu_begin(hx_comm *world);
void gh_gpu_end(void);

/* One GPU backend configuration. */
typedef struct gh_config {
    const char *label;   /* "nvshmem/p2p+bulk" */
    const char *backend; /* "gpu-mpi", "gpu-direct", "nvshmem" */
    hx_halo_path path;
    int bulk;
    int deterministic; /* forces in the host backend's order: bit-exact expected */
} gh_config;
extern const gh_config gh_configs[];
extern const int gh_nconfigs;
/* 1 when compiled into this build */
int gh_config_available(const gh_config *g);
hx_status gh_halo_create(const gh_case *C, const gh_config *g, double timeout,
                         unsigned long long stress, hx_halo **out);
/* The host reference on the same plan: float, host memory. */
hx_status gh_host_create(const gh_case *C, hx_halo **out);

/* Step data. Home coordinates of step s (float), forces on every local atom of step s: random
 * in [-1, 1) (integers in [-16, 16] when `integer`: exact sums in any order). */
void gh_fill_x(const gh_case *C, long long step, float *x);
void gh_fill_f(const gh_case *C, long long step, int n_local, int integer, float *f);

/* The pulse that delivered local atom a (-1 for home atoms) and the rank it came from. */
void gh_origin(const hx_domain_plan *p, int a, int *pulse, int *peer);

/* Compare the halo coordinates [n_home, n_local) bit for bit; print up to `maxp` mismatches
 * with rank, peer, pulse, step, atom, expected and got. Returns the mismatch count. */
long long gh_compare_x(const gh_case *C, const char *what, long long step, const float *want,
                       const float *got, int maxp);
/* Compare forces on [0, n_local): exact, or within tol[a] (per atom, all 3 components). */
long long gh_compare_f(const gh_case *C, const char *what, long long step, const float *want,
                       const float *got, const double *tol, int maxp);

#endif
