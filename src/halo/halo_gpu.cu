/* The CPU-driven GPU halo backends, what GROMACS did before GPU-initiated communication and
 * what the paper measures against:
 *
 *   gpu-mpi     per pulse: pack kernel -> the CPU waits for the stream -> MPI moves the packed
 *               atoms (through pinned host buffers; device pointers when the MPI library is
 *               CUDA-aware, which a self-test confirms) -> coordinates land contiguously at the
 *               pulse's atom offset, forces go through an unpack kernel.
 *   gpu-direct  per pulse: pack kernel -> cudaMemcpyAsync straight into the peer's array (CUDA
 *               IPC handles exchanged at every update that reallocates) -> the CPU waits for the
 *               copy -> a small "done" token over MPI tells the receiver its data is there.
 *               This is what a CUDA-aware MPI does inside a node, without the MPI library.
 *
 * Also here, shared with the NVSHMEM backend (src/halo/nvshmem/): the device plan upload, the
 * placement read from the GPU context (with the MPS check), and the one-pulse kernels.
 *
 * Every op runs with the GPU context's device current (the front end, src/halo/halo.c, enters it
 * and restores the caller's): nothing here chooses or switches a device. Across two GPUs the
 * peers' memory is another device's: CUDA IPC maps it with peer access enabled (checked at set-up
 * for every peer on another GPU, with a message when the two GPUs cannot reach each other).
 *
 * Why no "ready" handshake before writing into a peer (gpu-direct): exchanges alternate x, f,
 * x, f (enforced). A peer reads its halo coordinates only between its exchange_x and its
 * exchange_f, and before sending us forces in pulse q it waits for its stream, so every read is
 * over before its forces of step s reach us; our coordinates of step s+1 are written after we
 * received them. The same argument covers our force slots: a peer writes them in its exchange_f
 * of step s+1, after it received our coordinates of step s+1, which we send after our stream
 * finished the unpack of step s. docs/design/gpu-halo.md has the full argument.
 *
 * No rank left waiting: an exchange never returns mid-pulse. A rank whose pulse fails locally
 * (a CUDA call, a stream that passes the step deadline) still takes part in every remaining
 * message of the exchange, with a failure marker in place of its data (src/comm/mpi.c), and
 * skips its own CUDA work from there on; a neighbour that receives a marker does the same. So
 * every rank of the exchange returns, the failing one with its error, its neighbours with
 * HX_ERR_REMOTE naming it; the engine agrees on it at its next collective. Host waits for the
 * GPU poll the stream with the step deadline (hx_gpu_stream_wait); a stream that passed it makes
 * the backend "stuck": every later call fails at once (in-band again) and destroy leaves the
 * device memory that a stuck stream may still use. */
#include "gpu/cuda_check.h" /* first: the CUDA runtime, or its CPU emulation */
#include "gpu/gpu_util.cuh"
#include "halo/halo_gpu.h"
#include "halo/halo_pack.cuh"
#include "comm/comm_impl.h"
#include "core/fault.h"
#include "core/wait.h"
#include "gpu/context.h"
#include "halox/gpu.h"
#include "halox/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the device plan ---------------------------------------------------------------------- */

extern "C" hx_status hx_gpu_plan_upload(hx_gpu_plan *gp, const hx_plan *plan, int local,
                                        hx_stream stream)
{
    /* src/halo/halo_local.cu: a copy of our own, or the device search step's image */
    return hx_gpu_plan_adopt(gp, plan, local, stream);
}

/* ---- placement ---------------------------------------------------------------------------- */

extern "C" hx_status hx_gpu_halo_place(hx_halo *h, int need_mps, int allow_no_mps, hx_gpu_place *pl)
{
    memset(pl, 0, sizeof *pl);
    /* Checks on arguments that are the same on every rank: all ranks fail here together. */
    HX_CHECK(h->nlocal == 1, HX_ERR_UNSUPPORTED,
             "halo backend '%s' holds one domain per process, this process has %d: run one MPI "
             "rank per domain (the serial communicator is for the host backend)",
             h->cfg.backend, h->nlocal);
    HX_CHECK(h->cfg.mem == HX_MEM_DEVICE, HX_ERR_UNSUPPORTED,
             "halo backend '%s' works on device memory: set cfg.mem = HX_MEM_DEVICE",
             h->cfg.backend);
    HX_CHECK(h->cfg.real == HX_REAL_F32, HX_ERR_UNSUPPORTED,
             "halo backend '%s' exchanges float (single precision) only: set cfg.real = "
             "HX_REAL_F32",
             h->cfg.backend);
    const hx_gpu_context *c = h->cfg.gpu; /* checked by the front end */
    pl->ctx = c;
    pl->alone = hx_comm_nranks(h->comm) == 1;
    pl->device = c->device;
    /* who shares our GPU is known from every rank's UUID, not from counting ranks and devices:
     * with CUDA_VISIBLE_DEVICES set per rank every process sees its GPU as device 0 */
    pl->pes_per_gpu = c->ranks_on_gpu;
    pl->mps = hx_gpu_mps_pipe_found(); /* now: a daemon may have started or stopped since */
    pl->sm_count = c->sm_count;
    snprintf(pl->gpu, sizeof pl->gpu, "%s", c->name);
    if (need_mps && pl->pes_per_gpu > 1 && !pl->mps) {
        HX_CHECK(allow_no_mps, HX_ERR_UNSUPPORTED,
                 "halo backend '%s': %d processes share GPU %d (%s) and no MPS daemon was found "
                 "(no control pipe in %s): without MPS their kernels time-slice and every "
                 "signal wait costs a time slice. Start MPS (nvidia-cuda-mps-control -d, see "
                 "docs/design/gpu-halo.md) or set HALOX_ALLOW_NO_MPS=1 to run anyway",
                 h->cfg.backend, pl->pes_per_gpu, pl->device, pl->gpu,
                 getenv("CUDA_MPS_PIPE_DIRECTORY") ? getenv("CUDA_MPS_PIPE_DIRECTORY")
                                                   : "/tmp/nvidia-mps");
        hx_log(HX_LOG_WARN, "%s: %d processes share GPU %d without MPS (HALOX_ALLOW_NO_MPS=1)",
               h->cfg.backend, pl->pes_per_gpu, pl->device);
    }
    return HX_OK;
}

extern "C" int hx_gpu_place_same_gpu(const hx_gpu_place *pl, int rank)
{
    return pl->alone || hx_gpu_context_same_gpu(pl->ctx, rank);
}

/* ---- one-pulse kernels -------------------------------------------------------------------- */

