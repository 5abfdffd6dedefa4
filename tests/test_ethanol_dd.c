/* Ethanol-water under domain decomposition gives the physics of one domain.
 *
 * A mixture of ~3500 atoms (x_ethanol 0.1, TIP3P, box 3.27 nm) from hx_build_mixture, 300 K
 * velocities, 2 fs NVE. For every grid whose size equals the number of domains (MPI ranks with
 * HX_TEST_MPI, otherwise in-process decompositions 2x1x1 ... 2x2x2 and the two-pulse 3x1x1):
 *  - step 0: each of LJ, Coulomb, bonds, angles, dihedrals, LJ-14, Coulomb-14 and the kinetic
 *    energy equals the one-domain value to 1e-10 relative (the sums differ only in order:
 *    bonded terms are computed per home molecule, pairs per domain);
 *  - 30 steps: per-step energies within 1e-12 of the energy scale (|each term| summed). The
 *    runs differ only in the order of sums (pairs per domain, halo forces added back); measured
 *    at most 7.4e-14 on these grids (AVX2 machine, one thread). A 1e-9 relative error in the x
 *    component of the forces a domain returns through the halo gives 1.7e-12 to 6.4e-12 on
 *    every grid, a missed or doubled interaction (an intramolecular 1-5 pair, a bonded term
 *    counted on two domains, a molecule without its constraints) 1e-5 and more;
 *  - the reference run checks its pair lists at every search: with rlist 1.3 nm no pair may come
 *    inside the cut-off unlisted, else both runs would differ by their list buffers rather than
 *    by the decomposition (see test_dd_md.c);
 *  - with MPI, the same grid in one process gives bit-identical energies. */
#include "halox/halox.h"
#include "halox/build.h"
#include "halox/log.h"
#include "halox/md.h"
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NSTEPS 30

static int g_rank = 0;

static double term(const hx_md_energies *e, int k)
{
    const double v[8] = {e->lj,        e->coulomb, e->bonds,     e->angles,
                         e->dihedrals, e->lj14,    e->coulomb14, e->kinetic};
    return v[k];
}
static const char *const term_name[8] = {"LJ",        "Coulomb", "bonds",      "angles",
                                         "dihedrals", "LJ-14",   "Coulomb-14", "kinetic"};

static hx_status run_series(const hx_system *sys, const hx_md_params *p, hx_comm *comm,
                            const int *grid, hx_md_energies *ser)
{
    hx_md *md = NULL;
    hx_status st = comm ? hx_md_create_dd(sys, p, comm, grid, &md) : hx_md_create(sys, p, &md);
    if (st != HX_OK)
        return st;
    for (int s = 0; s <= NSTEPS && st == HX_OK; s++) {
        st = s < NSTEPS ? hx_md_step(md) : hx_md_evaluate(md);
        if (st == HX_OK)
            ser[s] = *hx_md_last_energies(md);
    }
    if (st == HX_OK && !comm) {
        hx_md_timings t;
        hx_md_get_timings(md, &t);
        T_CHECK(t.missed_pairs == 0,
                "reference run: %lld pairs came inside the cut-off unlisted; raise rlist",
                t.missed_pairs);
    }
    hx_md_destroy(&md);
    return st;
}

