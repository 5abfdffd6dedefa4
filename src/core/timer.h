/* hx_wtime: public in include/halox/timer.h, so that programs time things as the library does. */
#ifndef HX_CORE_TIMER_H
#define HX_CORE_TIMER_H

#include "halox/timer.h"

#endif
