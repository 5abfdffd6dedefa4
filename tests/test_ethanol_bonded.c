/* Bonded terms and constraints of ethanol against independent references.
 *
 * Bonded (hx_bonded_compute): 200 ethanols in random orientations, every atom displaced by up
 * to 0.03 nm (bonds, angles and torsions far from their minima), against the reference of
 * tests/test_ethanol_common.c (the published Fourier form in kcal/mol and Angstrom, forces by
 * dual numbers): each of bonds, angles, dihedrals, LJ-14 and Coulomb-14 to 1e-11 relative, and
 * every force component to 1e-11 of the largest force. Two double evaluations of the same
 * function in different algebra (Ryckaert-Bellemans with atan2 vs Fourier in cos phi, explicit
 * gradient vs automatic differentiation) differ by rounding, ~1e-14 relative (a few hundred
 * terms); 1e-11 keeps three digits of room and catches any parameter, unit or sign error, and a
 * force scaled by 1 + 1e-9. Also: 1 and 2 threads give bit-identical results; eps_r scales the
 * 1-4 Coulomb; a molecule with an overlap is refused with its number.
 *
 * Constraints (hx_constr_apply): ethanols at constrained positions x0 moved by random
 * displacements of up to 0.006 nm per coordinate (a 2 fs step moves a hydrogen ~0.003 nm):
 *  - every constrained distance within the tolerance 1e-10 (relative) afterwards;
 *  - the result equals an independent Newton solution of the same equations (constraint
 *    forces along the old bonds, x = x' + M^-1 sum_c g_c r_c(x0), |x_i - x_j| = d) to 1e-11 nm:
 *    SHAKE stops within 1e-10 relative (1e-11 nm on 0.1 nm bonds);
 *  - momentum and angular momentum about x0 kept: sum m dx and sum x0 x m dx are 0 to 1e-13 of
 *    sum m |dx| (scale: one corrected displacement);
 *  - v = (x - x0)/dt; SETTLE for waters in the same list (count 3 per water + 6 per ethanol);
 *  - a bond to hydrogen turned by 180 degrees is refused with the exact message. */
#include "test_ethanol_common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int ncases;

static hx_forcefield *oplsaa(void)
{
    hx_forcefield *ff = NULL;
    T_OK(hx_forcefield_create("oplsaa", &ff));
    return ff;
}

