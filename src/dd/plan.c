/* Building the halo plan of every local domain, pulse by pulse.
 *
 * Pulse p along decomposed dimension d_k moves atoms one cell down (to send_rank). Which atoms:
 *  - pulse 0 of d_k: every atom present so far (home atoms and the halo received along
 *    d_0..d_{k-1}: this forwarding brings edge and corner data without diagonal messages);
 *  - pulse j > 0 of d_k: only the atoms received in pulse j-1 of d_k (one cell further each time);
 * kept when the receiver needs them: the distance from the atom to the receiver's cell, measured
 * along d_k from our lower boundary and along every earlier dimension where the atom is a halo
 * atom from our upper boundary ("corner rounding": squared distances add up), is below r_comm.
 *
 * The send map is ordered by the atom's zone, zone 0 (home atoms) first. Home atoms never depend
 * on another pulse, so entries [0, dep_offset) can be packed the moment the kernel starts; the
 * rest reference atoms received in the pulses listed in the `deps` mask. The receiver stores the
 * atoms contiguously at atom_offset, split in zone ranges in the same order.
 *
 * Deciding what to forward needs the coordinates received so far, so building the plan is itself
 * a sequence of exchanges (counts, then coordinates) over the communicator. */
#include "halox/plan.h"
#include "dd/pack.h"
#include "comm/comm_impl.h"
#include "core/error.h"
#include "core/fault.h"
#include "dd/plan_counts.h"
#include "dd/plan_image.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct dplan {
    hx_domain_plan p; /* the public, plain-data view */
    int map_cap, range_cap, local_cap;
    /* build scratch: per local atom */
    double *x; /* [local_cap][3] */
    int *zone; /* zone of each local atom */
    int *from; /* pulse that delivered it, -1 for home atoms */
    int *tmp;  /* candidate list for the current pulse */
    int tmp_cap;
    void *image; /* the device-ready image (src/dd/plan_image.h) of the last build */
    size_t image_cap, image_bytes;
    void *dev_image; /* a device copy kept by a device search step (hx_plan_set_device_image) */
    size_t dev_image_cap;
} dplan;

struct hx_plan {
    const hx_dd *dd;
    hx_comm *comm;
    int nlocal;
    dplan *d;
    int zone_bits[HX_MAX_ZONES]; /* bit k set when the zone is shifted along d_k */
    long long generation;        /* builds so far */
    void *ibuf;                  /* host buffers of the integer exchange */
    size_t ibuf_cap;
    int cap_local, cap_pulse[HX_MAX_PULSES]; /* grow-only capacities, the same on every rank */
};

static hx_status grow(void **ptr, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return HX_OK;
    int ncap = *cap ? *cap : 64;
    while (ncap < need)
        ncap = ncap > (1 << 29) ? need : 2 * ncap;
    void *np = realloc(*ptr, (size_t)ncap * elem);
    HX_CHECK(np, HX_ERR_NOMEM, "out of memory growing a plan array to %d entries", ncap);
    *ptr = np;
    *cap = ncap;
    return HX_OK;
}

static hx_status grow_local(dplan *d, int need)
{
    if (need <= d->local_cap)
        return HX_OK;
    /* The three arrays share one capacity; grow() doubles each the same way. */
    int cap = d->local_cap, c2 = d->local_cap, c3 = d->local_cap;
    HX_TRY(grow((void **)&d->zone, &cap, need, sizeof *d->zone));
    HX_TRY(grow((void **)&d->from, &c2, need, sizeof *d->from));
    HX_TRY(grow((void **)&d->x, &c3, need, 3 * sizeof *d->x));
    d->local_cap = cap;
    return HX_OK;
}

