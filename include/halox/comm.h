/* halox: communicators and their collectives, and program-level MPI.
 *
 * A process holds one or more "local domains": the serial communicator holds every domain of a
 * decomposition in one process (the in-process reference), the MPI communicator holds one domain
 * per rank. Calls that take per-domain data take arrays indexed by local domain. */
#ifndef HALOX_COMM_H
#define HALOX_COMM_H

#include <stddef.h>

#include "halox/status.h"

#ifdef __cplusplus
extern "C" {
#endif

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
/* hx_comm_agree(c, local_status) and hx_comm_sum_f64 in one collective: the status travels with
 * the values (the sum's own messages), so that fallible local work followed by a sum costs one
 * collective where it cost two. A failing rank passes its status (in may then be NULL); every
 * rank then returns as from hx_comm_agree and out is not written. */
hx_status hx_comm_agree_sum_f64(hx_comm *c, hx_status local_status, const double *in, double *out,
                                int n);
hx_status hx_comm_max_i64(hx_comm *c, const long long *in, long long *out, int n);
/* The same for doubles: out[k] = the largest in[.][k] of the job, exactly (through the integer
 * reduction). A NaN counts as +infinity, so that it shows up in the result instead of vanishing;
 * for a minimum pass the negated values and negate the result. Allocates 8 (nlocal + 1) n bytes
 * per call (not for per-step use). */
hx_status hx_comm_max_f64(hx_comm *c, const double *in, double *out, int n);
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
/* The MPI library's version into buf (first line of MPI_Get_library_version), "none" without
 * MPI: for the provenance of results. */
void hx_mpi_library_version(char *buf, int len);

#ifdef __cplusplus
}
#endif
#endif
