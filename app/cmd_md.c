/* halox md: molecular dynamics on one domain or a domain decomposition over MPI ranks.
 *
 * Order of work: parse and check every option (a GROMACS .mdp file first, the command line over
 * it), start MPI; rank 0 checks every output path and locks the outputs (a typo or a second run
 * on the same files fails in a second, not after hours), reads the input (or the checkpoint)
 * and broadcasts it; build the engine; open the outputs (existing regular files are backed up as
 * #name.N#, as GROMACS does, so no good file is ever overwritten; a restart appends to the files
 * its checkpoint recorded instead; devices and FIFOs are written through); run; write the final
 * configuration atomically, the log's summary and the performance line. SIGINT/SIGTERM stop the
 * run at a step boundary with all of that done (a second signal ends it at once). A failure is
 * reported by the rank where it happened and ends every rank. */
#include "commands.h"
#include "md_report.h"
#include "runinfo.h"
#include "signals.h"

#include "halox/checkpoint.h"
#include "halox/gpu.h"
#include "halox/comm.h"
#include "halox/halo.h"
#include "halox/io.h"
#include "halox/log.h"
#include "halox/md.h"
#include "halox/version.h"
#include "halox/error.h"
#include "halox/timer.h"
#include "halox/files.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static int run_md(int argc, char **argv);

const hx_cmd hx_cmd_md = {
    "md", "run molecular dynamics (CPU or --gpu; domain-decomposed over MPI ranks)",
    "[mpirun -np N] halox md -c conf.gro [-f run.mdp] [-o out.gro] --steps N [--dd AxBxC] "
    "[options]",
    "Leap-frog MD of rigid water (SETTLE), argon, or ethanol in water (--model oplsaa: OPLS-AA\n"
    "with bonds, angles, dihedrals, 1-4 pairs, SHAKE on the bonds to hydrogen) with\n"
    "Lennard-Jones (potential shift) and reaction-field electrostatics in GROMACS Verlet-scheme\n"
    "conventions. The pair list of radius\n"
    "rlist is rebuilt every nstlist steps; without --rlist it is chosen from the buffer\n"
    "tolerance. nstlist is 10 unless given (--nstlist, or nstlist in the .mdp); with --gpu it\n"
    "is then chosen as GROMACS's mdrun chooses it on GPUs: the longest interval whose outer\n"
    "list (rlist from the buffer tolerance) stays within 1.5x the nstlist-10 list on one\n"
    "domain (25 for water at 300 K), the lowest modelled cost per step on a decomposition\n"
    "(up to 300; 100 for water, whose search step runs on the device), with the rolling prune\n"
    "keeping the computed list short; the\n"
    "log and stderr say 'nstlist 10 -> N, rlist X -> Y nm' (docs/mdp.md).\n"
    "--steps 0 prints the single-point energies. NVE unless --thermostat v-rescale\n"
    "(the log and the energy file then also give the conserved energy: the total minus the\n"
    "thermostat's work). The log has the energies every --nstlog steps, as GROMACS's does.\n"
    "Parameters may come from a GROMACS .mdp file (-f; the keys halox supports, see\n"
    "docs/mdp.md); options given on the command line override it.\n"
    "The same input, seed, ranks and --threads give bit-identical output.\n"
    "Under mpirun every rank holds one domain of an eighth-shell domain decomposition (grid\n"
    "from --dd, or chosen for the number of ranks) and halos move through the MPI backend\n"
    "(with --gpu: between the GPUs, nvshmem unless --halo says otherwise);\n"
    "rank 0 writes all output, atoms in global order. Without mpirun, --dd AxBxC runs all\n"
    "A*B*C domains in this one process (the in-process reference decomposition).\n"
    "Outputs are checked and locked before the run; existing files are kept as #name.N# (-o\n"
    "the same as -c keeps the input so); devices and FIFOs (-e /dev/null) are written through;\n"
    "the final configuration is replaced atomically. Checkpoints (--checkpoint, every\n"
    "--nstcheckpoint steps and at the end) hold the full state; --restart FILE continues a run\n"
    "with the same options: --steps is then the total step count, and the energy and\n"
    "trajectory files the checkpoint recorded (the same files, however they are spelled) are\n"
    "cut back to it and appended. SIGINT/SIGTERM (Ctrl-C, a batch system's stop) end the run at\n"
    "the next step (with a checkpoint or several ranks: the next pair-search step) with every\n"
    "output complete and a checkpoint written; exit status 128+signal; a second signal ends it\n"
    "at once.",
    run_md};

#define HX_LOG_BUFFER (1 << 20)
/* --gen-vel not given (any negative value given is an error) */
#define GEN_VEL_NONE (-1e300)

/* The outputs, in the order they are checked, locked and named in messages. */
enum { OUT_CONF, OUT_LOG, OUT_ENERGY, OUT_TRAJ, OUT_CKPT, NOUT };

/* Everything the user asked for. */
typedef struct md_job {
    hx_md_params p;
    const char *conf, *out, *energy, *traj, *logpath, *ckpt, *restart, *mdp;
    int nstenergy, nstxout, nstckpt, nstlog, seed;
    double tau_t, ref_t, rlist_opt;
    int grid[3];
    long long total_steps;
    char cmdline[4096];
    int gpu_ids[64], ngpu_ids; /* --gpu-id: CUDA device indices (0: none given) */
    /* run time */
    hx_comm *comm;
    hx_comm *ctl;        /* a parallel run: the job's own, for its last agreement only (end_run) */
    hx_gpu_context *gpu; /* --gpu: the device of this rank and its streams */
    int root, nranks;
    FILE *flog, *fen, *ftr;
    char logbuf[4096];
    char *flog_buf;        /* the log's stdio buffer (HX_LOG_BUFFER bytes) */
    char mdp_ignored[512]; /* keys of the .mdp that were ignored, for the log */
    hx_ckpt_params cparams;
    long long last_ckpt_step;
    hx_lock *locks[NOUT];
    int out_is_input;         /* -o is the input configuration: keep a backup before replacing */
    int energy_new, traj_new; /* 1: the file starts here (new run, or a restart's new file) */
    int no_velocities;        /* the input has none and none are generated: starts from rest */
    hx_app_estats estats;     /* rank 0: energy frames of this run */
    /* rank 0: sizes of the energy file and trajectory when step `at_step` began, before its
     * energy line and frame: what a checkpoint of that step records, since the continued run
     * writes that step's line and frame again */
    long long at_step, energy_at, traj_at;
    int nstlist_restart; /* the interval is the checkpoint's (a restart without --nstlist) */
} md_job;

static void progress(void *user, long long step, long long nsteps, double ns_per_day,
                     double seconds_left)
{
    (void)user;
    char when[64];
    hx_app_clock_after(seconds_left, when, sizeof when);
    fprintf(stderr, "step %lld of %lld, %.3f ns/day, finishes %s\n", step, nsteps, ns_per_day,
            when);
}

static void default_log_path(const char *out, char *buf, size_t cap)
{
    const char *slash = strrchr(out, '/');
    /* next to -o, unless -o is a device or FIFO: -o /dev/null must not put md.log into /dev */
    if (!slash || hx_path_kind_of(out) == HX_PATH_SPECIAL)
        snprintf(buf, cap, "md.log");
    else
        snprintf(buf, cap, "%.*s/md.log", (int)(slash - out), out);
}

/* ---- outputs: checked and locked before the run, backed up, opened -------------------------- */

typedef struct out_spec {
    const char *path, *what;
    int used;
} out_spec;

static void output_specs(const md_job *job, out_spec s[NOUT])
{
    s[OUT_CONF] = (out_spec){job->out, "the final configuration (-o)", 1};
    s[OUT_LOG] = (out_spec){job->logpath, "the log (-g)", 1};
    s[OUT_ENERGY] = (out_spec){job->energy, "the energy file (-e)", job->energy != NULL};
    s[OUT_TRAJ] = (out_spec){job->traj, "the trajectory (-x)", job->traj && job->nstxout > 0};
    s[OUT_CKPT] = (out_spec){job->ckpt, "the checkpoint (--checkpoint)", job->ckpt != NULL};
}

/* Rank 0, before anything is read: every output can be written, no two outputs are the same
 * file, no output is the input (except -o, whose input is then kept as a backup, and the
 * checkpoint a restart continues), and no other run writes any of them (locks held to the
 * end). */
static hx_status check_outputs(md_job *job)
{
    out_spec s[NOUT];
    output_specs(job, s);
    static char canon[NOUT][PATH_MAX];
    for (int k = 0; k < NOUT; k++) {
        canon[k][0] = '\0';
        if (!s[k].used)
            continue;
        HX_TRY(hx_output_check(s[k].path, s[k].what));
        /* devices may be shared: -e /dev/null -x /dev/null is fine */
        if (hx_path_kind_of(s[k].path) != HX_PATH_SPECIAL)
            HX_TRY(hx_path_canonical(s[k].path, canon[k], sizeof canon[k]));
    }
    for (int a = 0; a < NOUT; a++)
        for (int b = a + 1; b < NOUT; b++)
            HX_CHECK(!canon[a][0] || strcmp(canon[a], canon[b]) != 0, HX_ERR_INVALID_ARG,
                     "%s and %s are the same file (%s): give them different names", s[a].what,
                     s[b].what, canon[a]);
    /* every input against every output: the configuration, the parameter file and the
     * checkpoint a restart continues */
    enum { IN_CONF, IN_MDP, IN_RESTART, NIN };
    const char *in_path[NIN] = {job->conf, job->mdp, job->restart};
    const char *in_what[NIN] = {"the input configuration (-c)", "the parameter file (-f)",
                                "the checkpoint to continue (--restart)"};
    for (int k = 0; k < NOUT; k++)
        for (int i = 0; i < NIN; i++) {
            if (!s[k].used || !in_path[i] || !hx_path_same_file(s[k].path, in_path[i]))
                continue;
            if (k == OUT_CONF && i == IN_CONF) {
                job->out_is_input = 1; /* kept as #name.N# before it is replaced */
                continue;
            }
            if (k == OUT_CKPT && i == IN_RESTART)
                continue; /* the usual way: continue and keep checkpointing into the same file */
            HX_FAIL(HX_ERR_INVALID_ARG,
                    "%s %s is %s %s: this run would overwrite what it reads; choose another name",
                    s[k].what, s[k].path, in_what[i], in_path[i]);
        }
    char host[256], now[64], info[8192];
    hx_app_hostname(host, sizeof host);
    hx_app_now(now, sizeof now);
    snprintf(info, sizeof info, "pid %ld on %s, started %s, log %s", (long)getpid(), host, now,
             canon[OUT_LOG][0] ? canon[OUT_LOG] : job->logpath);
    for (int k = 0; k < NOUT; k++)
        if (s[k].used)
            HX_TRY(hx_lock_acquire(s[k].path, s[k].what, info, &job->locks[k]));
    return HX_OK;
}