hx_status hx_plan_create(const hx_dd *dd, hx_comm *comm, hx_plan **out)
{
    HX_CHECK(dd && comm && out, HX_ERR_INVALID_ARG, "hx_plan_create: NULL argument");
    *out = NULL;
    HX_CHECK(hx_comm_ndomains(comm) == hx_dd_ndomains(dd), HX_ERR_INVALID_ARG,
             "the domain grid has %d domains but the communicator has %d (ranks); give a grid "
             "whose product equals the number of ranks, or omit it to choose one automatically",
             hx_dd_ndomains(dd), hx_comm_ndomains(comm));
    hx_plan *pl = calloc(1, sizeof *pl);
    HX_CHECK(pl, HX_ERR_NOMEM, "out of memory");
    pl->dd = dd;
    pl->comm = comm;
    pl->nlocal = hx_comm_nlocal(comm);
    pl->d = calloc((size_t)pl->nlocal, sizeof *pl->d);
    if (!pl->d) {
        free(pl);
        HX_FAIL(HX_ERR_NOMEM, "out of memory");
    }
    for (int z = 0; z < HX_MAX_ZONES; z++) {
        int s[3];
        hx_zone_shift(z, s);
        pl->zone_bits[z] = s[0] | (s[1] << 1) | (s[2] << 2);
    }
    int npulses = hx_dd_npulses(dd);
    for (int i = 0; i < pl->nlocal; i++) {
        hx_domain_plan *p = &pl->d[i].p;
        p->domain = hx_comm_local_domain(comm, i);
        hx_dd_coord_of(dd, p->domain, p->coord);
        p->ndim = hx_dd_ndim(dd, p->dims);
        p->npulses = npulses;
        p->pulses = calloc((size_t)npulses + 1, sizeof *p->pulses);
        if (!p->pulses) {
            hx_plan_destroy(&pl);
            HX_FAIL(HX_ERR_NOMEM, "out of memory");
        }
        /* The static part of each pulse: dimension, neighbours, periodic shift. */
        int gp = 0;
        for (int k = 0; k < p->ndim; k++) {
            int dim = p->dims[k];
            double box[3];
            hx_dd_box(dd, box);
            for (int j = 0; j < hx_dd_pulses_dim(dd, dim); j++, gp++) {
                hx_pulse *P = &p->pulses[gp];
                P->dim = dim;
                P->dim_index = k;
                P->pulse_in_dim = j;
                int c[3] = {p->coord[0], p->coord[1], p->coord[2]};
                c[dim] = p->coord[dim] - 1;
                P->send_rank = hx_dd_domain_at(dd, c);
                c[dim] = p->coord[dim] + 1;
                P->recv_rank = hx_dd_domain_at(dd, c);
                P->send_pe = hx_comm_rank_of_domain(comm, P->send_rank);
                P->recv_pe = hx_comm_rank_of_domain(comm, P->recv_rank);
                /* The domain at grid coordinate 0 sends across the periodic boundary: its atoms
                 * appear one box length up in the receiver's frame. */
                P->shift[dim] = p->coord[dim] == 0 ? box[dim] : 0.0;
            }
        }
    }
    *out = pl;
    return HX_OK;
}

void hx_plan_destroy(hx_plan **plan)
{
    if (!plan || !*plan)
        return;
    hx_plan *pl = *plan;
    for (int i = 0; i < pl->nlocal; i++) {
        dplan *d = &pl->d[i];
        free(d->p.pulses);
        free(d->p.index_map);
        free(d->p.ranges);
        free(d->x);
        free(d->zone);
        free(d->from);
        free(d->tmp);
        free(d->image);
    }
    free(pl->d);
    free(pl->ibuf);
    free(pl);
    *plan = NULL;
}

int hx_plan_nlocal(const hx_plan *plan)
{
    return plan->nlocal;
}

const hx_domain_plan *hx_plan_domain(const hx_plan *plan, int local)
{
    return &plan->d[local].p;
}

const void *hx_plan_image(const hx_plan *plan, int local, size_t *bytes)
{
    if (bytes)
        *bytes = plan->d[local].image_bytes;
    return plan->d[local].image;
}

const hx_dd *hx_plan_dd(const hx_plan *plan)
{
    return plan->dd;
}

void hx_plan_set_device_image(hx_plan *plan, int local, void *dev, size_t cap)
{
    plan->d[local].dev_image = dev;
    plan->d[local].dev_image_cap = cap;
}

void *hx_plan_device_image(const hx_plan *plan, int local, size_t *cap)
{
    if (cap)
        *cap = plan->d[local].dev_image_cap;
    return plan->d[local].dev_image;
}

