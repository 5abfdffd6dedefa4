/* The "gpu-local" halo backend: every domain of a decomposition in this process, on the GPU
 * context's device (the serial communicator; the front end makes the device current). Coordinates
 * are packed by a kernel straight into the receiving domain's array, pulse by pulse; forces come
 * back pulse by pulse in reverse order, added by the owner with plain adds (one pulse at a time,
 * distinct atoms in a pulse): the host backend's order, so results are bit for bit those of
 * gpu-mpi. Its messages for the device search step (msg_setup / msg) are copies by a kernel that
 * reads the size on the device, so the whole search step can be captured.
 *
 * What it is for: the decomposed GPU engine and its device search step in one process, which
 * the CPU emulation of CUDA (tests/emu) can run, so that CI checks them without a GPU. Not a
 * production path (several domains on one GPU run as MPI ranks under MPS).
 *
 * Also here: the device plan image's upload for every GPU backend (hx_gpu_plan_upload in
 * halo_gpu.cu calls hx_gpu_plan_adopt when a device search step keeps the image). */
#include "halo/halo_impl.h"
#include "dd/pack.h"
#include "gpu/context.h"
#include "gpu/cuda_check.h"
#include "gpu/gpu_util.cuh"
#include "halo/halo_gpu.h"
#include "core/wait.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the device plan image ----------------------------------------------------------------- */

extern "C" hx_status hx_gpu_stage_copy(hx_gpu_stage *st, void *dev, const void *src, size_t bytes,
                                       hx_stream stream)
{
    if (st->busy) {
        /* at a search step long since passed: the engine waited for its device before */
        HX_TRY(hx_gpu_event_wait(st->ev, hx_wait_timeout_gpu(HX_WAIT_SETUP), st->rank,
                                 "a halo set-up copy"));
        st->busy = 0;
    }
    if (bytes > st->cap) {
        if (st->buf)
            HX_CUDA(cudaFreeHost(st->buf));
        st->buf = NULL;
        st->cap = 0;
        const size_t c = bytes + bytes / 2 + 1024;
        HX_CUDA(cudaHostAlloc(&st->buf, c, cudaHostAllocDefault));
        st->cap = c;
    }
    if (!st->ev) {
        cudaEvent_t ev = NULL;
        HX_CUDA(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
        st->ev = ev;
    }
    if (bytes == 0)
        return HX_OK;
    memcpy(st->buf, src, bytes);
    HX_CUDA(cudaMemcpyAsync(dev, st->buf, bytes, cudaMemcpyHostToDevice, (cudaStream_t)stream));
    HX_CUDA(cudaEventRecord((cudaEvent_t)st->ev, (cudaStream_t)stream));
    st->busy = 1;
    return HX_OK;
}

extern "C" void hx_gpu_stage_free(hx_gpu_stage *st)
{
    if (st->buf)
        cudaFreeHost(st->buf);
    if (st->ev)
        cudaEventDestroy((cudaEvent_t)st->ev);
    memset(st, 0, sizeof *st);
}

extern "C" hx_status hx_gpu_plan_adopt(hx_gpu_plan *gp, const hx_plan *plan, int local,
                                       hx_stream stream)
{
    size_t bytes = 0, cap = 0;
    const void *img = hx_plan_image(plan, local, &bytes);
    HX_CHECK(img && bytes >= sizeof(hx_plan_image_header), HX_ERR_INTERNAL,
             "the plan has no device image (was it built?)");
    void *dev = hx_plan_device_image(plan, local, &cap);
    const hx_plan_image_header *h = (const hx_plan_image_header *)img;
    const size_t head = (size_t)h->off[HX_PI_INDEX_MAP];
    if (dev) {
        /* the maps are on the device already (written by the search step): the numbers before
         * them come from the host */
        HX_CHECK(bytes <= cap, HX_ERR_INTERNAL,
                 "device plan image of %zu bytes, the plan needs %zu", cap, bytes);
        if (stream)
            HX_TRY(hx_gpu_stage_copy(&gp->stage, dev, img, head, stream));
        else
            HX_CUDA(cudaMemcpy(dev, img, head, cudaMemcpyHostToDevice));
    } else {
        if (bytes > gp->cap) {
            /* grow-only, with room: images change size at every repartition */
            const size_t c = bytes + bytes / 4 + 4096;
            void *d = NULL;
            HX_CUDA(cudaMalloc(&d, c));
            if (gp->own)
                HX_CUDA(cudaFree(gp->own));
            gp->own = d;
            gp->cap = c;
        }
        HX_CUDA(cudaMemcpy(gp->own, img, bytes, cudaMemcpyHostToDevice));
        dev = gp->own;
    }
    gp->dev = dev;
    gp->bytes = bytes;
    hx_plan_view_init(img, &gp->view);
    hx_plan_view_rebase(&gp->view, img, gp->dev);
    gp->host = hx_plan_domain(plan, local);
    return HX_OK;
}

extern "C" void hx_gpu_plan_free(hx_gpu_plan *gp)
{
    if (gp->own)
        cudaFree(gp->own);
    hx_gpu_stage_free(&gp->stage);
    memset(gp, 0, sizeof *gp);
}

/* ---- kernels ------------------------------------------------------------------------------- */

__global__ void __launch_bounds__(256)
    k_loc_pack(const int *map, int n, float sx, float sy, float sz, const float *x, float *out)
{
    const int e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e < n)
        hx_pack_x_elem_f32(e, map, x, sx, sy, sz, out);
}

