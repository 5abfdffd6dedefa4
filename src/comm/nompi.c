/* Built without MPI: the MPI communicator reports that it is not compiled in. */
#include "comm/comm_impl.h"
#include "core/error.h"

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
