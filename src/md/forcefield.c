/* Force field: maps a model (include/halox/models.h, src/md/oplsaa.c) onto the atoms of a
 * system, as molecule types.
 *
 * Types are Lennard-Jones types only; charges and masses are per atom of a molecule type.
 *  - water models: type 0 = oxygen (the only LJ site), type 1 = hydrogen (charge only);
 *  - argon: type 0;
 *  - oplsaa: 0 water oxygen, 1 hydrogen without LJ (water H and the alcohol's HO), 2 CT, 3 HC,
 *    4 OH. OPLS combines geometrically (sigma_ij = sqrt(sigma_i sigma_j), eps_ij =
 *    sqrt(eps_i eps_j)), which is c6_ij = sqrt(c6_ii c6_jj) and c12_ij = sqrt(c12_ii c12_jj); the
 *    water model's oxygen takes part in the same rule, so water-ethanol cross terms are the
 *    geometric means too (the rule the OPLS-AA papers use with TIP3P/TIP4P). Water-water
 *    stays exactly the water model.
 * The c6/c12 tables are full ntypes x ntypes so that kernels never special-case a model.
 *
 * A flexible molecule type is generated from its atoms and bonds, as a GROMACS topology
 * generator does: angles from pairs of bonds sharing an atom, proper dihedrals from every bond
 * with a neighbour on each side, exclusions of atoms within nrexcl bonds, 1-4 pairs of atoms
 * exactly three bonds apart (scaled by the force field's fudge factors), and bonds to hydrogen
 * turned into constraints (GROMACS's constraints = h-bonds: the bond term is dropped, its
 * length b0 kept). Parameters are looked up by bonded type (both directions). */
#include "halox/md.h"
#include "halox/models.h"
#include "core/error.h"
#include "md/oplsaa.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define FF_MAX_MOLTYPES 4
#define DEG2RAD (M_PI / 180.0)

struct hx_forcefield {
    char model[24];
    int is_water; /* pure rigid-water model */
    const hx_water_model *water;
    const hx_lj_model *lj;
    int ntypes;
    char type_name[HX_MAX_TYPES][16];
    double c6[HX_MAX_TYPES * HX_MAX_TYPES], c12[HX_MAX_TYPES * HX_MAX_TYPES];
    double q[2], m[2];
    double fudge_lj, fudge_qq;
    int water_o_type;
    int nmt;
    hx_moltype mt[FF_MAX_MOLTYPES];
    int mt_water, mt_ethanol, mt_argon; /* index of each kind, -1 when absent */
    /* storage of the bonded lists of the molecule types */
    hx_bond *bonds;
    hx_angle *angles;
    hx_dihedral *dihedrals;
    hx_pair14 *pairs;
    hx_constraint *constraints;
};

void hx_forcefield_destroy(hx_forcefield **ff)
{
    if (!ff || !*ff)
        return;
    free((*ff)->bonds);
    free((*ff)->angles);
    free((*ff)->dihedrals);
    free((*ff)->pairs);
    free((*ff)->constraints);
    free(*ff);
    *ff = NULL;
}

/* ---- molecule types -------------------------------------------------------------------- */

static void water_moltype(hx_forcefield *ff, hx_moltype *t)
{
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "SOL");
    t->natoms = 3;
    static const char *const names[3] = {"OW", "HW1", "HW2"};
    for (int a = 0; a < 3; a++) {
        snprintf(t->atom_name[a], sizeof t->atom_name[a], "%s", names[a]);
        t->type[a] = a == 0 ? ff->water_o_type : ff->water_o_type + 1;
        t->q[a] = a == 0 ? ff->water->q_o : ff->water->q_h;
        t->m[a] = a == 0 ? ff->water->m_o : ff->water->m_h;
        t->excl[a] = 0x7u;
    }
    t->rigid_water = 1;
    t->d_oh = ff->water->r_oh;
    t->d_hh = ff->water->r_hh;
    t->nrexcl = 2;
}

