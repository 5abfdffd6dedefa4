/* Host halo executor: runs a plan over a transport (serial or MPI), pulse by pulse, the way
 * GROMACS's CPU-driven exchange does: for each pulse pack, exchange, unpack.
 *
 * Coordinates go forward in pulse order: a pulse may forward atoms received by an earlier one,
 * so pulse p must have arrived before pulse p+1 is packed. Forces go back in reverse order: the
 * forces of atoms that were forwarded must have been accumulated from later pulses before the
 * earlier pulse sends them on. The split-phase begin/end form is not offered here because every
 * pulse depends on the previous one on the host; the GPU backends overlap instead. */
#include "halox/halo.h"
#include "comm/pack.h"
#include "core/error.h"
#include "core/timer.h"

#include <stdlib.h>
#include <string.h>

struct hx_halo {
    const hx_plan *plan;
    hx_comm *comm;
    int nlocal;
    void **buf;  /* [nlocal] pack/unpack buffers */
    size_t *cap; /* bytes */
    int *dest, *src;
    const void **sptr;
    void **rptr;
    size_t *sb, *rb;
    hx_halo_stats stats;
};

void hx_halo_destroy(hx_halo **h)
{
    if (!h || !*h)
        return;
    hx_halo *x = *h;
    if (x->buf)
        for (int i = 0; i < x->nlocal; i++)
            free(x->buf[i]);
    free(x->buf);
    free(x->cap);
    free(x->dest);
    free(x->src);
    free(x->sptr);
    free(x->rptr);
    free(x->sb);
    free(x->rb);
    free(x);
    *h = NULL;
}

hx_status hx_halo_create(const hx_plan *plan, hx_comm *comm, hx_halo **out)
{
    HX_CHECK(plan && comm && out, HX_ERR_INVALID_ARG, "hx_halo_create: NULL argument");
    *out = NULL;
    HX_CHECK(hx_plan_nlocal(plan) == hx_comm_nlocal(comm), HX_ERR_INVALID_ARG,
             "hx_halo_create: the plan was built for another communicator");
    hx_halo *h = calloc(1, sizeof *h);
    HX_CHECK(h, HX_ERR_NOMEM, "out of memory");
    h->plan = plan;
    h->comm = comm;
    h->nlocal = hx_plan_nlocal(plan);
    size_t n = (size_t)h->nlocal;
    h->buf = calloc(n, sizeof *h->buf);
    h->cap = calloc(n, sizeof *h->cap);
    h->dest = calloc(n, sizeof *h->dest);
    h->src = calloc(n, sizeof *h->src);
    h->sptr = calloc(n, sizeof *h->sptr);
    h->rptr = calloc(n, sizeof *h->rptr);
    h->sb = calloc(n, sizeof *h->sb);
    h->rb = calloc(n, sizeof *h->rb);
    if (!h->buf || !h->cap || !h->dest || !h->src || !h->sptr || !h->rptr || !h->sb || !h->rb) {
        hx_halo_destroy(&h);
        HX_FAIL(HX_ERR_NOMEM, "out of memory");
    }
    hx_status st = hx_halo_update(h);
    if (st != HX_OK) {
        hx_halo_destroy(&h);
        return st;
    }
    *out = h;
    return HX_OK;
}

/* Buffers hold the largest pulse of either direction in double precision, allocated once per
 * repartition, never per exchange. */
hx_status hx_halo_update(hx_halo *h)
{
    HX_CHECK(h, HX_ERR_INVALID_ARG, "hx_halo_update: NULL handle");
    for (int i = 0; i < h->nlocal; i++) {
        const hx_domain_plan *p = hx_plan_domain(h->plan, i);
        size_t need = 0;
        for (int q = 0; q < p->npulses; q++) {
            size_t m = (size_t)(p->pulses[q].send_count > p->pulses[q].recv_count
                                    ? p->pulses[q].send_count
                                    : p->pulses[q].recv_count);
            if (m > need)
                need = m;
        }
        need = 3 * sizeof(double) * need;
        if (need > h->cap[i]) {
            void *b = realloc(h->buf[i], need);
            HX_CHECK(b, HX_ERR_NOMEM, "out of memory for halo buffers (%zu bytes)", need);
            h->buf[i] = b;
            h->cap[i] = need;
        }
    }
    return HX_OK;
}

static hx_status check_args(const hx_halo *h, const void *arrays, hx_real type, hx_memspace mem)
{
    HX_CHECK(h && arrays, HX_ERR_INVALID_ARG, "halo exchange: NULL argument");
    HX_CHECK(type == HX_REAL_F64 || type == HX_REAL_F32, HX_ERR_INVALID_ARG,
             "halo exchange: unknown real type %d", (int)type);
    HX_CHECK(mem == HX_MEM_HOST, HX_ERR_UNSUPPORTED,
             "the host halo executor works on host memory; for device memory use a GPU backend");
    return HX_OK;
}

/* Message of local domain i in forward pulse P: the packed buffer goes down to send_rank, the
 * upper neighbour's atoms arrive in place at atom_offset of arr (elem bytes per atom). */
