/* The "gpu" MD backend (src/md/backend.h) over the GPU non-bonded module (nb_gpu.h) and the GPU
 * update (update_gpu.h): the three streams of its GPU context (hx_md_params.gpu: local forces;
 * non-local forces and the halo exchange, highest priority; update), events between them, a
 * CUDA graph of a normal step. Every op runs with the context's device current and the caller's
 * restored (the modules below work on the current device): the backend never chooses a device.
 *
 * Mapping of the schedule's calls:
 *   set_local  topology to the pair module (exclusion masks from the local set), a new update
 *              module for the home molecules (SETTLE for water, SHAKE for molecules with
 *              constraints), the bonded interactions of the home molecules, positions and
 *              velocities uploaded (the float positions go to the halo's x)
 *   search     hx_gpu_nb_search on the halo stream (after the coordinate halo); no missed-pair
 *              count on the GPU (reported as 0)
 *   forces     LOCAL: hx_gpu_nb_local on the local stream (f cleared first unless the last
 *              committing update cleared it); NONLOCAL: hx_gpu_nb_nonlocal, the bonded terms of
 *              the home molecules (they overlap the local pair kernel: docs/ARCHITECTURE.md)
 *              and the home force reduction on the halo stream, the reduction after the local
 *              pair kernel
 *   update     waits for both force streams; leap-frog + SETTLE + SHAKE on the update stream,
 *              which also adds the home atoms' pair forces from the cluster layout and writes
 *              their positions into it (hx_gpu_nb_update_link; HALOX_GPU_FUSE_UPDATE=0: the
 *              pair module's reduction and gather instead); then both wait for the update
 *   kinetic, energies, download: fetch and synchronise (they return host data); a molecule
 *              that SETTLE or SHAKE could not constrain, or a non-finite bonded force, recorded
 *              on the device since, is reported there (the next host check)
 * The pair lists use rlist for the outer radius and the engine's rlist_inner for the inner one,
 * re-pruned in prune_parts parts, one per step (hx_md_params; 4 parts by default, see
 * src/mdrun/list_setup.c). */
#include "dd/plan_image.h"
#include "halo/halo_dev.h"
#include "md/gpu/bonded_gpu.h"
#include "core/wait.h"
#include "gpu/context.h"
#include "gpu/trace.h"
#include "gpu/cuda_check.h"
#include "md/gpu/decomp_gpu.h"
#include "md/gpu/nb_gpu.h"
#include "md/gpu/update_gpu.h"
#include "halox/gpu.h"
#include "halox/log.h"
#include "md/backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gb_dom {
    const hx_decomp_local *loc;
    int n_local;  /* atoms of x and f in use */
    float *x, *f; /* the halo's arrays, device float [cap][3] */
    hx_gpu_nb *nb;
    hx_gpu_update *up;
    hx_gpu_bonded *bd; /* NULL: no bonded terms in the model */
    /* home molecules: with bonded terms (bonded list), with SHAKE constraints */
    int cap_mol;
    int *mstart, *mtype, *mgid, *sh_start, *sh_type, *sh_gid;
    int *settle;
    int f_clean;        /* f is zero (set_local, committing update) */
    int want_e, commit; /* of the last update */
    long long step;     /* of the last update (messages) */
    cudaEvent_t marks[HX_MARK_N];
    /* the device search step's home set-up (dd_set_home) ran for these x, f since the last
     * dd_set_local */
    int home_set;
} gb_dom;

typedef struct gb_impl {
    const hx_gpu_context *ctx; /* the device and the streams (not owned) */
    const hx_system *sys;
    const hx_forcefield *ff;
    int has_bonded;
    double epsfac; /* of the 1-4 Coulomb */
    hx_md_params p;
    int nlocal;
    gb_dom *dom;
    cudaStream_t s_local, s_nl, s_update; /* the context's */
    cudaEvent_t ev_fork, ev_local, ev_nl, ev_update, ev_join, ev_clear;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    int fuse;         /* the update reduces the home pair forces and gathers positions (nb_gpu.h) */
    int capturing;    /* between capture_begin and capture_end: marks become graph nodes */
    cudaEvent_t *clk; /* clock points of step timing (timing events), nclk made */
    int nclk;
    char desc[600];
    /* the decomposed search step on the device (dd_start on) */
    hx_gpu_decomp *gdec;
    hx_decomp *dec;
    cudaEvent_t ev_dd;
    int dd_search_wait; /* the next search waits for ev_dd (gb_dd_set_local_on) */
} gb_impl;

/* HALOX_GPU_SEARCH_TIMING=1: the pair search's device time by stage, per local domain, into the
 * log (a diagnosis: the events between the stages make the search launch directly) */
static void gb_log_search_stages(const gb_impl *g, int i)
{
    hx_gpu_nb_stats s;
    hx_gpu_nb_get_stats(g->dom[i].nb, &s);
    double sum = 0.0;
    for (int k = 0; k < HX_GPU_SEARCH_STAGES; k++)
        sum += s.search_stage_ms[k];
    if (s.searches <= 0 || !(sum > 0.0))
        return;
    char line[512];
    int len = snprintf(line, sizeof line,
                       "pair search by stage (HALOX_GPU_SEARCH_TIMING=1; "
                       "domain %d, %d searches), device us per search:",
                       i, s.searches);
    for (int k = 0; k < HX_GPU_SEARCH_STAGES && len > 0 && len < (int)sizeof line; k++)
        len += snprintf(line + len, sizeof line - (size_t)len, " %s %.1f",
                        hx_gpu_search_stage_name(k), 1e3 * s.search_stage_ms[k] / s.searches);
    hx_log(HX_LOG_INFO, "%s; %.1f in all", line, 1e3 * sum / s.searches);
}

