/* CPU emulation of CUDA device code (HALOX_GPU_EMULATE builds only; see cuda_runtime_api.h).
 *
 * Every thread of a block is a fiber of the launching host thread (emu_runtime.cpp, "the
 * threads of a block as fibers"); the blocks of a grid run one after the other on the same
 * fibers. __syncthreads is a barrier over the block's threads, warp intrinsics a barrier over
 * the warp's 32 threads with an exchange buffer, and a poll or __nanosleep lets the other
 * fibers run. A warp intrinsic reached by only part of a warp (or __syncthreads by part of a
 * block), undefined on the GPU too, leaves no fiber runnable: the process ends with a message.
 * __shared__ variables become function-static (one block runs at a time) and dynamic shared
 * memory is refilled with 0xFF bytes before every block. The order in which ready fibers run
 * (HALOX_EMU_SCHEDULE: fifo, lifo, random[:SEED]) is any a GPU may run; a kernel whose result
 * depends on it has a race. With a slow PE (below) the threads are host threads instead, the
 * barriers std::barrier.
 *
 * Blocks at once: a kernel launched with cudaLaunchKernelEx runs every block of its grid at the
 * same time, every thread a host thread and every block with its own dynamic shared memory, as
 * a GPU runs a grid that fits on it. Its blocks may wait for each other and for other processes
 * (the fused NVSHMEM halo exchange). A function-static __shared__ variable would be one for all
 * blocks, so such a kernel must keep block-shared data in dynamic shared memory: reaching a
 * __shared__ declaration in a kernel launched this way aborts with a message. A grid whose blocks
 * run at once is watched: one that has not ended after HALOX_EMU_GRID_TIMEOUT seconds (default: the
 * step deadline of HALOX_WAIT_TIMEOUT, 60 s, + 10; its kernels' own waits give up at half of it) is
 * reported and the process aborted, so a missed signal fails a test instead of hanging it.
 *
 * Memory operations of that exchange written in PTX (acquire loads, release adds, the global
 * timer) have C++ counterparts here (emu_ld_acquire, emu_red_add, emu_atom_add_acq_rel,
 * emu_globaltimer_ns): acquire and release as std::atomic_ref orders them; the scope (.gpu or
 * .sys) makes no difference on one CPU. An acquire load is a poll: repeated on the same word by
 * the same thread it backs off (yield, then sleeps up to 200 us), so that the threads being
 * waited for get the cores.
 *
 * A slow PE (HALOX_EMU_SLOW_PE=R:MS, acted on from nvshmem initialisation): in process R, after a
 * thread publishes a signal (a release or relaxed add to a signal word, an acquire-release add,
 * an NVSHMEM signal or put-with-signal) it pauses MS milliseconds, and the other threads of its
 * block leave a __syncthreads only when thread 0 reaches its next waiting point (a barrier, a
 * warp operation, a poll, a sleep, the end of the kernel, or the end of such a pause; at the
 * latest after 1 s). Both are schedules a GPU may run: a correct protocol gives the same result,
 * only later. A protocol that publishes before it writes, on the other hand, has its readers read
 * before the writes for MS milliseconds, every time: the ordering faults the NVSHMEM tests inject
 * (HALOX_TEST_INJECT) are caught deterministically, where on a CPU their race would be too narrow
 * to be seen. */
#ifndef HX_EMU_DEVICE_H
#define HX_EMU_DEVICE_H

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <thread>
#include <tuple>
#include <type_traits>

#include "cuda_runtime_api.h"

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __restrict__ __restrict
/* function-static, with a check that the kernel does not run its blocks at once (see above) */
#define EMU_CAT2(a, b) a##b
#define EMU_CAT(a, b) EMU_CAT2(a, b)
#define __shared__                                                                                 \
    emu::shared_check EMU_CAT(emu_shared_check_, __COUNTER__);                                     \
    static
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)

using std::isfinite;
using std::isnan;

