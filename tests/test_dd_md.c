/* The domain-decomposed engine gives the physics of the single-domain engine.
 *
 * For each system and each grid whose size equals the number of domains (MPI ranks with
 * HX_TEST_MPI, otherwise several in-process decompositions):
 *  - single-point energies equal the one-domain result to 1e-13 relative (each term);
 *  - a short NVE run: the per-step energies and the end coordinates match the one-domain run
 *    within the system's tolerances (below);
 *  - 200 NVE steps of water at 300 K with the production time step (2 fs) on one grid per
 *    domain count (1D, 2D and 3D), with the same checks;
 *  - a 1x1x1 "decomposition" equals the one-domain engine bit for bit;
 *  - under MPI, the same grid run in-process gives bit-identical energies (same arithmetic).
 *
 * Where the tolerances come from. Both runs do the same arithmetic except for the order in
 * which pair forces and energies are summed (atoms sit in other clusters and lists, halo forces
 * are added back after the local ones). That leaves rounding differences of a few ulp per step,
 * ~1e-16 relative, which the chaotic dynamics then amplifies exponentially; a decomposition
 * error (a missing, doubled or wrong halo force) is not rounding and grows from its own size.
 * Single point: the largest deviation seen over every grid is 2.5e-14 (the Coulomb sum of
 * water cancels ~20-fold, so its ulp differences weigh more); 1e-13 allows 4x. Runs: each
 * system's tolerance is 10x the largest deviation seen over every grid of this file and 1-8
 * ranks (the deviations of one system spread by about 3x between grids), recorded next to it in
 * main(). With a relative error of 1e-9 added to every returned halo force from the second
 * exchange on, every system exceeds its tolerances (by 2x to 4e4x; docs/design/halo-plan.md).
 * Systems: SPC/E water (1D/2D/3D grids, a multi-pulse 1D grid), a half-empty water box (domains
 * without atoms), and a hot dilute argon gas whose atoms cross several domains during the run.
 * Errors: a grid whose size differs from the rank count; cells too small; a molecule that moves
 * further than one cell between repartitions. Each must fail on every rank with its message. */
#include "halox/halox.h"
#include "halox/build.h"
#include "halox/md.h"
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int g_rank = 0;

typedef struct sysdef {
    const char *name;
    hx_system *sys;
    hx_md_params p;
    int steps;
    /* largest relative energy deviation (any step, |dE| / (|LJ| + |Coulomb| + |kinetic|)) and
     * largest end-coordinate deviation (nm) seen against the one-domain run over every grid;
     * the test allows 10x each */
    double seen_e, seen_x;
    /* the one-domain reference run, made on first use and shared by every grid */
    hx_md_energies *ref;
    hx_system *fref;
} sysdef;

/* Keep only the molecules whose centre has x below frac*box: a slab with vacuum around it. */
static void cut_slab(hx_system *s, double frac)
{
    int na = 0, nm = 0;
    for (int k = 0; k < s->nmol; k++) {
        int a0 = s->mol_start[k], a1 = s->mol_start[k + 1];
        double cx = 0;
        for (int a = a0; a < a1; a++)
            cx += s->x[3 * a] / (a1 - a0);
        if (cx >= frac * s->box[0])
            continue;
        s->mol_start[nm++] = na;
        for (int a = a0; a < a1; a++, na++) {
            memmove(&s->x[3 * na], &s->x[3 * a], 3 * sizeof(double));
            memmove(&s->v[3 * na], &s->v[3 * a], 3 * sizeof(double));
            memcpy(s->atom_name[na], s->atom_name[a], sizeof s->atom_name[0]);
            memcpy(s->res_name[na], s->res_name[a], sizeof s->res_name[0]);
            s->res_id[na] = s->res_id[a];
        }
    }
    s->mol_start[nm] = na;
    s->nmol = nm;
    s->natoms = na;
}

