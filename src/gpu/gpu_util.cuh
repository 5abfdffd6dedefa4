/* Small device helpers shared by halox's CUDA sources (header-only: every .cu file is its own
 * whole-program module, so shared device functions live here as static inline functions).
 *
 * HX_LAUNCH and HX_DYN_SMEM hide the two spots where CUDA syntax differs from the CPU
 * emulation used in development (tests/emu, -DHALOX_GPU_EMULATE=ON). */
#ifndef HX_GPU_UTIL_CUH
#define HX_GPU_UTIL_CUH

#include "gpu/cuda_check.h"

#include <stdint.h>

#ifdef HX_CUDA_EMULATION
#define HX_LAUNCH(kernel, grid, block, smem, stream, ...)                                          \
    emu_launch(kernel, grid, block, smem, stream, __VA_ARGS__)
#define HX_DYN_SMEM(name) unsigned char *name = emu_dyn_smem()
#else
#define HX_LAUNCH(kernel, grid, block, smem, stream, ...)                                          \
    kernel<<<grid, block, smem, stream>>>(__VA_ARGS__)
#define HX_DYN_SMEM(name) extern __shared__ __align__(16) unsigned char name[]
#endif

#define HX_FULL_MASK 0xffffffffu

/* %globaltimer in ns: one clock for every process on a GPU (the NVSHMEM exchange's deadlines and
 * traces, the search trace); in the CPU emulation the host's monotonic clock, which every
 * process shares too. */
static __device__ __forceinline__ uint64_t hx_globaltimer_ns(void)
{
#ifdef HX_CUDA_EMULATION
    return emu_globaltimer_ns();
#else
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
#endif
}

/* Programmatic dependent launch (sm_90; HALOX_GPU_PDL=1, src/md/gpu/update_gpu.cu): a kernel
 * whose incoming graph edge is programmatic (cudaGraphDependencyTypeProgrammatic) may start once
 * every block of the kernel before it has called hx_pdl_trigger (or ended). hx_pdl_wait blocks
 * until those prerequisite grids have completed and their memory operations are visible, so the
 * position of the trigger never matters for correctness, only for how early the dependent
 * starts. Both are no-ops in a kernel without such an edge, below sm_90, and in the CPU
 * emulation (where every stream operation ends before the next begins). */
/* The host side: a capturing stream's dependency set with its edge data (the programmatic edge
 * is built there, src/md/gpu/update_gpu.cu). CUDA 12.3 added the edge data as the _v3/_v2
 * calls, which CUDA 13 made the plain ones; before 12.3 HALOX_GPU_PDL has no effect. */
#if defined(HX_CUDA_EMULATION) || (defined(CUDART_VERSION) && CUDART_VERSION >= 13000)
#define HX_PDL_CAPTURE 1
#define HX_CAPTURE_INFO(s, status, deps, edata, n)                                                 \
    cudaStreamGetCaptureInfo(s, status, NULL, NULL, deps, edata, n)
#define HX_CAPTURE_SET(s, deps, edata, n)                                                          \
    cudaStreamUpdateCaptureDependencies(s, deps, edata, n, cudaStreamSetCaptureDependencies)
#elif defined(CUDART_VERSION) && CUDART_VERSION >= 12030
#define HX_PDL_CAPTURE 1
#define HX_CAPTURE_INFO(s, status, deps, edata, n)                                                 \
    cudaStreamGetCaptureInfo_v3(s, status, NULL, NULL, deps, edata, n)
#define HX_CAPTURE_SET(s, deps, edata, n)                                                          \
    cudaStreamUpdateCaptureDependencies_v2(s, deps, edata, n, cudaStreamSetCaptureDependencies)
#else
#define HX_PDL_CAPTURE 0
#endif

