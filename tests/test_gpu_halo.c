/* Every GPU halo backend against the host backend on the same plan, one domain per rank (run
 * with 2, 4 and 8 ranks; on one GPU under MPS):
 *
 *  - backends and variants: gpu-mpi, gpu-direct, nvshmem with the automatic path, forced P2P,
 *    forced network (staging + put-with-signal), P2P through the bulk-copy engine;
 *  - cases per rank count: 1D/2D/3D grids, a multi-pulse case, a case with empty domains, and a
 *    large case (several blocks per pulse, thousands of atoms per message);
 *  - per case: two steps on half the molecules, a rebuild with all of them (capacities grow,
 *    arrays move, handles and peer addresses are exchanged again), two more steps; for nvshmem
 *    three steps replayed from a CUDA graph, an update after a coordinate exchange without its
 *    force exchange, and the refusal of two coordinate exchanges in a row;
 *  - every step has new data (a stale value shows up as a mismatch); the halo of x is poisoned
 *    before the first step (an unwritten value shows up as NaN);
 *  - coordinates: bit for bit equal to the host backend's (the same float addition);
 *  - forces: the CPU-driven backends add pulse by pulse in the host backend's order: bit for
 *    bit. The NVSHMEM force kernel adds concurrent pulses with atomics, in any order: with
 *    |f| < 1 per contribution and at most P+1 contributions per atom (the atom's own force and
 *    one per pulse that sent it), reordering moves a float sum by at most (P+1) ulp-sized
 *    roundings of partial sums bounded by P+1, so |got - expected| <= 2 (P+1)^2 2^-24.
 *
 * A failure names the backend, case, rank, step, atom (with the pulse and rank it came from),
 * expected and got: one run shows every bug.
 *
 *   test_gpu_halo [--only PREFIX] [--grid AxBxC] [--small]
 *     --only   the configurations whose label starts with PREFIX ("nvshmem", "nvshmem/auto"; a
 *              comma-separated list of prefixes), at least one of which must be compiled in;
 *     --grid   that decomposition only (A*B*C ranks) instead of the rank count's list;
 *     --small  without the large case.
 * The CPU emulation (tests/emu) runs the NVSHMEM exchange this way, on small cases (a host
 * thread per CUDA thread), and with HALOX_TEST_INJECT set, as tests that must fail. */
#include "gpu_halo_fixture.h"
#include "halox/gpu.h"

