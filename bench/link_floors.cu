/* The floor of one message between two processes' GPUs: what the halo exchange's time per
 * dependency level is measured against (docs/design/gpu-results.md), on one GPU shared under MPS
 * or across two GPUs (NVLink, PCIe).
 *
 * Two ranks, each on the device node-local rank % visible devices, each with a receive buffer
 * (payload + flag) that the other opens through CUDA IPC. One persistent kernel of one block per
 * rank plays ping-pong: rank 0 sends step s and waits for the answer, rank 1 waits and answers.
 * A message is the payload written into the peer's buffer, then the flag set to s with a
 * system-scope release (what the fused exchange does on its P2P path). Variants:
 *
 *   flag     no payload: the signalling floor (one flag store and its acquire poll each way);
 *   stores   float4 stores from the block's threads straight into the peer's memory;
 *   bulk     the payload staged in shared memory and moved by the bulk-copy engine
 *            (cp.async.bulk, shared -> the peer's global memory), chunks double-buffered so that
 *            filling chunk k+1 overlaps the copy of chunk k.
 *
 * at 4, 32 and 128 KB, blocks of 256 and 1024 threads. Every received message is checked (its
 * first and last float4 carry the step), every wait has a deadline (2 s): a missed signal is
 * reported, never hung on. Time: CUDA events around N round trips on rank 0; one way = half.
 *
 *   mpirun -np 2 link_floors [--iters N] [--json FILE]
 *
 * MPI only through halox's program-level calls (src/comm/mpi.c is the only MPI caller). */
#include "halox/halo.h"
#include "halox/status.h"

#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BENCH_NAME "link_floors"
#include "bench_gpu.cuh"

#define CHUNK_BYTES 16384 /* one bulk copy; two of them in shared memory */
#define MAX_BYTES (128 * 1024)

enum { V_FLAG, V_STORES, V_BULK, V_N };
static const char *const vname[V_N] = {"flag", "stores", "bulk"};

/* Thread 0 polls until *flag reaches s; the block waits for it. Returns 0 on a missed deadline. */
static __device__ int block_wait(const uint64_t *flag, uint64_t s)
{
    __shared__ int ok;
    if (threadIdx.x == 0) {
        ok = 1;
        const uint64_t t0 = gtimer();
        while (ld_acq(flag) < s)
            if (gtimer() - t0 > DEADLINE_NS) {
                ok = 0;
                break;
            }
    }
    __syncthreads();
    return ok;
}

/* The payload of step s: element i is (s, i, -s, 1). */
static __device__ __forceinline__ float4 stamp(uint64_t s, int i)
{
    return make_float4((float)s, (float)i, -(float)s, 1.0f);
}

static __device__ void send(int variant, float4 *peer, int n4, uint64_t s, float4 *smem)
{
    if (variant == V_STORES) {
        for (int i = (int)threadIdx.x; i < n4; i += (int)blockDim.x)
            peer[i] = stamp(s, i);
    } else if (variant == V_BULK) {
        const int c4 = CHUNK_BYTES / 16;
        int buf = 0;
        for (int c0 = 0; c0 < n4; c0 += c4, buf ^= 1) {
            const int n = n4 - c0 < c4 ? n4 - c0 : c4;
            float4 *sb = smem + buf * c4;
            if (threadIdx.x == 0 && c0 >= 2 * c4) /* this buffer's copy of two chunks ago read */
                asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
            __syncthreads();
            for (int i = (int)threadIdx.x; i < n; i += (int)blockDim.x)
                sb[i] = stamp(s, c0 + i);
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
            __syncthreads();
            if (threadIdx.x == 0)
                asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n\t"
                             "cp.async.bulk.commit_group;" ::"l"(peer + c0),
                             "r"((unsigned)__cvta_generic_to_shared(sb)), "r"(n * 16)
                             : "memory");
        }
        if (threadIdx.x == 0)
            asm volatile("cp.async.bulk.wait_group 0;\n\tfence.proxy.async.global;" ::: "memory");
    }
    __syncthreads();
}

/* Ping-pong for steps s0 .. s1-1. err[0]: the step of a missed deadline, err[1]: the step of a
 * wrong payload. */
__global__ void k_pingpong(int variant, int first, float4 *peer_buf, uint64_t *peer_flag,
                           const float4 *my_buf, const uint64_t *my_flag, int n4, uint64_t s0,
                           uint64_t s1, unsigned long long *err)
{
    extern __shared__ __align__(128) float4 smem[];
    for (uint64_t s = s0; s < s1; s++) {
        if (!first) {
            if (!block_wait(my_flag, s)) {
                if (threadIdx.x == 0)
                    err[0] = s;
                return;
            }
            if (threadIdx.x == 0 && n4 > 0 &&
                (my_buf[0].x != (float)s || my_buf[n4 - 1].x != (float)s))
                err[1] = s;
        }
        send(variant, peer_buf, n4, s, smem);
        if (threadIdx.x == 0) {
            __threadfence_system();
            st_rel(peer_flag, s);
        }
        if (first) {
            if (!block_wait(my_flag, s)) {
                if (threadIdx.x == 0)
                    err[0] = s;
                return;
            }
            if (threadIdx.x == 0 && n4 > 0 &&
                (my_buf[0].x != (float)s || my_buf[n4 - 1].x != (float)s))
                err[1] = s;
        }
        __syncthreads();
    }
}

