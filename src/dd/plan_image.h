/* The device-ready plan: one domain's plan as ONE contiguous block that a GPU backend copies to
 * the device with one cudaMemcpy at each repartition, and that kernels read through a view of
 * structure-of-arrays pointers (one array per field, [npulses] each, then the index maps).
 *
 *   +--------------------------------------+  offset 0
 *   | hx_plan_image_header                 |  sizes, capacities, byte offset of every field
 *   +--------------------------------------+  each field 16-byte aligned
 *   | map_offset[npulses]        int32     |  start of the pulse's entries in index_map
 *   | send_count[npulses]        int32     |
 *   | dep_offset[npulses]        int32     |  entries [0, dep_offset) are home atoms
 *   | recv_count[npulses]        int32     |
 *   | atom_offset[npulses]       int32     |  where received atoms land here
 *   | peer_atom_offset[npulses]  int32     |  where our sent atoms land on the peer
 *   | buf_offset[npulses]        int32     |  slot of the pulse in staging buffers (all PEs)
 *   | cap_pulse[npulses]         int32     |  size of that slot
 *   | send_pe[npulses]           int32     |  process receiving our coordinates
 *   | recv_pe[npulses]           int32     |  process sending us coordinates
 *   | deps[npulses]              uint64    |  pulses the dependent entries reference
 *   | rdeps[npulses]             uint64    |  later pulses whose forces must be in first
 *   | shift_f32[npulses][3]      float     |  added to sent coordinates
 *   | shift_f64[npulses][3]      double    |
 *   | index_map[map_len]         int32     |  local atom index of every send entry
 *   +--------------------------------------+  bytes
 *
 * Offsets, not pointers, are stored, so the block means the same at any address: a kernel
 * receives the device address and builds its view with hx_plan_view_init. */
#ifndef HX_DD_PLAN_IMAGE_H
#define HX_DD_PLAN_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "core/hd.h"
#include "halox/dd.h"
#include "halox/plan.h"

#define HX_PLAN_IMAGE_MAGIC 0x4c505848u /* "HXPL" little-endian */
#define HX_PLAN_IMAGE_VERSION 1

enum {
    HX_PI_MAP_OFFSET,
    HX_PI_SEND_COUNT,
    HX_PI_DEP_OFFSET,
    HX_PI_RECV_COUNT,
    HX_PI_ATOM_OFFSET,
    HX_PI_PEER_ATOM_OFFSET,
    HX_PI_BUF_OFFSET,
    HX_PI_CAP_PULSE,
    HX_PI_SEND_PE,
    HX_PI_RECV_PE,
    HX_PI_DEPS,
    HX_PI_RDEPS,
    HX_PI_SHIFT_F32,
    HX_PI_SHIFT_F64,
    HX_PI_INDEX_MAP,
    HX_PI_NFIELDS
};

typedef struct hx_plan_image_header {
    uint32_t magic, version;
    int32_t domain, npulses, n_home, n_local, map_len;
    int32_t cap_local; /* atoms of x and f (all processes) */
    int32_t cap_buf;   /* atoms of a staging buffer: sum of cap_pulse (all processes) */
    int32_t pad_;
    int64_t generation;
    int64_t bytes;
    int64_t off[HX_PI_NFIELDS];
} hx_plan_image_header;

typedef struct hx_plan_view {
    int npulses, n_home, n_local, map_len, cap_local, cap_buf;
    const int32_t *map_offset, *send_count, *dep_offset, *recv_count, *atom_offset,
        *peer_atom_offset, *buf_offset, *cap_pulse, *send_pe, *recv_pe;
    const uint64_t *deps, *rdeps;
    const float *shift_f32;
    const double *shift_f64;
    const int32_t *index_map;
} hx_plan_view;

/* The view of an image at `image` (host or device address: only the header is read here, so
 * on the host pass the host copy and then rebase with hx_plan_view_rebase). */
