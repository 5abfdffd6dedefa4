/* The "gpu" MD backend (src/md/backend.h) over the GPU non-bonded module (nb_gpu.h) and the GPU
 * update (update_gpu.h): one set of three streams per process (local forces; non-local forces
 * and the halo exchange, highest priority; update), events between them, a CUDA graph of a
 * normal step.
 *
 * Mapping of the schedule's calls:
 *   set_local  topology to the pair module, a new update module for the home molecules,
 *              positions and velocities uploaded (the float positions go to the halo's x)
 *   search     hx_gpu_nb_search on the halo stream (after the coordinate halo); no missed-pair
 *              count on the GPU (reported as 0)
 *   forces     LOCAL: hx_gpu_nb_local on the local stream (f cleared first unless the last
 *              committing update cleared it); NONLOCAL: hx_gpu_nb_nonlocal and the home force
 *              reduction on the halo stream, after the local pair kernel
 *   update     waits for both force streams; leap-frog + SETTLE on the update stream; the
 *              rolling prune on the force streams meanwhile; then both wait for the update
 *   kinetic, energies, download: fetch and synchronise (they return host data)
 * The pair lists use rlist for the outer radius and the engine's rlist_inner for the inner one,
 * re-pruned in prune_parts parts, one per step (hx_md_params; 4 by default, see engine.c). */
#include "gpu/cuda_check.h"
#include "gpu/nb_gpu.h"
#include "gpu/update_gpu.h"
#include "halox/gpu.h"
#include "md/backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gb_dom {
    const hx_decomp_local *loc;
    float *x, *f; /* the halo's arrays, device float [cap][3] */
    hx_gpu_nb *nb;
    hx_gpu_update *up;
    int f_clean;        /* f is zero (set_local, committing update) */
    int want_e, commit; /* of the last update */
    cudaEvent_t marks[HX_MARK_N];
} gb_dom;

typedef struct gb_impl {
    const hx_forcefield *ff;
    hx_md_params p;
    int nlocal;
    gb_dom *dom;
    cudaStream_t s_local, s_nl, s_update;
    cudaEvent_t ev_fork, ev_local, ev_nl, ev_update, ev_join, ev_clear;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    char desc[600];
} gb_impl;

static void gb_destroy(void *vimpl)
{
    gb_impl *g = (gb_impl *)vimpl;
    if (!g)
        return;
    for (int i = 0; g->dom && i < g->nlocal; i++) {
        hx_gpu_nb_destroy(&g->dom[i].nb);
        hx_gpu_update_destroy(&g->dom[i].up);
        for (int k = 0; k < HX_MARK_N; k++)
            if (g->dom[i].marks[k])
                cudaEventDestroy(g->dom[i].marks[k]);
    }
    free(g->dom);
    cudaEvent_t evs[] = {g->ev_fork, g->ev_local, g->ev_nl, g->ev_update, g->ev_join, g->ev_clear};
    for (size_t k = 0; k < sizeof evs / sizeof evs[0]; k++)
        if (evs[k])
            cudaEventDestroy(evs[k]);
    if (g->exec)
        cudaGraphExecDestroy(g->exec);
    if (g->graph)
        cudaGraphDestroy(g->graph);
    cudaStream_t ss[] = {g->s_local, g->s_nl, g->s_update};
    for (size_t k = 0; k < 3; k++)
        if (ss[k])
            cudaStreamDestroy(ss[k]);
    free(g);
}

