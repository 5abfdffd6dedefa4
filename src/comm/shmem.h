/* The NVSHMEM transport: the only code of halox that includes NVSHMEM's headers or calls it
 * (src/comm/shmem.cu). The fused halo backend (src/halo/nvshmem/) calls these wrappers: host
 * calls for start-up, symmetric memory and shutdown, and the few device calls of its network
 * path. Its peer-to-peer path stores into the addresses hx_shmem_ptr gave and signals with plain
 * atomics: nothing of NVSHMEM runs there per step.
 *
 * Built into the NVSHMEM module only (relocatable device code, CMake target halox_nvshmem): the
 * device wrappers are resolved across its translation units by the module's device link. */
#ifndef HX_COMM_SHMEM_H
#define HX_COMM_SHMEM_H

#include <stddef.h>
#include <stdint.h>

#include "halox/comm.h"
#include "halox/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Collective over comm (every rank a PE, PE index = rank): start NVSHMEM once per process, on
 * `device`, which must be current (NVSHMEM binds a process to the device current at its
 * initialisation, for good), identified by `uuid`, bootstrapped on a duplicate of comm's MPI
 * communicator. Later calls check that comm has the same ranks and that the device is the same
 * GPU (HX_ERR_UNSUPPORTED otherwise: NVSHMEM cannot move). Finalised by hx_mpi_finalize.
 * NVSHMEM's own environment is the user's: NVSHMEM_DISABLE_NVLS is set (to 1: NVLink multicast
 * can take a shared host's GPUs out of service) only when unset, and NVSHMEM_BOOTSTRAP_MPI_PLUGIN
 * to the plugin found at configure time only when unset; both are logged. */
hx_status hx_shmem_init(hx_comm *comm, int device, const unsigned char uuid[16]);
/* "3.4.5" once started, "" before */
const char *hx_shmem_version(void);
int hx_shmem_n_pes(void);
/* Collective symmetric allocations (the same sizes in the same order on every PE); NULL when
 * the symmetric heap is full (NVSHMEM_SYMMETRIC_SIZE). hx_shmem_free is collective too. */
void *hx_shmem_malloc(size_t bytes);
void *hx_shmem_calloc(size_t n, size_t size);
void hx_shmem_free(void *p);
/* The address of `pe`'s copy of symmetric object p, when this PE can store into it directly
 * (same GPU, or NVLink/PCIe peer access); NULL otherwise. */
void *hx_shmem_ptr(const void *p, int pe);

#ifdef __cplusplus
}
#endif

#if defined(__CUDACC__) || defined(HX_CUDA_EMULATION)
/* Device calls of the network path (not inlined: they cross the module's translation units).
 * Signals are added (NVSHMEM_SIGNAL_ADD) to `sig` on `pe`. */
/* one thread: sig[pe] += v */
__device__ void hx_shmem_signal_add(uint64_t *sig, uint64_t v, int pe);
/* every thread of the block: dst[pe][0..n) = src[0..n), then sig[pe] += v; returns before the
 * data has left (src must stay untouched until the signal is seen) */
__device__ void hx_shmem_put_signal_nbi_block(float *dst, const float *src, size_t n, uint64_t *sig,
                                              uint64_t v, int pe);
/* the same, returning when src may be reused */
__device__ void hx_shmem_put_signal_block(float *dst, const float *src, size_t n, uint64_t *sig,
                                          uint64_t v, int pe);
/* the same for `bytes` bytes of any type (the device search step's messages) */
__device__ void hx_shmem_putmem_signal_block(void *dst, const void *src, size_t bytes,
                                             uint64_t *sig, uint64_t v, int pe);
#endif

#endif
