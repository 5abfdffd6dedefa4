/* Single-point energies and forces of ethanol-water systems: the engine (pair list with the
 * exclusion masks, reaction field, bonded terms and 1-4 pairs) against the independent O(N^2)
 * reference of tests/test_ethanol_common.c, per term.
 *
 * Systems: lattices of ethanols and waters (random orientations, jittered; 30 % and 60 %
 * ethanol) with TIP3P and SPC/E water; rc 0.9, 1.0 and 1.2 nm; eps_rf 0 (infinity) and 78.5;
 * eps_r 1 and 2; 1 and 2 threads. The engine constrains its start, so the reference is taken on
 * the engine's (constrained) positions.
 * Checks, each to 1e-9 relative (LJ, Coulomb, bonds, angles, dihedrals, LJ-14, Coulomb-14) and
 * every force component to 1e-9 of the largest force, as the water test: two double-precision
 * evaluations differ by rounding (~1e-13 on these sums), and 1e-9 fails on any wrong pair:
 * one 1-5 pair (HC..HO, 0.25 nm, Coulomb 0.06 x 0.418 x 138.9 / 0.25 = 14 kJ/mol) treated as
 * excluded, or one excluded pair's reaction-field correction dropped, moves the Coulomb total
 * (~1e4 kJ/mol) by 1e-4 to 1e-3 relative. Forces come from the components the backend uses
 * (hx_nb_compute on a local set with the exclusion masks, plus hx_bonded_compute). */
#include "halox/decomp.h"
#include "test_ethanol_common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int ncases;

static void check_term(const char *what, const char *term, double got, double want, double scale)
{
    T_CHECK(fabs(got - want) <= 1e-9 * scale, "%s: %s %.12g, reference %.12g (difference %.3g)",
            what, term, got, want, got - want);
}

static void one_case(const char *water, double frac, double rc, double eps_rf, double eps_r,
                     int nthreads, uint64_t seed)
{
    char what[160];
    snprintf(what, sizeof what, "%s x_eth %.1f rc %g eps_rf %g eps_r %g threads %d seed %llu",
             water, frac, rc, eps_rf, eps_r, nthreads, (unsigned long long)seed);
    hx_system *s = tet_mixture_lattice(water, 6, 0.5, frac, 0.03, seed);
    if (!s) {
        T_FAIL("%s: no test system", what);
        return;
    }
    char model[32];
    snprintf(model, sizeof model, "oplsaa-%s", water);
    hx_md_params p;
    hx_md_params_default(&p);
    p.model = model;
    p.rc = rc;
    p.rlist = rc + 0.1;
    p.eps_rf = eps_rf;
    p.eps_r = eps_r;
    p.nthreads = nthreads;
    hx_md *md = NULL;
    T_OK(hx_md_create(s, &p, &md));
    if (!md) {
        hx_system_destroy(&s);
        return;
    }
    T_OK(hx_md_evaluate(md));
    const hx_md_energies *e = hx_md_last_energies(md);
    hx_system *c = NULL; /* the constrained start, force field applied */
    T_OK(hx_system_copy(hx_md_system(md), &c));
    tet_ref ref;
    tet_reference(c, water, rc, eps_rf, eps_r, &ref);
    ncases++;
    const double cs = fabs(ref.coulomb) + fabs(ref.coulomb14);
    check_term(what, "LJ (SR)", e->lj, ref.lj, fabs(ref.lj));
    check_term(what, "Coulomb (SR)", e->coulomb, ref.coulomb, cs);
    check_term(what, "Bond", e->bonds, ref.bonds, fabs(ref.bonds));
    check_term(what, "Angle", e->angles, ref.angles, fabs(ref.angles));
    check_term(what, "Ryckaert-Bell.", e->dihedrals, ref.dihedrals, fabs(ref.dihedrals));
    check_term(what, "LJ-14", e->lj14, ref.lj14, fabs(ref.lj14));
    check_term(what, "Coulomb-14", e->coulomb14, ref.coulomb14, cs);
    const double sum =
        ref.lj + ref.coulomb + ref.bonds + ref.angles + ref.dihedrals + ref.lj14 + ref.coulomb14;
    check_term(what, "potential", e->potential, sum,
               fabs(ref.lj) + cs + fabs(ref.bonds) + fabs(ref.angles) + fabs(ref.dihedrals));
    T_CHECK(e->has_bonded, "%s: energies without bonded terms", what);

    /* forces: non-bonded on the whole system with its exclusion masks, plus bonded terms */
    hx_forcefield *ff = NULL;
    T_OK(hx_forcefield_create(model, &ff));
    hx_nb_params np = {rc, eps_rf, eps_r};
    hx_nb *nb = NULL;
    T_OK(hx_nb_create(ff, &np, nthreads, &nb));
    int *mol = malloc(sizeof(int) * (size_t)c->natoms), *start = malloc(sizeof(int) * c->nmol);
    unsigned char *pos = malloc((size_t)c->natoms);
    double *f = calloc(3 * (size_t)c->natoms, sizeof(double));
    hx_zone_range rg;
    hx_local_set set;
    hx_local_set_from_system(&set, c, mol, &rg);
    for (int k = 0; k < c->nmol; k++) {
        start[k] = c->mol_start[k];
        for (int a = c->mol_start[k]; a < c->mol_start[k + 1]; a++)
            pos[a] = (unsigned char)(a - c->mol_start[k]);
    }
    set.excl = c->excl;
    set.mol_pos = pos;
    hx_nb_energies ne;
    T_OK(hx_nb_search(nb, &set, rc + 0.1, 0, NULL));
    T_OK(hx_nb_compute(nb, &set, f, &ne, 0));
    hx_mol_list ml = {c->nmol, start, c->mol_type, NULL};
    hx_rf_consts rf = hx_rf_constants(&np);
    T_OK(hx_bonded_compute(ff, &ml, c->x, f, rf.epsfac, nthreads, NULL, 0));
    double fbig = 0;
    for (int k = 0; k < 3 * c->natoms; k++)
        fbig = fmax(fbig, fabs(ref.f[k]));
    int bad = 0;
    for (int k = 0; k < 3 * c->natoms && bad < 3; k++)
        if (!(fabs(f[k] - ref.f[k]) <= 1e-9 * fbig)) {
            T_FAIL("%s: force on atom %d (%s %s) [%c] %.12g, reference %.12g", what, k / 3 + 1,
                   c->res_name[k / 3], c->atom_name[k / 3], "xyz"[k % 3], f[k], ref.f[k]);
            bad++;
        }
    ncases++;
    free(mol);
    free(start);
    free(pos);
    free(f);
    hx_nb_destroy(&nb);
    hx_forcefield_destroy(&ff);
    tet_ref_free(&ref);
    hx_system_destroy(&c);
    hx_md_destroy(&md);
    hx_system_destroy(&s);
}

int main(void)
{
    one_case("tip3p", 0.3, 1.0, 0.0, 1.0, 1, 1);
    one_case("tip3p", 0.3, 1.0, 78.5, 1.0, 2, 2);
    one_case("tip3p", 0.6, 0.9, 0.0, 2.0, 2, 3);
    one_case("spce", 0.3, 1.2, 0.0, 1.0, 1, 4);
    one_case("tip3p", 1.0, 1.0, 0.0, 1.0, 2, 5); /* pure ethanol */
    return t_finish("test_ethanol_energy", ncases);
}