static void release_outputs(md_job *job)
{
    for (int k = 0; k < NOUT; k++)
        hx_lock_release(&job->locks[k]);
}

/* Rank 0: everything written to the log so far reached it. The log is written with fprintf
 * from many places; a full disk or a device such as /dev/full shows only when the buffer is
 * flushed, so it is flushed and checked at the points where a failure must stop the run: after
 * the header (before the first step), with every checkpoint, and at the end. */
static hx_status log_check(md_job *job)
{
    if (!job->flog)
        return HX_OK;
    errno = 0;
    int bad = fflush(job->flog) != 0;
    int e = errno;
    bad |= ferror(job->flog) != 0;
    HX_CHECK(!bad, HX_ERR_IO, "writing the log %s failed: %s", job->logpath,
             e ? strerror(e) : "write error (a full disk?)");
    return HX_OK;
}

/* A restart and one of its outputs: continue the file the checkpoint recorded (the same file by
 * device and inode, however the path is spelled) after cutting it back to the checkpoint; or
 * start a new file where nothing is yet; anything else would append this run after data that
 * does not belong to it, and is refused. */
static hx_status restart_output(const char *path, const char *what, const char *opt,
                                const char *recorded, long long bytes, const char *ckpt,
                                int *is_new)
{
    *is_new = 1;
    if (!path)
        return HX_OK;
    hx_path_kind kind = hx_path_kind_of(path);
    if (kind == HX_PATH_SPECIAL)
        return HX_OK; /* a device or FIFO: written through, nothing to cut */
    if (bytes >= 0 && recorded[0] && hx_path_same_file(path, recorded)) {
        long long size = hx_path_size(path);
        HX_CHECK(size >= bytes, HX_ERR_INPUT,
                 "%s %s has %lld bytes, fewer than the %lld it had when %s was written: it was "
                 "cut or replaced since, so the run cannot continue in it; restore it, or give "
                 "%s a new name to start a new file",
                 what, path, size, bytes, ckpt, opt);
        HX_CHECK(truncate(path, (off_t)bytes) == 0, HX_ERR_IO,
                 "cannot cut %s back to the checkpoint (%lld bytes): %s", path, bytes,
                 strerror(errno));
        *is_new = 0;
        return HX_OK;
    }
    if (kind == HX_PATH_MISSING || hx_path_size(path) == 0)
        return HX_OK;
    if (bytes >= 0 && recorded[0])
        HX_FAIL(HX_ERR_INPUT,
                "%s %s exists but is not the file %s recorded (%s): appending to it would put "
                "this run after data of another; give %s %s to continue that file, or a name "
                "that does not exist yet to start a new one",
                what, path, ckpt, recorded, opt, recorded);
    HX_FAIL(HX_ERR_INPUT,
            "%s %s exists, and %s recorded no such file to continue: appending to it would put "
            "this run after other data; give a name that does not exist yet",
            what, path, ckpt);
}

/* The first line of an energy file: what the columns are, in which units, and the run's
 * parameters, so that tools need not guess (schema in docs/energy-file.md). Only values that
 * define the physics: runs that must give identical files (a restart and the uninterrupted
 * run, MPI and in-process decompositions) give identical first lines. */
static hx_status write_energy_header(md_job *job, const hx_md *md)
{
    const hx_md_params *rp = hx_md_get_params(md);
    const hx_system *s = hx_md_system(md);
    cJSON *o = cJSON_CreateObject(), *cols = NULL, *run = NULL;
    hx_status st = HX_OK;
    if (!o)
        HX_FAIL(HX_ERR_NOMEM, "out of memory");
    cJSON_AddNumberToObject(o, "halox_energy_file", 1);
    cJSON_AddStringToObject(o, "halox_version", HALOX_VERSION);
    cols = cJSON_AddObjectToObject(o, "columns");
    run = cJSON_AddObjectToObject(o, "run");
    if (!cols || !run) {
        cJSON_Delete(o);
        HX_FAIL(HX_ERR_NOMEM, "out of memory");
    }
    static const char *const units[][2] = {
        {"step", ""},          {"time", "ps"},          {"lj", "kJ/mol"},
        {"coulomb", "kJ/mol"}, {"potential", "kJ/mol"}, {"kinetic", "kJ/mol"},
        {"total", "kJ/mol"},   {"conserved", "kJ/mol"}, {"temperature", "K"}};
    static const char *const bonded_cols[] = {"bonds", "angles", "dihedrals", "lj14", "coulomb14"};
    for (size_t k = 0; k < sizeof units / sizeof units[0]; k++) {
        if (strcmp(units[k][0], "conserved") == 0 && rp->thermostat == HX_THERMOSTAT_NONE)
            continue; /* written with a thermostat only (in NVE it is the total) */
        cJSON_AddStringToObject(cols, units[k][0], units[k][1]);
        if (k == 3 && hx_md_last_energies(md)->has_bonded) /* after coulomb, as in the lines */
            for (size_t b = 0; b < 5; b++)
                cJSON_AddStringToObject(cols, bonded_cols[b], "kJ/mol");
    }
    cJSON_AddStringToObject(run, "model", rp->model);
    cJSON_AddNumberToObject(run, "atoms", s->natoms);
    cJSON_AddNumberToObject(run, "molecules", s->nmol);
    cJSON_AddNumberToObject(run, "degrees_of_freedom", hx_md_ndf(md));
    cJSON *box = cJSON_CreateDoubleArray(s->box, 3);
    if (box)
        cJSON_AddItemToObject(run, "box_nm", box);
    cJSON_AddNumberToObject(run, "dt_ps", rp->dt);
    cJSON_AddNumberToObject(run, "start_step", (double)hx_md_current_step(md));
    cJSON_AddNumberToObject(run, "nstenergy", job->nstenergy);
    cJSON_AddNumberToObject(run, "rc_nm", rp->rc);
    cJSON_AddNumberToObject(run, "rlist_nm", rp->rlist);
    cJSON_AddBoolToObject(run, "rlist_from_tolerance", job->rlist_opt <= 0);
    cJSON_AddNumberToObject(run, "verlet_buffer_tolerance", rp->verlet_buffer_tolerance);
    cJSON_AddNumberToObject(run, "nstlist", rp->nstlist);
    hx_md_list_setup ls;
    hx_md_get_list_setup(md, &ls);
    cJSON_AddBoolToObject(run, "nstlist_automatic", ls.automatic);
    if (ls.automatic) {
        cJSON_AddNumberToObject(run, "nstlist_reference", ls.nstlist_ref);
        cJSON_AddNumberToObject(run, "rlist_reference_nm", ls.rlist_ref);
        cJSON_AddNumberToObject(run, "list_size_factor", ls.size_factor);
    }
    cJSON_AddNumberToObject(run, "rlist_inner_nm", rp->rlist_inner);
    cJSON_AddNumberToObject(run, "prune_parts", rp->prune_parts);
    cJSON_AddNumberToObject(run, "epsilon_r", rp->eps_r);
    cJSON_AddNumberToObject(run, "epsilon_rf", rp->eps_rf);
    cJSON_AddStringToObject(run, "thermostat",
                            rp->thermostat == HX_THERMOSTAT_VRESCALE ? "v-rescale" : "no");
    if (rp->thermostat == HX_THERMOSTAT_VRESCALE) {
        cJSON_AddNumberToObject(run, "tau_t_ps", rp->tau_t);
        cJSON_AddNumberToObject(run, "ref_t_K", rp->ref_t);
    }
    cJSON_AddNumberToObject(run, "seed", (double)rp->seed);
    cJSON_AddStringToObject(run, "precision", rp->nb_precision == HX_NB_MIXED ? "mixed" : "double");
    char *text = cJSON_PrintUnformatted(o);
    if (!text)
        st = hx_error_set(HX_ERR_NOMEM, __FILE__, __LINE__, __func__, "out of memory");
    else if (fprintf(job->fen, "%s\n", text) < 0)
        st = hx_error_set(HX_ERR_IO, __FILE__, __LINE__, __func__,
                          "writing the energy file %s failed: %s", job->energy, strerror(errno));
    cJSON_free(text);
    cJSON_Delete(o);
    return st;
}

