/* The search step's timeline (gpu/trace.h): host stamps, device stamps by one-thread kernels,
 * the clocks' calibration, the per-process file. */
#include "gpu/trace.h"
#include "gpu/context.h"
#include "gpu/cuda_check.h"
#include "gpu/gpu_util.cuh"
#include "halox/log.h"
#include "core/error.h"
#include "core/wait.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TR_SLOTS 1024 /* device points per search step (a 2x2x2 step has ~150) */
#define TR_CALIB 4    /* calibrations, at the first search steps */
#define TR_WHO 256    /* module instances that stamp */
/* the calibration's words after the slots: started, go, stamp, done */
#define TR_WORDS (TR_SLOTS + 4)
/* how long the calibration kernel waits for the host's go (then it stamps anyway, and the host
 * drops the sample) */
#define TR_PING_NS 2000000ull

typedef struct tr_slot {
    const void *who;
    int sub, idx;
    const char *label;
} tr_slot;

/* the one trace of the process (trace.h says why it is process-wide) */
static struct {
    int on;
    int rank;
    char path[4096], tmp[4112];
    FILE *f;
    unsigned long long *h; /* TR_WORDS stamps, pinned and mapped */
    unsigned long long *d; /* the same memory as the kernels address it */
    tr_slot slot[TR_SLOTS];
    int nslot;
    long long dropped;       /* points without a slot */
    const void *who[TR_WHO]; /* numbered in the file by first appearance */
    int nwho;
    int ncal;
    long long searches;
    int in_search;
} T;

static long long host_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000ll + (long long)ts.tv_nsec;
}

__global__ void k_trace_mark(unsigned long long *slot)
{
    *slot = hx_globaltimer_ns();
}

/* w: started, go, stamp, done. The host stamps its clock just before it sets go and just after
 * it sees done: the device stamp lies between (one PCIe round trip wide). done is 2 where the
 * go never came (the CPU emulation runs a kernel inside its launch call, before the host can
 * answer): that stamp bounds nothing. */
__global__ void k_trace_ping(volatile unsigned long long *w)
{
    const unsigned long long t0 = hx_globaltimer_ns();
    w[0] = 1;
    __threadfence_system();
    while (w[1] == 0 && hx_globaltimer_ns() - t0 < TR_PING_NS) {
    }
    const unsigned long long go = w[1];
    w[2] = hx_globaltimer_ns();
    __threadfence_system();
    w[3] = go ? 1 : 2;
}

extern "C" int hx_gpu_trace_on(void)
{
    return T.on;
}

extern "C" hx_status hx_gpu_trace_open(int rank, int nranks)
{
    const char *prefix = getenv("HALOX_SEARCH_TRACE");
    if (!prefix || !prefix[0] || T.on)
        return HX_OK;
    HX_CHECK(strlen(prefix) + 32 < sizeof T.path, HX_ERR_INVALID_ARG,
             "HALOX_SEARCH_TRACE: the prefix is too long (%zu characters; at most %zu)",
             strlen(prefix), sizeof T.path - 32);
    memset(&T, 0, sizeof T);
    T.rank = rank;
    snprintf(T.path, sizeof T.path, "%s.rank%d.txt", prefix, rank);
    snprintf(T.tmp, sizeof T.tmp, "%s.tmp", T.path);
    T.f = fopen(T.tmp, "w");
    HX_CHECK(T.f, HX_ERR_IO,
             "HALOX_SEARCH_TRACE: cannot create %s (%s): give a prefix in a writable directory",
             T.tmp, strerror(errno));
    fprintf(T.f,
            "# halox search trace v1: host ns (CLOCK_MONOTONIC), device ns (%%globaltimer)\n"
            "rank %d nranks %d\n",
            rank, nranks);
    T.on = 1;
    return HX_OK;
}

extern "C" void hx_gpu_trace_close(void)
{
    if (!T.on)
        return;
    if (T.h)
        cudaFreeHost(T.h);
    fprintf(T.f, "dropped %lld\n", T.dropped);
    /* a write that failed leaves no file in place (and no earlier trace overwritten) */
    const int bad = ferror(T.f) | (fclose(T.f) != 0);
    if (bad || rename(T.tmp, T.path) != 0) {
        hx_log(HX_LOG_WARN, "HALOX_SEARCH_TRACE: %s could not be written (%s)", T.path,
               strerror(errno));
        remove(T.tmp);
    } else {
        hx_log(HX_LOG_INFO, "search trace of %lld search steps: %s", T.searches, T.path);
    }
    memset(&T, 0, sizeof T);
}

/* The stream's work done, within the step deadline (a stuck GPU is an error, not a hang). */
static hx_status drain(hx_stream s)
{
    return hx_gpu_stream_wait(s, hx_wait_timeout_gpu(HX_WAIT_STEP), T.rank,
                              "the search trace's clock calibration");
}

