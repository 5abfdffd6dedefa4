/* Single-GPU MD benchmark: SPC/E water, rc 1.0 nm, reaction field (eps_rf = infinity), 2 fs,
 * SETTLE, NVE, the product's step: the engine (hx_md_create with the "gpu" backend on one
 * domain, its step schedule, a plain step captured in a CUDA graph after every search and
 * replayed), timed by the engine's own step timing (hx_md_params.step_timing).
 *
 * For every size and list configuration (nstlist : rolling-prune parts), a fresh engine (the
 * same start every time: velocities at 300 K from --seed, the start constrained), a warm-up,
 * then a timed hx_md_run of --steps steps:
 *  - time per step from the clock points (CUDA events) the engine records after every step:
 *    median over non-search steps, mean over all steps (search steps included), median of
 *    search steps; the host wall clock over the run (its closing energy evaluation included) as
 *    a check; ns/day from the mean; the host time of a search (from the engine's timings: the
 *    search alone, after the steps before it have finished);
 *  - the pair kernel alone (forces only and with energies) and the prune kernel, back to back,
 *    on the engine's own list;
 *  - where a step's time goes (HX_MD_STEP_BREAKDOWN, 200 more steps each waited for, event
 *    nodes in the step's graph): the local work (pair kernel with the prune and home terms
 *    beside it, as the step issues them), from there to the update's end, and the rest of the
 *    median step (graph launch and step boundaries);
 *  - pairs within the cut-off and pair evaluations (cluster pairs x 64) per step, pair rate;
 *  - the floor from the arithmetic: 38 flops per pair within the cut-off at 67 TFLOP/s (FP32,
 *    H200 datasheet), and the evaluations' floor at one warp instruction per ~31 per pair.
 * Output: a table last, and JSON (format: docs/results-format.md) with --json.
 *
 * Options: --atoms 45000,180000,360000  --steps 4000  --warmup 300 (rounded up to one step
 *          before a search, so that the timed run's searches fall inside it; 0: none, the timed
 *          run starts with the engine's first step, an energy step)
 *          --configs 100:4,40:4,20:0 (nstlist:prune parts[:inner tolerance]; rlist from the
 *          buffer tolerance for nstlist steps, the inner radius for parts + 1 steps from the
 *          inner tolerance, default the same)  --tolerance 0.005
 *          --no-graph (hx_md_params.no_graph: every step launched directly)  --json FILE
 *          --git-revision HASH  --seed N  --breakdown-steps 200 (0: no breakdown)
 * Up to commit 'gpu_md_bench: the engine's step' this benchmark drove a copy of the step of its
 * own (tests/gpu_md_driver.c: the local work on the non-local stream, no non-local or halo
 * calls, no event of the schedule); its numbers are not the engine's. */
#include "test_gpu_common.h"

#include "halox/gpu.h"
#include "halox/build.h"
#include "halox/log.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_SIZES 8
#define MAX_CONFIGS 8

typedef struct result {
    int atoms, nstlist, parts, steps;
    double rlist, rinner;
    double us_median, us_mean, us_search, us_wall, ns_day;
    double nb_us, nbe_us, prune_us, search_ms;
    double local_us, upd_us, gaps_us;      /* HX_MD_STEP_BREAKDOWN; gaps: us_median minus both */
    double stage_us[HX_GPU_SEARCH_STAGES]; /* per search; zero without HALOX_GPU_SEARCH_TIMING=1 */
    long long pairs_rc, evals;
    int nent, nitems, nsc;
    double gpairs_s, floor_flops_us;
    int ok;
} result;

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : (x > y ? 1 : 0);
}