/* Rank 0: back up existing files of a new run (regular files only), open the outputs. */
static hx_status open_outputs(md_job *job, const hx_md *md)
{
    if (!job->root)
        return HX_OK;
    char bak[PATH_MAX + 32];
    const char *backup[] = {job->logpath, job->energy, job->nstxout > 0 ? job->traj : NULL};
    for (size_t k = 0; !job->restart && k < sizeof backup / sizeof backup[0]; k++) {
        if (!backup[k])
            continue;
        HX_TRY(hx_output_backup(backup[k], 0, bak, sizeof bak));
        if (bak[0])
            fprintf(stderr, "halox md: backed up %s to %s\n", backup[k], bak);
    }
    job->flog = fopen(job->logpath, job->restart ? "a" : "w");
    HX_CHECK(job->flog, HX_ERR_IO, "cannot open the log %s: %s", job->logpath, strerror(errno));
    /* A buffer that holds what is written between two checks (log_check), so that a failure
     * shows at the check with its errno rather than inside some fprintf that does not report. */
    job->flog_buf = malloc(HX_LOG_BUFFER);
    if (job->flog_buf)
        setvbuf(job->flog, job->flog_buf, _IOFBF, HX_LOG_BUFFER);
    if (job->energy) {
        job->fen = fopen(job->energy, job->energy_new ? "w" : "a");
        HX_CHECK(job->fen, HX_ERR_IO, "cannot open the energy file %s: %s", job->energy,
                 strerror(errno));
        if (job->energy_new)
            HX_TRY(write_energy_header(job, md));
        /* in append mode the position before the first write is unspecified: make it the end */
        if (!job->energy_new)
            HX_CHECK(fseek(job->fen, 0, SEEK_END) == 0, HX_ERR_IO, "cannot seek in %s: %s",
                     job->energy, strerror(errno));
    }
    if (job->traj && job->nstxout > 0) {
        job->ftr = fopen(job->traj, job->traj_new ? "w" : "a");
        HX_CHECK(job->ftr, HX_ERR_IO, "cannot open the trajectory %s: %s", job->traj,
                 strerror(errno));
        if (!job->traj_new)
            HX_CHECK(fseek(job->ftr, 0, SEEK_END) == 0, HX_ERR_IO, "cannot seek in %s: %s",
                     job->traj, strerror(errno));
    }
    return HX_OK;
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

/* Bytes written to an output so far, buffered ones included (-1 when there is none, or it is
 * a device or FIFO, which a restart cannot cut back). */
static long long file_size(FILE *f, const char *path)
{
    if (!f || hx_path_kind_of(path) != HX_PATH_REGULAR)
        return -1;
    long pos = ftell(f);
    return pos < 0 ? -1 : pos;
}

/* Rank 0, at the start of every step: where the outputs stand before the step writes. */
static void note_sizes(md_job *job, long long step)
{
    job->at_step = step;
    job->energy_at = file_size(job->fen, job->energy);
    job->traj_at = file_size(job->ftr, job->traj);
}

/* Flush an output to disk before a checkpoint records its size (regular files only: fsync of a
 * device or FIFO fails, and there is nothing to keep). */
static hx_status sync_output(FILE *f, const char *path)
{
    if (!f || hx_path_kind_of(path) != HX_PATH_REGULAR)
        return HX_OK;
    HX_CHECK(fflush(f) == 0 && fsync(fileno(f)) == 0, HX_ERR_IO, "flushing %s to disk failed: %s",
             path, strerror(errno));
    return HX_OK;
}

/* Collective: gather the state, rank 0 writes it. The output files are recorded by their
 * absolute path with links resolved, so that a restart finds them from any working directory
 * and however they are spelled then. */
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
    c.thermostat_work = hx_md_thermostat_work(md);
    c.rlist = hx_md_get_params(md)->rlist;
    c.nranks = job->nranks;
    c.nthreads = hx_md_get_params(md)->nthreads;
    c.params = job->cparams;
    HX_TRY(sync_output(job->fen, job->energy));
    HX_TRY(sync_output(job->ftr, job->traj));
    /* The continued run starts with step c.step and writes its energy line and frame again:
     * record the sizes from before this step wrote them. A checkpoint at the end of a run (or
     * at a stop) comes after the last step's line; one inside the run before it. */
    HX_CHECK(job->at_step == c.step, HX_ERR_INTERNAL,
             "checkpoint at step %lld but the output sizes are of step %lld", c.step, job->at_step);
    c.energy_bytes = job->energy_at;
    c.traj_bytes = job->traj_at;
    if (c.energy_bytes >= 0 &&
        hx_path_canonical(job->energy, c.energy_path, sizeof c.energy_path) != HX_OK)
        snprintf(c.energy_path, sizeof c.energy_path, "%s", job->energy);
    if (c.traj_bytes >= 0 && hx_path_canonical(job->traj, c.traj_path, sizeof c.traj_path) != HX_OK)
        snprintf(c.traj_path, sizeof c.traj_path, "%s", job->traj);
    HX_TRY(hx_checkpoint_write(job->ckpt, &c));
    job->last_ckpt_step = c.step;
    if (job->flog)
        fprintf(job->flog, "checkpoint at step %lld written to %s\n", c.step, job->ckpt);
    return log_check(job);
}

typedef struct hook_ctx {
    md_job *job;
    fault flt;
    long long start;
} hook_ctx;

static hx_status step_hook(void *user, hx_md *md, long long step)
{
    hook_ctx *h = user;
    if (h->job->root) {
        note_sizes(h->job, step);
        /* the energies of the previous step (NaN potential on steps without energy output,
         * which the statistics skip); the last step's are added after the run */
        if (step != h->start) {
            const hx_md_energies *e = hx_md_last_energies(md);
            hx_app_estats_add(&h->job->estats, e);
            if (h->job->nstlog > 0 && e->step % h->job->nstlog == 0 && isfinite(e->potential))
                hx_app_log_energies(h->job->flog, e);
        }
    }
    HX_TRY(fault_fire(&h->flt, hx_comm_rank(h->job->comm), step));
    if (h->job->ckpt && h->job->nstckpt > 0 && step % h->job->nstckpt == 0 && step != h->start)
        HX_TRY(write_checkpoint(h->job, md));
    return HX_OK;
}

/* ---- reporting --------------------------------------------------------------------------------
 */

/* Say a failure once: the rank where it happened prints it (with its rank in a parallel run);
 * ranks that only learnt of it (HX_ERR_REMOTE) stay quiet. Rank 0's log records it either way,
 * so that the log says why the run ended. */
static void report_failure(md_job *job, hx_status st)
{
    hx_comm *comm = job->comm;
    if (st != HX_ERR_REMOTE) {
        if (comm && hx_comm_nranks(comm) > 1)
            fprintf(stderr, "[rank %d] ", hx_comm_rank(comm));
        hx_cli_report_error("md", st);
    }
    if (job->flog) {
        fprintf(job->flog, "error: %s\n", hx_last_error_message());
        fflush(job->flog);
    }
    fflush(stderr);
}

/* Report a failure and end the whole job at once (MPI_Abort in a parallel run): only for a
 * failure after which a peer may not be reachable (see end_run), since MPI_Abort loses what the
 * outputs had buffered and buries the message in the launcher's notice. */
static int fail_job(md_job *job, hx_status st)
{
    report_failure(job, st);
    if (job->comm && hx_comm_nranks(job->comm) > 1)
        hx_comm_abort(job->comm, 1);
    return 1;
}

/* The end of the run on every rank, success or failure; returns 1 when the job failed.
 *
 * hx_md_run's failures are agreed: a hook, an output or a pulse that fails on one rank is noted
 * by the engine (hx_md_note) and agreed at the next collective of the step schedule, so every
 * rank returns it at the same step (the failing rank its own status and message, the others
 * HX_ERR_REMOTE with that message); so are the collectives after the run (the last checkpoint,
 * the gather, the timing reduction), and rank 0's own failures after them (the final
 * configuration, the log, the energy file) find every other rank past its last wait for rank 0.
 * In all these every rank comes here, and the job ends normally: the message once, by the rank
 * where it happened, in rank 0's log too, the outputs flushed and closed, MPI_Finalize, exit
 * code 1 (MPI_Abort lost the buffered outputs and printed its notice from every rank). A last
 * agreement gives every rank the outcome (rank 0's late failures included) and checks that
 * every rank is here; it runs on a communicator of the job's own (job->ctl), which the engine
 * never uses, so that it cannot be matched with a collective of the step loop on a rank that is
 * still in it.
 *
 * MPI_Abort stays where a peer may not be reachable:
 *  - HX_ERR_TIMEOUT: this rank waited its deadline for a peer, which may be stuck in a kernel, a
 *    hung hook or a file system, or be gone; no message reaches it, and the communicator is
 *    unusable;
 *  - the last agreement does not complete in time: a failure was not agreed (a rank that failed
 *    alone where the engine returns at once, e.g. out of memory in a repartition; the others
 *    wait for it in the step loop, reach their step deadline and abort as above). */
static int end_run(md_job *job, hx_status st)
{
    if (st == HX_ERR_TIMEOUT)
        return fail_job(job, st);
    if (st != HX_OK)
        report_failure(job, st);
    if (!job->ctl)
        return st != HX_OK; /* one process: nobody else to tell */
    const hx_status all = hx_comm_agree(job->ctl, st);
    if (all == HX_ERR_TIMEOUT)
        return fail_job(job, all);
    if (all != HX_OK && st == HX_OK)
        report_failure(job, all); /* learnt only now: rank 0's log records it */
    return all != HX_OK;
}

/* A failure before the run, where every rank holds the outcome of the same agreement (each
 * start-up step ends in hx_comm_agree): an error that every rank detects (a box too small for
 * the grid, a bad input) was printed by every rank and followed by MPI_Abort's noise. Now rank 0
 * says it once for all (its own message, or the failing rank's that the agreement forwarded),
 * and every rank ends normally. The alarm is a guard for the case that should not happen: were
 * a rank not at the agreement after all, SIGALRM ends this process, and mpirun the job, rather
 * than leave it waiting in MPI_Finalize. */
static int startup_failed(md_job *job, hx_status st)
{
    hx_comm *comm = job->comm;
    if (!comm || hx_comm_nranks(comm) <= 1) {
        report_failure(job, st);
        return 1;
    }
    if (job->root) {
        hx_cli_report_error("md", st);
        if (job->flog)
            fprintf(job->flog, "error: %s\n", hx_last_error_message());
    }
    if (job->flog)
        fflush(job->flog);
    fflush(stderr);
    alarm(60);
    return 1;
}

/* GROMACS's "Changing nstlist from 10 to 100, rlist from 1 to 1.1", with the rolling prune. */
static void list_choice(const hx_md *md, char *buf, size_t cap)
{
    hx_md_list_setup ls;
    hx_md_get_list_setup(md, &ls);
    int n = snprintf(buf, cap, "nstlist %d -> %d, rlist %.3f -> %.3f nm", ls.nstlist_ref,
                     ls.nstlist, ls.rlist_ref, ls.rlist);
    if (n > 0 && (size_t)n < cap) {
        if (ls.prune_parts > 0)
            snprintf(buf + n, cap - (size_t)n, ", inner rlist %.3f nm, prune every %d steps",
                     ls.rlist_inner, ls.prune_parts);
        else
            snprintf(buf + n, cap - (size_t)n, ", no rolling prune");
    }
}