/* Energies of steps 0..steps of a run (the last by evaluation). */
static hx_status run_series(const hx_system *sys, const hx_md_params *p, hx_comm *comm,
                            const int *grid, int steps, hx_md_energies *ser, hx_system **final)
{
    hx_md *md = NULL;
    hx_status st = comm ? hx_md_create_dd(sys, p, comm, grid, &md) : hx_md_create(sys, p, &md);
    if (st != HX_OK)
        return st;
    for (int s = 0; s <= steps && st == HX_OK; s++) {
        st = s < steps ? hx_md_step(md) : hx_md_evaluate(md);
        if (st == HX_OK)
            ser[s] = *hx_md_last_energies(md);
    }
    if (st == HX_OK && !comm && p->nstcheck == 1) {
        /* the reference run checks every pair list: the comparison assumes that no pair came
         * inside the cut-off unlisted (a list buffer too small makes the single-domain and the
         * decomposed run, whose cluster lists hold different extra pairs, differ by the
         * buffer error, which is not what this test measures) */
        hx_md_timings t;
        hx_md_get_timings(md, &t);
        T_CHECK(t.missed_pairs == 0,
                "reference run: %lld pairs came inside the cut-off unlisted; raise rlist",
                t.missed_pairs);
    }
    if (st == HX_OK && final) {
        st = hx_md_gather(md);
        if (st == HX_OK)
            st = hx_system_copy(hx_md_system(md), final);
    }
    hx_md_destroy(&md);
    return st;
}

static void compare_case(sysdef *sd, hx_comm *comm, const int grid[3], int *ncases)
{
    int steps = sd->steps;
    if (!sd->ref) {
        sd->ref = calloc(steps + 1, sizeof *sd->ref);
        T_OK(run_series(sd->sys, &sd->p, NULL, NULL, steps, sd->ref, &sd->fref));
    }
    const hx_md_energies *ref = sd->ref;
    const hx_system *fref = sd->fref;
    hx_md_energies *dd = calloc(steps + 1, sizeof *dd);
    hx_system *fdd = NULL;
    hx_status st = run_series(sd->sys, &sd->p, comm, grid, steps, dd, &fdd);
    T_CHECK(st == HX_OK, "%s grid %dx%dx%d: %s", sd->name, grid[0], grid[1], grid[2],
            hx_last_error());
    if (st == HX_OK) {
        const int one = grid[0] * grid[1] * grid[2] == 1;
        /* single point: rounding of the summation order only */
        T_CHECK(t_reldiff(ref[0].lj, dd[0].lj, 1.0) < 1e-13 &&
                    t_reldiff(ref[0].coulomb, dd[0].coulomb, 1.0) < 1e-13 &&
                    t_reldiff(ref[0].kinetic, dd[0].kinetic, 1.0) < 1e-13,
                "%s grid %dx%dx%d step 0 (bound 1e-13 relative): lj %.17g/%.17g coulomb "
                "%.17g/%.17g kinetic %.17g/%.17g",
                sd->name, grid[0], grid[1], grid[2], ref[0].lj, dd[0].lj, ref[0].coulomb,
                dd[0].coulomb, ref[0].kinetic, dd[0].kinetic);
        double worst = 0;
        int worst_step = 0;
        for (int s = 0; s <= steps; s++) {
            double scale = fabs(ref[s].lj) + fabs(ref[s].coulomb) + fabs(ref[s].kinetic);
            double d = fmax(fmax(fabs(ref[s].lj - dd[s].lj), fabs(ref[s].coulomb - dd[s].coulomb)),
                            fabs(ref[s].kinetic - dd[s].kinetic)) /
                       scale;
            if (d > worst) {
                worst = d;
                worst_step = s;
            }
        }
        const double tol_e = one ? 0.0 : 10.0 * sd->seen_e;
        T_CHECK(worst <= tol_e,
                "%s grid %dx%dx%d: step %d energies differ by %.3g (relative), above %.3g (10x "
                "the largest deviation seen, %.3g)",
                sd->name, grid[0], grid[1], grid[2], worst_step, worst, tol_e, sd->seen_e);
        double xdev = 0;
        if (g_rank == 0 && fref && fdd)
            for (int k = 0; k < 3 * fref->natoms; k++) {
                /* the decomposed run puts molecules back in the box at repartitions */
                double L = fref->box[k % 3], dx = fref->x[k] - fdd->x[k];
                xdev = fmax(xdev, fabs(dx - L * nearbyint(dx / L)));
            }
        if (g_rank == 0 && fref && fdd) {
            const double tol_x = one ? 0.0 : 10.0 * sd->seen_x;
            T_CHECK(xdev <= tol_x,
                    "%s grid %dx%dx%d: after %d steps a coordinate differs by %.3g nm from the "
                    "one-domain run, above %.3g nm (10x the largest deviation seen, %.3g nm)",
                    sd->name, grid[0], grid[1], grid[2], steps, xdev, tol_x, sd->seen_x);
        }
        if (g_rank == 0 && fref && strcmp(sd->name, "argon-gas") == 0) {
            /* The gas must really travel: atoms cross one cell, some cross two or more. The
             * reference run does not wrap, so x(end) - x(0) is the displacement. */
            int cross1 = 0, cross2 = 0;
            double cell = fref->box[0] / grid[0];
            for (int a = 0; a < fref->natoms && grid[0] > 1; a++) {
                double dxa = fabs(fref->x[3 * a] - sd->sys->x[3 * a]);
                cross1 += dxa > cell;
                cross2 += dxa > 2 * cell;
            }
            if (grid[0] >= 4)
                T_CHECK(cross1 > fref->natoms / 10 && cross2 > 0,
                        "argon gas: only %d atoms crossed a cell and %d two cells", cross1, cross2);
        }
        if (g_rank == 0)
            printf("  %-12s grid %dx%dx%d: %3d steps, worst energy deviation %.2e (step %d), "
                   "largest coordinate deviation at the end %.2e nm\n",
                   sd->name, grid[0], grid[1], grid[2], steps, worst, worst_step, xdev);
#ifdef HX_TEST_MPI
        /* The same decomposition in one process: bit-identical energies. */
        hx_comm *ser = NULL;
        T_OK(hx_comm_create_serial(grid[0] * grid[1] * grid[2], &ser));
        hx_md_energies *in = calloc(steps + 1, sizeof *in);
        T_OK(run_series(sd->sys, &sd->p, ser, grid, steps, in, NULL));
        for (int s = 0; s <= steps; s++)
            if (in[s].lj != dd[s].lj || in[s].coulomb != dd[s].coulomb ||
                in[s].kinetic != dd[s].kinetic) {
                T_FAIL("%s grid %dx%dx%d step %d: MPI and in-process energies differ "
                       "(%.17g vs %.17g)",
                       sd->name, grid[0], grid[1], grid[2], s, dd[s].coulomb, in[s].coulomb);
                break;
            }
        free(in);
        hx_comm_destroy(&ser);
#endif
    }
    (*ncases)++;
    hx_system_destroy(&fdd);
    free(dd);
}

