/* The halo plan's invariants, checked with the in-process (serial) executor on random systems:
 *
 *  1. pair coverage: the pairs within the cut-off that all domains compute together, each with
 *     only its home and halo atoms and the zone table, are exactly the brute-force pairs (minimum
 *     image): none missing, none twice;
 *  2. coordinates: every halo atom equals its global atom plus a box-vector multiple, bit for bit;
 *  3. forces: after the backward exchange every global atom holds the sum of all contributions
 *     of all its copies (relative 1e-12) and the total force is unchanged;
 *  4. dependencies: entries before dep_offset are home atoms, every later entry was received in
 *     a pulse of the `deps` mask, and every pulse in the mask is referenced.
 *
 * Systems: uniform, clustered (uneven density), and half-empty (some domains get no atoms);
 * grids 1D, 2D, 3D up to 4x4x4 with 1..3 pulses per dimension; atoms or small rigid molecules
 * assigned by their centre. Usage: test_plan_invariants [ncases] [first_seed]. A failure prints
 * the seed; rerun with that seed as first_seed and ncases 1. */
#include "halox/halox.h"
#include "plan_fixture.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct pair {
    int i, j;
} pair;

static int pair_cmp(const void *a, const void *b)
{
    const pair *p = a, *q = b;
    if (p->i != q->i)
        return p->i < q->i ? -1 : 1;
    return (p->j > q->j) - (p->j < q->j);
}

