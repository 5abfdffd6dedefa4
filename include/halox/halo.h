/* halox: communicators, plan building and the halo exchange.
 *
 * Data path: geometry (hx_dd) -> plan (hx_plan: plain arrays per domain, and a device-ready
 * image of them) -> backend (hx_halo: runs the plan on host or device memory) -> engine (calls
 * the exchange between its force kernels). The plan never knows which backend runs it; a backend
 * never recomputes the plan.
 *
 * A process holds one or more "local domains": the serial communicator holds every domain of a
 * decomposition in one process (the in-process reference), the MPI communicator holds one domain
 * per rank. Calls that take per-domain data take arrays indexed by local domain. */
#ifndef HALOX_HALO_H
#define HALOX_HALO_H

#include <stddef.h>

#include "halox/dd.h"
#include "halox/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hx_memspace { HX_MEM_HOST = 0, HX_MEM_DEVICE = 1 } hx_memspace;
typedef enum hx_real { HX_REAL_F64 = 0, HX_REAL_F32 = 1 } hx_real;

/* ---- communicators --------------------------------------------------------------------- */

typedef struct hx_comm hx_comm;

/* Every domain in this process; messages are copies. */
hx_status hx_comm_create_serial(int ndomains, hx_comm **out);
/* One domain per rank of *mpi_comm (a pointer to an MPI_Comm, duplicated internally).
 * HX_ERR_NOT_COMPILED when halox was built without MPI. */
hx_status hx_comm_create_mpi(const void *mpi_comm, hx_comm **out);
void hx_comm_destroy(hx_comm **comm);

const char *hx_comm_name(const hx_comm *c); /* "serial" or "mpi" */
int hx_comm_ndomains(const hx_comm *c);     /* domains in the whole job */
int hx_comm_nlocal(const hx_comm *c);       /* domains held by this process */
int hx_comm_local_domain(const hx_comm *c, int local);
/* Process (rank) that holds `domain`: 0 for the serial communicator, the domain itself for MPI
 * (one domain per rank). Plans store it per pulse as the peer's process / NVSHMEM PE. */
int hx_comm_rank_of_domain(const hx_comm *c, int domain);
int hx_comm_rank(const hx_comm *c);   /* process rank (0 for serial) */
int hx_comm_nranks(const hx_comm *c); /* processes (1 for serial) */

/* Collective reductions. in: [nlocal][n] values of the local domains, out: [n] reduced over
 * every domain of the job (identical on every rank). Summation order is fixed (domain order),
 * so results do not depend on timing. n must be the same on every rank.
 *
 * Every collective below (reductions, gather, broadcast, hx_system_bcast) returns HX_OK on every
 * rank or an error on every rank, also when the arguments are bad on one rank only or one rank
 * runs out of memory: that rank returns its own status, the others HX_ERR_REMOTE with its
 * message (as hx_comm_agree). A caller may therefore branch on the result and call the next
 * collective without an agreement of its own. The reductions allocate nothing per call (MPI:
 * buffers made with the communicator, grown collectively only when n exceeds them). */
hx_status hx_comm_sum_f64(hx_comm *c, const double *in, double *out, int n);
hx_status hx_comm_max_i64(hx_comm *c, const long long *in, long long *out, int n);
/* Collective agreement on failure: every rank passes its local status; returns HX_OK only if
 * all were HX_OK, otherwise the first failing rank's status (HX_ERR_REMOTE on the others, with
 * that rank's message). Use before collective allocations and after fallible local work. */
hx_status hx_comm_agree(hx_comm *c, hx_status local_status);
/* Gather variable-sized byte blocks of every domain to domain 0's process, in domain order.
 * On the root, *out receives a malloc'ed buffer (caller frees) and counts[ndomains] its sizes;
 * elsewhere *out is NULL. */
hx_status hx_comm_gather_bytes(hx_comm *c, const void *const *in, const size_t *in_bytes,
                               void **out, size_t *counts);
/* Broadcast bytes from the process holding domain 0 (after an agreement on the arguments: one
 * reduction more, so not for per-step use). Any size (sent in pieces of at most 1 GiB). */
hx_status hx_comm_bcast_bytes(hx_comm *c, void *buf, size_t bytes);
/* Point-to-point exchange between neighbouring domains: every local domain i sends
 * send_bytes[i] bytes of send[i] to domain dest[i] and receives from domain src[i] into
 * recv[i], whose size is recv_bytes[i] (exact: a mismatch is HX_ERR_INTERNAL). A domain that
 * takes no part passes dest = src = -1. Any size (MPI: in pieces of at most 1 GiB). */
hx_status hx_comm_sendrecv(hx_comm *c, const int *dest, const void *const *send,
                           const size_t *send_bytes, const int *src, void *const *recv,
                           const size_t *recv_bytes);
/* End every process of the job (MPI_Abort) after an unrecoverable error on one rank; a no-op
 * returning HX_OK for the serial communicator. For programs, never called by the library. */
hx_status hx_comm_abort(hx_comm *c, int code);

/* Collective: the process holding domain 0 sends its system to every other process, where
 * *sys (NULL on entry) receives a new copy. A no-op for the serial communicator. */
