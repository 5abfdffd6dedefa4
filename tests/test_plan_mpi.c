/* The MPI transport runs the same plan as the in-process reference: for random systems, every
 * rank builds its own domain's plan over MPI and the whole decomposition in-process, and the two
 * must agree exactly (counts, offsets, maps, dependency masks, zone ranges), as must the halo
 * coordinates and the returned forces (bit for bit: same arithmetic in the same order). Also
 * checks the communicator's reductions and its collective failure agreement.
 * Run under mpiexec with 1, 2, 3, 4 or 8 ranks. */
#include "halox/halox.h"
#include "plan_fixture.h"

#include <stdlib.h>
#include <string.h>

static const int grids[][3] = {{1, 1, 1}, {2, 1, 1}, {1, 2, 1}, {1, 1, 2}, {3, 1, 1}, {1, 3, 1},
                               {2, 2, 1}, {4, 1, 1}, {1, 2, 2}, {2, 2, 2}, {4, 2, 1}, {1, 4, 2}};

static double force_value(uint64_t seed, int domain, int atom, int k)
{
    t_rng r;
    t_rng_seed(&r, seed * 1000003ULL + (uint64_t)domain * 7919ULL + (uint64_t)atom * 3 + k);
    return 2.0 * t_rng_uniform(&r) - 1.0;
}

static void run_case(uint64_t seed, const int grid[3], int rank, hx_comm *mpi, int *ncases)
{
    t_rng r;
    caseparams c;
    sysgen s;
    pf_draw(seed, grid, &c, &s, &r);
    hx_dd_params dp = {{c.box[0], c.box[1], c.box[2]}, {grid[0], grid[1], grid[2]}, c.r_comm, c.rc};
    hx_dd *dd = NULL;
    hx_comm *ser = NULL;
    hx_plan *ps = NULL, *pm = NULL;
    hx_halo *hs = NULL, *hm = NULL;
    T_OK(hx_dd_create(&dp, &dd));
    if (!dd) {
        pf_free(&s);
        return;
    }
    int nd = hx_dd_ndomains(dd);
    T_OK(hx_comm_create_serial(nd, &ser));
    T_OK(hx_plan_create(dd, ser, &ps));
    T_OK(hx_plan_create(dd, mpi, &pm));

    int *nhome = calloc(nd, sizeof(int));
    double **xh = calloc(nd, sizeof(double *));
    int *owner = malloc(sizeof(int) * s.nmol);
    for (int m = 0; m < s.nmol; m++)
        owner[m] = hx_dd_domain_of_point(dd, &s.cen[3 * m]);
    for (int d = 0; d < nd; d++)
        xh[d] = malloc(sizeof(double) * 3 * (s.natoms + 1));
    for (int a = 0; a < s.natoms; a++) {
        int d = owner[s.mol[a]];
        memcpy(&xh[d][3 * nhome[d]++], &s.x[3 * a], 3 * sizeof(double));
    }
    T_OK(hx_plan_build(ps, nhome, (const double *const *)xh));
    T_OK(hx_plan_build(pm, &nhome[rank], (const double *const *)&xh[rank]));
    const hx_domain_plan *a = hx_plan_domain(ps, rank), *b = hx_plan_domain(pm, 0);
    T_CHECK(a->n_home == b->n_home && a->n_local == b->n_local && a->npulses == b->npulses &&
                a->index_map_len == b->index_map_len && a->nranges == b->nranges,
            "seed %llu rank %d: plan sizes differ (home %d/%d local %d/%d map %d/%d ranges %d/%d)",
            (unsigned long long)seed, rank, a->n_home, b->n_home, a->n_local, b->n_local,
            a->index_map_len, b->index_map_len, a->nranges, b->nranges);
    if (a->n_local == b->n_local && a->index_map_len == b->index_map_len &&
        a->nranges == b->nranges) {
        for (int q = 0; q < a->npulses; q++) {
            const hx_pulse *P = &a->pulses[q], *Q = &b->pulses[q];
            T_CHECK(P->send_count == Q->send_count && P->recv_count == Q->recv_count &&
                        P->atom_offset == Q->atom_offset && P->dep_offset == Q->dep_offset &&
                        P->deps == Q->deps && P->send_rank == Q->send_rank &&
                        P->recv_rank == Q->recv_rank,
                    "seed %llu rank %d pulse %d: pulse data differ", (unsigned long long)seed, rank,
                    q);
        }
        T_CHECK(a->index_map_len == 0 ||
                    memcmp(a->index_map, b->index_map, sizeof(int) * a->index_map_len) == 0,
                "seed %llu rank %d: index maps differ", (unsigned long long)seed, rank);
        T_CHECK(memcmp(a->ranges, b->ranges, sizeof(hx_zone_range) * a->nranges) == 0,
                "seed %llu rank %d: zone ranges differ", (unsigned long long)seed, rank);

        /* Coordinates and forces through both executors. */
        T_OK(hx_halo_create(ps, ser, NULL, &hs));
        T_OK(hx_halo_create(pm, mpi, NULL, &hm));
        double **xs = calloc(nd, sizeof(double *)), **fs = calloc(nd, sizeof(double *));
        for (int d = 0; d < nd; d++) {
            const hx_domain_plan *p = hx_plan_domain(ps, d);
            xs[d] = hx_halo_x(hs, d);
            fs[d] = hx_halo_f(hs, d);
            memcpy(xs[d], xh[d], sizeof(double) * 3 * p->n_home);
            for (int i = 0; i < p->n_local; i++)
                for (int k = 0; k < 3; k++)
                    fs[d][3 * i + k] = force_value(seed, d, i, k);
        }
        double *xm = hx_halo_x(hm, 0);
        double *fm = hx_halo_f(hm, 0);
        memcpy(xm, xh[rank], sizeof(double) * 3 * b->n_home);
        for (int i = 0; i < b->n_local; i++)
            for (int k = 0; k < 3; k++)
                fm[3 * i + k] = force_value(seed, rank, i, k);
        T_OK(hx_halo_exchange_x(hs, NULL));
        T_OK(hx_halo_exchange_x(hm, NULL));
        T_OK(hx_halo_exchange_f(hs, NULL));
        T_OK(hx_halo_exchange_f(hm, NULL));
        for (int i = 0; i < b->n_local; i++) {
            if (memcmp(&xm[3 * i], &xs[rank][3 * i], 3 * sizeof(double)) != 0) {
                T_FAIL("seed %llu rank %d: local atom %d coordinates differ from the reference",
                       (unsigned long long)seed, rank, i);
                break;
            }
        }
        for (int i = 0; i < b->n_home; i++) {
            if (memcmp(&fm[3 * i], &fs[rank][3 * i], 3 * sizeof(double)) != 0) {
                T_FAIL("seed %llu rank %d: home atom %d force differs from the reference",
                       (unsigned long long)seed, rank, i);
                break;
            }
        }
        free(xs);
        free(fs);
    }
    (*ncases)++;
    for (int d = 0; d < nd; d++)
        free(xh[d]);
    free(xh);
    free(nhome);
    free(owner);
    hx_halo_destroy(&hs);
    hx_halo_destroy(&hm);
    hx_plan_destroy(&ps);
    hx_plan_destroy(&pm);
    hx_comm_destroy(&ser);
    hx_dd_destroy(&dd);
    pf_free(&s);
}

