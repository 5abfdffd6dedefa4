/* halox: wall-clock time in seconds (monotonic), as the library measures its own timings; and
 * the deadlines of the library's waits. */
#ifndef HALOX_TIMER_H
#define HALOX_TIMER_H

#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

static inline double hx_wtime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* No rank is ever left waiting: every wait of halox for another rank or for the GPU (MPI
 * messages and collectives, the GPU streams of an exchange, the device-side waits of the fused
 * NVSHMEM exchange, destroy) gives up at a deadline and returns HX_ERR_TIMEOUT with a message
 * naming the rank, what it waited for (peer, pulse, direction) and the step. Two deadlines, one
 * setting:
 *   HX_WAIT_STEP   waits inside the steps of a run (halo exchanges, the engine's reductions):
 *                  default 60 s, far above any step's imbalance or rank 0's output writing;
 *   HX_WAIT_SETUP  everything else (start-up, input on rank 0, plans, NVSHMEM start, destroy):
 *                  default 600 s.
 * The environment sets both: HALOX_WAIT_TIMEOUT=STEP[,SETUP] in seconds (SETUP defaults to 10 x
 * STEP; 0 turns a deadline off, and the waits block as MPI and CUDA do); hx_wait_timeout_set
 * overrides it for the process. A malformed value is refused when a communicator is created.
 * Waits closer to a cause give up first, so that the report names it: the device-side waits of
 * the fused exchange at half the step deadline, a host's wait for its own GPU at three quarters,
 * a wait for another rank at the whole deadline. */
typedef enum hx_wait_kind { HX_WAIT_STEP = 0, HX_WAIT_SETUP = 1 } hx_wait_kind;
/* The deadline in seconds (0: none). */
double hx_wait_timeout(hx_wait_kind kind);
/* Set both deadlines for this process (seconds; 0: none). A negative step returns to
 * HALOX_WAIT_TIMEOUT and the defaults. */
void hx_wait_timeout_set(double step, double setup);

#ifdef __cplusplus
}
#endif

#endif
