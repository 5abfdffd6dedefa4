/* halox: wall-clock time in seconds (monotonic), as the library measures its own timings. */
#ifndef HALOX_TIMER_H
#define HALOX_TIMER_H

#include <time.h>

static inline double hx_wtime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
