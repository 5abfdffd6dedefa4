/* halox: the home atoms of a domain and their migration between domains at a repartition. */
#ifndef HALOX_MIGRATE_H
#define HALOX_MIGRATE_H

#include "halox/comm.h"
#include "halox/dd.h"
#include "halox/status.h"

#ifdef __cplusplus
extern "C" {
#endif

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

#ifdef __cplusplus
}
#endif
#endif
