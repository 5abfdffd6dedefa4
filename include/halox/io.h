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

/* Smallest periodic distance (nm) between two atoms named atom_name ("OW", "AR"; NULL: all
 * atoms), including an atom and its own periodic image. Uses a cell list, O(N). Pairs at or
 * beyond cutoff (nm, > 0) are not looked at: *out_min is the smallest distance below cutoff, or
 * cutoff itself when no pair is closer. The builders use it to verify their output; `halox
 * build` reports it. */
hx_status hx_build_min_distance(const hx_system *sys, const char *atom_name, double cutoff,
                                double *out_min);

#ifdef __cplusplus
}
#endif
#endif