static void bonded_vs_reference(void)
{
    hx_forcefield *ff = oplsaa();
    if (!ff)
        return;
    const int nm = 200;
    t_rng r;
    t_rng_seed(&r, 11);
    double *x = malloc(sizeof(double) * 27 * nm);
    int *start = malloc(sizeof(int) * nm), *type = malloc(sizeof(int) * nm);
    for (int k = 0; k < nm; k++) {
        double c[3] = {t_rng_uniform(&r) * 5, t_rng_uniform(&r) * 5, t_rng_uniform(&r) * 5};
        tet_ethanol_coords(&r, c, 0.03, &x[27 * k]);
        start[k] = 9 * k;
        type[k] = 1;
    }
    tet_ref ref;
    memset(&ref, 0, sizeof ref);
    double *fr = calloc(27 * (size_t)nm, sizeof(double));
    for (int k = 0; k < nm; k++)
        tet_ethanol_bonded(&x[27 * k], 1, 1.0, &ref, &fr[27 * k]);
    const double epsfac = 138.935458;
    hx_mol_list ml = {nm, start, type, NULL};
    double *f1 = calloc(27 * (size_t)nm, sizeof(double)), *f2 = calloc(27 * (size_t)nm, 8);
    hx_bonded_energies e1, e2;
    T_OK(hx_bonded_compute(ff, &ml, x, f1, epsfac, 1, &e1, 0));
    T_OK(hx_bonded_compute(ff, &ml, x, f2, epsfac, 2, &e2, 0));
    ncases++;
    const double got[5] = {e1.bonds, e1.angles, e1.dihedrals, e1.lj14, e1.coulomb14};
    const double want[5] = {ref.bonds, ref.angles, ref.dihedrals, ref.lj14, ref.coulomb14};
    const char *term[5] = {"bonds", "angles", "dihedrals", "LJ-14", "Coulomb-14"};
    for (int t = 0; t < 5; t++)
        T_CHECK(t_reldiff(got[t], want[t], 1e-30) < 1e-11,
                "%s: %.15g kJ/mol, reference %.15g (relative %.2g)", term[t], got[t], want[t],
                t_reldiff(got[t], want[t], 1e-30));
    double fbig = 0, worst = 0;
    int wa = 0;
    for (int k = 0; k < 27 * nm; k++)
        fbig = fmax(fbig, fabs(fr[k]));
    for (int k = 0; k < 27 * nm; k++)
        if (fabs(f1[k] - fr[k]) > worst) {
            worst = fabs(f1[k] - fr[k]);
            wa = k;
        }
    ncases++;
    T_CHECK(worst <= 1e-11 * fbig,
            "force on atom %d (%c): %.15g, reference %.15g; largest force %.4g", wa / 3 + 1,
            "xyz"[wa % 3], f1[wa], fr[wa], fbig);
    ncases++;
    T_CHECK(memcmp(f1, f2, 27 * (size_t)nm * sizeof(double)) == 0 &&
                memcmp(&e1, &e2, sizeof e1) == 0,
            "1 and 2 threads differ");
    /* eps_r scales the 1-4 Coulomb only */
    hx_bonded_energies e3;
    T_OK(hx_bonded_compute(ff, &ml, x, f2, epsfac / 2.0, 1, &e3, 0));
    ncases++;
    T_CHECK(t_reldiff(e3.coulomb14, 0.5 * e1.coulomb14, 1e-30) < 1e-14 && e3.lj14 == e1.lj14,
            "eps_r 2: Coulomb-14 %.15g, expected %.15g", e3.coulomb14, 0.5 * e1.coulomb14);
    /* an overlap: the 1-4 pair H11..O at the same place */
    memcpy(&x[27 * 7 + 3 * 1], &x[27 * 7 + 3 * 7], 3 * sizeof(double));
    ncases++;
    hx_status st = hx_bonded_compute(ff, &ml, x, f2, epsfac, 2, &e3, 42);
    T_CHECK(st == HX_ERR_PHYSICS &&
                strcmp(hx_last_error_message(),
                       "step 42: non-finite bonded energy or force in molecule 8 (ETH): atoms of "
                       "the molecule overlap or the system blew up; check the input structure "
                       "and use a smaller time step") == 0,
            "overlap: %s: %s", hx_status_name(st), hx_last_error_message());
    free(x);
    free(start);
    free(type);
    free(fr);
    free(f1);
    free(f2);
    hx_forcefield_destroy(&ff);
}

/* ---- constraints --------------------------------------------------------------------------- */

/* Independent solution of the constraint equations of one ethanol by Newton's method on the
 * multipliers: x(g) = xu + sum_c g_c r_c(x0) (1/m_i on i, -1/m_j on j); F_c(g) = |x_i - x_j|^2
 * - d_c^2 = 0, dense Jacobian, Gaussian elimination with partial pivoting. */
