/* Bonded interactions of whole molecules: harmonic bonds and angles, Ryckaert-Bellemans proper
 * dihedrals and 1-4 pairs, in GROMACS's forms and conventions (include/halox/md.h, hx_moltype),
 * in double.
 *
 * Why per molecule: halox never splits a molecule between domains, so a domain computes the
 * bonded terms of its home molecules from home positions only; nothing of it travels in a halo.
 * Molecules are independent: threads take fixed blocks of molecules (each molecule's forces are
 * written by one thread) and the block energies are added in block order, so the result does
 * not depend on the number of threads.
 *
 * The dihedral angle phi is the IUPAC one (trans = 180 degrees), computed with atan2 from
 * r_ij = x_i - x_j, r_kj = x_k - x_j, r_kl = x_k - x_l, m = r_ij x r_kj, n = r_kj x r_kl:
 * phi = atan2(|r_kj| r_ij . n, m . n). Its force distribution is the exact gradient of phi:
 * dphi/dx_i = |r_kj| m / |m|^2, dphi/dx_l = -|r_kj| n / |n|^2, and the middle atoms take the
 * rest so that the forces sum to zero and exert no torque. */
#include "halox/md.h"
#include "core/error.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BONDED_BLOCK 64 /* molecules per block of work */

static inline void sub3(const double *a, const double *b, double *c)
{
    c[0] = a[0] - b[0];
    c[1] = a[1] - b[1];
    c[2] = a[2] - b[2];
}

static inline double dot3(const double *a, const double *b)
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

static inline void cross3(const double *a, const double *b, double *c)
{
    c[0] = a[1] * b[2] - a[2] * b[1];
    c[1] = a[2] * b[0] - a[0] * b[2];
    c[2] = a[0] * b[1] - a[1] * b[0];
}

/* One molecule at atom offset a0; energies added to e[5]. */
static void molecule_terms(const hx_moltype *t, int a0, const double *x, double *f, double epsfac,
                           double e[5])
{
    for (int b = 0; b < t->nbonds; b++) {
        const hx_bond *bd = &t->bonds[b];
        const int i = a0 + bd->i, j = a0 + bd->j;
        double d[3];
        sub3(&x[3 * i], &x[3 * j], d);
        const double r = sqrt(dot3(d, d)), dr = r - bd->b0;
        e[0] += 0.5 * bd->kb * dr * dr;
        const double fs = -bd->kb * dr / r; /* F_i = -kb (r - b0) d / r */
        for (int k = 0; k < 3; k++) {
            f[3 * i + k] += fs * d[k];
            f[3 * j + k] -= fs * d[k];
        }
    }
    for (int a = 0; a < t->nangles; a++) {
        const hx_angle *an = &t->angles[a];
        const int i = a0 + an->i, j = a0 + an->j, k = a0 + an->k;
        double rij[3], rkj[3];
        sub3(&x[3 * i], &x[3 * j], rij);
        sub3(&x[3 * k], &x[3 * j], rkj);
        const double nij2 = dot3(rij, rij), nkj2 = dot3(rkj, rkj);
        const double inv = 1.0 / sqrt(nij2 * nkj2);
        double c = dot3(rij, rkj) * inv;
        c = c > 1.0 ? 1.0 : (c < -1.0 ? -1.0 : c);
        const double theta = acos(c), dth = theta - an->theta0;
        e[1] += 0.5 * an->ktheta * dth * dth;
        const double s2 = 1.0 - c * c;
        if (s2 <= 1e-24)
            continue; /* collinear: the direction of the force is undefined, its size bounded */
        /* F_i = dV/dtheta / sin(theta) * dcos/dx_i, dcos/dx_i = r_kj/(|r_ij||r_kj|) - c
         * r_ij/|r_ij|^2 */
        const double st = an->ktheta * dth / sqrt(s2);
        for (int d = 0; d < 3; d++) {
            const double fi = st * (rkj[d] * inv - c * rij[d] / nij2);
            const double fk = st * (rij[d] * inv - c * rkj[d] / nkj2);
            f[3 * i + d] += fi;
            f[3 * k + d] += fk;
            f[3 * j + d] -= fi + fk;
        }
    }
    for (int q = 0; q < t->ndihedrals; q++) {
        const hx_dihedral *dh = &t->dihedrals[q];
        const int i = a0 + dh->i, j = a0 + dh->j, k = a0 + dh->k, l = a0 + dh->l;
        double rij[3], rkj[3], rkl[3], m[3], n[3];
        sub3(&x[3 * i], &x[3 * j], rij);
        sub3(&x[3 * k], &x[3 * j], rkj);
        sub3(&x[3 * k], &x[3 * l], rkl);
        cross3(rij, rkj, m);
        cross3(rkj, rkl, n);
        const double nkj2 = dot3(rkj, rkj), nkj = sqrt(nkj2);
        const double m2 = dot3(m, m), n2 = dot3(n, n);
        const double phi = atan2(nkj * dot3(rij, n), dot3(m, n));
        /* V = sum c_p cos^p(psi), cos(psi) = -cos(phi); dV/dphi = sin(phi) sum p c_p cos^(p-1) */
        const double cpsi = -cos(phi);
        double v = dh->c[0], dv = 0.0, pw = 1.0;
        for (int p = 1; p < 6; p++) {
            dv += p * dh->c[p] * pw; /* pw = cos(psi)^(p-1) */
            pw *= cpsi;
            v += dh->c[p] * pw;
        }
        e[2] += v;
        const double ddphi = sin(phi) * dv;
        const double tol = nkj2 * 1e-30;
        if (m2 <= tol || n2 <= tol)
            continue; /* three atoms in a line: phi undefined, no torque */
        double fi[3], fl[3], fj[3], fk[3];
        const double a = -ddphi * nkj / m2, b = ddphi * nkj / n2;
        const double p = dot3(rij, rkj) / nkj2, r = dot3(rkl, rkj) / nkj2;
        for (int d = 0; d < 3; d++) {
            fi[d] = a * m[d];
            fl[d] = b * n[d];
            const double s = p * fi[d] - r * fl[d];
            fj[d] = fi[d] - s;
            fk[d] = fl[d] + s;
        }
        for (int d = 0; d < 3; d++) {
            f[3 * i + d] += fi[d];
            f[3 * j + d] -= fj[d];
            f[3 * k + d] -= fk[d];
            f[3 * l + d] += fl[d];
        }
    }
    for (int q = 0; q < t->npairs; q++) {
        const hx_pair14 *pr = &t->pairs[q];
        const int i = a0 + pr->i, j = a0 + pr->j;
        double d[3];
        sub3(&x[3 * i], &x[3 * j], d);
        const double r2inv = 1.0 / dot3(d, d), rinv = sqrt(r2inv);
        const double r6inv = r2inv * r2inv * r2inv;
        const double vlj12 = pr->c12 * r6inv * r6inv, vlj6 = pr->c6 * r6inv;
        const double vc = epsfac * pr->qq * rinv;
        e[3] += vlj12 - vlj6;
        e[4] += vc;
        const double fs = (12.0 * vlj12 - 6.0 * vlj6 + vc) * r2inv;
        for (int k = 0; k < 3; k++) {
            f[3 * i + k] += fs * d[k];
            f[3 * j + k] -= fs * d[k];
        }
    }
}