static void gb_destroy_on(gb_impl *g)
{
    for (int i = 0; g->dom && i < g->nlocal; i++) {
        if (g->dom[i].nb)
            gb_log_search_stages(g, i);
        hx_gpu_nb_destroy(&g->dom[i].nb);
        hx_gpu_update_destroy(&g->dom[i].up);
        hx_gpu_bonded_destroy(&g->dom[i].bd);
        free(g->dom[i].mstart);
        free(g->dom[i].mtype);
        free(g->dom[i].mgid);
        free(g->dom[i].sh_start);
        free(g->dom[i].sh_type);
        free(g->dom[i].sh_gid);
        free(g->dom[i].settle);
        for (int k = 0; k < HX_MARK_N; k++)
            if (g->dom[i].marks[k])
                cudaEventDestroy(g->dom[i].marks[k]);
    }
    free(g->dom);
    hx_gpu_decomp_destroy(&g->gdec);
    if (g->ev_dd)
        cudaEventDestroy(g->ev_dd);
    cudaEvent_t evs[] = {g->ev_fork, g->ev_local, g->ev_nl, g->ev_update, g->ev_join, g->ev_clear};
    for (size_t k = 0; k < sizeof evs / sizeof evs[0]; k++)
        if (evs[k])
            cudaEventDestroy(evs[k]);
    if (g->exec)
        cudaGraphExecDestroy(g->exec);
    if (g->graph)
        cudaGraphDestroy(g->graph);
    for (int k = 0; k < g->nclk; k++)
        cudaEventDestroy(g->clk[k]);
    free(g->clk);
}

static void gb_destroy(void *vimpl)
{
    gb_impl *g = (gb_impl *)vimpl;
    if (!g)
        return;
    /* the streams are the context's: work of ours still on them finishes before we free */
    hx_gpu_guard gd;
    if (hx_gpu_enter_quiet(g->ctx, &gd)) {
        if (g->s_local) {
            (void)cudaStreamSynchronize(g->s_local);
            (void)cudaStreamSynchronize(g->s_nl);
            (void)cudaStreamSynchronize(g->s_update);
        }
        gb_destroy_on(g);
        hx_gpu_leave(&gd);
    }
    (void)cudaGetLastError();
    free(g);
}

static hx_status gb_init(gb_impl *g, const hx_system *sys)
{
    (void)sys;
    const int dev = g->ctx->device;
    g->s_local = hx_gpu_ctx_stream(g->ctx, HX_GPU_STREAM_LOCAL);
    g->s_nl = hx_gpu_ctx_stream(g->ctx, HX_GPU_STREAM_NONLOCAL);
    g->s_update = hx_gpu_ctx_stream(g->ctx, HX_GPU_STREAM_UPDATE);
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
    /* the engine resolved both (src/mdrun/list_setup.c): rlist_inner = rlist when off */
    np.rlist_inner = g->p.prune_parts > 0 ? g->p.rlist_inner : g->p.rlist;
    np.prune_parts = g->p.prune_parts > 0 ? g->p.prune_parts : 0;
    np.max_excl_dist = hx_forcefield_is_water(g->ff) ? 0.25 : 0.5;
    hx_nb_params cp = {g->p.rc, g->p.eps_rf, g->p.eps_r};
    g->epsfac = hx_rf_constants(&cp).epsfac;
    g->has_bonded = hx_forcefield_has_bonded(g->ff);
    g->fuse = hx_gpu_nb_fuse_update();
    for (int i = 0; i < g->nlocal; i++) {
        HX_TRY(hx_gpu_nb_create(g->ff, &np, &g->dom[i].nb));
        if (g->has_bonded)
            HX_TRY(hx_gpu_bonded_create(g->ff, g->epsfac, &g->dom[i].bd));
        for (int k = 0; k < HX_MARK_N; k++)
            HX_CUDA(cudaEventCreate(&g->dom[i].marks[k]));
    }
    hx_gpu_info gi;
    char line[512] = "";
    if (hx_gpu_get_info(dev, &gi) == HX_OK)
        hx_gpu_describe(&gi, line, (int)sizeof line);
    snprintf(g->desc, sizeof g->desc,
             "gpu: device %d %s; 8x8 cluster-pair kernels in float, energies and update in "
             "double, pair search on the GPU%s",
             dev, line,
             g->has_bonded ? "; bonded terms on the non-local stream, SHAKE + SETTLE" : "");
    return HX_OK;
}

static hx_status gb_create(const hx_system *sys, const hx_forcefield *ff, const hx_md_params *p,
                           int nlocal, void **out)
{
    HX_CHECK(p->gpu, HX_ERR_INVALID_ARG,
             "the gpu MD backend needs a GPU context (hx_md_params.gpu): create one with "
             "hx_gpu_context_create");
    gb_impl *g = (gb_impl *)calloc(1, sizeof *g);
    HX_CHECK(g, HX_ERR_NOMEM, "out of memory");
    g->ctx = p->gpu;
    g->sys = sys;
    g->ff = ff;
    g->p = *p;
    g->nlocal = nlocal;
    g->dom = (gb_dom *)calloc((size_t)nlocal, sizeof *g->dom);
    hx_status st = HX_ERR_NOMEM;
    if (!g->dom) {
        st = hx_error_set(HX_ERR_NOMEM, __FILE__, __LINE__, __func__, "out of memory");
    } else {
        hx_gpu_guard gd;
        st = hx_gpu_enter(g->ctx, &gd);
        if (st == HX_OK) {
            st = gb_init(g, sys);
            hx_gpu_leave(&gd);
        }
    }
    if (st != HX_OK) {
        gb_destroy(g);
        return st;
    }
    *out = g;
    return HX_OK;
}

/* Room for the home molecules' lists (grow-only). */
static hx_status gb_reserve_mol(gb_dom *d, int nmol)
{
    if (nmol + 1 <= d->cap_mol)
        return HX_OK;
    const int cap = nmol + nmol / 4 + 64;
    int **arrs[] = {&d->mstart, &d->mtype, &d->mgid, &d->sh_start, &d->sh_type, &d->sh_gid};
    for (size_t k = 0; k < sizeof arrs / sizeof arrs[0]; k++) {
        int *a = (int *)realloc(*arrs[k], sizeof(int) * (size_t)cap);
        HX_CHECK(a, HX_ERR_NOMEM, "out of memory for %d home molecules", nmol);
        *arrs[k] = a;
    }
    int *t = (int *)realloc(d->settle, sizeof(int) * 3 * (size_t)cap);
    HX_CHECK(t, HX_ERR_NOMEM, "out of memory for %d home molecules", nmol);
    d->settle = t;
    d->cap_mol = cap;
    return HX_OK;
}

