/* halox: the halo exchange: a plan (include/halox/plan.h) run by a backend chosen by name, on
 * host or device memory.
 *
 * Data path: geometry (hx_dd) -> plan (hx_plan: plain arrays per domain, and a device-ready
 * image of them) -> backend (hx_halo: runs the plan on host or device memory) -> engine (calls
 * the exchange between its force kernels). The plan never knows which backend runs it; a backend
 * never recomputes the plan. */
#ifndef HALOX_HALO_H
#define HALOX_HALO_H

#include "halox/comm.h"
#include "halox/gpu.h"
#include "halox/plan.h"
#include "halox/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hx_memspace { HX_MEM_HOST = 0, HX_MEM_DEVICE = 1 } hx_memspace;
typedef enum hx_real { HX_REAL_F64 = 0, HX_REAL_F32 = 1 } hx_real;

/* ---- the exchange ----------------------------------------------------------------------- */

/* hx_halo runs a plan through a backend chosen by name (libCEED-style registry):
 *   "host"       the host executor over the communicator (serial or MPI): per pulse pack, send,
 *                receive, unpack, in double or float, on host memory. The reference.
 *   "gpu-mpi"    CPU-driven GPU baseline: per pulse a pack kernel, the CPU waits for it, MPI
 *                moves the data (through pinned host buffers unless MPI is CUDA-aware), an
 *                unpack kernel. What GROMACS did before its GPU-direct paths.
 *   "gpu-direct" CPU-driven GPU baseline over CUDA IPC: per pulse a pack kernel, cudaMemcpyAsync
 *                into the peer's buffer, small handshakes over the communicator.
 *   "nvshmem"    GPU-initiated (Doijade et al., arXiv 2509.21527): one fused kernel per
 *                direction for all pulses, packing, transfer and signalling inside the kernel.
 * A backend that was not compiled into this build answers HX_ERR_NOT_COMPILED. */
typedef struct hx_halo hx_halo;

typedef enum hx_halo_path {
    HX_HALO_PATH_AUTO = 0,    /* nvshmem: peer-to-peer where the peer's memory is addressable */
    HX_HALO_PATH_P2P = 1,     /* nvshmem: force stores into the peer's memory (nvshmem_ptr) */
    HX_HALO_PATH_NETWORK = 2, /* nvshmem: force put-with-signal through a staging buffer */
} hx_halo_path;

typedef struct hx_halo_config {
    const char *backend; /* a name above; NULL means "host" */
    /* The GPU backends' device and streams (include/halox/gpu.h): required by gpu-mpi,
     * gpu-direct and nvshmem, which run on its device and never choose one of their own; created
     * on the same communicator (or one with the same ranks). Ignored by "host". Must outlive the
     * exchange. */
    const hx_gpu_context *gpu;
    hx_real real;      /* element type of the coordinate and force arrays */
    hx_memspace mem;   /* where they live: HX_MEM_HOST ("host") or HX_MEM_DEVICE (GPU ones) */
    hx_halo_path path; /* nvshmem only */
    int bulk_copy;     /* nvshmem P2P: pack through shared memory and the bulk-copy engine */
    /* Diagnostic mode of device-side waits: give up after this many seconds, report rank, peer,
     * pulse, step, expected and observed signal, and stop the kernel. < 0: the backend's
     * default (on in debug builds), 0: off. */
    double wait_timeout;
    /* Testing: non-zero injects random delays into blocks and processes (a race shows up as a
     * changed result), seeded with this value. */
    unsigned long long stress_seed;
    /* nvshmem: a device-side wait that finds its signal not yet there polls again after a
     * __nanosleep growing from 32 ns up to this bound, so that spinning waiters leave issue
     * slots and L2 bandwidth to the kernels they wait for (several processes sharing a GPU
     * time-share its SMs). < 0: the backend's default (HALOX_NVSHMEM_BACKOFF_NS, else
     * HX_NVSHMEM_BACKOFF_DEFAULT_NS), 0: spin without sleeping. */
    int wait_backoff_ns;
} hx_halo_config;

/* host backend, double, host memory, automatic path, no bulk copy, default timeout, no stress */
void hx_halo_config_default(hx_halo_config *cfg);
/* HX_OK when `name` is a backend compiled into this build, HX_ERR_NOT_COMPILED (with what to
 * rebuild with) when known but not compiled, HX_ERR_INVALID_ARG (listing the names) otherwise. */