static hx_status add_range(dplan *d, int begin, int end, int zone)
{
    if (end <= begin)
        return HX_OK;
    hx_domain_plan *p = &d->p;
    /* Merge with the previous range when contiguous and of the same zone. */
    if (p->nranges > 0 && p->ranges[p->nranges - 1].zone == zone &&
        p->ranges[p->nranges - 1].end == begin) {
        p->ranges[p->nranges - 1].end = end;
        return HX_OK;
    }
    HX_TRY(grow((void **)&p->ranges, &d->range_cap, p->nranges + 1, sizeof *p->ranges));
    p->ranges[p->nranges++] = (hx_zone_range){begin, end, zone};
    return HX_OK;
}

static hx_status plan_begin(hx_plan *pl, dplan *d, int n_home, const double *x_home)
{
    hx_domain_plan *p = &d->p;
    HX_CHECK(n_home >= 0, HX_ERR_INVALID_ARG, "domain %d: negative home atom count %d", p->domain,
             n_home);
    HX_CHECK(n_home == 0 || x_home, HX_ERR_INVALID_ARG, "domain %d: NULL home coordinates",
             p->domain);
    HX_TRY(grow_local(d, n_home));
    for (int a = 0; a < n_home; a++) {
        for (int c = 0; c < 3; c++) {
            double v = x_home[3 * a + c];
            HX_CHECK(isfinite(v), HX_ERR_INVALID_ARG,
                     "domain %d: home atom %d has a non-finite coordinate (%g)", p->domain, a, v);
            d->x[3 * a + c] = v;
        }
        d->zone[a] = 0;
        d->from[a] = -1;
    }
    (void)pl;
    p->n_home = n_home;
    p->n_local = n_home;
    p->index_map_len = 0;
    p->nranges = 0;
    HX_TRY(add_range(d, 0, n_home, 0));
    if (p->nranges == 0) { /* keep ranges[0] = home even when empty */
        HX_TRY(grow((void **)&p->ranges, &d->range_cap, 1, sizeof *p->ranges));
        p->ranges[0] = (hx_zone_range){0, 0, 0};
        p->nranges = 1;
    }
    return HX_OK;
}

/* Choose and order the send map of pulse `gp`. */
static hx_status plan_select(hx_plan *pl, dplan *d, int gp)
{
    hx_domain_plan *p = &d->p;
    hx_pulse *P = &p->pulses[gp];
    const int k = P->dim_index, dim = P->dim;
    double lo, hi;
    hx_dd_cell_bounds(pl->dd, dim, p->coord[dim], &lo, &hi);
    double hi_prev[3] = {0, 0, 0};
    for (int kk = 0; kk < k; kk++) {
        double l2;
        hx_dd_cell_bounds(pl->dd, p->dims[kk], p->coord[p->dims[kk]], &l2, &hi_prev[kk]);
    }
    const double rc2 = hx_dd_r_comm(pl->dd) * hx_dd_r_comm(pl->dd);

    int c0 = 0, c1 = p->n_local;
    if (P->pulse_in_dim > 0) {
        c0 = p->pulses[gp - 1].atom_offset;
        c1 = c0 + p->pulses[gp - 1].recv_count;
    }
    HX_TRY(grow((void **)&d->tmp, &d->tmp_cap, c1 - c0, sizeof *d->tmp));
    int n = 0;
    int count[HX_MAX_ZONES] = {0};
    for (int a = c0; a < c1; a++) {
        const double *xa = &d->x[3 * a];
        double t = xa[dim] - lo;
        double d2 = t > 0.0 ? t * t : 0.0;
        int bits = pl->zone_bits[d->zone[a]];
        for (int kk = 0; kk < k; kk++) {
            if (bits & (1 << kk)) {
                double u = xa[p->dims[kk]] - hi_prev[kk];
                if (u > 0.0)
                    d2 += u * u;
            }
        }
        if (d2 < rc2) {
            d->tmp[n++] = a;
            count[d->zone[a]]++;
        }
    }
    /* Stable counting sort by zone: zone 0 (home, independent) first. */
    HX_TRY(grow((void **)&p->index_map, &d->map_cap, p->index_map_len + n, sizeof(int)));
    P->map_offset = p->index_map_len;
    P->send_count = n;
    int start[HX_MAX_ZONES], acc = 0;
    for (int z = 0; z < HX_MAX_ZONES; z++) {
        start[z] = acc;
        acc += count[z];
        P->send_zone_count[z] = count[z];
    }
    int *map = p->index_map + P->map_offset;
    uint64_t deps = 0;
    for (int e = 0; e < n; e++) {
        int a = d->tmp[e];
        map[start[d->zone[a]]++] = a;
        if (d->from[a] >= 0)
            deps |= (uint64_t)1 << d->from[a];
    }
    P->dep_offset = count[0];
    P->deps = deps;
    p->index_map_len += n;
    return HX_OK;
}

