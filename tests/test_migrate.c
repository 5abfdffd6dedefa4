/* Migration: after random displacements of up to ~0.9 cell (many molecules cross faces, edges,
 * corners and the periodic boundary), every molecule is home on exactly one domain, the one that
 * owns its centre, whole, with its positions (up to one box vector per dimension, applied to the
 * whole molecule) and velocities unchanged. A molecule pushed two cells away is a clear error on
 * every rank. Compiled twice: with the serial communicator (all domains in one process) and,
 * with HX_TEST_MPI, over MPI with one domain per rank. */
#include "halox/halox.h"
#include "plan_fixture.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const int grids[][3] = {{1, 1, 1}, {2, 1, 1}, {3, 1, 1}, {2, 2, 1}, {1, 2, 2},
                               {4, 1, 1}, {2, 2, 2}, {4, 2, 1}, {3, 3, 1}, {3, 2, 2}};

static int run_case(uint64_t seed, const int grid[3], hx_comm *comm, int blowup)
{
    int fails_before = hx_test_failures;
    t_rng r;
    caseparams c;
    sysgen s;
    pf_draw(seed, grid, &c, &s, &r);
    hx_dd_params dp = {{c.box[0], c.box[1], c.box[2]}, {grid[0], grid[1], grid[2]}, c.r_comm, c.rc};
    hx_dd *dd = NULL;
    T_OK(hx_dd_create(&dp, &dd));
    if (!dd) {
        pf_free(&s);
        return 0;
    }
    const int nl = hx_comm_nlocal(comm), nd = hx_dd_ndomains(dd);
    hx_home *homes = calloc(nl, sizeof *homes);
    hx_home **hp = calloc(nl, sizeof *hp);
    int *first = malloc(sizeof(int) * (s.nmol + 1));
    {
        int m = 0;
        first[0] = 0;
        for (int a = 0; a < s.natoms; a++)
            if (a > 0 && s.mol[a] != s.mol[a - 1])
                first[++m] = a;
        first[s.nmol] = s.natoms;
    }
    /* Displace every molecule as a whole (after the initial assignment by centre). */
    double *disp = malloc(sizeof(double) * 3 * s.nmol);
    for (int m = 0; m < s.nmol; m++)
        for (int d = 0; d < 3; d++)
            disp[3 * m + d] = (2 * t_rng_uniform(&r) - 1) * 0.9 * hx_dd_cell_size(dd, d);
    int victim = blowup ? t_rng_int(&r, s.nmol) : -1;
    if (victim >= 0)
        for (int d = 0; d < 3; d++)
            if (grid[d] >= 4)
                disp[3 * victim + d] = 2.2 * hx_dd_cell_size(dd, d);
    for (int i = 0; i < nl; i++) {
        hp[i] = &homes[i];
        int me = hx_comm_local_domain(comm, i);
        int na = 0, nm = 0;
        for (int m = 0; m < s.nmol; m++)
            if (hx_dd_domain_of_point(dd, &s.cen[3 * m]) == me) {
                nm++;
                na += first[m + 1] - first[m];
            }
        homes[i].gid = malloc(sizeof(int) * (na + 1));
        homes[i].x = malloc(sizeof(double) * 3 * (na + 1));
        homes[i].v = malloc(sizeof(double) * 3 * (na + 1));
        homes[i].mol_start = malloc(sizeof(int) * (nm + 1));
        homes[i].mol_gid = malloc(sizeof(int) * (nm + 1));
        homes[i].cap_atoms = na + 1;
        homes[i].cap_mol = nm + 1;
        homes[i].mol_start[0] = 0;
        for (int m = 0; m < s.nmol; m++) {
            if (hx_dd_domain_of_point(dd, &s.cen[3 * m]) != me)
                continue;
            hx_home *h = &homes[i];
            h->mol_gid[h->nmol] = m;
            for (int a = first[m]; a < first[m + 1]; a++, h->natoms++) {
                h->gid[h->natoms] = a;
                for (int d = 0; d < 3; d++) {
                    h->x[3 * h->natoms + d] = s.x[3 * a + d] + disp[3 * m + d];
                    h->v[3 * h->natoms + d] = 0.001 * a + d;
                }
            }
            h->nmol++;
            h->mol_start[h->nmol] = h->natoms;
        }
    }
    hx_clear_error();
    hx_status st = hx_migrate(dd, comm, hp, 4242);
    if (blowup) {
        int reachable = grid[0] >= 4 || grid[1] >= 4 || grid[2] >= 4;
        if (reachable) {
            T_CHECK(st == HX_ERR_PHYSICS || st == HX_ERR_REMOTE,
                    "seed %llu: a molecule moved 2.2 cells and migration returned %s",
                    (unsigned long long)seed, hx_status_name(st));
            /* The exact message. Migration walks the decomposed dimensions in order and moves
             * the molecule one cell along each; it stops at the first dimension where the
             * target (the domain of the displaced, wrapped centre) is further than one cell,
             * reported by the domain that holds the molecule then. */
            double cen[3] = {0, 0, 0}, box[3];
            hx_dd_box(dd, box);
            int na = first[victim + 1] - first[victim];
            for (int a = first[victim]; a < first[victim + 1]; a++)
                for (int d = 0; d < 3; d++)
                    cen[d] += (s.x[3 * a + d] + disp[3 * victim + d]) / na;
            for (int d = 0; d < 3; d++)
                cen[d] -= floor(cen[d] / box[d]) * box[d];
            const int target = hx_dd_domain_of_point(dd, cen);
            int dims[3], tc[3], cur[3], from = -1, along = -1;
            const int ndim = hx_dd_ndim(dd, dims);
            hx_dd_coord_of(dd, target, tc);
            hx_dd_coord_of(dd, hx_dd_domain_of_point(dd, &s.cen[3 * victim]), cur);
            for (int k = 0; k < ndim && from < 0; k++) {
                const int d = dims[k], delta = ((tc[d] - cur[d]) % grid[d] + grid[d]) % grid[d];
                if (delta > 1 && delta < grid[d] - 1) {
                    from = hx_dd_domain_at(dd, cur);
                    along = d;
                }
                cur[d] = tc[d];
            }
            char want[512], full[700];
            snprintf(want, sizeof want,
                     "at step 4242 molecule %d (global index, 0-based) moved more than one cell "
                     "along %c since the last repartition: from domain %d to domain %d; the "
                     "system is unstable or nstlist is too long",
                     victim, along >= 0 ? "xyz"[along] : '?', from, target);
            int here = hx_comm_nranks(comm) == 1 || hx_comm_local_domain(comm, 0) == from;
            if (here)
                snprintf(full, sizeof full, "%s", want);
            else
                snprintf(full, sizeof full, "rank %d failed (HX_ERR_PHYSICS): %s", from, want);
            T_CHECK(st == (here ? HX_ERR_PHYSICS : HX_ERR_REMOTE) &&
                        strcmp(hx_last_error_message(), full) == 0,
                    "seed %llu: %s '%s', expected '%s'", (unsigned long long)seed,
                    hx_status_name(st), hx_last_error_message(), full);
        }
    } else {
        T_OK(st);
        /* Each molecule once, in the right domain, whole, unchanged up to box vectors. */
        int *seen = calloc(s.nmol, sizeof(int));
        long long count = 0;
        for (int i = 0; i < nl; i++) {
            hx_home *h = &homes[i];
            int me = hx_comm_local_domain(comm, i);
            for (int m = 0; m < h->nmol; m++) {
                int g = h->mol_gid[m];
                seen[g]++;
                count++;
                double cen[3] = {0, 0, 0};
                int a0 = h->mol_start[m], a1 = h->mol_start[m + 1];
                T_CHECK(a1 - a0 == first[g + 1] - first[g],
                        "seed %llu: molecule %d arrived with %d atoms, not %d",
                        (unsigned long long)seed, g, a1 - a0, first[g + 1] - first[g]);
                double sh[3];
                for (int d = 0; d < 3; d++)
                    sh[d] = h->x[3 * a0 + d] - (s.x[3 * first[g] + d] + disp[3 * g + d]);
                for (int a = a0; a < a1; a++) {
                    int ga = h->gid[a];
                    for (int d = 0; d < 3; d++) {
                        cen[d] += h->x[3 * a + d] / (a1 - a0);
                        double want = s.x[3 * ga + d] + disp[3 * g + d] + sh[d];
                        if (fabs(h->x[3 * a + d] - want) > 1e-12 ||
                            h->v[3 * a + d] != 0.001 * ga + d)
                            T_FAIL("seed %llu: molecule %d atom %d changed (x %g want %g)",
                                   (unsigned long long)seed, g, ga, h->x[3 * a + d], want);
                    }
                }
                for (int d = 0; d < 3; d++) {
                    double k = sh[d] / c.box[d];
                    T_CHECK(fabs(k - round(k)) < 1e-9,
                            "seed %llu: molecule %d shifted by %g, not a box multiple",
                            (unsigned long long)seed, g, sh[d]);
                    T_CHECK(cen[d] >= -1e-12 && cen[d] < c.box[d] + 1e-12,
                            "seed %llu: molecule %d centre %g outside the box",
                            (unsigned long long)seed, g, cen[d]);
                }
                int owner = hx_dd_domain_of_point(dd, cen);
                T_CHECK(owner == me, "seed %llu: molecule %d is on domain %d but belongs to %d",
                        (unsigned long long)seed, g, me, owner);
            }
        }
        long long total = 0;
#ifdef HX_TEST_MPI
        {
            double cd = (double)count, tot = 0;
            hx_comm_sum_f64(comm, &cd, &tot, 1);
            total = (long long)tot;
        }
#else
        total = count;
        for (int g = 0; g < s.nmol; g++)
            T_CHECK(seen[g] == 1, "seed %llu: molecule %d is home on %d domains",
                    (unsigned long long)seed, g, seen[g]);
#endif
        T_CHECK(total == s.nmol, "seed %llu: %lld molecules after migration, expected %d",
                (unsigned long long)seed, total, s.nmol);
        free(seen);
    }
    (void)nd;
    for (int i = 0; i < nl; i++)
        hx_home_free(&homes[i]);
    free(homes);
    free(hp);
    free(first);
    free(disp);
    hx_dd_destroy(&dd);
    pf_free(&s);
    return hx_test_failures == fails_before;
}

int main(int argc, char **argv)
{
    int ncases = 0;
#ifdef HX_TEST_MPI
    hx_comm *comm = NULL;
    int rank, size;
    t_mpi_begin(&argc, &argv, &comm, &rank, &size);
    for (size_t g = 0; g < sizeof grids / sizeof grids[0] && comm; g++) {
        if (grids[g][0] * grids[g][1] * grids[g][2] != size)
            continue;
        for (int k = 0; k < 8; k++, ncases++)
            run_case(500 + 31 * g + (uint64_t)k, grids[g], comm, k == 7);
    }
    return t_mpi_end(&comm, "test_migrate_mpi", ncases);
#else
    (void)argc;
    (void)argv;
    for (size_t g = 0; g < sizeof grids / sizeof grids[0]; g++) {
        hx_comm *comm = NULL;
        T_OK(hx_comm_create_serial(grids[g][0] * grids[g][1] * grids[g][2], &comm));
        for (int k = 0; k < 10; k++, ncases++)
            run_case(500 + 31 * g + (uint64_t)k, grids[g], comm, k == 9);
        hx_comm_destroy(&comm);
    }
    return t_finish("test_migrate", ncases);
#endif
}
