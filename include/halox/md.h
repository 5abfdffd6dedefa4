/* halox: the CPU molecular-dynamics engine (single domain) and its building blocks.
 *
 * Layers, each usable on its own:
 *  - hx_forcefield: a model ("spce", "spc", "tip3p", "argon", "oplsaa" = OPLS-AA ethanol in
 *    TIP3P water) applied to an hx_system (molecule types from residue names, atom names checked;
 *    types, charges, masses, exclusions) plus the Lennard-Jones c6/c12 tables and the molecule
 *    types with their bonded terms, 1-4 pairs and constraints.
 *  - hx_bonded: bonds, angles, Ryckaert-Bellemans dihedrals and 1-4 pairs of whole molecules.
 *  - hx_constr: the constraints of a set of whole molecules: SETTLE for rigid water, SHAKE for
 *    the bonds to hydrogen of flexible molecules.
 *  - hx_nb: non-bonded interactions (LJ with potential shift + reaction field, GROMACS
 *    Verlet-scheme conventions) on a *local atom set*: n local atoms split into zone ranges, the
 *    eighth-shell i-zone x j-zone table of include/halox/dd.h, periodic or open dimensions. The
 *    single-domain engine is the case ndim = 0 with one range [0, n) of zone 0 and all three
 *    dimensions periodic; a domain-decomposition engine passes its home + halo atoms.
 *  - hx_settle: analytical SETTLE (Miyamoto & Kollman 1992) for rigid three-site water.
 *  - hx_md: leap-frog engine (NVE or v-rescale), pair-list refresh every nstlist steps.
 *
 * Units: nm, ps, kJ/mol, e, amu, K. Host arithmetic and energy sums in double. */
#ifndef HALOX_MD_H
#define HALOX_MD_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "halox/dd.h"
#include "halox/halo.h"
#include "halox/models.h"
#include "halox/status.h"
#include "halox/system.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HX_ONE_4PI_EPS0 138.935458 /* kJ mol^-1 nm e^-2 */
#define HX_BOLTZ 0.0083144626      /* kJ mol^-1 K^-1 */

/* ---- force field ------------------------------------------------------------------------ */

#define HX_MAX_MOL_ATOMS 32 /* atoms per molecule type: exclusions are 32-bit masks per atom */
#define HX_MAX_TYPES 16     /* Lennard-Jones types of one force field */

/* Bonded interactions of a molecule type; atom indices are positions in the molecule (0-based).
 * Forms and units are GROMACS's, so that a topology can state the same numbers:
 *  - bond ([ bonds ] 1):   V = kb/2 (r - b0)^2                       b0 nm, kb kJ/mol/nm^2
 *  - angle ([ angles ] 1): V = ktheta/2 (theta - theta0)^2           theta0 rad, kJ/mol/rad^2
 *  - dihedral ([ dihedrals ] 3, Ryckaert-Bellemans): V = sum_n c[n] cos^n(psi), psi = phi - 180
 *    degrees, phi the IUPAC dihedral (trans = 180 degrees)           c kJ/mol
 *  - 1-4 pair ([ pairs ] 1): V = c12/r^12 - c6/r^6 + f qq/r, f = 138.935458/eps_r, no cut-off
 *    and no shift; c6, c12 and qq already scaled by the force field's fudge factors
 *  - constraint ([ constraints ] 1): |x_i - x_j| = d                  d nm */
typedef struct hx_bond {
    int i, j;
    double b0, kb;
} hx_bond;
typedef struct hx_angle {
    int i, j, k; /* j is the vertex */
    double theta0, ktheta;
} hx_angle;
typedef struct hx_dihedral {
    int i, j, k, l; /* about the bond j-k */
    double c[6];
} hx_dihedral;
typedef struct hx_pair14 {
    int i, j;
    double c6, c12, qq; /* kJ/mol nm^6, kJ/mol nm^12, e^2 (fudgeQQ q_i q_j) */
} hx_pair14;
typedef struct hx_constraint {
    int i, j;
    double d;
} hx_constraint;

/* One kind of molecule of a force field (owned by it; read-only for callers). */
typedef struct hx_moltype {
    char name[HX_NAME_LEN]; /* residue name halox writes: "SOL", "ETH", "AR" */
    int natoms;
    char atom_name[HX_MAX_MOL_ATOMS][HX_NAME_LEN]; /* the names halox writes, in order */
    int type[HX_MAX_MOL_ATOMS];                    /* Lennard-Jones type */
    double q[HX_MAX_MOL_ATOMS], m[HX_MAX_MOL_ATOMS];
    /* Rigid three-site water kept by SETTLE (O-H and H-H distances); its atoms may come in any
     * order in an input (the oxygen is the atom of type water_o_type). */
    int rigid_water;
    double d_oh, d_hh;
    /* Exclusions: pairs within nrexcl bonds (constraints count as bonds) do not interact
     * through the pair list; excl[p] bit p' is set when positions p and p' are excluded (bit p
     * itself always). Rigid water and single atoms: every pair of the molecule. */
    int nrexcl;
    uint32_t excl[HX_MAX_MOL_ATOMS];
    int nbonds, nangles, ndihedrals, npairs, nconstraints;
    const hx_bond *bonds; /* bonds that are not constraints */
    const hx_angle *angles;
    const hx_dihedral *dihedrals;
    const hx_pair14 *pairs;
    const hx_constraint *constraints;
} hx_moltype;

typedef struct hx_forcefield hx_forcefield;

/* model: a water model name of hx_water_model_find, "argon", or "oplsaa" (OPLS-AA ethanol with
 * TIP3P water; "oplsaa-spce", "oplsaa-spc", "oplsaa-tip3p" choose the water model).
 * HX_ERR_INVALID_ARG when unknown. */
