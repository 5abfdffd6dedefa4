/* Single-GPU MD loop for the GPU tests and benchmark (see gpu_md_driver.h). */
#include "gpu_md_driver.h"
#include "test_gpu_common.h"

#include "core/error.h"
#include "core/rng.h"
#include "halox/log.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GMD_MAX_EVENTS 16384

#define GMD_CUDA(call)                                                                             \
    do {                                                                                           \
        cudaError_t gmd_rc_ = (call);                                                              \
        if (gmd_rc_ != cudaSuccess)                                                                \
            return hx_error_set(HX_ERR_CUDA, __FILE__, __LINE__, __func__, "%s failed: %s", #call, \
                                cudaGetErrorString(gmd_rc_));                                      \
    } while (0)

struct gmd {
    gmd_params p;
    int n;
    double ndf;
    hx_gpu_nb *nb;
    hx_gpu_update *up;
    float *xf, *f;
    cudaStream_t s_local, s_update;
    cudaEvent_t ev_forces, ev_update;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    int graph_valid;
    int fuse; /* the update adds the home pair forces (hx_gpu_nb_fuse_update, read once) */
    long long step;
    hx_rng trng;
    /* timing */
    cudaEvent_t ev_start;
    cudaEvent_t *ev;
    int *ev_search;
    int nev;
    int searches;
    double search_ms;
    /* gmd_breakdown: events at the step's start, after the local work, after the update, as
     * nodes of the captured step (bd set) */
    cudaEvent_t ev_bd[3];
    int bd;
};

void gmd_params_default(gmd_params *p)
{
    memset(p, 0, sizeof *p);
    p->dt = 0.002;
    p->nstlist = 10;
    p->rc = 1.0;
    p->rlist = 1.1;
    p->eps_r = 1.0;
    p->nsttcouple = 10;
    p->tau_t = 0.1;
    p->ref_t = 300.0;
    p->seed = 1;
    p->use_graph = 1;
}

/* Gamma(shape a >= 1, scale 1), Marsaglia & Tsang; chi-square of n degrees of freedom. */
static double gmd_gamma(hx_rng *r, double a)
{
    const double d = a - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        double x, v;
        do {
            x = hx_rng_normal(r);
            v = 1.0 + c * x;
        } while (v <= 0.0);
        v = v * v * v;
        const double u = hx_rng_uniform_open(r);
        if (log(u) < 0.5 * x * x + d - d * v + d * log(v))
            return d * v;
    }
}

static double gmd_chisq(hx_rng *r, double n)
{
    if (n <= 0)
        return 0.0;
    if (n < 2.0) {
        double s = 0.0;
        for (int i = 0; i < (int)n; i++) {
            const double g = hx_rng_normal(r);
            s += g * g;
        }
        return s;
    }
    return 2.0 * gmd_gamma(r, 0.5 * n);
}

/* Bussi's v-rescale factor for kinetic energy ke over nsttcouple steps. */
static double gmd_lambda(gmd *g, double ke)
{
    if (ke <= 0)
        return 1.0;
    const double kt = 0.5 * g->ndf * HX_BOLTZ * g->p.ref_t;
    const double c = exp(-g->p.nsttcouple * g->p.dt / g->p.tau_t);
    const double r1 = hx_rng_normal(&g->trng);
    const double sr = gmd_chisq(&g->trng, g->ndf - 1.0);
    const double knew = ke + (1.0 - c) * (kt * (r1 * r1 + sr) / g->ndf - ke) +
                        2.0 * r1 * sqrt(c * (1.0 - c) * kt * ke / g->ndf);
    return knew > 0 ? sqrt(knew / ke) : 0.0;
}

void gmd_destroy(gmd **gp)
{
    if (!gp || !*gp)
        return;
    gmd *g = *gp;
    hx_gpu_nb_destroy(&g->nb);
    hx_gpu_update_destroy(&g->up);
    cudaFree(g->xf);
    cudaFree(g->f);
    if (g->exec)
        cudaGraphExecDestroy(g->exec);
    if (g->graph)
        cudaGraphDestroy(g->graph);
    /* the streams are the GPU context's */
    if (g->s_local)
        cudaStreamSynchronize(g->s_local);
    if (g->s_update)
        cudaStreamSynchronize(g->s_update);
    if (g->ev_forces)
        cudaEventDestroy(g->ev_forces);
    if (g->ev_update)
        cudaEventDestroy(g->ev_update);
    if (g->ev_start)
        cudaEventDestroy(g->ev_start);
    for (int k = 0; k < 3; k++)
        if (g->ev_bd[k])
            cudaEventDestroy(g->ev_bd[k]);
    for (int k = 0; g->ev && k < GMD_MAX_EVENTS; k++)
        if (g->ev[k])
            cudaEventDestroy(g->ev[k]);
    free(g->ev);
    free(g->ev_search);
    free(g);
    *gp = NULL;
}

