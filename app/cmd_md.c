/* halox md: molecular dynamics on one domain or a domain decomposition over MPI ranks.
 *
 * Order of work: parse and check every option, start MPI, rank 0 reads the input (or the
 * checkpoint) and broadcasts it, build the engine, then open the outputs (existing ones are
 * backed up as #name.N#, as GROMACS does, so no good file is ever overwritten; a restart appends
 * instead), run, write the final configuration atomically. A failure is reported by the rank
 * where it happened and ends every rank. */
#include "commands.h"

#include "halox/checkpoint.h"
#include "halox/gpu.h"
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
#include <sys/stat.h>
#include <unistd.h>

static int run_md(int argc, char **argv);

const hx_cmd hx_cmd_md = {
    "md", "run molecular dynamics (CPU; domain-decomposed over MPI ranks)",
    "[mpirun -np N] halox md -c conf.gro [-o out.gro] --steps N [--dd AxBxC] [options]",
    "Leap-frog MD of rigid water (SETTLE) or argon with Lennard-Jones (potential shift) and\n"
    "reaction-field electrostatics in GROMACS Verlet-scheme conventions. The pair list of radius\n"
    "rlist is rebuilt every nstlist steps; without --rlist it is chosen from the buffer\n"
    "tolerance. --steps 0 prints the single-point energies. NVE unless --thermostat v-rescale.\n"
    "The same input, seed, ranks and --threads give bit-identical output.\n"
    "Under mpirun every rank holds one domain of an eighth-shell domain decomposition (grid\n"
    "from --dd, or chosen for the number of ranks) and halos move through the MPI backend;\n"
    "rank 0 writes all output, atoms in global order. Without mpirun, --dd AxBxC runs all\n"
    "A*B*C domains in this one process (the in-process reference decomposition).\n"
    "Outputs: existing files are kept as #name.N#; the final configuration is replaced\n"
    "atomically. Checkpoints (--checkpoint, every --nstcheckpoint steps and at the end) hold\n"
    "the full state; --restart FILE continues a run with the same options: --steps is then the\n"
    "total step count, energy and trajectory files are cut back to the checkpoint and appended.",
    run_md};

/* Everything the user asked for. */
typedef struct md_job {
    hx_md_params p;
    const char *conf, *out, *energy, *traj, *logpath, *ckpt, *restart;
    int nstenergy, nstxout, nstckpt, seed;
    double tau_t, ref_t, rlist_opt;
    int grid[3];
    long long total_steps;
    /* run time */
    hx_comm *comm;
    int root, nranks;
    FILE *flog, *fen, *ftr;
    char logbuf[4096];
    hx_ckpt_params cparams;
    long long last_ckpt_step;
} md_job;

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

/* GROMACS convention: an existing output file is renamed to #name.N# (first free N) before a
 * new run writes its own, so earlier results are never lost. */
static hx_status backup_existing(const char *path)
{
    struct stat sb;
    if (!path || stat(path, &sb) != 0)
        return HX_OK;
    const char *slash = strrchr(path, '/');
    int dirlen = slash ? (int)(slash - path + 1) : 0;
    char bak[4200];
    for (int k = 1; k < 100; k++) {
        snprintf(bak, sizeof bak, "%.*s#%s.%d#", dirlen, path, path + dirlen, k);
        if (stat(bak, &sb) != 0) {
            HX_CHECK(rename(path, bak) == 0, HX_ERR_IO, "cannot back up %s as %s: %s", path, bak,
                     strerror(errno));
            fprintf(stderr, "halox md: backed up %s to %s\n", path, bak);
            return HX_OK;
        }
    }
    HX_FAIL(HX_ERR_IO, "%s: 99 backups exist already; remove old #%s.N# files", path,
            path + dirlen);
}

/* ---- fault injection ------------------------------------------------------------------------ */

/* For the robustness tests: HALOX_FAULT_INJECT=MODE:RANK:STEP makes rank RANK fail at step
 * STEP: "kill" raises SIGKILL (a crashed node), "exit" leaves without any MPI call (a lost
 * rank), "error" returns an error from that rank only (a local failure the others do not know
 * about). Unset in normal runs. */
