/* The "nvshmem" halo backend (how it works: src/halo/nvshmem/nvshmem_impl.h): set-up, update,
 * exchanges and shutdown. Its protocol kernels are src/halo/nvshmem/nvshmem_kernels.cu, its NVSHMEM
 * calls go through the transport src/comm/shmem.h, its configuration is agreed across ranks
 * (src/halo/nvshmem/nvshmem_config.h), and its test hooks live in src/halo/nvshmem/nvshmem_hooks.cu
 * (test variant only). Every op runs with the GPU context's device current (the front end enters
 * it). */
#include "halo/nvshmem/nvshmem_impl.h"
#include "comm/shmem.h"
#include "comm/comm_impl.h"
#include "core/wait.h"
#include "gpu/context.h"
#include "gpu/cuda_check.h"
#include "halo/halo_pack.cuh"
#include "halox/log.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The deadline record, as the host sees it: the first report stays the answer of every later
 * call (the exchange is unusable after it). */
static hx_status nv_check(nv_impl *m)
{
    if (!m->error[0] && m->err && m->err->flag) {
        const nv_error *e = m->err;
        snprintf(m->error, sizeof m->error,
                 "nvshmem halo: rank %d waited %g s for %s of pulse %d from rank %d (step %llu): "
                 "expected signal %llu, observed %llu",
                 e->rank, m->cfg.timeout,
                 e->kind == NV_WAIT_X     ? "the coordinates"
                 : e->kind == NV_WAIT_F   ? "the forces"
                 : e->kind == NV_WAIT_MSG ? "a search-step message (pulse: its channel)"
                                          : "its own accumulation of the forces",
                 e->pulse, e->peer, e->step, e->expected, e->observed);
    }
    HX_CHECK(!m->error[0], HX_ERR_NVSHMEM, "%s", m->error);
    return HX_OK;
}

static void nv_destroy(hx_halo *h)
{
    nv_impl *m = (nv_impl *)h->impl;
    if (!m) {
        (void)hx_comm_agree(h->comm, HX_OK); /* every PE takes part in destroy's agreement */
        return;
    }
    /* the front end made the context's device current. Bounded: the kernels' own deadline ends
     * them, but a stream may hold other work; a PE whose GPU has not finished frees nothing its
     * kernels may still touch, and the collective frees are agreed first, so that no PE waits
     * in NVSHMEM's barrier for one that will not come (the agreement itself is bounded) */
    hx_status st = HX_OK;
    if (m->place.ctx)
        st = hx_gpu_ctx_wait_idle(m->place.ctx, h->stream_ok, hx_wait_timeout_gpu(HX_WAIT_STEP),
                                  hx_comm_rank(h->comm), "the nvshmem exchanges (destroy)");
    const int idle = st == HX_OK;
    if (!idle)
        hx_log(HX_LOG_WARN, "nvshmem on rank %d: %s; its memory is left allocated",
               hx_comm_rank(h->comm), hx_last_error_message());
#if HX_NVSHMEM_HOOKS
    if (idle)
        hx_nv_hooks_destroy(h, m);
#endif
    if (hx_comm_agree(h->comm, st) == HX_OK) {
        /* collective frees, in the same order on every PE (every PE destroys its exchange) */
        hx_shmem_free(m->x);
        hx_shmem_free(m->f);
        hx_shmem_free(m->xstage);
        hx_shmem_free(m->fbuf);
        hx_shmem_free(m->sig);
        hx_shmem_free(m->msend);
        hx_shmem_free(m->mrecv);
        hx_shmem_free(m->msig);
    }
    if (idle) {
        cudaFree(m->mseq);
        cudaFree(m->dp);
        cudaFree(m->st);
        if (m->err)
            cudaFreeHost(m->err);
        hx_gpu_plan_free(&m->gp);
        hx_gpu_stage_free(&m->dp_stage);
    }
    free(m->moff);
    free(m->msend_ptr);
    free(m->mrecv_ptr);
    free(m);
    h->impl = NULL;
    h->x[0] = h->f[0] = NULL;
}

