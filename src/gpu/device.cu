/* CUDA device discovery and selection (include/halox/gpu.h). */
#include "halox/gpu.h"
#include "gpu/cuda_check.h"

#include <stdio.h>
#include <string.h>

extern "C" hx_status hx_gpu_device_count(int *count, const char **why)
{
    HX_CHECK(count, HX_ERR_INVALID_ARG, "hx_gpu_device_count: NULL argument");
    *count = 0;
    int n = 0;
    cudaError_t rc = cudaGetDeviceCount(&n);
    if (rc != cudaSuccess) {
        /* No driver or no device is an answer, not an error: the caller reports "no GPU". */
        if (why)
            *why = rc == cudaErrorNoDevice ? "no CUDA device is visible"
                   : rc == cudaErrorInsufficientDriver
                       ? "the CUDA driver is missing or older than the CUDA runtime"
                       : "the CUDA runtime could not be initialised";
        (void)cudaGetLastError();
        return HX_OK;
    }
    if (n == 0 && why)
        *why = "no CUDA device is visible";
    *count = n;
    return HX_OK;
}

extern "C" hx_status hx_gpu_get_info(int device, hx_gpu_info *info)
{
    HX_CHECK(info, HX_ERR_INVALID_ARG, "hx_gpu_get_info: NULL argument");
    memset(info, 0, sizeof *info);
    cudaDeviceProp p;
    HX_CUDA(cudaGetDeviceProperties(&p, device));
    info->device = device;
    snprintf(info->name, sizeof info->name, "%s", p.name);
    info->cc_major = p.major;
    info->cc_minor = p.minor;
    info->sm_count = p.multiProcessorCount;
    info->memory_gib = (double)p.totalGlobalMem / (1024.0 * 1024.0 * 1024.0);
    int khz = 0;
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device) == cudaSuccess)
        info->max_clock_mhz = khz / 1000;
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, device) == cudaSuccess)
        info->mem_clock_mhz = khz / 1000;
    (void)cudaGetLastError();
    info->clock_mhz = info->max_clock_mhz;
    HX_CUDA(cudaDriverGetVersion(&info->driver_version));
    HX_CUDA(cudaRuntimeGetVersion(&info->runtime_version));
    HX_CUDA(cudaDeviceGetPCIBusId(info->pci_bus_id, (int)sizeof info->pci_bus_id, device));
    memcpy(info->uuid, &p.uuid, sizeof info->uuid);
    return HX_OK;
}

extern "C" hx_status hx_gpu_set_device(int device)
{
    HX_CUDA(cudaSetDevice(device));
    return HX_OK;
}

extern "C" hx_status hx_gpu_current_device(int *device)
{
    HX_CHECK(device, HX_ERR_INVALID_ARG, "hx_gpu_current_device: NULL argument");
    HX_CUDA(cudaGetDevice(device));
    return HX_OK;
}

extern "C" hx_status hx_gpu_select_for_rank(int local_rank, int *device)
{
    HX_CHECK(device && local_rank >= 0, HX_ERR_INVALID_ARG, "hx_gpu_select_for_rank: bad argument");
    int n = 0;
    const char *why = NULL;
    HX_TRY(hx_gpu_device_count(&n, &why));
    HX_CHECK(n > 0, HX_ERR_CUDA, "no GPU for rank %d: %s", local_rank, why ? why : "none found");
    *device = local_rank % n; /* computed only: the GPU context makes the device current */
    return HX_OK;
}

extern "C" hx_status hx_gpu_copy(void *dst, const void *src, size_t bytes)
{
    HX_CHECK((dst && src) || bytes == 0, HX_ERR_INVALID_ARG, "hx_gpu_copy: NULL argument");
    if (bytes)
        HX_CUDA(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));
    return HX_OK;
}

extern "C" void hx_gpu_uuid_string(const unsigned char u[16], char *buf, int len)
{
    snprintf(buf, (size_t)len,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
             u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14],
             u[15]);
}

extern "C" void hx_gpu_describe(const hx_gpu_info *g, char *buf, int len)
{
    snprintf(buf, (size_t)len,
             "%s (sm_%d%d, %d SMs, %.1f GiB, %d MHz, driver %d.%d, runtime %d.%d, PCI %s)", g->name,
             g->cc_major, g->cc_minor, g->sm_count, g->memory_gib, g->max_clock_mhz,
             g->driver_version / 1000, (g->driver_version % 1000) / 10, g->runtime_version / 1000,
             (g->runtime_version % 1000) / 10, g->pci_bus_id);
}