/* The error message is exactly want on the rank that failed (rank `culprit`; -1: every rank
 * fails by itself) and "rank R failed (STATUS): want" on the others. */
static void expect_message(const char *what, hx_status st, hx_status want_st, int culprit,
                           const char *want)
{
    char full[2048];
    if (culprit < 0 || culprit == g_rank)
        snprintf(full, sizeof full, "%s", want);
    else
        snprintf(full, sizeof full, "rank %d failed (%s): %s", culprit, hx_status_name(want_st),
                 want);
    hx_status st_want = culprit < 0 || culprit == g_rank ? want_st : HX_ERR_REMOTE;
    T_CHECK(st == st_want && strcmp(hx_last_error_message(), full) == 0,
            "%s on rank %d: %s\n  '%s'\nexpected %s\n  '%s'", what, g_rank, hx_status_name(st),
            hx_last_error_message(), hx_status_name(st_want), full);
}

static void error_cases(hx_comm *comm, const sysdef *water, const sysdef *gas, int *ncases)
{
    int nd = hx_comm_ndomains(comm);
    hx_md *md = NULL;
    /* wrong grid size */
    int wrong[3] = {nd + 1, 1, 1};
    hx_status st = hx_md_create_dd(water->sys, &water->p, comm, wrong, &md);
    char want[1024];
    snprintf(want, sizeof want,
             "the domain grid %dx1x1 has %d domains but the job has %d ranks: give a grid whose "
             "product is %d, or leave --dd out to choose one",
             nd + 1, nd + 1, nd, nd);
    T_CHECK(md == NULL, "grid of %d domains on %d: an engine was made", nd + 1, nd);
    expect_message("wrong grid size", st, HX_ERR_INVALID_ARG, -1, want);
    (*ncases)++;
    if (nd == 2) {
        /* cells too small: two cells of a 2 nm box cannot hold r_comm > 1 nm in one pulse, and
         * two pulses would need more than two cells */
        hx_system *small = NULL;
        T_OK(hx_build_water("spce", 800, 0.0, 3, &small));
        int two[3] = {2, 1, 1};
        st = hx_md_create_dd(small, &water->p, comm, two, &md);
        /* r_comm (rlist + the largest molecule radius) is read from the message, checked for
         * range, and the whole message rebuilt from it must be what was printed */
        double r_comm = 0.0, cell = 0.0;
        int np = 0, most = 0;
        sscanf(hx_last_error_message(),
               "cells along x are too small: the communication distance %lf nm needs %d pulses of "
               "cell size %lf nm",
               &r_comm, &np, &cell);
        most = (int)floor(small->box[0] / r_comm);
        char fewer[64];
        if (most > 1)
            snprintf(fewer, sizeof fewer, "use at most %d domains along x", most);
        else
            snprintf(fewer, sizeof fewer, "do not divide x (one domain along it)");
        snprintf(want, sizeof want,
                 "cells along x are too small: the communication distance %g nm needs 2 pulses of "
                 "cell size %g nm, but there are only 2 cells (pulses must be fewer than cells); "
                 "%s, or a shorter cut-off/rlist, or a larger box",
                 r_comm, 0.5 * small->box[0], fewer);
        T_CHECK(np == 2 && r_comm > water->p.rlist && r_comm < water->p.rlist + 0.1,
                "2 cells of a %.2f nm box: r_comm %g nm, %d pulses", small->box[0], r_comm, np);
        expect_message("cells too small", st, HX_ERR_GEOMETRY, -1, want);
        hx_system_destroy(&small);
        (*ncases)++;
    }
    if (nd >= 4) {
        /* one argon atom flying along x, far from the others, fast enough to cross more than
         * one cell before the next repartition */
        hx_system *s = NULL;
        T_OK(hx_system_create(8, 8, &s));
        s->box[0] = s->box[1] = s->box[2] = 5.0;
        for (int a = 0; a < 8; a++) {
            s->mol_start[a] = a;
            s->res_id[a] = a + 1;
            snprintf(s->res_name[a], sizeof s->res_name[a], "AR");
            snprintf(s->atom_name[a], sizeof s->atom_name[a], "AR");
            s->x[3 * a + 0] = 0.3 + 0.6 * a;
            s->x[3 * a + 1] = a == 0 ? 0.5 : 3.0;
            s->x[3 * a + 2] = a == 0 ? 0.5 : 3.0 + 0.2 * (a % 2);
        }
        s->mol_start[8] = 8;
        hx_md_params p = gas->p;
        int grid[3] = {nd, 1, 1};
        /* 2.5 cells per list lifetime; the other atoms get the opposite momentum in total */
        s->v[0] = 2.5 * s->box[0] / nd / (p.dt * p.nstlist);
        for (int a = 1; a < 8; a++)
            s->v[3 * a] = -s->v[0] / 7.0;
        p.gen_vel = 0;
        s->has_velocities = 1;
        st = hx_md_create_dd(s, &p, comm, grid, &md);
        T_OK(st);
        for (int k = 0; k < 3 * p.nstlist && st == HX_OK; k++)
            st = hx_md_step(md);
        /* caught at the first repartition (step nstlist): atom 0 went from x = 0.3 nm (domain 0)
         * to 0.3 nm + 2.5 cells (domain 2); rank 0 holds domain 0 and reports it */
        snprintf(want, sizeof want,
                 "at step %d molecule 0 (global index, 0-based) moved more than one cell along x "
                 "since the last repartition: from domain 0 to domain 2; the system is unstable "
                 "or nstlist is too long",
                 p.nstlist);
        expect_message("fast atom", st, HX_ERR_PHYSICS, hx_comm_nranks(comm) > 1 ? 0 : -1, want);
        hx_md_destroy(&md);
        hx_system_destroy(&s);
        (*ncases)++;
    }
}

