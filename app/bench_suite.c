/* halox bench suite (also `halox bench --suite paper`): the paper's whole series on whatever
 * machine this is, resumable, within limits, with one report at the end.
 *
 * The suite is a driver, not an MPI program: it plans every run (system, size, ranks, grid,
 * backend), and runs each as its own child process (`[mpirun -np N] halox bench md|exchange`,
 * bench/cpu_md.py for GROMACS on the CPU, bench/gmx_gpu.py for GROMACS on the GPU), so that a
 * run that crashes or hangs costs that run only,
 * every rank count gets its own launch, and the measuring code is the one of `bench md` and
 * `bench exchange`. Each child writes one result file into DIR/runs/ (atomically); a run whose
 * file is there from an earlier call with the same command is not run again (resume). Boxes are
 * built here once and cached by the hash of their build parameters, checked against the hash of
 * their content on reuse. What cannot run here (no GPU, not compiled, no MPI, the engine refuses
 * the model, the time budget) is recorded with the reason. At the end the runs are merged into
 * one result file per series in DIR and the report of `halox bench report DIR` is written. */
#include "bench.h"
#include "commands.h"
#include "signals.h"

#include "halox/build.h"
#include "halox/dd.h"
#include "halox/gpu.h"
#include "halox/halox.h"
#include "halox/io.h"
#include "halox/md.h"
#include "halox/version.h"
#include "halox/error.h"
#include "halox/timer.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef HALOX_SOURCE_DIR
#define HALOX_SOURCE_DIR "."
#endif

/* Bump when the way boxes are built or written changes without a halox version change: every
 * cached box then has a new key and is rebuilt. */
#define HX_SUITE_BOX_FORMAT 1

typedef struct suite_opts {
    const char *suite, *out, *cache, *ranks, *systems, *series, *backends, *mpirun;
    long long max_atoms;
    double budget, run_timeout;
    int steps, warmup, quick, fresh, dry_run, no_report, seed, assume_gpus;
} suite_opts;

typedef enum { R_PENDING, R_DONE, R_SKIPPED, R_FAILED } run_state;

typedef struct suite_run {
    char id[192];
    const char *series; /* "md", "exchange", "gromacs" (backend "gromacs" on the CPU,
                         * "gromacs-gpu" on the GPU) */
    const char *kind;   /* "water", "mixture" */
    char system[48], model[32], backend[160];
    long long atoms;
    int ranks, grid[3], tier, steps, warmup;
    double est_s; /* predicted wall time, seconds */
    run_state state;
    char reason[512];
} suite_run;

/* ---- small helpers ------------------------------------------------------------------------ */

/* FNV-1a, 64 bit: the cache needs to tell a changed or damaged file from the one it wrote, not
 * to resist an adversary. */
static uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    return h;
}
#define FNV_SEED 14695981039346656037ULL

/* Hash of a file's content; -1 when it cannot be read. */
static int file_hash(const char *path, uint64_t *h)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    char buf[65536];
    size_t n;
    *h = FNV_SEED;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        *h = fnv1a(*h, buf, n);
    int bad = ferror(f);
    fclose(f);
    return bad ? -1 : 0;
}

static hx_status mkdir_p(const char *path)
{
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(tmp, 0777) != 0 && errno != EEXIST)
                HX_FAIL(HX_ERR_IO, "cannot create directory %s: %s", tmp, strerror(errno));
            *p = '/';
        }
    if (mkdir(tmp, 0777) != 0 && errno != EEXIST)
        HX_FAIL(HX_ERR_IO, "cannot create directory %s: %s", tmp, strerror(errno));
    return HX_OK;
}

static int in_list(const char *list, const char *name)
{
    char want[512], key[96];
    snprintf(want, sizeof want, ",%s,", list);
    snprintf(key, sizeof key, ",%s,", name);
    return strstr(want, key) != NULL;
}

static int on_path(const char *prog)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "command -v %s > /dev/null 2>&1", prog);
    return system(cmd) == 0;
}

static void fmt_secs(double s, char *buf, size_t cap)
{
    if (!(s >= 0) || s > 1e7)
        snprintf(buf, cap, "?");
    else if (s < 120)
        snprintf(buf, cap, "%.0f s", s);
    else if (s < 7200)
        snprintf(buf, cap, "%.0f min", s / 60);
    else
        snprintf(buf, cap, "%.1f h", s / 3600);
}

static cJSON *load_json(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = n >= 0 ? malloc((size_t)n + 1) : NULL;
    cJSON *j = NULL;
    if (b && fread(b, 1, (size_t)n, f) == (size_t)n) {
        b[n] = 0;
        j = cJSON_Parse(b);
    }
    free(b);
    fclose(f);
    return j;
}

/* ---- the box cache ---------------------------------------------------------------------- */

/* The box of (kind, model, atoms, seed): DIR/box-<key hash>.gro (+ .top for a mixture, the
 * topology GROMACS runs), with DIR/box-<key hash>.json recording the key and the content hashes.
 * A box is reused only when its record names the same key and its files hash to the recorded
 * values; otherwise it is (re)built and written under temporary names, then renamed, the record
 * last, so that an interrupted write leaves no record and is rebuilt next time. */
/* Quick suites relax a mixture briefly (a pipeline check, not a measurement): the relaxation of
 * the default builder takes minutes on two cores. */
static int g_quick_relax;

static void box_key(const char *cache, const char *kind, const char *model, long long atoms,
                    int seed, char *key, size_t kcap, char *base, size_t bcap)
{
    const int mix = strcmp(kind, "mixture") == 0;
    snprintf(key, kcap, "halox-box format=%d halox=%s kind=%s model=%s atoms=%lld seed=%d%s%s",
             HX_SUITE_BOX_FORMAT, HALOX_VERSION, kind, model, atoms, seed,
             mix ? " ethanol-fraction=0.1" : "", mix && g_quick_relax ? " relax=quick" : "");
    const uint64_t kh = fnv1a(FNV_SEED, key, strlen(key));
    snprintf(base, bcap, "%.900s/box-%016llx", cache, (unsigned long long)kh);
}

/* Where the box of these parameters lives (it need not exist yet). */
static void box_path(const char *cache, const char *kind, const char *model, long long atoms,
                     int seed, char *gro, size_t cap)
{
    char key[512], base[1024];
    box_key(cache, kind, model, atoms, seed, key, sizeof key, base, sizeof base);
    snprintf(gro, cap, "%s.gro", base);
}

