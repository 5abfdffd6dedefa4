/* hx_halo, the front end of the halo exchange: the backend registry, argument checks, the
 * update/generation protocol, statistics, and the integer exchange on host memory, which every
 * backend shares. Backends implement src/halo/halo_impl.h. */
#include "halo/halo_impl.h"
#include "comm/comm_impl.h"
#include "halo/halo_dev.h"
#include "core/error.h"
#include "core/timer.h"
#include "core/wait.h"
#include "gpu/context.h"
#include "halox/version.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* GPU backends are registered once their sources are compiled in. */
#ifndef HX_HALO_HAVE_GPU
#define HX_HALO_HAVE_GPU 0
#endif
#ifndef HX_HALO_HAVE_NVSHMEM
#define HX_HALO_HAVE_NVSHMEM 0
#endif
#ifndef HX_HALO_HAVE_GPU_LOCAL
#define HX_HALO_HAVE_GPU_LOCAL 0
#endif

typedef struct backend_entry {
    const char *name;
    const hx_halo_ops *ops; /* NULL: not compiled into this build */
    const char *needs;      /* what to rebuild with */
} backend_entry;

static const backend_entry registry[] = {
    {"host", &hx_halo_ops_host, ""},
#if HX_HALO_HAVE_GPU
    {"gpu-mpi", &hx_halo_ops_gpu_mpi, ""},     {"gpu-direct", &hx_halo_ops_gpu_direct, ""},
#else
    {"gpu-mpi", NULL, "CUDA and MPI (nvcc and mpicc found at configure time)"},
    {"gpu-direct", NULL, "CUDA and MPI (nvcc and mpicc found at configure time)"},
#endif
#if HX_HALO_HAVE_NVSHMEM
    {"nvshmem", &hx_halo_ops_nvshmem, ""},
#else
    {"nvshmem", NULL,
     "CUDA, MPI and NVSHMEM (pip install nvidia-nvshmem-cu13, or set NVSHMEM_HOME)"},
#endif
/* every domain in one process on one GPU: tests and the CPU emulation (not listed) */
#if HX_HALO_HAVE_GPU_LOCAL
    {"gpu-local", &hx_halo_ops_gpu_local, ""},
#else
    {"gpu-local", NULL, "CUDA (nvcc found at configure time)"},
#endif
};
#define NBACKENDS ((int)(sizeof registry / sizeof registry[0]))

static const char *const backend_names[] = {"host", "gpu-mpi", "gpu-direct", "nvshmem", NULL};

const char *const *hx_halo_backend_names(void)
{
    return backend_names;
}

static const backend_entry *find_backend(const char *name)
{
    for (int i = 0; i < NBACKENDS; i++)
        if (strcmp(registry[i].name, name) == 0)
            return &registry[i];
    return NULL;
}

hx_status hx_halo_backend_available(const char *name)
{
    HX_CHECK(name, HX_ERR_INVALID_ARG, "hx_halo_backend_available: NULL name");
    const backend_entry *e = find_backend(name);
    HX_CHECK(e, HX_ERR_INVALID_ARG,
             "unknown halo backend '%s': use host, gpu-mpi, gpu-direct or nvshmem", name);
    HX_CHECK(e->ops, HX_ERR_NOT_COMPILED,
             "halo backend '%s' was not compiled into this halox: rebuild with %s", name, e->needs);
    return HX_OK;
}

void hx_halo_config_default(hx_halo_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->backend = "host";
    cfg->real = HX_REAL_F64;
    cfg->mem = HX_MEM_HOST;
    cfg->path = HX_HALO_PATH_AUTO;
    cfg->wait_timeout = -1.0;
    cfg->wait_backoff_ns = -1;
}

void hx_halo_destroy(hx_halo **hp)
{
    if (!hp || !*hp)
        return;
    hx_halo *h = *hp;
    if (h->ops && h->ops->destroy) {
        /* on the context's device, whatever the caller has current; if even entering it fails
         * the backend still frees its host memory (its CUDA calls then fail, and are ignored) */
        hx_gpu_guard g;
        const int entered = hx_gpu_enter_quiet(h->ops->device ? h->cfg.gpu : NULL, &g);
        h->ops->destroy(h);
        if (entered)
            hx_gpu_leave(&g);
    }
    free(h->x);
    free(h->f);
    free(h);
    *hp = NULL;
}

