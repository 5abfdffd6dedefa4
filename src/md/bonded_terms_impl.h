/* Body of src/md/bonded_terms.h, included once per precision with BT_R (the real type), BT_FN
 * (the name of an instance), BT_C (a constant of that type) and the math functions defined, which
 * it undefines at its end for the next instance. No include guard on purpose; include
 * bonded_terms.h, never this file. */

HX_HD BT_R BT_FN(dot)(const BT_R *a, const BT_R *b)
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

HX_HD void BT_FN(cross)(const BT_R *a, const BT_R *b, BT_R *c)
{
    c[0] = a[1] * b[2] - a[2] * b[1];
    c[1] = a[2] * b[0] - a[0] * b[2];
    c[2] = a[0] * b[1] - a[1] * b[0];
}

/* Harmonic bond, d = x_i - x_j: V = kb/2 (r - b0)^2; fi = force on i (on j: -fi). */
HX_HD BT_R BT_FN(bond)(const BT_R *d, BT_R b0, BT_R kb, BT_R *fi)
{
    const BT_R r = BT_SQRT(BT_FN(dot)(d, d)), dr = r - b0;
    const BT_R fs = -kb * dr / r; /* F_i = -kb (r - b0) d / r */
    for (int k = 0; k < 3; k++)
        fi[k] = fs * d[k];
    return BT_C(0.5) * kb * dr * dr;
}

/* Harmonic angle at vertex j, rij = x_i - x_j, rkj = x_k - x_j: V = kt/2 (theta - theta0)^2;
 * forces on i, k (on j: -(fi + fk)). Collinear atoms: the direction of the force is undefined
 * (its size bounded), the forces are 0. */
HX_HD BT_R BT_FN(angle)(const BT_R *rij, const BT_R *rkj, BT_R theta0, BT_R kt, BT_R *fi, BT_R *fk)
{
    const BT_R nij2 = BT_FN(dot)(rij, rij), nkj2 = BT_FN(dot)(rkj, rkj);
    const BT_R inv = BT_C(1.0) / BT_SQRT(nij2 * nkj2);
    BT_R c = BT_FN(dot)(rij, rkj) * inv;
    c = c > BT_C(1.0) ? BT_C(1.0) : (c < BT_C(-1.0) ? BT_C(-1.0) : c);
    const BT_R theta = BT_ACOS(c), dth = theta - theta0;
    const BT_R s2 = BT_C(1.0) - c * c;
    if (s2 <= BT_C(1e-24)) {
        for (int d = 0; d < 3; d++)
            fi[d] = fk[d] = BT_C(0.0);
    } else {
        /* F_i = dV/dtheta / sin(theta) * dcos/dx_i, dcos/dx_i = r_kj/(|r_ij||r_kj|) - c
         * r_ij/|r_ij|^2 */
        const BT_R st = kt * dth / BT_SQRT(s2);
        for (int d = 0; d < 3; d++) {
            fi[d] = st * (rkj[d] * inv - c * rij[d] / nij2);
            fk[d] = st * (rij[d] * inv - c * rkj[d] / nkj2);
        }
    }
    return BT_C(0.5) * kt * dth * dth;
}

/* Ryckaert-Bellemans dihedral i-j-k-l, rij = x_i - x_j, rkj = x_k - x_j, rkl = x_k - x_l:
 * V = sum_n c[n] cos^n(psi), psi = phi - 180 degrees; forces on the four atoms in f[4][3].
 * Three atoms in a line: phi undefined, no torque (forces 0). */
HX_HD BT_R BT_FN(dihedral)(const BT_R *rij, const BT_R *rkj, const BT_R *rkl, const BT_R *c,
                           BT_R (*f)[3])
{
    BT_R m[3], n[3];
    BT_FN(cross)(rij, rkj, m);
    BT_FN(cross)(rkj, rkl, n);
    const BT_R nkj2 = BT_FN(dot)(rkj, rkj), nkj = BT_SQRT(nkj2);
    const BT_R m2 = BT_FN(dot)(m, m), n2 = BT_FN(dot)(n, n);
    const BT_R phi = BT_ATAN2(nkj * BT_FN(dot)(rij, n), BT_FN(dot)(m, n));
    /* cos(psi) = -cos(phi); dV/dphi = sin(phi) sum p c_p cos^(p-1)(psi) */
    const BT_R cpsi = -BT_COS(phi);
    BT_R v = c[0], dv = BT_C(0.0), pw = BT_C(1.0);
    for (int p = 1; p < 6; p++) {
        dv += (BT_R)p * c[p] * pw; /* pw = cos(psi)^(p-1) */
        pw *= cpsi;
        v += c[p] * pw;
    }
    const BT_R ddphi = BT_SIN(phi) * dv;
    const BT_R tol = nkj2 * BT_C(1e-30);
    if (m2 <= tol || n2 <= tol) {
        for (int a = 0; a < 4; a++)
            f[a][0] = f[a][1] = f[a][2] = BT_C(0.0);
        return v;
    }
    const BT_R a = -ddphi * nkj / m2, b = ddphi * nkj / n2;
    const BT_R p = BT_FN(dot)(rij, rkj) / nkj2, r = BT_FN(dot)(rkl, rkj) / nkj2;
    for (int d = 0; d < 3; d++) {
        const BT_R fi = a * m[d], fl = b * n[d];
        const BT_R s = p * fi - r * fl;
        f[0][d] = fi;
        f[1][d] = -(fi - s);
        f[2][d] = -(fl + s);
        f[3][d] = fl;
    }
    return v;
}

/* 1-4 pair, d = x_i - x_j: V = c12/r^12 - c6/r^6 (*elj) + epsfac qq / r (*ec), no cut-off;
 * fi = force on i (on j: -fi). */
HX_HD void BT_FN(pair14)(const BT_R *d, BT_R c6, BT_R c12, BT_R epsfac, BT_R qq, BT_R *elj,
                         BT_R *ec, BT_R *fi)
{
    const BT_R r2inv = BT_C(1.0) / BT_FN(dot)(d, d), rinv = BT_SQRT(r2inv);
    const BT_R r6inv = r2inv * r2inv * r2inv;
    const BT_R vlj12 = c12 * r6inv * r6inv, vlj6 = c6 * r6inv;
    const BT_R vc = epsfac * qq * rinv;
    *elj = vlj12 - vlj6;
    *ec = vc;
    const BT_R fs = (BT_C(12.0) * vlj12 - BT_C(6.0) * vlj6 + vc) * r2inv;
    for (int k = 0; k < 3; k++)
        fi[k] = fs * d[k];
}

#undef BT_R
#undef BT_FN
#undef BT_C
#undef BT_SQRT
#undef BT_ACOS
#undef BT_ATAN2
#undef BT_COS
#undef BT_SIN
#undef BT_FABS
