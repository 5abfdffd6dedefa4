/* The decomposed GPU engine with its search steps on the device against the same engine with
 * its search steps on the host (HALOX_GPU_DD=0: download, hx_decomp, upload), from the same
 * start: the same molecules go to the same domains in the same order, so the two runs do the
 * same arithmetic, and their energies and positions agree to the rounding of the GPU's
 * unordered float sums (atomics) - nothing of a decomposition error's size.
 *
 * In one process (no MPI, or one rank): every domain here, the gpu-local halo backend; grids
 * 2x2x1, 4x1x1 (two pulses) of 3000 SPC/E atoms and the ethanol-water mixture (SHAKE and
 * bonded terms from the device lists) on 2x1x1. --quick (the CPU emulation, in CI): 648 atoms
 * and the mixture on 2x1x1, 10 steps (one search step on the device), the lattices moved to
 * within 0.01 nm of the cell boundaries and started with a shear flow along x (1.5 nm/ps), so
 * that molecules do cross in that one search interval. Under MPI (one domain per rank, the
 * H200): every GPU halo backend compiled (gpu-mpi, gpu-direct, nvshmem; --halo NAME: that one)
 * on the rank count's grid(s); the CPU emulation runs gpu-mpi on 2 ranks, water only. For each: the
 * host-search run, the device-search run, and (--quick: water only) a device run that takes both
 * slow paths of a search step at its first search: the device decomposition's buffers start far too
 * small (fault site "gpu_dd.shrink" armed on every process: every process grows them together and
 * runs the step again) and
 * the halo plan's capacities are made to grow (fault site "plan.grow" armed on every process: the
 * halo exchange is updated collectively instead of refreshed locally, its arrays move) - it must
 * give the device run's result. The device run itself must make no collective allocation at any
 * search step (no slow-path run, no halo update: the capacities' headroom holds).
 *
 * Tolerances. Per step (energies every step, hx_md_step): the total energy, |dLJ| and |dCoulomb|
 * within 1e-6 relative (the total's difference relative to |LJ| + |Coulomb|, the float sums that
 * carry the rounding: about 2e-5 kJ/mol per atom for SPC/E); end positions within 1e-4 nm.
 * The runs differ only by the order of float atomics (in the emulation too: a block's threads
 * run concurrently), ~1e-7 relative per step, grown by a few dozen steps of a liquid. Measured
 * in the emulation: water identical, the mixture 1e-8 kJ/mol per atom and 5e-10 nm (its bonded
 * forces are atomics); on an H200 (4 ranks, 1500-3000 atoms of water, 40 steps) up to 2.9e-6
 * kJ/mol per atom, 1.4e-7 of |LJ| + |Coulomb|, positions 5e-6 nm (an absolute bar of 2e-6 per
 * atom was below that). A molecule on the wrong domain or a halo atom missing changes energies
 * by 1e-3 kJ/mol per atom and more, 5e-5 relative. Also checked: the device run did search on the
 * device (dd_searches), the host run did not, the slow-path run took both slow paths (dd_retries >
 * 0, dd_halo_updates > 0), the device run's pair searches ran their home zone's part ahead of the
 * plan (hx_gpu_nb_search_home; unless HALOX_GPU_SEARCH_HOME=0). Fault injection: the device
 * bonded list not rebuilt at the search step fails the mixture (SETTLE cannot constrain a water
 * that the stale bonded terms pushed); the rest of a split pair search building the local list
 * again (energies 0.44 relative off) or clearing the home zone's column counts (a physics
 * error).
 * Failures inside the search step (fault sites "md.dd_pending", a failure noted before the step,
 * "md.dd_counts", "md.dd_set_home", "md.dd_set_local" and "md.dd_pairs", armed on the last rank
 * only, fail_case):
 * every rank ends that step with an error naming the failing rank, within the step; with the
 * counts' failure returned before the plan's messages (an injected fault: the failure markers
 * that stand for them left out) the other rank waits out its deadline and the case fails. */
