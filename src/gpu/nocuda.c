/* Builds without CUDA: the device API of include/halox/gpu.h answers "not compiled". */
#include "halox/gpu.h"
#include "core/error.h"

#include <stdio.h>

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
