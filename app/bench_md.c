/* halox bench md: the MD step of the engine, every backend side by side in one run (one MPI
 * rank per domain), with the paper's metrics.
 *
 * For each size and grid the water box is built once; for each backend an engine is created
 * (cpu: the CPU step with the host halo exchange; gpu-mpi, gpu-direct, nvshmem: the GPU step
 * with that halo backend; gpu: the GPU step with the default halo backend), run for --warmup
 * steps, then timed over --steps steps without energy output. Time per step leaves out the
 * search steps (the paper's convention: its DD and neighbour-search steps are excluded); they
 * are reported on their own. Every --nstmetrics-th step is sampled with events for local work,
 * non-local work and non-overlap; min/avg/max over ranks. */
#include "bench.h"
#include "commands.h"

#include "halox/build.h"
#include "halox/decomp.h"
#include "halox/gpu.h"
#include "halox/halox.h"
#include "halox/io.h"
#include "halox/log.h"
#include "halox/md.h"
#include "halox/error.h"
#include "halox/timer.h"

#include <math.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

typedef struct mopts {
    const char *atoms_list, *dd_list, *backends, *out, *model, *conf, *system;
    int steps, warmup, nstlist, nstmetrics, seed;
    double rc, rlist, tol;
    const char *gpu_ids; /* --gpu-id */
} mopts;

/* hx_md_timings' parts of a search step, in its order; the JSON object search_step_parts_us
 * (search_parts below). The first six tile the search step; then the coordinate halo (inside
 * the sixth), and with the search step on the device the device time of its parts, the host's
 * counts, and the host's time in the plan from the counts and in the agreements after them */
#define NSEARCH_PARTS 13
/* One run's numbers on this rank, gathered on rank 0 as doubles. */
enum {
    Q_STEP_US,   /* time per non-search step (the step clock's spans between searches) */
    Q_SEARCH_US, /* host time of the search in a search step (its parts tile it) */
    Q_ALL_US,    /* wall time per step, search steps included */
    Q_LOCAL_US,  /* averages over the sampled steps */
    Q_NONLOCAL_US,
    Q_NONOVER_US,
    Q_HOME,
    Q_HALO,
    Q_DD_SEARCHES,
    Q_DD_RETRIES,
    Q_DD_HALO_UPDATES,
    Q_SEARCH_CLOCK_US, /* a whole search step on the step clock, from the previous step's end */
    Q_SEARCH_PART,     /* NSEARCH_PARTS: the search step's parts, us per search */
    Q_N = Q_SEARCH_PART + NSEARCH_PARTS
};
static const char *const search_parts[NSEARCH_PARTS] = {
    "state_to_host",    "migration",          "topology_plan",    "halo_setup",
    "local_set_upload", "halo_x_pair_search", "halo_x",           "device_migration",
    "device_local_set", "device_plan_maps",   "counts_reduction", "plan_from_counts",
    "agreements"};

static int list_has(const char *list, const char *name)
{
    char want[512], key[64];
    snprintf(want, sizeof want, ",%s,", list);
    snprintf(key, sizeof key, ",%s,", name);
    return strstr(want, key) != NULL;
}

