/* MPI transport: one domain per rank. This is the only file of halox that calls MPI.
 *
 * The library duplicates the caller's communicator (its messages can never match the caller's)
 * and sets MPI_ERRORS_RETURN on the duplicate so that a failing call becomes an hx_status with
 * MPI's own message instead of killing the job from inside the library.
 *
 * No rank is left waiting. Every operation is started non-blocking and its requests are polled
 * (MPI_Testall) until they complete or the deadline passes (include/halox/timer.h: the step
 * deadline for halo messages and inside the engine's steps, the set-up deadline otherwise); a
 * wait that passes it returns HX_ERR_TIMEOUT naming this rank, what it waited for (peer, pulse,
 * direction) and the step. Then the communicator is unusable (a collective cannot be cancelled,
 * and its buffers, kept by the transport, may still be written): every later call returns the
 * same error at once, and destroy leaves its memory to MPI. A message is received with any tag
 * from its source and its tag checked (at most one receive per source is ever posted, and
 * messages between two ranks arrive in the order they were sent): a message of another kind or
 * pulse means the ranks are out of step, which is reported at once instead of taking one for
 * the other. A rank that failed before a message sends a zero-byte failure marker in its place
 * (tag + HX_MSG_FAILED), which fits any receive: its neighbour returns HX_ERR_REMOTE at once. */
#include "comm/comm_impl.h"
#include "core/error.h"
#include "core/fault.h"
#include "core/wait.h"

#include <limits.h>
#include <mpi.h>
#include <sched.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h> /* MPIX_CUDA_AWARE_SUPPORT, MPIX_Query_cuda_support */
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Per-communicator scratch, allocated once: reductions run every MD step and must not allocate
 * (nor fail) there. */
typedef struct mpi_impl {
    MPI_Comm comm;
    size_t piece; /* largest message piece in bytes (MPI counts are int) */
    /* reductions of up to cap values per rank: one status slot follows the values */
    int cap;
    double *red_send, *red_res;    /* [cap+1] */
    double *red_all;               /* rank 0: [nranks][cap+1] */
    long long *max_send, *max_res; /* [cap+1] */
    int *sizes, *displs;           /* [nranks] gather sizes and offsets (used on rank 0) */
    int node_rank, node_size;      /* computed on first use; node_size 0: not yet */
    /* the agreement's buffers: never on the stack, since a collective that timed out may still
     * write them */
    int ag_in, ag_out;
    char ag_buf[1024 + sizeof(int)]; /* the failing rank's status, then its message */
    int cr_in, cr_out;               /* creation's agreement */
    int broken;                      /* a wait timed out or the ranks fell out of step */
    hx_status broken_st;             /* what happened then: its status and message */
    char broken_msg[1024];
} mpi_impl;

#define HX_MPI_MSG_LEN 1024
#define HX_MPI_TIMEOUT (-77777) /* wait_all: the deadline passed */
#define HX_MSG_FAILED 4096      /* a failure marker's tag: the replaced message's + this */
#define HX_MPI_PIECE ((size_t)1 << 30)
#define HX_MPI_CAP0 16 /* values per reduction before the first growth (the engine uses <= 4) */

static hx_status mpi_error(int rc, const char *file, int line, const char *call)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS)
        snprintf(text, sizeof text, "error code %d", rc);
    return hx_error_set(HX_ERR_MPI, file, line, "mpi", "%s failed: %s", call, text);
}