static const hx_opls_atomtype *opls_type(int opls)
{
    for (int k = 0; k < hx_opls_natomtypes; k++)
        if (hx_opls_atomtypes[k].opls == opls)
            return &hx_opls_atomtypes[k];
    return NULL;
}

/* The LJ type of an OPLS atom type: types with equal sigma and epsilon share one (every type
 * without LJ shares the hydrogen type of water); new ones are appended. */
static hx_status lj_type_of(hx_forcefield *ff, const hx_opls_atomtype *at, int *out)
{
    const double sig = at->sigma_A * HX_ANGSTROM, eps = at->eps_kcal * HX_KCAL;
    double s6 = sig * sig * sig;
    s6 *= s6;
    const double c6 = 4.0 * eps * s6, c12 = 4.0 * eps * s6 * s6;
    for (int t = 0; t < ff->ntypes; t++)
        if (ff->c6[t * HX_MAX_TYPES + t] == c6 && ff->c12[t * HX_MAX_TYPES + t] == c12) {
            *out = t;
            return HX_OK;
        }
    HX_CHECK(ff->ntypes < HX_MAX_TYPES, HX_ERR_INTERNAL, "more than %d LJ types", HX_MAX_TYPES);
    int t = ff->ntypes++;
    ff->c6[t * HX_MAX_TYPES + t] = c6;
    ff->c12[t * HX_MAX_TYPES + t] = c12;
    snprintf(ff->type_name[t], sizeof ff->type_name[t], "%s", at->bonded);
    *out = t;
    return HX_OK;
}

static int same_types(const char *a, const char *b, const char *x, const char *y)
{
    return (strcmp(a, x) == 0 && strcmp(b, y) == 0) || (strcmp(a, y) == 0 && strcmp(b, x) == 0);
}