static hx_status box_get(const char *cache, const char *kind, const char *model, long long atoms,
                         int seed, char *gro, size_t cap, int *built)
{
    char key[512], base[1024], top[1100], rec[1100];
    box_key(cache, kind, model, atoms, seed, key, sizeof key, base, sizeof base);
    snprintf(gro, cap, "%s.gro", base);
    snprintf(top, sizeof top, "%s.top", base);
    snprintf(rec, sizeof rec, "%s.json", base);
    const int with_top = strcmp(kind, "mixture") == 0;
    *built = 0;
    cJSON *r = load_json(rec);
    if (r) {
        const cJSON *k = cJSON_GetObjectItemCaseSensitive(r, "key");
        const cJSON *hg = cJSON_GetObjectItemCaseSensitive(r, "gro_hash");
        const cJSON *ht = cJSON_GetObjectItemCaseSensitive(r, "top_hash");
        uint64_t h = 0;
        char hex[32];
        int ok = cJSON_IsString(k) && strcmp(k->valuestring, key) == 0 && cJSON_IsString(hg) &&
                 file_hash(gro, &h) == 0;
        snprintf(hex, sizeof hex, "%016llx", (unsigned long long)h);
        ok = ok && strcmp(hg->valuestring, hex) == 0;
        if (ok && with_top) {
            ok = cJSON_IsString(ht) && file_hash(top, &h) == 0;
            snprintf(hex, sizeof hex, "%016llx", (unsigned long long)h);
            ok = ok && strcmp(ht->valuestring, hex) == 0;
        }
        cJSON_Delete(r);
        if (ok)
            return HX_OK;
        fprintf(stderr,
                "halox bench suite: cached box %s does not match its recorded content hash: "
                "rebuilding it\n",
                gro);
    }
    HX_TRY(mkdir_p(cache));
    hx_system *sys = NULL;
    if (with_top) {
        hx_mixture_params mp;
        hx_mixture_params_default(&mp);
        mp.natoms = (int)atoms;
        mp.water = model + strlen("oplsaa-");
        mp.seed = (uint64_t)seed;
        if (g_quick_relax) {
            mp.min_steps = 100;
            mp.md_ps[0] = 0.02, mp.md_ps[1] = 0.05, mp.md_ps[2] = 0.1;
        }
        hx_mixture_info mi;
        HX_TRY(hx_build_mixture(&mp, &sys, &mi));
    } else {
        HX_TRY(hx_build_water(model, (int)atoms, 0.0, (uint64_t)seed, &sys));
    }
    char tg[1200], tt[1200];
    snprintf(tg, sizeof tg, "%s.tmp.%d.gro", base, (int)getpid());
    snprintf(tt, sizeof tt, "%s.tmp.%d.top", base, (int)getpid());
    hx_status st = hx_gro_write(tg, sys, 0);
    if (st == HX_OK && with_top)
        st = hx_topology_write(tt, sys, model);
    const int natoms = sys->natoms;
    hx_system_destroy(&sys);
    uint64_t hg = 0, ht = 0;
    if (st == HX_OK && (file_hash(tg, &hg) != 0 || (with_top && file_hash(tt, &ht) != 0)))
        st = hx_error_set(HX_ERR_IO, __FILE__, __LINE__, __func__, "cannot read back %s", tg);
    if (st == HX_OK && (rename(tg, gro) != 0 || (with_top && rename(tt, top) != 0)))
        st = hx_error_set(HX_ERR_IO, __FILE__, __LINE__, __func__, "cannot rename %s to %s: %s", tg,
                          gro, strerror(errno));
    if (st != HX_OK) {
        unlink(tg);
        unlink(tt);
        return st;
    }
    cJSON *j = cJSON_CreateObject();
    char hex[32];
    cJSON_AddStringToObject(j, "key", key);
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)hg);
    cJSON_AddStringToObject(j, "gro_hash", hex);
    if (with_top) {
        snprintf(hex, sizeof hex, "%016llx", (unsigned long long)ht);
        cJSON_AddStringToObject(j, "top_hash", hex);
    }
    cJSON_AddStringToObject(j, "hash", "FNV-1a 64 of the file's bytes");
    cJSON_AddNumberToObject(j, "natoms", natoms);
    st = hx_bench_write_json(rec, j);
    cJSON_Delete(j);
    HX_TRY(st);
    *built = 1;
    return HX_OK;
}

/* ---- the plan ------------------------------------------------------------------------------ */

static const long long paper_sizes[] = {45000,  90000,   180000,  360000,
                                        720000, 1440000, 2880000, 5760000};
static const long long quick_sizes[] = {3000};

/* The primary MD backends first; the forced NVSHMEM variants are the paper's ablations. */
static const char *const md_backends[] = {
    "cpu",     "gpu",         "gpu-mpi",         "gpu-direct",
    "nvshmem", "nvshmem-p2p", "nvshmem-network", "nvshmem-bulk"};
#define N_MD_BACKENDS ((int)(sizeof md_backends / sizeof md_backends[0]))
static const char *const x_backends =
    "gpu-mpi,gpu-direct,nvshmem,nvshmem-p2p,nvshmem-network,nvshmem-bulk,nvshmem-graph";

/* 1D, 2D and 3D grids of n domains, each as cubic as its dimension allows (distinct ones). */
static int grids_for(int n, int out[3][3])
{
    int k = 0;
    out[k][0] = n, out[k][1] = out[k][2] = 1, k++;
    int best = 0;
    for (int a = 2; a * a <= n; a++)
        if (n % a == 0)
            best = a;
    if (best)
        out[k][0] = n / best, out[k][1] = best, out[k][2] = 1, k++;
    int b3[3] = {0, 0, 0};
    double bscore = 1e30;
    for (int a = 2; a <= n; a++)
        for (int b = 2; a * b <= n; b++)
            if (n % (a * b) == 0 && n / (a * b) >= 2 && a >= b && b >= n / (a * b)) {
                const int c = n / (a * b);
                const double s = (double)a / c;
                if (s < bscore)
                    bscore = s, b3[0] = a, b3[1] = b, b3[2] = c;
            }
    if (b3[0])
        memcpy(out[k++], b3, sizeof b3);
    return k;
}

typedef struct machine {
    int ncores, ndev, have_mpi, have_mpirun, have_gmx, have_cpu_md_script;
    long long mem_avail;
    char no_gpu[512], no_mpi[256];
    char no_gmx_gpu[500]; /* why GROMACS cannot run on the GPU here ("" when it can) */
} machine;

static void probe(machine *m)
{
    memset(m, 0, sizeof *m);
    long nc = sysconf(_SC_NPROCESSORS_ONLN);
    m->ncores = nc > 0 ? (int)nc : 1;
    const char *why = NULL;
    hx_gpu_device_count(&m->ndev, &why);
    if (m->ndev == 0)
        snprintf(m->no_gpu, sizeof m->no_gpu, "no GPU: %s", why ? why : "none visible");
    else if (hx_md_backend_available("gpu") != HX_OK)
        snprintf(m->no_gpu, sizeof m->no_gpu, "%s", hx_last_error_message());
    hx_clear_error();
    m->have_mpi = HALOX_HAVE_MPI;
    m->have_mpirun = on_path("mpirun");
    if (!m->have_mpi)
        snprintf(m->no_mpi, sizeof m->no_mpi,
                 "this halox was built without MPI: runs of more than one rank need it");
    else if (!m->have_mpirun)
        snprintf(m->no_mpi, sizeof m->no_mpi, "mpirun is not on PATH (give --mpirun)");
    m->have_gmx = on_path("gmx");
    m->have_cpu_md_script =
        access(HALOX_SOURCE_DIR "/bench/cpu_md.py", R_OK) == 0 && on_path("python3");
    m->mem_avail = -1;
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lld kB", &m->mem_avail) == 1)
            m->mem_avail *= 1024;
    if (f)
        fclose(f);
}

/* Whether a GROMACS with CUDA is at hand for the GPU GROMACS runs: bench/gmx_gpu.py locate says
 * where (gmx on PATH, HALOX_GMX, or a tarball it would unpack) or why there is none. Asked only
 * when GPU runs of GROMACS are planned: it starts python and gmx --version. */
static void probe_gmx_gpu(machine *m)
{
    m->no_gmx_gpu[0] = 0;
    if (access(HALOX_SOURCE_DIR "/bench/gmx_gpu.py", R_OK) != 0 || !on_path("python3")) {
        snprintf(m->no_gmx_gpu, sizeof m->no_gmx_gpu,
                 "bench/gmx_gpu.py (which runs GROMACS on the GPU) or python3 is missing (it is "
                 "read from the source tree this halox was built from)");
        return;
    }
    FILE *p = popen("python3 '" HALOX_SOURCE_DIR "/bench/gmx_gpu.py' locate --no-unpack 2>&1", "r");
    char line[768] = "";
    if (p) {
        if (!fgets(line, sizeof line, p))
            line[0] = 0;
        char rest[256];
        while (fgets(rest, sizeof rest, p)) /* drain */
            ;
    }
    const int rc = p ? pclose(p) : -1;
    line[strcspn(line, "\n")] = 0;
    if (rc != 0)
        snprintf(m->no_gmx_gpu, sizeof m->no_gmx_gpu, "%.490s",
                 line[0] ? line : "bench/gmx_gpu.py locate failed");
}

/* Per-step wall time guesses (µs) that order the plan and judge the budget before anything ran;
 * the measured times then correct them (calibration below). CPU: ~0.8 µs per atom and core-step
 * (45k SPC/E on 2 cores, 17 ms); one GPU: ~2.4 ns per atom-step plus a floor (H200, 45k). */
static double guess_step_us(const suite_run *r, const machine *m)
{
    const double mix = strcmp(r->kind, "mixture") == 0 ? 2.0 : 1.0;
    if ((strcmp(r->series, "md") == 0 && strcmp(r->backend, "cpu") != 0) ||
        strcmp(r->backend, "gromacs-gpu") == 0)
        return (20.0 + 15.0 * (r->ranks > 1) + 2.4e-3 * (double)r->atoms) * mix;
    const int cores = r->ranks < m->ncores ? m->ncores : r->ranks;
    return 0.8 * (double)r->atoms * mix / (cores < m->ncores ? cores : m->ncores);
}

