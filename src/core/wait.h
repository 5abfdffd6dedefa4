/* The deadlines of halox's waits (public: include/halox/timer.h), and the check of their
 * setting. */
#ifndef HX_CORE_WAIT_H
#define HX_CORE_WAIT_H

#include "halox/status.h"
#include "halox/timer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* HX_ERR_INVALID_ARG, naming the variable and what to give, when HALOX_WAIT_TIMEOUT is
 * malformed (the deadlines then keep their defaults). */
hx_status hx_wait_timeout_check(void);

/* Waits nest, and the one closest to the cause gives up first, so that its report (naming the
 * cause) is what the others hear about, in-band or at the next agreement, before they give up
 * themselves: a device-side wait of the fused exchange for a peer's signal at half the step
 * deadline, a host's wait for its own GPU (a stream holding those kernels) at three quarters of
 * its deadline, a wait for another rank's message or collective at the whole. */
static inline double hx_wait_timeout_gpu(hx_wait_kind kind)
{
    return 0.75 * hx_wait_timeout(kind);
}
static inline double hx_wait_timeout_device(void)
{
    return 0.5 * hx_wait_timeout(HX_WAIT_STEP);
}

#ifdef __cplusplus
}
#endif

#endif