/* Build a flexible molecule type from an OPLS molecule (see the file comment). */
static hx_status opls_moltype(hx_forcefield *ff, const hx_opls_molecule *om, hx_moltype *t)
{
    const int n = om->natoms;
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", om->resname);
    t->natoms = n;
    t->nrexcl = om->nrexcl;
    const char *bt[HX_MAX_MOL_ATOMS];
    int is_h[HX_MAX_MOL_ATOMS];
    for (int a = 0; a < n; a++) {
        const hx_opls_atomtype *at = opls_type(om->atomtype[a]);
        HX_CHECK(at, HX_ERR_INTERNAL, "%s: OPLS type %d of atom %s is not tabulated", om->resname,
                 om->atomtype[a], om->atom_name[a]);
        snprintf(t->atom_name[a], sizeof t->atom_name[a], "%s", om->atom_name[a]);
        HX_TRY(lj_type_of(ff, at, &t->type[a]));
        t->q[a] = at->q;
        t->m[a] = at->mass;
        bt[a] = at->bonded;
        is_h[a] = strcmp(at->element, "H") == 0;
    }
    /* the bond graph (constraints are bonds of the topology) */
    int adj[HX_MAX_MOL_ATOMS][HX_MAX_MOL_ATOMS] = {{0}};
    int nb = 0, nc = 0;
    hx_bond bonds[16];
    hx_constraint cons[16];
    for (int b = 0; b < om->nbonds; b++) {
        int i = om->bond[b][0], j = om->bond[b][1];
        adj[i][j] = adj[j][i] = 1;
        const hx_opls_bond *p = NULL;
        for (int k = 0; k < hx_opls_nbonds; k++)
            if (same_types(bt[i], bt[j], hx_opls_bonds[k].a, hx_opls_bonds[k].b))
                p = &hx_opls_bonds[k];
        HX_CHECK(p, HX_ERR_INTERNAL, "%s: no bond parameters for %s-%s", om->resname, bt[i], bt[j]);
        const double b0 = p->r0_A * HX_ANGSTROM;
        /* OPLS writes K (r - r0)^2, GROMACS kb/2 (r - b0)^2: kb = 2 K, per nm^2 */
        const double kb = 2.0 * p->K * HX_KCAL / (HX_ANGSTROM * HX_ANGSTROM);
        if (is_h[i] || is_h[j])
            cons[nc++] = (hx_constraint){i, j, b0};
        else
            bonds[nb++] = (hx_bond){i, j, b0, kb};
    }
    /* graph distances (Floyd-Warshall on <= 32 atoms) */
    int dist[HX_MAX_MOL_ATOMS][HX_MAX_MOL_ATOMS];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            dist[i][j] = i == j ? 0 : adj[i][j] ? 1 : 1000;
    for (int k = 0; k < n; k++)
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                if (dist[i][k] + dist[k][j] < dist[i][j])
                    dist[i][j] = dist[i][k] + dist[k][j];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (dist[i][j] <= t->nrexcl)
                t->excl[i] |= 1u << j;
    /* angles i-j-k around every vertex j */
    hx_angle angles[64];
    int na = 0;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++)
            for (int k = i + 1; k < n; k++) {
                if (!adj[i][j] || !adj[j][k])
                    continue;
                const hx_opls_angle *p = NULL;
                for (int q = 0; q < hx_opls_nangles; q++)
                    if (strcmp(bt[j], hx_opls_angles[q].b) == 0 &&
                        same_types(bt[i], bt[k], hx_opls_angles[q].a, hx_opls_angles[q].c))
                        p = &hx_opls_angles[q];
                HX_CHECK(p, HX_ERR_INTERNAL, "%s: no angle parameters for %s-%s-%s", om->resname,
                         bt[i], bt[j], bt[k]);
                HX_CHECK(na < 64, HX_ERR_INTERNAL, "%s: too many angles", om->resname);
                angles[na++] = (hx_angle){i, j, k, p->theta0_deg * DEG2RAD, 2.0 * p->K * HX_KCAL};
            }
    /* proper dihedrals i-j-k-l about every bond j-k */
    hx_dihedral dih[64];
    int nd = 0;
    for (int j = 0; j < n; j++)
        for (int k = j + 1; k < n; k++) {
            if (!adj[j][k])
                continue;
            for (int i = 0; i < n; i++)
                for (int l = 0; l < n; l++) {
                    if (!adj[i][j] || i == k || !adj[k][l] || l == j || i == l)
                        continue;
                    const hx_opls_torsion *p = NULL;
                    for (int q = 0; q < hx_opls_ntorsions; q++) {
                        const hx_opls_torsion *u = &hx_opls_torsions[q];
                        if ((strcmp(bt[i], u->a) == 0 && strcmp(bt[j], u->b) == 0 &&
                             strcmp(bt[k], u->c) == 0 && strcmp(bt[l], u->d) == 0) ||
                            (strcmp(bt[l], u->a) == 0 && strcmp(bt[k], u->b) == 0 &&
                             strcmp(bt[j], u->c) == 0 && strcmp(bt[i], u->d) == 0))
                            p = u;
                    }
                    HX_CHECK(p, HX_ERR_INTERNAL, "%s: no torsion parameters for %s-%s-%s-%s",
                             om->resname, bt[i], bt[j], bt[k], bt[l]);
                    HX_CHECK(nd < 64, HX_ERR_INTERNAL, "%s: too many dihedrals", om->resname);
                    /* Fourier to Ryckaert-Bellemans in psi = phi - 180 (cos psi = -cos phi):
                     * V1/2 (1 + c) + V2/2 (1 - (2c^2 - 1)) + V3/2 (1 + 4c^3 - 3c), c = cos phi */
                    const double V1 = p->V1 * HX_KCAL, V2 = p->V2 * HX_KCAL, V3 = p->V3 * HX_KCAL;
                    hx_dihedral d = {i, j, k, l, {0}};
                    d.c[0] = V2 + 0.5 * (V1 + V3);
                    d.c[1] = 0.5 * (-V1 + 3.0 * V3);
                    d.c[2] = -V2;
                    d.c[3] = -2.0 * V3;
                    dih[nd++] = d;
                }
        }
    /* 1-4 pairs: atoms exactly three bonds apart */
    hx_pair14 pairs[64];
    int np = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            if (dist[i][j] != 3)
                continue;
            HX_CHECK(np < 64, HX_ERR_INTERNAL, "%s: too many pairs", om->resname);
            pairs[np++] = (hx_pair14){i, j, 0.0, 0.0, om->fudge_qq * t->q[i] * t->q[j]};
        }
    /* the pair c6/c12 need the combined type table: filled in finish_pairs */
    ff->fudge_lj = om->fudge_lj;
    ff->fudge_qq = om->fudge_qq;
    /* store */
