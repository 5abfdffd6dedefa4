/* The "nvshmem" halo backend: GPU-initiated, fused (Doijade et al., arXiv 2509.21527), and the
 * only file of halox that calls NVSHMEM. It is built as its own relocatable-device-code module
 * (CMake target halox_nvshmem), so no other kernel pays for -rdc.
 *
 * Per step two kernels, each covering every pulse of every dimension (blockIdx.y <-> pulse,
 * blockIdx.x <-> chunks of the pulse's map), and no CPU involvement:
 *
 *   coordinates  pack the independent entries (home atoms, [0, dep_offset)) at once; one thread
 *                per block waits (acquire) for exactly the pulses the dependent entries reference
 *                (the plan's deps mask), the block packs them; every block adds its share to the
 *                receiver's signal (release), which is complete when all have. Then block 0 of
 *                each pulse waits for the pulse we receive, so the stream passes the kernel only
 *                when our halo is complete.
 *   forces       later pulses first. Per pulse, "role A" blocks send the forces on the atoms we
 *                received in it back to their owner once every later pulse that forwarded those
 *                atoms has been accumulated (the plan's rdeps mask); "role B" blocks wait for the
 *                forces on the atoms we sent, and add them into f[map[e]] with atomics (pulses
 *                run concurrently and may share atoms). Block (0,0) sets the step of the next
 *                coordinate kernel.
 *
 * Data paths, chosen per peer at update (and forced by cfg.path):
 *   P2P      nvshmem_ptr gives the peer's address: coordinates are packed straight into the
 *            peer's x at our peer_atom_offset (vector stores, or through shared memory and the
 *            bulk-copy engine with cfg.bulk_copy), forces are stored into the peer's force slot;
 *            each block then release-adds its share to the peer's signal word: at GPU scope when
 *            every peer shares our GPU (several PEs under MPS), else at system scope.
 *   network  coordinates are packed into our symmetric staging slot and sent with
 *            nvshmemx_float_put_signal_nbi_block; forces go straight from our (symmetric) f with
 *            the blocking block-scoped put-with-signal (f must be reusable when the kernel ends).
 *   Forces are pushed on both paths, never pulled: a pull would need a "done reading" signal
 *   back before the owner may clear its forces (docs/design/gpu-halo.md).
 *
 * Signals: 64-bit words per pulse and direction in symmetric memory that count exchanges: each
 * exchange adds exactly NV_SIG_UNIT, split over the sending blocks (the network path's one put
 * adds it whole, NVSHMEM_SIGNAL_ADD); a receiver waits for n * NV_SIG_UNIT with >=; nothing is
 * reset. The step number lives in device memory (each kernel's block (0,0) sets the word the
 * other kernel reads), so a CUDA graph of the two kernels replays correctly. The kernels are
 * launched with programmatic dependent launch: each starts while the kernel before it in the stream
 * ends, and waits for it (griddepcontrol.wait) before it reads anything. Why a sender never
 * overwrites a region still being read: docs/design/gpu-halo.md, in short: everything we write into
 * a peer at step s+1 comes after we received that peer's forces of step s, which it sends only
 * after its own stream has finished reading what we wrote at step s.
 *
 * Never hang: every device wait has a deadline (cfg.wait_timeout; on by default in debug
 * builds, HALOX_HALO_WAIT_TIMEOUT=seconds in release); on expiry the waiting thread records
 * rank, peer, pulse, step, expected and observed signal in mapped host memory, prints it, and
 * raises an abort flag that makes every other wait and every later halo kernel of this exchange
 * return at once; the host turns the record into HX_ERR_NVSHMEM at its next call. */
#include <nvshmem.h>
#include <nvshmemx.h>

#include "halo/halo_gpu.h"
#include "halo/halo_pack.cuh"
#include "gpu/cuda_check.h"
#include "comm/comm_impl.h"
#include "halox/log.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef HX_NVSHMEM_BOOTSTRAP_MPI_PLUGIN
#define HX_NVSHMEM_BOOTSTRAP_MPI_PLUGIN ""
#endif

/* ---- data shared by host and kernels ------------------------------------------------------ */

enum { NV_WAIT_X = 0, NV_WAIT_F = 1, NV_WAIT_FDONE = 2, NV_WAIT_MSG = 3 };

/* How a block publishes its writes before it adds its share to a signal (nv_publish) or counts
 * itself done (nv_last_block, network path):
 *   THREAD   every thread fences, then thread 0 adds (the first form measured);
 *   BLOCK    thread 0 fences after the block barrier, then adds;
 *   RELEASE  thread 0 adds with release semantics after the barrier (acquire-release for the
 *            count: the acquire gives the last block everyone's writes). The default: one
 *            operation instead of a fence and an operation (measured in gpu-results.md). */
enum { NV_FENCE_THREAD = 0, NV_FENCE_BLOCK = 1, NV_FENCE_RELEASE = 2 };

/* Signal words count exchanges: each exchange of a pulse adds exactly NV_SIG_UNIT to its word,
 * split over the pulse's blocks (nv_share), so a word reaches n * NV_SIG_UNIT exactly when every
 * block of the pulse's n-th exchange has published, whatever the block count (which changes at
 * a repartition). Every block adds its share itself: no block count, no last block, and one
 * release-add per block is the whole publication. The coordinate words count steps; the force
 * words and fdone count force exchanges (steps less f_skip). Nothing is ever reset. */
#define NV_SIG_UNIT (1ull << 20)

/* Per pulse, rebuilt at every update. */
typedef struct nv_pulse {
    float *x_dst;       /* P2P: send_pe's x + 3 peer_atom_offset; NULL: network path */
    uint64_t *xsig_dst; /* P2P: send_pe's coordinate signal of this pulse */
    float *f_dst;       /* P2P: recv_pe's force slot of this pulse; NULL: network path */
    uint64_t *fsig_dst; /* P2P: recv_pe's force signal of this pulse */
    int nb_x;           /* blocks of this pulse in the coordinate kernel */
    int nb_fa, nb_fb;   /* force kernel: blocks sending our forces (A), accumulating (B) */
    /* the plan's pulse, copied here so that a block reads one table entry (one memory round
     * trip) before it moves data, not the plan image's arrays and then the map */
    const int *map;   /* device index map of the pulse */
    float sx, sy, sz; /* shift, as the plan image's shift_f32 */
    int n, d, r;      /* send_count, dep_offset, recv_count */
    int send_pe, recv_pe, atom_offset, buf_offset, peer_atom_offset;
    uint64_t deps, rdeps;
} nv_pulse;

/* Device memory of one exchange (not symmetric: only this PE's kernels touch it). */
typedef struct nv_state {
    /* The step number, one word per kernel: each kernel's block (0,0) sets the word the other
     * kernel reads, which no block of its own reads, and the other kernel starts only after
     * this one has ended (same stream); so no grid-wide count is needed to know that every
     * block has read its word. */
    uint64_t step;                   /* steps completed (the coordinate kernel's: step + 1) */
    uint64_t f_skip;                 /* steps whose coordinates went without forces */
    uint64_t fstep;                  /* the step of the last coordinate kernel (force kernel's) */
    uint64_t fdone[HX_MAX_PULSES];   /* pulse-q force accumulations, in NV_SIG_UNIT */
    unsigned x_count[HX_MAX_PULSES]; /* network path: blocks of pulse q done (last resets) */
    int abort;                       /* a wait gave up: every other wait returns at once */
    int err_claim;                   /* the first to give up writes the record */
} nv_state;

/* Trace (HALOX_NVSHMEM_TRACE=PREFIX): %globaltimer stamps of one step, in a device ring of the
 * last NV_TRACE_STEPS steps, written per PE to PREFIX.<instance>.rank<R>.txt when the exchange is
 * destroyed (scripts/nvshmem_trace.py lines the PEs up; the timer is one clock for every
 * process on a GPU). A stamp has one writer, or several blocks keep the latest with atomicMax
 * (x_sent, f_sent, f_done, f_end: a slot's older values are earlier times), so no clearing: a
 * slot belongs to the step stored in it. Pulses past NV_TRACE_PULSES are not traced. */
#define NV_TRACE_STEPS 4096
#define NV_TRACE_PULSES 8
typedef struct nv_trace {
    uint64_t step;                    /* the step this slot holds (x kernel, block (0,0)) */
    uint64_t x_start, f_start, f_end; /* block (0,0) of each kernel; the force kernel's end */
    uint64_t x_dep[NV_TRACE_PULSES];  /* block 0's dependency wait of pulse p done */
    uint64_t x_sent[NV_TRACE_PULSES]; /* pulse p's signal (or put) complete: its latest block */
    uint64_t x_recv[NV_TRACE_PULSES]; /* the coordinates of pulse p seen here (block 0) */
    uint64_t f_sent[NV_TRACE_PULSES]; /* our forces of pulse p sent back (latest A block) */
    uint64_t f_recv[NV_TRACE_PULSES]; /* the forces of pulse p seen here (B block 0) */
    uint64_t f_done[NV_TRACE_PULSES]; /* pulse p's forces accumulated (latest B block) */
} nv_trace;