static __device__ __forceinline__ void hx_pdl_wait(void)
{
#if !defined(HX_CUDA_EMULATION) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
static __device__ __forceinline__ void hx_pdl_trigger(void)
{
#if !defined(HX_CUDA_EMULATION) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/* 1/sqrt(x) by the special-function unit alone (rsqrt.approx.ftz: ~2 ulp, denormals flushed).
 * rsqrtf() adds a denormal-input fix-up around it (4 more instructions per pair in the pair
 * kernel); the pair kernels never take a denormal (masked pairs select their result away). */
static __device__ __forceinline__ float hx_rsqrt_fast(float x)
{
#ifdef HX_CUDA_EMULATION
    return 1.0f / sqrtf(x);
#else
    float y;
    asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
#endif
}

static __device__ __forceinline__ int hx_imin(int a, int b)
{
    return a < b ? a : b;
}
static __device__ __forceinline__ int hx_imax(int a, int b)
{
    return a > b ? a : b;
}

/* Floats as ints whose signed order is the float order (for atomicMin/atomicMax). */
static __device__ __forceinline__ int hx_float_key(float f)
{
    int b = __float_as_int(f);
    return b >= 0 ? b : b ^ 0x7fffffff;
}
static __device__ __forceinline__ float hx_key_float(int k)
{
    return __int_as_float(k >= 0 ? k : k ^ 0x7fffffff);
}

static __device__ __forceinline__ float hx_warp_min(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v = fminf(v, __shfl_xor_sync(HX_FULL_MASK, v, o));
    return v;
}
static __device__ __forceinline__ float hx_warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(HX_FULL_MASK, v, o));
    return v;
}
static __device__ __forceinline__ double hx_warp_sum_d(double v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(HX_FULL_MASK, v, o);
    return v;
}
static __device__ __forceinline__ int hx_warp_sum_i(int v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(HX_FULL_MASK, v, o);
    return v;
}

/* Sum of v over the block (blockDim.x a multiple of 32, at most 1024) in a fixed order, so the
 * result does not depend on timing. Every thread must call it; the result is in all threads.
 * scratch: 32 doubles of shared memory. */
static __device__ __forceinline__ double hx_block_sum_d(double v, double *scratch)
{
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = hx_warp_sum_d(v);
    __syncthreads(); /* scratch may still be read by a previous call */
    if (lane == 0)
        scratch[w] = v;
    __syncthreads();
    double s = lane < nw ? scratch[lane] : 0.0;
    return hx_warp_sum_d(s);
}

/* Whether the calling block is the last of its grid to get here: a many-block pass followed by
 * one block's work (a scan, a grid decision) in one kernel instead of two. A kernel boundary
 * costs 4-8 us when 4-8 processes launch on one GPU under MPS (bench/mps_dispatch.cu), and the
 * search steps have dozens. Every thread of the block calls it once, after its writes: each
 * fences them before its block counts itself in *counter (0 at the kernel's start), so they are
 * visible to the last block, which reads them with hx_ldv (past its multiprocessor's L1) and
 * sets the counter back to 0 for the next kernel. s_last: an int of shared memory. */
static __device__ __forceinline__ bool hx_last_block(unsigned *counter, int *s_last)
{
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0)
        *s_last = atomicAdd(counter, 1u) == gridDim.x - 1u;
    __syncthreads();
    const bool last = *s_last != 0;
    if (last) {
        __threadfence();
        if (threadIdx.x == 0)
            *counter = 0u;
    }
    return last;
}

/* A value another block of the running kernel wrote (hx_last_block). */
template <typename T> static __device__ __forceinline__ T hx_ldv(const T *p)
{
    return *(const volatile T *)p;
}

/* The last block's copy of a record other blocks of the running kernel wrote (hx_last_block) into
 * pinned host memory (its device address): word by word with hx_ldv, then fenced for the host,
 * which reads it once it has waited for the stream. Called by every thread of that block; bytes
 * a multiple of 4. Instead of a copy node after the kernel. */
static __device__ __forceinline__ void hx_block_to_host(void *dst, const void *src, size_t bytes)
{
    const unsigned *s = (const unsigned *)src;
    unsigned *d = (unsigned *)dst;
    for (size_t k = threadIdx.x; k < bytes / sizeof(unsigned); k += blockDim.x)
        d[k] = hx_ldv(&s[k]);
    __threadfence_system();
}

static inline unsigned hx_div_up(long long a, long long b)
{
    return (unsigned)((a + b - 1) / b);
}

#endif