static hx_status run_one(hx_comm *world, const hx_gpu_context *gpu, const mopts *o,
                         const hx_system *sys, const int grid[3], const char *label, double q[Q_N],
                         hx_md_params *used, int *refused)
{
    *refused = 0;
    hx_md_params p;
    hx_md_params_default(&p);
    p.model = o->model;
    p.rc = o->rc;
    p.rlist = o->rlist;
    p.verlet_buffer_tolerance = o->tol;
    p.nstlist = o->nstlist;
    p.nstcheck = 0;
    p.gen_vel = 1;
    p.gen_temp = 300.0;
    p.seed = (uint64_t)o->seed;
    p.nstmetrics = o->nstmetrics;
    /* clock points around the search steps only: the device time of the search steps and of
     * the plain steps between them, for two events per pair-list interval */
    p.step_timing = HX_MD_STEP_SPANS;
    p.nb_precision = HX_NB_MIXED; /* the CPU's like-for-like with the GPU's float kernels */
    if (strcmp(label, "cpu") != 0) {
        p.backend = "gpu";
        p.gpu = gpu;
        p.halo = strcmp(label, "gpu") == 0 ? NULL : label;
    }
    /* the forced NVSHMEM variants: the same backend with its path or bulk copy pinned */
    if (strncmp(label, "nvshmem-", 8) == 0) {
        p.halo = "nvshmem";
        p.halo_path =
            strcmp(label, "nvshmem-network") == 0 ? HX_HALO_PATH_NETWORK : HX_HALO_PATH_P2P;
        p.halo_bulk_copy = strcmp(label, "nvshmem-bulk") == 0;
    }
    hx_md *md = NULL;
    hx_status cs = hx_md_create_dd(sys, &p, world, grid, &md);
    /* what the engine refuses for this system or grid (a model the backend cannot run, a grid
     * too fine for the box, a backend not compiled in) is the same on every rank: a skip with
     * the engine's reason, not a failure of the series */
    if (cs == HX_ERR_UNSUPPORTED || cs == HX_ERR_NOT_COMPILED || cs == HX_ERR_GEOMETRY) {
        *refused = 1;
        return cs;
    }
    HX_TRY(cs);
    hx_md_output out;
    memset(&out, 0, sizeof out);
    hx_status st = HX_OK;
    /* warm-up: lists, graphs, clocks */
    if (o->warmup > 0) {
        hx_md_set_steps(md, o->warmup);
        HX_TRY_GOTO(st, hx_md_run(md, &out), done);
    }
    hx_md_set_steps(md, o->steps);
    HX_TRY_GOTO(st, hx_md_run(md, &out), done);
    hx_md_timings t;
    hx_md_get_timings(md, &t);
    /* hx_md_run also evaluates the last step's energies: one step more than --steps */
    const long long plain = t.steps + 1 - t.searches;
    q[Q_STEP_US] = plain > 0 ? 1e6 * (t.total - t.search - t.output) / (double)plain : NAN;
    q[Q_SEARCH_US] = t.searches > 0 ? 1e6 * t.search / (double)t.searches : 0.0;
    /* The split between search steps and plain steps from the step clock where it ran: the
     * host's time of a search (t.search) is all of it where the search waits for its results
     * (the decomposed host search), but a one-domain GPU search returns with its kernels still
     * running, and their time fell into the next plain step (at 45k on one H200 that put about
     * 8 us on every plain step). */
    q[Q_SEARCH_CLOCK_US] = NAN;
    {
        int n = 0;
        hx_md_step_time *rec = NULL;
        if (hx_md_get_step_times(md, NULL, 0, &n) == HX_OK && n > 0 &&
            (rec = malloc(sizeof *rec * (size_t)n)) != NULL &&
            hx_md_get_step_times(md, rec, n, &n) == HX_OK) {
            double us_plain = 0, us_search = 0;
            long long n_plain = 0, n_search = 0;
            for (int k = 0; k < n; k++) {
                if (rec[k].search) {
                    us_search += rec[k].us;
                    n_search++;
                } else {
                    us_plain += rec[k].us;
                    n_plain += rec[k].nsteps;
                }
            }
            if (n_plain > 0 && isfinite(us_plain))
                q[Q_STEP_US] = us_plain / (double)n_plain;
            q[Q_SEARCH_CLOCK_US] =
                n_search > 0 && isfinite(us_search) ? us_search / (double)n_search : NAN;
        }
        free(rec);
    }
    {
        const double parts[NSEARCH_PARTS] = {
            t.search_download,      t.search_migrate,  t.search_plan,   t.search_halo,
            t.search_set_local,     t.search_pairs,    t.search_halo_x, t.search_dev_migrate,
            t.search_dev_local_set, t.search_dev_plan, t.search_counts, t.search_plan_counts,
            t.search_agree};
        for (int k = 0; k < NSEARCH_PARTS; k++)
            q[Q_SEARCH_PART + k] = t.searches > 0 ? 1e6 * parts[k] / (double)t.searches : 0.0;
    }
    q[Q_DD_SEARCHES] = (double)t.dd_searches;
    q[Q_DD_RETRIES] = (double)t.dd_retries;
    q[Q_DD_HALO_UPDATES] = (double)t.dd_halo_updates;
    q[Q_ALL_US] = 1e6 * (t.total - t.output) / (double)(t.steps + 1);
    const double ns = t.metric_samples > 0 ? (double)t.metric_samples : NAN;
    q[Q_LOCAL_US] = t.local_work_us / ns;
    q[Q_NONLOCAL_US] = t.nonlocal_work_us / ns;
    q[Q_NONOVER_US] = t.non_overlap_us / ns;
    hx_md_dd_info di;
    hx_md_get_dd_info(md, &di);
    q[Q_HOME] = (double)di.home_max;
    q[Q_HALO] = (double)di.halo_max;
    *used = *hx_md_get_params(md);
    used->model = o->model; /* the engine's own strings die with it */
    used->backend = used->halo = NULL;
done:
    hx_md_destroy(&md);
    return st;
}