hx_status hx_forcefield_create(const char *model, hx_forcefield **out);
void hx_forcefield_destroy(hx_forcefield **ff);
const char *hx_forcefield_model(const hx_forcefield *ff);
int hx_forcefield_is_water(const hx_forcefield *ff); /* 1: rigid 3-site water only (spce, ...) */
int hx_forcefield_ntypes(const hx_forcefield *ff);
/* Name of Lennard-Jones type t ("OW_spce", "CT", ...), for topologies and messages. */
const char *hx_forcefield_type_name(const hx_forcefield *ff, int t);
/* [ntypes*ntypes] tables, c6 = 4 eps sigma^6, c12 = 4 eps sigma^12 (kJ/mol nm^6, nm^12). Models
 * with several types combine them geometrically (OPLS: sigma_ij = sqrt(sigma_i sigma_j),
 * eps_ij = sqrt(eps_i eps_j), the same as c6_ij = sqrt(c6_i c6_j), c12_ij = sqrt(c12_i c12_j)). */
const double *hx_forcefield_c6(const hx_forcefield *ff);
const double *hx_forcefield_c12(const hx_forcefield *ff);
/* The water model (NULL for argon). */
const hx_water_model *hx_forcefield_water(const hx_forcefield *ff);
/* The LJ type of water oxygens (SETTLE tells the oxygen by it); -1 without water. */
int hx_forcefield_water_o_type(const hx_forcefield *ff);
/* Molecule types: k in [0, nmoltypes). */
int hx_forcefield_nmoltypes(const hx_forcefield *ff);
const hx_moltype *hx_forcefield_moltype(const hx_forcefield *ff, int k);
/* 1-4 scaling of the model (1 for models without 1-4 pairs; OPLS-AA: 0.5 and 0.5). */
void hx_forcefield_fudge(const hx_forcefield *ff, double *fudge_lj, double *fudge_qq);
/* 1 when some molecule type has bonds, angles, dihedrals or pairs. */
int hx_forcefield_has_bonded(const hx_forcefield *ff);
/* Fill sys->type, q, m (per atom), sys->excl (per atom) and sys->mol_type (per molecule),
 * allocated here if NULL. Each molecule's residue name selects its molecule type; atom names are
 * checked. Water: 3 atoms with a water residue name (SOL, HOH, WAT, H2O, SPC, SPCE, TIP3), one
 * oxygen (OW, O, OH2, OW1) and two hydrogens (HW1, HW2, H1, H2, HW, H), in any order. Argon:
 * single atoms named AR/Ar. Ethanol (model oplsaa; residue ETH, ETOH or EOH): 9 atoms in the
 * order C1 H11 H12 H13 C2 H21 H22 O HO (O1 or OH for O, HO1 or H for HO). Anything else is
 * HX_ERR_INPUT naming the atom (1-based, as in the .gro), residue and name. */
hx_status hx_forcefield_apply(const hx_forcefield *ff, hx_system *sys);
/* Degrees of freedom of a system under this model (applied): 3 per atom minus the constraints
 * (3 per rigid water), minus 3 for the removed centre-of-mass motion. */
double hx_forcefield_ndf(const hx_forcefield *ff, const hx_system *sys);

/* ---- molecules of a local domain ----------------------------------------------------------- */

/* A list of whole molecules in some coordinate array: molecule k has the atoms
 * [start[k], start[k] + natoms of its type) of that array. Bonded terms and constraints act per
 * molecule, so they need no halo: a domain computes those of its home molecules. */
typedef struct hx_mol_list {
    int nmol;
    const int *start; /* [nmol] first atom */
    const int *type;  /* [nmol] molecule type of the force field */
    const int *gid;   /* [nmol] global molecule index for messages (NULL: the list index) */
} hx_mol_list;

/* ---- bonded interactions ------------------------------------------------------------------ */

typedef struct hx_bonded_energies {
    double bonds, angles, dihedrals, lj14, coulomb14; /* kJ/mol (GROMACS: Bond, Angle,
                                                       * Ryckaert-Bell., LJ-14, Coulomb-14) */
} hx_bonded_energies;

/* Bonds, angles, dihedrals and 1-4 pairs of the molecules of ml (forms in hx_moltype), in
 * double. Positions x must hold each molecule whole (no periodic images are taken: halox keeps
 * molecules whole). Forces are ADDED to f; e (may be NULL) receives the energies. epsfac =
 * 138.935458 / eps_r scales the 1-4 Coulomb (plain Coulomb, as GROMACS computes [ pairs ] with
 * reaction field). nthreads: OpenMP threads (0: 1); the result does not depend on it. A
 * non-finite energy or force is HX_ERR_PHYSICS naming the step and the molecule (1-based). */
hx_status hx_bonded_compute(const hx_forcefield *ff, const hx_mol_list *ml, const double *x,
                            double *f, double epsfac, int nthreads, hx_bonded_energies *e,
                            long long step);

/* ---- non-bonded interactions on a local atom set ------------------------------------------ */

/* Arithmetic of the pair kernel (select with hx_nb_set_precision). Both use the same list:
 * atoms sorted into spatial clusters of 4, 4x4 cluster pairs culled by bounding-box distance,
 * per-pair exclusion bit masks; SIMD kernels (AVX2+FMA chosen at run time, SSE2 otherwise).
 *  - HX_NB_DOUBLE (0, the default): everything in double; forces and energies equal an O(N^2)
 *    double reference to ~1e-12 relative (tests require 1e-9).
 *  - HX_NB_MIXED: distances, pair forces and pair energies in float (GROMACS-style mixed
 *    precision); pair energies summed in float over one i cluster's j list, then in double;
 *    forces accumulated per thread in float, reduced into double; the self and excluded-pair
 *    reaction-field terms in double. Measured against HX_NB_DOUBLE (tests/test_nb_mixed.c, which
 *    holds the tolerances): largest force error 4e-6..2e-5 of the largest force, RMS 3e-6..6e-6
 *    of the RMS force, LJ energy 1e-7..3e-6 relative, Coulomb energy 4e-7..5e-6 kJ/mol per atom
 *    (SPC/E, TIP3P, argon; 648 to 45198 atoms). The Coulomb total of water is a small remainder
 *    of large pair and self terms, so its error is best read per atom. */
typedef enum hx_nb_precision { HX_NB_DOUBLE = 0, HX_NB_MIXED = 1 } hx_nb_precision;

