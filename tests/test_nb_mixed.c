/* Mixed precision (float pair kernel, double energy sums) against the double path on the same
 * pair list, for water (SPC/E, TIP3P) and argon boxes from 648 to 45198 atoms, also after the
 * atoms moved within the buffer. Measured values are printed (on the 45k SPC/E box, 2 threads:
 * largest force error 2.1e-5 of the largest force, RMS 6.5e-6, LJ 2.7e-7 relative, Coulomb
 * 4.7e-6 kJ/mol per atom). Tolerances:
 *  - largest per-component force difference <= 1e-4 of the largest force component (float
 *    buffers sum a few hundred pair forces per atom, with cancellation);
 *  - RMS force difference <= 2e-5 of the RMS force;
 *  - LJ energy relative difference <= 1e-5 (argon's LJ total is a small remainder of its
 *    repulsive and attractive parts: 2.8e-6 measured);
 *  - Coulomb energy difference <= 5e-5 kJ/mol per atom. The Coulomb total of water is a
 *    remainder of large pair and self terms, so its error is judged per atom, not relative to
 *    the total: the float rounding of the charges (1e-7 relative, the same for every pair of
 *    two atom types) moves the pair sum systematically. */
#include "test_md_common.h"

#include "halox/build.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int ncases;

static void compare(const char *name, hx_system *s, const char *model, double rc, double rlist,
                    double eps_rf, int nthreads, double move)
{
    hx_forcefield *ff = NULL;
    T_OK(hx_forcefield_create(model, &ff));
    T_OK(hx_forcefield_apply(ff, s));
    int n = s->natoms;
    int *mol = malloc(sizeof(int) * (size_t)n);
    hx_zone_range rg;
    hx_local_set set;
    hx_local_set_from_system(&set, s, mol, &rg);
    hx_nb_params p = {rc, eps_rf, 1.0};
    hx_nb *nb = NULL;
    T_OK(hx_nb_create(ff, &p, nthreads, &nb));
    T_OK(hx_nb_search(nb, &set, rlist, 0, NULL));
    if (move > 0) {
        t_rng r;
        t_rng_seed(&r, 7);
        for (int k = 0; k < 3 * n; k++)
            s->x[k] += move * (2 * t_rng_uniform(&r) - 1) / sqrt(3.0);
    }
    double *fd = malloc(sizeof(double) * 3 * (size_t)n);
    double *fm = malloc(sizeof(double) * 3 * (size_t)n);
    hx_nb_energies ed, em;
    T_OK(hx_nb_compute(nb, &set, fd, &ed, 0));
    T_OK(hx_nb_set_precision(nb, HX_NB_MIXED));
    ncases++;
    T_CHECK(hx_nb_get_precision(nb) == HX_NB_MIXED, "%s: precision not switched", name);
    T_OK(hx_nb_compute(nb, &set, fm, &em, 0));
    double fmax = 0, dmax = 0, f2 = 0, d2 = 0;
    int worst = 0;
    for (int k = 0; k < 3 * n; k++) {
        double df = fabs(fm[k] - fd[k]);
        fmax = fmax > fabs(fd[k]) ? fmax : fabs(fd[k]);
        if (df > dmax) {
            dmax = df;
            worst = k;
        }
        f2 += fd[k] * fd[k];
        d2 += df * df;
    }
    double rel_max = dmax / fmax, rel_rms = sqrt(d2 / f2);
    double lj_rel = t_reldiff(em.lj, ed.lj, 1e-3);
    double c_atom = fabs(em.coulomb - ed.coulomb) / n;
    printf("%-44s %6d atoms (%s): force max %.2e rms %.2e, LJ rel %.2e, Coulomb %.2e kJ/mol "
           "per atom\n",
           name, n, hx_nb_kernel_name(nb), rel_max, rel_rms, lj_rel, c_atom);
    ncases += 4;
    T_CHECK(rel_max <= 1e-4, "%s: force on atom %d [%d] mixed %.9g double %.9g (largest %g)", name,
            worst / 3, worst % 3, fm[worst], fd[worst], fmax);
    T_CHECK(rel_rms <= 2e-5, "%s: RMS force difference %.3g of the RMS force", name, rel_rms);
    T_CHECK(lj_rel <= 1e-5, "%s: LJ mixed %.12g double %.12g", name, em.lj, ed.lj);
    T_CHECK(c_atom <= 5e-5, "%s: Coulomb mixed %.12g double %.12g (%d atoms)", name, em.coulomb,
            ed.coulomb, n);
    /* back to double: the exact path again */
    double *f3 = malloc(sizeof(double) * 3 * (size_t)n);
    hx_nb_energies e3;
    T_OK(hx_nb_set_precision(nb, HX_NB_DOUBLE));
    T_OK(hx_nb_compute(nb, &set, f3, &e3, 0));
    ncases++;
    T_CHECK(!memcmp(f3, fd, sizeof(double) * 3 * (size_t)n) && e3.lj == ed.lj &&
                e3.coulomb == ed.coulomb,
            "%s: double after mixed differs from double before", name);
    T_CHECK(hx_nb_set_precision(nb, (hx_nb_precision)7) == HX_ERR_INVALID_ARG,
            "%s: precision 7 accepted", name);
    free(f3);
    free(fd);
    free(fm);
    free(mol);
    hx_nb_destroy(&nb);
    hx_forcefield_destroy(&ff);
}

int main(void)
{
    hx_system *s = tmd_water_lattice("spce", 6, 0.05, 21);
    compare("spce lattice, rc 0.8", s, "spce", 0.8, 0.85, 0.0, 1, 0.0);
    hx_system_destroy(&s);
    s = tmd_water_lattice("spce", 10, 0.05, 22);
    compare("spce lattice, rc 1.0 eps_rf 78, moved", s, "spce", 1.0, 1.1, 78.0, 2, 0.04);
    hx_system_destroy(&s);
    s = tmd_water_lattice("tip3p", 9, 0.05, 23);
    compare("tip3p lattice, rc 1.2", s, "tip3p", 1.2, 1.25, 0.0, 3, 0.0);
    hx_system_destroy(&s);
    s = tmd_argon_lattice(12, 0.05, 24);
    compare("argon lattice, rc 1.0, moved", s, "argon", 1.0, 1.1, 0.0, 2, 0.04);
    hx_system_destroy(&s);
    /* the benchmark box: `halox build water --atoms 45198 --seed 1` */
    T_OK(hx_build_water("spce", 45198, 0.0, 1, &s));
    if (s) {
        compare("built spce box (nb_bench), rc 1.0", s, "spce", 1.0, 1.1, 0.0, 2, 0.0);
        hx_system_destroy(&s);
    }
    return t_finish("test_nb_mixed", ncases);
}
