/* Laying out a domain plan as the device-ready image of src/dd/plan_image.h. */
#include "dd/plan_image.h"
#include "core/error.h"

#include <stdlib.h>
#include <string.h>

static size_t align16(size_t n)
{
    return (n + 15) & ~(size_t)15;
}

size_t hx_plan_image_map_offset(int npulses)
{
    /* the fields before the maps have npulses entries each: the maps' offset depends on npulses
     * alone (a device search step writes maps there before the host knows their length) */
    size_t off = align16(sizeof(hx_plan_image_header));
    for (int f = 0; f < HX_PI_INDEX_MAP; f++) {
        const size_t elem = f == HX_PI_DEPS || f == HX_PI_RDEPS ? sizeof(uint64_t)
                            : f == HX_PI_SHIFT_F64              ? sizeof(double)
                            : f == HX_PI_SHIFT_F32              ? sizeof(float)
                                                                : sizeof(int32_t);
        const size_t count =
            f == HX_PI_SHIFT_F32 || f == HX_PI_SHIFT_F64 ? 3 * (size_t)npulses : (size_t)npulses;
        off = align16(off + elem * count);
    }
    return off;
}

hx_status hx_plan_image_write(const hx_domain_plan *p, void **buf, size_t *cap, size_t *bytes)
{
    HX_CHECK(p && buf && cap && bytes, HX_ERR_INVALID_ARG, "hx_plan_image_write: NULL argument");
    const size_t np = (size_t)p->npulses;
    /* element size and count of every field, in the order of the enum */
    size_t elem[HX_PI_NFIELDS], count[HX_PI_NFIELDS];
    for (int f = 0; f < HX_PI_NFIELDS; f++) {
        elem[f] = sizeof(int32_t);
        count[f] = np;
    }
    elem[HX_PI_DEPS] = elem[HX_PI_RDEPS] = sizeof(uint64_t);
    elem[HX_PI_SHIFT_F32] = sizeof(float);
    elem[HX_PI_SHIFT_F64] = sizeof(double);
    count[HX_PI_SHIFT_F32] = count[HX_PI_SHIFT_F64] = 3 * np;
    count[HX_PI_INDEX_MAP] = (size_t)p->index_map_len;

    hx_plan_image_header h;
    memset(&h, 0, sizeof h);
    size_t off = align16(sizeof h);
    for (int f = 0; f < HX_PI_NFIELDS; f++) {
        h.off[f] = (int64_t)off;
        off = align16(off + elem[f] * count[f]);
    }
    if (off > *cap) {
        void *nb = realloc(*buf, off);
        HX_CHECK(nb, HX_ERR_NOMEM, "out of memory for a plan image of %zu bytes", off);
        *buf = nb;
        *cap = off;
    }
    char *b = *buf;
    memset(b, 0, off); /* padding is defined: images compare with memcmp */
    h.magic = HX_PLAN_IMAGE_MAGIC;
    h.version = HX_PLAN_IMAGE_VERSION;
    h.domain = p->domain;
    h.npulses = p->npulses;
    h.n_home = p->n_home;
    h.n_local = p->n_local;
    h.map_len = p->index_map_len;
    h.cap_local = p->cap_local;
    h.cap_buf = p->cap_buf;
    h.generation = p->generation;
    h.bytes = (int64_t)off;
    memcpy(b, &h, sizeof h);

    int32_t *i32[HX_PI_NFIELDS];
    for (int f = 0; f < HX_PI_NFIELDS; f++)
        i32[f] = (int32_t *)(b + h.off[f]);
    uint64_t *deps = (uint64_t *)(b + h.off[HX_PI_DEPS]);
    uint64_t *rdeps = (uint64_t *)(b + h.off[HX_PI_RDEPS]);
    float *sf = (float *)(b + h.off[HX_PI_SHIFT_F32]);
    double *sd = (double *)(b + h.off[HX_PI_SHIFT_F64]);
    for (size_t q = 0; q < np; q++) {
        const hx_pulse *P = &p->pulses[q];
        i32[HX_PI_MAP_OFFSET][q] = P->map_offset;
        i32[HX_PI_SEND_COUNT][q] = P->send_count;
        i32[HX_PI_DEP_OFFSET][q] = P->dep_offset;
        i32[HX_PI_RECV_COUNT][q] = P->recv_count;
        i32[HX_PI_ATOM_OFFSET][q] = P->atom_offset;
        i32[HX_PI_PEER_ATOM_OFFSET][q] = P->peer_atom_offset;
        i32[HX_PI_BUF_OFFSET][q] = P->buf_offset;
        i32[HX_PI_CAP_PULSE][q] = p->cap_pulse[q];
        i32[HX_PI_SEND_PE][q] = P->send_pe;
        i32[HX_PI_RECV_PE][q] = P->recv_pe;
        deps[q] = P->deps;
        rdeps[q] = P->rdeps;
        for (int c = 0; c < 3; c++) {
            sf[3 * q + c] = (float)P->shift[c];
            sd[3 * q + c] = P->shift[c];
        }
    }
    /* without host maps (a device search step keeps them on the device) the field stays zero */
    if (p->index_map_len > 0 && p->index_map)
        memcpy(b + h.off[HX_PI_INDEX_MAP], p->index_map,
               (size_t)p->index_map_len * sizeof(int32_t));
    *bytes = off;
    return HX_OK;
}
