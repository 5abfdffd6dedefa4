/* Builds without CUDA: the device API of include/halox/gpu.h answers "not compiled". */
#include "gpu/context.h"
#include "gpu/trace.h"
#include "halox/gpu.h"
#include "core/error.h"

#include <stdio.h>
#include <string.h>

hx_status hx_gpu_device_count(int *count, const char **why)
{
    HX_CHECK(count, HX_ERR_INVALID_ARG, "hx_gpu_device_count: NULL argument");
    *count = 0;
    if (why)
        *why = "halox was built without CUDA (no nvcc at configure time, or HALOX_WITH_CUDA=OFF)";
    return HX_OK;
}

hx_status hx_gpu_get_info(int device, hx_gpu_info *info)
{
    (void)device;
    (void)info;
    HX_FAIL(HX_ERR_NOT_COMPILED, "halox was built without CUDA: rebuild with nvcc available");
}

hx_status hx_gpu_set_device(int device)
{
    (void)device;
    HX_FAIL(HX_ERR_NOT_COMPILED, "halox was built without CUDA: rebuild with nvcc available");
}

hx_status hx_gpu_current_device(int *device)
{
    (void)device;
    HX_FAIL(HX_ERR_NOT_COMPILED, "halox was built without CUDA: rebuild with nvcc available");
}

hx_status hx_gpu_select_for_rank(int local_rank, int *device)
{
    (void)local_rank;
    (void)device;
    HX_FAIL(HX_ERR_NOT_COMPILED, "halox was built without CUDA: rebuild with nvcc available");
}

hx_status hx_gpu_copy(void *dst, const void *src, size_t bytes)
{
    (void)dst;
    (void)src;
    (void)bytes;
    HX_FAIL(HX_ERR_NOT_COMPILED, "halox was built without CUDA: rebuild with nvcc available");
}

void hx_gpu_describe(const hx_gpu_info *g, char *buf, int len)
{
    (void)g;
    snprintf(buf, (size_t)len, "no GPU (built without CUDA)");
}

void hx_gpu_uuid_string(const unsigned char uuid[16], char *buf, int len)
{
    (void)uuid;
    snprintf(buf, (size_t)len, "GPU-none");
}

/* The GPU context: nothing to own without CUDA. */
hx_status hx_gpu_enter(const hx_gpu_context *ctx, hx_gpu_guard *g)
{
    g->prev = -1;
    g->switched = 0;
    HX_CHECK(!ctx, HX_ERR_NOT_COMPILED,
             "halox was built without CUDA: rebuild with nvcc available");
    return HX_OK;
}
int hx_gpu_enter_quiet(const hx_gpu_context *ctx, hx_gpu_guard *g)
{
    g->prev = -1;
    g->switched = 0;
    return ctx == NULL;
}
void hx_gpu_leave(hx_gpu_guard *g)
{
    g->switched = 0;
}
hx_stream hx_gpu_ctx_stream(const hx_gpu_context *ctx, hx_gpu_stream_role role)
{
    (void)ctx;
    (void)role;
    return NULL;
}
hx_status hx_gpu_ctx_accept_stream(const hx_gpu_context *ctx, void *stream, const char *who,
                                   hx_stream *cache, hx_stream *out)
{
    (void)ctx;
    (void)stream;
    (void)cache;
    *out = NULL;
    HX_FAIL(HX_ERR_NOT_COMPILED, "%s: halox was built without CUDA: rebuild with nvcc available",
            who);
}
/* Only device backends wait for a stream; none exists without CUDA. */
hx_status hx_gpu_stream_wait(hx_stream s, double limit, int rank, const char *fmt, ...)
{
    (void)s;
    (void)limit;
    (void)rank;
    (void)fmt;
    return HX_OK;
}
void hx_gpu_context_params_default(hx_gpu_context_params *p)
{
    memset(p, 0, sizeof *p);
}
hx_status hx_gpu_parse_device_ids(const char *text, int *ids, int max, int *n)
{
    (void)text;
    (void)ids;
    (void)max;
    if (n)
        *n = 0;
    HX_FAIL(HX_ERR_NOT_COMPILED, "halox was built without CUDA: rebuild with nvcc available");
}
hx_status hx_gpu_context_create(const hx_gpu_context_params *p, struct hx_comm *comm,
                                hx_gpu_context **out)
{
    (void)p;
    (void)comm;
    if (out)
        *out = NULL;
    HX_FAIL(HX_ERR_NOT_COMPILED, "halox was built without CUDA: rebuild with nvcc available");
}
void hx_gpu_context_destroy(hx_gpu_context **ctx)
{
    if (ctx)
        *ctx = NULL;
}
int hx_gpu_context_device(const hx_gpu_context *ctx)
{
    (void)ctx;
    return -1;
}
const unsigned char *hx_gpu_context_uuid(const hx_gpu_context *ctx)
{
    (void)ctx;
    return NULL;
}
const unsigned char *hx_gpu_context_rank_uuid(const hx_gpu_context *ctx, int rank)
{
    (void)ctx;
    (void)rank;
    return NULL;
}
int hx_gpu_context_same_gpu(const hx_gpu_context *ctx, int rank)
{
    (void)ctx;
    (void)rank;
    return 0;
}
int hx_gpu_context_ranks_on_gpu(const hx_gpu_context *ctx)
{
    (void)ctx;
    return 0;
}
int hx_gpu_context_gpus(const hx_gpu_context *ctx)
{
    (void)ctx;
    return 0;
}
int hx_gpu_context_mps(const hx_gpu_context *ctx)
{
    (void)ctx;
    return 0;
}
void *hx_gpu_context_stream(const hx_gpu_context *ctx, hx_gpu_stream_role role)
{
    (void)ctx;
    (void)role;
    return NULL;
}
hx_status hx_gpu_context_check_stream(const hx_gpu_context *ctx, void *stream, const char *who)
{
    (void)ctx;
    (void)stream;
    (void)who;
    HX_FAIL(HX_ERR_NOT_COMPILED, "halox was built without CUDA: rebuild with nvcc available");
}
hx_status hx_gpu_context_make_current(const hx_gpu_context *ctx)
{
    (void)ctx;
    HX_FAIL(HX_ERR_NOT_COMPILED, "halox was built without CUDA: rebuild with nvcc available");
}
hx_status hx_gpu_context_synchronize(const hx_gpu_context *ctx)
{
    (void)ctx;
    HX_FAIL(HX_ERR_NOT_COMPILED, "halox was built without CUDA: rebuild with nvcc available");
}
const char *hx_gpu_context_describe(const hx_gpu_context *ctx)
{
    (void)ctx;
    return "no GPU (built without CUDA)";
}

/* The search trace (gpu/trace.h) marks device work: without CUDA there is none to trace. */
hx_status hx_gpu_trace_open(int rank, int nranks)
{
    (void)rank;
    (void)nranks;
    return HX_OK;
}

void hx_gpu_trace_close(void) {}

int hx_gpu_trace_on(void)
{
    return 0;
}

hx_status hx_gpu_trace_prepare(hx_stream s)
{
    (void)s;
    return HX_OK;
}

void hx_gpu_trace_search_begin(long long step)
{
    (void)step;
}

void hx_gpu_trace_search_end(void) {}

void hx_gpu_trace_host(const char *label)
{
    (void)label;
}

hx_status hx_gpu_trace_mark(const void *who, int sub, int idx, const char *label, hx_stream s)
{
    (void)who;
    (void)sub;
    (void)idx;
    (void)label;
    (void)s;
    return HX_OK;
}