static hx_status nv_setup_local(hx_halo *h)
{
    nv_impl *m = (nv_impl *)h->impl;
    HX_CUDA(cudaMalloc((void **)&m->st, sizeof(nv_state)));
    HX_CUDA(cudaMemset(m->st, 0, sizeof(nv_state)));
    HX_CUDA(cudaMalloc((void **)&m->dp, HX_MAX_PULSES * sizeof(nv_pulse)));
    HX_CUDA(cudaHostAlloc((void **)&m->err, sizeof(nv_error),
                          cudaHostAllocMapped | cudaHostAllocPortable));
    memset((void *)m->err, 0, sizeof(nv_error));
    HX_CUDA(cudaHostGetDevicePointer((void **)&m->derr, m->err, 0));
#if HX_NVSHMEM_HOOKS
    HX_TRY(hx_nv_hooks_setup(h, m));
#else
    /* a production build has no test hooks: say so rather than ignore them silently */
    HX_CHECK(!m->cfg.stress_seed, HX_ERR_UNSUPPORTED,
             "nvshmem: the stress mode (hx_halo_config.stress_seed) is a test hook, compiled "
             "only into the test variant of the module (the test programs, halox-test)");
    if (hx_comm_rank(h->comm) == 0 && (m->cfg.trace[0] || m->cfg.wh_dir >= 0 || m->cfg.inject))
        hx_log(HX_LOG_WARN,
               "nvshmem: HALOX_NVSHMEM_TRACE, HALOX_TEST_WITHHOLD and HALOX_TEST_INJECT are test "
               "hooks, ignored by this production build (halox-test and the test programs have "
               "them)");
#endif
    return HX_OK;
}

/* Whether this rank's peers in every pulse, both directions, are on its GPU and reached P2P:
 * then GPU-scope ordering suffices between them. */
static int nv_all_peers_on_our_gpu(const hx_halo *h, const nv_impl *m)
{
    const hx_domain_plan *p = hx_plan_domain(h->plan, 0);
    static const unsigned char zero[16] = {0};
    if (!memcmp(hx_gpu_context_uuid(m->place.ctx), zero, 16))
        return 0; /* a GPU without a UUID matches nobody: system scope */
    for (int q = 0; q < p->npulses; q++) {
        if (!m->p2p_x[q] || !m->p2p_f[q] ||
            !hx_gpu_place_same_gpu(&m->place, p->pulses[q].send_pe) ||
            !hx_gpu_place_same_gpu(&m->place, p->pulses[q].recv_pe))
            return 0;
    }
    return 1;
}

/* Set-up: the configuration agreed, the placement, NVSHMEM started on the context's device,
 * the signal words; every collective step agreed before the next, so that no rank enters
 * NVSHMEM's collective initialisation alone. */
static hx_status nv_setup(hx_halo *h)
{
    nv_impl *m = (nv_impl *)calloc(1, sizeof *m);
    hx_status st =
        m ? HX_OK : hx_error_set(HX_ERR_NOMEM, __FILE__, __LINE__, __func__, "out of memory");
    h->impl = m;
    HX_TRY(hx_comm_agree(h->comm, st));
    /* the stages' bounded waits name the rank */
    m->gp.stage.rank = m->dp_stage.rank = hx_comm_rank(h->comm);
    HX_TRY(hx_nv_config_agree(h->comm, &h->cfg, &m->cfg));
    st = hx_gpu_halo_place(h, 1, m->cfg.allow_no_mps, &m->place);
    if (st == HX_OK) {
        /* programmatic dependent launch on sm_90 and later, by every rank or none */
        int major = 0;
        HX_CUDA_GOTO(
            st, cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, m->place.device),
            placed);
        m->pdl = m->cfg.pdl && major >= 9;
    }