typedef struct hx_nb_params {
    double rc;     /* cut-off, nm */
    double eps_rf; /* reaction-field dielectric; 0 means infinity */
    double eps_r;  /* relative dielectric of the medium (1 when 0 is given) */
} hx_nb_params;

/* Derived constants, exposed so that tests and other kernels use the same numbers. */
typedef struct hx_rf_consts {
    double epsfac; /* HX_ONE_4PI_EPS0 / eps_r */
    double k_rf;   /* (eps_rf - eps_r) / ((2 eps_rf + eps_r) rc^3); 1/(2 rc^3) for eps_rf = 0 */
    double c_rf;   /* 1/rc + k_rf rc^2 */
} hx_rf_consts;
hx_rf_consts hx_rf_constants(const hx_nb_params *p);

/* The atoms one force computation sees. Pointers are borrowed for the duration of a call.
 * Molecules must be contiguous in local storage and never split between zones (the halo plan
 * guarantees this). Atoms of different molecules (mol[] values) always interact; within a
 * molecule the exclusion masks decide (see excl). */
typedef struct hx_local_set {
    int n;           /* local atoms (home + halo) */
    const double *x; /* [3n] positions; halo atoms already shifted */
    const int *type; /* [n] LJ type (forcefield table index) */
    const double *q; /* [n] charges */
    const int *mol;  /* [n] global molecule id */
    int nranges;     /* zone ranges covering [0, n) in order; ranges[0] home */
    const hx_zone_range *ranges;
    int ndim;        /* decomposed dimensions: selects the i-zone x j-zone table */
    int periodic[3]; /* 1: periodic with box[d]; 0: open (decomposed) */
    double box[3];
    /* Exclusions within molecules (molecules of at most HX_MAX_MOL_ATOMS atoms): excl[a] bit p
     * is set when atom a and the atom at position p of its own molecule are an excluded pair (no
     * LJ, no plain Coulomb; within rc they get the reaction-field exclusion correction, as in
     * GROMACS), its own bit included; mol_pos[a] is a's position in its molecule (0-based, the
     * molecule type's order). Water fills every bit of its molecule. NULL excl: every pair of a
     * molecule is excluded (the rule of rigid molecules). The GPU kernels build their masks from
     * the same two arrays. */
    const uint32_t *excl;
    const unsigned char *mol_pos;
} hx_local_set;

/* Fill a local set for a whole periodic system (ndim 0, one range [0,n) zone 0). range_store
 * must outlive the set; mol_store is [natoms] filled with molecule indices. */
void hx_local_set_from_system(hx_local_set *set, const hx_system *sys, int *mol_store,
                              hx_zone_range *range_store);

typedef struct hx_nb_energies {
    double lj;      /* kJ/mol */
    double coulomb; /* pairs + excluded-pair RF correction + self term, kJ/mol */
} hx_nb_energies;

typedef struct hx_nb hx_nb;

/* nthreads: number of force buffers and work chunks (results are bit-identical for the same
 * nthreads, whatever the OpenMP runtime actually gives); 0 means omp_get_max_threads(). */
hx_status hx_nb_create(const hx_forcefield *ff, const hx_nb_params *p, int nthreads, hx_nb **out);
void hx_nb_destroy(hx_nb **nb);
int hx_nb_nthreads(const hx_nb *nb);
/* Kernel precision, HX_NB_DOUBLE after hx_nb_create. A setter rather than an hx_nb_params field
 * so that existing brace initialisers of hx_nb_params stay complete. May be changed between any
 * two calls; takes effect at the next hx_nb_compute*. HX_ERR_INVALID_ARG for another value. */
hx_status hx_nb_set_precision(hx_nb *nb, hx_nb_precision precision);
hx_nb_precision hx_nb_get_precision(const hx_nb *nb);
/* The kernel chosen at run time, e.g. "double avx2", "float sse2" (for logs and benchmarks). */
const char *hx_nb_kernel_name(const hx_nb *nb);

/* Pair search: rebuild the list of radius rlist (>= rc), O(n). Lists every pair (i, j) with i in
 * i-zone iz, j in a j-zone of iz's range, |x_i - x_j - shift| < rlist and different molecules,
 * for iz == jz == 0 only once per pair (as 4x4 cluster pairs: some pairs a little beyond rlist
 * are listed too, and skipped by the kernel's cut-off). Searching threads take blocks of i
 * clusters dynamically; the list does not depend on which thread searched what. Fails with
 * HX_ERR_GEOMETRY when rlist is not below half a periodic box edge. If the previous list was built
 * on the same atom set (same n, same atom order) and check_missed is set, *missed receives the
 * number of pairs that are now inside rc but were beyond rlist at the previous build (they were
 * missing from the list that was just in use); pass NULL to skip. */
hx_status hx_nb_search(hx_nb *nb, const hx_local_set *set, double rlist, int check_missed,
                       long long *missed);
/* Atom pairs in the current list. The list is made of 4x4 cluster pairs, so it also holds some
 * pairs beyond rlist (the kernel skips everything beyond rc); every pair within rlist is in it. */
long long hx_nb_npairs(const hx_nb *nb);

/* Forces and energies on the set the last search was done on (positions may have moved
 * continuously, by less than (rlist - rc)/2, and must not be re-wrapped into the box between
 * searches; they are read again from set->x). f: [3n], overwritten, forces on every local atom
 * (halo atoms included: the caller sends them home). Energies: listed pairs within rc, plus for
 * home atoms (zone 0) the self term and the excluded-pair terms, so that a sum over domains counts
 * every contribution once. A non-finite force or energy is HX_ERR_PHYSICS naming step and atom
 * (step is only used in messages). The same as hx_nb_compute_part(..., HX_NB_ALL) below. */
hx_status hx_nb_compute(hx_nb *nb, const hx_local_set *set, double *f, hx_nb_energies *e,
                        long long step);

