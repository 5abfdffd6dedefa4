/* Private to the GPU halo backends: what src/halo/halo_gpu.cu (the CPU-driven baselines gpu-mpi
 * and gpu-direct) shares with src/halo/nvshmem/nvshmem.cu (the fused NVSHMEM backend) and with the
 * GPU tests. Host functions only; the device-side pack/unpack they share is src/halo/halo_pack.cuh.
 *
 * Every GPU backend holds exactly one local domain per process (one rank, one PE, one domain),
 * on the device of its GPU context (cfg.gpu), which the front end makes current around every op:
 * the backends never choose or switch a device. */
#ifndef HX_GPU_HALO_GPU_H
#define HX_GPU_HALO_GPU_H

#include <stddef.h>

#include "halo/halo_impl.h"
#include "dd/plan_image.h"
#include "gpu/context.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A small host-to-device copy ordered on a stream, from pinned staging: a pageable source would
 * be staged by the driver, which may wait for the stream, and the legacy-stream copy it replaces
 * waited for every stream of the process (on a GPU shared under MPS: for kernels queued behind
 * the other processes'). The staging is rewritten only once the event after its last copy has
 * passed (a bounded wait). */
typedef struct hx_gpu_stage {
    void *buf;
    size_t cap;
    void *ev; /* cudaEvent_t */
    int busy;
    int rank; /* the owner's, for the wait's message (set by the backend at creation) */
} hx_gpu_stage;
/* Enqueue the copy of src[0, bytes) to dev on stream; returns without waiting for it. */
hx_status hx_gpu_stage_copy(hx_gpu_stage *st, void *dev, const void *src, size_t bytes,
                            hx_stream stream);
/* Free (cudaFreeHost waits for the device: only when it is idle, as every backend's destroy). */
void hx_gpu_stage_free(hx_gpu_stage *st);

/* The device copy of one domain's plan image (src/dd/plan_image.h): uploaded with one
 * cudaMemcpy at every update into a grow-only device block (own); `view` points into it and is
 * what kernels take (by value). `host` is the host plan of the same domain, for launch sizes.
 * When a device search step keeps the image on the device (hx_plan_set_device_image), dev is
 * that image and only its part before the maps is uploaded. */
typedef struct hx_gpu_plan {
    void *dev; /* the image in use */
    void *own; /* our copy (NULL while a device search step's image is used) */
    size_t cap, bytes;
    hx_plan_view view;
    const hx_domain_plan *host;
    hx_gpu_stage stage; /* the header's, for an upload ordered on a stream */
} hx_gpu_plan;

/* The plan image of domain `local` to the device. stream NULL: synchronous, the copy done on
 * return. Otherwise, for a device search step's image (whose maps are on the device already):
 * the header's copy is enqueued on stream and the call returns at once; exchanges enqueued on
 * that stream afterwards see it, and no exchange of the old plan may still run on another one. */
hx_status hx_gpu_plan_upload(hx_gpu_plan *gp, const hx_plan *plan, int local, hx_stream stream);
/* the upload itself (src/halo/halo_local.cu, compiled in every CUDA build) */
hx_status hx_gpu_plan_adopt(hx_gpu_plan *gp, const hx_plan *plan, int local, hx_stream stream);
void hx_gpu_plan_free(hx_gpu_plan *gp);

/* Where this process runs: what a backend reads of its GPU context (cfg.gpu). */
typedef struct hx_gpu_place {
    const hx_gpu_context *ctx;
    int alone;       /* the exchange's communicator is this process alone: every PE is this one */
    int device;      /* the context's CUDA device */
    int pes_per_gpu; /* processes of the context's communicator on this GPU (by UUID), this one
                        included: who competes for its SMs */
    int mps;         /* an MPS control daemon pipe was found */
    int sm_count;    /* multiprocessors of the device */
    char gpu[256];   /* device name */
} hx_gpu_place;

/* Setup common to the GPU backends: one local domain, device memory, float; the placement from
 * the GPU context. `need_mps`: refuse several processes on one GPU (by UUID) without MPS (their
 * spinning kernels would time-slice) unless `allow_no_mps` (HALOX_ALLOW_NO_MPS=1, read by the
 * caller's agreed configuration). Local: the caller agrees the result. */
hx_status hx_gpu_halo_place(hx_halo *h, int need_mps, int allow_no_mps, hx_gpu_place *place);
/* Whether `rank`'s GPU is this process's (by UUID). */
int hx_gpu_place_same_gpu(const hx_gpu_place *pl, int rank);

/* One pulse of the CPU-driven baselines, and the variants the fused kernels use, exposed for the
 * single-process kernel test: pack entries [0, send_count) of `pulse` (x[map[e]] + shift) to
 * out + 3e (`bulk`: through shared memory and the bulk-copy engine); accumulate f[map[e]] +=
 * buf[e] for every entry (`atomic`: with atomics), on the current device. */
hx_status hx_gpu_pack_x(const hx_gpu_plan *gp, int pulse, const float *x, float *out, int bulk,
                        hx_stream stream);
hx_status hx_gpu_unpack_f(const hx_gpu_plan *gp, int pulse, const float *buf, float *f, int atomic,
                          hx_stream stream);

#ifdef __cplusplus
}
#endif
#endif