static void write_log_header(const md_job *job, const hx_md *md, long long start)
{
    FILE *flog = job->flog;
    const hx_md_params *rp = hx_md_get_params(md);
    if (job->restart)
        fprintf(flog, "\n");
    hx_app_write_run_header(flog, job->cmdline, job->nranks, rp->nthreads);
    if (job->restart)
        fprintf(flog, "halox md: restart from %s at step %lld\n", job->restart, start);
    fprintf(flog, "parameters:\n");
    if (job->mdp)
        fprintf(flog, "  parameter file %s (command-line options override it)\n", job->mdp);
    if (job->mdp && job->mdp_ignored[0])
        fprintf(flog, "  ignored in %s (they do not change what halox computes): %s\n", job->mdp,
                job->mdp_ignored);
    if (job->restart && job->conf)
        fprintf(flog, "  conf %s (checked: the system of %s)\n", job->conf, job->restart);
    else
        fprintf(flog, "  conf %s\n", job->conf ? job->conf : job->restart);
    fprintf(flog, "  output %s\n  model %s\n  steps %lld (from step %lld)\n  dt %g ps\n", job->out,
            rp->model, rp->steps, start, rp->dt);
    fprintf(flog, "  rc %g nm\n  rlist %.4f nm%s\n  nstlist %d\n  eps_rf %g%s\n  eps_r %g\n",
            rp->rc, rp->rlist, job->rlist_opt > 0 ? "" : " (from the buffer tolerance)",
            rp->nstlist, rp->eps_rf, rp->eps_rf == 0 ? " (infinity)" : "", rp->eps_r);
    fprintf(flog, "  buffer tolerance %g kJ/mol/ps/atom\n", rp->verlet_buffer_tolerance);
    hx_md_list_setup ls;
    hx_md_get_list_setup(md, &ls);
    if (ls.automatic) {
        char line[256];
        list_choice(md, line, sizeof line);
        fprintf(flog, "  pair-list interval chosen: %s\n    (%s; --nstlist fixes it)\n", line,
                ls.note);
    } else if (job->nstlist_restart) {
        fprintf(flog, "  pair-list interval %d, as in the run the checkpoint continues\n",
                rp->nstlist);
    } else if (ls.note[0]) {
        fprintf(flog, "  pair-list interval %d %s\n", rp->nstlist, ls.note);
    }
    if (rp->backend && strcmp(rp->backend, "gpu") == 0) {
        if (rp->prune_parts > 0)
            fprintf(flog,
                    "  rolling prune: inner rlist %.4f nm, %d parts (each part re-pruned "
                    "every %d steps)\n",
                    rp->rlist_inner, rp->prune_parts, rp->prune_parts);
        else
            fprintf(flog, "  rolling prune: off (pruned at the pair search only)\n");
    }
    fprintf(flog, "  missed-pair check every %d pair searches%s\n", rp->nstcheck,
            rp->nstcheck == 0 ? " (off)" : "");
    fprintf(flog, "  non-bonded precision %s\n",
            rp->nb_precision == HX_NB_MIXED ? "mixed" : "double");
    fprintf(flog, "  backend %s, halo exchange %s\n", rp->backend ? rp->backend : "cpu",
            rp->halo ? rp->halo : "host");
    if (rp->backend && strcmp(rp->backend, "gpu") == 0)
        fprintf(flog, "  %s (rank %d)\n", hx_gpu_context_describe(rp->gpu),
                hx_comm_rank(job->comm));
    if (job->restart)
        fprintf(flog, "  velocities from the checkpoint");
    else if (job->no_velocities)
        fprintf(flog, "  velocities none: the input has none and none are generated, so the run "
                      "starts from rest (0 K)");
    else
        fprintf(flog, "  velocities %s", job->p.gen_vel ? "generated" : "from the input");
    if (job->p.gen_vel && !job->restart)
        fprintf(flog, " at %g K, seed %d", job->p.gen_temp, job->seed);
    if (!job->restart)
        fprintf(flog, "\n  start %s",
                job->p.no_start_constraints ? "taken as it is (continuation: not constrained again)"
                                            : "constrained (SETTLE) before step 0");
    fprintf(flog, "\n  thermostat %s", job->p.thermostat ? "v-rescale" : "none (NVE)");
    if (job->p.thermostat)
        fprintf(flog, " tau_t %g ps ref_t %g K seed %d", job->tau_t, job->ref_t, job->seed);
    fprintf(flog,
            "\n  MPI ranks %d, threads per rank %d\n  energies in this log every %d steps\n"
            "  energy %s every %d\n  trajectory %s every %d\n  checkpoint %s every %d\n",
            job->nranks, rp->nthreads, job->nstlog, job->energy ? job->energy : "-", job->nstenergy,
            job->traj ? job->traj : "-", job->nstxout, job->ckpt ? job->ckpt : "-", job->nstckpt);
    fprintf(flog,
            "  stop signals (SIGINT, SIGTERM): the run ends at the %s; a second signal "
            "ends it at once\n",
            job->nranks > 1 || job->ckpt ? "next pair-search step, with outputs and checkpoint"
                                         : "next step, with outputs complete");
    const hx_system *s = hx_md_system(md);
    fprintf(flog, "system: %s\n  %d atom%s, %d molecule%s, box %.5f %.5f %.5f nm\n", s->title,
            s->natoms, s->natoms == 1 ? "" : "s", s->nmol, s->nmol == 1 ? "" : "s", s->box[0],
            s->box[1], s->box[2]);
    fprintf(flog, "  degrees of freedom %.0f, pairs in the first lists %lld\n", hx_md_ndf(md),
            hx_md_npairs(md));
    hx_md_dd_info di;
    hx_md_get_dd_info(md, &di);
    int nd = di.grid[0] * di.grid[1] * di.grid[2];
    fprintf(flog, "domain decomposition:\n  grid %d x %d x %d (%d domain%s)\n", di.grid[0],
            di.grid[1], di.grid[2], nd, nd == 1 ? "" : "s");
    fprintf(flog, "  cell size %.4f x %.4f x %.4f nm, r_comm %.4f nm\n", di.cell[0], di.cell[1],
            di.cell[2], di.r_comm);
    fprintf(flog, "  pulses x %d, y %d, z %d\n", di.pulses[0], di.pulses[1], di.pulses[2]);
    fprintf(flog,
            "  home atoms per domain min %lld max %lld; halo atoms min %lld avg %.1f max "
            "%lld\n",
            di.home_min, di.home_max, di.halo_min, (double)di.halo_total / nd, di.halo_max);
}

/* Rank 0: energies, averages and drift, the timing table (reduced over the ranks by the
 * caller), the performance line; the performance also on the terminal. */
static void write_log_footer(md_job *job, const hx_md *md, const hx_app_timing *tr)
{
    FILE *flog = job->flog;
    const hx_md_energies *e = hx_md_last_energies(md);
    const hx_md_params *rp = hx_md_get_params(md);
    const hx_system *s = hx_md_system(md);
    hx_md_timings t;
    hx_md_get_timings(md, &t);
    hx_app_log_energies(flog, e); /* the last step's, as GROMACS ends with them */
    fprintf(flog, "\n");
    fprintf(flog,
            "final energies step %lld: lj %.6f coulomb %.6f potential %.6f kinetic "
            "%.6f total %.6f T %.3f K\n",
            e->step, e->lj, e->coulomb, e->potential, e->kinetic, e->total, e->temperature);
    if (e->has_bonded)
        fprintf(flog,
                "  bonded terms: bonds %.6f angles %.6f dihedrals %.6f lj14 %.6f coulomb14 %.6f\n",
                e->bonds, e->angles, e->dihedrals, e->lj14, e->coulomb14);
    hx_app_estats_write(flog, &job->estats, s->natoms, rp->thermostat);
    if (t.missed_pairs >= 0)
        fprintf(flog, "pair searches %lld, %lld checked for missed pairs: %lld missed in total%s\n",
                t.searches, t.checked_searches, t.missed_pairs,
                t.missed_pairs > 0 && job->rlist_opt <= 0
                    ? " (rlist is from the buffer tolerance, which bounds the drift they cause)"
                    : "");
    else
        fprintf(flog, "repartitions/pair searches %lld (missed-pair check: single domain only)\n",
                t.searches);
    hx_app_timing_write(flog, tr);
    hx_app_search_write(flog, tr, &t);
    if (t.graph_captures > 0)
        fprintf(flog,
                "step graph: %lld captures (again after every search: the lists' sizes are its "
                "launches'), %.1f us each on the host (rank 0), %lld steps replayed\n",
                t.graph_captures, 1e6 * t.graph_capture / (double)t.graph_captures, t.graph_steps);
    double nst = (double)(t.steps > 0 ? t.steps : 1);
    double us = 1e6 * t.total / nst, ns_day, hours_ns;
    hx_app_performance(rp->dt, t.steps, t.total, &ns_day, &hours_ns);
    /* bench/cpu_md.py reads "performance: X ns/day, Y us/step" */
    if (t.steps > 0)
        fprintf(flog,
                "performance: %.3f ns/day, %.1f us/step, %.3f hours/ns, %.4g atom-steps/s, halo "
                "exchange %.1f us/step (%lld steps, %d atoms, %d threads per rank)\n",
                ns_day, us, hours_ns, s->natoms / (us * 1e-6), 1e6 * (t.halo_x + t.halo_f) / nst,
                t.steps, s->natoms, rp->nthreads);
    else /* the time of one energy evaluation is no time per step */
        fprintf(flog,
                "performance: no steps run (single-point energies, evaluated in %.4f s; %d atoms, "
                "%d threads per rank)\n",
                t.total, s->natoms, rp->nthreads);
    char now[64];
    hx_app_now(now, sizeof now);
    fprintf(flog, "finished %s\n", now);
    if (t.steps > 0)
        fprintf(stderr,
                "Performance: %.3f ns/day, %.3f hours/ns (%lld steps of %g ps in %.2f s, %.1f "
                "us/step)\n",
                ns_day, hours_ns, t.steps, rp->dt, t.total, us);
}

/* ---- the job -------------------------------------------------------------------------------- */

/* A restart given -c as well: the configuration must describe the checkpoint's system (the
 * same atoms, names and molecules; the model is one of the compared parameters), or the run
 * would continue another system than the one the user named. Positions and velocities differ,
 * of course: the checkpoint holds a later state. */
