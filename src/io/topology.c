/* GROMACS topologies (.top) of the systems halox runs, so that the same .gro runs in both codes.
 *
 * The topology is written from the model description, not from text per model: the force field
 * (src/md/forcefield.c) gives each atom its type, charge and mass and the Lennard-Jones c6/c12
 * of every pair of types; the molecule types are read off the system (consecutive molecules
 * with the same residue, atom names and types); rigid water adds its SETTLE geometry. Choices:
 *  - every pair of types gets its c6/c12 in [ nonbond_params ], so GROMACS uses exactly halox's
 *    numbers whatever combination rule a model follows (comb-rule 1 makes the table the
 *    contract; the [ atomtypes ] diagonal repeats it);
 *  - atom and residue names are the system's own, so grompp finds them equal to the .gro;
 *  - rigid molecules (water, argon): every pair of atoms in a molecule is listed in
 *    [ exclusions ], which is halox's rule for them;
 *  - flexible molecules (oplsaa's ethanol): the molecule type's own bonds, constraints (bonds to
 *    hydrogen: [ constraints ] type 1, which count as bonds for the exclusions), angles,
 *    Ryckaert-Bellemans dihedrals ([ dihedrals ] 3) and 1-4 pairs with explicit c6/c12 (already
 *    scaled by fudgeLJ, so gen-pairs stays off; fudgeQQ in [ defaults ] scales their Coulomb),
 *    nrexcl as the model's and the exclusions it implies listed as well;
 *  - charges and masses per atom (ethanol's two CT carbons differ in charge);
 *  - type names come from the element (by mass) and the model: O_spce, H_spce, Ar_argon; models
 *    with bonded terms use the force field's type names (OW, H0, CT, HC, OH).
 * Run parameters (reaction field, cut-off, shift) are not part of a topology; they go into the
 * .mdp (docs/mdp.md), which `halox md -f` reads as well. */
#include "halox/io.h"
#include "halox/md.h"
#include "halox/models.h"
#include "halox/version.h"
#include "core/error.h"
#include "halox/files.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TOP_MAX_ATOMS 16    /* atoms per molecule type */
#define TOP_MAX_MOLTYPES 16 /* kinds of molecule in one system */
#define TOP_MAX_TYPES 8     /* force-field atom types */

typedef struct top_moltype {
    char name[2 * HX_NAME_LEN];
    char resname[HX_NAME_LEN];
    int natoms;
    char atom[TOP_MAX_ATOMS][HX_NAME_LEN];
    int type[TOP_MAX_ATOMS];
    double q[TOP_MAX_ATOMS], m[TOP_MAX_ATOMS];
    int fftype; /* the force field's molecule type */
} top_moltype;

typedef struct top_block {
    int moltype;
    long long count;
} top_block;

typedef struct top_ctx {
    const char *model;
    hx_system *sys; /* a copy with the force field applied */
    hx_forcefield *ff;
    int ntypes;
    char tname[TOP_MAX_TYPES][32];
    int atnum[TOP_MAX_TYPES];
    double tmass[TOP_MAX_TYPES], tq[TOP_MAX_TYPES];
    int nmt;
    top_moltype mt[TOP_MAX_MOLTYPES];
    int nblocks, capblocks;
    top_block *blocks;
} top_ctx;

/* The element of an atom type, from its mass (within 0.5 amu). */
static const struct {
    const char *sym;
    int z;
    double mass;
} elements[] = {{"H", 1, 1.008},    {"C", 6, 12.011},   {"N", 7, 14.007},  {"O", 8, 15.999},
                {"Na", 11, 22.990}, {"S", 16, 32.06},   {"Cl", 17, 35.45}, {"Ar", 18, 39.948},
                {"K", 19, 39.098},  {"Ca", 20, 40.078}, {"Kr", 36, 83.798}};

static void name_types(top_ctx *c)
{
    for (int t = 0; t < c->ntypes; t++) {
        const char *sym = "X";
        int z = 0;
        double best = 0.5;
        for (size_t e = 0; e < sizeof elements / sizeof elements[0]; e++)
            if (fabs(elements[e].mass - c->tmass[t]) < best) {
                best = fabs(elements[e].mass - c->tmass[t]);
                sym = elements[e].sym;
                z = elements[e].z;
            }
        c->atnum[t] = z;
        snprintf(c->tname[t], sizeof c->tname[t], "%s_%s", sym, c->model);
        /* two types of one element (e.g. two kinds of carbon) get numbered names */
        for (int u = 0; u < t; u++)
            if (strcmp(c->tname[u], c->tname[t]) == 0)
                snprintf(c->tname[t], sizeof c->tname[t], "%s%d_%s", sym, t, c->model);
    }
}

