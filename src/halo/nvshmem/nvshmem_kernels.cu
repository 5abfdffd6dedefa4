/* The fused exchange's protocol (src/halo/nvshmem/nvshmem_impl.h says how it works): the coordinate
 * and force kernels and their launch. Device code only touches NVSHMEM through the transport's
 * device calls (src/comm/shmem.h), on the network path; the peer-to-peer path stores and signals
 * with plain memory operations. The test hooks (stress delays, trace stamps, withheld signals,
 * injected ordering faults) exist only in the test variant of the module (HX_NVSHMEM_HOOKS). */
#include "halo/nvshmem/nvshmem_impl.h"
#include "comm/shmem.h"
#include "gpu/cuda_check.h"
#include "gpu/gpu_util.cuh"
#include "halo/halo_pack.cuh"

#include <stdint.h>
#include <stdio.h>

/* ---- device helpers ----------------------------------------------------------------------- */

static __device__ __forceinline__ uint64_t ld_acquire_sys(const uint64_t *p)
{
#ifdef HX_CUDA_EMULATION
    return emu_ld_acquire(p); /* the CPU emulation's (tests/emu/emu_device.h) */
#else
    uint64_t v;
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
#endif
}

static __device__ __forceinline__ uint64_t ld_acquire_gpu(const uint64_t *p)
{
#ifdef HX_CUDA_EMULATION
    return emu_ld_acquire(p);
#else
    uint64_t v;
    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
#endif
}

/* The ordering between PEs is at system scope in general (peers on other GPUs), at GPU scope
 * when every peer of this PE runs on the same GPU (several PEs under MPS): the memory model's
 * gpu scope is every thread of the device, whichever process launched it. */
static __device__ __forceinline__ uint64_t ld_acquire(const uint64_t *p, int sys)
{
    return sys ? ld_acquire_sys(p) : ld_acquire_gpu(p);
}

/* Add v to a signal word: with release semantics (mode HX_NV_FENCE_RELEASE), or relaxed after the
 * caller's fence. */
