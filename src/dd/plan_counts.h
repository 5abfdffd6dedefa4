/* A plan built elsewhere from its counts: the device search step (src/md/gpu/decomp_gpu.h) builds
 * the index maps on the device and hands the host the counts of every pulse only; this turns
 * them into the host's hx_domain_plan (offsets, zone ranges, reverse dependencies, where our
 * atoms land on the receiver, capacities, generation, the image's fields before the maps), so
 * that everything reading the plan's numbers (halo backends, statistics) works unchanged. The
 * plan's index_map is NULL then: the maps live in the device image only
 * (hx_plan_set_device_image). */
#ifndef HX_DD_PLAN_COUNTS_H
#define HX_DD_PLAN_COUNTS_H

#include <stdint.h>

#include "halox/dd.h"
#include "halox/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hx_plan_domain_counts {
    int n_home;
    const int (*send_zone_count)[HX_MAX_ZONES]; /* [npulses]: entries by the sender's zone */
    const int (*recv_zone_count)[HX_MAX_ZONES]; /* [npulses]: received, by the sender's zone */
    const uint64_t *deps;                       /* [npulses] */
} hx_plan_domain_counts;

/* Collective (the receivers' atom offsets travel back to the senders, one int per pulse).
 * c: [nlocal]. gmax: the job's maxima [largest n_local, largest send count of each pulse] when
 * the caller reduced them already (NULL: reduced here). Capacities grow as hx_plan_build grows
 * them; the generation advances.
 * local: the caller's status so far. A process whose counts could not be had passes its error
 * (c may then be NULL): it sends the failure marker in place of each of its messages, so its
 * neighbours return HX_ERR_REMOTE at once, and returns its error; the others may return HX_OK.
 * The caller must therefore agree after this call (every process reaches that agreement): it
 * needs no agreement between getting the counts and this call, and this call has none of its
 * own (one collective fewer per device search step than an agreement before the messages). */
hx_status hx_plan_set_counts(hx_plan *plan, hx_status local, const hx_plan_domain_counts *c,
                             const long long *gmax);

#ifdef __cplusplus
}
#endif
#endif
