/* halox: communicators, plan building and the halo exchange.
 *
 * Data path: geometry (hx_dd) -> plan (hx_plan: plain arrays per domain) -> executor (hx_halo,
 * runs the plan on host or device memory). The plan never knows which backend runs it; a backend
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
int hx_plan_nlocal(const hx_plan *plan);
const hx_domain_plan *hx_plan_domain(const hx_plan *plan, int local);
const hx_dd *hx_plan_dd(const hx_plan *plan);
void hx_plan_destroy(hx_plan **plan);

/* ---- the exchange ----------------------------------------------------------------------- */

typedef struct hx_halo hx_halo;

/* Host executor over a communicator (serial or MPI). It keeps pointers to plan and comm:
 * both must outlive it; rebuild the plan at repartition, then call hx_halo_update. */
hx_status hx_halo_create(const hx_plan *plan, hx_comm *comm, hx_halo **out);
/* Resize internal buffers after hx_plan_build. */
hx_status hx_halo_update(hx_halo *h);
/* Coordinates forward: x[i] is the local coordinate array of local domain i ([n_local][3]),
 * home part filled; on return the halo part holds the upper neighbours' atoms, shifted by the
 * box where the plan says. The host executor takes mem = HX_MEM_HOST and stream = NULL. */
hx_status hx_halo_exchange_x(hx_halo *h, void *const *x, hx_real type, hx_memspace mem,
                             void *stream);
/* Forces backward, in reverse pulse order: the halo part of f[i] is sent to its owners and
 * added there (into home atoms, or into halo atoms that are forwarded further). */
hx_status hx_halo_exchange_f(hx_halo *h, void *const *f, hx_real type, hx_memspace mem,
                             void *stream);
/* Forward exchange of ncomp ints per atom (global ids, types), no shift. */
hx_status hx_halo_exchange_int(hx_halo *h, int *const *v, int ncomp);

typedef struct hx_halo_stats {
    long long x_calls, f_calls;
    double x_seconds, f_seconds; /* wall time inside exchange_x / exchange_f */
    long long bytes_sent;
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