/* Polling backoff of device-side waits by default (hx_halo_config.wait_backoff_ns): 0, spin.
 * Sleeping up to 256 or 1024 ns changed neither the exchange nor the MD step beyond noise with
 * 4-8 processes on one H200 (docs/design/gpu-results.md): spinning waiters do not take
 * measurable issue slots from the kernels they wait for. */
#define HX_NVSHMEM_BACKOFF_DEFAULT_NS 0

/* The deadline record, in mapped pinned host memory: the host reads it without a sync. */
typedef struct nv_error {
    volatile int flag;
    volatile int rank, peer, pulse, kind;
    volatile unsigned long long step, expected, observed;
} nv_error;

typedef struct nv_args {
    float *x, *f, *xstage, *fbuf; /* symmetric, this PE's addresses */
    uint64_t *xsig, *fsig;        /* symmetric [HX_MAX_PULSES] each */
    const nv_pulse *pulses;       /* device [npulses] */
    nv_state *st;
    nv_error *err; /* device address of the mapped record */
    int rank, npulses, chunk, bulk;
    unsigned long long timeout_ns; /* 0: no deadline */
    unsigned long long stress;     /* 0: no injected delays */
    unsigned backoff_ns;           /* upper bound of the polling sleep; 0: spin */
    int fence_mode;                /* nv_publish, nv_last_block: NV_FENCE_* */
    int sys;                       /* scope of the inter-PE ordering: 1 system, 0 this GPU */
    nv_trace *trace;               /* NULL: not traced */
    int wh_dir, wh_pulse;          /* test hook: withhold this signal (wh_dir -1: none) */
    int inject;                    /* fault injection (NV_INJECT), 0: none */
    unsigned long long wh_step;
} nv_args;

/* Fault injection, to show that the tests catch an ordering bug of the publication protocol.
 * Compiled only into a build made with -DHX_NVSHMEM_INJECT (CUDAFLAGS at configure), never into
 * a normal one, where NV_INJECT is the constant 0 and the code below is removed. There
 * HALOX_TEST_INJECT selects: "x-early", every P2P coordinate block publishes its share before
 * it packs its dependent entries; "f-early", every force-accumulating block publishes its fdone
 * share before its adds. */
#ifdef HX_NVSHMEM_INJECT
#define NV_INJECT(a) ((a)->inject)
#else
#define NV_INJECT(a) 0
#endif
enum { NV_INJECT_X_EARLY = 1, NV_INJECT_F_EARLY = 2 };

/* ---- device helpers ----------------------------------------------------------------------- */