static void forward_message(hx_halo *h, int i, const hx_pulse *P, void *arr, size_t elem)
{
    h->dest[i] = P->send_rank;
    h->src[i] = P->recv_rank;
    h->sptr[i] = h->buf[i];
    h->sb[i] = elem * (size_t)P->send_count;
    h->rptr[i] = (char *)arr + elem * (size_t)P->atom_offset;
    h->rb[i] = elem * (size_t)P->recv_count;
    h->stats.bytes_sent += (long long)h->sb[i];
}

hx_status hx_halo_exchange_x(hx_halo *h, void *const *x, hx_real type, hx_memspace mem,
                             void *stream)
{
    (void)stream;
    HX_TRY(check_args(h, x, type, mem));
    double t0 = hx_wtime();
    const size_t es = type == HX_REAL_F64 ? sizeof(double) : sizeof(float);
    const int npulses = hx_plan_domain(h->plan, 0)->npulses;
    for (int q = 0; q < npulses; q++) {
        for (int i = 0; i < h->nlocal; i++) {
            const hx_domain_plan *p = hx_plan_domain(h->plan, i);
            const hx_pulse *P = &p->pulses[q];
            const int *map = p->index_map + P->map_offset;
            if (type == HX_REAL_F64) {
                for (int e = 0; e < P->send_count; e++)
                    hx_pack_x_elem_f64(e, map, (const double *)x[i], P->shift[0], P->shift[1],
                                       P->shift[2], (double *)h->buf[i]);
            } else {
                for (int e = 0; e < P->send_count; e++)
                    hx_pack_x_elem_f32(e, map, (const float *)x[i], (float)P->shift[0],
                                       (float)P->shift[1], (float)P->shift[2], (float *)h->buf[i]);
            }
            forward_message(h, i, P, x[i], 3 * es);
        }
        HX_TRY(hx_comm_sendrecv(h->comm, h->dest, h->sptr, h->sb, h->src, h->rptr, h->rb));
    }
    h->stats.x_calls++;
    h->stats.x_seconds += hx_wtime() - t0;
    return HX_OK;
}

hx_status hx_halo_exchange_f(hx_halo *h, void *const *f, hx_real type, hx_memspace mem,
                             void *stream)
{
    (void)stream;
    HX_TRY(check_args(h, f, type, mem));
    double t0 = hx_wtime();
    const size_t es = type == HX_REAL_F64 ? sizeof(double) : sizeof(float);
    const int npulses = hx_plan_domain(h->plan, 0)->npulses;
    for (int q = npulses - 1; q >= 0; q--) {
        for (int i = 0; i < h->nlocal; i++) {
            const hx_domain_plan *p = hx_plan_domain(h->plan, i);
            const hx_pulse *P = &p->pulses[q];
            /* Reverse roles: our received atoms' forces go back up to their sender. */
            h->dest[i] = P->recv_rank;
            h->src[i] = P->send_rank;
            h->sptr[i] = (const char *)f[i] + 3 * es * (size_t)P->atom_offset;
            h->sb[i] = 3 * es * (size_t)P->recv_count;
            h->rptr[i] = h->buf[i];
            h->rb[i] = 3 * es * (size_t)P->send_count;
            h->stats.bytes_sent += (long long)h->sb[i];
        }
        HX_TRY(hx_comm_sendrecv(h->comm, h->dest, h->sptr, h->sb, h->src, h->rptr, h->rb));
        for (int i = 0; i < h->nlocal; i++) {
            const hx_domain_plan *p = hx_plan_domain(h->plan, i);
            const hx_pulse *P = &p->pulses[q];
            const int *map = p->index_map + P->map_offset;
            if (type == HX_REAL_F64) {
                for (int e = 0; e < P->send_count; e++)
                    hx_unpack_f_elem_f64(e, map, (const double *)h->buf[i], (double *)f[i]);
            } else {
                for (int e = 0; e < P->send_count; e++)
                    hx_unpack_f_elem_f32(e, map, (const float *)h->buf[i], (float *)f[i]);
            }
        }
    }
    h->stats.f_calls++;
    h->stats.f_seconds += hx_wtime() - t0;
    return HX_OK;
}

hx_status hx_halo_exchange_int(hx_halo *h, int *const *v, int ncomp)
{
    HX_CHECK(h && v && ncomp >= 1 && ncomp <= 6, HX_ERR_INVALID_ARG,
             "hx_halo_exchange_int: bad argument (ncomp %d must be 1..6)", ncomp);
    const int npulses = hx_plan_domain(h->plan, 0)->npulses;
    for (int q = 0; q < npulses; q++) {
        for (int i = 0; i < h->nlocal; i++) {
            const hx_domain_plan *p = hx_plan_domain(h->plan, i);
            const hx_pulse *P = &p->pulses[q];
            const int *map = p->index_map + P->map_offset;
            /* ncomp <= 6 ints fit the 3 doubles per entry the buffer holds */
            int *b = h->buf[i];
            for (int e = 0; e < P->send_count; e++)
                for (int c = 0; c < ncomp; c++)
                    b[(size_t)ncomp * e + c] = v[i][(size_t)ncomp * map[e] + c];
            forward_message(h, i, P, v[i], (size_t)ncomp * sizeof(int));
        }
        HX_TRY(hx_comm_sendrecv(h->comm, h->dest, h->sptr, h->sb, h->src, h->rptr, h->rb));
    }
    return HX_OK;
}

void hx_halo_get_stats(const hx_halo *h, hx_halo_stats *s)
{
    *s = h->stats;
}