static double median(double *v, int n)
{
    if (n <= 0)
        return NAN;
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int parse_list(const char *s, int *out, int cap)
{
    int n = 0;
    while (s && *s && n < cap) {
        out[n++] = atoi(s);
        s = strchr(s, ',');
        if (s)
            s++;
    }
    return n;
}

/* The shipped equilibrated boxes tiled (each engine constrains the start and draws Maxwell-
 * Boltzmann velocities at 300 K), and the force field on a copy for the buffer estimates. */
static hx_system *prepare(int natoms, uint64_t seed, hx_system **sff, hx_forcefield **ff)
{
    hx_system *s0 = NULL;
    if (hx_build_water("spce", natoms, 0, seed, &s0) == HX_OK && hx_system_copy(s0, sff) == HX_OK &&
        hx_forcefield_create("spce", ff) == HX_OK && hx_forcefield_apply(*ff, *sff) == HX_OK)
        return s0;
    fprintf(stderr, "preparing %d atoms of water failed: %s\n", natoms, hx_last_error());
    hx_system_destroy(&s0);
    hx_system_destroy(sff);
    hx_forcefield_destroy(ff);
    return NULL;
}

static int g_bd_steps = 200; /* --breakdown-steps */

/* nsteps more steps of md through hx_md_run (energies at its end only) */
static hx_status run_steps(hx_md *md, long long nsteps)
{
    hx_md_set_steps(md, nsteps);
    return hx_md_run(md, NULL);
}

static void run_one(const hx_system *s0, const hx_system *s, const hx_forcefield *ff, int nstlist,
                    int parts, double tol, double tol_inner, int steps, int warmup, int graph,
                    uint64_t seed, result *r)
{
    memset(r, 0, sizeof *r);
    r->atoms = s->natoms;
    r->nstlist = nstlist;
    r->parts = parts;
    r->steps = steps;
    hx_nb_params nbp = {1.0, 0.0, 1.0};
    double rl = 1.0, ri = 1.0;
    if (hx_nb_rlist_from_tolerance(ff, s, &nbp, 0.002, nstlist, 300.0, tol, &rl) != HX_OK ||
        hx_nb_rlist_from_tolerance(ff, s, &nbp, 0.002, parts > 0 ? parts + 1 : nstlist, 300.0,
                                   tol_inner > 0 ? tol_inner : tol, &ri) != HX_OK) {
        fprintf(stderr, "buffer estimate failed: %s\n", hx_last_error());
        return;
    }
    r->rlist = rl;
    r->rinner = parts > 0 ? ri : rl;
    hx_md_params p;
    hx_md_params_default(&p);
    p.backend = "gpu";
    p.gpu = tg_gpu();
    p.gen_vel = 1;
    p.gen_temp = 300;
    p.seed = seed;
    p.rc = 1.0;
    p.rlist = r->rlist;
    p.nstlist = nstlist;
    p.nstcheck = 0;
    p.prune_parts = parts;
    p.rlist_inner = parts > 0 ? r->rinner : 0.0;
    p.no_graph = !graph;
    p.step_timing = HX_MD_STEP_TIMES;
    hx_md *md = NULL;
    if (!p.gpu || hx_md_create(s0, &p, &md) != HX_OK) {
        fprintf(stderr, "GPU MD set-up failed: %s\n", hx_last_error());
        return;
    }
    hx_status st = HX_OK;
    /* the warm-up ends one step before a search: the timed run's searches (every nstlist
     * steps from its second step) are then its own, and its closing evaluation none */
    if (warmup > 0)
        st = run_steps(md, warmup + (nstlist - 1 - warmup % nstlist + nstlist) % nstlist);
    hx_md_timings t0;
    hx_md_get_timings(md, &t0);
    const double w0 = wall_s();
    if (st == HX_OK)
        st = run_steps(md, steps);
    const double w1 = wall_s();
    hx_md_step_time *rec = malloc(sizeof *rec * (size_t)(steps + 1));
    int nt = 0;
    if (st == HX_OK)
        st = rec ? hx_md_get_step_times(md, rec, steps, &nt) : HX_ERR_NOMEM;
    if (st != HX_OK) {
        fprintf(stderr, "step failed: %s\n", hx_last_error());
        free(rec);
        hx_md_destroy(&md);
        return;
    }
    if (nt > steps)
        nt = steps;
    hx_md_timings t1;
    hx_md_get_timings(md, &t1);
    double total = 0;
    int nn = 0, ns = 0;
    double *normal = malloc(sizeof(double) * (size_t)(nt + 1));
    double *search = malloc(sizeof(double) * (size_t)(nt + 1));
    for (int k = 0; k < nt; k++) {
        total += rec[k].us;
        if (rec[k].search)
            search[ns++] = rec[k].us;
        else
            normal[nn++] = rec[k].us;
    }
    r->us_median = median(normal, nn);
    r->us_search = median(search, ns);
    r->us_mean = nt > 0 ? total / nt : NAN;
    r->us_wall = 1e6 * (w1 - w0) / steps;
    r->ns_day = 0.002 * 1e-3 * 86400.0 / (1e-6 * r->us_mean);
    /* the run's search time (its timings start with it; the count is the engine's) */
    const long long nsearch = t1.searches - t0.searches;
    r->search_ms = nsearch > 0 ? 1e3 * t1.search / (double)nsearch : NAN;
    /* the kernels below are timed on the list as the steps between searches use it: with the
     * rolling prune, every part pruned once since the last search (at a search the inner masks
     * are the looser cluster-box ones until then) */
    while (parts > 0 && parts + 1 < nstlist && hx_md_current_step(md) % nstlist != parts + 1 &&
           hx_md_step(md) == HX_OK)
        ;
    /* one energy step: pairs within the cut-off */
    hx_gpu_nb *nb = tg_md_nb(md);
    if (hx_md_step(md) == HX_OK) {
        hx_nb_energies ne;
        hx_gpu_nb_read_energies(nb, &ne, &r->pairs_rc);
    }
    hx_gpu_nb_stats nst;
    hx_gpu_nb_get_stats(nb, &nst);
    r->evals = 32 * nst.ncp_inner[0]; /* half cluster pairs: 8 x 4 atoms */
    r->nent = nst.nent[0];
    r->nitems = nst.nitems[0];
    r->nsc = nst.nsc;
    for (int k = 0; k < HX_GPU_SEARCH_STAGES; k++)
        r->stage_us[k] = nst.searches > 0 ? 1e3 * nst.search_stage_ms[k] / nst.searches : 0.0;
    double pm = 0, pem = 0, prm = 0;
    if (hx_gpu_nb_time_kernels(nb, 0, 0, 50, NULL, &pm, &prm) == HX_OK &&
        hx_gpu_nb_time_kernels(nb, 0, HX_GPU_NB_ENERGY, 20, NULL, &pem, NULL) == HX_OK) {
        r->nb_us = 1e3 * pm;
        r->nbe_us = 1e3 * pem;
        r->prune_us = 1e3 * prm;
    } else {
        fprintf(stderr, "kernel timing failed: %s\n", hx_last_error());
    }
    /* the breakdown: g_bd_steps more steps, each waited for, its points inside the step's
     * graph; medians of the steps between searches */
    r->local_us = r->upd_us = NAN;
    int nb_rec = 0;
    if (g_bd_steps <= 0) {
        /* left out */
    } else if (hx_md_set_step_timing(md, HX_MD_STEP_BREAKDOWN) == HX_OK &&
               run_steps(md, g_bd_steps) == HX_OK &&
               hx_md_get_step_times(md, NULL, 0, &nb_rec) == HX_OK) {
        hx_md_step_time *bd = malloc(sizeof *bd * (size_t)(nb_rec + 1));
        double *lo = malloc(sizeof(double) * (size_t)(nb_rec + 1));
        double *up = malloc(sizeof(double) * (size_t)(nb_rec + 1));
        int m = 0;
        if (bd && lo && up && hx_md_get_step_times(md, bd, nb_rec, &nb_rec) == HX_OK)
            for (int k = 0; k < nb_rec; k++)
                if (!bd[k].search && isfinite(bd[k].local_us) && isfinite(bd[k].update_us)) {
                    lo[m] = bd[k].local_us;
                    up[m] = bd[k].update_us;
                    m++;
                }
        if (m > 0) {
            r->local_us = median(lo, m);
            r->upd_us = median(up, m);
        }
        free(bd);
        free(lo);
        free(up);
    } else {
        fprintf(stderr, "step breakdown failed: %s\n", hx_last_error());
    }
    r->gaps_us = r->us_median - r->local_us - r->upd_us;
    r->gpairs_s = r->nb_us > 0 ? r->pairs_rc / (r->nb_us * 1e-6) * 1e-9 : 0;
    r->floor_flops_us = r->pairs_rc * 38.0 / 67e12 * 1e6;
    r->ok = 1;
    printf("  %7d atoms nstlist %3d prune %d rlist %.3f/%.3f: %7.1f us/step median, %7.1f mean "
           "(wall %7.1f), search step %8.1f us (search %.2f ms), nb %6.1f us (energies %6.1f, "
           "prune %5.1f), %lld pairs < rc, %lld evaluations, %.1f Gpairs/s\n",
           r->atoms, nstlist, parts, r->rlist, r->rinner, r->us_median, r->us_mean, r->us_wall,
           r->us_search, r->search_ms, r->nb_us, r->nbe_us, r->prune_us, r->pairs_rc, r->evals,
           r->gpairs_s);
    printf("    %d searches, %d captures of the search's graph, %d buffer growths\n", nst.searches,
           nst.search_captures, nst.regrows);
    printf("    step breakdown (median, synchronised steps): local work %.1f us, update %.1f us, "
           "the rest of the median step %.1f us\n",
           r->local_us, r->upd_us, r->gaps_us);
    if (r->stage_us[HX_GPU_SEARCH_STAGES - 3] > 0) {
        printf("    search stages (device us per search):");
        for (int k = 0; k < HX_GPU_SEARCH_STAGES; k++)
            printf(" %s %.1f%s", hx_gpu_search_stage_name(k), r->stage_us[k],
                   k + 1 < HX_GPU_SEARCH_STAGES ? "," : "\n");
    }
    free(rec);
    free(normal);
    free(search);
    hx_md_destroy(&md);
}

static char *read_cmd(const char *cmd)
{
    FILE *p = popen(cmd, "r");
    if (!p)
        return NULL;
    static char buf[256];
    buf[0] = 0;
    if (!fgets(buf, sizeof buf, p))
        buf[0] = 0;
    pclose(p);
    buf[strcspn(buf, "\n")] = 0;
    return buf[0] ? buf : NULL;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    int sizes[MAX_SIZES] = {45000, 180000, 360000}, nsizes = 3;
    int cfg_n[MAX_CONFIGS] = {100, 40, 20}, cfg_p[MAX_CONFIGS] = {4, 4, 0}, ncfg = 3;
    double cfg_t[MAX_CONFIGS] = {0, 0, 0};
    int steps = 4000, warmup = 300, graph = 1;
    unsigned long long seed = 1;
    double tol = 0.005;
    const char *json = NULL, *rev = getenv("HALOX_GIT_REVISION");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--atoms") && v) {
            nsizes = parse_list(v, sizes, MAX_SIZES);
            i++;
        } else if (!strcmp(a, "--steps") && v) {
            steps = atoi(v);
            i++;
        } else if (!strcmp(a, "--warmup") && v) {
            warmup = atoi(v);
            i++;
        } else if (!strcmp(a, "--configs") && v) {
            ncfg = 0;
            for (const char *c = v; c && *c && ncfg < MAX_CONFIGS;) {
                cfg_n[ncfg] = atoi(c);
                const char *colon = strchr(c, ':'), *comma = strchr(c, ',');
                cfg_p[ncfg] = colon && (!comma || colon < comma) ? atoi(colon + 1) : 0;
                const char *c2 = colon ? strchr(colon + 1, ':') : NULL;
                cfg_t[ncfg] = c2 && (!comma || c2 < comma) ? atof(c2 + 1) : 0.0;
                ncfg++;
                c = comma ? comma + 1 : NULL;
            }
            i++;
        } else if (!strcmp(a, "--tolerance") && v) {
            tol = atof(v);
            i++;
        } else if (!strcmp(a, "--json") && v) {
            json = v;
            i++;
        } else if (!strcmp(a, "--git-revision") && v) {
            rev = v;
            i++;
        } else if (!strcmp(a, "--seed") && v) {
            seed = strtoull(v, NULL, 10);
            i++;
        } else if (!strcmp(a, "--breakdown-steps") && v) {
            g_bd_steps = atoi(v);
            i++;
        } else if (!strcmp(a, "--no-graph")) {
            graph = 0;
        } else {
            fprintf(stderr,
                    "usage: %s [--atoms 45000,180000,360000] [--steps 4000] [--warmup 300] "
                    "[--configs 100:4,40:4,20:0] [--tolerance 0.005] [--no-graph] [--json FILE] "
                    "[--git-revision HASH] [--seed N] [--breakdown-steps 200]\n",
                    argv[0]);
            return 2;
        }
    }
    if (steps < 10 || nsizes < 1 || ncfg < 1) {
        fprintf(stderr, "need --steps >= 10, at least one size and one configuration\n");
        return 2;
    }
    int ndev = 0;
    const char *why = NULL;
    hx_gpu_device_count(&ndev, &why);
    if (ndev < 1) {
        fprintf(stderr, "no GPU: %s\n", why ? why : "none");
        return 77;
    }
    hx_gpu_info gi;
    char gdesc[512] = "";
    if (hx_gpu_get_info(0, &gi) == HX_OK)
        hx_gpu_describe(&gi, gdesc, (int)sizeof gdesc);
    printf("device: %s\n", gdesc);
    if (!rev)
        rev = read_cmd("git rev-parse HEAD 2>/dev/null");
    result res[MAX_SIZES][MAX_CONFIGS];
    memset(res, 0, sizeof res);
    for (int si = 0; si < nsizes; si++) {
        hx_forcefield *ff = NULL;
        hx_system *sff = NULL;
        hx_system *s = prepare(sizes[si], seed, &sff, &ff);
        if (!s)
            continue;
        printf("SPC/E %d atoms, box %.3f nm\n", s->natoms, s->box[0]);
        for (int c = 0; c < ncfg; c++)
            run_one(s, sff, ff, cfg_n[c], cfg_p[c], tol, cfg_t[c], steps, warmup, graph, seed,
                    &res[si][c]);
        hx_system_destroy(&s);
        hx_system_destroy(&sff);
        hx_forcefield_destroy(&ff);
    }
    /* JSON */
    if (json) {
        cJSON *root = cJSON_CreateObject(), *meta = cJSON_AddObjectToObject(root, "meta");
        char cmd[2048] = "", host[256] = "", date[64];
        for (int i = 0; i < argc; i++) {
            strncat(cmd, argv[i], sizeof cmd - strlen(cmd) - 2);
            if (i + 1 < argc)
                strncat(cmd, " ", sizeof cmd - strlen(cmd) - 1);
        }
        gethostname(host, sizeof host - 1);
        time_t now = time(NULL);
        strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
        cJSON_AddStringToObject(meta, "git_revision", rev ? rev : "unknown");
        cJSON_AddStringToObject(meta, "date", date);
        cJSON_AddStringToObject(meta, "host", host);
        char *cpu = read_cmd("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2");
        cJSON_AddStringToObject(meta, "cpu", cpu ? cpu : "unknown");
        cJSON_AddStringToObject(meta, "gpu", ndev > 0 ? gi.name : "none");
        cJSON_AddStringToObject(meta, "gpu_description", gdesc);
        char ver[64];
        snprintf(ver, sizeof ver, "%d.%d", gi.driver_version / 1000,
                 (gi.driver_version % 1000) / 10);
        cJSON_AddStringToObject(meta, "driver", ver);
        char *drv = read_cmd("nvidia-smi --query-gpu=driver_version --format=csv,noheader");
        cJSON_AddStringToObject(meta, "driver_version", drv ? drv : "unknown");
        snprintf(ver, sizeof ver, "%d.%d", gi.runtime_version / 1000,
                 (gi.runtime_version % 1000) / 10);
        cJSON_AddStringToObject(meta, "cuda", ver);
        cJSON_AddStringToObject(meta, "command", cmd);
        cJSON *runs = cJSON_AddArrayToObject(root, "runs");
        for (int si = 0; si < nsizes; si++)
            for (int c = 0; c < ncfg; c++) {
                const result *r = &res[si][c];
                if (!r->ok)
                    continue;
                cJSON *o = cJSON_CreateObject();
                cJSON_AddStringToObject(o, "system", "water-spce");
                cJSON_AddNumberToObject(o, "atoms", r->atoms);
                cJSON_AddStringToObject(o, "mode", "md");
                cJSON_AddStringToObject(o, "backend", "gpu");
                cJSON_AddNumberToObject(o, "ranks", 1);
                cJSON_AddNumberToObject(o, "gpus", 1);
                cJSON_AddNumberToObject(o, "steps", r->steps);
                cJSON_AddNumberToObject(o, "nstlist", r->nstlist);
                cJSON_AddNumberToObject(o, "prune_parts", r->parts);
                cJSON_AddNumberToObject(o, "rlist", r->rlist);
                cJSON_AddNumberToObject(o, "rlist_inner", r->rinner);
                cJSON_AddBoolToObject(o, "cuda_graph", graph);
                cJSON_AddNumberToObject(o, "us_per_step", r->us_mean);
                cJSON_AddNumberToObject(o, "us_per_step_median_normal", r->us_median);
                cJSON_AddNumberToObject(o, "us_per_search_step_median", r->us_search);
                cJSON_AddNumberToObject(o, "us_per_step_wall", r->us_wall);
                cJSON_AddNumberToObject(o, "ns_per_day", r->ns_day);
                cJSON_AddNumberToObject(o, "local_work_us", r->nb_us);
                cJSON_AddNumberToObject(o, "nb_energy_kernel_us", r->nbe_us);
                cJSON_AddNumberToObject(o, "prune_kernel_us", r->prune_us);
                cJSON_AddNumberToObject(o, "search_ms", r->search_ms);
                if (isfinite(r->local_us) && isfinite(r->upd_us)) {
                    cJSON_AddNumberToObject(o, "step_local_us", r->local_us);
                    cJSON_AddNumberToObject(o, "step_update_us", r->upd_us);
                    cJSON_AddNumberToObject(o, "step_rest_us", r->gaps_us);
                }
                if (r->stage_us[HX_GPU_SEARCH_STAGES - 3] > 0) {
                    cJSON *sg = cJSON_AddObjectToObject(o, "search_stages_us");
                    for (int k = 0; k < HX_GPU_SEARCH_STAGES; k++)
                        cJSON_AddNumberToObject(sg, hx_gpu_search_stage_name(k), r->stage_us[k]);
                }
                cJSON_AddNumberToObject(o, "pairs_within_rc", (double)r->pairs_rc);
                cJSON_AddNumberToObject(o, "pair_evaluations", (double)r->evals);
                cJSON_AddNumberToObject(o, "gpairs_per_s", r->gpairs_s);
                cJSON_AddNumberToObject(o, "floor_flops_us", r->floor_flops_us);
                cJSON_AddNumberToObject(o, "list_entries", r->nent);
                cJSON_AddNumberToObject(o, "list_items", r->nitems);
                cJSON_AddItemToArray(runs, o);
            }
        char *txt = cJSON_Print(root);
        char tmp[1024];
        snprintf(tmp, sizeof tmp, "%s.tmp.%d", json, (int)getpid());
        FILE *f = fopen(tmp, "w");
        int ok = f && txt && fputs(txt, f) >= 0 && fputc('\n', f) != EOF;
        if (f)
            ok = (fclose(f) == 0) && ok;
        if (ok && rename(tmp, json) == 0)
            printf("wrote %s\n", json);
        else
            fprintf(stderr, "writing %s failed\n", json);
        free(txt);
        cJSON_Delete(root);
    }
    /* table last */
    printf("\n%-8s %-7s %-5s %-13s %9s %9s %9s %8s %8s %8s %7s %9s %7s %7s %7s %7s\n", "atoms",
           "nstlist", "prune", "rlist/inner", "us_med", "us_mean", "us_srch", "ns/day", "nb_us",
           "nbE_us", "prn_us", "Gpairs/s", "vs_gmx", "loc_us", "upd_us", "rest_us");
    for (int si = 0; si < nsizes; si++)
        for (int c = 0; c < ncfg; c++) {
            const result *r = &res[si][c];
            if (!r->ok)
                continue;
            /* GROMACS 2027.0-dev on the same H200 (issue 12): ns/day */
            const double gmx = fabs(r->atoms - 45000.0) < 4500     ? 1297
                               : fabs(r->atoms - 180000.0) < 18000 ? 417
                               : fabs(r->atoms - 360000.0) < 36000 ? 223
                                                                   : 0;
            char rl[32];
            snprintf(rl, sizeof rl, "%.3f/%.3f", r->rlist, r->rinner);
            printf("%-8d %-7d %-5d %-13s %9.1f %9.1f %9.1f %8.0f %8.1f %8.1f %7.1f %9.1f %7.2f "
                   "%7.1f %7.1f %7.1f\n",
                   r->atoms, r->nstlist, r->parts, rl, r->us_median, r->us_mean, r->us_search,
                   r->ns_day, r->nb_us, r->nbe_us, r->prune_us, r->gpairs_s,
                   gmx > 0 ? r->ns_day / gmx : 0.0, r->local_us, r->upd_us, r->gaps_us);
        }
    return 0;
}