#define STORE(field, arr, cnt, store)                                                              \
    do {                                                                                           \
        if ((cnt) > 0) {                                                                           \
            HX_CHECK(!ff->store, HX_ERR_INTERNAL, "one flexible molecule type per force field");   \
            ff->store = malloc((size_t)(cnt) * sizeof *ff->store);                                 \
            HX_CHECK(ff->store, HX_ERR_NOMEM, "out of memory for a molecule type");                \
            memcpy(ff->store, arr, (size_t)(cnt) * sizeof *ff->store);                             \
            t->field = ff->store;                                                                  \
        }                                                                                          \
    } while (0)
    STORE(bonds, bonds, nb, bonds);
    STORE(angles, angles, na, angles);
    STORE(dihedrals, dih, nd, dihedrals);
    STORE(pairs, pairs, np, pairs);
    STORE(constraints, cons, nc, constraints);
#undef STORE
    t->nbonds = nb;
    t->nangles = na;
    t->ndihedrals = nd;
    t->npairs = np;
    t->nconstraints = nc;
    return HX_OK;
}

/* Geometric combination of every pair of types, then packed to stride ntypes. */
static void combine_and_pack(hx_forcefield *ff)
{
    const int nt = ff->ntypes;
    double c6[HX_MAX_TYPES * HX_MAX_TYPES], c12[HX_MAX_TYPES * HX_MAX_TYPES];
    for (int a = 0; a < nt; a++)
        for (int b = 0; b < nt; b++) {
            const double c6a = ff->c6[a * HX_MAX_TYPES + a], c6b = ff->c6[b * HX_MAX_TYPES + b];
            const double c12a = ff->c12[a * HX_MAX_TYPES + a], c12b = ff->c12[b * HX_MAX_TYPES + b];
            c6[a * nt + b] = a == b ? c6a : sqrt(c6a * c6b);
            c12[a * nt + b] = a == b ? c12a : sqrt(c12a * c12b);
        }
    memcpy(ff->c6, c6, sizeof c6);
    memcpy(ff->c12, c12, sizeof c12);
}

static hx_status create_oplsaa(hx_forcefield *ff, const char *water)
{
    HX_TRY(hx_water_model_find(water, &ff->water));
    snprintf(ff->model, sizeof ff->model, "oplsaa-%s", ff->water->name);
    /* 0: water oxygen, 1: hydrogen without LJ, then the ethanol types */
    double s6 = ff->water->sigma_o * ff->water->sigma_o * ff->water->sigma_o;
    s6 *= s6;
    ff->c6[0] = 4.0 * ff->water->epsilon_o * s6;
    ff->c12[0] = 4.0 * ff->water->epsilon_o * s6 * s6;
    snprintf(ff->type_name[0], sizeof ff->type_name[0], "OW");
    snprintf(ff->type_name[1], sizeof ff->type_name[1], "H0");
    ff->ntypes = 2;
    ff->water_o_type = 0;
    ff->q[0] = ff->water->q_o;
    ff->q[1] = ff->water->q_h;
    ff->m[0] = ff->water->m_o;
    ff->m[1] = ff->water->m_h;
    ff->mt_water = 0;
    water_moltype(ff, &ff->mt[0]);
    ff->mt_ethanol = 1;
    HX_TRY(opls_moltype(ff, &hx_opls_ethanol, &ff->mt[1]));
    ff->nmt = 2;
    combine_and_pack(ff);
    /* the 1-4 pair parameters: the combined LJ scaled by fudgeLJ (ff->pairs holds the pairs of
     * the one flexible molecule type) */
    const int nt = ff->ntypes;
    const hx_moltype *t = &ff->mt[ff->mt_ethanol];
    for (int p = 0; p < t->npairs; p++) {
        hx_pair14 *pr = &ff->pairs[p];
        const int ti = t->type[pr->i], tj = t->type[pr->j];
        pr->c6 = ff->fudge_lj * ff->c6[ti * nt + tj];
        pr->c12 = ff->fudge_lj * ff->c12[ti * nt + tj];
    }
    return HX_OK;
}

