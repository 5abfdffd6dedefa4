/* halox bench <series>: benchmarks with JSON results (format: docs/results-format.md).
 *
 *   exchange   repeated coordinate + force halo exchanges on a decomposed SPC/E water box (no
 *              forces are computed), every GPU backend side by side in one run; per-step time
 *              (median and spread), bytes and pulses. Run under mpirun, one rank per domain.
 *
 * The series table below is where later series (the MD suite) are added. */
#include "bench.h"
#include "commands.h"

#include "halox/gpu.h"
#include "halox/halox.h"
#include "halox/build.h"
#include "halox/version.h"
#include "halox/error.h"
#include "halox/timer.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef HALOX_SOURCE_DIR
#define HALOX_SOURCE_DIR "."
#endif

static int run_bench(int argc, char **argv);

const hx_cmd hx_cmd_bench = {
    "bench",
    "benchmarks with JSON results, comparisons and reports",
    "halox bench <series> [options]   (exchange, md, suite, compare, report; halox bench <series> "
    "--help)\n       halox bench --suite paper [options]   (the whole paper suite: halox bench "
    "suite --help)",
    "Runs a benchmark series and writes its results as JSON (docs/results-format.md in the\n"
    "halox sources).\n"
    "  exchange   halo exchange (coordinates + forces) of every GPU backend on a decomposed\n"
    "             water box; run under mpirun with one rank per domain.\n"
    "  md         the MD step of every backend; run under mpirun with one rank per domain.\n"
    "  suite      (or --suite paper) every series that fits this machine, resumable, with the\n"
    "             report; starts mpirun itself.",
    run_bench,
};

/* ---- exchange ----------------------------------------------------------------------------- */

static int run_exchange(int argc, char **argv);

static const hx_cmd cmd_exchange = {
    "exchange",
    "halo exchange of every GPU backend, side by side",
    "mpirun -np N halox bench exchange [--dd AxBxC[,...]] [--atoms-per-domain N[,...]] "
    "[--backends LIST] [--steps N] [-o results.json]",
    "Builds an SPC/E water box of (atoms per domain x domains) atoms, decomposes it (one domain\n"
    "per MPI rank; --dd lists grids whose product is the rank count), and times --steps\n"
    "coordinate + force exchanges per backend after --warmup untimed ones. No forces are\n"
    "computed: the exchange alone. Backends (comma list): gpu-mpi, gpu-direct, nvshmem\n"
    "(automatic path), nvshmem-p2p, nvshmem-network, nvshmem-bulk (P2P through the bulk-copy\n"
    "engine), nvshmem-graph (automatic path, one step captured in a CUDA graph and replayed).\n"
    "Per step: device time of a batch of --batch consecutive steps divided by the batch, from\n"
    "CUDA events at batch boundaries only (median, 10th/90th percentile, min, max over batches;\n"
    "the slowest rank's median is exchange_us; --batch 1 puts events between all steps, which\n"
    "under MPS adds a kernel boundary's time to each), and barrier-to-barrier wall time over\n"
    "all steps (us_per_step). For nvshmem\n"
    "the model of docs/design/gpu-halo.md gives floor_us (two launches plus one signal per\n"
    "dependency level and direction) and us_per_level.\n"
    "HALOX_BENCH_COMMAND, when set, is recorded as the command (the launcher's full line).",
    run_exchange,
};

#if HALOX_HAVE_CUDA
/* The signalling floor measured on the one-H200 test machine on 2026-12-02 (medians of thousands
 * of rounds): an empty kernel between back-to-back launches, 4.3 us of device time; and half the
 * 3.3 us round trip of a 4 KB message stored through nvshmem_ptr (256 threads) with a release
 * flag, 2 PEs under MPS. docs/design/gpu-halo.md, "Floors and predictions". */
#define HX_FLOOR_LAUNCH_US 4.3
#define HX_FLOOR_LEVEL_US 1.65

typedef struct bench_backend {
    const char *label, *backend;
    hx_halo_path path;
    int bulk, graph;
} bench_backend;

