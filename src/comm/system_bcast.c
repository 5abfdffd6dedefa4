/* Broadcast of a whole hx_system (read on one rank, needed on all).
 *
 * Every step that can fail on one rank only (a missing system on rank 0, an allocation on a
 * receiving rank) is followed by an agreement before the next broadcast, so that all ranks
 * return the error together instead of some waiting in a broadcast the others left. */
#include "halox/comm.h"
#include "halox/system.h"
#include "core/error.h"
#include "core/fault.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Receiving side: the system of the header, with per-atom parameters when rank 0 has them. */
static hx_status receive_alloc(const long long hdr[5], hx_system **sys)
{
    HX_CHECK(hdr[0] >= 0 && hdr[0] <= INT32_MAX && hdr[1] >= 0 && hdr[1] <= hdr[0], HX_ERR_INTERNAL,
             "broadcast system header: %lld atoms, %lld molecules", hdr[0], hdr[1]);
    HX_CHECK(!hx_fault_hit("system_bcast"), HX_ERR_NOMEM, "out of memory for the system copy");
    HX_TRY(hx_system_create((int)hdr[0], (int)hdr[1], sys));
    hx_system *s = *sys;
    s->has_velocities = (int)hdr[2];
    if (hdr[3]) {
        size_t n = (size_t)s->natoms;
        s->type = malloc((n + 1) * sizeof *s->type);
        s->q = malloc((n + 1) * sizeof *s->q);
        s->m = malloc((n + 1) * sizeof *s->m);
        HX_CHECK(s->type && s->q && s->m, HX_ERR_NOMEM, "out of memory for the system copy");
    }
    if (hdr[3] && hdr[4]) {
        s->excl = malloc(((size_t)s->natoms + 1) * sizeof *s->excl);
        s->mol_type = malloc(((size_t)s->nmol + 1) * sizeof *s->mol_type);
        HX_CHECK(s->excl && s->mol_type, HX_ERR_NOMEM, "out of memory for the system copy");
    }
    return HX_OK;
}

hx_status hx_system_bcast(hx_comm *c, hx_system **sys)
{
    HX_CHECK(c, HX_ERR_INVALID_ARG, "hx_system_bcast: NULL communicator");
    const int root = hx_comm_rank(c) == 0;
    hx_status st = HX_OK;
    if (!sys)
        st = hx_error_set(HX_ERR_INVALID_ARG, __FILE__, __LINE__, __func__,
                          "hx_system_bcast: sys is NULL");
    else if (root && !*sys)
        st = hx_error_set(HX_ERR_INVALID_ARG, __FILE__, __LINE__, __func__,
                          "hx_system_bcast: no system on rank 0");
    else if (!root && *sys)
        st = hx_error_set(HX_ERR_INVALID_ARG, __FILE__, __LINE__, __func__,
                          "hx_system_bcast: *sys must be NULL off rank 0");
    if (hx_comm_nranks(c) == 1)
        return st;
    HX_TRY(hx_comm_agree(c, st));
    long long hdr[5] = {0, 0, 0, 0, 0};
    if (root) {
        hdr[0] = (*sys)->natoms;
        hdr[1] = (*sys)->nmol;
        hdr[2] = (*sys)->has_velocities;
        hdr[3] = (*sys)->type != NULL;
        hdr[4] = (*sys)->excl != NULL && (*sys)->mol_type != NULL;
    }
    HX_TRY(hx_comm_bcast_bytes(c, hdr, sizeof hdr));
    if (!root)
        st = receive_alloc(hdr, sys);
    HX_TRY_GOTO(st, hx_comm_agree(c, st), fail);
    hx_system *s = *sys;
    size_t n = (size_t)s->natoms;
    HX_TRY_GOTO(st, hx_comm_bcast_bytes(c, s->title, sizeof s->title), fail);
    HX_TRY_GOTO(st, hx_comm_bcast_bytes(c, s->box, sizeof s->box), fail);
    HX_TRY_GOTO(st, hx_comm_bcast_bytes(c, s->x, 3 * n * sizeof *s->x), fail);
    HX_TRY_GOTO(st, hx_comm_bcast_bytes(c, s->v, 3 * n * sizeof *s->v), fail);
    HX_TRY_GOTO(st,
                hx_comm_bcast_bytes(c, s->mol_start, ((size_t)s->nmol + 1) * sizeof *s->mol_start),
                fail);
    HX_TRY_GOTO(st, hx_comm_bcast_bytes(c, s->res_id, n * sizeof *s->res_id), fail);
    HX_TRY_GOTO(st, hx_comm_bcast_bytes(c, s->res_name, n * sizeof *s->res_name), fail);
    HX_TRY_GOTO(st, hx_comm_bcast_bytes(c, s->atom_name, n * sizeof *s->atom_name), fail);
    if (hdr[3]) {
        HX_TRY_GOTO(st, hx_comm_bcast_bytes(c, s->type, n * sizeof *s->type), fail);
        HX_TRY_GOTO(st, hx_comm_bcast_bytes(c, s->q, n * sizeof *s->q), fail);
        HX_TRY_GOTO(st, hx_comm_bcast_bytes(c, s->m, n * sizeof *s->m), fail);
    }
    /* exclusions and molecule types come with the force field: all or nothing */
    if (hdr[3] && hdr[4]) {
        HX_TRY_GOTO(st, hx_comm_bcast_bytes(c, s->excl, n * sizeof *s->excl), fail);
        HX_TRY_GOTO(st, hx_comm_bcast_bytes(c, s->mol_type, (size_t)s->nmol * sizeof *s->mol_type),
                    fail);
    }
    return HX_OK;
fail:
    if (!root)
        hx_system_destroy(sys); /* no half-received system on any rank */
    return st;
}