static void newton_constrain(const hx_moltype *t, const double *x0, const double *xu, double *x)
{
    const int nc = t->nconstraints;
    double g[16] = {0}, r0[16][3];
    for (int c = 0; c < nc; c++)
        for (int d = 0; d < 3; d++)
            r0[c][d] = x0[3 * t->constraints[c].i + d] - x0[3 * t->constraints[c].j + d];
    for (int it = 0; it < 50; it++) {
        memcpy(x, xu, 27 * sizeof(double));
        for (int c = 0; c < nc; c++)
            for (int d = 0; d < 3; d++) {
                x[3 * t->constraints[c].i + d] += g[c] / t->m[t->constraints[c].i] * r0[c][d];
                x[3 * t->constraints[c].j + d] -= g[c] / t->m[t->constraints[c].j] * r0[c][d];
            }
        double F[16], J[16][17];
        for (int c = 0; c < nc; c++) {
            const int i = t->constraints[c].i, j = t->constraints[c].j;
            double s[3];
            for (int d = 0; d < 3; d++)
                s[d] = x[3 * i + d] - x[3 * j + d];
            F[c] =
                s[0] * s[0] + s[1] * s[1] + s[2] * s[2] - t->constraints[c].d * t->constraints[c].d;
            for (int b = 0; b < nc; b++) {
                /* d s / d g_b = r0_b (delta_{i,ib}/m_ib - delta_{i,jb}/m_jb - (same for j)) */
                const int ib = t->constraints[b].i, jb = t->constraints[b].j;
                double w = 0;
                w += (i == ib ? 1 / t->m[ib] : 0) - (i == jb ? 1 / t->m[jb] : 0);
                w -= (j == ib ? 1 / t->m[ib] : 0) - (j == jb ? 1 / t->m[jb] : 0);
                J[c][b] = 2 * w * (s[0] * r0[b][0] + s[1] * r0[b][1] + s[2] * r0[b][2]);
            }
            J[c][nc] = -F[c];
        }
        for (int col = 0; col < nc; col++) {
            int piv = col;
            for (int row = col + 1; row < nc; row++)
                if (fabs(J[row][col]) > fabs(J[piv][col]))
                    piv = row;
            for (int k = 0; k <= nc; k++) {
                double tmp = J[col][k];
                J[col][k] = J[piv][k];
                J[piv][k] = tmp;
            }
            for (int row = col + 1; row < nc; row++) {
                double fct = J[row][col] / J[col][col];
                for (int k = col; k <= nc; k++)
                    J[row][k] -= fct * J[col][k];
            }
        }
        double dg[16];
        for (int row = nc - 1; row >= 0; row--) {
            double v = J[row][nc];
            for (int k = row + 1; k < nc; k++)
                v -= J[row][k] * dg[k];
            dg[row] = v / J[row][row];
        }
        for (int c = 0; c < nc; c++)
            g[c] += dg[c];
    }
}

