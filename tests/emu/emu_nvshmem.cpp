/* CPU emulation of the NVSHMEM subset halox uses (the model: nvshmem.h beside this file): PEs
 * are MPI ranks on one node, the symmetric heap is POSIX shared memory mapped by every PE,
 * signals are atomics in it, every wait has a deadline. */
#include "nvshmem.h"

#include <cuda_runtime.h>
/* the C API only (Open MPI and MPICH would add their C++ bindings, which need another library) */
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>

#include <fcntl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

namespace
{
struct emu_shmem {
    int state = 0; /* 0 never started, 1 running, 2 finalised */
    MPI_Comm comm = MPI_COMM_NULL;
    int pe = -1, npes = 0;
    size_t heap = 0;               /* bytes per PE */
    unsigned char *base = nullptr; /* PE i's heap at base + i * heap, in this process */
    unsigned char *mine = nullptr; /* base + pe * heap */
    std::map<size_t, size_t> free_blocks, used; /* offset -> bytes, this PE's heap (the same on
                                                   every PE: collective, in the same order) */
};
emu_shmem g;

const size_t align = 256;

double now_s()
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The deadline of every wait here: the exchange's own, else a minute. */
double wait_limit_s()
{
    const char *e = std::getenv("HALOX_HALO_WAIT_TIMEOUT");
    const double t = e ? std::atof(e) : 0.0;
    return t > 0 ? t : 60.0;
}

[[noreturn]] __attribute__((format(printf, 1, 2))) void die(const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    std::fprintf(stderr, "halox CPU emulation of NVSHMEM: PE %d: %s; aborting\n", g.pe, msg);
    std::fflush(stderr);
    std::abort();
}

void complain(const char *what)
{
    std::fprintf(stderr, "halox CPU emulation of NVSHMEM: %s\n", what);
}

/* A nonblocking collective completed within the deadline, or the process aborted. */
void mpi_wait(MPI_Request *r, const char *what)
{
    const double end = now_s() + wait_limit_s();
    for (;;) {
        int done = 0;
        MPI_Test(r, &done, MPI_STATUS_IGNORE);
        if (done)
            return;
        if (now_s() > end)
            die("%s: waited %.0f s for the other PEs (HALOX_HALO_WAIT_TIMEOUT): a PE did not take "
                "part in the collective call",
                what, wait_limit_s());
        usleep(100);
    }
}

void barrier(const char *what)
{
    MPI_Request r;
    MPI_Ibarrier(g.comm, &r);
    mpi_wait(&r, what);
}

/* NVSHMEM_SYMMETRIC_SIZE: bytes, with an optional K, M, G or T (powers of 1024). */
bool heap_size(size_t *out)
{
    const char *e = std::getenv("NVSHMEM_SYMMETRIC_SIZE");
    if (!e || !e[0]) {
        *out = (size_t)1 << 30; /* NVSHMEM's default */
        return true;
    }
    char *end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(e, &end, 10);
    int shift = 0;
    if (end && *end) {
        const char u = (char)(*end | 0x20);
        shift = u == 'k' ? 10 : u == 'm' ? 20 : u == 'g' ? 30 : u == 't' ? 40 : -1;
        end++;
    }
    if (errno || end == e || *end || shift < 0 || v == 0 || v > (1ull << 44) >> shift)
        return false;
    *out = (size_t)(v << shift);
    return true;
}

/* HALOX_EMU_SLOW_PE=R:MS: the pause of this PE in ns (0: not the slow one); false: malformed. */
bool slow_pe(long long *ns)
{
    *ns = 0;
    const char *e = std::getenv("HALOX_EMU_SLOW_PE");
    if (!e || !e[0])
        return true;
    int r = -1;
    double ms = 0;
    char tail = 0;
    if (std::sscanf(e, "%d:%lf%c", &r, &ms, &tail) != 2 || r < 0 || ms <= 0 || ms > 10000)
        return false;
    if (r == g.pe)
        *ns = (long long)(ms * 1e6);
    return true;
}

/* The address of symmetric address p on pe, in this process; nullptr when p is not in this PE's
 * heap or pe is not a PE. */
void *translate(const void *p, int pe)
{
    const unsigned char *q = (const unsigned char *)p;
    if (g.state != 1 || !q || q < g.mine || q >= g.mine + g.heap || pe < 0 || pe >= g.npes)
        return nullptr;
    return g.base + (size_t)pe * g.heap + (size_t)(q - g.mine);
}

void *remote(const void *p, int pe, const char *what)
{
    void *r = translate(p, pe);
    if (!r)
        die("%s: %p on PE %d is not a symmetric address of a running NVSHMEM (heap %p, %zu bytes "
            "per PE, %d PEs)",
            what, p, pe, (void *)g.mine, g.heap, g.npes);
    return r;
}

void signal_apply(uint64_t *sig, uint64_t v, int op, const char *what)
{
    std::atomic_ref<uint64_t> a(*sig);
    if (op == NVSHMEM_SIGNAL_SET)
        a.store(v, std::memory_order_release);
    else if (op == NVSHMEM_SIGNAL_ADD)
        a.fetch_add(v, std::memory_order_release);
    else
        die("%s: signal operation %d (give NVSHMEM_SIGNAL_SET or NVSHMEM_SIGNAL_ADD)", what, op);
    if (emu::slow_ns)
        emu::slow_publish();
}

const char *cmp_name(int cmp)
{
    static const char *const names[] = {"==", "!=", ">", "<=", "<", ">="};
    return cmp >= NVSHMEM_CMP_EQ && cmp <= NVSHMEM_CMP_GE ? names[cmp] : "?";
}

bool compare(uint64_t v, int cmp, uint64_t c)
{
    switch (cmp) {
    case NVSHMEM_CMP_EQ:
        return v == c;
    case NVSHMEM_CMP_NE:
        return v != c;
    case NVSHMEM_CMP_GT:
        return v > c;
    case NVSHMEM_CMP_LE:
        return v <= c;
    case NVSHMEM_CMP_LT:
        return v < c;
    case NVSHMEM_CMP_GE:
        return v >= c;
    default:
        die("nvshmem_signal_wait_until: comparison %d", cmp);
    }
}

/* The block-wide operations: this thread's index and the block's size. */
size_t block_tid()
{
    return threadIdx.x + (size_t)blockDim.x * (threadIdx.y + (size_t)blockDim.y * threadIdx.z);
}
size_t block_size()
{
    return (size_t)blockDim.x * blockDim.y * blockDim.z;
}

void unmap()
{
    if (g.base)
        munmap(g.base, g.heap * (size_t)g.npes);
    g.base = g.mine = nullptr;
    g.free_blocks.clear();
    g.used.clear();
}

/* Collective allocation of `bytes` filled with `fill`: the same on every PE or NULL on every PE. */
void *alloc(size_t bytes, int fill, const char *what)
{
    if (g.state != 1) {
        complain("symmetric allocation before nvshmem_init or after nvshmem_finalize");
        return nullptr;
    }
    /* every PE must ask for the same size: a symmetric object differing between PEs would make
     * every later allocation differ too */
    long long mine[2] = {(long long)bytes, -(long long)bytes}, all[2] = {0, 0};
    MPI_Request r;
    MPI_Iallreduce(mine, all, 2, MPI_LONG_LONG, MPI_MAX, g.comm, &r);
    mpi_wait(&r, what);
    if (all[0] != -all[1]) {
        std::fprintf(stderr,
                     "halox CPU emulation of NVSHMEM: PE %d: %s of %zu bytes, but other PEs asked "
                     "for %lld to %lld bytes: symmetric allocations must be the same on every PE "
                     "(NULL everywhere)\n",
                     g.pe, what, bytes, -all[1], all[0]);
        return nullptr;
    }
    if (bytes == 0)
        return nullptr;
    const size_t need = (bytes + align - 1) / align * align;
    void *p = nullptr;
    for (auto it = g.free_blocks.begin(); it != g.free_blocks.end(); ++it) {
        if (it->second < need)
            continue;
        const size_t off = it->first, left = it->second - need;
        g.free_blocks.erase(it);
        if (left)
            g.free_blocks[off + need] = left;
        g.used[off] = need;
        p = g.mine + off;
        break;
    }
    if (p) {
        std::memset(p, fill, bytes);
        emu_register_device_memory(p, bytes);
    }
    /* the contents set before any peer may write into them (NVSHMEM's allocations end in a
     * barrier too) */
    barrier(what);
    return p;
}
} // namespace

