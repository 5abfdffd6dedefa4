/* Device-side pack, copy and unpack of halo pulses, shared by every GPU halo backend: the
 * CPU-driven baselines (src/halo/halo_gpu.cu, whole-program compiled) and the fused NVSHMEM
 * kernels (src/halo/nvshmem/nvshmem.cu, the relocatable-device-code module). Everything here is a
 * static inline device function, so each module compiles its own copy and no device symbol crosses
 * the module boundary.
 *
 * The arithmetic is src/dd/pack.h's (the host backend's): a thread packs 4 consecutive entries
 * into registers with hx_pack_x_elem_f32 and stores them as three 16-byte vectors. Layout: x, f
 * and every buffer are [atoms][3] floats; "entry e" of a pulse is map[e] on the sending side and
 * position e of the message.
 *
 * Alignment: a destination of 4 atoms (48 bytes) can be written with float4 stores when it
 * starts at a 16-byte boundary. Destinations are arbitrary atom offsets into a peer's x (an atom
 * is 12 bytes), so each range is split into a head (0-3 atoms, scalar stores) up to the first
 * 16-byte aligned atom, a body of 4-atom groups (vector stores, or bulk copies), and a tail (0-3
 * atoms). Staging slots start at multiples of 32 atoms (hx_domain_plan.buf_offset), so ranges
 * starting at multiples of 4 entries in them are aligned. */
#ifndef HX_GPU_HALO_PACK_CUH
#define HX_GPU_HALO_PACK_CUH

#include <stdint.h>
#include <string.h>

#include "dd/pack.h"
#include "dd/plan_image.h"

/* Threads per block of every halo kernel, at least 64 (a pack's tail is written by the second
 * warp); the CPU emulation builds with 64 (a host thread per CUDA thread). */
#ifndef HX_HALO_THREADS
#define HX_HALO_THREADS 256
#endif
#define HX_HALO_WARPS (HX_HALO_THREADS / 32)
#define HX_HALO_GROUP 4 /* entries per thread and round: 48 bytes, three float4 */
#define HX_HALO_ROUND (HX_HALO_THREADS * HX_HALO_GROUP) /* entries per block and round: 1024 */
#define HX_HALO_WARP_ATOMS (32 * HX_HALO_GROUP)         /* one bulk copy: 128 atoms, 1536 bytes */
/* Dynamic shared memory of a block that packs through the bulk-copy engine: two buffers per warp
 * (one is filled while the copy engine still reads the other). */
#define HX_HALO_BULK_SMEM (2 * HX_HALO_WARPS * HX_HALO_WARP_ATOMS * 3 * (int)sizeof(float))

/* The first entry e >= e0 whose destination dst + 3e is 16-byte aligned (dst is 4-byte aligned):
 * 12 k = -addr (mod 16) for k in 0..3. */
static __device__ __forceinline__ int hx_first_aligned(const float *dst, int e0)
{
    const uintptr_t a = (uintptr_t)(dst + 3 * (size_t)e0);
    return e0 + (int)((a & 15u) >> 2);
}

/* The first entry of the 4-aligned groups of a pack of [e0, e1) into dst (hx_block_pack_x packs
 * the entries before it one by one). */
static __device__ __forceinline__ int hx_pack_first_group(const float *dst, int e0, int e1)
{
    return min(hx_first_aligned(dst, e0), e1);
}

/* The map entries of one thread's first group (4 entries) of a block-wide pack or unpack,
 * loaded ahead of a wait for the data they index: after the wait the group then costs one memory
 * round trip less. ok == 0: nothing was loaded (the thread has no first group). */
typedef struct hx_pre4 {
    int m[4];
    int ok;
} hx_pre4;

/* Entries of a group whose map entries m[4] are in registers, packed into registers r[12] by
 * the host backend's element function (constant indices after unrolling). */
static __device__ __forceinline__ void hx_pack4m(const int m[4], const float *x, float sx, float sy,
                                                 float sz, float r[12])
{
#pragma unroll
    for (int j = 0; j < 4; j++)
        hx_pack_x_elem_f32(j, m, x, sx, sy, sz, r);
}

/* Entries e..e+3 of a pulse, packed into registers r[12]; pre: the group's map entries when
 * loaded ahead. */
static __device__ __forceinline__ void hx_pack4(const int *map, int e, const float *x, float sx,
                                                float sy, float sz, float r[12], const hx_pre4 *pre)
{
    int m[4];
#pragma unroll
    for (int j = 0; j < 4; j++)
        m[j] = pre ? pre->m[j] : map[e + j];
    hx_pack4m(m, x, sx, sy, sz, r);
}