/* Parts of the computation, so that a domain-decomposition engine can compute home-home pairs
 * while the halo coordinates are still in flight:
 *  - HX_NB_LOCAL: pairs with both atoms in zone 0, plus the self and excluded-pair terms of the
 *    home atoms. f is overwritten on every local atom (halo atoms get 0). Reads only the home
 *    atoms' positions.
 *  - HX_NB_NONLOCAL: every other listed pair (at least one halo atom). Forces are ADDED to f;
 *    e receives the energies of these pairs only. Reads all positions.
 *  - HX_NB_ALL: both; what hx_nb_compute does.
 * LOCAL followed by NONLOCAL gives the forces of ALL up to rounding (the order of the sums
 * differs) and energies whose sum is ALL's. Same input and nthreads: bit-identical results.
 * e may be NULL (here and in hx_nb_compute): forces only, with kernels that skip the pair-energy
 * arithmetic (20-25% faster on 45k SPC/E); the forces are bit-identical to those of a call with
 * e. Use it on steps whose energies are not reported. */
typedef enum hx_nb_part { HX_NB_ALL = 0, HX_NB_LOCAL = 1, HX_NB_NONLOCAL = 2 } hx_nb_part;
hx_status hx_nb_compute_part(hx_nb *nb, const hx_local_set *set, double *f, hx_nb_energies *e,
                             long long step, int part);

/* Buffer estimate: the smallest rlist >= rc whose estimated energy drift from pairs that enter
 * the cut-off unseen during a list lifetime of (nstlist-1)*dt stays below tolerance
 * (kJ/mol/ps per atom) at temperature T. See src/md/buffer.c for the model. */
hx_status hx_nb_rlist_from_tolerance(const hx_forcefield *ff, const hx_system *sys,
                                     const hx_nb_params *p, double dt, int nstlist,
                                     double temperature, double tolerance, double *rlist);

/* The buffer model's expected number of atom pairs (each pair once) that are beyond rlist at a
 * search and inside the cut-off rc a time t (ps) later: the pairs a list built with rlist misses
 * if it is used for t. The same displacement model as hx_nb_rlist_from_tolerance, so a measured
 * count (hx_md_timings.missed_pairs, checked at the next search, t = nstlist * dt) above it
 * means the model under-estimates how far atoms move. */
hx_status hx_nb_buffer_missed_pairs(const hx_forcefield *ff, const hx_system *sys,
                                    const hx_nb_params *p, double t, double temperature,
                                    double rlist, double *missed);

/* ---- SETTLE ----------------------------------------------------------------------------- */

typedef struct hx_settle hx_settle;

/* Waters of sys (the forcefield applied): one triplet per molecule. HX_ERR_INVALID_ARG for a
 * model without constraints. */
hx_status hx_settle_create(const hx_forcefield *ff, const hx_system *sys, hx_settle **out);
/* The same for an arbitrary set of waters: nmol molecules of 3 atoms, molecule k being atoms
 * [mol_start[k], mol_start[k+1]) of the arrays later passed to hx_settle_apply; type[] tells the
 * oxygen (type 0) from the hydrogens. Used for the home molecules of a domain. */
hx_status hx_settle_create_local(const hx_forcefield *ff, int nmol, const int *mol_start,
                                 const int *type, hx_settle **out);
/* The same from explicit (O, H, H) atom index triples: idx[3k], idx[3k+1], idx[3k+2]. */
hx_status hx_settle_create_triples(const hx_forcefield *ff, int nw, const int *idx,
                                   hx_settle **out);
void hx_settle_destroy(hx_settle **s);
/* OpenMP threads for hx_settle_apply (default 1); results do not depend on it. */
void hx_settle_set_threads(hx_settle *s, int nthreads);
/* x_old: constrained positions at the start of the step; x_new: unconstrained positions, reset
 * in place to satisfy the constraints. If v is not NULL it is set to (x_new - x_old)/dt for the
 * constrained atoms. An impossible configuration or a non-finite value is HX_ERR_PHYSICS naming
 * step and molecule (1-based). */
hx_status hx_settle_apply(const hx_settle *s, const double *x_old, double *x_new, double *v,
                          double dt, long long step);
/* Largest |d - d0| / d0 over the O-H and H-H distances of all waters in x. */
double hx_settle_deviation(const hx_settle *s, const double *x);

/* ---- constraints of whole molecules ---------------------------------------------------------- */

/* The constraints of a list of whole molecules: SETTLE for rigid water, SHAKE (Ryckaert,
 * Ciccotti, Berendsen, J. Comput. Phys. 23, 327 (1977)) for the constraints of other molecules
 * (ethanol: its bonds to hydrogen). Per molecule, so a domain constrains its home molecules and
 * needs no halo. SHAKE iterates until every constrained distance is within the relative
 * tolerance of its length (default HX_SHAKE_TOL), at most HX_SHAKE_MAXITER sweeps. */
#define HX_SHAKE_TOL 1e-10
#define HX_SHAKE_MAXITER 1000

typedef struct hx_constr hx_constr;

/* atom_type: LJ type of every atom of the coordinate arrays (SETTLE tells the water oxygen by
 * it, as the atoms of a water may come in any order). Molecules without constraints are
 * skipped. The list's arrays are copied. */
hx_status hx_constr_create(const hx_forcefield *ff, const hx_mol_list *ml, const int *atom_type,
                           hx_constr **out);
void hx_constr_destroy(hx_constr **c);
/* OpenMP threads (default 1); results do not depend on it. */
void hx_constr_set_threads(hx_constr *c, int nthreads);
/* SHAKE's relative tolerance (> 0). */
void hx_constr_set_tolerance(hx_constr *c, double tol);
/* Constraints in the list (3 per water). */
long long hx_constr_count(const hx_constr *c);
/* x_old: constrained positions at the start of the step (the constraint directions); x_new:
 * unconstrained positions, reset in place. If v is not NULL it is set to (x_new - x_old)/dt for
 * the atoms of constrained molecules. A molecule that cannot be constrained (SETTLE impossible,
 * SHAKE not converged, a bond turned by 90 degrees or more in one step) is HX_ERR_PHYSICS naming
 * the step and the molecule (1-based). */
hx_status hx_constr_apply(const hx_constr *c, const double *x_old, double *x_new, double *v,
                          double dt, long long step);
/* Largest |d - d0| / d0 over all constraints (SETTLE's O-H and H-H distances included). */
double hx_constr_deviation(const hx_constr *c, const double *x);