static hx_status same_system(const hx_system *conf, const char *conf_path, const hx_system *ck,
                             const char *ck_path)
{
    HX_CHECK(conf->natoms == ck->natoms && conf->nmol == ck->nmol, HX_ERR_INPUT,
             "%s and %s are different systems: %s has %d atom%s in %d molecule%s, %s %d atom%s "
             "in %d molecule%s; a restart continues the system of its checkpoint: give -c the "
             "configuration that run started from, or leave -c out",
             conf_path, ck_path, conf_path, conf->natoms, conf->natoms == 1 ? "" : "s", conf->nmol,
             conf->nmol == 1 ? "" : "s", ck_path, ck->natoms, ck->natoms == 1 ? "" : "s", ck->nmol,
             ck->nmol == 1 ? "" : "s");
    for (int a = 0; a < conf->natoms; a++)
        HX_CHECK(strcmp(conf->res_name[a], ck->res_name[a]) == 0 &&
                     strcmp(conf->atom_name[a], ck->atom_name[a]) == 0,
                 HX_ERR_INPUT,
                 "%s:%d: atom %d is %s %s, but in %s it is %s %s: the two are different systems; "
                 "give -c the configuration the checkpointed run started from, or leave -c out",
                 conf_path, a + 3, a + 1, conf->res_name[a], conf->atom_name[a], ck_path,
                 ck->res_name[a], ck->atom_name[a]);
    for (int m = 0; m <= conf->nmol; m++)
        HX_CHECK(conf->mol_start[m] == ck->mol_start[m], HX_ERR_INPUT,
                 "%s:%d: molecule %d starts at atom %d, but in %s at atom %d: the two are "
                 "different systems; give -c the configuration the checkpointed run started "
                 "from, or leave -c out",
                 conf_path, conf->mol_start[m] + 3, m + 1, conf->mol_start[m] + 1, ck_path,
                 ck->mol_start[m] + 1);
    return HX_OK;
}

/* The largest relative deviation of a starting structure from the distances the model's
 * constraints keep, above which the input is refused rather than pulled into shape: the start
 * is constrained before step 0 (as GROMACS does), which moves a hydrogen given 1 nm from its
 * oxygen back without a word. 10 % passes what is only another geometry (TIP3P's 0.09572 nm O-H
 * for SPC/E's 0.1 nm is 4 %) and the 3 decimals of a .gro (0.5 %), and stops broken molecules. */
#define HX_START_GEOMETRY_TOL 0.10

/* Minimum-image distance of atoms a and b (the box is rectangular; molecules are far smaller
 * than half of it, so a molecule split by the periodic boundary is measured whole). */
static double mi_dist(const hx_system *s, int a, int b)
{
    double r2 = 0.0;
    for (int d = 0; d < 3; d++) {
        double dx = s->x[3 * a + d] - s->x[3 * b + d];
        dx -= s->box[d] * nearbyint(dx / s->box[d]);
        r2 += dx * dx;
    }
    return sqrt(r2);
}

/* Rank 0, a new run: every constrained distance of the input is within HX_START_GEOMETRY_TOL
 * of the model's, or the input is refused naming file:line (of the atom that is off), the
 * molecule and the distance. */
static hx_status check_start_geometry(const hx_system *sys, const char *model, const char *path)
{
    hx_forcefield *ff = NULL;
    hx_system *s = NULL;
    hx_status st = HX_OK;
    HX_TRY_GOTO(st, hx_forcefield_create(model, &ff), out);
    HX_TRY_GOTO(st, hx_system_copy(sys, &s), out);
    if (hx_forcefield_apply(ff, s) != HX_OK)
        goto out; /* names that do not fit: the engine says so, naming the atom */
    const int otype = hx_forcefield_water_o_type(ff);
    for (int m = 0; m < s->nmol && st == HX_OK; m++) {
        const hx_moltype *mt = hx_forcefield_moltype(ff, s->mol_type[m]);
        const int a0 = s->mol_start[m];
        /* the pairs the model keeps at fixed distances: SETTLE's three, SHAKE's bonds */
        int pi[HX_MAX_MOL_ATOMS * 2][2], np = 0;
        double pd[HX_MAX_MOL_ATOMS * 2];
        if (mt->rigid_water) {
            int o = -1, h[2] = {-1, -1}, nh = 0;
            for (int k = 0; k < 3; k++) {
                if (s->type[a0 + k] == otype)
                    o = a0 + k;
                else if (nh < 2)
                    h[nh++] = a0 + k;
            }
            if (o < 0 || nh != 2)
                continue;
            const int pairs[3][2] = {{o, h[0]}, {o, h[1]}, {h[0], h[1]}};
            const double dist[3] = {mt->d_oh, mt->d_oh, mt->d_hh};
            for (int k = 0; k < 3; k++) {
                pi[np][0] = pairs[k][1];
                pi[np][1] = pairs[k][0];
                pd[np++] = dist[k];
            }
        } else {
            for (int c = 0; c < mt->nconstraints && np < HX_MAX_MOL_ATOMS * 2; c++) {
                pi[np][0] = a0 + mt->constraints[c].j;
                pi[np][1] = a0 + mt->constraints[c].i;
                pd[np++] = mt->constraints[c].d;
            }
        }
        for (int k = 0; k < np; k++) {
            const int a = pi[k][0], b = pi[k][1];
            const double r = mi_dist(s, a, b);
            if (fabs(r - pd[k]) > HX_START_GEOMETRY_TOL * pd[k])
                st = hx_error_set(
                    HX_ERR_INPUT, __FILE__, __LINE__, __func__,
                    "%s:%d: molecule %d (residue %d %s): %s (atom %d) is %.4f nm from %s (atom "
                    "%d), but model %s keeps them %.4f nm apart: more than %.0f %% off, the "
                    "molecule is broken (halox would pull it back into shape without a word); "
                    "repair the input, or give the model it was made for",
                    path, a + 3, m + 1, s->res_id[a], s->res_name[a], s->atom_name[a], a + 1, r,
                    s->atom_name[b], b + 1, model, pd[k], 100 * HX_START_GEOMETRY_TOL);
            if (st != HX_OK)
                break;
        }
    }
out:
    hx_system_destroy(&s);
    hx_forcefield_destroy(&ff);
    return st;
}

static const char *ckpt_value(const hx_ckpt_params *c, const char *key)
{
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->key[i], key) == 0)
            return c->value[i];
    return NULL;
}

/* The resolved rolling prune, recorded with the parameters a restart must match (the engine
 * would otherwise re-estimate the inner radius from the checkpoint's temperature). */
static void ckpt_add_prune(hx_ckpt_params *c, int parts, double inner)
{
    if (c->n + 2 > HX_CKPT_MAX_PARAMS)
        return;
    snprintf(c->key[c->n], HX_CKPT_KEY_LEN, "prune_parts");
    snprintf(c->value[c->n++], HX_CKPT_VALUE_LEN, "%d", parts);
    snprintf(c->key[c->n], HX_CKPT_KEY_LEN, "rlist_inner");
    snprintf(c->value[c->n++], HX_CKPT_VALUE_LEN, "%.17g", inner);
}

/* A restart continues with the pair lists the original run used, as recorded in its checkpoint:
 * the interval when this restart gives none (it was given or chosen then; a new choice from the
 * restart's state could differ), and the rolling prune (parts and inner radius). Checkpoints of
 * older versions have no prune: the engine resolves it again. */
static hx_status restart_lists(md_job *job, const hx_checkpoint *ck)
{
    if (job->p.nstlist_auto) {
        const char *v = ckpt_value(&ck->params, "nstlist");
        char *end = NULL;
        const long n = v ? strtol(v, &end, 10) : 0;
        HX_CHECK(v && end && *end == '\0' && n >= 1 && n <= INT_MAX, HX_ERR_INPUT,
                 "%s records no valid nstlist (%s): give --nstlist with the original run's "
                 "interval",
                 job->restart, v ? v : "none");
        HX_CHECK(job->nstckpt == 0 || job->nstckpt % n == 0, HX_ERR_INVALID_ARG,
                 "--nstcheckpoint %d must be a multiple of the interval %ld that %s continues: a "
                 "restart resumes at a repartition",
                 job->nstckpt, n, job->restart);
        job->p.nstlist = (int)n;
        job->p.nstlist_auto = 0;
        job->p.nstlist_divides = 0;
        job->nstlist_restart = 1;
    }
    const char *pp = ckpt_value(&ck->params, "prune_parts");
    const char *ri = ckpt_value(&ck->params, "rlist_inner");
    if (pp && ri) {
        char *e1 = NULL, *e2 = NULL;
        const long parts = strtol(pp, &e1, 10);
        const double inner = strtod(ri, &e2);
        HX_CHECK(*e1 == '\0' && *e2 == '\0' && parts >= 0 && parts <= 1000 && inner > 0,
                 HX_ERR_INPUT, "%s records a bad rolling prune (%s parts, inner rlist %s)",
                 job->restart, pp, ri);
        job->p.prune_parts = (int)parts;
        job->p.rlist_inner = inner;
    }
    return HX_OK;
}

/* Rank 0: read the input or the checkpoint (for a restart: decide for each output whether it
 * continues the recorded file or starts a new one); everybody: agree, receive the system and,
 * for a restart, the state to continue from. */