/* The device backends run on the caller's GPU context and nowhere else. */
static hx_status check_gpu_context(const hx_halo_config *c, hx_comm *comm)
{
    HX_CHECK(c->gpu, HX_ERR_INVALID_ARG,
             "halo backend '%s' runs on a GPU context and none was given: create one with "
             "hx_gpu_context_create(&params, comm, &ctx) on this communicator (it chooses the "
             "device, by node-local rank or a device list, and owns the streams) and set "
             "hx_halo_config.gpu = ctx",
             c->backend);
    /* the context knows the ranks of its communicator by UUID; the exchange's PEs must be the
     * same ranks. A communicator of this process alone has no peer but itself: any context */
    HX_CHECK(hx_comm_nranks(comm) == 1 ||
                 (c->gpu->nranks == hx_comm_nranks(comm) && c->gpu->rank == hx_comm_rank(comm)),
             HX_ERR_INVALID_ARG,
             "halo backend '%s': the GPU context was created on a communicator of %d ranks "
             "where this process is rank %d, the exchange's has %d ranks and this process as rank "
             "%d: create the context on the exchange's communicator",
             c->backend, c->gpu->nranks, c->gpu->rank, hx_comm_nranks(comm), hx_comm_rank(comm));
    return HX_OK;
}

/* After a device backend's set-up, update, refresh or message set-up (st: its status), with the
 * context's device current: what it left on the legacy default stream is done. Those ops upload
 * with cudaMemcpy and clear with cudaMemset (the pulse table and step words of nvshmem, the plan
 * image's header, the search step's message buffers, regrown arrays), and the exchanges that
 * read them run on the context's streams, which are non-blocking: nothing orders them after the
 * default stream, a cudaMemset returns before it ran, and a cudaMemcpy from pageable memory
 * may return before its DMA has landed. The CPU emulation runs every call as it is made and
 * cannot show the race; on a GPU it is a kernel reading a stale pulse table or a cleared header. */
static hx_status default_stream_done(hx_halo *h, hx_status st)
{
    if (st != HX_OK || !h->ops->device)
        return st;
    return hx_gpu_stream_wait(NULL, hx_wait_timeout_gpu(HX_WAIT_SETUP), hx_comm_rank(h->comm),
                              "the %s exchange's set-up copies (default stream)", h->ops->name);
}

/* Every call into a device backend runs with the context's device current. */
static hx_status halo_setup(hx_halo *h)
{
    HX_GPU_ON(h->ops->device ? h->cfg.gpu : NULL, default_stream_done(h, h->ops->setup(h)));
}

static hx_status halo_update(hx_halo *h)
{
    HX_GPU_ON(h->ops->device ? h->cfg.gpu : NULL, default_stream_done(h, h->ops->update(h)));
}

hx_status hx_halo_create(const hx_plan *plan, hx_comm *comm, const hx_halo_config *cfg,
                         hx_halo **out)
{
    HX_CHECK(plan && comm && out, HX_ERR_INVALID_ARG, "hx_halo_create: NULL argument");
    *out = NULL;
    hx_halo_config c;
    if (cfg)
        c = *cfg;
    else
        hx_halo_config_default(&c);
    if (!c.backend)
        c.backend = "host";
    /* Every check below depends only on arguments that are the same on every rank, so all
     * ranks fail together and nobody is left in a collective. */
    HX_TRY(hx_halo_backend_available(c.backend));
    HX_CHECK(hx_plan_nlocal(plan) == hx_comm_nlocal(comm), HX_ERR_INVALID_ARG,
             "hx_halo_create: the plan was built for another communicator");
    HX_CHECK(c.real == HX_REAL_F64 || c.real == HX_REAL_F32, HX_ERR_INVALID_ARG,
             "hx_halo_create: unknown real type %d", (int)c.real);
    HX_CHECK(c.mem == HX_MEM_HOST || c.mem == HX_MEM_DEVICE, HX_ERR_INVALID_ARG,
             "hx_halo_create: unknown memory space %d", (int)c.mem);
    HX_CHECK(c.path >= HX_HALO_PATH_AUTO && c.path <= HX_HALO_PATH_NETWORK, HX_ERR_INVALID_ARG,
             "hx_halo_create: unknown path %d", (int)c.path);
    HX_CHECK(hx_plan_domain(plan, 0)->generation > 0, HX_ERR_INVALID_ARG,
             "hx_halo_create: build the plan (hx_plan_build) before creating its exchange");
    hx_halo *h = calloc(1, sizeof *h);
    HX_CHECK(h, HX_ERR_NOMEM, "out of memory");
    h->plan = plan;
    h->comm = comm;
    h->cfg = c;
    h->ops = find_backend(c.backend)->ops;
    h->cfg.backend = h->ops->name; /* a static string: the caller's may not outlive us */
    h->nlocal = hx_plan_nlocal(plan);
    h->x = calloc((size_t)h->nlocal, sizeof *h->x);
    h->f = calloc((size_t)h->nlocal, sizeof *h->f);
    hx_status st = h->x && h->f
                       ? HX_OK
                       : hx_error_set(HX_ERR_NOMEM, __FILE__, __LINE__, __func__, "out of memory");
    if (st == HX_OK && h->ops->device)
        st = check_gpu_context(&c, comm);
    /* a rank given no context (or one of another communicator) must not leave the others in the
     * backend's collectives */
    st = hx_comm_agree(comm, st);
    if (st == HX_OK)
        st = halo_setup(h);
    if (st == HX_OK)
        st = hx_halo_update(h);
    if (st != HX_OK) {
        hx_halo_destroy(&h);
        return st;
    }
    *out = h;
    return HX_OK;
}