hx_status hx_bonded_compute(const hx_forcefield *ff, const hx_mol_list *ml, const double *x,
                            double *f, double epsfac, int nthreads, hx_bonded_energies *e,
                            long long step)
{
    HX_CHECK(ff && ml && (ml->nmol == 0 || (ml->start && ml->type && x && f)), HX_ERR_INVALID_ARG,
             "hx_bonded_compute: NULL argument");
    const int nmol = ml->nmol;
    const int nblk = (nmol + BONDED_BLOCK - 1) / BONDED_BLOCK;
    double stack[5 * 64];
    double *part = nblk <= 64 ? stack : malloc(5 * (size_t)nblk * sizeof *part);
    HX_CHECK(part, HX_ERR_NOMEM, "out of memory for %d blocks of bonded terms", nblk);
    int bad = INT_MAX;
    const int nt = nthreads > 0 ? nthreads : 1;
    (void)nt;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(nt) reduction(min : bad) if (nblk > 1)
#endif
    for (int blk = 0; blk < nblk; blk++) {
        double *eb = &part[5 * blk];
        for (int c = 0; c < 5; c++)
            eb[c] = 0.0;
        const int k1 = (blk + 1) * BONDED_BLOCK < nmol ? (blk + 1) * BONDED_BLOCK : nmol;
        for (int k = blk * BONDED_BLOCK; k < k1; k++) {
            const hx_moltype *t = hx_forcefield_moltype(ff, ml->type[k]);
            if (!t || (!t->nbonds && !t->nangles && !t->ndihedrals && !t->npairs))
                continue;
            double em[5] = {0, 0, 0, 0, 0};
            molecule_terms(t, ml->start[k], x, f, epsfac, em);
            int ok = 1;
            for (int c = 0; c < 5; c++) {
                ok &= isfinite(em[c]);
                eb[c] += em[c];
            }
            for (int a = ml->start[k]; a < ml->start[k] + t->natoms; a++)
                ok &= isfinite(f[3 * a]) && isfinite(f[3 * a + 1]) && isfinite(f[3 * a + 2]);
            if (!ok && k < bad)
                bad = k;
        }
    }
    double sum[5] = {0, 0, 0, 0, 0};
    for (int blk = 0; blk < nblk; blk++)
        for (int c = 0; c < 5; c++)
            sum[c] += part[5 * blk + c];
    if (part != stack)
        free(part);
    if (bad != INT_MAX) {
        const hx_moltype *t = hx_forcefield_moltype(ff, ml->type[bad]);
        HX_FAIL(HX_ERR_PHYSICS,
                "step %lld: non-finite bonded energy or force in molecule %d (%s): atoms of the "
                "molecule overlap or the system blew up; check the input structure and use a "
                "smaller time step",
                step, (ml->gid ? ml->gid[bad] : bad) + 1, t ? t->name : "?");
    }
    if (e) {
        e->bonds = sum[0];
        e->angles = sum[1];
        e->dihedrals = sum[2];
        e->lj14 = sum[3];
        e->coulomb14 = sum[4];
    }
    return HX_OK;
}
