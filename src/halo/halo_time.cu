/* hx_halo_time_exchange (include/halox/halo.h): the device time of the exchange, for
 * `halox bench exchange`. Here rather than in the program so that the program calls no CUDA. */
#include "halo/halo_impl.h"
#include "comm/comm_impl.h"
#include "core/wait.h"
#include "gpu/context.h"
#include "gpu/cuda_check.h"
#include "halox/timer.h"

#include <cuda_runtime.h>
#include <stdlib.h>

/* With the context's device current (events are made on it); s was checked against it. */
static hx_status time_on(hx_halo *h, hx_stream s, int warmup, int steps, int batch, int graph,
                         double *batch_us, double *wall_us)
{
    const int ns = steps / batch; /* batches */
    cudaEvent_t *ev = (cudaEvent_t *)calloc((size_t)ns + 1, sizeof *ev);
    hx_status st = HX_OK;
    cudaGraph_t g = NULL;
    cudaGraphExec_t exec = NULL;
    double t0 = 0.0;
    if (!ev)
        HX_FAIL_GOTO(st, HX_ERR_NOMEM, out, "out of memory");
    for (int i = 0; i <= ns; i++)
        if (cudaEventCreate(&ev[i]) != cudaSuccess)
            HX_FAIL_GOTO(st, HX_ERR_CUDA, out, "cudaEventCreate failed");
    if (graph) {
        if (cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) != cudaSuccess)
            HX_FAIL_GOTO(st, HX_ERR_CUDA, out, "cudaStreamBeginCapture failed");
        hx_status a = hx_halo_exchange_x(h, s);
        hx_status c = a == HX_OK ? hx_halo_exchange_f(h, s) : a;
        cudaError_t e = cudaStreamEndCapture(s, &g);
        HX_TRY_GOTO(st, c, out);
        if (e != cudaSuccess || cudaGraphInstantiate(&exec, g, 0) != cudaSuccess)
            HX_FAIL_GOTO(st, HX_ERR_CUDA, out, "capturing the exchange in a CUDA graph failed");
    }
    for (int i = -warmup; i < steps; i++) {
        if (i == 0) {
            HX_TRY_GOTO(st,
                        hx_gpu_stream_wait(s, hx_wait_timeout_gpu(HX_WAIT_STEP),
                                           hx_comm_rank(h->comm), "the warm-up exchanges"),
                        out);
            HX_TRY_GOTO(st, hx_comm_agree(h->comm, HX_OK), out); /* start together */
            t0 = hx_wtime();
        }
        if (i >= 0 && i % batch == 0)
            cudaEventRecord(ev[i / batch], s);
        if (exec) {
            if (cudaGraphLaunch(exec, s) != cudaSuccess)
                HX_FAIL_GOTO(st, HX_ERR_CUDA, out, "cudaGraphLaunch failed");
        } else {
            HX_TRY_GOTO(st, hx_halo_exchange_x(h, s), out);
            HX_TRY_GOTO(st, hx_halo_exchange_f(h, s), out);
        }
    }
    cudaEventRecord(ev[ns], s);
    HX_TRY_GOTO(st,
                hx_gpu_stream_wait(s, hx_wait_timeout_gpu(HX_WAIT_STEP), hx_comm_rank(h->comm),
                                   "the %d timed exchanges", steps),
                out);
    HX_TRY_GOTO(st, hx_comm_agree(h->comm, HX_OK), out);
    *wall_us = (hx_wtime() - t0) * 1e6 / steps;
    for (int i = 0; i < ns; i++) {
        float ms = 0;
        cudaEventElapsedTime(&ms, ev[i], ev[i + 1]);
        batch_us[i] = 1e3 * ms / batch;
    }
out:
    if (exec)
        cudaGraphExecDestroy(exec);
    if (g)
        cudaGraphDestroy(g);
    if (ev)
        for (int i = 0; i <= ns; i++)
            if (ev[i])
                cudaEventDestroy(ev[i]);
    free(ev);
    return st;
}

extern "C" hx_status hx_halo_time_exchange(hx_halo *h, void *stream, int warmup, int steps,
                                           int batch, int graph, double *batch_us, double *wall_us)
{
    HX_CHECK(h && batch_us && wall_us && warmup >= 0 && steps > 0 && batch > 0 &&
                 steps % batch == 0,
             HX_ERR_INVALID_ARG,
             "hx_halo_time_exchange: bad argument (steps %d must be a positive multiple of batch "
             "%d, warmup %d >= 0)",
             steps, batch, warmup);
    HX_CHECK(h->ops->device, HX_ERR_INVALID_ARG,
             "hx_halo_time_exchange: the %s backend runs on host memory: time a device backend",
             h->ops->name);
    hx_stream s = NULL;
    HX_TRY(
        hx_gpu_ctx_accept_stream(h->cfg.gpu, stream, "hx_halo_time_exchange", &h->stream_ok, &s));
    HX_GPU_ON(h->cfg.gpu, time_on(h, s, warmup, steps, batch, graph, batch_us, wall_us));
}
