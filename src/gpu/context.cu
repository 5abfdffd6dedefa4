/* The GPU context (include/halox/gpu.h, src/gpu/context.h): the one place where halox chooses a
 * device, creates streams and switches the current device.
 *
 * Why one owner: before it, the device was chosen in three places by three rules (the program by
 * global rank, the halo backends by node-local rank with a cudaSetDevice hidden in their set-up,
 * the MD backend by whatever was current) and streams travelled as unchecked void *. On one GPU
 * every rule gives device 0 and nothing shows; on two GPUs a stream made before the halo backend
 * switched device sat on the other GPU, the backend's kernels were launched into it (an error
 * without MPS, which left the peer waiting in MPI; under MPS kernels ran on the wrong GPU with
 * the other GPU's NVSHMEM state: illegal address). docs/design/gpu-halo.md, "Several GPUs". */
#include "gpu/context.h"
#include "gpu/cuda_check.h"
#include "comm/comm_impl.h"
#include "core/wait.h"
#include "halox/log.h"

#include <ctype.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- bounded waits ------------------------------------------------------------------------ */

/* The one polling loop of the bounded waits: query(obj) until it is no longer cudaErrorNotReady,
 * at most `limit` seconds; WHAT formatted from fmt only on a timeout. */
static hx_status wait_bounded(cudaError_t (*query)(void *), void *obj, double limit, int rank,
                              const char *fmt, va_list ap)
{
    cudaError_t e = query(obj);
    const double t0 = e == cudaErrorNotReady ? hx_wtime() : 0.0;
    while (e == cudaErrorNotReady) {
        const double w = hx_wtime() - t0;
        if (w > limit) {
            char what[256];
            vsnprintf(what, sizeof what, fmt, ap);
            HX_FAIL(HX_ERR_TIMEOUT,
                    "rank %d: the GPU did not finish %s within %g s: a kernel or copy hung, or "
                    "the device is stuck (the deadline is HALOX_WAIT_TIMEOUT's)",
                    rank, what, limit);
        }
        if (w > 1e-3)
            sched_yield(); /* past a millisecond a few microseconds more do not matter */
        e = query(obj);
    }
    HX_CHECK(e == cudaSuccess, HX_ERR_CUDA, "waiting for the GPU failed: %s (%s)",
             cudaGetErrorString(e), cudaGetErrorName(e));
    return HX_OK;
}

static cudaError_t query_stream(void *s)
{
    return cudaStreamQuery((cudaStream_t)s);
}

static cudaError_t query_event(void *ev)
{
    return cudaEventQuery((cudaEvent_t)ev);
}

extern "C" hx_status hx_gpu_stream_wait(hx_stream s, double limit, int rank, const char *fmt, ...)
{
    if (limit <= 0) {
        HX_CUDA(cudaStreamSynchronize(s));
        return HX_OK;
    }
    va_list ap;
    va_start(ap, fmt);
    const hx_status st = wait_bounded(query_stream, (void *)s, limit, rank, fmt, ap);
    va_end(ap);
    return st;
}

extern "C" hx_status hx_gpu_event_wait(void *ev, double limit, int rank, const char *fmt, ...)
{
    if (limit <= 0) {
        HX_CUDA(cudaEventSynchronize((cudaEvent_t)ev));
        return HX_OK;
    }
    va_list ap;
    va_start(ap, fmt);
    const hx_status st = wait_bounded(query_event, ev, limit, rank, fmt, ap);
    va_end(ap);
    return st;
}

extern "C" hx_status hx_gpu_ctx_wait_idle(const hx_gpu_context *ctx, hx_stream extra, double limit,
                                          int rank, const char *what)
{
    for (int k = 0; ctx && k < HX_GPU_NSTREAMS; k++)
        if (ctx->streams[k])
            HX_TRY(hx_gpu_stream_wait(ctx->streams[k], limit, rank, "%s (stream %d)", what, k));
    if (extra)
        HX_TRY(hx_gpu_stream_wait(extra, limit, rank, "%s (the caller's stream)", what));
    return hx_gpu_stream_wait(NULL, limit, rank, "%s (the default stream)", what);
}

/* ---- the guard ---------------------------------------------------------------------------- */