/* Record what arrives in pulse gp (counts per sender zone) and make room for it. */
static hx_status plan_set_recv(hx_plan *pl, dplan *d, int gp, const int *zone_counts)
{
    hx_domain_plan *p = &d->p;
    hx_pulse *P = &p->pulses[gp];
    int total = 0;
    for (int z = 0; z < HX_MAX_ZONES; z++) {
        HX_CHECK(zone_counts[z] >= 0, HX_ERR_INTERNAL, "negative receive count");
        P->recv_zone_count[z] = zone_counts[z];
        total += zone_counts[z];
    }
    P->recv_count = total;
    P->atom_offset = p->n_local;
    HX_TRY(grow_local(d, p->n_local + total));
    int a = p->n_local;
    for (int z = 0; z < HX_MAX_ZONES; z++) {
        if (!zone_counts[z])
            continue;
        /* The sender's zone z, one more cell up along this pulse's dimension. */
        int bits = pl->zone_bits[z] | (1 << P->dim_index);
        int s[3] = {bits & 1, (bits >> 1) & 1, (bits >> 2) & 1};
        int rz = hx_zone_from_shift(s);
        HX_TRY(add_range(d, a, a + zone_counts[z], rz));
        for (int e = 0; e < zone_counts[z]; e++, a++) {
            d->zone[a] = rz;
            d->from[a] = gp;
        }
    }
    p->n_local += total;
    return HX_OK;
}

/* Capacity with headroom for a collectively allocated buffer: unchanged while `need` fits,
 * otherwise 25 % + 64 more, rounded to a multiple of 32 atoms (16-byte alignment of float3 and
 * double3 slots). Every rank computes it from the same global maximum, so all agree. */
static int grow_capacity(int cur, long long need)
{
    if (need <= cur)
        return cur;
    long long c = need + need / 4 + 64;
    c = (c + 31) & ~31LL;
    return c > INT32_MAX / 4 ? INT32_MAX / 4 : (int)c;
}

/* After the pulses: what a device backend needs beyond the host executor's data. Each sender
 * learns where its atoms land on the receiver (one int per pulse travels back up), the reverse
 * dependency sets of the force pass are derived, and the capacities of collectively allocated
 * buffers are agreed (a max over all domains), then every domain's image is laid out. */
/* The receivers' atom offsets travel back up (one int per pulse), so that each sender knows
 * where its atoms land. local: this process's status so far; a failure (this process's, or a
 * neighbour's marker) goes on as the failure marker of every later message, so that no
 * neighbour waits for a message that will not come, and is returned. */
static hx_status exchange_peer_offsets(hx_plan *plan, hx_status local, int *dest, int *src,
                                       const void **sptr, void **rptr, size_t *sb, size_t *rb,
                                       int *scratch)
{
    const int nl = plan->nlocal;
    const int npulses = hx_dd_npulses(plan->dd);
    hx_status st = local;
    for (int gp = 0; gp < npulses; gp++) {
        for (int i = 0; i < nl; i++) {
            const hx_pulse *P = &plan->d[i].p.pulses[gp];
            /* reverse direction: to the upper neighbour that sent us atoms in this pulse */
            dest[i] = P->recv_rank;
            src[i] = P->send_rank;
            sptr[i] = &P->atom_offset;
            sb[i] = rb[i] = sizeof(int);
            rptr[i] = &scratch[i];
        }
        st = hx_comm_sendrecv_tagged(plan->comm, hx_msg_tag(HX_MSG_PLAN_OFFSET, gp), st, dest, sptr,
                                     sb, src, rptr, rb);
        for (int i = 0; i < nl && st == HX_OK; i++)
            plan->d[i].p.pulses[gp].peer_atom_offset = scratch[i];
    }
    return st;
}

