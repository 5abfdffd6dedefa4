/* The halo backend contract: what hx_halo (src/halo/halo.c, the front end) asks of a backend.
 *
 * A backend executes the plan; it never recomputes it. Life cycle:
 *
 *   setup     once, from hx_halo_create: allocate what does not depend on the plan. COLLECTIVE.
 *   update    at every repartition, after hx_plan_build: (re)allocate buffers from the plan's
 *             capacities (identical on every process, grow-only), upload the plan, exchange
 *             addresses. COLLECTIVE: every process calls it at the same point, so a backend can
 *             make collective allocations (nvshmem_malloc) in the same order everywhere.
 *   exchange_x / exchange_f
 *             enqueue the coordinate / force exchange of the whole plan on `stream` (NULL for
 *             the host backend; for a device backend a stream of the GPU context's device,
 *             checked by the front end, or NULL for that device's default stream). When the stream
 * reaches the end of what was enqueued, the halo part of x (resp. the home and forwarded part of f)
 * is complete. A CPU-driven backend may block the calling thread (per pulse) - that is its nature.
 *   exchange_int (optional)
 *             forward ncomp ints per atom in device memory; host memory is handled by the front
 *             end for every backend.
 *   destroy   release everything; must cope with a half-made setup.
 *
 * Device backends (ops.device): the front end gives them the GPU context (cfg.gpu, checked) and
 * calls every op with the context's device current (and the caller's restored afterwards): a
 * backend never chooses, queries or switches a device of its own.
 *
 * Arrays: the backend OWNS the coordinate and force arrays of each local domain (x[i], f[i],
 * cap_local atoms of 3 reals in h->cfg.real, in h->cfg.mem). Their addresses are fixed between
 * updates (symmetric memory and CUDA graphs rely on that) and may change only in update. */
#ifndef HX_COMM_HALO_IMPL_H
#define HX_COMM_HALO_IMPL_H

#include "gpu/stream.h"
#include "halox/halo.h"

#ifdef __cplusplus
extern "C" { /* the GPU backends are CUDA sources: their ops tables have C linkage */
#endif

typedef struct hx_halo_ops {
    const char *name;
    int capturable; /* exchanges only enqueue device work: CUDA-graph capturable */
    int device;     /* runs on the GPU context's device (cfg.gpu required) */
    hx_status (*setup)(hx_halo *h);
    hx_status (*update)(hx_halo *h);
    hx_status (*exchange_x)(hx_halo *h, hx_stream stream);
    hx_status (*exchange_f)(hx_halo *h, hx_stream stream);
    hx_status (*exchange_int)(hx_halo *h, int *const *v,
                              int ncomp); /* device memory; may be NULL */
    void (*destroy)(hx_halo *h);
    /* Optional (NULL: update is used). Adopt a plan rebuilt with the capacities of the last
     * update (the device search step's): upload it, reconfigure launches. LOCAL: no collective,
     * no allocation. stream (a stream of the context's device, or NULL): hx_halo_refresh's, the
     * uploads enqueued there without a wait for the device. Like every op of a device backend,
     * run with the context's device current (msg_setup and msg too). */
    hx_status (*refresh)(hx_halo *h, hx_stream stream);
    /* Optional: messages of the device search step (src/md/gpu/decomp_gpu.h, its transport).
     * msg_setup: COLLECTIVE, (re)allocate nchan channels (send and receive buffer of cap[c]
     * bytes per local domain, equal on every process; symmetric where the transport needs it),
     * send[i][c] / recv[i][c] receive them. msg: enqueue on stream, every local domain i sends
     * its channel-c message ([int64 bytes | payload], bytes <= cap) to domain dest[i] and
     * receives src[i]'s. msg_device: 1 when msg only enqueues device work (capturable). */
    hx_status (*msg_setup)(hx_halo *h, int nchan, const size_t *cap, void ***send, void ***recv);
    hx_status (*msg)(hx_halo *h, int chan, const int *dest, const int *src, hx_stream stream);
    int msg_device;
} hx_halo_ops;

struct hx_halo {
    const hx_halo_ops *ops;
    const hx_plan *plan;
    hx_comm *comm;
    hx_halo_config cfg;
    int nlocal;
    long long generation; /* the plan generation of the last update */
    int cap_local;        /* atoms in each x[i], f[i] */
    int cap_buf;          /* the plan's staging capacity at the last update */
    void **x, **f;        /* [nlocal], owned by the backend */
    char describe[512];   /* the backend's one-line account of itself (paths, transport) */
    hx_halo_stats stats;
    hx_stream stream_ok; /* the last caller's stream found on the context's device */
    void *impl;          /* backend private data */
};

/* Bytes of one real of the configured type. */
static inline size_t hx_halo_real_size(const hx_halo *h)
{
    return h->cfg.real == HX_REAL_F64 ? sizeof(double) : sizeof(float);
}

/* The first failure of an exchange, kept with its message while the exchange goes on with its
 * remaining messages (as failure markers: no rank is left waiting for them), whose own errors
 * would otherwise replace it. */
typedef struct hx_first_error {
    hx_status st;
    char msg[1024];
} hx_first_error;
/* Keep st (with the message recorded now) if it is the first error. Returns fe->st. */
hx_status hx_first_error_keep(hx_first_error *fe, hx_status st);
/* The kept error, recorded again (HX_OK when none). */
hx_status hx_first_error_status(const hx_first_error *fe);

/* Backends known to the front end; NULL entries in builds without them. */
extern const hx_halo_ops hx_halo_ops_host;
#if HX_HALO_HAVE_GPU_LOCAL
extern const hx_halo_ops hx_halo_ops_gpu_local;
#endif
#if HX_HALO_HAVE_GPU
extern const hx_halo_ops hx_halo_ops_gpu_mpi;
extern const hx_halo_ops hx_halo_ops_gpu_direct;
#endif
#if HX_HALO_HAVE_NVSHMEM
extern const hx_halo_ops hx_halo_ops_nvshmem;
#endif

#ifdef __cplusplus
}
#endif

#endif