static void compare(const hx_system *sys, const hx_md_params *p, const hx_md_energies *ref,
                    hx_comm *comm, const int grid[3], int *ncases)
{
    hx_md_energies dd[NSTEPS + 1];
    hx_status st = run_series(sys, p, comm, grid, dd);
    T_CHECK(st == HX_OK, "grid %dx%dx%d: %s", grid[0], grid[1], grid[2], hx_last_error());
    (*ncases)++;
    if (st != HX_OK)
        return;
    for (int k = 0; k < 8; k++)
        T_CHECK(t_reldiff(term(&ref[0], k), term(&dd[0], k), 1.0) < 1e-10,
                "grid %dx%dx%d step 0: %s %.15g, one domain %.15g", grid[0], grid[1], grid[2],
                term_name[k], term(&dd[0], k), term(&ref[0], k));
    double worst = 0;
    int ws = 0, wk = 0;
    for (int s = 0; s <= NSTEPS; s++) {
        double scale = 0;
        for (int k = 0; k < 8; k++)
            scale += fabs(term(&ref[s], k));
        for (int k = 0; k < 8; k++) {
            double d = fabs(term(&ref[s], k) - term(&dd[s], k)) / scale;
            if (d > worst) {
                worst = d;
                ws = s;
                wk = k;
            }
        }
    }
    T_CHECK(worst < 1e-12, "grid %dx%dx%d: step %d %s differs by %.3g of the energy scale", grid[0],
            grid[1], grid[2], ws, term_name[wk], worst);
    if (g_rank == 0)
        printf("  grid %dx%dx%d: worst deviation %.2e of the energy scale (step %d, %s)\n", grid[0],
               grid[1], grid[2], worst, ws, term_name[wk]);
#ifdef HX_TEST_MPI
    hx_comm *ser = NULL;
    T_OK(hx_comm_create_serial(grid[0] * grid[1] * grid[2], &ser));
    hx_md_energies in[NSTEPS + 1];
    T_OK(run_series(sys, p, ser, grid, in));
    for (int s = 0; s <= NSTEPS; s++)
        if (memcmp(&in[s], &dd[s], sizeof in[s]) != 0) {
            T_FAIL("grid %dx%dx%d step %d: MPI and in-process energies differ (%.17g vs %.17g)",
                   grid[0], grid[1], grid[2], s, dd[s].potential, in[s].potential);
            break;
        }
    hx_comm_destroy(&ser);
#endif
}

static const int grids[][3] = {{2, 1, 1}, {1, 2, 1}, {1, 1, 2}, {3, 1, 1}, {2, 2, 1},
                               {4, 1, 1}, {1, 2, 2}, {2, 2, 2}, {4, 2, 1}, {8, 1, 1}};

int main(int argc, char **argv)
{
    int ncases = 0;
    hx_comm *comm = NULL;
#ifdef HX_TEST_MPI
    int nranks;
    t_mpi_begin(&argc, &argv, &comm, &g_rank, &nranks);
#else
    (void)argc;
    (void)argv;
#endif
    hx_log_set_level(HX_LOG_ERROR);
    /* one mixture, built on rank 0 (a short relaxation: 30 steps need no more) */
    hx_system *sys = NULL;
    hx_status st = HX_OK;
    if (g_rank == 0) {
        hx_mixture_params mp;
        hx_mixture_params_default(&mp);
        mp.natoms = 3500;
        mp.seed = 3;
        mp.md_ps[1] = 0.1;
        mp.md_ps[2] = 0.2;
        st = hx_build_mixture(&mp, &sys, NULL);
        T_CHECK(st == HX_OK, "building the mixture: %s", hx_last_error());
    }
#ifdef HX_TEST_MPI
    T_OK(hx_comm_agree(comm, st));
    T_OK(hx_system_bcast(comm, &sys));
#endif
    if (!sys) {
#ifdef HX_TEST_MPI
        return t_mpi_end(&comm, "test_ethanol_dd_mpi", ncases);
#else
        return t_finish("test_ethanol_dd", ncases);
#endif
    }
    hx_md_params p;
    t_md_params(&p, "oplsaa", 5);
    p.rc = 1.0;
    p.rlist = 1.3;
    p.nstcheck = 1;
    p.nthreads = 1;
    hx_md_energies ref[NSTEPS + 1];
    T_OK(run_series(sys, &p, NULL, NULL, ref));
#ifdef HX_TEST_MPI
    const int nd = hx_comm_ndomains(comm);
    for (size_t g = 0; g < sizeof grids / sizeof grids[0]; g++)
        if (grids[g][0] * grids[g][1] * grids[g][2] == nd)
            compare(sys, &p, ref, comm, grids[g], &ncases);
    if (nd == 1) {
        const int one[3] = {1, 1, 1};
        compare(sys, &p, ref, comm, one, &ncases);
    }
#else
    for (size_t g = 0; g < sizeof grids / sizeof grids[0]; g++) {
        const int n = grids[g][0] * grids[g][1] * grids[g][2];
        if (n > 4)
            continue; /* 8 domains: the MPI test */
        T_OK(hx_comm_create_serial(n, &comm));
        compare(sys, &p, ref, comm, grids[g], &ncases);
        hx_comm_destroy(&comm);
    }
#endif
    hx_system_destroy(&sys);
#ifdef HX_TEST_MPI
    return t_mpi_end(&comm, "test_ethanol_dd_mpi", ncases);
#else
    return t_finish("test_ethanol_dd", ncases);
#endif
}
