/* The CPU emulation of NVSHMEM (tests/emu/nvshmem.h) and of grids whose blocks run at once
 * (emu_device.h), on 2 or more MPI ranks, with the model it promises:
 *
 *  - start-up on the MPI communicator: PE = rank, the node's team is the world, the version;
 *  - symmetric memory: every PE reaches every other PE's copy through nvshmem_ptr (and its own
 *    at its own address), new memory is poisoned (0xFF) and calloc's is zero, a free and a new
 *    allocation of the same size reuse the place, a size that differs between PEs gives NULL on
 *    every PE;
 *  - puts: a host-side put lands in the peer's copy after a barrier;
 *  - put-with-signal: 300 rounds of a ping-pong between PE 0 and PE 1 in kernels whose two blocks
 *    run at once (one sends, one receives; every thread of the sender's block takes part in the
 *    block put): whenever the receiver sees the signal count k, every element of the data is k
 *    (the data is visible before its signal);
 *  - nvshmem_signal_wait_until with each comparison, fence and quiet;
 *  - the slow PE (as HALOX_EMU_SLOW_PE=0:50 makes it, set here for one kernel): in a block of
 *    PE 0, after thread 0 publishes a signal the other threads leave the barrier before it no
 *    earlier than 50 ms later (what makes the ordering faults of the halo tests certain to be
 * seen). Modes that must fail (registered with tests/expect_failure.sh):
 *   --deadline  PE 0 waits for a signal nobody sends: the emulation gives up after
 *               HALOX_HALO_WAIT_TIMEOUT seconds, names the wait and aborts;
 *   --hang      a grid whose blocks run at once never ends: the watchdog (HALOX_EMU_GRID_TIMEOUT)
 *               reports it and aborts.
 * Each failure names the PE, the check, the round or element, expected and got. */
#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

static int g_pe = -1, g_fail = 0;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            std::fprintf(stderr, "FAIL test_emu_nvshmem PE %d line %d: ", g_pe, __LINE__);         \
            std::fprintf(stderr, __VA_ARGS__);                                                     \
            std::fprintf(stderr, "\n");                                                            \
            g_fail++;                                                                              \
        }                                                                                          \
    } while (0)

static const int ROUNDS = 300, NDATA = 1000, THREADS = 64;

/* Ping-pong: block 0 of PE 0 sends round k (data k, signal +1) to PE 1 and waits for PE 1's
 * acknowledgement k; block 0 of PE 1 waits for signal k, checks the data, acknowledges. Block 1
 * of each PE counts the rounds it sees on the other word meanwhile (a second block that waits,
 * alongside). */
__global__ void ping_pong(float *data, float *src, uint64_t *sig, uint64_t *ack, int pe, int *bad,
                          int *first_bad_round)
{
    if (blockIdx.x == 1) {
        if (threadIdx.x == 0)
            nvshmem_signal_wait_until(pe == 0 ? ack : sig, NVSHMEM_CMP_GE, ROUNDS);
        __syncthreads();
        return;
    }
    for (int k = 1; k <= ROUNDS; k++) {
        if (pe == 0) {
            for (int i = (int)threadIdx.x; i < NDATA; i += (int)blockDim.x)
                src[i] = (float)k;
            __syncthreads();
            nvshmemx_float_put_signal_nbi_block(data, src, NDATA, sig, 1, NVSHMEM_SIGNAL_ADD, 1);
            if (threadIdx.x == 0)
                nvshmem_signal_wait_until(ack, NVSHMEM_CMP_GE, (uint64_t)k);
            __syncthreads();
        } else {
            if (threadIdx.x == 0)
                nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, (uint64_t)k);
            __syncthreads();
            for (int i = (int)threadIdx.x; i < NDATA; i += (int)blockDim.x)
                if (data[i] != (float)k && atomicAdd(bad, 1) == 0)
                    *first_bad_round = k;
            __syncthreads();
            if (threadIdx.x == 0) {
                nvshmem_quiet();
                nvshmemx_signal_op(ack, 1, NVSHMEM_SIGNAL_ADD, 0);
            }
        }
    }
}

/* The slow PE's hold: thread 0 publishes after a barrier; every other thread records how long
 * after the publication it left that barrier (negative: before it). */
__global__ void hold_probe(uint64_t *word, long long *t_pub, long long *left_after_ns)
{
    __syncthreads();
    if (threadIdx.x == 0) {
        *t_pub = (long long)emu_globaltimer_ns();
        emu_red_add(word, 1, true);
    } else {
        left_after_ns[threadIdx.x] = (long long)emu_globaltimer_ns();
    }
    __syncthreads();
}

/* --hang: a block spins on a word no one writes */
__global__ void spin_forever(volatile int *word)
{
    while (*word == 0) {
    }
}