static hx_status gb_init(gb_impl *g, const hx_system *sys)
{
    (void)sys;
    int least = 0, greatest = 0, dev = 0;
    HX_CUDA(cudaGetDevice(&dev));
    HX_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    HX_CUDA(cudaStreamCreateWithPriority(&g->s_local, cudaStreamNonBlocking, least));
    HX_CUDA(cudaStreamCreateWithPriority(&g->s_nl, cudaStreamNonBlocking, greatest));
    HX_CUDA(cudaStreamCreateWithPriority(&g->s_update, cudaStreamNonBlocking, least));
    cudaEvent_t *evs[] = {&g->ev_fork,   &g->ev_local, &g->ev_nl,
                          &g->ev_update, &g->ev_join,  &g->ev_clear};
    for (size_t k = 0; k < sizeof evs / sizeof evs[0]; k++)
        HX_CUDA(cudaEventCreateWithFlags(evs[k], cudaEventDisableTiming));
    hx_gpu_nb_params np;
    memset(&np, 0, sizeof np);
    np.rc = g->p.rc;
    np.eps_rf = g->p.eps_rf;
    np.eps_r = g->p.eps_r;
    np.rlist = g->p.rlist;
    /* the engine resolved both (src/md/engine.c, resolve_prune): rlist_inner = rlist when off */
    np.rlist_inner = g->p.prune_parts > 0 ? g->p.rlist_inner : g->p.rlist;
    np.prune_parts = g->p.prune_parts > 0 ? g->p.prune_parts : 0;
    np.max_excl_dist = hx_forcefield_is_water(g->ff) ? 0.25 : 0.5;
    for (int i = 0; i < g->nlocal; i++) {
        HX_TRY(hx_gpu_nb_create(g->ff, &np, &g->dom[i].nb));
        for (int k = 0; k < HX_MARK_N; k++)
            HX_CUDA(cudaEventCreate(&g->dom[i].marks[k]));
    }
    hx_gpu_info gi;
    char line[512] = "";
    if (hx_gpu_get_info(dev, &gi) == HX_OK)
        hx_gpu_describe(&gi, line, (int)sizeof line);
    snprintf(g->desc, sizeof g->desc,
             "gpu: device %d %s; 8x8 cluster-pair kernels in float, energies and update in "
             "double, pair search on the GPU",
             dev, line);
    return HX_OK;
}

static hx_status gb_create(const hx_system *sys, const hx_forcefield *ff, const hx_md_params *p,
                           int nlocal, void **out)
{
    gb_impl *g = (gb_impl *)calloc(1, sizeof *g);
    HX_CHECK(g, HX_ERR_NOMEM, "out of memory");
    g->ff = ff;
    g->p = *p;
    g->nlocal = nlocal;
    g->dom = (gb_dom *)calloc((size_t)nlocal, sizeof *g->dom);
    hx_status st = g->dom
                       ? gb_init(g, sys)
                       : hx_error_set(HX_ERR_NOMEM, __FILE__, __LINE__, __func__, "out of memory");
    if (st != HX_OK) {
        gb_destroy(g);
        return st;
    }
    *out = g;
    return HX_OK;
}