static double guess_run_s(const suite_run *r, const machine *m)
{
    const double steps = r->steps + r->warmup;
    if (strcmp(r->series, "exchange") == 0) /* 7 backends x 5 sizes x (steps+warmup) */
        return 8.0 + 35.0 * steps * 60e-6;
    if (strcmp(r->backend, "gromacs-gpu") == 0) /* grompp and mdrun's start, then the steps */
        return 10.0 + steps * guess_step_us(r, m) * 1e-6 + 2e-5 * (double)r->atoms;
    if (strcmp(r->series, "gromacs") == 0) /* -resethway: twice the steps, per rank count */
        return 5.0 + 2.0 * steps * guess_step_us(r, m) * 1e-6;
    const double start = strcmp(r->backend, "cpu") == 0 ? 0.5 : 4.0;
    return start + steps * guess_step_us(r, m) * 1e-6 + 1e-6 * (double)r->atoms;
}

/* measured / guessed, per class of run (CPU md, GPU md, exchange, GROMACS on the CPU, GROMACS on
 * the GPU): a running geometric mean, so that the ETA and the budget follow this machine after
 * the first runs */
typedef struct calib {
    double logsum[5];
    int n[5];
} calib;

static int calib_class(const suite_run *r)
{
    if (strcmp(r->series, "exchange") == 0)
        return 2;
    if (strcmp(r->backend, "gromacs-gpu") == 0)
        return 4;
    if (strcmp(r->series, "gromacs") == 0)
        return 3;
    return strcmp(r->backend, "cpu") == 0 ? 0 : 1;
}

static double predicted(const suite_run *r, const calib *c)
{
    const int k = calib_class(r);
    return r->est_s * (c->n[k] ? exp(c->logsum[k] / c->n[k]) : 1.0);
}

static int cmp_plan(const void *a, const void *b)
{
    const suite_run *x = a, *y = b;
    if (x->tier != y->tier)
        return x->tier - y->tier;
    if (x->atoms != y->atoms)
        return x->atoms < y->atoms ? -1 : 1;
    int c = strcmp(x->kind, y->kind);
    if (c)
        return -c; /* water before mixture */
    if (x->ranks != y->ranks)
        return x->ranks - y->ranks;
    c = strcmp(x->series, y->series);
    return c ? c : strcmp(x->id, y->id);
}

typedef struct plan {
    suite_run *runs;
    int n, cap;
} plan;

static suite_run *plan_add(plan *p)
{
    if (p->n == p->cap) {
        int nc = p->cap ? 2 * p->cap : 256;
        suite_run *nr = realloc(p->runs, (size_t)nc * sizeof *nr);
        if (!nr)
            return NULL;
        p->runs = nr;
        p->cap = nc;
    }
    suite_run *r = &p->runs[p->n++];
    memset(r, 0, sizeof *r);
    return r;
}

/* A new pending run of series on the box system (model, backend, atoms, ranks; grid NULL: none);
 * warmup < 0: a tenth of the steps. NULL when out of memory. */
static suite_run *plan_run(plan *p, const char *series, const char *kind, const char *system,
                           const char *model, const char *backend, long long atoms, int ranks,
                           const int grid[3], int steps, int warmup)
{
    suite_run *r = plan_add(p);
    if (!r)
        return NULL;
    r->series = series;
    r->kind = kind;
    snprintf(r->system, sizeof r->system, "%s", system);
    snprintf(r->model, sizeof r->model, "%s", model);
    snprintf(r->backend, sizeof r->backend, "%s", backend);
    r->atoms = atoms;
    r->ranks = ranks;
    if (grid)
        memcpy(r->grid, grid, sizeof r->grid);
    r->steps = steps;
    r->warmup = warmup >= 0 ? warmup : steps / 10;
    return r;
}

static void skip(suite_run *r, const char *why)
{
    r->state = R_SKIPPED;
    snprintf(r->reason, sizeof r->reason, "%s", why);
}

/* Why a GPU MD backend cannot run here ("" when it can). */
static void md_backend_why(const char *b, const machine *m, char *why, size_t cap)
{
    why[0] = 0;
    if (strcmp(b, "cpu") == 0)
        return;
    if (m->no_gpu[0]) {
        snprintf(why, cap, "%s", m->no_gpu);
        return;
    }
    const char *halo = strcmp(b, "gpu") == 0 ? NULL : strncmp(b, "nvshmem", 7) == 0 ? "nvshmem" : b;
    if (halo && hx_halo_backend_available(halo) != HX_OK)
        snprintf(why, cap, "%s", hx_last_error_message());
    hx_clear_error();
}

/* Whether --backends holds a GPU md backend: then GROMACS runs on the GPU beside them. */
static int gpu_md_planned(const suite_opts *o)
{
    for (int bi = 0; bi < N_MD_BACKENDS; bi++)
        if (strcmp(md_backends[bi], "cpu") != 0 && in_list(o->backends, md_backends[bi]))
            return 1;
    return 0;
}

static hx_status make_plan(const suite_opts *o, const machine *m, const int *ranks, int nranks,
                           plan *p)
{
    const long long *sizes = o->quick ? quick_sizes : paper_sizes;
    const int nsizes = o->quick ? 1 : (int)(sizeof paper_sizes / sizeof paper_sizes[0]);
    const char *kinds[2] = {"water", "mixture"};
    const int gpu_steps = o->steps > 0 ? o->steps : 2000, cpu_steps = o->steps > 0 ? o->steps : 200;
    for (int si = 0; si < nsizes; si++) {
        const long long atoms = sizes[si];
        for (int ki = 0; ki < 2; ki++) {
            const char *kind = kinds[ki];
            if (!in_list(o->systems, kind))
                continue;
            const char *model = ki == 0 ? "spce" : "oplsaa-tip3p";
            char sysname[48];
            snprintf(sysname, sizeof sysname, "%s", ki == 0 ? "water-spce" : "ethanol-water-tip3p");
            const int small = si < 3; /* the paper's 45k-180k: every variant first */
            for (int ri = 0; ri < nranks; ri++) {
                const int n = ranks[ri];
                int g[3][3];
                const int ng = grids_for(n, g);
                /* the grid the engine would choose for a cubic box of this size: primary */
                int chosen[3] = {n, 1, 1};
                const double edge = cbrt((double)atoms / 100.0); /* ~100 atoms/nm^3 */
                const double box[3] = {edge, edge, edge};
                if (hx_dd_choose_grid(box, 1.25, 1.0, n, chosen) != HX_OK)
                    hx_clear_error();
                for (int gi = 0; gi < ng; gi++) {
                    const int primary_grid = memcmp(g[gi], chosen, sizeof chosen) == 0 || ng == 1;
                    for (int bi = 0; bi < N_MD_BACKENDS && in_list(o->series, "md"); bi++) {
                        const char *b = md_backends[bi];
                        if (!in_list(o->backends, b))
                            continue;
                        /* one rank: one domain, nothing to exchange: the GPU step as such */
                        if ((n == 1) != (strcmp(b, "gpu") == 0) && strcmp(b, "cpu") != 0)
                            continue;
                        const int primary_b = bi <= 4;
                        suite_run *r =
                            plan_run(p, "md", kind, sysname, model, b, atoms, n, g[gi],
                                     strcmp(b, "cpu") == 0 ? cpu_steps : gpu_steps, o->warmup);
                        HX_CHECK(r, HX_ERR_NOMEM, "out of memory");
                        r->tier = (small ? 0 : 2) + !(primary_grid && primary_b) + ki;
                        snprintf(r->id, sizeof r->id, "md_%s_%lld_%dr_%dx%dx%d_%s", sysname, atoms,
                                 n, g[gi][0], g[gi][1], g[gi][2], b);
                        r->est_s = guess_run_s(r, m);
                        char why[512];
                        md_backend_why(b, m, why, sizeof why);
                        if (why[0])
                            skip(r, why);
                        else if (n > 1 && m->no_mpi[0])
                            skip(r, m->no_mpi);
                    }
                    /* GROMACS on the GPU, the same box, ranks and grid as the GPU md runs:
                     * thread-MPI ranks spread over the GPUs as halox's (rank i on GPU i mod GPUs)
                     */
                    if (in_list(o->series, "gromacs") && gpu_md_planned(o)) {
                        suite_run *r = plan_run(p, "gromacs", kind, sysname, model, "gromacs-gpu",
                                                atoms, n, g[gi], gpu_steps, o->warmup);
                        HX_CHECK(r, HX_ERR_NOMEM, "out of memory");
                        r->tier = (small ? 0 : 2) + !primary_grid + ki;
                        snprintf(r->id, sizeof r->id, "gromacs-gpu_%s_%lld_%dr_%dx%dx%d", sysname,
                                 atoms, n, g[gi][0], g[gi][1], g[gi][2]);
                        r->est_s = guess_run_s(r, m);
                        if (m->no_gpu[0])
                            skip(r, m->no_gpu);
                        else if (m->no_gmx_gpu[0])
                            skip(r, m->no_gmx_gpu);
                    }
                    /* the exchange-only series: water only, a run per grid over the sizes per
                     * domain (atoms per domain x pulses) */
                    if (ki == 0 && si == 0 && n > 1 && in_list(o->series, "exchange")) {
                        suite_run *r =
                            plan_run(p, "exchange", kind, "water-spce", "", x_backends, 0, n, g[gi],
                                     o->steps > 0 ? o->steps : 1000, o->warmup);
                        HX_CHECK(r, HX_ERR_NOMEM, "out of memory");
                        r->tier = 0;
                        snprintf(r->id, sizeof r->id, "exchange_%dr_%dx%dx%d", n, g[gi][0],
                                 g[gi][1], g[gi][2]);
                        r->est_s = guess_run_s(r, m);
                        if (m->no_gpu[0])
                            skip(r, m->no_gpu);
                        else if (m->no_mpi[0])
                            skip(r, m->no_mpi);
                    }
                }
            }
            /* GROMACS on the CPU, the same box, every rank count in one call of cpu_md.py */
            if (in_list(o->series, "gromacs")) {
                suite_run *r = plan_run(p, "gromacs", kind, sysname, model, "gromacs", atoms,
                                        ranks[nranks - 1], NULL, cpu_steps, 0);
                HX_CHECK(r, HX_ERR_NOMEM, "out of memory");
                r->tier = (small ? 0 : 2) + ki;
                snprintf(r->id, sizeof r->id, "gromacs_%s_%lld", sysname, atoms);
                r->est_s = 0;
                for (int ri = 0; ri < nranks; ri++) {
                    suite_run t = *r;
                    t.ranks = ranks[ri];
                    r->est_s += guess_run_s(&t, m);
                }
                if (!m->have_gmx)
                    skip(r, "GROMACS (gmx) is not on PATH");
                else if (!m->have_cpu_md_script)
                    skip(r, "bench/cpu_md.py (which runs GROMACS) or python3 is missing (it is "
                            "read from the source tree this halox was built from)");
                else if (ranks[nranks - 1] > 1 && m->no_mpi[0])
                    skip(r, m->no_mpi);
            }
        }
    }
    /* sizes beyond --max-atoms or the memory: recorded, not planned silently away */
    for (int i = 0; i < p->n; i++) {
        suite_run *r = &p->runs[i];
        if (r->state != R_PENDING)
            continue;
        char why[256];
        /* each rank holds the whole system while the decomposition starts: ~1.5 kB per atom */
        const double need = 1500.0 * (double)r->atoms * r->ranks;
        if (o->max_atoms > 0 && r->atoms > o->max_atoms) {
            snprintf(why, sizeof why, "larger than --max-atoms %lld", o->max_atoms);
            skip(r, why);
        } else if (m->mem_avail > 0 && need > 0.8 * (double)m->mem_avail) {
            snprintf(why, sizeof why,
                     "needs about %.1f GB of memory (%d ranks x %lld atoms), %.1f GB available",
                     need / 1e9, r->ranks, r->atoms, m->mem_avail / 1e9);
            skip(r, why);
        }
    }
    qsort(p->runs, (size_t)p->n, sizeof *p->runs, cmp_plan);
    return HX_OK;
}