placed:;
    long long no_pdl = m->pdl ? 0 : 1, any_no_pdl = 1;
    HX_TRY(hx_comm_max_i64(h->comm, &no_pdl, &any_no_pdl, 1));
    m->pdl = any_no_pdl == 0;
    HX_TRY(hx_comm_agree(h->comm, st));
    HX_TRY(hx_comm_agree(
        h->comm, hx_shmem_init(h->comm, m->place.device, hx_gpu_context_uuid(m->place.ctx))));
    m->npulses = hx_plan_domain(h->plan, 0)->npulses;
    HX_CHECK(m->npulses <= HX_MAX_PULSES, HX_ERR_INTERNAL, "%d pulses", m->npulses);
    m->sig = (uint64_t *)hx_shmem_calloc(2 * HX_MAX_PULSES, sizeof(uint64_t)); /* collective */
    st = m->sig ? HX_OK
                : hx_error_set(HX_ERR_NVSHMEM, __FILE__, __LINE__, __func__,
                               "nvshmem_calloc of the signal words failed: raise "
                               "NVSHMEM_SYMMETRIC_SIZE");
    if (st == HX_OK)
        st = nv_setup_local(h);
    return hx_comm_agree(h->comm, st);
}

/* Symmetric (re)allocation: collective, the same sizes on every PE (capacities are global). */
static hx_status nv_malloc(size_t bytes, const char *what, float **out)
{
    *out = (float *)hx_shmem_malloc(bytes < 64 ? 64 : bytes);
    if (!*out) {
        const char *cur = getenv("NVSHMEM_SYMMETRIC_SIZE");
        HX_FAIL(HX_ERR_NVSHMEM,
                "nvshmem_malloc of %zu bytes (%s) failed: the symmetric heap is full; raise "
                "NVSHMEM_SYMMETRIC_SIZE (now %s) in the environment of every process",
                bytes, what, cur ? cur : "the default, 1 GiB");
    }
    return HX_OK;
}

static hx_status nv_regrow(hx_halo *h, int grow_local, int grow_buf)
{
    nv_impl *m = (nv_impl *)h->impl;
    const hx_domain_plan *p = hx_plan_domain(h->plan, 0);
    hx_status st = HX_OK;
    if (grow_local) {
        float *x = NULL, *f = NULL;
        const size_t bytes = 12 * (size_t)p->cap_local, keep = 12 * (size_t)m->cap_local;
        hx_status s1 = nv_malloc(bytes, "coordinates", &x);
        hx_status s2 = nv_malloc(bytes, "forces", &f);
        st = s1 != HX_OK ? s1 : s2;
        if (st == HX_OK && m->x) {
            /* contents survive a regrow, as with the other backends */
            HX_CUDA_GOTO(st, cudaMemcpy(x, m->x, keep, cudaMemcpyDeviceToDevice), done);
            HX_CUDA_GOTO(st, cudaMemcpy(f, m->f, keep, cudaMemcpyDeviceToDevice), done);
        }
    done:
        hx_shmem_free(m->x);
        hx_shmem_free(m->f);
        m->x = x;
        m->f = f;
        m->cap_local = p->cap_local;
    }
    if (grow_buf) {
        hx_shmem_free(m->xstage);
        hx_shmem_free(m->fbuf);
        m->xstage = m->fbuf = NULL;
        hx_status s1 = nv_malloc(12 * (size_t)p->cap_buf, "coordinate staging", &m->xstage);
        hx_status s2 = nv_malloc(12 * (size_t)p->cap_buf, "force slots", &m->fbuf);
        if (st == HX_OK)
            st = s1 != HX_OK ? s1 : s2;
        m->cap_buf = p->cap_buf;
    }
    h->x[0] = m->x;
    h->f[0] = m->f;
    return st;
}

/* Paths, launch sizes and the kernel argument (local). Blocks of one PE's kernel may wait for
 * each other (force pulses wait for later pulses' accumulation) and for other PEs' kernels, so
 * every block of every PE sharing the GPU must be able to be resident at once: each PE keeps
 * its grids within its share of the GPU (chunk size doubled until they fit). The pulse table
 * goes to the device on s, as nv_refresh's (NULL: synchronously). */