static const bench_backend bench_backends[] = {
    {"gpu-mpi", "gpu-mpi", HX_HALO_PATH_AUTO, 0, 0},
    {"gpu-direct", "gpu-direct", HX_HALO_PATH_AUTO, 0, 0},
    {"nvshmem", "nvshmem", HX_HALO_PATH_AUTO, 0, 0},
    {"nvshmem-p2p", "nvshmem", HX_HALO_PATH_P2P, 0, 0},
    {"nvshmem-network", "nvshmem", HX_HALO_PATH_NETWORK, 0, 0},
    {"nvshmem-bulk", "nvshmem", HX_HALO_PATH_P2P, 1, 0},
    {"nvshmem-graph", "nvshmem", HX_HALO_PATH_AUTO, 0, 1},
};
#define NBENCH_BACKENDS ((int)(sizeof bench_backends / sizeof bench_backends[0]))

typedef struct xopts {
    const char *dd_list, *apd_list, *backends, *out, *model;
    int steps, warmup, seed, batch;
    double rc, rlist, timeout;
    const char *gpu_ids; /* --gpu-id */
} xopts;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(const double *sorted, int n, double q)
{
    if (n == 0)
        return 0.0;
    int i = (int)floor(q * (n - 1) + 0.5);
    return sorted[i < 0 ? 0 : i >= n ? n - 1 : i];
}

/* Longest dependency chain of the plan, in levels: a pulse without deps is level 1, otherwise
 * 1 + the deepest pulse it waits for (the same in the force direction, reversed). The fused
 * kernels' critical path crosses one signal per level and direction. */
static int dependency_levels(const hx_domain_plan *p)
{
    int lev[HX_MAX_PULSES], maxl = 0;
    for (int q = 0; q < p->npulses; q++) {
        lev[q] = 1;
        for (int k = 0; k < q; k++)
            if ((p->pulses[q].deps >> k) & 1u)
                lev[q] = lev[k] + 1 > lev[q] ? lev[k] + 1 : lev[q];
        maxl = lev[q] > maxl ? lev[q] : maxl;
    }
    return maxl;
}

typedef struct timing {
    double med, p10, p90, min, max; /* this rank, us */
    double wall;                    /* us per step, barrier to barrier */
} timing;

/* Time one backend: warmup, then `steps` exchanges (rounded up to whole batches), with a CUDA
 * event at every batch boundary only: a sample is one batch's device time per step. Events
 * between every two steps are not free: under MPS each adds a gap of the size of a kernel
 * boundary to a stream that has no host synchronisation of its own (measured: 46.6 against
 * 63.3 us per step for the fused exchange on 4 PEs, bench/results/h200-2026-12-04e/call1_a565fc0),
 * so they would measure the events. The wall time covers every step. */
static hx_status time_backend(hx_halo *h, const bench_backend *b, int warmup, int steps, int batch,
                              void *stream, timing *t)
{
    const int ns = (steps + batch - 1) / batch; /* batches */
    steps = ns * batch;
    double *us = calloc((size_t)ns + 1, sizeof *us);
    hx_status st = HX_OK;
    if (!us)
        HX_FAIL_GOTO(st, HX_ERR_NOMEM, out, "out of memory");
    HX_TRY_GOTO(st, hx_halo_time_exchange(h, stream, warmup, steps, batch, b->graph, us, &t->wall),
                out);
    qsort(us, (size_t)ns, sizeof *us, cmp_double);
    t->med = pct(us, ns, 0.5);
    t->p10 = pct(us, ns, 0.1);
    t->p90 = pct(us, ns, 0.9);
    t->min = us[0];
    t->max = us[ns - 1];
out:
    free(us);
    return st;
}

