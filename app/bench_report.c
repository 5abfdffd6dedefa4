/* halox bench: reading result files (JSON, docs/results-format.md), comparing two of them, and
 * writing the Markdown report with its plots (drawn by gnuplot, the project's plotting dependency).
 *
 * A result file is {"meta": {...provenance...}, "runs": [{...}, ...]}; a run is identified by
 * its key: series, mode, system, atoms, backend (+ path, bulk copy), ranks, gpus and grid. */
#include "bench.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- reading ----------------------------------------------------------------------------- */

/* search_step_parts_us: the six parts that tile a search step, then the coordinate halo (inside
 * the sixth); names for tables and plots */
static const char *const search_part_keys[7] = {
    "state_to_host",    "migration",          "topology_plan", "halo_setup",
    "local_set_upload", "halo_x_pair_search", "halo_x"};
static const char *const search_part_names[7] = {"state to host",      "migration",
                                                 "topology + plan",    "halo set-up",
                                                 "local set + upload", "x halo + pair search",
                                                 "of which x halo"};

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static void str(const cJSON *o, const char *k, char *out, size_t cap)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    snprintf(out, cap, "%s", cJSON_IsString(v) && v->valuestring ? v->valuestring : "");
}

static char *slurp(const char *path, char *err, size_t errcap)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errcap, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    while (b) {
        size_t got = fread(b + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0)
            break;
        if (n + 1 >= cap) {
            char *nb = realloc(b, 2 * cap);
            if (!nb) {
                free(b);
                b = NULL;
                break;
            }
            b = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (!b) {
        snprintf(err, errcap, "%s: out of memory", path);
        return NULL;
    }
    b[n] = 0;
    return b;
}

int hx_bench_load(const char *path, hx_bench_set *set, char *err, size_t errcap)
{
    memset(set, 0, sizeof *set);
    snprintf(set->path, sizeof set->path, "%s", path);
    char *text = slurp(path, err, errcap);
    if (!text)
        return -1;
    cJSON *root = cJSON_Parse(text);
    if (!root) {
        /* the error position points into text: report before freeing it */
        snprintf(err, errcap, "%s: not valid JSON (near: %.40s); expected a halox result file",
                 path, cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() : "?");
        free(text);
        return -1;
    }
    free(text);
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "meta");
    const cJSON *runs = cJSON_GetObjectItemCaseSensitive(root, "runs");
    if (!cJSON_IsObject(meta) || !cJSON_IsArray(runs)) {
        snprintf(err, errcap, "%s: a result file has a \"meta\" object and a \"runs\" array", path);
        cJSON_Delete(root);
        return -1;
    }
    str(meta, "git_revision", set->git_revision, sizeof set->git_revision);
    str(meta, "gpu", set->gpu, sizeof set->gpu);
    str(meta, "date", set->date, sizeof set->date);
    str(meta, "series", set->series, sizeof set->series);
    str(meta, "command", set->command, sizeof set->command);
    int n = cJSON_GetArraySize(runs);
    set->runs = calloc((size_t)(n > 0 ? n : 1), sizeof *set->runs);
    if (!set->runs) {
        snprintf(err, errcap, "%s: out of memory", path);
        cJSON_Delete(root);
        return -1;
    }
    const cJSON *r;
    cJSON_ArrayForEach(r, runs)
    {
        hx_bench_run *b = &set->runs[set->nruns];
        if (!cJSON_IsObject(r))
            continue;
        str(r, "system", b->system, sizeof b->system);
        str(r, "mode", b->mode, sizeof b->mode);
        str(r, "backend", b->backend, sizeof b->backend);
        str(r, "path", b->path, sizeof b->path);
        b->bulk_copy = (int)num(r, "bulk_copy");
        b->atoms = (long long)num(r, "atoms");
        b->ranks = (int)num(r, "ranks");
        b->gpus = (int)num(r, "gpus");
        b->pulses = (int)num(r, "pulses");
        const cJSON *dd = cJSON_GetObjectItemCaseSensitive(r, "dd");
        for (int k = 0; k < 3; k++) {
            const cJSON *v = cJSON_GetArrayItem(dd, k);
            b->dd[k] = cJSON_IsNumber(v) ? v->valueint : 0;
        }
        b->steps = (long long)num(r, "steps");
        b->us_per_step = num(r, "us_per_step");
        b->us_min = num(r, "us_per_step_min");
        b->us_max = num(r, "us_per_step_max");
        if (!(b->us_min > 0) && !(b->us_max > 0)) {
            /* an exchange: the spread of rank 0's samples */
            b->us_min = num(r, "exchange_us_rank0_min");
            b->us_max = num(r, "exchange_us_rank0_max");
        }
        b->ns_per_day = num(r, "ns_per_day");
        b->ns_per_day_search = num(r, "ns_per_day_with_search");
        b->local_work_us = num(r, "local_work_us");
        b->nonlocal_work_us = num(r, "nonlocal_work_us");
        b->non_overlap_us = num(r, "non_overlap_us");
        b->exchange_us = num(r, "exchange_us");
        b->atoms_per_domain = num(r, "atoms_per_domain");
        b->metrics_every = num(r, "metrics_every") > 0 ? (int)num(r, "metrics_every") : 0;
        b->search_step_us = num(r, "search_step_us");
        {
            const cJSON *sp = cJSON_GetObjectItemCaseSensitive(r, "search_step_parts_us");
            for (int k = 0; k < 7; k++)
                b->search_parts_us[k] = num(sp, search_part_keys[k]);
            char on[16];
            str(r, "search_step_on", on, sizeof on);
            b->search_on_device = strcmp(on, "device") == 0 ? 1 : strcmp(on, "host") == 0 ? 0 : -1;
            b->search_slow_paths =
                num(r, "search_step_retries") + num(r, "search_step_halo_updates");
        }
        b->nstlist = num(r, "nstlist") > 0 ? (int)num(r, "nstlist") : 0;
        str(r, "engine", b->engine, sizeof b->engine);
        /* halox bench md before the fix of 2026-12-05 counted the warm-up's steps */
        b->warmup_error = 1.0;
        if (strcmp(b->mode, "md") == 0 &&
            (!strcmp(b->engine, "cpu") || !strcmp(b->engine, "gpu")) &&
            num(r, "warmup_steps") > 0 && b->steps > 0 && set->date[0] &&
            strcmp(set->date, "2026-12-05") < 0)
            b->warmup_error = (num(r, "warmup_steps") + (double)b->steps) / (double)b->steps;
        if (!b->engine[0])
            snprintf(b->engine, sizeof b->engine, "%s",
                     strcmp(b->backend, "gromacs") == 0 ? "gromacs"
                     : b->gpus > 0                      ? "gpu"
                                                        : "cpu");
        b->efficiency = NAN;
        if (!(b->atoms_per_domain > 0) && b->ranks > 0)
            b->atoms_per_domain = (double)b->atoms / b->ranks;
        if (b->mode[0] == 0 || b->backend[0] == 0) {
            snprintf(err, errcap, "%s: run %d lacks \"mode\" or \"backend\"", path, set->nruns + 1);
            cJSON_Delete(root);
            free(set->runs);
            set->runs = NULL;
            return -1;
        }
        set->nruns++;
    }
    cJSON_Delete(root);
    return 0;
}