/* CUDA's integer min/max of device code */
inline int min(int a, int b)
{
    return a < b ? a : b;
}
inline int max(int a, int b)
{
    return a > b ? a : b;
}
inline unsigned min(unsigned a, unsigned b)
{
    return a < b ? a : b;
}
inline unsigned max(unsigned a, unsigned b)
{
    return a > b ? a : b;
}

namespace emu
{
struct block_ctx;
/* the emulated thread's built-in variables (a function: UBSan flags member access to a
 * thread_local at TLS offset 0 as a null pointer) */
struct thread_vars {
    uint3 thread, block;
    dim3 bdim, gdim;
    block_ctx *ctx;
    int tid;
    int concurrent;        /* the grid runs its blocks at once (cudaLaunchKernelEx) */
    unsigned long bar_gen; /* __syncthreads passed (the slow PE's hold) */
};
thread_vars &tv();
/* a __shared__ declaration passed: refused in a grid whose blocks run at once */
struct shared_check {
    shared_check();
};
/* the slow PE (HALOX_EMU_SLOW_PE): its pause in ns, 0 elsewhere; written only while no kernel
 * runs (nvshmem initialisation and finalisation) */
extern long long slow_ns;
void slow_release();            /* thread 0 reached a waiting point: its block's held threads go */
void slow_publish();            /* a signal was published: pause, then release */
void poll_point(const void *p); /* an acquire load of p: back off when it repeats */
void nanosleep_point(unsigned ns); /* __nanosleep: a fiber lets the others run instead */
cudaError_t launch_check_concurrent(dim3 g, dim3 b);
void run_grid_concurrent(const std::function<void()> &body, dim3 g, dim3 b, size_t smem);
void syncthreads();
int syncthreads_count(int pred);
unsigned long long warp_exchange(unsigned long long v, int src_lane); /* src < 0: own */
unsigned warp_ballot(int pred);
void syncwarp();
unsigned char *dyn_smem();
void run_grid(const std::function<void()> &body, dim3 g, dim3 b, size_t smem);
void record_or_run(std::function<void()> op);
void set_last_error(cudaError_t e);
} // namespace emu

#define threadIdx (emu::tv().thread)
#define blockIdx (emu::tv().block)
/* functions, so that a field of the same name (cudaLaunchConfig_t's) still works */
#define blockDim emu_blockDim()
#define gridDim emu_gridDim()
inline dim3 &emu_blockDim()
{
    return emu::tv().bdim;
}
inline dim3 &emu_gridDim()
{
    return emu::tv().gdim;
}

inline void __syncthreads()
{
    emu::syncthreads();
}
inline int __syncthreads_count(int p)
{
    return emu::syncthreads_count(p);
}
inline int __syncthreads_or(int p)
{
    return emu::syncthreads_count(p) != 0;
}
inline int __syncthreads_and(int p)
{
    return emu::syncthreads_count(!p) == 0;
}
inline void __syncwarp(unsigned mask = 0xffffffffu)
{
    (void)mask;
    emu::syncwarp();
}
inline void __threadfence()
{
    std::atomic_thread_fence(std::memory_order_seq_cst);
}
inline void __threadfence_block()
{
    std::atomic_thread_fence(std::memory_order_seq_cst);
}
inline void __threadfence_system()
{
    std::atomic_thread_fence(std::memory_order_seq_cst);
}
/* thread 0 of a slow PE's block at a point where it may wait: let the held threads go */
inline void emu_wait_point()
{
    if (emu::slow_ns)
        emu::slow_release();
}
inline void __nanosleep(unsigned ns)
{
    emu_wait_point();
    emu::nanosleep_point(ns);
}