/* One grid and size: build, and time every requested backend. Appends to runs. */
static hx_status bench_case(hx_comm *world, const hx_gpu_context *gpu, const xopts *o,
                            const int grid[3], int apd, cJSON *runs, char *nvv, size_t nvvlen,
                            int argc, char **argv)
{
    (void)argc;
    (void)argv;
    const int rank = hx_comm_rank(world), nranks = hx_comm_nranks(world);
    const int nd = grid[0] * grid[1] * grid[2];
    HX_CHECK(nd == nranks, HX_ERR_INVALID_ARG,
             "bench exchange: grid %dx%dx%d has %d domains but %d ranks run: one rank per domain",
             grid[0], grid[1], grid[2], nd, nranks);
    /* the decomposition layer the engine uses: the same molecules land on the same domains */
    hx_system *sys = NULL;
    HX_TRY(hx_build_water(o->model, apd * nd, 0.0, (uint64_t)o->seed, &sys));
    hx_system_make_whole(sys);
    hx_status st = HX_OK;
    hx_decomp *dec = NULL;
    /* the context's stream of the exchange, on its device (which the series made current for
     * its own copies and events) */
    void *s = hx_gpu_context_stream(gpu, HX_GPU_STREAM_NONLOCAL);
    hx_decomp_params dparams = {o->rc, o->rlist, {grid[0], grid[1], grid[2]}};
    HX_TRY_GOTO(st, hx_decomp_create(sys, &dparams, world, &dec), out);
    hx_plan *plan = hx_decomp_plan(dec);
    const double *xh = hx_decomp_get_local(dec, 0)->home->x;
    const hx_domain_plan *p = hx_plan_domain(plan, 0);
    long long mine[2] = {0, 0}, tot[2];
    for (int q = 0; q < p->npulses; q++) {
        mine[0] += 12LL * (p->pulses[q].send_count + p->pulses[q].recv_count);
        mine[1] += p->pulses[q].send_count;
    }
    HX_TRY_GOTO(st, hx_comm_max_i64(world, mine, tot, 2), out);
    const int levels = dependency_levels(p);
    for (int i = 0; i < NBENCH_BACKENDS; i++) {
        const bench_backend *b = &bench_backends[i];
        char want[512];
        snprintf(want, sizeof want, ",%s,", o->backends);
        char key[64];
        snprintf(key, sizeof key, ",%s,", b->label);
        if (!strstr(want, key))
            continue;
        if (hx_halo_backend_available(b->backend) != HX_OK) {
            if (rank == 0)
                fprintf(stderr, "halox bench exchange: %s skipped: %s\n", b->label,
                        hx_last_error_message());
            continue;
        }
        hx_halo_config cfg;
        hx_halo_config_default(&cfg);
        cfg.backend = b->backend;
        cfg.real = HX_REAL_F32;
        cfg.mem = HX_MEM_DEVICE;
        cfg.path = b->path;
        cfg.bulk_copy = b->bulk;
        cfg.wait_timeout = o->timeout;
        cfg.gpu = gpu;
        hx_halo *h = NULL;
        hx_status cs = hx_halo_create(plan, world, &cfg, &h);
        if (cs != HX_OK) {
            /* a backend that cannot run here (e.g. forced P2P without addressable peers) is
             * reported and skipped; the others still run */
            if (rank == 0)
                fprintf(stderr, "halox bench exchange: %s on %dx%dx%d: %s\n", b->label, grid[0],
                        grid[1], grid[2], hx_last_error_message());
            continue;
        }
        if (strcmp(b->backend, "nvshmem") == 0 && !nvv[0] && nvvlen >= 32)
            sscanf(hx_halo_describe(h), "nvshmem %31s", nvv);
        /* coordinates of the home atoms; forces: anything finite */
        float *xf = malloc(sizeof(float) * 3 * ((size_t)p->n_local + 1));
        for (int k = 0; k < 3 * p->n_home; k++)
            xf[k] = (float)xh[k];
        for (int k = 3 * p->n_home; k < 3 * p->n_local; k++)
            xf[k] = 0.5f;
        hx_gpu_copy(hx_halo_x(h, 0), xf, sizeof(float) * 3 * (size_t)p->n_home);
        hx_gpu_copy(hx_halo_f(h, 0), xf + 3 * (size_t)p->n_home,
                    sizeof(float) * 3 * (size_t)(p->n_local - p->n_home));
        free(xf);
        timing t;
        memset(&t, 0, sizeof t);
        hx_status ts = time_backend(h, b, o->warmup, o->steps, o->batch, s, &t);
        double meds_max = 0, meds_min = 0;
        if (ts == HX_OK) {
            /* the slowest and the fastest rank's medians (in ns, through the max reduction) */
            long long in[2] = {llround(t.med * 1e3), -llround(t.med * 1e3)}, out2[2];
            ts = hx_comm_max_i64(world, in, out2, 2);
            meds_max = out2[0] * 1e-3;
            meds_min = -out2[1] * 1e-3;
        }
        if (ts == HX_OK && rank == 0) {
            cJSON *r = cJSON_CreateObject();
            cJSON_AddStringToObject(r, "system", "water-spce");
            cJSON_AddNumberToObject(r, "atoms", sys->natoms);
            cJSON_AddNumberToObject(r, "atoms_per_domain", apd);
            cJSON_AddStringToObject(r, "mode", "exchange");
            cJSON_AddStringToObject(r, "backend", b->label);
            cJSON_AddStringToObject(r, "describe", hx_halo_describe(h));
            cJSON_AddNumberToObject(r, "ranks", nranks);
            cJSON_AddNumberToObject(r, "gpus", hx_gpu_context_gpus(gpu));
            int gd[3] = {grid[0], grid[1], grid[2]};
            cJSON_AddItemToObject(r, "dd", cJSON_CreateIntArray(gd, 3));
            cJSON_AddNumberToObject(r, "pulses", p->npulses);
            cJSON_AddNumberToObject(r, "dependency_levels", levels);
            cJSON_AddNumberToObject(r, "steps", (o->steps + o->batch - 1) / o->batch * o->batch);
            cJSON_AddNumberToObject(r, "warmup_steps", o->warmup);
            cJSON_AddNumberToObject(r, "batch_steps", o->batch);
            cJSON_AddNumberToObject(r, "exchange_us", meds_max);
            cJSON_AddNumberToObject(r, "exchange_us_fastest_rank", meds_min);
            cJSON_AddNumberToObject(r, "exchange_us_rank0_p10", t.p10);
            cJSON_AddNumberToObject(r, "exchange_us_rank0_p90", t.p90);
            cJSON_AddNumberToObject(r, "exchange_us_rank0_min", t.min);
            cJSON_AddNumberToObject(r, "exchange_us_rank0_max", t.max);
            cJSON_AddNumberToObject(r, "us_per_step", t.wall);
            /* what the deadlines were (HALOX_WAIT_TIMEOUT, --timeout): their cost is measured
             * with them on and off (scripts/h200_probe.sh waitcost) */
            cJSON_AddNumberToObject(r, "wait_timeout_s", hx_wait_timeout(HX_WAIT_STEP));
            cJSON_AddNumberToObject(r, "device_wait_timeout_s",
                                    o->timeout >= 0 ? o->timeout
                                                    : 0.5 * hx_wait_timeout(HX_WAIT_STEP));
            if (strcmp(b->backend, "nvshmem") == 0) {
                /* docs/design/gpu-halo.md: two kernel launches, then one one-way signal (with
                 * its data) per dependency level and direction */
                const double floor_us = 2 * HX_FLOOR_LAUNCH_US + 2 * levels * HX_FLOOR_LEVEL_US;
                cJSON_AddNumberToObject(r, "floor_us", floor_us);
                cJSON_AddNumberToObject(r, "us_per_level",
                                        (meds_max - 2 * HX_FLOOR_LAUNCH_US) / (2.0 * levels));
                cJSON_AddNumberToObject(r, "floor_us_per_level", HX_FLOOR_LEVEL_US);
            }
            cJSON_AddNumberToObject(r, "bytes_per_step_max_rank", (double)tot[0]);
            cJSON_AddNumberToObject(r, "atoms_sent_per_step_max_rank", (double)tot[1]);
            cJSON_AddNumberToObject(r, "rc", o->rc);
            cJSON_AddNumberToObject(r, "rlist", o->rlist);
            cJSON_AddNumberToObject(r, "r_comm", hx_decomp_r_comm(dec));
            cJSON_AddStringToObject(r, "timing",
                                    "exchange_us: median over batches of batch_steps "
                                    "consecutive steps of the device time per step (events at "
                                    "batch boundaries only), slowest rank; us_per_step: "
                                    "barrier-to-barrier wall time / steps");
            cJSON_AddItemToArray(runs, r);
            printf("%-16s %dx%dx%d %7d atoms/domain  %2d pulses  %8.1f us/step (device median, "
                   "slowest rank)  %8.1f us/step (wall)\n",
                   b->label, grid[0], grid[1], grid[2], apd, p->npulses, meds_max, t.wall);
            fflush(stdout);
        }
        hx_halo_destroy(&h);
        HX_TRY_GOTO(st, hx_comm_agree(world, ts), out);
    }
out:
    hx_decomp_destroy(&dec);
    hx_system_destroy(&sys);
    return st;
}