/* Molecule types and the [ molecules ] blocks, from the system's molecules in order. */
static hx_status find_moltypes(top_ctx *c)
{
    const hx_system *s = c->sys;
    for (int k = 0; k < s->nmol; k++) {
        int a0 = s->mol_start[k], n = s->mol_start[k + 1] - a0;
        HX_CHECK(n <= TOP_MAX_ATOMS, HX_ERR_UNSUPPORTED,
                 "molecule %d has %d atoms; the topology writer handles up to %d", k + 1, n,
                 TOP_MAX_ATOMS);
        int m = 0;
        for (; m < c->nmt; m++) {
            const top_moltype *t = &c->mt[m];
            int same = t->natoms == n && strcmp(t->resname, s->res_name[a0]) == 0;
            for (int i = 0; same && i < n; i++)
                same =
                    strcmp(t->atom[i], s->atom_name[a0 + i]) == 0 && t->type[i] == s->type[a0 + i];
            if (same)
                break;
        }
        if (m == c->nmt) {
            HX_CHECK(c->nmt < TOP_MAX_MOLTYPES, HX_ERR_UNSUPPORTED,
                     "more than %d kinds of molecule (molecule %d, residue %s, is another)",
                     TOP_MAX_MOLTYPES, k + 1, s->res_name[a0]);
            top_moltype *t = &c->mt[c->nmt++];
            memset(t, 0, sizeof *t);
            t->natoms = n;
            snprintf(t->resname, sizeof t->resname, "%s", s->res_name[a0]);
            for (int i = 0; i < n; i++) {
                snprintf(t->atom[i], sizeof t->atom[i], "%s", s->atom_name[a0 + i]);
                t->type[i] = s->type[a0 + i];
                t->q[i] = s->q[a0 + i];
                t->m[i] = s->m[a0 + i];
            }
            t->fftype = s->mol_type[k];
            char res[HX_NAME_LEN];
            memcpy(res, t->resname, sizeof res);
            snprintf(t->name, sizeof t->name, "%s", res);
            for (int u = 0; u < c->nmt - 1; u++)
                if (strcmp(c->mt[u].name, t->name) == 0)
                    snprintf(t->name, sizeof t->name, "%s_%d", res, c->nmt);
            const int wo = hx_forcefield_water_o_type(c->ff);
            if (hx_forcefield_moltype(c->ff, t->fftype)->rigid_water)
                HX_CHECK(n == 3 && t->type[0] == wo && t->type[1] == wo + 1 && t->type[2] == wo + 1,
                         HX_ERR_INPUT,
                         "molecule %d (residue %s): SETTLE in GROMACS needs the oxygen first "
                         "(atoms %s %s %s)",
                         k + 1, t->resname, t->atom[0], n > 1 ? t->atom[1] : "",
                         n > 2 ? t->atom[2] : "");
        }
        if (c->nblocks > 0 && c->blocks[c->nblocks - 1].moltype == m) {
            c->blocks[c->nblocks - 1].count++;
            continue;
        }
        if (c->nblocks == c->capblocks) {
            int cap = c->capblocks ? 2 * c->capblocks : 16;
            top_block *b = realloc(c->blocks, (size_t)cap * sizeof *b);
            HX_CHECK(b, HX_ERR_NOMEM, "out of memory");
            c->blocks = b;
            c->capblocks = cap;
        }
        c->blocks[c->nblocks++] = (top_block){m, 1};
    }
    return HX_OK;
}

#define TRYW(expr)                                                                                 \
    do {                                                                                           \
        if ((expr) < 0)                                                                            \
            HX_FAIL(HX_ERR_IO, "error writing the topology: %s", strerror(errno));                 \
    } while (0)

