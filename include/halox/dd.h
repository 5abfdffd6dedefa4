/* halox: domain decomposition geometry, zones and the halo plan.
 *
 * Conventions (GROMACS "eighth shell", see docs/design/halo-plan.md):
 *  - The box is cut into grid[0] x grid[1] x grid[2] uniform cells, one domain per cell.
 *    Domain index (= MPI rank) of cell c: (c[0]*grid[1] + c[1])*grid[2] + c[2].
 *  - Decomposed dimensions are those with grid[d] > 1, processed in the order x, y, z; the k-th
 *    decomposed dimension is "d_k". Zone shifts are written along (d_0, d_1, d_2).
 *  - Each domain receives halo atoms from its upper neighbours only: coordinates travel towards
 *    lower cell coordinates, forces travel back up.
 *  - Pulses are numbered globally: all pulses of d_0, then of d_1, then of d_2.
 *  - Local atom storage of a domain: [home | pulse 0 recv | pulse 1 recv | ...].
 */
#ifndef HALOX_DD_H
#define HALOX_DD_H

#include <stdint.h>

#include "halox/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HX_MAX_ZONES 8
#define HX_MAX_PULSES 64 /* dependency sets are 64-bit masks */

/* ---- geometry --------------------------------------------------------------------------- */

typedef struct hx_dd hx_dd; /* immutable, identical on every rank */

typedef struct hx_dd_params {
    double box[3]; /* orthorhombic box edges, nm */
    int grid[3];   /* cells per dimension, >= 1 */
    double r_comm; /* communication distance: rlist + largest molecule radius, nm */
    double cutoff; /* interaction cut-off, nm (checked against half the box) */
} hx_dd_params;

/* Build the geometry. Fails with HX_ERR_GEOMETRY and a message naming the dimension, the sizes
 * and what to change when: a cut-off is not shorter than half the box along a dimension, the
 * communication distance needs as many pulses as there are cells (np(d) >= grid[d]), or
 * more than HX_MAX_PULSES pulses would be needed. */
hx_status hx_dd_create(const hx_dd_params *p, hx_dd **out);
void hx_dd_destroy(hx_dd **dd);

/* Choose a grid for ndomains domains: among all factorisations allowed by the geometry, the one
 * with the smallest estimated halo volume per domain (ties: fewer decomposed dimensions, then
 * x before y before z). HX_ERR_GEOMETRY when no factorisation fits. */
hx_status hx_dd_choose_grid(const double box[3], double r_comm, double cutoff, int ndomains,
                            int grid_out[3]);

/* Parse "AxBxC" (or "A", "AxB"); HX_ERR_INVALID_ARG with a message when malformed. */
hx_status hx_dd_parse_grid(const char *text, int grid_out[3]);

int hx_dd_ndomains(const hx_dd *dd);
void hx_dd_grid(const hx_dd *dd, int grid[3]);
void hx_dd_box(const hx_dd *dd, double box[3]);
double hx_dd_r_comm(const hx_dd *dd);
double hx_dd_cell_size(const hx_dd *dd, int dim);
/* Number of decomposed dimensions (0..3) and their cartesian indices in processing order. */
int hx_dd_ndim(const hx_dd *dd, int dims[3]);
/* Pulses along cartesian dimension dim (0 when not decomposed) and in total. */
int hx_dd_pulses_dim(const hx_dd *dd, int dim);
int hx_dd_npulses(const hx_dd *dd);
void hx_dd_coord_of(const hx_dd *dd, int domain, int coord[3]);
int hx_dd_domain_at(const hx_dd *dd, const int coord[3]); /* coordinates taken periodically */
/* Domain owning a point (the point is wrapped into the box first). */
int hx_dd_domain_of_point(const hx_dd *dd, const double x[3]);
/* Lower and upper cell boundary of cell index c along dim. */
void hx_dd_cell_bounds(const hx_dd *dd, int dim, int c, double *lo, double *hi);

/* ---- zones (depend only on the number of decomposed dimensions) ---------------------------- */