static int run_case(uint64_t seed, int *pulses_seen)
{
    t_rng r;
    caseparams c;
    sysgen s;
    pf_draw(seed, NULL, &c, &s, &r);
    int fails_before = hx_test_failures;

    hx_dd_params dp = {
        {c.box[0], c.box[1], c.box[2]}, {c.grid[0], c.grid[1], c.grid[2]}, c.r_comm, c.rc};
    hx_dd *dd = NULL;
    hx_comm *comm = NULL;
    hx_plan *plan = NULL;
    hx_halo *halo = NULL, *halo32 = NULL; /* the host backend in double and in float */
    hx_status st = hx_dd_create(&dp, &dd);
    if (st != HX_OK) {
        T_FAIL("seed %llu: hx_dd_create failed: %s", (unsigned long long)seed,
               hx_last_error_message());
        pf_free(&s);
        return 0;
    }
    int nd = hx_dd_ndomains(dd);
    for (int d = 0; d < 3; d++)
        if (hx_dd_pulses_dim(dd, d) >= 1 && hx_dd_pulses_dim(dd, d) <= 3)
            pulses_seen[hx_dd_pulses_dim(dd, d)] = 1;
    T_OK(hx_comm_create_serial(nd, &comm));
    T_OK(hx_plan_create(dd, comm, &plan));

    /* Home atoms of each domain: whole molecules assigned by centre. */
    int *nhome = calloc(nd, sizeof(int));
    int **gid = calloc(nd, sizeof(int *));
    double **xh = calloc(nd, sizeof(double *));
    int *owner = malloc(sizeof(int) * s.nmol);
    for (int m = 0; m < s.nmol; m++)
        owner[m] = hx_dd_domain_of_point(dd, &s.cen[3 * m]);
    for (int a = 0; a < s.natoms; a++)
        nhome[owner[s.mol[a]]]++;
    for (int d = 0; d < nd; d++) {
        gid[d] = malloc(sizeof(int) * (nhome[d] + 1));
        xh[d] = malloc(sizeof(double) * 3 * (nhome[d] + 1));
        nhome[d] = 0;
    }
    for (int a = 0; a < s.natoms; a++) {
        int d = owner[s.mol[a]];
        gid[d][nhome[d]] = a;
        memcpy(&xh[d][3 * nhome[d]], &s.x[3 * a], 3 * sizeof(double));
        nhome[d]++;
    }
    T_OK(hx_plan_build(plan, nhome, (const double *const *)xh));
    hx_halo_config hc;
    hx_halo_config_default(&hc);
    T_OK(hx_halo_create(plan, comm, &hc, &halo));
    hc.real = HX_REAL_F32;
    T_OK(hx_halo_create(plan, comm, &hc, &halo32));
    if (!halo || !halo32) {
        pf_free(&s);
        return 0;
    }

    /* Local arrays: home + halo. */
    double **xl = calloc(nd, sizeof(double *));
    float **xf = calloc(nd, sizeof(float *));
    int **gl = calloc(nd, sizeof(int *));
    for (int d = 0; d < nd; d++) {
        const hx_domain_plan *p = hx_plan_domain(plan, d);
        T_CHECK(hx_halo_capacity(halo) >= p->n_local && hx_halo_capacity(halo32) >= p->n_local,
                "seed %llu: halo arrays of %d/%d atoms for %d local atoms",
                (unsigned long long)seed, hx_halo_capacity(halo), hx_halo_capacity(halo32),
                p->n_local);
        xl[d] = hx_halo_x(halo, d);
        xf[d] = hx_halo_x(halo32, d);
        gl[d] = calloc((size_t)p->n_local + 1, sizeof(int));
        memcpy(xl[d], xh[d], sizeof(double) * 3 * nhome[d]);
        for (int k = 0; k < 3 * nhome[d]; k++)
            xf[d][k] = (float)xh[d][k];
        memcpy(gl[d], gid[d], sizeof(int) * nhome[d]);
    }
    T_OK(hx_halo_exchange_x(halo, NULL));
    T_OK(hx_halo_exchange_x(halo32, NULL));
    T_OK(hx_halo_exchange_int(halo, gl, 1, HX_MEM_HOST));

    /* 2. coordinates, bit for bit; 4. dependencies */
    for (int d = 0; d < nd && hx_test_failures == fails_before; d++) {
        const hx_domain_plan *p = hx_plan_domain(plan, d);
        for (int a = p->n_home; a < p->n_local; a++) {
            int g = gl[d][a];
            if (g < 0 || g >= s.natoms) {
                T_FAIL("seed %llu: domain %d halo atom %d has bad global id %d",
                       (unsigned long long)seed, d, a, g);
                break;
            }
            for (int k = 0; k < 3; k++) {
                double v = xl[d][3 * a + k], ref = s.x[3 * g + k];
                float vf = xf[d][3 * a + k], reff = (float)ref;
                int ok = v == ref || v == ref + c.box[k] || v == ref - c.box[k];
                int okf =
                    vf == reff || vf == reff + (float)c.box[k] || vf == reff - (float)c.box[k];
                if (!ok || !okf) {
                    T_FAIL("seed %llu: domain %d halo atom %d (global %d) dim %d: %.17g (f32 "
                           "%.9g) is not %.17g plus a box multiple (%g)",
                           (unsigned long long)seed, d, a, g, k, v, (double)vf, ref, c.box[k]);
                    break;
                }
            }
        }
        for (int q = 0; q < p->npulses; q++) {
            const hx_pulse *P = &p->pulses[q];
            const int *map = p->index_map + P->map_offset;
            uint64_t used = 0;
            for (int e = 0; e < P->send_count; e++) {
                int a = map[e];
                if (e < P->dep_offset) {
                    T_CHECK(a < p->n_home,
                            "seed %llu: domain %d pulse %d entry %d (atom %d) is "
                            "before dep_offset %d but not a home atom",
                            (unsigned long long)seed, d, q, e, a, P->dep_offset);
                } else {
                    int from = -1;
                    for (int qq = 0; qq < q; qq++)
                        if (a >= p->pulses[qq].atom_offset &&
                            a < p->pulses[qq].atom_offset + p->pulses[qq].recv_count)
                            from = qq;
                    if (from < 0 || !(P->deps & ((uint64_t)1 << from)))
                        T_FAIL("seed %llu: domain %d pulse %d entry %d (atom %d) received in "
                               "pulse %d, not in deps mask %#llx",
                               (unsigned long long)seed, d, q, e, a, from,
                               (unsigned long long)P->deps);
                    else
                        used |= (uint64_t)1 << from;
                }
            }
            T_CHECK(used == P->deps,
                    "seed %llu: domain %d pulse %d deps mask %#llx but referenced %#llx",
                    (unsigned long long)seed, d, q, (unsigned long long)P->deps,
                    (unsigned long long)used);
        }
    }

    /* 1. pair coverage */
    int ndim;
    int dims[3];
    ndim = hx_dd_ndim(dd, dims);
    int periodic[3] = {c.grid[0] == 1, c.grid[1] == 1, c.grid[2] == 1};
    double rc2 = c.rc * c.rc;
    size_t cap = 1024, np = 0;
    pair *pairs = malloc(cap * sizeof *pairs);
    for (int d = 0; d < nd; d++) {
        const hx_domain_plan *p = hx_plan_domain(plan, d);
        for (int iz = 0; iz < hx_izone_count(ndim); iz++) {
            int j0, j1;
            hx_izone_jrange(ndim, iz, &j0, &j1);
            for (int ri = 0; ri < p->nranges; ri++) {
                if (p->ranges[ri].zone != iz)
                    continue;
                for (int rj = 0; rj < p->nranges; rj++) {
                    int jz = p->ranges[rj].zone;
                    if (jz < j0 || jz >= j1)
                        continue;
                    for (int i = p->ranges[ri].begin; i < p->ranges[ri].end; i++) {
                        int jstart = p->ranges[rj].begin;
                        if (iz == 0 && jz == 0 && jstart <= i)
                            jstart = i + 1;
                        for (int j = jstart; j < p->ranges[rj].end; j++) {
                            double r2 = 0;
                            for (int k = 0; k < 3; k++) {
                                double dx = xl[d][3 * i + k] - xl[d][3 * j + k];
                                if (periodic[k])
                                    dx = pf_min_image(dx, c.box[k]);
                                r2 += dx * dx;
                            }
                            if (r2 < rc2) {
                                if (np == cap)
                                    pairs = realloc(pairs, (cap *= 2) * sizeof *pairs);
                                int gi = gl[d][i], gj = gl[d][j];
                                pairs[np++] = (pair){gi < gj ? gi : gj, gi < gj ? gj : gi};
                            }
                        }
                    }
                }
            }
        }
    }
    qsort(pairs, np, sizeof *pairs, pair_cmp);
    size_t nref = 0, refcap = 1024;
    pair *ref = malloc(refcap * sizeof *ref);
    for (int i = 0; i < s.natoms; i++)
        for (int j = i + 1; j < s.natoms; j++) {
            double r2 = 0;
            for (int k = 0; k < 3; k++) {
                double dx = pf_min_image(s.x[3 * i + k] - s.x[3 * j + k], c.box[k]);
                r2 += dx * dx;
            }
            if (r2 < rc2) {
                if (nref == refcap)
                    ref = realloc(ref, (refcap *= 2) * sizeof *ref);
                ref[nref++] = (pair){i, j};
            }
        }
    /* Walk both sorted lists: report the first missing, extra or duplicated pair. */
    size_t a = 0, b = 0;
    int reported = 0;
    while ((a < np || b < nref) && !reported) {
        if (a + 1 < np && pair_cmp(&pairs[a], &pairs[a + 1]) == 0) {
            T_FAIL("seed %llu: pair (%d,%d) computed twice", (unsigned long long)seed, pairs[a].i,
                   pairs[a].j);
            reported = 1;
        } else if (b >= nref || (a < np && pair_cmp(&pairs[a], &ref[b]) < 0)) {
            T_FAIL("seed %llu: pair (%d,%d) computed but not within the cut-off by brute force",
                   (unsigned long long)seed, pairs[a].i, pairs[a].j);
            reported = 1;
        } else if (a >= np || pair_cmp(&pairs[a], &ref[b]) > 0) {
            T_FAIL("seed %llu: pair (%d,%d) within the cut-off is missing (molecules %d,%d "
                   "domains %d,%d)",
                   (unsigned long long)seed, ref[b].i, ref[b].j, s.mol[ref[b].i], s.mol[ref[b].j],
                   owner[s.mol[ref[b].i]], owner[s.mol[ref[b].j]]);
            reported = 1;
        } else {
            a++;
            b++;
        }
    }
    if (reported)
        fprintf(stderr,
                "  case: grid %dx%dx%d box %.4f %.4f %.4f rc %.4f r_comm %.4f kind %d "
                "atoms %d\n",
                c.grid[0], c.grid[1], c.grid[2], c.box[0], c.box[1], c.box[2], c.rc,
                hx_dd_r_comm(dd), c.kind, s.natoms);

    /* 3. forces */
    double **fl = calloc(nd, sizeof(double *));
    float **ffl = calloc(nd, sizeof(float *));
    double *expect = calloc(3 * (size_t)s.natoms, sizeof(double));
    double *expectf = calloc(3 * (size_t)s.natoms, sizeof(double));
    double tot_before[3] = {0, 0, 0}, tot_after[3] = {0, 0, 0};
    for (int d = 0; d < nd; d++) {
        const hx_domain_plan *p = hx_plan_domain(plan, d);
        fl[d] = hx_halo_f(halo, d);
        ffl[d] = hx_halo_f(halo32, d);
        for (int i = 0; i < p->n_local; i++)
            for (int k = 0; k < 3; k++) {
                double v = 2.0 * t_rng_uniform(&r) - 1.0;
                fl[d][3 * i + k] = v;
                ffl[d][3 * i + k] = (float)v;
                expect[3 * gl[d][i] + k] += v;
                expectf[3 * gl[d][i] + k] += (float)v;
                tot_before[k] += v;
            }
    }
    T_OK(hx_halo_exchange_f(halo, NULL));
    T_OK(hx_halo_exchange_f(halo32, NULL));
    /* float: each home atom sums at most one contribution per copy (< 2^3 copies in 3D with up
     * to 3 pulses per dimension: 64), each |v| <= 1, so the rounding error is below
     * 64 * 2^-24 ~ 4e-6 in absolute terms */
    for (int d = 0; d < nd; d++) {
        const hx_domain_plan *p = hx_plan_domain(plan, d);
        int bad = 0;
        for (int i = 0; i < p->n_home && !bad; i++)
            for (int k = 0; k < 3; k++) {
                double got = ffl[d][3 * i + k], want = expectf[3 * gl[d][i] + k];
                if (fabs(got - want) > 4e-6) {
                    T_FAIL("seed %llu: domain %d home atom %d (global %d) float force[%d] %.9g, "
                           "expected %.9g",
                           (unsigned long long)seed, d, i, gl[d][i], k, got, want);
                    bad = 1;
                    break;
                }
            }
    }
    int fbad = 0;
    for (int d = 0; d < nd && !fbad; d++) {
        const hx_domain_plan *p = hx_plan_domain(plan, d);
        for (int i = 0; i < p->n_home && !fbad; i++)
            for (int k = 0; k < 3; k++) {
                double got = fl[d][3 * i + k], want = expect[3 * gl[d][i] + k];
                tot_after[k] += got;
                if (t_reldiff(got, want, 1e-3) > 1e-12) {
                    T_FAIL("seed %llu: domain %d home atom %d (global %d) force[%d] %.17g, "
                           "expected %.17g",
                           (unsigned long long)seed, d, i, gl[d][i], k, got, want);
                    fbad = 1;
                    break;
                }
            }
    }
    for (int k = 0; k < 3 && !fbad; k++)
        T_CHECK(t_reldiff(tot_before[k], tot_after[k], 1.0) < 1e-12,
                "seed %llu: total force[%d] changed from %.17g to %.17g", (unsigned long long)seed,
                k, tot_before[k], tot_after[k]);

    for (int d = 0; d < nd; d++) {
        free(gid[d]);
        free(xh[d]);
        free(gl[d]);
    }
    free(gid);
    free(xh);
    free(xl);
    free(xf);
    free(gl);
    free(fl);
    free(ffl);
    free(expectf);
    free(nhome);
    free(owner);
    free(expect);
    free(pairs);
    free(ref);
    hx_halo_destroy(&halo);
    hx_halo_destroy(&halo32);
    hx_plan_destroy(&plan);
    hx_comm_destroy(&comm);
    hx_dd_destroy(&dd);
    pf_free(&s);
    return hx_test_failures == fails_before;
}

int main(int argc, char **argv)
{
    int ncases = argc > 1 ? atoi(argv[1]) : 240;
    uint64_t first = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
    int pulses_seen[4] = {0, 0, 0, 0};
    int failed_cases = 0;
    for (int i = 0; i < ncases; i++)
        if (!run_case(first + (uint64_t)i, pulses_seen))
            failed_cases++;
    /* The generator must actually reach 1, 2 and 3 pulses. */
    if (ncases >= 50)
        for (int p = 1; p <= 3; p++)
            T_CHECK(pulses_seen[p], "no case had %d pulses in a dimension", p);
    printf("plan invariants: %d cases, %d failed\n", ncases, failed_cases);
    return t_finish("test_plan_invariants", ncases);
}