static hx_status gb_set_local_on(void *vimpl, int i, const hx_decomp_local *loc, void *x, void *f)
{
    gb_impl *g = (gb_impl *)vimpl;
    gb_dom *d = &g->dom[i];
    HX_CUDA(cudaStreamSynchronize(g->s_local));
    HX_CUDA(cudaStreamSynchronize(g->s_nl));
    HX_CUDA(cudaStreamSynchronize(g->s_update));
    d->loc = loc;
    d->n_local = loc->n_local;
    d->x = (float *)x;
    d->f = (float *)f;
    const int nh = loc->n_home;
    const hx_home *home = loc->home;
    HX_TRY(gb_reserve_mol(d, home->nmol));
    /* the update module follows the home molecules (reset: its buffers are reused) */
    double *mass = (double *)malloc(sizeof(double) * (size_t)(nh + 1));
    hx_status st = HX_OK;
    if (!mass)
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
        /* the home molecules by kind: rigid water (SETTLE), constrained (SHAKE), with bonded
         * terms (bonded list); the water oxygen is told by its type, its hydrogens keep their
         * order (as hx_constr_create) */
        const hx_water_model *w = hx_forcefield_water(g->ff);
        const int to = hx_forcefield_water_o_type(g->ff);
        int nw = 0, nsh = 0, nbm = 0;
        for (int k = 0; k < home->nmol; k++) {
            const int mt = g->sys->mol_type ? g->sys->mol_type[home->mol_gid[k]] : 0;
            const hx_moltype *t = hx_forcefield_moltype(g->ff, mt);
            const int a0 = home->mol_start[k];
            if (!t || t->rigid_water) {
                if (!w)
                    continue; /* argon: single atoms, nothing to constrain */
                int nhy = 0, no = 0;
                for (int a = a0; a < home->mol_start[k + 1]; a++) {
                    if (loc->type[a] == to) {
                        d->settle[3 * nw] = a;
                        no++;
                    } else if (nhy < 2) {
                        d->settle[3 * nw + 1 + nhy++] = a;
                    }
                }
                if (no != 1 || nhy != 2)
                    HX_FAIL_GOTO(st, HX_ERR_INVALID_ARG, done,
                                 "water molecule %d has %d oxygens and %d hydrogens",
                                 home->mol_gid[k] + 1, no, nhy);
                nw++;
                continue;
            }
            if (t->nconstraints > 0) {
                d->sh_start[nsh] = a0;
                d->sh_type[nsh] = mt;
                d->sh_gid[nsh] = home->mol_gid[k];
                nsh++;
            }
            if (t->nbonds || t->nangles || t->ndihedrals || t->npairs) {
                d->mstart[nbm] = a0;
                d->mtype[nbm] = mt;
                d->mgid[nbm] = home->mol_gid[k];
                nbm++;
            }
        }
        if (w) {
            up.m_o = w->m_o;
            up.m_h = w->m_h;
            up.d_oh = w->r_oh;
            up.d_hh = w->r_hh;
            up.nsettle = nw;
            up.settle = d->settle;
        }
        up.ff = g->ff;
        up.nshake = nsh;
        up.shake_start = d->sh_start;
        up.shake_type = d->sh_type;
        HX_TRY_GOTO(st, hx_gpu_update_reset(&d->up, &up), done);
        HX_TRY_GOTO(st, hx_gpu_update_upload(d->up, home->x, home->v, d->x, g->s_local), done);
        if (d->bd) {
            hx_mol_list ml = {nbm, d->mstart, d->mtype, d->mgid};
            HX_TRY_GOTO(st, hx_gpu_bonded_set_molecules(d->bd, &ml), done);
        }
        hx_local_set set;
        memset(&set, 0, sizeof set);
        set.n = loc->n_local;
        set.type = loc->type;
        set.q = loc->q;
        set.mol = loc->mol;
        set.excl = loc->excl;
        set.mol_pos = loc->mol_pos;
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
        /* the modules above upload their tables with cudaMemcpy and clear with cudaMemset: the
         * legacy default stream, which does not order the context's non-blocking streams (a
         * memset returns before it ran, a pageable copy may return before its DMA landed), and
         * the search and the step's kernels read those tables */
        HX_TRY_GOTO(st,
                    hx_gpu_stream_wait(NULL, hx_wait_timeout_gpu(HX_WAIT_STEP), g->ctx->rank,
                                       "the upload of local domain %d's tables", i),
                    done);
        d->f_clean = 1;
    }
done:
    free(mass);
    return st;
}

static hx_status gb_search_on(void *vimpl, int i, double rlist, int check_missed, long long *missed)
{
    gb_impl *g = (gb_impl *)vimpl;
    (void)check_missed;
    HX_CHECK(rlist == g->p.rlist, HX_ERR_INVALID_ARG,
             "gpu backend: search with rlist %g, created for %g", rlist, g->p.rlist);
    if (missed)
        *missed = 0; /* not counted on the GPU */
    /* after the coordinate halo, which ran on the halo stream, and the atoms' set-up of a
     * device search step (local stream) */
    if (g->dd_search_wait) {
        HX_CUDA(cudaStreamWaitEvent(g->s_nl, g->ev_dd, 0));
        g->dd_search_wait = 0;
    }
    return hx_gpu_nb_search(g->dom[i].nb, g->dom[i].x, g->s_nl);
}

static long long gb_npairs(void *vimpl, int i)
{
    hx_gpu_nb_stats s;
    hx_gpu_nb_get_stats(((gb_impl *)vimpl)->dom[i].nb, &s);
    return 32 * (s.ncp_inner[0] + s.ncp_inner[1]); /* atom pairs the kernels compute */
}

