/* The "host" halo backend: runs a plan over a transport (serial or MPI) on host memory, pulse by
 * pulse, the way GROMACS's CPU-driven exchange does: for each pulse pack, exchange, unpack. The
 * reference that every other backend is compared with.
 *
 * Coordinates go forward in pulse order: a pulse may forward atoms received by an earlier one,
 * so pulse p must have arrived before pulse p+1 is packed. Forces go back in reverse order: the
 * forces of atoms that were forwarded must have been accumulated from later pulses before the
 * earlier pulse sends them on. On the host every pulse waits for the previous one anyway, so
 * the backend does not use the plan's dependency sets; the GPU backends do.
 *
 * Nothing here fails locally but the test's fault site "halo.pulse" (src/core/fault.h), which
 * makes a pulse fail as a device backend's may: the exchange still completes its messages, with
 * failure markers from there on (src/comm/mpi.c), so that the engine's handling of a failed
 * exchange is tested on the CPU too. */
#include "halo/halo_impl.h"
#include "comm/comm_impl.h"
#include "dd/pack.h"
#include "core/error.h"
#include "core/fault.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct host_impl {
    void **buf;  /* [nlocal] pack/unpack buffers: the largest pulse slot */
    size_t *cap; /* bytes */
    int *dest, *src;
    const void **sptr;
    void **rptr;
    size_t *sb, *rb;
    int cap_local; /* atoms of the x/f arrays */
} host_impl;

static void host_destroy(hx_halo *h)
{
    host_impl *m = h->impl;
    if (!m)
        return;
    for (int i = 0; i < h->nlocal; i++) {
        if (m->buf)
            free(m->buf[i]);
        free(h->x[i]);
        free(h->f[i]);
        h->x[i] = h->f[i] = NULL;
    }
    free(m->buf);
    free(m->cap);
    free(m->dest);
    free(m->src);
    free(m->sptr);
    free(m->rptr);
    free(m->sb);
    free(m->rb);
    free(m);
    h->impl = NULL;
}

static hx_status host_setup(hx_halo *h)
{
    HX_CHECK(h->cfg.mem == HX_MEM_HOST, HX_ERR_UNSUPPORTED,
             "the host halo backend works on host memory; for device memory use gpu-mpi, "
             "gpu-direct or nvshmem");
    host_impl *m = calloc(1, sizeof *m);
    HX_CHECK(m, HX_ERR_NOMEM, "out of memory");
    h->impl = m;
    size_t n = (size_t)h->nlocal;
    m->buf = calloc(n, sizeof *m->buf);
    m->cap = calloc(n, sizeof *m->cap);
    m->dest = calloc(n, sizeof *m->dest);
    m->src = calloc(n, sizeof *m->src);
    m->sptr = calloc(n, sizeof *m->sptr);
    m->rptr = calloc(n, sizeof *m->rptr);
    m->sb = calloc(n, sizeof *m->sb);
    m->rb = calloc(n, sizeof *m->rb);
    HX_CHECK(m->buf && m->cap && m->dest && m->src && m->sptr && m->rptr && m->sb && m->rb,
             HX_ERR_NOMEM, "out of memory");
    snprintf(h->describe, sizeof h->describe, "host: %s transport, %s, pulse by pulse",
             hx_comm_name(h->comm), h->cfg.real == HX_REAL_F64 ? "double" : "float");
    return HX_OK;
}

/* Grow-only: arrays hold the plan's cap_local atoms (kept, with their contents, when it did
 * not grow); the buffer holds the largest pulse of either direction. Never per exchange. */
static hx_status host_update(hx_halo *h)
{
    host_impl *m = h->impl;
    const size_t es = 3 * hx_halo_real_size(h);
    const hx_domain_plan *p0 = hx_plan_domain(h->plan, 0);
    for (int i = 0; i < h->nlocal; i++) {
        if (p0->cap_local > m->cap_local || !h->x[i]) {
            void *x = realloc(h->x[i], es * (size_t)p0->cap_local);
            if (x)
                h->x[i] = x;
            void *f = realloc(h->f[i], es * (size_t)p0->cap_local);
            if (f)
                h->f[i] = f;
            HX_CHECK(x && f, HX_ERR_NOMEM, "out of memory for halo arrays of %d atoms",
                     p0->cap_local);
        }
        const hx_domain_plan *p = hx_plan_domain(h->plan, i);
        size_t need = 0;
        for (int q = 0; q < p->npulses; q++) {
            size_t c = (size_t)(p->pulses[q].send_count > p->pulses[q].recv_count
                                    ? p->pulses[q].send_count
                                    : p->pulses[q].recv_count);
            if (c > need)
                need = c;
        }
        need = need * es + 8;
        if (need > m->cap[i]) {
            void *b = realloc(m->buf[i], need);
            HX_CHECK(b, HX_ERR_NOMEM, "out of memory for halo buffers (%zu bytes)", need);
            m->buf[i] = b;
            m->cap[i] = need;
        }
    }
    m->cap_local = p0->cap_local;
    return HX_OK;
}