extern "C" {

int nvshmemi_init_thread(int requested_thread_support, int *provided_thread_support,
                         unsigned int bootstrap_flags, nvshmemx_init_attr_t *bootstrap_attr,
                         nvshmemi_version_t version)
{
    (void)version;
    if (g.state != 0) {
        complain("nvshmemi_init_thread: NVSHMEM can be initialised once per process");
        return 1;
    }
    int mpi_up = 0;
    MPI_Initialized(&mpi_up);
    if (!(bootstrap_flags & NVSHMEMX_INIT_WITH_MPI_COMM) || !bootstrap_attr ||
        !bootstrap_attr->mpi_comm || !mpi_up) {
        complain("nvshmemi_init_thread: the emulation starts on an MPI communicator only "
                 "(NVSHMEMX_INIT_WITH_MPI_COMM, attr.mpi_comm, MPI initialised)");
        return 2;
    }
    MPI_Comm_dup(*(MPI_Comm *)bootstrap_attr->mpi_comm, &g.comm);
    MPI_Comm_rank(g.comm, &g.pe);
    MPI_Comm_size(g.comm, &g.npes);
    char why[256] = "";
    /* one node: the heap is shared memory */
    MPI_Comm node;
    MPI_Comm_split_type(g.comm, MPI_COMM_TYPE_SHARED, g.pe, MPI_INFO_NULL, &node);
    int nnode = 0;
    MPI_Comm_size(node, &nnode);
    MPI_Comm_free(&node);
    if (nnode != g.npes)
        std::snprintf(why, sizeof why,
                      "the emulation runs every PE on one node (%d of %d PEs share this one)",
                      nnode, g.npes);
    long long slow = 0;
    if (!why[0] && !heap_size(&g.heap))
        std::snprintf(why, sizeof why,
                      "NVSHMEM_SYMMETRIC_SIZE='%s': give bytes, optionally with K, M, G or T",
                      std::getenv("NVSHMEM_SYMMETRIC_SIZE"));
    if (!why[0] && !slow_pe(&slow))
        std::snprintf(why, sizeof why,
                      "HALOX_EMU_SLOW_PE='%s': give PE:MILLISECONDS (a pause of 0-10000 ms)",
                      std::getenv("HALOX_EMU_SLOW_PE"));
    g.heap = (g.heap + 4095) / 4096 * 4096;
    /* PE 0 makes the shared memory, everybody maps it, PE 0 unlinks it once all have: nothing
     * is left in /dev/shm whatever happens later */
    char name[96] = "";
    int fd = -1;
    if (g.pe == 0 && !why[0]) {
        std::snprintf(name, sizeof name, "/halox-emu-nvshmem-%ld-%lld", (long)getpid(),
                      (long long)(now_s() * 1e6));
        fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
        if (fd < 0 || ftruncate(fd, (off_t)(g.heap * (size_t)g.npes)) != 0)
            std::snprintf(why, sizeof why, "shared memory %s of %d x %zu bytes: %s", name, g.npes,
                          g.heap, std::strerror(errno));
    }
    int ok = !why[0];
    MPI_Bcast(name, sizeof name, MPI_CHAR, 0, g.comm);
    if (g.pe != 0 && ok) {
        fd = shm_open(name, O_RDWR, 0);
        if (fd < 0)
            std::snprintf(why, sizeof why, "shared memory %s: %s", name, std::strerror(errno));
    }
    if (fd >= 0 && !why[0]) {
        void *m = mmap(nullptr, g.heap * (size_t)g.npes, PROT_READ | PROT_WRITE,
                       MAP_SHARED | MAP_NORESERVE, fd, 0);
        if (m == MAP_FAILED)
            std::snprintf(why, sizeof why, "mapping %d x %zu bytes of %s: %s", g.npes, g.heap, name,
                          std::strerror(errno));
        else
            g.base = (unsigned char *)m;
    }
    if (fd >= 0)
        close(fd);
    ok = !why[0];
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, g.comm);
    if (g.pe == 0 && name[0])
        shm_unlink(name); /* every PE has mapped it (or failed) */
    if (!all) {
        if (why[0])
            std::fprintf(stderr, "halox CPU emulation of NVSHMEM: PE %d: %s\n", g.pe, why);
        unmap();
        MPI_Comm_free(&g.comm);
        return 3;
    }
    g.mine = g.base + (size_t)g.pe * g.heap;
    g.free_blocks[0] = g.heap;
    g.state = 1;
    if (slow) {
        emu_set_slow(slow);
        std::fprintf(stderr,
                     "halox CPU emulation of NVSHMEM: PE %d is slow: it pauses %g ms after every "
                     "signal it publishes (HALOX_EMU_SLOW_PE)\n",
                     g.pe, (double)slow * 1e-6);
    }
    if (provided_thread_support)
        *provided_thread_support = requested_thread_support;
    return 0;
}