void hx_bench_free(hx_bench_set *set)
{
    free(set->runs);
    memset(set, 0, sizeof *set);
}

void hx_bench_run_key(const hx_bench_run *r, char *key, size_t cap)
{
    snprintf(key, cap, "%s %s %lld %s%s%s%s %dr %dg %dx%dx%d", r->mode, r->system, r->atoms,
             r->backend, r->path[0] ? "/" : "", r->path, r->bulk_copy > 0 ? "/bulk" : "", r->ranks,
             r->gpus, r->dd[0], r->dd[1], r->dd[2]);
}

/* The time a run is judged by: per step for md, per exchange for exchange-only series. */
static double run_time(const hx_bench_run *r)
{
    return strcmp(r->mode, "exchange") == 0 && r->exchange_us > 0 ? r->exchange_us : r->us_per_step;
}

/* ---- halox bench compare A B ------------------------------------------------------------- */

int hx_bench_compare(const char *a_path, const char *b_path, FILE *out)
{
    hx_bench_set a, b;
    char err[512];
    if (hx_bench_load(a_path, &a, err, sizeof err) != 0) {
        fprintf(stderr, "halox bench compare: error: %s\n", err);
        return 1;
    }
    if (hx_bench_load(b_path, &b, err, sizeof err) != 0) {
        fprintf(stderr, "halox bench compare: error: %s\n", err);
        hx_bench_free(&a);
        return 1;
    }
    fprintf(out, "A: %s (%s, %s, %.12s)\nB: %s (%s, %s, %.12s)\n\n", a_path,
            a.gpu[0] ? a.gpu : "no GPU", a.date, a.git_revision, b_path,
            b.gpu[0] ? b.gpu : "no GPU", b.date, b.git_revision);
    fprintf(out, "%-58s %12s %12s %8s\n", "run", "A us", "B us", "B/A");
    int matched = 0;
    double logsum = 0.0;
    for (int i = 0; i < a.nruns; i++) {
        char ka[256], kb[256];
        hx_bench_run_key(&a.runs[i], ka, sizeof ka);
        for (int j = 0; j < b.nruns; j++) {
            hx_bench_run_key(&b.runs[j], kb, sizeof kb);
            if (strcmp(ka, kb) != 0)
                continue;
            double ta = run_time(&a.runs[i]), tb = run_time(&b.runs[j]);
            fprintf(out, "%-58.58s %12.2f %12.2f %8.3f\n", ka, ta, tb, tb / ta);
            if (ta > 0 && tb > 0) {
                logsum += log(tb / ta);
                matched++;
            }
            break;
        }
    }
    if (matched)
        fprintf(out, "\n%d runs in both; geometric mean of B/A time: %.3f (below 1: B is faster)\n",
                matched, exp(logsum / matched));
    else
        fprintf(out, "\nno run is in both files (runs match on mode, system, atoms, backend, "
                     "ranks, GPUs and grid)\n");
    hx_bench_free(&a);
    hx_bench_free(&b);
    return matched ? 0 : 1;
}

/* ---- plots -------------------------------------------------------------------------------- */

/* Run a gnuplot script; the PNG goes to a temporary name and is renamed into place, so a
 * failed plot never replaces a good one. Returns 0 on success. */
