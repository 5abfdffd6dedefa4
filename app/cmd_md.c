/* halox md: single-domain CPU molecular dynamics (leap-frog, SETTLE, LJ + reaction field). */
#include "commands.h"

#include "halox/halo.h"
#include "halox/io.h"
#include "halox/log.h"
#include "halox/md.h"
#include "core/error.h"
#include "core/timer.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int run_md(int argc, char **argv);

const hx_cmd hx_cmd_md = {
    "md", "run molecular dynamics (CPU; domain-decomposed over MPI ranks)",
    "[mpirun -np N] halox md -c conf.gro [-o out.gro] --steps N [--dd AxBxC] [options]",
    "Leap-frog MD of rigid water (SETTLE) or argon with Lennard-Jones (potential shift) and\n"
    "reaction-field electrostatics in GROMACS Verlet-scheme conventions. The pair list of radius\n"
    "rlist is rebuilt every nstlist steps; without --rlist it is chosen from the buffer\n"
    "tolerance. --steps 0 prints the single-point energies. NVE unless --thermostat v-rescale.\n"
    "The same input, seed and --threads give bit-identical output. Output files are written\n"
    "only after all parameters were checked; the final configuration is replaced atomically.\n"
    "Under mpirun every rank holds one domain of an eighth-shell domain decomposition (grid\n"
    "from --dd, or chosen for the number of ranks) and halos move through the MPI backend;\n"
    "rank 0 writes all output, atoms in global order. Without mpirun, --dd AxBxC runs all\n"
    "A*B*C domains in this one process (the in-process reference decomposition).",
    run_md};

static void progress(void *user, long long step, long long nsteps, double ns_per_day,
                     double seconds_left)
{
    (void)user;
    fprintf(stderr, "step %lld of %lld, %.3f ns/day, %.0f s left\n", step, nsteps, ns_per_day,
            seconds_left);
}

static void default_log_path(const char *out, char *buf, size_t cap)
{
    const char *slash = strrchr(out, '/');
    if (!slash)
        snprintf(buf, cap, "md.log");
    else
        snprintf(buf, cap, "%.*s/md.log", (int)(slash - out), out);
}

/* Fault injection for the robustness tests: HALOX_FAULT_INJECT=MODE:RANK:STEP makes rank RANK
 * fail at step STEP: "kill" raises SIGKILL (a crashed node), "exit" leaves the process without
 * any MPI call (a lost rank), "error" returns an error from that rank only (a local failure the
 * other ranks do not know about). Unset in normal runs. */
typedef struct fault {
    char mode[16];
    int rank;
    long long step;
    int my_rank;
} fault;

static hx_status fault_hook(void *user, hx_md *md, long long step)
{
    (void)md;
    const fault *f = user;
    if (f->rank != f->my_rank || step != f->step)
        return HX_OK;
    fprintf(stderr, "[rank %d] fault injection: %s at step %lld\n", f->my_rank, f->mode, step);
    fflush(stderr);
    if (strcmp(f->mode, "kill") == 0)
        raise(SIGKILL);
    if (strcmp(f->mode, "exit") == 0)
        _exit(3);
    return hx_error_set(HX_ERR_INTERNAL, __FILE__, __LINE__, __func__,
                        "fault injected on rank %d at step %lld (HALOX_FAULT_INJECT)", f->my_rank,
                        step);
}

static int parse_fault(fault *f, int my_rank)
{
    const char *e = getenv("HALOX_FAULT_INJECT");
    if (!e || !*e)
        return 0;
    memset(f, 0, sizeof *f);
    if (sscanf(e, "%15[a-z]:%d:%lld", f->mode, &f->rank, &f->step) != 3 ||
        (strcmp(f->mode, "kill") && strcmp(f->mode, "exit") && strcmp(f->mode, "error")))
        return -1;
    f->my_rank = my_rank;
    return 1;
}

/* Report a failure once: the rank where it happened prints it; ranks that only learnt of it
 * (HX_ERR_REMOTE) stay quiet. In a parallel run every rank then ends the job, so that no rank
 * can be left waiting for a message that never comes. */
static int fail_job(hx_comm *comm, hx_status st, FILE *flog)
{
    if (st != HX_ERR_REMOTE) {
        if (comm && hx_comm_nranks(comm) > 1)
            fprintf(stderr, "[rank %d] ", hx_comm_rank(comm));
        hx_cli_report_error("md", st);
        if (flog)
            fprintf(flog, "error: %s\n", hx_last_error_message());
    }
    if (flog)
        fflush(flog);
    fflush(stderr);
    if (comm && hx_comm_nranks(comm) > 1)
        hx_comm_abort(comm, 1);
    return 1;
}