/* The bonded terms, constraints and exclusions of a flexible molecule type. */
static hx_status flexible_write(FILE *f, const hx_moltype *mt)
{
    if (mt->nbonds) {
        TRYW(fprintf(f, "\n[ bonds ]\n; i  j  funct  b0 (nm)  kb (kJ/mol/nm^2)\n"));
        for (int b = 0; b < mt->nbonds; b++)
            TRYW(fprintf(f, "  %d  %d  1  %.17g  %.17g\n", mt->bonds[b].i + 1, mt->bonds[b].j + 1,
                         mt->bonds[b].b0, mt->bonds[b].kb));
    }
    if (mt->nconstraints) {
        TRYW(fprintf(f, "\n; bonds to hydrogen, kept by SHAKE in halox\n[ constraints ]\n"
                        "; i  j  funct  d (nm)\n"));
        for (int k = 0; k < mt->nconstraints; k++)
            TRYW(fprintf(f, "  %d  %d  1  %.17g\n", mt->constraints[k].i + 1,
                         mt->constraints[k].j + 1, mt->constraints[k].d));
    }
    if (mt->npairs) {
        TRYW(fprintf(f, "\n; 1-4 pairs: c6, c12 already times fudgeLJ; fudgeQQ scales q_i q_j\n"
                        "[ pairs ]\n; i  j  funct  c6  c12\n"));
        for (int k = 0; k < mt->npairs; k++)
            TRYW(fprintf(f, "  %d  %d  1  %.17g  %.17g\n", mt->pairs[k].i + 1, mt->pairs[k].j + 1,
                         mt->pairs[k].c6, mt->pairs[k].c12));
    }
    if (mt->nangles) {
        TRYW(fprintf(f, "\n[ angles ]\n; i  j  k  funct  theta0 (deg)  k (kJ/mol/rad^2)\n"));
        for (int k = 0; k < mt->nangles; k++)
            TRYW(fprintf(f, "  %d  %d  %d  1  %.17g  %.17g\n", mt->angles[k].i + 1,
                         mt->angles[k].j + 1, mt->angles[k].k + 1,
                         mt->angles[k].theta0 * 180.0 / M_PI, mt->angles[k].ktheta));
    }
    if (mt->ndihedrals) {
        TRYW(fprintf(f, "\n; Ryckaert-Bellemans\n[ dihedrals ]\n; i  j  k  l  funct  C0 .. C5 "
                        "(kJ/mol)\n"));
        for (int k = 0; k < mt->ndihedrals; k++) {
            const hx_dihedral *d = &mt->dihedrals[k];
            TRYW(fprintf(f, "  %d  %d  %d  %d  3", d->i + 1, d->j + 1, d->k + 1, d->l + 1));
            for (int p = 0; p < 6; p++)
                TRYW(fprintf(f, "  %.17g", d->c[p]));
            TRYW(fprintf(f, "\n"));
        }
    }
    TRYW(fprintf(f, "\n; the pairs within nrexcl bonds, as halox excludes them\n[ exclusions ]\n"));
    for (int i = 0; i < mt->natoms; i++) {
        TRYW(fprintf(f, "  %d", i + 1));
        for (int j = 0; j < mt->natoms; j++)
            if (j != i && ((mt->excl[i] >> j) & 1u))
                TRYW(fprintf(f, " %d", j + 1));
        TRYW(fprintf(f, "\n"));
    }
    return HX_OK;
}

static hx_status moltype_write(FILE *f, const top_ctx *c, const top_moltype *t)
{
    const hx_moltype *mt = hx_forcefield_moltype(c->ff, t->fftype);
    const int flexible = !mt->rigid_water && mt->natoms > 1;
    TRYW(fprintf(f, "\n[ moleculetype ]\n; name  nrexcl\n  %s  %d\n", t->name,
                 flexible ? mt->nrexcl : 1));
    TRYW(fprintf(f, "\n[ atoms ]\n; nr  type  resnr  residue  atom  cgnr  charge  mass\n"));
    for (int i = 0; i < t->natoms; i++)
        TRYW(fprintf(f, "  %d  %s  1  %s  %s  %d  %.10g  %.10g\n", i + 1, c->tname[t->type[i]],
                     t->resname, t->atom[i], i + 1, t->q[i], t->m[i]));
    if (flexible)
        return flexible_write(f, mt);
    if (mt->rigid_water)
        TRYW(fprintf(f,
                     "\n; rigid water: SETTLE keeps the O-H and H-H distances (nm), as halox does\n"
                     "[ settles ]\n; O  funct  d_OH  d_HH\n  1  1  %.10g  %.10g\n",
                     mt->d_oh, mt->d_hh));
    if (t->natoms > 1) {
        TRYW(fprintf(f, "\n; halox excludes every pair of atoms in a molecule\n[ exclusions ]\n"));
        for (int i = 0; i < t->natoms; i++) {
            TRYW(fprintf(f, "  %d", i + 1));
            for (int j = 0; j < t->natoms; j++)
                if (j != i)
                    TRYW(fprintf(f, " %d", j + 1));
            TRYW(fprintf(f, "\n"));
        }
    }
    return HX_OK;
}

