/* MPI transport: one domain per rank. This is the only file of halox that calls MPI.
 *
 * The library duplicates the caller's communicator (its messages can never match the caller's)
 * and sets MPI_ERRORS_RETURN on the duplicate so that a failing call becomes an hx_status with
 * MPI's own message instead of killing the job from inside the library. */
#include "comm/comm_impl.h"
#include "core/error.h"

#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h> /* MPIX_CUDA_AWARE_SUPPORT, MPIX_Query_cuda_support */
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct mpi_impl {
    MPI_Comm comm;
    int node_rank, node_size; /* computed on first use; node_size 0: not yet */
} mpi_impl;

#define HX_MPI_MSG_LEN 1024

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

static MPI_Comm comm_of(hx_comm *c)
{
    return ((mpi_impl *)c->impl)->comm;
}

static hx_status mpi_sendrecv(hx_comm *c, const int *dest, const void *const *send,
                              const size_t *send_bytes, const int *src, void *const *recv,
                              const size_t *recv_bytes)
{
    HX_CHECK(send_bytes[0] <= INT32_MAX && recv_bytes[0] <= INT32_MAX, HX_ERR_UNSUPPORTED,
             "message of more than 2 GiB (%zu / %zu bytes): use more domains", send_bytes[0],
             recv_bytes[0]);
    int d = dest[0] < 0 ? MPI_PROC_NULL : dest[0];
    int s = src[0] < 0 ? MPI_PROC_NULL : src[0];
    MPI_Status status;
    HX_MPI(MPI_Sendrecv(send[0], (int)send_bytes[0], MPI_BYTE, d, 17, recv[0], (int)recv_bytes[0],
                        MPI_BYTE, s, 17, comm_of(c), &status));
    if (s != MPI_PROC_NULL) {
        int got = 0;
        HX_MPI(MPI_Get_count(&status, MPI_BYTE, &got));
        HX_CHECK((size_t)got == recv_bytes[0], HX_ERR_INTERNAL,
                 "rank %d expected %zu bytes from rank %d and got %d", c->rank, recv_bytes[0], s,
                 got);
    }
    return HX_OK;
}

/* Reductions go through rank 0 in rank order so that results are bit-reproducible regardless
 * of the MPI library's reduction tree. They are used for a few energies per step, not bulk. */
static hx_status mpi_sum_f64(hx_comm *c, const double *in, double *out, int n)
{
    MPI_Comm comm = comm_of(c);
    double *all = NULL;
    if (c->rank == 0) {
        all = malloc((size_t)n * c->nranks * sizeof *all + 1);
        HX_CHECK(all, HX_ERR_NOMEM, "out of memory");
    }
    int rc = MPI_Gather(in, n, MPI_DOUBLE, all, n, MPI_DOUBLE, 0, comm);
    if (rc != MPI_SUCCESS) {
        free(all);
        return mpi_error(rc, __FILE__, __LINE__, "MPI_Gather");
    }
    if (c->rank == 0) {
        for (int k = 0; k < n; k++) {
            double s = 0.0;
            for (int r = 0; r < c->nranks; r++)
                s += all[(size_t)r * n + k];
            out[k] = s;
        }
        free(all);
    }
    HX_MPI(MPI_Bcast(out, n, MPI_DOUBLE, 0, comm));
    return HX_OK;
}

static hx_status mpi_max_i64(hx_comm *c, const long long *in, long long *out, int n)
{
    HX_MPI(MPI_Allreduce(in, out, n, MPI_LONG_LONG, MPI_MAX, comm_of(c)));
    return HX_OK;
}

static hx_status mpi_agree(hx_comm *c, hx_status local_status)
{
    MPI_Comm comm = comm_of(c);
    int mine = local_status == HX_OK ? c->nranks : c->rank, first = 0;
    HX_MPI(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm));
    if (first == c->nranks)
        return HX_OK;
    char msg[HX_MPI_MSG_LEN] = "";
    int code = (int)local_status;
    if (c->rank == first)
        snprintf(msg, sizeof msg, "%s", hx_last_error_message());
    HX_MPI(MPI_Bcast(msg, (int)sizeof msg, MPI_CHAR, first, comm));
    HX_MPI(MPI_Bcast(&code, 1, MPI_INT, first, comm));
    if (c->rank == first)
        return local_status; /* keep the full local message and trace */
    if (local_status != HX_OK)
        return local_status; /* this rank failed too: its own message is the more useful one */
    HX_FAIL(HX_ERR_REMOTE, "rank %d failed (%s): %s", first, hx_status_name((hx_status)code), msg);
}