/* ---- running a child ------------------------------------------------------------------------ */

static char g_self[1024];
static char g_ranks_spaced[256]; /* "1 2 4 8": the suite's rank counts, for bench/cpu_md.sh */

/* Run argv with stdout and stderr into logpath and the environment additions env[] ("K=V",
 * NULL-terminated), in its own process group so that a stop reaches mpirun and every rank.
 * Returns the exit status (128 + signal when killed); *why says timeout or stop. */
static int spawn(char *const argv[], char *const env[], const char *logpath, double timeout,
                 int *stopped, int *timed_out)
{
    *stopped = *timed_out = 0;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        setpgid(0, 0);
        int fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC, 0666);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        for (int i = 0; env && env[i]; i++)
            if (strchr(env[i], '='))
                putenv(env[i]);
            else
                unsetenv(env[i]); /* a bare name: take it out */
        execvp(argv[0], argv);
        fprintf(stderr, "halox bench suite: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    setpgid(pid, pid);
    const double t0 = hx_wtime();
    double kill_at = -1;
    int status = 0;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR)
            return -1;
        const double now = hx_wtime();
        if (kill_at < 0 && (*hx_app_stop_flag() || (timeout > 0 && now - t0 > timeout))) {
            *stopped = *hx_app_stop_flag() != 0;
            *timed_out = !*stopped;
            kill(-pid, SIGTERM);
            kill_at = now + 5.0;
        } else if (kill_at > 0 && now > kill_at) {
            kill(-pid, SIGKILL);
            kill_at = now + 1e9;
        }
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The last line of the log that says what went wrong (an "error" line, else the last one). */
static void log_reason(const char *logpath, char *out, size_t cap)
{
    FILE *f = fopen(logpath, "r");
    char line[1024], last[1024] = "", err[1024] = "";
    int more = 0; /* "Fatal error:" (GROMACS): the message is on the next line */
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (!line[0])
            continue;
        snprintf(last, sizeof last, "%s", line);
        if (more) {
            size_t k = strlen(err);
            snprintf(err + k, sizeof err - k, " %.500s", line);
            more = 0;
        } else if (strstr(line, "error")) {
            snprintf(err, sizeof err, "%.500s", line);
            more = line[strlen(line) - 1] == ':';
        }
    }
    if (f)
        fclose(f);
    snprintf(out, cap, "%s", err[0] ? err : last[0] ? last : "no output");
}

typedef struct argvb {
    char *v[64];
    char buf[4096];
    size_t used;
    int n;
} argvb;

