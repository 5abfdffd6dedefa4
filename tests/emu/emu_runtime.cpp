/* CPU emulation of the CUDA runtime subset (see cuda_runtime_api.h): host memory as device
 * memory, synchronous streams, stream capture as a recorded list of operations, and the
 * thread model of emu_device.h. */
#include "cuda_runtime.h"
#include "halox/timer.h"

#include <atomic>
#include <barrier>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

struct CUstream_st {
    int prio;
    int device; /* current when the stream was created */
    /* host functions still running on it (cudaLaunchHostFunc): shared with their threads, which
     * may outlive the stream */
    std::shared_ptr<std::atomic<int>> busy = std::make_shared<std::atomic<int>>(0);
};
struct emu_event {
    double t;   /* seconds, host clock, when "recorded" */
    int device; /* current when the event was created */
};
struct emu_graph {
    std::vector<std::function<void()>> ops;
};

namespace emu
{
struct fiber_sched;
/* A barrier of fibers: the last to arrive makes the others runnable and goes on. */
struct fiber_barrier {
    int expected = 0, arrived = 0;
    std::vector<int> waiters;
};
struct block_ctx {
    int nthreads;
    /* the block's threads as fibers of one host thread (run_grid), or NULL: host threads */
    fiber_sched *fs = nullptr;
    fiber_barrier fbar;
    std::vector<fiber_barrier> fwbar;
    std::unique_ptr<std::barrier<>> bar;
    std::vector<std::unique_ptr<std::barrier<>>> wbar;
    std::vector<unsigned long long> xchg;
    std::atomic<int> count{0};
    std::vector<unsigned char> smem;
    /* the slow PE: the barriers thread 0 has let go, and where the held threads wait */
    std::atomic<unsigned long> released{0};
    std::mutex hold_mu;
    std::condition_variable hold_cv;
};

static thread_local thread_vars t_vars;
/* the running fiber's variables, or NULL on a host thread */
static thread_local thread_vars *t_fiber_vars = nullptr;
thread_vars &tv()
{
    thread_vars *f = t_fiber_vars;
    return f ? *f : t_vars;
}
#define t_ctx (tv().ctx)
#define t_tid (tv().tid)

static cudaError_t last_error = cudaSuccess;
static std::mutex err_mu;
static emu_graph *capture_target = nullptr;

/* Devices (HALOX_EMU_DEVICES), the current one per host thread as in CUDA, and the device of
 * every live allocation (cudaPointerGetAttributes, IPC handles). */
static int ndevices()
{
    static const int n = [] {
        const char *e = std::getenv("HALOX_EMU_DEVICES");
        const int v = e ? std::atoi(e) : 1;
        return v < 1 ? 1 : v > 16 ? 16 : v;
    }();
    return n;
}
static thread_local int t_device = 0;
struct allocation {
    size_t bytes;
    int device;
    bool guarded; /* cudaMalloc's: followed by guard_bytes of guard_byte */
};
static std::mutex alloc_mu;
static std::map<const unsigned char *, allocation> allocations;

/* Every cudaMalloc is framed by guard zones (before its start and after its end) that no
 * correct device code or copy touches; they are checked after every kernel, copy and memset and
 * at cudaFree. A write outside a device buffer (an index off by a block, an array sized for one
 * half step where the kernel keeps four) corrupts memory silently on a GPU, and on the host
 * only under AddressSanitizer; here it ends the process with what wrote, the buffer's size and
 * the offset. Reads outside are not seen. */
static const size_t guard_bytes = 256;
static const unsigned char guard_byte = 0xa5;

static void alloc_add_kind(void *p, size_t bytes, bool guarded)
{
    std::lock_guard<std::mutex> l(alloc_mu);
    allocations[(const unsigned char *)p] = allocation{bytes, t_device, guarded};
}
static void alloc_add(void *p, size_t bytes)
{
    alloc_add_kind(p, bytes, false);
}
/* The guard of one allocation: abort with `what` when it was written. alloc_mu held. */
static void guard_check_one(const unsigned char *base, const allocation &a, const char *what)
{
    if (!a.guarded)
        return;
    const unsigned char *g = base + a.bytes, *h = base - guard_bytes;
    for (size_t k = 0; k < guard_bytes; k++)
        if (g[k] != guard_byte) {
            std::fprintf(stderr,
                         "emulation: %s wrote past the end of a device allocation of %zu bytes "
                         "(device %d, at %p): byte %zu after its end is 0x%02x\n",
                         what, a.bytes, a.device, (const void *)base, k, g[k]);
            std::abort();
        }
    for (size_t k = 0; k < guard_bytes; k++)
        if (h[k] != guard_byte) {
            std::fprintf(stderr,
                         "emulation: %s wrote before the start of a device allocation of %zu "
                         "bytes (device %d, at %p): byte %zu before its start is 0x%02x\n",
                         what, a.bytes, a.device, (const void *)base, guard_bytes - k, h[k]);
            std::abort();
        }
}
/* Every allocation's guard (after a kernel, a copy or a memset). */
static void guards_check(const char *what)
{
    std::lock_guard<std::mutex> l(alloc_mu);
    for (const auto &e : allocations)
        guard_check_one(e.first, e.second, what);
}
/* Forgets p; true when it was a guarded allocation (then its memory starts guard_bytes before
 * p). */
static bool alloc_remove(void *p)
{
    std::lock_guard<std::mutex> l(alloc_mu);
    const auto it = allocations.find((const unsigned char *)p);
    if (it == allocations.end())
        return false;
    const bool guarded = it->second.guarded;
    guard_check_one(it->first, it->second, "something before cudaFree");
    allocations.erase(it);
    return guarded;
}
/* The allocation containing p: its start and record; false when p is in none. */
static bool alloc_find(const void *p, const unsigned char **base, allocation *a)
{
    std::lock_guard<std::mutex> l(alloc_mu);
    auto it = allocations.upper_bound((const unsigned char *)p);
    if (it == allocations.begin())
        return false;
    --it;
    const unsigned char *q = (const unsigned char *)p;
    if (q >= it->first + (it->second.bytes ? it->second.bytes : 1))
        return false;
    *base = it->first;
    *a = it->second;
    return true;
}

void set_last_error(cudaError_t e)
{
    std::lock_guard<std::mutex> l(err_mu);
    if (last_error == cudaSuccess)
        last_error = e;
}

/* ---- the slow PE (HALOX_EMU_SLOW_PE, emu_device.h) ---------------------------------------- */

long long slow_ns = 0;

void slow_release()
{
    thread_vars &v = tv();
    if (v.tid != 0 || !v.ctx || v.ctx->released.load(std::memory_order_relaxed) >= v.bar_gen)
        return;
    {
        std::lock_guard<std::mutex> l(v.ctx->hold_mu);
        v.ctx->released.store(v.bar_gen, std::memory_order_release);
    }
    v.ctx->hold_cv.notify_all();
}

void slow_publish()
{
    std::this_thread::sleep_for(std::chrono::nanoseconds(slow_ns));
    slow_release();
}

/* After __syncthreads number v.bar_gen, a thread other than 0 of a slow PE's block waits until
 * thread 0 has let that barrier go (at most 1 s: thread 0 may spin on plain memory that the held
 * threads are to write, which a GPU would not hold up for ever either). */
static void slow_hold(block_ctx *c, const thread_vars &v)
{
    std::unique_lock<std::mutex> l(c->hold_mu);
    c->hold_cv.wait_for(l, std::chrono::seconds(1),
                        [&] { return c->released.load(std::memory_order_acquire) >= v.bar_gen; });
}

/* An emulated thread's built-in variables: thread t of blocks of shape b in grid g */
static void thread_vars_init(thread_vars &v, block_ctx *c, int t, dim3 g, dim3 b, int concurrent)
{
    v = thread_vars{};
    v.ctx = c;
    v.tid = t;
    v.bdim = b;
    v.gdim = g;
    v.thread.x = (unsigned)t % b.x;
    v.thread.y = ((unsigned)t / b.x) % b.y;
    v.thread.z = (unsigned)t / (b.x * b.y);
    v.concurrent = concurrent;
}
/* ... and its block index, block k of grid g in x-fastest order */
static void thread_vars_block(thread_vars &v, long long k, dim3 g)
{
    v.block.x = (unsigned)(k % g.x);
    v.block.y = (unsigned)((k / g.x) % g.y);
    v.block.z = (unsigned)(k / ((long long)g.x * g.y));
}

/* ---- the threads of a block as fibers (run_grid) ------------------------------------------
 *
 * A grid whose blocks run one after the other has its block's threads run as fibers of the
 * launching host thread, switched at every barrier, warp operation and poll: a barrier costs
 * one switch per thread instead of a round of the operating system's scheduler over hundreds of
 * host threads sharing the cores (which took ~95 % of the emulated tests' time, in sched_yield
 * and the barriers' spinning). The interleaving is one that a GPU may run: threads of a block
 * run in any order between barriers. Fibers also detect what hangs with host threads: a
 * barrier or warp operation that part of its block or warp never reaches ends the process with
 * a message (every fiber waiting, none runnable). The slow PE (HALOX_EMU_SLOW_PE, which holds
 * threads on condition variables) and grids whose blocks run at once keep host threads. */
/* The switch between fibers: on x86-64 the callee-saved registers and the stack pointer (what
 * a function call may not change; the kernels change neither rounding modes nor the signal
 * mask), elsewhere ucontext (also under AddressSanitizer, which knows swapcontext but not this
 * switch), whose swapcontext saves the floating-point state and makes a system call for the
 * signal mask every time (on x86-64 that was ~90 % of an emulated test's time). */
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
#define EMU_FAST_SWITCH 1
extern "C" void emu_fiber_switch(void **save_sp, void *to_sp);
asm(".text\n"
    ".globl emu_fiber_switch\n"
    ".hidden emu_fiber_switch\n"
    ".type emu_fiber_switch,@function\n"
    "emu_fiber_switch:\n"
    "    pushq %rbp\n"
    "    pushq %rbx\n"
    "    pushq %r12\n"
    "    pushq %r13\n"
    "    pushq %r14\n"
    "    pushq %r15\n"
    "    movq %rsp, (%rdi)\n"
    "    movq %rsi, %rsp\n"
    "    popq %r15\n"
    "    popq %r14\n"
    "    popq %r13\n"
    "    popq %r12\n"
    "    popq %rbx\n"
    "    popq %rbp\n"
    "    ret\n"
    ".size emu_fiber_switch,.-emu_fiber_switch\n");
#else
#define EMU_FAST_SWITCH 0
#endif

struct fiber {
#if EMU_FAST_SWITCH
    void *sp = nullptr;
#else
    ucontext_t uc;
#endif
    thread_vars vars;
    bool done = false;
};
struct fiber_sched {
#if EMU_FAST_SWITCH
    void *main_sp = nullptr;
#else
    ucontext_t main;
#endif
    std::vector<fiber> f;
    std::vector<int> ready; /* a ring of runnable fibers */
    size_t head = 0;
    int cur = -1;
    int polls = 0; /* consecutive switches out of polls, without other progress */
    unsigned backoff = 0;
    const std::function<void()> *body = nullptr;
    dim3 g, b;
    long long nblocks = 0;
};
static thread_local fiber_sched *t_sched = nullptr;

/* Fiber stacks: kept per host thread for the next grid (their pages stay mapped), with a
 * page without access below each, so that an overflow faults instead of corrupting another
 * fiber's stack. */
static const size_t fiber_stack_bytes = 256 * 1024;
static thread_local std::vector<unsigned char *> t_stacks;
static unsigned char *fiber_stack(size_t k)
{
    while (t_stacks.size() <= k) {
        const size_t page = (size_t)sysconf(_SC_PAGESIZE);
        void *m = mmap(nullptr, fiber_stack_bytes + page, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED || mprotect(m, page, PROT_NONE) != 0) {
            std::fprintf(stderr, "halox CPU emulation: cannot map a fiber stack of %zu bytes\n",
                         fiber_stack_bytes);
            std::abort();
        }
        t_stacks.push_back((unsigned char *)m + page);
    }
    return t_stacks[k];
}

static int sched_order();

/* The running fiber gives the host thread back to the scheduler; `runnable`: it stays in the
 * ring (a poll: behind every other runnable fiber, in either order), else something (a
 * barrier) puts it back. */
static void fiber_switch_out(fiber_sched *s, bool runnable)
{
    const int me = s->cur;
    if (runnable && sched_order() == 2)
        s->ready.insert(s->ready.begin() + (long)s->head, me);
    else if (runnable)
        s->ready.push_back(me);
#if EMU_FAST_SWITCH
    emu_fiber_switch(&s->f[(size_t)me].sp, s->main_sp);
#else
    swapcontext(&s->f[(size_t)me].uc, &s->main);
#endif
}

static void fiber_barrier_wait(fiber_sched *s, fiber_barrier &b)
{
    s->polls = 0; /* progress: the polls' back-off starts again */
    s->backoff = 0;
    if (++b.arrived == b.expected) {
        b.arrived = 0;
        for (int w : b.waiters)
            s->ready.push_back(w);
        b.waiters.clear();
        return;
    }
    b.waiters.push_back(s->cur);
    fiber_switch_out(s, false);
}

static void fiber_entry()
{
    fiber_sched *s = t_sched;
    fiber &me = s->f[(size_t)s->cur];
    thread_vars &v = me.vars;
    block_ctx *c = v.ctx;
    for (long long k = 0; k < s->nblocks; k++) {
        thread_vars_block(v, k, s->g);
        (*s->body)();
        fiber_barrier_wait(s, c->fbar);
        if (v.tid == 0)
            std::memset(c->smem.data(), 0xff, c->smem.size());
        fiber_barrier_wait(s, c->fbar);
    }
    me.done = true;
    s->polls = 0;
#if EMU_FAST_SWITCH
    /* back to the scheduler, never to return here */
    emu_fiber_switch(&me.sp, s->main_sp);
    std::abort();
#endif
    /* (ucontext) returning resumes uc_link: the scheduler */
}

/* The order in which runnable fibers run (HALOX_EMU_SCHEDULE): "fifo" (the default: thread 0 to
 * its first barrier, then thread 1, ...), "lifo" (the last made runnable first: the block's last
 * thread first) or "random[:SEED]" (any runnable fiber next, drawn from a generator seeded with
 * SEED, default 1). A GPU runs the threads of a block, and since Volta those of a warp, in no
 * fixed order between barriers and warp operations: a kernel whose result depends on the order
 * (a thread reading shared or global memory that another writes without a barrier between them)
 * passes under one order and fails under another; fifo runs every writer of a lower index
 * first, lifo every writer of a higher one. Returns 0 fifo, 1 random, 2 lifo. */
static int sched_order()
{
    static const int r = [] {
        const char *e = std::getenv("HALOX_EMU_SCHEDULE");
        return !e ? 0 : std::strncmp(e, "random", 6) == 0 ? 1 : std::strcmp(e, "lifo") == 0 ? 2 : 0;
    }();
    return r;
}
static unsigned long long sched_next()
{
    static thread_local unsigned long long x = [] {
        const char *e = std::getenv("HALOX_EMU_SCHEDULE");
        const char *c = e ? std::strchr(e, ':') : nullptr;
        const unsigned long long seed = c ? std::strtoull(c + 1, nullptr, 10) : 1;
        return seed * 0x9e3779b97f4a7c15ull + 1;
    }();
    /* splitmix64 */
    unsigned long long z = (x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Runs every block of the grid on the calling host thread. */
static void fiber_run_grid(block_ctx &c, const std::function<void()> &body, dim3 g, dim3 b)
{
    fiber_sched s;
    s.body = &body;
    s.g = g;
    s.b = b;
    s.nblocks = (long long)g.x * g.y * g.z;
    c.fs = &s;
    /* (c.nthreads, not a local copy: getcontext returns twice, for -Wclobbered) */
    s.f.resize((size_t)c.nthreads);
    s.ready.reserve((size_t)c.nthreads * 2);
    for (int t = 0; t < c.nthreads; t++) {
        fiber &f = s.f[(size_t)t];
        thread_vars_init(f.vars, &c, t, g, b, 0);
#if EMU_FAST_SWITCH
        /* the first switch "returns" into fiber_entry with the stack aligned as after a call;
         * above its return address a null one, below it the six registers the switch pops */
        void **top = (void **)(fiber_stack((size_t)t) + fiber_stack_bytes);
        top[-1] = nullptr;
        top[-2] = (void *)&fiber_entry;
        for (int r = 3; r <= 8; r++)
            top[-r] = nullptr;
        f.sp = (void *)(top - 8);
#else
        getcontext(&f.uc);
        f.uc.uc_stack.ss_sp = fiber_stack((size_t)t);
        f.uc.uc_stack.ss_size = fiber_stack_bytes;
        f.uc.uc_link = &s.main;
        makecontext(&f.uc, fiber_entry, 0);
#endif
        s.ready.push_back(t);
    }
    fiber_sched *outer = t_sched;
    thread_vars *outer_vars = t_fiber_vars;
    t_sched = &s;
    int left = c.nthreads;
    while (left > 0) {
        if (s.head == s.ready.size()) {
            std::fprintf(stderr,
                         "halox CPU emulation: a kernel (grid %ux%ux%u, blocks of %ux%ux%u "
                         "threads) cannot go on: %d of its block's %d threads wait at "
                         "__syncthreads or a warp operation that the others never reach (code "
                         "that is undefined on a GPU too)\n",
                         g.x, g.y, g.z, b.x, b.y, b.z, left, c.nthreads);
            std::abort();
        }
        /* every runnable fiber polled once with nothing else happening: give the cores to
         * whatever they wait for (another process, a host thread) */
        if (s.polls > (int)(s.ready.size() - s.head)) {
            s.backoff = std::min(200u, s.backoff + 5u);
            std::this_thread::sleep_for(std::chrono::microseconds(s.backoff));
            s.polls = 0;
        }
        int i;
        if (sched_order() == 2) { /* the last made runnable first */
            i = s.ready.back();
            s.ready.pop_back();
        } else {
            if (sched_order() == 1) { /* any runnable fiber next */
                const size_t k = s.head + (size_t)(sched_next() % (s.ready.size() - s.head));
                std::swap(s.ready[s.head], s.ready[k]);
            }
            i = s.ready[s.head++];
        }
        if (s.head > 4096 && 2 * s.head > s.ready.size()) { /* keep the ring short */
            s.ready.erase(s.ready.begin(), s.ready.begin() + (long)s.head);
            s.head = 0;
        }
        s.cur = i;
        t_fiber_vars = &s.f[(size_t)i].vars;
#if EMU_FAST_SWITCH
        emu_fiber_switch(&s.main_sp, s.f[(size_t)i].sp);
#else
        swapcontext(&s.main, &s.f[(size_t)i].uc);
#endif
        t_fiber_vars = outer_vars;
        if (s.f[(size_t)i].done) {
            s.f[(size_t)i].done = false; /* counted once */
            left--;
        }
    }
    t_sched = outer;
    c.fs = nullptr;
}

/* A poll (an acquire load, a sleep) in a fiber: the other fibers run first. */
static bool fiber_poll()
{
    fiber_sched *s = t_sched;
    if (!s || !t_fiber_vars)
        return false;
    s->polls++;
    fiber_switch_out(s, true);
    return true;
}

void poll_point(const void *p)
{
    if (fiber_poll())
        return;
    static thread_local const void *last = nullptr;
    static thread_local unsigned n = 0;
    if (p != last) {
        last = p;
        n = 0;
        return;
    }
    if (++n < 4)
        std::this_thread::yield();
    else
        std::this_thread::sleep_for(std::chrono::microseconds(std::min(200u, 5u * n)));
}

void nanosleep_point(unsigned ns)
{
    if (fiber_poll())
        return;
    std::this_thread::sleep_for(std::chrono::nanoseconds(ns));
}

shared_check::shared_check()
{
    if (tv().concurrent) {
        std::fprintf(stderr,
                     "halox CPU emulation: a kernel launched with every block at once "
                     "(cudaLaunchKernelEx) declares a __shared__ variable, which the emulation "
                     "keeps once for all blocks: keep block-shared data in dynamic shared memory "
                     "(tests/emu/emu_device.h)\n");
        std::abort();
    }
}

void syncthreads()
{
    block_ctx *c = t_ctx;
    thread_vars &v = tv();
    if (c->fs) {
        fiber_barrier_wait(c->fs, c->fbar);
        return;
    }
    if (slow_ns && v.tid == 0)
        slow_release();
    c->bar->arrive_and_wait();
    v.bar_gen++;
    if (slow_ns && v.tid != 0)
        slow_hold(c, v);
}

int syncthreads_count(int pred)
{
    block_ctx *c = t_ctx;
    if (c->fs) {
        /* fibers run one at a time: the last to arrive has seen every count */
        if (pred)
            c->count.fetch_add(1, std::memory_order_relaxed);
        fiber_barrier_wait(c->fs, c->fbar);
        const int r = c->count.load(std::memory_order_relaxed);
        fiber_barrier_wait(c->fs, c->fbar);
        if (t_tid == 0)
            c->count.store(0, std::memory_order_relaxed);
        fiber_barrier_wait(c->fs, c->fbar);
        return r;
    }
    if (slow_ns && t_tid == 0)
        slow_release();
    c->bar->arrive_and_wait();
    if (pred)
        c->count.fetch_add(1);
    c->bar->arrive_and_wait();
    int r = c->count.load();
    c->bar->arrive_and_wait();
    if (t_tid == 0)
        c->count.store(0);
    c->bar->arrive_and_wait();
    thread_vars &v = tv();
    v.bar_gen++;
    if (slow_ns && v.tid != 0)
        slow_hold(c, v);
    return r;
}

static void warp_wait(block_ctx *c, int w)
{
    if (c->fs)
        fiber_barrier_wait(c->fs, c->fwbar[(size_t)w]);
    else
        c->wbar[(size_t)w]->arrive_and_wait();
}

unsigned long long warp_exchange(unsigned long long v, int src)
{
    block_ctx *c = t_ctx;
    if (slow_ns && t_tid == 0)
        slow_release();
    int w = t_tid >> 5, lane = t_tid & 31;
    int wsize = c->nthreads - 32 * w < 32 ? c->nthreads - 32 * w : 32;
    c->xchg[32 * w + lane] = v;
    warp_wait(c, w);
    unsigned long long r = src >= 0 && src < wsize ? c->xchg[32 * w + src] : v;
    warp_wait(c, w);
    return r;
}

unsigned warp_ballot(int pred)
{
    block_ctx *c = t_ctx;
    if (slow_ns && t_tid == 0)
        slow_release();
    int w = t_tid >> 5, lane = t_tid & 31;
    int wsize = c->nthreads - 32 * w < 32 ? c->nthreads - 32 * w : 32;
    c->xchg[32 * w + lane] = pred ? 1ull : 0ull;
    warp_wait(c, w);
    unsigned m = 0;
    for (int l = 0; l < wsize; l++)
        if (c->xchg[32 * w + l])
            m |= 1u << l;
    warp_wait(c, w);
    return m;
}

void syncwarp()
{
    block_ctx *c = t_ctx;
    if (slow_ns && t_tid == 0)
        slow_release();
    warp_wait(c, t_tid >> 5);
}

unsigned char *dyn_smem()
{
    return t_ctx->smem.data();
}

static void ctx_init(block_ctx &c, dim3 b, size_t smem)
{
    c.nthreads = (int)(b.x * b.y * b.z);
    c.bar = std::make_unique<std::barrier<>>(c.nthreads);
    c.fbar.expected = c.nthreads;
    int nw = (c.nthreads + 31) / 32;
    for (int w = 0; w < nw; w++) {
        int ws = c.nthreads - 32 * w < 32 ? c.nthreads - 32 * w : 32;
        c.wbar.push_back(std::make_unique<std::barrier<>>(ws));
        fiber_barrier fb;
        fb.expected = ws;
        c.fwbar.push_back(fb);
    }
    c.xchg.assign((size_t)nw * 32, 0);
    c.smem.assign(smem + 16, 0xff);
}

/* The guards after a grid, naming it by its shape (the kernel's name is not known here). */
static void guards_after_grid(dim3 g, dim3 b)
{
    char what[96];
    std::snprintf(what, sizeof what, "a kernel (grid %ux%ux%u, blocks of %ux%ux%u threads)", g.x,
                  g.y, g.z, b.x, b.y, b.z);
    guards_check(what);
}

void run_grid(const std::function<void()> &body, dim3 g, dim3 b, size_t smem)
{
    block_ctx c;
    ctx_init(c, b, smem);
    if (!slow_ns) {
        fiber_run_grid(c, body, g, b);
        guards_after_grid(g, b);
        return;
    }
    const long long nblocks = (long long)g.x * g.y * g.z;
    std::vector<std::thread> th;
    th.reserve((size_t)c.nthreads);
    for (int t = 0; t < c.nthreads; t++) {
        th.emplace_back([&, t]() {
            thread_vars &v = tv();
            thread_vars_init(v, &c, t, g, b, 0);
            for (long long k = 0; k < nblocks; k++) {
                thread_vars_block(v, k, g);
                body();
                if (slow_ns && t == 0)
                    slow_release();
                c.bar->arrive_and_wait();
                if (t == 0)
                    std::memset(c.smem.data(), 0xff, c.smem.size());
                c.bar->arrive_and_wait();
            }
        });
    }
    for (auto &x : th)
        x.join();
    guards_after_grid(g, b);
}

/* At most this many host threads in a grid whose blocks run at once. */
static const long long concurrent_max_threads = 8192;

cudaError_t launch_check_concurrent(dim3 g, dim3 b)
{
    const long long n = (long long)g.x * g.y * g.z * b.x * b.y * b.z;
    return n > concurrent_max_threads ? cudaErrorCooperativeLaunchTooLarge : cudaSuccess;
}

/* Seconds a grid whose blocks run at once may take (emu_device.h). */
static double grid_timeout_s()
{
    const char *e = std::getenv("HALOX_EMU_GRID_TIMEOUT");
    if (e && std::atof(e) > 0)
        return std::atof(e);
    /* the kernels' own waits give up at half the step deadline */
    const double step = hx_wait_timeout(HX_WAIT_STEP);
    return (step > 0 ? step : 60) + 10;
}

void run_grid_concurrent(const std::function<void()> &body, dim3 g, dim3 b, size_t smem)
{
    const long long nblocks = (long long)g.x * g.y * g.z;
    const int nt = (int)(b.x * b.y * b.z);
    std::vector<std::unique_ptr<block_ctx>> ctx;
    for (long long k = 0; k < nblocks; k++) {
        ctx.push_back(std::make_unique<block_ctx>());
        ctx_init(*ctx.back(), b, smem);
    }
    std::mutex mu;
    std::condition_variable cv;
    long long done = 0;
    const long long total = nblocks * nt;
    std::vector<std::thread> th;
    th.reserve((size_t)total);
    try {
        for (long long k = 0; k < nblocks; k++)
            for (int t = 0; t < nt; t++)
                th.emplace_back([&, k, t]() {
                    thread_vars &v = tv();
                    thread_vars_init(v, ctx[(size_t)k].get(), t, g, b, 1);
                    thread_vars_block(v, k, g);
                    body();
                    if (slow_ns && t == 0)
                        slow_release();
                    std::lock_guard<std::mutex> l(mu);
                    if (++done == total)
                        cv.notify_one();
                });
    } catch (const std::system_error &e) {
        std::fprintf(stderr,
                     "halox CPU emulation: cannot start the %lld threads of a grid whose blocks "
                     "run at once (%s); aborting\n",
                     total, e.what());
        std::abort();
    }
    const double limit = grid_timeout_s();
    {
        std::unique_lock<std::mutex> l(mu);
        if (!cv.wait_for(l, std::chrono::duration<double>(limit), [&] { return done == total; })) {
            std::fprintf(stderr,
                         "halox CPU emulation: a kernel launched with every block at once (grid "
                         "%ux%ux%u of %d threads) has not ended after %.0f s: %lld of %lld threads "
                         "still wait for something that never comes (HALOX_EMU_GRID_TIMEOUT); "
                         "aborting\n",
                         g.x, g.y, g.z, nt, limit, total - done, total);
            std::abort();
        }
    }
    for (auto &x : th)
        x.join();
    guards_after_grid(g, b);
}

void record_or_run(std::function<void()> op)
{
    if (capture_target)
        capture_target->ops.push_back(std::move(op));
    else
        op();
}
} // namespace emu

static double now_s()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

/* Host functions in flight, per stream (the default stream's here) and in all. */
static std::shared_ptr<std::atomic<int>> default_busy = std::make_shared<std::atomic<int>>(0);
static std::atomic<int> all_busy{0};
static std::shared_ptr<std::atomic<int>> busy_of(cudaStream_t s)
{
    return s ? s->busy : default_busy;
}
static void wait_idle(const std::atomic<int> &n)
{
    while (n.load() > 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
}
extern "C" {

int emu_capturing(void)
{
    return emu::capture_target != nullptr;
}

/* The host's CUDA runtime calls so far, by kind (emu_call_counts): what a GPU run pays a driver
 * round trip for, as HALOX_SEARCH_TRACE counts them per span of the search step in the
 * emulation (the error queries, device queries and selections are left out: they stay in the
 * runtime's own state). */
static std::atomic<unsigned long long> g_calls[EMU_CALL_KINDS];

void emu_count_call(int kind)
{
    g_calls[kind].fetch_add(1, std::memory_order_relaxed);
}

void emu_call_counts(unsigned long long out[EMU_CALL_KINDS])
{
    for (int k = 0; k < EMU_CALL_KINDS; k++)
        out[k] = g_calls[k].load(std::memory_order_relaxed);
}

cudaError_t emu_launch_check(cudaStream_t s)
{
    emu_count_call(0);
    return s && s->device != emu::t_device ? cudaErrorInvalidResourceHandle : cudaSuccess;
}

const char *cudaGetErrorString(cudaError_t e)
{
    switch (e) {
    case cudaSuccess:
        return "no error";
    case cudaErrorInvalidValue:
        return "invalid argument";
    case cudaErrorMemoryAllocation:
        return "out of memory";
    case cudaErrorNoDevice:
        return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice:
        return "invalid device ordinal";
    case cudaErrorInvalidContext:
        return "invalid device context";
    case cudaErrorInvalidResourceHandle:
        return "invalid resource handle";
    case cudaErrorIllegalState:
        return "the operation cannot be performed in the present state";
    case cudaErrorPeerAccessAlreadyEnabled:
        return "peer access is already enabled";
    case cudaErrorNotSupported:
        return "operation not supported (CPU emulation: this memory cannot be shared between "
               "processes)";
    case cudaErrorStreamCaptureUnsupported:
        return "operation not permitted when stream is capturing";
    case cudaErrorCooperativeLaunchTooLarge:
        return "too many blocks in cooperative launch (CPU emulation: a grid whose blocks run at "
               "once has at most 8192 threads)";
    default:
        return "unknown error";
    }
}
const char *cudaGetErrorName(cudaError_t e)
{
    switch (e) {
    case cudaSuccess:
        return "cudaSuccess";
    case cudaErrorInvalidValue:
        return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation:
        return "cudaErrorMemoryAllocation";
    case cudaErrorNoDevice:
        return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice:
        return "cudaErrorInvalidDevice";
    case cudaErrorInvalidContext:
        return "cudaErrorInvalidContext";
    case cudaErrorInvalidResourceHandle:
        return "cudaErrorInvalidResourceHandle";
    case cudaErrorIllegalState:
        return "cudaErrorIllegalState";
    case cudaErrorPeerAccessAlreadyEnabled:
        return "cudaErrorPeerAccessAlreadyEnabled";
    case cudaErrorNotSupported:
        return "cudaErrorNotSupported";
    case cudaErrorStreamCaptureUnsupported:
        return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorCooperativeLaunchTooLarge:
        return "cudaErrorCooperativeLaunchTooLarge";
    default:
        return "cudaErrorUnknown";
    }
}
cudaError_t cudaGetLastError(void)
{
    std::lock_guard<std::mutex> l(emu::err_mu);
    cudaError_t e = emu::last_error;
    emu::last_error = cudaSuccess;
    return e;
}
cudaError_t cudaPeekAtLastError(void)
{
    return emu::last_error;
}
cudaError_t cudaGetDeviceCount(int *n)
{
    *n = emu::ndevices();
    return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int dev)
{
    if (dev < 0 || dev >= emu::ndevices())
        return cudaErrorInvalidDevice;
    std::memset(p, 0, sizeof *p);
    std::snprintf(p->name, sizeof p->name, "CPU emulation of a CUDA device");
    /* a fixed identity per device index, the same in every process (as a GPU's UUID) */
    std::memcpy(p->uuid.bytes, "halox-emu-gpu-", 14);
    p->uuid.bytes[14] = (char)('0' + dev / 10);
    p->uuid.bytes[15] = (char)('0' + dev % 10);
    p->totalGlobalMem = (size_t)16 << 30;
    p->sharedMemPerBlock = 48 * 1024;
    p->sharedMemPerBlockOptin = 227 * 1024;
    p->warpSize = 32;
    p->maxThreadsPerBlock = 1024;
    p->major = 9;
    p->minor = 0;
    p->multiProcessorCount = 4;
    p->clockRate = 1000000;
    p->memoryClockRate = 1000000;
    return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr a, int dev)
{
    if (dev < 0 || dev >= emu::ndevices())
        return cudaErrorInvalidDevice;
    switch (a) {
    case cudaDevAttrMultiProcessorCount:
        *v = 4;
        break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin:
        *v = 227 * 1024;
        break;
    case cudaDevAttrMaxSharedMemoryPerBlock:
        *v = 48 * 1024;
        break;
    case cudaDevAttrComputeCapabilityMajor:
        *v = 9; /* as cudaGetDeviceProperties: an sm_90 */
        break;
    case cudaDevAttrComputeCapabilityMinor:
        *v = 0;
        break;
    default:
        *v = 1000000;
    }
    return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int *v)
{
    *v = 13000;
    return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int *v)
{
    *v = 13000;
    return cudaSuccess;
}
cudaError_t cudaDeviceGetPCIBusId(char *id, int len, int dev)
{
    (void)dev;
    std::snprintf(id, (size_t)len, "emulated");
    return cudaSuccess;
}
cudaError_t cudaSetDevice(int dev)
{
    if (dev < 0 || dev >= emu::ndevices())
        return cudaErrorInvalidDevice;
    emu::t_device = dev;
    return cudaSuccess;
}
cudaError_t cudaGetDevice(int *dev)
{
    *dev = emu::t_device;
    return cudaSuccess;
}
cudaError_t cudaDeviceCanAccessPeer(int *can, int dev, int peer)
{
    if (dev < 0 || dev >= emu::ndevices() || peer < 0 || peer >= emu::ndevices())
        return cudaErrorInvalidDevice;
    *can = dev != peer;
    return cudaSuccess;
}
cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int flags)
{
    (void)flags;
    static std::mutex mu;
    static std::map<std::pair<int, int>, bool> enabled;
    if (peer < 0 || peer >= emu::ndevices() || peer == emu::t_device)
        return cudaErrorInvalidDevice;
    std::lock_guard<std::mutex> l(mu);
    bool &e = enabled[std::make_pair(emu::t_device, peer)];
    if (e)
        return cudaErrorPeerAccessAlreadyEnabled;
    e = true;
    return cudaSuccess;
}
cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a, const void *p)
{
    std::memset(a, 0, sizeof *a);
    const unsigned char *base = nullptr;
    emu::allocation r;
    if (!p || !emu::alloc_find(p, &base, &r)) {
        a->type = cudaMemoryTypeUnregistered;
        a->device = -1;
        return cudaSuccess;
    }
    a->type = cudaMemoryTypeDevice;
    a->device = r.device;
    a->devicePointer = (void *)p;
    return cudaSuccess;
}
/* Device memory that other processes can map (cudaIpcOpenMemHandle, gpu-direct's halo): each
 * cudaMalloc is a memfd of its own, mapped shared; its handle names this process and the
 * descriptor, which a peer opens through /proc. Where a memfd cannot be had (descriptors run
 * out), malloc, whose memory no other process can map (its IPC export then fails as before). */
struct shared_block {
    int fd;
    size_t len; /* of the mapping: the guards and the allocation, whole pages */
};
static std::mutex shared_mu;
static std::map<const unsigned char *, shared_block> shared_blocks; /* by mapping start */
static std::map<const unsigned char *, size_t> peer_maps;           /* opened handles */

static unsigned char *device_alloc(size_t total)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE), len = (total + page - 1) / page * page;
    const int fd = memfd_create("halox-emu-device", MFD_CLOEXEC);
    if (fd >= 0) {
        void *m = MAP_FAILED;
        if (ftruncate(fd, (off_t)len) == 0)
            m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (m != MAP_FAILED) {
            std::lock_guard<std::mutex> l(shared_mu);
            shared_blocks[(const unsigned char *)m] = shared_block{fd, len};
            return (unsigned char *)m;
        }
        close(fd);
    }
    return (unsigned char *)std::malloc(total);
}
static void device_free(unsigned char *m)
{
    if (!m)
        return;
    {
        std::lock_guard<std::mutex> l(shared_mu);
        const auto it = shared_blocks.find(m);
        if (it != shared_blocks.end()) {
            munmap(m, it->second.len);
            close(it->second.fd);
            shared_blocks.erase(it);
            return;
        }
    }
    std::free(m);
}