extern "C" hx_status hx_gpu_enter(const hx_gpu_context *ctx, hx_gpu_guard *g)
{
    g->prev = -1;
    g->switched = 0;
    if (!ctx)
        return HX_OK;
    HX_CUDA(cudaGetDevice(&g->prev));
    if (g->prev != ctx->device) {
        HX_CUDA(cudaSetDevice(ctx->device));
        g->switched = 1;
    }
    return HX_OK;
}

extern "C" int hx_gpu_enter_quiet(const hx_gpu_context *ctx, hx_gpu_guard *g)
{
    g->prev = -1;
    g->switched = 0;
    if (!ctx)
        return 1;
    if (cudaGetDevice(&g->prev) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    if (g->prev != ctx->device) {
        if (cudaSetDevice(ctx->device) != cudaSuccess) {
            (void)cudaGetLastError();
            return 0;
        }
        g->switched = 1;
    }
    return 1;
}

extern "C" void hx_gpu_leave(hx_gpu_guard *g)
{
    if (!g->switched)
        return;
    g->switched = 0;
    const cudaError_t rc = cudaSetDevice(g->prev);
    if (rc != cudaSuccess) {
        (void)cudaGetLastError();
        hx_log(HX_LOG_WARN, "could not make the caller's device %d current again: %s", g->prev,
               cudaGetErrorString(rc));
    }
}

/* ---- streams ------------------------------------------------------------------------------ */

extern "C" hx_stream hx_gpu_ctx_stream(const hx_gpu_context *ctx, hx_gpu_stream_role role)
{
    return ctx && role >= 0 && role < HX_GPU_NSTREAMS ? ctx->streams[role] : NULL;
}

extern "C" hx_status hx_gpu_ctx_accept_stream(const hx_gpu_context *ctx, void *stream,
                                              const char *who, hx_stream *cache, hx_stream *out)
{
    hx_stream s = (hx_stream)stream;
    *out = NULL;
    HX_CHECK(ctx, HX_ERR_INVALID_ARG, "%s: no GPU context to check the stream against", who);
    int known = s == NULL || (cache && s == *cache);
    for (int k = 0; k < HX_GPU_NSTREAMS && !known; k++)
        known = s == ctx->streams[k];
    if (!known) {
        int dev = -1;
        const cudaError_t rc = cudaStreamGetDevice(s, &dev);
        if (rc != cudaSuccess) {
            (void)cudaGetLastError();
            HX_FAIL(HX_ERR_INVALID_ARG,
                    "%s: the stream %p is not a valid CUDA stream (cudaStreamGetDevice: %s): pass "
                    "a stream of GPU %d, e.g. hx_gpu_context_stream(ctx, HX_GPU_STREAM_NONLOCAL)",
                    who, stream, cudaGetErrorString(rc), ctx->device);
        }
        HX_CHECK(dev == ctx->device, HX_ERR_INVALID_ARG,
                 "%s: the stream belongs to GPU %d but the GPU context runs on GPU %d: create "
                 "streams after the context chose its device, on that device (or take one from "
                 "hx_gpu_context_stream)",
                 who, dev, ctx->device);
        if (cache)
            *cache = s;
    }
    *out = s;
    return HX_OK;
}

/* ---- creation ----------------------------------------------------------------------------- */

/* The MPS control daemon listens on a named pipe in CUDA_MPS_PIPE_DIRECTORY (default
 * /tmp/nvidia-mps). Its presence is what a client can check without CUDA calls. */
extern "C" int hx_gpu_mps_pipe_found(void)
{
    const char *dir = getenv("CUDA_MPS_PIPE_DIRECTORY");
    char path[1024];
    snprintf(path, sizeof path, "%s/control", dir && dir[0] ? dir : "/tmp/nvidia-mps");
    return access(path, F_OK) == 0;
}

extern "C" void hx_gpu_context_params_default(hx_gpu_context_params *p)
{
    memset(p, 0, sizeof *p);
}

extern "C" hx_status hx_gpu_parse_device_ids(const char *text, int *ids, int max, int *n)
{
    HX_CHECK(text && ids && n && max > 0, HX_ERR_INVALID_ARG,
             "hx_gpu_parse_device_ids: NULL argument");
    *n = 0;
    const int commas = strchr(text, ',') != NULL;
    const char *p = text;
    HX_CHECK(*p, HX_ERR_INVALID_ARG, "GPU id list is empty: give device indices such as 0,1");
    while (*p) {
        HX_CHECK(isdigit((unsigned char)*p), HX_ERR_INVALID_ARG,
                 "GPU id list '%s': '%c' at position %d is not a device index: give indices "
                 "separated by commas, such as 0,1 or 0,0,1,1",
                 text, *p, (int)(p - text) + 1);
        long v = 0;
        if (commas) {
            char *end = NULL;
            v = strtol(p, &end, 10);
            p = end;
        } else {
            v = *p++ - '0'; /* GROMACS's "0011": one digit per entry */
        }
        HX_CHECK(*n < max, HX_ERR_INVALID_ARG, "GPU id list '%s': more than %d entries", text, max);
        HX_CHECK(v >= 0 && v < 1024, HX_ERR_INVALID_ARG, "GPU id list '%s': %ld is not a device",
                 text, v);
        ids[(*n)++] = (int)v;
        if (commas && *p == ',') {
            p++;
            HX_CHECK(*p, HX_ERR_INVALID_ARG, "GPU id list '%s' ends with a comma", text);
        }
    }
    return HX_OK;
}

extern "C" void hx_gpu_context_destroy(hx_gpu_context **pc)
{
    if (!pc || !*pc)
        return;
    hx_gpu_context *c = *pc;
    hx_gpu_guard g;
    if (c->streams[0] && hx_gpu_enter_quiet(c, &g)) {
        /* bounded: a stream that never finishes is destroyed anyway (CUDA releases it once
         * its work is done) */
        const double limit = hx_wait_timeout_gpu(HX_WAIT_SETUP);
        for (int k = 0; k < HX_GPU_NSTREAMS; k++)
            if (c->streams[k]) {
                if (hx_gpu_stream_wait(c->streams[k], limit, c->rank, "stream %d at destroy", k) !=
                    HX_OK)
                    hx_log(HX_LOG_WARN, "%s", hx_last_error_message());
                (void)cudaStreamDestroy(c->streams[k]);
            }
        hx_gpu_leave(&g);
    }
    (void)cudaGetLastError();
    free(c->uuids);
    free(c);
    *pc = NULL;
}

/* The local half of creation: the device, its identity, the streams. */
static hx_status context_local(hx_gpu_context *c, const hx_gpu_context_params *p, hx_comm *comm)
{
    HX_TRY(hx_comm_node_info(comm, &c->local_rank, &c->local_size));
    const char *why = NULL;
    HX_TRY(hx_gpu_device_count(&c->ndevices, &why));
    HX_CHECK(c->ndevices > 0, HX_ERR_CUDA, "rank %d has no GPU: %s", c->rank,
             why ? why : "none found");
    if (p && p->ndevice_ids > 0) {
        for (int i = 0; i < p->ndevice_ids; i++)
            HX_CHECK(p->device_ids[i] >= 0 && p->device_ids[i] < c->ndevices, HX_ERR_INVALID_ARG,
                     "GPU id %d (entry %d of the list) does not exist: this process sees %d "
                     "device%s (0 to %d%s); give ids below %d",
                     p->device_ids[i], i + 1, c->ndevices, c->ndevices == 1 ? "" : "s",
                     c->ndevices - 1,
                     getenv("CUDA_VISIBLE_DEVICES") ? ", as CUDA_VISIBLE_DEVICES numbers them" : "",
                     c->ndevices);
        c->device = p->device_ids[c->local_rank % p->ndevice_ids];
    } else {
        c->device = c->local_rank % c->ndevices;
    }
    cudaDeviceProp prop;
    HX_CUDA(cudaGetDeviceProperties(&prop, c->device));
    memcpy(c->uuid, &prop.uuid, sizeof c->uuid);
    c->sm_count = prop.multiProcessorCount;
    c->cc_major = prop.major;
    c->cc_minor = prop.minor;
    snprintf(c->name, sizeof c->name, "%s", prop.name);
    hx_gpu_guard g;
    HX_TRY(hx_gpu_enter(c, &g));
    int least = 0, greatest = 0;
    hx_status st = HX_OK;
    HX_CUDA_GOTO(st, cudaDeviceGetStreamPriorityRange(&least, &greatest), out);
    HX_CUDA_GOTO(st,
                 cudaStreamCreateWithPriority(&c->streams[HX_GPU_STREAM_LOCAL],
                                              cudaStreamNonBlocking, least),
                 out);
    /* the halo exchange and the forces waiting for it are the step's critical path */
    HX_CUDA_GOTO(st,
                 cudaStreamCreateWithPriority(&c->streams[HX_GPU_STREAM_NONLOCAL],
                                              cudaStreamNonBlocking, greatest),
                 out);
    HX_CUDA_GOTO(st,
                 cudaStreamCreateWithPriority(&c->streams[HX_GPU_STREAM_UPDATE],
                                              cudaStreamNonBlocking, least),
                 out);
out:
    if (st == HX_OK && p && p->make_current)
        g.switched = 0; /* asked for: the device stays current */
    hx_gpu_leave(&g);
    return st;
}

/* Every rank's UUID on every rank (collective). */
static hx_status context_gather(hx_gpu_context *c, hx_comm *comm, hx_status local)
{
    const int n = c->nranks, nlocal = hx_comm_nlocal(comm), nd = hx_comm_ndomains(comm);
    c->uuids = (unsigned char *)calloc((size_t)n, 16);
    const void **in = (const void **)calloc((size_t)nlocal + 1, sizeof *in);
    size_t *bytes = (size_t *)calloc((size_t)nlocal + 1, sizeof *bytes);
    size_t *counts = (size_t *)calloc((size_t)nd + 1, sizeof *counts);
    hx_status st = local;
    if (st == HX_OK && !(c->uuids && in && bytes && counts))
        st = hx_error_set(HX_ERR_NOMEM, __FILE__, __LINE__, __func__, "out of memory");
    st = hx_comm_agree(comm, st);
    void *all = NULL;
    if (st == HX_OK) {
        /* one block per local domain (the serial communicator holds several): the same GPU */
        for (int i = 0; i < nlocal; i++) {
            in[i] = c->uuid;
            bytes[i] = 16;
        }
        st = hx_comm_gather_bytes(comm, in, bytes, &all, counts);
    }
    if (st == HX_OK && all) /* the root: domain d's block at 16 d, held by rank_of_domain(d) */
        for (int d = 0; d < nd; d++)
            memcpy(c->uuids + 16 * (size_t)hx_comm_rank_of_domain(comm, d),
                   (unsigned char *)all + 16 * (size_t)d, 16);
    free(all);
    if (st == HX_OK)
        st = hx_comm_bcast_bytes(comm, c->uuids, 16 * (size_t)n);
    free(in);
    free(bytes);
    free(counts);
    return st;
}

extern "C" hx_status hx_gpu_context_create(const hx_gpu_context_params *p, hx_comm *comm,
                                           hx_gpu_context **out)
{
    HX_CHECK(comm && out, HX_ERR_INVALID_ARG, "hx_gpu_context_create: NULL argument");
    *out = NULL;
    hx_gpu_context *c = (hx_gpu_context *)calloc(1, sizeof *c);
    hx_status st =
        c ? HX_OK : hx_error_set(HX_ERR_NOMEM, __FILE__, __LINE__, __func__, "out of memory");
    if (st == HX_OK && p && p->ndevice_ids > 0 && !p->device_ids)
        st = hx_error_set(HX_ERR_INVALID_ARG, __FILE__, __LINE__, __func__,
                          "hx_gpu_context_create: %d device ids but no list", p->ndevice_ids);
    if (c) {
        c->rank = hx_comm_rank(comm);
        c->nranks = hx_comm_nranks(comm);
    }
    /* hx_comm_node_info is collective at its first call: every rank reaches it */
    if (st == HX_OK)
        st = context_local(c, p, comm);
    else if (c)
        (void)hx_comm_node_info(comm, &c->local_rank, &c->local_size);
    else {
        int lr, ls;
        (void)hx_comm_node_info(comm, &lr, &ls);
    }
    if (!c) {
        (void)hx_comm_agree(comm, st); /* the others learn of it in their gather's agreement */
        return st;
    }
    st = context_gather(c, comm, st);
    if (st != HX_OK) {
        hx_gpu_context_destroy(&c);
        return st;
    }
    for (int r = 0; r < c->nranks; r++)
        c->ranks_on_gpu += memcmp(c->uuids + 16 * (size_t)r, c->uuid, 16) == 0;
    if (c->ranks_on_gpu < 1)
        c->ranks_on_gpu = 1;
    c->mps = hx_gpu_mps_pipe_found();
    char id[48], info[400] = "";
    hx_gpu_uuid_string(c->uuid, id, (int)sizeof id);
    hx_gpu_info gi;
    if (hx_gpu_get_info(c->device, &gi) == HX_OK)
        hx_gpu_describe(&gi, info, (int)sizeof info);
    snprintf(c->describe, sizeof c->describe,
             "GPU %d of %d: %s %s; node-local rank %d of %d; %d rank%s on this GPU%s", c->device,
             c->ndevices, info[0] ? info : c->name, id, c->local_rank, c->local_size,
             c->ranks_on_gpu, c->ranks_on_gpu == 1 ? "" : "s", c->mps ? "; MPS" : "");
    hx_log(HX_LOG_DEBUG, "GPU context: %s", c->describe);
    *out = c;
    return HX_OK;
}

/* ---- queries ------------------------------------------------------------------------------ */

extern "C" int hx_gpu_context_device(const hx_gpu_context *c)
{
    return c ? c->device : -1;
}

extern "C" const unsigned char *hx_gpu_context_uuid(const hx_gpu_context *c)
{
    return c ? c->uuid : NULL;
}

extern "C" const unsigned char *hx_gpu_context_rank_uuid(const hx_gpu_context *c, int rank)
{
    return c && rank >= 0 && rank < c->nranks ? c->uuids + 16 * (size_t)rank : NULL;
}

extern "C" int hx_gpu_context_same_gpu(const hx_gpu_context *c, int rank)
{
    const unsigned char *u = hx_gpu_context_rank_uuid(c, rank);
    return u && memcmp(u, c->uuid, 16) == 0;
}

extern "C" int hx_gpu_context_ranks_on_gpu(const hx_gpu_context *c)
{
    return c ? c->ranks_on_gpu : 0;
}

extern "C" int hx_gpu_context_gpus(const hx_gpu_context *c)
{
    int n = 0;
    for (int r = 0; c && r < c->nranks; r++) {
        int first = 1; /* count each UUID at its first rank */
        for (int q = 0; q < r && first; q++)
            first = memcmp(c->uuids + 16 * (size_t)q, c->uuids + 16 * (size_t)r, 16) != 0;
        n += first;
    }
    return n;
}

extern "C" int hx_gpu_context_mps(const hx_gpu_context *c)
{
    return c ? c->mps : 0;
}

extern "C" void *hx_gpu_context_stream(const hx_gpu_context *c, hx_gpu_stream_role role)
{
    return (void *)hx_gpu_ctx_stream(c, role);
}

extern "C" hx_status hx_gpu_context_check_stream(const hx_gpu_context *c, void *stream,
                                                 const char *who)
{
    hx_stream s;
    return hx_gpu_ctx_accept_stream(c, stream, who ? who : "halox", NULL, &s);
}

extern "C" hx_status hx_gpu_context_make_current(const hx_gpu_context *c)
{
    HX_CHECK(c, HX_ERR_INVALID_ARG, "hx_gpu_context_make_current: NULL context");
    HX_CUDA(cudaSetDevice(c->device));
    return HX_OK;
}

static hx_status synchronize_all(const hx_gpu_context *c)
{
    for (int k = 0; k < HX_GPU_NSTREAMS; k++)
        HX_TRY(hx_gpu_stream_wait(c->streams[k], hx_wait_timeout_gpu(HX_WAIT_SETUP), c->rank,
                                  "stream %d (hx_gpu_context_synchronize)", k));
    return HX_OK;
}

extern "C" hx_status hx_gpu_context_synchronize(const hx_gpu_context *c)
{
    HX_CHECK(c, HX_ERR_INVALID_ARG, "hx_gpu_context_synchronize: NULL context");
    HX_GPU_ON(c, synchronize_all(c));
}

extern "C" const char *hx_gpu_context_describe(const hx_gpu_context *c)
{
    return c ? c->describe : "no GPU context";
}