/* ---- the engine ----------------------------------------------------------------------------- */

typedef enum hx_thermostat { HX_THERMOSTAT_NONE = 0, HX_THERMOSTAT_VRESCALE = 1 } hx_thermostat;

typedef struct hx_md_params {
    double dt;                      /* ps */
    long long steps;                /* used by hx_md_run */
    double rc;                      /* nm */
    double rlist;                   /* nm; 0: from verlet_buffer_tolerance */
    double verlet_buffer_tolerance; /* kJ/mol/ps per atom, used when rlist == 0 */
    int nstlist;
    /* The missed-pair check (single domain) runs at every nstcheck-th pair search (searches at
     * steps that are multiples of nstcheck * nstlist; 1: every search, 0: never). It costs about
     * a third of a search, so the default 10 samples it. Missed pairs are counted in the
     * timings; with an explicit rlist the first ones also give one warning, while with rlist
     * from the buffer tolerance they are expected (the tolerance bounds their drift). */
    int nstcheck;
    double eps_rf, eps_r;
    const char *model; /* "spce", ..., "argon" */
    int gen_vel;       /* 1: Maxwell-Boltzmann velocities at gen_temp from seed */
    double gen_temp;   /* K */
    uint64_t seed;
    hx_thermostat thermostat;
    double tau_t, ref_t; /* ps, K */
    int nthreads;        /* 0: omp_get_max_threads() */
    /* Non-bonded arithmetic: HX_NB_DOUBLE (default; energies exact to ~1e-12) or HX_NB_MIXED
     * (float pair forces, double sums: GROMACS's "mixed" precision, faster). */
    int nb_precision;
    /* v-rescale couples every nsttcouple steps, over nsttcouple * dt (GROMACS's convention;
     * default 10): the thermostat's kinetic energy is a collective, and on a GPU a host round
     * trip, so coupling every step would make every step wait. */
    int nsttcouple;
    /* Sample the paper's device-side metrics every nstmetrics steps (0: never); a sampled step
     * is timed with events and waited for, so keep it sparse (benchmarks use 10-50). */
    int nstmetrics;
    /* Where the step runs: "cpu" (NULL: default) or "gpu"; and the halo-exchange backend
     * (include/halox/halo.h). NULL: "host" on the CPU; on the GPU "nvshmem" with several ranks
     * (when compiled), else "gpu-mpi" (one process: one domain, nothing to send). */
    const char *backend;
    const char *halo;
    /* The device of the "gpu" backend and of the GPU halo backends (include/halox/gpu.h): required
     * for backend "gpu" (the engine never chooses a device), created on the engine's
     * communicator; its streams are the ones the step runs on. NULL for "cpu". Must outlive the
     * engine. */
    const hx_gpu_context *gpu;
    /* Options of the halo backend (include/halox/halo.h, hx_halo_config): the NVSHMEM path and
     * bulk-copy variant, the deadline of device-side waits (< 0: backend default), and the
     * stress mode's seed (0: off; testing). */
    int halo_path;
    int halo_bulk_copy;
    double halo_wait_timeout;
    unsigned long long halo_stress_seed;
    /* Continuing a run (restart from a checkpoint): the input is a running state, so the start
     * is taken as it is (no constraining, no centre-of-mass removal, no velocity generation),
     * the step counter starts at start_step and the thermostat's random stream resumes from
     * rng_state when has_rng_state is set. */
    int continuation;
    long long start_step;
    int has_rng_state;
    uint64_t rng_state[4];
    /* and the thermostat's work up to start_step (hx_md_thermostat_work of the run continued;
     * kJ/mol), so that the conserved energy continues too; rlist_from_tolerance: the continued
     * run chose rlist from its buffer tolerance (its missed pairs are by design, as in that
     * run, and a warning must not advise leaving rlist out) */
    double thermostat_work;
    int rlist_from_tolerance;
    /* GROMACS's "continuation = yes" for a new run from a configuration file: the positions (and
     * velocities) are those of an earlier constrained run and are not constrained again before
     * step 0. Everything else is as for a new run (whole molecules, centre-of-mass motion
     * removed, velocities generated if asked, rlist chosen). A restart (continuation above)
     * implies it. */
    int no_start_constraints;
    /* Rolling prune of the GPU pair list (the CPU backend ignores both): the outer list (radius
     * rlist, the one the decomposition and the halo use) is re-pruned to rlist_inner in
     * prune_parts parts, one part per step. prune_parts -1: the backend's default (the
     * environment variable HALOX_GPU_PRUNE_PARTS overrides it), 0: pruned at the search only.
     * rlist_inner 0: the buffer estimate for a list lifetime of prune_parts + 1 steps at a
     * hundredth of verlet_buffer_tolerance, at most rlist. The GPU backend's default is 4
     * parts (src/mdrun/list_setup.c says why, with the measurements). */
    int prune_parts;
    double rlist_inner;
    /* The pair-list interval chosen by the engine, as GROMACS's mdrun does on GPUs: with
     * nstlist_auto set, nstlist is the reference interval (10 by default) and the gpu backend
     * raises it by the rule of hx_md_list_setup_resolve (the cpu backend keeps it; so does a run
     * with an explicit rlist, whose buffer the engine cannot re-estimate). `halox md` sets it
     * unless --nstlist or an .mdp nstlist is given. nstlist_divides > 0: only intervals that
     * divide it are chosen (`halox md` passes its checkpoint interval, so that checkpoints fall
     * on pair-search steps). */
    int nstlist_auto;
    int nstlist_divides;
    /* Benchmarks and tests. no_graph 1: every step is launched directly, never replayed from a
     * CUDA graph (profilers then see every step's kernels; a test compares the two). step_timing
     * (HX_MD_STEP_*): the time of every step of hx_md_run, read with hx_md_get_step_times and
     * changed between runs with hx_md_set_step_timing. */
    int no_graph;
    int step_timing;
} hx_md_params;

