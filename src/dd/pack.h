/* Pack and unpack of one pulse: the per-element operations shared by every backend.
 *
 * Host executors loop over them; CUDA kernels include this header and call the same element
 * functions from their threads, so the arithmetic (shift on send, accumulate on receive) is
 * written once. Layouts: x and f are [n][3] interleaved, buffers are [count][3]. */
#ifndef HX_DD_PACK_H
#define HX_DD_PACK_H

#include "core/hd.h"

/* Coordinates: out[e] = x[map[e]] + shift. */
#define HX_DEFINE_PACK(T, SUFFIX)                                                                  \
    HX_HD void hx_pack_x_elem_##SUFFIX(int e, const int *map, const T *x, T sx, T sy, T sz,        \
                                       T *out)                                                     \
    {                                                                                              \
        const T *src = x + 3 * (long)map[e];                                                       \
        out[3 * (long)e + 0] = src[0] + sx;                                                        \
        out[3 * (long)e + 1] = src[1] + sy;                                                        \
        out[3 * (long)e + 2] = src[2] + sz;                                                        \
    }                                                                                              \
    /* Forces: f[map[e]] += buf[e]. Entries of one pulse's map are distinct atoms, so a pulse      \
     * needs no atomics; concurrent pulses may target the same atom and need them. */              \
    HX_HD void hx_unpack_f_elem_##SUFFIX(int e, const int *map, const T *buf, T *f)                \
    {                                                                                              \
        T *dst = f + 3 * (long)map[e];                                                             \
        dst[0] += buf[3 * (long)e + 0];                                                            \
        dst[1] += buf[3 * (long)e + 1];                                                            \
        dst[2] += buf[3 * (long)e + 2];                                                            \
    }

HX_DEFINE_PACK(double, f64)
HX_DEFINE_PACK(float, f32)

#if defined(__CUDACC__) || defined(HX_CUDA_EMULATION)
/* The force accumulation with atomics, for kernels in which several pulses add into the same
 * atom at once (the fused NVSHMEM force kernel): the same sums, in an order set by the hardware. */
__device__ __forceinline__ void hx_unpack_f_elem_f32_atomic(int e, const int *map, const float *buf,
                                                            float *f)
{
    const long m = map[e];
    float *dst = f + 3 * m;
    const float b0 = buf[3 * (long)e + 0], b1 = buf[3 * (long)e + 1], b2 = buf[3 * (long)e + 2];
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    /* two atomics instead of three: the 8-byte aligned pair of the atom's three floats (f is
     * 16-byte aligned, so atom m's pair starts at component m & 1) as one vector add */
    if (m & 1) {
        atomicAdd(dst + 0, b0);
        atomicAdd((float2 *)(dst + 1), make_float2(b1, b2));
    } else {
        atomicAdd((float2 *)dst, make_float2(b0, b1));
        atomicAdd(dst + 2, b2);
    }
#else
    atomicAdd(dst + 0, b0);
    atomicAdd(dst + 1, b1);
    atomicAdd(dst + 2, b2);
#endif
}
#endif

#endif