#include "halox/gpu.h"
#include "halox/halo.h"
#include "halox/build.h"
#include "halox/io.h"
#include "halox/log.h"
#include "halox/md.h"
#include "core/fault.h"
#include "test_ethanol_common.h"
#include "test_gpu_common.h"
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int g_rank = 0;

typedef struct run {
    double *etot, *elj, *ecoul;
    hx_system *x; /* gathered at the end (rank 0) */
    hx_md_timings tm;
    /* domain 0's pair module: searches, those split (home part first), buffer growths */
    int searches, home_parts, regrows;
    int ok;
} run;

static void run_free(run *r)
{
    free(r->etot);
    free(r->elj);
    free(r->ecoul);
    hx_system_destroy(&r->x);
}

static int g_quick = 0;
static int g_path = HX_HALO_PATH_AUTO; /* --path p2p|network (nvshmem) */

/* Start velocities for the emulation's few steps: a shear flow along x (+v below half the box
 * in y, -v above: no centre-of-mass motion, layers slide past each other) plus a random part,
 * so that within one search interval molecules cross the domain boundaries along x. */
static void shear_velocities(hx_system *s, double v, double shift, uint64_t seed)
{
    t_rng r;
    t_rng_seed(&r, seed);
    /* lattice starts put every molecule half a spacing from the cell boundaries: moved
     * to within a few hundredths of a nm of them */
    for (int a = 0; a < s->natoms; a++)
        s->x[3 * a] += shift;
    for (int k = 0; k < s->nmol; k++) {
        const int a0 = s->mol_start[k];
        const double dir = s->x[3 * a0 + 1] < 0.5 * s->box[1] ? 1.0 : -1.0;
        double vm[3];
        for (int d = 0; d < 3; d++)
            vm[d] = 0.3 * v * (2.0 * t_rng_uniform(&r) - 1.0);
        vm[0] += dir * v;
        for (int a = a0; a < s->mol_start[k + 1]; a++)
            for (int d = 0; d < 3; d++)
                s->v[3 * a + d] = vm[d];
    }
    s->has_velocities = 1;
}

/* The engine's parameters of every run here: model on the GPU, the halo backend, nstlist 10. */
static void run_params(hx_md_params *p, const char *model, const char *halo)
{
    hx_md_params_default(p);
    p->model = model;
    /* warm: molecules cross between domains within a few searches (the emulation's few steps:
     * a shear flow, shear_velocities) */
    p->gen_vel = !g_quick;
    p->gen_temp = 400;
    p->seed = 5;
    p->nstlist = 10;
    p->dt = strcmp(model, "oplsaa") == 0 ? 0.001 : 0.002;
    p->backend = "gpu";
    p->gpu = tg_gpu();
    p->halo = halo;
    p->halo_path = g_path;
    p->halo_wait_timeout = 20.0;
    if (g_quick) {
        /* the emulation: a small box (2 cells of 0.93 nm along x) */
        const int eth = strcmp(model, "oplsaa") == 0;
        p->rc = eth ? 0.6 : 0.7;
        p->rlist = eth ? 0.65 : 0.75;
        p->prune_parts = 0; /* the shear's kinetic energy defeats the inner list's estimate */
    }
}

