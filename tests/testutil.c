#include "testutil.h"

#include "halox/md.h"
#include "halox/system.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* The value a .gro field printed with decimals digits reads back as. */
static double printed(double v, int decimals)
{
    char f[64];
    snprintf(f, sizeof f, "%.*f", decimals, v);
    return strtod(f, NULL);
}

/* A name as the .gro field keeps it: at most 5 characters, blanks trimmed. */
static void field_name(const char *in, char out[6])
{
    char f[6];
    snprintf(f, sizeof f, "%.5s", in);
    const char *b = f;
    while (*b == ' ')
        b++;
    size_t n = strlen(b);
    while (n > 0 && b[n - 1] == ' ')
        n--;
    memcpy(out, b, n);
    out[n] = '\0';
}

int t_gro_same(const hx_system *got, const hx_system *want, int vel, const char *what)
{
    int bad = 0;
#define T_GRO_DIFF(...)                                                                            \
    do {                                                                                           \
        if (bad++ < 5)                                                                             \
            T_FAIL(__VA_ARGS__);                                                                   \
    } while (0)
    if (got->natoms != want->natoms || got->nmol != want->nmol) {
        T_GRO_DIFF("%s: %d atoms in %d molecules, written %d in %d", what, got->natoms, got->nmol,
                   want->natoms, want->nmol);
        return bad;
    }
    const char *title = want->title[0] ? want->title : "halox";
    if (strcmp(got->title, title) != 0)
        T_GRO_DIFF("%s: title '%s', written '%s'", what, got->title, title);
    if (got->has_velocities != (vel && want->natoms > 0))
        T_GRO_DIFF("%s: has_velocities %d, written with%s", what, got->has_velocities,
                   vel ? "" : "out");
    for (int k = 0; k <= got->nmol; k++)
        if (got->mol_start[k] != want->mol_start[k]) {
            T_GRO_DIFF("%s: molecule %d starts at atom %d, written %d", what, k + 1,
                       got->mol_start[k] + 1, want->mol_start[k] + 1);
            break;
        }
    for (int d = 0; d < 3; d++)
        if (got->box[d] != printed(want->box[d], 5))
            T_GRO_DIFF("%s: box %c %.17g, written %.5f", what, "xyz"[d], got -> box[d],
                       want -> box[d]);
    for (int i = 0; i < got->natoms && bad < 5; i++) {
        char rn[6], an[6];
        field_name(want->res_name[i], rn);
        field_name(want->atom_name[i], an);
        if (got->res_id[i] != want->res_id[i] % 100000 || strcmp(got->res_name[i], rn) != 0 ||
            strcmp(got->atom_name[i], an) != 0)
            T_GRO_DIFF("%s: atom %d is residue %d '%s' atom '%s', written %d '%s' '%s'", what,
                       i + 1, got->res_id[i], got->res_name[i], got->atom_name[i],
                       want->res_id[i] % 100000, rn, an);
        for (int d = 0; d < 3; d++) {
            if (got->x[3 * i + d] != printed(want->x[3 * i + d], 3))
                T_GRO_DIFF("%s: atom %d %c = %.17g, written %.3f", what, i + 1, "xyz"[d],
                           got -> x[3 * i + d], want -> x[3 * i + d]);
            double v = vel ? printed(want->v[3 * i + d], 4) : 0.0;
            if (got->v && got->v[3 * i + d] != v)
                T_GRO_DIFF("%s: atom %d v%c = %.17g, written %.4f", what, i + 1, "xyz"[d],
                           got -> v[3 * i + d], v);
        }
    }
#undef T_GRO_DIFF
    return bad;
}

int t_finish(const char *name, int ncases)
{
    printf("%s: %d cases, %d checks failed\n", name, ncases, hx_test_failures);
    return hx_test_failures ? 1 : 0;
}

#include "halox/comm.h"

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

/* ---- domain local sets ------------------------------------------------------------------ */

void t_domain_build(const hx_system *s, const int *owner, const int g[3], int dom, t_domain *ds)
{
    int dims[3], ndim = 0;
    for (int d = 0; d < 3; d++)
        if (g[d] > 1)
            dims[ndim++] = d;
    int c[3] = {dom / (g[1] * g[2]), (dom / g[2]) % g[1], dom % g[2]};
    int n = s->natoms;
    ds->x = malloc(sizeof(double) * 3 * (size_t)(n + 1));
    ds->q = malloc(sizeof(double) * (size_t)(n + 1));
    ds->type = malloc(sizeof(int) * (size_t)(n + 1));
    ds->mol = malloc(sizeof(int) * (size_t)(n + 1));
    ds->gid = malloc(sizeof(int) * (size_t)(n + 1));
    int nl = 0, nz = hx_zone_count(ndim);
    for (int z = 0; z < nz; z++) {
        int sh[3], src[3];
        double shift[3] = {0, 0, 0};
        hx_zone_shift(z, sh);
        for (int d = 0; d < 3; d++)
            src[d] = c[d];
        for (int k = 0; k < ndim; k++) {
            int d = dims[k];
            src[d] = c[d] + sh[k];
            if (src[d] >= g[d]) {
                src[d] -= g[d];
                shift[d] = s->box[d];
            }
        }
        int sdom = (src[0] * g[1] + src[1]) * g[2] + src[2];
        ds->rg[z].begin = nl;
        ds->rg[z].zone = z;
        for (int m = 0; m < s->nmol; m++) {
            if (owner[m] != sdom)
                continue;
            for (int a = s->mol_start[m]; a < s->mol_start[m + 1]; a++) {
                for (int d = 0; d < 3; d++)
                    ds->x[3 * nl + d] = s->x[3 * a + d] + shift[d];
                ds->q[nl] = s->q[a];
                ds->type[nl] = s->type[a];
                ds->mol[nl] = m;
                ds->gid[nl] = a;
                nl++;
            }
        }
        ds->rg[z].end = nl;
    }
    memset(&ds->set, 0, sizeof ds->set);
    ds->set.n = nl;
    ds->set.x = ds->x;
    ds->set.type = ds->type;
    ds->set.q = ds->q;
    ds->set.mol = ds->mol;
    ds->set.nranges = nz;
    ds->set.ranges = ds->rg;
    ds->set.ndim = ndim;
    for (int d = 0; d < 3; d++) {
        ds->set.periodic[d] = g[d] == 1;
        ds->set.box[d] = s->box[d];
    }
}

void t_domain_free(t_domain *ds)
{
    free(ds->x);
    free(ds->q);
    free(ds->type);
    free(ds->mol);
    free(ds->gid);
}

void t_md_params(hx_md_params *p, const char *model, uint64_t seed)
{
    hx_md_params_default(p);
    p->model = model;
    p->dt = 0.002;
    p->gen_vel = 1;
    p->gen_temp = 300;
    p->seed = seed;
}

double t_max_pos_dev(const hx_system *a, const hx_system *b)
{
    double worst = 0;
    for (int i = 0; i < 3 * a->natoms; i++) {
        const double L = a->box[i % 3];
        double d = a->x[i] - b->x[i];
        d -= L * nearbyint(d / L);
        worst = fmax(worst, fabs(d));
    }
    return worst;
}
