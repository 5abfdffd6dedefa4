/* The arithmetic of one bonded interaction (harmonic bond, harmonic angle, Ryckaert-Bellemans
 * dihedral, 1-4 pair), written once for the CPU (src/md/bonded.c, double) and the GPU
 * (src/md/gpu/bonded_gpu.cu: float forces on normal steps, double on energy steps).
 *
 * Each function takes the difference vectors of its atoms (the caller forms them: the CPU from
 * double positions, the GPU from its double positions, rounded to float for the float
 * instance, so that positions of several nm never lose the few digits a 0.1 nm bond has), the
 * parameters, and returns the energy and the forces on the atoms. Conventions are those of
 * include/halox/md.h (GROMACS's forms); the derivations are in src/md/bonded.c's header.
 *
 * The header is instantiated per precision: it defines hx_bt_*_d (double) always and hx_bt_*_f
 * (float, float math functions and constants) where HX_BT_FLOAT is defined before including
 * it. The body is in bonded_terms_impl.h, included once per instance. */
#ifndef HX_MD_BONDED_TERMS_H
#define HX_MD_BONDED_TERMS_H

#include "core/hd.h"

#include <math.h>

#define BT_R double
#define BT_FN(name) hx_bt_##name##_d
#define BT_C(v) (v)
#define BT_SQRT sqrt
#define BT_ACOS acos
#define BT_ATAN2 atan2
#define BT_COS cos
#define BT_SIN sin
#define BT_FABS fabs
#include "md/bonded_terms_impl.h"

#ifdef HX_BT_FLOAT
#define BT_R float
#define BT_FN(name) hx_bt_##name##_f
#define BT_C(v) ((float)(v))
#define BT_SQRT sqrtf
#define BT_ACOS acosf
#define BT_ATAN2 atan2f
#define BT_COS cosf
#define BT_SIN sinf
#define BT_FABS fabsf
#include "md/bonded_terms_impl.h"
#endif

#endif
