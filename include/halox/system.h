/* halox: the particle system (host memory, double precision, GROMACS units).
 *
 * Units: nm, ps, amu, e, kJ/mol. A system is plain data: arrays of length natoms (x, v: 3*natoms,
 * interleaved xyz) plus molecule boundaries. Molecules are contiguous atom ranges and are never
 * split between domains. The box is orthorhombic (triclinic boxes are refused on input). */
#ifndef HALOX_SYSTEM_H
#define HALOX_SYSTEM_H

#include <stdint.h>

#include "halox/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HX_NAME_LEN 8 /* 5 characters of a .gro name field plus NUL, padded */

typedef struct hx_system {
    char title[128];
    int natoms;
    int nmol;
    double box[3];      /* edge lengths, nm */
    double *x;          /* [3*natoms] positions, nm */
    double *v;          /* [3*natoms] velocities, nm/ps; zero when the input had none */
    int has_velocities; /* 1 when v came from the input */
    int *mol_start;     /* [nmol+1]: molecule k is atoms [mol_start[k], mol_start[k+1]) */
    int *res_id;        /* [natoms] residue number as in the .gro (1-based, wraps at 100000) */
    char (*res_name)[HX_NAME_LEN];  /* [natoms] */
    char (*atom_name)[HX_NAME_LEN]; /* [natoms] */
    /* Filled by the force field once a model is applied (hx_forcefield_apply); NULL before. */
    int *type; /* [natoms] LJ type index */
    double *q; /* [natoms] charge, e */
    double *m; /* [natoms] mass, amu */
    /* [natoms] exclusions within the atom's molecule: bit p set when the atom and the atom at
     * position p of the same molecule (atom mol_start[k] + p) do not interact through the pair
     * list (the atom's own bit is set). Molecules have at most 32 atoms. */
    uint32_t *excl;
    int *mol_type; /* [nmol] molecule type of the force field (hx_forcefield_moltype) */
} hx_system;

/* Allocate a system for natoms atoms and nmol molecules, all arrays zeroed. */
hx_status hx_system_create(int natoms, int nmol, hx_system **out);
/* Deep copy. */
hx_status hx_system_copy(const hx_system *src, hx_system **out);
void hx_system_destroy(hx_system **sys);

#ifdef __cplusplus
}
#endif
#endif
