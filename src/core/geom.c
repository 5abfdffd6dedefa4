#include "core/geom.h"

#include <math.h>

void hx_geom_zplace(const double A[3], const double B[3], const double C[3], double R, double th,
                    double ph, double D[3])
{
    double bc[3], ab[3], n[3], m[3];
    for (int k = 0; k < 3; k++) {
        bc[k] = C[k] - B[k];
        ab[k] = B[k] - A[k];
    }
    const double nb = sqrt(bc[0] * bc[0] + bc[1] * bc[1] + bc[2] * bc[2]);
    for (int k = 0; k < 3; k++)
        bc[k] /= nb;
    /* n normal to the plane A-B-C, m in it and normal to BC: the frame the dihedral turns in */
    n[0] = ab[1] * bc[2] - ab[2] * bc[1];
    n[1] = ab[2] * bc[0] - ab[0] * bc[2];
    n[2] = ab[0] * bc[1] - ab[1] * bc[0];
    const double nn = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    for (int k = 0; k < 3; k++)
        n[k] /= nn;
    m[0] = n[1] * bc[2] - n[2] * bc[1];
    m[1] = n[2] * bc[0] - n[0] * bc[2];
    m[2] = n[0] * bc[1] - n[1] * bc[0];
    for (int k = 0; k < 3; k++)
        D[k] = C[k] - R * cos(th) * bc[k] + R * sin(th) * cos(ph) * m[k] +
               R * sin(th) * sin(ph) * n[k];
}

void hx_geom_quat_rotation(const double q[4], double R[3][3])
{
    const double s = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    const double u[4] = {q[0] / s, q[1] / s, q[2] / s, q[3] / s};
    hx_geom_unit_quat_rotation(u, R);
}

void hx_geom_unit_quat_rotation(const double q[4], double R[3][3])
{
    const double w = q[0], x = q[1], y = q[2], z = q[3];
    R[0][0] = 1 - 2 * (y * y + z * z);
    R[0][1] = 2 * (x * y - w * z);
    R[0][2] = 2 * (x * z + w * y);
    R[1][0] = 2 * (x * y + w * z);
    R[1][1] = 1 - 2 * (x * x + z * z);
    R[1][2] = 2 * (y * z - w * x);
    R[2][0] = 2 * (x * z - w * y);
    R[2][1] = 2 * (y * z + w * x);
    R[2][2] = 1 - 2 * (x * x + y * y);
}