/* what one rank publishes: its receive buffer's IPC handle and its GPU's identity */
typedef struct peer_info {
    cudaIpcMemHandle_t h;
    unsigned char uuid[16];
    int device;
} peer_info;

int main(int argc, char **argv)
{
    int iters = 5000, parallel = 0, rank = 0;
    const char *json = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--iters") && i + 1 < argc)
            iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--json") && i + 1 < argc)
            json = argv[++i];
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: mpirun -np 2 link_floors [--iters N] [--json FILE]\n"
                   "One message between two processes' GPUs (flag only, float4 stores, bulk\n"
                   "copy; 4/32/128 KB), ping-pong, one way = half a round trip (see the file's\n"
                   "header).\n");
            return 0;
        } else {
            fprintf(stderr, "link_floors: unknown option '%s' (see --help)\n", argv[i]);
            return 2;
        }
    }
    if (iters < 100) {
        fprintf(stderr, "link_floors: --iters must be at least 100\n");
        return 2;
    }
    static const int sizes[] = {0, 4096, 32768, MAX_BYTES};
    static const int threads[] = {256, 1024};
    enum { NS = sizeof sizes / sizeof sizes[0], NT = sizeof threads / sizeof threads[0] };
    double us[V_N][NS][NT];
    hx_comm *c = NULL;
    char *buf = NULL, *peer = NULL;
    unsigned long long *err = NULL, herr[2] = {0, 0};
    cudaStream_t st = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    int rc = 1, ndev = 0, same_gpu = 0;
    uint64_t s = 1;
    peer_info mine, *all = NULL;
    void *gathered = NULL;
    size_t counts[2] = {0, 0};
    const void *in[1];
    size_t in_bytes[1];
    cudaDeviceProp prop;
    memset(us, 0, sizeof us);
    memset(&mine, 0, sizeof mine);
    /* (C++ compiles this file: every variable is declared before the first goto) */
    HK(hx_mpi_init(&argc, &argv, &parallel));
    HK(hx_comm_create_world(&c));
    rank = hx_comm_rank(c);
    if (hx_comm_nranks(c) != 2) {
        fprintf(stderr, "link_floors: run with exactly 2 ranks (mpirun -np 2), not %d\n",
                hx_comm_nranks(c));
        goto fail;
    }
    CK(cudaGetDeviceCount(&ndev));
    mine.device = rank % ndev;
    CK(cudaSetDevice(mine.device)); /* the program owns its device choice */
    CK(cudaGetDeviceProperties(&prop, mine.device));
    memcpy(mine.uuid, &prop.uuid, sizeof mine.uuid);
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cudaMalloc((void **)&err, 2 * sizeof *err));
    CK(cudaMemset(err, 0, 2 * sizeof *err));
    /* [payload MAX_BYTES | flag]; the peer writes into it */
    CK(cudaMalloc((void **)&buf, MAX_BYTES + 256));
    CK(cudaMemset(buf, 0, MAX_BYTES + 256));
    CK(cudaIpcGetMemHandle(&mine.h, buf));
    in[0] = &mine;
    in_bytes[0] = sizeof mine;
    HK(hx_comm_gather_bytes(c, in, in_bytes, &gathered, counts));
    all = (peer_info *)malloc(2 * sizeof *all);
    if (!all) {
        fprintf(stderr, "link_floors: out of memory\n");
        goto fail;
    }
    if (rank == 0)
        memcpy(all, gathered, 2 * sizeof *all);
    HK(hx_comm_bcast_bytes(c, all, 2 * sizeof *all));
    same_gpu = memcmp(all[0].uuid, all[1].uuid, 16) == 0;
    CK(cudaIpcOpenMemHandle((void **)&peer, all[1 - rank].h, cudaIpcMemLazyEnablePeerAccess));
    CK(cudaFuncSetAttribute(k_pingpong, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            2 * CHUNK_BYTES));
    CK(cudaDeviceSynchronize());
    HK(hx_comm_agree(c, HX_OK));

    for (int v = 0; v < V_N; v++)
        for (int k = 0; k < NS; k++)
            for (int t = 0; t < NT; t++) {
                if ((v == V_FLAG) != (sizes[k] == 0))
                    continue;
                const int n4 = sizes[k] / 16;
                const size_t smem = v == V_BULK ? 2 * CHUNK_BYTES : 0;
                float4 *pb = (float4 *)peer, *mb = (float4 *)buf;
                uint64_t *pf = (uint64_t *)(peer + MAX_BYTES), *mf = (uint64_t *)(buf + MAX_BYTES);
                /* warm-up, then timed: both ranks run the same steps */
                k_pingpong<<<1, threads[t], smem, st>>>(v, rank == 0, pb, pf, mb, mf, n4, s,
                                                        s + 100, err);
                s += 100;
                CK(cudaStreamSynchronize(st));
                HK(hx_comm_agree(c, HX_OK));
                CK(cudaEventRecord(e0, st));
                k_pingpong<<<1, threads[t], smem, st>>>(v, rank == 0, pb, pf, mb, mf, n4, s,
                                                        s + (uint64_t)iters, err);
                CK(cudaEventRecord(e1, st));
                CK(cudaStreamSynchronize(st));
                s += (uint64_t)iters;
                float ms = 0;
                CK(cudaEventElapsedTime(&ms, e0, e1));
                us[v][k][t] = 1e3 * ms / iters / 2.0; /* one way */
                CK(cudaMemcpy(herr, err, sizeof herr, cudaMemcpyDeviceToHost));
                if (herr[0] || herr[1]) {
                    fprintf(stderr, "link_floors: rank %d: %s %d B, %d threads: %s at step %llu\n",
                            rank, vname[v], sizes[k], threads[t],
                            herr[0] ? "no signal from the peer within 2 s" : "wrong payload",
                            herr[0] ? herr[0] : herr[1]);
                    (void)hx_comm_agree(c, HX_ERR_INTERNAL);
                    goto fail;
                }
                HK(hx_comm_agree(c, HX_OK));
            }

    if (rank == 0) {
        printf("link_floors: 2 processes, GPUs %d and %d (%s, %s), one way = half a round trip\n",
               all[0].device, all[1].device, prop.name, same_gpu ? "the same GPU" : "two GPUs");
        printf("  %-7s %8s %10s %10s\n", "variant", "bytes", "256 thr us", "1024 thr us");
        for (int v = 0; v < V_N; v++)
            for (int k = 0; k < NS; k++) {
                if ((v == V_FLAG) != (sizes[k] == 0))
                    continue;
                printf("  %-7s %8d %10.2f %10.2f\n", vname[v], sizes[k], us[v][k][0], us[v][k][1]);
            }
        if (json) {
            char tmp[4096];
            snprintf(tmp, sizeof tmp, "%s.tmp", json);
            FILE *f = fopen(tmp, "w");
            if (!f) {
                fprintf(stderr, "link_floors: cannot write '%s'\n", tmp);
                goto fail;
            }
            char date[32];
            time_t now = time(NULL);
            strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
            const char *rev = getenv("HALOX_GIT_REVISION");
            fprintf(f,
                    "{\n \"meta\": {\"git_revision\": \"%s\", \"date\": \"%s\", \"gpu\": \"%s\", "
                    "\"gpus_visible\": %d, \"command\": \"mpirun -np 2 link_floors --iters %d\"},\n"
                    " \"runs\": [\n",
                    rev ? rev : "unknown", date, prop.name, ndev, iters);
            int first = 1;
            for (int v = 0; v < V_N; v++)
                for (int k = 0; k < NS; k++)
                    for (int t = 0; t < NT; t++) {
                        if ((v == V_FLAG) != (sizes[k] == 0))
                            continue;
                        fprintf(
                            f,
                            "%s  {\"mode\": \"link_floor\", \"variant\": \"%s\", \"bytes\": %d, "
                            "\"threads\": %d, \"same_gpu\": %s, \"devices\": [%d, %d], "
                            "\"iters\": %d, \"us_one_way\": %.4f, \"timing\": \"CUDA events "
                            "around the round trips on rank 0, halved\"}",
                            first ? "" : ",\n", vname[v], sizes[k], threads[t],
                            same_gpu ? "true" : "false", all[0].device, all[1].device, iters,
                            us[v][k][t]);
                        first = 0;
                    }
            fprintf(f, "\n ]\n}\n");
            if (fclose(f) != 0 || rename(tmp, json) != 0) {
                fprintf(stderr, "link_floors: cannot write '%s'\n", json);
                goto fail;
            }
        }
    }
    /* each unmaps the other's buffer before either frees its own */
    CK(cudaIpcCloseMemHandle(peer));
    peer = NULL;
    HK(hx_comm_agree(c, HX_OK));
    rc = 0;
fail:
    if (peer)
        cudaIpcCloseMemHandle(peer);
    if (buf)
        cudaFree(buf);
    if (err)
        cudaFree(err);
    if (e0)
        cudaEventDestroy(e0);
    if (e1)
        cudaEventDestroy(e1);
    if (st)
        cudaStreamDestroy(st);
    free(all);
    free(gathered);
    if (rc != 0 && c)
        hx_comm_abort(c, 1);
    hx_comm_destroy(&c);
    hx_mpi_finalize();
    return rc;
}