static void arg(argvb *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void arg(argvb *a, const char *fmt, ...)
{
    if (a->n >= 63 || a->used >= sizeof a->buf - 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(a->buf + a->used, sizeof a->buf - a->used, fmt, ap);
    va_end(ap);
    if (w < 0 || (size_t)w >= sizeof a->buf - a->used)
        return;
    a->v[a->n++] = a->buf + a->used;
    a->v[a->n] = NULL;
    a->used += (size_t)w + 1;
}

/* The launcher for n ranks: --mpirun (or HALOX_MPIRUN), else Open MPI's mpirun with what it
 * needs here: as root --allow-run-as-root, past the core count --oversubscribe, and no binding
 * (OpenMP threads and ranks share the cores as OMP_NUM_THREADS says). */
static void launcher(argvb *a, const suite_opts *o, const machine *m, int n)
{
    if (n <= 1)
        return;
    const char *custom = o->mpirun ? o->mpirun : getenv("HALOX_MPIRUN");
    if (custom) {
        char tmp[1024];
        snprintf(tmp, sizeof tmp, "%s", custom);
        for (char *t = strtok(tmp, " "); t; t = strtok(NULL, " "))
            arg(a, "%s", t);
    } else {
        arg(a, "mpirun");
        if (geteuid() == 0)
            arg(a, "--allow-run-as-root");
        if (n > m->ncores)
            arg(a, "--oversubscribe");
        arg(a, "--bind-to");
        arg(a, "none");
    }
    arg(a, "-np");
    arg(a, "%d", n);
}

static void join_argv(char *const *v, char *out, size_t cap)
{
    size_t k = 0;
    out[0] = 0;
    for (int i = 0; v[i] && k + 2 < cap; i++)
        k += (size_t)snprintf(out + k, cap - k, "%s%s", i ? " " : "", v[i]);
}

/* The command of a run (argv), its result file and log. */
static void run_command(const suite_opts *o, const machine *m, const suite_run *r, const char *gro,
                        argvb *a, char *result, size_t rcap, char *logp, size_t lcap)
{
    memset(a, 0, sizeof *a);
    snprintf(result, rcap, "%s/runs/%s.json", o->out, r->id);
    snprintf(logp, lcap, "%s/logs/%s.log", o->out, r->id);
    if (strcmp(r->backend, "gromacs-gpu") == 0) {
        /* one mdrun of thread-MPI ranks: no launcher; GROMACS's files in logs/<run>.d */
        arg(a, "python3");
        arg(a, "%s", HALOX_SOURCE_DIR "/bench/gmx_gpu.py");
        arg(a, "run");
        arg(a, "--conf");
        arg(a, "%s", gro);
        if (strcmp(r->kind, "mixture") == 0) {
            arg(a, "--top");
            arg(a, "%.*s.top", (int)strlen(gro) - 4, gro);
        }
        arg(a, "--model");
        arg(a, "%s", r->model);
        arg(a, "--system");
        arg(a, "%s", r->system);
        arg(a, "--atoms");
        arg(a, "%lld", r->atoms);
        arg(a, "--ranks");
        arg(a, "%d", r->ranks);
        arg(a, "--gpus");
        arg(a, "%d", m->ndev < r->ranks ? (m->ndev > 0 ? m->ndev : 1) : r->ranks);
        arg(a, "--dd");
        arg(a, "%dx%dx%d", r->grid[0], r->grid[1], r->grid[2]);
        arg(a, "--steps");
        arg(a, "%d", r->steps);
        arg(a, "--warmup");
        arg(a, "%d", r->warmup);
        arg(a, "--seed");
        arg(a, "%d", o->seed);
        arg(a, "--cores");
        arg(a, "%d", m->ncores);
        arg(a, "--workdir");
        arg(a, "%s/logs/%s.d", o->out, r->id);
        arg(a, "--out");
        arg(a, "%s", result);
        return;
    }
    if (strcmp(r->series, "gromacs") == 0) {
        /* the script itself (its wrapper would record its own quoting of the command) */
        arg(a, "python3");
        arg(a, "%s", HALOX_SOURCE_DIR "/bench/cpu_md.py");
        arg(a, "--conf");
        arg(a, "%s", gro);
        if (strcmp(r->kind, "mixture") == 0) {
            char top[1100];
            snprintf(top, sizeof top, "%.*s.top", (int)strlen(gro) - 4, gro);
            arg(a, "--mixture");
            arg(a, "0.1");
            arg(a, "--model");
            arg(a, "tip3p");
            arg(a, "--top");
            arg(a, "%s", top);
        } else {
            arg(a, "--model");
            arg(a, "spce");
        }
        arg(a, "--atoms");
        arg(a, "%lld", r->atoms);
        arg(a, "--skip-halox");
        arg(a, "--equil-steps");
        arg(a, "0");
        arg(a, "--steps");
        arg(a, "%d", r->steps);
        arg(a, "--threads");
        arg(a, "%d", m->ncores);
        arg(a, "--ranks");
        arg(a, "%s", g_ranks_spaced); /* every rank count of the suite */
        arg(a, "--out");
        arg(a, "%s", result);
        return;
    }
    launcher(a, o, m, r->ranks);
    arg(a, "%s", g_self);
    arg(a, "bench");
    if (strcmp(r->series, "exchange") == 0) {
        arg(a, "exchange");
        arg(a, "--atoms-per-domain");
        arg(a, "%s", o->quick ? "1000,3000" : "1000,3000,11000,30000,100000");
        arg(a, "--backends");
        arg(a, "%s", r->backend);
    } else {
        arg(a, "md");
        arg(a, "--conf");
        arg(a, "%s", gro);
        arg(a, "--model");
        arg(a, "%s", r->model);
        arg(a, "--system");
        arg(a, "%s", r->system);
        arg(a, "--backends");
        arg(a, "%s", r->backend);
        arg(a, "--nstmetrics");
        arg(a, "%d", r->steps >= 200 ? 20 : 5);
        arg(a, "--seed");
        arg(a, "%d", o->seed);
    }
    arg(a, "--dd");
    arg(a, "%dx%dx%d", r->grid[0], r->grid[1], r->grid[2]);
    arg(a, "--steps");
    arg(a, "%d", r->steps);
    arg(a, "--warmup");
    arg(a, "%d", r->warmup);
    arg(a, "-o");
    arg(a, "%s", result);
}

/* A finished run from an earlier call: its result file exists, is a result file, and was made by
 * the command this call would run (other steps, another box: run again). */
static int finished(const char *result, const char *command)
{
    cJSON *j = load_json(result);
    if (!j)
        return 0;
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(j, "meta");
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(meta, "command");
    const cJSON *runs = cJSON_GetObjectItemCaseSensitive(j, "runs");
    int ok = cJSON_IsString(c) && strcmp(c->valuestring, command) == 0 && cJSON_IsArray(runs);
    cJSON_Delete(j);
    return ok;
}

/* ---- merging and the report ----------------------------------------------------------------- */

static void add_skip(cJSON *arr, const suite_run *r, const char *reason, const char *backend)
{
    cJSON *s = cJSON_CreateObject();
    cJSON_AddStringToObject(s, "series", r->series);
    cJSON_AddStringToObject(s, "system", r->system);
    cJSON_AddNumberToObject(s, "atoms", (double)r->atoms);
    cJSON_AddStringToObject(s, "backend", backend ? backend : r->backend);
    cJSON_AddNumberToObject(s, "ranks", r->ranks);
    cJSON_AddItemToObject(s, "dd", cJSON_CreateIntArray(r->grid, 3));
    cJSON_AddStringToObject(s, "reason", reason);
    cJSON_AddItemToArray(arr, s);
}

/* The series file a run's results go to: md per system and size, exchange per grid. */
static void series_file(const suite_run *r, const cJSON *run, char *name, size_t cap)
{
    if (strcmp(r->series, "exchange") == 0) {
        snprintf(name, cap, "exchange_%dr_%dx%dx%d", r->ranks, r->grid[0], r->grid[1], r->grid[2]);
        return;
    }
    (void)run;
    snprintf(name, cap, "md_%s_%lld", r->system, r->atoms);
}

typedef struct outfile {
    char name[128];
    cJSON *runs, *skipped;
} outfile;

static outfile *outfile_get(outfile *f, int *nf, int cap, const char *name)
{
    for (int i = 0; i < *nf; i++)
        if (strcmp(f[i].name, name) == 0)
            return &f[i];
    if (*nf >= cap)
        return NULL;
    outfile *o = &f[(*nf)++];
    snprintf(o->name, sizeof o->name, "%s", name);
    o->runs = cJSON_CreateArray();
    o->skipped = cJSON_CreateArray();
    return o;
}

/* One result file per series in DIR (what `halox bench report DIR` reads) and DIR/suite.json
 * with the plan, the counts and every skipped or failed run with its reason. */
static hx_status merge(const suite_opts *o, const plan *p, int argc, char **argv, double elapsed)
{
    enum { MAXF = 128 };
    outfile *files = calloc(MAXF, sizeof *files);
    HX_CHECK(files, HX_ERR_NOMEM, "out of memory");
    int nf = 0;
    cJSON *all_skipped = cJSON_CreateArray(), *failed = cJSON_CreateArray();
    int ndone = 0, nskip = 0, nfail = 0, npend = 0, nskip_run = 0;
    for (int i = 0; i < p->n; i++) {
        const suite_run *r = &p->runs[i];
        char name[128];
        series_file(r, NULL, name, sizeof name);
        outfile *of = outfile_get(files, &nf, MAXF, name);
        if (r->state == R_SKIPPED) {
            nskip++;
            add_skip(all_skipped, r, r->reason, NULL);
            if (of)
                add_skip(of->skipped, r, r->reason, NULL);
            continue;
        }
        if (r->state == R_FAILED) {
            nfail++;
            add_skip(failed, r, r->reason, NULL);
            continue;
        }
        if (r->state == R_PENDING) {
            npend++;
            continue;
        }
        ndone++;
        char result[1200];
        snprintf(result, sizeof result, "%s/runs/%s.json", o->out, r->id);
        cJSON *j = load_json(result);
        if (!j || !of) {
            cJSON_Delete(j);
            continue;
        }
        cJSON *item;
        cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(j, "runs"))
        {
            /* the peer's skipped or summary-less entries (cpu_md.py) carry no time */
            if (!cJSON_GetObjectItemCaseSensitive(item, "us_per_step") &&
                !cJSON_GetObjectItemCaseSensitive(item, "exchange_us"))
                continue;
            cJSON *c = cJSON_Duplicate(item, 1);
            cJSON_AddStringToObject(c, "run_file", r->id);
            /* the peer's name for the system (cpu_md.py's) becomes the suite's, so that a
             * series file holds one system */
            cJSON_ReplaceItemInObjectCaseSensitive(c, "system", cJSON_CreateString(r->system));
            cJSON_AddItemToArray(of->runs, c);
        }
        /* what the child itself skipped (e.g. the engine refuses the model on the GPU) */
        cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(j, "skipped"))
        {
            const cJSON *why = cJSON_GetObjectItemCaseSensitive(item, "reason");
            const cJSON *b = cJSON_GetObjectItemCaseSensitive(item, "backend");
            const char *w = cJSON_IsString(why) ? why->valuestring : "skipped";
            const char *bn = cJSON_IsString(b) ? b->valuestring : NULL;
            add_skip(of->skipped, r, w, bn);
            add_skip(all_skipped, r, w, bn);
            /* a backend the child skipped inside a finished run: named by its run */
            cJSON_AddStringToObject(
                cJSON_GetArrayItem(all_skipped, -1 + cJSON_GetArraySize(all_skipped)), "from_run",
                r->id);
            nskip_run++;
        }
        cJSON_Delete(j);
    }
    hx_status st = HX_OK;
    for (int i = 0; i < nf && st == HX_OK; i++) {
        if (cJSON_GetArraySize(files[i].runs) == 0)
            continue; /* nothing measured: its skips are in suite.json */
        cJSON *root = cJSON_CreateObject();
        cJSON *meta = hx_bench_meta(argc, argv, "");
        cJSON_AddStringToObject(meta, "series", files[i].name);
        cJSON_AddStringToObject(meta, "suite", o->quick ? "quick" : o->suite);
        cJSON_AddItemToObject(root, "meta", meta);
        cJSON_AddItemToObject(root, "runs", files[i].runs);
        cJSON_AddItemToObject(root, "skipped", files[i].skipped);
        files[i].runs = files[i].skipped = NULL;
        char path[1200];
        snprintf(path, sizeof path, "%s/%s.json", o->out, files[i].name);
        st = hx_bench_write_json(path, root);
        cJSON_Delete(root);
    }
    for (int i = 0; i < nf; i++) {
        cJSON_Delete(files[i].runs);
        cJSON_Delete(files[i].skipped);
    }
    free(files);
    cJSON *root = cJSON_CreateObject();
    cJSON *meta = hx_bench_meta(argc, argv, "");
    cJSON_AddStringToObject(meta, "series", "suite");
    cJSON_AddStringToObject(meta, "suite", o->quick ? "quick" : o->suite);
    cJSON_AddItemToObject(root, "meta", meta);
    cJSON_AddItemToObject(root, "runs", cJSON_CreateArray());
    cJSON *sum = cJSON_CreateObject();
    cJSON_AddNumberToObject(sum, "planned", p->n);
    cJSON_AddNumberToObject(sum, "done", ndone);
    cJSON_AddNumberToObject(sum, "skipped", nskip);
    cJSON_AddNumberToObject(sum, "skipped_in_runs", nskip_run);
    cJSON_AddNumberToObject(sum, "failed", nfail);
    cJSON_AddNumberToObject(sum, "not_run", npend);
    cJSON_AddNumberToObject(sum, "elapsed_s", elapsed);
    cJSON_AddNumberToObject(sum, "time_budget_s", o->budget);
    cJSON_AddItemToObject(root, "summary", sum);
    cJSON_AddItemToObject(root, "skipped", all_skipped);
    cJSON_AddItemToObject(root, "failed", failed);
    char path[1200];
    snprintf(path, sizeof path, "%s/suite.json", o->out);
    if (st == HX_OK)
        st = hx_bench_write_json(path, root);
    cJSON_Delete(root);
    return st;
}