static __device__ __forceinline__ uint64_t ld_acquire_sys(const uint64_t *p)
{
    uint64_t v;
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

static __device__ __forceinline__ uint64_t ld_acquire_gpu(const uint64_t *p)
{
    uint64_t v;
    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

/* The ordering between PEs is at system scope in general (peers on other GPUs), at GPU scope
 * when every peer of this PE runs on the same GPU (several PEs under MPS): the memory model's
 * gpu scope is every thread of the device, whichever process launched it. */
static __device__ __forceinline__ uint64_t ld_acquire(const uint64_t *p, int sys)
{
    return sys ? ld_acquire_sys(p) : ld_acquire_gpu(p);
}

/* Add v to a signal word: with release semantics (mode NV_FENCE_RELEASE), or relaxed after the
 * caller's fence. */
static __device__ __forceinline__ void red_add_u64(uint64_t *p, uint64_t v, int release, int sys)
{
    if (release && sys)
        asm volatile("red.release.sys.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
    else if (release)
        asm volatile("red.release.gpu.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
    else if (sys)
        asm volatile("red.relaxed.sys.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
    else
        asm volatile("red.relaxed.gpu.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

static __device__ __forceinline__ unsigned atom_add_acq_rel(unsigned *p, unsigned v, int sys)
{
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

static __device__ __forceinline__ uint64_t globaltimer_ns(void)
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

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
            const uint64_t ns = (h >> 8) % 20000u, t0 = globaltimer_ns();
            while (globaltimer_ns() - t0 < ns) {
            }
        }
    }
    __syncthreads();
}

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
           : kind == NV_WAIT_MSG ? "a search-step message (the number is the channel)"
                                 : "the local accumulation of the forces",
           pulse, peer, (unsigned long long)want, (unsigned long long)want,
           (unsigned long long)(seen / NV_SIG_UNIT));
}

/* The trace slot of step s, NULL when not traced; p: the pulse, or -1 for a per-step stamp. */
static __device__ __forceinline__ nv_trace *nv_tr(const nv_args *a, uint64_t s, int p)
{
    if (!a->trace || p >= NV_TRACE_PULSES)
        return NULL;
    return a->trace + s % NV_TRACE_STEPS;
}

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
    const uint64_t t0 = globaltimer_ns();
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
        /* the abort flag every 16th poll: its load would come after the acquire's, doubling
         * the time a poll takes, and with it how late the signal is seen */
        if ((it & 15) == 0 && *(volatile int *)&a->st->abort)
            return false;
        if (a->timeout_ns && globaltimer_ns() - t0 > a->timeout_ns) {
            nv_report(a, kind, pulse, peer, n, v);
            return false;
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
    __shared__ int s_flag;
    __syncthreads(); /* earlier readers of s_flag are done */
    if (threadIdx.x == 0)
        s_flag = flag;
    __syncthreads();
    return s_flag != 0;
}

/* Count this block done in *count (of n blocks); true in the last one (which resets it for the
 * next launch). The block's writes (they may be in a peer's memory) are published at scope
 * `sys` (system) or GPU before the count, in the form `mode` (NV_FENCE_*): a fence by every
 * thread, a fence by thread 0 after the barrier, or thread 0's acquire-release add after the
 * barrier. The barrier orders every thread's writes before thread 0's fence or release, which
 * are cumulative (the pattern of a grid-wide barrier). The last block then orders its reads
 * after every other block's writes. */
static __device__ bool nv_last_block(unsigned *count, unsigned n, int mode, int sys)
{
    if (mode == NV_FENCE_THREAD) {
        if (sys)
            __threadfence_system();
        else
            __threadfence();
    }
    int last = 0;
    __syncthreads();
    if (threadIdx.x == 0) {
        if (mode == NV_FENCE_RELEASE) {
            last = atom_add_acq_rel(count, 1u, sys) == n - 1;
            if (last)
                *count = 0; /* read again only by the next launch */
        } else {
            if (mode == NV_FENCE_BLOCK) {
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
 * word *sig (a peer's, or our own fdone) at scope `sys` or GPU, in the form `mode` (NV_FENCE_*):
 * a fence by every thread, or thread 0's fence after the barrier, before a relaxed add; or
 * thread 0's release-add after the barrier. The barrier orders every thread's writes before
 * thread 0's fence or release, which are cumulative. Returns, in thread 0 when `stamp`, the
 * time of the add (trace). */
static __device__ uint64_t nv_publish(uint64_t *sig, uint64_t share, int mode, int sys, bool stamp)
{
    if (mode == NV_FENCE_THREAD) {
        if (sys)
            __threadfence_system();
        else
            __threadfence();
    }
    __syncthreads();
    if (threadIdx.x != 0)
        return 0;
    if (mode == NV_FENCE_BLOCK) {
        if (sys)
            __threadfence_system();
        else
            __threadfence();
    }
    red_add_u64(sig, share, mode == NV_FENCE_RELEASE, sys);
    return stamp ? globaltimer_ns() : 0;
}

/* ---- the coordinate kernel ---------------------------------------------------------------- */

__global__ void __launch_bounds__(HX_HALO_THREADS) nv_x_kernel(nv_args args)
{
    extern __shared__ __align__(128) float nv_smem[];
    const nv_args *a = &args;
    const int p = (int)blockIdx.y, b = (int)blockIdx.x;
    const nv_pulse P = a->pulses[p];
    if (b >= P.nb_x)
        return;
    const nv_step st = nv_begin(a, false);
    const bool stamp = a->trace && threadIdx.x == 0;
    const uint64_t t_start = stamp ? globaltimer_ns() : 0;
    uint64_t t_dep = 0, t_sent = 0, t_recv = 0;
    nv_stress(a, nv_s(&st), p, b, 0);
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
    const bool inject_early = NV_INJECT(a) == NV_INJECT_X_EARLY && P.x_dst;
    if (inject_early)
        nv_publish(P.xsig_dst, nv_share(b, P.nb_x), a->fence_mode, a->sys, false);
    /* dependent entries: after the pulses they reference have arrived here */
    bool ok = true;
    if (e0 < e1) {
        nv_stress(a, nv_s(&st), p, b, 1);
        ok = nv_bcast(threadIdx.x == 0 ? !st.abort && nv_wait_x_mask(a, P.deps, nv_s(&st)) : 0);
        if (stamp)
            t_dep = globaltimer_ns();
        if (ok)
            hx_block_pack_x(P.map, P.sx, P.sy, P.sz, a->x, dst, e0, e1, smem, &parity, &pre);
    }
    if (smem && (threadIdx.x & 31) == 0)
        hx_bulk_complete();
    if (!ok)
        return;
    nv_stress(a, nv_s(&st), p, b, 2);
    /* test hook, block-uniform (only thread 0 holds the step number) */
    const bool withhold =
        a->wh_dir == 0 && a->wh_pulse == p && nv_bcast(threadIdx.x == 0 && a->wh_step == nv_s(&st));
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
            if (a->fence_mode == NV_FENCE_THREAD)
                __threadfence_system();
            __syncthreads();
            if (a->fence_mode != NV_FENCE_THREAD && threadIdx.x == 0)
                __threadfence_system();
            __syncthreads();
            if (P.n == 0) {
                /* nothing to send: the signal alone (a zero-length put is not relied on) */
                if (threadIdx.x == 0)
                    nvshmemx_signal_op(a->xsig + p, NV_SIG_UNIT, NVSHMEM_SIGNAL_ADD, P.send_pe);
            } else {
                nvshmemx_float_put_signal_nbi_block(
                    a->x + 3 * (size_t)P.peer_atom_offset, a->xstage + 3 * (size_t)P.buf_offset,
                    3 * (size_t)P.n, a->xsig + p, NV_SIG_UNIT, NVSHMEM_SIGNAL_ADD, P.send_pe);
            }
        }
        if (stamp)
            t_sent = globaltimer_ns();
    }
    /* the stream passes this kernel only when the pulse we receive is here */
    if (b == 0 && threadIdx.x == 0) {
        if (!st.abort)
            (void)nv_wait(a, a->xsig + p, nv_s(&st), a->sys, NV_WAIT_X, p, P.recv_pe);
        if (stamp)
            t_recv = globaltimer_ns();
        if (p == 0)
            *(volatile uint64_t *)&a->st->fstep = nv_s(&st); /* the force kernel's step */
    }
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
    const bool stamp = a->trace && threadIdx.x == 0;
    const uint64_t t_start = stamp ? globaltimer_ns() : 0;
    uint64_t t_sent = 0, t_recv = 0, t_done = 0;
    const int C = a->chunk;
    bool ok;
    if (b < P.nb_fa) {
        /* A: forces on the atoms we received in pulse p go back to recv_pe, once every later
         * pulse that forwarded some of them has been added in */
        nv_stress(a, nv_s(&st), p, b, 3);
        ok = nv_bcast(threadIdx.x == 0
                          ? !P.rdeps || (!st.abort && nv_wait_fdone_mask(a, P.rdeps, nv_sf(&st)))
                          : 0);
        if (!ok)
            return;
        const bool withhold = a->wh_dir == 1 && a->wh_pulse == p &&
                              nv_bcast(threadIdx.x == 0 && a->wh_step == nv_sf(&st));
        const float *src = a->f + 3 * (size_t)P.atom_offset;
        if (P.f_dst) {
            const int a0 = b * C, a1 = min(P.r, a0 + C);
            if (a0 < a1)
                hx_block_copy(src + 3 * (size_t)a0, P.f_dst + 3 * (size_t)a0, 3 * (a1 - a0));
            if (!withhold)
                t_sent = nv_publish(P.fsig_dst, nv_share(b, P.nb_fa), a->fence_mode, a->sys, stamp);
        } else if (!withhold && P.r == 0) {
            if (threadIdx.x == 0)
                nvshmemx_signal_op(a->fsig + p, NV_SIG_UNIT, NVSHMEM_SIGNAL_ADD, P.recv_pe);
            if (stamp)
                t_sent = globaltimer_ns();
        } else if (!withhold) {
            /* one block, blocking: f may be overwritten as soon as this kernel has ended */
            nvshmemx_float_put_signal_block(a->fbuf + 3 * (size_t)P.buf_offset, src,
                                            3 * (size_t)P.r, a->fsig + p, NV_SIG_UNIT,
                                            NVSHMEM_SIGNAL_ADD, P.recv_pe);
            if (stamp)
                t_sent = globaltimer_ns();
        }
    } else {
        /* B: forces on the atoms we sent in pulse p, from send_pe, into f[map[e]]; the map
         * entries are loaded ahead of the wait */
        const int bb = b - P.nb_fa;
        const int e0 = bb * C, e1 = min(P.n, e0 + C);
        const float *buf = a->fbuf + 3 * (size_t)P.buf_offset;
        const hx_pre4 pre = hx_unpack_f_prefetch(P.map, buf, e0, e1);
        nv_stress(a, nv_s(&st), p, b, 4);
        ok = nv_bcast(threadIdx.x == 0 ? !st.abort && nv_wait(a, a->fsig + p, nv_sf(&st), a->sys,
                                                              NV_WAIT_F, p, P.send_pe)
                                       : 0);
        if (!ok)
            return;
        if (stamp && bb == 0)
            t_recv = globaltimer_ns();
        const bool inject_early = NV_INJECT(a) == NV_INJECT_F_EARLY;
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
    if (stamp) {
        nv_trace *tr = nv_tr(a, nv_s(&st), p);
        nv_trace *te = nv_tr(a, nv_s(&st), -1);
        atomicMax((unsigned long long *)&te->f_end, (unsigned long long)globaltimer_ns());
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
}

/* Stress mode: this PE's stream starts its exchange late by `ns`. */
__global__ void nv_delay_kernel(unsigned long long ns)
{
    const uint64_t t0 = globaltimer_ns();
    while (globaltimer_ns() - t0 < ns) {
    }
}

/* ---- the process-wide NVSHMEM state ------------------------------------------------------- */

/* NVSHMEM can be initialised once per process (a second nvshmem_init is undefined): it starts
 * with the first nvshmem exchange and ends in hx_mpi_finalize, before MPI_Finalize. */
static struct {
    int state; /* 0 never started, 1 running, 2 finalised */
    void *mpi_comm;
    int pe, npes;
    char version[64];
    int traces; /* exchanges traced so far (the instance number of trace files) */
} g_nv;

static void nv_finalize_hook(void)
{
    if (g_nv.state == 1) {
        nvshmem_finalize();
        g_nv.state = 2;
    }
    hx_comm_mpi_free(&g_nv.mpi_comm);
}

/* Environment NVSHMEM reads at initialisation. */
static void nv_environment(void)
{
    /* NVLink multicast can take a shared host's GPUs out of service: always off */
    const char *nvls = getenv("NVSHMEM_DISABLE_NVLS");
    if (nvls && strcmp(nvls, "1") != 0)
        hx_log(HX_LOG_WARN,
               "nvshmem: NVSHMEM_DISABLE_NVLS=%s overridden to 1 (NVLink multicast "
               "stays off in halox)",
               nvls);
    setenv("NVSHMEM_DISABLE_NVLS", "1", 1);
    if (!getenv("NVSHMEM_BOOTSTRAP_MPI_PLUGIN") && HX_NVSHMEM_BOOTSTRAP_MPI_PLUGIN[0] &&
        access(HX_NVSHMEM_BOOTSTRAP_MPI_PLUGIN, R_OK) == 0)
        setenv("NVSHMEM_BOOTSTRAP_MPI_PLUGIN", HX_NVSHMEM_BOOTSTRAP_MPI_PLUGIN, 1);
}

/* Collective: start NVSHMEM on a duplicate of the exchange's communicator (every rank is a PE,
 * PE index = rank), after the device was chosen. */
static hx_status nv_init(hx_halo *h)
{
    const int rank = hx_comm_rank(h->comm), nranks = hx_comm_nranks(h->comm);
    HX_CHECK(g_nv.state != 2, HX_ERR_UNSUPPORTED,
             "nvshmem was finalised (hx_mpi_finalize) and cannot start again in this process");
    if (g_nv.state == 0) {
        nv_environment();
        HX_TRY(hx_comm_mpi_dup(h->comm, &g_nv.mpi_comm));
        nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
        attr.mpi_comm = g_nv.mpi_comm;
        nvshmemx_init_init_attr_ver_only(attr);
        nvshmemi_version_t ver = {NVSHMEM_VENDOR_MAJOR_VERSION, NVSHMEM_VENDOR_MINOR_VERSION,
                                  NVSHMEM_VENDOR_PATCH_VERSION};
        int provided = 0;
        /* nvshmemx_init_attr would exit the process on failure; the library reports instead, so
         * it calls what that inline wrapper calls */
        const int rc = nvshmemi_init_thread(NVSHMEM_THREAD_SERIALIZED, &provided,
                                            NVSHMEMX_INIT_WITH_MPI_COMM, &attr, ver);
        if (rc != 0) {
            hx_comm_mpi_free(&g_nv.mpi_comm);
            const char *plug = getenv("NVSHMEM_BOOTSTRAP_MPI_PLUGIN");
            HX_FAIL(HX_ERR_NVSHMEM,
                    "nvshmem initialisation on the MPI communicator failed on rank %d (status "
                    "%d): check NVSHMEM_BOOTSTRAP_MPI_PLUGIN (%s) and the NVSHMEM_* settings",
                    rank, rc, plug ? plug : "unset");
        }
        g_nv.state = 1;
        HX_TRY(hx_mpi_at_finalize(nv_finalize_hook));
        g_nv.pe = nvshmem_my_pe();
        g_nv.npes = nvshmem_n_pes();
        int ma = 0, mi = 0, pa = 0;
        nvshmemx_vendor_get_version_info(&ma, &mi, &pa);
        snprintf(g_nv.version, sizeof g_nv.version, "%d.%d.%d", ma, mi, pa);
    }
    HX_CHECK(g_nv.pe == rank && g_nv.npes == nranks, HX_ERR_NVSHMEM,
             "nvshmem runs %d PEs with this process as PE %d, but the exchange's communicator "
             "has %d ranks with this process as rank %d: create every nvshmem exchange on the "
             "same communicator",
             g_nv.npes, g_nv.pe, nranks, rank);
    return HX_OK;
}

/* ---- messages of the device search step ------------------------------------------------------ */

/* One message of channel `chan` (src/md/gpu/decomp_gpu.h: [int64 bytes | payload] in our send
 * buffer) to dest_pe's receive buffer of the channel, and the wait for src_pe's message to us.
 * P2P: every block copies its share with 16-byte stores into the peer's buffer and adds its
 * share of NV_SIG_UNIT to the peer's signal word of the channel (the halo kernels' protocol);
 * network: block 0 puts the message with the signal (the blocking form: the send buffer is ours
 * again when the kernel ends). Then block 0 waits (with the deadline) until our word counts one
 * message more than seq, the messages of the channel received so far (device memory, so that a
 * captured graph replays). */
typedef struct nv_msg {
    const int4 *src;   /* our send buffer (symmetric) */
    long long cap;     /* bytes of a channel's buffer */
    int4 *dst_p2p;     /* the peer's receive buffer of the channel; NULL: network */
    char *dst_sym;     /* our address of the symmetric receive buffer (the put's target) */
    uint64_t *sig_p2p; /* the peer's signal word of the channel (P2P) */
    uint64_t *sig_sym; /* the symmetric signal word (network) */
    uint64_t *my_sig;  /* our signal word of the channel */
    unsigned long long *seq;
    int dest_pe, src_pe, chan;
} nv_msg;

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
        nvshmemx_putmem_signal_block(M.dst_sym, M.src, (size_t)bytes, M.sig_sym, NV_SIG_UNIT,
                                     NVSHMEM_SIGNAL_ADD, M.dest_pe);
    }
    if (blockIdx.x == 0) {
        __shared__ int ok;
        if (threadIdx.x == 0) {
            const unsigned long long n = *M.seq + 1;
            ok = nv_wait(a, M.my_sig, n, a->sys, NV_WAIT_MSG, M.chan, M.src_pe);
            if (ok)
                *M.seq = n;
        }
        __syncthreads();
    }
}

/* ---- the backend -------------------------------------------------------------------------- */

typedef struct nv_impl {
    hx_gpu_place place;
    hx_gpu_plan gp;
    int npulses;
    float *x, *f, *xstage, *fbuf; /* symmetric */
    uint64_t *sig;                /* symmetric [2][HX_MAX_PULSES]: coordinates, forces */
    int cap_local, cap_buf;
    nv_pulse hp[HX_MAX_PULSES]; /* host copy of the pulse table */
    int p2p_x[HX_MAX_PULSES], p2p_f[HX_MAX_PULSES];
    nv_pulse *dp;         /* device pulse table */
    nv_state *st;         /* device */
    nv_error *err, *derr; /* mapped host record, its device address */
    nv_args args;
    dim3 grid_x, grid_f;
    int smem_x;
    int capacity; /* blocks this PE may keep resident at once */
    int phase;    /* 1 after exchange_x until exchange_f */
    double timeout;
    nv_trace *trace; /* device ring (HALOX_NVSHMEM_TRACE), NULL when off */
    char trace_path[512];
    int backoff_ns;
    int fence_mode; /* NV_FENCE_* */
    int scope;      /* requested: 0 auto (GPU scope when every peer is on our GPU), 1 system */
    int sys;        /* in effect */
    int pdl;        /* programmatic dependent launch of the two kernels */
    unsigned char *uuids; /* [nranks][16]: every rank's GPU, to find the peers on ours */
    unsigned long long stress_rng;
    char error[512]; /* the deadline report, once seen (sticky) */
    /* messages of the device search step: per channel a send and a receive buffer (symmetric,
     * one region each), a signal word (symmetric), the messages received so far (device) */
    int nchan;
    size_t *moff; /* [nchan + 1] byte offsets of the channels in a region */
    char *msend, *mrecv;
    uint64_t *msig;
    unsigned long long *mseq;
    void **msend_ptr, **mrecv_ptr; /* [nchan] the buffers' addresses (for the caller) */
} nv_impl;

/* The deadline record, as the host sees it: the first report stays the answer of every later
 * call (the exchange is unusable after it). */
static hx_status nv_check(nv_impl *m)
{
    if (!m->error[0] && m->err && m->err->flag) {
        const nv_error *e = m->err;
        snprintf(m->error, sizeof m->error,
                 "nvshmem halo: rank %d waited %g s for %s of pulse %d from rank %d (step %llu): "
                 "expected signal %llu, observed %llu",
                 e->rank, m->timeout,
                 e->kind == NV_WAIT_X     ? "the coordinates"
                 : e->kind == NV_WAIT_F   ? "the forces"
                 : e->kind == NV_WAIT_MSG ? "a search-step message (pulse: its channel)"
                                          : "its own accumulation of the forces",
                 e->pulse, e->peer, e->step, e->expected, e->observed);
    }
    HX_CHECK(!m->error[0], HX_ERR_NVSHMEM, "%s", m->error);
    return HX_OK;
}

/* The trace ring to m->trace_path (written through a temporary file and renamed): a header
 * with this PE's pulses, then one line per traced step, times in ns of %globaltimer. A failure
 * is logged, not returned: destroy cannot fail. */
static void nv_trace_write(hx_halo *h, nv_impl *m)
{
    nv_trace *t = (nv_trace *)malloc(NV_TRACE_STEPS * sizeof *t);
    char tmp[600];
    FILE *f = NULL;
    if (!t ||
        cudaMemcpy(t, m->trace, NV_TRACE_STEPS * sizeof *t, cudaMemcpyDeviceToHost) != cudaSuccess)
        goto fail;
    snprintf(tmp, sizeof tmp, "%s.tmp", m->trace_path);
    f = fopen(tmp, "w");
    if (!f)
        goto fail;
    {
        const hx_domain_plan *p = hx_plan_domain(h->plan, 0);
        const int np = p->npulses < NV_TRACE_PULSES ? p->npulses : NV_TRACE_PULSES;
        fprintf(f, "# halox nvshmem trace v1\nrank %d npes %d pulses %d traced %d\n",
                hx_comm_rank(h->comm), g_nv.npes, p->npulses, np);
        for (int q = 0; q < np; q++)
            fprintf(f, "pulse %d send_pe %d recv_pe %d deps %llu send %d recv %d\n", q,
                    p->pulses[q].send_pe, p->pulses[q].recv_pe,
                    (unsigned long long)p->pulses[q].deps, p->pulses[q].send_count,
                    p->pulses[q].recv_count);
        fprintf(f, "describe %s\n", h->describe);
        fprintf(f, "# step x_start f_start f_end, then per pulse: x_dep x_sent x_recv f_sent "
                   "f_recv f_done\n");
        for (int i = 0; i < NV_TRACE_STEPS; i++) {
            const nv_trace *r = &t[i];
            if (r->step == 0 || r->step % NV_TRACE_STEPS != (uint64_t)i)
                continue;
            fprintf(f, "%llu %llu %llu %llu", (unsigned long long)r->step,
                    (unsigned long long)r->x_start, (unsigned long long)r->f_start,
                    (unsigned long long)r->f_end);
            for (int q = 0; q < np; q++)
                fprintf(f, " %llu %llu %llu %llu %llu %llu", (unsigned long long)r->x_dep[q],
                        (unsigned long long)r->x_sent[q], (unsigned long long)r->x_recv[q],
                        (unsigned long long)r->f_sent[q], (unsigned long long)r->f_recv[q],
                        (unsigned long long)r->f_done[q]);
            fputc('\n', f);
        }
    }
    if (fclose(f) != 0) {
        f = NULL;
        goto fail;
    }
    f = NULL;
    if (rename(tmp, m->trace_path) != 0)
        goto fail;
    free(t);
    return;
fail:
    if (f)
        fclose(f);
    free(t);
    hx_log(HX_LOG_WARN, "nvshmem: could not write the trace '%s'", m->trace_path);
}

static void nv_destroy(hx_halo *h)
{
    nv_impl *m = (nv_impl *)h->impl;
    if (!m)
        return;
    if (m->place.ndevices > 0) {
        cudaSetDevice(m->place.device);
        cudaDeviceSynchronize();
    }
    if (m->trace) {
        nv_trace_write(h, m);
        cudaFree(m->trace);
    }
    /* collective frees, in the same order on every PE (every PE destroys its exchange) */
    if (m->x)
        nvshmem_free(m->x);
    if (m->f)
        nvshmem_free(m->f);
    if (m->xstage)
        nvshmem_free(m->xstage);
    if (m->fbuf)
        nvshmem_free(m->fbuf);
    if (m->sig)
        nvshmem_free(m->sig);
    if (m->msend)
        nvshmem_free(m->msend);
    if (m->mrecv)
        nvshmem_free(m->mrecv);
    if (m->msig)
        nvshmem_free(m->msig);
    cudaFree(m->mseq);
    free(m->moff);
    free(m->msend_ptr);
    free(m->mrecv_ptr);
    cudaFree(m->dp);
    cudaFree(m->st);
    if (m->err)
        cudaFreeHost(m->err);
    hx_gpu_plan_free(&m->gp);
    free(m->uuids);
    free(m);
    h->impl = NULL;
    h->x[0] = h->f[0] = NULL;
}

/* Test hook (never set in production): HALOX_TEST_WITHHOLD="rank:x|f:pulse:step" makes that
 * rank skip that signal, so that the receiver's deadline must report it. */
static void nv_withhold_hook(nv_args *a, int rank)
{
    a->wh_dir = -1;
    const char *w = getenv("HALOX_TEST_WITHHOLD");
    int r = -1, pulse = -1;
    char dir = 0;
    unsigned long long step = 0;
    if (w && sscanf(w, "%d:%c:%d:%llu", &r, &dir, &pulse, &step) == 4 && r == rank &&
        (dir == 'x' || dir == 'f')) {
        a->wh_dir = dir == 'x' ? 0 : 1;
        a->wh_pulse = pulse;
        a->wh_step = step;
        hx_log(HX_LOG_WARN,
               "nvshmem: test hook: rank %d withholds its %s signal of pulse %d at "
               "step %llu",
               rank, dir == 'x' ? "coordinate" : "force", pulse, step);
    }
}

static hx_status nv_setup_local(hx_halo *h)
{
    nv_impl *m = (nv_impl *)h->impl;
    HX_CUDA(cudaMalloc((void **)&m->st, sizeof(nv_state)));
    HX_CUDA(cudaMemset(m->st, 0, sizeof(nv_state)));
    HX_CUDA(cudaMalloc((void **)&m->dp, HX_MAX_PULSES * sizeof(nv_pulse)));
    HX_CUDA(cudaHostAlloc((void **)&m->err, sizeof(nv_error), cudaHostAllocMapped));
    memset((void *)m->err, 0, sizeof(nv_error));
    HX_CUDA(cudaHostGetDevicePointer((void **)&m->derr, m->err, 0));
    /* deadline: the configuration, else HALOX_HALO_WAIT_TIMEOUT, else on in debug builds */
    double t = h->cfg.wait_timeout;
    if (t < 0) {
        const char *e = getenv("HALOX_HALO_WAIT_TIMEOUT");
#ifdef NDEBUG
        t = e ? atof(e) : 0.0;
#else
        t = e ? atof(e) : 30.0;
#endif
    }
    m->timeout = t > 0 ? t : 0;
    /* polling backoff: the configuration, else HALOX_NVSHMEM_BACKOFF_NS, else the default */
    int b = h->cfg.wait_backoff_ns;
    if (b < 0) {
        const char *e = getenv("HALOX_NVSHMEM_BACKOFF_NS");
        b = e ? atoi(e) : HX_NVSHMEM_BACKOFF_DEFAULT_NS;
    }
    HX_CHECK(b >= 0 && b <= 1000000, HX_ERR_INVALID_ARG,
             "nvshmem wait backoff of %d ns: give 0 (spin) to 1000000 ns", b);
    m->backoff_ns = b;
    /* trace: PREFIX.<instance>.rank<R>.txt at destroy */
    const char *tp = getenv("HALOX_NVSHMEM_TRACE");
    if (tp && tp[0]) {
        const int n = snprintf(m->trace_path, sizeof m->trace_path, "%s.%d.rank%d.txt", tp,
                               g_nv.traces++, hx_comm_rank(h->comm));
        HX_CHECK(n > 0 && (size_t)n < sizeof m->trace_path, HX_ERR_INVALID_ARG,
                 "HALOX_NVSHMEM_TRACE: prefix too long (%zu characters)", strlen(tp));
        HX_CUDA(cudaMalloc((void **)&m->trace, NV_TRACE_STEPS * sizeof(nv_trace)));
        HX_CUDA(cudaMemset(m->trace, 0, NV_TRACE_STEPS * sizeof(nv_trace)));
    }
    /* system fences before a pulse's count: one per block (default) or one per thread
     * (HALOX_NVSHMEM_FENCE=thread: the form measured first, kept to compare) */
    const char *fe = getenv("HALOX_NVSHMEM_FENCE");
    HX_CHECK(!fe || !strcmp(fe, "release") || !strcmp(fe, "block") || !strcmp(fe, "thread"),
             HX_ERR_INVALID_ARG, "HALOX_NVSHMEM_FENCE='%s': give 'release', 'block' or 'thread'",
             fe);
    m->fence_mode = !fe || !strcmp(fe, "release") ? NV_FENCE_RELEASE
                    : !strcmp(fe, "block")        ? NV_FENCE_BLOCK
                                                  : NV_FENCE_THREAD;
    /* ordering scope between PEs: GPU scope where every peer shares our GPU (auto), or always
     * system scope (HALOX_NVSHMEM_SCOPE=sys, to compare) */
    const char *sc = getenv("HALOX_NVSHMEM_SCOPE");
    HX_CHECK(!sc || !strcmp(sc, "auto") || !strcmp(sc, "sys"), HX_ERR_INVALID_ARG,
             "HALOX_NVSHMEM_SCOPE='%s': give 'auto' or 'sys'", sc);
    m->scope = sc && !strcmp(sc, "sys");
    /* programmatic dependent launch (sm_90 and later; HALOX_NVSHMEM_PDL=0 turns it off) */
    const char *pd = getenv("HALOX_NVSHMEM_PDL");
    HX_CHECK(!pd || !strcmp(pd, "0") || !strcmp(pd, "1"), HX_ERR_INVALID_ARG,
             "HALOX_NVSHMEM_PDL='%s': give 0 or 1", pd);
    int major = 0;
    HX_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, m->place.device));
    m->pdl = major >= 9 && !(pd && !strcmp(pd, "0"));
    return HX_OK;
}

/* Every rank's GPU (its UUID) on every rank, to find the peers that share ours. Collective. A
 * rank that cannot name its GPU gives zeros: it matches nobody, so its peers keep system scope. */
static hx_status nv_gpu_ids(hx_halo *h)
{
    nv_impl *m = (nv_impl *)h->impl;
    const int n = hx_comm_nranks(h->comm);
    unsigned char mine[16] = {0};
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, m->place.device) == cudaSuccess)
        memcpy(mine, prop.uuid.bytes, sizeof mine);
    const void *in[1] = {mine};
    const size_t bytes[1] = {sizeof mine};
    void *all = NULL;
    size_t *counts = (size_t *)calloc((size_t)n, sizeof *counts);
    m->uuids = (unsigned char *)calloc((size_t)n, 16);
    hx_status st = hx_comm_agree(h->comm, counts && m->uuids ? HX_OK : HX_ERR_NOMEM);
    if (st == HX_OK)
        st = hx_comm_gather_bytes(h->comm, in, bytes, &all, counts);
    if (st == HX_OK && all)
        memcpy(m->uuids, all, 16 * (size_t)n); /* rank 0: every block is 16 bytes */
    free(all);
    free(counts);
    if (st == HX_OK)
        st = hx_comm_bcast_bytes(h->comm, m->uuids, 16 * (size_t)n);
    return st;
}

/* Whether this rank's peers in every pulse, both directions, are on its GPU and reached P2P:
 * then GPU-scope ordering suffices between them. */
static int nv_all_peers_on_our_gpu(const hx_halo *h, const nv_impl *m)
{
    const hx_domain_plan *p = hx_plan_domain(h->plan, 0);
    const unsigned char *me = m->uuids + 16 * (size_t)hx_comm_rank(h->comm);
    static const unsigned char zero[16] = {0};
    if (!memcmp(me, zero, 16))
        return 0;
    for (int q = 0; q < p->npulses; q++) {
        if (!m->p2p_x[q] || !m->p2p_f[q] ||
            memcmp(me, m->uuids + 16 * (size_t)p->pulses[q].send_pe, 16) ||
            memcmp(me, m->uuids + 16 * (size_t)p->pulses[q].recv_pe, 16))
            return 0;
    }
    return 1;
}

static hx_status nv_setup(hx_halo *h)
{
    nv_impl *m = (nv_impl *)calloc(1, sizeof *m);
    HX_CHECK(m, HX_ERR_NOMEM, "out of memory");
    h->impl = m;
    /* argument checks first (identical on every rank), then the collective steps, each agreed,
     * so that no rank enters NVSHMEM's collective initialisation alone */
    hx_status st = hx_gpu_halo_place(h, 1, &m->place);
    HX_TRY(hx_comm_agree(h->comm, st));
    HX_TRY(hx_comm_agree(h->comm, nv_init(h)));
    m->npulses = hx_plan_domain(h->plan, 0)->npulses;
    HX_CHECK(m->npulses <= HX_MAX_PULSES, HX_ERR_INTERNAL, "%d pulses", m->npulses);
    m->sig = (uint64_t *)nvshmem_calloc(2 * HX_MAX_PULSES, sizeof(uint64_t)); /* collective */
    st = m->sig ? HX_OK
                : hx_error_set(HX_ERR_NVSHMEM, __FILE__, __LINE__, __func__,
                               "nvshmem_calloc of the signal words failed: raise "
                               "NVSHMEM_SYMMETRIC_SIZE");
    if (st == HX_OK)
        st = nv_setup_local(h);
    HX_TRY(hx_comm_agree(h->comm, st));
    return nv_gpu_ids(h);
}

/* Symmetric (re)allocation: collective, the same sizes on every PE (capacities are global). */
static hx_status nv_malloc(size_t bytes, const char *what, float **out)
{
    *out = (float *)nvshmem_malloc(bytes < 64 ? 64 : bytes);
    if (!*out) {
        const char *cur = getenv("NVSHMEM_SYMMETRIC_SIZE");
        HX_FAIL(HX_ERR_NVSHMEM,
                "nvshmem_malloc of %zu bytes (%s) failed: the symmetric heap is full; raise "
                "NVSHMEM_SYMMETRIC_SIZE (now %s) in the environment of every process",
                bytes, what, cur ? cur : "the default, 1 GiB");
    }
    return HX_OK;
}

static hx_status nv_regrow(hx_halo *h, int grow_local, int grow_buf)
{
    nv_impl *m = (nv_impl *)h->impl;
    const hx_domain_plan *p = hx_plan_domain(h->plan, 0);
    hx_status st = HX_OK;
    if (grow_local) {
        float *x = NULL, *f = NULL;
        const size_t bytes = 12 * (size_t)p->cap_local, keep = 12 * (size_t)m->cap_local;
        hx_status s1 = nv_malloc(bytes, "coordinates", &x);
        hx_status s2 = nv_malloc(bytes, "forces", &f);
        st = s1 != HX_OK ? s1 : s2;
        if (st == HX_OK && m->x) {
            /* contents survive a regrow, as with the other backends */
            HX_CUDA_GOTO(st, cudaMemcpy(x, m->x, keep, cudaMemcpyDeviceToDevice), done);
            HX_CUDA_GOTO(st, cudaMemcpy(f, m->f, keep, cudaMemcpyDeviceToDevice), done);
        }
    done:
        if (m->x)
            nvshmem_free(m->x);
        if (m->f)
            nvshmem_free(m->f);
        m->x = x;
        m->f = f;
        m->cap_local = p->cap_local;
    }
    if (grow_buf) {
        if (m->xstage)
            nvshmem_free(m->xstage);
        if (m->fbuf)
            nvshmem_free(m->fbuf);
        m->xstage = m->fbuf = NULL;
        hx_status s1 = nv_malloc(12 * (size_t)p->cap_buf, "coordinate staging", &m->xstage);
        hx_status s2 = nv_malloc(12 * (size_t)p->cap_buf, "force slots", &m->fbuf);
        if (st == HX_OK)
            st = s1 != HX_OK ? s1 : s2;
        m->cap_buf = p->cap_buf;
    }
    h->x[0] = m->x;
    h->f[0] = m->f;
    return st;
}

/* Paths, launch sizes and the kernel argument (local). Blocks of one PE's kernel may wait for
 * each other (force pulses wait for later pulses' accumulation) and for other PEs' kernels, so
 * every block of every PE sharing the GPU must be able to be resident at once: each PE keeps
 * its grids within its share of the GPU (chunk size doubled until they fit). */
static hx_status nv_configure(hx_halo *h)
{
    nv_impl *m = (nv_impl *)h->impl;
    const hx_domain_plan *p = hx_plan_domain(h->plan, 0);
    const int rank = hx_comm_rank(h->comm);
    int per_sm_x = 0, per_sm_f = 0;
    m->smem_x = h->cfg.bulk_copy ? HX_HALO_BULK_SMEM : 0;
    HX_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm_x, nv_x_kernel, HX_HALO_THREADS,
                                                          (size_t)m->smem_x));
    HX_CUDA(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm_f, nv_f_kernel, HX_HALO_THREADS, 0));
    const int per_sm = per_sm_x < per_sm_f ? per_sm_x : per_sm_f;
    m->capacity =
        per_sm * m->place.sm_count / (m->place.pes_per_gpu > 0 ? m->place.pes_per_gpu : 1);
    int np2p = 0;
    for (int q = 0; q < p->npulses; q++) {
        const hx_pulse *P = &p->pulses[q];
        nv_pulse *N = &m->hp[q];
        memset(N, 0, sizeof *N);
        N->map = m->gp.view.index_map + P->map_offset;
        N->sx = (float)P->shift[0]; /* as hx_plan_image_build's shift_f32 */
        N->sy = (float)P->shift[1];
        N->sz = (float)P->shift[2];
        N->n = P->send_count;
        N->d = P->dep_offset;
        N->r = P->recv_count;
        N->send_pe = P->send_pe;
        N->recv_pe = P->recv_pe;
        N->atom_offset = P->atom_offset;
        N->buf_offset = P->buf_offset;
        N->peer_atom_offset = P->peer_atom_offset;
        N->deps = P->deps;
        N->rdeps = P->rdeps;
        float *rx = (float *)nvshmem_ptr(m->x, P->send_pe);
        uint64_t *rxs = (uint64_t *)nvshmem_ptr(m->sig + q, P->send_pe);
        float *rf = (float *)nvshmem_ptr(m->fbuf, P->recv_pe);
        uint64_t *rfs = (uint64_t *)nvshmem_ptr(m->sig + HX_MAX_PULSES + q, P->recv_pe);
        const int can_x = rx && rxs, can_f = rf && rfs;
        HX_CHECK(h->cfg.path != HX_HALO_PATH_P2P || (can_x && can_f), HX_ERR_UNSUPPORTED,
                 "nvshmem: the P2P path is forced but rank %d cannot address the memory of "
                 "rank %d (pulse %d): nvshmem_ptr gave NULL; use the automatic or network path",
                 rank, can_x ? P->recv_pe : P->send_pe, q);
        m->p2p_x[q] = h->cfg.path != HX_HALO_PATH_NETWORK && can_x;
        m->p2p_f[q] = h->cfg.path != HX_HALO_PATH_NETWORK && can_f;
        if (m->p2p_x[q]) {
            N->x_dst = rx + 3 * (size_t)P->peer_atom_offset;
            N->xsig_dst = rxs;
        }
        if (m->p2p_f[q]) {
            N->f_dst = rf + 3 * (size_t)P->buf_offset;
            N->fsig_dst = rfs;
        }
        np2p += m->p2p_x[q] + m->p2p_f[q];
    }
    /* entries per block: the smallest that fits, from HX_HALO_ROUND up, or from
     * HALOX_NVSHMEM_CHUNK (a multiple of HX_HALO_ROUND: fewer, longer blocks per pulse) */
    int chunk = HX_HALO_ROUND;
    const char *ce = getenv("HALOX_NVSHMEM_CHUNK");
    if (ce && ce[0]) {
        chunk = atoi(ce);
        HX_CHECK(chunk >= HX_HALO_ROUND && chunk % HX_HALO_ROUND == 0 && chunk <= (1 << 24),
                 HX_ERR_INVALID_ARG,
                 "HALOX_NVSHMEM_CHUNK='%s': give a multiple of %d atoms per block, at most %d", ce,
                 HX_HALO_ROUND, 1 << 24);
    }
    for (;;) {
        int tx = 0, tf = 0, mx = 1, mf = 1;
        for (int q = 0; q < p->npulses; q++) {
            const hx_pulse *P = &p->pulses[q];
            nv_pulse *N = &m->hp[q];
            const int nd = P->dep_offset, ni = P->send_count - P->dep_offset;
            N->nb_x = 1;
            N->nb_x = (nd + chunk - 1) / chunk > N->nb_x ? (nd + chunk - 1) / chunk : N->nb_x;
            N->nb_x = (ni + chunk - 1) / chunk > N->nb_x ? (ni + chunk - 1) / chunk : N->nb_x;
            N->nb_fa =
                m->p2p_f[q] && P->recv_count > chunk ? (P->recv_count + chunk - 1) / chunk : 1;
            N->nb_fb = P->send_count > chunk ? (P->send_count + chunk - 1) / chunk : 1;
            tx += N->nb_x;
            tf += N->nb_fa + N->nb_fb;
            mx = N->nb_x > mx ? N->nb_x : mx;
            mf = N->nb_fa + N->nb_fb > mf ? N->nb_fa + N->nb_fb : mf;
        }
        /* with programmatic launch a kernel's blocks start while the previous kernel's still
         * run: both grids must fit at once */
        const int fits = m->pdl ? tx + tf <= m->capacity : tx <= m->capacity && tf <= m->capacity;
        if (fits || chunk >= (1 << 28)) {
            HX_CHECK(fits, HX_ERR_UNSUPPORTED,
                     "nvshmem: %d pulses need %d blocks resident at once, but %d processes "
                     "share this GPU and leave this one %d: use fewer processes per GPU",
                     p->npulses, tf, m->place.pes_per_gpu, m->capacity);
            HX_CHECK((unsigned long long)(mx > mf ? mx : mf) < NV_SIG_UNIT, HX_ERR_INTERNAL,
                     "nvshmem: %d blocks in one pulse: at most %llu", mx > mf ? mx : mf,
                     NV_SIG_UNIT - 1);
            m->grid_x = dim3((unsigned)mx, (unsigned)p->npulses, 1);
            m->grid_f = dim3((unsigned)mf, (unsigned)p->npulses, 1);
            break;
        }
        chunk *= 2;
    }
    HX_CUDA(cudaMemcpy(m->dp, m->hp, HX_MAX_PULSES * sizeof(nv_pulse), cudaMemcpyHostToDevice));
    nv_args *A = &m->args;
    A->x = m->x;
    A->f = m->f;
    A->xstage = m->xstage;
    A->fbuf = m->fbuf;
    A->xsig = m->sig;
    A->fsig = m->sig + HX_MAX_PULSES;
    A->pulses = m->dp;
    A->st = m->st;
    A->err = m->derr;
    A->rank = rank;
    A->npulses = p->npulses;
    A->chunk = chunk;
    A->bulk = h->cfg.bulk_copy != 0;
    A->timeout_ns = (unsigned long long)(m->timeout * 1e9);
    A->stress = h->cfg.stress_seed;
    A->backoff_ns = (unsigned)m->backoff_ns;
    m->sys = m->scope == 1 || !nv_all_peers_on_our_gpu(h, m);
    A->fence_mode = m->fence_mode;
    A->sys = m->sys;
    A->trace = m->trace;
    nv_withhold_hook(A, rank);
    A->inject = 0;