/* This thread's first group of hx_block_pack_x(map, ..., dst, e0, e1): its map entries, ahead. */
static __device__ __forceinline__ hx_pre4 hx_pack_x_prefetch(const int *map, const float *dst,
                                                             int e0, int e1)
{
    hx_pre4 pre;
    pre.ok = 0;
    if (e0 >= e1)
        return pre;
    const int ea = hx_pack_first_group(dst, e0, e1), t = (int)threadIdx.x;
    if (t < (e1 - ea) / 4) {
#pragma unroll
        for (int j = 0; j < 4; j++)
            pre.m[j] = map[ea + 4 * t + j];
        pre.ok = 1;
    }
    return pre;
}

/* This thread's first group of hx_block_unpack_f(map, buf, f, e0, e1, true): its map entries. */
static __device__ __forceinline__ hx_pre4 hx_unpack_f_prefetch(const int *map, const float *buf,
                                                               int e0, int e1)
{
    hx_pre4 pre;
    pre.ok = 0;
    const int t = (int)threadIdx.x;
    if (e0 < e1 && ((uintptr_t)(buf + 3 * (size_t)e0) & 15u) == 0 && t < (e1 - e0) / 4) {
#pragma unroll
        for (int j = 0; j < 4; j++)
            pre.m[j] = map[e0 + 4 * t + j];
        pre.ok = 1;
    }
    return pre;
}

static __device__ __forceinline__ void hx_store12(float *dst, const float r[12])
{
    float4 *d = (float4 *)dst;
    d[0] = make_float4(r[0], r[1], r[2], r[3]);
    d[1] = make_float4(r[4], r[5], r[6], r[7]);
    d[2] = make_float4(r[8], r[9], r[10], r[11]);
}

/* ---- the bulk-copy engine (cp.async.bulk, sm_90): shared memory -> global memory ---------- */

/* Order this thread's generic-proxy writes to shared memory before the copy engine reads it. */
static __device__ __forceinline__ void hx_fence_proxy_async_smem(void)
{
#ifdef HX_CUDA_EMULATION
    __threadfence_block();
#else
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

/* Issue one bulk copy of `bytes` (multiple of 16; both addresses 16-byte aligned) into global
 * memory (local, or a peer's through nvshmem_ptr) and close it as one bulk async-group. */
static __device__ __forceinline__ void hx_bulk_store(float *gdst, const float *ssrc, int bytes)
{
#ifdef HX_CUDA_EMULATION
    memcpy(gdst, ssrc, (size_t)bytes); /* the CPU emulation copies at once */
#else
    const unsigned s = (unsigned)__cvta_generic_to_shared(ssrc);
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n\t"
                 "cp.async.bulk.commit_group;" ::"l"(gdst),
                 "r"(s), "r"(bytes)
                 : "memory");
#endif
}

/* Wait until at most one bulk group of this thread still reads shared memory (the other buffer
 * of a double-buffered warp may be refilled). */
static __device__ __forceinline__ void hx_bulk_wait_read_1(void)
{
#ifndef HX_CUDA_EMULATION
    asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
#endif
}

/* Wait until every bulk group of this thread has completed its writes, then order those
 * (async-proxy) writes before this thread's later generic-proxy operations: the release that
 * tells the receiver the data is there comes after this. */
static __device__ __forceinline__ void hx_bulk_complete(void)
{
#ifdef HX_CUDA_EMULATION
    __threadfence();
#else
    asm volatile("cp.async.bulk.wait_group 0;\n\tfence.proxy.async.global;" ::: "memory");
#endif
}

/* ---- block-wide operations (every thread of the block calls them, HX_HALO_THREADS threads) -- */

/* Pack entries [e0, e1) of a pulse (map: its index map; sx, sy, sz: its shift) to dst + 3e,
 * where dst is the destination of entry 0 (a peer's x at the pulse's offset, or a staging slot).
 * pre: this thread's first group's map entries, loaded ahead (hx_pack_x_prefetch), or NULL.
 * smem == NULL: vector stores from registers. smem != NULL (HX_HALO_BULK_SMEM bytes, 128-byte
 * aligned): each warp packs 128-atom pieces into its shared buffers and lane 0 hands each piece
 * to the bulk-copy engine, so warps never wait for each other; *bulk_parity (per thread, the
 * same in a warp) carries the buffer alternation across calls. After the last call the caller
 * runs hx_bulk_complete in lane 0 of every warp before publishing. Contains no block barrier. */