static hx_status gb_forces_on(void *vimpl, int i, int part, int want_energy, long long step)
{
    gb_impl *g = (gb_impl *)vimpl;
    gb_dom *d = &g->dom[i];
    (void)step;
    const int flags = want_energy ? HX_GPU_NB_ENERGY : 0;
    if (part == HX_NB_LOCAL) {
        if (!d->f_clean && d->n_local > 0) {
            /* after an update that did not commit (it left f as it was): clear it, and let the
             * halo stream (non-local pairs, the force halo's accumulation) start after that */
            HX_CUDA(cudaMemsetAsync(d->f, 0, sizeof(float) * 3 * (size_t)d->n_local, g->s_local));
            HX_CUDA(cudaEventRecord(g->ev_clear, g->s_local));
            HX_CUDA(cudaStreamWaitEvent(g->s_nl, g->ev_clear, 0));
        }
        d->f_clean = 0;
        HX_TRY(hx_gpu_nb_local(d->nb, d->x, d->f, flags, g->s_local));
        HX_CUDA(cudaEventRecord(g->ev_local, g->s_local));
        return HX_OK;
    }
    HX_TRY(hx_gpu_nb_nonlocal(d->nb, d->x, d->f, flags, g->s_nl));
    if (d->bd) {
        /* bonded terms of the home molecules: home positions only, so they need not wait for
         * the local pair kernel and run beside it (the force halo waits for that kernel
         * anyway, through the reduction below) */
        HX_TRY(hx_gpu_bonded_compute(d->bd, hx_gpu_update_positions(d->up), d->f,
                                     want_energy ? HX_GPU_BONDED_ENERGY : 0, g->s_nl));
        if (want_energy)
            HX_TRY(hx_gpu_bonded_fetch(d->bd, g->s_nl));
    }
    /* the home forces of the local pairs too: after the local kernel (its side work adds the
     * home atoms' reaction-field terms to f, which the force halo accumulates into); with the
     * update fused (hx_gpu_nb_update_link) the update adds them itself */
    HX_CUDA(cudaStreamWaitEvent(g->s_nl, g->ev_local, 0));
    if (!g->fuse)
        HX_TRY(hx_gpu_nb_reduce_home(d->nb, d->f, g->s_nl));
    if (want_energy)
        HX_TRY(hx_gpu_nb_fetch_energies(d->nb, g->s_nl));
    return HX_OK;
}

static hx_stream gb_halo_stream(void *vimpl, int i)
{
    (void)i;
    return ((gb_impl *)vimpl)->s_nl;
}

/* What the device recorded since the last check (after a synchronisation with the fetches):
 * a water SETTLE or a molecule SHAKE could not constrain, a non-finite bonded force. */
static hx_status gb_check(const gb_impl *g, const gb_dom *d, const hx_gpu_update_result *r,
                          long long step)
{
    HX_CHECK(r->bad_molecule < 0, HX_ERR_PHYSICS,
             "SETTLE cannot constrain home water molecule %d of this domain: the atoms moved too "
             "far in one step or became non-finite; use a smaller time step",
             r->bad_molecule + 1);
    if (r->bad_shake >= 0) {
        const int k = r->bad_shake;
        int gid = -1, mt = -1;
        if (g->gdec) {
            /* lists of the device search step: molecule and compact type read back */
            const hx_gpu_dd_local *V = hx_gpu_decomp_local(g->gdec, (int)(d - g->dom));
            int ct = -1;
            if (k < V->c->nshake) {
                HX_CUDA(cudaMemcpy(&gid, V->shake_gid + k, sizeof gid, cudaMemcpyDeviceToHost));
                HX_CUDA(cudaMemcpy(&ct, V->shake_type + k, sizeof ct, cudaMemcpyDeviceToHost));
            }
            for (int q = 0, n = 0; q < hx_forcefield_nmoltypes(g->ff) && mt < 0; q++) {
                const hx_moltype *tq = hx_forcefield_moltype(g->ff, q);
                if (tq && !tq->rigid_water && tq->nconstraints > 0 && n++ == ct)
                    mt = q;
            }
        } else {
            gid = d->sh_gid[k];
            mt = d->sh_type[k];
        }
        const hx_moltype *t = mt >= 0 ? hx_forcefield_moltype(g->ff, mt) : NULL;
        if (r->shake_noconv)
            HX_FAIL(HX_ERR_PHYSICS,
                    "step %lld (or an earlier step since the last check): SHAKE did not "
                    "constrain molecule %d (%s) to the relative tolerance %g in %d sweeps: the "
                    "molecule is strongly distorted; use a smaller time step or check the "
                    "starting structure",
                    step, gid + 1, t ? t->name : "?", HX_SHAKE_TOL, HX_SHAKE_MAXITER);
        HX_FAIL(HX_ERR_PHYSICS,
                "step %lld (or an earlier step since the last check): SHAKE cannot constrain "
                "molecule %d (%s): a bond to hydrogen turned by 90 degrees or more in one step, "
                "or a position became non-finite; use a smaller time step or check the starting "
                "structure",
                step, gid + 1, t ? t->name : "?");
    }
    if (d->bd)
        HX_TRY(hx_gpu_bonded_check(d->bd, step));
    return HX_OK;
}

static hx_status gb_kinetic_on(void *vimpl, int i, double *ke)
{
    gb_impl *g = (gb_impl *)vimpl;
    HX_TRY(hx_gpu_update_fetch(g->dom[i].up, g->s_update));
    HX_CUDA(cudaStreamSynchronize(g->s_update));
    hx_gpu_update_result r;
    hx_gpu_update_read(g->dom[i].up, &r);
    *ke = r.ke_half;
    return gb_check(g, &g->dom[i], &r, g->dom[i].step);
}