static hx_status load_input(md_job *job, hx_system **sys)
{
    hx_status st = HX_OK;
    hx_checkpoint *ck = NULL;
    struct {
        long long step;
        double rlist, work;
        uint64_t rng[4];
        double rlist_inner;
        int nstlist, nstlist_restart, prune_parts;
    } cont;
    memset(&cont, 0, sizeof cont);
    job->energy_new = job->traj_new = 1;
    if (job->root) {
        if (job->restart) {
            st = hx_checkpoint_read(job->restart, &ck);
            if (st == HX_OK && job->conf) {
                hx_system *given = NULL;
                st = hx_gro_read(job->conf, &given);
                if (st == HX_OK)
                    st = same_system(given, job->conf, ck->sys, job->restart);
                hx_system_destroy(&given);
            }
            if (st == HX_OK)
                st = restart_lists(job, ck);
            if (st == HX_OK) {
                hx_ckpt_params now;
                hx_ckpt_params_from_md(&job->p, job->rlist_opt, ck->sys->natoms, &now);
                if (ckpt_value(&ck->params, "prune_parts"))
                    ckpt_add_prune(&now, job->p.prune_parts, job->p.rlist_inner);
                st = hx_ckpt_params_compare(&ck->params, &now, job->restart);
            }
            if (st == HX_OK && ck->step >= job->total_steps)
                st = hx_error_set(HX_ERR_INVALID_ARG, __FILE__, __LINE__, __func__,
                                  "%s is at step %lld, not before --steps %lld: nothing to do; "
                                  "--steps is the total step count of the continued run",
                                  job->restart, ck->step, job->total_steps);
            if (st == HX_OK && ck->nranks != job->nranks)
                hx_log(HX_LOG_WARN,
                       "%s was written with %d rank%s, this run has %d: the continuation is "
                       "exact physics but not bit-identical to an uninterrupted run",
                       job->restart, ck->nranks, ck->nranks == 1 ? "" : "s", job->nranks);
            /* the thread count sets the non-bonded force buffers and so the order of the sums
             * (checkpoints before issue 29 recorded 0 for the default: unknown) */
            if (st == HX_OK && ck->nthreads > 0 && ck->nthreads != job->p.nthreads)
                hx_log(HX_LOG_WARN,
                       "%s was written with %d thread%s per rank, this run has %d: the "
                       "continuation is exact physics but not bit-identical to an "
                       "uninterrupted run (give --threads %d for that)",
                       job->restart, ck->nthreads, ck->nthreads == 1 ? "" : "s", job->p.nthreads,
                       ck->nthreads);
            /* outputs: files are compared by identity, not by how their names are spelled */
            if (st == HX_OK)
                st = restart_output(job->energy, "the energy file", "-e", ck->energy_path,
                                    ck->energy_bytes, job->restart, &job->energy_new);
            if (st == HX_OK && job->nstxout > 0)
                st = restart_output(job->traj, "the trajectory", "-x", ck->traj_path,
                                    ck->traj_bytes, job->restart, &job->traj_new);
            if (st == HX_OK && ck->format < 2 && job->p.thermostat != HX_THERMOSTAT_NONE)
                hx_log(HX_LOG_WARN,
                       "%s is a checkpoint of format %d, which did not record the thermostat's "
                       "work: the run continues bit for bit, but its conserved energy starts "
                       "again from the total energy at step %lld",
                       job->restart, ck->format, ck->step);
            if (st == HX_OK) {
                cont.step = ck->step;
                cont.rlist = ck->rlist;
                cont.work = ck->thermostat_work;
                memcpy(cont.rng, ck->rng_state, sizeof cont.rng);
                *sys = ck->sys;
                ck->sys = NULL;
            }
            hx_checkpoint_destroy(&ck);
        } else {
            st = hx_gro_read(job->conf, sys);
            if (st == HX_OK)
                st = check_start_geometry(*sys, job->p.model, job->conf);
        }
    }
    HX_TRY(hx_comm_agree(job->comm, st));
    HX_TRY(hx_system_bcast(job->comm, sys));
    if (job->restart) {
        /* rank 0's pair lists: the checkpoint's (restart_lists) */
        cont.nstlist = job->p.nstlist;
        cont.nstlist_restart = job->nstlist_restart;
        cont.prune_parts = job->p.prune_parts;
        cont.rlist_inner = job->p.rlist_inner;
        HX_TRY(hx_comm_bcast_bytes(job->comm, &cont, sizeof cont));
        if (cont.nstlist_restart) {
            job->p.nstlist = cont.nstlist;
            job->p.nstlist_auto = job->p.nstlist_divides = 0;
            job->nstlist_restart = 1;
        }
        job->p.prune_parts = cont.prune_parts;
        job->p.rlist_inner = cont.rlist_inner;
        job->p.continuation = 1;
        job->p.start_step = cont.step;
        job->p.rlist = cont.rlist;
        /* resolved by the run continued; from the tolerance when --rlist is not given */
        job->p.rlist_from_tolerance = job->rlist_opt <= 0;
        job->p.has_rng_state = 1;
        memcpy(job->p.rng_state, cont.rng, sizeof cont.rng);
        job->p.thermostat_work = cont.work;
        job->p.gen_vel = 0;
        job->p.steps = job->total_steps - cont.step;
    }
    return HX_OK;
}

/* The engine, with errors that come from the input named after it: the force field counts
 * atoms as in the file, and a box too small for the cut-off or the grid is a property of the
 * input, which the library cannot name. */
static hx_status create_engine(md_job *job, const hx_system *sys, hx_md **md)
{
    const char *input = job->conf ? job->conf : job->restart;
    char msg[1024];
    hx_status st = hx_md_params_check(&job->p, sys);
    if (st != HX_OK) {
        snprintf(msg, sizeof msg, "%s", hx_last_error_message());
        return hx_error_set(st, __FILE__, __LINE__, __func__, "%s (box %g x %g x %g nm): %s", input,
                            sys->box[0], sys->box[1], sys->box[2], msg);
    }
    st = hx_md_create_dd(sys, &job->p, job->comm, job->grid[0] > 0 ? job->grid : NULL, md);
    if (st == HX_ERR_INPUT || st == HX_ERR_GEOMETRY) {
        snprintf(msg, sizeof msg, "%s", hx_last_error_message());
        st = hx_error_set(st, __FILE__, __LINE__, __func__, "%s: %s%s", input, msg,
                          st == HX_ERR_INPUT ? " (atom N is on line N+2)" : "");
    }
    return st;
}

/* Rank 0, at the end: write the final configuration; when it replaces the input, the input
 * is kept as #name.N# first (GROMACS's convention for every file a run replaces). */
static hx_status write_final(md_job *job, const hx_md *md)
{
    if (job->out_is_input) {
        char bak[PATH_MAX + 32];
        HX_TRY(hx_output_backup(job->out, 1, bak, sizeof bak));
        if (bak[0])
            fprintf(stderr, "halox md: backed up the input %s to %s\n", job->out, bak);
    }
    return hx_gro_write(job->out, hx_md_system(md), 1);
}