/* ---- the command -------------------------------------------------------------------------- */

static int run_suite(int argc, char **argv);

const hx_cmd hx_bench_cmd_suite = {
    "suite",
    "the paper's whole series that fits this machine, resumable, with the report",
    "halox bench --suite paper [-o DIR] [--quick] [--time-budget S] [--max-atoms N] "
    "[--ranks LIST] [--steps N] [--cache DIR] [--fresh] [--dry-run]\n"
    "       halox bench suite [--suite paper] [options]",
    "Runs the experiments of Doijade et al. (arXiv 2509.21527) that fit this machine and writes\n"
    "their results and report into DIR (default bench-suite):\n"
    "  md        SPC/E water at 45k, 90k, ... 5.76M atoms and the ethanol-water mixture\n"
    "            (OPLS-AA + TIP3P, ethanol mole fraction 0.1) at the same sizes, for each rank\n"
    "            count its 1D, 2D and 3D grids, every backend: cpu; gpu (one rank); gpu-mpi,\n"
    "            gpu-direct, nvshmem (automatic path), nvshmem-p2p, nvshmem-network\n"
    "            (put-with-signal), nvshmem-bulk (bulk copy on); halox bench md runs each.\n"
    "  exchange  the halo exchange alone (GPU), atoms per domain x pulses (the grids), every\n"
    "            GPU backend: halox bench exchange per grid.\n"
    "  gromacs   GROMACS on the same boxes: on the CPU (gmx, gmx_mpi for several ranks) via\n"
    "            bench/cpu_md.py, when installed; on the GPU beside every GPU md run (same\n"
    "            box, ranks, GPUs and grid: thread-MPI ranks, -nb gpu -update gpu, CUDA graphs,\n"
    "            direct GPU communication, its own pair-list interval) via bench/gmx_gpu.py,\n"
    "            which needs a GROMACS with CUDA: gmx on PATH, HALOX_GMX, or HALOX_GMX_TARBALL\n"
    "            (a tarball that unpacks to /tmp/gmxi; default .tools/gmx-cuda-sm90.tar.xz in\n"
    "            the source tree).\n"
    "Runs of more than one rank are started with mpirun (as root with --allow-run-as-root,\n"
    "--oversubscribe past the core count; --mpirun or HALOX_MPIRUN replace the launcher);\n"
    "OMP_NUM_THREADS is cores / ranks. What cannot run here (no GPU, a backend not compiled,\n"
    "no MPI, the engine refuses the model on that backend, above --max-atoms or the memory,\n"
    "past --time-budget, a run that failed) is recorded with the reason in DIR/suite.json, in\n"
    "the series files and in the report. Runs go cheapest and most telling first: the small\n"
    "sizes' primary grids and backends, then the grid and NVSHMEM variants, then the large\n"
    "sizes. A progress line with ETA goes to stderr.\n"
    "Resume: every run writes DIR/runs/<run>.json when it completes; a later call with the same\n"
    "DIR skips every run whose file is there and was made by the same command (the default;\n"
    "--fresh runs everything again). Ctrl-C stops the current run and leaves the finished\n"
    "ones; a second Ctrl-C ends at once.\n"
    "Boxes are built once and cached in --cache (default $XDG_CACHE_HOME/halox, else\n"
    "~/.cache/halox) under the hash of their build parameters and the halox version; a cached\n"
    "box is reused only when its content hash matches the recorded one, else rebuilt.\n"
    "At the end DIR holds one result file per series (md_<system>_<atoms>.json,\n"
    "exchange_<ranks>r_<grid>.json), suite.json, and REPORT.md with its plots\n"
    "(halox bench report DIR). --quick: a 3000-atom box of each system (the mixture briefly "
    "relaxed), 1-2 ranks, 20 steps:\n"
    "a check of the whole pipeline in well under a minute.\n"
    "Exit status: 0 when every planned run finished or was skipped with a reason, 3 when some\n"
    "failed (their reasons and logs: suite.json, logs/), 2 for bad options, 128 + signal when\n"
    "stopped.",
    run_suite,
};