static void constraints_vs_reference(void)
{
    hx_forcefield *ff = oplsaa();
    if (!ff)
        return;
    const hx_moltype *t = hx_forcefield_moltype(ff, 1);
    const int ne = 50, nw = 10, n = 9 * ne + 3 * nw;
    t_rng r;
    t_rng_seed(&r, 23);
    hx_system *s = tet_mixture_lattice("tip3p", 4, 0.6, 0.0, 0.0, 1); /* water geometry source */
    double *x0 = malloc(sizeof(double) * 3 * (size_t)n),
           *xu = malloc(sizeof(double) * 3 * (size_t)n);
    double *x = malloc(sizeof(double) * 3 * (size_t)n), *v = malloc(sizeof(double) * 3 * (size_t)n);
    int start[60], type[60], atype[600];
    for (int k = 0; k < ne; k++) {
        /* all at the origin (independent molecules): positions of 0.2 nm keep the rounding of
         * x + dx far below dx */
        double c[3] = {0, 0, 0};
        tet_ethanol_coords(&r, c, 0.01, &x0[27 * k]);
        start[k] = 9 * k;
        type[k] = 1;
        for (int p = 0; p < 9; p++)
            atype[9 * k + p] = t->type[p];
    }
    for (int k = 0; k < nw; k++) {
        int a0 = 9 * ne + 3 * k;
        start[ne + k] = a0;
        type[ne + k] = 0;
        /* water k of the lattice, with the oxygen second (any order is allowed) */
        const int order[3] = {1, 0, 2};
        for (int p = 0; p < 3; p++) {
            memcpy(&x0[3 * (a0 + order[p])], &s->x[3 * (3 * k + p)], 3 * sizeof(double));
            atype[a0 + order[p]] = p == 0 ? 0 : 1;
        }
    }
    hx_mol_list ml = {ne + nw, start, type, NULL};
    hx_constr *cn = NULL;
    T_OK(hx_constr_create(ff, &ml, atype, &cn));
    if (!cn)
        goto out;
    ncases++;
    T_CHECK(hx_constr_count(cn) == 6 * ne + 3 * nw, "%lld constraints, expected %d",
            hx_constr_count(cn), 6 * ne + 3 * nw);
    /* constrain the start (reference = itself), as the engine does */
    memcpy(x, x0, sizeof(double) * 3 * (size_t)n);
    T_OK(hx_constr_apply(cn, x0, x, NULL, 0.002, 0));
    memcpy(x0, x, sizeof(double) * 3 * (size_t)n);
    for (int k = 0; k < 3 * n; k++)
        xu[k] = x0[k] + 0.006 * (2 * t_rng_uniform(&r) - 1);
    memcpy(x, xu, sizeof(double) * 3 * (size_t)n);
    const double dt = 0.002;
    T_OK(hx_constr_apply(cn, x0, x, v, dt, 1));
    ncases++;
    double dev = hx_constr_deviation(cn, x);
    T_CHECK(dev <= 1e-10, "largest constraint deviation %.3g after SHAKE/SETTLE, tolerance 1e-10",
            dev);
    double worst = 0, pmax = 0, lmax = 0, vbad = 0;
    for (int k = 0; k < ne; k++) {
        double xn[27];
        newton_constrain(t, &x0[27 * k], &xu[27 * k], xn);
        double p[3] = {0}, l[3] = {0}, scale = 0;
        for (int a = 0; a < 9; a++) {
            double dx[3];
            for (int d = 0; d < 3; d++) {
                worst = fmax(worst, fabs(xn[3 * a + d] - x[27 * k + 3 * a + d]));
                dx[d] = t->m[a] * (x[27 * k + 3 * a + d] - xu[27 * k + 3 * a + d]);
                p[d] += dx[d];
                scale += fabs(dx[d]);
                vbad = fmax(vbad, fabs(v[27 * k + 3 * a + d] -
                                       (x[27 * k + 3 * a + d] - x0[27 * k + 3 * a + d]) / dt));
            }
            const double *o = &x0[27 * k + 3 * a];
            l[0] += o[1] * dx[2] - o[2] * dx[1];
            l[1] += o[2] * dx[0] - o[0] * dx[2];
            l[2] += o[0] * dx[1] - o[1] * dx[0];
        }
        for (int d = 0; d < 3; d++) {
            pmax = fmax(pmax, fabs(p[d]) / scale);
            lmax = fmax(lmax, fabs(l[d]) / (scale * 0.2)); /* lever arms up to 0.2 nm */
        }
    }
    ncases++;
    T_CHECK(worst <= 1e-11, "SHAKE differs from the Newton solution by %.3g nm (limit 1e-11)",
            worst);
    ncases++;
    T_CHECK(pmax <= 1e-13 && lmax <= 1e-13,
            "constraint corrections change momentum (%.3g) or angular momentum (%.3g)", pmax, lmax);
    ncases++;
    T_CHECK(vbad <= 1e-12 * 0.006 / dt, "velocities differ from (x - x0)/dt by %.3g", vbad);
    /* 1 and 2 threads: the same */
    double *x2 = malloc(sizeof(double) * 3 * (size_t)n);
    memcpy(x2, xu, sizeof(double) * 3 * (size_t)n);
    hx_constr_set_threads(cn, 2);
    T_OK(hx_constr_apply(cn, x0, x2, NULL, dt, 1));
    ncases++;
    T_CHECK(memcmp(x, x2, sizeof(double) * 3 * (size_t)n) == 0, "1 and 2 threads differ");
    /* a bond to hydrogen flipped: H12 of molecule 3 mirrored through its carbon */
    memcpy(x2, xu, sizeof(double) * 3 * (size_t)n);
    for (int d = 0; d < 3; d++)
        x2[27 * 2 + 3 * 2 + d] = 2 * x2[27 * 2 + d] - x2[27 * 2 + 3 * 2 + d];
    ncases++;
    hx_status st = hx_constr_apply(cn, x0, x2, NULL, dt, 7);
    T_CHECK(st == HX_ERR_PHYSICS &&
                strcmp(hx_last_error_message(),
                       "step 7: SHAKE cannot constrain molecule 3 (ETH, atoms 19-27 here): a bond "
                       "to hydrogen turned by 90 degrees or more in one step, or a position "
                       "became non-finite; use a smaller time step or check the starting "
                       "structure") == 0,
            "flipped bond: %s: %s", hx_status_name(st), hx_last_error_message());
    free(x2);
out:
    hx_constr_destroy(&cn);
    hx_system_destroy(&s);
    free(x0);
    free(xu);
    free(x);
    free(v);
    hx_forcefield_destroy(&ff);
}

int main(void)
{
    bonded_vs_reference();
    constraints_vs_reference();
    return t_finish("test_ethanol_bonded", ncases);
}
