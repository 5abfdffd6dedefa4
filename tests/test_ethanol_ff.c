/* The OPLS-AA ethanol/water force field as halox builds it, against this test's own reading of
 * the model (tests/test_ethanol_common.c), and the input rules for mixtures:
 *  - ethanol: 9 atoms, 2 bonds (C-C, C-O: the bonds to H are the 6 constraints, lengths 0.109
 *    and 0.0945 nm), 13 angles, 12 dihedrals, 12 1-4 pairs each three bonds apart with
 *    c6/c12 = 0.5 x the geometric combination and qq = 0.5 q_i q_j; exclusion masks equal to
 *    "within three bonds" from a breadth-first search; neutral; 21 degrees of freedom;
 *  - LJ types: OW takes the water model's own sigma/epsilon, cross terms are geometric means
 *    of sigma and epsilon (c6, c12 to 1e-14);
 *  - model names: oplsaa = TIP3P water, oplsaa-spce / -spc / -tip3p, unknown ones refused;
 *  - .gro input: residue names select molecule types, ethanol atom names are checked per
 *    position (O1/OH, HO1/H aliases), and every wrong input gets its exact message naming
 *    the atom (1-based), the residue and what to do. */
#include "halox/io.h"
#include "test_ethanol_common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int ncases;

static const char *const names[9] = {"C1", "H11", "H12", "H13", "C2", "H21", "H22", "O", "HO"};
/* the test's bond list and graph distances */
static const int bonds[8][2] = {{0, 1}, {0, 2}, {0, 3}, {0, 4}, {4, 5}, {4, 6}, {4, 7}, {7, 8}};

static void graph(int d[9][9])
{
    for (int i = 0; i < 9; i++)
        for (int j = 0; j < 9; j++)
            d[i][j] = i == j ? 0 : 99;
    for (int b = 0; b < 8; b++)
        d[bonds[b][0]][bonds[b][1]] = d[bonds[b][1]][bonds[b][0]] = 1;
    for (int round = 0; round < 9; round++) /* relax until stable: at most 8 bonds apart */
        for (int i = 0; i < 9; i++)
            for (int j = 0; j < 9; j++)
                for (int k = 0; k < 9; k++)
                    if (d[i][k] + d[k][j] < d[i][j])
                        d[i][j] = d[i][k] + d[k][j];
}