typedef struct fault {
    int active;
    char mode[16];
    int rank;
    long long step;
} fault;

static int parse_fault(fault *f)
{
    memset(f, 0, sizeof *f);
    const char *e = getenv("HALOX_FAULT_INJECT");
    if (!e || !*e)
        return 0;
    if (sscanf(e, "%15[a-z]:%d:%lld", f->mode, &f->rank, &f->step) != 3 ||
        (strcmp(f->mode, "kill") && strcmp(f->mode, "exit") && strcmp(f->mode, "error")))
        return -1;
    f->active = 1;
    return 1;
}

static hx_status fault_fire(const fault *f, int rank, long long step)
{
    if (!f->active || f->rank != rank || step != f->step)
        return HX_OK;
    fprintf(stderr, "[rank %d] fault injection: %s at step %lld\n", rank, f->mode, step);
    fflush(stderr);
    if (strcmp(f->mode, "kill") == 0)
        raise(SIGKILL);
    if (strcmp(f->mode, "exit") == 0)
        _exit(3);
    return hx_error_set(HX_ERR_INTERNAL, __FILE__, __LINE__, __func__,
                        "fault injected on rank %d at step %lld (HALOX_FAULT_INJECT)", rank, step);
}

/* ---- checkpoints ---------------------------------------------------------------------------- */

static long long file_size(FILE *f)
{
    if (!f)
        return -1;
    fflush(f);
    long pos = ftell(f);
    return pos < 0 ? -1 : pos;
}

/* Collective: gather the state, rank 0 writes it. */
static hx_status write_checkpoint(md_job *job, hx_md *md)
{
    HX_TRY(hx_md_gather(md));
    if (!job->root)
        return HX_OK;
    hx_checkpoint c;
    memset(&c, 0, sizeof c);
    c.step = hx_md_current_step(md);
    c.sys = (hx_system *)hx_md_system(md);
    hx_md_get_rng_state(md, c.rng_state);
    c.rlist = hx_md_get_params(md)->rlist;
    c.nranks = job->nranks;
    c.nthreads = hx_md_get_params(md)->nthreads;
    c.params = job->cparams;
    c.energy_bytes = file_size(job->fen);
    c.traj_bytes = file_size(job->ftr);
    if (job->energy)
        snprintf(c.energy_path, sizeof c.energy_path, "%s", job->energy);
    if (job->traj)
        snprintf(c.traj_path, sizeof c.traj_path, "%s", job->traj);
    if (job->fen && fsync(fileno(job->fen)) != 0)
        HX_FAIL(HX_ERR_IO, "flushing %s to disk failed: %s", job->energy, strerror(errno));
    if (job->ftr && fsync(fileno(job->ftr)) != 0)
        HX_FAIL(HX_ERR_IO, "flushing %s to disk failed: %s", job->traj, strerror(errno));
    HX_TRY(hx_checkpoint_write(job->ckpt, &c));
    job->last_ckpt_step = c.step;
    if (job->flog)
        fprintf(job->flog, "checkpoint at step %lld written to %s\n", c.step, job->ckpt);
    return HX_OK;
}

typedef struct hook_ctx {
    md_job *job;
    fault flt;
    long long start;
} hook_ctx;

static hx_status step_hook(void *user, hx_md *md, long long step)
{
    hook_ctx *h = user;
    HX_TRY(fault_fire(&h->flt, hx_comm_rank(h->job->comm), step));
    if (h->job->ckpt && h->job->nstckpt > 0 && step % h->job->nstckpt == 0 && step != h->start)
        HX_TRY(write_checkpoint(h->job, md));
    return HX_OK;
}

/* ---- reporting --------------------------------------------------------------------------------
 */

/* Report a failure once: the rank where it happened prints it; ranks that only learnt of it
 * (HX_ERR_REMOTE) stay quiet. In a parallel run every rank then ends the job, so that no rank
 * can be left waiting for a message that never comes. */