template <typename T> inline unsigned long long emu_bits(T v)
{
    static_assert(sizeof(T) <= 8, "shuffle of a value wider than 8 bytes");
    unsigned long long b = 0;
    std::memcpy(&b, &v, sizeof v);
    return b;
}
template <typename T> inline T emu_from_bits(unsigned long long b)
{
    T v;
    std::memcpy(&v, &b, sizeof v);
    return v;
}
inline int emu_lane()
{
    return emu::tv().tid & 31;
}
template <typename T> inline T __shfl_sync(unsigned m, T v, int src, int width = 32)
{
    (void)m;
    int lane = emu_lane();
    int s = (lane & ~(width - 1)) + (src & (width - 1));
    return emu_from_bits<T>(emu::warp_exchange(emu_bits(v), s));
}
template <typename T> inline T __shfl_xor_sync(unsigned m, T v, int lm, int width = 32)
{
    (void)m;
    int lane = emu_lane();
    int s = lane ^ lm;
    if ((s & ~(width - 1)) != (lane & ~(width - 1)))
        s = lane;
    return emu_from_bits<T>(emu::warp_exchange(emu_bits(v), s));
}
template <typename T> inline T __shfl_down_sync(unsigned m, T v, unsigned d, int width = 32)
{
    (void)m;
    int lane = emu_lane();
    int s = lane + (int)d;
    if ((s & ~(width - 1)) != (lane & ~(width - 1)))
        s = lane;
    return emu_from_bits<T>(emu::warp_exchange(emu_bits(v), s));
}
template <typename T> inline T __shfl_up_sync(unsigned m, T v, unsigned d, int width = 32)
{
    (void)m;
    int lane = emu_lane();
    int s = lane - (int)d;
    if (s < 0 || (s & ~(width - 1)) != (lane & ~(width - 1)))
        s = lane;
    return emu_from_bits<T>(emu::warp_exchange(emu_bits(v), s));
}
/* the lanes whose v equals this lane's: one exchange per lane (slow, but the emulation) */
inline unsigned __match_any_sync(unsigned m, int v)
{
    (void)m;
    unsigned r = 0;
    for (int s = 0; s < 32; s++)
        if (emu_from_bits<int>(emu::warp_exchange(emu_bits(v), s)) == v)
            r |= 1u << s;
    return r;
}
inline unsigned __ballot_sync(unsigned m, int p)
{
    (void)m;
    return emu::warp_ballot(p);
}
inline int __any_sync(unsigned m, int p)
{
    (void)m;
    return emu::warp_ballot(p) != 0;
}
inline int __all_sync(unsigned m, int p)
{
    (void)m;
    return emu::warp_ballot(!p) == 0;
}
inline unsigned __reduce_or_sync(unsigned m, unsigned v)
{
    for (int o = 16; o > 0; o >>= 1)
        v |= __shfl_xor_sync(m, v, o);
    return v;
}