static hx_status nv_configure(hx_halo *h, hx_stream s)
{
    nv_impl *m = (nv_impl *)h->impl;
    const hx_domain_plan *p = hx_plan_domain(h->plan, 0);
    const int rank = hx_comm_rank(h->comm);
    m->smem_x = h->cfg.bulk_copy ? HX_HALO_BULK_SMEM : 0;
    if (!m->occ_x || m->occ_smem != m->smem_x) {
        /* asked once: it does not change between search steps */
        HX_TRY(hx_nv_occupancy(m->smem_x, &m->occ_x, &m->occ_f));
        m->occ_smem = m->smem_x;
    }
    const int per_sm_x = m->occ_x, per_sm_f = m->occ_f;
    const int per_sm = per_sm_x < per_sm_f ? per_sm_x : per_sm_f;
    m->capacity =
        per_sm * m->place.sm_count / (m->place.pes_per_gpu > 0 ? m->place.pes_per_gpu : 1);
    int np2p = 0;
    for (int q = 0; q < p->npulses; q++) {
        const hx_pulse *P = &p->pulses[q];
        nv_pulse *N = &m->hp[q];
        memset(N, 0, sizeof *N);
        N->map = m->gp.view.index_map + P->map_offset;
        N->sx = (float)P->shift[0]; /* as hx_plan_image_build's shift_f32 */
        N->sy = (float)P->shift[1];
        N->sz = (float)P->shift[2];
        N->n = P->send_count;
        N->d = P->dep_offset;
        N->r = P->recv_count;
        N->send_pe = P->send_pe;
        N->recv_pe = P->recv_pe;
        N->atom_offset = P->atom_offset;
        N->buf_offset = P->buf_offset;
        N->peer_atom_offset = P->peer_atom_offset;
        N->deps = P->deps;
        N->rdeps = P->rdeps;
        float *rx = (float *)hx_shmem_ptr(m->x, P->send_pe);
        uint64_t *rxs = (uint64_t *)hx_shmem_ptr(m->sig + q, P->send_pe);
        float *rf = (float *)hx_shmem_ptr(m->fbuf, P->recv_pe);
        uint64_t *rfs = (uint64_t *)hx_shmem_ptr(m->sig + HX_MAX_PULSES + q, P->recv_pe);
        const int can_x = rx && rxs, can_f = rf && rfs;
        HX_CHECK(h->cfg.path != HX_HALO_PATH_P2P || (can_x && can_f), HX_ERR_UNSUPPORTED,
                 "nvshmem: the P2P path is forced but rank %d cannot address the memory of "
                 "rank %d (pulse %d): nvshmem_ptr gave NULL; use the automatic or network path",
                 rank, can_x ? P->recv_pe : P->send_pe, q);
        m->p2p_x[q] = h->cfg.path != HX_HALO_PATH_NETWORK && can_x;
        m->p2p_f[q] = h->cfg.path != HX_HALO_PATH_NETWORK && can_f;
        if (m->p2p_x[q]) {
            N->x_dst = rx + 3 * (size_t)P->peer_atom_offset;
            N->xsig_dst = rxs;
        }
        if (m->p2p_f[q]) {
            N->f_dst = rf + 3 * (size_t)P->buf_offset;
            N->fsig_dst = rfs;
        }
        np2p += m->p2p_x[q] + m->p2p_f[q];
    }
    /* entries per block: the smallest that fits, from HX_HALO_ROUND up, or the configured
     * chunk (HALOX_NVSHMEM_CHUNK, a multiple of HX_HALO_ROUND: fewer, longer blocks per pulse) */
    int chunk = m->cfg.chunk > 0 ? m->cfg.chunk : HX_HALO_ROUND;
    for (;;) {
        int tx = 0, tf = 0, mx = 1, mf = 1;
        for (int q = 0; q < p->npulses; q++) {
            const hx_pulse *P = &p->pulses[q];
            nv_pulse *N = &m->hp[q];
            const int nd = P->dep_offset, ni = P->send_count - P->dep_offset;
            N->nb_x = 1;
            N->nb_x = (nd + chunk - 1) / chunk > N->nb_x ? (nd + chunk - 1) / chunk : N->nb_x;
            N->nb_x = (ni + chunk - 1) / chunk > N->nb_x ? (ni + chunk - 1) / chunk : N->nb_x;
            N->nb_fa =
                m->p2p_f[q] && P->recv_count > chunk ? (P->recv_count + chunk - 1) / chunk : 1;
            N->nb_fb = P->send_count > chunk ? (P->send_count + chunk - 1) / chunk : 1;
            tx += N->nb_x;
            tf += N->nb_fa + N->nb_fb;
            mx = N->nb_x > mx ? N->nb_x : mx;
            mf = N->nb_fa + N->nb_fb > mf ? N->nb_fa + N->nb_fb : mf;
        }
        /* with programmatic launch a kernel's blocks start while the previous kernel's still
         * run: both grids must fit at once */
        const int fits = m->pdl ? tx + tf <= m->capacity : tx <= m->capacity && tf <= m->capacity;
        if (fits || chunk >= (1 << 28)) {
            HX_CHECK(fits, HX_ERR_UNSUPPORTED,
                     "nvshmem: %d pulses need %d blocks resident at once, but %d processes "
                     "share this GPU and leave this one %d: use fewer processes per GPU",
                     p->npulses, tf, m->place.pes_per_gpu, m->capacity);
            HX_CHECK((unsigned long long)(mx > mf ? mx : mf) < NV_SIG_UNIT, HX_ERR_INTERNAL,
                     "nvshmem: %d blocks in one pulse: at most %llu", mx > mf ? mx : mf,
                     NV_SIG_UNIT - 1);
            m->grid_x = dim3((unsigned)mx, (unsigned)p->npulses, 1);
            m->grid_f = dim3((unsigned)mf, (unsigned)p->npulses, 1);
            break;
        }
        chunk *= 2;
    }
    if (s)
        HX_TRY(hx_gpu_stage_copy(&m->dp_stage, m->dp, m->hp, HX_MAX_PULSES * sizeof(nv_pulse), s));
    else
        HX_CUDA(cudaMemcpy(m->dp, m->hp, HX_MAX_PULSES * sizeof(nv_pulse), cudaMemcpyHostToDevice));
    nv_args *A = &m->args;
    A->x = m->x;
    A->f = m->f;
    A->xstage = m->xstage;
    A->fbuf = m->fbuf;
    A->xsig = m->sig;
    A->fsig = m->sig + HX_MAX_PULSES;
    A->pulses = m->dp;
    A->st = m->st;
    A->err = m->derr;
    A->rank = rank;
    A->npulses = p->npulses;
    A->chunk = chunk;
    A->bulk = h->cfg.bulk_copy != 0;
    A->timeout_ns = (unsigned long long)(m->cfg.timeout * 1e9);
    A->backoff_ns = (unsigned)m->cfg.backoff_ns;
    /* GPU-scope ordering only when every peer of every pulse and direction runs on our GPU (by
     * UUID): a peer on another GPU (across NVLink) needs system scope */
    m->sys = m->cfg.scope_sys || !nv_all_peers_on_our_gpu(h, m);
    A->fence_mode = m->cfg.fence_mode;
    A->sys = m->sys;
#if HX_NVSHMEM_HOOKS
    hx_nv_hooks_args(h, m);
#endif

    char *d = h->describe;
    const size_t dn = sizeof h->describe;
    int len = snprintf(
        d, dn,
        "nvshmem %s (MPI bootstrap), PE %d of %d on GPU %d (%s, %d PE%s%s); "
        "%d of %d pulse directions P2P%s, rest network put-with-signal; %d atoms "
        "per block; deadline %s; wait backoff %s%d ns; publish by %s at %s scope; "
        "programmatic launch %s",
        hx_shmem_version(), rank, hx_shmem_n_pes(), m->place.device, m->place.gpu,
        m->place.pes_per_gpu, m->place.pes_per_gpu > 1 ? "s" : "", m->place.mps ? ", MPS" : "",
        np2p, 2 * p->npulses, h->cfg.bulk_copy ? " (bulk-copy engine)" : "", chunk,
        m->cfg.timeout > 0 ? "on" : "off", m->cfg.backoff_ns ? "up to " : "", m->cfg.backoff_ns,
        m->cfg.fence_mode == HX_NV_FENCE_RELEASE ? "release atomic"
        : m->cfg.fence_mode == HX_NV_FENCE_BLOCK ? "fence per block"
                                                 : "fence per thread",
        m->sys ? "system" : "GPU", m->pdl ? "on" : "off");
    if (len > 0 && (size_t)len < dn && h->cfg.stress_seed)
        snprintf(d + len, dn - (size_t)len, "; stress seed %llu", h->cfg.stress_seed);
    for (int q = 0; q < p->npulses; q++)
        hx_log(HX_LOG_DEBUG,
               "nvshmem rank %d pulse %d: coordinates to rank %d %s (%d blocks), forces to rank "
               "%d %s (%d + %d blocks)",
               rank, q, p->pulses[q].send_pe, m->p2p_x[q] ? "P2P" : "network", m->hp[q].nb_x,
               p->pulses[q].recv_pe, m->p2p_f[q] ? "P2P" : "network", m->hp[q].nb_fa,
               m->hp[q].nb_fb);
    return HX_OK;
}

