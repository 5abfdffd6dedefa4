/* halox: input and output files (GROMACS .gro), and system builders.
 *
 * .gro: title line, atom count, one fixed-column line per atom (%5d%-5s%5s%5d then x,y,z in
 * %8.3f and optionally vx,vy,vz in %8.4f; the reader takes the decimal places from the first
 * coordinate as GROMACS does), then the box line. Molecules are taken from residue boundaries
 * (a new molecule starts where the residue number or name changes). */
#ifndef HALOX_IO_H
#define HALOX_IO_H

#include <stdint.h>
#include <stdio.h>

#include "halox/status.h"
#include "halox/system.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Read a .gro file. Errors (HX_ERR_INPUT) name the file, the line number and what was
 * expected; a triclinic box gives HX_ERR_UNSUPPORTED. */
hx_status hx_gro_read(const char *path, hx_system **out);
/* Same from a memory buffer (for tests and fuzzing); name is used in messages. */
hx_status hx_gro_read_buffer(const char *data, size_t len, const char *name, hx_system **out);
/* Write atomically (temporary file + rename): an existing file is replaced only on success. */
hx_status hx_gro_write(const char *path, const hx_system *sys, int with_velocities);
/* Append one frame to an open trajectory stream (multi-frame .gro; title carries t= and step=). */
hx_status hx_gro_write_frame(FILE *f, const hx_system *sys, double time_ps, long long step,
                             int with_velocities);

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
 * mille). Deterministic for a seed (the relaxation always uses two threads). */
hx_status hx_build_mixture(const hx_mixture_params *p, hx_system **out, hx_mixture_info *info);

/* Experimental density (g/cm^3) of ethanol-water at ethanol mass fraction w (0..1) and 300 K
 * (see src/io/mixture.c for the data and the temperature correction). */
double hx_ethanol_water_density(double w);

/* Smallest periodic distance (nm) between two atoms named atom_name ("OW", "AR"; NULL: all
 * atoms), including an atom and its own periodic image. Uses a cell list, O(N). Pairs at or
 * beyond cutoff (nm, > 0) are not looked at: *out_min is the smallest distance below cutoff, or
 * cutoff itself when no pair is closer. The builders use it to verify their output; `halox
 * build` reports it. */
hx_status hx_build_min_distance(const hx_system *sys, const char *atom_name, double cutoff,
                                double *out_min);

/* ---- GROMACS topologies ------------------------------------------------------------------ */

/* Write a self-contained GROMACS topology (.top) of sys under model (a name hx_forcefield_create
 * takes: spce, spc, tip3p, argon), so that `gmx grompp -c` the same .gro with it gives the
 * interactions of `halox md --model MODEL`: [ defaults ] (comb-rule 1), [ atomtypes ],
 * [ nonbond_params ] with halox's c6/c12 of every pair of types, one [ moleculetype ] per kind of
 * molecule (atom and residue names from sys; [ settles ] for rigid water; every pair in a
 * molecule in [ exclusions ]), [ system ] and [ molecules ]. Written atomically (devices and
 * FIFOs: through). Names that do not fit the model are HX_ERR_INPUT as in hx_forcefield_apply.
 * Cut-off, reaction field and shift are run parameters for the .mdp. */
hx_status hx_topology_write(const char *path, const hx_system *sys, const char *model);

/* ---- GROMACS run-parameter (.mdp) files ---------------------------------------------------- */

/* The run parameters of an .mdp file that halox supports, with GROMACS's names and meanings.
 * Each value counts only when its has_ flag is set (the key was in the file with a value); the
 * program applies those and lets its command-line options override them.
 *
 * File syntax as GROMACS reads it: "key = value" lines, ';' starts a comment, blank lines and
 * keys with an empty value are ignored, keys match without regard to case, '-' and '_'
 * (tau-t, tau_t and TAU_T are one key), and so do the names of choices (V-rescale, v_rescale).
 * A key given twice, a key halox does not support, or a value it does not support is an error
 * (HX_ERR_INPUT) naming file:line, the key and what halox accepts. Supported keys:
 *   integrator (md)        dt                 nsteps (>= 0)       continuation (yes/no)
 *   cutoff-scheme (Verlet) nstlist            rlist               verlet-buffer-tolerance
 *   coulombtype (reaction-field)  rcoulomb = rvdw (one cut-off)  epsilon-r   epsilon-rf
 *   vdw-modifier (potential-shift)   tcoupl (no, v-rescale)   tc-grps (System)
 *   tau-t, ref-t (one group)   gen-vel (yes/no)   gen-temp   gen-seed (>= 0)
 *   nstenergy   nstxout
 * and, accepted only with the value halox implements: vdwtype (cut-off), coulomb-modifier
 * (potential-shift), pbc (xyz), DispCorr (no), pcoupl (no), comm-mode (none), constraints
 * (none or h-bonds: halox's molecules have no bonds besides rigid water's, which SETTLE keeps).
 * rlist counts, as in GROMACS, only with verlet-buffer-tolerance = -1 (a fixed list radius);
 * with a tolerance halox chooses rlist itself and a given rlist is ignored with a warning. */
typedef struct hx_mdp {
    int has_dt, has_nsteps, has_nstlist, has_rc, has_rlist, has_buffer_tolerance, has_eps_r,
        has_eps_rf, has_thermostat, has_tau_t, has_ref_t, has_gen_vel, has_gen_temp, has_gen_seed,
        has_nstenergy, has_nstxout, has_continuation;
    double dt;               /* ps */
    long long nsteps;        /* >= 0 */
    int nstlist;             /* >= 1 */
    double rc;               /* rcoulomb = rvdw, nm */
    double rlist;            /* nm; set only with verlet-buffer-tolerance = -1 */
    double buffer_tolerance; /* kJ/mol/ps per atom; set only when > 0 */
    double eps_r, eps_rf;    /* epsilon-r, epsilon-rf (0: infinity) */
    int thermostat;          /* hx_thermostat (include/halox/md.h) */
    double tau_t, ref_t;     /* ps, K */
    int gen_vel;             /* 0/1 */
    double gen_temp;         /* K */
    long long gen_seed;      /* >= 0 */
    int nstenergy, nstxout;  /* >= 0 */
    int continuation;        /* 0/1 */
} hx_mdp;

/* Read an .mdp file into *out (zeroed first). */
hx_status hx_mdp_read(const char *path, hx_mdp *out);
/* The same from memory; name is used in messages. */
hx_status hx_mdp_read_buffer(const char *data, size_t len, const char *name, hx_mdp *out);

#ifdef __cplusplus
}
#endif
#endif
