/* halox: the halo plan of a decomposition: per local domain, which atoms each pulse sends and
 * receives (include/halox/dd.h, hx_domain_plan), built collectively from the home atoms.
 *
 * Data path: geometry (hx_dd) -> plan (hx_plan: plain arrays per domain, and a device-ready
 * image of them) -> backend (hx_halo, include/halox/halo.h) -> engine. The plan never knows
 * which backend runs it; a backend never recomputes the plan. */
#ifndef HALOX_PLAN_H
#define HALOX_PLAN_H

#include "halox/comm.h"
#include "halox/dd.h"
#include "halox/status.h"

#ifdef __cplusplus
extern "C" {
#endif

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

#ifdef __cplusplus
}
#endif
#endif