static cudaLaunchConfig_t config(int blocks)
{
    cudaLaunchConfig_t c = {};
    c.gridDim = dim3((unsigned)blocks, 1, 1);
    c.blockDim = dim3(THREADS, 1, 1);
    return c;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    g_pe = rank;
    const bool deadline = argc > 1 && !std::strcmp(argv[1], "--deadline");
    const bool hang = argc > 1 && !std::strcmp(argv[1], "--hang");
    if (size < 2) {
        std::printf("test_emu_nvshmem: run on 2 or more ranks\n");
        MPI_Finalize();
        return 1;
    }
    MPI_Comm comm = MPI_COMM_WORLD;
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    attr.mpi_comm = &comm;
    nvshmemx_init_init_attr_ver_only(attr);
    nvshmemi_version_t ver = {NVSHMEM_VENDOR_MAJOR_VERSION, NVSHMEM_VENDOR_MINOR_VERSION,
                              NVSHMEM_VENDOR_PATCH_VERSION};
    int provided = -1;
    const int rc = nvshmemi_init_thread(NVSHMEM_THREAD_SERIALIZED, &provided,
                                        NVSHMEMX_INIT_WITH_MPI_COMM, &attr, ver);
    CHECK(rc == 0, "nvshmemi_init_thread returned %d", rc);
    if (rc != 0) {
        MPI_Finalize();
        return 1;
    }
    uint64_t *sig = (uint64_t *)nvshmem_calloc(4, sizeof(uint64_t));

    if (deadline) {
        if (rank == 0)
            nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, 1); /* aborts after the deadline */
        MPI_Barrier(MPI_COMM_WORLD); /* the others wait here: the abort of PE 0 ends them */
        nvshmem_finalize();
        MPI_Finalize();
        return 0;
    }
    if (hang) {
        int *word = NULL;
        cudaMalloc((void **)&word, sizeof(int));
        cudaMemset(word, 0, sizeof(int));
        cudaLaunchConfig_t c = config(2);
        if (rank == 0)
            cudaLaunchKernelEx(&c, spin_forever, (volatile int *)word); /* aborts */
        MPI_Barrier(MPI_COMM_WORLD);
        nvshmem_finalize();
        MPI_Finalize();
        return 0;
    }

    /* start-up */
    CHECK(provided == NVSHMEM_THREAD_SERIALIZED, "provided thread support %d", provided);
    CHECK(nvshmem_my_pe() == rank && nvshmem_n_pes() == size, "PE %d of %d, rank %d of %d",
          nvshmem_my_pe(), nvshmem_n_pes(), rank, size);
    CHECK(nvshmem_team_my_pe(NVSHMEMX_TEAM_NODE) == rank &&
              nvshmem_team_n_pes(NVSHMEMX_TEAM_NODE) == size,
          "node team: PE %d of %d", nvshmem_team_my_pe(NVSHMEMX_TEAM_NODE),
          nvshmem_team_n_pes(NVSHMEMX_TEAM_NODE));
    CHECK(nvshmem_team_my_pe(NVSHMEM_TEAM_INVALID) == -1, "an invalid team answered");
    int ma = 0, mi = 0, pa = 0;
    nvshmemx_vendor_get_version_info(&ma, &mi, &pa);
    CHECK(ma == 3 && mi == 4 && pa == 5, "version %d.%d.%d", ma, mi, pa);

    /* symmetric memory */
    float *a = (float *)nvshmem_malloc(NDATA * sizeof(float));
    float *z = (float *)nvshmem_calloc(NDATA, sizeof(float));
    CHECK(a && z && sig, "allocations: %p %p %p", (void *)a, (void *)z, (void *)sig);
    if (!a || !z || !sig) {
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    unsigned char poison[4];
    std::memcpy(poison, a, 4);
    CHECK(poison[0] == 0xff && poison[3] == 0xff, "nvshmem_malloc's memory is not poisoned");
    CHECK(z[0] == 0.0f && z[NDATA - 1] == 0.0f, "nvshmem_calloc's memory is not zero");
    CHECK(nvshmem_ptr(a, rank) == a, "nvshmem_ptr of my own object %p is %p", (void *)a,
          nvshmem_ptr(a, rank));
    for (int q = 0; q < size; q++)
        CHECK(nvshmem_ptr(a, q) != NULL, "nvshmem_ptr(a, %d) is NULL", q);
    CHECK(nvshmem_ptr(a, size) == NULL && nvshmem_ptr(&rank, 0) == NULL,
          "nvshmem_ptr of a PE beyond the run or of a private address is not NULL");
    struct cudaPointerAttributes pa_attr;
    cudaPointerGetAttributes(&pa_attr, a);
    CHECK(pa_attr.type == cudaMemoryTypeDevice, "symmetric memory is not device memory (%d)",
          (int)pa_attr.type);

    /* a put from the host into the next PE, seen there after a barrier */
    float mine[4] = {(float)rank, 1.5f, -2.0f, (float)(10 * rank)};
    nvshmem_float_put(z + 8, mine, 4, (rank + 1) % size);
    nvshmem_barrier_all();
    const int from = (rank + size - 1) % size;
    CHECK(z[8] == (float)from && z[9] == 1.5f && z[10] == -2.0f && z[11] == (float)(10 * from),
          "the put from PE %d: %g %g %g %g", from, (double)z[8], (double)z[9], (double)z[10],
          (double)z[11]);
    /* a store through nvshmem_ptr is the same memory */
    ((float *)nvshmem_ptr(z, (rank + 1) % size))[20] = 100.0f + (float)rank;
    nvshmem_barrier_all();
    CHECK(z[20] == 100.0f + (float)from, "a store through nvshmem_ptr: %g", (double)z[20]);

    /* a size that differs: NULL everywhere; free and allocate again: the same place */
    void *odd = nvshmem_malloc(rank == 0 ? 128 : 256);
    CHECK(odd == NULL, "differing sizes gave %p", odd);
    nvshmem_free(z);
    float *z2 = (float *)nvshmem_malloc(NDATA * sizeof(float));
    CHECK(z2 == z, "the freed place was not reused (%p, then %p)", (void *)z, (void *)z2);

    /* put-with-signal: the data before its signal, in blocks that run at once */
    float *src = (float *)nvshmem_malloc(NDATA * sizeof(float));
    int *bad = NULL, *first = NULL;
    cudaMallocHost((void **)&bad, sizeof(int));
    cudaMallocHost((void **)&first, sizeof(int));
    *bad = 0;
    *first = 0;
    if (rank < 2) {
        cudaLaunchConfig_t c = config(2);
        const cudaError_t e =
            cudaLaunchKernelEx(&c, ping_pong, a, src, sig, sig + 1, rank, bad, first);
        CHECK(e == cudaSuccess, "launch: %s", cudaGetErrorString(e));
        cudaDeviceSynchronize();
        CHECK(*bad == 0,
              "%d elements did not hold their round's value when its signal was seen "
              "(first in round %d)",
              *bad, *first);
        CHECK(nvshmem_signal_fetch(rank == 0 ? sig + 1 : sig) == (uint64_t)ROUNDS,
              "signal after %d rounds: %llu", ROUNDS,
              (unsigned long long)nvshmem_signal_fetch(rank == 0 ? sig + 1 : sig));
    }
    nvshmem_barrier_all();

    /* the comparisons of nvshmem_signal_wait_until (each true at once) */
    nvshmemx_signal_op(sig + 2, 7, NVSHMEM_SIGNAL_SET, rank);
    nvshmem_fence();
    const struct {
        int cmp;
        uint64_t v;
    } cmps[] = {{NVSHMEM_CMP_EQ, 7}, {NVSHMEM_CMP_NE, 8}, {NVSHMEM_CMP_GT, 6},
                {NVSHMEM_CMP_LE, 7}, {NVSHMEM_CMP_LT, 8}, {NVSHMEM_CMP_GE, 7}};
    for (const auto &c : cmps)
        CHECK(nvshmem_signal_wait_until(sig + 2, c.cmp, c.v) == 7, "comparison %d", c.cmp);
    nvshmem_quiet();

    /* the slow PE holds a block's other threads after thread 0 publishes (what
     * HALOX_EMU_SLOW_PE=0:50 would set at initialisation) */
    if (rank == 0) {
        emu_set_slow(50000000);
        long long *t = NULL;
        cudaMallocHost((void **)&t, sizeof(long long) * (THREADS + 1));
        cudaLaunchConfig_t c = config(1);
        cudaLaunchKernelEx(&c, hold_probe, sig + 3, t + THREADS, t);
        cudaDeviceSynchronize();
        emu_set_slow(0);
        long long least = (long long)1 << 62;
        for (int i = 1; i < THREADS; i++)
            least = t[i] - t[THREADS] < least ? t[i] - t[THREADS] : least;
        CHECK(least >= 50000000,
              "a held thread left %.3f ms after thread 0 published (at least "
              "50 ms: HALOX_EMU_SLOW_PE=0:50)",
              (double)least * 1e-6);
        cudaFreeHost(t);
    }

    nvshmem_free(src);
    nvshmem_free(z2);
    nvshmem_free(a);
    nvshmem_free(sig);
    cudaFreeHost(bad);
    cudaFreeHost(first);
    nvshmem_finalize();
    int all = 0;
    MPI_Allreduce(&g_fail, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        std::printf("test_emu_nvshmem: %d PEs, %d checks failed\n", size, all);
    MPI_Finalize();
    return all ? 1 : 0;
}
