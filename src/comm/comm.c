/* Public hx_comm entry points: argument checks, then the transport. */
#include "comm/comm_impl.h"
#include "core/error.h"

#include <stdlib.h>

void hx_comm_destroy(hx_comm **c)
{
    if (!c || !*c)
        return;
    if ((*c)->ops && (*c)->ops->destroy)
        (*c)->ops->destroy(*c);
    free((*c)->local_domains);
    free(*c);
    *c = NULL;
}

const char *hx_comm_name(const hx_comm *c)
{
    return c->ops->name;
}

int hx_comm_ndomains(const hx_comm *c)
{
    return c->ndomains;
}

int hx_comm_nlocal(const hx_comm *c)
{
    return c->nlocal;
}

int hx_comm_local_domain(const hx_comm *c, int local)
{
    return c->local_domains[local];
}

int hx_comm_rank_of_domain(const hx_comm *c, int domain)
{
    /* serial: every domain here; MPI: one domain per rank, domain index == rank */
    return c->nranks == 1 ? 0 : domain;
}

int hx_comm_rank(const hx_comm *c)
{
    return c->rank;
}

int hx_comm_nranks(const hx_comm *c)
{
    return c->nranks;
}

hx_status hx_comm_sum_f64(hx_comm *c, const double *in, double *out, int n)
{
    HX_CHECK(c && (n == 0 || (in && out)), HX_ERR_INVALID_ARG, "hx_comm_sum_f64: NULL argument");
    return c->ops->sum_f64(c, in, out, n);
}

hx_status hx_comm_max_i64(hx_comm *c, const long long *in, long long *out, int n)
{
    HX_CHECK(c && (n == 0 || (in && out)), HX_ERR_INVALID_ARG, "hx_comm_max_i64: NULL argument");
    return c->ops->max_i64(c, in, out, n);
}

hx_status hx_comm_agree(hx_comm *c, hx_status local_status)
{
    HX_CHECK(c, HX_ERR_INVALID_ARG, "hx_comm_agree: NULL communicator");
    return c->ops->agree(c, local_status);
}

hx_status hx_comm_gather_bytes(hx_comm *c, const void *const *in, const size_t *in_bytes,
                               void **out, size_t *counts)
{
    HX_CHECK(c && in && in_bytes && out, HX_ERR_INVALID_ARG, "hx_comm_gather_bytes: NULL argument");
    return c->ops->gather_bytes(c, in, in_bytes, out, counts);
}

hx_status hx_comm_bcast_bytes(hx_comm *c, void *buf, size_t bytes)
{
    HX_CHECK(c && (bytes == 0 || buf), HX_ERR_INVALID_ARG, "hx_comm_bcast_bytes: NULL argument");
    return c->ops->bcast_bytes(c, buf, bytes);
}

hx_status hx_comm_sendrecv(hx_comm *c, const int *dest, const void *const *send,
                           const size_t *send_bytes, const int *src, void *const *recv,
                           const size_t *recv_bytes)
{
    HX_CHECK(c && dest && send && send_bytes && src && recv && recv_bytes, HX_ERR_INVALID_ARG,
             "hx_comm_sendrecv: NULL argument");
    return c->ops->sendrecv(c, dest, send, send_bytes, src, recv, recv_bytes);
}

hx_status hx_comm_abort(hx_comm *c, int code)
{
    HX_CHECK(c, HX_ERR_INVALID_ARG, "hx_comm_abort: NULL communicator");
    return c->ops->abort(c, code);
}