static hx_status gb_set_local(void *vimpl, int i, const hx_decomp_local *loc, void *x, void *f)
{
    gb_impl *g = (gb_impl *)vimpl;
    gb_dom *d = &g->dom[i];
    HX_CUDA(cudaStreamSynchronize(g->s_local));
    HX_CUDA(cudaStreamSynchronize(g->s_nl));
    HX_CUDA(cudaStreamSynchronize(g->s_update));
    d->loc = loc;
    d->x = (float *)x;
    d->f = (float *)f;
    const int nh = loc->n_home;
    const hx_home *home = loc->home;
    /* the update module follows the home molecules */
    hx_gpu_update_destroy(&d->up);
    double *mass = (double *)malloc(sizeof(double) * (size_t)(nh + 1));
    int *settle = (int *)malloc(sizeof(int) * 3 * (size_t)(home->nmol + 1));
    hx_status st = HX_OK;
    if (!mass || !settle)
        HX_FAIL_GOTO(st, HX_ERR_NOMEM, done, "out of memory for %d home atoms", nh);
    {
        for (int a = 0; a < nh; a++)
            mass[a] = 1.0 / loc->invmass[a];
        hx_gpu_update_params up;
        memset(&up, 0, sizeof up);
        up.n = nh;
        up.mass = mass;
        up.nmol = home->nmol;
        up.mol_start = home->mol_start;
        up.dt = g->p.dt;
        for (int k = 0; k < 3; k++) {
            up.periodic[k] = loc->periodic[k];
            up.box[k] = loc->box[k];
        }
        const hx_water_model *w = hx_forcefield_water(g->ff);
        if (w) {
            up.m_o = w->m_o;
            up.m_h = w->m_h;
            up.d_oh = w->r_oh;
            up.d_hh = w->r_hh;
            up.nsettle = home->nmol;
            for (int k = 0; k < home->nmol; k++) {
                int nhy = 0;
                for (int a = home->mol_start[k]; a < home->mol_start[k + 1]; a++) {
                    if (loc->type[a] == 0)
                        settle[3 * k] = a;
                    else
                        settle[3 * k + 1 + (nhy++ & 1)] = a;
                }
            }
            up.settle = settle;
        }
        HX_TRY_GOTO(st, hx_gpu_update_create(&up, &d->up), done);
        HX_TRY_GOTO(st, hx_gpu_update_upload(d->up, home->x, home->v, d->x, g->s_local), done);
        hx_local_set set;
        memset(&set, 0, sizeof set);
        set.n = loc->n_local;
        set.type = loc->type;
        set.q = loc->q;
        set.mol = loc->mol;
        set.nranges = loc->plan->nranges;
        set.ranges = loc->plan->ranges;
        set.ndim = loc->ndim;
        for (int k = 0; k < 3; k++) {
            set.periodic[k] = loc->periodic[k];
            set.box[k] = loc->box[k];
        }
        HX_TRY_GOTO(st, hx_gpu_nb_set_atoms(d->nb, &set, NULL, g->s_local), done);
        if (loc->n_local > 0)
            HX_CUDA_GOTO(
                st, cudaMemsetAsync(d->f, 0, sizeof(float) * 3 * (size_t)loc->n_local, g->s_local),
                done);
        HX_CUDA_GOTO(st, cudaStreamSynchronize(g->s_local), done);
        d->f_clean = 1;
    }
done:
    free(mass);
    free(settle);
    return st;
}

static hx_status gb_search(void *vimpl, int i, double rlist, int check_missed, long long *missed)
{
    gb_impl *g = (gb_impl *)vimpl;
    (void)check_missed;
    HX_CHECK(rlist == g->p.rlist, HX_ERR_INVALID_ARG,
             "gpu backend: search with rlist %g, created for %g", rlist, g->p.rlist);
    if (missed)
        *missed = 0; /* not counted on the GPU */
    /* after the coordinate halo, which ran on the halo stream */
    return hx_gpu_nb_search(g->dom[i].nb, g->dom[i].x, g->s_nl);
}

static long long gb_npairs(void *vimpl, int i)
{
    hx_gpu_nb_stats s;
    hx_gpu_nb_get_stats(((gb_impl *)vimpl)->dom[i].nb, &s);
    return 32 * (s.ncp_inner[0] + s.ncp_inner[1]); /* atom pairs the kernels compute */
}

static hx_status gb_forces(void *vimpl, int i, int part, int want_energy, long long step)
{
    gb_impl *g = (gb_impl *)vimpl;
    gb_dom *d = &g->dom[i];
    (void)step;
    const int flags = want_energy ? HX_GPU_NB_ENERGY : 0;
    if (part == HX_NB_LOCAL) {
        if (!d->f_clean && d->loc->n_local > 0) {
            /* after an update that did not commit (it left f as it was): clear it, and let the
             * halo stream (non-local pairs, the force halo's accumulation) start after that */
            HX_CUDA(
                cudaMemsetAsync(d->f, 0, sizeof(float) * 3 * (size_t)d->loc->n_local, g->s_local));
            HX_CUDA(cudaEventRecord(g->ev_clear, g->s_local));
            HX_CUDA(cudaStreamWaitEvent(g->s_nl, g->ev_clear, 0));
        }
        d->f_clean = 0;
        HX_TRY(hx_gpu_nb_local(d->nb, d->x, d->f, flags, g->s_local));
        HX_CUDA(cudaEventRecord(g->ev_local, g->s_local));
        return HX_OK;
    }
    HX_TRY(hx_gpu_nb_nonlocal(d->nb, d->x, d->f, flags, g->s_nl));
    /* the home forces of the local pairs too: after the local kernel */
    HX_CUDA(cudaStreamWaitEvent(g->s_nl, g->ev_local, 0));
    HX_TRY(hx_gpu_nb_reduce_home(d->nb, d->f, g->s_nl));
    if (want_energy)
        HX_TRY(hx_gpu_nb_fetch_energies(d->nb, g->s_nl));
    return HX_OK;
}

