#include "testutil.h"

#include <math.h>

int hx_test_failures;

double t_reldiff(double a, double b, double floor_)
{
    double s = fmax(fmax(fabs(a), fabs(b)), floor_);
    return fabs(a - b) / s;
}

void t_rng_seed(t_rng *r, uint64_t seed)
{
    hx_rng_seed(r, seed, 0);
}

uint64_t t_rng_next(t_rng *r)
{
    return hx_rng_next(r);
}

double t_rng_uniform(t_rng *r)
{
    return hx_rng_uniform(r);
}

int t_rng_int(t_rng *r, int n)
{
    return (int)(hx_rng_uniform(r) * n);
}

double t_rng_normal(t_rng *r)
{
    return hx_rng_normal(r);
}

int t_finish(const char *name, int ncases)
{
    printf("%s: %d cases, %d checks failed\n", name, ncases, hx_test_failures);
    return hx_test_failures ? 1 : 0;
}

#include "halox/halo.h"

void t_mpi_begin(int *argc, char ***argv, hx_comm **world, int *rank, int *size)
{
    int parallel = 0;
    T_OK(hx_mpi_init(argc, argv, &parallel));
    T_OK(hx_comm_create_world(world));
    *rank = *world ? hx_comm_rank(*world) : 0;
    *size = *world ? hx_comm_nranks(*world) : 1;
}

int t_mpi_end(hx_comm **world, const char *name, int ncases)
{
    double mine = hx_test_failures, all = mine;
    int rank = 0;
    if (*world) {
        if (hx_comm_sum_f64(*world, &mine, &all, 1) != HX_OK)
            all = mine + 1;
        rank = hx_comm_rank(*world);
    }
    hx_test_failures = (int)all;
    int rc = hx_test_failures ? 1 : 0;
    if (rank == 0)
        rc = t_finish(name, ncases);
    hx_comm_destroy(world);
    hx_mpi_finalize();
    return rc;
}

#include "halox/gpu.h"

int t_gpu_require(const char *name)
{
    int n = 0;
    const char *why = NULL;
    if (hx_gpu_device_count(&n, &why) != HX_OK || n == 0) {
        printf("%s: SKIPPED: %s\n", name, why ? why : "no usable CUDA device");
        return 0;
    }
    return 1;
}