static int cmp_int(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

static int run_suite(int argc, char **argv)
{
    suite_opts o = {"paper",
                    "bench-suite",
                    NULL,
                    NULL,
                    "water,mixture",
                    "md,exchange,gromacs",
                    "cpu,gpu,gpu-mpi,gpu-direct,nvshmem,nvshmem-p2p,nvshmem-network,nvshmem-bulk",
                    NULL,
                    0,
                    0.0,
                    0.0,
                    0,
                    -1,
                    0,
                    0,
                    0,
                    0,
                    1,
                    0};
    hx_opt opts[] = {
        {"suite", NULL, HX_OPT_STRING, &o.suite, "NAME", "the suite: paper (the only one)"},
        {"o", "output", HX_OPT_STRING, &o.out, "DIR", "results, run files, logs and the report"},
        {"quick", NULL, HX_OPT_FLAG, &o.quick, NULL,
         "small boxes, 1-2 ranks, 20 steps: the pipeline in under a minute (CI)"},
        {"time-budget", NULL, HX_OPT_DOUBLE, &o.budget, "S",
         "skip runs that would not finish within S seconds of the start (0: no limit)"},
        {"max-atoms", NULL, HX_OPT_INT64, &o.max_atoms, "N", "skip boxes larger than N (0: none)"},
        {"ranks", NULL, HX_OPT_STRING, &o.ranks, "LIST",
         "rank counts, e.g. 1,2,4,8 (default: powers of two up to the cores, at most 8 per GPU)"},
        {"steps", NULL, HX_OPT_INT, &o.steps, "N",
         "timed steps per run (default: 2000 on the GPU, 200 on the CPU, 1000 exchanges)"},
        {"warmup", NULL, HX_OPT_INT, &o.warmup, "N", "untimed steps first (default: steps / 10)"},
        {"systems", NULL, HX_OPT_STRING, &o.systems, "LIST", "water, mixture"},
        {"series", NULL, HX_OPT_STRING, &o.series, "LIST", "md, exchange, gromacs"},
        {"backends", NULL, HX_OPT_STRING, &o.backends, "LIST", "the md backends to include"},
        {"cache", NULL, HX_OPT_STRING, &o.cache, "DIR",
         "box cache (default $XDG_CACHE_HOME/halox or ~/.cache/halox)"},
        {"fresh", NULL, HX_OPT_FLAG, &o.fresh, NULL,
         "run everything again (default: resume, keeping finished runs)"},
        {"run-timeout", NULL, HX_OPT_DOUBLE, &o.run_timeout, "S",
         "stop a run after S seconds (default: 10 x its estimate + 120)"},
        {"mpirun", NULL, HX_OPT_STRING, &o.mpirun, "CMD",
         "launcher for several ranks, before -np N (default: mpirun, see above)"},
        {"seed", NULL, HX_OPT_INT, &o.seed, "S", "seed of the boxes and velocities"},
        {"dry-run", NULL, HX_OPT_FLAG, &o.dry_run, NULL,
         "print the plan, its estimate and each run's command only"},
        {"assume-gpus", NULL, HX_OPT_INT, &o.assume_gpus, "N",
         "plan as if N GPUs were visible (with --dry-run: a GPU machine's plan, from here)"},
        {"no-report", NULL, HX_OPT_FLAG, &o.no_report, NULL, "merge the results, no report"},
    };
    /* `halox bench --suite paper ...` arrives as argv = {bench, --suite, paper, ...}: the
     * parser skips argv[0] either way */
    int pr =
        hx_cli_parse(&hx_bench_cmd_suite, opts, (int)(sizeof opts / sizeof opts[0]), argc, argv);
    if (pr != 0)
        return pr > 0 ? 0 : 2;
    if (strcmp(o.suite, "paper") != 0) {
        fprintf(stderr,
                "halox bench suite: error: unknown suite '%s' (there is: paper; --quick "
                "makes it small)\n",
                o.suite);
        return 2;
    }
    if (o.steps < 0 || o.max_atoms < 0 || o.budget < 0 || o.run_timeout < 0 || o.seed < 0 ||
        o.assume_gpus < 0) {
        fprintf(stderr, "halox bench suite: error: --steps, --max-atoms, --time-budget, "
                        "--run-timeout, --seed and --assume-gpus must not be negative\n");
        return 2;
    }
    static const char *const sys_known[] = {"water", "mixture"};
    static const char *const ser_known[] = {"md", "exchange", "gromacs"};
    struct {
        const char *opt, *list;
        const char *const *known;
        int n;
    } lists[] = {{"--systems", o.systems, sys_known, 2},
                 {"--series", o.series, ser_known, 3},
                 {"--backends", o.backends, md_backends, N_MD_BACKENDS}};
    for (int l = 0; l < 3; l++) {
        char tmp[512];
        snprintf(tmp, sizeof tmp, "%s", lists[l].list);
        for (char *t = strtok(tmp, ","); t; t = strtok(NULL, ",")) {
            int ok = 0;
            for (int k = 0; k < lists[l].n; k++)
                ok |= strcmp(t, lists[l].known[k]) == 0;
            if (!ok) {
                fprintf(stderr,
                        "halox bench suite: error: %s: unknown name '%s' (known:", lists[l].opt, t);
                for (int k = 0; k < lists[l].n; k++)
                    fprintf(stderr, " %s", lists[l].known[k]);
                fprintf(stderr, ")\n");
                return 2;
            }
        }
    }
    g_quick_relax = o.quick;
    if (o.quick) {
        if (!o.steps)
            o.steps = 20;
        if (o.warmup < 0)
            o.warmup = 5;
    }
    machine m;
    probe(&m);
    if (o.assume_gpus > 0) {
        m.ndev = o.assume_gpus;
        m.no_gpu[0] = 0;
    }
    if (in_list(o.series, "gromacs") && gpu_md_planned(&o) && m.ndev > 0 && !m.no_gpu[0])
        probe_gmx_gpu(&m);
    int ranks[32], nranks = 0;
    if (o.ranks) {
        nranks = hx_bench_parse_ints(o.ranks, 4096, ranks, 32);
        if (nranks <= 0) {
            fprintf(stderr,
                    "halox bench suite: error: --ranks '%s': give positive integers "
                    "separated by commas\n",
                    o.ranks);
            return 2;
        }
        qsort(ranks, (size_t)nranks, sizeof ranks[0], cmp_int);
    } else {
        /* one GPU shared by up to 8 ranks under MPS (the paper's intra-node range) */
        const int cap = o.quick ? 2 : m.ndev > 0 ? 8 * m.ndev : m.ncores;
        for (int n = 1; n <= cap && nranks < 32; n *= 2)
            ranks[nranks++] = n;
        if (o.quick && nranks < 2)
            ranks[nranks++] = 2; /* DD on one core: the pipeline, not the speed */
    }
    {
        size_t k = 0;
        for (int i = 0; i < nranks && k + 8 < sizeof g_ranks_spaced; i++)
            k += (size_t)snprintf(g_ranks_spaced + k, sizeof g_ranks_spaced - k, "%s%d",
                                  i ? " " : "", ranks[i]);
    }
    char cache[1024];
    if (o.cache)
        snprintf(cache, sizeof cache, "%s", o.cache);
    else if (getenv("XDG_CACHE_HOME") && getenv("XDG_CACHE_HOME")[0])
        snprintf(cache, sizeof cache, "%s/halox", getenv("XDG_CACHE_HOME"));
    else
        snprintf(cache, sizeof cache, "%s/.cache/halox", getenv("HOME") ? getenv("HOME") : "/tmp");
    ssize_t sl = readlink("/proc/self/exe", g_self, sizeof g_self - 1);
    if (sl <= 0)
        snprintf(g_self, sizeof g_self, "%s", "halox");
    else
        g_self[sl] = 0;

    plan p = {NULL, 0, 0};
    hx_status st = make_plan(&o, &m, ranks, nranks, &p);
    if (st != HX_OK) {
        hx_cli_report_error("bench suite", st);
        free(p.runs);
        return 1;
    }
    double total_est = 0;
    int npending = 0;
    for (int i = 0; i < p.n; i++)
        if (p.runs[i].state == R_PENDING) {
            total_est += p.runs[i].est_s;
            npending++;
        }
    char tb[32];
    fmt_secs(total_est, tb, sizeof tb);
    printf("halox bench suite: %s%s: %d runs planned (%d to run, about %s before calibration), "
           "ranks",
           o.suite, o.quick ? " (quick)" : "", p.n, npending, tb);
    for (int i = 0; i < nranks; i++)
        printf("%s%d", i ? "," : " ", ranks[i]);
    printf("; %d cores, %d GPU%s; results in %s, boxes in %s\n", m.ncores, m.ndev,
           m.ndev == 1 ? "" : "s", o.out, cache);
    fflush(stdout);
    /* what cannot run here, said once per reason */
    {
        char seen[32][420];
        int ns = 0;
        for (int i = 0; i < p.n; i++) {
            const suite_run *r = &p.runs[i];
            if (r->state != R_SKIPPED)
                continue;
            char line[420]; /* fits the bounded fields: no truncation to warn of */
            snprintf(line, sizeof line, "%.16s %.159s: %.240s", r->series,
                     strcmp(r->series, "exchange") == 0 ? "gpu" : r->backend, r->reason);
            int k = 0;
            while (k < ns && strcmp(seen[k], line) != 0)
                k++;
            if (k == ns && ns < 32) {
                snprintf(seen[ns++], sizeof seen[0], "%s", line);
                printf("  skipped: %s\n", line);
            }
        }
    }
    if (o.dry_run) {
        for (int i = 0; i < p.n; i++) {
            const suite_run *r = &p.runs[i];
            char e[32];
            fmt_secs(r->est_s, e, sizeof e);
            printf("%-64s tier %d  %8s  %s\n", r->id, r->tier, r->state == R_PENDING ? e : "-",
                   r->state == R_SKIPPED ? r->reason : "");
            if (r->state != R_PENDING)
                continue;
            /* what would run (the box's name is known before it is built) */
            char gro[1100] = "", result[1200], logp[1200], command[4096];
            argvb a;
            if (strcmp(r->series, "exchange") != 0)
                box_path(cache, r->kind, r->model, r->atoms, o.seed, gro, sizeof gro);
            run_command(&o, &m, r, gro, &a, result, sizeof result, logp, sizeof logp);
            join_argv(a.v, command, sizeof command);
            printf("    %s\n", command);
        }
        free(p.runs);
        return 0;
    }
    char sub[1200];
    snprintf(sub, sizeof sub, "%s/runs", o.out);
    st = mkdir_p(sub);
    snprintf(sub, sizeof sub, "%s/logs", o.out);
    if (st == HX_OK)
        st = mkdir_p(sub);
    if (st != HX_OK) {
        hx_cli_report_error("bench suite", st);
        free(p.runs);
        return 1;
    }
    hx_app_signals_install("halox bench suite: %s received: stopping the current run (finished "
                           "runs are kept; the same command resumes); a second signal ends at "
                           "once");
    calib cal;
    memset(&cal, 0, sizeof cal);
    const double t0 = hx_wtime();
    int resumed = 0, ran = 0, rc = 0;
    for (int i = 0; i < p.n && !*hx_app_stop_flag(); i++) {
        suite_run *r = &p.runs[i];
        if (r->state != R_PENDING)
            continue;
        char gro[1100] = "";
        argvb a;
        char result[1200], logp[1200], command[4096];
        /* the command names the box's file, which is known without building it: a finished
         * run is recognised (resume) without touching the box */
        if (strcmp(r->series, "exchange") != 0)
            box_path(cache, r->kind, r->model, r->atoms, o.seed, gro, sizeof gro);
        run_command(&o, &m, r, gro, &a, result, sizeof result, logp, sizeof logp);
        join_argv(a.v, command, sizeof command);
        if (!o.fresh && finished(result, command)) {
            r->state = R_DONE;
            resumed++;
            continue;
        }
        const double now0 = hx_wtime() - t0;
        if (o.budget > 0 && now0 + predicted(r, &cal) > o.budget) {
            char why[256], e[32], l[32];
            fmt_secs(predicted(r, &cal), e, sizeof e);
            fmt_secs(o.budget > now0 ? o.budget - now0 : 0.0, l, sizeof l); /* spent: 0 s */
            snprintf(why, sizeof why, "time budget: needs about %s, %s of --time-budget left", e,
                     l);
            skip(r, why);
            continue;
        }
        if (strcmp(r->series, "exchange") != 0) {
            const double tb0 = hx_wtime();
            int built = 0;
            st = box_get(cache, r->kind, r->model, r->atoms, o.seed, gro, sizeof gro, &built);
            if (st != HX_OK) {
                r->state = R_FAILED;
                snprintf(r->reason, sizeof r->reason, "building the box: %s",
                         hx_last_error_message());
                hx_clear_error();
                fprintf(stderr, "halox bench suite: %s: %s\n", r->id, r->reason);
                continue;
            }
            if (built)
                fprintf(stderr, "halox bench suite: built %s %lld atoms in %.1f s -> %s\n",
                        r->system, r->atoms, hx_wtime() - tb0, gro);
        }
        /* progress: done / total, elapsed, ETA from the calibrated estimates of what is left */
        double left = 0;
        int nleft = 0, ndone = 0;
        for (int k = i; k < p.n; k++)
            if (p.runs[k].state == R_PENDING) {
                left += predicted(&p.runs[k], &cal);
                nleft++;
            }
        for (int k = 0; k < p.n; k++)
            ndone += p.runs[k].state == R_DONE || p.runs[k].state == R_FAILED;
        char el[32], eta[32];
        fmt_secs(hx_wtime() - t0, el, sizeof el);
        fmt_secs(left, eta, sizeof eta);
        fprintf(stderr, "halox bench suite: [%d/%d] %s  (elapsed %s, ETA %s%s)\n", ndone + 1,
                ndone + nleft, r->id, el, eta,
                o.budget > 0 && left > o.budget - (hx_wtime() - t0) ? ", the budget will cut" : "");
        char omp[64], cmdenv[4200];
        int threads = m.ncores / r->ranks;
        snprintf(omp, sizeof omp, "OMP_NUM_THREADS=%d", threads > 0 ? threads : 1);
        /* GROMACS refuses an OMP_NUM_THREADS that differs from its -ntomp (cpu_md.py sets it) */
        if (strcmp(r->series, "gromacs") == 0)
            snprintf(omp, sizeof omp, "OMP_NUM_THREADS");
        snprintf(cmdenv, sizeof cmdenv, "HALOX_BENCH_COMMAND=%s", command);
        char *env[] = {omp, cmdenv, NULL};
        const double timeout =
            o.run_timeout > 0 ? o.run_timeout : 10.0 * predicted(r, &cal) + 120.0;
        int stopped = 0, timed_out = 0;
        const double ts = hx_wtime();
        int code = spawn(a.v, env, logp, timeout, &stopped, &timed_out);
        const double wall = hx_wtime() - ts;
        ran++;
        /* mpirun passes a stop on to the ranks late (Open MPI 4.1: SIGCONT, then SIGTERM after
         * odls_base_sigkill_timeout, 1 s by default), and a short run may finish first: then it
         * is done, and kept as such */
        const int complete = code == 0 && finished(result, command);
        if (stopped && !complete)
            break; /* the run is neither done nor failed: the next call runs it */
        if (complete) {
            r->state = R_DONE;
            const int k = calib_class(r);
            if (r->est_s > 0 && wall > 0) {
                cal.logsum[k] += log(wall / r->est_s);
                cal.n[k]++;
            }
        } else {
            r->state = R_FAILED;
            char why[480];
            log_reason(logp, why, sizeof why);
            if (timed_out)
                snprintf(r->reason, sizeof r->reason,
                         "stopped after %.0f s (--run-timeout): %.400s", timeout, why);
            else
                snprintf(r->reason, sizeof r->reason, "exit status %d: %.300s (log %.150s)", code,
                         why, logp);
            fprintf(stderr, "halox bench suite: %s failed: %s\n", r->id, r->reason);
        }
    }
    const int interrupted = *hx_app_stop_flag() != 0;
    const double elapsed = hx_wtime() - t0;
    st = merge(&o, &p, argc, argv, elapsed);
    if (st != HX_OK) {
        hx_cli_report_error("bench suite", st);
        rc = 1;
    }
    int nd = 0, ns = 0, nf = 0, np = 0;
    for (int i = 0; i < p.n; i++) {
        nd += p.runs[i].state == R_DONE;
        ns += p.runs[i].state == R_SKIPPED;
        nf += p.runs[i].state == R_FAILED;
        np += p.runs[i].state == R_PENDING;
    }
    char el[32];
    fmt_secs(elapsed, el, sizeof el);
    printf("halox bench suite: %d runs done (%d of them from an earlier call), %d skipped, %d "
           "failed, %d not run, in %s; summary %s/suite.json\n",
           nd, resumed, ns, nf, np, el, o.out);
    if (interrupted) {
        printf("halox bench suite: interrupted: run the same command again to resume\n");
        free(p.runs);
        return 128 + (hx_app_stop_signal() > 0 ? hx_app_stop_signal() : SIGINT);
    }
    if (rc == 0 && !o.no_report) {
        char rep[1200];
        snprintf(rep, sizeof rep, "%s/REPORT.md", o.out);
        if (hx_bench_report(o.out, rep) != 0)
            rc = 1;
        else
            printf("report: %s\n", rep);
    }
    hx_app_signals_restore();
    free(p.runs);
    if (rc == 0 && nf > 0)
        rc = 3; /* the suite ran, some runs failed: their reasons are in suite.json */
    return rc;
}