/* Block b packs entries [1024 b, 1024 (b+1)) of the pulse; counts come from the device plan. */
__global__ void __launch_bounds__(HX_HALO_THREADS)
    hx_pack_x_kernel(hx_plan_view v, int p, const float *x, float *out, int bulk)
{
    HX_DYN_SMEM(hx_smem_bytes);
    float *hx_smem = (float *)hx_smem_bytes;
    const int n = v.send_count[p];
    const int e0 = (int)blockIdx.x * HX_HALO_ROUND;
    const int e1 = min(n, e0 + HX_HALO_ROUND);
    int parity = 0;
    hx_block_pack_x(v.index_map + v.map_offset[p], v.shift_f32[3 * p + 0], v.shift_f32[3 * p + 1],
                    v.shift_f32[3 * p + 2], x, out, e0, e1, bulk ? hx_smem : NULL, &parity, NULL);
    if (bulk && (threadIdx.x & 31) == 0)
        hx_bulk_complete(); /* shared memory must outlive the copies that read it */
}

__global__ void __launch_bounds__(HX_HALO_THREADS)
    hx_unpack_f_kernel(hx_plan_view v, int p, const float *buf, float *f, int atomic)
{
    const int n = v.send_count[p];
    const int e0 = (int)blockIdx.x * HX_HALO_ROUND;
    hx_block_unpack_f(v.index_map + v.map_offset[p], buf, f, e0, min(n, e0 + HX_HALO_ROUND),
                      atomic != 0, NULL);
}

extern "C" hx_status hx_gpu_pack_x(const hx_gpu_plan *gp, int pulse, const float *x, float *out,
                                   int bulk, hx_stream stream)
{
    const int n = gp->host->pulses[pulse].send_count;
    if (n == 0)
        return HX_OK;
    const unsigned nb = (unsigned)((n + HX_HALO_ROUND - 1) / HX_HALO_ROUND);
    HX_LAUNCH(hx_pack_x_kernel, dim3(nb), dim3(HX_HALO_THREADS),
              (size_t)(bulk ? HX_HALO_BULK_SMEM : 0), stream, gp->view, pulse, x, out, bulk);
    HX_CUDA_LAUNCH("hx_pack_x_kernel");
    return HX_OK;
}

extern "C" hx_status hx_gpu_unpack_f(const hx_gpu_plan *gp, int pulse, const float *buf, float *f,
                                     int atomic, hx_stream stream)
{
    const int n = gp->host->pulses[pulse].send_count;
    if (n == 0)
        return HX_OK;
    const unsigned nb = (unsigned)((n + HX_HALO_ROUND - 1) / HX_HALO_ROUND);
    HX_LAUNCH(hx_unpack_f_kernel, dim3(nb), dim3(HX_HALO_THREADS), (size_t)0, stream, gp->view,
              pulse, buf, f, atomic);
    HX_CUDA_LAUNCH("hx_unpack_f_kernel");
    return HX_OK;
}

/* ---- the CPU-driven backends -------------------------------------------------------------- */

typedef struct base_impl {
    int direct;     /* gpu-direct (CUDA IPC); 0: gpu-mpi */
    int cuda_aware; /* gpu-mpi: MPI is given device pointers */
    hx_gpu_place place;
    hx_gpu_plan gp;
    int cap_local; /* atoms of x and f */
    int cap_msg;   /* atoms of the largest message of one pulse (the largest cap_pulse) */
    int cap_buf;   /* gpu-direct: atoms of the force slots of all pulses */
    float *x, *f;  /* device [cap_local][3] */
    float *dsend;  /* device [cap_msg][3]: one pulse's packed coordinates */
    /* gpu-mpi: device [cap_msg][3], one pulse's received forces; gpu-direct: [cap_buf][3], the
     * force slot of every pulse (buf_offset), written by the peers */
    float *drecv;
    float *hsend, *hrecv; /* gpu-mpi staged: pinned host [cap_msg][3] */
    int npulses;
    void **peer_x;     /* gpu-direct, per pulse: send_pe's x (we write our coordinates there) */
    void **peer_f;     /* gpu-direct, per pulse: recv_pe's force slots (we write forces there) */
    int ipc_exchanged; /* handles exchanged: the same on every rank (a collective step) */
    int phase;         /* 1 after exchange_x until exchange_f */
    long long nexch;   /* exchanges so far: the handshake tokens carry it */
    /* messages of the device search step: per channel a send and a receive buffer (device, one
     * region each); gpu-mpi stages them through pinned host memory, gpu-direct copies into the
     * neighbours' receive regions, mapped over CUDA IPC */
    int nchan;
    size_t *moff;
    char *msend, *mrecv;
    char *hmsend, *hmrecv; /* gpu-mpi: pinned, the largest channel */
    size_t mmax;
    void **msend_ptr, **mrecv_ptr;
    int nnb; /* gpu-direct: neighbours (domains) and their mapped receive regions */
    int nb_dom[6];
    char *nb_recv[6];
    long long nmsg; /* messages so far: the tokens carry it */
    int msg_ipc;    /* gpu-direct: the message regions' handles were exchanged (every rank) */
    int stuck;      /* a stream passed the deadline: it may still use our memory */
    char stuck_msg[512];
} base_impl;

/* The host's wait for one pulse's stream work, bounded by the step deadline; past it the
 * backend is stuck. */
static hx_status pulse_wait(hx_halo *h, hx_stream s, int q, const char *what)
{
    base_impl *m = (base_impl *)h->impl;
    /* the report names the engine's step, or else the exchange (formatted only then) */
    const hx_comm *c = h->comm;
    hx_status st = hx_gpu_stream_wait(
        s, hx_wait_timeout_gpu(HX_WAIT_STEP), hx_comm_rank(c), "%s of pulse %d (%s, %s %lld)", what,
        q, h->cfg.backend, c->has_step ? "step" : "exchange", c->has_step ? c->step : m->nexch);
    if (st == HX_ERR_TIMEOUT && !m->stuck) {
        m->stuck = 1;
        snprintf(m->stuck_msg, sizeof m->stuck_msg, "%s", hx_last_error_message());
    }
    return st;
}

/* A stuck backend fails every later call at once, with the first report. */
static hx_status check_stuck(const hx_halo *h)
{
    const base_impl *m = (const base_impl *)h->impl;
    HX_CHECK(!m->stuck, HX_ERR_TIMEOUT, "%s (earlier: the %s exchange is unusable since)",
             m->stuck_msg, h->cfg.backend);
    return HX_OK;
}

/* A pulse failing as a CUDA call would, on the rank the test armed (src/core/fault.h). */
static hx_status pulse_fault(const hx_halo *h, int q, const char *what)
{
    if (!hx_fault_hit("halo.pulse"))
        return HX_OK;
    HX_FAIL(HX_ERR_CUDA, "rank %d: %s of pulse %d failed (fault injected by the test)",
            hx_comm_rank(h->comm), what, q);
}

/* One pulse through MPI (gpu-mpi): sb bytes from the device at src to rank `to`, rb bytes from
 * rank `from` into the device at dst, on device pointers when MPI is CUDA-aware, else staged
 * through the pinned host buffers. The wait before the sendrecv also completes the previous
 * pulse's use of the buffers (its copy out of hrecv; for the forces, its unpack from drecv).
 * `copy` names the data in the copies' errors ("" or "force "), `wait` in the wait's; fn is the
 * exchange reporting. */
