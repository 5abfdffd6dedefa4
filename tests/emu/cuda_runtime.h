/* CPU emulation of <cuda_runtime.h> (see cuda_runtime_api.h beside this file). */
#ifndef HX_EMU_CUDA_RUNTIME_H
#define HX_EMU_CUDA_RUNTIME_H
#include "cuda_runtime_api.h"
#ifdef __cplusplus
#include "emu_device.h"
#endif
#endif
