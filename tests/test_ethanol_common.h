/* Shared by the ethanol tests: an independent reference of the OPLS-AA ethanol/water model and
 * test systems built here (not by src/io).
 *
 * The reference is written from the publications, not from src/md: its own transcription of
 * the parameters in their published units (kcal/mol, Angstrom, degrees; Fourier torsions),
 * exclusions and 1-4 pairs from a breadth-first search of its own bond list, angles from acos,
 * torsions as the Fourier series in cos(phi) (no Ryckaert-Bellemans, no atan2), and forces as
 * exact derivatives of the same energy expressions through dual numbers (forward-mode automatic
 * differentiation), so no force formula is shared with the production code. Non-bonded: the
 * O(N^2) sum over minimum-image pairs with reaction field in GROMACS's Verlet conventions. */
#ifndef HX_TEST_ETHANOL_COMMON_H
#define HX_TEST_ETHANOL_COMMON_H

#include "halox/md.h"
#include "testutil.h"

#define TET_NATOMS 9

/* Per-term energies (kJ/mol) and forces [3n] of the reference. */
typedef struct tet_ref {
    double lj, coulomb, bonds, angles, dihedrals, lj14, coulomb14;
    double *f; /* malloc'ed */
} tet_ref;

/* An ethanol with ideal-ish geometry (bond lengths and angles near equilibrium, staggered, the
 * hydroxyl trans) turned by a random rotation, centred at c, every atom then displaced by up to
 * jitter nm. Names C1 H11 H12 H13 C2 H21 H22 O HO. */
void tet_ethanol_coords(t_rng *r, const double c[3], double jitter, double x[3 * TET_NATOMS]);

/* A cubic lattice of nside^3 sites at spacing a (nm): each site holds an ethanol (with
 * probability frac_eth) or a water (model geometry), random orientation, jittered. Residues
 * ETH / SOL. Force field not applied. */
hx_system *tet_mixture_lattice(const char *water_model, int nside, double a, double frac_eth,
                               double jitter, uint64_t seed);

/* Bonded reference of one ethanol at x (9 atoms): energies added to the five bonded fields of
 * r (bonds with h_constrained = 1 skip the bonds to hydrogen, as constraints = h-bonds), forces
 * added to f[27]. The 1-4 Coulomb is divided by eps_r, as GROMACS does. */
void tet_ethanol_bonded(const double *x, int h_constrained, double eps_r, tet_ref *r, double *f);

/* Everything for a system (water model name for the water parameters; ETH and SOL residues):
 * LJ (shifted, cut at rc), Coulomb (reaction field, excluded-pair correction within rc, self
 * term), bonded terms and 1-4 pairs. r->f allocated here. */
void tet_reference(const hx_system *s, const char *water_model, double rc, double eps_rf,
                   double eps_r, tet_ref *r);
void tet_ref_free(tet_ref *r);

#endif
