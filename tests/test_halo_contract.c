/* The halo backend contract (src/halo/halo_impl.h), through the host backend and the registry:
 *
 *  - the registry: "host" is available; gpu-mpi/gpu-direct/nvshmem are available exactly when
 *    this build compiled them (HALOX_HAVE_CUDA/NVSHMEM), and answer HX_ERR_NOT_COMPILED with
 *    what to rebuild with otherwise; an unknown name is HX_ERR_INVALID_ARG listing the names;
 *  - bad configurations are refused (host backend on device memory, a stream given to it);
 *  - the arrays: capacity >= every domain's n_local; addresses fixed across updates while the
 *    capacity holds, regrown (and still working) when a rebuild needs more;
 *  - a plan rebuilt without hx_halo_update is refused by every exchange with the documented
 *    message, and works again after the update;
 *  - the exchanges in double and float give the same halo coordinates (float: the rounded
 *    coordinate plus the rounded shift) and the same returned forces within float rounding;
 *  - integer exchange in device memory is refused by the host backend. */
#include "halox/halox.h"
#include "halox/version.h"
#include "plan_fixture.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void registry(void)
{
    T_OK(hx_halo_backend_available("host"));
    const char *gpu[] = {"gpu-mpi", "gpu-direct"};
    for (int k = 0; k < 2; k++) {
        hx_status st = hx_halo_backend_available(gpu[k]);
        int compiled = HALOX_HAVE_CUDA && HALOX_HAVE_MPI && HX_TEST_GPU_HALO;
        T_CHECK(st == (compiled ? HX_OK : HX_ERR_NOT_COMPILED), "backend %s: %s (compiled: %d): %s",
                gpu[k], hx_status_name(st), compiled, hx_last_error_message());
        if (!compiled)
            T_CHECK(strstr(hx_last_error_message(), "was not compiled into this halox: rebuild "
                                                    "with CUDA and MPI") != NULL,
                    "backend %s: message '%s'", gpu[k], hx_last_error_message());
    }
    hx_status st = hx_halo_backend_available("nvshmem");
    T_CHECK(st == (HALOX_HAVE_NVSHMEM ? HX_OK : HX_ERR_NOT_COMPILED), "nvshmem: %s (%s)",
            hx_status_name(st), hx_last_error_message());
    st = hx_halo_backend_available("infiniband");
    T_CHECK(st == HX_ERR_INVALID_ARG &&
                strcmp(hx_last_error_message(), "unknown halo backend 'infiniband': use host, "
                                                "gpu-mpi, gpu-direct or nvshmem") == 0,
            "unknown backend: %s '%s'", hx_status_name(st), hx_last_error_message());
    const char *const *names = hx_halo_backend_names();
    int n = 0;
    while (names[n])
        n++;
    T_CHECK(n == 4 && strcmp(names[0], "host") == 0, "%d backend names, first '%s'", n, names[0]);
}

typedef struct fixture {
    hx_dd *dd;
    hx_comm *comm;
    hx_plan *plan;
    int nd;
    int *nhome;
    double **xh;
    int **gid;
    sysgen s;
} fixture;

static void fixture_make(fixture *F, uint64_t seed, const int grid[3], double scale)
{
    memset(F, 0, sizeof *F);
    t_rng r;
    caseparams c;
    pf_draw(seed, grid, &c, &F->s, &r);
    hx_dd_params dp = {{c.box[0], c.box[1], c.box[2]}, {grid[0], grid[1], grid[2]}, c.r_comm, c.rc};
    T_OK(hx_dd_create(&dp, &F->dd));
    F->nd = hx_dd_ndomains(F->dd);
    T_OK(hx_comm_create_serial(F->nd, &F->comm));
    T_OK(hx_plan_create(F->dd, F->comm, &F->plan));
    F->nhome = calloc((size_t)F->nd, sizeof(int));
    F->xh = calloc((size_t)F->nd, sizeof(double *));
    F->gid = calloc((size_t)F->nd, sizeof(int *));
    for (int d = 0; d < F->nd; d++) {
        F->xh[d] = malloc(sizeof(double) * 3 * ((size_t)F->s.natoms + 1));
        F->gid[d] = malloc(sizeof(int) * ((size_t)F->s.natoms + 1));
    }
    (void)scale;
}