/* The reverse dependency sets, the capacities from the job's maxima gmax [n_local, send count
 * per pulse] (or reduced here when NULL), the generation and every domain's image. */
static hx_status plan_close(hx_plan *plan, const long long *gmax_in)
{
    const int nl = plan->nlocal;
    const int npulses = hx_dd_npulses(plan->dd);
    hx_status st = HX_OK;
    long long *mx = malloc(((size_t)nl + 1) * (npulses + 1) * sizeof *mx);
    if (!mx)
        st = hx_error_set(HX_ERR_NOMEM, __FILE__, __LINE__, __func__, "out of memory");
    /* agree before the collective below: a rank that failed must not leave the others in it */
    if (!gmax_in)
        HX_TRY(hx_comm_agree(plan->comm, st));
    else
        HX_TRY(st);
    for (int i = 0; i < nl; i++) {
        hx_domain_plan *p = &plan->d[i].p;
        mx[(size_t)i * (npulses + 1)] = p->n_local;
        for (int gp = 0; gp < npulses; gp++) {
            hx_pulse *P = &p->pulses[gp];
            mx[(size_t)i * (npulses + 1) + 1 + gp] = P->send_count;
            P->rdeps = 0;
            for (int q = gp + 1; q < npulses; q++)
                if (p->pulses[q].deps & ((uint64_t)1 << gp))
                    P->rdeps |= (uint64_t)1 << q;
        }
    }
    long long *gmax = mx + (size_t)nl * (npulses + 1);
    if (gmax_in)
        memcpy(gmax, gmax_in, sizeof *gmax * (size_t)(npulses + 1));
    else
        st = hx_comm_max_i64(plan->comm, mx, gmax, npulses + 1);
    if (st == HX_OK && gmax_in && hx_fault_hit("plan.grow")) {
        /* tests: the counts of a device search step exceed every capacity by one, so that
         * every process (each armed it) takes the rare path: capacities grow, the halo's
         * collective update instead of its local refresh */
        gmax[0] = gmax[0] > plan->cap_local ? gmax[0] : plan->cap_local + 1;
        for (int gp = 0; gp < npulses; gp++)
            gmax[1 + gp] =
                gmax[1 + gp] > plan->cap_pulse[gp] ? gmax[1 + gp] : plan->cap_pulse[gp] + 1;
    }
    if (st == HX_OK) {
        plan->generation++;
        plan->cap_local = grow_capacity(plan->cap_local, gmax[0]);
        int off = 0;
        for (int gp = 0; gp < npulses; gp++) {
            plan->cap_pulse[gp] = grow_capacity(plan->cap_pulse[gp], gmax[1 + gp]);
            for (int i = 0; i < nl; i++)
                plan->d[i].p.pulses[gp].buf_offset = off;
            off += plan->cap_pulse[gp];
        }
        for (int i = 0; i < nl && st == HX_OK; i++) {
            dplan *d = &plan->d[i];
            d->p.cap_local = plan->cap_local;
            d->p.cap_buf = off;
            memcpy(d->p.cap_pulse, plan->cap_pulse, sizeof d->p.cap_pulse);
            d->p.generation = plan->generation;
            st = hx_plan_image_write(&d->p, &d->image, &d->image_cap, &d->image_bytes);
        }
    }
    free(mx);
    if (!gmax_in)
        HX_TRY(hx_comm_agree(plan->comm, st));
    return st;
}

/* After the pulses: what a device backend needs beyond the host executor's data. Each sender
 * learns where its atoms land on the receiver (one int per pulse travels back up), the reverse
 * dependency sets of the force pass are derived, and the capacities of collectively allocated
 * buffers are agreed (a max over all domains), then every domain's image is laid out. */
