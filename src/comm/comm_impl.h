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
/* Point-to-point messages carry a tag that names what they are: the kind below and an index
 * (the pulse; for migration 2 x dimension + direction). Every wait for a message knows what it
 * waits for, and a message of another kind or pulse is never taken for it: a receiver that gets
 * one reports that the ranks are out of step (src/comm/mpi.c). One tag for every message let a
 * rank that had left an exchange mid-pulse feed its next exchange's forces to a neighbour still
 * waiting for coordinates. */
typedef enum hx_msg_kind {
    HX_MSG_ANY = 0,       /* hx_comm_sendrecv (public): "a message" */
    HX_MSG_HALO_X,        /* the coordinates of pulse p (halo exchanges) */
    HX_MSG_HALO_F,        /* the forces of pulse p */
    HX_MSG_TOKEN_X,       /* gpu-direct: the done token of the coordinates of pulse p */
    HX_MSG_TOKEN_F,       /* gpu-direct: the done token of the forces of pulse p */
    HX_MSG_PLAN_COUNT,    /* plan building: the zone counts of pulse p */
    HX_MSG_PLAN_X,        /* plan building: the selected coordinates of pulse p */
    HX_MSG_PLAN_OFFSET,   /* plan building: where pulse p's atoms land on the receiver */
    HX_MSG_PLAN_INT,      /* hx_plan_exchange_int: the integers of pulse p */
    HX_MSG_MIGRATE_COUNT, /* migration: the count along dimension d, direction r (2 d + r) */
    HX_MSG_MIGRATE,       /* migration: the molecules along dimension d, direction r */
    HX_MSG_IPC_X,         /* gpu-direct set-up: the IPC handle of the coordinates, pulse p */
    HX_MSG_IPC_F,         /* gpu-direct set-up: the IPC handle of the force slots, pulse p */
    HX_MSG_SELFTEST,      /* gpu-mpi set-up: the CUDA-aware self-test */
    /* the device search step's messages through gpu-mpi / gpu-direct (index: the channel) */
    HX_MSG_SEARCH_SIZE,  /* gpu-mpi: the size of the message of channel c */
    HX_MSG_SEARCH,       /* gpu-mpi: the message of channel c */
    HX_MSG_SEARCH_TOKEN, /* gpu-direct: the done token of the message of channel c */
    HX_MSG_IPC_SEARCH,   /* gpu-direct set-up: the IPC handle of the message regions (index 2 p
                          * + direction, p a first pulse of its dimension) */
    HX_MSG_NKINDS
} hx_msg_kind;
#define HX_MSG_INDEX_MAX 128 /* indices 0..127: pulses (HX_MAX_PULSES = 64), 2 d + r */
/* A message's tag: 1 + kind * 128 + index, below 2560 (MPI guarantees tags up to 32767). */
static inline int hx_msg_tag(hx_msg_kind kind, int index)
{
    return 1 + (int)kind * HX_MSG_INDEX_MAX + (index & (HX_MSG_INDEX_MAX - 1));
}
/* What a tag names, for messages: "the coordinates of pulse 2". */
void hx_msg_describe(int tag, char *buf, size_t len);
/* Whether a message of this tag belongs to a step (halo exchanges): its waits take the step
 * deadline, whatever the communicator's phase. */
int hx_msg_in_step(int tag);

typedef struct hx_comm_ops {
    const char *name;
    /* tag: hx_msg_tag; local: this rank's status. A rank that failed still takes part: it sends
     * a failure marker in place of its data (and receives what comes), so that its neighbours
     * return HX_ERR_REMOTE naming it instead of waiting for data that never comes. */
    hx_status (*sendrecv)(hx_comm *c, int tag, hx_status local, const int *dest,
                          const void *const *send, const size_t *send_bytes, const int *src,
                          void *const *recv, const size_t *recv_bytes);
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
    /* Waits: the deadline of the steps (in_step) or of set-up (include/halox/timer.h), and the
     * step that timeout messages name (has_step). Set by the engine (hx_comm_set_step). */
    int in_step, has_step;
    long long step;
};

/* Point-to-point exchange of hx_comm_sendrecv with a tag (hx_msg_tag) and this rank's status
 * (see the sendrecv op): returns HX_OK when every message arrived, `local` when it is an error,
 * HX_ERR_REMOTE when a neighbour sent its failure marker, HX_ERR_TIMEOUT past the deadline. */
hx_status hx_comm_sendrecv_tagged(hx_comm *c, int tag, hx_status local, const int *dest,
                                  const void *const *send, const size_t *send_bytes, const int *src,
                                  void *const *recv, const size_t *recv_bytes);
/* The phase of the waits on c: 1 inside steps (the step deadline, HX_WAIT_STEP), 0 set-up
 * (HX_WAIT_SETUP, the default). Returns the previous phase. */
int hx_comm_set_in_step(hx_comm *c, int in_step);
/* The step that messages of a timed-out wait name (< 0: none). */
void hx_comm_set_step(hx_comm *c, long long step);
/* The deadline in seconds (0: none) of a wait on c for a message of `tag` (0: a collective). */
double hx_comm_wait_limit(const hx_comm *c, int tag);
/* " (step S)" when c has a step, else "", into buf (for messages). */
const char *hx_comm_step_text(const hx_comm *c, char *buf, size_t len);

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