/* hx_md_params.step_timing:
 *  - HX_MD_STEP_TIMES: a clock point after every step (a CUDA event on the step's last stream
 *    on a GPU, the wall clock on the host), nothing waited for: the steps run as untimed ones;
 *  - HX_MD_STEP_BREAKDOWN: also points at the step's start, after its local work (the local
 *    forces with what runs beside them) and after its update (on a GPU: event nodes of the
 *    step's CUDA graph), and every step waits for them: where a step's time goes, at the price
 *    of a slower step (benchmarks take the time per step from a run without it);
 *  - HX_MD_STEP_SPANS: points only around the search steps (after the step before a search,
 *    after the search step) and at the run's end: one record per search step and one per span
 *    of plain steps between them (hx_md_step_time.nsteps), so that a benchmark splits the
 *    device time between search steps and plain steps (the paper's convention leaves the
 *    search steps out) for two events per pair-list interval: the plain steps run exactly as
 *    untimed ones. A one-domain GPU search returns before its kernels finish, so the host's
 *    time of the search (hx_md_timings.search) does not say what the search step costs. */
enum {
    HX_MD_STEP_TIMING_OFF = 0,
    HX_MD_STEP_TIMES = 1,
    HX_MD_STEP_BREAKDOWN = 2,
    HX_MD_STEP_SPANS = 3
};

/* Defaults: dt 0.002, steps 0, rc 1.0, rlist 0 with tolerance 0.005, nstlist 10 (fixed:
 * nstlist_auto 0), nstcheck 10, prune_parts -1 (backend default), rlist_inner 0 (estimate),
 * eps_rf 0, eps_r 1, model spce, NVE, tau_t 0.1, ref_t 300, nsttcouple 10, seed 1, cpu. */
void hx_md_params_default(hx_md_params *p);
/* The pair-list radius for the interval p->nstlist (no automatic choice): p->rlist when set,
 * otherwise the Verlet-buffer estimate for p->verlet_buffer_tolerance at the run's temperature
 * (gen_temp with gen_vel; else the input velocities' temperature; at least ref_t with a
 * thermostat; 300 K for a cold start). sys as read from the input. */
hx_status hx_md_pair_list_radius(const hx_system *sys, const hx_md_params *p, double *rlist);

/* The pair lists of a run, resolved: interval, outer radius, rolling prune. */
typedef struct hx_md_list_setup {
    int nstlist;        /* steps between pair searches */
    double rlist;       /* outer radius (the decomposition's and the halo's), nm */
    int prune_parts;    /* rolling prune (gpu backend): parts, each re-pruned every prune_parts
                         * steps; 0: off */
    double rlist_inner; /* the pruned list's radius, nm (rlist when the prune is off) */
    int automatic;      /* nstlist_auto applied: the rule below chose nstlist */
    int nstlist_ref;    /* the reference interval (p->nstlist) */
    double rlist_ref;   /* the outer radius at the reference interval, nm */
    double size_factor; /* estimated outer-list size at nstlist against that at nstlist_ref */
    char note[256];     /* why the interval is what it is, for the log */
} hx_md_list_setup;

/* The pair lists a run with these parameters uses, on ndomains domains (grid: the grid asked
 * for, NULL or zeros: the one chosen for ndomains). hx_md_create_dd and `halox plan` both call
 * it, so the plan predicts the run's decomposition. sys as read from the input.
 *
 * The outer radius: p->rlist, or the buffer estimate for the interval (hx_md_pair_list_radius).
 * The interval: p->nstlist, unless p->nstlist_auto on the gpu backend with the radius from the
 * buffer tolerance. Then the list sizes are compared as (r + dr)^3, r the estimated radius of an
 * interval and dr = 0.6 ((8 - 1) / rho + (4 - 1) / rho)^(1/3) the radius a cluster-pair list of
 * 8-atom i clusters and 4-atom j halves covers beyond r (GROMACS's estimate; rho the atom
 * density). Candidates: 20, 25, 40, 50, 80, 100 (decomposed also 125, 150, 200, 250, 300),
 * above p->nstlist and dividing p->nstlist_divides when it is set; a candidate whose radius
 * does not fit half the box, or whose communication distance needs more pulses (or has no grid),
 * ends the list.
 *  - one domain (the search runs on the GPU, ~0.2-3 plain steps' time): GROMACS's GPU rule,
 *    the largest candidate whose outer list is at most 1.5x the reference list, taking
 *    candidates in order until one reaches 1.4x;
 *  - decomposed: the candidate of lowest modelled cost per step, 1 + 0.077 (F - 1) + sigma / N
 *    for a list F times the reference's (the step's share that grows with the outer list,
 *    measured on one H200) and a search step of sigma plain steps: 8 with the search step on
 *    the device (a gpu run unless HALOX_GPU_DD=0; measured 8.0-8.4 at 45k on 4 ranks), 20 on
 *    the host (2.5-5 ms, 20-60 plain steps: the low end); HALOX_SEARCH_COST_STEPS overrides
 *    it; among those with F <= 4.
 * The rolling prune (gpu backend, prune_parts -1): HALOX_GPU_PRUNE_PARTS, or 4 parts (8
 * where rlist's list is at least twice the nstlist-10 list, as (rlist + dr)^3 above); the inner
 * radius from the buffer estimate for a lifetime of parts + 1 steps at a hundredth of the
 * tolerance (HALOX_GPU_PRUNE_TOLERANCE overrides it), the parts raised while that radius is rc
 * itself (no buffer to prune to) and below nstlist - 2; off when the inner list would not be at
 * least 3 % shorter or a part would not be pruned before the next search (parts >= nstlist - 1).
 * prune_parts >= 0 and rlist_inner > 0 are taken as given. */
hx_status hx_md_list_setup_resolve(const hx_system *sys, const hx_md_params *p, int ndomains,
                                   const int grid[3], hx_md_list_setup *out);
/* Checks every parameter against the system (rc < half box, rlist >= rc, dt > 0, ...);
 * HX_ERR_INVALID_ARG with what to change. */
hx_status hx_md_params_check(const hx_md_params *p, const hx_system *sys);