static hx_status nv_update_prepare(hx_halo *h, int *grow_local, int *grow_buf)
{
    nv_impl *m = (nv_impl *)h->impl;
    const hx_domain_plan *p = hx_plan_domain(h->plan, 0);
    /* no exchange of the previous plan is in flight (bounded: the kernels' deadline ends a lost
     * signal's wait; this bounds the rest) */
    HX_TRY(hx_gpu_ctx_wait_idle(m->place.ctx, h->stream_ok, 0.75 * hx_comm_wait_limit(h->comm, 0),
                                hx_comm_rank(h->comm), "the nvshmem exchanges before an update"));
    HX_TRY(nv_check(m));
    HX_TRY(hx_gpu_plan_upload(&m->gp, h->plan, 0, NULL));
    *grow_local = p->cap_local > m->cap_local;
    *grow_buf = p->cap_buf > m->cap_buf;
    if (m->phase == 1) {
        /* coordinates were exchanged without forces (every PE did the same): that step is
         * done for the coordinate signals, and one step without forces for the force signals,
         * which count force exchanges */
        uint64_t c[2] = {0, 0}; /* step, f_skip: adjacent in nv_state */
        HX_CUDA(cudaMemcpy(c, &m->st->step, sizeof c, cudaMemcpyDeviceToHost));
        c[0]++;
        c[1]++;
        HX_CUDA(cudaMemcpy(&m->st->step, c, sizeof c, cudaMemcpyHostToDevice));
        m->phase = 0;
    }
    return HX_OK;
}

