/* The home store's growth (src/dd/migrate.c), for code that fills a home store itself: the
 * device search step's molecule lists (src/md/gpu/decomp_gpu.cu) when output needs them. */
#ifndef HX_DD_HOME_H
#define HX_DD_HOME_H

#include "halox/migrate.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Room for natoms atoms and nmol molecules (+1 start); contents kept. */
hx_status hx_home_reserve(hx_home *h, int natoms, int nmol);

#ifdef __cplusplus
}
#endif
#endif