/* mode 0: host search steps; 1: device; 2: device with every capacity shrunk by 8 */
static void do_run(const hx_system *s, const char *model, const char *halo, hx_comm *comm,
                   const int grid[3], int nsteps, int mode, run *r)
{
    memset(r, 0, sizeof *r);
    if (mode == 0)
        setenv("HALOX_GPU_DD", "0", 1);
    else
        unsetenv("HALOX_GPU_DD");
    if (mode == 2)
        hx_fault_arm("gpu_dd.shrink"); /* on every process: the capacities are agreed */
    hx_md_params p;
    run_params(&p, model, halo);
    hx_md *md = NULL;
    T_OK(hx_md_create_dd(s, &p, comm, grid, &md));
    hx_fault_arm(NULL);
    unsetenv("HALOX_GPU_DD");
    if (!md)
        return;
    /* the slow-path run: the halo plan's capacities grow too at the first device search step
     * (every process arms it: all take the collective update together) */
    if (mode == 2)
        hx_fault_arm("plan.grow");
    r->etot = calloc((size_t)nsteps + 1, sizeof(double));
    r->elj = calloc((size_t)nsteps + 1, sizeof(double));
    r->ecoul = calloc((size_t)nsteps + 1, sizeof(double));
    hx_status st = HX_OK;
    for (int k = 0; k <= nsteps && st == HX_OK; k++) {
        st = hx_md_step(md);
        if (st == HX_OK) {
            const hx_md_energies *e = hx_md_last_energies(md);
            r->etot[k] = e->total;
            r->elj[k] = e->lj;
            r->ecoul[k] = e->coulomb;
        }
    }
    hx_fault_arm(NULL);
    T_OK(st);
    if (st == HX_OK)
        T_OK(hx_md_gather(md));
    if (st == HX_OK && g_rank == 0)
        T_OK(hx_system_copy(hx_md_system(md), &r->x));
    hx_md_get_timings(md, &r->tm);
    hx_gpu_nb *nb = tg_md_nb(md);
    if (nb) {
        hx_gpu_nb_stats ns;
        hx_gpu_nb_get_stats(nb, &ns);
        r->searches = ns.searches;
        r->home_parts = ns.home_parts;
        r->regrows = ns.regrows;
    }
    r->ok = st == HX_OK;
    hx_md_destroy(&md);
}

static void compare(const char *tag, const run *a, const run *b, int nsteps, int natoms)
{
    if (!a->ok || !b->ok)
        return;
    double we = 0, wr = 0, wl = 0, wc = 0;
    int ke = 0;
    for (int k = 0; k <= nsteps; k++) {
        const double de = fabs(a->etot[k] - b->etot[k]);
        /* relative to the size of the pair terms, whose float sums carry the rounding */
        const double rel = de / fmax(fabs(a->elj[k]) + fabs(a->ecoul[k]), 1e-300);
        if (rel > wr) {
            wr = rel;
            we = de / natoms;
            ke = k;
        }
        wl = fmax(wl, t_reldiff(a->elj[k], b->elj[k], 1.0));
        wc = fmax(wc, t_reldiff(a->ecoul[k], b->ecoul[k], 1.0));
    }
    const double dx = g_rank == 0 && a->x && b->x ? t_max_pos_dev(a->x, b->x) : 0.0;
    if (g_rank == 0)
        printf("%-36s %d steps: total energy %.2e kJ/mol/atom = %.1e of |LJ|+|Coulomb| (step %d), "
               "LJ %.1e, Coulomb %.1e relative, positions %.2e nm\n",
               tag, nsteps, we, wr, ke, wl, wc, dx);
    T_CHECK(wr <= 1e-6,
            "%s: total energy of step %d differs by %.3e kJ/mol per atom, %.2e of |LJ|+|Coulomb|",
            tag, ke, we, wr);
    T_CHECK(wl <= 1e-6 && wc <= 1e-6, "%s: LJ / Coulomb differ by %.2e / %.2e relative", tag, wl,
            wc);
    T_CHECK(dx <= 1e-4, "%s: end positions differ by %.3e nm", tag, dx);
}

/* the fault sites of fail_case: a failure noted before the step (agreed in the device step's
 * reduction), the counts and the home atoms' set-up (the plan's failure markers, then the
 * agreement after it), the modules'
 * set-up (the agreement after it, before the coordinate halo) and the pair search (in the
 * statistics' sum) */
static const char *const fail_sites[] = {"md.dd_pending", "md.dd_counts", "md.dd_set_home",
                                         "md.dd_set_local", "md.dd_pairs"};
#define NFAIL_SITES 5

/* A failure on one process inside the device search step (fault site `site`, armed on the last
 * rank only: before the step, the counts, the modules' set-up or the pair search) must end that
 * step on every process with an error, the failing rank's message on the others (HX_ERR_REMOTE),
 * none left waiting in a collective (the launcher's timeout would kill a hang). All but the
 * modules' set-up are agreed inside the device step's reduction, the plan's and the list
 * statistics' collectives, not by agreements of their own. */