static const int grids_all[][3] = {{1, 1, 1}, {2, 1, 1}, {1, 2, 1}, {1, 1, 2}, {3, 1, 1},
                                   {1, 3, 1}, {2, 2, 1}, {4, 1, 1}, {1, 2, 2}, {2, 1, 2},
                                   {2, 2, 2}, {4, 2, 1}, {8, 1, 1}};
/* The 200-step runs: one grid per domain count, as many decomposed dimensions as it allows. */
static const int grids_long[][3] = {{1, 1, 1}, {2, 1, 1}, {3, 1, 1}, {2, 2, 1}, {2, 2, 2}};

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
    sysdef sd[4] = {0};
    memset(sd, 0, sizeof sd);
    /* SPC/E water, 3000 atoms, box 3.107 nm */
    sd[0].name = "water";
    T_OK(hx_build_water("spce", 3000, 0.0, 7, &sd[0].sys));
    hx_md_params_default(&sd[0].p);
    sd[0].p.rc = 0.9;
    sd[0].p.rlist = 1.0;
    sd[0].p.dt = 0.001;
    sd[0].p.gen_vel = 1;
    sd[0].p.gen_temp = 100;
    sd[0].p.nthreads = 1;
    sd[0].steps = 60;
    sd[0].seen_e = 3.1e-14;
    sd[0].seen_x = 5.2e-13;
    /* half-empty: a slab in the lower 45% of x */
    sd[1] = sd[0];
    sd[1].name = "half-empty";
    T_OK(hx_build_water("spce", 3000, 0.0, 8, &sd[1].sys));
    cut_slab(sd[1].sys, 0.45);
    sd[1].steps = 40;
    sd[1].seen_e = 1.9e-14;
    sd[1].seen_x = 2.6e-13;
    /* hot dilute argon gas: atoms cross cells during the run */
    sd[2].name = "argon-gas";
    T_OK(hx_build_argon(200, 5.0, 9, &sd[2].sys));
    hx_md_params_default(&sd[2].p);
    sd[2].p.model = "argon";
    sd[2].p.rc = 0.9;
    sd[2].p.rlist = 1.2;
    sd[2].p.dt = 0.005;
    sd[2].p.gen_vel = 1;
    sd[2].p.gen_temp = 5000;
    sd[2].p.nthreads = 1;
    sd[2].steps = 300;
    sd[2].seen_e = 3.0e-15;
    sd[2].seen_x = 1.3e-13;
    /* 200 NVE steps of water at 300 K and 2 fs */
    sd[3] = sd[0];
    sd[3].name = "water-200";
    sd[3].p.dt = 0.002;
    sd[3].p.gen_temp = 300;
    sd[3].p.rlist = 1.1; /* a buffer that misses no pair in 10 steps at 300 K */
    sd[3].p.nstcheck = 1;
    sd[3].steps = 200;
    sd[3].seen_e = 6.2e-13;
    sd[3].seen_x = 5.9e-11;