typedef struct hx_md_energies {
    long long step;
    double time; /* ps */
    /* kJ/mol. Inside hx_md_run the energies (potential, kinetic, total, temperature and the
     * constraint deviation) are computed only on energy output steps (multiples of nstenergy,
     * and the last step) and are NaN on the others: the other steps make no collective and no
     * host round trip. hx_md_step and hx_md_evaluate called directly always compute them. */
    double lj, coulomb, potential, kinetic, total;
    double temperature;          /* K, from kinetic and the degrees of freedom */
    double constraint_deviation; /* after this step's constraints (relative); NaN like the
                                  * potential */
    /* The terms of the potential, in GROMACS's names: lj is "LJ (SR)" (shifted pair LJ within
     * the cut-off), coulomb "Coulomb (SR)" (reaction-field pairs, the excluded-pair correction
     * and the self term); with molecules that have bonded terms (has_bonded: the force field has
     * some) also "Bond", "Angle", "Ryckaert-Bell.", "LJ-14", "Coulomb-14" below, and potential is
     * the sum of all seven. Without (water, argon) the five are 0 and potential = lj + coulomb. */
    double bonds, angles, dihedrals, lj14, coulomb14;
    int has_bonded;
    /* GROMACS's "Conserved En.": total minus the energy the thermostat has added since the run
     * began (v-rescale's integral of (lambda^2 - 1) times the half-step kinetic energy it
     * scaled), so that it stays constant as the total energy does without a thermostat; equal
     * to total in NVE. NaN like the potential. has_thermostat: the run couples (the energy
     * file writes the column only then). */
    double conserved;
    int has_thermostat;
} hx_md_energies;

/* What hx_md_run measured: it resets every field when it starts (times and counts describe that
 * run; hx_md_step alone accumulates). */
typedef struct hx_md_timings {
    double nb_local;    /* non-bonded home-home pairs (before the halo arrives), s */
    double nb_nonlocal; /* non-bonded pairs with halo atoms, s */
    double halo_x;      /* coordinate halo exchange, s */
    double halo_f;      /* force halo exchange, s */
    double search;      /* repartition: migration, plan, halo set-up and pair search, s */
    /* search split into its parts (host wall time, s; they sum to search up to the agreements
     * between them): state to the host, migration between domains, local topology and plan,
     * halo set-up or update, the backend's new local set (topology and state uploads), the
     * coordinate halo and pair search */
    double search_download, search_migrate, search_plan, search_halo, search_set_local,
        search_pairs;
    /* The coordinate halo alone (a part of search_pairs). With the search step on the device
     * (GPU backend, decomposed, a halo backend with device messages): the device time of its
     * parts - migration, the new local set (home lists, masses), the plan's maps with the
     * local topology - and the host time of the counts (one reduction, the plan from the
     * counts); there search_download is 0, search_migrate the device migration, search_plan
     * the device maps plus the counts, search_set_local the device local set plus the modules'
     * set-up. dd_searches: search steps on the device, dd_retries: their slow-path runs (the
     * device decomposition's buffers grown, the step run again), dd_halo_updates: those whose
     * halo plan's capacities grew (the halo exchange updated collectively instead of its local
     * refresh). Both slow paths are entered by every process at the same search step. */
    double search_halo_x;
    double search_dev_migrate, search_dev_local_set, search_dev_plan, search_counts;
    /* of a search step on the device, the host's time in its collectives after the device
     * step: the plan from the counts (hx_plan_set_counts: the plan's bookkeeping, its agreement
     * and the offsets' messages), and the agreements (the two after the plan image and the
     * modules' set-up, the list statistics' sum); each also waits for the slowest process */
    double search_plan_counts, search_agree;
    /* host wall time of the search steps on the device alone (part of search, which also
     * holds the run's first search, the host's set-up), s */
    double search_dd;
    long long dd_searches, dd_retries, dd_halo_updates;
    double update; /* leap-frog, SETTLE, kinetic energy, s */
    double reduce; /* energy reductions over ranks, s */
    double output; /* gathering and writing output, s */
    double total;  /* wall time of hx_md_run, s */
    long long steps, searches;
    long long checked_searches; /* searches that ran the missed-pair check */
    long long missed_pairs;     /* summed over the checked searches (single domain; -1 with DD) */
    /* The paper's metrics (Doijade et al.), this process, sampled every nstmetrics steps: local
     * work (start to end of the local non-bonded forces), non-local work (start of the
     * coordinate halo to end of the force halo), non-overlap (end of the local forces to end of
     * the force halo, at least 0). Sums over the samples, µs; device time on a GPU. */
    long long metric_samples;
    double local_work_us, nonlocal_work_us, non_overlap_us;
    /* steps replayed from a CUDA graph (counted like steps: since the engine's creation) */
    long long graph_steps;
    /* captures of the plain step's graph in this run (again after every search: the launches
     * take the new lists' sizes) and their host wall time (capture and instantiation or
     * update), s */
    long long graph_captures;
    double graph_capture;
} hx_md_timings;

/* One step timed by hx_md_run (hx_md_params.step_timing). */
typedef struct hx_md_step_time {
    long long step;
    int search; /* the step began with a pair search (repartition) */
    int graph;  /* replayed from the CUDA graph */
    /* the steps this record covers: 1, or with HX_MD_STEP_SPANS a span of plain steps, the
     * last of them `step` (us then covers them all; graph: the last one's) */
    int nsteps;
    /* µs from the end of the previous step (for the run's first step: the run's start) to the
     * end of this one: device time on a GPU, which also counts the device waiting for the host,
     * wall time on the host */
    double us;
    /* HX_MD_STEP_BREAKDOWN (NaN otherwise), this process's first local domain: the step's start
     * to the end of its local work, and from there to the end of its update, µs */
    double local_us, update_us;
} hx_md_step_time;

/* The decomposition as it stands after the latest repartition (reduced over all ranks). */
typedef struct hx_md_dd_info {
    int grid[3];
    int pulses[3];
    double r_comm;  /* nm */
    double cell[3]; /* nm */
    long long home_min, home_max, halo_min, halo_max, halo_total;
    long long pairs_total; /* pair-list entries over all domains */
} hx_md_dd_info;

typedef struct hx_md hx_md;

/* HX_OK when the MD backend `name` ("cpu", "gpu") is compiled into this build;
 * HX_ERR_NOT_COMPILED saying what to rebuild with; HX_ERR_INVALID_ARG for another name. */