static void mpi_pulse(hx_halo *h, hx_stream s, int q, int tag, const char *fn, const char *copy,
                      const char *wait, const void *src, size_t sb, int to, void *dst, size_t rb,
                      int from, hx_first_error *fe)
{
    const base_impl *m = (const base_impl *)h->impl;
    if (!m->cuda_aware && fe->st == HX_OK && sb &&
        cudaMemcpyAsync(m->hsend, src, sb, cudaMemcpyDeviceToHost, s) != cudaSuccess)
        hx_first_error_keep(fe, hx_error_set(HX_ERR_CUDA, __FILE__, __LINE__, fn,
                                             "gpu-mpi: the %scopy of pulse %d to the host: %s",
                                             copy, q, cudaGetErrorString(cudaGetLastError())));
    if (fe->st == HX_OK)
        hx_first_error_keep(fe, pulse_wait(h, s, q, wait));
    const void *sp = m->cuda_aware ? src : m->hsend;
    void *rp = m->cuda_aware ? dst : m->hrecv;
    hx_first_error_keep(
        fe, hx_comm_sendrecv_tagged(h->comm, tag, fe->st, &to, &sp, &sb, &from, &rp, &rb));
    if (!m->cuda_aware && fe->st == HX_OK && rb &&
        cudaMemcpyAsync(dst, m->hrecv, rb, cudaMemcpyHostToDevice, s) != cudaSuccess)
        hx_first_error_keep(fe, hx_error_set(HX_ERR_CUDA, __FILE__, __LINE__, fn,
                                             "gpu-mpi: the %scopy of pulse %d to the device: %s",
                                             copy, q, cudaGetErrorString(cudaGetLastError())));
}

static void close_peers(base_impl *m)
{
    for (int q = 0; q < m->npulses; q++) {
        if (m->peer_x && m->peer_x[q])
            cudaIpcCloseMemHandle(m->peer_x[q]);
        if (m->peer_f && m->peer_f[q])
            cudaIpcCloseMemHandle(m->peer_f[q]);
        if (m->peer_x)
            m->peer_x[q] = NULL;
        if (m->peer_f)
            m->peer_f[q] = NULL;
    }
}

static void msg_close_peers(base_impl *m)
{
    for (int k = 0; k < m->nnb; k++)
        if (m->nb_recv[k])
            cudaIpcCloseMemHandle(m->nb_recv[k]);
    m->nnb = 0;
}

/* The search step's message buffers; device: also the device memory (not when a stream that
 * never finished may still use it: only the host arrays then). */
static void msg_free(base_impl *m, int device)
{
    if (device) {
        cudaFree(m->msend);
        cudaFree(m->mrecv);
        cudaFreeHost(m->hmsend);
        cudaFreeHost(m->hmrecv);
    }
    free(m->moff);
    free(m->msend_ptr);
    free(m->mrecv_ptr);
    m->msend = m->mrecv = m->hmsend = m->hmrecv = NULL;
    m->moff = NULL;
    m->msend_ptr = m->mrecv_ptr = NULL;
    m->nchan = 0;
}

static void base_destroy(hx_halo *h)
{
    base_impl *m = (base_impl *)h->impl;
    if (!m)
        return;
    /* the front end made the context's device current; a bounded wait, and nothing freed that a
     * stream which never finishes may still use */
    int idle = !m->stuck;
    if (idle && m->place.ctx &&
        hx_gpu_ctx_wait_idle(m->place.ctx, h->stream_ok, hx_wait_timeout_gpu(HX_WAIT_STEP),
                             hx_comm_rank(h->comm), "the exchanges (destroy)") != HX_OK)
        idle = 0;
    if (!idle)
        hx_log(HX_LOG_WARN,
               "%s on rank %d: the GPU has not finished the exchanges; their device memory is "
               "left allocated (%s)",
               h->cfg.backend, hx_comm_rank(h->comm),
               m->stuck ? m->stuck_msg : hx_last_error_message());
    if (m->msg_ipc) {
        /* as below: every rank closes its mappings before anyone frees what others mapped */
        if (idle)
            msg_close_peers(m);
        (void)hx_comm_agree(h->comm, HX_OK);
    }
    msg_free(m, idle);
    if (m->ipc_exchanged) {
        /* Close our mappings of the peers' memory, and let every rank do so before anyone frees
         * memory others have mapped (freeing an exported region first is undefined). Every
         * rank reached this point: the handle exchange was collective. */
        if (idle)
            close_peers(m);
        (void)hx_comm_agree(h->comm, HX_OK);
    }
    if (idle) {
        cudaFree(m->x);
        cudaFree(m->f);
        cudaFree(m->dsend);
        cudaFree(m->drecv);
        cudaFreeHost(m->hsend);
        cudaFreeHost(m->hrecv);
        hx_gpu_plan_free(&m->gp);
    }
    free(m->peer_x);
    free(m->peer_f);
    free(m);
    h->impl = NULL;
    h->x[0] = h->f[0] = NULL;
}

/* A CUDA-aware claim is confirmed by sending a device buffer to ourselves: a library that
 * claims it wrongly fails here, in a known place, rather than in the exchange. */
static hx_status cuda_aware_selftest(hx_halo *h, int *ok)
{
    const int n = 64;
    int *d = NULL, host[2 * 64];
    *ok = 0;
    HX_CUDA(cudaMalloc((void **)&d, 2 * n * sizeof(int)));
    for (int i = 0; i < n; i++) {
        host[i] = 0x5a000000 + i;
        host[n + i] = -1;
    }
    hx_status st = HX_OK;
    HX_CUDA_GOTO(st, cudaMemcpy(d, host, sizeof host, cudaMemcpyHostToDevice), out);
    {
        const int self = hx_comm_local_domain(h->comm, 0);
        const void *sp = d;
        void *rp = d + n;
        size_t b = n * sizeof(int);
        st = hx_comm_sendrecv_tagged(h->comm, hx_msg_tag(HX_MSG_SELFTEST, 0), HX_OK, &self, &sp, &b,
                                     &self, &rp, &b);
        if (st != HX_OK)
            goto out;
    }
    HX_CUDA_GOTO(st, cudaMemcpy(host, d, sizeof host, cudaMemcpyDeviceToHost), out);
    *ok = memcmp(host, host + n, n * sizeof(int)) == 0;
out:
    cudaFree(d);
    return st;
}

static hx_status base_setup_common(hx_halo *h, int direct)
{
    base_impl *m = (base_impl *)calloc(1, sizeof *m);
    HX_CHECK(m, HX_ERR_NOMEM, "out of memory");
    h->impl = m;
    m->direct = direct;
    m->gp.stage.rank = hx_comm_rank(h->comm); /* for its bounded wait's message */
    /* no spinning kernels here: several processes per GPU work without MPS (slower) */
    HX_TRY(hx_gpu_halo_place(h, 0, 0, &m->place));
    m->npulses = hx_plan_domain(h->plan, 0)->npulses;
    m->peer_x = (void **)calloc((size_t)m->npulses + 1, sizeof *m->peer_x);
    m->peer_f = (void **)calloc((size_t)m->npulses + 1, sizeof *m->peer_f);
    HX_CHECK(m->peer_x && m->peer_f, HX_ERR_NOMEM, "out of memory");
    return HX_OK;
}

