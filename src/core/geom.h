/* Small geometry used by the system builders and by the tests that build the same molecules:
 * one definition, so that a test's molecule and the product's cannot drift apart. */
#ifndef HX_CORE_GEOM_H
#define HX_CORE_GEOM_H

/* D with |CD| = R, angle B-C-D = th and dihedral A-B-C-D = ph (radians): the Z-matrix step
 * that places an atom from three placed ones. */
void hx_geom_zplace(const double A[3], const double B[3], const double C[3], double R, double th,
                    double ph, double D[3]);

/* The rotation matrix of the quaternion q (w, x, y, z; normalised here, any length > 0). With
 * q's components drawn from a normal distribution the rotation is uniform over SO(3). */
void hx_geom_quat_rotation(const double q[4], double R[3][3]);

/* The same for a q the caller has normalised (its own way: the water builder multiplies by
 * 1/|q|, and its files stay the same bit for bit only if that rounding is kept). */
void hx_geom_unit_quat_rotation(const double q[4], double R[3][3]);

#endif