#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T_CUDA(call)                                                                               \
    do {                                                                                           \
        cudaError_t t_rc_ = (call);                                                                \
        if (t_rc_ != cudaSuccess)                                                                  \
            T_FAIL("%s failed: %s", #call, cudaGetErrorString(t_rc_));                             \
    } while (0)

#define TIMEOUT 20.0 /* seconds: a hang becomes a report instead of a stuck test */

static int ncases;

typedef struct run {
    gh_case *C;
    const gh_config *g;
    hx_halo *ref, *gpu;
    cudaStream_t s;
    float *got, *fin;
    double *tol;
    size_t cap; /* atoms of got/fin/tol */
} run;

static void run_reserve(run *R)
{
    const hx_domain_plan *p = hx_plan_domain(R->C->plan, 0);
    if ((size_t)p->n_local + 1 <= R->cap)
        return;
    R->cap = (size_t)p->n_local + 1;
    R->got = realloc(R->got, 12 * R->cap);
    R->fin = realloc(R->fin, 12 * R->cap);
    R->tol = realloc(R->tol, sizeof(double) * R->cap);
}

static void set_tolerance(run *R)
{
    const hx_domain_plan *p = hx_plan_domain(R->C->plan, 0);
    const double P1 = p->npulses + 1.0;
    for (int a = 0; a < p->n_local; a++)
        R->tol[a] = 2.0 * P1 * P1 * 0x1.0p-24;
}

/* One step through both backends, compared. */
static void step(run *R, long long st)
{
    gh_case *C = R->C;
    const hx_domain_plan *p = hx_plan_domain(C->plan, 0);
    run_reserve(R);
    float *xr = hx_halo_x(R->ref, 0), *fr = hx_halo_f(R->ref, 0);
    gh_fill_x(C, st, xr);
    if (p->n_home)
        T_CUDA(
            cudaMemcpy(hx_halo_x(R->gpu, 0), xr, 12 * (size_t)p->n_home, cudaMemcpyHostToDevice));
    T_OK(hx_halo_exchange_x(R->ref, NULL));
    T_OK(hx_halo_exchange_x(R->gpu, R->s));
    T_CUDA(cudaStreamSynchronize(R->s));
    T_CUDA(
        cudaMemcpy(R->got, hx_halo_x(R->gpu, 0), 12 * (size_t)p->n_local, cudaMemcpyDeviceToHost));
    gh_compare_x(C, R->g->label, st, xr, R->got, 8);

    gh_fill_f(C, st, p->n_local, 0, R->fin);
    memcpy(fr, R->fin, 12 * (size_t)p->n_local);
    T_CUDA(
        cudaMemcpy(hx_halo_f(R->gpu, 0), R->fin, 12 * (size_t)p->n_local, cudaMemcpyHostToDevice));
    T_OK(hx_halo_exchange_f(R->ref, NULL));
    T_OK(hx_halo_exchange_f(R->gpu, R->s));
    T_CUDA(cudaStreamSynchronize(R->s));
    T_CUDA(
        cudaMemcpy(R->got, hx_halo_f(R->gpu, 0), 12 * (size_t)p->n_local, cudaMemcpyDeviceToHost));
    set_tolerance(R);
    gh_compare_f(C, R->g->label, st, fr, R->got, R->g->deterministic ? NULL : R->tol, 8);
}

/* Steps replayed from a CUDA graph of [copy in x, exchange_x, copy out x, copy in f,
 * exchange_f, copy out f]: the kernels read the step number from device memory. */
static void graph_steps(run *R, long long st0, int n)
{
    gh_case *C = R->C;
    const hx_domain_plan *p = hx_plan_domain(C->plan, 0);
    const size_t bl = 12 * (size_t)p->n_local, bh = 12 * (size_t)p->n_home;
    float *xin = NULL, *xout = NULL, *fin = NULL, *fout = NULL;
    T_CUDA(cudaMallocHost((void **)&xin, bh + 16));
    T_CUDA(cudaMallocHost((void **)&xout, bl + 16));
    T_CUDA(cudaMallocHost((void **)&fin, bl + 16));
    T_CUDA(cudaMallocHost((void **)&fout, bl + 16));
    float *xd = hx_halo_x(R->gpu, 0), *fd = hx_halo_f(R->gpu, 0);
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    T_CUDA(cudaStreamBeginCapture(R->s, cudaStreamCaptureModeThreadLocal));
    if (bh)
        T_CUDA(cudaMemcpyAsync(xd, xin, bh, cudaMemcpyHostToDevice, R->s));
    T_OK(hx_halo_exchange_x(R->gpu, R->s));
    if (bl)
        T_CUDA(cudaMemcpyAsync(xout, xd, bl, cudaMemcpyDeviceToHost, R->s));
    if (bl)
        T_CUDA(cudaMemcpyAsync(fd, fin, bl, cudaMemcpyHostToDevice, R->s));
    T_OK(hx_halo_exchange_f(R->gpu, R->s));
    if (bl)
        T_CUDA(cudaMemcpyAsync(fout, fd, bl, cudaMemcpyDeviceToHost, R->s));
    T_CUDA(cudaStreamEndCapture(R->s, &graph));
    if (graph)
        T_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    for (int i = 0; i < n && exec; i++) {
        const long long st = st0 + i;
        float *xr = hx_halo_x(R->ref, 0), *fr = hx_halo_f(R->ref, 0);
        gh_fill_x(C, st, xr);
        memcpy(xin, xr, bh);
        gh_fill_f(C, st, p->n_local, 0, fin);
        T_CUDA(cudaGraphLaunch(exec, R->s));
        T_OK(hx_halo_exchange_x(R->ref, NULL));
        memcpy(fr, fin, bl);
        T_OK(hx_halo_exchange_f(R->ref, NULL));
        T_CUDA(cudaStreamSynchronize(R->s));
        char what[96];
        snprintf(what, sizeof what, "%s (graph replay %d)", R->g->label, i);
        /* the reference x after its exchange_f is unchanged: compare both now */
        gh_compare_x(C, what, st, xr, xout, 8);
        set_tolerance(R);
        gh_compare_f(C, what, st, fr, fout, R->g->deterministic ? NULL : R->tol, 8);
    }
    if (exec)
        cudaGraphExecDestroy(exec);
    if (graph)
        cudaGraphDestroy(graph);
    cudaFreeHost(xin);
    cudaFreeHost(xout);
    cudaFreeHost(fin);
    cudaFreeHost(fout);
}

static void run_config(gh_case *C, const gh_config *g, cudaStream_t s, int verbose)
{
    run R;
    memset(&R, 0, sizeof R);
    R.C = C;
    R.g = g;
    R.s = s;
    gh_case_build(C, 1, 2); /* half the molecules: the full set needs more room later */
    T_OK(gh_host_create(C, &R.ref));
    T_OK(gh_halo_create(C, g, TIMEOUT, 0, &R.gpu));
    if (!R.ref || !R.gpu) {
        hx_halo_destroy(&R.ref);
        hx_halo_destroy(&R.gpu);
        return;
    }
    if (verbose)
        printf("  %-18s %s\n", g->label, hx_halo_describe(R.gpu));
    /* poison the whole array once, before any peer can write into it */
    T_CUDA(cudaMemset(hx_halo_x(R.gpu, 0), 0xff, 12 * (size_t)hx_halo_capacity(R.gpu)));
    T_CUDA(cudaDeviceSynchronize());
    T_OK(hx_comm_agree(C->world, HX_OK));
    step(&R, 1);
    step(&R, 2);

    gh_case_build(C, 2, 2); /* every molecule */
    T_OK(hx_halo_update(R.ref));
    T_OK(hx_halo_update(R.gpu));
    step(&R, 3);
    step(&R, 4);
    ncases++;

    if (strcmp(g->backend, "nvshmem") == 0) {
        graph_steps(&R, 5, 3);
        /* coordinates without forces, then an update: the next step must not reuse a step
         * number whose signals were sent */
        const hx_domain_plan *p = hx_plan_domain(C->plan, 0);
        float *xr = hx_halo_x(R.ref, 0);
        gh_fill_x(C, 8, xr);
        if (p->n_home)
            T_CUDA(cudaMemcpy(hx_halo_x(R.gpu, 0), xr, 12 * (size_t)p->n_home,
                              cudaMemcpyHostToDevice));
        T_OK(hx_halo_exchange_x(R.ref, NULL));
        T_OK(hx_halo_exchange_x(R.gpu, s));
        hx_status st2 = hx_halo_exchange_x(R.gpu, s);
        T_CHECK(st2 == HX_ERR_INVALID_ARG && strstr(hx_last_error_message(), "alternate"),
                "%s: a second exchange_x in a row gave %s (%s)", g->label, hx_status_name(st2),
                hx_last_error_message());
        T_CUDA(cudaStreamSynchronize(s));
        run_reserve(&R);
        T_CUDA(cudaMemcpy(R.got, hx_halo_x(R.gpu, 0), 12 * (size_t)p->n_local,
                          cudaMemcpyDeviceToHost));
        gh_compare_x(C, g->label, 8, xr, R.got, 8);
        T_OK(hx_halo_update(R.ref));
        T_OK(hx_halo_update(R.gpu));
        step(&R, 9);
    }
    hx_halo_stats stats;
    hx_halo_get_stats(R.gpu, &stats);
    T_CHECK(stats.x_calls >= 4 && stats.f_calls >= 4, "%s: stats %lld x, %lld f calls", g->label,
            stats.x_calls, stats.f_calls);
    hx_halo_destroy(&R.gpu);
    hx_halo_destroy(&R.ref);
    free(R.got);
    free(R.fin);
    free(R.tol);
}

/* The first seed >= from whose case has a dimension with several pulses (multi), or whose
 * system leaves the upper part of the box empty (empty), on this grid. */
static uint64_t find_seed(const int grid[3], int multi, int empty, uint64_t from)
{
    for (uint64_t seed = from; seed < from + 500; seed++) {
        t_rng r;
        caseparams c;
        sysgen s;
        pf_draw(seed, grid, &c, &s, &r);
        pf_free(&s);
        hx_dd_params dp = {
            {c.box[0], c.box[1], c.box[2]}, {grid[0], grid[1], grid[2]}, c.r_comm, c.rc};
        hx_dd *dd = NULL;
        if (hx_dd_create(&dp, &dd) != HX_OK)
            continue;
        int maxp = 0;
        for (int d = 0; d < 3; d++)
            maxp = hx_dd_pulses_dim(dd, d) > maxp ? hx_dd_pulses_dim(dd, d) : maxp;
        hx_dd_destroy(&dd);
        if ((!multi || maxp >= 2) && (!empty || c.kind == 2))
            return seed;
    }
    return from;
}

/* Whether a configuration label starts with one of the comma-separated prefixes of `only`. */
static int only_match(const char *label, const char *only)
{
    while (*only) {
        const size_t n = strcspn(only, ",");
        if (n > 0 && !strncmp(label, only, n))
            return 1;
        only += n + (only[n] == ',');
    }
    return 0;
}

/* The options (see the top); 0 with a message on rank 0 when one is wrong. */
typedef struct options {
    const char *only; /* label prefixes, NULL: every configuration */
    int grid[3];      /* [0] == 0: the rank count's list */
    int small;
} options;

static int parse_options(int argc, char **argv, int rank, int size, options *o)
{
    memset(o, 0, sizeof *o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char tail = 0;
        if (!strcmp(a, "--small")) {
            o->small = 1;
        } else if (!strcmp(a, "--only") && v) {
            o->only = v;
            i++;
        } else if (!strcmp(a, "--grid") && v &&
                   sscanf(v, "%dx%dx%d%c", &o->grid[0], &o->grid[1], &o->grid[2], &tail) == 3 &&
                   o->grid[0] > 0 && o->grid[1] > 0 && o->grid[2] > 0 &&
                   o->grid[0] * o->grid[1] * o->grid[2] == size) {
            i++;
        } else {
            if (rank == 0)
                fprintf(stderr,
                        "test_gpu_halo: bad option '%s%s%s': give --only PREFIX[,PREFIX...], "
                        "--grid AxBxC "
                        "(A*B*C = %d ranks) or --small\n",
                        a, v ? " " : "", v ? v : "", size);
            return 0;
        }
    }
    if (o->only) {
        int n = 0;
        for (int i = 0; i < gh_nconfigs; i++)
            n += only_match(gh_configs[i].label, o->only) && gh_config_available(&gh_configs[i]);
        if (n == 0) {
            if (rank == 0)
                fprintf(stderr,
                        "test_gpu_halo: --only %s: no configuration of that name is compiled into "
                        "this build (nvshmem needs NVSHMEM, or the CPU emulation with MPI)\n",
                        o->only);
            return 0;
        }
    }
    return 1;
}

int main(int argc, char **argv)
{
    hx_comm *world = NULL;
    int rank = 0, size = 1;
    t_mpi_begin(&argc, &argv, &world, &rank, &size);
    if (!t_gpu_require("test_gpu_halo")) {
        hx_comm_destroy(&world);
        hx_mpi_finalize();
        return T_SKIP_CODE;
    }
    options opt;
    if (!parse_options(argc, argv, rank, size, &opt)) {
        hx_comm_destroy(&world);
        hx_mpi_finalize();
        return 2;
    }
    static const int g2[][3] = {{2, 1, 1}, {1, 1, 2}};
    static const int g4[][3] = {{4, 1, 1}, {2, 2, 1}, {1, 2, 2}};
    static const int g8[][3] = {{2, 2, 2}, {8, 1, 1}, {4, 2, 1}};
    const int(*grids)[3] = size == 2 ? g2 : size == 4 ? g4 : g8;
    int ngrids = size == 2 ? 2 : size == 4 ? 3 : 3;
    int other[1][3] = {{size, 1, 1}};
    if (size != 2 && size != 4 && size != 8) {
        grids = (const int(*)[3])other;
        ngrids = 1;
    }
    if (opt.grid[0]) {
        memcpy(other[0], opt.grid, sizeof other[0]);
        grids = (const int(*)[3])other;
        ngrids = 1;
    }
    /* the device first, then its stream: a stream made before the device was chosen sat on
     * another GPU than the exchange (issue 25) */
    if (!gh_gpu_begin(world))
        return t_mpi_end(&world, "test_gpu_halo", ncases);
    cudaStream_t s = (cudaStream_t)hx_gpu_context_stream(gh_gpu, HX_GPU_STREAM_NONLOCAL);
    for (int gi = 0; gi < ngrids; gi++) {
        const int *grid = grids[gi];
        int multi_possible = grid[0] > 2 || grid[1] > 2 || grid[2] > 2;
        uint64_t seeds[3] = {find_seed(grid, multi_possible, 0, 1), find_seed(grid, 0, 1, 100),
                             1000};
        for (int k = 0; k < (opt.small ? 2 : 3); k++) {
            gh_case C;
            if (!gh_case_make(&C, world, seeds[k], grid, k == 2 ? 6000 : 0))
                continue;
            gh_case_build(&C, 2, 2);
            if (rank == 0)
                printf("%s, %d atoms%s\n", C.name, C.s.natoms, k == 2 ? " (large)" : "");
            for (int i = 0; i < gh_nconfigs; i++) {
                if (!gh_config_available(&gh_configs[i]) ||
                    (opt.only && !only_match(gh_configs[i].label, opt.only)))
                    continue;
                run_config(&C, &gh_configs[i], s, rank == 0 && gi == 0 && k == 0);
            }
            gh_case_free(&C);
        }
    }
    gh_gpu_end();
    return t_mpi_end(&world, "test_gpu_halo", ncases);
}
