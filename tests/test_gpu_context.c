/* One owner for the device (include/halox/gpu.h, src/gpu/context.cu): the GPU context runs on
 * the GPU it chose while the caller keeps another one current, and no halox call changes the
 * caller's current device. Run with 1 or 2 MPI ranks on two devices: two GPUs, or the CPU
 * emulation with HALOX_EMU_DEVICES=2 (tests/emu: a launch into a stream of another device than
 * the current one fails there as on a GPU, with "invalid resource handle"). On one device it
 * checks what one device allows and says what it left out.
 *
 *  - the context: device list parsing ("0,1", GROMACS's "0011", bad text refused with the text),
 *    an id beyond the devices refused naming the count; the device chosen from the list while
 *    the caller has another one current; its UUID and the streams on that device; ranks on the
 *    GPU and distinct GPUs from the gathered UUIDs;
 *  - a stream of another device is refused, by hx_gpu_context_check_stream and by the halo
 *    exchange, with a message naming both devices; the context's streams and NULL are accepted;
 *  - a GPU halo backend without a context is refused, saying what to do;
 *  - the gpu-mpi halo on the context (2 ranks: one pulse each way; 1 rank: no pulse) against
 *    the host backend: coordinates and forces bit for bit (the same float additions in the same
 *    order), its arrays allocated on the context's device; gpu-direct on one rank (no pulse:
 *    the case whose empty force slots had no CUDA IPC handle, issue 25);
 *  - the "gpu" MD engine on the context (its streams, its device) against the "cpu" engine:
 *    648 SPC/E atoms, rc 0.7 nm: step-0 LJ and Coulomb within 1e-6 relative or 5e-5 kJ/mol per atom
 * (float pair forces: ~1e-7 relative per pair, summed), kinetic within 1e-6; after 4 steps (plain
 * steps captured in a CUDA graph and replayed, a search at step 4) potential and temperature within
 * 2e-4 relative (float trajectories part slowly, as in test_gpu_engine);
 *  - after every one of those halox calls the caller's current device is the one it set.
 * Each failure names the call, rank, devices, and atom or energy. */
#include "gpu_halo_fixture.h"
#include "halox/gpu.h"
#include "halox/build.h"
#include "halox/log.h"
#include "halox/md.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int ncases, g_rank, g_caller_dev;