static void structure(void)
{
    hx_forcefield *ff = NULL;
    T_OK(hx_forcefield_create("oplsaa", &ff));
    if (!ff)
        return;
    ncases++;
    T_CHECK(strcmp(hx_forcefield_model(ff), "oplsaa-tip3p") == 0, "model name %s",
            hx_forcefield_model(ff));
    T_CHECK(hx_forcefield_ntypes(ff) == 5, "%d LJ types, expected 5 (OW, H, CT, HC, OH)",
            hx_forcefield_ntypes(ff));
    T_CHECK(hx_forcefield_nmoltypes(ff) == 2, "%d molecule types", hx_forcefield_nmoltypes(ff));
    const hx_moltype *w = hx_forcefield_moltype(ff, 0), *e = hx_forcefield_moltype(ff, 1);
    T_CHECK(w && w->rigid_water && w->natoms == 3, "molecule type 0 is not rigid water");
    if (!e)
        return;
    T_CHECK(e->natoms == 9 && strcmp(e->name, "ETH") == 0, "ethanol type: %d atoms, name %s",
            e->natoms, e->name);
    double qtot = 0;
    for (int p = 0; p < 9; p++) {
        qtot += e->q[p];
        T_CHECK(strcmp(e->atom_name[p], names[p]) == 0, "ethanol atom %d is %s, expected %s", p + 1,
                e->atom_name[p], names[p]);
    }
    T_CHECK(fabs(qtot) < 1e-12, "ethanol charge %.3g, expected 0", qtot);
    T_CHECK(e->nbonds == 2 && e->nconstraints == 6 && e->nangles == 13 && e->ndihedrals == 12 &&
                e->npairs == 12,
            "ethanol: %d bonds, %d constraints, %d angles, %d dihedrals, %d pairs; expected 2, "
            "6, 13, 12, 12",
            e->nbonds, e->nconstraints, e->nangles, e->ndihedrals, e->npairs);
    int d[9][9];
    graph(d);
    for (int c = 0; c < e->nconstraints; c++) {
        const hx_constraint *cs = &e->constraints[c];
        int h = names[cs->i][0] == 'H' || names[cs->j][0] == 'H';
        double want = (cs->i == 8 || cs->j == 8) ? 0.0945 : 0.109;
        T_CHECK(h && d[cs->i][cs->j] == 1 && fabs(cs->d - want) < 1e-15,
                "constraint %s-%s length %.6g (expected a bond to H of %.6g)", names[cs->i],
                names[cs->j], cs->d, want);
    }
    for (int b = 0; b < e->nbonds; b++) {
        const hx_bond *bd = &e->bonds[b];
        int co = (bd->i == 7 || bd->j == 7);
        /* OPLS K (kcal/mol/A^2) -> GROMACS kb = 2 K 4.184 100 */
        double kb = co ? 2 * 320.0 * 418.4 : 2 * 268.0 * 418.4, b0 = co ? 0.141 : 0.1529;
        T_CHECK(d[bd->i][bd->j] == 1 && fabs(bd->kb - kb) < 1e-9 && fabs(bd->b0 - b0) < 1e-15,
                "bond %s-%s: b0 %.6g kb %.10g, expected %.6g %.10g", names[bd->i], names[bd->j],
                bd->b0, bd->kb, b0, kb);
    }
    for (int p = 0; p < 9; p++) {
        uint32_t want = 0;
        for (int j = 0; j < 9; j++)
            if (d[p][j] <= 3)
                want |= 1u << j;
        T_CHECK(e->excl[p] == want, "exclusions of %s: 0x%x, expected 0x%x", names[p],
                (unsigned)e->excl[p], (unsigned)want);
    }
    const int nt = hx_forcefield_ntypes(ff);
    const double *c6 = hx_forcefield_c6(ff), *c12 = hx_forcefield_c12(ff);
    int seen[9][9] = {{0}};
    for (int q = 0; q < e->npairs; q++) {
        const hx_pair14 *pr = &e->pairs[q];
        int ti = e->type[pr->i], tj = e->type[pr->j];
        T_CHECK(d[pr->i][pr->j] == 3 && !seen[pr->i][pr->j], "pair %s-%s is %d bonds apart",
                names[pr->i], names[pr->j], d[pr->i][pr->j]);
        seen[pr->i][pr->j] = seen[pr->j][pr->i] = 1;
        T_CHECK(pr->c6 == 0.5 * c6[ti * nt + tj] && pr->c12 == 0.5 * c12[ti * nt + tj] &&
                    fabs(pr->qq - 0.5 * e->q[pr->i] * e->q[pr->j]) < 1e-15,
                "pair %s-%s: c6 %.6g c12 %.6g qq %.6g are not half the pair's", names[pr->i],
                names[pr->j], pr->c6, pr->c12, pr->qq);
    }
    /* geometric combination: OW (TIP3P) with CT, from sigma/epsilon of each */
    const hx_water_model *tip = NULL;
    hx_water_model_find("tip3p", &tip);
    double s = sqrt(tip->sigma_o * 0.35), ep = sqrt(tip->epsilon_o * 0.066 * 4.184);
    double s6 = pow(s, 6);
    int tct = e->type[0];
    T_CHECK(t_reldiff(c6[0 * nt + tct], 4 * ep * s6, 1e-30) < 1e-14 &&
                t_reldiff(c12[0 * nt + tct], 4 * ep * s6 * s6, 1e-30) < 1e-14,
            "OW-CT c6 %.15g c12 %.15g, geometric combination gives %.15g %.15g", c6[tct], c12[tct],
            4 * ep * s6, 4 * ep * s6 * s6);
    T_CHECK(c6[e->type[8] * nt + e->type[8]] == 0 && e->type[8] == w->type[1],
            "HO has LJ or a type of its own");
    hx_forcefield_destroy(&ff);

    const char *ok[] = {"oplsaa-spce", "OPLSAA-SPC", "oplsaa-tip3p"};
    for (int k = 0; k < 3; k++) {
        ncases++;
        T_OK(hx_forcefield_create(ok[k], &ff));
        hx_forcefield_destroy(&ff);
    }
    ncases++;
    T_CHECK(hx_forcefield_create("oplsaa-tip4p", &ff) == HX_ERR_INVALID_ARG &&
                strcmp(hx_last_error_message(),
                       "unknown model 'oplsaa-tip4p': oplsaa takes a water model, oplsaa-spce, "
                       "oplsaa-spc or oplsaa-tip3p (plain oplsaa: TIP3P)") == 0,
            "oplsaa-tip4p: %s", hx_last_error_message());
}

/* A .gro of one ethanol and one water (names given), read and applied. */
static hx_status apply_gro(const char *model, const char *eth_res, const char *const en[9],
                           int n_eth, hx_system **out)
{
    char buf[4096];
    int len = snprintf(buf, sizeof buf, "test\n%5d\n", n_eth + 3);
    t_rng r;
    t_rng_seed(&r, 5);
    double x[27], c[3] = {1.0, 1.0, 1.0};
    tet_ethanol_coords(&r, c, 0.0, x);
    for (int p = 0; p < n_eth; p++)
        len += snprintf(buf + len, sizeof buf - (size_t)len, "%5d%-5s%5s%5d%8.3f%8.3f%8.3f\n", 1,
                        eth_res, en[p], p + 1, x[3 * p], x[3 * p + 1], x[3 * p + 2]);
    const char *wn[3] = {"OW", "HW1", "HW2"};
    const double wx[3][3] = {{2, 2, 2}, {2.1, 2, 2}, {1.97, 2.095, 2}};
    for (int p = 0; p < 3; p++)
        len += snprintf(buf + len, sizeof buf - (size_t)len, "%5d%-5s%5s%5d%8.3f%8.3f%8.3f\n", 2,
                        "SOL", wn[p], n_eth + p + 1, wx[p][0], wx[p][1], wx[p][2]);
    len += snprintf(buf + len, sizeof buf - (size_t)len, "   3.00000   3.00000   3.00000\n");
    hx_system *s = NULL;
    hx_status st = hx_gro_read_buffer(buf, (size_t)len, "mix.gro", &s);
    if (st != HX_OK)
        return st;
    hx_forcefield *ff = NULL;
    st = hx_forcefield_create(model, &ff);
    if (st == HX_OK)
        st = hx_forcefield_apply(ff, s);
    hx_forcefield_destroy(&ff);
    if (out && st == HX_OK)
        *out = s;
    else
        hx_system_destroy(&s);
    return st;
}