/* Assign atoms (whole molecules by centre) and build; `keep` molecules out of every `of` */
static void fixture_build(fixture *F, int keep, int of)
{
    for (int d = 0; d < F->nd; d++)
        F->nhome[d] = 0;
    for (int a = 0; a < F->s.natoms; a++) {
        int m = F->s.mol[a];
        if (m % of >= keep)
            continue;
        int d = hx_dd_domain_of_point(F->dd, &F->s.cen[3 * m]);
        F->gid[d][F->nhome[d]] = a;
        memcpy(&F->xh[d][3 * F->nhome[d]++], &F->s.x[3 * a], 3 * sizeof(double));
    }
    T_OK(hx_plan_build(F->plan, F->nhome, (const double *const *)F->xh));
}

static void fixture_free(fixture *F)
{
    for (int d = 0; d < F->nd; d++) {
        free(F->xh[d]);
        free(F->gid[d]);
    }
    free(F->xh);
    free(F->gid);
    free(F->nhome);
    hx_plan_destroy(&F->plan);
    hx_comm_destroy(&F->comm);
    hx_dd_destroy(&F->dd);
    pf_free(&F->s);
}

/* Load home coordinates and unit forces on halo atoms, exchange both ways, check. */
static void exchange_and_check(fixture *F, hx_halo *h64, hx_halo *h32, const char *when)
{
    for (int d = 0; d < F->nd; d++) {
        const hx_domain_plan *p = hx_plan_domain(F->plan, d);
        double *x = hx_halo_x(h64, d);
        float *xf = hx_halo_x(h32, d);
        for (int k = 0; k < 3 * p->n_home; k++) {
            x[k] = F->xh[d][k];
            xf[k] = (float)F->xh[d][k];
        }
    }
    T_OK(hx_halo_exchange_x(h64, NULL));
    T_OK(hx_halo_exchange_x(h32, NULL));
    long long halo_atoms = 0;
    for (int d = 0; d < F->nd; d++) {
        const hx_domain_plan *p = hx_plan_domain(F->plan, d);
        const double *x = hx_halo_x(h64, d);
        const float *xf = hx_halo_x(h32, d);
        double *f = hx_halo_f(h64, d);
        float *ff = hx_halo_f(h32, d);
        halo_atoms += p->n_local - p->n_home;
        int bad = 0;
        /* float coordinate = float(home) + float(shift), the same sum done in double */
        for (int a = p->n_home; a < p->n_local && !bad; a++)
            for (int k = 0; k < 3; k++) {
                double sh = x[3 * a + k] - floor(x[3 * a + k] / 1e9); /* x itself */
                (void)sh;
                float want = (float)x[3 * a + k];
                if (fabsf(xf[3 * a + k] - want) > 4.0f * 1.2e-7f * (fabsf(want) + 1.0f)) {
                    T_FAIL("%s: domain %d halo atom %d dim %d: float %.9g, double %.17g", when, d,
                           a, k, (double)xf[3 * a + k], x[3 * a + k]);
                    bad = 1;
                    break;
                }
            }
        for (int a = 0; a < p->n_local; a++)
            for (int k = 0; k < 3; k++) {
                f[3 * a + k] = a >= p->n_home ? 1.0 : 0.0;
                ff[3 * a + k] = a >= p->n_home ? 1.0f : 0.0f;
            }
    }
    T_OK(hx_halo_exchange_f(h64, NULL));
    T_OK(hx_halo_exchange_f(h32, NULL));
    double back = 0, backf = 0;
    for (int d = 0; d < F->nd; d++) {
        const hx_domain_plan *p = hx_plan_domain(F->plan, d);
        const double *f = hx_halo_f(h64, d);
        const float *ff = hx_halo_f(h32, d);
        for (int a = 0; a < p->n_home; a++) {
            back += f[3 * a];
            backf += ff[3 * a];
        }
    }
    /* every halo copy returns exactly one unit to its owner (small integers: exact in float) */
    T_CHECK(back == (double)halo_atoms && backf == (double)halo_atoms,
            "%s: %lld halo atoms, forces returned %.17g (double) and %.9g (float)", when,
            halo_atoms, back, backf);
}