static void write_log_header(FILE *flog, const hx_md *md, const hx_md_params *p, const char *conf,
                             const char *out, const char *energy, const char *traj, int nstenergy,
                             int nstxout, int seed, double tau_t, double ref_t, double rlist_opt,
                             int nranks)
{
    const hx_md_params *rp = hx_md_get_params(md);
    fprintf(flog, "halox md\nparameters:\n");
    fprintf(flog, "  conf %s\n  output %s\n  model %s\n  steps %lld\n  dt %g ps\n", conf, out,
            rp->model, rp->steps, rp->dt);
    fprintf(flog, "  rc %g nm\n  rlist %.4f nm%s\n  nstlist %d\n  eps_rf %g%s\n  eps_r %g\n",
            rp->rc, rp->rlist, rlist_opt > 0 ? "" : " (from the buffer tolerance)", rp->nstlist,
            rp->eps_rf, rp->eps_rf == 0 ? " (infinity)" : "", rp->eps_r);
    fprintf(flog, "  buffer tolerance %g kJ/mol/ps/atom\n", rp->verlet_buffer_tolerance);
    fprintf(flog, "  velocities %s", p->gen_vel ? "generated" : "from the input");
    if (p->gen_vel)
        fprintf(flog, " at %g K, seed %d", p->gen_temp, seed);
    fprintf(flog, "\n  thermostat %s", p->thermostat ? "v-rescale" : "none (NVE)");
    if (p->thermostat)
        fprintf(flog, " tau_t %g ps ref_t %g K seed %d", tau_t, ref_t, seed);
    fprintf(flog,
            "\n  MPI ranks %d, threads per rank %d\n  energy %s every %d\n"
            "  trajectory %s every %d\n",
            nranks, rp->nthreads, energy ? energy : "-", nstenergy, traj ? traj : "-", nstxout);
    const hx_system *s = hx_md_system(md);
    fprintf(flog, "system: %s\n  %d atoms, %d molecules, box %.5f %.5f %.5f nm\n", s->title,
            s->natoms, s->nmol, s->box[0], s->box[1], s->box[2]);
    fprintf(flog, "  degrees of freedom %.0f, pairs in the first lists %lld\n", hx_md_ndf(md),
            hx_md_npairs(md));
    hx_md_dd_info di;
    hx_md_get_dd_info(md, &di);
    int nd = di.grid[0] * di.grid[1] * di.grid[2];
    fprintf(flog, "domain decomposition:\n  grid %d x %d x %d (%d domains)\n", di.grid[0],
            di.grid[1], di.grid[2], nd);
    fprintf(flog, "  cell size %.4f x %.4f x %.4f nm, r_comm %.4f nm\n", di.cell[0], di.cell[1],
            di.cell[2], di.r_comm);
    fprintf(flog, "  pulses x %d, y %d, z %d\n", di.pulses[0], di.pulses[1], di.pulses[2]);
    fprintf(flog,
            "  home atoms per domain min %lld max %lld; halo atoms min %lld avg %.1f max "
            "%lld\n",
            di.home_min, di.home_max, di.halo_min, (double)di.halo_total / nd, di.halo_max);
    fflush(flog);
}