static int gnuplot_png(const char *png, const char *script)
{
    char tmp[1200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld.png", png, (long)getpid());
    char logf[1300];
    snprintf(logf, sizeof logf, "%s.log", tmp);
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "gnuplot 2> '%s'", logf);
    FILE *g = popen(cmd, "w");
    if (!g)
        return -1;
    fprintf(g,
            "set terminal pngcairo size 960,600 noenhanced font 'sans,11'\nset output '%s'\n%s\n"
            "set output\n",
            tmp, script);
    int rc = pclose(g);
    if (rc != 0) {
        /* gnuplot's own words say what was wrong */
        fprintf(stderr, "halox bench report: gnuplot failed drawing %s:\n", png);
        FILE *l = fopen(logf, "r");
        char line[512];
        while (l && fgets(line, sizeof line, l))
            fputs(line, stderr);
        if (l)
            fclose(l);
        unlink(logf);
        unlink(tmp);
        return -1;
    }
    unlink(logf);
    if (rename(tmp, png) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

static int have_gnuplot(void)
{
    return system("gnuplot --version > /dev/null 2>&1") == 0;
}

static int cmp_runs(const void *x, const void *y)
{
    const hx_bench_run *a = x, *b = y;
    int c = strcmp(a->backend, b->backend);
    if (c)
        return c;
    c = strcmp(a->path, b->path);
    if (c)
        return c;
    if (a->atoms_per_domain != b->atoms_per_domain)
        return a->atoms_per_domain < b->atoms_per_domain ? -1 : 1;
    if (a->pulses != b->pulses)
        return a->pulses - b->pulses;
    return a->ranks - b->ranks;
}

static int is_gromacs(const hx_bench_run *r)
{
    return strcmp(r->backend, "gromacs") == 0;
}

/* GROMACS on the GPU gets its own label: its line and headline row are not the CPU runs'. */
static void label_of(const hx_bench_run *r, char *out, size_t cap)
{
    snprintf(out, cap, "%s%s%s%s%s", r->backend,
             is_gromacs(r) && strcmp(r->engine, "gpu") == 0 ? " gpu" : "", r->path[0] ? " " : "",
             r->path, r->bulk_copy > 0 ? " bulk" : "");
}

/* One gnuplot data block per backend (name in a comment line); x/y chosen by the caller. */
typedef double (*getter)(const hx_bench_run *);
static double g_apd(const hx_bench_run *r)
{
    return r->atoms_per_domain;
}
static double g_pulses(const hx_bench_run *r)
{
    return r->pulses;
}
static double g_ranks(const hx_bench_run *r)
{
    return r->ranks;
}
static double g_time(const hx_bench_run *r)
{
    return run_time(r);
}
/* ns/day with every step counted (GROMACS's figure always is; a halox file without the
 * with-search figure gives its figure without searches) */
static double g_nsday(const hx_bench_run *r)
{
    return r->ns_per_day_search > 0 && !is_gromacs(r) ? r->ns_per_day_search : r->ns_per_day;
}
static double g_eff(const hx_bench_run *r)
{
    return r->efficiency;
}

/* Parallel efficiency of md runs of one system and size: ns/day (every step counted) per rank
 * against the best run
 * of the same engine (cpu, gpu, gromacs) at its smallest rank count, so that the GPU backends
 * are measured against the one-GPU step and the CPU against one rank. */
static void set_efficiency(hx_bench_run *runs, int n)
{
    for (int i = 0; i < n; i++) {
        hx_bench_run *r = &runs[i];
        r->efficiency = NAN;
        if (strcmp(r->mode, "md") != 0 || !(r->ns_per_day > 0) || r->ranks < 1)
            continue;
        const hx_bench_run *base = NULL;
        for (int j = 0; j < n; j++) {
            const hx_bench_run *b = &runs[j];
            if (strcmp(b->mode, "md") != 0 || strcmp(b->engine, r->engine) != 0 ||
                is_gromacs(b) != is_gromacs(r) || strcmp(b->system, r->system) != 0 ||
                b->atoms != r->atoms || !(b->ns_per_day > 0))
                continue;
            if (!base || b->ranks < base->ranks ||
                (b->ranks == base->ranks && g_nsday(b) > g_nsday(base)))
                base = b;
        }
        if (base)
            r->efficiency = g_nsday(r) / (g_nsday(base) * r->ranks / base->ranks);
    }
}

/* The best run (ns/day) of each backend label at each rank count: the line of a backend is its
 * best grid and configuration there. Returns the count written to out (capacity n). */
static int best_per_rank(const hx_bench_run *runs, int n, hx_bench_run *out)
{
    int nb = 0;
    for (int i = 0; i < n; i++) {
        char li[96], lj[96];
        label_of(&runs[i], li, sizeof li);
        int j = 0;
        for (; j < nb; j++) {
            label_of(&out[j], lj, sizeof lj);
            if (strcmp(li, lj) == 0 && out[j].ranks == runs[i].ranks)
                break;
        }
        if (j == nb)
            out[nb++] = runs[i];
        else if (g_nsday(&runs[i]) > g_nsday(&out[j]))
            out[j] = runs[i];
    }
    return nb;
}

static void fmtv(double v, char *buf, size_t cap)
{
    if (isfinite(v))
        snprintf(buf, cap, "%.1f", v);
    else
        snprintf(buf, cap, "–");
}

/* Append printf-style to the gnuplot script s of capacity cap, *len of it used; a piece that
 * does not fit leaves *len as it was. */
__attribute__((format(printf, 4, 5))) static void script_add(char *s, size_t cap, size_t *len,
                                                             const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(s + *len, cap - *len, fmt, ap);
    va_end(ap);
    if (w > 0 && (size_t)w < cap - *len)
        *len += (size_t)w;
}

/* Lines (one per backend label) of y against x over the runs that pass `keep`. */
static int plot_lines(const char *png, const char *title, const char *xlabel, const char *ylabel,
                      int logx, int logy, hx_bench_run *runs, int n, getter gx, getter gy)
{
    qsort(runs, (size_t)n, sizeof *runs, cmp_runs);
    size_t cap = 65536, len = 0;
    char *s = malloc(cap);
    if (!s)
        return -1;
    script_add(s, cap, &len,
               "set title '%s'\nset xlabel '%s'\nset ylabel '%s'\nset grid\nset key top left\n"
               "%s%s",
               title, xlabel, ylabel, logx ? "set logscale x\n" : "",
               logy ? "set logscale y\n" : "");
    /* inline data blocks: one $B<i> per backend label */
    char labels[32][96];
    int nl = 0;
    for (int i = 0; i < n && nl < 32; i++) {
        char lab[96];
        label_of(&runs[i], lab, sizeof lab);
        if (!(gy(&runs[i]) > 0) || !(gx(&runs[i]) > 0))
            continue;
        int k = 0;
        while (k < nl && strcmp(labels[k], lab) != 0)
            k++;
        if (k == nl)
            snprintf(labels[nl++], sizeof labels[0], "%s", lab);
    }
    /* a line needs two x values: a set that does not vary this x gets no plot */
    int varies = 0;
    for (int i = 0; i < n && !varies; i++)
        for (int j = i + 1; j < n && !varies; j++)
            varies = gy(&runs[i]) > 0 && gy(&runs[j]) > 0 && gx(&runs[i]) != gx(&runs[j]);
    if (nl == 0 || !varies) {
        free(s);
        return 1; /* nothing to draw */
    }
    for (int k = 0; k < nl; k++) {
        script_add(s, cap, &len, "$B%d << EOD\n", k);
        for (int i = 0; i < n; i++) {
            char lab[96];
            label_of(&runs[i], lab, sizeof lab);
            if (strcmp(lab, labels[k]) == 0 && gy(&runs[i]) > 0 && gx(&runs[i]) > 0)
                script_add(s, cap, &len, "%.6g %.6g\n", gx(&runs[i]), gy(&runs[i]));
        }
        script_add(s, cap, &len, "EOD\n");
    }
    script_add(s, cap, &len, "plot ");
    for (int k = 0; k < nl; k++)
        script_add(s, cap, &len, "%s$B%d using 1:2 with linespoints lw 2 pt %d title '%s'",
                   k ? ", " : "", k, 5 + k, labels[k]);
    script_add(s, cap, &len, "\n");
    int rc = gnuplot_png(png, s);
    free(s);
    return rc;
}

/* The sampled phases of a run add up to more than its measured step: sampling with events
 * (each sampled step waited for) perturbs the step it samples. */
static int sampled_exceeds(const hx_bench_run *r)
{
    return r->local_work_us >= 0 && r->non_overlap_us >= 0 && r->us_per_step > 0 &&
           r->local_work_us + r->non_overlap_us > r->us_per_step;
}

/* The paper's Fig. 6 as a picture, kept honest: per backend and rank count the measured time
 * per step (wall time over every non-search step, graph-replayed where the engine does) is the
 * wide hollow bar; inside it, narrower, the local work and the non-overlapped halo as sampled
 * with events on every N-th step, stacked; the non-local work beside them as a point. The
 * sampled phases come from other, slower steps than the measured one, so they are drawn
 * as what they are and may stick out of the step: such a run's label says so. */
static int plot_breakdown(const char *png, const char *title, hx_bench_run *runs, int n)
{
    size_t cap = 65536, len = 0;
    char *s = malloc(cap);
    if (!s)
        return -1;
    int rows = 0, every = 0, mixed = 0, over = 0;
    /* The CPU engine's steps are 30-50x the GPU's: on one axis the GPU bars would be flat, so
     * a picture with both shows the GPU runs only (the CPU runs have their tables). */
    int any_gpu = 0;
    for (int i = 0; i < n; i++)
        any_gpu |= strcmp(runs[i].engine, "gpu") == 0;
    script_add(s, cap, &len, "$D << EOD\n");
    for (int i = 0; i < n; i++) {
        const hx_bench_run *r = &runs[i];
        if (!(r->local_work_us >= 0) || !(r->us_per_step > 0) || !(r->non_overlap_us >= 0))
            continue;
        if (any_gpu && strcmp(r->engine, "gpu") != 0)
            continue;
        if (r->metrics_every > 0) {
            mixed |= every > 0 && every != r->metrics_every;
            every = r->metrics_every;
        }
        const int x = sampled_exceeds(r);
        over |= x;
        char lab[96];
        label_of(r, lab, sizeof lab);
        /* columns: x, label, measured step, local work, local + non-overlap, non-local */
        script_add(s, cap, &len, "%d \"%s %dr %dx%dx%d %lldk%s\" %.3f %.3f %.3f %.3f\n", rows, lab,
                   r->ranks, r->dd[0], r->dd[1], r->dd[2], (r->atoms + 500) / 1000, x ? " †" : "",
                   r->us_per_step, r->local_work_us, r->local_work_us + r->non_overlap_us,
                   r->nonlocal_work_us >= 0 ? r->nonlocal_work_us : 0.0);
        rows++;
    }
    script_add(s, cap, &len, "EOD\n");
    char how[160];
    if (every > 0 && !mixed)
        snprintf(how, sizeof how, "sampled with events on every %d%s step", every,
                 every % 10 == 1 && every % 100 != 11   ? "st"
                 : every % 10 == 2 && every % 100 != 12 ? "nd"
                 : every % 10 == 3 && every % 100 != 13 ? "rd"
                                                        : "th");
    else
        snprintf(how, sizeof how, "sampled with events on some steps");
    script_add(
        s, cap, &len,
        "set title \"%s%s\\nbar: the measured step (wall time, search steps left out)\\ninside: "
        "the phases %s%s\"\n"
        "set ylabel 'µs per step'\nset style fill solid 0.8 border -1\n"
        "set xtics rotate by -30\nset key outside top center horizontal maxrows 2\n"
        "set grid y\nset yrange [0:*]\nset xrange [-0.6:%d.6]\nset rmargin 16\nset bmargin 9\n"
        "plot $D using 1:($3/2):($1-0.38):($1+0.38):(0):3:xtic(2) with boxxyerror fs empty border "
        "lc rgb "
        "'black' lc rgb 'black' lw 2 title 'measured step', \\\n"
        "  '' using 1:($4/2):($1-0.25):($1+0.25):(0):4 with boxxyerror fs solid 0.8 lc rgb "
        "'#4472c4' title 'local work (sampled)', \\\n"
        "  '' using 1:4:($1-0.25):($1+0.25):4:5 with boxxyerror fs solid 0.8 lc rgb '#ed7d31' "
        "title 'non-overlap: halo on the critical path (sampled)', \\\n"
        "  '' using ($1+0.4):6 with points pt 7 ps 1.5 lc rgb 'black' title 'non-local work "
        "(sampled)'\n",
        title, any_gpu ? " (GPU engine)" : "", how,
        over ? "\\n†: the sampled phases exceed the step (sampling slows the steps it samples)"
             : "",
        rows - 1);
    int rc = rows ? gnuplot_png(png, s) : 1;
    free(s);
    return rc;
}

/* A run with its search step split by part (halox bench md). */
static int has_search(const hx_bench_run *r)
{
    return r->search_step_us > 0 && r->search_parts_us[0] >= 0;
}

/* The search steps by part, stacked, one bar per run: what the phase picture leaves out (its
 * steps are the plain ones), and what the device search step is for. */
static int plot_search(const char *png, const char *title, const hx_bench_run *runs, int n)
{
    size_t cap = 65536, len = 0;
    char *s = malloc(cap);
    if (!s)
        return -1;
    int rows = 0;
    script_add(s, cap, &len, "$D << EOD\n");
    for (int i = 0; i < n; i++) {
        const hx_bench_run *r = &runs[i];
        if (!has_search(r))
            continue;
        char lab[96];
        label_of(r, lab, sizeof lab);
        script_add(s, cap, &len, "\"%s %dr %dx%dx%d %lldk%s\"", lab, r->ranks, r->dd[0], r->dd[1],
                   r->dd[2], (r->atoms + 500) / 1000,
                   r->search_on_device == 1   ? ", device"
                   : r->search_on_device == 0 ? ", host"
                                              : "");
        for (int k = 0; k < 6; k++)
            script_add(s, cap, &len, " %.3f",
                       r->search_parts_us[k] > 0 ? r->search_parts_us[k] : 0.0);
        script_add(s, cap, &len, "\n");
        rows++;
    }
    script_add(s, cap, &len, "EOD\n");
    script_add(
        s, cap, &len,
        "set title \"%s\\nµs per search step, each part on its slowest rank; where the step "
        "ran\"\n"
        "set ylabel 'µs per search step'\nset style data histograms\n"
        "set style histogram rowstacked\nset style fill solid 0.8 border -1\nset boxwidth 0.6\n"
        "set grid y\nset yrange [0:*]\nset key outside top center horizontal maxrows 2\n"
        "set xtics rotate by -30\nset bmargin 9\n"
        "plot $D using 2:xtic(1) title '%s'",
        title, search_part_names[0]);
    for (int k = 1; k < 6; k++)
        script_add(s, cap, &len, ", '' using %d title '%s'", k + 2, search_part_names[k]);
    script_add(s, cap, &len, "\n");
    int rc = rows ? gnuplot_png(png, s) : 1;
    free(s);
    return rc;
}

static void fmt_us(double v, char *out, size_t cap)
{
    if (v >= 0)
        snprintf(out, cap, "%.1f", v);
    else
        snprintf(out, cap, "–");
}

/* The search steps of an md series by part (the phases leave them out; ns/day counts them). */
static void search_table(FILE *md, const hx_bench_run *runs, int n)
{
    int any = 0;
    for (int i = 0; i < n; i++)
        any |= has_search(&runs[i]);
    if (!any)
        return;
    fprintf(md, "Search steps (in ns/day, left out of µs/step and the phases): µs per search "
                "step, each part on its slowest rank; on: where it ran (device: the decomposed "
                "search step on the GPU, only counts reach the host; host: state downloaded, "
                "host decomposition, uploads); slow paths: buffers grown or the halo updated "
                "collectively during the run (0 in an ordinary run).\n\n"
                "| system | atoms | backend | ranks | grid | nstlist | on | search step µs |");
    for (int k = 0; k < 7; k++)
        fprintf(md, " %s |", search_part_names[k]);
    fprintf(md, " slow paths |\n|---|---|---|---|---|---|---|---|");
    for (int k = 0; k < 7; k++)
        fprintf(md, "---|");
    fprintf(md, "---|\n");
    for (int i = 0; i < n; i++) {
        const hx_bench_run *r = &runs[i];
        if (!has_search(r))
            continue;
        char lab[96], v[32], nst[16], slow[32];
        label_of(r, lab, sizeof lab);
        fmt_us(r->search_step_us, v, sizeof v);
        snprintf(nst, sizeof nst, r->nstlist > 0 ? "%d" : "–", r->nstlist);
        if (r->search_slow_paths >= 0)
            snprintf(slow, sizeof slow, "%.0f", r->search_slow_paths);
        else
            snprintf(slow, sizeof slow, "–");
        fprintf(md, "| %s | %lld | %s | %d | %dx%dx%d | %s | %s | %s |", r->system, r->atoms, lab,
                r->ranks, r->dd[0], r->dd[1], r->dd[2], nst,
                r->search_on_device == 1   ? "device"
                : r->search_on_device == 0 ? "host"
                                           : "–",
                v);
        for (int k = 0; k < 7; k++) {
            fmt_us(r->search_parts_us[k], v, sizeof v);
            fprintf(md, " %s |", v);
        }
        fprintf(md, " %s |\n", slow);
    }
    fprintf(md, "\n");
}

/* ---- the report ---------------------------------------------------------------------------- */

static int is_json(const char *name)
{
    size_t n = strlen(name);
    return n > 5 && strcmp(name + n - 5, ".json") == 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every md (or exchange) run of every result file in dir, in one array (caller frees). */
static hx_bench_run *collect(const char *dir, char **names, int nf, const char *mode, int *count)
{
    hx_bench_run *all = NULL;
    int nall = 0, cap = 0;
    for (int f = 0; f < nf; f++) {
        char path[1200], err[512];
        snprintf(path, sizeof path, "%s/%s", dir, names[f]);
        hx_bench_set set;
        if (hx_bench_load(path, &set, err, sizeof err) != 0)
            continue;
        for (int i = 0; i < set.nruns; i++) {
            if (strcmp(set.runs[i].mode, mode) != 0)
                continue;
            if (nall == cap) {
                cap = cap ? 2 * cap : 64;
                hx_bench_run *na = realloc(all, (size_t)cap * sizeof *na);
                if (!na)
                    break;
                all = na;
            }
            all[nall++] = set.runs[i];
        }
        hx_bench_free(&set);
    }
    *count = nall;
    return all;
}

/* What was not run, grouped by series, backend and reason, with the number of runs each: the
 * "skipped" (and "failed") arrays of a result file. */
static void print_skips(FILE *md, const cJSON *arr, const char *what)
{
    const int n = cJSON_GetArraySize(arr);
    if (n <= 0)
        return;
    char *done = calloc((size_t)n, 1);
    if (!done)
        return;
    fprintf(md, "%s\n\n| series | backend | runs | systems | reason |\n|---|---|---|---|---|\n",
            what);
    for (int i = 0; i < n; i++) {
        if (done[i])
            continue;
        const cJSON *a = cJSON_GetArrayItem(arr, i);
        char si[32], bi[160], ri[600], sys[256] = "";
        str(a, "series", si, sizeof si);
        str(a, "backend", bi, sizeof bi);
        str(a, "reason", ri, sizeof ri);
        int count = 0;
        for (int j = i; j < n; j++) {
            const cJSON *b = cJSON_GetArrayItem(arr, j);
            char sj[32], bj[160], rj[600], yj[64];
            str(b, "series", sj, sizeof sj);
            str(b, "backend", bj, sizeof bj);
            str(b, "reason", rj, sizeof rj);
            if (strcmp(si, sj) || strcmp(bi, bj) || strcmp(ri, rj))
                continue;
            done[j] = 1;
            count++;
            str(b, "system", yj, sizeof yj);
            if (yj[0] && !strstr(sys, yj) && strlen(sys) + strlen(yj) + 3 < sizeof sys)
                snprintf(sys + strlen(sys), sizeof sys - strlen(sys), "%s%s", sys[0] ? ", " : "",
                         yj);
        }
        /* a table cell holds no line breaks or bars */
        for (char *c = ri; *c; c++)
            if (*c == '|' || *c == '\n')
                *c = ' ';
        fprintf(md, "| %s | %s | %d | %s | %s |\n", si[0] ? si : "md", bi, count, sys, ri);
    }
    fprintf(md, "\n");
    free(done);
}

static cJSON *load_raw(const char *path)
{
    char err[512];
    char *text = slurp(path, err, sizeof err);
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    free(text);
    return j;
}

/* ns/day with the search steps counted: what GROMACS reports, and what a user gets. */
static double with_search(const hx_bench_run *r)
{
    return g_nsday(r);
}

/* The with-search figure of a run, or "–" where its file has none (then the search steps were
 * not measured apart, and the run's ns/day stands beside it). */
static void fmt_search(const hx_bench_run *r, char *out, size_t cap)
{
    if (is_gromacs(r) && r->ns_per_day > 0)
        snprintf(out, cap, "%.1f", r->ns_per_day); /* GROMACS counts every step */
    else if (r->ns_per_day_search > 0)
        snprintf(out, cap, "%.1f", r->ns_per_day_search);
    else
        snprintf(out, cap, "–");
}

/* A figure with the search steps left out: GROMACS reports none. */
static void fmt_nosearch(const hx_bench_run *r, double v, char *out, size_t cap)
{
    if (is_gromacs(r) || !(v > 0))
        snprintf(out, cap, "–");
    else
        snprintf(out, cap, "%.1f", v);
}

/* The headline: per system and size, the best ns/day of each backend (at its best rank count
 * and grid) with its parallel efficiency. */
static void headline(FILE *md, hx_bench_run *all, int nall)
{
    if (nall == 0)
        return;
    fprintf(md, "## Headline\n\nBest ns/day of each backend per system and size (its best rank "
                "count and grid), every step counted as a user's run counts it (search steps "
                "in); beside it the paper's convention, search steps left out; efficiency: "
                "ns/day per rank against the same engine at its smallest rank count.\n\n| "
                "system | atoms | backend | ns/day | ns/day without searches | µs/step without "
                "searches | ranks | grid | efficiency |\n|---|---|---|---|---|---|---|---|---|\n");
    char *used = calloc((size_t)nall, 1);
    if (!used)
        return;
    for (int i = 0; i < nall; i++) {
        if (used[i])
            continue;
        char li[96];
        label_of(&all[i], li, sizeof li);
        int best = i;
        for (int j = i; j < nall; j++) {
            char lj[96];
            label_of(&all[j], lj, sizeof lj);
            if (strcmp(all[j].system, all[i].system) || all[j].atoms != all[i].atoms ||
                strcmp(li, lj))
                continue;
            used[j] = 1;
            if (with_search(&all[j]) > with_search(&all[best]))
                best = j;
        }
        const hx_bench_run *r = &all[best];
        char e[32] = "–";
        if (isfinite(r->efficiency))
            snprintf(e, sizeof e, "%.2f", r->efficiency);
        char ws[32], wn[32], wu[32];
        fmt_search(r, ws, sizeof ws);
        fmt_nosearch(r, r->ns_per_day, wn, sizeof wn);
        fmt_nosearch(r, r->us_per_step, wu, sizeof wu);
        fprintf(md, "| %s | %lld | %s | %s | %s | %s | %d | %dx%dx%d | %s |\n", r->system, r->atoms,
                li, ws, wn, wu, r->ranks, r->dd[0], r->dd[1], r->dd[2], e);
    }
    fprintf(md, "\n");
    free(used);
}

/* Every GROMACS run beside the fastest halox run of the same system, size, ranks and engine
 * (on the GPU also the same GPUs and grid, which the GROMACS runs take from the GPU md runs; on
 * the CPU GROMACS chooses its own grid, so halox's best grid stands there). Both with the
 * search steps counted: GROMACS's ns/day always counts every step. */
static void versus_gromacs(FILE *md, const hx_bench_run *all, int nall)
{
    int any = 0;
    for (int i = 0; i < nall; i++)
        any |= is_gromacs(&all[i]) && all[i].ns_per_day > 0;
    if (!any)
        return;
    fprintf(md, "## halox against GROMACS\n\nns/day with the search steps counted in both "
                "(GROMACS counts every step); halox: its fastest backend for the same system, "
                "size, ranks and engine (on the GPU also the same GPUs and grid). halox / "
                "GROMACS above 1: halox is faster. Compare within one call only: both "
                "move with the host.\n\n| system | atoms | engine | ranks | GPUs | grid | "
                "halox backend | halox ns/day | halox without searches | GROMACS ns/day | "
                "halox / GROMACS |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < nall; i++) {
        const hx_bench_run *g = &all[i];
        if (!is_gromacs(g) || !(g->ns_per_day > 0))
            continue;
        const int gpu = strcmp(g->engine, "gpu") == 0;
        const hx_bench_run *h = NULL;
        for (int j = 0; j < nall; j++) {
            const hx_bench_run *c = &all[j];
            if (is_gromacs(c) || strcmp(c->system, g->system) != 0 || c->atoms != g->atoms ||
                c->ranks != g->ranks || strcmp(c->engine, gpu ? "gpu" : "cpu") != 0 ||
                !(with_search(c) > 0))
                continue;
            if (gpu && (c->gpus != g->gpus || memcmp(c->dd, g->dd, sizeof c->dd) != 0))
                continue;
            if (!h || with_search(c) > with_search(h))
                h = c;
        }
        const hx_bench_run *grid = h && !gpu ? h : g;
        fprintf(md, "| %s | %lld | %s | %d | %d | %dx%dx%d | ", g->system, g->atoms,
                gpu ? "GPU" : "CPU", g->ranks, g->gpus, grid->dd[0], grid->dd[1], grid->dd[2]);
        if (h) {
            char lab[96];
            label_of(h, lab, sizeof lab);
            fprintf(md, "%s | %.1f | %.1f | %.1f | %.2f |\n", lab, with_search(h), h->ns_per_day,
                    g->ns_per_day, with_search(h) / g->ns_per_day);
        } else {
            fprintf(md, "– | – | – | %.1f | – |\n", g->ns_per_day);
        }
    }
    fprintf(md, "\n");
}

static int cmp_headline(const void *x, const void *y)
{
    const hx_bench_run *a = x, *b = y;
    int c = strcmp(a->system, b->system);
    if (c)
        return -c; /* water before the mixture */
    if (a->atoms != b->atoms)
        return a->atoms < b->atoms ? -1 : 1;
    c = strcmp(a->engine, b->engine);
    return c ? c : strcmp(a->backend, b->backend);
}

int hx_bench_report(const char *dir, const char *report_path)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "halox bench report: error: %s: cannot open the results directory: %s\n",
                dir, strerror(errno));
        return 1;
    }
    char *names[512];
    int nf = 0;
    struct dirent *e;
    while ((e = readdir(d)) && nf < 512)
        if (is_json(e->d_name))
            names[nf++] = strdup(e->d_name);
    closedir(d);
    qsort(names, (size_t)nf, sizeof names[0], cmp_str);
    if (nf == 0) {
        fprintf(stderr, "halox bench report: error: %s holds no result (.json) files\n", dir);
        return 1;
    }
    char tmp[1200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", report_path, (long)getpid());
    FILE *md = fopen(tmp, "w");
    if (!md) {
        fprintf(stderr, "halox bench report: error: %s: cannot write: %s\n", tmp, strerror(errno));
        for (int i = 0; i < nf; i++)
            free(names[i]);
        return 1;
    }
    const int plots = have_gnuplot();
    fprintf(md,
            "# halox benchmark report\n\nResults in `%s`, one JSON file per series (format: "
            "docs/results-format.md in the halox sources). Times are medians over steps; ns/day "
            "from the time per step.\n\n",
            dir);
    if (!plots)
        fprintf(md, "_No plots: gnuplot is not installed (scripts/setup.sh installs it)._\n\n");
    int rc = 0;
    {
        int nall = 0;
        hx_bench_run *all = collect(dir, names, nf, "md", &nall);
        set_efficiency(all, nall);
        if (all)
            qsort(all, (size_t)nall, sizeof *all, cmp_headline);
        headline(md, all, nall);
        versus_gromacs(md, all, nall);
        free(all);
    }
    for (int f = 0; f < nf; f++) {
        char path[1200], err[512];
        snprintf(path, sizeof path, "%s/%s", dir, names[f]);
        hx_bench_set set;
        if (hx_bench_load(path, &set, err, sizeof err) != 0) {
            fprintf(stderr, "halox bench report: error: %s\n", err);
            rc = 1;
            continue;
        }
        char base[200];
        snprintf(base, sizeof base, "%.*s", (int)(strlen(names[f]) - 5), names[f]);
        fprintf(md, "## %s\n\n%s%s%s, revision `%.12s`, %s\n\n", set.series[0] ? set.series : base,
                set.gpu[0] ? set.gpu : "CPU only", set.date[0] ? ", " : "", set.date,
                set.git_revision, names[f]);
        if (set.command[0])
            fprintf(md, "Command: `%s`\n\n", set.command);
        cJSON *raw = load_raw(path);
        if (strcmp(set.series, "suite") == 0) {
            /* halox bench suite's summary: what ran and, with the reasons, what did not */
            const cJSON *sum = cJSON_GetObjectItemCaseSensitive(raw, "summary");
            fprintf(md,
                    "%.0f runs planned: %.0f done, %.0f skipped, %.0f failed, %.0f not run, in "
                    "%.0f s.\n\n",
                    num(sum, "planned"), num(sum, "done"), num(sum, "skipped"), num(sum, "failed"),
                    num(sum, "not_run"), num(sum, "elapsed_s"));
            print_skips(md, cJSON_GetObjectItemCaseSensitive(raw, "skipped"),
                        "Not run here, and why:");
            print_skips(md, cJSON_GetObjectItemCaseSensitive(raw, "failed"),
                        "Failed (run again to retry; the logs are in logs/):");
            cJSON_Delete(raw);
            hx_bench_free(&set);
            continue;
        }
        set_efficiency(set.runs, set.nruns);
        int is_exchange = set.nruns > 0 && strcmp(set.runs[0].mode, "exchange") == 0;
        if (is_exchange) {
            fprintf(md, "| backend | path | grid | ranks | atoms/domain | pulses | exchange µs "
                        "(median) | rank 0 min – max |\n|---|---|---|---|---|---|---|---|\n");
            for (int i = 0; i < set.nruns; i++) {
                const hx_bench_run *r = &set.runs[i];
                char spread[64] = "–";
                if (r->us_min > 0 && r->us_max > 0)
                    snprintf(spread, sizeof spread, "%.1f – %.1f", r->us_min, r->us_max);
                fprintf(md, "| %s | %s%s | %dx%dx%d | %d | %.0f | %d | %.1f | %s |\n", r->backend,
                        r->path[0] ? r->path : "–", r->bulk_copy > 0 ? " bulk" : "", r->dd[0],
                        r->dd[1], r->dd[2], r->ranks, r->atoms_per_domain, r->pulses, run_time(r),
                        spread);
            }
        } else {
            int every = 0, over = 0;
            for (int i = 0; i < set.nruns; i++) {
                every = set.runs[i].metrics_every > 0 ? set.runs[i].metrics_every : every;
                over |= sampled_exceeds(&set.runs[i]);
            }
            fprintf(md, "ns/day counts every step (search steps in), as a user's run does; µs/step "
                        "and the ns/day beside it leave the search steps out (the paper's "
                        "convention). Local work, non-local work and non-overlap are averages over "
                        "the steps sampled with events");
            if (every > 0)
                fprintf(md, " (every %d steps)", every);
            fprintf(md,
                    ", which the sampling slows a little: they are not parts of the "
                    "measured step%s.\n\n",
                    over ? "; † marks a run whose sampled local work and non-overlap exceed its "
                           "measured step"
                         : "");
            fprintf(md, "| system | atoms | backend | ranks | GPUs | grid | ns/day | µs/step "
                        "without searches | ns/day without searches | local µs | non-local µs | "
                        "non-overlap µs |\n"
                        "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
            for (int i = 0; i < set.nruns; i++) {
                const hx_bench_run *r = &set.runs[i];
                char lw[32], nw[32], no[32];
                fmtv(r->local_work_us, lw, sizeof lw);
                fmtv(r->nonlocal_work_us, nw, sizeof nw);
                fmtv(r->non_overlap_us, no, sizeof no);
                char ws[32], wn[32], wu[32];
                fmt_search(r, ws, sizeof ws);
                fmt_nosearch(r, r->ns_per_day, wn, sizeof wn);
                fmt_nosearch(r, r->us_per_step, wu, sizeof wu);
                fprintf(md,
                        "| %s | %lld | %s%s%s | %d | %d | %dx%dx%d | %s | %s | %s | %s | %s | "
                        "%s%s |\n",
                        r->system, r->atoms, r->backend, r->path[0] ? " " : "", r->path, r->ranks,
                        r->gpus, r->dd[0], r->dd[1], r->dd[2], ws, wu, wn, lw, nw, no,
                        sampled_exceeds(r) ? " †" : "");
            }
            fprintf(md, "\n");
            double werr = 1.0;
            for (int i = 0; i < set.nruns; i++)
                werr = set.runs[i].warmup_error > werr ? set.runs[i].warmup_error : werr;
            if (werr > 1.0)
                fprintf(md,
                        "**Too fast by up to %.2fx:** these runs were written before 2026-12-05, "
                        "when halox bench md counted its warm-up's steps in its timed run's: each "
                        "time per step above is low and each ns/day high by (warm-up + steps) / "
                        "steps. `bench/warmup_erratum.py` prints the corrected figures.\n\n",
                        werr);
            search_table(md, set.runs, set.nruns);
        }
        if (is_exchange)
            fprintf(md, "\n");
        print_skips(md, cJSON_GetObjectItemCaseSensitive(raw, "skipped"), "Not run:");
        cJSON_Delete(raw);
        if (plots && set.nruns > 0) {
            char png[1200], title[400];
            if (is_exchange) {
                snprintf(png, sizeof png, "%s/%s_atoms.png", dir, base);
                snprintf(title, sizeof title, "%s: exchange time against atoms per domain", base);
                if (plot_lines(png, title, "atoms per domain", "µs per exchange (x + f)", 1, 1,
                               set.runs, set.nruns, g_apd, g_time) == 0)
                    fprintf(md, "![%s](%s_atoms.png)\n\n", title, base);
                snprintf(png, sizeof png, "%s/%s_pulses.png", dir, base);
                snprintf(title, sizeof title, "%s: exchange time against pulses", base);
                if (plot_lines(png, title, "pulses", "µs per exchange (x + f)", 0, 0, set.runs,
                               set.nruns, g_pulses, g_time) == 0)
                    fprintf(md, "![%s](%s_pulses.png)\n\n", title, base);
            } else {
                /* several grids per rank count: each backend's line is its best grid */
                hx_bench_run *bst = malloc(sizeof *bst * (size_t)set.nruns);
                const int nb = bst ? best_per_rank(set.runs, set.nruns, bst) : 0;
                snprintf(png, sizeof png, "%s/%s_nsday.png", dir, base);
                snprintf(title, sizeof title, "%s: ns/day against ranks", base);
                if (nb && plot_lines(png, title, "ranks", "ns/day (every step counted)", 0, 0, bst,
                                     nb, g_ranks, g_nsday) == 0)
                    fprintf(md, "![%s](%s_nsday.png)\n\n", title, base);
                snprintf(png, sizeof png, "%s/%s_efficiency.png", dir, base);
                snprintf(title, sizeof title,
                         "%s: parallel efficiency against ranks (against the smallest run of the "
                         "same engine"
                         ")",
                         base);
                if (nb && plot_lines(png, title, "ranks", "efficiency", 0, 0, bst, nb, g_ranks,
                                     g_eff) == 0)
                    fprintf(md, "![%s](%s_efficiency.png)\n\n", title, base);
                snprintf(png, sizeof png, "%s/%s_breakdown.png", dir, base);
                snprintf(title, sizeof title, "%s: time per step by phase", base);
                if (nb && plot_breakdown(png, title, bst, nb) == 0)
                    fprintf(md, "![%s](%s_breakdown.png)\n\n", title, base);
                free(bst);
                /* every run's search step, not only the best grid's: the grids differ most
                 * there */
                snprintf(png, sizeof png, "%s/%s_search.png", dir, base);
                snprintf(title, sizeof title, "%s: the search step by part", base);
                if (plot_search(png, title, set.runs, set.nruns) == 0)
                    fprintf(md, "![%s](%s_search.png)\n\n", title, base);
            }
        }
        hx_bench_free(&set);
    }
    /* Across the files: every md run of the most common size, ns/day against ranks and the
     * time per step by phase, so that one GPU and the decompositions stand side by side. */
    if (plots && rc == 0) {
        int nall = 0;
        hx_bench_run *all = collect(dir, names, nf, "md", &nall);
        long long size = 0;
        int best = 0;
        char sysname[64] = "";
        /* the most common system and size: one system per picture */
        for (int i = 0; i < nall; i++) {
            int c = 0;
            for (int j = 0; j < nall; j++)
                c += all[j].atoms == all[i].atoms && strcmp(all[j].system, all[i].system) == 0;
            if (c > best) {
                best = c;
                size = all[i].atoms;
                snprintf(sysname, sizeof sysname, "%s", all[i].system);
            }
        }
        int k = 0;
        for (int i = 0; i < nall; i++)
            if (all[i].atoms == size && strcmp(all[i].system, sysname) == 0)
                all[k++] = all[i];
        /* the line of a backend: its best grid and configuration at each rank count */
        hx_bench_run *bestr = malloc(sizeof *bestr * (size_t)(k > 0 ? k : 1));
        const int nb = bestr ? best_per_rank(all, k, bestr) : 0;
        if (k > 1 && bestr) {
            char png[1200], title[200];
            fprintf(md,
                    "## All MD runs of %lld atoms\n\nns/day: the best grid and list "
                    "configuration of each backend at each rank count. Time per step by phase: "
                    "the phases are averages over the sampled steps (timed with events and "
                    "waited for, so a little slower than the graph-replayed steps that the "
                    "time per step averages).\n\n",
                    size);
            snprintf(png, sizeof png, "%s/md_%lld_nsday.png", dir, size);
            snprintf(title, sizeof title, "%lld atoms: ns/day against ranks", size);
            if (plot_lines(png, title, "ranks", "ns/day (every step counted)", 0, 0, bestr, nb,
                           g_ranks, g_nsday) == 0)
                fprintf(md, "![%s](md_%lld_nsday.png)\n\n", title, size);
            snprintf(png, sizeof png, "%s/md_%lld_breakdown.png", dir, size);
            snprintf(title, sizeof title, "%lld atoms: time per step by phase", size);
            if (plot_breakdown(png, title, all, k) == 0)
                fprintf(md, "![%s](md_%lld_breakdown.png)\n\n", title, size);
        }
        free(bestr);
        free(all);
        /* the exchange against pulses: every grid's run at the most common size per domain */
        hx_bench_run *x = collect(dir, names, nf, "exchange", &nall);
        double apd = 0;
        best = 0;
        for (int i = 0; i < nall; i++) {
            int c = 0;
            for (int j = 0; j < nall; j++)
                c += x[j].atoms_per_domain == x[i].atoms_per_domain;
            if (c > best) {
                best = c;
                apd = x[i].atoms_per_domain;
            }
        }
        k = 0;
        for (int i = 0; i < nall; i++)
            if (x[i].atoms_per_domain == apd)
                x[k++] = x[i];
        if (k > 1) {
            char png[1200], title[200];
            snprintf(png, sizeof png, "%s/exchange_%.0f_pulses.png", dir, apd);
            snprintf(title, sizeof title, "%.0f atoms per domain: exchange time against pulses",
                     apd);
            if (plot_lines(png, title, "pulses", "µs per exchange (x + f)", 0, 0, x, k, g_pulses,
                           g_time) == 0)
                fprintf(md,
                        "## The exchange at %.0f atoms per domain, all grids\n\n![%s]"
                        "(exchange_%.0f_pulses.png)\n\n",
                        apd, title, apd);
        }
        free(x);
    }
    for (int i = 0; i < nf; i++)
        free(names[i]);
    if (rc != 0) {
        /* an unreadable result file: the report would be incomplete, keep the old one */
        fclose(md);
        unlink(tmp);
        fprintf(stderr, "halox bench report: %s not written (fix or remove the file above)\n",
                report_path);
        return rc;
    }
    if (fclose(md) != 0 || rename(tmp, report_path) != 0) {
        fprintf(stderr, "halox bench report: error: %s: could not be written: %s\n", report_path,
                strerror(errno));
        unlink(tmp);
        return 1;
    }
    return rc;
}