hx_status hx_md_backend_available(const char *name);

/* Copies sys (the forcefield of p->model is applied to the copy; molecules made whole), draws
 * velocities if asked, builds the first pair list. One domain, this process only. */
hx_status hx_md_create(const hx_system *sys, const hx_md_params *p, hx_md **out);
/* Domain-decomposed engine over a communicator (collective). sys must be the same global system
 * on every rank (see hx_system_bcast). grid: cells per dimension, or {0,0,0} to choose one for
 * the communicator's number of domains; its product must equal hx_comm_ndomains(comm). The
 * communicator must outlive the engine. Every rank ends with the same energies; with the serial
 * communicator all domains run in this process (the in-process reference). */
hx_status hx_md_create_dd(const hx_system *sys, const hx_md_params *p, hx_comm *comm,
                          const int grid[3], hx_md **out);
/* Collective: copy the current positions and velocities of all domains, in global atom order,
 * into the system returned by hx_md_system on rank 0 (on other ranks it keeps its last copy). */
hx_status hx_md_gather(hx_md *md);
void hx_md_get_dd_info(const hx_md *md, hx_md_dd_info *info);
/* Rank 0 of the engine's communicator writes output. */
int hx_md_is_root(const hx_md *md);
void hx_md_destroy(hx_md **md);
/* One leap-frog step from the current step t: forces at x(t), update to x(t+dt), v(t+dt/2).
 * Afterwards hx_md_last_energies() holds step t (kinetic = average of the two half steps). */
hx_status hx_md_step(hx_md *md);
/* Energies of the current step t without advancing (the update is done into scratch space). */
hx_status hx_md_evaluate(hx_md *md);

typedef struct hx_md_output {
    FILE *energy; /* JSON lines, NULL for none */
    int nstenergy;
    FILE *traj;  /* multi-frame .gro, NULL for none (set it on rank 0 only) */
    int nstxout; /* the same on every rank: frames are gathered collectively */
    /* Called about every progress_interval seconds of wall time (never when NULL). */
    void (*progress)(void *user, long long step, long long nsteps, double ns_per_day,
                     double seconds_left);
    void *user;
    double progress_interval;
    /* Called on every rank before every step (may be NULL); programs use it for checkpoints
     * and fault injection. A non-HX_OK return ends the run with that status: at once on one
     * process; with several, the run goes on to its next collective (a search, energy or
     * thermostat step, at most nstlist steps later) where every rank returns an error with the
     * failing rank's message (the same for a failed write of the energy file or trajectory):
     * no rank is left waiting for it, and no MPI_Abort is needed. */
    hx_status (*step_hook)(void *user, hx_md *md, long long step);
    /* Graceful stop (may be NULL). When *stop becomes non-zero (a program sets it from a
     * SIGINT/SIGTERM handler) the run ends early at a step boundary, as if that step were the
     * last: its energies are computed and written, and hx_md_run returns HX_OK;
     * hx_md_current_step() < the planned end tells the caller that it stopped. Where it stops:
     *  - one process (also an in-process decomposition): at the next step, or, when
     *    stop_at_search is set, at the next pair-search step (a multiple of nstlist), so that a
     *    checkpoint written there continues the run bit for bit;
     *  - several processes: always at the next pair-search step. Every nstlist steps the ranks
     *    agree on the flag with one max-reduction (no collective on other steps), so all of them
     *    stop at the same step even when only one rank received the signal.
     * The flag is only read, never reset. */
    volatile sig_atomic_t *stop;
    int stop_at_search;
    /* Energies are computed on multiples of nstenergy and, when nstlog > 0, of nstlog too (a
     * program writes them to its log from step_hook, which sees the previous step's). */
    int nstlog;
} hx_md_output;

/* Run p->steps steps: energies of steps 0..steps (the last one by hx_md_evaluate), frames of
 * steps multiple of nstxout. Afterwards the state is x(steps), v(steps - dt/2) (x(s), v(s - dt/2)
 * of the step s where a graceful stop ended it, see hx_md_output.stop). */
hx_status hx_md_run(hx_md *md, const hx_md_output *out);

const hx_md_energies *hx_md_last_energies(const hx_md *md);
/* The global system: topology always; positions and velocities as of the latest hx_md_gather
 * (automatic for the single-domain engine). */
const hx_system *hx_md_system(const hx_md *md);
const hx_md_params *hx_md_get_params(const hx_md *md); /* nstlist, rlist, prune resolved */
void hx_md_get_list_setup(const hx_md *md, hx_md_list_setup *s); /* how they were chosen */
/* Steps of the next hx_md_run (counted from the current step). */
void hx_md_set_steps(hx_md *md, long long steps);
double hx_md_ndf(const hx_md *md);
long long hx_md_current_step(const hx_md *md);
long long hx_md_last_missed(const hx_md *md); /* missed pairs at the most recent rebuild */
long long hx_md_npairs(const hx_md *md);
void hx_md_get_timings(const hx_md *md, hx_md_timings *t);
/* The steps the latest hx_md_run timed (step_timing on; the final hx_md_evaluate is not a
 * step), in order: min(*n, cap) of them into out (out may be NULL with cap 0), their number into
 * *n. Waits for the device. */
hx_status hx_md_get_step_times(hx_md *md, hx_md_step_time *out, int cap, int *n);
/* step_timing for the next runs (HX_MD_STEP_*); the next plain step is captured again. */
hx_status hx_md_set_step_timing(hx_md *md, int mode);
/* The thermostat's random stream, to store in a checkpoint. */
void hx_md_get_rng_state(const hx_md *md, uint64_t state[4]);
/* The energy the thermostat has added to the system in the steps before the current one
 * (kJ/mol; 0 without a thermostat), to store in a checkpoint (hx_md_params.thermostat_work). */
double hx_md_thermostat_work(const hx_md *md);
/* One JSON object (no newline) of e into buf, as in the energy file (docs/energy-json.md:
 * exact numbers, null for NaN or infinite values); an empty string when it does not fit (512
 * bytes always suffice). */
void hx_md_energies_json(const hx_md_energies *e, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