static int run_job(md_job *job, int parallel)
{
    hx_system *sys = NULL;
    hx_md *md = NULL;
    hx_status st;
    int ngrid = job->grid[0] > 0 ? job->grid[0] * job->grid[1] * job->grid[2] : 1;
    st = parallel ? hx_comm_create_world(&job->comm) : hx_comm_create_serial(ngrid, &job->comm);
    if (st == HX_OK && parallel && hx_comm_nranks(job->comm) > 1)
        st = hx_comm_create_world(&job->ctl);
    if (st != HX_OK)
        return fail_job(job, st);
    job->root = hx_comm_rank(job->comm) == 0;
    job->nranks = hx_comm_nranks(job->comm);
    hx_log_set_rank(hx_comm_rank(job->comm), job->nranks);
    int rc_exit = 0;
    if (parallel && job->grid[0] > 0 && ngrid != job->nranks) {
        if (job->root)
            fprintf(stderr,
                    "halox md: error: the domain grid --dd %dx%dx%d has %d domain%s but the job "
                    "has %d MPI rank%s: give a grid whose product is %d, or leave --dd out to "
                    "choose one\n",
                    job->grid[0], job->grid[1], job->grid[2], ngrid, ngrid == 1 ? "" : "s",
                    job->nranks, job->nranks == 1 ? "" : "s", job->nranks);
        rc_exit = 1;
        goto done;
    }
    const long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (job->p.nthreads == 0 && job->nranks > 1) {
        /* ranks share the node's cores: do not oversubscribe them with threads */
        job->p.nthreads = ncpu > job->nranks ? (int)(ncpu / job->nranks) : 1;
    } else if (job->p.nthreads == 0) {
        /* the count the engine would take for 0 (OpenMP's default: OMP_NUM_THREADS, or every
         * core), resolved here so that the log and the checkpoint name it ("0 OpenMP
         * threads" said nothing) */
#ifdef _OPENMP
        job->p.nthreads = omp_get_max_threads();
#else
        job->p.nthreads = 1;
#endif
    } else if (job->root && ncpu > 0 && job->p.nthreads > ncpu) {
        fprintf(stderr,
                "halox md: warning: --threads %d is more than the %ld logical CPUs of this "
                "host: the threads take turns on the cores, and the run is slower than with "
                "--threads %ld\n",
                job->p.nthreads, ncpu, ncpu);
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
        /* the one choice of this rank's GPU (collective): node-local rank modulo the devices, or
         * entry (node-local rank % n) of --gpu-id; the device stays current for the program */
        hx_gpu_context_params gp;
        hx_gpu_context_params_default(&gp);
        gp.device_ids = job->ngpu_ids > 0 ? job->gpu_ids : NULL;
        gp.ndevice_ids = job->ngpu_ids;
        gp.make_current = 1;
        st = hx_gpu_context_create(&gp, job->comm, &job->gpu);
        if (st != HX_OK) {
            /* agreed by the context's own gathering of the devices (every rank returns the
             * failure), except a timed-out wait there, where a peer may be stuck */
            rc_exit = st == HX_ERR_TIMEOUT ? fail_job(job, st) : startup_failed(job, st);
            goto done;
        }
        job->p.gpu = job->gpu;
    }
    /* outputs first: a bad path must fail before the input is read, let alone the run. Every
     * step up to the run ends in an agreement, so that a failure is known to every rank at the
     * same point (startup_failed). */
    st = hx_comm_agree(job->comm, job->root ? check_outputs(job) : HX_OK);
    if (st == HX_OK)
        st = load_input(job, &sys);
    if (st == HX_OK && job->root && !job->restart && !job->p.gen_vel && !sys->has_velocities &&
        job->p.steps > 0) {
        /* a silent 0 K start looks like a thermostat or force bug hours later: say it now */
        job->no_velocities = 1;
        fprintf(stderr,
                "halox md: warning: %s has no velocities and no --gen-vel was given: the run "
                "starts from rest (0 K) and warms only as the forces act; give --gen-vel 300 (or "
                "gen-vel = yes in the .mdp) to start at a temperature\n",
                job->conf);
    }
    if (st == HX_OK)
        st = create_engine(job, sys, &md);
    st = hx_comm_agree(job->comm, st);
    if (st != HX_OK) {
        rc_exit = startup_failed(job, st);
        goto done;
    }
    if (job->root) {
        hx_md_list_setup ls;
        hx_md_get_list_setup(md, &ls);
        if (ls.automatic && ls.nstlist != ls.nstlist_ref) {
            char line[256];
            list_choice(md, line, sizeof line);
            fprintf(stderr, "halox md: %s (chosen for the GPU; --nstlist fixes it)\n", line);
        }
    }
    /* what a later restart must match: the user's options, not the resolved values, except
     * the pair lists, which a restart continues as this run used them (restart_lists) */
    {
        const hx_md_params *rp = hx_md_get_params(md);
        hx_md_params used = job->p;
        used.nstlist = rp->nstlist;
        hx_ckpt_params_from_md(&used, job->rlist_opt, sys->natoms, &job->cparams);
        ckpt_add_prune(&job->cparams, rp->prune_parts, rp->rlist_inner);
    }
    st = hx_comm_agree(job->comm, open_outputs(job, md));
    if (st != HX_OK) {
        rc_exit = startup_failed(job, st);
        goto done;
    }
    hook.start = hx_md_current_step(md);
    st = HX_OK;
    if (job->root) {
        hx_log_set_file(job->flog);
        write_log_header(job, md, hook.start);
        st = log_check(job); /* a log that cannot be written fails now, not after the run */
    }
    st = hx_comm_agree(job->comm, st);
    if (st != HX_OK) {
        rc_exit = startup_failed(job, st);
        goto done;
    }
    hx_md_output o;
    memset(&o, 0, sizeof o);
    o.energy = job->fen;
    o.nstenergy = job->nstenergy;
    o.nstlog = job->nstlog;
    o.traj = job->ftr;
    o.nstxout = job->nstxout;
    o.progress = job->root ? progress : NULL;
    o.progress_interval = 5.0;
    o.step_hook = step_hook;
    o.user = &hook;
    o.stop = hx_app_stop_flag();
    /* a checkpoint at a pair-search step continues bit for bit; several ranks agree there */
    o.stop_at_search = job->ckpt != NULL;
    char note[256];
    snprintf(note, sizeof note,
             "halox md: %%s received: stopping at the %s (a second signal ends the run at once)",
             o.stop_at_search || job->nranks > 1 ? "next pair-search step" : "next step");
    hx_app_signals_install(job->root ? note : NULL);
    const long long planned_end = hook.start + job->p.steps;
    st = hx_md_run(md, &o);
    const long long end = hx_md_current_step(md);
    if (st == HX_OK && job->ckpt && job->last_ckpt_step != end)
        st = write_checkpoint(job, md);
    if (st == HX_OK)
        st = hx_md_gather(md);
    /* collective: timings over the ranks, and the signal any rank received */
    hx_app_timing tr;
    hx_md_timings tm;
    hx_md_get_timings(md, &tm);
    if (st == HX_OK)
        st = hx_app_timing_reduce(job->comm, &tm, hx_app_stop_signal(), &tr);
    const int stopped = st == HX_OK && end < planned_end;
    if (st == HX_OK && job->root) {
        const hx_md_energies *e = hx_md_last_energies(md);
        hx_app_estats_add(&job->estats, e);
        if (job->p.steps == 0 && !job->restart) {
            printf("single-point energies (kJ/mol):\n  lj        %.8f\n  coulomb   %.8f\n", e->lj,
                   e->coulomb);
            if (e->has_bonded) /* GROMACS's Bond, Angle, Ryckaert-Bell., LJ-14, Coulomb-14 */
                printf("  bonds     %.8f\n  angles    %.8f\n  dihedrals %.8f\n  lj14      "
                       "%.8f\n  coulomb14 %.8f\n",
                       e->bonds, e->angles, e->dihedrals, e->lj14, e->coulomb14);
            printf("  potential %.8f\n  kinetic   %.8f\n  total     %.8f\n  temperature %.4f K\n",
                   e->potential, e->kinetic, e->total, e->temperature);
        }
        st = write_final(job, md);
        if (st == HX_OK && stopped)
            fprintf(job->flog, "run stopped at step %lld of %lld by %s (graceful stop)\n", end,
                    planned_end, hx_app_signal_name((int)tr.extra_max));
        if (st == HX_OK)
            write_log_footer(job, md, &tr);
        if (st == HX_OK)
            st = log_check(job);
        if (st == HX_OK && job->fen && fflush(job->fen) != 0)
            st =
                hx_error_set(HX_ERR_IO, __FILE__, __LINE__, __func__,
                             "writing the energy file %s failed: %s", job->energy, strerror(errno));
        if (st == HX_OK && job->ftr && fflush(job->ftr) != 0)
            st = hx_error_set(HX_ERR_IO, __FILE__, __LINE__, __func__,
                              "writing the trajectory %s failed: %s", job->traj, strerror(errno));
        if (st == HX_OK && stopped) {
            if (job->ckpt)
                fprintf(stderr,
                        "halox md: stopped at step %lld of %lld by %s; outputs are complete and "
                        "checkpoint %s is written: continue with the same command and "
                        "--restart %s\n",
                        end, planned_end, hx_app_signal_name((int)tr.extra_max), job->ckpt,
                        job->ckpt);
            else
                fprintf(stderr,
                        "halox md: stopped at step %lld of %lld by %s; outputs are complete (no "
                        "checkpoint: give --checkpoint FILE to be able to continue a run)\n",
                        end, planned_end, hx_app_signal_name((int)tr.extra_max));
        }
    }
    if (end_run(job, st))
        rc_exit = 1;
    else if (stopped)
        rc_exit = 128 + (int)(tr.extra_max > 0 ? tr.extra_max : SIGTERM);
done:
    hx_app_signals_restore();
    hx_log_set_file(NULL);
    if (job->fen && fclose(job->fen) != 0)
        rc_exit = rc_exit ? rc_exit : 1;
    if (job->ftr && fclose(job->ftr) != 0)
        rc_exit = rc_exit ? rc_exit : 1;
    if (job->flog && fclose(job->flog) != 0 && rc_exit == 0) {
        fprintf(stderr, "halox md: error: closing the log %s failed: %s\n", job->logpath,
                strerror(errno));
        rc_exit = 1;
    }
    free(job->flog_buf);
    release_outputs(job);
    hx_md_destroy(&md);
    hx_gpu_context_destroy(&job->gpu); /* after the engine, which runs on it */
    hx_system_destroy(&sys);
    hx_comm_destroy(&job->comm);
    hx_comm_destroy(&job->ctl);
    return rc_exit;
}

/* Put the values an .mdp file gives onto the option variables; the command line is parsed
 * again afterwards, so that options given there win. */
typedef struct md_vars {
    long long *steps;
    double *dt, *rc, *rlist, *tol, *eps_r, *eps_rf, *tau_t, *ref_t, *gen_vel;
    int *nstlist, *seed, *nstenergy, *nstxout, *continuation, *nstlog;
    const char **thermostat;
} md_vars;

static void apply_mdp(const hx_mdp *m, const md_vars *v)
{
    if (m->has_nsteps)
        *v->steps = m->nsteps;
    if (m->has_dt)
        *v->dt = m->dt;
    if (m->has_rc)
        *v->rc = m->rc;
    if (m->has_rlist)
        *v->rlist = m->rlist;
    if (m->has_buffer_tolerance)
        *v->tol = m->buffer_tolerance;
    if (m->has_nstlist)
        *v->nstlist = m->nstlist;
    if (m->has_eps_r)
        *v->eps_r = m->eps_r;
    if (m->has_eps_rf)
        *v->eps_rf = m->eps_rf;
    if (m->has_thermostat)
        *v->thermostat = m->thermostat == HX_THERMOSTAT_VRESCALE ? "v-rescale" : "no";
    if (m->has_tau_t)
        *v->tau_t = m->tau_t;
    if (m->has_ref_t)
        *v->ref_t = m->ref_t;
    /* gen-vel = yes draws at gen-temp (GROMACS's default 300 K); no: the input's velocities */
    if (m->has_gen_vel)
        *v->gen_vel = m->gen_vel ? (m->has_gen_temp ? m->gen_temp : 300.0) : GEN_VEL_NONE;
    if (m->has_gen_seed)
        *v->seed = (int)m->gen_seed;
    if (m->has_nstenergy)
        *v->nstenergy = m->nstenergy;
    if (m->has_nstxout)
        *v->nstxout = m->nstxout;
    if (m->has_continuation)
        *v->continuation = m->continuation;
    if (m->has_nstlog)
        *v->nstlog = m->nstlog;
}

/* Before MPI starts a process does not know its rank, yet every process of an mpirun job
 * checks the same options and would print the same message (8 copies with -np 8). The
 * launchers say the rank in the environment; every process but the first sends its messages
 * to /dev/null until MPI is up (quiet_ranks_end), so that a bad option is reported once. */
static int quiet_saved_fd = -1;

static void quiet_ranks_begin(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
                                       "MV2_COMM_WORLD_RANK", "SLURM_PROCID"};
    for (size_t k = 0; k < sizeof vars / sizeof vars[0]; k++) {
        const char *v = getenv(vars[k]);
        char *end = NULL;
        long r = v && *v ? strtol(v, &end, 10) : 0;
        if (!v || !*v || *end)
            continue;
        if (r > 0) {
            int null_fd = open("/dev/null", O_WRONLY);
            fflush(stderr);
            quiet_saved_fd = dup(2);
            if (null_fd >= 0 && quiet_saved_fd >= 0)
                dup2(null_fd, 2);
            if (null_fd >= 0)
                close(null_fd);
        }
        return;
    }
}

static void quiet_ranks_end(void)
{
    if (quiet_saved_fd < 0)
        return;
    fflush(stderr);
    dup2(quiet_saved_fd, 2);
    close(quiet_saved_fd);
    quiet_saved_fd = -1;
}

