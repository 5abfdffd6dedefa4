/* Public hx_comm entry points: argument checks, then the transport. */
#include "comm/comm_impl.h"
#include "core/error.h"
#include "core/wait.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The collectives check their arguments locally and then take part in the collective anyway,
 * carrying the failure (see comm_impl.h): a rank that returned here while the others entered
 * the collective would leave them waiting for it forever. Only a NULL communicator returns at
 * once: without it there is nobody to tell. */

#define BAD_ARG(what)                                                                              \
    hx_error_set(HX_ERR_INVALID_ARG, __FILE__, __LINE__, __func__, "%s: %s", __func__, (what))

static hx_status sum_f64(hx_comm *c, hx_status local, const double *in, double *out, int n,
                         const char *fn)
{
    if (local == HX_OK && n < 0)
        local = hx_error_set(HX_ERR_INVALID_ARG, __FILE__, __LINE__, fn, "%s: negative count", fn);
    else if (local == HX_OK && n > 0 && (!in || !out))
        local = hx_error_set(HX_ERR_INVALID_ARG, __FILE__, __LINE__, fn, "%s: NULL argument", fn);
    return c->ops->sum_f64(c, local, local == HX_OK ? in : NULL, local == HX_OK ? out : NULL,
                           n < 0 ? 0 : n);
}

hx_status hx_comm_sum_f64(hx_comm *c, const double *in, double *out, int n)
{
    HX_CHECK(c, HX_ERR_INVALID_ARG, "hx_comm_sum_f64: NULL communicator");
    return sum_f64(c, HX_OK, in, out, n, __func__);
}

hx_status hx_comm_agree_sum_f64(hx_comm *c, hx_status local_status, const double *in, double *out,
                                int n)
{
    HX_CHECK(c, HX_ERR_INVALID_ARG, "hx_comm_agree_sum_f64: NULL communicator");
    return sum_f64(c, local_status, in, out, n, __func__);
}

hx_status hx_comm_max_i64(hx_comm *c, const long long *in, long long *out, int n)
{
    HX_CHECK(c, HX_ERR_INVALID_ARG, "hx_comm_max_i64: NULL communicator");
    hx_status local = HX_OK;
    if (n < 0)
        local = BAD_ARG("negative count");
    else if (n > 0 && (!in || !out))
        local = BAD_ARG("NULL argument");
    return c->ops->max_i64(c, local, local == HX_OK ? in : NULL, local == HX_OK ? out : NULL,
                           n < 0 ? 0 : n);
}

/* Doubles as 64-bit integers that order like them: IEEE 754 bit patterns of non-negative
 * doubles already do; for negative ones the magnitude bits are flipped, so that a larger
 * magnitude gives a smaller integer (-0.0 lands just below +0.0). NaN becomes +infinity. */
static long long f64_order_bits(double v)
{
    long long b;
    if (isnan(v))
        v = INFINITY;
    memcpy(&b, &v, sizeof b);
    return b < 0 ? b ^ 0x7fffffffffffffffLL : b;
}

static double f64_from_order_bits(long long b)
{
    double v;
    if (b < 0)
        b ^= 0x7fffffffffffffffLL;
    memcpy(&v, &b, sizeof v);
    return v;
}

hx_status hx_comm_max_f64(hx_comm *c, const double *in, double *out, int n)
{
    HX_CHECK(c, HX_ERR_INVALID_ARG, "hx_comm_max_f64: NULL communicator");
    hx_status local = HX_OK;
    if (n < 0)
        local = BAD_ARG("negative count");
    else if (n > 0 && (!in || !out))
        local = BAD_ARG("NULL argument");
    const size_t rows = (size_t)c->nlocal * (size_t)(n > 0 ? n : 0);
    long long *bin = NULL, *bout = NULL;
    if (local == HX_OK && n > 0) {
        bin = malloc(rows * sizeof *bin);
        bout = malloc((size_t)n * sizeof *bout);
        if (!bin || !bout)
            local = hx_error_set(HX_ERR_NOMEM, __FILE__, __LINE__, __func__,
                                 "hx_comm_max_f64: out of memory (%d values)", n);
        else
            for (size_t k = 0; k < rows; k++)
                bin[k] = f64_order_bits(in[k]);
    }
    /* every rank takes part, also the one that failed: the transport carries its status */
    hx_status st = c->ops->max_i64(c, local, local == HX_OK ? bin : NULL,
                                   local == HX_OK ? bout : NULL, n < 0 ? 0 : n);
    if (st == HX_OK)
        for (int k = 0; k < n; k++)
            out[k] = f64_from_order_bits(bout[k]);
    free(bin);
    free(bout);
    return st;
}

hx_status hx_comm_agree(hx_comm *c, hx_status local_status)
{
    HX_CHECK(c, HX_ERR_INVALID_ARG, "hx_comm_agree: NULL communicator");
    return c->ops->agree(c, local_status);
}