/* The handle: this process's id, the allocation's address, its memfd and the mapping's
 * length, its size and device. */
struct emu_ipc {
    long pid;
    const unsigned char *p;
    int fd, device;
    size_t len, bytes;
};
static_assert(sizeof(emu_ipc) <= sizeof(cudaIpcMemHandle_t), "an IPC handle holds emu_ipc");
cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *h, void *p)
{
    const unsigned char *base = nullptr;
    emu::allocation r;
    if (!p || !emu::alloc_find(p, &base, &r) || base != p)
        return cudaErrorInvalidValue;
    emu_ipc e{};
    e.pid = (long)getpid();
    e.p = base;
    e.fd = -1;
    e.device = r.device;
    e.bytes = r.bytes;
    if (r.guarded) {
        std::lock_guard<std::mutex> l(shared_mu);
        const auto it = shared_blocks.find(base - emu::guard_bytes);
        if (it != shared_blocks.end()) {
            e.fd = it->second.fd;
            e.len = it->second.len;
        }
    }
    std::memset(h, 0, sizeof *h);
    std::memcpy(h->reserved, &e, sizeof e);
    return cudaSuccess;
}
cudaError_t cudaIpcOpenMemHandle(void **p, cudaIpcMemHandle_t h, unsigned int flags)
{
    (void)flags;
    emu_ipc e;
    std::memcpy(&e, h.reserved, sizeof e);
    *p = nullptr;
    /* CUDA refuses a handle of this process's own memory */
    if (e.pid == (long)getpid())
        return cudaErrorInvalidContext;
    if (e.fd < 0) /* malloc'd: not reachable from another process */
        return cudaErrorNotSupported;
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%ld/fd/%d", e.pid, e.fd);
    const int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return cudaErrorInvalidResourceHandle;
    void *m = mmap(nullptr, e.len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return cudaErrorMemoryAllocation;
    unsigned char *q = (unsigned char *)m + emu::guard_bytes;
    {
        std::lock_guard<std::mutex> l(shared_mu);
        peer_maps[q] = e.len;
    }
    /* device memory here too (copies and cudaPointerGetAttributes), on the exporter's device;
     * its guards are the exporter's to check */
    {
        std::lock_guard<std::mutex> l(emu::alloc_mu);
        emu::allocations[q] = emu::allocation{e.bytes, e.device, false};
    }
    *p = q;
    return cudaSuccess;
}
cudaError_t cudaIpcCloseMemHandle(void *p)
{
    size_t len = 0;
    {
        std::lock_guard<std::mutex> l(shared_mu);
        const auto it = peer_maps.find((const unsigned char *)p);
        if (it == peer_maps.end())
            return cudaErrorInvalidValue;
        len = it->second;
        peer_maps.erase(it);
    }
    emu::alloc_remove(p);
    munmap((unsigned char *)p - emu::guard_bytes, len);
    return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize(void)
{
    emu_count_call(2);
    if (emu::capture_target)
        return cudaErrorStreamCaptureUnsupported;
    wait_idle(all_busy);
    return cudaSuccess;
}
cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest)
{
    *least = 0;
    *greatest = -5;
    return cudaSuccess;
}
cudaError_t cudaMalloc(void **p, size_t bytes)
{
    emu_count_call(3);
    if (emu::capture_target)
        return cudaErrorStreamCaptureUnsupported;
    unsigned char *m = device_alloc(bytes + 2 * emu::guard_bytes);
    if (!m)
        return cudaErrorMemoryAllocation;
    unsigned char *q = m + emu::guard_bytes; /* malloc's alignment kept: guard_bytes is 256 */
    std::memset(m, emu::guard_byte, emu::guard_bytes);
    std::memset(q, 0xff, bytes); /* NaN: reads of unwritten device memory show */
    std::memset(q + bytes, emu::guard_byte, emu::guard_bytes);
    emu::alloc_add_kind(q, bytes, true);
    *p = q;
    return cudaSuccess;
}
cudaError_t cudaFree(void *p)
{
    emu_count_call(3);
    if (p && emu::alloc_remove(p))
        device_free((unsigned char *)p - emu::guard_bytes);
    else
        std::free(p);
    return cudaSuccess;
}
cudaError_t cudaMallocHost(void **p, size_t bytes)
{
    emu_count_call(3);
    void *q = std::malloc(bytes ? bytes : 1);
    if (!q)
        return cudaErrorMemoryAllocation;
    std::memset(q, 0xff, bytes);
    *p = q;
    return cudaSuccess;
}
cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned int flags)
{
    emu_count_call(3);
    (void)flags;
    return cudaMallocHost(p, bytes);
}
cudaError_t cudaFreeHost(void *p)
{
    emu_count_call(3);
    std::free(p);
    return cudaSuccess;
}
cudaError_t cudaHostGetDevicePointer(void **dev, void *host, unsigned int flags)
{
    (void)flags;
    *dev = host; /* one address space */
    return cudaSuccess;
}
void emu_register_device_memory(void *p, size_t bytes)
{
    emu::alloc_add(p, bytes);
}
void emu_unregister_device_memory(void *p)
{
    emu::alloc_remove(p);
}
void emu_set_slow(long long pause_ns)
{
    emu::slow_ns = pause_ns > 0 ? pause_ns : 0;
}
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind k)
{
    emu_count_call(2);
    (void)k;
    if (emu::capture_target)
        return cudaErrorStreamCaptureUnsupported;
    if (bytes)
        std::memmove(dst, src, bytes);
    emu::guards_check("cudaMemcpy");
    return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind k,
                            cudaStream_t s)
{
    emu_count_call(3);
    (void)k;
    (void)s;
    emu::record_or_run([dst, src, bytes]() {
        if (bytes)
            std::memmove(dst, src, bytes);
        emu::guards_check("cudaMemcpyAsync");
    });
    return cudaSuccess;
}
cudaError_t cudaMemset(void *p, int v, size_t bytes)
{
    emu_count_call(2);
    if (emu::capture_target)
        return cudaErrorStreamCaptureUnsupported;
    std::memset(p, v, bytes);
    emu::guards_check("cudaMemset");
    return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void *p, int v, size_t bytes, cudaStream_t s)
{
    emu_count_call(3);
    (void)s;
    emu::record_or_run([p, v, bytes]() {
        std::memset(p, v, bytes);
        emu::guards_check("cudaMemsetAsync");
    });
    return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t *s)
{
    emu_count_call(3);
    *s = new CUstream_st{0, emu::t_device};
    return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags)
{
    emu_count_call(3);
    (void)flags;
    return cudaStreamCreate(s);
}
cudaError_t cudaStreamCreateWithPriority(cudaStream_t *s, unsigned int flags, int prio)
{
    emu_count_call(3);
    (void)flags;
    *s = new CUstream_st{prio, emu::t_device};
    return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    emu_count_call(3);
    delete s;
    return cudaSuccess;
}
cudaError_t cudaStreamGetDevice(cudaStream_t s, int *dev)
{
    *dev = s ? s->device : emu::t_device;
    return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    emu_count_call(2);
    if (emu::capture_target)
        return cudaErrorStreamCaptureUnsupported;
    wait_idle(*busy_of(s));
    return cudaSuccess;
}
cudaError_t cudaStreamQuery(cudaStream_t s)
{
    emu_count_call(3);
    if (emu::capture_target)
        return cudaErrorStreamCaptureUnsupported;
    return busy_of(s)->load() > 0 ? cudaErrorNotReady : cudaSuccess;
}
cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void *user)
{
    emu_count_call(3);
    if (emu::capture_target)
        return cudaErrorStreamCaptureUnsupported;
    std::shared_ptr<std::atomic<int>> b = busy_of(s);
    b->fetch_add(1);
    all_busy.fetch_add(1);
    std::thread([b, fn, user]() {
        fn(user);
        b->fetch_sub(1);
        all_busy.fetch_sub(1);
    }).detach();
    return cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int flags)
{
    emu_count_call(3);
    (void)s;
    (void)e;
    (void)flags;
    return cudaSuccess;
}
cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode)
{
    emu_count_call(3);
    (void)mode;
    /* as CUDA: the legacy default stream cannot be captured (it synchronises with every
     * blocking stream); code that capturing on it worked here failed on the GPU */
    if (s == nullptr)
        return cudaErrorStreamCaptureUnsupported;
    if (emu::capture_target)
        return cudaErrorStreamCaptureUnsupported;
    emu::capture_target = new emu_graph;
    return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g)
{
    emu_count_call(3);
    (void)s;
    if (!emu::capture_target)
        return cudaErrorInvalidValue;
    *g = emu::capture_target;
    emu::capture_target = nullptr;
    return cudaSuccess;
}
cudaError_t cudaStreamIsCapturing(cudaStream_t s, cudaStreamCaptureStatus *st)
{
    (void)s;
    *st = emu::capture_target ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
    return cudaSuccess;
}
/* A capture is one chain of operations here (each runs after the one before it), so a stream's
 * dependency set is always the chain: one node, the same at every query of the capture (code
 * that keeps the node of an operation, as the pair module does for HALOX_GPU_PDL=1, finds it
 * again among a later operation's dependencies). Its edge data is zero; an update of the set
 * is checked and otherwise changes nothing: a programmatic edge in a chain run in order is
 * exactly a full one. */
