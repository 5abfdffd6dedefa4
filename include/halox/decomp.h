/* halox: the decomposition layer of a run. Which domain owns which molecules, the halo plan and
 * the local atom sets, rebuilt at every repartition: one module used by the MD engine, by
 * `halox plan` (so that it predicts exactly what `halox md` will do) and by programs of their
 * own.
 *
 *   global system --(create: r_comm, grid, molecules to the domain of their centre)--> homes
 *   homes --(repartition: migrate, rebuild the plan, local topology)--> local sets
 *
 * Molecules are assigned whole by their centre of geometry, computed everywhere by
 * hx_molecule_centre (one rounding: a molecule lands on the same domain whether it was
 * distributed at the start, after a restart or by migration). */
#ifndef HALOX_DECOMP_H
#define HALOX_DECOMP_H

#include "halox/dd.h"
#include "halox/comm.h"
#include "halox/migrate.h"
#include "halox/plan.h"
#include "halox/status.h"
#include "halox/system.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Centre of geometry of atoms [a0, a1) of x ([n][3]): coordinates summed, then divided once. */
void hx_molecule_centre(const double *x, int a0, int a1, double c[3]);
/* Largest distance of an atom from its molecule's centre (molecules must be whole), nm. */
double hx_system_molecule_radius(const hx_system *sys);
/* Make every molecule whole (atoms placed at the minimum image of the molecule's first atom). */
void hx_system_make_whole(hx_system *sys);

typedef struct hx_decomp_params {
    double rc;    /* interaction cut-off, nm */
    double rlist; /* pair-list radius, nm (>= rc) */
    int grid[3];  /* cells per dimension; {0,0,0}: chosen for the communicator's domains */
} hx_decomp_params;

/* One local domain after a repartition: its molecules (home store, authoritative for
 * positions and velocities on the host) and its local atom set [home | halo]. */
typedef struct hx_decomp_local {
    hx_home *home;
    int n_home, n_local;
    const int *gid;  /* [n_local] global atom index */
    const int *mol;  /* [n_local] global molecule index */
    const int *type; /* [n_local] force-field type (from the global system) */
    const double *q; /* [n_local] charge */
    /* [n_local] exclusions within the molecule (hx_system.excl; all ones when the system has
     * none) and the atom's position in its molecule: see hx_local_set */
    const uint32_t *excl;
    const unsigned char *mol_pos;
    const double *invmass; /* [n_home] */
    const hx_domain_plan *plan;
    int ndim;
    int periodic[3]; /* dimensions that are not decomposed are periodic with the box */
    double box[3];
} hx_decomp_local;

/* Statistics over every domain of the job (collective to compute). */
typedef struct hx_decomp_stats {
    int grid[3], pulses[3];
    double r_comm, molecule_radius, cell[3];
    long long home_min, home_max, halo_min, halo_max, halo_total;
} hx_decomp_stats;

typedef struct hx_decomp hx_decomp;

/* Collective. sys: the global system (the same on every rank; its force field applied when
 * the local topology is wanted: type, q, m may be NULL otherwise), molecules whole; it must
 * outlive the decomposition. r_comm = rlist + the largest molecule radius; the grid is chosen
 * (or checked) for hx_comm_ndomains(comm); molecules go to the domain of their centre (put in
 * the box) and the first plan is built. */
hx_status hx_decomp_create(const hx_system *sys, const hx_decomp_params *p, hx_comm *comm,
                           hx_decomp **out);
void hx_decomp_destroy(hx_decomp **d);
/* Collective, at a search step: molecules whose centre left their domain migrate (HX_ERR_PHYSICS
 * naming the step and molecule for one that moved more than a cell), the plan is rebuilt. */
hx_status hx_decomp_repartition(hx_decomp *d, long long step);
/* Collective, after create or repartition: global ids of the halo atoms (through the plan's
 * integer exchange) and the local topology of every local domain. */
hx_status hx_decomp_update_local(hx_decomp *d);

const hx_dd *hx_decomp_dd(const hx_decomp *d);
hx_plan *hx_decomp_plan(const hx_decomp *d);
hx_comm *hx_decomp_comm(const hx_decomp *d);
int hx_decomp_nlocal(const hx_decomp *d);
const hx_decomp_local *hx_decomp_get_local(const hx_decomp *d, int local);
double hx_decomp_r_comm(const hx_decomp *d);
double hx_decomp_molecule_radius(const hx_decomp *d);
/* Collective. */
hx_status hx_decomp_get_stats(hx_decomp *d, hx_decomp_stats *s);

#ifdef __cplusplus
}
#endif
#endif