static hx_status nv_update(hx_halo *h)
{
    int grow_local = 0, grow_buf = 0;
    HX_TRY(hx_comm_agree(h->comm, nv_update_prepare(h, &grow_local, &grow_buf)));
    /* capacities are global: every PE makes the same collective allocations */
    HX_TRY(hx_comm_agree(h->comm, nv_regrow(h, grow_local, grow_buf)));
    return nv_configure(h, NULL);
}

static hx_status nv_exchange_x(hx_halo *h, hx_stream s)
{
    nv_impl *m = (nv_impl *)h->impl;
    HX_TRY(nv_check(m));
    HX_CHECK(m->phase == 0, HX_ERR_INVALID_ARG,
             "nvshmem: exchange_x called twice without exchange_f in between: coordinate and "
             "force exchanges must alternate (that order is what keeps a peer from overwriting "
             "halo coordinates still being read)");
    m->phase = 1;
    if (m->npulses == 0)
        return HX_OK;
#if HX_NVSHMEM_HOOKS
    HX_TRY(hx_nv_hooks_before_launch(m, s));
#endif
    HX_TRY(hx_nv_launch(m, 0, s));
    const hx_domain_plan *p = m->gp.host;
    for (int q = 0; q < p->npulses; q++)
        h->stats.bytes_sent += 12 * (long long)p->pulses[q].send_count;
    return HX_OK;
}

static hx_status nv_exchange_f(hx_halo *h, hx_stream s)
{
    nv_impl *m = (nv_impl *)h->impl;
    HX_TRY(nv_check(m));
    HX_CHECK(m->phase == 1, HX_ERR_INVALID_ARG,
             "nvshmem: exchange_f called without exchange_x before it: coordinate and force "
             "exchanges must alternate");
    m->phase = 0;
    if (m->npulses == 0)
        return HX_OK;
#if HX_NVSHMEM_HOOKS
    HX_TRY(hx_nv_hooks_before_launch(m, s));
#endif
    HX_TRY(hx_nv_launch(m, 1, s));
    const hx_domain_plan *p = m->gp.host;
    for (int q = 0; q < p->npulses; q++)
        h->stats.bytes_sent += 12 * (long long)p->pulses[q].recv_count;
    return HX_OK;
}

