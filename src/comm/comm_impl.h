/* Transport interface behind hx_comm. A transport moves bytes between domains; every algorithm
 * (plan building, the halo exchange, migration, reductions) is written once on top of it and is
 * shared by the serial and MPI transports. */
#ifndef HX_COMM_IMPL_H
#define HX_COMM_IMPL_H

#include "halox/comm.h"

#ifdef __cplusplus
extern "C" { /* the CUDA backends (C++ to nvcc) call these too */
#endif

/* Collectives (sum_f64, max_i64, gather_bytes, bcast_bytes) receive the caller's local status:
 * HX_OK, or the error already recorded on this rank (bad arguments; then the data pointers may
 * be NULL and must not be touched). A transport never returns from a collective before every
 * rank has taken part in all of its messages: a failure travels inside the messages or through
 * an agreement first. Each returns HX_OK on every rank or an error on every rank (the failing
 * rank's own status there, HX_ERR_REMOTE with its message elsewhere, as hx_comm_agree). n and
 * bytes must be equal on every rank: they fix the shape of the messages. */
typedef struct hx_comm_ops {
    const char *name;
    hx_status (*sendrecv)(hx_comm *c, const int *dest, const void *const *send,
                          const size_t *send_bytes, const int *src, void *const *recv,
                          const size_t *recv_bytes);
    hx_status (*sum_f64)(hx_comm *c, hx_status local, const double *in, double *out, int n);
    hx_status (*max_i64)(hx_comm *c, hx_status local, const long long *in, long long *out, int n);
    hx_status (*agree)(hx_comm *c, hx_status local_status);
    hx_status (*gather_bytes)(hx_comm *c, hx_status local, const void *const *in,
                              const size_t *in_bytes, void **out, size_t *counts);
    hx_status (*bcast_bytes)(hx_comm *c, hx_status local, void *buf, size_t bytes);
    hx_status (*abort)(hx_comm *c, int code);
    void (*destroy)(hx_comm *c);
} hx_comm_ops;

struct hx_comm {
    const hx_comm_ops *ops;
    int ndomains;       /* domains in the job */
    int nlocal;         /* domains in this process */
    int *local_domains; /* [nlocal] */
    int rank, nranks;
    void *impl; /* transport private data */
};

/* MPI transport only, for tests: largest piece (bytes) a message is cut into (MPI counts are
 * int; the default is 1 GiB). No effect on other transports. */
void hx_comm_mpi_set_piece_bytes(hx_comm *c, size_t bytes);

/* ---- services for the GPU halo backends ----------------------------------------------------
 * Implemented in src/comm/mpi.c (the only file that calls MPI) and in src/comm/nompi.c for
 * builds without MPI. On the serial communicator they answer as for a job of one process. */

/* Node-local rank and number of processes of this process's node (MPI_Comm_split_type with
 * MPI_COMM_TYPE_SHARED, computed once per communicator); 0 and 1 for the serial communicator. */
hx_status hx_comm_node_info(hx_comm *c, int *local_rank, int *local_size);
/* Whether the MPI library accepts device pointers, as the library itself says (Open MPI's
 * MPIX_Query_cuda_support; MPICH's MPIX_GPU_query_support); HALOX_MPI_CUDA_AWARE=0 or 1 in the
 * environment overrides. 0 without MPI. *why (static string) says where the answer came from.
 * The GPU backend confirms a "yes" with a self-test before it passes device memory. */
int hx_comm_mpi_cuda_aware(const char **why);
/* A new duplicate of c's MPI communicator, returned as a malloc'ed MPI_Comm behind an opaque
 * pointer (what NVSHMEMX_INIT_WITH_MPI_COMM takes); release with hx_comm_mpi_free, which is
 * safe after MPI_Finalize. HX_ERR_UNSUPPORTED for the serial communicator. Collective. */
hx_status hx_comm_mpi_dup(hx_comm *c, void **mpi_comm);
void hx_comm_mpi_free(void **mpi_comm);
/* Register fn to run in hx_mpi_finalize before MPI_Finalize (last registered runs first), for
 * libraries bootstrapped on MPI that must finalize first (NVSHMEM). At most 8. */
hx_status hx_mpi_at_finalize(void (*fn)(void));

#ifdef __cplusplus
}
#endif

#endif