hx_status hx_forcefield_create(const char *model, hx_forcefield **out)
{
    HX_CHECK(model && out, HX_ERR_INVALID_ARG, "hx_forcefield_create: NULL argument");
    *out = NULL;
    hx_forcefield *ff = calloc(1, sizeof *ff);
    HX_CHECK(ff, HX_ERR_NOMEM, "out of memory for a force field");
    ff->mt_water = ff->mt_ethanol = ff->mt_argon = -1;
    ff->water_o_type = -1;
    ff->fudge_lj = ff->fudge_qq = 1.0;
    if (strcasecmp(model, "argon") == 0 || strcasecmp(model, "ar") == 0) {
        ff->lj = hx_argon_model();
        ff->ntypes = 1;
        double s6 = ff->lj->sigma * ff->lj->sigma * ff->lj->sigma;
        s6 *= s6;
        ff->c6[0] = 4.0 * ff->lj->epsilon * s6;
        ff->c12[0] = 4.0 * ff->lj->epsilon * s6 * s6;
        ff->q[0] = 0.0;
        ff->m[0] = ff->lj->mass;
        snprintf(ff->model, sizeof ff->model, "argon");
        snprintf(ff->type_name[0], sizeof ff->type_name[0], "AR");
        hx_moltype *t = &ff->mt[0];
        snprintf(t->name, sizeof t->name, "AR");
        t->natoms = 1;
        snprintf(t->atom_name[0], sizeof t->atom_name[0], "AR");
        t->m[0] = ff->lj->mass;
        t->excl[0] = 0x1u;
        ff->nmt = 1;
        ff->mt_argon = 0;
    } else if (strncasecmp(model, "oplsaa", 6) == 0 && (model[6] == '\0' || model[6] == '-')) {
        hx_status st = create_oplsaa(ff, model[6] == '-' ? model + 7 : "tip3p");
        if (st != HX_OK) {
            hx_forcefield_destroy(&ff);
            HX_FAIL(HX_ERR_INVALID_ARG,
                    "unknown model '%s': oplsaa takes a water model, oplsaa-spce, oplsaa-spc or "
                    "oplsaa-tip3p (plain oplsaa: TIP3P)",
                    model);
        }
    } else {
        hx_status st = hx_water_model_find(model, &ff->water);
        if (st != HX_OK) {
            free(ff);
            HX_FAIL(HX_ERR_INVALID_ARG,
                    "unknown model '%s': use spce, spc, tip3p, argon or oplsaa (ethanol in "
                    "water)",
                    model);
        }
        ff->is_water = 1;
        ff->ntypes = 2;
        double s6 = ff->water->sigma_o * ff->water->sigma_o * ff->water->sigma_o;
        s6 *= s6;
        ff->c6[0] = 4.0 * ff->water->epsilon_o * s6;
        ff->c12[0] = 4.0 * ff->water->epsilon_o * s6 * s6;
        /* hydrogens: no LJ with anything */
        ff->q[0] = ff->water->q_o;
        ff->q[1] = ff->water->q_h;
        ff->m[0] = ff->water->m_o;
        ff->m[1] = ff->water->m_h;
        snprintf(ff->model, sizeof ff->model, "%s", ff->water->name);
        snprintf(ff->type_name[0], sizeof ff->type_name[0], "OW");
        snprintf(ff->type_name[1], sizeof ff->type_name[1], "HW");
        ff->water_o_type = 0;
        ff->mt_water = 0;
        water_moltype(ff, &ff->mt[0]);
        ff->nmt = 1;
    }
    *out = ff;
    return HX_OK;
}

