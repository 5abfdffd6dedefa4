/* A local failure between agreement points must end the run on every rank, with the failing
 * rank's message, and never leave a rank waiting in an exchange.
 *
 * The step schedule makes collectives only on search, energy and thermostat steps; a failure
 * in between (here: one water molecule given an impossible velocity, so SETTLE fails on the rank
 * that owns it at step 1) is recorded, the failing rank keeps doing its exchanges, and the next
 * agreement point (the search at step nstlist) fails everywhere. Checks: every rank's hx_md_run
 * returns HX_ERR_PHYSICS (the failing rank) or HX_ERR_REMOTE (the others), the agreed message
 * names step 1 and SETTLE, and no rank got further than the first agreement point. Run with 2
 * and 3 ranks under mpiexec (CTest's timeout catches a hang). */
#include "halox/io.h"
#include "halox/log.h"
#include "halox/md.h"
#include "test_md_common.h"

#include <string.h>

int main(int argc, char **argv)
{
    hx_comm *comm = NULL;
    int rank = 0, nranks = 1;
    t_mpi_begin(&argc, &argv, &comm, &rank, &nranks);
    hx_log_set_level(HX_LOG_ERROR);
    hx_system *sys = tmd_water_lattice("spce", 8, 0.02, 5);
    /* one molecule far too fast: its oxygen crosses a whole bond length per step */
    sys->has_velocities = 1;
    sys->v[3 * 0 + 0] = 500.0;
    hx_md_params p;
    hx_md_params_default(&p);
    p.rc = 0.9;
    p.rlist = 1.0;
    p.nstlist = 10;
    p.steps = 40;
    p.continuation = 1; /* take the velocities as they are (no constraining of the start) */
    p.start_step = 1;   /* so that the failing step is neither an energy nor a search step */
    hx_md *md = NULL;
    T_OK(hx_md_create_dd(sys, &p, comm, NULL, &md));
    if (md) {
        hx_md_output out = {0};
        out.nstenergy = 100; /* no energy step before the search at step 10 */
        hx_status st = hx_md_run(md, &out);
        long long reached = hx_md_current_step(md);
        const char *msg = hx_last_error_message();
        T_CHECK(st == HX_ERR_PHYSICS || st == HX_ERR_REMOTE,
                "rank %d: the run returned %s, expected a failure (message: %s)", rank,
                hx_status_name(st), msg);
        T_CHECK(strstr(msg, "SETTLE") && strstr(msg, "step 1:"),
                "rank %d: the agreed message does not name SETTLE at step 1: %s", rank, msg);
        T_CHECK(reached == p.nstlist,
                "rank %d: stopped at step %lld, expected the first search (step %d)", rank, reached,
                p.nstlist);
        if (rank == 0)
            printf("rank 0: %s after step %lld: %s\n", hx_status_name(st), reached, msg);
    }
    hx_md_destroy(&md);
    hx_system_destroy(&sys);
    return t_mpi_end(&comm, "test_md_fault", 1);
}