/* The fault site: pulse q fails on the rank where the test armed it. */
static hx_status pulse_fault(const hx_halo *h, int q, const char *what)
{
    if (!hx_fault_hit("halo.pulse"))
        return HX_OK;
    HX_FAIL(HX_ERR_INTERNAL, "rank %d: %s of pulse %d failed (fault injected by the test)",
            hx_comm_rank(h->comm), what, q);
}

static hx_status host_exchange_x(hx_halo *h, hx_stream stream)
{
    HX_CHECK(stream == NULL, HX_ERR_INVALID_ARG, "the host halo backend takes no stream");
    host_impl *m = h->impl;
    const size_t es = 3 * hx_halo_real_size(h);
    const int npulses = hx_plan_domain(h->plan, 0)->npulses;
    hx_first_error fe = {HX_OK, ""};
    for (int q = 0; q < npulses; q++) {
        if (fe.st == HX_OK)
            hx_first_error_keep(&fe, pulse_fault(h, q, "the coordinates"));
        for (int i = 0; i < h->nlocal; i++) {
            const hx_domain_plan *p = hx_plan_domain(h->plan, i);
            const hx_pulse *P = &p->pulses[q];
            const int *map = p->index_map + P->map_offset;
            if (h->cfg.real == HX_REAL_F64) {
                for (int e = 0; e < P->send_count; e++)
                    hx_pack_x_elem_f64(e, map, (const double *)h->x[i], P->shift[0], P->shift[1],
                                       P->shift[2], (double *)m->buf[i]);
            } else {
                for (int e = 0; e < P->send_count; e++)
                    hx_pack_x_elem_f32(e, map, (const float *)h->x[i], (float)P->shift[0],
                                       (float)P->shift[1], (float)P->shift[2], (float *)m->buf[i]);
            }
            /* packed atoms go down to send_rank; the upper neighbour's land at atom_offset */
            m->dest[i] = P->send_rank;
            m->src[i] = P->recv_rank;
            m->sptr[i] = m->buf[i];
            m->sb[i] = es * (size_t)P->send_count;
            m->rptr[i] = (char *)h->x[i] + es * (size_t)P->atom_offset;
            m->rb[i] = es * (size_t)P->recv_count;
            h->stats.bytes_sent += (long long)m->sb[i];
        }
        /* after a failure (also a neighbour's marker) markers from here on */
        hx_first_error_keep(&fe, hx_comm_sendrecv_tagged(h->comm, hx_msg_tag(HX_MSG_HALO_X, q),
                                                         fe.st, m->dest, m->sptr, m->sb, m->src,
                                                         m->rptr, m->rb));
    }
    return hx_first_error_status(&fe);
}

static hx_status host_exchange_f(hx_halo *h, hx_stream stream)
{
    HX_CHECK(stream == NULL, HX_ERR_INVALID_ARG, "the host halo backend takes no stream");
    host_impl *m = h->impl;
    const size_t es = 3 * hx_halo_real_size(h);
    const int npulses = hx_plan_domain(h->plan, 0)->npulses;
    hx_first_error fe = {HX_OK, ""};
    for (int q = npulses - 1; q >= 0; q--) {
        if (fe.st == HX_OK)
            hx_first_error_keep(&fe, pulse_fault(h, q, "the forces"));
        for (int i = 0; i < h->nlocal; i++) {
            const hx_domain_plan *p = hx_plan_domain(h->plan, i);
            const hx_pulse *P = &p->pulses[q];
            /* reverse roles: our received atoms' forces go back up to their sender */
            m->dest[i] = P->recv_rank;
            m->src[i] = P->send_rank;
            m->sptr[i] = (const char *)h->f[i] + es * (size_t)P->atom_offset;
            m->sb[i] = es * (size_t)P->recv_count;
            m->rptr[i] = m->buf[i];
            m->rb[i] = es * (size_t)P->send_count;
            h->stats.bytes_sent += (long long)m->sb[i];
        }
        hx_first_error_keep(&fe, hx_comm_sendrecv_tagged(h->comm, hx_msg_tag(HX_MSG_HALO_F, q),
                                                         fe.st, m->dest, m->sptr, m->sb, m->src,
                                                         m->rptr, m->rb));
        for (int i = 0; i < h->nlocal && fe.st == HX_OK; i++) {
            const hx_domain_plan *p = hx_plan_domain(h->plan, i);
            const hx_pulse *P = &p->pulses[q];
            const int *map = p->index_map + P->map_offset;
            if (h->cfg.real == HX_REAL_F64) {
                for (int e = 0; e < P->send_count; e++)
                    hx_unpack_f_elem_f64(e, map, (const double *)m->buf[i], (double *)h->f[i]);
            } else {
                for (int e = 0; e < P->send_count; e++)
                    hx_unpack_f_elem_f32(e, map, (const float *)m->buf[i], (float *)h->f[i]);
            }
        }
    }
    return hx_first_error_status(&fe);
}

const hx_halo_ops hx_halo_ops_host = {
    "host", 0, 0, host_setup, host_update, host_exchange_x, host_exchange_f, NULL, host_destroy,
    /* no refresh (the host path rebuilds its plan itself), no device messages */
    NULL, NULL, NULL, 0};
