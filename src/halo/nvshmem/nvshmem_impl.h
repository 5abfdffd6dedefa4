/* Private to the "nvshmem" halo backend (GPU-initiated, fused: Doijade et al., arXiv 2509.21527):
 * what its parts share. The module (CMake target halox_nvshmem, relocatable device code so that
 * no other kernel pays for -rdc) is
 *
 *   nvshmem.cu          the backend: set-up (placement, NVSHMEM start, configuration), update
 *                       (symmetric memory, paths, launch sizes), exchanges, shutdown;
 *   nvshmem_kernels.cu  the protocol: the coordinate and force kernels and their launch;
 *   nvshmem_config.[ch] the configuration struct, agreed across ranks;
 *   nvshmem_hooks.cu    test hooks (traces, withheld signals, fault injection, stress), compiled
 *                       only into the test variant of the module (halox_nvshmem_hooks, built with
 *                       HX_NVSHMEM_HOOKS=1; the test programs and halox-test link it): the
 *                       production kernels contain none of it;
 *   src/comm/shmem.[ch] the transport, the only code that includes NVSHMEM.
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
 *   P2P      hx_shmem_ptr gives the peer's address: coordinates are packed straight into the
 *            peer's x at our peer_atom_offset (vector stores, or through shared memory and the
 *            bulk-copy engine with cfg.bulk_copy), forces are stored into the peer's force slot;
 *            each block then release-adds its share to the peer's signal word: at GPU scope when
 *            every peer of every pulse and direction shares our GPU (by UUID: several PEs under
 *            MPS), else at system scope (a peer on another GPU, across NVLink).
 *   network  coordinates are packed into our symmetric staging slot and sent with a
 *            put-with-signal (hx_shmem_put_signal_nbi_block); forces go straight from our
 *            (symmetric) f with the blocking block-scoped put-with-signal (f must be reusable
 *            when the kernel ends).
 *   Forces are pushed on both paths, never pulled: a pull would need a "done reading" signal
 *   back before the owner may clear its forces (docs/design/gpu-halo.md).
 *
 * Signals: 64-bit words per pulse and direction in symmetric memory that count exchanges: each
 * exchange adds exactly NV_SIG_UNIT, split over the sending blocks (the network path's one put
 * adds it whole); a receiver waits for n * NV_SIG_UNIT with >=; nothing is reset. The step
 * number lives in device memory (each kernel's block (0,0) sets the word the other kernel
 * reads), so a CUDA graph of the two kernels replays correctly. The kernels are launched with
 * programmatic dependent launch: each starts while the kernel before it in the stream ends, and
 * waits for it (griddepcontrol.wait) before it reads anything. Why a sender never overwrites a
 * region still being read: docs/design/gpu-halo.md, in short: everything we write into a peer at
 * step s+1 comes after we received that peer's forces of step s, which it sends only after its
 * own stream has finished reading what we wrote at step s.
 *
 * Never hang: every device wait has a deadline when one is configured (hx_nv_config.timeout);
 * on expiry the waiting thread records rank, peer, pulse, step, expected and observed signal in
 * mapped host memory, prints it, and raises an abort flag that makes every other wait and every
 * later halo kernel of this exchange return at once; the host turns the record into
 * HX_ERR_NVSHMEM at its next call. */
#ifndef HX_COMM_NVSHMEM_IMPL_H
#define HX_COMM_NVSHMEM_IMPL_H

#include <stdint.h>

#include "halo/nvshmem/nvshmem_config.h"
#include "halo/halo_gpu.h"

#ifndef HX_NVSHMEM_HOOKS
#define HX_NVSHMEM_HOOKS 0 /* the production module: no test hook anywhere */
#endif

/* what a deadline report was waiting for; NV_WAIT_MSG: a message of the device search step
 * (its "pulse" is the channel) */
enum { NV_WAIT_X = 0, NV_WAIT_F = 1, NV_WAIT_FDONE = 2, NV_WAIT_MSG = 3 };

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

/* Trace (test hook, HALOX_NVSHMEM_TRACE=PREFIX): %globaltimer stamps of one step, in a device
 * ring of the last NV_TRACE_STEPS steps, written per PE to PREFIX.<instance>.rank<R>.txt when the
 * exchange is destroyed (scripts/nvshmem_trace.py lines the PEs up; the timer is one clock for
 * every process on a GPU). A stamp has one writer, or several blocks keep the latest with
 * atomicMax (x_sent, f_sent, f_done, f_end: a slot's older values are earlier times), so no
 * clearing: a slot belongs to the step stored in it. Pulses past NV_TRACE_PULSES are not
 * traced. */
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

/* The deadline record, in mapped pinned host memory: the host reads it without a sync. */
typedef struct nv_error {
    volatile int flag;
    volatile int rank, peer, pulse, kind;
    volatile unsigned long long step, expected, observed;
} nv_error;

