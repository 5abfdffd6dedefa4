/* halox bench: reading result files (DESIGN §7 JSON), comparing two of them, and writing the
 * Markdown report with its plots (drawn by gnuplot, the project's plotting dependency).
 *
 * A result file is {"meta": {...provenance...}, "runs": [{...}, ...]}; a run is identified by
 * its key: series, mode, system, atoms, backend (+ path, bulk copy), ranks, gpus and grid. */
#include "bench.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- reading ----------------------------------------------------------------------------- */

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
    free(text);
    if (!root) {
        snprintf(err, errcap, "%s: not valid JSON (near: %.40s); expected a halox result file",
                 path, cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() : "?");
        return -1;
    }
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
        b->ns_per_day = num(r, "ns_per_day");
        b->local_work_us = num(r, "local_work_us");
        b->nonlocal_work_us = num(r, "nonlocal_work_us");
        b->non_overlap_us = num(r, "non_overlap_us");
        b->exchange_us = num(r, "exchange_us");
        b->atoms_per_domain = num(r, "atoms_per_domain");
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
            "set terminal pngcairo size 960,600 enhanced font 'sans,11'\nset output '%s'\n%s\n"
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
static double g_nsday(const hx_bench_run *r)
{
    return r->ns_per_day;
}

static void label_of(const hx_bench_run *r, char *out, size_t cap)
{
    snprintf(out, cap, "%s%s%s%s", r->backend, r->path[0] ? " " : "", r->path,
             r->bulk_copy > 0 ? " bulk" : "");
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
#define APP(...)                                                                                   \
    do {                                                                                           \
        int w_ = snprintf(s + len, cap - len, __VA_ARGS__);                                        \
        if (w_ > 0 && (size_t)w_ < cap - len)                                                      \
            len += (size_t)w_;                                                                     \
    } while (0)
    APP("set title '%s'\nset xlabel '%s'\nset ylabel '%s'\nset grid\nset key top left\n"
        "%s%s",
        title, xlabel, ylabel, logx ? "set logscale x\n" : "", logy ? "set logscale y\n" : "");
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
    if (nl == 0) {
        free(s);
        return 1; /* nothing to draw */
    }
    for (int k = 0; k < nl; k++) {
        APP("$B%d << EOD\n", k);
        for (int i = 0; i < n; i++) {
            char lab[96];
            label_of(&runs[i], lab, sizeof lab);
            if (strcmp(lab, labels[k]) == 0 && gy(&runs[i]) > 0 && gx(&runs[i]) > 0)
                APP("%.6g %.6g\n", gx(&runs[i]), gy(&runs[i]));
        }
        APP("EOD\n");
    }
    APP("plot ");
    for (int k = 0; k < nl; k++)
        APP("%s$B%d using 1:2 with linespoints lw 2 pt %d title '%s'", k ? ", " : "", k, 5 + k,
            labels[k]);
    APP("\n");
#undef APP
    int rc = gnuplot_png(png, s);
    free(s);
    return rc;
}

/* The paper's Fig. 6 as a picture: per backend and rank count, time per step split into local
 * work, the non-overlapped part of the halo (non-overlap) and the rest of the step; the
 * non-local work drawn beside it. */
static int plot_breakdown(const char *png, const char *title, hx_bench_run *runs, int n)
{
    size_t cap = 65536, len = 0;
    char *s = malloc(cap);
    if (!s)
        return -1;
    int rows = 0;
#define APP(...)                                                                                   \
    do {                                                                                           \
        int w_ = snprintf(s + len, cap - len, __VA_ARGS__);                                        \
        if (w_ > 0 && (size_t)w_ < cap - len)                                                      \
            len += (size_t)w_;                                                                     \
    } while (0)
    APP("$D << EOD\n");
    for (int i = 0; i < n; i++) {
        const hx_bench_run *r = &runs[i];
        if (!(r->local_work_us >= 0) || !(r->us_per_step > 0) || !(r->non_overlap_us >= 0))
            continue;
        double rest = r->us_per_step - r->local_work_us - r->non_overlap_us;
        if (rest < 0)
            rest = 0;
        char lab[96];
        label_of(r, lab, sizeof lab);
        APP("\"%s %dr %dx%dx%d\" %.3f %.3f %.3f %.3f\n", lab, r->ranks, r->dd[0], r->dd[1],
            r->dd[2], r->local_work_us, r->non_overlap_us, rest,
            r->nonlocal_work_us >= 0 ? r->nonlocal_work_us : 0.0);
        rows++;
    }
    APP("EOD\n");
    APP("set title '%s'\nset ylabel 'µs per step'\nset style data histograms\n"
        "set style histogram rowstacked\nset style fill solid 0.8 border -1\nset boxwidth 0.6\n"
        "set xtics rotate by -30\nset key outside top center horizontal\nset grid y\n"
        "set yrange [0:*]\n"
        "plot $D using 2:xtic(1) title 'local work', '' using 3 title 'non-overlap (halo on the "
        "critical path)', '' using 4 title 'rest of the step', '' using 0:5 with points pt 7 ps "
        "1.5 "
        "lc rgb 'black' title 'non-local work'\n",
        title);
#undef APP
    int rc = rows ? gnuplot_png(png, s) : 1;
    free(s);
    return rc;
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
            "DESIGN §7). Times are medians over steps; ns/day from the time per step.\n\n",
            dir);
    if (!plots)
        fprintf(md, "_No plots: gnuplot is not installed (scripts/setup.sh installs it)._\n\n");
    int rc = 0;
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
        int is_exchange = set.nruns > 0 && strcmp(set.runs[0].mode, "exchange") == 0;
        if (is_exchange) {
            fprintf(md, "| backend | path | grid | ranks | atoms/domain | pulses | exchange µs "
                        "(median) | min – max |\n|---|---|---|---|---|---|---|---|\n");
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
            fprintf(md, "| system | atoms | backend | ranks | GPUs | grid | µs/step | ns/day | "
                        "local µs | non-local µs | non-overlap µs |\n"
                        "|---|---|---|---|---|---|---|---|---|---|---|\n");
            for (int i = 0; i < set.nruns; i++) {
                const hx_bench_run *r = &set.runs[i];
                fprintf(md,
                        "| %s | %lld | %s%s%s | %d | %d | %dx%dx%d | %.1f | %.1f | %.1f | "
                        "%.1f | %.1f |\n",
                        r->system, r->atoms, r->backend, r->path[0] ? " " : "", r->path, r->ranks,
                        r->gpus, r->dd[0], r->dd[1], r->dd[2], r->us_per_step, r->ns_per_day,
                        r->local_work_us, r->nonlocal_work_us, r->non_overlap_us);
            }
        }
        fprintf(md, "\n");
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
                snprintf(png, sizeof png, "%s/%s_nsday.png", dir, base);
                snprintf(title, sizeof title, "%s: ns/day against ranks", base);
                if (plot_lines(png, title, "ranks", "ns/day", 0, 0, set.runs, set.nruns, g_ranks,
                               g_nsday) == 0)
                    fprintf(md, "![%s](%s_nsday.png)\n\n", title, base);
                snprintf(png, sizeof png, "%s/%s_breakdown.png", dir, base);
                snprintf(title, sizeof title, "%s: time per step by phase", base);
                if (plot_breakdown(png, title, set.runs, set.nruns) == 0)
                    fprintf(md, "![%s](%s_breakdown.png)\n\n", title, base);
            }
        }
        hx_bench_free(&set);
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