#define HX_MPI(call)                                                                               \
    do {                                                                                           \
        int hx_mpi_rc_ = (call);                                                                   \
        if (hx_mpi_rc_ != MPI_SUCCESS)                                                             \
            return mpi_error(hx_mpi_rc_, __FILE__, __LINE__, #call);                               \
    } while (0)

static mpi_impl *impl_of(hx_comm *c)
{
    return (mpi_impl *)c->impl;
}

static MPI_Comm comm_of(hx_comm *c)
{
    return impl_of(c)->comm;
}

/* Poll the requests until every one has completed or `limit` seconds have passed (0: block in
 * MPI_Waitall). Returns MPI_SUCCESS, an MPI error code, or HX_MPI_TIMEOUT with the requests left
 * as they are. A wait longer than a millisecond yields the core between polls (ranks may share
 * cores; a message that takes that long is not waiting for a few microseconds more). */
static int wait_all(int n, MPI_Request *rq, MPI_Status *stt, double limit)
{
    MPI_Status *sp = stt ? stt : MPI_STATUSES_IGNORE;
    if (limit <= 0)
        return MPI_Waitall(n, rq, sp);
    double t0 = -1.0;
    for (;;) {
        int done = 0;
        const int rc = MPI_Testall(n, rq, &done, sp);
        if (rc != MPI_SUCCESS || done)
            return rc;
        const double now = hx_wtime();
        if (t0 < 0)
            t0 = now;
        else if (now - t0 > limit)
            return HX_MPI_TIMEOUT;
        else if (now - t0 > 1e-3)
            sched_yield();
    }
}

/* The communicator cannot be used any more: later calls return `st`'s message at once. */
static hx_status make_broken(hx_comm *c, hx_status st)
{
    mpi_impl *m = impl_of(c);
    if (!m->broken) {
        m->broken = 1;
        m->broken_st = st;
        snprintf(m->broken_msg, sizeof m->broken_msg, "%s", hx_last_error_message());
    }
    return st;
}

static hx_status check_usable(hx_comm *c)
{
    mpi_impl *m = impl_of(c);
    if (m->broken)
        return hx_error_set(m->broken_st, __FILE__, __LINE__, __func__,
                            "%s (the communicator is unusable since)", m->broken_msg);
    return HX_OK;
}

/* Wait for a collective (one request) with the deadline of c's phase. */
static hx_status coll_wait(hx_comm *c, MPI_Request *rq, const char *what)
{
    const double limit = hx_comm_wait_limit(c, 0);
    const int rc = wait_all(1, rq, NULL, limit);
    if (rc == MPI_SUCCESS)
        return HX_OK;
    if (rc != HX_MPI_TIMEOUT)
        return make_broken(c, mpi_error(rc, __FILE__, __LINE__, what));
    char stp[48];
    hx_error_set(HX_ERR_TIMEOUT, __FILE__, __LINE__, __func__,
                 "rank %d waited %g s in %s of all %d ranks%s and some rank did not take part: "
                 "it failed, hung or is out of step (the deadline is HALOX_WAIT_TIMEOUT's)",
                 c->rank, limit, what, c->nranks, hx_comm_step_text(c, stp, sizeof stp));
    return make_broken(c, HX_ERR_TIMEOUT);
}

void hx_comm_mpi_set_piece_bytes(hx_comm *c, size_t bytes)
{
    if (c && c->ops && strcmp(c->ops->name, "mpi") == 0 && bytes > 0 && bytes <= HX_MPI_PIECE)
        impl_of(c)->piece = bytes;
}

/* A receive or send that the deadline left behind: the receive is cancelled (it would write
 * into the caller's buffer later), the send freed (MPI completes it, or not, on its own). */
static void abandon(MPI_Request *rq)
{
    if (rq[0] != MPI_REQUEST_NULL) {
        MPI_Cancel(&rq[0]);
        (void)wait_all(1, &rq[0], NULL, 1.0); /* a cancel completes at once unless matched */
    }
    if (rq[1] != MPI_REQUEST_NULL)
        MPI_Request_free(&rq[1]);
}

/* Messages of any size, in pieces of at most m->piece bytes. A size limit checked on one side
 * only would return there while the neighbour waits in its receive; pieces leave no such path.
 * Both sides derive the piece count from the sizes they pass, which the protocol makes equal.
 * A rank whose `local` status is an error sends one failure marker instead of its pieces and
 * still receives; a rank that receives a marker stops expecting pieces from that source. */
static hx_status mpi_sendrecv(hx_comm *c, int tag, hx_status local, const int *dest,
                              const void *const *send, const size_t *send_bytes, const int *src,
                              void *const *recv, const size_t *recv_bytes)
{
    HX_TRY(check_usable(c));
    static const char none = 0;
    const size_t piece = impl_of(c)->piece;
    const int failed = local != HX_OK;
    const int d = dest[0] < 0 ? MPI_PROC_NULL : dest[0];
    const int s = src[0] < 0 ? MPI_PROC_NULL : src[0];
    const size_t sb = d == MPI_PROC_NULL || failed ? 0 : send_bytes[0];
    const size_t rb = s == MPI_PROC_NULL ? 0 : recv_bytes[0];
    /* at least one round, so that a zero-byte message is still matched */
    const size_t ns = sb ? (sb + piece - 1) / piece : 1, nr = rb ? (rb + piece - 1) / piece : 1;
    const size_t rounds = ns > nr ? ns : nr;
    const double limit = hx_comm_wait_limit(c, tag);
    int peer_failed = 0;
    for (size_t k = 0; k < rounds; k++) {
        const size_t so = k * piece, ro = k * piece;
        const int sk = k < ns ? (int)(sb - so < piece ? sb - so : piece) : 0;
        const int rk = k < nr ? (int)(rb - ro < piece ? rb - ro : piece) : 0;
        const int rx = k < nr && s != MPI_PROC_NULL && !peer_failed;
        const int tx = k < ns && d != MPI_PROC_NULL;
        MPI_Request rq[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
        MPI_Status stt[2];
        int rc = MPI_SUCCESS;
        if (rx)
            rc = MPI_Irecv(rk ? (char *)recv[0] + ro : (void *)&none, rk, MPI_BYTE, s, MPI_ANY_TAG,
                           comm_of(c), &rq[0]);
        if (rc == MPI_SUCCESS && tx)
            rc = MPI_Isend(sk ? (const char *)send[0] + so : &none, sk, MPI_BYTE, d,
                           failed ? tag + HX_MSG_FAILED : tag, comm_of(c), &rq[1]);
        if (rc == MPI_SUCCESS)
            rc = wait_all(2, rq, stt, limit);
        char what[128], stp[48];
        if (rc == HX_MPI_TIMEOUT) {
            hx_msg_describe(tag, what, sizeof what);
            hx_comm_step_text(c, stp, sizeof stp);
            if (rq[0] != MPI_REQUEST_NULL)
                hx_error_set(HX_ERR_TIMEOUT, __FILE__, __LINE__, __func__,
                             "rank %d waited %g s for %s from rank %d%s and it did not come: "
                             "rank %d failed, hung or is out of step (the deadline is "
                             "HALOX_WAIT_TIMEOUT's)",
                             c->rank, limit, what, s, stp, s);
            else
                hx_error_set(HX_ERR_TIMEOUT, __FILE__, __LINE__, __func__,
                             "rank %d waited %g s for rank %d to receive %s%s: rank %d failed, "
                             "hung or is out of step (the deadline is HALOX_WAIT_TIMEOUT's)",
                             c->rank, limit, d, what, stp, d);
            abandon(rq);
            return make_broken(c, HX_ERR_TIMEOUT);
        }
        /* a message of another kind or pulse (maybe too long for the buffer: truncated) */
        const int got_tag = rx ? stt[0].MPI_TAG : tag;
        if (rx && got_tag != tag && got_tag != tag + HX_MSG_FAILED &&
            (rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS)) {
            char got[128];
            hx_msg_describe(tag, what, sizeof what);
            hx_msg_describe(got_tag >= HX_MSG_FAILED ? got_tag - HX_MSG_FAILED : got_tag, got,
                            sizeof got);
            hx_error_set(HX_ERR_INTERNAL, __FILE__, __LINE__, __func__,
                         "rank %d expected %s from rank %d%s and received %s%s: the ranks are out "
                         "of step (one of them left an exchange early or skipped one)",
                         c->rank, what, s, hx_comm_step_text(c, stp, sizeof stp), got,
                         got_tag >= HX_MSG_FAILED ? " (its failure marker)" : "");
            return make_broken(c, HX_ERR_INTERNAL);
        }
        if (rc == MPI_ERR_IN_STATUS)
            rc = rx && stt[0].MPI_ERROR != MPI_SUCCESS ? stt[0].MPI_ERROR : stt[1].MPI_ERROR;
        if (rc != MPI_SUCCESS) {
            abandon(rq);
            return make_broken(c, mpi_error(rc, __FILE__, __LINE__, "MPI_Isend/MPI_Irecv"));
        }
        if (rx && got_tag == tag + HX_MSG_FAILED) {
            peer_failed = 1;
        } else if (rx) {
            int got = 0;
            HX_MPI(MPI_Get_count(&stt[0], MPI_BYTE, &got));
            HX_CHECK(got == rk, HX_ERR_INTERNAL,
                     "rank %d expected %zu bytes from rank %d and got %d in piece %zu of %zu",
                     c->rank, rb, s, got, k + 1, nr);
        }
    }
    if (failed)
        return local; /* its message is still the one recorded */
    if (peer_failed) {
        char what[128], stp[48];
        hx_msg_describe(tag, what, sizeof what);
        HX_FAIL(HX_ERR_REMOTE,
                "rank %d failed before it sent %s to rank %d%s (rank %d reports its own error)", s,
                what, c->rank, hx_comm_step_text(c, stp, sizeof stp), s);
    }
    return HX_OK;
}

/* An error that only reports another rank's failure or a wait that gave up on one: agreements
 * name an original failure before these, and a timed-out wait (which may be the cause: a stuck
 * GPU) before a forwarded failure. */
static int consequence(hx_status st)
{
    return st == HX_ERR_REMOTE || st == HX_ERR_TIMEOUT;
}

static hx_status mpi_agree(hx_comm *c, hx_status local_status)
{
    mpi_impl *m = impl_of(c);
    /* unusable: this rank's own failure (its message recorded) before what broke it */
    if (m->broken && local_status != HX_OK && !consequence(local_status))
        return local_status;
    HX_TRY(check_usable(c));
    const int n = c->nranks;
    /* the first failing rank: an original failure, else a timed-out wait, else a forwarded one */
    m->ag_in = local_status == HX_OK            ? 3 * n
               : local_status == HX_ERR_REMOTE  ? 2 * n + c->rank
               : local_status == HX_ERR_TIMEOUT ? n + c->rank
                                                : c->rank;
    MPI_Request rq;
    HX_MPI(MPI_Iallreduce(&m->ag_in, &m->ag_out, 1, MPI_INT, MPI_MIN, m->comm, &rq));
    HX_TRY(coll_wait(c, &rq, "an agreement"));
    if (m->ag_out == 3 * n)
        return HX_OK;
    const int first = m->ag_out % n;
    int code = (int)local_status;
    if (c->rank == first) {
        memcpy(m->ag_buf, &code, sizeof code);
        snprintf(m->ag_buf + sizeof code, HX_MPI_MSG_LEN, "%s", hx_last_error_message());
    }
    HX_MPI(MPI_Ibcast(m->ag_buf, (int)sizeof m->ag_buf, MPI_CHAR, first, m->comm, &rq));
    HX_TRY(coll_wait(c, &rq, "an agreement's message"));
    if (c->rank == first)
        return local_status; /* keep the full local message and trace */
    if (local_status != HX_OK && !consequence(local_status))
        return local_status; /* this rank failed too: its own message is the more useful one */
    memcpy(&code, m->ag_buf, sizeof code);
    m->ag_buf[sizeof m->ag_buf - 1] = 0;
    HX_FAIL(HX_ERR_REMOTE, "rank %d failed (%s): %s", first, hx_status_name((hx_status)code),
            m->ag_buf + sizeof code);
}

/* Reduction scratch for cap values per rank: allocated by every rank, then agreed on, so that a
 * rank that could not allocate fails together with the others before any data moves. */
static hx_status alloc_reductions(hx_comm *c, int cap, mpi_impl *into)
{
    const size_t w = (size_t)cap + 1;
    int fail = hx_fault_hit("mpi.reserve");
    into->red_send = malloc(w * sizeof(double));
    into->red_res = malloc(w * sizeof(double));
    into->max_send = malloc(w * sizeof(long long));
    into->max_res = malloc(w * sizeof(long long));
    into->red_all = c->rank == 0 ? malloc(w * (size_t)c->nranks * sizeof(double)) : NULL;
    if (fail || !into->red_send || !into->red_res || !into->max_send || !into->max_res ||
        (c->rank == 0 && !into->red_all))
        HX_FAIL(HX_ERR_NOMEM, "out of memory for reduction buffers of %d values", cap);
    into->cap = cap;
    return HX_OK;
}

static void free_reductions(mpi_impl *m)
{
    free(m->red_send);
    free(m->red_res);
    free(m->red_all);
    free(m->max_send);
    free(m->max_res);
    m->red_send = m->red_res = m->red_all = NULL;
    m->max_send = m->max_res = NULL;
    m->cap = 0;
}

/* Make the reduction buffers hold n values. Collective only when they must grow, which depends
 * on n alone (equal on every rank), so either every rank grows at this call or none does. */
static hx_status reserve_reductions(hx_comm *c, int n)
{
    mpi_impl *m = impl_of(c);
    if (n <= m->cap)
        return HX_OK;
    mpi_impl grown = {0};
    int cap = 2 * m->cap > n ? 2 * m->cap : n;
    hx_status st = mpi_agree(c, alloc_reductions(c, cap, &grown));
    if (st != HX_OK) {
        free_reductions(&grown);
        return st;
    }
    free_reductions(m);
    m->cap = grown.cap;
    m->red_send = grown.red_send;
    m->red_res = grown.red_res;
    m->red_all = grown.red_all;
    m->max_send = grown.max_send;
    m->max_res = grown.max_res;
    return HX_OK;
}

/* Sums go through rank 0 in rank order so that results are bit-reproducible regardless of the
 * MPI library's reduction tree. Each rank's values travel with its local status; rank 0
 * broadcasts the sums with the first failing rank (nranks: none), so every rank learns of a
 * failure from the same two messages that carry the data, and only a failure costs more (the
 * agreement that forwards its message). */
static hx_status mpi_sum_f64(hx_comm *c, hx_status local, const double *in, double *out, int n)
{
    HX_TRY(check_usable(c));
    HX_TRY(reserve_reductions(c, n));
    mpi_impl *m = impl_of(c);
    MPI_Comm comm = comm_of(c);
    const int w = n + 1;
    for (int k = 0; k < n; k++)
        m->red_send[k] = local == HX_OK ? in[k] : 0.0;
    m->red_send[n] = (double)local;
    hx_status st = HX_OK;
    MPI_Request rq;
    int rc = MPI_Igather(m->red_send, w, MPI_DOUBLE, m->red_all, w, MPI_DOUBLE, 0, comm, &rq);
    if (rc != MPI_SUCCESS)
        st = mpi_error(rc, __FILE__, __LINE__, "MPI_Igather");
    else
        HX_TRY(coll_wait(c, &rq, "a sum"));
    if (c->rank == 0) {
        int first = rc == MPI_SUCCESS ? c->nranks : 0;
        for (int r = 0; r < c->nranks && first == c->nranks; r++)
            if (m->red_all[(size_t)r * w + n] != 0.0)
                first = r;
        for (int k = 0; k < n; k++) {
            double s = 0.0;
            for (int r = 0; r < c->nranks; r++)
                s += m->red_all[(size_t)r * w + k];
            m->red_res[k] = s;
        }
        m->red_res[n] = first;
    }
    /* entered even after a failed gather: the others wait in it (an MPI error itself leaves
     * MPI's state undefined; halox reports it and completes its message sequence) */
    rc = MPI_Ibcast(m->red_res, w, MPI_DOUBLE, 0, comm, &rq);
    if (rc == MPI_SUCCESS)
        HX_TRY(coll_wait(c, &rq, "a sum's broadcast"));
    if (st != HX_OK)
        return st;
    HX_CHECK(rc == MPI_SUCCESS, HX_ERR_MPI, "MPI_Ibcast of a sum failed (MPI error %d)", rc);
    if (m->red_res[n] != (double)c->nranks)
        return mpi_agree(c, local); /* every rank is here: forward the failure's message */
    memcpy(out, m->red_res, (size_t)n * sizeof *out);
    return HX_OK;
}

/* Maximum with MPI_Allreduce; the status slot holds nranks - rank on a failing rank, so its
 * maximum names the first failing rank. */
static hx_status mpi_max_i64(hx_comm *c, hx_status local, const long long *in, long long *out,
                             int n)
{
    HX_TRY(check_usable(c));
    HX_TRY(reserve_reductions(c, n));
    mpi_impl *m = impl_of(c);
    for (int k = 0; k < n; k++)
        m->max_send[k] = local == HX_OK ? in[k] : LLONG_MIN;
    m->max_send[n] = local == HX_OK ? 0 : (long long)(c->nranks - c->rank);
    MPI_Request rq;
    HX_MPI(MPI_Iallreduce(m->max_send, m->max_res, n + 1, MPI_LONG_LONG, MPI_MAX, comm_of(c), &rq));
    HX_TRY(coll_wait(c, &rq, "a maximum"));
    if (m->max_res[n] != 0)
        return mpi_agree(c, local);
    memcpy(out, m->max_res, (size_t)n * sizeof *out);
    return HX_OK;
}

/* Sizes to rank 0 (its size and offset arrays exist since creation), rank 0 allocates, then
 * an agreement: a rank with bad arguments or a rank 0 without memory stops every rank before
 * the data moves. */
static hx_status mpi_gather_bytes(hx_comm *c, hx_status local, const void *const *in,
                                  const size_t *in_bytes, void **out, size_t *counts)
{
    HX_TRY(check_usable(c));
    mpi_impl *m = impl_of(c);
    MPI_Comm comm = comm_of(c);
    if (local == HX_OK && in_bytes[0] > INT32_MAX)
        local = hx_error_set(HX_ERR_UNSUPPORTED, __FILE__, __LINE__, __func__,
                             "gather of %zu bytes from rank %d: more than 2 GiB per rank",
                             in_bytes[0], c->rank);
    /* the size travels from the agreement's buffer: a gather that timed out may read it later */
    m->ag_in = local == HX_OK ? (int)in_bytes[0] : 0;
    const int mine = m->ag_in;
    MPI_Request rq;
    HX_MPI(MPI_Igather(&m->ag_in, 1, MPI_INT, m->sizes, 1, MPI_INT, 0, comm, &rq));
    HX_TRY(coll_wait(c, &rq, "a gather's sizes"));
    char *buf = NULL;
    if (c->rank == 0 && local == HX_OK) {
        long long total = 0;
        for (int r = 0; r < c->nranks; r++) {
            m->displs[r] = (int)total;
            total += m->sizes[r];
        }
        if (total > INT32_MAX)
            local = hx_error_set(HX_ERR_UNSUPPORTED, __FILE__, __LINE__, __func__,
                                 "gather of %lld bytes in total: more than 2 GiB", total);
        else if (hx_fault_hit("mpi.gather") || !(buf = malloc((size_t)total + 1)))
            local = hx_error_set(HX_ERR_NOMEM, __FILE__, __LINE__, __func__,
                                 "out of memory gathering %lld bytes on rank 0", total);
    }
    hx_status st = mpi_agree(c, local);
    if (st != HX_OK) {
        free(buf);
        return st;
    }
    int rc = MPI_Igatherv(in[0], mine, MPI_BYTE, buf, m->sizes, m->displs, MPI_BYTE, 0, comm, &rq);
    if (rc != MPI_SUCCESS) {
        free(buf);
        return mpi_error(rc, __FILE__, __LINE__, "MPI_Igatherv");
    }
    HX_TRY(coll_wait(c, &rq, "a gather")); /* on a timeout buf stays MPI's */
    if (c->rank == 0 && counts)
        for (int r = 0; r < c->nranks; r++)
            counts[r] = (size_t)m->sizes[r];
    *out = buf;
    return HX_OK;
}

/* Agreement first (a rank with a bad buffer must not leave the others in the broadcast), then
 * the bytes in pieces. Not for per-step use: the agreement is one more reduction. */
static hx_status mpi_bcast_bytes(hx_comm *c, hx_status local, void *buf, size_t bytes)
{
    HX_TRY(mpi_agree(c, local));
    const size_t piece = impl_of(c)->piece;
    for (size_t off = 0; off < bytes; off += piece) {
        const size_t k = bytes - off < piece ? bytes - off : piece;
        MPI_Request rq;
        HX_MPI(MPI_Ibcast((char *)buf + off, (int)k, MPI_BYTE, 0, comm_of(c), &rq));
        HX_TRY(coll_wait(c, &rq, "a broadcast"));
    }
    return HX_OK;
}

static hx_status mpi_abort(hx_comm *c, int code)
{
    MPI_Abort(comm_of(c), code);
    return HX_OK; /* not reached */
}

static void mpi_destroy(hx_comm *c)
{
    mpi_impl *m = c->impl;
    if (!m)
        return;
    if (m->broken) {
        /* an operation that timed out may still use the communicator and these buffers */
        c->impl = NULL;
        return;
    }
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
        MPI_Comm_free(&m->comm);
    free_reductions(m);
    free(m->sizes);
    free(m->displs);
    free(m);
    c->impl = NULL;
}

static const hx_comm_ops mpi_ops = {
    "mpi",           mpi_sendrecv, mpi_sum_f64, mpi_max_i64, mpi_agree, mpi_gather_bytes,
    mpi_bcast_bytes, mpi_abort,    mpi_destroy,
};

/* What creation hands to MPI's non-blocking calls: on the heap, since a call that timed out
 * may still write it (and is then left to MPI). */
typedef struct create_box {
    MPI_Comm dup;
    int in, out;
} create_box;

/* Start op (a non-blocking call on *rq) and wait with the set-up deadline; without a box (no
 * memory) the blocking call instead. */
static hx_status create_wait(int rc, MPI_Request *rq, int rank, const char *what)
{
    if (rc != MPI_SUCCESS)
        return mpi_error(rc, __FILE__, __LINE__, what);
    const double limit = hx_wait_timeout(HX_WAIT_SETUP);
    rc = wait_all(1, rq, NULL, limit);
    if (rc == HX_MPI_TIMEOUT)
        HX_FAIL(HX_ERR_TIMEOUT,
                "rank %d waited %g s in %s (creating the MPI communicator) and some rank did "
                "not take part: it failed, hung or never started (the deadline is "
                "HALOX_WAIT_TIMEOUT's)",
                rank, limit, what);
    if (rc != MPI_SUCCESS)
        return mpi_error(rc, __FILE__, __LINE__, what);
    return HX_OK;
}

/* Collective. Every rank allocates, duplicates the communicator (whatever happened) and agrees
 * on it, so that a rank without memory (or with a malformed HALOX_WAIT_TIMEOUT) fails together
 * with the others instead of leaving them in MPI_Comm_dup. */
hx_status hx_comm_create_mpi(const void *mpi_comm, hx_comm **out)
{
    HX_CHECK(mpi_comm && out, HX_ERR_INVALID_ARG, "hx_comm_create_mpi: NULL argument");
    *out = NULL;
    int inited = 0;
    HX_MPI(MPI_Initialized(&inited));
    HX_CHECK(inited, HX_ERR_INVALID_ARG,
             "hx_comm_create_mpi: MPI is not initialised; call MPI_Init first");
    int wrank = 0;
    MPI_Comm_rank(*(const MPI_Comm *)mpi_comm, &wrank);
    create_box *box = malloc(sizeof *box), fallback;
    MPI_Request rq = MPI_REQUEST_NULL;
    if (box)
        HX_TRY(create_wait(MPI_Comm_idup(*(const MPI_Comm *)mpi_comm, &box->dup, &rq), &rq, wrank,
                           "MPI_Comm_idup"));
    else
        HX_MPI(MPI_Comm_dup(*(const MPI_Comm *)mpi_comm, &fallback.dup));
    if (!box)
        box = &fallback;
    MPI_Comm dup = box->dup;
    MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
    hx_comm *c = calloc(1, sizeof *c);
    mpi_impl *m = calloc(1, sizeof *m);
    int *loc = malloc(sizeof *loc);
    /* 1: fine, 0: out of memory, -1: a malformed deadline setting (its message is recorded) */
    int ok = c && m && loc && box != &fallback && !hx_fault_hit("mpi.create");
    if (ok && hx_wait_timeout_check() != HX_OK)
        ok = -1;
    hx_status st = HX_OK;
    if (ok == 1) {
        MPI_Comm_rank(dup, &c->rank);
        MPI_Comm_size(dup, &c->nranks);
        loc[0] = c->rank;
        c->ops = &mpi_ops;
        c->impl = m;
        c->ndomains = c->nranks;
        c->nlocal = 1;
        c->local_domains = loc;
        m->comm = dup;
        m->piece = HX_MPI_PIECE;
        m->sizes = malloc((size_t)c->nranks * sizeof *m->sizes);
        m->displs = malloc((size_t)c->nranks * sizeof *m->displs);
        ok = m->sizes && m->displs && alloc_reductions(c, HX_MPI_CAP0, m) == HX_OK;
    }
    box->in = ok;
    box->out = 0;
    if (box != &fallback)
        st = create_wait(MPI_Iallreduce(&box->in, &box->out, 1, MPI_INT, MPI_MIN, dup, &rq), &rq,
                         wrank, "MPI_Iallreduce");
    else if (MPI_Allreduce(&box->in, &box->out, 1, MPI_INT, MPI_MIN, dup) != MPI_SUCCESS)
        st = hx_error_set(HX_ERR_MPI, __FILE__, __LINE__, __func__,
                          "MPI_Allreduce failed creating the MPI communicator");
    if (st == HX_ERR_TIMEOUT)
        return st; /* the duplicate and the box stay MPI's */
    if (st == HX_OK && ok == 0)
        st = hx_error_set(HX_ERR_NOMEM, __FILE__, __LINE__, __func__,
                          "out of memory creating the MPI communicator");
    else if (st == HX_OK && ok == -1)
        st = HX_ERR_INVALID_ARG; /* hx_wait_timeout_check's message */
    else if (st == HX_OK && box->out == -1)
        st = hx_error_set(HX_ERR_REMOTE, __FILE__, __LINE__, __func__,
                          "another rank's HALOX_WAIT_TIMEOUT is malformed: give the deadline of "
                          "a wait in seconds, STEP or STEP,SETUP");
    else if (st == HX_OK && box->out != 1)
        st = hx_error_set(HX_ERR_REMOTE, __FILE__, __LINE__, __func__,
                          "another rank ran out of memory creating the MPI communicator");
    if (box != &fallback)
        free(box);
    if (st != HX_OK) {
        if (m) {
            free_reductions(m);
            free(m->sizes);
            free(m->displs);
        }
        free(m);
        free(c);
        free(loc);
        MPI_Comm_free(&dup);
        return st;
    }
    *out = c;
    return HX_OK;
}

/* ---- services for the GPU halo backends (src/comm/comm_impl.h) ---------------------------- */

hx_status hx_comm_node_info(hx_comm *c, int *local_rank, int *local_size)
{
    HX_CHECK(c && local_rank && local_size, HX_ERR_INVALID_ARG, "hx_comm_node_info: NULL argument");
    if (c->ops != &mpi_ops) {
        *local_rank = 0;
        *local_size = 1;
        return HX_OK;
    }
    mpi_impl *m = c->impl;
    if (m->node_size == 0) {
        /* Collective the first time: every rank asks at the same point (backend setup). */
        MPI_Comm node;
        HX_MPI(MPI_Comm_split_type(m->comm, MPI_COMM_TYPE_SHARED, c->rank, MPI_INFO_NULL, &node));
        int r = 0, n = 0;
        int rc = MPI_Comm_rank(node, &r);
        if (rc == MPI_SUCCESS)
            rc = MPI_Comm_size(node, &n);
        MPI_Comm_free(&node);
        if (rc != MPI_SUCCESS)
            return mpi_error(rc, __FILE__, __LINE__, "MPI_Comm_rank/size (node communicator)");
        m->node_rank = r;
        m->node_size = n;
    }
    *local_rank = m->node_rank;
    *local_size = m->node_size;
    return HX_OK;
}

int hx_comm_mpi_cuda_aware(const char **why)
{
    const char *env = getenv("HALOX_MPI_CUDA_AWARE");
    if (env && (strcmp(env, "0") == 0 || strcmp(env, "1") == 0)) {
        if (why)
            *why = "HALOX_MPI_CUDA_AWARE in the environment";
        return env[0] == '1';
    }
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
    /* built with CUDA support; the run-time query says whether it is enabled */
    if (why)
        *why = "MPIX_Query_cuda_support()";
    return MPIX_Query_cuda_support() == 1;
#elif defined(MPIX_CUDA_AWARE_SUPPORT)
    if (why)
        *why = "the MPI library was built without CUDA support (MPIX_CUDA_AWARE_SUPPORT 0)";
    return 0;
#elif defined(MPIX_GPU_SUPPORT_CUDA)
    int yes = 0;
    if (MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &yes) != MPI_SUCCESS)
        yes = 0;
    if (why)
        *why = "MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA)";
    return yes != 0;
#else
    if (why)
        *why = "the MPI library offers no CUDA-awareness query (set HALOX_MPI_CUDA_AWARE=1 to "
               "assert it)";
    return 0;
#endif
}

hx_status hx_comm_mpi_dup(hx_comm *c, void **mpi_comm)
{
    HX_CHECK(c && mpi_comm, HX_ERR_INVALID_ARG, "hx_comm_mpi_dup: NULL argument");
    *mpi_comm = NULL;
    HX_CHECK(c->ops == &mpi_ops, HX_ERR_UNSUPPORTED,
             "the %s communicator has no MPI communicator to duplicate", c->ops->name);
    HX_TRY(check_usable(c));
    MPI_Comm *d = malloc(sizeof *d);
    HX_CHECK(d, HX_ERR_NOMEM, "out of memory");
    MPI_Request rq;
    int rc = MPI_Comm_idup(comm_of(c), d, &rq);
    if (rc != MPI_SUCCESS) {
        free(d);
        return mpi_error(rc, __FILE__, __LINE__, "MPI_Comm_idup");
    }
    HX_TRY(coll_wait(c, &rq, "duplicating the communicator")); /* on a timeout d stays MPI's */
    *mpi_comm = d;
    return HX_OK;
}

void hx_comm_mpi_free(void **mpi_comm)
{
    if (!mpi_comm || !*mpi_comm)
        return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
        MPI_Comm_free((MPI_Comm *)*mpi_comm);
    free(*mpi_comm);
    *mpi_comm = NULL;
}

#define HX_MAX_FINALIZE_HOOKS 8
static void (*finalize_hooks[HX_MAX_FINALIZE_HOOKS])(void);
static int nfinalize_hooks;

hx_status hx_mpi_at_finalize(void (*fn)(void))
{
    HX_CHECK(fn, HX_ERR_INVALID_ARG, "hx_mpi_at_finalize: NULL function");
    HX_CHECK(nfinalize_hooks < HX_MAX_FINALIZE_HOOKS, HX_ERR_INTERNAL,
             "more than %d MPI finalize hooks", HX_MAX_FINALIZE_HOOKS);
    finalize_hooks[nfinalize_hooks++] = fn;
    return HX_OK;
}

void hx_mpi_library_version(char *buf, int len)
{
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int n = 0;
    if (len <= 0)
        return;
    if (MPI_Get_library_version(v, &n) != MPI_SUCCESS)
        snprintf(v, sizeof v, "unknown");
    v[sizeof v - 1] = 0;
    char *nl = strpbrk(v, "\r\n");
    if (nl)
        *nl = 0;
    /* Open MPI appends ", package: ..., ident: ..., repo rev: ..." to its version: keep the
     * version itself */
    char *comma = strstr(v, ", package");
    if (comma)
        *comma = 0;
    snprintf(buf, (size_t)len, "%s", v);
}

/* ---- program-level MPI -------------------------------------------------------------------- */

static int hx_mpi_started; /* we called MPI_Init and must finalize */

static int launched_by_mpi(void)
{
    static const char *vars[] = {
        "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",         "PMIX_RANK", "MPI_LOCALNRANKS",
        "SLURM_PROCID",         "HYDRA_CONTROL_FD", NULL};
    for (int i = 0; vars[i]; i++)
        if (getenv(vars[i]))
            return 1;
    return 0;
}

hx_status hx_mpi_init(int *argc, char ***argv, int *parallel)
{
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited && launched_by_mpi()) {
        HX_MPI(MPI_Init(argc, argv));
        hx_mpi_started = 1;
        inited = 1;
    }
    if (parallel)
        *parallel = inited;
    return HX_OK;
}

hx_status hx_comm_create_world(hx_comm **out)
{
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited)
        return hx_comm_create_serial(1, out);
    MPI_Comm world = MPI_COMM_WORLD;
    return hx_comm_create_mpi(&world, out);
}

void hx_mpi_finalize(void)
{
    int finalized = 0;
    MPI_Finalized(&finalized);
    /* libraries bootstrapped on MPI finalize first, newest first; each hook runs once */
    while (nfinalize_hooks > 0 && !finalized)
        finalize_hooks[--nfinalize_hooks]();
    if (hx_mpi_started && !finalized)
        MPI_Finalize();
    hx_mpi_started = 0;
}

void hx_mpi_rank_size(int *rank, int *size)
{
    int inited = 0;
    MPI_Initialized(&inited);
    *rank = 0;
    *size = 1;
    if (inited) {
        MPI_Comm_rank(MPI_COMM_WORLD, rank);
        MPI_Comm_size(MPI_COMM_WORLD, size);
    }
}