hx_status hx_comm_gather_bytes(hx_comm *c, const void *const *in, const size_t *in_bytes,
                               void **out, size_t *counts)
{
    HX_CHECK(c, HX_ERR_INVALID_ARG, "hx_comm_gather_bytes: NULL communicator");
    hx_status local = HX_OK;
    if (out)
        *out = NULL;
    if (!in || !in_bytes || !out)
        local = BAD_ARG("NULL argument");
    else
        for (int i = 0; i < c->nlocal && local == HX_OK; i++)
            if (in_bytes[i] > 0 && !in[i])
                local = BAD_ARG("NULL block with a positive size");
    if (local != HX_OK)
        return c->ops->gather_bytes(c, local, NULL, NULL, NULL, NULL);
    return c->ops->gather_bytes(c, local, in, in_bytes, out, counts);
}

hx_status hx_comm_bcast_bytes(hx_comm *c, void *buf, size_t bytes)
{
    HX_CHECK(c, HX_ERR_INVALID_ARG, "hx_comm_bcast_bytes: NULL communicator");
    hx_status local = HX_OK;
    if (bytes > 0 && !buf)
        local = BAD_ARG("NULL buffer");
    return c->ops->bcast_bytes(c, local, local == HX_OK ? buf : NULL, bytes);
}

hx_status hx_comm_sendrecv(hx_comm *c, const int *dest, const void *const *send,
                           const size_t *send_bytes, const int *src, void *const *recv,
                           const size_t *recv_bytes)
{
    return hx_comm_sendrecv_tagged(c, hx_msg_tag(HX_MSG_ANY, 0), HX_OK, dest, send, send_bytes, src,
                                   recv, recv_bytes);
}

hx_status hx_comm_sendrecv_tagged(hx_comm *c, int tag, hx_status local, const int *dest,
                                  const void *const *send, const size_t *send_bytes, const int *src,
                                  void *const *recv, const size_t *recv_bytes)
{
    HX_CHECK(c && dest && send && send_bytes && src && recv && recv_bytes, HX_ERR_INVALID_ARG,
             "hx_comm_sendrecv: NULL argument");
    return c->ops->sendrecv(c, tag, local, dest, send, send_bytes, src, recv, recv_bytes);
}

/* ---- what a wait waits for, and how long ------------------------------------------------- */

void hx_msg_describe(int tag, char *buf, size_t len)
{
    static const char *const what[HX_MSG_NKINDS] = {
        "a message (tag %d)",
        "the coordinates of pulse %d",
        "the forces of pulse %d",
        "the done token of the coordinates of pulse %d",
        "the done token of the forces of pulse %d",
        "the zone counts of pulse %d (plan)",
        "the coordinates of pulse %d (plan)",
        "the atom offset of pulse %d (plan)",
        "the integers of pulse %d",
        "the migration count along %c, %s",
        "the migrating molecules along %c, %s",
        "the IPC handle of the coordinates of pulse %d",
        "the IPC handle of the force slots of pulse %d",
        "the CUDA-aware self-test message",
        "the size of the search-step message of channel %d",
        "the search-step message of channel %d",
        "the done token of the search-step message of channel %d",
        "the IPC handle of the search-step message regions (%d)",
    };
    const int k = (tag - 1) / HX_MSG_INDEX_MAX, i = (tag - 1) % HX_MSG_INDEX_MAX;
    if (tag < 1 || k >= HX_MSG_NKINDS)
        snprintf(buf, len, "a message of tag %d", tag);
    else if (k == HX_MSG_MIGRATE_COUNT || k == HX_MSG_MIGRATE)
        snprintf(buf, len, what[k], "xyz"[(i / 2) % 3], i % 2 ? "downwards" : "upwards");
    else if (k == HX_MSG_ANY)
        snprintf(buf, len, what[k], tag);
    else
        snprintf(buf, len, what[k], i);
}

int hx_msg_in_step(int tag)
{
    const int k = (tag - 1) / HX_MSG_INDEX_MAX;
    return tag >= 1 && k >= HX_MSG_HALO_X && k <= HX_MSG_TOKEN_F;
}

int hx_comm_set_in_step(hx_comm *c, int in_step)
{
    const int prev = c->in_step;
    c->in_step = in_step != 0;
    return prev;
}

void hx_comm_set_step(hx_comm *c, long long step)
{
    c->has_step = step >= 0;
    c->step = step;
}

double hx_comm_wait_limit(const hx_comm *c, int tag)
{
    return hx_wait_timeout(c->in_step || (tag && hx_msg_in_step(tag)) ? HX_WAIT_STEP
                                                                      : HX_WAIT_SETUP);
}

const char *hx_comm_step_text(const hx_comm *c, char *buf, size_t len)
{
    if (c->has_step)
        snprintf(buf, len, " (step %lld)", c->step);
    else if (len)
        buf[0] = '\0';
    return buf;
}

hx_status hx_comm_abort(hx_comm *c, int code)
{
    HX_CHECK(c, HX_ERR_INVALID_ARG, "hx_comm_abort: NULL communicator");
    return c->ops->abort(c, code);
}