static int fail_case(const hx_system *s, const char *halo, hx_comm *comm, int size,
                     const int grid[3], const char *site)
{
    unsetenv("HALOX_GPU_DD");
    hx_md_params p;
    run_params(&p, "spce", halo);
    hx_md *md = NULL;
    T_OK(hx_md_create_dd(s, &p, comm, grid, &md));
    if (!md)
        return 0;
    const int culprit = size - 1;
    if (g_rank == culprit)
        hx_fault_arm(site);
    hx_status st = HX_OK;
    int k = 0;
    for (; k <= 10 && st == HX_OK; k++)
        st = hx_md_step(md);
    hx_fault_arm(NULL);
    const char *msg = hx_last_error_message();
    char want[64];
    snprintf(want, sizeof want, "rank %d failed", culprit);
    /* k counts the steps taken: the first device search is step 10, the 11th */
    T_CHECK(st != HX_OK && k == 11,
            "%s %s: fault at %s on rank %d: rank %d returned %s after %d steps", halo, site, site,
            culprit, g_rank, hx_status_name(st), k);
    if (g_rank == culprit)
        T_CHECK(strstr(msg, "fault injected by a test") != NULL,
                "%s %s: the failing rank's message is \"%s\"", halo, site, msg);
    else
        T_CHECK(st == HX_ERR_REMOTE && strstr(msg, want) && strstr(msg, "fault injected"),
                "%s %s: rank %d returned %s \"%s\", want HX_ERR_REMOTE naming rank %d's failure",
                halo, site, g_rank, hx_status_name(st), msg, culprit);
    if (g_rank == 0)
        printf("    %s: %s on rank %d ended step 10 on every rank: \"%.120s\"\n", halo, site,
               culprit, msg);
    hx_md_destroy(&md);
    return 1;
}

/* slow: also the run that takes both slow paths of the device search step at its first search
 * (the emulation does it for water only: each run costs tens of seconds there) */