#ifdef HX_TEST_MPI
    int nd = comm ? hx_comm_ndomains(comm) : 0;
    for (size_t g = 0; g < sizeof grids_all / sizeof grids_all[0]; g++) {
        const int *grid = grids_all[g];
        if (grid[0] * grid[1] * grid[2] != nd)
            continue;
        for (int k = 0; k < 3; k++)
            compare_case(&sd[k], comm, grid, &ncases);
    }
    for (size_t g = 0; g < sizeof grids_long / sizeof grids_long[0]; g++)
        if (grids_long[g][0] * grids_long[g][1] * grids_long[g][2] == nd)
            compare_case(&sd[3], comm, grids_long[g], &ncases);
    if (comm)
        error_cases(comm, &sd[0], &sd[2], &ncases);
#else
    for (size_t g = 0; g < sizeof grids_all / sizeof grids_all[0]; g++) {
        const int *grid = grids_all[g];
        int n = grid[0] * grid[1] * grid[2];
        T_OK(hx_comm_create_serial(n, &comm));
        for (int k = 0; k < 3; k++)
            compare_case(&sd[k], comm, grid, &ncases);
        if (n == 2 || n == 4 || n == 8)
            error_cases(comm, &sd[0], &sd[2], &ncases);
        hx_comm_destroy(&comm);
    }
    for (size_t g = 0; g < sizeof grids_long / sizeof grids_long[0]; g++) {
        const int *grid = grids_long[g];
        T_OK(hx_comm_create_serial(grid[0] * grid[1] * grid[2], &comm));
        compare_case(&sd[3], comm, grid, &ncases);
        hx_comm_destroy(&comm);
    }
#endif
    for (int k = 0; k < 4; k++) {
        free(sd[k].ref);
        hx_system_destroy(&sd[k].fref);
    }
    for (int k = 0; k < 3; k++)
        if (k != 1 || sd[1].sys != sd[0].sys)
            hx_system_destroy(&sd[k].sys);
#ifdef HX_TEST_MPI
    return t_mpi_end(&comm, "test_dd_md_mpi", ncases);
#else
    return t_finish("test_dd_md", ncases);
#endif
}