static hx_status plan_finish(hx_plan *plan, int *dest, int *src, const void **sptr, void **rptr,
                             size_t *sb, size_t *rb, int *scratch)
{
    HX_TRY(exchange_peer_offsets(plan, HX_OK, dest, src, sptr, rptr, sb, rb, scratch));
    return plan_close(plan, NULL);
}

hx_status hx_plan_set_counts(hx_plan *plan, hx_status local, const hx_plan_domain_counts *c,
                             const long long *gmax)
{
    HX_CHECK(plan, HX_ERR_INVALID_ARG, "hx_plan_set_counts: NULL plan");
    const int nl = plan->nlocal;
    const int npulses = hx_dd_npulses(plan->dd);
    int *dest = malloc((size_t)nl * sizeof *dest), *src = malloc((size_t)nl * sizeof *src);
    const void **sptr = malloc((size_t)nl * sizeof *sptr);
    void **rptr = malloc((size_t)nl * sizeof *rptr);
    size_t *sb = malloc((size_t)nl * sizeof *sb), *rb = malloc((size_t)nl * sizeof *rb);
    int *scratch = malloc((size_t)nl * sizeof *scratch);
    hx_status st = local;
    if (st == HX_OK && !c)
        st = hx_error_set(HX_ERR_INVALID_ARG, __FILE__, __LINE__, __func__,
                          "hx_plan_set_counts: NULL counts");
    if (st == HX_OK && (!dest || !src || !sptr || !rptr || !sb || !rb || !scratch))
        st = hx_error_set(HX_ERR_NOMEM, __FILE__, __LINE__, __func__, "out of memory");
    for (int i = 0; i < nl && st == HX_OK; i++) {
        dplan *d = &plan->d[i];
        hx_domain_plan *p = &d->p;
        if (c[i].n_home < 0 ||
            (npulses > 0 && (!c[i].send_zone_count || !c[i].recv_zone_count || !c[i].deps))) {
            st = hx_error_set(HX_ERR_INVALID_ARG, __FILE__, __LINE__, __func__,
                              "hx_plan_set_counts: domain %d: bad counts", p->domain);
            break;
        }
        p->n_home = p->n_local = c[i].n_home;
        p->index_map_len = 0;
        p->nranges = 0;
        st = add_range(d, 0, p->n_home, 0);
        if (st == HX_OK && p->nranges == 0) {
            st = grow((void **)&p->ranges, &d->range_cap, 1, sizeof *p->ranges);
            if (st == HX_OK) {
                p->ranges[0] = (hx_zone_range){0, 0, 0};
                p->nranges = 1;
            }
        }
        /* the maps are on the device */
        free(p->index_map);
        p->index_map = NULL;
        d->map_cap = 0;
        for (int gp = 0; gp < npulses && st == HX_OK; gp++) {
            hx_pulse *P = &p->pulses[gp];
            int n = 0;
            for (int z = 0; z < HX_MAX_ZONES; z++) {
                P->send_zone_count[z] = c[i].send_zone_count[gp][z];
                n += P->send_zone_count[z];
            }
            P->map_offset = p->index_map_len;
            P->send_count = n;
            P->dep_offset = P->send_zone_count[0];
            P->deps = c[i].deps[gp];
            p->index_map_len += n;
            /* the receive side as plan_set_recv records it, without the per-atom scratch */
            int total = 0;
            for (int z = 0; z < HX_MAX_ZONES; z++) {
                P->recv_zone_count[z] = c[i].recv_zone_count[gp][z];
                total += P->recv_zone_count[z];
            }
            P->recv_count = total;
            P->atom_offset = p->n_local;
            int a = p->n_local;
            for (int z = 0; z < HX_MAX_ZONES && st == HX_OK; z++) {
                const int cz = P->recv_zone_count[z];
                if (!cz)
                    continue;
                const int bits = plan->zone_bits[z] | (1 << P->dim_index);
                const int s[3] = {bits & 1, (bits >> 1) & 1, (bits >> 2) & 1};
                st = add_range(d, a, a + cz, hx_zone_from_shift(s));
                a += cz;
            }
            p->n_local += total;
        }
    }
    /* no agreement before the messages: a rank that failed sends their failure markers, so
     * that its neighbours return at once (HX_ERR_REMOTE), and the caller agrees right after
     * this call, which every process reaches (the device search step: one collective fewer) */
    st = exchange_peer_offsets(plan, st, dest, src, sptr, rptr, sb, rb, scratch);
    free(dest);
    free(src);
    free(sptr);
    free(rptr);
    free(sb);
    free(rb);
    free(scratch);
    HX_TRY(st);
    return plan_close(plan, gmax);
}

