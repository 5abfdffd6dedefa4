/* HX_HD: a small function usable from host C and from CUDA kernels alike. Headers that define
 * arithmetic shared by the host backends and the GPU kernels (pack/unpack, the plan view) use
 * it, so that the operation is written once. */
#ifndef HX_CORE_HD_H
#define HX_CORE_HD_H

#if defined(__CUDACC__)
#define HX_HD __host__ __device__ __forceinline__
#else
#define HX_HD static inline
#endif

#endif
