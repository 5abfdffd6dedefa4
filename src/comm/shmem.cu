/* The NVSHMEM transport (src/comm/shmem.h): the only file of halox that includes NVSHMEM.
 *
 * NVSHMEM can be initialised once per process (a second nvshmem_init is undefined): it starts
 * with the first nvshmem exchange and ends in hx_mpi_finalize, before MPI_Finalize, on the
 * device it started on (made current around nvshmem_finalize and restored: the program may have
 * another one current by then). */
#include <nvshmem.h>
#include <nvshmemx.h>

#include <cuda_runtime.h>

#include "comm/shmem.h"
#include "comm/comm_impl.h"
#include "core/error.h"
#include "halox/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef HX_NVSHMEM_BOOTSTRAP_MPI_PLUGIN
#define HX_NVSHMEM_BOOTSTRAP_MPI_PLUGIN ""
#endif

static struct {
    int state; /* 0 never started, 1 running, 2 finalised */
    void *mpi_comm;
    int pe, npes;
    int device;             /* the device current at initialisation: NVSHMEM's, for good */
    unsigned char uuid[16]; /* its identity */
    char version[64];
} g_shmem;

static void shmem_finalize_hook(void)
{
    if (g_shmem.state == 1) {
        int prev = -1;
        const int sw = cudaGetDevice(&prev) == cudaSuccess && prev != g_shmem.device &&
                       cudaSetDevice(g_shmem.device) == cudaSuccess;
        nvshmem_finalize();
        if (sw)
            (void)cudaSetDevice(prev);
        (void)cudaGetLastError();
        g_shmem.state = 2;
    }
    hx_comm_mpi_free(&g_shmem.mpi_comm);
}

/* NVSHMEM reads its environment at initialisation. It is the user's: what halox needs and the
 * user did not set is set, and said; what the user set is kept, and said where it matters. */
static void shmem_environment(int rank)
{
    const char *nvls = getenv("NVSHMEM_DISABLE_NVLS");
    if (!nvls) {
        setenv("NVSHMEM_DISABLE_NVLS", "1", 0);
        if (rank == 0)
            hx_log(HX_LOG_INFO, "nvshmem: NVSHMEM_DISABLE_NVLS unset: halox sets it to 1 (NVLink "
                                "multicast off; it can take a shared host's GPUs out of service)");
    } else if (strcmp(nvls, "1") != 0 && rank == 0) {
        hx_log(HX_LOG_WARN,
               "nvshmem: NVSHMEM_DISABLE_NVLS=%s as set: NVLink multicast may be used, which can "
               "take a shared host's GPUs out of service",
               nvls);
    }
    if (!getenv("NVSHMEM_BOOTSTRAP_MPI_PLUGIN") && HX_NVSHMEM_BOOTSTRAP_MPI_PLUGIN[0] &&
        access(HX_NVSHMEM_BOOTSTRAP_MPI_PLUGIN, R_OK) == 0) {
        setenv("NVSHMEM_BOOTSTRAP_MPI_PLUGIN", HX_NVSHMEM_BOOTSTRAP_MPI_PLUGIN, 0);
        if (rank == 0)
            hx_log(HX_LOG_INFO,
                   "nvshmem: NVSHMEM_BOOTSTRAP_MPI_PLUGIN unset: halox sets it to the plugin found "
                   "at configure time, %s",
                   HX_NVSHMEM_BOOTSTRAP_MPI_PLUGIN);
    }
}

static hx_status shmem_start(hx_comm *comm)
{
    const int rank = hx_comm_rank(comm);
    shmem_environment(rank);
    HX_TRY(hx_comm_mpi_dup(comm, &g_shmem.mpi_comm));
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    attr.mpi_comm = g_shmem.mpi_comm;
    nvshmemx_init_init_attr_ver_only(attr);
    nvshmemi_version_t ver = {NVSHMEM_VENDOR_MAJOR_VERSION, NVSHMEM_VENDOR_MINOR_VERSION,
                              NVSHMEM_VENDOR_PATCH_VERSION};
    int provided = 0;
    /* nvshmemx_init_attr would exit the process on failure; the library reports instead, so it
     * calls what that inline wrapper calls */
    const int rc = nvshmemi_init_thread(NVSHMEM_THREAD_SERIALIZED, &provided,
                                        NVSHMEMX_INIT_WITH_MPI_COMM, &attr, ver);
    if (rc != 0) {
        hx_comm_mpi_free(&g_shmem.mpi_comm);
        const char *plug = getenv("NVSHMEM_BOOTSTRAP_MPI_PLUGIN");
        HX_FAIL(HX_ERR_NVSHMEM,
                "nvshmem initialisation on the MPI communicator failed on rank %d (status %d): "
                "check NVSHMEM_BOOTSTRAP_MPI_PLUGIN (%s) and the NVSHMEM_* settings",
                rank, rc, plug ? plug : "unset");
    }
    g_shmem.state = 1;
    HX_TRY(hx_mpi_at_finalize(shmem_finalize_hook));
    g_shmem.pe = nvshmem_my_pe();
    g_shmem.npes = nvshmem_n_pes();
    int ma = 0, mi = 0, pa = 0;
    nvshmemx_vendor_get_version_info(&ma, &mi, &pa);
    snprintf(g_shmem.version, sizeof g_shmem.version, "%d.%d.%d", ma, mi, pa);
    return HX_OK;
}