hx_status hx_plan_build(hx_plan *plan, const int *n_home, const double *const *x_home)
{
    HX_CHECK(plan && n_home && x_home, HX_ERR_INVALID_ARG, "hx_plan_build: NULL argument");
    const int nl = plan->nlocal;
    hx_status st = HX_OK;
    for (int i = 0; i < nl && st == HX_OK; i++)
        st = plan_begin(plan, &plan->d[i], n_home[i], x_home[i]);
    HX_TRY(hx_comm_agree(plan->comm, st));

    int *dest = malloc((size_t)nl * sizeof *dest);
    int *src = malloc((size_t)nl * sizeof *src);
    const void **sptr = malloc((size_t)nl * sizeof *sptr);
    void **rptr = malloc((size_t)nl * sizeof *rptr);
    size_t *sb = malloc((size_t)nl * sizeof *sb);
    size_t *rb = malloc((size_t)nl * sizeof *rb);
    int *counts = malloc((size_t)nl * HX_MAX_ZONES * sizeof *counts);
    double **sbuf = calloc((size_t)nl, sizeof *sbuf);
    if (!dest || !src || !sptr || !rptr || !sb || !rb || !counts || !sbuf)
        HX_FAIL_GOTO(st, HX_ERR_NOMEM, done, "out of memory");

    const int npulses = hx_dd_npulses(plan->dd);
    for (int gp = 0; gp < npulses; gp++) {
        for (int i = 0; i < nl && st == HX_OK; i++)
            st = plan_select(plan, &plan->d[i], gp);
        HX_TRY_GOTO(st, hx_comm_agree(plan->comm, st), done);
        /* 1. zone counts travel down */
        for (int i = 0; i < nl; i++) {
            const hx_pulse *P = &plan->d[i].p.pulses[gp];
            dest[i] = P->send_rank;
            src[i] = P->recv_rank;
            sptr[i] = P->send_zone_count;
            sb[i] = rb[i] = HX_MAX_ZONES * sizeof(int);
            rptr[i] = counts + (size_t)i * HX_MAX_ZONES;
        }
        HX_TRY_GOTO(st,
                    hx_comm_sendrecv_tagged(plan->comm, hx_msg_tag(HX_MSG_PLAN_COUNT, gp), HX_OK,
                                            dest, sptr, sb, src, rptr, rb),
                    done);
        for (int i = 0; i < nl && st == HX_OK; i++)
            st = plan_set_recv(plan, &plan->d[i], gp, counts + (size_t)i * HX_MAX_ZONES);
        HX_TRY_GOTO(st, hx_comm_agree(plan->comm, st), done);
        /* 2. the selected coordinates travel down, shifted, into the receivers' scratch */
        for (int i = 0; i < nl; i++) {
            dplan *d = &plan->d[i];
            const hx_pulse *P = &d->p.pulses[gp];
            free(sbuf[i]);
            sbuf[i] = malloc(3 * sizeof(double) * (size_t)P->send_count + 8);
            if (!sbuf[i])
                HX_FAIL_GOTO(st, HX_ERR_NOMEM, done, "out of memory");
            const int *map = d->p.index_map + P->map_offset;
            for (int e = 0; e < P->send_count; e++)
                hx_pack_x_elem_f64(e, map, d->x, P->shift[0], P->shift[1], P->shift[2], sbuf[i]);
            sptr[i] = sbuf[i];
            sb[i] = 3 * sizeof(double) * (size_t)P->send_count;
            rptr[i] = d->x + 3 * (size_t)P->atom_offset;
            rb[i] = 3 * sizeof(double) * (size_t)P->recv_count;
        }
        HX_TRY_GOTO(st,
                    hx_comm_sendrecv_tagged(plan->comm, hx_msg_tag(HX_MSG_PLAN_X, gp), HX_OK, dest,
                                            sptr, sb, src, rptr, rb),
                    done);
    }
    HX_TRY_GOTO(st, plan_finish(plan, dest, src, sptr, rptr, sb, rb, counts), done);
done:
    if (sbuf)
        for (int i = 0; i < nl; i++)
            free(sbuf[i]);
    free(sbuf);
    free(dest);
    free(src);
    free(sptr);
    free(rptr);
    free(sb);
    free(rb);
    free(counts);
    return st;
}