static __device__ __forceinline__ void red_add_u64(uint64_t *p, uint64_t v, int release, int sys)
{
#ifdef HX_CUDA_EMULATION
    (void)sys;
    emu_red_add(p, v, release != 0);
#else
    if (release && sys)
        asm volatile("red.release.sys.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
    else if (release)
        asm volatile("red.release.gpu.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
    else if (sys)
        asm volatile("red.relaxed.sys.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
    else
        asm volatile("red.relaxed.gpu.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
#endif
}

static __device__ __forceinline__ unsigned atom_add_acq_rel(unsigned *p, unsigned v, int sys)
{
#ifdef HX_CUDA_EMULATION
    (void)sys;
    return emu_atom_add_acq_rel(p, v);
#else
    unsigned old;
    if (sys)
        asm volatile("atom.acq_rel.sys.global.add.u32 %0, [%1], %2;"
                     : "=r"(old)
                     : "l"(p), "r"(v)
                     : "memory");
    else
        asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;"
                     : "=r"(old)
                     : "l"(p), "r"(v)
                     : "memory");
    return old;
#endif
}

/* Programmatic dependent launch (sm_90): the kernels are launched while the one before them in
 * the stream still runs (cfg pdl); they wait here, before reading anything it wrote, and let the
 * next kernel launch as soon as every block of theirs has started. Without the launch attribute
 * both are no-ops. */
static __device__ __forceinline__ void nv_pdl_wait(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

static __device__ __forceinline__ void nv_pdl_launch_next(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

#if HX_NVSHMEM_HOOKS
static __device__ __forceinline__ uint64_t nv_mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Stress mode: at `site`, one block in four waits a pseudo-random 0-20 us (a function of the
 * seed, PE, step, pulse, block and site), so that blocks and PEs run in orders a quiet machine
 * never shows. Block-uniform call (contains a barrier). */
static __device__ void nv_stress(const nv_args *a, uint64_t s, int p, int b, int site)
{
    if (!a->stress)
        return;
    if (threadIdx.x == 0) {
        const uint64_t h =
            nv_mix(a->stress ^ nv_mix(s * 0x100000001b3ull + (uint64_t)a->rank * 7919u +
                                      (uint64_t)p * 104729u + (uint64_t)b * 31u + (uint64_t)site));
        if ((h & 3u) == 0) {
            const uint64_t ns = (h >> 8) % 20000u, t0 = hx_globaltimer_ns();
            while (hx_globaltimer_ns() - t0 < ns) {
            }
        }
    }
    __syncthreads();
}
#define NV_STRESS(a, s, p, b, site) nv_stress(a, s, p, b, site)
#else
#define NV_STRESS(a, s, p, b, site) ((void)0)
#endif

/* A wait gave up: record it once (the first thread to give up on this PE), print it, and raise
 * the abort flag for every other wait. */
static __device__ void nv_report(const nv_args *a, int kind, int pulse, int peer, uint64_t want,
                                 uint64_t seen)
{
    atomicExch(&a->st->abort, 1);
    if (atomicCAS(&a->st->err_claim, 0, 1) != 0)
        return;
    nv_error *e = a->err;
    e->rank = a->rank;
    e->peer = peer;
    e->pulse = pulse;
    e->kind = kind;
    e->step = want;
    e->expected = want;
    e->observed = seen / NV_SIG_UNIT;
    __threadfence_system();
    e->flag = 1;
    __threadfence_system();
    printf("halox nvshmem: rank %d: deadline of %.3g s passed waiting for %s of pulse %d from "
           "rank %d (step %llu): expected signal %llu, observed %llu\n",
           a->rank, (double)a->timeout_ns * 1e-9,
           kind == NV_WAIT_X     ? "the coordinates"
           : kind == NV_WAIT_F   ? "the forces"
           : kind == NV_WAIT_MSG ? "a search-step message (the pulse is its channel)"
                                 : "the local accumulation of the forces",
           pulse, peer, (unsigned long long)want, (unsigned long long)want,
           (unsigned long long)(seen / NV_SIG_UNIT));
}

#if HX_NVSHMEM_HOOKS
/* The trace slot of step s, NULL when not traced; p: the pulse, or -1 for a per-step stamp. */
static __device__ __forceinline__ nv_trace *nv_tr(const nv_args *a, uint64_t s, int p)
{
    if (!a->trace || p >= NV_TRACE_PULSES)
        return NULL;
    return a->trace + s % NV_TRACE_STEPS;
}
#define NV_TRACED(a) ((a)->trace != NULL)
#define NV_INJECT(a) ((a)->inject)
#else
/* the trace stamps of the test variant, unused here (compiled away) */
static __device__ __forceinline__ void nv_unused(uint64_t) {}
#define NV_TRACED(a) false
#define NV_INJECT(a) 0
#endif

/* Wait (one thread) until the signal word *sig counts n exchanges (n * NV_SIG_UNIT), acquiring
 * at system scope (sys) or GPU scope (the word is written by this PE's own blocks, or by peers
 * on this GPU). false: gave up (deadline or abort); the report counts in exchanges. */
static __device__ bool nv_wait(const nv_args *a, const uint64_t *sig, uint64_t n, int sys, int kind,
                               int pulse, int peer)
{
    const uint64_t want = n * NV_SIG_UNIT;
    uint64_t v = ld_acquire(sig, sys);
    if (v >= want)
        return true;
    const uint64_t t0 = hx_globaltimer_ns();
    unsigned nap = 32;
    for (unsigned it = 1;; it++) {
        if (a->backoff_ns) {
            /* a sleeping warp issues nothing: the kernels of this GPU's other processes (and
             * this PE's blocks that do the work waited for) get its issue slots, and L2 the
             * bandwidth of the polls; the bound keeps the added latency below it */
            __nanosleep(nap);
            nap = min(2u * nap, a->backoff_ns);
        }
        v = ld_acquire(sig, sys);
        if (v >= want)
            return true;
        /* The abort flag and the clock every 16th poll only: the flag's load would come after
         * the acquire's, doubling the time a poll takes (and with it how late the signal is
         * seen), and the deadline needs no finer grain than 16 polls (~10-20 us). A poll in
         * between costs the loop's counter and one predicated branch (docs/design/gpu-halo.md,
         * "The cost of the deadline"). */
        if ((it & 15) == 0) {
            if (*(volatile int *)&a->st->abort)
                return false;
            if (a->timeout_ns && hx_globaltimer_ns() - t0 > a->timeout_ns) {
                nv_report(a, kind, pulse, peer, n, v);
                return false;
            }
        }
    }
}

/* Arrival of every pulse in `mask` at this PE (coordinates). */
static __device__ bool nv_wait_x_mask(const nv_args *a, uint64_t mask, uint64_t s)
{
    while (mask) {
        const int k = __ffsll((long long)mask) - 1;
        mask &= mask - 1;
        if (!nv_wait(a, a->xsig + k, s, a->sys, NV_WAIT_X, k, a->pulses[k].recv_pe))
            return false;
    }
    return true;
}

/* Accumulation, on this PE, of the forces of every pulse in `mask`. */
static __device__ bool nv_wait_fdone_mask(const nv_args *a, uint64_t mask, uint64_t s)
{
    while (mask) {
        const int q = __ffsll((long long)mask) - 1;
        mask &= mask - 1;
        if (!nv_wait(a, a->st->fdone + q, s, 0, NV_WAIT_FDONE, q, a->rank))
            return false;
    }
    return true;
}

/* This step's numbers as thread 0 holds them: thread 0 alone waits, stamps and injects delays,
 * so only it needs them. nv_begin issues their loads and nothing waits for them until thread 0's
 * first wait: the data movement before it (packing home atoms, sending the last pulse's forces)
 * needs no step number, since a block's signal adds a fixed share. */
typedef struct nv_step {
    uint64_t word, skip; /* the kernel's step word (as loaded), steps without forces */
    unsigned inc;        /* the step is word + inc: 1 for the coordinate kernel, 0 for forces */
    int abort;           /* an earlier wait gave up: every wait returns at once */
} nv_step;

static __device__ __forceinline__ uint64_t nv_s(const nv_step *st)
{
    return st->word + st->inc;
}
static __device__ __forceinline__ uint64_t nv_sf(const nv_step *st)
{
    return st->word + st->inc - st->skip;
}

/* force: the force kernel (reads fstep), else the coordinate kernel (reads step). */
static __device__ __forceinline__ nv_step nv_begin(const nv_args *a, bool force)
{
    nv_pdl_wait();        /* the kernel before us in the stream has completed */
    nv_pdl_launch_next(); /* the next one may start (it waits for us in its nv_pdl_wait) */
    nv_step st = {0, 0, force ? 0u : 1u, 0};
    if (threadIdx.x == 0) {
        st.word = *(volatile uint64_t *)(force ? &a->st->fstep : &a->st->step);
        st.skip = *(volatile uint64_t *)&a->st->f_skip;
        st.abort = *(volatile int *)&a->st->abort;
    }
    return st;
}

/* Block-uniform "thread 0 decides": broadcast a flag through shared memory. */
static __device__ bool nv_bcast(int flag)
{
#ifdef HX_CUDA_EMULATION
    /* the emulation runs this module's blocks at once and has no per-block static shared
     * memory; the callers pass 0 in every thread but 0, so the block's "or" is thread 0's flag */
    return __syncthreads_or(flag) != 0;
#else
    __shared__ int s_flag;
    __syncthreads(); /* earlier readers of s_flag are done */
    if (threadIdx.x == 0)
        s_flag = flag;
    __syncthreads();
    return s_flag != 0;
#endif
}

/* Count this block done in *count (of n blocks); true in the last one (which resets it for the
 * next launch). The block's writes (they may be in a peer's memory) are published at scope
 * `sys` (system) or GPU before the count, in the form `mode` (HX_NV_FENCE_*): a fence by every
 * thread, a fence by thread 0 after the barrier, or thread 0's acquire-release add after the
 * barrier. The barrier orders every thread's writes before thread 0's fence or release, which
 * are cumulative (the pattern of a grid-wide barrier). The last block then orders its reads
 * after every other block's writes. */
static __device__ bool nv_last_block(unsigned *count, unsigned n, int mode, int sys)
{
    if (mode == HX_NV_FENCE_THREAD) {
        if (sys)
            __threadfence_system();
        else
            __threadfence();
    }
    int last = 0;
    __syncthreads();
    if (threadIdx.x == 0) {
        if (mode == HX_NV_FENCE_RELEASE) {
            last = atom_add_acq_rel(count, 1u, sys) == n - 1;
            if (last)
                *count = 0; /* read again only by the next launch */
        } else {
            if (mode == HX_NV_FENCE_BLOCK) {
                if (sys)
                    __threadfence_system();
                else
                    __threadfence();
            }
            last = atomicAdd(count, 1u) == n - 1;
            if (last) {
                *count = 0;
                __threadfence();
            }
        }
    }
    return nv_bcast(last);
}

/* This block's share of a pulse's NV_SIG_UNIT: the first block takes the remainder. */
static __device__ __forceinline__ uint64_t nv_share(int b, int nb)
{
    return b == 0 ? NV_SIG_UNIT - (uint64_t)(nb - 1) : 1u;
}

/* Publish this block's writes (they may be in a peer's memory) and add its share to the signal
 * word *sig (a peer's, or our own fdone) at scope `sys` or GPU, in the form `mode` (HX_NV_FENCE_*):
 * a fence by every thread, or thread 0's fence after the barrier, before a relaxed add; or
 * thread 0's release-add after the barrier. The barrier orders every thread's writes before
 * thread 0's fence or release, which are cumulative. Returns, in thread 0 when `stamp`, the
 * time of the add (trace). */
static __device__ uint64_t nv_publish(uint64_t *sig, uint64_t share, int mode, int sys, bool stamp)
{
    if (mode == HX_NV_FENCE_THREAD) {
        if (sys)
            __threadfence_system();
        else
            __threadfence();
    }
    __syncthreads();
    if (threadIdx.x != 0)
        return 0;
    if (mode == HX_NV_FENCE_BLOCK) {
        if (sys)
            __threadfence_system();
        else
            __threadfence();
    }
    red_add_u64(sig, share, mode == HX_NV_FENCE_RELEASE, sys);
    return stamp ? hx_globaltimer_ns() : 0;
}

/* ---- the coordinate kernel ---------------------------------------------------------------- */

__global__ void __launch_bounds__(HX_HALO_THREADS) nv_x_kernel(nv_args args)
{
#ifdef HX_CUDA_EMULATION
    float *nv_smem = (float *)emu_dyn_smem();
#else
    extern __shared__ __align__(128) float nv_smem[];
#endif
    const nv_args *a = &args;
    const int p = (int)blockIdx.y, b = (int)blockIdx.x;
    const nv_pulse P = a->pulses[p];
    if (b >= P.nb_x)
        return;
    const nv_step st = nv_begin(a, false);
    const bool stamp = NV_TRACED(a) && threadIdx.x == 0;
    const uint64_t t_start = stamp ? hx_globaltimer_ns() : 0;
    uint64_t t_dep = 0, t_sent = 0, t_recv = 0;
    NV_STRESS(a, nv_s(&st), p, b, 0);
    const int C = a->chunk;
    float *dst = P.x_dst ? P.x_dst : a->xstage + 3 * (size_t)P.buf_offset;
    float *smem = a->bulk && P.x_dst ? nv_smem : NULL;
    int parity = 0;
    /* dependent entries of this block: their map entries are loaded now, ahead of the wait */
    const int e0 = P.d + b * C, e1 = min(P.n, e0 + C);
    const hx_pre4 pre = hx_pack_x_prefetch(P.map, dst, e0, e1);
    /* independent entries: home atoms, packable at once */
    hx_block_pack_x(P.map, P.sx, P.sy, P.sz, a->x, dst, b * C, min(P.d, (b + 1) * C), smem, &parity,
                    NULL);
    const bool inject_early = NV_INJECT(a) == HX_NV_INJECT_X_EARLY && P.x_dst;
    if (inject_early)
        nv_publish(P.xsig_dst, nv_share(b, P.nb_x), a->fence_mode, a->sys, false);
    /* dependent entries: after the pulses they reference have arrived here */
    bool ok = true;
    if (e0 < e1) {
        NV_STRESS(a, nv_s(&st), p, b, 1);
        ok = nv_bcast(threadIdx.x == 0 ? !st.abort && nv_wait_x_mask(a, P.deps, nv_s(&st)) : 0);
        if (stamp)
            t_dep = hx_globaltimer_ns();
        if (ok)
            hx_block_pack_x(P.map, P.sx, P.sy, P.sz, a->x, dst, e0, e1, smem, &parity, &pre);
    }
    if (smem && (threadIdx.x & 31) == 0)
        hx_bulk_complete();
    if (!ok)
        return;
    NV_STRESS(a, nv_s(&st), p, b, 2);
    /* test hook, block-uniform (only thread 0 holds the step number) */
#if HX_NVSHMEM_HOOKS
    const bool withhold =
        a->wh_dir == 0 && a->wh_pulse == p && nv_bcast(threadIdx.x == 0 && a->wh_step == nv_s(&st));
#else
    const bool withhold = false;
#endif
    if (P.x_dst) {
        /* P2P: every block publishes its part itself (withheld: the test hook; the receiver's
         * deadline must catch it) */
        if (!withhold && !inject_early)
            t_sent = nv_publish(P.xsig_dst, nv_share(b, P.nb_x), a->fence_mode, a->sys, stamp);
    } else if (nv_last_block(&a->st->x_count[p], (unsigned)P.nb_x, a->fence_mode, 1)) {
        if (withhold) {
            /* test hook */
        } else {
            /* the staging slot was written by every block of the pulse: make it visible to the
             * transport (a NIC reads it) before the put */
            if (a->fence_mode == HX_NV_FENCE_THREAD)
                __threadfence_system();
            __syncthreads();
            if (a->fence_mode != HX_NV_FENCE_THREAD && threadIdx.x == 0)
                __threadfence_system();
            __syncthreads();
            if (P.n == 0) {
                /* nothing to send: the signal alone (a zero-length put is not relied on) */
                if (threadIdx.x == 0)
                    hx_shmem_signal_add(a->xsig + p, NV_SIG_UNIT, P.send_pe);
            } else {
                hx_shmem_put_signal_nbi_block(a->x + 3 * (size_t)P.peer_atom_offset,
                                              a->xstage + 3 * (size_t)P.buf_offset, 3 * (size_t)P.n,
                                              a->xsig + p, NV_SIG_UNIT, P.send_pe);
            }
        }
        if (stamp)
            t_sent = hx_globaltimer_ns();
    }
    /* the stream passes this kernel only when the pulse we receive is here */
    if (b == 0 && threadIdx.x == 0) {
        if (!st.abort)
            (void)nv_wait(a, a->xsig + p, nv_s(&st), a->sys, NV_WAIT_X, p, P.recv_pe);
        if (stamp)
            t_recv = hx_globaltimer_ns();
        if (p == 0)
            *(volatile uint64_t *)&a->st->fstep = nv_s(&st); /* the force kernel's step */
    }
#if HX_NVSHMEM_HOOKS
    if (stamp) {
        nv_trace *tr = nv_tr(a, nv_s(&st), p);
        if (p == 0 && b == 0) {
            nv_trace *te = nv_tr(a, nv_s(&st), -1);
            te->step = nv_s(&st);
            te->x_start = t_start;
        }
        if (tr) {
            if (b == 0) {
                tr->x_dep[p] = t_dep;
                tr->x_recv[p] = t_recv;
            }
            if (t_sent)
                atomicMax((unsigned long long *)&tr->x_sent[p], (unsigned long long)t_sent);
        }
    }
#else
    nv_unused(t_start);
    nv_unused(t_dep);
    nv_unused(t_sent);
    nv_unused(t_recv);
#endif
}

/* ---- the force kernel --------------------------------------------------------------------- */

__global__ void __launch_bounds__(HX_HALO_THREADS) nv_f_kernel(nv_args args)
{
    const nv_args *a = &args;
    /* later pulses first: their accumulation is what earlier pulses wait for */
    const int p = a->npulses - 1 - (int)blockIdx.y, b = (int)blockIdx.x;
    const nv_pulse P = a->pulses[p];
    if (b >= P.nb_fa + P.nb_fb)
        return;
    const nv_step st = nv_begin(a, true);
    const bool stamp = NV_TRACED(a) && threadIdx.x == 0;
    const uint64_t t_start = stamp ? hx_globaltimer_ns() : 0;
    uint64_t t_sent = 0, t_recv = 0, t_done = 0;
    const int C = a->chunk;
    bool ok;
    if (b < P.nb_fa) {
        /* A: forces on the atoms we received in pulse p go back to recv_pe, once every later
         * pulse that forwarded some of them has been added in */
        NV_STRESS(a, nv_s(&st), p, b, 3);
        ok = nv_bcast(threadIdx.x == 0
                          ? !P.rdeps || (!st.abort && nv_wait_fdone_mask(a, P.rdeps, nv_sf(&st)))
                          : 0);
        if (!ok)
            return;
#if HX_NVSHMEM_HOOKS
        const bool withhold = a->wh_dir == 1 && a->wh_pulse == p &&
                              nv_bcast(threadIdx.x == 0 && a->wh_step == nv_sf(&st));
#else
        const bool withhold = false;
#endif
        const float *src = a->f + 3 * (size_t)P.atom_offset;
        if (P.f_dst) {
            const int a0 = b * C, a1 = min(P.r, a0 + C);
            if (a0 < a1)
                hx_block_copy(src + 3 * (size_t)a0, P.f_dst + 3 * (size_t)a0, 3 * (a1 - a0));
            if (!withhold)
                t_sent = nv_publish(P.fsig_dst, nv_share(b, P.nb_fa), a->fence_mode, a->sys, stamp);
        } else if (!withhold && P.r == 0) {
            if (threadIdx.x == 0)
                hx_shmem_signal_add(a->fsig + p, NV_SIG_UNIT, P.recv_pe);
            if (stamp)
                t_sent = hx_globaltimer_ns();
        } else if (!withhold) {
            /* one block, blocking: f may be overwritten as soon as this kernel has ended */
            hx_shmem_put_signal_block(a->fbuf + 3 * (size_t)P.buf_offset, src, 3 * (size_t)P.r,
                                      a->fsig + p, NV_SIG_UNIT, P.recv_pe);
            if (stamp)
                t_sent = hx_globaltimer_ns();
        }
    } else {
        /* B: forces on the atoms we sent in pulse p, from send_pe, into f[map[e]]; the map
         * entries are loaded ahead of the wait */
        const int bb = b - P.nb_fa;
        const int e0 = bb * C, e1 = min(P.n, e0 + C);
        const float *buf = a->fbuf + 3 * (size_t)P.buf_offset;
        const hx_pre4 pre = hx_unpack_f_prefetch(P.map, buf, e0, e1);
        NV_STRESS(a, nv_s(&st), p, b, 4);
        ok = nv_bcast(threadIdx.x == 0 ? !st.abort && nv_wait(a, a->fsig + p, nv_sf(&st), a->sys,
                                                              NV_WAIT_F, p, P.send_pe)
                                       : 0);
        if (!ok)
            return;
        if (stamp && bb == 0)
            t_recv = hx_globaltimer_ns();
        const bool inject_early = NV_INJECT(a) == HX_NV_INJECT_F_EARLY;
        if (inject_early)
            nv_publish(&a->st->fdone[p], nv_share(bb, P.nb_fb), a->fence_mode, a->sys, false);
        hx_block_unpack_f(P.map, buf, a->f, e0, e1, true, &pre);
        /* our own blocks read these adds (fdone), but on the network path they hand f to the
         * transport: the inter-PE scope */
        if (!inject_early)
            t_done =
                nv_publish(&a->st->fdone[p], nv_share(bb, P.nb_fb), a->fence_mode, a->sys, stamp);
    }
    /* block (0,0) ends the step for the next coordinate kernel */
    if (blockIdx.y == 0 && b == 0 && threadIdx.x == 0)
        *(volatile uint64_t *)&a->st->step = nv_s(&st);
#if HX_NVSHMEM_HOOKS
    if (stamp) {
        nv_trace *tr = nv_tr(a, nv_s(&st), p);
        nv_trace *te = nv_tr(a, nv_s(&st), -1);
        atomicMax((unsigned long long *)&te->f_end, (unsigned long long)hx_globaltimer_ns());
        if (blockIdx.y == 0 && b == 0)
            te->f_start = t_start;
        if (tr) {
            if (t_sent)
                atomicMax((unsigned long long *)&tr->f_sent[p], (unsigned long long)t_sent);
            if (t_recv)
                tr->f_recv[p] = t_recv;
            if (t_done)
                atomicMax((unsigned long long *)&tr->f_done[p], (unsigned long long)t_done);
        }
    }
#else
    nv_unused(t_start);
    nv_unused(t_sent);
    nv_unused(t_recv);
    nv_unused(t_done);
#endif
}

/* ---- messages of the device search step (nv_msg in nvshmem_impl.h) ------------------------ */

__global__ void __launch_bounds__(HX_HALO_THREADS) nv_msg_kernel(nv_args args, nv_msg M)
{
    const nv_args *a = &args;
    const long long b = *(const long long *)M.src;
    const long long bytes = b < M.cap ? b : M.cap;
    if (M.dst_p2p) {
        const long long words = (bytes + 15) / 16;
        for (long long w = blockIdx.x * (long long)blockDim.x + threadIdx.x; w < words;
             w += (long long)gridDim.x * blockDim.x)
            M.dst_p2p[w] = M.src[w];
        (void)nv_publish(M.sig_p2p, nv_share((int)blockIdx.x, (int)gridDim.x), a->fence_mode,
                         a->sys, false);
    } else if (blockIdx.x == 0) {
        hx_shmem_putmem_signal_block(M.dst_sym, M.src, (size_t)bytes, M.sig_sym, NV_SIG_UNIT,
                                     M.dest_pe);
    }
    if (blockIdx.x == 0) {
        if (threadIdx.x == 0) {
            const unsigned long long n = *M.seq + 1;
            if (nv_wait(a, M.my_sig, n, a->sys, NV_WAIT_MSG, M.chan, M.src_pe))
                *M.seq = n;
        }
        __syncthreads();
    }
}

/* Block 0 waits for the incoming message while the other blocks still copy and publish ours:
 * every block must be resident at once (at most 16 small blocks on a GPU; launched like the
 * exchange's kernels, so that the CPU emulation runs them at once too, where a sequential
 * launch deadlocked both PEs: each block 0 waited for the other's last blocks). */
hx_status hx_nv_msg_launch(const nv_impl *m, const nv_msg *M, int nb, hx_stream s)
{
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)nb, 1, 1);
    cfg.blockDim = dim3(HX_HALO_THREADS, 1, 1);
    cfg.stream = s;
    HX_CUDA(cudaLaunchKernelEx(&cfg, nv_msg_kernel, m->args, *M));
    return HX_OK;
}

#if HX_NVSHMEM_HOOKS
/* Stress mode: this PE's stream starts its exchange late by `ns`. */
__global__ void nv_delay_kernel(unsigned long long ns)
{
    const uint64_t t0 = hx_globaltimer_ns();
    while (hx_globaltimer_ns() - t0 < ns) {
    }
}

hx_status hx_nv_delay(hx_stream s, unsigned long long ns)
{
    HX_LAUNCH(nv_delay_kernel, 1, 1, 0, s, ns);
    HX_CUDA_LAUNCH("nv_delay_kernel");
    return HX_OK;
}
#endif

/* ---- launch ------------------------------------------------------------------------------- */

hx_status hx_nv_occupancy(int smem_x, int *per_sm_x, int *per_sm_f)
{
    HX_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(per_sm_x, nv_x_kernel, HX_HALO_THREADS,
                                                          (size_t)smem_x));
    HX_CUDA(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(per_sm_f, nv_f_kernel, HX_HALO_THREADS, 0));
    return HX_OK;
}

/* With programmatic dependent launch a kernel may start while the kernel before it in the
 * stream still runs (and waits for it in nv_begin). */
hx_status hx_nv_launch(const nv_impl *m, int forces, hx_stream s)
{
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = forces ? m->grid_f : m->grid_x;
    cfg.blockDim = dim3(HX_HALO_THREADS, 1, 1);
    cfg.dynamicSmemBytes = forces ? 0 : (size_t)m->smem_x;
    cfg.stream = s;
    cfg.attrs = attr;
    cfg.numAttrs = m->pdl ? 1 : 0;
    if (forces)
        HX_CUDA(cudaLaunchKernelEx(&cfg, nv_f_kernel, m->args));
    else
        HX_CUDA(cudaLaunchKernelEx(&cfg, nv_x_kernel, m->args));
    return HX_OK;
}