static hx_status top_write(FILE *f, void *user)
{
    const top_ctx *c = user;
    const double *c6 = hx_forcefield_c6(c->ff), *c12 = hx_forcefield_c12(c->ff);
    const int nt = c->ntypes;
    TRYW(fprintf(f,
                 "; GROMACS topology of a halox system, model %s, written by halox %s.\n"
                 "; Self-contained: every number is the one halox uses. The Lennard-Jones c6/c12\n"
                 "; of every pair of types are in [ nonbond_params ], so GROMACS takes halox's\n"
                 "; values whatever the combination rule. Cut-off, reaction field and shift are\n"
                 "; run parameters: put them in the .mdp (docs/mdp.md; `halox md -f` reads it).\n",
                 c->model, HALOX_VERSION));
    double flj = 1.0, fqq = 1.0;
    hx_forcefield_fudge(c->ff, &flj, &fqq);
    if (flj == 1.0 && fqq == 1.0)
        TRYW(fprintf(f, "\n[ defaults ]\n; nbfunc  comb-rule  gen-pairs  fudgeLJ  fudgeQQ\n"
                        "  1       1          no         1.0      1.0\n"));
    else
        TRYW(fprintf(f,
                     "\n[ defaults ]\n; nbfunc  comb-rule  gen-pairs  fudgeLJ  fudgeQQ\n"
                     "  1       1          no         %.10g      %.10g\n",
                     flj, fqq));
    TRYW(fprintf(f, "\n[ atomtypes ]\n; name  at.num  mass  charge  ptype  c6  c12\n"));
    for (int t = 0; t < nt; t++)
        TRYW(fprintf(f, "  %s  %d  %.10g  0.0  A  %.17g  %.17g\n", c->tname[t], c->atnum[t],
                     c->tmass[t], c6[t * nt + t], c12[t * nt + t]));
    TRYW(fprintf(f, "\n[ nonbond_params ]\n; i  j  func  c6 (kJ/mol nm^6)  c12 (kJ/mol nm^12)\n"));
    for (int a = 0; a < nt; a++)
        for (int b = a; b < nt; b++)
            TRYW(fprintf(f, "  %s  %s  1  %.17g  %.17g\n", c->tname[a], c->tname[b], c6[a * nt + b],
                         c12[a * nt + b]));
    for (int m = 0; m < c->nmt; m++)
        HX_TRY(moltype_write(f, c, &c->mt[m]));
    char title[sizeof c->sys->title];
    snprintf(title, sizeof title, "%s", c->sys->title[0] ? c->sys->title : "halox system");
    for (char *p = title; *p; p++)
        if (*p == ';' || *p == '[' || *p == ']')
            *p = ' '; /* a title must not read as a comment or a section */
    TRYW(fprintf(f, "\n[ system ]\n%s\n\n[ molecules ]\n; name  count\n", title));
    for (int b = 0; b < c->nblocks; b++)
        TRYW(fprintf(f, "%s  %lld\n", c->mt[c->blocks[b].moltype].name, c->blocks[b].count));
    return HX_OK;
}

hx_status hx_topology_write(const char *path, const hx_system *sys, const char *model)
{
    HX_CHECK(path && *path && sys && model, HX_ERR_INVALID_ARG, "hx_topology_write: NULL argument");
    HX_CHECK(sys->natoms > 0 && sys->nmol > 0, HX_ERR_INVALID_ARG,
             "hx_topology_write: the system has no atoms");
    top_ctx c;
    memset(&c, 0, sizeof c);
    hx_status st = HX_OK;
    HX_TRY_GOTO(st, hx_forcefield_create(model, &c.ff), out);
    c.model = hx_forcefield_model(c.ff);
    HX_TRY_GOTO(st, hx_system_copy(sys, &c.sys), out);
    HX_TRY_GOTO(st, hx_forcefield_apply(c.ff, c.sys), out);
    c.ntypes = hx_forcefield_ntypes(c.ff);
    if (c.ntypes > TOP_MAX_TYPES)
        HX_FAIL_GOTO(st, HX_ERR_UNSUPPORTED, out, "model %s has %d atom types; at most %d", model,
                     c.ntypes, TOP_MAX_TYPES);
    /* the mass of each type (for [ atomtypes ]; charges and masses of atoms are per atom) */
    for (int a = 0; a < c.sys->natoms; a++) {
        c.tmass[c.sys->type[a]] = c.sys->m[a];
        c.tq[c.sys->type[a]] = c.sys->q[a];
    }
    name_types(&c);
    if (hx_forcefield_has_bonded(c.ff))
        for (int t = 0; t < c.ntypes; t++)
            snprintf(c.tname[t], sizeof c.tname[t], "%s", hx_forcefield_type_name(c.ff, t));
    HX_TRY_GOTO(st, find_moltypes(&c), out);
    HX_TRY_GOTO(st, hx_output_write(path, "the topology", top_write, &c), out);
out:
    free(c.blocks);
    hx_system_destroy(&c.sys);
    hx_forcefield_destroy(&c.ff);
    return st;
}