hx_status hx_halo_backend_available(const char *name);
/* The names of every backend halox knows, NULL-terminated. */
const char *const *hx_halo_backend_names(void);

/* Collective. Keeps pointers to plan and comm: both must outlive the exchange. The backend
 * allocates the coordinate and force arrays of every local domain (hx_halo_x / hx_halo_f) from
 * the plan's capacities. The plan must have been built (hx_plan_build) once. */
hx_status hx_halo_create(const hx_plan *plan, hx_comm *comm, const hx_halo_config *cfg,
                         hx_halo **out);
/* Collective, after every hx_plan_build: adopt the rebuilt plan (buffers regrown when the
 * capacities grew, device plan re-uploaded). Exchanges refuse a plan rebuilt since the last
 * update. Array addresses may change here and only here. */
hx_status hx_halo_update(hx_halo *h);
/* The coordinate and force arrays of local domain `local`: [hx_halo_capacity] atoms x 3 reals
 * of cfg.real in cfg.mem; local atom order [home | pulse 0 | pulse 1 | ...] of the plan. */
void *hx_halo_x(const hx_halo *h, int local);
void *hx_halo_f(const hx_halo *h, int local);
int hx_halo_capacity(const hx_halo *h);
const hx_halo_config *hx_halo_get_config(const hx_halo *h);
const char *hx_halo_backend_name(const hx_halo *h);
/* 1 when exchange_x/exchange_f only enqueue device work (no host waits), so that a step can be
 * captured in a CUDA graph: nvshmem. 0 for host and the CPU-driven baselines. */
int hx_halo_capturable(const hx_halo *h);
/* One line about how the backend runs here (transport, per-peer paths), for logs. */
const char *hx_halo_describe(const hx_halo *h);

/* Coordinates forward: the home part of every x array filled; when the stream reaches this
 * point the halo part holds the upper neighbours' atoms, shifted by the box where the plan says.
 * stream: for the GPU backends a cudaStream_t of the GPU context's device (checked:
 * HX_ERR_INVALID_ARG for a stream of another device), e.g. hx_gpu_context_stream(ctx,
 * HX_GPU_STREAM_NONLOCAL), or NULL for that device's default stream; ignored by "host" (which
 * completes before it returns). The caller's current device is left as it was. */
hx_status hx_halo_exchange_x(hx_halo *h, void *stream);
/* Forces backward, in reverse pulse order: the halo part of every f array is sent to its owners
 * and added there (into home atoms, or into halo atoms that are forwarded further). */
hx_status hx_halo_exchange_f(hx_halo *h, void *stream);
/* Forward exchange of ncomp ints per atom (global ids, types), no shift; v[i] has the local
 * layout of domain i and lives in `mem`. Synchronous. */
hx_status hx_halo_exchange_int(hx_halo *h, int *const *v, int ncomp, hx_memspace mem);

/* For benchmarks (`halox bench exchange`): time the exchange on `stream` (checked as for
 * hx_halo_exchange_x; the events are made on the GPU context's device). Collective. `warmup`
 * untimed steps, then `steps` timed ones (a step: hx_halo_exchange_x, then hx_halo_exchange_f)
 * with a CUDA event every `batch` steps only (steps a multiple of batch), because events between
 * all steps add a kernel boundary each under MPS; graph != 0 captures one step in a CUDA graph
 * and replays it (hx_halo_capturable backends). The ranks start together after an agreement.
 * batch_us[steps / batch] receives each batch's device time per step (us), *wall_us the wall
 * time per step over all timed steps. Device-memory backends; HX_ERR_NOT_COMPILED without CUDA. */
hx_status hx_halo_time_exchange(hx_halo *h, void *stream, int warmup, int steps, int batch,
                                int graph, double *batch_us, double *wall_us);

typedef struct hx_halo_stats {
    long long x_calls, f_calls;
    double x_seconds, f_seconds; /* host wall time inside exchange_x / exchange_f (for device
                                    backends: enqueueing, plus the CPU waits of the baselines) */
    long long bytes_sent;        /* payload bytes sent by this process's domains */
} hx_halo_stats;
void hx_halo_get_stats(const hx_halo *h, hx_halo_stats *s);
void hx_halo_destroy(hx_halo **h);

#ifdef __cplusplus
}
#endif
#endif