/* min/avg/max over ranks of every quantity (rank 0 receives them) */
static hx_status over_ranks(hx_comm *world, const double q[Q_N], double mn[Q_N], double av[Q_N],
                            double mx[Q_N])
{
    const void *in[1] = {q};
    size_t bytes[1] = {sizeof(double) * Q_N};
    void *all = NULL;
    const int nr = hx_comm_nranks(world);
    size_t *counts = calloc((size_t)hx_comm_ndomains(world), sizeof *counts);
    hx_status st =
        counts ? HX_OK : hx_error_set(HX_ERR_NOMEM, __FILE__, __LINE__, __func__, "out of memory");
    HX_TRY(hx_comm_agree(world, st));
    st = hx_comm_gather_bytes(world, in, bytes, &all, counts);
    free(counts);
    HX_TRY(st);
    if (all) {
        const double *a = all;
        for (int k = 0; k < Q_N; k++) {
            mn[k] = INFINITY;
            mx[k] = -INFINITY;
            av[k] = 0;
            for (int r = 0; r < nr; r++) {
                double v = a[r * Q_N + k];
                mn[k] = fmin(mn[k], v);
                mx[k] = fmax(mx[k], v);
                av[k] += v / nr;
            }
        }
        free(all);
    }
    return HX_OK;
}

static void add3(cJSON *r, const char *name, double mn, double av, double mx)
{
    char k[64];
    cJSON_AddNumberToObject(r, name, av);
    snprintf(k, sizeof k, "%s_min", name);
    cJSON_AddNumberToObject(r, k, mn);
    snprintf(k, sizeof k, "%s_max", name);
    cJSON_AddNumberToObject(r, k, mx);
}

static int run_md_series(int argc, char **argv);

const hx_cmd hx_bench_cmd_md = {
    "md",
    "the MD step of every backend side by side, with the paper's metrics",
    "[mpirun -np N] halox bench md [--atoms N[,...] | --conf FILE.gro] [--dd AxBxC[,...]] "
    "[--backends LIST] [--steps N] [-o results.json]",
    "Builds an SPC/E water box of each --atoms size (or reads --conf, e.g. a box of halox bench\n"
    "suite's cache, for --model: water or oplsaa-WATER for ethanol in water) and runs the MD\n"
    "engine on it (one domain per MPI rank; --dd lists grids whose product is the rank count,\n"
    "default: chosen), once per backend (comma list): cpu (CPU step, host halo exchange, mixed\n"
    "precision), gpu (GPU step, default halo backend), gpu-mpi, gpu-direct, nvshmem (GPU step\n"
    "with that halo backend), nvshmem-p2p, nvshmem-network (NVSHMEM forced to peer stores or to\n"
    "put-with-signal), nvshmem-bulk (peer path through the bulk-copy engine).\n"
    "A backend this build or machine cannot run, or that the engine refuses for the model or\n"
    "grid, is listed under \"skipped\" in the results with the reason.\n"
    "After --warmup steps it times --steps steps without energy output: time per step leaves\n"
    "out the search steps (reported separately, as the paper does), ns/day follows from it.\n"
    "Every --nstmetrics-th step samples the local work, non-local work and non-overlap (µs,\n"
    "min/avg/max over ranks). Results: JSON in the format of docs/results-format.md (halox\n"
    "sources).\n"
    "HALOX_BENCH_COMMAND, when set, is recorded as the command.",
    run_md_series,
};