static hx_status gb_update_on(void *vimpl, int i, double lambda, int want_energy, int commit,
                              long long step)
{
    gb_impl *g = (gb_impl *)vimpl;
    gb_dom *d = &g->dom[i];
    HX_CUDA(cudaEventRecord(g->ev_local, g->s_local));
    HX_CUDA(cudaEventRecord(g->ev_nl, g->s_nl));
    HX_CUDA(cudaStreamWaitEvent(g->s_update, g->ev_local, 0));
    HX_CUDA(cudaStreamWaitEvent(g->s_update, g->ev_nl, 0));
    int flags = want_energy ? HX_GPU_UPDATE_DEVIATION : 0;
    if (!commit)
        flags |= HX_GPU_UPDATE_NO_COMMIT;
    hx_gpu_update_link link;
    if (g->fuse)
        HX_TRY(hx_gpu_nb_update_link(d->nb, commit, &link));
    HX_TRY(
        hx_gpu_update_step(d->up, d->x, d->f, lambda, flags, g->fuse ? &link : NULL, g->s_update));
    if (want_energy)
        HX_TRY(hx_gpu_update_fetch(d->up, g->s_update));
    HX_CUDA(cudaEventRecord(g->ev_update, g->s_update));
    HX_CUDA(cudaStreamWaitEvent(g->s_nl, g->ev_update, 0));
    HX_CUDA(cudaEventRecord(g->ev_join, g->s_nl));
    HX_CUDA(cudaStreamWaitEvent(g->s_local, g->ev_update, 0));
    HX_CUDA(cudaStreamWaitEvent(g->s_local, g->ev_join, 0));
    d->want_e = want_energy;
    d->commit = commit;
    d->step = step;
    if (commit)
        d->f_clean = 1;
    return HX_OK;
}

static hx_status gb_energies_on(void *vimpl, int i, double out[HX_E_N])
{
    gb_impl *g = (gb_impl *)vimpl;
    gb_dom *d = &g->dom[i];
    /* bounded (no rank left waiting): the step's streams, the halo kernels among them */
    HX_TRY(hx_gpu_ctx_wait_idle(g->ctx, NULL, hx_wait_timeout_gpu(HX_WAIT_STEP), g->ctx->rank,
                                "the step before its energies"));
    hx_nb_energies e;
    hx_gpu_nb_read_energies(d->nb, &e, NULL);
    hx_gpu_update_result r;
    hx_gpu_update_read(d->up, &r);
    HX_TRY(gb_check(g, d, &r, d->step));
    out[HX_E_LJ] = e.lj;
    out[HX_E_COUL] = e.coulomb;
    out[HX_E_KE_NEW] = d->commit ? r.ke_half : r.ke_eval;
    out[HX_E_DEV] = r.deviation;
    if (d->bd) {
        hx_bonded_energies be;
        hx_gpu_bonded_read_energies(d->bd, &be);
        out[HX_E_BOND] = be.bonds;
        out[HX_E_ANGLE] = be.angles;
        out[HX_E_DIH] = be.dihedrals;
        out[HX_E_LJ14] = be.lj14;
        out[HX_E_COUL14] = be.coulomb14;
    }
    return HX_OK;
}

static hx_status gb_download_on(void *vimpl, int i, hx_home *home)
{
    gb_impl *g = (gb_impl *)vimpl;
    HX_CUDA(cudaStreamSynchronize(g->s_local));
    HX_CUDA(cudaStreamSynchronize(g->s_nl));
    /* the device search step keeps the home molecule lists on the device */
    if (g->gdec)
        HX_TRY(hx_gpu_decomp_home_lists(g->gdec, i, home));
    /* a failed constraint or bonded force must not travel on into the migration */
    gb_dom *d = &g->dom[i];
    HX_TRY(hx_gpu_update_fetch(d->up, g->s_update));
    if (d->bd)
        HX_TRY(hx_gpu_bonded_fetch(d->bd, g->s_update));
    HX_TRY(hx_gpu_update_download(d->up, home->x, home->v, g->s_update));
    hx_gpu_update_result r;
    hx_gpu_update_read(d->up, &r);
    return gb_check(g, d, &r, d->step);
}

static hx_status gb_capture_begin_on(void *vimpl)
{
    gb_impl *g = (gb_impl *)vimpl;
    /* thread-local: in global mode a potentially unsafe CUDA call by any other thread of the
     * process during the capture (an NVSHMEM proxy thread, a CUDA-aware MPI progress thread)
     * fails and invalidates the capture; this thread makes none (the capture only enqueues) */
    HX_CUDA(cudaStreamBeginCapture(g->s_local, cudaStreamCaptureModeThreadLocal));
    g->capturing = 1;
    /* the other streams join the capture through the local stream */
    HX_CUDA(cudaEventRecord(g->ev_fork, g->s_local));
    HX_CUDA(cudaStreamWaitEvent(g->s_nl, g->ev_fork, 0));
    HX_CUDA(cudaStreamWaitEvent(g->s_update, g->ev_fork, 0));
    return HX_OK;
}