HX_HD void hx_plan_view_init(const void *image, hx_plan_view *v)
{
    const hx_plan_image_header *h = (const hx_plan_image_header *)image;
    const char *b = (const char *)image;
    v->npulses = h->npulses;
    v->n_home = h->n_home;
    v->n_local = h->n_local;
    v->map_len = h->map_len;
    v->cap_local = h->cap_local;
    v->cap_buf = h->cap_buf;
    v->map_offset = (const int32_t *)(b + h->off[HX_PI_MAP_OFFSET]);
    v->send_count = (const int32_t *)(b + h->off[HX_PI_SEND_COUNT]);
    v->dep_offset = (const int32_t *)(b + h->off[HX_PI_DEP_OFFSET]);
    v->recv_count = (const int32_t *)(b + h->off[HX_PI_RECV_COUNT]);
    v->atom_offset = (const int32_t *)(b + h->off[HX_PI_ATOM_OFFSET]);
    v->peer_atom_offset = (const int32_t *)(b + h->off[HX_PI_PEER_ATOM_OFFSET]);
    v->buf_offset = (const int32_t *)(b + h->off[HX_PI_BUF_OFFSET]);
    v->cap_pulse = (const int32_t *)(b + h->off[HX_PI_CAP_PULSE]);
    v->send_pe = (const int32_t *)(b + h->off[HX_PI_SEND_PE]);
    v->recv_pe = (const int32_t *)(b + h->off[HX_PI_RECV_PE]);
    v->deps = (const uint64_t *)(b + h->off[HX_PI_DEPS]);
    v->rdeps = (const uint64_t *)(b + h->off[HX_PI_RDEPS]);
    v->shift_f32 = (const float *)(b + h->off[HX_PI_SHIFT_F32]);
    v->shift_f64 = (const double *)(b + h->off[HX_PI_SHIFT_F64]);
    v->index_map = (const int32_t *)(b + h->off[HX_PI_INDEX_MAP]);
}

/* The same view with every pointer moved from `from` (where the header was read) to `to` (the
 * device copy), so the host can build a kernel argument without reading device memory. */
HX_HD void hx_plan_view_rebase(hx_plan_view *v, const void *from, const void *to)
{
    const char *f = (const char *)from, *t = (const char *)to;
#define HX_PV_REBASE(field) v->field = (__typeof__(v->field))(t + ((const char *)v->field - f))
    HX_PV_REBASE(map_offset);
    HX_PV_REBASE(send_count);
    HX_PV_REBASE(dep_offset);
    HX_PV_REBASE(recv_count);
    HX_PV_REBASE(atom_offset);
    HX_PV_REBASE(peer_atom_offset);
    HX_PV_REBASE(buf_offset);
    HX_PV_REBASE(cap_pulse);
    HX_PV_REBASE(send_pe);
    HX_PV_REBASE(recv_pe);
    HX_PV_REBASE(deps);
    HX_PV_REBASE(rdeps);
    HX_PV_REBASE(shift_f32);
    HX_PV_REBASE(shift_f64);
    HX_PV_REBASE(index_map);
#undef HX_PV_REBASE
}

#ifdef __cplusplus
extern "C" {
#endif
/* The image of local domain `local`, rebuilt by every hx_plan_build (valid until the next one
 * or hx_plan_destroy). *bytes receives its size. */
const void *hx_plan_image(const hx_plan *plan, int local, size_t *bytes);
/* Lay out the image of p into *buf (grown as needed; *cap its capacity in bytes). A plan whose
 * maps live on the device only (index_map NULL) leaves the map field zero. */
hx_status hx_plan_image_write(const hx_domain_plan *p, void **buf, size_t *cap, size_t *bytes);
/* Byte offset of the index maps in the image of a plan of npulses pulses (the fields before
 * them depend on npulses only). */
size_t hx_plan_image_map_offset(int npulses);
/* A device copy of local domain `local`'s image kept by someone else (the device search step,
 * which writes the maps there): the GPU halo backends then upload only the part before the maps
 * (hx_plan_image_map_offset) into it and use it instead of a copy of their own. NULL: none. */
void hx_plan_set_device_image(hx_plan *plan, int local, void *dev, size_t cap);
void *hx_plan_device_image(const hx_plan *plan, int local, size_t *cap);
#ifdef __cplusplus
}
#endif

#endif
