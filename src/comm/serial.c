/* Serial transport: every domain of the decomposition lives in this process and a message is a
 * memcpy. Used as the in-process reference that every other backend is compared with, and by
 * programs that study a decomposition without MPI (`halox plan`). */
#include "comm/comm_impl.h"
#include "core/error.h"

#include <stdlib.h>
#include <string.h>

static hx_status serial_sendrecv(hx_comm *c, int tag, hx_status local, const int *dest,
                                 const void *const *send, const size_t *send_bytes, const int *src,
                                 void *const *recv, const size_t *recv_bytes)
{
    (void)tag;
    if (local != HX_OK)
        return local; /* one process: nobody waits for its messages */
    /* Local index == domain index here. Each receiver finds the one sender that addresses it. */
    for (int r = 0; r < c->nlocal; r++) {
        if (src[r] < 0)
            continue;
        int s = src[r];
        HX_CHECK(s < c->nlocal, HX_ERR_INTERNAL, "domain %d receives from unknown domain %d", r, s);
        HX_CHECK(dest[s] == r, HX_ERR_INTERNAL,
                 "domain %d expects a message from domain %d, which sends to %d instead", r, s,
                 dest[s]);
        HX_CHECK(send_bytes[s] == recv_bytes[r], HX_ERR_INTERNAL,
                 "message size mismatch: domain %d sends %zu bytes to domain %d, which expects %zu",
                 s, send_bytes[s], r, recv_bytes[r]);
        if (recv_bytes[r])
            memcpy(recv[r], send[s], recv_bytes[r]);
    }
    return HX_OK;
}

/* One process: a collective's local failure is the whole job's. */
static hx_status serial_sum_f64(hx_comm *c, hx_status local, const double *in, double *out, int n)
{
    if (local != HX_OK)
        return local;
    for (int k = 0; k < n; k++) {
        double s = 0.0;
        for (int i = 0; i < c->nlocal; i++)
            s += in[(size_t)i * n + k];
        out[k] = s;
    }
    return HX_OK;
}

static hx_status serial_max_i64(hx_comm *c, hx_status local, const long long *in, long long *out,
                                int n)
{
    if (local != HX_OK)
        return local;
    for (int k = 0; k < n; k++) {
        long long m = in[k];
        for (int i = 1; i < c->nlocal; i++)
            if (in[(size_t)i * n + k] > m)
                m = in[(size_t)i * n + k];
        out[k] = m;
    }
    return HX_OK;
}

static hx_status serial_agree(hx_comm *c, hx_status local_status)
{
    (void)c;
    return local_status;
}

static hx_status serial_gather_bytes(hx_comm *c, hx_status local, const void *const *in,
                                     const size_t *in_bytes, void **out, size_t *counts)
{
    if (local != HX_OK)
        return local;
    size_t total = 0;
    for (int i = 0; i < c->nlocal; i++)
        total += in_bytes[i];
    char *buf = malloc(total ? total : 1);
    HX_CHECK(buf, HX_ERR_NOMEM, "out of memory gathering %zu bytes", total);
    size_t off = 0;
    for (int i = 0; i < c->nlocal; i++) {
        if (in_bytes[i])
            memcpy(buf + off, in[i], in_bytes[i]);
        off += in_bytes[i];
        if (counts)
            counts[i] = in_bytes[i];
    }
    *out = buf;
    return HX_OK;
}

static hx_status serial_bcast_bytes(hx_comm *c, hx_status local, void *buf, size_t bytes)
{
    if (local != HX_OK)
        return local;
    (void)c;
    (void)buf;
    (void)bytes;
    return HX_OK;
}

static hx_status serial_abort(hx_comm *c, int code)
{
    (void)c;
    (void)code;
    return HX_OK;
}

static const hx_comm_ops serial_ops = {
    "serial",           serial_sendrecv, serial_sum_f64,
    serial_max_i64,     serial_agree,    serial_gather_bytes,
    serial_bcast_bytes, serial_abort,    NULL,
};

hx_status hx_comm_create_serial(int ndomains, hx_comm **out)
{
    HX_CHECK(out, HX_ERR_INVALID_ARG, "hx_comm_create_serial: out is NULL");
    *out = NULL;
    HX_CHECK(ndomains >= 1, HX_ERR_INVALID_ARG, "number of domains is %d: it must be >= 1",
             ndomains);
    hx_comm *c = calloc(1, sizeof *c);
    HX_CHECK(c, HX_ERR_NOMEM, "out of memory");
    c->local_domains = malloc((size_t)ndomains * sizeof *c->local_domains);
    if (!c->local_domains) {
        free(c);
        HX_FAIL(HX_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < ndomains; i++)
        c->local_domains[i] = i;
    c->ops = &serial_ops;
    c->ndomains = ndomains;
    c->nlocal = ndomains;
    c->rank = 0;
    c->nranks = 1;
    *out = c;
    return HX_OK;
}