hx_status hx_halo_update(hx_halo *h)
{
    HX_CHECK(h, HX_ERR_INVALID_ARG, "hx_halo_update: NULL handle");
    hx_status st = halo_update(h);
    /* agreed, so that a backend's collective allocations never run on a subset of ranks */
    HX_TRY(hx_comm_agree(h->comm, st));
    const hx_domain_plan *p = hx_plan_domain(h->plan, 0);
    h->generation = p->generation;
    h->cap_local = p->cap_local;
    h->cap_buf = p->cap_buf;
    return HX_OK;
}

int hx_halo_refresh_grows(const hx_halo *h)
{
    if (!h)
        return 0;
    const hx_domain_plan *p = hx_plan_domain(h->plan, 0);
    /* capacities are global maxima: every process takes the same branch */
    return !h->ops->refresh || p->cap_local > h->cap_local || p->cap_buf > h->cap_buf;
}

hx_status hx_halo_refresh(hx_halo *h, hx_stream stream, int *updated)
{
    HX_CHECK(h, HX_ERR_INVALID_ARG, "hx_halo_refresh: NULL handle");
    const int update = hx_halo_refresh_grows(h);
    if (updated)
        *updated = update;
    if (update)
        return hx_halo_update(h);
    hx_stream s = NULL;
    if (h->ops->device && stream)
        HX_TRY(hx_gpu_ctx_accept_stream(h->cfg.gpu, stream, "hx_halo_refresh", &h->stream_ok, &s));
    hx_gpu_guard g;
    HX_TRY(hx_gpu_enter(h->ops->device ? h->cfg.gpu : NULL, &g));
    /* with a stream nothing went to the default stream: no wait for the device */
    hx_status st = h->ops->refresh(h, s);
    if (!s)
        st = default_stream_done(h, st);
    hx_gpu_leave(&g);
    HX_TRY(st);
    h->generation = hx_plan_domain(h->plan, 0)->generation;
    return HX_OK;
}

int hx_halo_msg_kind(const hx_halo *h)
{
    if (!h || !h->ops->msg_setup || !h->ops->msg)
        return 0;
    return h->ops->msg_device ? 2 : 1;
}

hx_status hx_halo_msg_setup(hx_halo *h, int nchan, const size_t *cap, void ***send, void ***recv)
{
    HX_CHECK(h && cap && send && recv && nchan >= 0, HX_ERR_INVALID_ARG,
             "hx_halo_msg_setup: bad argument");
    HX_CHECK(hx_halo_msg_kind(h), HX_ERR_UNSUPPORTED,
             "halo backend '%s' has no device messages (the device search step needs gpu-mpi, "
             "gpu-direct, nvshmem or gpu-local)",
             h->ops->name);
    /* agreed, so that symmetric allocations never run on a subset of the processes; a rank
     * that cannot enter its device still takes the agreements (the backend's are inside) */
    hx_gpu_guard g;
    hx_status st = hx_gpu_enter(h->ops->device ? h->cfg.gpu : NULL, &g);
    HX_TRY(hx_comm_agree(h->comm, st));
    st = default_stream_done(h, h->ops->msg_setup(h, nchan, cap, send, recv));
    hx_gpu_leave(&g);
    return hx_comm_agree(h->comm, st);
}

hx_status hx_halo_msg(hx_halo *h, int chan, const int *dest, const int *src, hx_stream stream)
{
    HX_CHECK(h && dest && src && h->ops->msg, HX_ERR_INVALID_ARG, "hx_halo_msg: bad argument");
    HX_GPU_ON(h->ops->device ? h->cfg.gpu : NULL, h->ops->msg(h, chan, dest, src, stream));
}

void *hx_halo_x(const hx_halo *h, int local)
{
    return h->x[local];
}

void *hx_halo_f(const hx_halo *h, int local)
{
    return h->f[local];
}

int hx_halo_capacity(const hx_halo *h)
{
    return h->cap_local;
}

const hx_halo_config *hx_halo_get_config(const hx_halo *h)
{
    return &h->cfg;
}