static void contract(void)
{
    static const int grid[3] = {2, 2, 2};
    fixture F;
    fixture_make(&F, 7, grid, 1.0);
    fixture_build(&F, 1, 2); /* half the molecules first: the full set needs more room later */
    hx_halo_config c;
    hx_halo_config_default(&c);
    hx_halo *h64 = NULL, *h32 = NULL, *bad = NULL;

    c.mem = HX_MEM_DEVICE;
    hx_status st = hx_halo_create(F.plan, F.comm, &c, &bad);
    T_CHECK(st == HX_ERR_UNSUPPORTED && bad == NULL, "host backend on device memory: %s",
            hx_status_name(st));
    c.mem = HX_MEM_HOST;
    T_OK(hx_halo_create(F.plan, F.comm, &c, &h64));
    c.real = HX_REAL_F32;
    T_OK(hx_halo_create(F.plan, F.comm, &c, &h32));
    if (!h64 || !h32) {
        fixture_free(&F);
        return;
    }
    T_CHECK(strcmp(hx_halo_backend_name(h64), "host") == 0 &&
                hx_halo_get_config(h32)->real == HX_REAL_F32,
            "backend name '%s'", hx_halo_backend_name(h64));
    T_CHECK(strncmp(hx_halo_describe(h64), "host: serial transport", 22) == 0, "describe: '%s'",
            hx_halo_describe(h64));
    int cap0 = hx_halo_capacity(h64);
    for (int d = 0; d < F.nd; d++)
        T_CHECK(hx_plan_domain(F.plan, d)->n_local <= cap0, "domain %d: %d local atoms > %d", d,
                hx_plan_domain(F.plan, d)->n_local, cap0);
    void *x0 = hx_halo_x(h64, 0);
    exchange_and_check(&F, h64, h32, "first build");

    int dummy = 0;
    st = hx_halo_exchange_x(h64, &dummy);
    T_CHECK(st == HX_ERR_INVALID_ARG, "host backend given a stream: %s", hx_status_name(st));
    int *iv[8] = {0};
    st = hx_halo_exchange_int(h64, iv, 1, HX_MEM_DEVICE);
    T_CHECK(st == HX_ERR_UNSUPPORTED, "host backend, ints in device memory: %s",
            hx_status_name(st));

    /* the same atoms again: capacity holds, addresses stay */
    fixture_build(&F, 1, 2);
    st = hx_halo_exchange_x(h64, NULL);
    T_CHECK(st == HX_ERR_INVALID_ARG &&
                strcmp(hx_last_error_message(),
                       "halo exchange: the plan was rebuilt (build 2) after the exchange was "
                       "last updated (build 1): call hx_halo_update after every hx_plan_build") ==
                    0,
            "stale plan, exchange_x: %s '%s'", hx_status_name(st), hx_last_error_message());
    st = hx_halo_exchange_f(h32, NULL);
    T_CHECK(st == HX_ERR_INVALID_ARG, "stale plan, exchange_f: %s", hx_status_name(st));
    st = hx_halo_exchange_int(h64, F.gid, 1, HX_MEM_HOST);
    T_CHECK(st == HX_ERR_INVALID_ARG, "stale plan, exchange_int: %s", hx_status_name(st));
    T_OK(hx_halo_update(h64));
    T_OK(hx_halo_update(h32));
    T_CHECK(hx_halo_capacity(h64) == cap0 && hx_halo_x(h64, 0) == x0,
            "unchanged plan: capacity %d -> %d, address moved: %d", cap0, hx_halo_capacity(h64),
            hx_halo_x(h64, 0) != x0);
    exchange_and_check(&F, h64, h32, "rebuild, same atoms");

    /* all molecules: more than the headroom holds, the arrays must grow */
    fixture_build(&F, 2, 2);
    T_OK(hx_halo_update(h64));
    T_OK(hx_halo_update(h32));
    int grown = 0;
    for (int d = 0; d < F.nd; d++)
        grown |= hx_plan_domain(F.plan, d)->n_local > cap0;
    T_CHECK(grown && hx_halo_capacity(h64) > cap0, "twice the atoms: capacity %d -> %d (grown %d)",
            cap0, hx_halo_capacity(h64), grown);
    exchange_and_check(&F, h64, h32, "rebuild, twice the atoms");

    hx_halo_destroy(&h64);
    hx_halo_destroy(&h32);
    T_CHECK(h64 == NULL, "destroy did not clear the handle");
    hx_halo_destroy(&h64); /* NULL is fine */
    fixture_free(&F);
}

int main(void)
{
    registry();
    contract();
    return t_finish("test_halo_contract", 2);
}