const char *hx_forcefield_model(const hx_forcefield *ff)
{
    return ff->model;
}
int hx_forcefield_is_water(const hx_forcefield *ff)
{
    return ff->is_water;
}
int hx_forcefield_ntypes(const hx_forcefield *ff)
{
    return ff->ntypes;
}
const char *hx_forcefield_type_name(const hx_forcefield *ff, int t)
{
    return t >= 0 && t < ff->ntypes ? ff->type_name[t] : "?";
}
const double *hx_forcefield_c6(const hx_forcefield *ff)
{
    return ff->c6;
}
const double *hx_forcefield_c12(const hx_forcefield *ff)
{
    return ff->c12;
}
int hx_forcefield_water_o_type(const hx_forcefield *ff)
{
    return ff->water_o_type;
}
int hx_forcefield_nmoltypes(const hx_forcefield *ff)
{
    return ff->nmt;
}
const hx_moltype *hx_forcefield_moltype(const hx_forcefield *ff, int k)
{
    return k >= 0 && k < ff->nmt ? &ff->mt[k] : NULL;
}
void hx_forcefield_fudge(const hx_forcefield *ff, double *fudge_lj, double *fudge_qq)
{
    if (fudge_lj)
        *fudge_lj = ff->fudge_lj;
    if (fudge_qq)
        *fudge_qq = ff->fudge_qq;
}
int hx_forcefield_has_bonded(const hx_forcefield *ff)
{
    for (int k = 0; k < ff->nmt; k++)
        if (ff->mt[k].nbonds || ff->mt[k].nangles || ff->mt[k].ndihedrals || ff->mt[k].npairs)
            return 1;
    return 0;
}

/* ---- applying a model to a system -------------------------------------------------------- */

/* Trim the blanks a .gro name field may carry. */
static void trimmed(const char *in, char *out, size_t len)
{
    while (*in == ' ')
        in++;
    snprintf(out, len, "%s", in);
    size_t n = strlen(out);
    while (n > 0 && out[n - 1] == ' ')
        out[--n] = '\0';
}

static int in_list(const char *name, const char *const *list)
{
    for (; *list; list++)
        if (strcasecmp(name, *list) == 0)
            return 1;
    return 0;
}

static const char *const water_res[] = {"SOL", "HOH", "WAT", "H2O", "SPC", "SPCE", "TIP3", NULL};
static const char *const water_o[] = {"OW", "O", "OH2", "OW1", NULL};
static const char *const water_h[] = {"HW1", "HW2", "H1", "H2", "HW", "H", NULL};
static const char *const argon_names[] = {"AR", NULL};
static const char *const ethanol_res[] = {"ETH", "ETOH", "EOH", NULL};
/* Accepted names at each position of ethanol (the first is the one halox writes). */
static const char *const ethanol_names[9][4] = {
    {"C1", NULL},
    {"H11", NULL},
    {"H12", NULL},
    {"H13", NULL},
    {"C2", NULL},
    {"H21", NULL},
    {"H22", NULL},
    {"O", "O1", "OH", NULL},
    {"HO", "HO1", "H", NULL},
};

/* Exclusions of a molecule type onto its atoms (positions in order). */
static void set_excl(hx_system *sys, int a0, const hx_moltype *t)
{
    for (int p = 0; p < t->natoms; p++)
        sys->excl[a0 + p] = t->excl[p];
}