static hx_status mpi_gather_bytes(hx_comm *c, const void *const *in, const size_t *in_bytes,
                                  void **out, size_t *counts)
{
    MPI_Comm comm = comm_of(c);
    HX_CHECK(in_bytes[0] <= INT32_MAX, HX_ERR_UNSUPPORTED, "gather of more than 2 GiB per rank");
    int mine = (int)in_bytes[0];
    int *sizes = NULL, *displs = NULL;
    char *buf = NULL;
    hx_status st = HX_OK;
    *out = NULL;
    if (c->rank == 0) {
        sizes = malloc((size_t)c->nranks * sizeof *sizes);
        displs = malloc((size_t)c->nranks * sizeof *displs);
        if (!sizes || !displs)
            HX_FAIL_GOTO(st, HX_ERR_NOMEM, done, "out of memory");
    }
    int rc = MPI_Gather(&mine, 1, MPI_INT, sizes, 1, MPI_INT, 0, comm);
    if (rc != MPI_SUCCESS) {
        st = mpi_error(rc, __FILE__, __LINE__, "MPI_Gather");
        goto done;
    }
    if (c->rank == 0) {
        long long total = 0;
        for (int r = 0; r < c->nranks; r++) {
            displs[r] = (int)total;
            total += sizes[r];
            if (counts)
                counts[r] = (size_t)sizes[r];
        }
        if (total > INT32_MAX)
            HX_FAIL_GOTO(st, HX_ERR_UNSUPPORTED, done, "gather of more than 2 GiB in total");
        buf = malloc((size_t)total + 1);
        if (!buf)
            HX_FAIL_GOTO(st, HX_ERR_NOMEM, done, "out of memory gathering %lld bytes", total);
    }
    rc = MPI_Gatherv(in[0], mine, MPI_BYTE, buf, sizes, displs, MPI_BYTE, 0, comm);
    if (rc != MPI_SUCCESS) {
        st = mpi_error(rc, __FILE__, __LINE__, "MPI_Gatherv");
        goto done;
    }
    *out = buf;
    buf = NULL;
done:
    free(buf);
    free(sizes);
    free(displs);
    return st;
}

static hx_status mpi_bcast_bytes(hx_comm *c, void *buf, size_t bytes)
{
    HX_CHECK(bytes <= INT32_MAX, HX_ERR_UNSUPPORTED, "broadcast of more than 2 GiB");
    HX_MPI(MPI_Bcast(buf, (int)bytes, MPI_BYTE, 0, comm_of(c)));
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
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
        MPI_Comm_free(&m->comm);
    free(m);
    c->impl = NULL;
}

static const hx_comm_ops mpi_ops = {
    "mpi",           mpi_sendrecv, mpi_sum_f64, mpi_max_i64, mpi_agree, mpi_gather_bytes,
    mpi_bcast_bytes, mpi_abort,    mpi_destroy,
};

hx_status hx_comm_create_mpi(const void *mpi_comm, hx_comm **out)
{
    HX_CHECK(mpi_comm && out, HX_ERR_INVALID_ARG, "hx_comm_create_mpi: NULL argument");
    *out = NULL;
    int inited = 0;
    HX_MPI(MPI_Initialized(&inited));
    HX_CHECK(inited, HX_ERR_INVALID_ARG,
             "hx_comm_create_mpi: MPI is not initialised; call MPI_Init first");
    hx_comm *c = calloc(1, sizeof *c);
    mpi_impl *m = calloc(1, sizeof *m);
    int *loc = malloc(sizeof *loc);
    if (!c || !m || !loc) {
        free(c);
        free(m);
        free(loc);
        HX_FAIL(HX_ERR_NOMEM, "out of memory");
    }
    int rc = MPI_Comm_dup(*(const MPI_Comm *)mpi_comm, &m->comm);
    if (rc != MPI_SUCCESS) {
        free(c);
        free(m);
        free(loc);
        return mpi_error(rc, __FILE__, __LINE__, "MPI_Comm_dup");
    }
    MPI_Comm_set_errhandler(m->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(m->comm, &c->rank);
    MPI_Comm_size(m->comm, &c->nranks);
    loc[0] = c->rank;
    c->ops = &mpi_ops;
    c->impl = m;
    c->ndomains = c->nranks;
    c->nlocal = 1;
    c->local_domains = loc;
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
    MPI_Comm *d = malloc(sizeof *d);
    HX_CHECK(d, HX_ERR_NOMEM, "out of memory");
    int rc = MPI_Comm_dup(comm_of(c), d);
    if (rc != MPI_SUCCESS) {
        free(d);
        return mpi_error(rc, __FILE__, __LINE__, "MPI_Comm_dup");
    }
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