void nvshmem_finalize(void)
{
    if (g.state != 1)
        return;
    barrier("nvshmem_finalize");
    emu_set_slow(0);
    unmap();
    int done = 0;
    MPI_Finalized(&done);
    if (!done)
        MPI_Comm_free(&g.comm);
    g.state = 2;
}

int nvshmem_my_pe(void)
{
    return g.state == 1 ? g.pe : -1;
}

int nvshmem_n_pes(void)
{
    return g.state == 1 ? g.npes : -1;
}

/* every PE is on one node: the node's team and the world are the same */
int nvshmem_team_my_pe(nvshmem_team_t team)
{
    return g.state == 1 && team >= NVSHMEM_TEAM_WORLD && team <= NVSHMEMX_TEAM_NODE ? g.pe : -1;
}

int nvshmem_team_n_pes(nvshmem_team_t team)
{
    return g.state == 1 && team >= NVSHMEM_TEAM_WORLD && team <= NVSHMEMX_TEAM_NODE ? g.npes : -1;
}

void nvshmemx_vendor_get_version_info(int *major, int *minor, int *patch)
{
    *major = NVSHMEM_VENDOR_MAJOR_VERSION;
    *minor = NVSHMEM_VENDOR_MINOR_VERSION;
    *patch = NVSHMEM_VENDOR_PATCH_VERSION;
}

