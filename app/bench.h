/* halox bench: result sets (JSON, docs/results-format.md), comparison and the report. The series
 * themselves are run by app/cmd_bench.c. */
#ifndef HX_APP_BENCH_H
#define HX_APP_BENCH_H

#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "halox/comm.h"
#include "halox/gpu.h"
#include "halox/status.h"

typedef struct hx_bench_run {
    char system[64], mode[16], backend[32], path[16];
    int bulk_copy; /* 1 on, 0 off, <0 not applicable */
    long long atoms, steps;
    int ranks, gpus, pulses, dd[3];
    double us_per_step, us_min, us_max, ns_per_day;
    double ns_per_day_search; /* with the search steps in it ("ns_per_day_with_search"; NAN) */
    double local_work_us, nonlocal_work_us, non_overlap_us, exchange_us;
    double atoms_per_domain;
    int metrics_every; /* the phases were sampled on every N-th step ("metrics_every"; 0: unknown)
                        */
    /* the search step ("search_step_us", "search_step_parts_us": the six parts that tile it,
     * then the coordinate halo inside the last; NAN where absent), where it ran
     * ("search_step_on": 1 device, 0 host, -1 not said), its slow paths in the run
     * ("search_step_retries" + "search_step_halo_updates"; NAN where absent), "nstlist" (0) */
    double search_step_us, search_parts_us[7], search_slow_paths;
    int search_on_device, nstlist;
    char engine[16]; /* "cpu", "gpu", "gromacs" ("" when the file does not say) */
    /* (warmup_steps + steps) / steps for a halox bench md run written before 2026-12-05, whose
     * times per step were that much too low (the warm-up's steps were counted; see
     * bench/warmup_erratum.py); 1 otherwise */
    double warmup_error;
    double efficiency; /* parallel efficiency in its set (set by the report; NAN otherwise) */
} hx_bench_run;

typedef struct hx_bench_set {
    char path[1024];
    char git_revision[64], gpu[128], date[64], series[64], command[1024];
    hx_bench_run *runs;
    int nruns;
} hx_bench_set;

/* 0 on success; on failure -1 with a message (file and what is wrong) in err. */
int hx_bench_load(const char *path, hx_bench_set *set, char *err, size_t errcap);
void hx_bench_free(hx_bench_set *set);
/* The identity of a run across result files: mode, system, atoms, backend/path, ranks, GPUs,
 * grid. */
void hx_bench_run_key(const hx_bench_run *r, char *key, size_t cap);
/* `halox bench compare A B`: the time ratio B/A of every run in both files. Exit code. */
int hx_bench_compare(const char *a, const char *b, FILE *out);
/* Markdown report of every result file in dir, with PNG plots next to it (gnuplot). Exit code. */
int hx_bench_report(const char *dir, const char *report_path);

/* Shared by the series (app/cmd_bench.c): the "meta" object (docs/results-format.md: git revision,
 * date, host, CPU, GPU, driver, CUDA, NVSHMEM, MPI, command) and an atomic JSON write. */
struct hx_cmd;
extern const struct hx_cmd hx_bench_cmd_md;    /* app/bench_md.c */
extern const struct hx_cmd hx_bench_cmd_suite; /* app/bench_suite.c */
void hx_bench_git_revision(char *buf, size_t len);
cJSON *hx_bench_meta(int argc, char **argv, const char *nvshmem_version);
hx_status hx_bench_write_json(const char *path, cJSON *root);
/* The start of a series run under MPI or alone: MPI initialised, the job's communicator, log
 * lines tagged with the rank. NULL after reporting the error (as "halox NAME: ..."). */
hx_comm *hx_bench_world(const char *name, int *argc, char ***argv);
/* The GPU context of a series, collective over world: node-local rank modulo the devices, or
 * entry (node-local rank % n) of `gpu_ids` (--gpu-id); its device made current for the series'
 * own CUDA calls (copies, events, graphs). HX_OK or an error on every rank. */
hx_status hx_bench_gpu_context(hx_comm *world, const char *gpu_ids, hx_gpu_context **out);
/* "AxBxC[,...]" into grids (at most max); the count, or the parse error in *st. */
int hx_bench_parse_grids(const char *list, int (*grids)[3], int max, hx_status *st);
/* "A[,B...]", each in 1..vmax, into out (at most max); the count, or -1 when one is not. */
int hx_bench_parse_ints(const char *list, long vmax, int *out, int max);

#endif