static int run_exchange(int argc, char **argv)
{
    xopts o = {.apd_list = "11000",
               .backends = "gpu-mpi,gpu-direct,nvshmem,nvshmem-network,nvshmem-bulk,nvshmem-graph",
               .model = "spce",
               .steps = 2000,
               .warmup = 200,
               .seed = 1,
               .batch = 20,
               .rc = 1.0,
               .rlist = 1.1,
               .timeout = -1.0};
    hx_opt opts[] = {
        {"dd", NULL, HX_OPT_STRING, &o.dd_list, "AxBxC[,...]",
         "domain grids (product = ranks; default: chosen for the rank count)"},
        {"atoms-per-domain", NULL, HX_OPT_STRING, &o.apd_list, "N[,...]",
         "atoms per domain (a comma list runs a series)"},
        {"backends", NULL, HX_OPT_STRING, &o.backends, "LIST",
         "comma list: gpu-mpi gpu-direct nvshmem nvshmem-p2p nvshmem-network nvshmem-bulk "
         "nvshmem-graph"},
        {"steps", NULL, HX_OPT_INT, &o.steps, "N", "timed steps per backend"},
        {"warmup", NULL, HX_OPT_INT, &o.warmup, "N", "untimed steps first"},
        {"batch", NULL, HX_OPT_INT, &o.batch, "N",
         "steps per timed batch: events at batch boundaries only (default 20; 1: around every "
         "step)"},
        {"rc", NULL, HX_OPT_DOUBLE, &o.rc, "NM", "cut-off"},
        {"rlist", NULL, HX_OPT_DOUBLE, &o.rlist, "NM",
         "pair-list radius (r_comm adds the molecule radius)"},
        {"seed", NULL, HX_OPT_INT, &o.seed, "S", "seed of the water box"},
        {"timeout", NULL, HX_OPT_DOUBLE, &o.timeout, "S",
         "deadline of the NVSHMEM device-side waits in seconds (0: off; default: half the step "
         "deadline of HALOX_WAIT_TIMEOUT, 30 s); a hang becomes a report"},
        {"gpu-id", NULL, HX_OPT_STRING, &o.gpu_ids, "LIST",
         "GPUs as CUDA device indices: node-local rank i runs on entry i % (entries), e.g. 0,1 "
         "or 0,0,1,1 (default: node-local rank modulo the visible GPUs)"},
        {"o", "output", HX_OPT_STRING, &o.out, "FILE", "write the JSON results here"},
    };
    int pr = hx_cli_parse(&cmd_exchange, opts, (int)(sizeof opts / sizeof opts[0]), argc, argv);
    if (pr != 0)
        return pr > 0 ? 0 : 2;
    if (o.steps < 1 || o.warmup < 0 || o.batch < 1 || o.rlist < o.rc) {
        fprintf(stderr, "halox bench exchange: error: need --steps >= 1, --warmup >= 0, "
                        "--batch >= 1 and --rlist >= --rc\n");
        return 2;
    }
    int apd[32], napd = hx_bench_parse_ints(o.apd_list, LONG_MAX, apd, 32);
    if (napd <= 0) {
        fprintf(stderr,
                "halox bench exchange: error: --atoms-per-domain '%s': give positive "
                "integers separated by commas\n",
                o.apd_list);
        return 2;
    }
    hx_comm *world = hx_bench_world("bench exchange", &argc, &argv);
    if (!world)
        return 1;
    hx_status st = HX_OK;
    const int rank = hx_comm_rank(world), nranks = hx_comm_nranks(world);
    int ndev = 0;
    const char *why = NULL;
    hx_gpu_device_count(&ndev, &why);
    if (ndev == 0) {
        if (rank == 0)
            fprintf(stderr, "halox bench exchange: error: no GPU: %s\n", why ? why : "none");
        hx_comm_destroy(&world);
        hx_mpi_finalize();
        return 1;
    }
    /* the device of this rank, chosen once before any stream exists (collective) */
    hx_gpu_context *gpu = NULL;
    st = hx_bench_gpu_context(world, o.gpu_ids, &gpu);
    if (st != HX_OK) {
        if (st != HX_ERR_REMOTE)
            hx_cli_report_error("bench exchange", st);
        hx_comm_destroy(&world);
        hx_mpi_finalize();
        return 1;
    }
    if (rank == 0)
        printf("rank 0: %s\n", hx_gpu_context_describe(gpu));
    int grids[16][3], ngrids = 0;
    if (o.dd_list) {
        ngrids = hx_bench_parse_grids(o.dd_list, grids, 16, &st);
    } else {
        /* the box depends on the size; the grid choice on the first size's box */
        hx_system *S = NULL;
        st = hx_build_water(o.model, apd[0] * nranks, 0.0, (uint64_t)o.seed, &S);
        if (st == HX_OK) {
            hx_system_make_whole(S);
            st = hx_dd_choose_grid(S->box, o.rlist + hx_system_molecule_radius(S), o.rc, nranks,
                                   grids[0]);
        }
        ngrids = 1;
        hx_system_destroy(&S);
    }
    cJSON *root = cJSON_CreateObject(), *runs = cJSON_CreateArray();
    char nvv[32] = "";
    if (rank == 0)
        printf("halox bench exchange: %d ranks, %d steps (+%d warm-up) per backend\n", nranks,
               o.steps, o.warmup);
    for (int g = 0; g < ngrids && st == HX_OK; g++)
        for (int k = 0; k < napd && st == HX_OK; k++)
            st = bench_case(world, gpu, &o, grids[g], apd[k], runs, nvv, sizeof nvv, argc, argv);
    int rc = 0;
    if (st != HX_OK) {
        hx_cli_report_error("bench exchange", st);
        rc = 1;
    }
    if (rank == 0) {
        cJSON_AddItemToObject(root, "meta", hx_bench_meta(argc, argv, nvv));
        cJSON_AddItemToObject(root, "runs", runs);
        runs = NULL;
        if (o.out) {
            hx_status ws = hx_bench_write_json(o.out, root);
            if (ws != HX_OK) {
                hx_cli_report_error("bench exchange", ws);
                rc = 1;
            } else {
                printf("results: %s\n", o.out);
            }
        }
    }
    cJSON_Delete(runs);
    cJSON_Delete(root);
    hx_gpu_context_destroy(&gpu);
    hx_comm_destroy(&world);
    hx_mpi_finalize();
    return rc;
}