static int one_case(const char *name, const hx_system *s, const char *model, const char *halo,
                    hx_comm *comm, const int grid[3], int nsteps, int slow)
{
    run host, dev, shrunk;
    char tag[160];
    do_run(s, model, halo, comm, grid, nsteps, 0, &host);
    do_run(s, model, halo, comm, grid, nsteps, 1, &dev);
    if (slow)
        do_run(s, model, halo, comm, grid, nsteps, 2, &shrunk);
    else
        memset(&shrunk, 0, sizeof shrunk);
    T_CHECK(host.tm.dd_searches == 0 && host.ok, "%s %s: the host run searched on the device", name,
            halo);
    if (g_rank == 0)
        printf(
            "    %s %s: device run %lld searches, %lld retries, %lld halo updates; slow-path run "
            "%lld searches, %lld retries, %lld halo updates\n",
            name, halo, dev.tm.dd_searches, dev.tm.dd_retries, dev.tm.dd_halo_updates,
            shrunk.tm.dd_searches, shrunk.tm.dd_retries, shrunk.tm.dd_halo_updates);
    /* no collective allocation on an ordinary search step: the buffers' headroom holds */
    T_CHECK(dev.tm.dd_searches == nsteps / 10 && dev.tm.dd_retries == 0 &&
                dev.tm.dd_halo_updates == 0,
            "%s %s: the device run made %lld search steps on the device (%lld slow-path runs, "
            "%lld halo updates), want %d and none",
            name, halo, dev.tm.dd_searches, dev.tm.dd_retries, dev.tm.dd_halo_updates, nsteps / 10);
    /* the pair search of each device search step split: its home part launched before the
     * plan (counted where it served: a search redone after a buffer growth runs whole) */
    const int want_split = tg_split_search_expected();
    T_CHECK(!dev.ok || !want_split ||
                (dev.home_parts <= dev.tm.dd_searches &&
                 dev.home_parts + dev.regrows >= dev.tm.dd_searches),
            "%s %s: %d of %lld device search steps' pair searches ran their home part first "
            "(%d buffer growths)",
            name, halo, dev.home_parts, dev.tm.dd_searches, dev.regrows);
    if (g_rank == 0)
        printf("    %s %s: rank 0's pair searches %d, %d with the home part first, %d growths\n",
               name, halo, dev.searches, dev.home_parts, dev.regrows);
    T_CHECK(!slow || (shrunk.tm.dd_searches == nsteps / 10 && shrunk.tm.dd_retries > 0 &&
                      shrunk.tm.dd_halo_updates > 0),
            "%s %s: shrunk buffers and a forced plan growth, but %lld slow-path runs and %lld "
            "halo updates in %lld device searches",
            name, halo, shrunk.tm.dd_retries, shrunk.tm.dd_halo_updates, shrunk.tm.dd_searches);
    snprintf(tag, sizeof tag, "%s %s %dx%dx%d device/host", name, halo, grid[0], grid[1], grid[2]);
    compare(tag, &dev, &host, nsteps, s->natoms);
    if (slow) {
        snprintf(tag, sizeof tag, "%s %s %dx%dx%d shrunk/device", name, halo, grid[0], grid[1],
                 grid[2]);
        compare(tag, &shrunk, &dev, nsteps, s->natoms);
    }
    /* the plan from the counts and the agreements after it are disjoint intervals of the
     * device search steps' host wall time */
    T_CHECK(!dev.ok || (dev.tm.search_plan_counts >= 0 && dev.tm.search_agree >= 0 &&
                        dev.tm.search_plan_counts + dev.tm.search_agree <= dev.tm.search_dd),
            "%s %s: the plan from the counts %.6f s and the agreements %.6f s do not fit in the "
            "device search steps' %.6f s",
            name, halo, dev.tm.search_plan_counts, dev.tm.search_agree, dev.tm.search_dd);
    if (g_rank == 0 && dev.ok)
        printf("    device search step: migration %.1f us, local set %.1f us, plan maps %.1f "
               "us, counts %.1f us (plan from them %.1f us, agreements after them %.1f us), the "
               "whole step %.1f us of host wall time per search (%lld)\n",
               1e6 * dev.tm.search_dev_migrate / dev.tm.dd_searches,
               1e6 * dev.tm.search_dev_local_set / dev.tm.dd_searches,
               1e6 * dev.tm.search_dev_plan / dev.tm.dd_searches,
               1e6 * dev.tm.search_counts / dev.tm.dd_searches,
               1e6 * dev.tm.search_plan_counts / dev.tm.dd_searches,
               1e6 * dev.tm.search_agree / dev.tm.dd_searches,
               1e6 * dev.tm.search_dd / dev.tm.dd_searches, dev.tm.dd_searches);
    run_free(&host);
    run_free(&dev);
    run_free(&shrunk);
    return 3;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    int size = 1, quick = 0;
    hx_comm *world = NULL;
#ifdef HX_TEST_MPI
    t_mpi_begin(&argc, &argv, &world, &g_rank, &size);
#endif
    int natoms = 3000, only = -1;
    const char *only_halo = NULL;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--quick"))
            quick = 1;
        else if (!strcmp(argv[a], "--halo") && a + 1 < argc)
            only_halo = argv[++a];
        else if (!strcmp(argv[a], "--path") && a + 1 < argc) {
            a++;
            g_path = !strcmp(argv[a], "network") ? HX_HALO_PATH_NETWORK
                     : !strcmp(argv[a], "p2p")   ? HX_HALO_PATH_P2P
                                                 : HX_HALO_PATH_AUTO;
        } else if (!strcmp(argv[a], "--atoms") && a + 1 < argc)
            natoms = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--case") && a + 1 < argc)
            only = atoi(argv[++a]);
    }
    int ncases = 0;
    if (!t_gpu_require("test_gpu_dd_search")) {
#ifdef HX_TEST_MPI
        t_mpi_end(&world, "test_gpu_dd_search", 0);
#endif
        return T_SKIP_CODE;
    }
    hx_log_set_level(HX_LOG_WARN);
    /* this process's GPU context: on the world (node-local rank modulo the devices), or on a
     * communicator of this process alone, which every domain of a serial run shares */
    if (world)
        tg_gpu_begin(world);
    hx_system *w = NULL;
    /* the emulation (--quick): a small box, one search step on the device */
    g_quick = quick;
    if (quick && natoms == 3000)
        natoms = 648;
    T_OK(hx_build_water("spce", natoms, 0, 7, &w));
    /* a loose lattice (no overlaps to relax), 1 fs below */
    hx_system *eth = tet_mixture_lattice("tip3p", quick ? 4 : 7, quick ? 0.5 : 0.56, 0.3, 0.01, 3);
    const int nsteps = quick ? 10 : 40;
    if (quick) {
        if (w) /* 6 molecules per edge */
            shear_velocities(w, 1.5, 0.5 * w->box[0] / 6 - 0.01, 21);
        if (eth) /* 4 per edge */
            shear_velocities(eth, 1.5, 0.5 * eth->box[0] / 4 - 0.01, 22);
    }
    if (size == 1) {
        static const int grids[3][3] = {{2, 2, 1}, {4, 1, 1}, {2, 1, 1}};
        for (int g = 0; g < 2 && w; g++) {
            if ((only >= 0 && only != g) || (quick && g > 0))
                continue;
            hx_comm *c = NULL;
            const int *gg = quick ? grids[2] : grids[g];
            T_OK(hx_comm_create_serial(gg[0] * gg[1] * gg[2], &c));
            /* the emulation's small box has room for two cells along x */
            if (c)
                ncases += one_case("water", w, "spce", "gpu-local", c, quick ? grids[2] : grids[g],
                                   nsteps, 1);
            if (c && g == 0) /* one process: the failure is its own, returned as it is */
                for (int f = 0; f < NFAIL_SITES; f++)
                    ncases +=
                        fail_case(w, "gpu-local", c, 1, quick ? grids[2] : grids[g], fail_sites[f]);
            hx_comm_destroy(&c);
        }
        if (eth && (only < 0 || only == 2)) {
            hx_comm *c = NULL;
            T_OK(hx_comm_create_serial(2, &c));
            if (c)
                ncases += one_case("ethanol-water", eth, "oplsaa", "gpu-local", c, grids[2], nsteps,
                                   !quick);
            hx_comm_destroy(&c);
        }
    } else {
        int grids[2][3] = {{size, 1, 1}, {0, 0, 0}};
        int ngrids = 1;
        if (size == 4) {
            grids[1][0] = grids[1][1] = 2;
            grids[1][2] = 1;
            ngrids = 2;
        } else if (size == 8) {
            grids[0][0] = grids[0][1] = grids[0][2] = 2;
        }
        static const char *const halos[] = {"gpu-mpi", "gpu-direct", "nvshmem"};
        int use[3];
        for (int h = 0; h < 3; h++)
            use[h] = hx_halo_backend_available(halos[h]) == HX_OK &&
                     (!only_halo || strcmp(only_halo, halos[h]) == 0);
        for (int g = 0; g < ngrids && w; g++)
            for (int h = 0; h < 3; h++)
                if (use[h]) {
                    ncases += one_case("water", w, "spce", halos[h], world, grids[g], nsteps, 1);
                    for (int f = 0; f < NFAIL_SITES && g == 0; f++)
                        ncases += fail_case(w, halos[h], world, size, grids[g], fail_sites[f]);
                }
        /* the emulation (--quick) leaves the mixture to the one-process run */
        if (eth && size == 2 && !quick)
            for (int h = 0; h < 3; h++)
                if (use[h])
                    ncases += one_case("ethanol-water", eth, "oplsaa", halos[h], world, grids[0],
                                       nsteps, 1);
    }
    hx_system_destroy(&w);
    hx_system_destroy(&eth);
    tg_gpu_end();
#ifdef HX_TEST_MPI
    return t_mpi_end(&world, "test_gpu_dd_search", ncases);
#else
    (void)world;
    return t_finish("test_gpu_dd_search", ncases);
#endif
}
