/* The library's error macros (HX_FAIL, HX_CHECK, HX_TRY, HX_TRY_GOTO, HX_FAIL_GOTO): public in
 * include/halox/error.h, so that programs built on halox record errors the same way. */
#ifndef HX_CORE_ERROR_H
#define HX_CORE_ERROR_H

#include "halox/error.h"

#endif
