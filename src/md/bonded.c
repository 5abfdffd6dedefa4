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
#include "md/bonded_terms.h"

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

/* One molecule at atom offset a0; energies added to e[5]. The arithmetic of each term is
 * src/md/bonded_terms.h, shared with the GPU kernel. */
static void molecule_terms(const hx_moltype *t, int a0, const double *x, double *f, double epsfac,
                           double e[5])
{
    for (int b = 0; b < t->nbonds; b++) {
        const hx_bond *bd = &t->bonds[b];
        const int i = a0 + bd->i, j = a0 + bd->j;
        double d[3], fi[3];
        sub3(&x[3 * i], &x[3 * j], d);
        e[0] += hx_bt_bond_d(d, bd->b0, bd->kb, fi);
        for (int k = 0; k < 3; k++) {
            f[3 * i + k] += fi[k];
            f[3 * j + k] -= fi[k];
        }
    }
    for (int a = 0; a < t->nangles; a++) {
        const hx_angle *an = &t->angles[a];
        const int i = a0 + an->i, j = a0 + an->j, k = a0 + an->k;
        double rij[3], rkj[3], fi[3], fk[3];
        sub3(&x[3 * i], &x[3 * j], rij);
        sub3(&x[3 * k], &x[3 * j], rkj);
        e[1] += hx_bt_angle_d(rij, rkj, an->theta0, an->ktheta, fi, fk);
        for (int d = 0; d < 3; d++) {
            f[3 * i + d] += fi[d];
            f[3 * k + d] += fk[d];
            f[3 * j + d] -= fi[d] + fk[d];
        }
    }
    for (int q = 0; q < t->ndihedrals; q++) {
        const hx_dihedral *dh = &t->dihedrals[q];
        const int at[4] = {a0 + dh->i, a0 + dh->j, a0 + dh->k, a0 + dh->l};
        double rij[3], rkj[3], rkl[3], fd[4][3];
        sub3(&x[3 * at[0]], &x[3 * at[1]], rij);
        sub3(&x[3 * at[2]], &x[3 * at[1]], rkj);
        sub3(&x[3 * at[2]], &x[3 * at[3]], rkl);
        e[2] += hx_bt_dihedral_d(rij, rkj, rkl, dh->c, fd);
        for (int u = 0; u < 4; u++)
            for (int d = 0; d < 3; d++)
                f[3 * at[u] + d] += fd[u][d];
    }
    for (int q = 0; q < t->npairs; q++) {
        const hx_pair14 *pr = &t->pairs[q];
        const int i = a0 + pr->i, j = a0 + pr->j;
        double d[3], fi[3], elj, ec;
        sub3(&x[3 * i], &x[3 * j], d);
        hx_bt_pair14_d(d, pr->c6, pr->c12, epsfac, pr->qq, &elj, &ec, fi);
        e[3] += elj;
        e[4] += ec;
        for (int k = 0; k < 3; k++) {
            f[3 * i + k] += fi[k];
            f[3 * j + k] -= fi[k];
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