cudaError_t cudaStreamGetCaptureInfo(cudaStream_t s, cudaStreamCaptureStatus *st,
                                     unsigned long long *id, cudaGraph_t *g,
                                     const cudaGraphNode_t **deps, const cudaGraphEdgeData **edata,
                                     size_t *n)
{
    (void)s;
    static const cudaGraphEdgeData zero = {0, 0, 0, {0, 0, 0, 0, 0}};
    static thread_local cudaGraphNode_t node;
    if (!st || (edata && !deps))
        return cudaErrorInvalidValue;
    *st = emu::capture_target ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
    node = reinterpret_cast<cudaGraphNode_t>(emu::capture_target);
    const size_t k = emu::capture_target ? 1 : 0;
    if (id)
        *id = reinterpret_cast<uintptr_t>(emu::capture_target);
    if (g)
        *g = emu::capture_target;
    if (deps)
        *deps = k ? &node : nullptr;
    if (edata)
        *edata = k ? &zero : nullptr;
    if (n)
        *n = k;
    return cudaSuccess;
}
cudaError_t cudaStreamUpdateCaptureDependencies(cudaStream_t s, cudaGraphNode_t *deps,
                                                const cudaGraphEdgeData *edata, size_t n,
                                                unsigned int flags)
{
    (void)s;
    if (!emu::capture_target)
        return cudaErrorIllegalState;
    if ((n && !deps) || flags > cudaStreamSetCaptureDependencies)
        return cudaErrorInvalidValue;
    for (size_t k = 0; k < n; k++)
        if (deps[k] != reinterpret_cast<cudaGraphNode_t>(emu::capture_target) ||
            (edata && edata[k].type > cudaGraphDependencyTypeProgrammatic))
            return cudaErrorInvalidValue;
    return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t *e)
{
    emu_count_call(3);
    *e = new emu_event{0.0, emu::t_device};
    return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int flags)
{
    emu_count_call(3);
    (void)flags;
    return cudaEventCreate(e);
}
cudaError_t cudaEventDestroy(cudaEvent_t e)
{
    emu_count_call(3);
    delete e;
    return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    emu_count_call(3);
    if (e->device != (s ? s->device : emu::t_device))
        return cudaErrorInvalidResourceHandle; /* event and stream of different devices */
    emu::record_or_run([e]() { e->t = now_s(); });
    return cudaSuccess;
}
cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t s, unsigned int flags)
{
    emu_count_call(3);
    (void)flags;
    return cudaEventRecord(e, s);
}
cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
    emu_count_call(2);
    (void)e;
    return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t e)
{
    emu_count_call(3);
    (void)e;
    return cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
    emu_count_call(3);
    *ms = (float)((b->t - a->t) * 1e3);
    return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t g, unsigned long long flags)
{
    emu_count_call(3);
    (void)flags;
    *exec = new emu_graph(*g);
    return cudaSuccess;
}
cudaError_t cudaGraphExecUpdate(cudaGraphExec_t exec, cudaGraph_t g,
                                cudaGraphExecUpdateResultInfo *info)
{
    emu_count_call(3);
    if (info)
        std::memset(info, 0, sizeof *info);
    exec->ops = g->ops;
    return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s)
{
    emu_count_call(1);
    (void)s;
    for (auto &op : exec->ops)
        op();
    return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec)
{
    emu_count_call(3);
    delete exec;
    return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t g)
{
    emu_count_call(3);
    delete g;
    return cudaSuccess;
}
cudaError_t cudaFuncSetAttribute(const void *func, cudaFuncAttribute attr, int value)
{
    emu_count_call(3);
    (void)func;
    (void)attr;
    (void)value;
    return cudaSuccess;
}
}
