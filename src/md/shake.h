/* SHAKE of one molecule (Ryckaert, Ciccotti, Berendsen 1977), written once for the CPU
 * (src/md/constraints.c) and the GPU update (src/md/gpu/update_gpu.cu, one thread per molecule);
 * the method and its tolerance are described in src/md/constraints.c. */
#ifndef HX_MD_SHAKE_H
#define HX_MD_SHAKE_H

#include "core/hd.h"
#include "halox/md.h"

#include <math.h>

/* nc constraints cs (positions in the molecule) with masses m per position; xo: constrained
 * positions at the start of the step (the constraint directions), xn: unconstrained new
 * positions, constrained in place; both point at the molecule's first atom (3 per atom).
 * Sweeps until every |s^2 - d^2| <= 2 tol d^2 (|s - d| ~ tol d). Returns the sweeps it took, -1
 * when a constraint turned by 90 degrees or more (or a value became non-finite), -2 without
 * convergence in maxiter sweeps: it always ends. The old bond vectors are recomputed from xo
 * where needed (no per-molecule scratch: on the GPU it would live in local memory). */
HX_HD int hx_shake_molecule(int nc, const hx_constraint *cs, const double *m, const double *xo,
                            double *xn, double tol, int maxiter)
{
    const double tol2 = 2.0 * tol; /* |s^2 - d^2| / d^2 ~ 2 |s - d| / d */
    for (int it = 1; it <= maxiter; it++) {
        int done = 1;
        for (int c = 0; c < nc; c++) {
            const int i = cs[c].i, j = cs[c].j;
            double s[3];
            for (int d = 0; d < 3; d++)
                s[d] = xn[3 * i + d] - xn[3 * j + d];
            const double d2 = cs[c].d * cs[c].d;
            const double diff = d2 - (s[0] * s[0] + s[1] * s[1] + s[2] * s[2]);
            if (!(fabs(diff) > tol2 * d2)) {
                if (!isfinite(diff))
                    return -1;
                continue;
            }
            done = 0;
            double ro[3];
            for (int d = 0; d < 3; d++)
                ro[d] = xo[3 * i + d] - xo[3 * j + d];
            const double sp = s[0] * ro[0] + s[1] * ro[1] + s[2] * ro[2];
            const double imi = 1.0 / m[i], imj = 1.0 / m[j];
            if (!(sp > 1e-6 * d2))
                return -1;
            const double g = diff / (2.0 * sp * (imi + imj));
            for (int d = 0; d < 3; d++) {
                xn[3 * i + d] += g * imi * ro[d];
                xn[3 * j + d] -= g * imj * ro[d];
            }
        }
        if (done)
            return it;
    }
    return -2;
}

#endif