/* atomics: read-modify-write on host memory through std::atomic_ref */
template <typename T> inline T emu_atomic_add(T *p, T v)
{
    return std::atomic_ref<T>(*p).fetch_add(v);
}
inline int atomicAdd(int *p, int v)
{
    return emu_atomic_add(p, v);
}
inline unsigned atomicAdd(unsigned *p, unsigned v)
{
    return emu_atomic_add(p, v);
}
inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v)
{
    return emu_atomic_add(p, v);
}
inline float atomicAdd(float *p, float v)
{
    return emu_atomic_add(p, v);
}
inline double atomicAdd(double *p, double v)
{
    return emu_atomic_add(p, v);
}
template <typename T> inline T emu_atomic_rmw(T *p, const std::function<T(T)> &f)
{
    std::atomic_ref<T> a(*p);
    T old = a.load();
    while (!a.compare_exchange_weak(old, f(old))) {
    }
    return old;
}
inline int atomicMin(int *p, int v)
{
    return emu_atomic_rmw<int>(p, [v](int o) { return o < v ? o : v; });
}
inline int atomicMax(int *p, int v)
{
    return emu_atomic_rmw<int>(p, [v](int o) { return o > v ? o : v; });
}
inline unsigned atomicMax(unsigned *p, unsigned v)
{
    return emu_atomic_rmw<unsigned>(p, [v](unsigned o) { return o > v ? o : v; });
}
inline unsigned long long atomicMax(unsigned long long *p, unsigned long long v)
{
    return emu_atomic_rmw<unsigned long long>(p,
                                              [v](unsigned long long o) { return o > v ? o : v; });
}
inline int atomicOr(int *p, int v)
{
    return std::atomic_ref<int>(*p).fetch_or(v);
}
inline unsigned atomicOr(unsigned *p, unsigned v)
{
    return std::atomic_ref<unsigned>(*p).fetch_or(v);
}
inline unsigned long long atomicOr(unsigned long long *p, unsigned long long v)
{
    return std::atomic_ref<unsigned long long>(*p).fetch_or(v);
}
inline unsigned long long atomicMin(unsigned long long *p, unsigned long long v)
{
    return emu_atomic_rmw<unsigned long long>(p,
                                              [v](unsigned long long o) { return o < v ? o : v; });
}
inline int atomicExch(int *p, int v)
{
    return std::atomic_ref<int>(*p).exchange(v);
}
inline unsigned atomicInc(unsigned *p, unsigned lim)
{
    return emu_atomic_rmw<unsigned>(p, [lim](unsigned o) { return o >= lim ? 0u : o + 1u; });
}
inline int atomicCAS(int *p, int cmp, int v)
{
    std::atomic_ref<int>(*p).compare_exchange_strong(cmp, v);
    return cmp;
}

/* math and bit intrinsics */
inline float rsqrtf(float x)
{
    return 1.0f / std::sqrt(x);
}
inline double rsqrt(double x)
{
    return 1.0 / std::sqrt(x);
}
inline float __frsqrt_rn(float x)
{
    return (float)(1.0 / std::sqrt((double)x));
}
inline float __fdividef(float a, float b)
{
    return a / b;
}
inline int __float_as_int(float f)
{
    int i;
    std::memcpy(&i, &f, 4);
    return i;
}
inline float __int_as_float(int i)
{
    float f;
    std::memcpy(&f, &i, 4);
    return f;
}
inline unsigned __float_as_uint(float f)
{
    unsigned i;
    std::memcpy(&i, &f, 4);
    return i;
}
inline float __uint_as_float(unsigned i)
{
    float f;
    std::memcpy(&f, &i, 4);
    return f;
}
inline int __popc(unsigned v)
{
    return __builtin_popcount(v);
}
inline int __popcll(unsigned long long v)
{
    return __builtin_popcountll(v);
}
inline int __ffs(int v)
{
    return __builtin_ffs(v);
}
inline int __ffsll(long long v)
{
    return __builtin_ffsll(v);
}
inline int __clz(int v)
{
    return v == 0 ? 32 : __builtin_clz((unsigned)v);
}
template <typename T> inline T __ldg(const T *p)
{
    return *p;
}

inline float2 make_float2(float x, float y)
{
    float2 r = {x, y};
    return r;
}
inline float3 make_float3(float x, float y, float z)
{
    float3 r = {x, y, z};
    return r;
}
inline float4 make_float4(float x, float y, float z, float w)
{
    float4 r = {x, y, z, w};
    return r;
}
inline int2 make_int2(int x, int y)
{
    int2 r = {x, y};
    return r;
}
inline int4 make_int4(int x, int y, int z, int w)
{
    int4 r = {x, y, z, w};
    return r;
}
inline uint2 make_uint2(unsigned x, unsigned y)
{
    uint2 r = {x, y};
    return r;
}
inline double2 make_double2(double x, double y)
{
    double2 r = {x, y};
    return r;
}

inline unsigned char *emu_dyn_smem()
{
    return emu::dyn_smem();
}

/* k<<<g, b, smem, s>>>(args...): the arguments are converted to the kernel's parameter types
 * now (a captured launch keeps these values, as CUDA's does). */