/* Integers forward, pulse by pulse over the communicator: used at repartition (global atom ids
 * of the halo), the same for every halo backend. */
hx_status hx_plan_exchange_int(hx_plan *plan, int *const *v, int ncomp)
{
    HX_CHECK(plan && v && ncomp >= 1, HX_ERR_INVALID_ARG,
             "hx_plan_exchange_int: bad argument (ncomp %d must be >= 1)", ncomp);
    const int nl = plan->nlocal;
    const hx_domain_plan *p0 = hx_plan_domain(plan, 0);
    size_t need = 0;
    for (int i = 0; i < nl; i++) {
        const hx_domain_plan *p = hx_plan_domain(plan, i);
        for (int q = 0; q < p->npulses; q++)
            if ((size_t)p->pulses[q].send_count > need)
                need = (size_t)p->pulses[q].send_count;
    }
    /* per domain: packed ints, then the message descriptors */
    size_t per = need * (size_t)ncomp * sizeof(int) + 16;
    size_t bytes = per * (size_t)nl +
                   (size_t)nl * (2 * sizeof(int) + 2 * sizeof(void *) + 2 * sizeof(size_t)) + 16;
    hx_status st = HX_OK;
    if (bytes > plan->ibuf_cap) {
        void *b = realloc(plan->ibuf, bytes);
        if (b) {
            plan->ibuf = b;
            plan->ibuf_cap = bytes;
        } else {
            st = hx_error_set(HX_ERR_NOMEM, __FILE__, __LINE__, __func__,
                              "out of memory for %zu bytes of halo buffers", bytes);
        }
    }
    HX_TRY(hx_comm_agree(plan->comm, st));
    /* descriptors first (pointers and sizes stay aligned), then the packed ints */
    const void **sptr = (const void **)plan->ibuf;
    void **rptr = (void **)(sptr + nl);
    size_t *sb = (size_t *)(rptr + nl);
    size_t *rb = sb + nl;
    int *dest = (int *)(rb + nl);
    int *src = dest + nl;
    char *base =
        (char *)plan->ibuf + (((char *)(src + nl) - (char *)plan->ibuf + 15) & ~(size_t)15);
    for (int q = 0; q < p0->npulses; q++) {
        for (int i = 0; i < nl; i++) {
            const hx_domain_plan *p = hx_plan_domain(plan, i);
            const hx_pulse *P = &p->pulses[q];
            const int *map = p->index_map + P->map_offset;
            int *b = (int *)(base + per * (size_t)i);
            for (int e = 0; e < P->send_count; e++)
                for (int c = 0; c < ncomp; c++)
                    b[(size_t)ncomp * e + c] = v[i][(size_t)ncomp * map[e] + c];
            dest[i] = P->send_rank;
            src[i] = P->recv_rank;
            sptr[i] = b;
            sb[i] = (size_t)ncomp * sizeof(int) * (size_t)P->send_count;
            rptr[i] = v[i] + (size_t)ncomp * P->atom_offset;
            rb[i] = (size_t)ncomp * sizeof(int) * (size_t)P->recv_count;
        }
        HX_TRY(hx_comm_sendrecv_tagged(plan->comm, hx_msg_tag(HX_MSG_PLAN_INT, q), HX_OK, dest,
                                       sptr, sb, src, rptr, rb));
    }
    return HX_OK;
}
