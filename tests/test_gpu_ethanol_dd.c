/* Ethanol in water decomposed on GPUs (issue 15): N ranks (2: 2x1x1, a 3.2 nm box of 3000
 * atoms at ethanol mole fraction 0.2) with the gpu backend and its default halo (nvshmem where
 * compiled, else gpu-mpi) against one GPU alone from the same start (every rank runs the
 * reference itself on a serial communicator). Whole molecules stay on one domain, so bonded
 * terms and SHAKE are per domain and need nothing from the halo.
 *  1. step-0 energies per term: bonded terms 1e-9 relative (double energies from the same
 *     double positions, summed over domains in another order), LJ and Coulomb 1e-6 relative or
 *     5e-5 kJ/mol per atom (float distances of halo atoms formed from shifted coordinates);
 *  2. 100 steps at 2 fs (nstlist 10: ten repartitions with migration) against one GPU: total
 *     energy every 10 steps within 2e-4 kJ/mol per atom (tests/test_gpu_dd_md.c's bar: the
 *     same float forces added in other orders part the trajectories slowly; a lost or doubled
 *     halo or bonded contribution gives far more), the largest constraint deviation <= 2e-10.
 * Runs where a GPU halo backend is compiled (CUDA + MPI), in the CPU emulation (CI) too, there
 * with --quick: 40 steps. */
#include "halox/gpu.h"
#include "halox/build.h"
#include "halox/log.h"
#include "halox/md.h"
#include "test_gpu_common.h"
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *term_name[7] = {"LJ",        "Coulomb", "bonds",     "angles",
                                   "dihedrals", "LJ-14",   "Coulomb-14"};

static hx_md *make(const hx_system *s, hx_comm *comm, const int *grid)
{
    hx_md_params p;
    t_md_params(&p, "oplsaa", 3);
    p.rlist = 1.1;
    p.nstlist = 10;
    p.backend = "gpu";
    p.gpu = tg_gpu();
    p.halo_wait_timeout = 20.0; /* a lost signal becomes a report, not a hang */
    hx_md *md = NULL;
    T_OK(hx_md_create_dd(s, &p, comm, grid, &md));
    return md;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    hx_comm *world = NULL;
    int rank = 0, size = 1, ncases = 0;
    t_mpi_begin(&argc, &argv, &world, &rank, &size);
    if (!t_gpu_require("test_gpu_ethanol_dd")) {
        t_mpi_end(&world, "test_gpu_ethanol_dd", 0);
        return T_SKIP_CODE;
    }
    hx_log_set_level(HX_LOG_WARN);
    tg_gpu_begin(world); /* this rank's GPU: node-local rank modulo the devices */
    hx_mixture_params mp;
    hx_mixture_params_default(&mp);
    mp.natoms = 3000;
    mp.ethanol_fraction = 0.2;
    mp.seed = 12;
    hx_system *s = NULL;
    T_OK(hx_build_mixture(&mp, &s, NULL)); /* deterministic: the same on every rank */
    hx_comm *self = NULL;
    T_OK(hx_comm_create_serial(1, &self));
    const int grid[3] = {size, 1, 1};
    /* --quick (the CPU emulation): 40 steps, four repartitions */
    const int quick = tg_quick(argc, argv);
    const int nsteps = quick ? 40 : 100, ne = nsteps / 10 + 1;
    hx_md *one = s && self ? make(s, self, NULL) : NULL;
    hx_md *dd = s ? make(s, world, grid) : NULL;
    if (one && dd) {
        const int n = s->natoms;
        double v1[7], vd[7];
        T_OK(hx_md_evaluate(one));
        T_OK(hx_md_evaluate(dd));
        tg_energy_terms(hx_md_last_energies(one), v1);
        tg_energy_terms(hx_md_last_energies(dd), vd);
        for (int k = 0; k < 7; k++) {
            const double tol = k < 2 ? fmax(1e-6 * fabs(v1[k]), 5e-5 * n) : 1e-9 * fabs(v1[k]);
            if (rank == 0)
                printf("%d ranks, step 0 %-10s DD %.12g one GPU %.12g rel %.2e\n", size,
                       term_name[k], vd[k], v1[k], fabs(vd[k] - v1[k]) / fmax(fabs(v1[k]), 1e-30));
            ncases++;
            T_CHECK(fabs(vd[k] - v1[k]) <= tol, "step 0 %s: DD %.12g one GPU %.12g (tol %.3g)",
                    term_name[k], vd[k], v1[k], tol);
        }
        double *e1 = calloc((size_t)ne, sizeof *e1), *ed = calloc((size_t)ne, sizeof *ed);
        double dev1 = 0, devd = 0;
        T_OK(tg_trajectory(one, nsteps, e1, &dev1));
        T_OK(tg_trajectory(dd, nsteps, ed, &devd));
        double worst = 0;
        for (int k = 0; k < ne; k++)
            worst = fmax(worst, fabs(ed[k] - e1[k]) / n);
        if (rank == 0)
            printf("%d ranks, %d steps: total energy DD vs one GPU within %.2e kJ/mol per atom "
                   "(bar 2e-4), largest constraint deviation DD %.2e one GPU %.2e\n",
                   size, nsteps, worst, devd, dev1);
        ncases += 2;
        T_CHECK(worst <= 2e-4, "total energy DD vs one GPU: %.3g kJ/mol per atom", worst);
        T_CHECK(devd <= 2e-10, "DD constraint deviation %.3g", devd);
        free(e1);
        free(ed);
    } else {
        T_FAIL("engine set-up failed (one GPU %p, decomposed %p)", (void *)one, (void *)dd);
    }
    hx_md_destroy(&one);
    hx_md_destroy(&dd);
    hx_comm_destroy(&self);
    hx_system_destroy(&s);
    tg_gpu_end();
    return t_mpi_end(&world, "test_gpu_ethanol_dd", ncases);
}
