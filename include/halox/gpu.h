/* halox: the CUDA devices this process can use, and the GPU context that owns one of them.
 *
 * Every call here exists in every build; without CUDA they return HX_ERR_NOT_COMPILED (and
 * hx_gpu_device_count reports 0 devices with HX_OK, so that programs and tests can say "no GPU"
 * the same way whether CUDA was compiled or not). */
#ifndef HALOX_GPU_H
#define HALOX_GPU_H

#include <stddef.h>

#include "halox/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hx_gpu_info {
    int device;                   /* CUDA device index */
    char name[256];               /* "NVIDIA H200" */
    int cc_major, cc_minor;       /* compute capability */
    int sm_count;                 /* multiprocessors */
    double memory_gib;            /* total device memory */
    int clock_mhz, mem_clock_mhz; /* current SM and memory clocks (NVML-free: 0 if unknown) */
    int max_clock_mhz;            /* peak SM clock */
    int driver_version;           /* e.g. 13000 for CUDA 13.0 */
    int runtime_version;
    char pci_bus_id[32];
    unsigned char uuid[16]; /* the GPU's identity, the same in every process that sees it */
} hx_gpu_info;

/* Devices visible to this process (0 when CUDA was not compiled in, or no driver/device:
 * *why then says why, a static string, when why is not NULL). */
hx_status hx_gpu_device_count(int *count, const char **why);
hx_status hx_gpu_get_info(int device, hx_gpu_info *info);
/* Make `device` current for this host thread (the caller's own choice; no halox call other than
 * this one and hx_gpu_context_make_current changes the current device). */
hx_status hx_gpu_set_device(int device);
/* The device current for this host thread. */
hx_status hx_gpu_current_device(int *device);
/* The default placement, computed only: process `local_rank` of its node gets device
 * local_rank % count. Changes nothing (the GPU context makes the choice and owns it). */
hx_status hx_gpu_select_for_rank(int local_rank, int *device);
/* Copy `bytes` between host and device memory, either direction (the runtime tells them apart
 * by address); synchronous. */
hx_status hx_gpu_copy(void *dst, const void *src, size_t bytes);
/* One line for logs: "NVIDIA H200 (sm_90, 132 SMs, 139.8 GiB, 1980 MHz, driver 13.0, runtime
 * 13.0, PCI 0000:xx:00.0)". */
void hx_gpu_describe(const hx_gpu_info *info, char *buf, int len);
/* A GPU's UUID as nvidia-smi prints it: "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (41 chars). */
void hx_gpu_uuid_string(const unsigned char uuid[16], char *buf, int len);

/* ---- the GPU context: the one owner of this process's device ----------------------------
 *
 * Like GROMACS's DeviceContext/DeviceStream pair or HOOMD's ExecutionConfiguration: the device is
 * chosen once, here, and everything that runs on it (the halo exchange's GPU backends, the MD
 * engine's "gpu" backend) is given the context instead of choosing a device of its own.
 *
 *  - The device: params.device_ids (like GROMACS's -gpu_id: node-local rank i gets entry
 *    i % ndevice_ids), or by default node-local rank modulo the visible devices. Its identity is
 *    its UUID: the context gathers the UUIDs of every rank of the communicator, so which ranks
 *    share this GPU (and whether several processes on it need MPS) comes from identities, not
 *    from counting (CUDA_VISIBLE_DEVICES may give every rank a different "device 0").
 *  - The streams: local work, non-local work and the halo exchange (the device's highest
 *    priority), and the update; created here, destroyed with the context.
 *  - No halox call changes the caller's current device: every call that does CUDA work makes the
 *    context's device current for its duration and restores the caller's on return. Streams the
 *    caller passes in (hx_halo_exchange_x/f) are checked to belong to the context's device.
 *    A caller that issues CUDA work of its own on the context's device makes it current itself
 *    (hx_gpu_context_make_current, or params.make_current); a caller that keeps another device
 *    current pays a device switch per halox call. */
typedef struct hx_gpu_context hx_gpu_context;
struct hx_comm;

typedef enum hx_gpu_stream_role {
    HX_GPU_STREAM_LOCAL = 0,    /* local forces */
    HX_GPU_STREAM_NONLOCAL = 1, /* the halo exchange and the forces that need it: highest prio */
    HX_GPU_STREAM_UPDATE = 2,   /* integration and constraints */
    HX_GPU_NSTREAMS = 3
} hx_gpu_stream_role;