void *nvshmem_malloc(size_t size)
{
    return alloc(size, 0xff, "nvshmem_malloc");
}

void *nvshmem_calloc(size_t count, size_t size)
{
    return alloc(count * size, 0, "nvshmem_calloc");
}

void nvshmem_free(void *ptr)
{
    if (g.state != 1)
        return;
    /* collective: every PE frees the same object, after every PE is done with it */
    const long long off = ptr ? (long long)((unsigned char *)ptr - g.mine) : -1;
    long long mine[2] = {off, -off}, all[2] = {0, 0};
    MPI_Request r;
    MPI_Iallreduce(mine, all, 2, MPI_LONG_LONG, MPI_MAX, g.comm, &r);
    mpi_wait(&r, "nvshmem_free");
    if (all[0] != -all[1])
        die("nvshmem_free of the object at offset %lld, but other PEs free offsets %lld to %lld: "
            "symmetric frees must be the same on every PE",
            off, -all[1], all[0]);
    if (!ptr)
        return;
    auto it = g.used.find((size_t)off);
    if (!translate(ptr, g.pe) || it == g.used.end())
        die("nvshmem_free(%p): not an object of the symmetric heap", ptr);
    size_t start = it->first, len = it->second;
    g.used.erase(it);
    emu_unregister_device_memory(ptr);
    /* merge with the free neighbours */
    auto next = g.free_blocks.lower_bound(start);
    if (next != g.free_blocks.end() && next->first == start + len) {
        len += next->second;
        next = g.free_blocks.erase(next);
    }
    if (next != g.free_blocks.begin()) {
        auto prev = std::prev(next);
        if (prev->first + prev->second == start) {
            start = prev->first;
            len += prev->second;
            g.free_blocks.erase(prev);
        }
    }
    g.free_blocks[start] = len;
}

void *nvshmem_ptr(const void *ptr, int pe)
{
    return translate(ptr, pe);
}

void nvshmem_barrier_all(void)
{
    if (g.state == 1)
        barrier("nvshmem_barrier_all");
}

/* ---- device ------------------------------------------------------------------------------ */

void nvshmem_putmem(void *dest, const void *source, size_t bytes, int pe)
{
    void *d = remote(dest, pe, "nvshmem_putmem");
    if (bytes)
        std::memmove(d, source, bytes);
}

void nvshmem_float_put(float *dest, const float *source, size_t nelems, int pe)
{
    float *d = (float *)remote(dest, pe, "nvshmem_float_put");
    if (nelems)
        std::memmove(d, source, nelems * sizeof(float));
}

void nvshmem_float_put_nbi(float *dest, const float *source, size_t nelems, int pe)
{
    nvshmem_float_put(dest, source, nelems, pe); /* complete at once: allowed for a nbi put */
}