static hx_status gpu_mpi_setup(hx_halo *h)
{
    hx_status st = base_setup_common(h, 0);
    /* from here every rank takes the same collective steps whatever failed locally */
    const char *why = "";
    int claimed = st == HX_OK ? hx_comm_mpi_cuda_aware(&why) : 0, ok = 0;
    /* the claim comes from the same library everywhere, so all ranks test or none */
    if (st == HX_OK && claimed) {
        st = cuda_aware_selftest(h, &ok);
        if (st == HX_OK && !ok)
            hx_log(HX_LOG_WARN,
                   "gpu-mpi: the MPI library says it is CUDA-aware (%s) but a device buffer sent "
                   "to ourselves arrived wrong: staging through host memory",
                   why);
    }
    /* every rank uses the same transport: device pointers only if all confirmed */
    long long mine = (st == HX_OK && claimed && ok) ? 0 : 1, any_not = 1;
    hx_status st2 = hx_comm_max_i64(h->comm, &mine, &any_not, 1);
    if (st == HX_OK)
        st = st2;
    st = hx_comm_agree(h->comm, st);
    if (st != HX_OK)
        return st;
    base_impl *m = (base_impl *)h->impl;
    m->cuda_aware = any_not == 0;
    snprintf(h->describe, sizeof h->describe,
             "gpu-mpi: per pulse pack kernel, CPU waits, MPI %s, unpack kernel; %s (GPU %d, %d "
             "process%s per GPU%s)",
             m->cuda_aware ? "on device pointers (CUDA-aware, self-test passed)"
                           : "through pinned host buffers (MPI not CUDA-aware)",
             m->place.gpu, m->place.device, m->place.pes_per_gpu,
             m->place.pes_per_gpu > 1 ? "es" : "", m->place.mps ? ", MPS" : "");
    if (!m->cuda_aware)
        hx_log(HX_LOG_INFO, "gpu-mpi: MPI is not used on device memory: %s",
               claimed ? "its self-test failed on some rank" : why);
    return HX_OK;
}

static hx_status gpu_direct_setup(hx_halo *h)
{
    hx_status st = base_setup_common(h, 1);
    st = hx_comm_agree(h->comm, st);
    if (st != HX_OK)
        return st;
    base_impl *m = (base_impl *)h->impl;
    snprintf(
        h->describe, sizeof h->describe,
        "gpu-direct: per pulse pack kernel, cudaMemcpyAsync into the peer's memory (CUDA IPC), "
        "CPU waits, MPI done-token; %s (GPU %d, %d process%s per GPU%s)",
        m->place.gpu, m->place.device, m->place.pes_per_gpu, m->place.pes_per_gpu > 1 ? "es" : "",
        m->place.mps ? ", MPS" : "");
    return HX_OK;
}

/* Reallocate a device array to n floats, keeping the first `keep` floats. */
static hx_status regrow_device(float **p, size_t n, size_t keep)
{
    float *q = NULL;
    HX_CUDA(cudaMalloc((void **)&q, n * sizeof(float)));
    if (*p && keep)
        HX_CUDA(cudaMemcpy(q, *p, keep * sizeof(float), cudaMemcpyDeviceToDevice));
    if (*p)
        HX_CUDA(cudaFree(*p));
    *p = q;
    return HX_OK;
}

static hx_status regrow_pinned(float **p, size_t n)
{
    if (*p)
        HX_CUDA(cudaFreeHost(*p));
    *p = NULL;
    HX_CUDA(cudaHostAlloc((void **)p, n * sizeof(float), cudaHostAllocDefault));
    return HX_OK;
}

/* First local part of an update: the plan upload and what must grow (grow-only; capacities are
 * global maxima, so every rank regrows the same buffers at the same update). Mappings of peer
 * memory that is about to be freed are closed here, before the barrier that precedes any free. */
typedef struct grow_plan {
    int local, msg, buf, ipc;
    int cap_msg;
} grow_plan;

static hx_status base_update_prepare(hx_halo *h, grow_plan *g)
{
    base_impl *m = (base_impl *)h->impl;
    const hx_domain_plan *p = hx_plan_domain(h->plan, 0);
    memset(g, 0, sizeof *g);
    HX_TRY(check_stuck(h));
    /* nothing of the previous plan is in flight (bounded) */
    HX_TRY(hx_gpu_ctx_wait_idle(m->place.ctx, h->stream_ok, 0.75 * hx_comm_wait_limit(h->comm, 0),
                                hx_comm_rank(h->comm), "the exchanges before an update"));
    HX_TRY(hx_gpu_plan_upload(&m->gp, h->plan, 0, NULL));
    g->cap_msg = 4;
    for (int q = 0; q < p->npulses; q++)
        g->cap_msg = p->cap_pulse[q] > g->cap_msg ? p->cap_pulse[q] : g->cap_msg;
    g->local = p->cap_local > m->cap_local;
    g->msg = g->cap_msg > m->cap_msg;
    /* at least one atom: a domain with no pulse (one rank) has cap_buf 0, and an empty
     * allocation gives no CUDA IPC handle (issue 25: "cudaIpcGetMemHandle(&hfm, m->drecv)
     * failed: invalid argument" on one rank) */
    g->buf = m->direct && (p->cap_buf > m->cap_buf || !m->drecv);
    g->ipc = m->direct && (g->local || g->buf || !m->ipc_exchanged);
    if (g->ipc && m->ipc_exchanged)
        close_peers(m);
    return HX_OK;
}

static hx_status base_update_regrow(hx_halo *h, const grow_plan *g)
{
    base_impl *m = (base_impl *)h->impl;
    const hx_domain_plan *p = hx_plan_domain(h->plan, 0);
    if (g->local) {
        HX_TRY(regrow_device(&m->x, 3 * (size_t)p->cap_local, 3 * (size_t)m->cap_local));
        HX_TRY(regrow_device(&m->f, 3 * (size_t)p->cap_local, 3 * (size_t)m->cap_local));
        m->cap_local = p->cap_local;
    }
    if (g->msg) {
        HX_TRY(regrow_device(&m->dsend, 3 * (size_t)g->cap_msg, 0));
        if (!m->direct) {
            HX_TRY(regrow_device(&m->drecv, 3 * (size_t)g->cap_msg, 0));
            HX_TRY(regrow_pinned(&m->hsend, 3 * (size_t)g->cap_msg));
            HX_TRY(regrow_pinned(&m->hrecv, 3 * (size_t)g->cap_msg));
        }
        m->cap_msg = g->cap_msg;
    }
    if (g->buf) {
        const int cap = p->cap_buf > 1 ? p->cap_buf : 1;
        HX_TRY(regrow_device(&m->drecv, 3 * (size_t)cap, 0));
        m->cap_buf = cap;
    }
    h->x[0] = m->x;
    h->f[0] = m->f;
    return HX_OK;
}

