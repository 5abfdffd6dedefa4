/* Broadcast of a whole hx_system (read on one rank, needed on all). */
#include "halox/halo.h"
#include "halox/system.h"
#include "core/error.h"

#include <stdlib.h>
#include <string.h>

hx_status hx_system_bcast(hx_comm *c, hx_system **sys)
{
    HX_CHECK(c && sys, HX_ERR_INVALID_ARG, "hx_system_bcast: NULL argument");
    if (hx_comm_nranks(c) == 1)
        return HX_OK;
    const int root = hx_comm_rank(c) == 0;
    long long hdr[5] = {0, 0, 0, 0, 0};
    if (root) {
        HX_CHECK(*sys, HX_ERR_INVALID_ARG, "hx_system_bcast: no system on rank 0");
        hdr[0] = (*sys)->natoms;
        hdr[1] = (*sys)->nmol;
        hdr[2] = (*sys)->has_velocities;
        hdr[3] = (*sys)->type != NULL;
        hdr[4] = (*sys)->excl != NULL && (*sys)->mol_type != NULL;
    }
    HX_TRY(hx_comm_bcast_bytes(c, hdr, sizeof hdr));
    if (!root) {
        HX_CHECK(*sys == NULL, HX_ERR_INVALID_ARG, "hx_system_bcast: *sys must be NULL off rank 0");
        HX_TRY(hx_system_create((int)hdr[0], (int)hdr[1], sys));
        (*sys)->has_velocities = (int)hdr[2];
    }
    hx_system *s = *sys;
    size_t n = (size_t)s->natoms;
    HX_TRY(hx_comm_bcast_bytes(c, s->title, sizeof s->title));
    HX_TRY(hx_comm_bcast_bytes(c, s->box, sizeof s->box));
    HX_TRY(hx_comm_bcast_bytes(c, s->x, 3 * n * sizeof *s->x));
    HX_TRY(hx_comm_bcast_bytes(c, s->v, 3 * n * sizeof *s->v));
    HX_TRY(hx_comm_bcast_bytes(c, s->mol_start, ((size_t)s->nmol + 1) * sizeof *s->mol_start));
    HX_TRY(hx_comm_bcast_bytes(c, s->res_id, n * sizeof *s->res_id));
    HX_TRY(hx_comm_bcast_bytes(c, s->res_name, n * sizeof *s->res_name));
    HX_TRY(hx_comm_bcast_bytes(c, s->atom_name, n * sizeof *s->atom_name));
    if (hdr[3]) {
        if (!root) {
            s->type = malloc((n + 1) * sizeof *s->type);
            s->q = malloc((n + 1) * sizeof *s->q);
            s->m = malloc((n + 1) * sizeof *s->m);
            HX_CHECK(s->type && s->q && s->m, HX_ERR_NOMEM, "out of memory");
        }
        HX_TRY(hx_comm_bcast_bytes(c, s->type, n * sizeof *s->type));
        HX_TRY(hx_comm_bcast_bytes(c, s->q, n * sizeof *s->q));
        HX_TRY(hx_comm_bcast_bytes(c, s->m, n * sizeof *s->m));
    }
    /* exclusions and molecule types come with the force field: all or nothing */
    if (hdr[3] && hdr[4]) {
        if (!root) {
            s->excl = malloc((n + 1) * sizeof *s->excl);
            s->mol_type = malloc(((size_t)s->nmol + 1) * sizeof *s->mol_type);
            HX_CHECK(s->excl && s->mol_type, HX_ERR_NOMEM, "out of memory");
        }
        HX_TRY(hx_comm_bcast_bytes(c, s->excl, n * sizeof *s->excl));
        HX_TRY(hx_comm_bcast_bytes(c, s->mol_type, (size_t)s->nmol * sizeof *s->mol_type));
    }
    return HX_OK;
}
