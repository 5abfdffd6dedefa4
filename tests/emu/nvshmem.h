/* CPU emulation of the NVSHMEM subset halox uses (HALOX_GPU_EMULATE builds with MPI only; the
 * implementation is emu_nvshmem.cpp). Not part of the library.
 *
 * Why: the fused GPU-initiated halo exchange (src/halo/nvshmem, its transport src/comm/shmem.cu)
 * otherwise runs only where there are GPUs. Compiled as C++ against this header and the CUDA
 * emulation beside it (cuda_runtime_api.h, emu_device.h), its protocol (every pulse in one
 * kernel, signals counting exchanges, put-with-signal, stores into a peer's memory, the
 * deadlines and the fault injection of the test variant) runs in CI on CPUs.
 *
 * The model:
 *  - PEs are the ranks of the MPI communicator given at initialisation
 * (NVSHMEMX_INIT_WITH_MPI_COMM, the only bootstrap emulated), all on one node (checked): processes,
 * not threads.
 *  - The symmetric heap is POSIX shared memory that every PE maps whole: PE i's heap is at
 *    offset i * NVSHMEM_SYMMETRIC_SIZE (default 1 GiB, reserved, not committed) of one mapping.
 *    nvshmem_ptr translates a symmetric address by its offset, for every PE (all are "P2P").
 *    Allocations are collective: every PE must ask for the same sizes in the same order (checked:
 *    a PE that differs gets NULL on every PE with a message); new memory is filled with 0xFF
 *    bytes (NaN as float), as the emulation's cudaMalloc, before any peer can write into it.
 *  - Signals are 64-bit words in that memory, changed with atomics. A put copies at once; a
 *    put-with-signal copies, then sets or adds to the signal with release order, so a PE that
 *    sees the signal with an acquire load sees the data (NVSHMEM's guarantee). Puts complete
 *    before they return, which NVSHMEM allows for every put, blocking or not: nvshmem_fence
 *    (ordering puts to one PE) and nvshmem_quiet (completing them) are full fences.
 *  - Waits (nvshmem_signal_wait_until, the collectives of the host API) have a deadline:
 *    HALOX_HALO_WAIT_TIMEOUT seconds, else 60; on expiry the PE prints what it waited for and
 *    aborts (mpirun then ends the job): a bug fails a test, it never hangs it.
 *  - HALOX_EMU_SLOW_PE=R:MS makes PE R slow (emu_device.h: it pauses after every signal it
 *    publishes, its blocks' threads held meanwhile), to widen ordering races deterministically.
 * What it cannot say anything about: a GPU's weak memory ordering (the CPU orders more than a
 * GPU must), NVLink, the copy engines, timings. */
#ifndef HX_EMU_NVSHMEM_H
#define HX_EMU_NVSHMEM_H

#include <stddef.h>
#include <stdint.h>

/* the API level emulated: NVSHMEM 3.4.5's (what halox is built against on GPUs) */
#define NVSHMEM_VENDOR_MAJOR_VERSION 3
#define NVSHMEM_VENDOR_MINOR_VERSION 4
#define NVSHMEM_VENDOR_PATCH_VERSION 5

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int major, minor, patch;
} nvshmemi_version_t;

enum {
    NVSHMEM_THREAD_SINGLE = 0,
    NVSHMEM_THREAD_FUNNELED,
    NVSHMEM_THREAD_SERIALIZED,
    NVSHMEM_THREAD_MULTIPLE
};
enum { NVSHMEMX_INIT_WITH_MPI_COMM = 1 << 1 };

typedef struct nvshmemx_init_attr {
    int version;
    void *mpi_comm; /* MPI_Comm * */
} nvshmemx_init_attr_t;
#define NVSHMEMX_INIT_ATTR_INITIALIZER                                                             \
    {                                                                                              \
        0, NULL                                                                                    \
    }
#define nvshmemx_init_init_attr_ver_only(attr) ((attr).version = 1)

typedef int32_t nvshmem_team_t;
#define NVSHMEM_TEAM_INVALID (-1)
#define NVSHMEM_TEAM_WORLD 0
#define NVSHMEM_TEAM_SHARED 1
#define NVSHMEMX_TEAM_NODE 2

enum { NVSHMEM_SIGNAL_SET = 9, NVSHMEM_SIGNAL_ADD = 10 };
enum {
    NVSHMEM_CMP_EQ = 0,
    NVSHMEM_CMP_NE,
    NVSHMEM_CMP_GT,
    NVSHMEM_CMP_LE,
    NVSHMEM_CMP_LT,
    NVSHMEM_CMP_GE
};

/* ---- host ------------------------------------------------------------------------------------ */

/* Collective over the MPI communicator in bootstrap_attr->mpi_comm (flags must hold
 * NVSHMEMX_INIT_WITH_MPI_COMM); 0 on success, else non-zero with the reason on stderr. */
int nvshmemi_init_thread(int requested_thread_support, int *provided_thread_support,
                         unsigned int bootstrap_flags, nvshmemx_init_attr_t *bootstrap_attr,
                         nvshmemi_version_t version);
void nvshmem_finalize(void);
int nvshmem_my_pe(void);
int nvshmem_n_pes(void);
int nvshmem_team_my_pe(nvshmem_team_t team);
int nvshmem_team_n_pes(nvshmem_team_t team);
void nvshmemx_vendor_get_version_info(int *major, int *minor, int *patch);
void *nvshmem_malloc(size_t size);
void *nvshmem_calloc(size_t count, size_t size);
void nvshmem_free(void *ptr);
void *nvshmem_ptr(const void *ptr, int pe);
void nvshmem_barrier_all(void);

/* ---- device (called from emulated kernels; usable from host code too) ----------------------- */

/* one thread: dest on pe = src[0..n) */
void nvshmem_float_put(float *dest, const float *source, size_t nelems, int pe);
void nvshmem_float_put_nbi(float *dest, const float *source, size_t nelems, int pe);
void nvshmem_putmem(void *dest, const void *source, size_t bytes, int pe);
/* one thread: the put, then *sig on pe (op) value, ordered after the data */
void nvshmem_float_put_signal(float *dest, const float *source, size_t nelems, uint64_t *sig_addr,
                              uint64_t signal, int sig_op, int pe);
void nvshmem_float_put_signal_nbi(float *dest, const float *source, size_t nelems,
                                  uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
/* every thread of the block, the same arguments */
void nvshmemx_putmem_block(void *dest, const void *source, size_t bytes, int pe);
void nvshmemx_putmem_signal_block(void *dest, const void *source, size_t bytes, uint64_t *sig_addr,
                                  uint64_t signal, int sig_op, int pe);
void nvshmemx_putmem_signal_nbi_block(void *dest, const void *source, size_t bytes,
                                      uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
void nvshmemx_float_put_block(float *dest, const float *source, size_t nelems, int pe);
void nvshmemx_float_put_signal_block(float *dest, const float *source, size_t nelems,
                                     uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
void nvshmemx_float_put_signal_nbi_block(float *dest, const float *source, size_t nelems,
                                         uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
/* one thread: *sig on pe (op) value */
void nvshmemx_signal_op(uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
/* this PE's signal word, acquired */
uint64_t nvshmem_signal_fetch(const uint64_t *sig_addr);
/* until this PE's *sig_addr (cmp) cmp_value; returns the value seen */
uint64_t nvshmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value);
void nvshmem_fence(void);
void nvshmem_quiet(void);

#ifdef __cplusplus
}
#endif
#endif