/* Whether this GPU can write into `rank`'s (for gpu-direct's copies into a peer's memory): yes
 * on the same GPU; across GPUs when CUDA reports peer access between them. The peer's GPU is
 * known by UUID; when it is not visible to this process (CUDA_VISIBLE_DEVICES per rank) CUDA IPC
 * may still map it, so only a visible GPU without peer access is refused here. */
static hx_status check_peer(const hx_halo *h, const base_impl *m, int rank, int q)
{
    if (rank == hx_comm_rank(h->comm) || hx_gpu_place_same_gpu(&m->place, rank))
        return HX_OK;
    const unsigned char *u = hx_gpu_context_rank_uuid(m->place.ctx, rank);
    int n = 0;
    HX_CUDA(cudaGetDeviceCount(&n));
    for (int d = 0; d < n && u; d++) {
        cudaDeviceProp prop;
        HX_CUDA(cudaGetDeviceProperties(&prop, d));
        if (memcmp(&prop.uuid, u, 16) != 0)
            continue;
        int can = 0;
        HX_CUDA(cudaDeviceCanAccessPeer(&can, m->place.device, d));
        HX_CHECK(can, HX_ERR_UNSUPPORTED,
                 "gpu-direct: rank %d (GPU %d) exchanges with rank %d on GPU %d in pulse %d, and "
                 "CUDA reports no peer access between the two GPUs (no NVLink or PCIe P2P): use "
                 "the gpu-mpi backend, or place neighbouring ranks on one GPU",
                 hx_comm_rank(h->comm), m->place.device, rank, d, q);
        return HX_OK;
    }
    return HX_OK;
}

/* Collective: exchange IPC handles with the neighbours of every pulse and map their memory.
 * Pulse q: recv_pe writes coordinates into our x, so it gets our x handle and we get send_pe's;
 * send_pe writes forces into our slots, so it gets our slot handle and we get recv_pe's. Without
 * pulses (one domain) there is nothing to map. Across GPUs the mapping enables peer access
 * (cudaIpcMemLazyEnablePeerAccess); the copies into it then go over NVLink. */
static hx_status exchange_ipc(hx_halo *h)
{
    base_impl *m = (base_impl *)h->impl;
    const hx_domain_plan *p = hx_plan_domain(h->plan, 0);
    if (p->npulses == 0) {
        m->ipc_exchanged = 1;
        return HX_OK;
    }
    cudaIpcMemHandle_t hxm, hfm;
    memset(&hxm, 0, sizeof hxm);
    memset(&hfm, 0, sizeof hfm);
    /* local failures first, agreed: no rank may leave the others in the handle exchange */
    hx_status st = HX_OK;
    for (int q = 0; q < p->npulses && st == HX_OK; q++) {
        st = check_peer(h, m, p->pulses[q].send_rank, q);
        if (st == HX_OK)
            st = check_peer(h, m, p->pulses[q].recv_rank, q);
    }
    if (st == HX_OK && hx_fault_hit("halo.ipc"))
        st = hx_error_set(HX_ERR_CUDA, __FILE__, __LINE__, __func__,
                          "gpu-direct: rank %d could not export its memory (fault injected by the "
                          "test)",
                          hx_comm_rank(h->comm));
    if (st == HX_OK && !(m->x && m->drecv))
        st = hx_error_set(HX_ERR_INTERNAL, __FILE__, __LINE__, __func__,
                          "gpu-direct: no coordinate array or force slots to export");
    if (st == HX_OK)
        HX_CUDA_GOTO(st, cudaIpcGetMemHandle(&hxm, m->x), local_done);
    if (st == HX_OK)
        HX_CUDA_GOTO(st, cudaIpcGetMemHandle(&hfm, m->drecv), local_done);
local_done:;
    cudaIpcMemHandle_t *hx_in = (cudaIpcMemHandle_t *)calloc((size_t)m->npulses + 1, sizeof *hx_in);
    cudaIpcMemHandle_t *hf_in = (cudaIpcMemHandle_t *)calloc((size_t)m->npulses + 1, sizeof *hf_in);
    if (st == HX_OK && !(hx_in && hf_in))
        st = hx_error_set(HX_ERR_NOMEM, __FILE__, __LINE__, __func__, "out of memory");
    st = hx_comm_agree(h->comm, st);
    for (int q = 0; q < p->npulses && st == HX_OK; q++) {
        const hx_pulse *P = &p->pulses[q];
        size_t b = sizeof(cudaIpcMemHandle_t);
        const void *s1 = &hxm, *s2 = &hfm;
        void *r1 = &hx_in[q], *r2 = &hf_in[q];
        st = hx_comm_sendrecv_tagged(h->comm, hx_msg_tag(HX_MSG_IPC_X, q), HX_OK, &P->recv_rank,
                                     &s1, &b, &P->send_rank, &r1, &b);
        if (st == HX_OK)
            st = hx_comm_sendrecv_tagged(h->comm, hx_msg_tag(HX_MSG_IPC_F, q), HX_OK, &P->send_rank,
                                         &s2, &b, &P->recv_rank, &r2, &b);
    }
    if (st == HX_OK)
        m->ipc_exchanged = 1; /* collective step done on every rank */
    for (int q = 0; q < p->npulses && st == HX_OK; q++) {
        /* the same peer's handle may come several times: CUDA counts references */
        HX_CUDA_GOTO(
            st, cudaIpcOpenMemHandle(&m->peer_x[q], hx_in[q], cudaIpcMemLazyEnablePeerAccess), out);
        HX_CUDA_GOTO(
            st, cudaIpcOpenMemHandle(&m->peer_f[q], hf_in[q], cudaIpcMemLazyEnablePeerAccess), out);
    }
out:
    free(hx_in);
    free(hf_in);
    return st;
}

static hx_status base_update(hx_halo *h)
{
    base_impl *m = (base_impl *)h->impl;
    grow_plan g;
    /* Every rank runs the same sequence of agreements whatever fails locally: (1) closed our
     * mappings of memory that peers are about to free, (2) freed and allocated, (3) exchanged
     * handles of the new memory. */
    hx_status st = base_update_prepare(h, &g);
    st = hx_comm_agree(h->comm, st);
    if (st != HX_OK)
        return st;
    st = hx_comm_agree(h->comm, base_update_regrow(h, &g));
    if (st != HX_OK)
        return st;
    m->phase = 0;
    if (g.ipc)
        HX_TRY(exchange_ipc(h));
    return HX_OK;
}

/* The "done" token of a pulse: the exchange count and the pulse, checked on arrival, so that
 * ranks that fell out of step report it instead of mixing steps. A rank that failed sends its
 * failure marker instead (local != HX_OK), and a neighbour's marker returns HX_ERR_REMOTE. */
static hx_status handshake(hx_halo *h, int q, int to, int from, hx_msg_kind kind, hx_status local)
{
    base_impl *m = (base_impl *)h->impl;
    long long mine = m->nexch * 256 + q, theirs = -1;
    size_t b = sizeof mine;
    const void *sp = &mine;
    void *rp = &theirs;
    HX_TRY(
        hx_comm_sendrecv_tagged(h->comm, hx_msg_tag(kind, q), local, &to, &sp, &b, &from, &rp, &b));
    HX_CHECK(theirs == mine, HX_ERR_INTERNAL,
             "gpu-direct %s: rank %d expected the done token of exchange %lld pulse %d from rank "
             "%d and got exchange %lld pulse %lld: the ranks are out of step",
             kind == HX_MSG_TOKEN_X ? "coordinates" : "forces", hx_comm_rank(h->comm), m->nexch, q,
             from, theirs / 256, theirs % 256);
    return HX_OK;
}

