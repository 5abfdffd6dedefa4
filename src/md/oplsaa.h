/* OPLS-AA parameters halox uses (ethanol), in the units of the publications, and the ethanol
 * molecule as a list of atoms and bonds. src/md/forcefield.c converts them to GROMACS units and
 * derives angles, dihedrals, 1-4 pairs, exclusions and constraints from the bonds, the way a
 * GROMACS topology generator does. Not a public header. */
#ifndef HX_MD_OPLSAA_H
#define HX_MD_OPLSAA_H

/* Unit conversions: 1 kcal = 4.184 kJ (thermochemical calorie), 1 Angstrom = 0.1 nm. */
#define HX_KCAL 4.184
#define HX_ANGSTROM 0.1

/* Atom types: OPLS number, the bonded type that selects bonded parameters, element, mass (amu),
 * charge (e), sigma (Angstrom), epsilon (kcal/mol). */
typedef struct hx_opls_atomtype {
    int opls;
    const char *bonded; /* "CT", "HC", "OH", "HO" */
    const char *element;
    double mass, q, sigma_A, eps_kcal;
} hx_opls_atomtype;

/* E = K (r - r0)^2 (note: no factor 1/2), K kcal/mol/A^2, r0 A. */
typedef struct hx_opls_bond {
    const char *a, *b;
    double K, r0_A;
} hx_opls_bond;

/* E = K (theta - theta0)^2, K kcal/mol/rad^2, theta0 degrees; b is the vertex. */
typedef struct hx_opls_angle {
    const char *a, *b, *c;
    double K, theta0_deg;
} hx_opls_angle;

/* Fourier torsion of OPLS: E = V1/2 (1 + cos phi) + V2/2 (1 - cos 2 phi) + V3/2 (1 + cos 3 phi),
 * kcal/mol, phi the IUPAC dihedral (trans = 180 degrees). */
typedef struct hx_opls_torsion {
    const char *a, *b, *c, *d;
    double V1, V2, V3;
} hx_opls_torsion;

/* A molecule of the force field: atoms (name, OPLS type), bonds between positions. */
typedef struct hx_opls_molecule {
    const char *resname;
    int natoms;
    const char *atom_name[16];
    int atomtype[16]; /* OPLS numbers */
    int nbonds;
    int bond[16][2];
    int nrexcl;
    double fudge_lj, fudge_qq;
} hx_opls_molecule;

extern const hx_opls_atomtype hx_opls_atomtypes[];
extern const int hx_opls_natomtypes;
extern const hx_opls_bond hx_opls_bonds[];
extern const int hx_opls_nbonds;
extern const hx_opls_angle hx_opls_angles[];
extern const int hx_opls_nangles;
extern const hx_opls_torsion hx_opls_torsions[];
extern const int hx_opls_ntorsions;
extern const hx_opls_molecule hx_opls_ethanol;

#endif