static void write_log_footer(FILE *flog, const hx_md *md)
{
    const hx_md_energies *e = hx_md_last_energies(md);
    const hx_md_params *rp = hx_md_get_params(md);
    const hx_system *s = hx_md_system(md);
    hx_md_timings t;
    hx_md_get_timings(md, &t);
    double other =
        t.total - t.force - t.halo_x - t.halo_f - t.search - t.update - t.reduce - t.output;
    fprintf(flog,
            "final energies step %lld: lj %.6f coulomb %.6f potential %.6f kinetic "
            "%.6f total %.6f T %.3f K\n",
            e->step, e->lj, e->coulomb, e->potential, e->kinetic, e->total, e->temperature);
    if (t.missed_pairs >= 0)
        fprintf(flog, "pair searches %lld, missed pairs in total %lld\n", t.searches,
                t.missed_pairs);
    else
        fprintf(flog, "repartitions/pair searches %lld (missed-pair check: single domain only)\n",
                t.searches);
    fprintf(flog, "\ntiming (rank 0)        seconds      %%\n");
    double tot = t.total > 0 ? t.total : 1.0;
    const char *names[] = {
        "non-bonded force", "halo exchange x", "halo exchange f", "repartition+search",
        "constr/update",    "reductions",      "output",          "other"};
    double vals[] = {t.force, t.halo_x, t.halo_f, t.search, t.update, t.reduce, t.output, other};
    for (int i = 0; i < 8; i++)
        fprintf(flog, "  %-20s %10.3f %6.1f\n", names[i], vals[i], 100 * vals[i] / tot);
    fprintf(flog, "  %-20s %10.3f\n", "total", t.total);
    double nst = (double)(t.steps > 0 ? t.steps : 1);
    double us = 1e6 * t.total / nst;
    fprintf(flog,
            "performance: %.3f ns/day, %.1f us/step, %.4g atom-steps/s, halo exchange %.1f "
            "us/step (%lld steps, %d atoms, %d threads per rank)\n",
            rp->dt * 1e-3 * 86400.0 / (us * 1e-6), us, s->natoms / (us * 1e-6),
            1e6 * (t.halo_x + t.halo_f) / nst, t.steps, s->natoms, rp->nthreads);
}

static int run_md_job(const hx_md_params *p, const char *conf, const char *out, const char *energy,
                      const char *traj, const char *logpath, int nstenergy, int nstxout,
                      const int grid[3], int parallel, int seed, double tau_t, double ref_t,
                      double rlist_opt)
{
    hx_comm *comm = NULL;
    hx_system *sys = NULL;
    hx_md *md = NULL;
    FILE *flog = NULL, *fen = NULL, *ftr = NULL;
    hx_status st;
    int ngrid = grid[0] > 0 ? grid[0] * grid[1] * grid[2] : 1;
    if (parallel)
        st = hx_comm_create_world(&comm);
    else
        st = hx_comm_create_serial(ngrid, &comm);
    if (st != HX_OK)
        return fail_job(NULL, st, NULL);
    const int root = hx_comm_rank(comm) == 0, nranks = hx_comm_nranks(comm);
    hx_md_params pp = *p;
    if (pp.nthreads == 0 && nranks > 1) {
        /* ranks share the node's cores: do not oversubscribe them with threads */
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        pp.nthreads = ncpu > nranks ? (int)(ncpu / nranks) : 1;
    }
    p = &pp;
    hx_log_set_rank(hx_comm_rank(comm), nranks);
    if (parallel && grid[0] > 0 && ngrid != nranks) {
        if (root)
            fprintf(stderr,
                    "halox md: error: the domain grid --dd %dx%dx%d has %d domains but the job "
                    "has %d MPI ranks: give a grid whose product is %d, or leave --dd out to "
                    "choose one\n",
                    grid[0], grid[1], grid[2], ngrid, nranks, nranks);
        hx_comm_destroy(&comm);
        return 1;
    }
    /* rank 0 reads, everybody learns whether that worked, then gets the system */
    st = root ? hx_gro_read(conf, &sys) : HX_OK;
    st = hx_comm_agree(comm, st);
    if (st == HX_OK)
        st = hx_system_bcast(comm, &sys);
    if (st == HX_OK)
        st = hx_md_create_dd(sys, p, comm, grid[0] > 0 ? grid : NULL, &md);
    if (st != HX_OK) {
        int r = fail_job(comm, st, NULL);
        hx_system_destroy(&sys);
        hx_comm_destroy(&comm);
        return r;
    }
    char logbuf[4096];
    if (!logpath) {
        default_log_path(out, logbuf, sizeof logbuf);
        logpath = logbuf;
    }
    st = HX_OK;
    if (root) {
        flog = fopen(logpath, "w");
        fen = energy ? fopen(energy, "w") : NULL;
        ftr = (traj && nstxout > 0) ? fopen(traj, "w") : NULL;
        if (!flog || (energy && !fen) || (traj && nstxout > 0 && !ftr))
            st = hx_error_set(HX_ERR_IO, __FILE__, __LINE__, __func__,
                              "cannot open the output file %s: %s",
                              !flog ? logpath : (energy && !fen ? energy : traj), strerror(errno));
    }
    st = hx_comm_agree(comm, st);
    int rc_exit = 0;
    if (st != HX_OK) {
        rc_exit = fail_job(comm, st, NULL);
        goto done;
    }
    if (root) {
        hx_log_set_file(flog);
        write_log_header(flog, md, p, conf, out, energy, traj, nstenergy, nstxout, seed, tau_t,
                         ref_t, rlist_opt, nranks);
    }
    hx_md_output o = {fen, nstenergy, ftr, nstxout, root ? progress : NULL, NULL, 5.0, NULL};
    fault flt;
    int fi = parse_fault(&flt, hx_comm_rank(comm));
    if (fi < 0) {
        if (root)
            fprintf(stderr, "halox md: error: HALOX_FAULT_INJECT must be MODE:RANK:STEP with "
                            "MODE kill, exit or error\n");
        rc_exit = 1;
        goto done;
    }
    if (fi > 0) {
        o.step_hook = fault_hook;
        o.user = &flt;
    }
    st = hx_md_run(md, &o);
    if (st == HX_OK)
        st = hx_md_gather(md);
    if (st == HX_OK && root) {
        const hx_md_energies *e = hx_md_last_energies(md);
        if (p->steps == 0)
            printf("single-point energies (kJ/mol):\n  lj        %.8f\n  coulomb   %.8f\n"
                   "  potential %.8f\n  kinetic   %.8f\n  total     %.8f\n  temperature %.4f K\n",
                   e->lj, e->coulomb, e->potential, e->kinetic, e->total, e->temperature);
        st = hx_gro_write(out, hx_md_system(md), 1);
        if (st == HX_OK)
            write_log_footer(flog, md);
        if (st == HX_OK && fen && fflush(fen) != 0)
            st = hx_error_set(HX_ERR_IO, __FILE__, __LINE__, __func__,
                              "writing the energy file %s failed: %s", energy, strerror(errno));
        if (st == HX_OK && ftr && fflush(ftr) != 0)
            st = hx_error_set(HX_ERR_IO, __FILE__, __LINE__, __func__,
                              "writing the trajectory %s failed: %s", traj, strerror(errno));
    }
    if (st != HX_OK)
        rc_exit = fail_job(comm, st, flog);
done:
    hx_log_set_file(NULL);
    if (fen && fclose(fen) != 0)
        rc_exit = 1;
    if (ftr && fclose(ftr) != 0)
        rc_exit = 1;
    if (flog)
        fclose(flog);
    hx_md_destroy(&md);
    hx_system_destroy(&sys);
    hx_comm_destroy(&comm);
    return rc_exit;
}