/* Coordinates, pulse by pulse. After a failure (fe.st) the CUDA work stops and the messages go
 * on, as failure markers. */
static hx_status base_exchange_x(hx_halo *h, hx_stream s)
{
    base_impl *m = (base_impl *)h->impl;
    const hx_domain_plan *p = m->gp.host;
    HX_CHECK(!m->direct || m->phase == 0, HX_ERR_INVALID_ARG,
             "gpu-direct: exchange_x called twice without exchange_f in between: coordinate and "
             "force exchanges must alternate (that order is what keeps a peer from overwriting "
             "halo coordinates still being read)");
    hx_first_error fe = {HX_OK, ""};
    hx_first_error_keep(&fe, check_stuck(h));
    for (int q = 0; q < p->npulses; q++) {
        const hx_pulse *P = &p->pulses[q];
        const size_t sb = 12 * (size_t)P->send_count, rb = 12 * (size_t)P->recv_count;
        float *land = m->x + 3 * (size_t)P->atom_offset;
        if (fe.st == HX_OK)
            hx_first_error_keep(&fe, pulse_fault(h, q, "the coordinates"));
        if (fe.st == HX_OK)
            hx_first_error_keep(&fe, hx_gpu_pack_x(&m->gp, q, m->x, m->dsend, 0, s));
        const int tag = hx_msg_tag(HX_MSG_HALO_X, q);
        if (m->direct) {
            if (fe.st == HX_OK && sb &&
                cudaMemcpyAsync((float *)m->peer_x[q] + 3 * (size_t)P->peer_atom_offset, m->dsend,
                                sb, cudaMemcpyDeviceToDevice, s) != cudaSuccess)
                hx_first_error_keep(
                    &fe, hx_error_set(HX_ERR_CUDA, __FILE__, __LINE__, __func__,
                                      "gpu-direct: the copy of pulse %d into rank %d: %s", q,
                                      P->send_rank, cudaGetErrorString(cudaGetLastError())));
            if (fe.st == HX_OK) /* our coordinates are in the peer's x */
                hx_first_error_keep(&fe, pulse_wait(h, s, q, "the copy of the coordinates"));
            hx_first_error_keep(&fe,
                                handshake(h, q, P->send_rank, P->recv_rank, HX_MSG_TOKEN_X, fe.st));
        } else {
            mpi_pulse(h, s, q, tag, __func__, "", "the packing of the coordinates", m->dsend, sb,
                      P->send_rank, land, rb, P->recv_rank, &fe);
        }
        h->stats.bytes_sent += (long long)sb;
    }
    m->phase = 1;
    return hx_first_error_status(&fe);
}

static hx_status base_exchange_f(hx_halo *h, hx_stream s)
{
    base_impl *m = (base_impl *)h->impl;
    const hx_domain_plan *p = m->gp.host;
    HX_CHECK(!m->direct || m->phase == 1, HX_ERR_INVALID_ARG,
             "gpu-direct: exchange_f called without exchange_x before it: coordinate and force "
             "exchanges must alternate");
    hx_first_error fe = {HX_OK, ""};
    hx_first_error_keep(&fe, check_stuck(h));
    for (int q = p->npulses - 1; q >= 0; q--) {
        const hx_pulse *P = &p->pulses[q];
        /* our forces on the atoms received in pulse q go back up to recv_rank; forces on the
         * atoms we sent come from send_rank */
        const size_t sb = 12 * (size_t)P->recv_count, rb = 12 * (size_t)P->send_count;
        const float *out = m->f + 3 * (size_t)P->atom_offset;
        float *in = m->drecv;
        const int tag = hx_msg_tag(HX_MSG_HALO_F, q);
        if (fe.st == HX_OK)
            hx_first_error_keep(&fe, pulse_fault(h, q, "the forces"));
        if (m->direct) {
            /* stream order: the unpacks of later pulses (which add into this range) are done */
            if (fe.st == HX_OK && sb &&
                cudaMemcpyAsync((float *)m->peer_f[q] + 3 * (size_t)P->buf_offset, out, sb,
                                cudaMemcpyDeviceToDevice, s) != cudaSuccess)
                hx_first_error_keep(
                    &fe, hx_error_set(HX_ERR_CUDA, __FILE__, __LINE__, __func__,
                                      "gpu-direct: the force copy of pulse %d into rank "
                                      "%d: %s",
                                      q, P->recv_rank, cudaGetErrorString(cudaGetLastError())));
            if (fe.st == HX_OK)
                hx_first_error_keep(&fe, pulse_wait(h, s, q, "the copy of the forces"));
            hx_first_error_keep(&fe,
                                handshake(h, q, P->recv_rank, P->send_rank, HX_MSG_TOKEN_F, fe.st));
            in = m->drecv + 3 * (size_t)P->buf_offset;
        } else {
            mpi_pulse(h, s, q, tag, __func__, "force ", "the forces", out, sb, P->recv_rank,
                      m->drecv, rb, P->send_rank, &fe);
        }
        /* one pulse at a time, distinct atoms within a pulse: plain adds, the host's order */
        if (fe.st == HX_OK)
            hx_first_error_keep(&fe, hx_gpu_unpack_f(&m->gp, q, in, m->f, 0, s));
        h->stats.bytes_sent += (long long)sb;
    }
    m->phase = 0;
    m->nexch++;
    return hx_first_error_status(&fe);
}

/* Adopt a plan rebuilt from the device search step's counts, capacities unchanged: the plan's
 * upload only (its maps are the search step's, on the device), enqueued on s when given (the
 * front end's contract: no exchange of the old plan runs on another stream). */
static hx_status base_refresh(hx_halo *h, hx_stream s)
{
    base_impl *m = (base_impl *)h->impl;
    const hx_domain_plan *p = hx_plan_domain(h->plan, 0);
    HX_CHECK(p->cap_local <= m->cap_local && (!m->direct || p->cap_buf <= m->cap_buf),
             HX_ERR_INTERNAL, "%s: refresh of a plan whose capacities grew", h->cfg.backend);
    HX_TRY(hx_gpu_plan_upload(&m->gp, h->plan, 0, s));
    int cap_msg = 4;
    for (int q = 0; q < p->npulses; q++)
        cap_msg = p->cap_pulse[q] > cap_msg ? p->cap_pulse[q] : cap_msg;
    HX_CHECK(cap_msg <= m->cap_msg, HX_ERR_INTERNAL, "%s: refresh of a plan whose messages grew",
             h->cfg.backend);
    m->phase = 0;
    return HX_OK;
}