static hx_status gmd_init(gmd *g, const hx_system *sys, const hx_forcefield *ff)
{
    const int n = sys->natoms;
    const int water = hx_forcefield_is_water(ff);
    hx_gpu_nb_params np = {
        g->p.rc,          g->p.eps_rf,      g->p.eps_r,         g->p.rlist,
        g->p.rlist_inner, g->p.prune_parts, water ? 0.25 : 0.5, HX_GPU_NB_KERNEL_AUTO};
    HX_TRY(hx_gpu_nb_create(ff, &np, &g->nb));
    int *mol = malloc(sizeof(int) * (size_t)(n + 1));
    int *settle = malloc(sizeof(int) * (size_t)(n + 1));
    HX_CHECK(mol && settle, HX_ERR_NOMEM, "out of memory");
    hx_zone_range rg;
    hx_local_set set;
    hx_local_set_from_system(&set, sys, mol, &rg);
    hx_status st = hx_gpu_nb_set_atoms(g->nb, &set, NULL, NULL);
    hx_gpu_update_params up;
    memset(&up, 0, sizeof up);
    up.n = n;
    up.mass = sys->m;
    up.nmol = sys->nmol;
    up.mol_start = sys->mol_start;
    up.dt = g->p.dt;
    for (int d = 0; d < 3; d++) {
        up.periodic[d] = 1;
        up.box[d] = sys->box[d];
    }
    if (water) {
        const hx_water_model *w = hx_forcefield_water(ff);
        up.m_o = w->m_o;
        up.m_h = w->m_h;
        up.d_oh = w->r_oh;
        up.d_hh = w->r_hh;
        up.nsettle = sys->nmol;
        for (int k = 0; k < sys->nmol; k++) {
            int nh = 0;
            for (int a = sys->mol_start[k]; a < sys->mol_start[k + 1]; a++) {
                if (sys->type[a] == 0)
                    settle[3 * k] = a;
                else
                    settle[3 * k + 1 + (nh++ & 1)] = a;
            }
        }
        up.settle = settle;
    }
    if (st == HX_OK)
        st = hx_gpu_update_create(&up, &g->up);
    free(mol);
    free(settle);
    HX_TRY(st);
    GMD_CUDA(cudaMalloc((void **)&g->xf, sizeof(float) * 3 * (size_t)(n + 1)));
    GMD_CUDA(cudaMalloc((void **)&g->f, sizeof(float) * 3 * (size_t)(n + 1)));
    GMD_CUDA(cudaMemset(g->f, 0, sizeof(float) * 3 * (size_t)(n + 1)));
    /* the test process's GPU context owns the device and the streams (the local work runs on
     * its highest-priority stream, as before) */
    const hx_gpu_context *ctx = tg_gpu();
    HX_CHECK(ctx, HX_ERR_CUDA, "no GPU context for the driver");
    g->s_local = (cudaStream_t)hx_gpu_context_stream(ctx, HX_GPU_STREAM_NONLOCAL);
    g->s_update = (cudaStream_t)hx_gpu_context_stream(ctx, HX_GPU_STREAM_UPDATE);
    GMD_CUDA(cudaEventCreateWithFlags(&g->ev_forces, cudaEventDisableTiming));
    GMD_CUDA(cudaEventCreateWithFlags(&g->ev_update, cudaEventDisableTiming));
    GMD_CUDA(cudaEventCreate(&g->ev_start));
    if (g->p.timing) {
        g->ev = calloc(GMD_MAX_EVENTS, sizeof *g->ev);
        g->ev_search = calloc(GMD_MAX_EVENTS, sizeof *g->ev_search);
        HX_CHECK(g->ev && g->ev_search, HX_ERR_NOMEM, "out of memory");
        for (int k = 0; k < GMD_MAX_EVENTS; k++)
            GMD_CUDA(cudaEventCreate(&g->ev[k]));
    }
    HX_TRY(hx_gpu_update_upload(g->up, sys->x, sys->v, g->xf, g->s_local));
    g->ndf = hx_forcefield_ndf(ff, sys);
    hx_rng_seed(&g->trng, g->p.seed, 2);
    return HX_OK;
}

hx_status gmd_create(const hx_system *sys, const hx_forcefield *ff, const gmd_params *p, gmd **out)
{
    HX_CHECK(sys && ff && p && out && sys->type && sys->q && sys->m, HX_ERR_INVALID_ARG,
             "gmd_create: bad argument");
    HX_CHECK(p->nstlist >= 1 && p->dt > 0 && (!p->vrescale || p->nsttcouple >= 1),
             HX_ERR_INVALID_ARG, "gmd_create: bad parameters");
    *out = NULL;
    gmd *g = calloc(1, sizeof *g);
    HX_CHECK(g, HX_ERR_NOMEM, "out of memory");
    g->p = *p;
    g->fuse = hx_gpu_nb_fuse_update();
    g->n = sys->natoms;
    hx_status st = gmd_init(g, sys, ff);
    if (st != HX_OK) {
        gmd_destroy(&g);
        return st;
    }
    *out = g;
    return HX_OK;
}