#define T_CUDA(call)                                                                               \
    do {                                                                                           \
        cudaError_t t_rc_ = (call);                                                                \
        if (t_rc_ != cudaSuccess)                                                                  \
            T_FAIL("rank %d: %s failed: %s", g_rank, #call, cudaGetErrorString(t_rc_));            \
    } while (0)

/* The caller's current device must be what it set, after every halox call. */
static void check_current(const char *after)
{
    int d = -1;
    T_CUDA(cudaGetDevice(&d));
    T_CHECK(d == g_caller_dev,
            "rank %d: after %s the current device is %d, the caller had made %d current: a halox "
            "call switched the device behind the caller's back",
            g_rank, after, d, g_caller_dev);
    ncases++;
}

/* A halox call that must succeed and leave the caller's device current. */
#define CALL(call)                                                                                 \
    do {                                                                                           \
        T_OK(call);                                                                                \
        check_current(#call);                                                                      \
    } while (0)

static int stream_device(void *s)
{
    int d = -1;
    T_CUDA(cudaStreamGetDevice((cudaStream_t)s, &d));
    return d;
}

static int pointer_device(const void *p)
{
    struct cudaPointerAttributes a;
    memset(&a, 0, sizeof a);
    T_CUDA(cudaPointerGetAttributes(&a, p));
    return a.type == cudaMemoryTypeDevice ? a.device : -1;
}

static void parse_checks(void)
{
    int ids[8], n = 0;
    T_OK(hx_gpu_parse_device_ids("0,1", ids, 8, &n));
    T_CHECK(n == 2 && ids[0] == 0 && ids[1] == 1, "'0,1' parsed as %d ids (%d, %d)", n, ids[0],
            ids[1]);
    T_OK(hx_gpu_parse_device_ids("0011", ids, 8, &n));
    T_CHECK(n == 4 && ids[0] == 0 && ids[1] == 0 && ids[2] == 1 && ids[3] == 1,
            "'0011' parsed as %d ids", n);
    hx_status st = hx_gpu_parse_device_ids("0,x", ids, 8, &n);
    T_CHECK(st == HX_ERR_INVALID_ARG && strstr(hx_last_error_message(), "'0,x'"), "'0,x': %s '%s'",
            hx_status_name(st), hx_last_error_message());
    st = hx_gpu_parse_device_ids("1,", ids, 8, &n);
    T_CHECK(st == HX_ERR_INVALID_ARG, "'1,': %s", hx_status_name(st));
    ncases += 4;
}

/* The gpu-mpi halo on the context against the host backend; a stream of the other device
 * refused. other_stream: a stream of a device that is not the context's, or NULL. */
static void halo_checks(hx_comm *world, hx_gpu_context *ctx, void *other_stream, int size)
{
    const int grid[3] = {size, 1, 1};
    gh_case C;
    uint64_t seed = 11;
    int made = 0;
    for (; seed < 40 && !made; seed++)
        made = gh_case_make(&C, world, seed, grid, 0);
    T_CHECK(made, "rank %d: no decomposition case for grid %dx1x1", g_rank, size);
    if (!made)
        return;
    gh_case_build(&C, 1, 1);
    const gh_config *g = NULL;
    for (int i = 0; i < gh_nconfigs; i++)
        if (strcmp(gh_configs[i].backend, "gpu-mpi") == 0)
            g = &gh_configs[i];
    /* without a context: refused on every rank, saying what to do */
    hx_gpu_context *saved = gh_gpu;
    gh_gpu = NULL;
    hx_halo *h = NULL;
    hx_status st = gh_halo_create(&C, g, 20.0, 0, &h);
    gh_gpu = saved;
    T_CHECK(st == HX_ERR_INVALID_ARG && strstr(hx_last_error_message(), "hx_gpu_context_create"),
            "rank %d: gpu-mpi without a GPU context: %s '%s'", g_rank, hx_status_name(st),
            hx_last_error_message());
    check_current("hx_halo_create without a context");

    hx_halo *ref = NULL;
    T_OK(gh_host_create(&C, &ref));
    CALL(gh_halo_create(&C, g, 20.0, 0, &h));
    if (!h || !ref) {
        hx_halo_destroy(&h);
        hx_halo_destroy(&ref);
        gh_case_free(&C);
        return;
    }
    const int dev = hx_gpu_context_device(ctx);
    T_CHECK(pointer_device(hx_halo_x(h, 0)) == dev && pointer_device(hx_halo_f(h, 0)) == dev,
            "rank %d: the exchange's arrays are on devices %d and %d, its context on %d", g_rank,
            pointer_device(hx_halo_x(h, 0)), pointer_device(hx_halo_f(h, 0)), dev);
    ncases++;
    const hx_domain_plan *p = hx_plan_domain(C.plan, 0);
    const size_t nl = (size_t)p->n_local;
    float *got = calloc(3 * nl + 3, sizeof(float)), *fin = calloc(3 * nl + 3, sizeof(float));
    void *s = hx_gpu_context_stream(ctx, HX_GPU_STREAM_NONLOCAL);
    for (long long step = 1; step <= 2; step++) {
        /* copies into the exchange's arrays work from any current device (unified addresses) */
        float *xr = hx_halo_x(ref, 0), *fr = hx_halo_f(ref, 0);
        gh_fill_x(&C, step, xr);
        T_CUDA(cudaMemcpy(hx_halo_x(h, 0), xr, 12 * (size_t)p->n_home, cudaMemcpyHostToDevice));
        T_OK(hx_halo_exchange_x(ref, NULL));
        CALL(hx_halo_exchange_x(h, s));
        CALL(hx_gpu_context_synchronize(ctx));
        T_CUDA(cudaMemcpy(got, hx_halo_x(h, 0), 12 * nl, cudaMemcpyDeviceToHost));
        ncases++;
        if (gh_compare_x(&C, "gpu-mpi on the context", step, xr, got, 8))
            T_FAIL("rank %d step %lld: coordinates differ from the host backend", g_rank, step);
        gh_fill_f(&C, step, p->n_local, 0, fin);
        memcpy(fr, fin, 12 * nl);
        T_CUDA(cudaMemcpy(hx_halo_f(h, 0), fin, 12 * nl, cudaMemcpyHostToDevice));
        T_OK(hx_halo_exchange_f(ref, NULL));
        CALL(hx_halo_exchange_f(h, s));
        CALL(hx_gpu_context_synchronize(ctx));
        T_CUDA(cudaMemcpy(got, hx_halo_f(h, 0), 12 * nl, cudaMemcpyDeviceToHost));
        ncases++;
        if (gh_compare_f(&C, "gpu-mpi on the context", step, fr, got, NULL, 8))
            T_FAIL("rank %d step %lld: forces differ from the host backend", g_rank, step);
    }
    if (other_stream) {
        /* the exchange refuses it before it enqueues anything (the same on every rank: the
         * peers are not left waiting) */
        st = hx_halo_exchange_x(h, other_stream);
        char want[96];
        snprintf(want, sizeof want, "runs on GPU %d", dev);
        T_CHECK(st == HX_ERR_INVALID_ARG && strstr(hx_last_error_message(), want) &&
                    strstr(hx_last_error_message(), "belongs to GPU"),
                "rank %d: exchange_x on a stream of another device: %s '%s'", g_rank,
                hx_status_name(st), hx_last_error_message());
        check_current("hx_halo_exchange_x on a stream of another device");
        ncases++;
    }
    CALL(hx_halo_update(h)); /* collective: the refused exchange enqueued nothing anywhere */
    hx_halo_destroy(&h);
    check_current("hx_halo_destroy");
    hx_halo_destroy(&ref);
    free(got);
    free(fin);
    gh_case_free(&C);
}

static hx_md *engine(const hx_system *s, const char *backend, const char *halo, hx_comm *comm,
                     const hx_gpu_context *ctx, const int grid[3])
{
    hx_md_params p;
    hx_md_params_default(&p);
    p.gen_vel = 1;
    p.gen_temp = 300;
    p.seed = 5;
    p.rc = 0.7;    /* a small box (the emulation runs every GPU thread as a host thread) that two */
    p.rlist = 0.8; /* domains along x still cut into cells wider than r_comm */
    p.nstlist = 4; /* a search (repartition, halo update, new local set) at the last step */
    p.nstcheck = 0;
    p.steps = 4;
    p.backend = backend;
    p.halo = halo;
    p.gpu = ctx;
    p.halo_wait_timeout = 20.0;
    hx_md *md = NULL;
    if (strcmp(backend, "gpu") == 0)
        CALL(hx_md_create_dd(s, &p, comm, grid, &md));
    else
        T_OK(hx_md_create_dd(s, &p, comm, grid, &md));
    return md;
}

static void engine_checks(hx_comm *world, const hx_gpu_context *ctx, int size)
{
    if (hx_halo_backend_available("gpu-mpi") != HX_OK) {
        if (g_rank == 0)
            printf("  engine: skipped (%s)\n", hx_last_error_message());
        hx_clear_error();
        return;
    }
    hx_system *s = NULL;
    hx_log_set_level(HX_LOG_ERROR); /* too small for a cut of the equilibrated box: a lattice */
    T_OK(hx_build_water("spce", 648, 0, 3, &s));
    hx_log_set_level(HX_LOG_WARN);
    if (!s)
        return;
    const int grid[3] = {size, 1, 1};
    hx_md *cpu = engine(s, "cpu", NULL, world, NULL, grid);
    hx_md *gpu = engine(s, "gpu", "gpu-mpi", world, ctx, grid);
    if (cpu && gpu) {
        T_OK(hx_md_evaluate(cpu));
        CALL(hx_md_evaluate(gpu));
        const hx_md_energies e0c = *hx_md_last_energies(cpu), e0g = *hx_md_last_energies(gpu);
        const int n = s->natoms;
        const double tl = fmax(1e-6 * fabs(e0c.lj), 5e-5 * n);
        const double tc = fmax(1e-6 * fabs(e0c.coulomb), 5e-5 * n);
        T_CHECK(fabs(e0g.lj - e0c.lj) <= tl, "rank %d step 0 LJ: GPU %.12g CPU %.12g", g_rank,
                e0g.lj, e0c.lj);
        T_CHECK(fabs(e0g.coulomb - e0c.coulomb) <= tc,
                "rank %d step 0 Coulomb: GPU %.12g CPU %.12g", g_rank, e0g.coulomb, e0c.coulomb);
        T_CHECK(fabs(e0g.kinetic - e0c.kinetic) <= 1e-6 * fabs(e0c.kinetic),
                "rank %d step 0 kinetic: GPU %.12g CPU %.12g", g_rank, e0g.kinetic, e0c.kinetic);
        ncases += 3;
        hx_md_output out;
        memset(&out, 0, sizeof out);
        T_OK(hx_md_run(cpu, &out));
        CALL(hx_md_run(gpu, &out));
        const hx_md_energies e1c = *hx_md_last_energies(cpu), e1g = *hx_md_last_energies(gpu);
        const double rp = fabs(e1g.potential - e1c.potential) / fabs(e1c.potential);
        const double rt = fabs(e1g.temperature - e1c.temperature) / fabs(e1c.temperature);
        T_CHECK(rp <= 2e-4, "rank %d step %lld potential: GPU %.12g CPU %.12g (rel %.2e)", g_rank,
                e1g.step, e1g.potential, e1c.potential, rp);
        T_CHECK(rt <= 2e-4, "rank %d step %lld temperature: GPU %.8g CPU %.8g (rel %.2e)", g_rank,
                e1g.step, e1g.temperature, e1c.temperature, rt);
        ncases += 2;
        if (g_rank == 0)
            printf("  engine (%d rank%s, gpu-mpi halo): step 0 LJ GPU %.8g CPU %.8g; step %lld "
                   "potential rel %.1e, temperature rel %.1e\n",
                   size, size > 1 ? "s" : "", e0g.lj, e0c.lj, e1g.step, rp, rt);
    }
    hx_md_destroy(&gpu);
    check_current("hx_md_destroy");
    hx_md_destroy(&cpu);
    /* one rank: gpu-direct has no pulse and nothing to map (its empty force slots once had no
     * CUDA IPC handle and the engine failed at its creation) */
    if (size == 1 && hx_halo_backend_available("gpu-direct") == HX_OK) {
        hx_md *d = engine(s, "gpu", "gpu-direct", world, ctx, grid);
        if (d)
            CALL(hx_md_evaluate(d));
        if (g_rank == 0)
            printf("  engine with gpu-direct on one rank: %s\n", d ? "ran" : "FAILED");
        hx_md_destroy(&d);
    }
    hx_clear_error();
    hx_system_destroy(&s);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    hx_comm *world = NULL;
    int size = 1;
    t_mpi_begin(&argc, &argv, &world, &g_rank, &size);
    if (!t_gpu_require("test_gpu_context")) {
        t_mpi_end(&world, "test_gpu_context", 0);
        return T_SKIP_CODE;
    }
    hx_log_set_level(HX_LOG_WARN);
    parse_checks();
    int ndev = 0;
    T_OK(hx_gpu_device_count(&ndev, NULL));
    /* Two devices: each rank's context on one, the caller's current device the other. The list
     * gives rank r (node-local) device (r + 1) % 2, so that with one rank too the context is on
     * device 1 while the caller keeps 0. */
    const int two = ndev >= 2;
    int ids[2] = {1, 0};
    hx_gpu_context_params gp;
    hx_gpu_context_params_default(&gp);
    gp.device_ids = two ? ids : NULL;
    gp.ndevice_ids = two ? 2 : 0;
    if (g_rank == 0 && !two)
        printf("  one device: the device-switch and wrong-stream checks need two (two GPUs, or "
               "the emulation with HALOX_EMU_DEVICES=2); checking the rest\n");
    /* an id beyond the devices: refused on every rank, naming the count */
    int bad = ndev;
    hx_gpu_context_params bp = gp;
    bp.device_ids = &bad;
    bp.ndevice_ids = 1;
    hx_gpu_context *ctx = NULL;
    hx_status st = hx_gpu_context_create(&bp, world, &ctx);
    T_CHECK((st == HX_ERR_INVALID_ARG && strstr(hx_last_error_message(), "does not exist")) ||
                st == HX_ERR_REMOTE,
            "rank %d: device id %d of %d: %s '%s'", g_rank, bad, ndev, hx_status_name(st),
            hx_last_error_message());
    T_CHECK(!ctx, "rank %d: a context was made on a device that does not exist", g_rank);
    ncases += 2;

    /* the caller's own choice, which halox must leave alone: the device the context is not on
     * (the test runs on one node: node-local rank = rank) */
    const int want = two ? ids[g_rank % 2] : 0;
    g_caller_dev = two ? (want + 1) % 2 : 0;
    T_CUDA(cudaSetDevice(g_caller_dev));
    cudaStream_t mine = NULL; /* a stream of the caller's device */
    T_CUDA(cudaStreamCreateWithFlags(&mine, cudaStreamNonBlocking));
    CALL(hx_gpu_context_create(&gp, world, &ctx));
    gh_gpu = ctx;
    if (ctx) {
        const int dev = hx_gpu_context_device(ctx);
        T_CHECK(dev == want, "rank %d: context on device %d, the list says %d", g_rank, dev, want);
        for (int r = 0; r < HX_GPU_NSTREAMS; r++)
            T_CHECK(stream_device(hx_gpu_context_stream(ctx, (hx_gpu_stream_role)r)) == dev,
                    "rank %d: stream %d of the context is on device %d, the context on %d", g_rank,
                    r, stream_device(hx_gpu_context_stream(ctx, (hx_gpu_stream_role)r)), dev);
        hx_gpu_info gi;
        T_OK(hx_gpu_get_info(dev, &gi));
        T_CHECK(memcmp(gi.uuid, hx_gpu_context_uuid(ctx), 16) == 0,
                "rank %d: the context's UUID is not device %d's", g_rank, dev);
        /* which ranks share this GPU, from the UUIDs: with two devices and the list {1, 0} the
         * ranks of a node are on different GPUs */
        const int expect_on = two ? 1 : size;
        T_CHECK(hx_gpu_context_ranks_on_gpu(ctx) == expect_on,
                "rank %d: %d ranks on this GPU by UUID, expected %d", g_rank,
                hx_gpu_context_ranks_on_gpu(ctx), expect_on);
        T_CHECK(hx_gpu_context_same_gpu(ctx, g_rank), "rank %d: not on its own GPU", g_rank);
        T_CHECK(hx_gpu_context_gpus(ctx) == (two ? size : 1), "rank %d: %d GPUs, expected %d",
                g_rank, hx_gpu_context_gpus(ctx), two ? size : 1);
        ncases += 5;
        char id[48];
        hx_gpu_uuid_string(hx_gpu_context_uuid(ctx), id, (int)sizeof id);
        if (g_rank == 0)
            printf("  rank 0: %s\n  rank 0 keeps device %d current\n", hx_gpu_context_describe(ctx),
                   g_caller_dev);

        /* streams: the context's and NULL accepted, the caller's refused with both devices */
        CALL(hx_gpu_context_check_stream(ctx, hx_gpu_context_stream(ctx, HX_GPU_STREAM_LOCAL),
                                         "test"));
        CALL(hx_gpu_context_check_stream(ctx, NULL, "test"));
        if (two) {
            st = hx_gpu_context_check_stream(ctx, mine, "test");
            char want_msg[96];
            snprintf(want_msg, sizeof want_msg,
                     "belongs to GPU %d but the GPU context runs on "
                     "GPU %d",
                     g_caller_dev, dev);
            T_CHECK(st == HX_ERR_INVALID_ARG && strstr(hx_last_error_message(), want_msg),
                    "rank %d: a stream of device %d: %s '%s'", g_rank, g_caller_dev,
                    hx_status_name(st), hx_last_error_message());
            check_current("hx_gpu_context_check_stream on the caller's stream");
            ncases++;
        }
        if (hx_halo_backend_available("gpu-mpi") == HX_OK)
            halo_checks(world, ctx, two ? mine : NULL, size);
        else if (g_rank == 0)
            printf("  halo: skipped (%s)\n", hx_last_error_message());
        hx_clear_error();
        engine_checks(world, ctx, size);
    }
    T_CUDA(cudaStreamDestroy(mine));
    gh_gpu = NULL;
    hx_gpu_context_destroy(&ctx);
    check_current("hx_gpu_context_destroy");
    return t_mpi_end(&world, "test_gpu_context", ncases);
}