/* The kernels' argument (by value). */
typedef struct nv_args {
    float *x, *f, *xstage, *fbuf; /* symmetric, this PE's addresses */
    uint64_t *xsig, *fsig;        /* symmetric [HX_MAX_PULSES] each */
    const nv_pulse *pulses;       /* device [npulses] */
    nv_state *st;
    nv_error *err; /* device address of the mapped record */
    int rank, npulses, chunk, bulk;
    unsigned long long timeout_ns; /* 0: no deadline */
    unsigned backoff_ns;           /* upper bound of the polling sleep; 0: spin */
    int fence_mode;                /* nv_publish, nv_last_block: HX_NV_FENCE_* */
    int sys;                       /* scope of the inter-PE ordering: 1 system, 0 this GPU */
#if HX_NVSHMEM_HOOKS
    unsigned long long stress; /* random delays (0: none) */
    nv_trace *trace;           /* NULL: not traced */
    int wh_dir, wh_pulse;      /* withhold this signal (wh_dir -1: none) */
    int inject;                /* HX_NV_INJECT_* */
    unsigned long long wh_step;
#endif
} nv_args;

/* The backend's state. */
typedef struct nv_impl {
    hx_gpu_place place;
    hx_nv_config cfg; /* the same on every rank */
    hx_gpu_plan gp;
    int npulses;
    float *x, *f, *xstage, *fbuf; /* symmetric */
    uint64_t *sig;                /* symmetric [2][HX_MAX_PULSES]: coordinates, forces */
    int cap_local, cap_buf;
    nv_pulse hp[HX_MAX_PULSES]; /* host copy of the pulse table */
    int p2p_x[HX_MAX_PULSES], p2p_f[HX_MAX_PULSES];
    nv_pulse *dp;          /* device pulse table */
    hx_gpu_stage dp_stage; /* its upload at a refresh, ordered on the exchanges' stream */
    /* resident blocks per SM of the two kernels with occ_smem bytes of shared memory for the
     * coordinates' (0: not asked yet) */
    int occ_x, occ_f, occ_smem;
    nv_state *st;         /* device */
    nv_error *err, *derr; /* mapped host record, its device address */
    nv_args args;
    dim3 grid_x, grid_f;
    int smem_x;
    int capacity; /* blocks this PE may keep resident at once */
    int phase;    /* 1 after exchange_x until exchange_f */
    int sys;      /* ordering scope in effect: 1 system, 0 GPU */
    int pdl;      /* programmatic dependent launch of the two kernels (every rank's GPU has it) */
    char error[512]; /* the deadline report, once seen (sticky) */
    /* messages of the device search step: per channel a send and a receive buffer (symmetric,
     * one region each), a signal word (symmetric), the messages received so far (device) */
    int nchan;
    size_t *moff; /* [nchan + 1] byte offsets of the channels in a region */
    char *msend, *mrecv;
    uint64_t *msig;
    unsigned long long *mseq;
    void **msend_ptr, **mrecv_ptr; /* [nchan] the buffers' addresses (for the caller) */
#if HX_NVSHMEM_HOOKS
    nv_trace *trace; /* device ring, NULL when not traced */
    char trace_path[600];
    unsigned long long stress_rng;
#endif
} nv_impl;

/* One message of the device search step (src/md/gpu/decomp_gpu.h: [int64 bytes | payload] in
 * our send buffer of channel `chan`) to dest_pe's receive buffer of the channel, and the wait for
 * src_pe's message to us. P2P: every block copies its share with 16-byte stores into the peer's
 * buffer and adds its share of NV_SIG_UNIT to the peer's signal word of the channel (the halo
 * kernels' protocol); network: block 0 puts the message with the signal (the blocking form: the
 * send buffer is ours again when the kernel ends). Then block 0 waits (with the deadline) until
 * our word counts one message more than *seq, the messages of the channel received so far
 * (device memory, so that a captured graph replays). */
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

/* ---- nvshmem_kernels.cu -------------------------------------------------------------------- */

/* Resident blocks per multiprocessor of the two kernels (coordinate kernel with smem_x bytes of
 * dynamic shared memory), on the current device. */
hx_status hx_nv_occupancy(int smem_x, int *per_sm_x, int *per_sm_f);
/* Enqueue the coordinate (forces 0) or force kernel of m->args on s, with programmatic
 * dependent launch when m->pdl. */
hx_status hx_nv_launch(const nv_impl *m, int forces, hx_stream s);
/* Enqueue the message kernel of M on s with nb blocks (1 on the network path). */
hx_status hx_nv_msg_launch(const nv_impl *m, const nv_msg *M, int nb, hx_stream s);

/* ---- nvshmem_hooks.cu (HX_NVSHMEM_HOOKS only) --------------------------------------------- */
#if HX_NVSHMEM_HOOKS
/* At set-up: the trace ring when asked for. */
hx_status hx_nv_hooks_setup(hx_halo *h, nv_impl *m);
/* At every configure: the hooks' fields of m->args (withheld signal, injection, stress, trace),
 * logged. */
void hx_nv_hooks_args(hx_halo *h, nv_impl *m);
/* Before each kernel: the stress mode's host pause and delay kernel. */
hx_status hx_nv_hooks_before_launch(nv_impl *m, hx_stream s);
/* At destroy (the device idle): the trace written and freed. */
void hx_nv_hooks_destroy(hx_halo *h, nv_impl *m);
/* The stress mode's delay kernel: this PE's stream starts its exchange late by ns. */
hx_status hx_nv_delay(hx_stream s, unsigned long long ns);
#endif

#endif