/* The ops of one step, as a schedule would issue them. */
static hx_status enqueue_step(gmd *g, int energy, double lambda)
{
    const int fuse = g->fuse;
    hx_gpu_update_link link;
    if (g->bd)
        GMD_CUDA(cudaEventRecordWithFlags(g->ev_bd[0], g->s_local, cudaEventRecordExternal));
    HX_TRY(hx_gpu_nb_local(g->nb, g->xf, g->f, energy ? HX_GPU_NB_ENERGY : 0, g->s_local));
    if (g->bd)
        GMD_CUDA(cudaEventRecordWithFlags(g->ev_bd[1], g->s_local, cudaEventRecordExternal));
    if (fuse)
        HX_TRY(hx_gpu_nb_update_link(g->nb, 1, &link));
    else
        HX_TRY(hx_gpu_nb_reduce_home(g->nb, g->f, g->s_local));
    if (energy)
        HX_TRY(hx_gpu_nb_fetch_energies(g->nb, g->s_local));
    GMD_CUDA(cudaEventRecord(g->ev_forces, g->s_local));
    GMD_CUDA(cudaStreamWaitEvent(g->s_update, g->ev_forces, 0));
    HX_TRY(hx_gpu_update_step(g->up, g->xf, g->f, lambda, energy ? HX_GPU_UPDATE_DEVIATION : 0,
                              fuse ? &link : NULL, g->s_update));
    if (energy)
        HX_TRY(hx_gpu_update_fetch(g->up, g->s_update));
    if (g->bd)
        GMD_CUDA(cudaEventRecordWithFlags(g->ev_bd[2], g->s_update, cudaEventRecordExternal));
    GMD_CUDA(cudaEventRecord(g->ev_update, g->s_update));
    GMD_CUDA(cudaStreamWaitEvent(g->s_local, g->ev_update, 0));
    return HX_OK;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

hx_status gmd_step(gmd *g, gmd_energies *e)
{
    const long long t = g->step;
    const int search = t % g->p.nstlist == 0;
    const int want_e = e != NULL;
    const int tcouple = g->p.vrescale && t % g->p.nsttcouple == 0;
    double lambda = 1.0;
    if (search) {
        const double t0 = now_ms();
        GMD_CUDA(cudaStreamSynchronize(g->s_update));
        GMD_CUDA(cudaStreamSynchronize(g->s_local));
        HX_TRY(hx_gpu_update_wrap(g->up, g->xf, g->s_local));
        HX_TRY(hx_gpu_nb_search(g->nb, g->xf, g->s_local));
        g->graph_valid = 0;
        g->searches++;
        g->search_ms += now_ms() - t0;
    }
    if (tcouple) {
        hx_gpu_update_result r;
        HX_TRY(hx_gpu_update_fetch(g->up, g->s_update));
        GMD_CUDA(cudaStreamSynchronize(g->s_update));
        hx_gpu_update_read(g->up, &r);
        lambda = gmd_lambda(g, r.ke_half);
    }
    if (g->p.use_graph && !want_e && !tcouple && !search) {
        if (!g->graph_valid) {
            cudaGraph_t graph = NULL;
            GMD_CUDA(cudaStreamBeginCapture(g->s_local, cudaStreamCaptureModeGlobal));
            hx_status st = enqueue_step(g, 0, 1.0);
            cudaError_t rc = cudaStreamEndCapture(g->s_local, &graph);
            HX_TRY(st);
            GMD_CUDA(rc);
            int fresh = 1;
            if (g->exec) {
                cudaGraphExecUpdateResultInfo info;
                if (cudaGraphExecUpdate(g->exec, graph, &info) == cudaSuccess)
                    fresh = 0;
                else
                    (void)cudaGetLastError();
            }
            if (fresh) {
                if (g->exec)
                    GMD_CUDA(cudaGraphExecDestroy(g->exec));
                g->exec = NULL;
                GMD_CUDA(cudaGraphInstantiate(&g->exec, graph, 0));
            }
            if (g->graph)
                GMD_CUDA(cudaGraphDestroy(g->graph));
            g->graph = graph;
            g->graph_valid = 1;
        }
        GMD_CUDA(cudaGraphLaunch(g->exec, g->s_local));
    } else {
        HX_TRY(enqueue_step(g, want_e, lambda));
    }
    if (g->p.timing && g->nev < GMD_MAX_EVENTS) {
        GMD_CUDA(cudaEventRecord(g->ev[g->nev], g->s_local));
        g->ev_search[g->nev] = search;
        g->nev++;
    }
    if (want_e) {
        GMD_CUDA(cudaStreamSynchronize(g->s_local));
        hx_nb_energies ne;
        hx_gpu_update_result r;
        hx_gpu_nb_read_energies(g->nb, &ne, &e->npairs);
        hx_gpu_update_read(g->up, &r);
        HX_CHECK(r.bad_molecule < 0, HX_ERR_PHYSICS,
                 "step %lld: SETTLE could not constrain water %d", t, r.bad_molecule + 1);
        e->step = t;
        e->lj = ne.lj;
        e->coulomb = ne.coulomb;
        e->potential = ne.lj + ne.coulomb;
        e->kinetic = 0.5 * (r.ke_prev_half + r.ke_half);
        e->total = e->potential + e->kinetic;
        e->temperature = 2.0 * e->kinetic / (g->ndf * HX_BOLTZ);
        e->constraint_deviation = r.deviation;
    }
    g->step++;
    return HX_OK;
}

long long gmd_current_step(const gmd *g)
{
    return g->step;
}

hx_status gmd_download(gmd *g, hx_system *sys)
{
    GMD_CUDA(cudaStreamSynchronize(g->s_update));
    GMD_CUDA(cudaStreamSynchronize(g->s_local));
    HX_TRY(hx_gpu_update_download(g->up, sys->x, sys->v, g->s_local));
    return HX_OK;
}

hx_status gmd_positions_float(gmd *g, float *x)
{
    GMD_CUDA(cudaStreamSynchronize(g->s_update));
    GMD_CUDA(cudaStreamSynchronize(g->s_local));
    GMD_CUDA(cudaMemcpy(x, g->xf, sizeof(float) * 3 * (size_t)g->n, cudaMemcpyDeviceToHost));
    return HX_OK;
}

hx_gpu_nb *gmd_nb(gmd *g)
{
    return g->nb;
}

double gmd_ndf(const gmd *g)
{
    return g->ndf;
}

void gmd_reset_times(gmd *g)
{
    g->nev = 0;
    g->searches = 0;
    g->search_ms = 0.0;
    if (g->p.timing)
        cudaEventRecord(g->ev_start, g->s_local);
}

int gmd_step_times(gmd *g, double *ms, int *is_search, int cap)
{
    if (!g->p.timing)
        return 0;
    cudaStreamSynchronize(g->s_local);
    int k;
    for (k = 0; k < g->nev && k < cap; k++) {
        float v = 0.0f;
        cudaEventElapsedTime(&v, k == 0 ? g->ev_start : g->ev[k - 1], g->ev[k]);
        ms[k] = v;
        is_search[k] = g->ev_search[k];
    }
    return k;
}

void gmd_search_stats(const gmd *g, int *searches, double *ms)
{
    *searches = g->searches;
    *ms = g->search_ms;
}

static int cmp_dbl(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : (x > y ? 1 : 0);
}

hx_status gmd_breakdown(gmd *g, int steps, double *local_us, double *update_us)
{
    *local_us = *update_us = NAN;
    for (int k = 0; k < 3; k++)
        if (!g->ev_bd[k])
            GMD_CUDA(cudaEventCreate(&g->ev_bd[k]));
    double *lo = malloc(sizeof(double) * (size_t)(steps + 1));
    double *up = malloc(sizeof(double) * (size_t)(steps + 1));
    HX_CHECK(lo && up, HX_ERR_NOMEM, "out of memory");
    const int timing = g->p.timing;
    g->p.timing = 0; /* these steps are not the run's */
    g->bd = 1;
    g->graph_valid = 0;
    hx_status st = HX_OK;
    int n = 0;
    for (int i = 0; i < steps && st == HX_OK; i++) {
        const int search = g->step % g->p.nstlist == 0;
        st = gmd_step(g, NULL);
        if (st != HX_OK || search)
            continue;
        float a = 0.0f, b = 0.0f;
        if (cudaStreamSynchronize(g->s_local) != cudaSuccess ||
            cudaEventElapsedTime(&a, g->ev_bd[0], g->ev_bd[1]) != cudaSuccess ||
            cudaEventElapsedTime(&b, g->ev_bd[1], g->ev_bd[2]) != cudaSuccess) {
            (void)cudaGetLastError();
            continue;
        }
        lo[n] = 1e3 * a;
        up[n] = 1e3 * b;
        n++;
    }
    g->bd = 0;
    g->graph_valid = 0;
    g->p.timing = timing;
    if (st == HX_OK && n > 0) {
        qsort(lo, (size_t)n, sizeof *lo, cmp_dbl);
        qsort(up, (size_t)n, sizeof *up, cmp_dbl);
        *local_us = lo[n / 2];
        *update_us = up[n / 2];
    }
    free(lo);
    free(up);
    return st;
}