#ifdef HX_NVSHMEM_INJECT
    const char *inj = getenv("HALOX_TEST_INJECT");
    A->inject = inj && !strcmp(inj, "x-early")   ? NV_INJECT_X_EARLY
                : inj && !strcmp(inj, "f-early") ? NV_INJECT_F_EARLY
                                                 : 0;
    hx_log(HX_LOG_WARN, "nvshmem: fault-injection build: HALOX_TEST_INJECT=%s", inj ? inj : "");
#endif
    m->stress_rng = h->cfg.stress_seed ^ (0x9e3779b97f4a7c15ull * (unsigned long long)(rank + 1));

    char *d = h->describe;
    const size_t dn = sizeof h->describe;
    int len =
        snprintf(d, dn,
                 "nvshmem %s (MPI bootstrap), PE %d of %d on GPU %d (%s, %d PE%s%s); "
                 "%d of %d pulse directions P2P%s, rest network put-with-signal; %d atoms "
                 "per block; deadline %s; wait backoff %s%d ns; publish by %s at %s scope; "
                 "programmatic launch %s",
                 g_nv.version, rank, g_nv.npes, m->place.device, m->place.gpu, m->place.pes_per_gpu,
                 m->place.pes_per_gpu > 1 ? "s" : "", m->place.mps ? ", MPS" : "", np2p,
                 2 * p->npulses, h->cfg.bulk_copy ? " (bulk-copy engine)" : "", chunk,
                 m->timeout > 0 ? "on" : "off", m->backoff_ns ? "up to " : "", m->backoff_ns,
                 m->fence_mode == NV_FENCE_RELEASE ? "release atomic"
                 : m->fence_mode == NV_FENCE_BLOCK ? "fence per block"
                                                   : "fence per thread",
                 m->sys ? "system" : "GPU", m->pdl ? "on" : "off");
    if (len > 0 && (size_t)len < dn && h->cfg.stress_seed)
        snprintf(d + len, dn - (size_t)len, "; stress seed %llu", h->cfg.stress_seed);
    for (int q = 0; q < p->npulses; q++)
        hx_log(HX_LOG_DEBUG,
               "nvshmem rank %d pulse %d: coordinates to rank %d %s (%d blocks), forces to rank "
               "%d %s (%d + %d blocks)",
               rank, q, p->pulses[q].send_pe, m->p2p_x[q] ? "P2P" : "network", m->hp[q].nb_x,
               p->pulses[q].recv_pe, m->p2p_f[q] ? "P2P" : "network", m->hp[q].nb_fa,
               m->hp[q].nb_fb);
    return HX_OK;
}