static void *gb_halo_stream(void *vimpl, int i)
{
    (void)i;
    return (void *)((gb_impl *)vimpl)->s_nl;
}

static hx_status gb_kinetic(void *vimpl, int i, double *ke)
{
    gb_impl *g = (gb_impl *)vimpl;
    HX_TRY(hx_gpu_update_fetch(g->dom[i].up, g->s_update));
    HX_CUDA(cudaStreamSynchronize(g->s_update));
    hx_gpu_update_result r;
    hx_gpu_update_read(g->dom[i].up, &r);
    *ke = r.ke_half;
    return HX_OK;
}

static hx_status gb_update(void *vimpl, int i, double lambda, int want_energy, int commit,
                           long long step)
{
    gb_impl *g = (gb_impl *)vimpl;
    gb_dom *d = &g->dom[i];
    (void)step;
    HX_CUDA(cudaEventRecord(g->ev_local, g->s_local));
    HX_CUDA(cudaEventRecord(g->ev_nl, g->s_nl));
    HX_CUDA(cudaStreamWaitEvent(g->s_update, g->ev_local, 0));
    HX_CUDA(cudaStreamWaitEvent(g->s_update, g->ev_nl, 0));
    int flags = want_energy ? HX_GPU_UPDATE_DEVIATION : 0;
    if (!commit)
        flags |= HX_GPU_UPDATE_NO_COMMIT;
    HX_TRY(hx_gpu_update_step(d->up, d->x, d->f, lambda, flags, g->s_update));
    if (want_energy)
        HX_TRY(hx_gpu_update_fetch(d->up, g->s_update));
    HX_CUDA(cudaEventRecord(g->ev_update, g->s_update));
    /* the rolling prune (a no-op without prune parts) overlaps the update */
    HX_TRY(hx_gpu_nb_prune(d->nb, 0, g->s_local));
    HX_TRY(hx_gpu_nb_prune(d->nb, 1, g->s_nl));
    HX_CUDA(cudaStreamWaitEvent(g->s_nl, g->ev_update, 0));
    HX_CUDA(cudaEventRecord(g->ev_join, g->s_nl));
    HX_CUDA(cudaStreamWaitEvent(g->s_local, g->ev_update, 0));
    HX_CUDA(cudaStreamWaitEvent(g->s_local, g->ev_join, 0));
    d->want_e = want_energy;
    d->commit = commit;
    if (commit)
        d->f_clean = 1;
    return HX_OK;
}

static hx_status gb_energies(void *vimpl, int i, double out[HX_E_N])
{
    gb_impl *g = (gb_impl *)vimpl;
    gb_dom *d = &g->dom[i];
    HX_CUDA(cudaStreamSynchronize(g->s_local));
    HX_CUDA(cudaStreamSynchronize(g->s_nl));
    HX_CUDA(cudaStreamSynchronize(g->s_update));
    hx_nb_energies e;
    hx_gpu_nb_read_energies(d->nb, &e, NULL);
    hx_gpu_update_result r;
    hx_gpu_update_read(d->up, &r);
    HX_CHECK(r.bad_molecule < 0, HX_ERR_PHYSICS,
             "SETTLE cannot constrain home water molecule %d of this domain: the atoms moved too "
             "far in one step or became non-finite; use a smaller time step",
             r.bad_molecule + 1);
    out[HX_E_LJ] = e.lj;
    out[HX_E_COUL] = e.coulomb;
    out[HX_E_KE_NEW] = d->commit ? r.ke_half : r.ke_eval;
    out[HX_E_DEV] = r.deviation;
    return HX_OK;
}

static hx_status gb_download(void *vimpl, int i, hx_home *home)
{
    gb_impl *g = (gb_impl *)vimpl;
    HX_CUDA(cudaStreamSynchronize(g->s_local));
    HX_CUDA(cudaStreamSynchronize(g->s_nl));
    return hx_gpu_update_download(g->dom[i].up, home->x, home->v, g->s_update);
}