static __device__ __forceinline__ void hx_block_pack_x(const int *map, float sx, float sy, float sz,
                                                       const float *x, float *dst, int e0, int e1,
                                                       float *smem, int *bulk_parity,
                                                       const hx_pre4 *pre)
{
    if (e0 >= e1)
        return;
    const int t = (int)threadIdx.x;
    const int ea = hx_pack_first_group(dst, e0, e1);
    if (pre && !pre->ok)
        pre = NULL;
    const int ngroups = (e1 - ea) / 4;
    const int eb = ea + 4 * ngroups;
    /* head and tail: at most 3 entries each, by two different warps */
    if (t < ea - e0)
        hx_pack_x_elem_f32(e0 + t, map, x, sx, sy, sz, dst);
    if (t >= 32 && t - 32 < e1 - eb)
        hx_pack_x_elem_f32(eb + t - 32, map, x, sx, sy, sz, dst);
    if (!smem) {
        for (int g = t; g < ngroups; g += HX_HALO_THREADS) {
            float r[12];
            hx_pack4(map, ea + 4 * g, x, sx, sy, sz, r, g == t ? pre : NULL);
            hx_store12(dst + 3 * (size_t)(ea + 4 * g), r);
        }
        return;
    }
    const int lane = t & 31, w = t >> 5;
    for (int base = 0; base < ngroups; base += HX_HALO_THREADS) {
        const int g0 = base + 32 * w;
        const int ng = min(32, ngroups - g0); /* the same in the whole warp */
        if (ng <= 0)
            continue;
        float *buf = smem + (size_t)(*bulk_parity * HX_HALO_WARPS + w) * (HX_HALO_WARP_ATOMS * 3);
        if (lane == 0)
            hx_bulk_wait_read_1(); /* the copy that last read this buffer is done reading */
        __syncwarp();
        if (lane < ng) {
            float r[12];
            /* warp w's lane handles group base + 32 w + lane = base + t */
            hx_pack4(map, ea + 4 * (g0 + lane), x, sx, sy, sz, r, base == 0 ? pre : NULL);
            hx_store12(buf + 12 * lane, r);
        }
        hx_fence_proxy_async_smem();
        __syncwarp();
        if (lane == 0)
            hx_bulk_store(dst + 3 * (size_t)(ea + 4 * g0), buf, 48 * ng);
        *bulk_parity ^= 1;
    }
}

/* Copy n floats src -> dst (dst 16-byte aligned; src anywhere): float4 stores from scalar loads
 * (coalesced across the warp). Forces of a pulse's received atoms into the peer's slot. */
static __device__ __forceinline__ void hx_block_copy(const float *src, float *dst, int n)
{
    const int t = (int)threadIdx.x, n4 = n / 4;
    for (int q = t; q < n4; q += HX_HALO_THREADS) {
        const float *s = src + 4 * (size_t)q;
        ((float4 *)dst)[q] = make_float4(s[0], s[1], s[2], s[3]);
    }
    if (t < n - 4 * n4)
        dst[4 * n4 + t] = src[4 * n4 + t];
}

/* Accumulate entries [e0, e1) of a pulse (map: its index map) from buf (entry 0's forces;
 * buf + 3*e0 16-byte aligned when e0 is a multiple of 4 in an aligned slot) into f[map[e]]:
 * f[map[e]] += buf[e], atomically when other pulses may add into the same atoms at the same
 * time. pre (atomic only): this thread's first group's map entries (hx_unpack_f_prefetch), or
 * NULL. */
static __device__ __forceinline__ void hx_block_unpack_f(const int *map, const float *buf, float *f,
                                                         int e0, int e1, bool atomic,
                                                         const hx_pre4 *pre)
{
    const int t = (int)threadIdx.x;
    if (pre && !pre->ok)
        pre = NULL;
    if (!atomic) {
        for (int e = e0 + t; e < e1; e += HX_HALO_THREADS)
            hx_unpack_f_elem_f32(e, map, buf, f);
        return;
    }
    const bool vec = ((uintptr_t)(buf + 3 * (size_t)e0) & 15u) == 0;
    const int ngroups = vec ? (e1 - e0) / 4 : 0;
    for (int g = t; g < ngroups; g += HX_HALO_THREADS) {
        const int e = e0 + 4 * g;
        const float4 *s = (const float4 *)(buf + 3 * (size_t)e);
        const float4 a = s[0], b = s[1], c = s[2];
        const float r[12] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w, c.x, c.y, c.z, c.w};
        int m[4];
#pragma unroll
        for (int j = 0; j < 4; j++)
            m[j] = pre && g == t ? pre->m[j] : map[e + j];
#pragma unroll
        for (int j = 0; j < 4; j++)
            hx_unpack_f_elem_f32_atomic(j, m, r, f);
    }
    for (int e = e0 + 4 * ngroups + t; e < e1; e += HX_HALO_THREADS)
        hx_unpack_f_elem_f32_atomic(e, map, buf, f);
}

#endif