typedef struct hx_gpu_context_params {
    /* CUDA device indices of this process to choose from; node-local rank i takes
     * device_ids[i % ndevice_ids] (so "0,0,1,1" puts two ranks on each of two GPUs). NULL / 0:
     * node-local rank modulo the visible devices. Copied at creation. */
    const int *device_ids;
    int ndevice_ids;
    /* 1: leave the chosen device current for the calling thread when creation returns, for
     * programs that own the process and issue CUDA work of their own (halox md, bench). 0: the
     * caller's current device is restored like after every other call. */
    int make_current;
} hx_gpu_context_params;

/* no list (node-local rank modulo the devices), make_current 0 */
void hx_gpu_context_params_default(hx_gpu_context_params *p);
/* Parse a device list "0,1" or "0,0,1,1" (GROMACS also takes "01": single digits without
 * separators) into ids[max]; *n receives the count. HX_ERR_INVALID_ARG with the offending text. */
hx_status hx_gpu_parse_device_ids(const char *text, int *ids, int max, int *n);

/* Collective over comm (every rank calls it): choose the device, create the streams, gather
 * every rank's GPU UUID. Returns HX_OK on every rank or an error on every rank (a rank without
 * a usable device, or a device id out of range, is reported by that rank and HX_ERR_REMOTE
 * elsewhere). The communicator is not kept; the context must outlive every halo exchange and
 * engine given it. */
hx_status hx_gpu_context_create(const hx_gpu_context_params *params, struct hx_comm *comm,
                                hx_gpu_context **out);
/* Waits for the context's streams, destroys them, NULLs *ctx; accepts NULL. Not collective. */
void hx_gpu_context_destroy(hx_gpu_context **ctx);

int hx_gpu_context_device(const hx_gpu_context *ctx); /* the CUDA device index */
/* The GPU's UUID (16 bytes), and that of the GPU of `rank` of the creating communicator. */
const unsigned char *hx_gpu_context_uuid(const hx_gpu_context *ctx);
const unsigned char *hx_gpu_context_rank_uuid(const hx_gpu_context *ctx, int rank);
/* 1 when `rank` of the creating communicator runs on this context's GPU (by UUID). */
int hx_gpu_context_same_gpu(const hx_gpu_context *ctx, int rank);
/* Ranks of the creating communicator on this GPU, this one included (>= 1). */
int hx_gpu_context_ranks_on_gpu(const hx_gpu_context *ctx);
/* Distinct GPUs (by UUID) the ranks of the creating communicator run on. */
int hx_gpu_context_gpus(const hx_gpu_context *ctx);
/* 1 when an MPS control daemon was found (the pipe in CUDA_MPS_PIPE_DIRECTORY). */
int hx_gpu_context_mps(const hx_gpu_context *ctx);
/* One of the context's streams, as a cudaStream_t of its device. */
void *hx_gpu_context_stream(const hx_gpu_context *ctx, hx_gpu_stream_role role);
/* HX_OK when `stream` (a cudaStream_t, or NULL: the default stream, which halox calls run on the
 * context's device) belongs to the context's device; HX_ERR_INVALID_ARG naming both devices
 * otherwise. `who` names the caller in the message. */
hx_status hx_gpu_context_check_stream(const hx_gpu_context *ctx, void *stream, const char *who);
/* Make the context's device current for the calling thread: for callers that issue CUDA work of
 * their own (copies into the halo's arrays, events, graphs) on it. */
hx_status hx_gpu_context_make_current(const hx_gpu_context *ctx);
/* Wait until the context's streams have finished what was enqueued on them; HX_ERR_TIMEOUT past
 * the set-up deadline (include/halox/timer.h). */
hx_status hx_gpu_context_synchronize(const hx_gpu_context *ctx);
/* One line for logs: "GPU 1 of 2: NVIDIA H200 (sm_90, 132 SMs, ...) GPU-8c1e...; node-local rank
 * 1 of 2; 1 rank on this GPU; no MPS". */
const char *hx_gpu_context_describe(const hx_gpu_context *ctx);

#ifdef __cplusplus
}
#endif
#endif