struct hx_system;
hx_status hx_system_bcast(hx_comm *c, struct hx_system **sys);

/* ---- plans ------------------------------------------------------------------------------ */

typedef struct hx_plan hx_plan; /* plans of this process's local domains */

hx_status hx_plan_create(const hx_dd *dd, hx_comm *comm, hx_plan **out);
/* Collective: (re)build the plans from the home atoms of every local domain. x_home[i] holds
 * 3*n_home[i] coordinates in nm, molecules whole, each atom within the molecule radius of its
 * domain's cell. Communicates coordinates pulse by pulse (forwarding needs the atoms received so
 * far). */
hx_status hx_plan_build(hx_plan *plan, const int *n_home, const double *const *x_home);
/* Collective: forward ncomp ints per atom (global ids, types) through the plan, like the
 * coordinates but without shift; v[i] is local domain i's array in the local layout, home part
 * filled. Host memory. */
hx_status hx_plan_exchange_int(hx_plan *plan, int *const *v, int ncomp);
int hx_plan_nlocal(const hx_plan *plan);
const hx_domain_plan *hx_plan_domain(const hx_plan *plan, int local);
const hx_dd *hx_plan_dd(const hx_plan *plan);
void hx_plan_destroy(hx_plan **plan);

/* ---- the exchange ----------------------------------------------------------------------- */

/* hx_halo runs a plan through a backend chosen by name (libCEED-style registry):
 *   "host"       the host executor over the communicator (serial or MPI): per pulse pack, send,
 *                receive, unpack, in double or float, on host memory. The reference.
 *   "gpu-mpi"    CPU-driven GPU baseline: per pulse a pack kernel, the CPU waits for it, MPI
 *                moves the data (through pinned host buffers unless MPI is CUDA-aware), an
 *                unpack kernel. What GROMACS did before its GPU-direct paths.
 *   "gpu-direct" CPU-driven GPU baseline over CUDA IPC: per pulse a pack kernel, cudaMemcpyAsync
 *                into the peer's buffer, small handshakes over the communicator.
 *   "nvshmem"    GPU-initiated (Doijade et al., arXiv 2509.21527): one fused kernel per
 *                direction for all pulses, packing, transfer and signalling inside the kernel.
 * A backend that was not compiled into this build answers HX_ERR_NOT_COMPILED. */
typedef struct hx_halo hx_halo;

typedef enum hx_halo_path {
    HX_HALO_PATH_AUTO = 0,    /* nvshmem: peer-to-peer where the peer's memory is addressable */
    HX_HALO_PATH_P2P = 1,     /* nvshmem: force stores into the peer's memory (nvshmem_ptr) */
    HX_HALO_PATH_NETWORK = 2, /* nvshmem: force put-with-signal through a staging buffer */
} hx_halo_path;

typedef struct hx_halo_config {
    const char *backend; /* a name above; NULL means "host" */
    hx_real real;        /* element type of the coordinate and force arrays */
    hx_memspace mem;     /* where they live: HX_MEM_HOST ("host") or HX_MEM_DEVICE (GPU ones) */
    hx_halo_path path;   /* nvshmem only */
    int bulk_copy;       /* nvshmem P2P: pack through shared memory and the bulk-copy engine */
    /* Diagnostic mode of device-side waits: give up after this many seconds, report rank, peer,
     * pulse, step, expected and observed signal, and stop the kernel. < 0: the backend's
     * default (on in debug builds), 0: off. */
    double wait_timeout;
    /* Testing: non-zero injects random delays into blocks and processes (a race shows up as a
     * changed result), seeded with this value. */
    unsigned long long stress_seed;
    /* nvshmem: a device-side wait that finds its signal not yet there polls again after a
     * __nanosleep growing from 32 ns up to this bound, so that spinning waiters leave issue
     * slots and L2 bandwidth to the kernels they wait for (several processes sharing a GPU
     * time-share its SMs). < 0: the backend's default (HALOX_NVSHMEM_BACKOFF_NS, else
     * HX_NVSHMEM_BACKOFF_DEFAULT_NS), 0: spin without sleeping. */
    int wait_backoff_ns;
} hx_halo_config;

/* host backend, double, host memory, automatic path, no bulk copy, default timeout, no stress */
void hx_halo_config_default(hx_halo_config *cfg);
/* HX_OK when `name` is a backend compiled into this build, HX_ERR_NOT_COMPILED (with what to
 * rebuild with) when known but not compiled, HX_ERR_INVALID_ARG (listing the names) otherwise. */
hx_status hx_halo_backend_available(const char *name);
/* The names of every backend halox knows, NULL-terminated. */
const char *const *hx_halo_backend_names(void);

/* Collective. Keeps pointers to plan and comm: both must outlive the exchange. The backend
 * allocates the coordinate and force arrays of every local domain (hx_halo_x / hx_halo_f) from
 * the plan's capacities. The plan must have been built (hx_plan_build) once. */
hx_status hx_halo_create(const hx_plan *plan, hx_comm *comm, const hx_halo_config *cfg,
                         hx_halo **out);