static void expect_error(const char *what, hx_status st, const char *msg)
{
    ncases++;
    T_CHECK(st == HX_ERR_INPUT && strcmp(hx_last_error_message(), msg) == 0,
            "%s: status %s, message\n  %s\nexpected\n  %s", what, hx_status_name(st),
            hx_last_error_message(), msg);
}

static void input(void)
{
    hx_system *s = NULL;
    ncases++;
    T_OK(apply_gro("oplsaa", "ETH", names, 9, &s));
    if (s) {
        int d[9][9];
        graph(d);
        T_CHECK(s->nmol == 2 && s->mol_type[0] == 1 && s->mol_type[1] == 0,
                "molecule types %d %d of %d molecules", s->mol_type[0], s->mol_type[1], s->nmol);
        for (int p = 0; p < 9; p++) {
            uint32_t want = 0;
            for (int j = 0; j < 9; j++)
                want |= d[p][j] <= 3 ? 1u << j : 0;
            T_CHECK(s->excl[p] == want, "atom %d exclusions 0x%x, expected 0x%x", p + 1,
                    (unsigned)s->excl[p], (unsigned)want);
        }
        for (int a = 9; a < 12; a++)
            T_CHECK(s->excl[a] == 0x7u, "water atom %d exclusions 0x%x", a + 1,
                    (unsigned)s->excl[a]);
        T_CHECK(fabs(s->q[7] + 0.683) < 1e-15 && fabs(s->q[8] - 0.418) < 1e-15 &&
                    fabs(s->q[9] + 0.834) < 1e-15,
                "charges O %g HO %g OW %g", s->q[7], s->q[8], s->q[9]);
        hx_forcefield *ff = NULL;
        T_OK(hx_forcefield_create("oplsaa", &ff));
        /* 27 - 6 constraints + 9 - 3 (water) - 3 (centre of mass) */
        T_CHECK(ff && hx_forcefield_ndf(ff, s) == 24.0, "degrees of freedom %g, expected 24",
                hx_forcefield_ndf(ff, s));
        hx_forcefield_destroy(&ff);
        hx_system_destroy(&s);
    }
    /* aliases of the hydroxyl names, other residue names */
    const char *alias[9] = {"C1", "H11", "H12", "H13", "C2", "H21", "H22", "O1", "HO1"};
    ncases++;
    T_OK(apply_gro("oplsaa-spce", "ETOH", alias, 9, NULL));
    const char *alias2[9] = {"C1", "H11", "H12", "H13", "C2", "H21", "H22", "OH", "H"};
    ncases++;
    T_OK(apply_gro("oplsaa", "EOH", alias2, 9, NULL));

    expect_error("ethanol under spce", apply_gro("spce", "ETH", names, 9, NULL),
                 "atom 1 (residue 1 ETH, name C1): residue ETH is ethanol, which model spce does "
                 "not have: use --model oplsaa (OPLS-AA ethanol in water)");
    const char *swapped[9] = {"C1", "H11", "H12", "H13", "H21", "C2", "H22", "O", "HO"};
    expect_error("atoms out of order", apply_gro("oplsaa", "ETH", swapped, 9, NULL),
                 "atom 5 (residue 1 ETH, name H21): ethanol atom 5 must be C2; halox's ethanol "
                 "has the atoms C1 H11 H12 H13 C2 H21 H22 O HO in this order");
    expect_error("8-atom ethanol", apply_gro("oplsaa", "ETH", names, 8, NULL),
                 "molecule 1 (residue 1 ETH, atoms 1-8) has 8 atoms but an ethanol molecule has "
                 "9 (C1 H11 H12 H13 C2 H21 H22 O HO): check the residue numbering of the input");
    expect_error("unknown residue", apply_gro("oplsaa", "MEOH", names, 9, NULL),
                 "atom 1 (residue 1 MEOH, name C1): residue MEOH is not a molecule of model "
                 "oplsaa-tip3p (water: SOL, HOH, WAT, H2O, SPC, SPCE, TIP3; ethanol: ETH, ETOH, "
                 "EOH)");
}

int main(void)
{
    structure();
    input();
    return t_finish("test_ethanol_ff", ncases);
}
