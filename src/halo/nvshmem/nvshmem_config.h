/* The configuration of the fused NVSHMEM exchange: one struct, the same on every rank.
 *
 * Its settings come from hx_halo_config where it has them, else from environment variables,
 * else from defaults. The environment is read once, on rank 0, and broadcast with the resolved
 * values: every PE runs the same protocol (a fence form or a scope differing between PEs would
 * be a silent ordering bug, a chunk size a hang), whatever each process's environment says.
 * Rank 0 logs the result (HALOX_LOG=info).
 *
 *   HALOX_WAIT_TIMEOUT=S[,SETUP]   deadline of device-side waits (cfg.wait_timeout < 0): half
 *                                  the step deadline of every wait of halox (include/halox/
 *                                  timer.h, default 60 s, so 30 s; 0: off), in every build
 *   HALOX_NVSHMEM_BACKOFF_NS=N     polling backoff bound (cfg.wait_backoff_ns < 0: this, else 0)
 *   HALOX_NVSHMEM_FENCE=release|block|thread   how a block publishes before its signal
 *   HALOX_NVSHMEM_SCOPE=auto|sys   ordering scope: GPU scope where every peer shares our GPU
 *   HALOX_NVSHMEM_PDL=1|0          programmatic dependent launch (sm_90 and later)
 *   HALOX_NVSHMEM_CHUNK=N          atoms per block (a multiple of 1024; default: the smallest
 *                                  that fits the GPU's share)
 *   HALOX_ALLOW_NO_MPS=1           several PEs on one GPU without MPS
 * Test hooks (acted on only by the test variant of the module, halox_nvshmem_hooks, which the
 * test programs and halox-test link; a production build logs that it ignores them):
 *   HALOX_NVSHMEM_TRACE=PREFIX     per-PE %globaltimer traces (scripts/nvshmem_trace.py)
 *   HALOX_TEST_WITHHOLD=r:x|f:p:s  rank r skips its coordinate/force signal of pulse p, step s
 *   HALOX_TEST_INJECT=x-early|f-early   ordering faults the tests must catch
 *   and hx_halo_config.stress_seed (random delays in blocks and processes). */
#ifndef HX_COMM_NVSHMEM_CONFIG_H
#define HX_COMM_NVSHMEM_CONFIG_H

#include "halox/halo.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How a block publishes its writes before it adds its share to a signal:
 *   THREAD   every thread fences, then thread 0 adds (the first form measured);
 *   BLOCK    thread 0 fences after the block barrier, then adds;
 *   RELEASE  thread 0 adds with release semantics after the barrier (the default: one operation
 *            instead of a fence and an operation, measured in gpu-results.md). */
enum { HX_NV_FENCE_THREAD = 0, HX_NV_FENCE_BLOCK = 1, HX_NV_FENCE_RELEASE = 2 };
enum { HX_NV_INJECT_NONE = 0, HX_NV_INJECT_X_EARLY = 1, HX_NV_INJECT_F_EARLY = 2 };

/* Polling backoff of device-side waits by default: 0, spin. Sleeping up to 256 or 1024 ns
 * changed neither the exchange nor the MD step beyond noise with 4-8 processes on one H200
 * (docs/design/gpu-results.md). */
#define HX_NVSHMEM_BACKOFF_DEFAULT_NS 0

typedef struct hx_nv_config {
    double timeout;   /* s; 0: no deadline */
    int backoff_ns;   /* upper bound of the polling sleep; 0: spin */
    int fence_mode;   /* HX_NV_FENCE_* */
    int scope_sys;    /* 1: system scope always; 0: GPU scope where every peer is on our GPU */
    int pdl;          /* programmatic dependent launch asked for (the GPUs may not have it) */
    int chunk;        /* atoms per block; 0: the smallest that fits */
    int allow_no_mps; /* several PEs on one GPU without MPS */
    unsigned long long stress_seed; /* test hook: random delays (0: off) */
    char trace[512];                /* test hook: trace file prefix ("": off) */
    int wh_rank, wh_dir, wh_pulse;  /* test hook: withheld signal (wh_dir -1: none; 0 x, 1 f) */
    unsigned long long wh_step;
    int inject; /* test hook: HX_NV_INJECT_* */
} hx_nv_config;

/* Collective: rank 0 resolves the configuration from cfg and its environment and checks it
 * (HX_ERR_INVALID_ARG naming the variable and what to give); every rank receives the same. */
hx_status hx_nv_config_agree(hx_comm *comm, const hx_halo_config *cfg, hx_nv_config *out);
/* One line: "deadline 20 s, backoff 0 ns, publish by release atomic, scope auto, ..." */
void hx_nv_config_describe(const hx_nv_config *c, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