static hx_status gb_capture_begin(void *vimpl)
{
    gb_impl *g = (gb_impl *)vimpl;
    HX_CUDA(cudaStreamBeginCapture(g->s_local, cudaStreamCaptureModeGlobal));
    /* the other streams join the capture through the local stream */
    HX_CUDA(cudaEventRecord(g->ev_fork, g->s_local));
    HX_CUDA(cudaStreamWaitEvent(g->s_nl, g->ev_fork, 0));
    HX_CUDA(cudaStreamWaitEvent(g->s_update, g->ev_fork, 0));
    return HX_OK;
}

static hx_status gb_capture_end(void *vimpl)
{
    gb_impl *g = (gb_impl *)vimpl;
    cudaGraph_t graph = NULL;
    /* the update joined the other streams back into the local stream */
    HX_CUDA(cudaStreamEndCapture(g->s_local, &graph));
    if (g->exec) {
        cudaGraphExecUpdateResultInfo info;
        if (cudaGraphExecUpdate(g->exec, graph, &info) != cudaSuccess) {
            (void)cudaGetLastError();
            HX_CUDA(cudaGraphExecDestroy(g->exec));
            g->exec = NULL;
        }
    }
    if (!g->exec)
        HX_CUDA(cudaGraphInstantiate(&g->exec, graph, 0));
    if (g->graph)
        HX_CUDA(cudaGraphDestroy(g->graph));
    g->graph = graph;
    return HX_OK;
}

static hx_status gb_replay(void *vimpl)
{
    gb_impl *g = (gb_impl *)vimpl;
    HX_CHECK(g->exec, HX_ERR_INTERNAL, "gpu backend: replay without a captured step");
    HX_CUDA(cudaGraphLaunch(g->exec, g->s_local));
    for (int i = 0; i < g->nlocal; i++)
        g->dom[i].f_clean = 1;
    return HX_OK;
}

static void gb_invalidate_graph(void *vimpl)
{
    (void)vimpl; /* the executable graph is updated in place at the next capture */
}

static void gb_mark(void *vimpl, int i, int which)
{
    gb_impl *g = (gb_impl *)vimpl;
    cudaStream_t s = which == HX_MARK_NL_BEGIN || which == HX_MARK_NL_END ? g->s_nl : g->s_local;
    (void)cudaEventRecord(g->dom[i].marks[which], s);
}

static hx_status gb_read_marks(void *vimpl, int i, double t_us[HX_MARK_N])
{
    gb_impl *g = (gb_impl *)vimpl;
    gb_dom *d = &g->dom[i];
    for (int k = 0; k < HX_MARK_N; k++) {
        HX_CUDA(cudaEventSynchronize(d->marks[k]));
        float ms = 0.0f;
        HX_CUDA(cudaEventElapsedTime(&ms, d->marks[HX_MARK_LOCAL_BEGIN], d->marks[k]));
        t_us[k] = 1e3 * ms;
    }
    return HX_OK;
}

static hx_status gb_sync(void *vimpl)
{
    gb_impl *g = (gb_impl *)vimpl;
    HX_CUDA(cudaStreamSynchronize(g->s_local));
    HX_CUDA(cudaStreamSynchronize(g->s_nl));
    HX_CUDA(cudaStreamSynchronize(g->s_update));
    return HX_OK;
}

static const char *gb_describe(void *vimpl)
{
    return ((gb_impl *)vimpl)->desc;
}

/* positional: the order of hx_md_backend_ops (C++ has no designated initialisers here) */
extern "C" const hx_md_backend_ops hx_md_backend_gpu = {
    "gpu",       HX_MEM_DEVICE, HX_REAL_F32,      gb_create,      gb_destroy, gb_set_local,
    gb_search,   gb_npairs,     gb_forces,        gb_halo_stream, gb_kinetic, gb_update,
    gb_energies, gb_download,   gb_capture_begin, gb_capture_end, gb_replay,  gb_invalidate_graph,
    gb_mark,     gb_read_marks, gb_sync,          gb_describe};
