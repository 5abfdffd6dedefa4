/* Private to the GPU halo backends: what src/halo/halo_gpu.cu (the CPU-driven baselines gpu-mpi
 * and gpu-direct) shares with src/halo/nvshmem/nvshmem.cu (the fused NVSHMEM backend) and with the
 * GPU tests. Host functions only; the device-side pack/unpack they share is src/halo/halo_pack.cuh.
 *
 * Every GPU backend holds exactly one local domain per process (one rank, one PE, one domain),
 * on the device chosen from the node-local rank. */
#ifndef HX_GPU_HALO_GPU_H
#define HX_GPU_HALO_GPU_H

#include <stddef.h>

#include "halo/halo_impl.h"
#include "dd/plan_image.h"

#ifdef __cplusplus
extern "C" {
#endif

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
} hx_gpu_plan;

hx_status hx_gpu_plan_upload(hx_gpu_plan *gp, const hx_plan *plan, int local);
/* the upload itself (src/halo/halo_local.cu, compiled in every CUDA build) */
hx_status hx_gpu_plan_adopt(hx_gpu_plan *gp, const hx_plan *plan, int local);
void hx_gpu_plan_free(hx_gpu_plan *gp);

/* Where this process runs, decided at a backend's setup (collective). */
typedef struct hx_gpu_place {
    int device;      /* CUDA device selected for this process */
    int ndevices;    /* devices visible */
    int local_rank;  /* node-local rank */
    int local_size;  /* processes on this node */
    int pes_per_gpu; /* processes sharing this process's device (node-local, round-robin) */
    int mps;         /* an MPS control daemon pipe was found */
    int sm_count;    /* multiprocessors of the device */
    char gpu[256];   /* device name */
} hx_gpu_place;

/* Setup common to the GPU backends: one local domain, device memory, float; picks the device
 * from the node-local rank (local_rank % devices) and makes it current. `need_mps`: refuse
 * several processes on one GPU without MPS (their spinning kernels would time-slice) unless
 * HALOX_ALLOW_NO_MPS=1. Collective (node split); the refusal is decided on every rank alike. */
hx_status hx_gpu_halo_place(hx_halo *h, int need_mps, hx_gpu_place *place);

/* One pulse of the CPU-driven baselines, and the variants the fused kernels use, exposed for the
 * single-process kernel test: pack entries [0, send_count) of `pulse` (x[map[e]] + shift) to
 * out + 3e (`bulk`: through shared memory and the bulk-copy engine); accumulate f[map[e]] +=
 * buf[e] for every entry (`atomic`: with atomics). `stream` is a cudaStream_t. */
hx_status hx_gpu_pack_x(const hx_gpu_plan *gp, int pulse, const float *x, float *out, int bulk,
                        void *stream);
hx_status hx_gpu_unpack_f(const hx_gpu_plan *gp, int pulse, const float *buf, float *f, int atomic,
                          void *stream);

#ifdef __cplusplus
}
#endif
#endif