#else
static int run_exchange(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "halox bench exchange: this halox was built without CUDA: the exchange "
                    "benchmark times the GPU backends\n");
    return 1;
}
#endif

/* ---- compare and report ------------------------------------------------------------------- */

static int run_compare(int argc, char **argv);
static const hx_cmd cmd_compare = {
    "compare", "ratios between two result files (another machine, another revision)",
    "halox bench compare A.json B.json",
    "Matches the runs of two result files (mode, system, atoms, backend and path, ranks, GPUs,\n"
    "grid) and prints the time of each in both and the ratio B/A, then the geometric mean of\n"
    "the ratios. Exit status 1 when no run is in both files.",
    run_compare};

static int run_compare(int argc, char **argv)
{
    hx_opt opts[1];
    int pr = hx_cli_parse(&cmd_compare, opts, 0, argc < 2 ? argc : 1, argv);
    if (pr != 0)
        return pr > 0 ? 0 : 2;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            hx_cli_print_help(&cmd_compare, opts, 0);
            return 0;
        }
    if (argc != 3) {
        fprintf(stderr, "halox bench compare: expects two result files: %s\n", cmd_compare.usage);
        return 2;
    }
    return hx_bench_compare(argv[1], argv[2], stdout);
}

static int run_report(int argc, char **argv);
static const hx_cmd cmd_report = {
    "report", "Markdown report with plots of every result file in a directory",
    "halox bench report DIR [-o REPORT.md]",
    "Reads every .json result file in DIR, writes a Markdown report\n"
    "(tables per series) and PNG plots next to the results: ns/day against ranks, time per step\n"
    "by phase (local work, non-overlapped halo, the rest; the paper's Fig. 6), the search step\n"
    "by part (table and plot, where the runs have it: on the device or the host), exchange time\n"
    "against atoms per domain and against pulses. Plots need gnuplot. Files are replaced only\n"
    "when written completely. DIR has no default: the report and plots are written into it,\n"
    "and the repository's bench/results is tracked (report on a copy, or give -o elsewhere).",
    run_report};