static int run_md(int argc, char **argv)
{
    quiet_ranks_begin();
    md_job job;
    memset(&job, 0, sizeof job);
    job.last_ckpt_step = -1;
    hx_app_command_line(argc, argv, job.cmdline, sizeof job.cmdline);
    const char *model = "spce", *thermostat = "no", *dd_text = NULL, *precision = "double";
    const char *halo = NULL, *gpu_ids = NULL;
    int use_gpu = 0;
    job.out = "confout.gro";
    long long steps = 0;
    /* INT_MIN: not given (neither here nor in the .mdp), so the engine may choose it */
    int nstlist = INT_MIN, nstcheck = 10, threads = 0, continuation = 0;
    job.nstenergy = 100;
    job.nstlog = 1000; /* GROMACS's default */
    job.seed = 1;
    double dt = 0.002, rc = 1.0, eps_rf = 0.0, eps_r = 1.0, gen_vel = GEN_VEL_NONE, tol = 0.005;
    job.tau_t = 0.1;
    job.ref_t = 300.0;
    hx_opt opts[] = {
        {"c", "conf", HX_OPT_STRING, &job.conf, "FILE", "input configuration (.gro)"},
        {"f", "mdp", HX_OPT_STRING, &job.mdp, "FILE",
         "GROMACS run parameters (.mdp, the keys halox supports); options given here override "
         "it"},
        {"o", "output", HX_OPT_STRING, &job.out, "FILE",
         "final configuration (.gro, with velocities)"},
        {"steps", "nsteps", HX_OPT_INT64, &steps, "N",
         "number of steps (0: single-point energies; with --restart: the total)"},
        {"dt", NULL, HX_OPT_DOUBLE, &dt, "PS", "time step"},
        {"rc", NULL, HX_OPT_DOUBLE, &rc, "NM", "cut-off of LJ and reaction field"},
        {"rlist", NULL, HX_OPT_DOUBLE, &job.rlist_opt, "NM",
         "pair-list radius (default: chosen from --buffer-tol)"},
        {"buffer-tol", NULL, HX_OPT_DOUBLE, &tol, "KJ",
         "Verlet buffer tolerance, kJ/mol/ps per atom"},
        {"nstlist", NULL, HX_OPT_INT, &nstlist, "N",
         "steps between pair searches (default 10; with --gpu chosen by halox, see above)"},
        {"check-pairs", NULL, HX_OPT_INT, &nstcheck, "N",
         "count missed pairs at every N-th pair search (1: all, 0: never; one domain only)"},
        {"eps-rf", NULL, HX_OPT_DOUBLE, &eps_rf, "X", "reaction-field dielectric (0: infinity)"},
        {"eps-r", NULL, HX_OPT_DOUBLE, &eps_r, "X", "relative dielectric"},
        {"model", NULL, HX_OPT_STRING, &model, "NAME",
         "spce, spc, tip3p, argon, or oplsaa[-spce|-spc|-tip3p] (ethanol in water)"},
        {"gen-vel", NULL, HX_OPT_DOUBLE, &gen_vel, "K",
         "draw Maxwell-Boltzmann velocities at this temperature (default: the input's "
         "velocities)"},
        {"seed", NULL, HX_OPT_INT, &job.seed, "S", "random seed (velocities, thermostat)"},
        {"continuation", NULL, HX_OPT_FLAG, &continuation, NULL,
         "the input is the constrained state of an earlier run: do not constrain it again "
         "(GROMACS continuation = yes)"},
        {"thermostat", NULL, HX_OPT_STRING, &thermostat, "NAME", "no or v-rescale"},
        {"tau-t", NULL, HX_OPT_DOUBLE, &job.tau_t, "PS", "thermostat time constant"},
        {"ref-t", NULL, HX_OPT_DOUBLE, &job.ref_t, "K", "thermostat temperature"},
        {"energy", "e", HX_OPT_STRING, &job.energy, "FILE",
         "energies: a metadata line, then one JSON object per line (docs/energy-file.md)"},
        {"nstenergy", NULL, HX_OPT_INT, &job.nstenergy, "N", "steps between energy lines"},
        {"nstlog", NULL, HX_OPT_INT, &job.nstlog, "N",
         "steps between energies in the log (0: the last step's only)"},
        {"nstxout", NULL, HX_OPT_INT, &job.nstxout, "N",
         "steps between trajectory frames (0: none)"},
        {"x", "traj", HX_OPT_STRING, &job.traj, "FILE", "trajectory (multi-frame .gro)"},
        {"g", "log", HX_OPT_STRING, &job.logpath, "FILE",
         "log file (default: md.log next to -o, or here when -o is a device)"},
        {"threads", "nt", HX_OPT_INT, &threads, "N", "OpenMP threads per rank (0: all)"},
        {"precision", NULL, HX_OPT_STRING, &precision, "P",
         "non-bonded arithmetic: double, or mixed (float pair forces, double sums; faster)"},
        {"gpu", NULL, HX_OPT_FLAG, &use_gpu, NULL,
         "run the step on the GPU (non-bonded, pair search, update; one GPU per rank)"},
        {"gpu-id", NULL, HX_OPT_STRING, &gpu_ids, "LIST",
         "with --gpu: the GPUs to use, as CUDA device indices; node-local rank i runs on entry "
         "i % (entries), so 0,0,1,1 puts two ranks on each of two GPUs (like GROMACS's -gpu_id) "
         "(default: node-local rank modulo the visible GPUs)"},
        {"halo", NULL, HX_OPT_STRING, &halo, "NAME",
         "halo-exchange backend: host (CPU), or with --gpu nvshmem, gpu-direct (direct, CUDA IPC "
         "copies) or gpu-mpi (mpi, staged through host memory) (default: host on the CPU, "
         "nvshmem with --gpu)"},
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
    if (job.mdp) {
        /* the file first, then the command line again on top of it */
        hx_mdp m;
        hx_status mst = hx_mdp_read(job.mdp, &m);
        if (mst != HX_OK) {
            hx_cli_report_error("md", mst);
            return 1;
        }
        md_vars v = {
            &steps,         &dt,          &rc,           &job.rlist_opt, &tol,       &eps_r,
            &eps_rf,        &job.tau_t,   &job.ref_t,    &gen_vel,       &nstlist,   &job.seed,
            &job.nstenergy, &job.nstxout, &continuation, &job.nstlog,    &thermostat};
        apply_mdp(&m, &v);
        if (m.nignored > 0) {
            /* said, not hidden: a key that was meant to matter shows up here */
            snprintf(job.mdp_ignored, sizeof job.mdp_ignored, "%s", m.ignored);
            fprintf(stderr,
                    "halox md: %s: ignored (%d key%s that do%s not change what halox computes; "
                    "docs/mdp.md says why): %s\n",
                    job.mdp, m.nignored, m.nignored == 1 ? "" : "s", m.nignored == 1 ? "es" : "",
                    m.ignored);
        }
        if (hx_cli_parse(&hx_cmd_md, opts, nopts, argc, argv) != 0)
            return 1;
    }

    /* everything is checked before any file is touched */
    if (!job.conf && !job.restart) {
        fprintf(stderr, "halox md: missing the input configuration: -c conf.gro (or --restart "
                        "checkpoint)\n");
        return 1;
    }
    if (gen_vel != GEN_VEL_NONE && gen_vel < 0) {
        /* a negative value was read as "not given" and warned as such */
        fprintf(stderr,
                "halox md: --gen-vel %g: a temperature must be >= 0 K (--gen-vel 300 draws "
                "velocities at 300 K)\n",
                gen_vel);
        return 1;
    }
    if (halo && !use_gpu && strcmp(halo, "host") != 0) {
        fprintf(stderr,
                "halox md: --halo %s exchanges halos of GPU memory: it needs --gpu (the CPU "
                "engine exchanges through the host: --halo host, the default)\n",
                halo);
        return 1;
    }
    if (halo && use_gpu && strcmp(halo, "host") == 0) {
        fprintf(stderr,
                "halox md: --halo host is the CPU engine's: with --gpu give nvshmem, gpu-direct "
                "or gpu-mpi (or leave --halo out)\n");
        return 1;
    }
    if (continuation && gen_vel >= 0 && !job.restart) {
        fprintf(stderr,
                "halox md: --continuation (continuation = yes) takes the input's velocities as "
                "they are, but --gen-vel (gen-vel = yes) draws new ones, which would need "
                "constraining: give one or the other\n");
        return 1;
    }
    hx_md_params *p = &job.p;
    hx_md_params_default(p);
    p->dt = dt;
    p->steps = steps;
    p->rc = rc;
    p->rlist = job.rlist_opt;
    p->verlet_buffer_tolerance = tol;
    /* GROMACS's mdrun: the interval is raised on GPUs unless the user fixed it */
    p->nstlist_auto = nstlist == INT_MIN;
    p->nstlist = p->nstlist_auto ? 10 : nstlist;
    p->nstlist_divides = p->nstlist_auto ? job.nstckpt : 0;
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
    p->no_start_constraints = continuation;
    p->backend = use_gpu ? "gpu" : NULL;
    /* the short names of the GPU baselines (mpirun ... halox md --gpu --halo mpi|direct) */
    if (halo && use_gpu && strcmp(halo, "mpi") == 0)
        halo = "gpu-mpi";
    else if (halo && use_gpu && strcmp(halo, "direct") == 0)
        halo = "gpu-direct";
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
        job.nstckpt < 0 || job.nstlog < 0) {
        fprintf(stderr,
                "halox md: --steps (%lld), --nstenergy (%d), --nstxout (%d), --threads (%d), "
                "--seed (%d), --nstcheckpoint (%d) and --nstlog (%d) must be >= 0\n",
                steps, job.nstenergy, job.nstxout, threads, job.seed, job.nstckpt, job.nstlog);
        return 1;
    }
    if (job.nstxout > 0 && !job.traj) {
        fprintf(stderr, "halox md: nstxout %d needs a trajectory file: -x traj.gro\n", job.nstxout);
        return 1;
    }
    if (job.traj && job.nstxout == 0) {
        /* it wrote nothing and said nothing (GROMACS writes no frames either, as silently) */
        fprintf(stderr,
                "halox md: -x %s asks for a trajectory, but --nstxout is 0 (the default), so "
                "no frame would be written: give --nstxout N (steps between frames; nstxout in "
                "the .mdp), or leave -x out\n",
                job.traj);
        return 1;
    }
    if (job.nstckpt > 0 && !job.ckpt) {
        fprintf(stderr, "halox md: --nstcheckpoint %d needs a file: --checkpoint state.cpt\n",
                job.nstckpt);
        return 1;
    }
    if (job.nstckpt > 0 && p->nstlist > 0 && job.nstckpt % p->nstlist != 0) {
        fprintf(stderr,
                "halox md: --nstcheckpoint %d must be a multiple of --nstlist %d%s: a restart "
                "resumes at a repartition, so that it continues the run bit for bit\n",
                job.nstckpt, p->nstlist, p->nstlist_auto ? " (the default)" : "");
        return 1;
    }
    if (gpu_ids && !use_gpu) {
        fprintf(stderr, "halox md: --gpu-id %s chooses GPUs for --gpu, which was not given\n",
                gpu_ids);
        return 1;
    }
    hx_status st = HX_OK;
    if (gpu_ids &&
        (st = hx_gpu_parse_device_ids(gpu_ids, job.gpu_ids, 64, &job.ngpu_ids)) != HX_OK) {
        hx_cli_report_error("md", st);
        return 1;
    }
    st = hx_md_params_check(p, NULL);
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
    quiet_ranks_end(); /* from here every rank knows its rank: messages are per rank */
    if ((st = hx_mpi_init(&argc, &argv, &parallel)) != HX_OK) {
        hx_cli_report_error("md", st);
        return 1;
    }
    int rc_exit = run_job(&job, parallel);
    hx_mpi_finalize();
    return rc_exit;
}