static hx_status nv_update_prepare(hx_halo *h, int *grow_local, int *grow_buf)
{
    nv_impl *m = (nv_impl *)h->impl;
    const hx_domain_plan *p = hx_plan_domain(h->plan, 0);
    HX_CUDA(cudaSetDevice(m->place.device));
    HX_CUDA(cudaDeviceSynchronize()); /* no exchange of the previous plan is in flight */
    HX_TRY(nv_check(m));
    HX_TRY(hx_gpu_plan_upload(&m->gp, h->plan, 0));
    *grow_local = p->cap_local > m->cap_local;
    *grow_buf = p->cap_buf > m->cap_buf;
    if (m->phase == 1) {
        /* coordinates were exchanged without forces (every PE did the same): that step is
         * done for the coordinate signals, and one step without forces for the force signals,
         * which count force exchanges */
        uint64_t c[2] = {0, 0}; /* step, f_skip: adjacent in nv_state */
        HX_CUDA(cudaMemcpy(c, &m->st->step, sizeof c, cudaMemcpyDeviceToHost));
        c[0]++;
        c[1]++;
        HX_CUDA(cudaMemcpy(&m->st->step, c, sizeof c, cudaMemcpyHostToDevice));
        m->phase = 0;
    }
    return HX_OK;
}