static int fail_job(md_job *job, hx_status st)
{
    hx_comm *comm = job->comm;
    if (st != HX_ERR_REMOTE) {
        if (comm && hx_comm_nranks(comm) > 1)
            fprintf(stderr, "[rank %d] ", hx_comm_rank(comm));
        hx_cli_report_error("md", st);
        if (job->flog)
            fprintf(job->flog, "error: %s\n", hx_last_error_message());
    }
    if (job->flog)
        fflush(job->flog);
    fflush(stderr);
    if (comm && hx_comm_nranks(comm) > 1)
        hx_comm_abort(comm, 1);
    return 1;
}

static void write_log_header(const md_job *job, const hx_md *md, long long start)
{
    FILE *flog = job->flog;
    const hx_md_params *rp = hx_md_get_params(md);
    if (job->restart)
        fprintf(flog, "\nhalox md: restart from %s at step %lld\n", job->restart, start);
    else
        fprintf(flog, "halox md\n");
    fprintf(flog, "parameters:\n");
    fprintf(flog, "  conf %s\n  output %s\n  model %s\n  steps %lld (from step %lld)\n  dt %g ps\n",
            job->conf ? job->conf : job->restart, job->out, rp->model, rp->steps, start, rp->dt);
    fprintf(flog, "  rc %g nm\n  rlist %.4f nm%s\n  nstlist %d\n  eps_rf %g%s\n  eps_r %g\n",
            rp->rc, rp->rlist, job->rlist_opt > 0 ? "" : " (from the buffer tolerance)",
            rp->nstlist, rp->eps_rf, rp->eps_rf == 0 ? " (infinity)" : "", rp->eps_r);
    fprintf(flog, "  buffer tolerance %g kJ/mol/ps/atom\n", rp->verlet_buffer_tolerance);
    fprintf(flog, "  missed-pair check every %d pair searches%s\n", rp->nstcheck,
            rp->nstcheck == 0 ? " (off)" : "");
    fprintf(flog, "  non-bonded precision %s\n",
            rp->nb_precision == HX_NB_MIXED ? "mixed" : "double");
    fprintf(flog, "  backend %s, halo exchange %s\n", rp->backend ? rp->backend : "cpu",
            rp->halo ? rp->halo : "host");
    if (rp->backend && strcmp(rp->backend, "gpu") == 0) {
        hx_gpu_info gi;
        int dev = 0;
        char line[512] = "";
        if (hx_gpu_current_device(&dev) == HX_OK && hx_gpu_get_info(dev, &gi) == HX_OK)
            hx_gpu_describe(&gi, line, (int)sizeof line);
        fprintf(flog, "  GPU %d: %s\n", dev, line);
    }
    if (job->restart)
        fprintf(flog, "  velocities from the checkpoint");
    else
        fprintf(flog, "  velocities %s", job->p.gen_vel ? "generated" : "from the input");
    if (job->p.gen_vel && !job->restart)
        fprintf(flog, " at %g K, seed %d", job->p.gen_temp, job->seed);
    fprintf(flog, "\n  thermostat %s", job->p.thermostat ? "v-rescale" : "none (NVE)");
    if (job->p.thermostat)
        fprintf(flog, " tau_t %g ps ref_t %g K seed %d", job->tau_t, job->ref_t, job->seed);
    fprintf(flog,
            "\n  MPI ranks %d, threads per rank %d\n  energy %s every %d\n"
            "  trajectory %s every %d\n  checkpoint %s every %d\n",
            job->nranks, rp->nthreads, job->energy ? job->energy : "-", job->nstenergy,
            job->traj ? job->traj : "-", job->nstxout, job->ckpt ? job->ckpt : "-", job->nstckpt);
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

static void write_log_footer(const md_job *job, const hx_md *md)
{
    FILE *flog = job->flog;
    const hx_md_energies *e = hx_md_last_energies(md);
    const hx_md_params *rp = hx_md_get_params(md);
    const hx_system *s = hx_md_system(md);
    hx_md_timings t;
    hx_md_get_timings(md, &t);
    double other = t.total - t.nb_local - t.nb_nonlocal - t.halo_x - t.halo_f - t.search -
                   t.update - t.reduce - t.output;
    fprintf(flog,
            "final energies step %lld: lj %.6f coulomb %.6f potential %.6f kinetic "
            "%.6f total %.6f T %.3f K\n",
            e->step, e->lj, e->coulomb, e->potential, e->kinetic, e->total, e->temperature);
    if (t.missed_pairs >= 0)
        fprintf(flog, "pair searches %lld, %lld checked for missed pairs: %lld missed in total%s\n",
                t.searches, t.checked_searches, t.missed_pairs,
                t.missed_pairs > 0 && job->rlist_opt <= 0
                    ? " (rlist is from the buffer tolerance, which bounds the drift they cause)"
                    : "");
    else
        fprintf(flog, "repartitions/pair searches %lld (missed-pair check: single domain only)\n",
                t.searches);
    fprintf(flog, "\ntiming (rank 0)        seconds      %%\n");
    double tot = t.total > 0 ? t.total : 1.0;
    const char *names[] = {"non-bonded local", "halo exchange x", "non-bonded non-local",
                           "halo exchange f",  "constr/update",   "repartition+search",
                           "reductions",       "output",          "other"};
    double vals[] = {t.nb_local, t.halo_x, t.nb_nonlocal, t.halo_f, t.update,
                     t.search,   t.reduce, t.output,      other};
    for (int i = 0; i < 9; i++)
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

/* ---- the job -------------------------------------------------------------------------------- */

/* Rank 0: read the input or the checkpoint; everybody: agree, receive the system and, for a
 * restart, the state to continue from. */
static hx_status load_input(md_job *job, hx_system **sys)
{
    hx_status st = HX_OK;
    hx_checkpoint *ck = NULL;
    struct {
        long long step;
        double rlist;
        uint64_t rng[4];
        long long energy_bytes, traj_bytes;
    } cont;
    memset(&cont, 0, sizeof cont);
    if (job->root) {
        if (job->restart) {
            st = hx_checkpoint_read(job->restart, &ck);
            if (st == HX_OK) {
                hx_ckpt_params now;
                hx_ckpt_params_from_md(&job->p, job->rlist_opt, ck->sys->natoms, &now);
                st = hx_ckpt_params_compare(&ck->params, &now, job->restart);
            }
            if (st == HX_OK && ck->step >= job->total_steps)
                st = hx_error_set(HX_ERR_INVALID_ARG, __FILE__, __LINE__, __func__,
                                  "%s is at step %lld, not before --steps %lld: nothing to do; "
                                  "--steps is the total step count of the continued run",
                                  job->restart, ck->step, job->total_steps);
            if (st == HX_OK && ck->nranks != job->nranks)
                hx_log(HX_LOG_WARN,
                       "%s was written with %d ranks, this run has %d: the continuation is "
                       "exact physics but not bit-identical to an uninterrupted run",
                       job->restart, ck->nranks, job->nranks);
            if (st == HX_OK) {
                cont.step = ck->step;
                cont.rlist = ck->rlist;
                memcpy(cont.rng, ck->rng_state, sizeof cont.rng);
                cont.energy_bytes = ck->energy_bytes;
                cont.traj_bytes = ck->traj_bytes;
                *sys = ck->sys;
                ck->sys = NULL;
                /* outputs: cut back to the checkpoint and append, if they are the ones the
                 * checkpoint recorded; other names start new files */
                if (job->energy && strcmp(job->energy, ck->energy_path) != 0)
                    cont.energy_bytes = -2;
                if (job->traj && strcmp(job->traj, ck->traj_path) != 0)
                    cont.traj_bytes = -2;
            }
            hx_checkpoint_destroy(&ck);
        } else {
            st = hx_gro_read(job->conf, sys);
        }
    }
    HX_TRY(hx_comm_agree(job->comm, st));
    HX_TRY(hx_system_bcast(job->comm, sys));
    if (job->restart) {
        HX_TRY(hx_comm_bcast_bytes(job->comm, &cont, sizeof cont));
        job->p.continuation = 1;
        job->p.start_step = cont.step;
        job->p.rlist = cont.rlist;
        job->p.has_rng_state = 1;
        memcpy(job->p.rng_state, cont.rng, sizeof cont.rng);
        job->p.gen_vel = 0;
        job->p.steps = job->total_steps - cont.step;
        if (job->root) {
            if (job->energy && cont.energy_bytes >= 0 && truncate(job->energy, cont.energy_bytes))
                st = hx_error_set(HX_ERR_IO, __FILE__, __LINE__, __func__,
                                  "cannot cut %s back to the checkpoint (%lld bytes): %s",
                                  job->energy, cont.energy_bytes, strerror(errno));
            if (st == HX_OK && job->traj && cont.traj_bytes >= 0 &&
                truncate(job->traj, cont.traj_bytes))
                st = hx_error_set(HX_ERR_IO, __FILE__, __LINE__, __func__,
                                  "cannot cut %s back to the checkpoint (%lld bytes): %s",
                                  job->traj, cont.traj_bytes, strerror(errno));
        }
        HX_TRY(hx_comm_agree(job->comm, st));
    }
    return HX_OK;
}

static hx_status open_outputs(md_job *job)
{
    if (!job->root)
        return HX_OK;
    const char *mode = job->restart ? "a" : "w";
    if (!job->restart) {
        HX_TRY(backup_existing(job->logpath));
        HX_TRY(backup_existing(job->energy));
        if (job->nstxout > 0)
            HX_TRY(backup_existing(job->traj));
    }
    job->flog = fopen(job->logpath, mode);
    HX_CHECK(job->flog, HX_ERR_IO, "cannot open the log %s: %s", job->logpath, strerror(errno));
    if (job->energy) {
        job->fen = fopen(job->energy, mode);
        HX_CHECK(job->fen, HX_ERR_IO, "cannot open the energy file %s: %s", job->energy,
                 strerror(errno));
    }
    if (job->traj && job->nstxout > 0) {
        job->ftr = fopen(job->traj, mode);
        HX_CHECK(job->ftr, HX_ERR_IO, "cannot open the trajectory %s: %s", job->traj,
                 strerror(errno));
    }
    return HX_OK;
}

static int run_job(md_job *job, int parallel)
{
    hx_system *sys = NULL;
    hx_md *md = NULL;
    hx_status st;
    int ngrid = job->grid[0] > 0 ? job->grid[0] * job->grid[1] * job->grid[2] : 1;
    st = parallel ? hx_comm_create_world(&job->comm) : hx_comm_create_serial(ngrid, &job->comm);
    if (st != HX_OK)
        return fail_job(job, st);
    job->root = hx_comm_rank(job->comm) == 0;
    job->nranks = hx_comm_nranks(job->comm);
    hx_log_set_rank(hx_comm_rank(job->comm), job->nranks);
    int rc_exit = 0;
    if (parallel && job->grid[0] > 0 && ngrid != job->nranks) {
        if (job->root)
            fprintf(stderr,
                    "halox md: error: the domain grid --dd %dx%dx%d has %d domains but the job "
                    "has %d MPI ranks: give a grid whose product is %d, or leave --dd out to "
                    "choose one\n",
                    job->grid[0], job->grid[1], job->grid[2], ngrid, job->nranks, job->nranks);
        rc_exit = 1;
        goto done;
    }
    if (job->p.nthreads == 0 && job->nranks > 1) {
        /* ranks share the node's cores: do not oversubscribe them with threads */
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        job->p.nthreads = ncpu > job->nranks ? (int)(ncpu / job->nranks) : 1;
    }
    hook_ctx hook = {job, {0}, 0};
    if (parse_fault(&hook.flt) < 0) {
        if (job->root)
            fprintf(stderr, "halox md: error: HALOX_FAULT_INJECT must be MODE:RANK:STEP with "
                            "MODE kill, exit or error\n");
        rc_exit = 1;
        goto done;
    }
    if (job->p.backend && strcmp(job->p.backend, "gpu") == 0) {
        /* one GPU per rank of the node (ranks placed consecutively on a node) */
        int dev = -1;
        st = hx_gpu_select_for_rank(hx_comm_rank(job->comm), &dev);
        if (st != HX_OK) {
            rc_exit = fail_job(job, st);
            goto done;
        }
    }
    if ((st = load_input(job, &sys)) == HX_OK) {
        st = hx_md_create_dd(sys, &job->p, job->comm, job->grid[0] > 0 ? job->grid : NULL, &md);
        if (st == HX_ERR_INPUT) {
            /* the force field names atoms by their number in the input: say which input (in a
             * .gro file atom N is on line N + 2) */
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", hx_last_error_message());
            st = hx_error_set(st, __FILE__, __LINE__, __func__, "%s: %s (atom N is on line N+2)",
                              job->conf ? job->conf : job->restart, msg);
        }
    }
    if (st != HX_OK) {
        rc_exit = fail_job(job, st);
        goto done;
    }
    /* what a later restart must match: the user's options, not the resolved values */
    hx_ckpt_params_from_md(&job->p, job->rlist_opt, sys->natoms, &job->cparams);
    st = hx_comm_agree(job->comm, open_outputs(job));
    if (st != HX_OK) {
        rc_exit = fail_job(job, st);
        goto done;
    }
    hook.start = hx_md_current_step(md);
    if (job->root) {
        hx_log_set_file(job->flog);
        write_log_header(job, md, hook.start);
    }
    hx_md_output o = {
        job->fen, job->nstenergy, job->ftr, job->nstxout, job->root ? progress : NULL, NULL,
        5.0,      step_hook};
    o.user = &hook;
    st = hx_md_run(md, &o);
    if (st == HX_OK && job->ckpt && job->last_ckpt_step != hx_md_current_step(md))
        st = write_checkpoint(job, md);
    if (st == HX_OK)
        st = hx_md_gather(md);
    if (st == HX_OK && job->root) {
        const hx_md_energies *e = hx_md_last_energies(md);
        if (job->p.steps == 0 && !job->restart)
            printf("single-point energies (kJ/mol):\n  lj        %.8f\n  coulomb   %.8f\n"
                   "  potential %.8f\n  kinetic   %.8f\n  total     %.8f\n  temperature %.4f K\n",
                   e->lj, e->coulomb, e->potential, e->kinetic, e->total, e->temperature);
        st = hx_gro_write(job->out, hx_md_system(md), 1);
        if (st == HX_OK)
            write_log_footer(job, md);
        if (st == HX_OK && job->fen && fflush(job->fen) != 0)
            st =
                hx_error_set(HX_ERR_IO, __FILE__, __LINE__, __func__,
                             "writing the energy file %s failed: %s", job->energy, strerror(errno));
        if (st == HX_OK && job->ftr && fflush(job->ftr) != 0)
            st = hx_error_set(HX_ERR_IO, __FILE__, __LINE__, __func__,
                              "writing the trajectory %s failed: %s", job->traj, strerror(errno));
    }
    if (st != HX_OK)
        rc_exit = fail_job(job, st);
done:
    hx_log_set_file(NULL);
    if (job->fen && fclose(job->fen) != 0)
        rc_exit = 1;
    if (job->ftr && fclose(job->ftr) != 0)
        rc_exit = 1;
    if (job->flog)
        fclose(job->flog);
    hx_md_destroy(&md);
    hx_system_destroy(&sys);
    hx_comm_destroy(&job->comm);
    return rc_exit;
}

static int run_md(int argc, char **argv)
{
    md_job job;
    memset(&job, 0, sizeof job);
    job.last_ckpt_step = -1;
    const char *model = "spce", *thermostat = "no", *dd_text = NULL, *precision = "double";
    const char *halo = NULL;
    int use_gpu = 0;
    job.out = "confout.gro";
    int steps = 0, nstlist = 10, nstcheck = 10, threads = 0;
    job.nstenergy = 100;
    job.seed = 1;
    double dt = 0.002, rc = 1.0, eps_rf = 0.0, eps_r = 1.0, gen_vel = -1.0, tol = 0.005;
    job.tau_t = 0.1;
    job.ref_t = 300.0;
    hx_opt opts[] = {
        {"c", "conf", HX_OPT_STRING, &job.conf, "FILE", "input configuration (.gro)"},
        {"o", "output", HX_OPT_STRING, &job.out, "FILE",
         "final configuration (.gro, with velocities)"},
        {"steps", NULL, HX_OPT_INT, &steps, "N",
         "number of steps (0: single-point energies; with --restart: the total)"},
        {"dt", NULL, HX_OPT_DOUBLE, &dt, "PS", "time step"},
        {"rc", NULL, HX_OPT_DOUBLE, &rc, "NM", "cut-off of LJ and reaction field"},
        {"rlist", NULL, HX_OPT_DOUBLE, &job.rlist_opt, "NM",
         "pair-list radius (0: from --buffer-tol)"},
        {"buffer-tol", NULL, HX_OPT_DOUBLE, &tol, "KJ",
         "Verlet buffer tolerance, kJ/mol/ps per atom"},
        {"nstlist", NULL, HX_OPT_INT, &nstlist, "N", "steps between pair searches"},
        {"check-pairs", NULL, HX_OPT_INT, &nstcheck, "N",
         "count missed pairs at every N-th pair search (1: all, 0: never; one domain only)"},
        {"eps-rf", NULL, HX_OPT_DOUBLE, &eps_rf, "X", "reaction-field dielectric (0: infinity)"},
        {"eps-r", NULL, HX_OPT_DOUBLE, &eps_r, "X", "relative dielectric"},
        {"model", NULL, HX_OPT_STRING, &model, "NAME", "spce, spc, tip3p or argon"},
        {"gen-vel", NULL, HX_OPT_DOUBLE, &gen_vel, "K",
         "draw Maxwell-Boltzmann velocities at this temperature (<0: velocities of the input)"},
        {"seed", NULL, HX_OPT_INT, &job.seed, "S", "random seed (velocities, thermostat)"},
        {"thermostat", NULL, HX_OPT_STRING, &thermostat, "NAME", "no or v-rescale"},
        {"tau-t", NULL, HX_OPT_DOUBLE, &job.tau_t, "PS", "thermostat time constant"},
        {"ref-t", NULL, HX_OPT_DOUBLE, &job.ref_t, "K", "thermostat temperature"},
        {"energy", "e", HX_OPT_STRING, &job.energy, "FILE", "energies, one JSON object per line"},
        {"nstenergy", NULL, HX_OPT_INT, &job.nstenergy, "N", "steps between energy lines"},
        {"nstxout", NULL, HX_OPT_INT, &job.nstxout, "N",
         "steps between trajectory frames (0: none)"},
        {"x", "traj", HX_OPT_STRING, &job.traj, "FILE", "trajectory (multi-frame .gro)"},
        {"g", "log", HX_OPT_STRING, &job.logpath, "FILE", "log file (default md.log next to -o)"},
        {"threads", "nt", HX_OPT_INT, &threads, "N", "OpenMP threads per rank (0: all)"},
        {"precision", NULL, HX_OPT_STRING, &precision, "P",
         "non-bonded arithmetic: double, or mixed (float pair forces, double sums; faster)"},
        {"gpu", NULL, HX_OPT_FLAG, &use_gpu, NULL,
         "run the step on the GPU (non-bonded, pair search, update; one GPU per rank)"},
        {"halo", NULL, HX_OPT_STRING, &halo, "NAME",
         "halo-exchange backend (default: host on the CPU, nvshmem with --gpu)"},
        {"dd", NULL, HX_OPT_STRING, &dd_text, "AxBxC",
         "domain grid (default: 1x1x1, or chosen for the MPI ranks)"},
        {"checkpoint", "cpo", HX_OPT_STRING, &job.ckpt, "FILE",
         "write checkpoints to FILE (the previous one is kept as FILE.prev)"},
        {"nstcheckpoint", NULL, HX_OPT_INT, &job.nstckpt, "N",
         "steps between checkpoints, a multiple of --nstlist (0: only at the end)"},
        {"restart", "cpi", HX_OPT_STRING, &job.restart, "FILE",
         "continue the run saved in this checkpoint (same options as the original run)"},
    };
    const int nopts = (int)(sizeof opts / sizeof opts[0]);
    int pr = hx_cli_parse(&hx_cmd_md, opts, nopts, argc, argv);
    if (pr > 0)
        return 0;
    if (pr < 0)
        return 1;

    /* everything is checked before any file is touched */
    if (!job.conf && !job.restart) {
        fprintf(stderr, "halox md: missing the input configuration: -c conf.gro (or --restart "
                        "checkpoint)\n");
        return 1;
    }
    hx_md_params *p = &job.p;
    hx_md_params_default(p);
    p->dt = dt;
    p->steps = steps;
    p->rc = rc;
    p->rlist = job.rlist_opt;
    p->verlet_buffer_tolerance = tol;
    p->nstlist = nstlist;
    p->nstcheck = nstcheck;
    p->eps_rf = eps_rf;
    p->eps_r = eps_r;
    p->model = model;
    p->gen_vel = gen_vel >= 0;
    p->gen_temp = gen_vel >= 0 ? gen_vel : 0.0;
    p->seed = (uint64_t)job.seed;
    p->tau_t = job.tau_t;
    p->ref_t = job.ref_t;
    p->nthreads = threads;
    p->backend = use_gpu ? "gpu" : NULL;
    p->halo = halo;
    job.total_steps = steps;
    if (strcmp(precision, "mixed") == 0)
        p->nb_precision = HX_NB_MIXED;
    else if (strcmp(precision, "double") != 0) {
        fprintf(stderr, "halox md: unknown precision '%s': use double or mixed\n", precision);
        return 1;
    }
    if (strcmp(thermostat, "v-rescale") == 0)
        p->thermostat = HX_THERMOSTAT_VRESCALE;
    else if (strcmp(thermostat, "no") != 0 && strcmp(thermostat, "none") != 0) {
        fprintf(stderr, "halox md: unknown thermostat '%s': use no or v-rescale\n", thermostat);
        return 1;
    }
    if (steps < 0 || job.nstenergy < 0 || job.nstxout < 0 || threads < 0 || job.seed < 0 ||
        job.nstckpt < 0) {
        fprintf(stderr,
                "halox md: --steps (%d), --nstenergy (%d), --nstxout (%d), --threads (%d), "
                "--seed (%d) and --nstcheckpoint (%d) must be >= 0\n",
                steps, job.nstenergy, job.nstxout, threads, job.seed, job.nstckpt);
        return 1;
    }
    if (job.nstxout > 0 && !job.traj) {
        fprintf(stderr, "halox md: --nstxout %d needs a trajectory file: -x traj.gro\n",
                job.nstxout);
        return 1;
    }
    if (job.nstckpt > 0 && !job.ckpt) {
        fprintf(stderr, "halox md: --nstcheckpoint %d needs a file: --checkpoint state.cpt\n",
                job.nstckpt);
        return 1;
    }
    if (job.nstckpt > 0 && nstlist > 0 && job.nstckpt % nstlist != 0) {
        fprintf(stderr,
                "halox md: --nstcheckpoint %d must be a multiple of --nstlist %d: a restart "
                "resumes at a repartition, so that it continues the run bit for bit\n",
                job.nstckpt, nstlist);
        return 1;
    }
    hx_status st = hx_md_params_check(p, NULL);
    hx_forcefield *ff_check = NULL;
    if (st == HX_OK)
        st = hx_forcefield_create(model, &ff_check); /* an unknown model before any reading */
    hx_forcefield_destroy(&ff_check);
    if (st == HX_OK && dd_text)
        st = hx_dd_parse_grid(dd_text, job.grid);
    if (st != HX_OK) {
        hx_cli_report_error("md", st);
        return 1;
    }
    if (!job.logpath) {
        default_log_path(job.out, job.logbuf, sizeof job.logbuf);
        job.logpath = job.logbuf;
    }
    int parallel = 0;
    if ((st = hx_mpi_init(&argc, &argv, &parallel)) != HX_OK) {
        hx_cli_report_error("md", st);
        return 1;
    }
    int rc_exit = run_job(&job, parallel);
    hx_mpi_finalize();
    return rc_exit;
}