static hx_status apply_ethanol(const hx_forcefield *ff, hx_system *sys, int k)
{
    const hx_moltype *t = &ff->mt[ff->mt_ethanol];
    const int a0 = sys->mol_start[k], a1 = sys->mol_start[k + 1];
    char res[HX_NAME_LEN];
    trimmed(sys->res_name[a0], res, sizeof res);
    HX_CHECK(a1 - a0 == t->natoms, HX_ERR_INPUT,
             "molecule %d (residue %d %s, atoms %d-%d) has %d atoms but an ethanol molecule has "
             "%d (C1 H11 H12 H13 C2 H21 H22 O HO): check the residue numbering of the input",
             k + 1, sys->res_id[a0], res, a0 + 1, a1, a1 - a0, t->natoms);
    for (int p = 0; p < t->natoms; p++) {
        const int a = a0 + p;
        char name[HX_NAME_LEN];
        trimmed(sys->atom_name[a], name, sizeof name);
        HX_CHECK(in_list(name, ethanol_names[p]), HX_ERR_INPUT,
                 "atom %d (residue %d %s, name %s): ethanol atom %d must be %s; halox's ethanol "
                 "has the atoms C1 H11 H12 H13 C2 H21 H22 O HO in this order",
                 a + 1, sys->res_id[a], res, name, p + 1, t->atom_name[p]);
        sys->type[a] = t->type[p];
        sys->q[a] = t->q[p];
        sys->m[a] = t->m[p];
    }
    set_excl(sys, a0, t);
    sys->mol_type[k] = ff->mt_ethanol;
    return HX_OK;
}

static hx_status apply_water(const hx_forcefield *ff, hx_system *sys, int k)
{
    const int a0 = sys->mol_start[k], a1 = sys->mol_start[k + 1];
    char res[HX_NAME_LEN];
    trimmed(sys->res_name[a0], res, sizeof res);
    HX_CHECK(a1 - a0 == 3, HX_ERR_INPUT,
             "molecule %d (residue %d %s, atoms %d-%d) has %d atom%s, but %s %s has %d "
             "atom%s per molecule: check the residue numbering of the input or the --model",
             k + 1, sys->res_id[a0], res, a0 + 1, a1, a1 - a0, a1 - a0 == 1 ? "" : "s",
             ff->is_water ? "model" : "the water of model", ff->model, 3, "s");
    int no = 0, nh = 0;
    const int to = ff->water_o_type;
    for (int a = a0; a < a1; a++) {
        char name[HX_NAME_LEN];
        trimmed(sys->res_name[a], res, sizeof res);
        trimmed(sys->atom_name[a], name, sizeof name);
        HX_CHECK(in_list(res, water_res), HX_ERR_INPUT,
                 "atom %d (residue %d %s, name %s): residue name is not a water residue "
                 "of model %s (SOL, HOH, WAT, H2O, SPC, TIP3)",
                 a + 1, sys->res_id[a], res, name, ff->model);
        int t;
        if (in_list(name, water_o)) {
            t = 0;
            no++;
        } else if (in_list(name, water_h)) {
            t = 1;
            nh++;
        } else {
            HX_FAIL(HX_ERR_INPUT,
                    "atom %d (residue %d %s, name %s): unknown water atom name; expected "
                    "an oxygen (OW, O, OH2) or a hydrogen (HW1, HW2, H1, H2)",
                    a + 1, sys->res_id[a], res, name);
        }
        sys->type[a] = to + t;
        sys->q[a] = ff->q[t];
        sys->m[a] = ff->m[t];
        sys->excl[a] = 0x7u;
    }
    HX_CHECK(no == 1 && nh == 2, HX_ERR_INPUT,
             "molecule %d (residue %d %s, atoms %d-%d) has %d oxygen and %d hydrogen names;"
             " a water needs one of each O and two H",
             k + 1, sys->res_id[a0], res, a0 + 1, a1, no, nh);
    sys->mol_type[k] = ff->mt_water;
    return HX_OK;
}

