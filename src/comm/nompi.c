/* Built without MPI: the MPI communicator reports that it is not compiled in. */
#include "halox/comm.h"
#include "comm/comm_impl.h"
#include "core/error.h"

#include <stdio.h>

hx_status hx_comm_create_mpi(const void *mpi_comm, hx_comm **out)
{
    (void)mpi_comm;
    if (out)
        *out = NULL;
    HX_FAIL(HX_ERR_NOT_COMPILED,
            "halox was built without MPI: install an MPI library (scripts/setup.sh) and "
            "reconfigure with -DHALOX_WITH_MPI=ON");
}

hx_status hx_mpi_init(int *argc, char ***argv, int *parallel)
{
    (void)argc;
    (void)argv;
    if (parallel)
        *parallel = 0;
    return HX_OK;
}

hx_status hx_comm_create_world(hx_comm **out)
{
    return hx_comm_create_serial(1, out);
}

void hx_mpi_finalize(void) {}

void hx_mpi_rank_size(int *rank, int *size)
{
    *rank = 0;
    *size = 1;
}

void hx_comm_mpi_set_piece_bytes(hx_comm *c, size_t bytes)
{
    (void)c;
    (void)bytes;
}

/* GPU backend services (src/comm/comm_impl.h): a job of one process. */
hx_status hx_comm_node_info(hx_comm *c, int *local_rank, int *local_size)
{
    HX_CHECK(c && local_rank && local_size, HX_ERR_INVALID_ARG, "hx_comm_node_info: NULL argument");
    *local_rank = 0;
    *local_size = 1;
    return HX_OK;
}

int hx_comm_mpi_cuda_aware(const char **why)
{
    if (why)
        *why = "halox was built without MPI";
    return 0;
}

hx_status hx_comm_mpi_dup(hx_comm *c, void **mpi_comm)
{
    (void)c;
    if (mpi_comm)
        *mpi_comm = NULL;
    HX_FAIL(HX_ERR_NOT_COMPILED, "halox was built without MPI: no MPI communicator to duplicate");
}

void hx_comm_mpi_free(void **mpi_comm)
{
    (void)mpi_comm;
}

hx_status hx_mpi_at_finalize(void (*fn)(void))
{
    (void)fn;
    return HX_OK;
}

void hx_mpi_library_version(char *buf, int len)
{
    if (len > 0)
        snprintf(buf, (size_t)len, "none");
}