const char *hx_halo_backend_name(const hx_halo *h)
{
    return h->ops->name;
}

int hx_halo_capturable(const hx_halo *h)
{
    return h->ops->capturable;
}

const char *hx_halo_describe(const hx_halo *h)
{
    return h->describe[0] ? h->describe : h->ops->name;
}

/* A plan rebuilt after the last update has other sizes than the buffers: refuse it (rather
 * than overflow), naming the fix. */
static hx_status check_current(const hx_halo *h)
{
    long long g = hx_plan_domain(h->plan, 0)->generation;
    HX_CHECK(g == h->generation, HX_ERR_INVALID_ARG,
             "halo exchange: the plan was rebuilt (build %lld) after the exchange was last "
             "updated (build %lld): call hx_halo_update after every hx_plan_build",
             g, h->generation);
    return HX_OK;
}

/* One exchange: the caller's stream checked against the context's device (a pointer compare
 * for the context's own streams and the last one accepted), the op run on that device. The host
 * backend gets the stream as it came (it refuses anything but NULL). */
static hx_status exchange(hx_halo *h, void *stream, int forces)
{
    const char *who = forces ? "hx_halo_exchange_f" : "hx_halo_exchange_x";
    HX_CHECK(h, HX_ERR_INVALID_ARG, "%s: NULL handle", who);
    HX_TRY(check_current(h));
    hx_stream s = (hx_stream)stream;
    if (h->ops->device)
        HX_TRY(hx_gpu_ctx_accept_stream(h->cfg.gpu, stream, who, &h->stream_ok, &s));
    hx_gpu_guard g;
    HX_TRY(hx_gpu_enter(h->ops->device ? h->cfg.gpu : NULL, &g));
    double t0 = hx_wtime();
    hx_status st = forces ? h->ops->exchange_f(h, s) : h->ops->exchange_x(h, s);
    const double dt = hx_wtime() - t0;
    hx_gpu_leave(&g);
    if (forces) {
        h->stats.f_calls++;
        h->stats.f_seconds += dt;
    } else {
        h->stats.x_calls++;
        h->stats.x_seconds += dt;
    }
    return st;
}

hx_status hx_halo_exchange_x(hx_halo *h, void *stream)
{
    return exchange(h, stream, 0);
}

hx_status hx_halo_exchange_f(hx_halo *h, void *stream)
{
    return exchange(h, stream, 1);
}

hx_status hx_halo_exchange_int(hx_halo *h, int *const *v, int ncomp, hx_memspace mem)
{
    HX_CHECK(h && v && ncomp >= 1, HX_ERR_INVALID_ARG,
             "hx_halo_exchange_int: bad argument (ncomp %d must be >= 1)", ncomp);
    HX_TRY(check_current(h));
    if (mem == HX_MEM_HOST)
        return hx_plan_exchange_int((hx_plan *)h->plan, v, ncomp);
    HX_CHECK(mem == HX_MEM_DEVICE, HX_ERR_INVALID_ARG, "hx_halo_exchange_int: unknown memory %d",
             (int)mem);
    HX_CHECK(h->ops->exchange_int, HX_ERR_UNSUPPORTED,
             "halo backend '%s' exchanges integers in host memory only", h->ops->name);
    HX_GPU_ON(h->ops->device ? h->cfg.gpu : NULL, h->ops->exchange_int(h, v, ncomp));
}

hx_status hx_first_error_keep(hx_first_error *fe, hx_status st)
{
    if (fe->st == HX_OK && st != HX_OK) {
        fe->st = st;
        snprintf(fe->msg, sizeof fe->msg, "%s", hx_last_error_message());
    }
    return fe->st;
}

hx_status hx_first_error_status(const hx_first_error *fe)
{
    if (fe->st == HX_OK)
        return HX_OK;
    return hx_error_set(fe->st, __FILE__, __LINE__, __func__, "%s", fe->msg);
}

void hx_halo_get_stats(const hx_halo *h, hx_halo_stats *s)
{
    *s = h->stats;
}

#ifndef HX_HALO_HAVE_CUDA
/* without CUDA (and in the CPU emulation build) there is no device stream to time */
hx_status hx_halo_time_exchange(hx_halo *h, void *stream, int warmup, int steps, int batch,
                                int graph, double *batch_us, double *wall_us)
{
    (void)h;
    (void)stream;
    (void)warmup;
    (void)steps;
    (void)batch;
    (void)graph;
    (void)batch_us;
    (void)wall_us;
    HX_FAIL(HX_ERR_NOT_COMPILED, "hx_halo_time_exchange: halox was built without CUDA: rebuild "
                                 "with nvcc available");
}
#endif