/* One calibration: the kernel waits for the host's go, stamps, answers; every wait bounded. */
static hx_status calibrate(hx_stream s)
{
    volatile unsigned long long *w = T.h + TR_SLOTS;
    HX_TRY(drain(s));
    for (int k = 0; k < 4; k++)
        w[k] = 0;
    __sync_synchronize();
    HX_LAUNCH(k_trace_ping, 1, 1, 0, s, (volatile unsigned long long *)(T.d + TR_SLOTS));
    HX_CUDA_LAUNCH("k_trace_ping");
    const long long limit = host_ns() + 1000000000ll;
    while (w[0] == 0 && host_ns() < limit) {
    }
    const long long h0 = host_ns();
    w[1] = 1;
    __sync_synchronize();
    while (w[3] == 0 && host_ns() < limit) {
    }
    long long h1 = host_ns();
    HX_TRY(drain(s));
    if (w[3] == 1) {
        fprintf(T.f, "c %lld %llu %lld\n", h0, (unsigned long long)w[2], h1);
    } else {
        /* no answer to the go: a plain stamp between the launch and the wait's end (wider: a
         * launch and a synchronisation) */
        T.h[TR_SLOTS + 2] = 0;
        const long long g0 = host_ns();
        HX_LAUNCH(k_trace_mark, 1, 1, 0, s, T.d + TR_SLOTS + 2);
        HX_CUDA_LAUNCH("k_trace_mark");
        HX_TRY(drain(s));
        h1 = host_ns();
        fprintf(T.f, "c %lld %llu %lld\n", g0, (unsigned long long)w[2], h1);
    }
    T.ncal++;
    return HX_OK;
}

extern "C" hx_status hx_gpu_trace_prepare(hx_stream s)
{
    if (!T.on)
        return HX_OK;
    if (!T.h) {
        HX_CUDA(cudaHostAlloc((void **)&T.h, sizeof(unsigned long long) * TR_WORDS,
                              cudaHostAllocMapped));
        memset(T.h, 0, sizeof(unsigned long long) * TR_WORDS);
        HX_CUDA(cudaHostGetDevicePointer((void **)&T.d, T.h, 0));
    }
    if (T.ncal < TR_CALIB)
        HX_TRY(calibrate(s));
    return HX_OK;
}

extern "C" void hx_gpu_trace_host(const char *label)
{
    if (!T.on || !T.in_search)
        return;
    fprintf(T.f, "h %s %lld\n", label, host_ns());
#ifdef HX_CUDA_EMULATION
    /* the emulation's times say nothing of a GPU's, but its count of CUDA runtime calls is the
     * program's own: how many launches, graph launches, synchronisations and other calls the
     * host made up to this point (a GPU run pays a driver round trip for each) */
    unsigned long long c[EMU_CALL_KINDS];
    emu_call_counts(c);
    fprintf(T.f, "a %s %llu %llu %llu %llu\n", label, c[0], c[1], c[2], c[3]);
#endif
}

extern "C" void hx_gpu_trace_search_begin(long long step)
{
    if (!T.on)
        return;
    T.in_search = 1;
    fprintf(T.f, "s %lld %lld\n", T.searches, step);
    hx_gpu_trace_host("begin");
}

static int who_index(const void *who)
{
    for (int i = 0; i < T.nwho; i++)
        if (T.who[i] == who)
            return i;
    if (T.nwho == TR_WHO)
        return -1;
    T.who[T.nwho] = who;
    return T.nwho++;
}

extern "C" void hx_gpu_trace_search_end(void)
{
    if (!T.on || !T.in_search)
        return;
    hx_gpu_trace_host("end");
    /* every stream of the search step was waited for: the stamps are in */
    for (int j = 0; T.h && j < T.nslot; j++) {
        const unsigned long long v = ((volatile unsigned long long *)T.h)[j];
        if (!v)
            continue;
        const tr_slot *q = &T.slot[j];
        fprintf(T.f, "d %d %d %d %s %llu\n", who_index(q->who), q->sub, q->idx, q->label, v);
        ((volatile unsigned long long *)T.h)[j] = 0;
    }
    T.in_search = 0;
    T.searches++;
}

extern "C" hx_status hx_gpu_trace_mark(const void *who, int sub, int idx, const char *label,
                                       hx_stream s)
{
    if (!T.on || !T.h)
        return HX_OK;
    int j = 0;
    while (j < T.nslot && !(T.slot[j].who == who && T.slot[j].sub == sub && T.slot[j].idx == idx))
        j++;
    if (j == T.nslot) {
        if (T.nslot == TR_SLOTS) {
            T.dropped++;
            return HX_OK;
        }
        T.slot[T.nslot].who = who;
        T.slot[T.nslot].sub = sub;
        T.slot[T.nslot].idx = idx;
        T.nslot++;
    }
    T.slot[j].label = label;
    HX_LAUNCH(k_trace_mark, 1, 1, 0, s, T.d + j);
    HX_CUDA_LAUNCH("k_trace_mark");
    return HX_OK;
}