extern "C" hx_status hx_shmem_init(hx_comm *comm, int device, const unsigned char uuid[16])
{
    const int rank = hx_comm_rank(comm), nranks = hx_comm_nranks(comm);
    HX_CHECK(g_shmem.state != 2, HX_ERR_UNSUPPORTED,
             "nvshmem was finalised (hx_mpi_finalize) and cannot start again in this process");
    if (g_shmem.state == 0) {
        int cur = -1;
        HX_CHECK(cudaGetDevice(&cur) == cudaSuccess && cur == device, HX_ERR_INTERNAL,
                 "hx_shmem_init: device %d must be current (it is %d): the halo front end makes "
                 "the GPU context's device current around the backend's set-up",
                 device, cur);
        HX_TRY(shmem_start(comm));
        g_shmem.device = device;
        memcpy(g_shmem.uuid, uuid, 16);
    }
    HX_CHECK(memcmp(g_shmem.uuid, uuid, 16) == 0, HX_ERR_UNSUPPORTED,
             "nvshmem was started on GPU %d in this process and cannot move: this exchange's GPU "
             "context runs on GPU %d; give every nvshmem exchange of a process the same context "
             "(or one on the same GPU)",
             g_shmem.device, device);
    HX_CHECK(g_shmem.pe == rank && g_shmem.npes == nranks, HX_ERR_NVSHMEM,
             "nvshmem runs %d PEs with this process as PE %d, but the exchange's communicator "
             "has %d ranks with this process as rank %d: create every nvshmem exchange on the "
             "same communicator",
             g_shmem.npes, g_shmem.pe, nranks, rank);
    return HX_OK;
}

extern "C" const char *hx_shmem_version(void)
{
    return g_shmem.version;
}

extern "C" int hx_shmem_n_pes(void)
{
    return g_shmem.npes;
}

extern "C" void *hx_shmem_malloc(size_t bytes)
{
    return nvshmem_malloc(bytes);
}

extern "C" void *hx_shmem_calloc(size_t n, size_t size)
{
    return nvshmem_calloc(n, size);
}

extern "C" void hx_shmem_free(void *p)
{
    if (p)
        nvshmem_free(p);
}

extern "C" void *hx_shmem_ptr(const void *p, int pe)
{
    return nvshmem_ptr(p, pe);
}

/* ---- device calls of the network path ----------------------------------------------------- */

__device__ void hx_shmem_signal_add(uint64_t *sig, uint64_t v, int pe)
{
    nvshmemx_signal_op(sig, v, NVSHMEM_SIGNAL_ADD, pe);
}

__device__ void hx_shmem_put_signal_nbi_block(float *dst, const float *src, size_t n, uint64_t *sig,
                                              uint64_t v, int pe)
{
    nvshmemx_float_put_signal_nbi_block(dst, src, n, sig, v, NVSHMEM_SIGNAL_ADD, pe);
}

__device__ void hx_shmem_put_signal_block(float *dst, const float *src, size_t n, uint64_t *sig,
                                          uint64_t v, int pe)
{
    nvshmemx_float_put_signal_block(dst, src, n, sig, v, NVSHMEM_SIGNAL_ADD, pe);
}

__device__ void hx_shmem_putmem_signal_block(void *dst, const void *src, size_t bytes,
                                             uint64_t *sig, uint64_t v, int pe)
{
    nvshmemx_putmem_signal_block(dst, src, bytes, sig, v, NVSHMEM_SIGNAL_ADD, pe);
}