int main(int argc, char **argv)
{
    int rank, size;
    hx_comm *mpi = NULL;
    t_mpi_begin(&argc, &argv, &mpi, &rank, &size);
    int ncases = 0;
    if (mpi) {
        int seeds = argc > 1 ? atoi(argv[1]) : 12;
        for (size_t g = 0; g < sizeof grids / sizeof grids[0]; g++) {
            if (grids[g][0] * grids[g][1] * grids[g][2] != size)
                continue;
            for (int k = 0; k < seeds; k++)
                run_case(1000 + 37 * g + (uint64_t)k, grids[g], rank, mpi, &ncases);
        }
        /* Reductions: rank r contributes r+1 and 0.1*(r+1); order-fixed sums. */
        double in[2] = {rank + 1.0, 0.1 * (rank + 1)}, out[2];
        T_OK(hx_comm_sum_f64(mpi, in, out, 2));
        double want = 0.0;
        for (int r = 0; r < size; r++)
            want += 0.1 * (r + 1);
        T_CHECK(out[0] == size * (size + 1) / 2.0 && out[1] == want,
                "rank %d: sum %g %.17g, expected %g %.17g", rank, out[0], out[1],
                size * (size + 1) / 2.0, want);
        /* Agreement: the last rank fails, everybody learns it. */
        hx_status mine = HX_OK;
        if (rank == size - 1)
            mine = HX_ERR_PHYSICS;
        if (mine != HX_OK)
            hx_clear_error();
        hx_status agreed = hx_comm_agree(mpi, mine);
        if (size == 1)
            T_CHECK(agreed == HX_ERR_PHYSICS, "single rank: agree returned %s",
                    hx_status_name(agreed));
        else if (rank != size - 1) {
            /* the failing rank recorded no message (cleared): the forwarded text is empty */
            char msg[64];
            snprintf(msg, sizeof msg, "rank %d failed (HX_ERR_PHYSICS): ", size - 1);
            T_CHECK(agreed == HX_ERR_REMOTE && strcmp(hx_last_error_message(), msg) == 0,
                    "rank %d: agree returned %s '%s', expected HX_ERR_REMOTE '%s'", rank,
                    hx_status_name(agreed), hx_last_error_message(), msg);
        } else {
            T_CHECK(agreed == HX_ERR_PHYSICS, "failing rank %d: agree returned %s", rank,
                    hx_status_name(agreed));
        }
        ncases += 2;
    }
    return t_mpi_end(&mpi, "test_plan_mpi", ncases);
}
