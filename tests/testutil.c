#include "testutil.h"

#include <math.h>

int hx_test_failures;

double t_reldiff(double a, double b, double floor_)
{
    double s = fmax(fmax(fabs(a), fabs(b)), floor_);
    return fabs(a - b) / s;
}

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void t_rng_seed(t_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t t_rng_next(t_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double t_rng_uniform(t_rng *r)
{
    return (double)(t_rng_next(r) >> 11) * 0x1.0p-53;
}

int t_rng_int(t_rng *r, int n)
{
    return (int)(t_rng_uniform(r) * n);
}

double t_rng_normal(t_rng *r)
{
    double u1 = t_rng_uniform(r), u2 = t_rng_uniform(r);
    if (u1 < 1e-300)
        u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
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
