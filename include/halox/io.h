/* halox: input and output files: GROMACS .gro, topologies (.top) and run parameters (.mdp).
 * Checkpoints: halox/checkpoint.h; system builders: halox/build.h.
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
 * (HX_ERR_INPUT) naming file:line, the key and what halox accepts; every such problem of a file
 * is in the one message. Keys that cannot change what halox computes (output it does not write,
 * PME parameters under reaction field, pressure-coupling parameters without pressure coupling,
 * ...: src/io/mdp.c lists them with the reasons) are read and listed in `ignored`. Supported
 * keys:
 *   integrator (md)        dt                 nsteps (>= 0)       continuation (yes/no)
 *   cutoff-scheme (Verlet) nstlist            rlist               verlet-buffer-tolerance
 *   coulombtype (reaction-field)  rcoulomb = rvdw (one cut-off)  epsilon-r   epsilon-rf
 *   vdw-modifier (potential-shift)   tcoupl (no, v-rescale)   tc-grps (System)
 *   tau-t, ref-t (one group)   gen-vel (yes/no)   gen-temp   gen-seed (>= 0)
 *   nstenergy   nstxout   nstlog
 * and, accepted only with the value halox implements: vdwtype (cut-off), coulomb-modifier
 * (potential-shift), pbc (xyz), DispCorr (no), pcoupl (no), comm-mode (none), constraints
 * (none or h-bonds: halox's molecules have no bonds besides rigid water's, which SETTLE keeps),
 * nsttcouple (10), free-energy, pull, awh, annealing, periodic-molecules (no), nwall,
 * cos-acceleration (0).
 * rlist counts, as in GROMACS, only with verlet-buffer-tolerance = -1 (a fixed list radius);
 * with a tolerance halox chooses rlist itself and a given rlist is ignored with a warning. */
typedef struct hx_mdp {
    int has_dt, has_nsteps, has_nstlist, has_rc, has_rlist, has_buffer_tolerance, has_eps_r,
        has_eps_rf, has_thermostat, has_tau_t, has_ref_t, has_gen_vel, has_gen_temp, has_gen_seed,
        has_nstenergy, has_nstxout, has_continuation, has_nstlog;
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
    int nstlog;              /* >= 0 */
    int nignored;            /* keys read but ignored: they do not change what halox computes */
    char ignored[512];       /* "nstcalcenergy (line 4), nstvout (line 5)" */
} hx_mdp;

/* Read an .mdp file into *out (zeroed first). */
hx_status hx_mdp_read(const char *path, hx_mdp *out);
/* The same from memory; name is used in messages. */
hx_status hx_mdp_read_buffer(const char *data, size_t len, const char *name, hx_mdp *out);

#ifdef __cplusplus
}
#endif
#endif
