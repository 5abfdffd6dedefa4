/* halox: the CUDA devices this process can use.
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
} hx_gpu_info;

/* Devices visible to this process (0 when CUDA was not compiled in, or no driver/device:
 * *why then says why, a static string, when why is not NULL). */
hx_status hx_gpu_device_count(int *count, const char **why);
hx_status hx_gpu_get_info(int device, hx_gpu_info *info);
/* Make `device` current for this host thread. */
hx_status hx_gpu_set_device(int device);
/* The device current for this host thread. */
hx_status hx_gpu_current_device(int *device);
/* Node-local placement: process `local_rank` of `local_size` on this node gets device
 * local_rank % count (several processes share a GPU when local_size > count). */
hx_status hx_gpu_select_for_rank(int local_rank, int *device);
/* Copy `bytes` between host and device memory, either direction (the runtime tells them apart
 * by address); synchronous. */
hx_status hx_gpu_copy(void *dst, const void *src, size_t bytes);
/* One line for logs: "NVIDIA H200 (sm_90, 132 SMs, 139.8 GiB, 1980 MHz, driver 13.0, runtime
 * 13.0, PCI 0000:xx:00.0)". */
void hx_gpu_describe(const hx_gpu_info *info, char *buf, int len);

#ifdef __cplusplus
}
#endif
#endif