static int run_md(int argc, char **argv)
{
    const char *conf = NULL, *out = "confout.gro", *model = "spce", *energy = NULL;
    const char *traj = NULL, *logpath = NULL, *thermostat = "no", *dd_text = NULL;
    int steps = 0, nstlist = 10, nstenergy = 100, nstxout = 0, seed = 1, threads = 0;
    double dt = 0.002, rc = 1.0, rlist = 0.0, eps_rf = 0.0, eps_r = 1.0, gen_vel = -1.0;
    double tau_t = 0.1, ref_t = 300.0, tol = 0.005;
    hx_opt opts[] = {
        {"c", "conf", HX_OPT_STRING, &conf, "FILE", "input configuration (.gro)"},
        {"o", "output", HX_OPT_STRING, &out, "FILE", "final configuration (.gro, with velocities)"},
        {"steps", NULL, HX_OPT_INT, &steps, "N", "number of steps (0: single-point energies)"},
        {"dt", NULL, HX_OPT_DOUBLE, &dt, "PS", "time step"},
        {"rc", NULL, HX_OPT_DOUBLE, &rc, "NM", "cut-off of LJ and reaction field"},
        {"rlist", NULL, HX_OPT_DOUBLE, &rlist, "NM", "pair-list radius (0: from --buffer-tol)"},
        {"buffer-tol", NULL, HX_OPT_DOUBLE, &tol, "KJ",
         "Verlet buffer tolerance, kJ/mol/ps per atom"},
        {"nstlist", NULL, HX_OPT_INT, &nstlist, "N", "steps between pair searches"},
        {"eps-rf", NULL, HX_OPT_DOUBLE, &eps_rf, "X", "reaction-field dielectric (0: infinity)"},
        {"eps-r", NULL, HX_OPT_DOUBLE, &eps_r, "X", "relative dielectric"},
        {"model", NULL, HX_OPT_STRING, &model, "NAME", "spce, spc, tip3p or argon"},
        {"gen-vel", NULL, HX_OPT_DOUBLE, &gen_vel, "K",
         "draw Maxwell-Boltzmann velocities at this temperature (<0: velocities of the input)"},
        {"seed", NULL, HX_OPT_INT, &seed, "S", "random seed (velocities, thermostat)"},
        {"thermostat", NULL, HX_OPT_STRING, &thermostat, "NAME", "no or v-rescale"},
        {"tau-t", NULL, HX_OPT_DOUBLE, &tau_t, "PS", "thermostat time constant"},
        {"ref-t", NULL, HX_OPT_DOUBLE, &ref_t, "K", "thermostat temperature"},
        {"energy", "e", HX_OPT_STRING, &energy, "FILE", "energies, one JSON object per line"},
        {"nstenergy", NULL, HX_OPT_INT, &nstenergy, "N", "steps between energy lines"},
        {"nstxout", NULL, HX_OPT_INT, &nstxout, "N", "steps between trajectory frames (0: none)"},
        {"x", "traj", HX_OPT_STRING, &traj, "FILE", "trajectory (multi-frame .gro)"},
        {"g", "log", HX_OPT_STRING, &logpath, "FILE", "log file (default md.log next to -o)"},
        {"threads", "nt", HX_OPT_INT, &threads, "N", "OpenMP threads per rank (0: all)"},
        {"dd", NULL, HX_OPT_STRING, &dd_text, "AxBxC",
         "domain grid (default: 1x1x1, or chosen for the MPI ranks)"},
    };
    const int nopts = (int)(sizeof opts / sizeof opts[0]);
    int pr = hx_cli_parse(&hx_cmd_md, opts, nopts, argc, argv);
    if (pr > 0)
        return 0;
    if (pr < 0)
        return 1;

    /* everything is checked before any output file is opened */
    if (!conf) {
        fprintf(stderr, "halox md: missing the input configuration: -c conf.gro\n");
        return 1;
    }
    hx_md_params p;
    hx_md_params_default(&p);
    p.dt = dt;
    p.steps = steps;
    p.rc = rc;
    p.rlist = rlist;
    p.verlet_buffer_tolerance = tol;
    p.nstlist = nstlist;
    p.eps_rf = eps_rf;
    p.eps_r = eps_r;
    p.model = model;
    p.gen_vel = gen_vel >= 0;
    p.gen_temp = gen_vel >= 0 ? gen_vel : 0.0;
    p.seed = (uint64_t)seed;
    p.tau_t = tau_t;
    p.ref_t = ref_t;
    p.nthreads = threads;
    if (strcmp(thermostat, "v-rescale") == 0)
        p.thermostat = HX_THERMOSTAT_VRESCALE;
    else if (strcmp(thermostat, "no") != 0 && strcmp(thermostat, "none") != 0) {
        fprintf(stderr, "halox md: unknown thermostat '%s': use no or v-rescale\n", thermostat);
        return 1;
    }
    if (steps < 0 || nstenergy < 0 || nstxout < 0 || threads < 0 || seed < 0) {
        fprintf(stderr,
                "halox md: --steps (%d), --nstenergy (%d), --nstxout (%d), --threads (%d) and "
                "--seed (%d) must be >= 0\n",
                steps, nstenergy, nstxout, threads, seed);
        return 1;
    }
    if (nstxout > 0 && !traj) {
        fprintf(stderr, "halox md: --nstxout %d needs a trajectory file: -x traj.gro\n", nstxout);
        return 1;
    }
    hx_status st = hx_md_params_check(&p, NULL);
    hx_forcefield *ff_check = NULL;
    if (st == HX_OK)
        st = hx_forcefield_create(model, &ff_check); /* an unknown model before any reading */
    hx_forcefield_destroy(&ff_check);
    if (st != HX_OK) {
        hx_cli_report_error("md", st);
        return 1;
    }
    int grid[3] = {0, 0, 0};
    if (dd_text && (st = hx_dd_parse_grid(dd_text, grid)) != HX_OK) {
        hx_cli_report_error("md", st);
        return 1;
    }
    int parallel = 0;
    if ((st = hx_mpi_init(&argc, &argv, &parallel)) != HX_OK) {
        hx_cli_report_error("md", st);
        return 1;
    }
    int rc_exit = run_md_job(&p, conf, out, energy, traj, logpath, nstenergy, nstxout, grid,
                             parallel, seed, tau_t, ref_t, rlist);
    hx_mpi_finalize();
    return rc_exit;
}
