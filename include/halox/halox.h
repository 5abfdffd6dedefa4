/* halox: umbrella header. */
#ifndef HALOX_HALOX_H
#define HALOX_HALOX_H

#include "halox/version.h"
#include "halox/status.h"
#include "halox/log.h"
#include "halox/timer.h"
#include "halox/system.h"
#include "halox/dd.h"
#include "halox/comm.h"
#include "halox/plan.h"
#include "halox/halo.h"
#include "halox/migrate.h"
#include "halox/decomp.h"
#include "halox/gpu.h"

#endif
