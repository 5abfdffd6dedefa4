/* halox: system builders: liquid water and argon boxes, ethanol-water mixtures relaxed by
 * energy minimisation and MD, and the checks they run on what they built. Built on the MD layer
 * (include/halox/md.h); files are halox/io.h's. */
#ifndef HALOX_BUILD_H
#define HALOX_BUILD_H

#include <stdint.h>

#include "halox/md.h"
#include "halox/status.h"
#include "halox/system.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- water and argon --------------------------------------------------------------------- */

/* Liquid water box of the named model at its density. Give natoms (rounded to whole molecules,
 * within one molecule) or box_nm (cubic edge) > 0. Deterministic for a seed. */
hx_status hx_build_water(const char *model, int natoms, double box_nm, uint64_t seed,
                         hx_system **out);
/* The same on a lattice with random orientations (the seed of the equilibrated boxes; far from
 * equilibrium: MD from it needs a thermostat and a small time step at first). */
hx_status hx_build_water_lattice(const char *model, int natoms, double box_nm, uint64_t seed,
                                 hx_system **out);
/* Lennard-Jones argon fluid (natoms or box_nm, default density of hx_argon_model()). */
hx_status hx_build_argon(int natoms, double box_nm, uint64_t seed, hx_system **out);

/* ---- ethanol-water mixtures --------------------------------------------------------------- */

typedef struct hx_mixture_params {
    double ethanol_fraction; /* mole fraction of ethanol, [0, 1] (default 0.1) */
    int natoms;              /* atoms wanted (rounded to whole molecules, see hx_build_mixture) */
    const char *water;       /* water model: tip3p (default, OPLS-AA's pairing), spce, spc */
    uint64_t seed;
    /* relaxation: steepest-descent steps, then MD with v-rescale at 300 K, in ps at 0.5, 1 and
     * 2 fs (defaults 500 steps; 0.1, 0.4 and 2.0 ps); 0 MD time skips that stage */
    int min_steps;
    double md_ps[3];
} hx_mixture_params;

void hx_mixture_params_default(hx_mixture_params *p);

typedef struct hx_mixture_info {
    int n_ethanol, n_water;
    double box;           /* cubic edge, nm */
    double mole_fraction; /* of ethanol, as built */
    double mass_fraction; /* of ethanol, as built */
    double density_exp;   /* g/cm^3, experiment at 300 K for the mass fraction built */
    double density;       /* g/cm^3 of the built box */
    int tiles;            /* tiles per edge (1: built as one box) */
    int tile_atoms;       /* atoms of the relaxed tile */
    double epot_min;      /* potential energy of the tile after minimisation, kJ/mol */
    double temperature;   /* of the tile at the end of the relaxation, K */
    double epot_md;       /* potential energy of the tile then, kJ/mol */
} hx_mixture_info;

/* A liquid ethanol-water mixture at the experimental density at 300 K, relaxed, for the
 * oplsaa force field (residues ETH with atoms C1 H11 H12 H13 C2 H21 H22 O HO, then SOL OW HW1
 * HW2). Counts: n_ethanol = round(x n), n_water = round((natoms - 9 n_ethanol) / 3) with
 * n = natoms / (9 x + 3 (1 - x)), so the mole fraction is x up to rounding and the atom count
 * within a molecule of natoms; x > 0 needs at least one ethanol. Molecules are inserted at random
 * (no two atoms of different molecules closer than 0.57 times the sum of their van der Waals
 * radii, as gmx insert-molecules), minimised and run with a thermostat; systems of more than
 * 12000 atoms are tiles^3 copies of one relaxed tile of about 6000 atoms with the surplus
 * molecules removed at random and the box scaled to the exact density (a fraction of a per
 * mille). Deterministic for a seed (the relaxation always uses two threads). The system has
 * the velocities of the relaxation's end (has_velocities; copies of a tile share the tile's), so
 * that a run from it starts at the relaxation's temperature, not from rest. */
hx_status hx_build_mixture(const hx_mixture_params *p, hx_system **out, hx_mixture_info *info);

/* Experimental density (g/cm^3) of ethanol-water at ethanol mass fraction w (0..1) and 300 K
 * (see src/build/mixture.c for the data and the temperature correction). */
double hx_ethanol_water_density(double w);

/* Smallest periodic distance (nm) between two atoms named atom_name ("OW", "AR"; NULL: all
 * atoms), including an atom and its own periodic image. Uses a cell list, O(N). Pairs at or
 * beyond cutoff (nm, > 0) are not looked at: *out_min is the smallest distance below cutoff, or
 * cutoff itself when no pair is closer. The builders use it to verify their output; `halox
 * build` reports it. */
hx_status hx_build_min_distance(const hx_system *sys, const char *atom_name, double cutoff,
                                double *out_min);

/* ---- energy minimisation ----------------------------------------------------------------- */

typedef struct hx_minimize_result {
    int steps;          /* steps tried */
    int accepted;       /* steps that lowered the energy */
    double epot0, epot; /* potential energy before and after, kJ/mol */
    double fmax;        /* largest force on an atom after, kJ/mol/nm (constraint forces
                         * included) */
} hx_minimize_result;

/* Steepest descent of sys (positions changed in place; molecules made whole) under the model,
 * cut-off and reaction field of p, on one domain in this process with p->nthreads threads,
 * keeping the constraints (SETTLE, SHAKE). Each step moves every atom by h F / max|F| and
 * constrains with the previous positions as reference; h starts at 0.01 nm, grows by 1.2 after
 * a step that lowers the potential energy and shrinks by 0.2 (the step undone) after one that
 * does not, as GROMACS's steep. Stops after nsteps steps or when h falls below 1e-6 nm. The
 * pair list (radius rc + 0.1 nm) is rebuilt at every step. For starting structures with
 * overlaps (the mixture builder); not part of the MD engine. */
hx_status hx_minimize(hx_system *sys, const hx_md_params *p, int nsteps, hx_minimize_result *res);

#ifdef __cplusplus
}
#endif
#endif