void nvshmem_float_put_signal(float *dest, const float *source, size_t nelems, uint64_t *sig_addr,
                              uint64_t signal, int sig_op, int pe)
{
    float *d = (float *)remote(dest, pe, "nvshmem_float_put_signal");
    uint64_t *s = (uint64_t *)remote(sig_addr, pe, "nvshmem_float_put_signal (signal)");
    if (nelems)
        std::memmove(d, source, nelems * sizeof(float));
    signal_apply(s, signal, sig_op, "nvshmem_float_put_signal"); /* release: after the data */
}

void nvshmem_float_put_signal_nbi(float *dest, const float *source, size_t nelems,
                                  uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)
{
    nvshmem_float_put_signal(dest, source, nelems, sig_addr, signal, sig_op, pe);
}

void nvshmemx_putmem_block(void *dest, const void *source, size_t bytes, int pe)
{
    unsigned char *d = (unsigned char *)remote(dest, pe, "nvshmemx_putmem_block");
    const unsigned char *src = (const unsigned char *)source;
    for (size_t i = block_tid(); i < bytes; i += block_size())
        d[i] = src[i];
    __syncthreads();
}

void nvshmemx_putmem_signal_block(void *dest, const void *source, size_t bytes, uint64_t *sig_addr,
                                  uint64_t signal, int sig_op, int pe)
{
    unsigned char *d = (unsigned char *)remote(dest, pe, "nvshmemx_putmem_signal_block");
    uint64_t *s = (uint64_t *)remote(sig_addr, pe, "nvshmemx_putmem_signal_block (signal)");
    const unsigned char *src = (const unsigned char *)source;
    for (size_t i = block_tid(); i < bytes; i += block_size())
        d[i] = src[i];
    /* the barrier orders every thread's part before thread 0's release */
    __syncthreads();
    if (block_tid() == 0)
        signal_apply(s, signal, sig_op, "nvshmemx_putmem_signal_block");
    __syncthreads();
}

void nvshmemx_putmem_signal_nbi_block(void *dest, const void *source, size_t bytes,
                                      uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)
{
    nvshmemx_putmem_signal_block(dest, source, bytes, sig_addr, signal, sig_op, pe);
}

void nvshmemx_float_put_block(float *dest, const float *source, size_t nelems, int pe)
{
    nvshmemx_putmem_block(dest, source, nelems * sizeof(float), pe);
}

void nvshmemx_float_put_signal_block(float *dest, const float *source, size_t nelems,
                                     uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)
{
    nvshmemx_putmem_signal_block(dest, source, nelems * sizeof(float), sig_addr, signal, sig_op,
                                 pe);
}

void nvshmemx_float_put_signal_nbi_block(float *dest, const float *source, size_t nelems,
                                         uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)
{
    nvshmemx_putmem_signal_block(dest, source, nelems * sizeof(float), sig_addr, signal, sig_op,
                                 pe);
}

void nvshmemx_signal_op(uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)
{
    signal_apply((uint64_t *)remote(sig_addr, pe, "nvshmemx_signal_op"), signal, sig_op,
                 "nvshmemx_signal_op");
}

uint64_t nvshmem_signal_fetch(const uint64_t *sig_addr)
{
    return emu_ld_acquire((const uint64_t *)remote(sig_addr, g.pe, "nvshmem_signal_fetch"));
}

uint64_t nvshmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value)
{
    const uint64_t *s = (const uint64_t *)remote(sig_addr, g.pe, "nvshmem_signal_wait_until");
    const double limit = wait_limit_s(), end = now_s() + limit;
    for (;;) {
        const uint64_t v = emu_ld_acquire(s);
        if (compare(v, cmp, cmp_value))
            return v;
        if (now_s() > end)
            die("nvshmem_signal_wait_until: waited %.0f s (HALOX_HALO_WAIT_TIMEOUT) for the signal "
                "at heap offset %zu to become %s %llu; it is %llu",
                limit, (size_t)((const unsigned char *)sig_addr - g.mine), cmp_name(cmp),
                (unsigned long long)cmp_value, (unsigned long long)v);
    }
}

/* Puts are complete when they return: ordering and completing them is a full fence. */
void nvshmem_fence(void)
{
    std::atomic_thread_fence(std::memory_order_seq_cst);
}

void nvshmem_quiet(void)
{
    std::atomic_thread_fence(std::memory_order_seq_cst);
}
}