/* Collective: the channels of the device search step (at its start, and on its slow path, every
 * rank together). gpu-direct also maps its face neighbours' receive regions (the domains of its
 * first pulses: every message goes to one). */
static hx_status base_msg_setup(hx_halo *h, int nchan, const size_t *cap, void ***send,
                                void ***recv)
{
    base_impl *m = (base_impl *)h->impl;
    const int rank = hx_comm_rank(h->comm);
    /* every rank takes the same agreements whatever fails locally; the front end made the
     * context's device current; nothing of ours may still use the buffers freed below (a
     * bounded wait: a stuck stream fails the set-up on every rank) */
    hx_status st = check_stuck(h);
    if (st == HX_OK)
        st = hx_gpu_ctx_wait_idle(m->place.ctx, h->stream_ok, hx_wait_timeout_gpu(HX_WAIT_SETUP),
                                  rank, "the exchanges (search-step message set-up)");
    if (m->msg_ipc) {
        /* nobody frees what another still maps */
        if (st == HX_OK)
            msg_close_peers(m);
        hx_status ast = hx_comm_agree(h->comm, st);
        if (ast != HX_OK)
            return ast;
        m->msg_ipc = 0;
    }
    HX_TRY(hx_comm_agree(h->comm, st));
    msg_free(m, 1);
    m->moff = (size_t *)calloc((size_t)nchan + 1, sizeof *m->moff);
    m->msend_ptr = (void **)calloc((size_t)nchan + 1, sizeof(void *));
    m->mrecv_ptr = (void **)calloc((size_t)nchan + 1, sizeof(void *));
    if (!m->moff || !m->msend_ptr || !m->mrecv_ptr)
        st = hx_error_set(HX_ERR_NOMEM, __FILE__, __LINE__, __func__, "out of memory");
    m->mmax = 256;
    for (int c = 0; st == HX_OK && c < nchan; c++) {
        const size_t b = (cap[c] + 255) & ~(size_t)255;
        m->moff[c + 1] = m->moff[c] + b;
        m->mmax = b > m->mmax ? b : m->mmax;
    }
    const size_t total = st == HX_OK && m->moff[nchan] > 0 ? m->moff[nchan] : 256;
    if (st == HX_OK && (cudaMalloc((void **)&m->msend, total) != cudaSuccess ||
                        cudaMalloc((void **)&m->mrecv, total) != cudaSuccess ||
                        cudaMemset(m->msend, 0, total) != cudaSuccess ||
                        cudaMemset(m->mrecv, 0, total) != cudaSuccess))
        st = hx_error_set(HX_ERR_CUDA, __FILE__, __LINE__, __func__,
                          "device memory for the search step's messages (%zu bytes)", 2 * total);
    if (st == HX_OK && !m->direct &&
        (cudaHostAlloc((void **)&m->hmsend, m->mmax, cudaHostAllocDefault) != cudaSuccess ||
         cudaHostAlloc((void **)&m->hmrecv, m->mmax, cudaHostAllocDefault) != cudaSuccess))
        st = hx_error_set(HX_ERR_CUDA, __FILE__, __LINE__, __func__,
                          "pinned memory for the search step's messages (%zu bytes)", 2 * m->mmax);
    HX_TRY(hx_comm_agree(h->comm, st));
    m->nchan = nchan;
    for (int c = 0; c < nchan; c++) {
        m->msend_ptr[c] = m->msend + m->moff[c];
        m->mrecv_ptr[c] = m->mrecv + m->moff[c];
    }
    send[0] = m->msend_ptr;
    recv[0] = m->mrecv_ptr;
    if (!m->direct)
        return HX_OK;
    /* the face neighbours: per decomposed dimension the lower and the upper one. Every rank
     * reaches the exchange below (the agreements above), so every rank closes its mappings
     * and agrees again at the next set-up or at destroy */
    m->msg_ipc = 1;
    const hx_domain_plan *p = hx_plan_domain(h->plan, 0);
    cudaIpcMemHandle_t mine;
    memset(&mine, 0, sizeof mine);
    if (cudaIpcGetMemHandle(&mine, m->mrecv) != cudaSuccess)
        st = hx_error_set(HX_ERR_CUDA, __FILE__, __LINE__, __func__,
                          "gpu-direct: IPC handle of the message buffers: %s",
                          cudaGetErrorString(cudaGetLastError()));
    /* a rank that failed still takes part in every handshake (its failure marker in place of
     * its handle), so that no neighbour waits for a handle that never comes */
    for (int q = 0; q < p->npulses; q++) {
        if (p->pulses[q].pulse_in_dim != 0)
            continue;
        const hx_pulse *P = &p->pulses[q];
        const int up = P->recv_rank, down = P->send_rank;
        cudaIpcMemHandle_t from_down, from_up;
        size_t b = sizeof mine;
        const void *sp = &mine;
        void *r1 = &from_down, *r2 = &from_up;
        hx_status s1 = hx_comm_sendrecv_tagged(h->comm, hx_msg_tag(HX_MSG_IPC_SEARCH, 2 * q), st,
                                               &up, &sp, &b, &down, &r1, &b);
        hx_status s2 = hx_comm_sendrecv_tagged(h->comm, hx_msg_tag(HX_MSG_IPC_SEARCH, 2 * q + 1),
                                               st != HX_OK ? st : s1, &down, &sp, &b, &up, &r2, &b);
        if (st == HX_OK)
            st = s1 != HX_OK ? s1 : s2;
        const int doms[2] = {down, up};
        const cudaIpcMemHandle_t *hs[2] = {&from_down, &from_up};
        for (int k = 0; k < 2 && st == HX_OK; k++) {
            int seen = 0;
            for (int j = 0; j < m->nnb; j++)
                seen |= m->nb_dom[j] == doms[k];
            if (seen)
                continue;
            void *ptr = NULL;
            if (cudaIpcOpenMemHandle(&ptr, *hs[k], cudaIpcMemLazyEnablePeerAccess) != cudaSuccess)
                st = hx_error_set(HX_ERR_CUDA, __FILE__, __LINE__, __func__,
                                  "gpu-direct: mapping the message buffers of domain %d: %s",
                                  doms[k], cudaGetErrorString(cudaGetLastError()));
            else {
                m->nb_dom[m->nnb] = doms[k];
                m->nb_recv[m->nnb++] = (char *)ptr;
            }
        }
    }
    return hx_comm_agree(h->comm, st);
}

/* A message: its size from the device; gpu-direct copies it into the neighbour's mapped
 * region, gpu-mpi moves it through pinned host memory with MPI. Then a token (gpu-direct) or
 * the MPI message itself tells the receiver it is there. The host does not read the payload.
 * As the exchanges: waits for the GPU bounded by the step deadline, and a rank that fails
 * still takes part in the messages (its failure marker), so that no neighbour is left waiting. */