static int run_report(int argc, char **argv)
{
    const char *out = NULL;
    hx_opt opts[] = {
        {"o", "output", HX_OPT_STRING, &out, "FILE", "the report (default DIR/REPORT.md)"}};
    /* the results directory is the one positional argument; the rest are options. No
     * default: run from the repository, bench/results was the default and the report and its
     * PNGs went into the tracked results. */
    const char *dir = NULL;
    char *rest[16];
    int nrest = 0;
    for (int i = 0; i < argc && nrest < 16; i++) {
        const int opt_with_value = strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0;
        if (i > 0 && argv[i][0] != '-') {
            dir = argv[i];
            continue;
        }
        rest[nrest++] = argv[i];
        if (opt_with_value && i + 1 < argc && nrest < 16)
            rest[nrest++] = argv[++i];
    }
    int pr = hx_cli_parse(&cmd_report, opts, 1, nrest, rest);
    if (pr != 0)
        return pr > 0 ? 0 : 2;
    if (!dir) {
        fprintf(stderr, "halox bench report: give the directory of the result files: halox bench "
                        "report DIR (the report and its plots are written into DIR; to leave a "
                        "tracked directory such as bench/results as it is, report on a copy)\n");
        return 2;
    }
    char path[1100];
    if (!out) {
        snprintf(path, sizeof path, "%s/REPORT.md", dir);
        out = path;
    }
    int rc = hx_bench_report(dir, out);
    if (rc == 0)
        printf("report: %s\n", out);
    return rc;
}

/* ---- the series --------------------------------------------------------------------------- */

static const hx_cmd *const series[] = {&cmd_exchange, &hx_bench_cmd_md, &hx_bench_cmd_suite,
                                       &cmd_compare, &cmd_report};
#define NSERIES ((int)(sizeof series / sizeof series[0]))

static int run_bench(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        FILE *out = argc < 2 ? stderr : stdout;
        fprintf(out, "usage: %s\n\n%s\n\nseries:\n", hx_cmd_bench.usage, hx_cmd_bench.description);
        for (int i = 0; i < NSERIES; i++)
            fprintf(out, "  %-10s %s\n", series[i]->name, series[i]->summary);
        return argc < 2 ? 2 : 0;
    }
    /* halox bench --suite NAME [options]: the suite, its options as given */
    if (strncmp(argv[1], "--suite", 7) == 0)
        return hx_bench_cmd_suite.run(argc, argv);
    for (int i = 0; i < NSERIES; i++)
        if (strcmp(argv[1], series[i]->name) == 0)
            return series[i]->run(argc - 1, argv + 1);
    fprintf(stderr,
            "halox bench: unknown series '%s' (series: exchange, md, suite, compare, report; "
            "or --suite paper)\n",
            argv[1]);
    return 2;
}