/* Number of zones for ndim decomposed dimensions: 1, 2, 4 or 8. */
int hx_zone_count(int ndim);
/* Shift of a zone along (d_0, d_1, d_2), each 0 or 1. Zones: 0 (0,0,0) 1 (1,0,0) 2 (1,1,0)
 * 3 (0,1,0) 4 (0,1,1) 5 (0,0,1) 6 (1,0,1) 7 (1,1,1). */
void hx_zone_shift(int zone, int shift[3]);
int hx_zone_from_shift(const int shift[3]);
/* i-zones are 0..hx_izone_count(ndim)-1; i-zone iz interacts with j-zones [*j0, *j1). Every pair
 * of atoms in the system is covered by exactly one (i-zone, j-zone) pair of one domain; for the
 * pair with iz == jz == 0 take only i < j. 3D: 0:[0,8) 1:[3,6) 2:[5,6) 3:[5,7). */
int hx_izone_count(int ndim);
void hx_izone_jrange(int ndim, int izone, int *j0, int *j1);

/* ---- the plan of one domain: plain data, copyable to a device as is ----------------------- */

typedef struct hx_pulse {
    int dim;       /* cartesian dimension 0..2 */
    int dim_index; /* k of d_k */
    int pulse_in_dim;
    int send_rank; /* lower neighbour's DOMAIN index: receives our coordinates, sends forces back */
    int recv_rank; /* upper neighbour's domain index: sends us coordinates, receives our forces */
    int send_pe;   /* process (MPI rank / NVSHMEM PE) holding send_rank's domain */
    int recv_pe;   /* process holding recv_rank's domain */
    int map_offset; /* this pulse's entries are index_map[map_offset .. map_offset+send_count) */
    int send_count;
    int dep_offset; /* entries [0, dep_offset) are home atoms: packable at once */
    uint64_t deps;  /* bit k: the dependent entries reference atoms received in pulse k */
    /* Force pass: bit q set when pulse q (> this one) forwarded atoms that this pulse received,
     * so their forces must have come back through q and been added before this pulse's forces
     * are sent on. rdeps of p = { q : bit p of deps[q] }. */
    uint64_t rdeps;
    int recv_count;
    int atom_offset;      /* received atoms are local atoms [atom_offset, atom_offset+recv_count) */
    int peer_atom_offset; /* where our sent atoms land on send_rank: its atom_offset of this pulse
                           */
    /* Offset (in atoms) of this pulse's slot in per-pulse staging buffers: the prefix sum of the
     * pulse capacities below. Identical on every domain, so a sender can address the slot of a
     * pulse in its peer's buffer without asking (pulses run concurrently, so each has its own). */
    int buf_offset;
    double shift[3]; /* added to sent coordinates (box vector when we are at grid coord 0) */
    /* Entries per zone of the *sender*, in map order (zone 0 first). The receiver stores them
     * as zone (z | bit of this pulse's dimension), in the same order. */
    int send_zone_count[HX_MAX_ZONES];
    int recv_zone_count[HX_MAX_ZONES]; /* indexed by the sender's zone */
} hx_pulse;

typedef struct hx_zone_range {
    int begin, end; /* local atom indices [begin, end) */
    int zone;
} hx_zone_range;

typedef struct hx_domain_plan {
    int domain;
    int coord[3];
    int ndim;
    int dims[3];
    int n_home;
    int n_local; /* home + all halo atoms */
    int npulses;
    hx_pulse *pulses; /* [npulses] */
    int *index_map;   /* concatenated send maps, local atom indices */
    int index_map_len;
    int nranges; /* zone ranges covering [0, n_local) in order; ranges[0] is home */
    hx_zone_range *ranges;
    /* Capacities for collectively allocated buffers, identical on every domain: the largest
     * n_local and, per pulse, the largest send_count over all domains, with headroom. They only
     * grow (by a collective decision at a rebuild), so buffers sized from them are reallocated
     * rarely and in the same order everywhere. */
    int cap_local;                /* atoms of a coordinate or force array */
    int cap_pulse[HX_MAX_PULSES]; /* entries of pulse p's staging slot; multiples of 4 */
    int cap_buf;                  /* sum of cap_pulse: atoms of a staging buffer */
    long long generation;         /* incremented by every hx_plan_build */
} hx_domain_plan;

#ifdef __cplusplus
}
#endif
#endif