/* Collective, after every hx_plan_build: adopt the rebuilt plan (buffers regrown when the
 * capacities grew, device plan re-uploaded). Exchanges refuse a plan rebuilt since the last
 * update. Array addresses may change here and only here. */
hx_status hx_halo_update(hx_halo *h);
/* The coordinate and force arrays of local domain `local`: [hx_halo_capacity] atoms x 3 reals
 * of cfg.real in cfg.mem; local atom order [home | pulse 0 | pulse 1 | ...] of the plan. */
void *hx_halo_x(const hx_halo *h, int local);
void *hx_halo_f(const hx_halo *h, int local);
int hx_halo_capacity(const hx_halo *h);
const hx_halo_config *hx_halo_get_config(const hx_halo *h);
const char *hx_halo_backend_name(const hx_halo *h);
/* 1 when exchange_x/exchange_f only enqueue device work (no host waits), so that a step can be
 * captured in a CUDA graph: nvshmem. 0 for host and the CPU-driven baselines. */
int hx_halo_capturable(const hx_halo *h);
/* One line about how the backend runs here (transport, per-peer paths), for logs. */
const char *hx_halo_describe(const hx_halo *h);

/* Coordinates forward: the home part of every x array filled; when the stream reaches this
 * point the halo part holds the upper neighbours' atoms, shifted by the box where the plan says.
 * stream: a cudaStream_t for the GPU backends, NULL for "host" (which completes before it
 * returns). */
hx_status hx_halo_exchange_x(hx_halo *h, void *stream);
/* Forces backward, in reverse pulse order: the halo part of every f array is sent to its owners
 * and added there (into home atoms, or into halo atoms that are forwarded further). */
hx_status hx_halo_exchange_f(hx_halo *h, void *stream);
/* Forward exchange of ncomp ints per atom (global ids, types), no shift; v[i] has the local
 * layout of domain i and lives in `mem`. Synchronous. */
hx_status hx_halo_exchange_int(hx_halo *h, int *const *v, int ncomp, hx_memspace mem);

typedef struct hx_halo_stats {
    long long x_calls, f_calls;
    double x_seconds, f_seconds; /* host wall time inside exchange_x / exchange_f (for device
                                    backends: enqueueing, plus the CPU waits of the baselines) */
    long long bytes_sent;        /* payload bytes sent by this process's domains */
} hx_halo_stats;
void hx_halo_get_stats(const hx_halo *h, hx_halo_stats *s);
void hx_halo_destroy(hx_halo **h);

/* ---- migration: molecules move to the domain of their centre ----------------------------- */

/* The home atoms of one domain, whole molecules, contiguous. Plain data, owned by the caller;
 * hx_migrate grows the arrays (realloc) as molecules arrive and sets the capacities. */
typedef struct hx_home {
    int natoms, nmol;
    int *gid;       /* [natoms] global atom index */
    int *mol_start; /* [nmol+1] molecule k is local atoms [mol_start[k], mol_start[k+1]) */
    int *mol_gid;   /* [nmol] global molecule index */
    double *x;      /* [3*natoms] positions, nm */
    double *v;      /* [3*natoms] velocities, nm/ps */
    int cap_atoms, cap_mol;
} hx_home;

void hx_home_free(hx_home *h); /* frees the arrays, zeroes the struct */

/* Shift each molecule (atoms [mol_start[m], mol_start[m+1]) of x) by whole box vectors so that
 * its centre of geometry lies in [0, box). */
void hx_wrap_molecules(double *x, const int *mol_start, int nmol, const double box[3]);

/* Collective, at a repartition: put every molecule's centre of geometry back into the box
 * (shifting the whole molecule by box vectors), then move each molecule whose centre left this
 * domain's cell to the domain that owns it, one cell at a time along d_0, d_1, d_2 (the same
 * neighbour messages as the halo; no diagonal messages). A molecule whose new domain is more than
 * one cell away along a dimension is HX_ERR_PHYSICS, naming the step, the molecule's global index
 * and both domains, and is reported on every rank. homes[i] is local domain i's store. On return
 * each store lists its molecules in increasing global index (a canonical layout). */
hx_status hx_migrate(const hx_dd *dd, hx_comm *comm, hx_home *const *homes, long long step);

/* ---- program-level MPI (programs call these instead of MPI directly) --------------------- */

/* Initialise MPI when halox was built with it and the process was started by an MPI launcher
 * (mpirun/mpiexec/srun set their environment); otherwise do nothing. *parallel is set to 1 when
 * MPI is running. Safe to call when MPI is already initialised. */
hx_status hx_mpi_init(int *argc, char ***argv, int *parallel);
/* The communicator of the whole job: MPI_COMM_WORLD (duplicated) when MPI is running, else a
 * serial communicator with one domain. */
hx_status hx_comm_create_world(hx_comm **out);
/* Finalize MPI if hx_mpi_init started it. */
void hx_mpi_finalize(void);
/* Rank and size of the job before any communicator exists (0 and 1 without MPI). */
void hx_mpi_rank_size(int *rank, int *size);

#ifdef __cplusplus
}
#endif
#endif