__global__ void __launch_bounds__(256)
    k_loc_unpack(const int *map, int n, const float *buf, float *f)
{
    const int e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e < n)
        hx_unpack_f_elem_f32(e, map, buf, f);
}

__global__ void __launch_bounds__(256) k_loc_copy(const int4 *src, int4 *dst, long long cap)
{
    const long long bytes = *(const long long *)src;
    const long long words = ((bytes < cap ? bytes : cap) + 15) / 16;
    for (long long w = blockIdx.x * (long long)blockDim.x + threadIdx.x; w < words;
         w += (long long)gridDim.x * blockDim.x)
        dst[w] = src[w];
}

/* ---- the backend ----------------------------------------------------------------------------- */

typedef struct loc_impl {
    hx_gpu_plan *gp; /* [nlocal] */
    int *local_of;   /* [ndomains] */
    int cap_local;
    int nchan;
    size_t *mcap;
    void ***msend, ***mrecv; /* [nlocal][nchan] */
} loc_impl;

static void loc_free_msgs(hx_halo *h, loc_impl *m)
{
    for (int i = 0; m->msend && i < h->nlocal; i++) {
        for (int c = 0; c < m->nchan; c++) {
            cudaFree(m->msend[i][c]);
            cudaFree(m->mrecv[i][c]);
        }
        free(m->msend[i]);
        free(m->mrecv[i]);
    }
    free(m->msend);
    free(m->mrecv);
    free(m->mcap);
    m->msend = m->mrecv = NULL;
    m->mcap = NULL;
    m->nchan = 0;
}

static void loc_destroy(hx_halo *h)
{
    loc_impl *m = (loc_impl *)h->impl;
    if (!m)
        return;
    cudaDeviceSynchronize();
    for (int i = 0; i < h->nlocal; i++) {
        if (m->gp)
            hx_gpu_plan_free(&m->gp[i]);
        cudaFree(h->x[i]);
        cudaFree(h->f[i]);
        h->x[i] = h->f[i] = NULL;
    }
    loc_free_msgs(h, m);
    free(m->gp);
    free(m->local_of);
    free(m);
    h->impl = NULL;
}

