/* The GPU context inside halox (the public handle is include/halox/gpu.h): its layout for the
 * code that runs on it, and the device guard.
 *
 * The guard is what keeps "no halox call changes the caller's current device" true: a call that
 * does CUDA work enters the context's device and leaves it restoring the caller's, and device
 * switches happen nowhere else (no cudaSetDevice outside src/gpu/context.cu and
 * hx_gpu_set_device). Entering costs one cudaGetDevice when the device is already current (the
 * programs make it current once), a switch there and back otherwise. Guards nest. */
#ifndef HX_GPU_CONTEXT_H
#define HX_GPU_CONTEXT_H

#include "gpu/stream.h"
#include "halox/gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

struct hx_gpu_context {
    int device;   /* CUDA device index in this process */
    int ndevices; /* visible to this process */
    int local_rank, local_size;
    int rank, nranks;       /* in the communicator the context was created on */
    unsigned char uuid[16]; /* this GPU */
    unsigned char *uuids;   /* [nranks][16]: every rank's GPU */
    int ranks_on_gpu;       /* ranks whose UUID is ours, this one included */
    int mps;                /* an MPS control pipe was found */
    int sm_count;           /* multiprocessors */
    int cc_major, cc_minor; /* compute capability */
    char name[256];         /* device name */
    hx_stream streams[HX_GPU_NSTREAMS];
    char describe[640];
};

/* The caller's device, to restore on leaving; switched: whether entering changed it. */
typedef struct hx_gpu_guard {
    int prev;
    int switched;
} hx_gpu_guard;

/* Make ctx's device current (a no-op when it is). NULL ctx: nothing (host-only callers). */
hx_status hx_gpu_enter(const hx_gpu_context *ctx, hx_gpu_guard *g);
/* The same for clean-up paths (destroy), which must not replace the error being reported:
 * returns 1 when entered, 0 (nothing recorded) when CUDA refused. */
int hx_gpu_enter_quiet(const hx_gpu_context *ctx, hx_gpu_guard *g);
/* Restore the device current before hx_gpu_enter; never fails (a failure to restore is logged:
 * the caller's device was valid when we found it). */
void hx_gpu_leave(hx_gpu_guard *g);

/* Run `call` (an hx_status expression) with ctx's device current, restoring the caller's, and
 * return its status from the enclosing function. */
#define HX_GPU_ON(ctx, call)                                                                       \
    do {                                                                                           \
        hx_gpu_guard hx_guard_;                                                                    \
        hx_status hx_on_st_ = hx_gpu_enter((ctx), &hx_guard_);                                     \
        if (hx_on_st_ == HX_OK) {                                                                  \
            hx_on_st_ = (call);                                                                    \
            hx_gpu_leave(&hx_guard_);                                                              \
        }                                                                                          \
        return hx_on_st_;                                                                          \
    } while (0)

hx_stream hx_gpu_ctx_stream(const hx_gpu_context *ctx, hx_gpu_stream_role role);
/* Whether an MPS control daemon's pipe is there now (CUDA_MPS_PIPE_DIRECTORY, default
 * /tmp/nvidia-mps): what a client can check without CUDA calls. */
int hx_gpu_mps_pipe_found(void);
/* A stream from outside (void *, a cudaStream_t or NULL) as an hx_stream once it was found on
 * ctx's device: HX_ERR_INVALID_ARG naming `who`, the stream's device and the context's otherwise.
 * *cache holds the last stream accepted (NULL at first): the context's own streams and the cached
 * one are accepted by a pointer compare, any other costs one cudaStreamGetDevice. */
hx_status hx_gpu_ctx_accept_stream(const hx_gpu_context *ctx, void *stream, const char *who,
                                   hx_stream *cache, hx_stream *out);

/* Bounded host waits for the GPU (no rank left waiting, include/halox/timer.h): poll
 * cudaStreamQuery until the stream s (NULL: the default stream) has finished what was enqueued,
 * at most `limit` seconds (0: cudaStreamSynchronize, no deadline). Past the deadline
 * HX_ERR_TIMEOUT: "rank R: the GPU did not finish WHAT within T s: ...", WHAT formatted from fmt
 * only then; the stream is left as it is (its buffers must not be freed: see destroy). */
hx_status hx_gpu_stream_wait(hx_stream s, double limit, int rank, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* The same for a recorded event (a cudaEvent_t): passed once the work before its record ran. */
hx_status hx_gpu_event_wait(void *ev, double limit, int rank, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* The same for everything a backend may have enqueued: ctx's streams, `extra` (a caller's
 * stream, may be NULL) and the default stream. */
hx_status hx_gpu_ctx_wait_idle(const hx_gpu_context *ctx, hx_stream extra, double limit, int rank,
                               const char *what);

#ifdef __cplusplus
}
#endif
#endif
