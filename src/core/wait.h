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

#ifdef __cplusplus
}
#endif

#endif