static hx_status loc_setup(hx_halo *h)
{
    HX_CHECK(h->cfg.mem == HX_MEM_DEVICE && h->cfg.real == HX_REAL_F32, HX_ERR_UNSUPPORTED,
             "halo backend 'gpu-local' works on float arrays in device memory: set cfg.mem = "
             "HX_MEM_DEVICE and cfg.real = HX_REAL_F32");
    HX_CHECK(hx_comm_nranks(h->comm) == 1, HX_ERR_UNSUPPORTED,
             "halo backend 'gpu-local' runs every domain in one process (the serial "
             "communicator); with %d processes use gpu-mpi, gpu-direct or nvshmem",
             hx_comm_nranks(h->comm));
    loc_impl *m = (loc_impl *)calloc(1, sizeof *m);
    HX_CHECK(m, HX_ERR_NOMEM, "out of memory");
    h->impl = m;
    const int nd = hx_comm_ndomains(h->comm);
    m->gp = (hx_gpu_plan *)calloc((size_t)h->nlocal, sizeof *m->gp);
    m->local_of = (int *)malloc(sizeof(int) * (size_t)(nd + 1));
    HX_CHECK(m->gp && m->local_of, HX_ERR_NOMEM, "out of memory");
    for (int i = 0; i < h->nlocal; i++)
        m->gp[i].stage.rank = hx_comm_rank(h->comm); /* for its bounded wait's message */
    for (int d = 0; d < nd; d++)
        m->local_of[d] = -1;
    for (int i = 0; i < h->nlocal; i++)
        m->local_of[hx_comm_local_domain(h->comm, i)] = i;
    const int dev = h->cfg.gpu->device;
    snprintf(h->describe, sizeof h->describe,
             "gpu-local: %d domains in this process on GPU %d, pack kernels into the receiving "
             "domain's array, pulse by pulse",
             h->nlocal, dev);
    return HX_OK;
}

/* The plans' images (s: the refresh's stream, or NULL: synchronous). */
static hx_status loc_upload(hx_halo *h, hx_stream s)
{
    loc_impl *m = (loc_impl *)h->impl;
    for (int i = 0; i < h->nlocal; i++)
        HX_TRY(hx_gpu_plan_adopt(&m->gp[i], h->plan, i, s));
    return HX_OK;
}

static hx_status loc_update(hx_halo *h)
{
    loc_impl *m = (loc_impl *)h->impl;
    const hx_domain_plan *p = hx_plan_domain(h->plan, 0);
    HX_CUDA(cudaDeviceSynchronize()); /* nothing of the previous plan is in flight */
    if (p->cap_local > m->cap_local) {
        for (int i = 0; i < h->nlocal; i++) {
            float *nx = NULL, *nf = NULL;
            HX_CUDA(cudaMalloc((void **)&nx, 12 * (size_t)p->cap_local));
            HX_CUDA(cudaMalloc((void **)&nf, 12 * (size_t)p->cap_local));
            if (h->x[i]) {
                HX_CUDA(
                    cudaMemcpy(nx, h->x[i], 12 * (size_t)m->cap_local, cudaMemcpyDeviceToDevice));
                HX_CUDA(
                    cudaMemcpy(nf, h->f[i], 12 * (size_t)m->cap_local, cudaMemcpyDeviceToDevice));
                HX_CUDA(cudaFree(h->x[i]));
                HX_CUDA(cudaFree(h->f[i]));
            }
            h->x[i] = nx;
            h->f[i] = nf;
        }
        m->cap_local = p->cap_local;
    }
    return loc_upload(h, NULL);
}

static hx_status loc_exchange_x(hx_halo *h, hx_stream s)
{
    loc_impl *m = (loc_impl *)h->impl;
    const int np = hx_plan_domain(h->plan, 0)->npulses;
    for (int q = 0; q < np; q++)
        for (int i = 0; i < h->nlocal; i++) {
            const hx_pulse *P = &m->gp[i].host->pulses[q];
            const int j = m->local_of[P->send_rank];
            if (P->send_count == 0)
                continue;
            const hx_plan_view *v = &m->gp[i].view;
            HX_LAUNCH(k_loc_pack, hx_div_up(P->send_count, 256), 256, 0, s,
                      v->index_map + P->map_offset, P->send_count, (float)P->shift[0],
                      (float)P->shift[1], (float)P->shift[2], (const float *)h->x[i],
                      (float *)h->x[j] + 3 * (size_t)P->peer_atom_offset);
            HX_CUDA_LAUNCH("k_loc_pack");
            h->stats.bytes_sent += 12 * (long long)P->send_count;
        }
    return HX_OK;
}