/* Adopt a plan rebuilt from the device search step's counts, capacities unchanged: the plan
 * image (header and pulse fields; the maps are the search step's), the pulse table and the
 * launch sizes. No collective, no allocation. With a stream s the uploads are enqueued there and
 * nothing waits for the device (the front end's contract: no exchange of the old plan runs on
 * another stream); without one, or between a coordinate and a force exchange, as an update. */
static hx_status nv_refresh(hx_halo *h, hx_stream s)
{
    nv_impl *m = (nv_impl *)h->impl;
    const hx_domain_plan *p = hx_plan_domain(h->plan, 0);
    HX_CHECK(p->cap_local <= m->cap_local && p->cap_buf <= m->cap_buf, HX_ERR_INTERNAL,
             "nvshmem: refresh of a plan whose capacities grew (an update is needed)");
    if (s && m->phase == 0) {
        HX_TRY(nv_check(m));
        HX_TRY(hx_gpu_plan_upload(&m->gp, h->plan, 0, s));
        return nv_configure(h, s);
    }
    int grow_local = 0, grow_buf = 0;
    HX_TRY(nv_update_prepare(h, &grow_local, &grow_buf));
    return nv_configure(h, NULL);
}

/* Collective (every PE, the same capacities): the channels' symmetric buffers and signals. Runs
 * at the device search step's start and on its slow path only (a growth every PE agreed on). */
static hx_status nv_msg_setup(hx_halo *h, int nchan, const size_t *cap, void ***send, void ***recv)
{
    nv_impl *m = (nv_impl *)h->impl;
    /* no message of the old channels in flight (bounded, as before an update); every PE takes
     * the same collective steps whatever fails locally */
    const double limit = 0.75 * hx_comm_wait_limit(h->comm, 0);
    const int rank = hx_comm_rank(h->comm);
    hx_status st0 = hx_gpu_ctx_wait_idle(m->place.ctx, h->stream_ok, limit, rank,
                                         "the nvshmem exchanges before the message set-up");
    if (st0 == HX_OK)
        st0 = nv_check(m);
    HX_TRY(hx_comm_agree(h->comm, st0));
    /* free in the same order on every PE */
    hx_shmem_free(m->msend);
    hx_shmem_free(m->mrecv);
    hx_shmem_free(m->msig);
    m->msend = m->mrecv = NULL;
    m->msig = NULL;
    cudaFree(m->mseq);
    m->mseq = NULL;
    free(m->moff);
    free(m->msend_ptr);
    free(m->mrecv_ptr);
    m->moff = (size_t *)calloc((size_t)nchan + 1, sizeof *m->moff);
    m->msend_ptr = (void **)calloc((size_t)nchan + 1, sizeof(void *));
    m->mrecv_ptr = (void **)calloc((size_t)nchan + 1, sizeof(void *));
    hx_status st = m->moff && m->msend_ptr && m->mrecv_ptr
                       ? HX_OK
                       : hx_error_set(HX_ERR_NOMEM, __FILE__, __LINE__, __func__, "out of memory");
    HX_TRY(hx_comm_agree(h->comm, st));
    for (int c = 0; c < nchan; c++)
        m->moff[c + 1] = m->moff[c] + ((cap[c] + 255) & ~(size_t)255);
    m->nchan = nchan;
    const size_t total = m->moff[nchan] > 0 ? m->moff[nchan] : 256;
    /* every PE makes the three allocations, whatever failed before, in the same order */
    float *ms = NULL, *mr = NULL;
    hx_status s1 = nv_malloc(total, "search-step messages sent", &ms);
    hx_status s2 = nv_malloc(total, "search-step messages received", &mr);
    m->msend = (char *)ms;
    m->mrecv = (char *)mr;
    m->msig = (uint64_t *)hx_shmem_malloc(sizeof(uint64_t) * ((size_t)nchan + 1));
    st = s1 != HX_OK ? s1 : s2;
    if (st == HX_OK && !m->msig)
        st = hx_error_set(HX_ERR_NVSHMEM, __FILE__, __LINE__, __func__,
                          "nvshmem_malloc of the search step's signal words failed: raise "
                          "NVSHMEM_SYMMETRIC_SIZE");
    if (st == HX_OK && cudaMalloc((void **)&m->mseq,
                                  sizeof(unsigned long long) * ((size_t)nchan + 1)) != cudaSuccess)
        st = hx_error_set(HX_ERR_CUDA, __FILE__, __LINE__, __func__, "cudaMalloc failed");
    if (st == HX_OK &&
        (cudaMemset(m->msig, 0, sizeof(uint64_t) * ((size_t)nchan + 1)) != cudaSuccess ||
         cudaMemset(m->mseq, 0, sizeof(unsigned long long) * ((size_t)nchan + 1)) != cudaSuccess ||
         cudaMemset(m->mrecv, 0, total) != cudaSuccess ||
         cudaMemset(m->msend, 0, total) != cudaSuccess))
        st = hx_error_set(HX_ERR_CUDA, __FILE__, __LINE__, __func__, "cudaMemset failed");
    if (st == HX_OK) /* the memsets (default stream) are done */
        st = hx_gpu_stream_wait(NULL, limit, rank, "zeroing the search-step message signals");
    /* every PE's signals are zero before anyone sends */
    HX_TRY(hx_comm_agree(h->comm, st));
    for (int c = 0; c < nchan; c++) {
        m->msend_ptr[c] = m->msend + m->moff[c];
        m->mrecv_ptr[c] = m->mrecv + m->moff[c];
    }
    send[0] = m->msend_ptr;
    recv[0] = m->mrecv_ptr;
    return HX_OK;
}