static hx_status gb_capture_end_on(void *vimpl)
{
    gb_impl *g = (gb_impl *)vimpl;
    cudaGraph_t graph = NULL;
    g->capturing = 0;
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

static hx_status gb_replay_on(void *vimpl)
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

static void gb_mark_on(void *vimpl, int i, int which)
{
    gb_impl *g = (gb_impl *)vimpl;
    /* HX_MARK_UPDATE_END on the local stream too, which the update has joined: a point left
     * on the update's stream would end a captured step outside the local stream's join */
    cudaStream_t s = which == HX_MARK_NL_BEGIN || which == HX_MARK_NL_END ? g->s_nl : g->s_local;
    /* in a capture a plain record is only an ordering edge: "external" makes it a node that
     * records the event at every replay (the step-timing breakdown of graph-replayed steps) */
    (void)cudaEventRecordWithFlags(g->dom[i].marks[which], s,
                                   g->capturing ? cudaEventRecordExternal : 0);
}

static hx_status gb_read_marks_on(void *vimpl, int i, double t_us[HX_MARK_N])
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

static hx_status gb_sync_on(void *vimpl)
{
    gb_impl *g = (gb_impl *)vimpl;
    /* bounded: the engine syncs here before its search and agreement */
    return hx_gpu_ctx_wait_idle(g->ctx, NULL, hx_wait_timeout_gpu(HX_WAIT_STEP), g->ctx->rank,
                                "the steps before a search");
}

/* ---- the decomposed search step on the device ---------------------------------------------- */

static hx_status gbt_setup(void *ctx, int nchan, const size_t *cap, void ***send, void ***recv)
{
    return hx_halo_msg_setup((hx_halo *)ctx, nchan, cap, send, recv);
}

static hx_status gbt_msg(void *ctx, int chan, const int *dest, const int *src, hx_stream stream)
{
    return hx_halo_msg((hx_halo *)ctx, chan, dest, src, stream);
}

static hx_status gb_register_images(gb_impl *g)
{
    for (int i = 0; i < g->nlocal; i++) {
        void *img = NULL;
        size_t cap = 0;
        HX_TRY(hx_gpu_decomp_image(g->gdec, i, &img, &cap));
        hx_plan_set_device_image(hx_decomp_plan(g->dec), i, img, cap);
    }
    return HX_OK;
}

static hx_status gb_dd_start_on(void *vimpl, hx_decomp *dec, hx_halo *halo)
{
    gb_impl *g = (gb_impl *)vimpl;
    hx_gpu_dd_transport t;
    memset(&t, 0, sizeof t);
    t.ctx = halo;
    t.name = hx_halo_backend_name(halo);
    t.device_only = hx_halo_msg_kind(halo) == 2;
    t.setup = gbt_setup;
    t.msg = gbt_msg;
    g->dec = dec;
    hx_status st = HX_OK;
    if (!g->ev_dd && cudaEventCreateWithFlags(&g->ev_dd, cudaEventDisableTiming) != cudaSuccess)
        st = hx_error_set(HX_ERR_CUDA, __FILE__, __LINE__, __func__, "cudaEventCreate failed");
    HX_TRY(hx_comm_agree(hx_decomp_comm(dec), st));
    HX_TRY(hx_gpu_decomp_create(dec, g->sys, g->ff, &t, &g->gdec));
    return hx_comm_agree(hx_decomp_comm(dec), gb_register_images(g));
}

static hx_status gb_dd_search_on(void *vimpl, long long step, hx_status local, long long *gmax,
                                 hx_md_dd_times *t)
{
    gb_impl *g = (gb_impl *)vimpl;
    /* the search trace's clocks, before anything of this step is enqueued (gpu/trace.h) */
    HX_TRY(hx_gpu_trace_prepare(g->s_local));
    hx_gpu_dd_state in[64];
    memset(in, 0, sizeof in);
    hx_gpu_dd_state *inp =
        g->nlocal <= 64 ? in : (hx_gpu_dd_state *)malloc(sizeof *inp * g->nlocal);
    HX_CHECK(inp, HX_ERR_NOMEM, "out of memory");
    for (int i = 0; i < g->nlocal; i++) {
        inp[i].x = hx_gpu_update_positions(g->dom[i].up);
        inp[i].v = hx_gpu_update_velocities(g->dom[i].up);
    }
    hx_gpu_dd_times tm;
    memset(&tm, 0, sizeof tm);
    hx_status st = hx_gpu_decomp_run(g->gdec, step, local, inp, g->s_local, gmax, &tm);
    if (inp != in)
        free(inp);
    if (t) {
        t->migrate = tm.migrate;
        t->local_set = tm.local_set;
        t->plan = tm.plan;
        t->device = tm.device;
        t->counts = tm.counts;
        t->retries = tm.retries;
        if (st == HX_OK)
            hx_gpu_decomp_stats(g->gdec, &t->stats[0], &t->stats[1], &t->stats[2], &t->stats[3]);
    }
    HX_TRY(st);
    /* the images move at a growth only; registering is a pointer store */
    return gb_register_images(g);
}

static hx_status gb_dd_counts(void *vimpl, int i, hx_plan_domain_counts *c)
{
    gb_impl *g = (gb_impl *)vimpl;
    const hx_gpu_dd_counts *k = hx_gpu_decomp_local(g->gdec, i)->c;
    c->n_home = k->n_home;
    c->send_zone_count = k->send_zone_count;
    c->recv_zone_count = k->recv_zone_count;
    c->deps = k->deps;
    return HX_OK;
}

/* The pair module's atom set from the device arrays: n atoms from first on (zone counts left
 * to the caller). */
static void gb_nb_set(const gb_impl *g, int i, int n, int first, hx_gpu_nb_dev_set *set)
{
    const hx_gpu_dd_local *V = hx_gpu_decomp_local(g->gdec, i);
    const hx_dd *dd = hx_decomp_dd(g->dec);
    int grid[3];
    double box[3];
    hx_dd_grid(dd, grid);
    hx_dd_box(dd, box);
    memset(set, 0, sizeof *set);
    set->n = n;
    set->first = first;
    set->ndim = hx_plan_domain(hx_decomp_plan(g->dec), i)->ndim;
    for (int k = 0; k < 3; k++) {
        set->periodic[k] = grid[k] == 1;
        set->box[k] = box[k];
    }
    set->zone = V->zone;
    set->type = V->type;
    set->mol = V->mol;
    set->q = V->q;
    set->excl = V->excl;
    set->mol_pos = V->mol_pos;
}

/* The home atoms' modules from the device arrays of the last dd_search (no host data but
 * counts): the update module, the bonded terms, the pair module's home atoms (zone 0 alone);
 * then the home part of the pair search, all on the local stream, while the host makes the
 * plan from the counts. The coordinate halo (halo stream) waits for the home positions written
 * here, not for the search. */
static hx_status gb_home_setup(gb_impl *g, int i, float *x, float *f)
{
    gb_dom *d = &g->dom[i];
    const hx_gpu_dd_local *V = hx_gpu_decomp_local(g->gdec, i);
    const hx_gpu_dd_counts *c = V->c;
    const hx_dd *dd = hx_decomp_dd(g->dec);
    int grid[3];
    double box[3];
    hx_dd_grid(dd, grid);
    hx_dd_box(dd, box);
    d->x = x;
    d->f = f;
    hx_gpu_update_params up;
    memset(&up, 0, sizeof up);
    up.n = c->n_home;
    up.nmol = c->nmol;
    up.dt = g->p.dt;
    for (int k = 0; k < 3; k++) {
        up.periodic[k] = grid[k] == 1;
        up.box[k] = box[k];
    }
    const hx_water_model *w = hx_forcefield_water(g->ff);
    if (w) {
        up.m_o = w->m_o;
        up.m_h = w->m_h;
        up.d_oh = w->r_oh;
        up.d_hh = w->r_hh;
        up.nsettle = c->nsettle;
    }
    up.ff = g->ff;
    up.nshake = c->nshake;
    hx_gpu_update_dev_lists L;
    memset(&L, 0, sizeof L);
    L.x = V->x;
    L.v = V->v;
    L.mass = V->mass;
    L.invm = V->invmass;
    L.mol_start = V->mol_start;
    L.settle = V->settle;
    L.free_at = V->free_at;
    L.nfree = c->nfree;
    L.shake_start = V->shake_start;
    L.shake_type = V->shake_type;
    L.settle_first = c->settle_consecutive ? c->settle_first : -1;
    HX_TRY(hx_gpu_update_reset_device(&d->up, &up, &L, d->x, g->s_local));
    if (d->bd)
        HX_TRY(hx_gpu_bonded_set_molecules_device(d->bd, c->nbonded, V->bonded_start,
                                                  V->bonded_type, V->bonded_gid, V->bonded_off,
                                                  c->bonded_count, g->s_local));
    /* the coordinate halo reads the home positions just written */
    HX_CUDA(cudaEventRecord(g->ev_dd, g->s_local));
    HX_CUDA(cudaStreamWaitEvent(g->s_nl, g->ev_dd, 0));
    hx_gpu_nb_dev_set set;
    gb_nb_set(g, i, c->n_home, 0, &set);
    set.zone_count[0] = c->n_home;
    HX_TRY(hx_gpu_nb_set_atoms_device(d->nb, &set, g->s_local));
    return hx_gpu_nb_search_home(d->nb, d->x, g->s_local);
}

static hx_status gb_dd_set_home_on(void *vimpl, int i, void *x, void *f)
{
    gb_impl *g = (gb_impl *)vimpl;
    g->dom[i].home_set = 0;
    HX_TRY(gb_home_setup(g, i, (float *)x, (float *)f));
    g->dom[i].home_set = 1;
    return HX_OK;
}

/* set_local from the device arrays of the last dd_search, after the plan: the halo atoms'
 * part of the pair module where dd_set_home set the home atoms for the same x and f, else
 * everything (the halo's buffers moved when its capacities grew). */
static hx_status gb_dd_set_local_on(void *vimpl, int i, void *x, void *f)
{
    gb_impl *g = (gb_impl *)vimpl;
    gb_dom *d = &g->dom[i];
    const hx_gpu_dd_counts *c = hx_gpu_decomp_local(g->gdec, i)->c;
    const hx_domain_plan *pl = hx_plan_domain(hx_decomp_plan(g->dec), i);
    const int kept = d->home_set && d->x == (float *)x && d->f == (float *)f;
    d->home_set = 0;
    if (!kept)
        HX_TRY(gb_home_setup(g, i, (float *)x, (float *)f));
    d->n_local = c->n_local;
    hx_gpu_nb_dev_set set;
    gb_nb_set(g, i, c->n_local, c->n_home, &set);
    for (int r = 0; r < pl->nranges; r++)
        set.zone_count[pl->ranges[r].zone] += pl->ranges[r].end - pl->ranges[r].begin;
    HX_TRY(hx_gpu_nb_set_atoms_device(d->nb, &set, g->s_local));
    if (c->n_local > 0)
        HX_CUDA(cudaMemsetAsync(d->f, 0, sizeof(float) * 3 * (size_t)c->n_local, g->s_local));
    /* the search (halo stream, gb_search_on) and the update read what was set here; the
     * coordinate halo, enqueued on the halo stream before the search, waits only for the
     * home positions (gb_home_setup) */
    HX_CUDA(cudaEventRecord(g->ev_dd, g->s_local));
    HX_CUDA(cudaStreamWaitEvent(g->s_update, g->ev_dd, 0));
    g->dd_search_wait = 1;
    d->f_clean = 1;
    return HX_OK;
}

static const char *gb_describe(void *vimpl)
{
    return ((gb_impl *)vimpl)->desc;
}

static hx_status gb_clock_reserve_on(void *vimpl, int n)
{
    gb_impl *g = (gb_impl *)vimpl;
    if (n <= g->nclk)
        return HX_OK;
    cudaEvent_t *c = (cudaEvent_t *)realloc(g->clk, sizeof *c * (size_t)n);
    HX_CHECK(c, HX_ERR_NOMEM, "out of memory for %d clock points", n);
    g->clk = c;
    for (; g->nclk < n; g->nclk++)
        HX_CUDA(cudaEventCreate(&g->clk[g->nclk]));
    return HX_OK;
}

/* after a step the local stream has joined the others (gb_update_on): its end is the step's */
static hx_status gb_clock_on(void *vimpl, int k)
{
    gb_impl *g = (gb_impl *)vimpl;
    if (k >= g->nclk)
        HX_TRY(gb_clock_reserve_on(vimpl, 2 * k + 64)); /* a run longer than reserved */
    HX_CUDA(cudaEventRecord(g->clk[k], g->s_local));
    return HX_OK;
}

static hx_status gb_clock_elapsed_on(void *vimpl, int k0, int k1, double *us)
{
    gb_impl *g = (gb_impl *)vimpl;
    HX_CHECK(k0 >= 0 && k1 < g->nclk && k0 <= k1, HX_ERR_INVALID_ARG,
             "gpu backend: clock points %d, %d of %d", k0, k1, g->nclk);
    HX_CUDA(cudaEventSynchronize(g->clk[k1]));
    float ms = 0.0f;
    HX_CUDA(cudaEventElapsedTime(&ms, g->clk[k0], g->clk[k1]));
    *us = 1e3 * ms;
    return HX_OK;
}

/* ---- the ops: each on the context's device, the caller's restored ------------------------ */

static hx_status gb_set_local(void *vimpl, int i, const hx_decomp_local *loc, void *x, void *f)
{
    HX_GPU_ON(((gb_impl *)vimpl)->ctx, gb_set_local_on(vimpl, i, loc, x, f));
}

static hx_status gb_search(void *vimpl, int i, double rlist, int check_missed, long long *missed)
{
    HX_GPU_ON(((gb_impl *)vimpl)->ctx, gb_search_on(vimpl, i, rlist, check_missed, missed));
}

static hx_status gb_forces(void *vimpl, int i, int part, int want_energy, long long step)
{
    HX_GPU_ON(((gb_impl *)vimpl)->ctx, gb_forces_on(vimpl, i, part, want_energy, step));
}

static hx_status gb_kinetic(void *vimpl, int i, double *ke)
{
    HX_GPU_ON(((gb_impl *)vimpl)->ctx, gb_kinetic_on(vimpl, i, ke));
}

static hx_status gb_update(void *vimpl, int i, double lambda, int want_energy, int commit,
                           long long step)
{
    HX_GPU_ON(((gb_impl *)vimpl)->ctx, gb_update_on(vimpl, i, lambda, want_energy, commit, step));
}

static hx_status gb_energies(void *vimpl, int i, double out[HX_E_N])
{
    HX_GPU_ON(((gb_impl *)vimpl)->ctx, gb_energies_on(vimpl, i, out));
}

static hx_status gb_download(void *vimpl, int i, hx_home *home)
{
    HX_GPU_ON(((gb_impl *)vimpl)->ctx, gb_download_on(vimpl, i, home));
}

static hx_status gb_capture_begin(void *vimpl)
{
    HX_GPU_ON(((gb_impl *)vimpl)->ctx, gb_capture_begin_on(vimpl));
}

static hx_status gb_capture_end(void *vimpl)
{
    HX_GPU_ON(((gb_impl *)vimpl)->ctx, gb_capture_end_on(vimpl));
}

static hx_status gb_replay(void *vimpl)
{
    HX_GPU_ON(((gb_impl *)vimpl)->ctx, gb_replay_on(vimpl));
}

static hx_status gb_read_marks(void *vimpl, int i, double t_us[HX_MARK_N])
{
    HX_GPU_ON(((gb_impl *)vimpl)->ctx, gb_read_marks_on(vimpl, i, t_us));
}

static hx_status gb_sync(void *vimpl)
{
    HX_GPU_ON(((gb_impl *)vimpl)->ctx, gb_sync_on(vimpl));
}

static hx_status gb_dd_start(void *vimpl, hx_decomp *dec, hx_halo *halo)
{
    HX_GPU_ON(((gb_impl *)vimpl)->ctx, gb_dd_start_on(vimpl, dec, halo));
}

static hx_status gb_dd_search(void *vimpl, long long step, hx_status local, long long *gmax,
                              hx_md_dd_times *t)
{
    /* a process that cannot enter its device still takes the step's reduction, failing (its
     * launches fail, its neighbours' messages wait out their deadlines): the others would wait
     * in the reduction otherwise */
    hx_gpu_guard gd;
    const hx_status est = hx_gpu_enter(((gb_impl *)vimpl)->ctx, &gd);
    if (est != HX_OK)
        return gb_dd_search_on(vimpl, step, est, gmax, t);
    const hx_status st = gb_dd_search_on(vimpl, step, local, gmax, t);
    hx_gpu_leave(&gd);
    return st;
}

static hx_status gb_dd_set_local(void *vimpl, int i, void *x, void *f)
{
    HX_GPU_ON(((gb_impl *)vimpl)->ctx, gb_dd_set_local_on(vimpl, i, x, f));
}

static hx_status gb_dd_set_home(void *vimpl, int i, void *x, void *f)
{
    HX_GPU_ON(((gb_impl *)vimpl)->ctx, gb_dd_set_home_on(vimpl, i, x, f));
}

static hx_status gb_clock_reserve(void *vimpl, int n)
{
    HX_GPU_ON(((gb_impl *)vimpl)->ctx, gb_clock_reserve_on(vimpl, n));
}

static hx_status gb_clock(void *vimpl, int k)
{
    HX_GPU_ON(((gb_impl *)vimpl)->ctx, gb_clock_on(vimpl, k));
}

static hx_status gb_clock_elapsed(void *vimpl, int k0, int k1, double *us)
{
    HX_GPU_ON(((gb_impl *)vimpl)->ctx, gb_clock_elapsed_on(vimpl, k0, k1, us));
}

extern "C" hx_gpu_nb *hx_md_backend_gpu_nb(void *vimpl, int i)
{
    gb_impl *g = (gb_impl *)vimpl;
    return g && i >= 0 && i < g->nlocal ? g->dom[i].nb : NULL;
}

static void gb_mark(void *vimpl, int i, int which)
{
    hx_gpu_guard gd;
    if (hx_gpu_enter(((gb_impl *)vimpl)->ctx, &gd) == HX_OK) {
        gb_mark_on(vimpl, i, which);
        hx_gpu_leave(&gd);
    }
}

/* positional: the order of hx_md_backend_ops (C++ has no designated initialisers here) */
extern "C" const hx_md_backend_ops hx_md_backend_gpu = {
    "gpu",          HX_MEM_DEVICE, HX_REAL_F32,         gb_create,       gb_destroy,
    gb_set_local,   gb_search,     gb_npairs,           gb_forces,       gb_halo_stream,
    gb_kinetic,     gb_update,     gb_energies,         gb_download,     gb_capture_begin,
    gb_capture_end, gb_replay,     gb_invalidate_graph, gb_mark,         gb_read_marks,
    gb_sync,        gb_describe,   gb_clock_reserve,    gb_clock,        gb_clock_elapsed,
    gb_dd_start,    gb_dd_search,  gb_dd_counts,        gb_dd_set_local, gb_dd_set_home};