static hx_status loc_exchange_f(hx_halo *h, hx_stream s)
{
    loc_impl *m = (loc_impl *)h->impl;
    const int np = hx_plan_domain(h->plan, 0)->npulses;
    for (int q = np - 1; q >= 0; q--)
        for (int i = 0; i < h->nlocal; i++) {
            /* our atoms sent in pulse q are atoms [peer_atom_offset, +send_count) there */
            const hx_pulse *P = &m->gp[i].host->pulses[q];
            const int j = m->local_of[P->send_rank];
            if (P->send_count == 0)
                continue;
            const hx_plan_view *v = &m->gp[i].view;
            HX_LAUNCH(k_loc_unpack, hx_div_up(P->send_count, 256), 256, 0, s,
                      v->index_map + P->map_offset, P->send_count,
                      (const float *)h->f[j] + 3 * (size_t)P->peer_atom_offset, (float *)h->f[i]);
            HX_CUDA_LAUNCH("k_loc_unpack");
            h->stats.bytes_sent += 12 * (long long)P->send_count;
        }
    return HX_OK;
}

static hx_status loc_msg_setup(hx_halo *h, int nchan, const size_t *cap, void ***send, void ***recv)
{
    loc_impl *m = (loc_impl *)h->impl;
    HX_CUDA(cudaDeviceSynchronize());
    loc_free_msgs(h, m);
    m->msend = (void ***)calloc((size_t)h->nlocal, sizeof *m->msend);
    m->mrecv = (void ***)calloc((size_t)h->nlocal, sizeof *m->mrecv);
    m->mcap = (size_t *)calloc((size_t)nchan + 1, sizeof *m->mcap);
    HX_CHECK(m->msend && m->mrecv && m->mcap, HX_ERR_NOMEM, "out of memory");
    m->nchan = nchan;
    for (int c = 0; c < nchan; c++)
        m->mcap[c] = (cap[c] + 15) & ~(size_t)15;
    for (int i = 0; i < h->nlocal; i++) {
        m->msend[i] = (void **)calloc((size_t)nchan + 1, sizeof(void *));
        m->mrecv[i] = (void **)calloc((size_t)nchan + 1, sizeof(void *));
        HX_CHECK(m->msend[i] && m->mrecv[i], HX_ERR_NOMEM, "out of memory");
        for (int c = 0; c < nchan; c++) {
            HX_CUDA(cudaMalloc(&m->msend[i][c], m->mcap[c]));
            HX_CUDA(cudaMalloc(&m->mrecv[i][c], m->mcap[c]));
            HX_CUDA(cudaMemset(m->msend[i][c], 0, 16));
            HX_CUDA(cudaMemset(m->mrecv[i][c], 0, 16));
        }
        send[i] = m->msend[i];
        recv[i] = m->mrecv[i];
    }
    return HX_OK;
}

static hx_status loc_msg(hx_halo *h, int chan, const int *dest, const int *src, hx_stream s)
{
    loc_impl *m = (loc_impl *)h->impl;
    (void)src; /* every domain is here: the copies by sender cover every receiver */
    for (int i = 0; i < h->nlocal; i++) {
        const int j = m->local_of[dest[i]];
        HX_CHECK(j >= 0, HX_ERR_INTERNAL, "gpu-local: domain %d is not in this process", dest[i]);
        const unsigned nb = hx_div_up((long long)(m->mcap[chan] / 16), 256);
        HX_LAUNCH(k_loc_copy, nb < 64 ? nb : 64, 256, 0, s, (const int4 *)m->msend[i][chan],
                  (int4 *)m->mrecv[j][chan], (long long)m->mcap[chan]);
        HX_CUDA_LAUNCH("k_loc_copy");
    }
    return HX_OK;
}

/* capturable; device: on the GPU context's device; messages on the device only */
extern "C" const hx_halo_ops hx_halo_ops_gpu_local = {
    "gpu-local",
    1,
    1,
    loc_setup,
    loc_update,
    loc_exchange_x,
    loc_exchange_f,
    NULL,
    loc_destroy,
    loc_upload,
    loc_msg_setup,
    loc_msg,
    1,
};