/* Enqueue one message (nv_msg in nvshmem_impl.h): no host wait, capturable. */
static hx_status nv_msg_send(hx_halo *h, int chan, const int *dest, const int *src, hx_stream s)
{
    nv_impl *m = (nv_impl *)h->impl;
    HX_TRY(nv_check(m));
    HX_CHECK(chan >= 0 && chan < m->nchan, HX_ERR_INVALID_ARG, "nvshmem: message channel %d of %d",
             chan, m->nchan);
    const int dpe = hx_comm_rank_of_domain(h->comm, dest[0]);
    nv_msg M;
    memset(&M, 0, sizeof M);
    M.src = (const int4 *)m->msend_ptr[chan];
    M.cap = (long long)(m->moff[chan + 1] - m->moff[chan]);
    M.dst_sym = (char *)m->mrecv_ptr[chan];
    M.sig_sym = m->msig + chan;
    M.my_sig = m->msig + chan;
    M.seq = m->mseq + chan;
    M.dest_pe = dpe;
    M.src_pe = hx_comm_rank_of_domain(h->comm, src[0]);
    M.chan = chan;
    if (h->cfg.path != HX_HALO_PATH_NETWORK) {
        M.dst_p2p = (int4 *)hx_shmem_ptr(m->mrecv_ptr[chan], dpe);
        M.sig_p2p = (uint64_t *)hx_shmem_ptr(m->msig + chan, dpe);
        if (!M.sig_p2p)
            M.dst_p2p = NULL;
    }
    const long long words = M.cap / 16;
    int nb = (int)((words + HX_HALO_THREADS - 1) / HX_HALO_THREADS);
    nb = nb < 1 ? 1 : (nb > 16 ? 16 : nb);
    if (!M.dst_p2p)
        nb = 1;
    return hx_nv_msg_launch(m, &M, nb, s);
}

extern "C" const hx_halo_ops hx_halo_ops_nvshmem = {
    /* capturable: the exchanges only enqueue the two fused kernels; device: on the context's;
     * messages of the device search step on the device only (msg_device 1) */
    "nvshmem",
    1,
    1,
    nv_setup,
    nv_update,
    nv_exchange_x,
    nv_exchange_f,
    NULL,
    nv_destroy,
    nv_refresh,
    nv_msg_setup,
    nv_msg_send,
    1};