static hx_status nv_update(hx_halo *h)
{
    int grow_local = 0, grow_buf = 0;
    HX_TRY(hx_comm_agree(h->comm, nv_update_prepare(h, &grow_local, &grow_buf)));
    /* capacities are global: every PE makes the same collective allocations */
    HX_TRY(hx_comm_agree(h->comm, nv_regrow(h, grow_local, grow_buf)));
    return nv_configure(h);
}

/* Stress mode, host side: a random pause before enqueueing, and a random delay kernel ahead of
 * the exchange on the stream, so that PEs reach each step at different times. */
static hx_status nv_stress_host(nv_impl *m, cudaStream_t s)
{
    if (!m->args.stress)
        return HX_OK;
    uint64_t z = (m->stress_rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    if ((z & 7) == 0)
        usleep((useconds_t)((z >> 8) % 200));
    if ((z & 0x30) == 0) {
        nv_delay_kernel<<<1, 1, 0, s>>>((z >> 20) % 50000);
        HX_CUDA_LAUNCH("nv_delay_kernel");
    }
    return HX_OK;
}

/* One of the two kernels on the stream, with programmatic dependent launch when on: it may
 * start while the kernel before it still runs (and waits for it in nv_begin). */
static hx_status nv_launch(nv_impl *m, void (*kernel)(nv_args), dim3 grid, int smem, cudaStream_t s)
{
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = dim3(HX_HALO_THREADS, 1, 1);
    cfg.dynamicSmemBytes = (size_t)smem;
    cfg.stream = s;
    cfg.attrs = attr;
    cfg.numAttrs = m->pdl ? 1 : 0;
    HX_CUDA(cudaLaunchKernelEx(&cfg, kernel, m->args));
    return HX_OK;
}

static hx_status nv_exchange_x(hx_halo *h, void *stream)
{
    nv_impl *m = (nv_impl *)h->impl;
    cudaStream_t s = (cudaStream_t)stream;
    HX_TRY(nv_check(m));
    HX_CHECK(m->phase == 0, HX_ERR_INVALID_ARG,
             "nvshmem: exchange_x called twice without exchange_f in between: coordinate and "
             "force exchanges must alternate (that order is what keeps a peer from overwriting "
             "halo coordinates still being read)");
    m->phase = 1;
    if (m->npulses == 0)
        return HX_OK;
    HX_TRY(nv_stress_host(m, s));
    HX_TRY(nv_launch(m, nv_x_kernel, m->grid_x, m->smem_x, s));
    const hx_domain_plan *p = m->gp.host;
    for (int q = 0; q < p->npulses; q++)
        h->stats.bytes_sent += 12 * (long long)p->pulses[q].send_count;
    return HX_OK;
}

static hx_status nv_exchange_f(hx_halo *h, void *stream)
{
    nv_impl *m = (nv_impl *)h->impl;
    cudaStream_t s = (cudaStream_t)stream;
    HX_TRY(nv_check(m));
    HX_CHECK(m->phase == 1, HX_ERR_INVALID_ARG,
             "nvshmem: exchange_f called without exchange_x before it: coordinate and force "
             "exchanges must alternate");
    m->phase = 0;
    if (m->npulses == 0)
        return HX_OK;
    HX_TRY(nv_stress_host(m, s));
    HX_TRY(nv_launch(m, nv_f_kernel, m->grid_f, 0, s));
    const hx_domain_plan *p = m->gp.host;
    for (int q = 0; q < p->npulses; q++)
        h->stats.bytes_sent += 12 * (long long)p->pulses[q].recv_count;
    return HX_OK;
}

/* Adopt a plan rebuilt from the device search step's counts, capacities unchanged: the plan
 * image (header and pulse fields; the maps are the search step's), the pulse table and the
 * launch sizes. No collective, no allocation. */
static hx_status nv_refresh(hx_halo *h)
{
    int grow_local = 0, grow_buf = 0;
    HX_TRY(nv_update_prepare(h, &grow_local, &grow_buf));
    HX_CHECK(!grow_local && !grow_buf, HX_ERR_INTERNAL,
             "nvshmem: refresh of a plan whose capacities grew (an update is needed)");
    return nv_configure(h);
}

/* Collective (every PE, the same capacities): the channels' symmetric buffers and signals. */
static hx_status nv_msg_setup(hx_halo *h, int nchan, const size_t *cap, void ***send, void ***recv)
{
    nv_impl *m = (nv_impl *)h->impl;
    /* no message of the old channels in flight; every PE takes the same collective steps
     * whatever fails locally */
    hx_status st0 = HX_OK;
    if (cudaSetDevice(m->place.device) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess)
        st0 = hx_error_set(HX_ERR_CUDA, __FILE__, __LINE__, __func__, "nvshmem: device: %s",
                           cudaGetErrorString(cudaGetLastError()));
    HX_TRY(hx_comm_agree(h->comm, st0));
    /* free in the same order on every PE */
    if (m->msend)
        nvshmem_free(m->msend);
    if (m->mrecv)
        nvshmem_free(m->mrecv);
    if (m->msig)
        nvshmem_free(m->msig);
    m->msend = m->mrecv = NULL;
    m->msig = NULL;
    cudaFree(m->mseq);
    m->mseq = NULL;
    free(m->moff);
    free(m->msend_ptr);
    free(m->mrecv_ptr);
    m->moff = (size_t *)calloc((size_t)nchan + 1, sizeof *m->moff);
    m->msend_ptr = (void **)calloc((size_t)nchan + 1, sizeof(void *));
    m->mrecv_ptr = (void **)calloc((size_t)nchan + 1, sizeof(void *));
    hx_status st = m->moff && m->msend_ptr && m->mrecv_ptr
                       ? HX_OK
                       : hx_error_set(HX_ERR_NOMEM, __FILE__, __LINE__, __func__, "out of memory");
    HX_TRY(hx_comm_agree(h->comm, st));
    for (int c = 0; c < nchan; c++)
        m->moff[c + 1] = m->moff[c] + ((cap[c] + 255) & ~(size_t)255);
    m->nchan = nchan;
    const size_t total = m->moff[nchan] > 0 ? m->moff[nchan] : 256;
    m->msend = (char *)nvshmem_malloc(total);
    m->mrecv = (char *)nvshmem_malloc(total);
    m->msig = (uint64_t *)nvshmem_malloc(sizeof(uint64_t) * ((size_t)nchan + 1));
    st = m->msend && m->mrecv && m->msig
             ? HX_OK
             : hx_error_set(HX_ERR_NVSHMEM, __FILE__, __LINE__, __func__,
                            "nvshmem_malloc of %zu bytes for the search step's messages failed: "
                            "raise NVSHMEM_SYMMETRIC_SIZE",
                            2 * total);
    if (st == HX_OK && cudaMalloc((void **)&m->mseq,
                                  sizeof(unsigned long long) * ((size_t)nchan + 1)) != cudaSuccess)
        st = hx_error_set(HX_ERR_CUDA, __FILE__, __LINE__, __func__, "cudaMalloc failed");
    if (st == HX_OK &&
        (cudaMemset(m->msig, 0, sizeof(uint64_t) * ((size_t)nchan + 1)) != cudaSuccess ||
         cudaMemset(m->mseq, 0, sizeof(unsigned long long) * ((size_t)nchan + 1)) != cudaSuccess ||
         cudaMemset(m->mrecv, 0, total) != cudaSuccess ||
         cudaMemset(m->msend, 0, total) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess))
        st = hx_error_set(HX_ERR_CUDA, __FILE__, __LINE__, __func__, "cudaMemset failed");
    /* every PE's signals are zero before anyone sends */
    HX_TRY(hx_comm_agree(h->comm, st));
    for (int c = 0; c < nchan; c++) {
        m->msend_ptr[c] = m->msend + m->moff[c];
        m->mrecv_ptr[c] = m->mrecv + m->moff[c];
    }
    send[0] = m->msend_ptr;
    recv[0] = m->mrecv_ptr;
    return HX_OK;
}

static hx_status nv_msg_send(hx_halo *h, int chan, const int *dest, const int *src, void *stream)
{
    nv_impl *m = (nv_impl *)h->impl;
    HX_TRY(nv_check(m));
    HX_CHECK(chan >= 0 && chan < m->nchan, HX_ERR_INVALID_ARG, "nvshmem: message channel %d of %d",
             chan, m->nchan);
    const int dpe = hx_comm_rank_of_domain(h->comm, dest[0]);
    nv_msg M;
    memset(&M, 0, sizeof M);
    M.src = (const int4 *)m->msend_ptr[chan];
    M.cap = (long long)(m->moff[chan + 1] - m->moff[chan]);
    M.dst_sym = (char *)m->mrecv_ptr[chan];
    M.sig_sym = m->msig + chan;
    M.my_sig = m->msig + chan;
    M.seq = m->mseq + chan;
    M.dest_pe = dpe;
    M.src_pe = hx_comm_rank_of_domain(h->comm, src[0]);
    M.chan = chan;
    if (h->cfg.path != HX_HALO_PATH_NETWORK) {
        M.dst_p2p = (int4 *)nvshmem_ptr(m->mrecv_ptr[chan], dpe);
        M.sig_p2p = (uint64_t *)nvshmem_ptr(m->msig + chan, dpe);
        if (!M.sig_p2p)
            M.dst_p2p = NULL;
    }
    const long long words = M.cap / 16;
    int nb = (int)((words + HX_HALO_THREADS - 1) / HX_HALO_THREADS);
    nb = nb < 1 ? 1 : (nb > 16 ? 16 : nb);
    if (!M.dst_p2p)
        nb = 1;
    nv_msg_kernel<<<nb, HX_HALO_THREADS, 0, (cudaStream_t)stream>>>(m->args, M);
    HX_CUDA_LAUNCH("nv_msg_kernel");
    return HX_OK;
}

extern "C" const hx_halo_ops hx_halo_ops_nvshmem = {
    /* capturable: the exchanges only enqueue the two fused kernels */
    "nvshmem", 1,          nv_setup,   nv_update,    nv_exchange_x, nv_exchange_f,
    NULL,      nv_destroy, nv_refresh, nv_msg_setup, nv_msg_send,   1};
