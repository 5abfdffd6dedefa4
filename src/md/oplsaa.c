/* OPLS-AA parameters for ethanol, in the units of the publications (Angstrom, kcal/mol, degrees;
 * converted in src/md/forcefield.c).
 *
 * Sources:
 *  - W. L. Jorgensen, D. S. Maxwell, J. Tirado-Rives, "Development and testing of the OPLS
 *    all-atom force field on conformational energetics and properties of organic liquids",
 *    J. Am. Chem. Soc. 118, 11225-11236 (1996): the functional form (harmonic bonds and angles,
 *    Fourier torsions, Coulomb + Lennard-Jones with geometric combination of sigma and epsilon,
 *    1-4 interactions scaled by 0.5), the charges and Lennard-Jones parameters of alkanes (CT,
 *    HC) and alcohols (OH, HO, the alcohol's alpha carbon), the torsions of alcohols.
 *  - Bond stretching and angle bending: adopted by OPLS-AA from the AMBER all-atom force field
 *    (W. D. Cornell et al., J. Am. Chem. Soc. 117, 5179-5197 (1995)), with OPLS additions for
 *    the alcohol O-H bond (0.945 A) and the angles at the hydroxyl.
 *  - The H-C-C-H torsion (V3 = 0.300 kcal/mol) is the value of the OPLS-AA parameter file as
 *    revised by the Jorgensen group in 1999.
 * Every value below was compared (not copied) with the OPLS-AA files distributed with GROMACS
 * 2022 (share/gromacs/top/oplsaa.ff): atom types opls_135, 140, 154, 155, 157 and their bond,
 * angle and dihedral entries give the same numbers after the unit conversion. */
#include "md/oplsaa.h"

/* Charges: CH3 carbon -0.18 with three H at +0.06 (neutral group), CH2 carbon of the alcohol
 * +0.145 with two H at +0.06, hydroxyl O -0.683 and H +0.418: the molecule is neutral. */
const hx_opls_atomtype hx_opls_atomtypes[] = {
    {135, "CT", "C", 12.011, -0.180, 3.50, 0.066},  /* alkane CH3 carbon */
    {140, "HC", "H", 1.008, 0.060, 2.50, 0.030},    /* alkane hydrogen */
    {154, "OH", "O", 15.9994, -0.683, 3.12, 0.170}, /* alcohol oxygen */
    {155, "HO", "H", 1.008, 0.418, 0.0, 0.0},       /* alcohol hydrogen: no Lennard-Jones */
    {157, "CT", "C", 12.011, 0.145, 3.50, 0.066},   /* alcohol carbon CH2-OH */
};
const int hx_opls_natomtypes = (int)(sizeof hx_opls_atomtypes / sizeof hx_opls_atomtypes[0]);

const hx_opls_bond hx_opls_bonds[] = {
    {"CT", "CT", 268.0, 1.529},
    {"CT", "HC", 340.0, 1.090},
    {"CT", "OH", 320.0, 1.410},
    {"OH", "HO", 553.0, 0.945},
};
const int hx_opls_nbonds = (int)(sizeof hx_opls_bonds / sizeof hx_opls_bonds[0]);

const hx_opls_angle hx_opls_angles[] = {
    {"CT", "CT", "HC", 37.5, 110.7}, {"HC", "CT", "HC", 33.0, 107.8},
    {"CT", "CT", "OH", 50.0, 109.5}, {"HC", "CT", "OH", 35.0, 109.5},
    {"CT", "OH", "HO", 55.0, 108.5},
};
const int hx_opls_nangles = (int)(sizeof hx_opls_angles / sizeof hx_opls_angles[0]);

const hx_opls_torsion hx_opls_torsions[] = {
    {"HC", "CT", "CT", "HC", 0.0, 0.0, 0.300},
    {"HC", "CT", "CT", "OH", 0.0, 0.0, 0.468},
    {"CT", "CT", "OH", "HO", -0.356, -0.174, 0.492},
    {"HC", "CT", "OH", "HO", 0.0, 0.0, 0.450},
};
const int hx_opls_ntorsions = (int)(sizeof hx_opls_torsions / sizeof hx_opls_torsions[0]);

/* Ethanol CH3-CH2-OH: atoms in the order halox reads and writes them. nrexcl 3 and the 1-4
 * factors are those of the OPLS-AA publication (pairs up to three bonds apart interact only
 * through the bonded terms; 1-4 pairs at half strength). */
const hx_opls_molecule hx_opls_ethanol = {
    "ETH",
    9,
    {"C1", "H11", "H12", "H13", "C2", "H21", "H22", "O", "HO"},
    {135, 140, 140, 140, 157, 140, 140, 154, 155},
    8,
    {{0, 1}, {0, 2}, {0, 3}, {0, 4}, {4, 5}, {4, 6}, {4, 7}, {7, 8}},
    3,
    0.5,
    0.5,
};
