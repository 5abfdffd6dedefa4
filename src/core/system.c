#include "halox/system.h"
#include "core/error.h"

#include <stdlib.h>
#include <string.h>

hx_status hx_system_create(int natoms, int nmol, hx_system **out)
{
    HX_CHECK(out, HX_ERR_INVALID_ARG, "hx_system_create: out is NULL");
    *out = NULL;
    HX_CHECK(natoms >= 0 && nmol >= 0 && nmol <= natoms, HX_ERR_INVALID_ARG,
             "hx_system_create: invalid sizes natoms=%d nmol=%d", natoms, nmol);
    hx_system *s = calloc(1, sizeof *s);
    HX_CHECK(s, HX_ERR_NOMEM, "out of memory for a system of %d atoms", natoms);
    size_t n = (size_t)natoms;
    s->natoms = natoms;
    s->nmol = nmol;
    s->x = calloc(3 * n + 1, sizeof *s->x);
    s->v = calloc(3 * n + 1, sizeof *s->v);
    s->mol_start = calloc((size_t)nmol + 1, sizeof *s->mol_start);
    s->res_id = calloc(n + 1, sizeof *s->res_id);
    s->res_name = calloc(n + 1, sizeof *s->res_name);
    s->atom_name = calloc(n + 1, sizeof *s->atom_name);
    if (!s->x || !s->v || !s->mol_start || !s->res_id || !s->res_name || !s->atom_name) {
        hx_system_destroy(&s);
        HX_FAIL(HX_ERR_NOMEM, "out of memory for a system of %d atoms", natoms);
    }
    *out = s;
    return HX_OK;
}

static hx_status dup_array(void **dst, const void *src, size_t bytes)
{
    *dst = NULL;
    if (!src)
        return HX_OK;
    *dst = malloc(bytes ? bytes : 1);
    HX_CHECK(*dst, HX_ERR_NOMEM, "out of memory copying %zu bytes", bytes);
    memcpy(*dst, src, bytes);
    return HX_OK;
}

hx_status hx_system_copy(const hx_system *src, hx_system **out)
{
    HX_CHECK(src && out, HX_ERR_INVALID_ARG, "hx_system_copy: NULL argument");
    HX_TRY(hx_system_create(src->natoms, src->nmol, out));
    hx_system *s = *out;
    size_t n = (size_t)src->natoms;
    memcpy(s->title, src->title, sizeof s->title);
    memcpy(s->box, src->box, sizeof s->box);
    s->has_velocities = src->has_velocities;
    memcpy(s->x, src->x, 3 * n * sizeof *s->x);
    memcpy(s->v, src->v, 3 * n * sizeof *s->v);
    memcpy(s->mol_start, src->mol_start, ((size_t)src->nmol + 1) * sizeof *s->mol_start);
    memcpy(s->res_id, src->res_id, n * sizeof *s->res_id);
    memcpy(s->res_name, src->res_name, n * sizeof *s->res_name);
    memcpy(s->atom_name, src->atom_name, n * sizeof *s->atom_name);
    hx_status st = HX_OK;
    if ((st = dup_array((void **)&s->type, src->type, n * sizeof *s->type)) != HX_OK ||
        (st = dup_array((void **)&s->q, src->q, n * sizeof *s->q)) != HX_OK ||
        (st = dup_array((void **)&s->m, src->m, n * sizeof *s->m)) != HX_OK ||
        (st = dup_array((void **)&s->excl, src->excl, n * sizeof *s->excl)) != HX_OK ||
        (st = dup_array((void **)&s->mol_type, src->mol_type,
                        (size_t)src->nmol * sizeof *s->mol_type)) != HX_OK) {
        hx_system_destroy(out);
        return st;
    }
    return HX_OK;
}

void hx_system_destroy(hx_system **sys)
{
    if (!sys || !*sys)
        return;
    hx_system *s = *sys;
    free(s->x);
    free(s->v);
    free(s->mol_start);
    free(s->res_id);
    free(s->res_name);
    free(s->atom_name);
    free(s->type);
    free(s->q);
    free(s->m);
    free(s->excl);
    free(s->mol_type);
    free(s);
    *sys = NULL;
}
