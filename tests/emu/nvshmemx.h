/* CPU emulation of <nvshmemx.h>: the extensions are declared with the rest in nvshmem.h. */
#ifndef HX_EMU_NVSHMEMX_H
#define HX_EMU_NVSHMEMX_H
#include "nvshmem.h"
#endif