static hx_status base_msg(hx_halo *h, int chan, const int *dest, const int *src, hx_stream s)
{
    base_impl *m = (base_impl *)h->impl;
    HX_CHECK(chan >= 0 && chan < m->nchan, HX_ERR_INVALID_ARG, "%s: message channel %d of %d",
             h->cfg.backend, chan, m->nchan);
    const size_t cap = m->moff[chan + 1] - m->moff[chan];
    long long sb = 8, rb = -1; /* rb: as announced by src (-1: nothing announced) */
    hx_first_error fe = {HX_OK, ""};
    hx_first_error_keep(&fe, check_stuck(h));
    if (fe.st == HX_OK) /* the message is packed */
        hx_first_error_keep(&fe, pulse_wait(h, s, chan, "the packing of a search-step message"));
    if (fe.st == HX_OK &&
        cudaMemcpy(&sb, m->msend_ptr[chan], sizeof sb, cudaMemcpyDeviceToHost) != cudaSuccess)
        hx_first_error_keep(&fe,
                            hx_error_set(HX_ERR_CUDA, __FILE__, __LINE__, __func__,
                                         "%s: the size of message channel %d: %s", h->cfg.backend,
                                         chan, cudaGetErrorString(cudaGetLastError())));
    if (fe.st == HX_OK && (sb < 8 || (size_t)sb > cap))
        hx_first_error_keep(&fe, hx_error_set(HX_ERR_INTERNAL, __FILE__, __LINE__, __func__,
                                              "%s: message of %lld bytes on channel %d of %zu",
                                              h->cfg.backend, sb, chan, cap));
    if (m->direct) {
        char *peer = NULL;
        for (int j = 0; j < m->nnb; j++)
            if (m->nb_dom[j] == dest[0])
                peer = m->nb_recv[j];
        if (fe.st == HX_OK && !peer)
            hx_first_error_keep(&fe, hx_error_set(HX_ERR_INTERNAL, __FILE__, __LINE__, __func__,
                                                  "gpu-direct: domain %d is not a mapped "
                                                  "neighbour",
                                                  dest[0]));
        if (fe.st == HX_OK && cudaMemcpyAsync(peer + m->moff[chan], m->msend_ptr[chan], (size_t)sb,
                                              cudaMemcpyDeviceToDevice, s) != cudaSuccess)
            hx_first_error_keep(&fe, hx_error_set(HX_ERR_CUDA, __FILE__, __LINE__, __func__,
                                                  "gpu-direct: the copy of message channel %d "
                                                  "into domain %d: %s",
                                                  chan, dest[0],
                                                  cudaGetErrorString(cudaGetLastError())));
        if (fe.st == HX_OK) /* the receiver's data is in place */
            hx_first_error_keep(&fe, pulse_wait(h, s, chan, "the copy of a search-step message"));
        /* the token: the message count and channel */
        long long mine = m->nmsg * 256 + chan, theirs = -1;
        size_t b = sizeof mine;
        const void *sp = &mine;
        void *rp = &theirs;
        hx_first_error_keep(&fe,
                            hx_comm_sendrecv_tagged(h->comm, hx_msg_tag(HX_MSG_SEARCH_TOKEN, chan),
                                                    fe.st, dest, &sp, &b, src, &rp, &b));
        if (fe.st == HX_OK && theirs != mine)
            hx_first_error_keep(&fe,
                                hx_error_set(HX_ERR_INTERNAL, __FILE__, __LINE__, __func__,
                                             "gpu-direct: message %lld channel %d: the token "
                                             "from domain %d says message %lld channel %lld: "
                                             "the ranks are out of step",
                                             m->nmsg, chan, src[0], theirs / 256, theirs % 256));
        m->nmsg++;
        h->stats.bytes_sent += sb;
        return hx_first_error_status(&fe);
    }
    {
        size_t b = sizeof sb;
        const void *sp = &sb;
        void *rp = &rb;
        hx_first_error_keep(&fe,
                            hx_comm_sendrecv_tagged(h->comm, hx_msg_tag(HX_MSG_SEARCH_SIZE, chan),
                                                    fe.st, dest, &sp, &b, src, &rp, &b));
    }
    if (fe.st == HX_OK && (rb < 8 || (size_t)rb > cap))
        hx_first_error_keep(&fe, hx_error_set(HX_ERR_INTERNAL, __FILE__, __LINE__, __func__,
                                              "gpu-mpi: domain %d announces a message of %lld "
                                              "bytes on channel %d of %zu",
                                              src[0], rb, chan, cap));
    if (fe.st == HX_OK && cudaMemcpyAsync(m->hmsend, m->msend_ptr[chan], (size_t)sb,
                                          cudaMemcpyDeviceToHost, s) != cudaSuccess)
        hx_first_error_keep(&fe, hx_error_set(HX_ERR_CUDA, __FILE__, __LINE__, __func__,
                                              "gpu-mpi: the copy of message channel %d to the "
                                              "host: %s",
                                              chan, cudaGetErrorString(cudaGetLastError())));
    if (fe.st == HX_OK)
        hx_first_error_keep(&fe, pulse_wait(h, s, chan, "the copy of a search-step message"));
    {
        /* a failed rank sends its marker instead; it still receives what src announced (a
         * size outside the buffer: 8 bytes, the oversized message then fails to arrive) */
        const size_t sbb = (size_t)sb, rbb = rb >= 8 && (size_t)rb <= m->mmax ? (size_t)rb : 8;
        const void *sp = m->hmsend;
        void *rp = m->hmrecv;
        hx_first_error_keep(&fe, hx_comm_sendrecv_tagged(h->comm, hx_msg_tag(HX_MSG_SEARCH, chan),
                                                         fe.st, dest, &sp, &sbb, src, &rp, &rbb));
    }
    /* hmrecv is pinned and reused only after the next wait above */
    if (fe.st == HX_OK && cudaMemcpyAsync(m->mrecv_ptr[chan], m->hmrecv, (size_t)rb,
                                          cudaMemcpyHostToDevice, s) != cudaSuccess)
        hx_first_error_keep(&fe, hx_error_set(HX_ERR_CUDA, __FILE__, __LINE__, __func__,
                                              "gpu-mpi: the copy of message channel %d to the "
                                              "device: %s",
                                              chan, cudaGetErrorString(cudaGetLastError())));
    h->stats.bytes_sent += sb;
    return hx_first_error_status(&fe);
}

/* not capturable: the CPU waits for each pulse; device: on the GPU context's device; messages
 * of the device search step driven by the CPU (msg_device 0) */
extern "C" const hx_halo_ops hx_halo_ops_gpu_mpi = {"gpu-mpi",
                                                    0,
                                                    1,
                                                    gpu_mpi_setup,
                                                    base_update,
                                                    base_exchange_x,
                                                    base_exchange_f,
                                                    NULL,
                                                    base_destroy,
                                                    base_refresh,
                                                    base_msg_setup,
                                                    base_msg,
                                                    0};

extern "C" const hx_halo_ops hx_halo_ops_gpu_direct = {"gpu-direct",
                                                       0,
                                                       1,
                                                       gpu_direct_setup,
                                                       base_update,
                                                       base_exchange_x,
                                                       base_exchange_f,
                                                       NULL,
                                                       base_destroy,
                                                       base_refresh,
                                                       base_msg_setup,
                                                       base_msg,
                                                       0};