static int run_md_series(int argc, char **argv)
{
    mopts o = {"45000", NULL,   "gpu-mpi,gpu-direct,nvshmem",
               NULL,    "spce", NULL,
               NULL,    2000,   200,
               20,      20,     1,
               1.0,     0.0,    0.005,
               NULL};
    hx_opt opts[] = {
        {"atoms", NULL, HX_OPT_STRING, &o.atoms_list, "N[,...]", "water box sizes (a series)"},
        {"dd", NULL, HX_OPT_STRING, &o.dd_list, "AxBxC[,...]",
         "domain grids (product = ranks; default: chosen for the rank count)"},
        {"backends", NULL, HX_OPT_STRING, &o.backends, "LIST",
         "comma list: cpu gpu gpu-mpi gpu-direct nvshmem"},
        {"steps", NULL, HX_OPT_INT, &o.steps, "N", "timed steps per backend"},
        {"warmup", NULL, HX_OPT_INT, &o.warmup, "N", "untimed steps first"},
        {"nstlist", NULL, HX_OPT_INT, &o.nstlist, "N", "steps between pair searches"},
        {"nstmetrics", NULL, HX_OPT_INT, &o.nstmetrics, "N",
         "sample the paper's metrics every N steps (0: never)"},
        {"rc", NULL, HX_OPT_DOUBLE, &o.rc, "NM", "cut-off"},
        {"rlist", NULL, HX_OPT_DOUBLE, &o.rlist, "NM", "pair-list radius (0: buffer tolerance)"},
        {"buffer-tol", NULL, HX_OPT_DOUBLE, &o.tol, "KJ", "Verlet buffer tolerance"},
        {"model", NULL, HX_OPT_STRING, &o.model, "NAME",
         "spce, spc, tip3p, or oplsaa-WATER (ethanol in water; needs --conf)"},
        {"conf", "c", HX_OPT_STRING, &o.conf, "FILE",
         "read the system from this .gro instead of building water (--atoms is then unused)"},
        {"system", NULL, HX_OPT_STRING, &o.system, "NAME",
         "the system's name in the results (default water-MODEL)"},
        {"seed", NULL, HX_OPT_INT, &o.seed, "S", "seed of the box and velocities"},
        {"gpu-id", NULL, HX_OPT_STRING, &o.gpu_ids, "LIST",
         "GPUs as CUDA device indices: node-local rank i runs on entry i % (entries), e.g. 0,1 "
         "or 0,0,1,1 (default: node-local rank modulo the visible GPUs)"},
        {"o", "output", HX_OPT_STRING, &o.out, "FILE", "write the JSON results here"},
    };
    int pr = hx_cli_parse(&hx_bench_cmd_md, opts, (int)(sizeof opts / sizeof opts[0]), argc, argv);
    if (pr != 0)
        return pr > 0 ? 0 : 2;
    int sizes[32], nsizes = hx_bench_parse_ints(o.atoms_list, LONG_MAX, sizes, 32);
    if (nsizes <= 0 || o.steps < 1 || o.warmup < 0 || o.nstlist < 1 || o.nstmetrics < 0 ||
        o.seed < 0) {
        fprintf(stderr, "halox bench md: error: need --atoms with positive sizes, --steps >= 1, "
                        "--warmup >= 0, --nstlist >= 1, --nstmetrics >= 0, --seed >= 0\n");
        return 2;
    }
    static const char *const known[] = {
        "cpu",     "gpu",         "gpu-mpi",         "gpu-direct",
        "nvshmem", "nvshmem-p2p", "nvshmem-network", "nvshmem-bulk"};
    const int nknown = (int)(sizeof known / sizeof known[0]);
    if (o.conf)
        nsizes = 1; /* the file is the one size */
    {
        char tmp[512];
        snprintf(tmp, sizeof tmp, "%s", o.backends);
        for (char *t = strtok(tmp, ","); t; t = strtok(NULL, ",")) {
            int ok = 0;
            for (int k = 0; k < nknown; k++)
                ok |= strcmp(t, known[k]) == 0;
            if (!ok) {
                fprintf(stderr,
                        "halox bench md: error: unknown backend '%s': use cpu, gpu, gpu-mpi, "
                        "gpu-direct, nvshmem, nvshmem-p2p, nvshmem-network or nvshmem-bulk\n",
                        t);
                return 2;
            }
        }
    }
    hx_comm *world = hx_bench_world("bench md", &argc, &argv);
    if (!world)
        return 1;
    hx_status st = HX_OK;
    const int rank = hx_comm_rank(world), nranks = hx_comm_nranks(world);
    int ndev = 0;
    hx_gpu_device_count(&ndev, NULL);
    /* the GPU runs' device and streams, chosen once for the series (collective; the same
     * answer on every rank: the backend list is the same everywhere) */
    hx_gpu_context *gpu = NULL;
    int want_gpu = 0;
    for (int k = 0; k < nknown; k++)
        want_gpu |= strcmp(known[k], "cpu") != 0 && list_has(o.backends, known[k]);
    if (ndev > 0 && want_gpu)
        st = hx_bench_gpu_context(world, o.gpu_ids, &gpu);
    cJSON *root = cJSON_CreateObject(), *runs = cJSON_CreateArray(), *skipped = cJSON_CreateArray();
    int total = 0, done = 0;
    char sysname[64];
    if (o.system)
        snprintf(sysname, sizeof sysname, "%s", o.system);
    else
        snprintf(sysname, sizeof sysname, "water-%s", o.model);
    int grids[16][3], ngrids = 0;
    if (o.dd_list && st == HX_OK)
        ngrids = hx_bench_parse_grids(o.dd_list, grids, 16, &st);
    for (int k = 0; k < nknown; k++)
        total += list_has(o.backends, known[k]);
    total *= nsizes * (ngrids ? ngrids : 1);
    const double t_start = hx_wtime();
    for (int si = 0; si < nsizes && st == HX_OK; si++) {
        hx_system *sys = NULL;
        st = o.conf ? hx_gro_read(o.conf, &sys)
                    : hx_build_water(o.model, sizes[si], 0.0, (uint64_t)o.seed, &sys);
        if (st != HX_OK)
            break;
        int g1[3] = {0, 0, 0};
        const int ng = ngrids ? ngrids : 1;
        for (int g = 0; g < ng && st == HX_OK; g++) {
            const int *grid = ngrids ? grids[g] : g1;
            for (int k = 0; k < nknown && st == HX_OK; k++) {
                if (!list_has(o.backends, known[k]))
                    continue;
                const char *label = known[k];
                /* what this build cannot run is said once and skipped */
                const char *needs = strcmp(label, "cpu") == 0           ? NULL
                                    : strcmp(label, "gpu") == 0         ? "gpu-mpi"
                                    : strncmp(label, "nvshmem", 7) == 0 ? "nvshmem"
                                                                        : label;
                hx_status av = HX_OK;
                if (needs) {
                    av = hx_md_backend_available("gpu");
                    if (av == HX_OK && ndev == 0)
                        av = hx_error_set(HX_ERR_CUDA, __FILE__, __LINE__, __func__,
                                          "no GPU on this machine");
                    if (av == HX_OK && strcmp(label, "gpu") != 0)
                        av = hx_halo_backend_available(needs);
                }
                int refused = 0;
                double q[Q_N], mn[Q_N], avg[Q_N], mx[Q_N];
                hx_md_params used;
                hx_md_params_default(&used);
                if (av == HX_OK) {
                    st = run_one(world, gpu, &o, sys, grid, label, q, &used, &refused);
                    if (refused) {
                        av = st;
                        st = HX_OK;
                    }
                }
                if (av != HX_OK) {
                    if (rank == 0) {
                        fprintf(stderr, "halox bench md: %s skipped: %s\n", label,
                                hx_last_error_message());
                        cJSON *sk = cJSON_CreateObject();
                        cJSON_AddStringToObject(sk, "system", sysname);
                        cJSON_AddNumberToObject(sk, "atoms", sys->natoms);
                        cJSON_AddStringToObject(sk, "mode", "md");
                        cJSON_AddStringToObject(sk, "backend", label);
                        cJSON_AddNumberToObject(sk, "ranks", nranks);
                        int gz[3] = {grid[0], grid[1], grid[2]};
                        cJSON_AddItemToObject(sk, "dd", cJSON_CreateIntArray(gz, 3));
                        cJSON_AddStringToObject(sk, "status", hx_status_name(av));
                        cJSON_AddStringToObject(sk, "reason", hx_last_error_message());
                        cJSON_AddItemToArray(skipped, sk);
                    }
                    hx_clear_error();
                    done++;
                    continue;
                }
                if (st == HX_OK)
                    st = over_ranks(world, q, mn, avg, mx);
                done++;
                if (st != HX_OK || rank != 0)
                    continue;
                /* the slowest rank sets the pace of the step */
                const double step_us = mx[Q_STEP_US];
                const double nsday = used.dt * 1e-3 * 86400.0 / (step_us * 1e-6);
                cJSON *r = cJSON_CreateObject();
                cJSON_AddStringToObject(r, "system", sysname);
                cJSON_AddStringToObject(r, "model", o.model);
                cJSON_AddNumberToObject(r, "atoms", sys->natoms);
                cJSON_AddStringToObject(r, "mode", "md");
                cJSON_AddStringToObject(r, "backend", label);
                cJSON_AddStringToObject(r, "engine", strcmp(label, "cpu") == 0 ? "cpu" : "gpu");
                cJSON_AddNumberToObject(r, "ranks", nranks);
                cJSON_AddNumberToObject(r, "gpus",
                                        strcmp(label, "cpu") == 0 ? 0
                                        : gpu                     ? hx_gpu_context_gpus(gpu)
                                                                  : 0);
                int gd[3];
                if (ngrids)
                    memcpy(gd, grid, sizeof gd);
                else {
                    /* the chosen grid: ask the decomposition the same question */
                    hx_system *tmp = NULL;
                    gd[0] = gd[1] = gd[2] = 0;
                    if (hx_system_copy(sys, &tmp) == HX_OK) {
                        hx_system_make_whole(tmp);
                        hx_dd_choose_grid(tmp->box, used.rlist + hx_system_molecule_radius(tmp),
                                          used.rc, nranks, gd);
                        hx_system_destroy(&tmp);
                    }
                }
                cJSON_AddItemToObject(r, "dd", cJSON_CreateIntArray(gd, 3));
                cJSON_AddNumberToObject(r, "steps", o.steps);
                cJSON_AddNumberToObject(r, "warmup_steps", o.warmup);
                cJSON_AddNumberToObject(r, "nstlist", o.nstlist);
                cJSON_AddNumberToObject(r, "rc", used.rc);
                cJSON_AddNumberToObject(r, "rlist", used.rlist);
                cJSON_AddNumberToObject(r, "dt_ps", used.dt);
                cJSON_AddNumberToObject(r, "us_per_step", step_us);
                cJSON_AddNumberToObject(r, "us_per_step_fastest_rank", mn[Q_STEP_US]);
                cJSON_AddNumberToObject(r, "ns_per_day", nsday);
                cJSON_AddNumberToObject(r, "atom_steps_per_s", sys->natoms / (step_us * 1e-6));
                cJSON_AddNumberToObject(r, "search_step_us", mx[Q_SEARCH_US]);
                {
                    /* where a search step goes (slowest rank of each part) */
                    cJSON *sp = cJSON_AddObjectToObject(r, "search_step_parts_us");
                    for (int j = 0; sp && j < NSEARCH_PARTS; j++)
                        cJSON_AddNumberToObject(sp, search_parts[j], mx[Q_SEARCH_PART + j]);
                }
                /* where the search step ran: on the device (counts only to the host) or the
                 * host (state downloaded, hx_decomp, uploads); slow-path runs */
                cJSON_AddStringToObject(r, "search_step_on",
                                        mx[Q_DD_SEARCHES] > 0 ? "device" : "host");
                /* the whole search step (its forces and update too) on the step clock, where
                 * it ran: what a search step costs the run */
                if (isfinite(mx[Q_SEARCH_CLOCK_US]))
                    cJSON_AddNumberToObject(r, "search_step_clock_us", mx[Q_SEARCH_CLOCK_US]);
                cJSON_AddNumberToObject(r, "search_step_retries", mx[Q_DD_RETRIES]);
                cJSON_AddNumberToObject(r, "search_step_halo_updates", mx[Q_DD_HALO_UPDATES]);
                /* the average with the search steps in it (GROMACS's own figure includes its
                 * neighbour search), and ns/day from that */
                cJSON_AddNumberToObject(r, "us_per_step_with_search", mx[Q_ALL_US]);
                cJSON_AddNumberToObject(r, "ns_per_day_with_search",
                                        used.dt * 1e-3 * 86400.0 / (mx[Q_ALL_US] * 1e-6));
                if (o.nstmetrics > 0) {
                    /* the phases come from the sampled steps only: say which */
                    cJSON_AddNumberToObject(r, "metrics_every", o.nstmetrics);
                    add3(r, "local_work_us", mn[Q_LOCAL_US], avg[Q_LOCAL_US], mx[Q_LOCAL_US]);
                    add3(r, "nonlocal_work_us", mn[Q_NONLOCAL_US], avg[Q_NONLOCAL_US],
                         mx[Q_NONLOCAL_US]);
                    add3(r, "non_overlap_us", mn[Q_NONOVER_US], avg[Q_NONOVER_US],
                         mx[Q_NONOVER_US]);
                }
                cJSON_AddNumberToObject(r, "home_atoms_max", mx[Q_HOME]);
                cJSON_AddNumberToObject(r, "halo_atoms_max", mx[Q_HALO]);
                cJSON_AddItemToArray(runs, r);
                const double el = hx_wtime() - t_start;
                printf(
                    "%-10s %7d atoms %dx%dx%d %2d ranks: %8.1f us/step %8.1f ns/day (%7.1f with "
                    "searches)  local %6.1f  non-local %6.1f  non-overlap %6.1f us   [%d/%d, ETA "
                    "%.0f s]\n",
                    label, sys->natoms, gd[0], gd[1], gd[2], nranks, step_us, nsday,
                    used.dt * 1e-3 * 86400.0 / (mx[Q_ALL_US] * 1e-6), avg[Q_LOCAL_US],
                    avg[Q_NONLOCAL_US], avg[Q_NONOVER_US], done, total,
                    done < total ? el / done * (total - done) : 0.0);
                fflush(stdout);
            }
        }
        hx_system_destroy(&sys);
    }
    int rc = 0;
    if (st != HX_OK) {
        hx_cli_report_error("bench md", st);
        rc = 1;
    }
    if (rank == 0) {
        cJSON *meta = hx_bench_meta(argc, argv, "");
        cJSON_AddStringToObject(meta, "series", "md");
        cJSON_AddItemToObject(root, "meta", meta);
        cJSON_AddItemToObject(root, "runs", runs);
        cJSON_AddItemToObject(root, "skipped", skipped);
        runs = skipped = NULL;
        if (o.out) {
            hx_status ws = hx_bench_write_json(o.out, root);
            if (ws != HX_OK) {
                hx_cli_report_error("bench md", ws);
                rc = 1;
            } else {
                printf("results: %s\n", o.out);
            }
        }
    }
    cJSON_Delete(runs);
    cJSON_Delete(skipped);
    cJSON_Delete(root);
    hx_gpu_context_destroy(&gpu);
    hx_comm_destroy(&world);
    hx_mpi_finalize();
    return rc;
}
