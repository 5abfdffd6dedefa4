/* The CPU emulation's fiber scheduler (tests/emu/emu_runtime.cpp), one process:
 *
 *  - barriers and warp operations: a block-wide sum through shared memory with __syncthreads,
 *    a warp's shuffles, __syncthreads_count, ballots, and several blocks of one grid, each
 *    result against the host's;
 *  - the schedule's order: a kernel without a race gives the same result under every order;
 *  - polls: two threads of a block, each waiting (__nanosleep) for a flag the other sets, end.
 * Modes that must fail (registered with tests/expect_failure.sh):
 *   --race             thread t reads what thread t - 1 wrote, with only a __syncwarp between
 *                      (no barrier across warps): run with HALOX_EMU_SCHEDULE=lifo, the first
 *                      thread of every warp but the first reads before the write;
 *   --partial-barrier  half of a block's threads reach a __syncthreads the others skip: no
 *                      fiber can go on, and the emulation ends the process with its message.
 * Each failure names the kernel, the thread, expected and got. */
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>

static int g_fail = 0;
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            std::printf("FAIL test_emu_sched: " __VA_ARGS__);                                      \
            std::printf("\n");                                                                     \
            g_fail++;                                                                              \
        }                                                                                          \
    } while (0)

/* per block: the sum of its threads' values through shared memory, the warps' shuffle sums,
 * the number of odd values (__syncthreads_count) and each warp's ballot of them */
__global__ void k_sums(const int *in, int *block_sum, int *warp_sum, int *odd, unsigned *ballot)
{
    __shared__ int s[256];
    const int t = threadIdx.x, g = blockIdx.x * blockDim.x + t;
    s[t] = in[g];
    __syncthreads();
    for (int h = blockDim.x / 2; h > 0; h /= 2) {
        if (t < h)
            s[t] += s[t + h];
        __syncthreads();
    }
    if (t == 0)
        block_sum[blockIdx.x] = s[0];
    int v = in[g];
    for (int o = 16; o > 0; o /= 2)
        v += __shfl_down_sync(0xffffffffu, v, o);
    if ((t & 31) == 0)
        warp_sum[g / 32] = v;
    const int n = __syncthreads_count(in[g] & 1);
    if (t == 0)
        odd[blockIdx.x] = n;
    const unsigned b = __ballot_sync(0xffffffffu, in[g] & 1);
    if ((t & 31) == 0)
        ballot[g / 32] = b;
}

/* the block's first and last threads each wait (__nanosleep) for a flag the other sets: legal on
 * a GPU with independent thread scheduling, and in the emulation only if a polling fiber lets
 * the others run, in either order */
__global__ void k_flags(volatile int *flag, int *out)
{
    const int t = threadIdx.x, last = blockDim.x - 1;
    if (t == last) {
        flag[1] = 1;
        while (flag[0] == 0)
            __nanosleep(100);
        out[1] = 1;
    }
    if (t == 0) {
        flag[0] = 1;
        while (flag[1] == 0)
            __nanosleep(100);
        out[0] = 1;
    }
}

/* thread t reads s[t - 1] after a __syncwarp only: right when thread t - 1 ran first */
__global__ void k_race(int *out)
{
    __shared__ int s[256];
    const int t = threadIdx.x;
    s[t] = t + 1;
    __syncwarp();
    out[t] = t ? s[t - 1] : 1;
}

/* half the block skips the barrier */
__global__ void k_partial(int *out)
{
    if (threadIdx.x < blockDim.x / 2)
        __syncthreads();
    out[threadIdx.x] = 1;
}

template <typename T> static T *dev(size_t n)
{
    void *p = nullptr;
    if (cudaMalloc(&p, n * sizeof(T)) != cudaSuccess) {
        std::printf("FAIL test_emu_sched: cudaMalloc of %zu bytes\n", n * sizeof(T));
        std::exit(1);
    }
    return (T *)p;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    const int nb = 3, nt = 256, n = nb * nt;
    if (!std::strcmp(mode, "--race")) {
        int *o = dev<int>(nt), h[256];
        emu_launch(k_race, dim3(1), dim3(nt), 0, (cudaStream_t)0, o);
        cudaMemcpy(h, o, sizeof h, cudaMemcpyDeviceToHost);
        for (int t = 0; t < nt; t++)
            CHECK(h[t] == (t ? t : 1), "k_race: thread %d read %d, want %d (its neighbour's write)",
                  t, h[t], t ? t : 1);
    } else if (!std::strcmp(mode, "--partial-barrier")) {
        int *o = dev<int>(64);
        emu_launch(k_partial, dim3(1), dim3(64), 0, (cudaStream_t)0, o);
        cudaDeviceSynchronize();
        CHECK(0, "k_partial: a barrier half the block skipped did not end the process");
    } else {
        int hin[768], hb[3], hw[24], ho[3];
        unsigned hbal[24];
        for (int i = 0; i < n; i++)
            hin[i] = (i * 7919) % 1013;
        int *in = dev<int>(n), *bs = dev<int>(nb), *ws = dev<int>(n / 32), *odd = dev<int>(nb);
        unsigned *bal = dev<unsigned>(n / 32);
        cudaMemcpy(in, hin, sizeof hin, cudaMemcpyHostToDevice);
        emu_launch(k_sums, dim3(nb), dim3(nt), 0, (cudaStream_t)0, (const int *)in, bs, ws, odd,
                   bal);
        cudaMemcpy(hb, bs, sizeof hb, cudaMemcpyDeviceToHost);
        cudaMemcpy(hw, ws, sizeof hw, cudaMemcpyDeviceToHost);
        cudaMemcpy(ho, odd, sizeof ho, cudaMemcpyDeviceToHost);
        cudaMemcpy(hbal, bal, sizeof hbal, cudaMemcpyDeviceToHost);
        for (int b = 0; b < nb; b++) {
            int s = 0, c = 0;
            for (int t = 0; t < nt; t++) {
                s += hin[b * nt + t];
                c += hin[b * nt + t] & 1;
            }
            CHECK(hb[b] == s, "k_sums: block %d sum %d, want %d", b, hb[b], s);
            CHECK(ho[b] == c, "k_sums: block %d __syncthreads_count %d, want %d", b, ho[b], c);
        }
        int *fl = dev<int>(2), *fo = dev<int>(2), hf[2] = {0, 0};
        cudaMemcpy(fl, hf, sizeof hf, cudaMemcpyHostToDevice);
        emu_launch(k_flags, dim3(1), dim3(nt), 0, (cudaStream_t)0, (volatile int *)fl, fo);
        cudaMemcpy(hf, fo, sizeof hf, cudaMemcpyDeviceToHost);
        CHECK(hf[0] == 1 && hf[1] == 1, "k_flags: threads 0 and %d ended with %d and %d, want 1",
              nt - 1, hf[0], hf[1]);
        for (int w = 0; w < n / 32; w++) {
            int s = 0;
            unsigned m = 0;
            for (int l = 0; l < 32; l++) {
                s += hin[32 * w + l];
                m |= (unsigned)(hin[32 * w + l] & 1) << l;
            }
            CHECK(hw[w] == s, "k_sums: warp %d shuffle sum %d, want %d", w, hw[w], s);
            CHECK(hbal[w] == m, "k_sums: warp %d ballot 0x%08x, want 0x%08x", w, hbal[w], m);
        }
    }
    std::printf("test_emu_sched%s%s: %d checks failed\n", *mode ? " " : "", mode, g_fail);
    return g_fail ? 1 : 0;
}