template <typename... P, typename... A>
inline void emu_launch(void (*k)(P...), dim3 g, dim3 b, size_t smem, cudaStream_t s, A... a)
{
    if (g.x == 0 || g.y == 0 || g.z == 0 || b.x * b.y * b.z == 0 || b.x * b.y * b.z > 1024) {
        emu::set_last_error(cudaErrorInvalidValue);
        return;
    }
    const cudaError_t dev_ok = emu_launch_check(s); /* a stream of another device: refused */
    if (dev_ok != cudaSuccess) {
        emu::set_last_error(dev_ok);
        return;
    }
    std::tuple<std::decay_t<P>...> args(a...);
    emu::record_or_run(
        [k, g, b, smem, args]() { emu::run_grid([&]() { std::apply(k, args); }, g, b, smem); });
}

/* cudaLaunchKernelEx(&cfg, k, args...): every block of the grid at once (see above); the
 * arguments are converted to the kernel's parameter types now, as in emu_launch. */
template <typename... P, typename... A>
inline cudaError_t cudaLaunchKernelEx(const cudaLaunchConfig_t *cfg, void (*k)(P...), A &&...a)
{
    const dim3 g = cfg->gridDim, b = cfg->blockDim;
    if (g.x == 0 || g.y == 0 || g.z == 0 || b.x * b.y * b.z == 0 || b.x * b.y * b.z > 1024)
        return cudaErrorInvalidValue;
    const cudaError_t too_large = emu::launch_check_concurrent(g, b);
    if (too_large != cudaSuccess)
        return too_large;
    const cudaError_t dev_ok = emu_launch_check(cfg->stream);
    if (dev_ok != cudaSuccess)
        return dev_ok;
    std::tuple<std::decay_t<P>...> args(std::forward<A>(a)...);
    const size_t smem = cfg->dynamicSmemBytes;
    emu::record_or_run([k, g, b, smem, args]() {
        emu::run_grid_concurrent([&]() { std::apply(k, args); }, g, b, smem);
    });
    return cudaSuccess;
}

/* Resident blocks per multiprocessor: 2048 threads and 227 KB of shared memory per
 * multiprocessor, at most 32 blocks (an H100/H200's limits; registers are not modelled). */
template <typename K>
inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *n, K kernel, int threads,
                                                                 size_t smem)
{
    (void)kernel;
    if (threads <= 0 || threads > 1024)
        return cudaErrorInvalidValue;
    int by_threads = 2048 / threads, by_smem = smem ? (int)((227u * 1024u) / smem) : 32;
    *n = std::min(32, std::min(by_threads, by_smem));
    return cudaSuccess;
}

/* ---- the PTX memory operations of the fused NVSHMEM kernels (see above) -------------------- */

/* ld.acquire.{gpu,sys}.global.u64: a poll */
inline uint64_t emu_ld_acquire(const uint64_t *p)
{
    emu::poll_point(p);
    emu_wait_point();
    return std::atomic_ref<uint64_t>(*const_cast<uint64_t *>(p)).load(std::memory_order_acquire);
}
/* red.{release,relaxed}.{gpu,sys}.global.add.u64: a signal published */
inline void emu_red_add(uint64_t *p, uint64_t v, bool release)
{
    std::atomic_ref<uint64_t>(*p).fetch_add(v, release ? std::memory_order_release
                                                       : std::memory_order_relaxed);
    if (emu::slow_ns)
        emu::slow_publish();
}
/* atom.acq_rel.{gpu,sys}.global.add.u32: a count that publishes (and acquires) */
inline unsigned emu_atom_add_acq_rel(unsigned *p, unsigned v)
{
    const unsigned old = std::atomic_ref<unsigned>(*p).fetch_add(v, std::memory_order_acq_rel);
    if (emu::slow_ns)
        emu::slow_publish();
    return old;
}
/* %globaltimer: ns of the host's monotonic clock (one clock for every process, as a GPU's) */
inline uint64_t emu_globaltimer_ns()
{
    return (uint64_t)std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

#endif