static hx_status apply_argon(const hx_forcefield *ff, hx_system *sys, int k)
{
    const int a0 = sys->mol_start[k], a1 = sys->mol_start[k + 1];
    char res[HX_NAME_LEN];
    trimmed(sys->res_name[a0], res, sizeof res);
    HX_CHECK(a1 - a0 == 1, HX_ERR_INPUT,
             "molecule %d (residue %d %s, atoms %d-%d) has %d atom%s, but model %s has %d "
             "atom%s per molecule: check the residue numbering of the input or the --model",
             k + 1, sys->res_id[a0], res, a0 + 1, a1, a1 - a0, a1 - a0 == 1 ? "" : "s", ff->model,
             1, "");
    char name[HX_NAME_LEN];
    trimmed(sys->atom_name[a0], name, sizeof name);
    HX_CHECK(in_list(name, argon_names), HX_ERR_INPUT,
             "atom %d (residue %d %s, name %s): not an argon atom (name AR)", a0 + 1,
             sys->res_id[a0], res, name);
    sys->type[a0] = 0;
    sys->q[a0] = 0.0;
    sys->m[a0] = ff->m[0];
    sys->excl[a0] = 0x1u;
    sys->mol_type[k] = ff->mt_argon;
    return HX_OK;
}

hx_status hx_forcefield_apply(const hx_forcefield *ff, hx_system *sys)
{
    HX_CHECK(ff && sys, HX_ERR_INVALID_ARG, "hx_forcefield_apply: NULL argument");
    size_t n = (size_t)sys->natoms;
    if (!sys->type)
        sys->type = calloc(n + 1, sizeof *sys->type);
    if (!sys->q)
        sys->q = calloc(n + 1, sizeof *sys->q);
    if (!sys->m)
        sys->m = calloc(n + 1, sizeof *sys->m);
    if (!sys->excl)
        sys->excl = calloc(n + 1, sizeof *sys->excl);
    if (!sys->mol_type)
        sys->mol_type = calloc((size_t)sys->nmol + 1, sizeof *sys->mol_type);
    HX_CHECK(sys->type && sys->q && sys->m && sys->excl && sys->mol_type, HX_ERR_NOMEM,
             "out of memory for %zu atom types", n);
    for (int k = 0; k < sys->nmol; k++) {
        const int a0 = sys->mol_start[k];
        char res[HX_NAME_LEN];
        trimmed(sys->res_name[a0], res, sizeof res);
        if (ff->mt_argon >= 0) {
            HX_TRY(apply_argon(ff, sys, k));
        } else if (in_list(res, ethanol_res)) {
            HX_CHECK(ff->mt_ethanol >= 0, HX_ERR_INPUT,
                     "atom %d (residue %d %s, name %s): residue %s is ethanol, which model %s "
                     "does not have: use --model oplsaa (OPLS-AA ethanol in water)",
                     a0 + 1, sys->res_id[a0], res, sys->atom_name[a0], res, ff->model);
            HX_TRY(apply_ethanol(ff, sys, k));
        } else if (ff->mt_ethanol >= 0 && !in_list(res, water_res)) {
            char name[HX_NAME_LEN];
            trimmed(sys->atom_name[a0], name, sizeof name);
            HX_FAIL(HX_ERR_INPUT,
                    "atom %d (residue %d %s, name %s): residue %s is not a molecule of model %s "
                    "(water: SOL, HOH, WAT, H2O, SPC, SPCE, TIP3; ethanol: ETH, ETOH, EOH)",
                    a0 + 1, sys->res_id[a0], res, name, res, ff->model);
        } else {
            HX_TRY(apply_water(ff, sys, k));
        }
    }
    return HX_OK;
}

double hx_forcefield_ndf(const hx_forcefield *ff, const hx_system *sys)
{
    double ndf = 0.0;
    if (sys->mol_type) {
        for (int k = 0; k < sys->nmol; k++) {
            const hx_moltype *t = &ff->mt[sys->mol_type[k]];
            ndf += 3.0 * t->natoms - (t->rigid_water ? 3.0 : (double)t->nconstraints);
        }
    } else {
        ndf = (ff->is_water ? 6.0 : 3.0) * sys->nmol;
    }
    ndf -= 3.0;
    return ndf > 0 ? ndf : 1.0;
}

const hx_water_model *hx_forcefield_water(const hx_forcefield *ff)
{
    return ff->water;
}
