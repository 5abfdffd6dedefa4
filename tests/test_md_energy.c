/* Single-point non-bonded energies and forces of the pair-list engine equal an independent
 * O(N^2) minimum-image reference (relative 1e-9), for water and argon boxes, several cut-offs,
 * eps_rf (0 = infinity, 78) and eps_r; also after atoms moved within the buffer and out of the
 * box, and for a 2-domain decomposition (ndim = 1 local sets) summed over domains. */
#include "test_md_common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int ncases;

static void compare(const char *what, const hx_system *s, const hx_forcefield *ff, double rc,
                    double eps_rf, double eps_r, double lj, double coul, const double *f)
{
    tmd_ref ref;
    tmd_reference(s, ff, rc, eps_rf, eps_r, &ref);
    ncases++;
    T_CHECK(t_reldiff(lj, ref.lj, 1e-3) < 1e-9, "%s: LJ %.12g vs reference %.12g", what, lj,
            ref.lj);
    T_CHECK(t_reldiff(coul, ref.coulomb, 1e-3) < 1e-9, "%s: Coulomb %.12g vs reference %.12g", what,
            coul, ref.coulomb);
    double fmx = 0;
    for (int k = 0; k < 3 * s->natoms; k++)
        fmx = fmax(fmx, fabs(ref.f[k]));
    int bad = 0;
    for (int a = 0; a < s->natoms && bad < 3; a++)
        for (int d = 0; d < 3; d++)
            if (fabs(f[3 * a + d] - ref.f[3 * a + d]) > 1e-9 * fmx) {
                T_FAIL("%s: atom %d force[%d] %.12g vs reference %.12g", what, a, d, f[3 * a + d],
                       ref.f[3 * a + d]);
                bad++;
                break;
            }
    free(ref.f);
}

static void single(const char *what, hx_system *s, const char *model, double rc, double rlist,
                   double eps_rf, double eps_r, int nthreads, double move)
{
    hx_forcefield *ff = NULL;
    T_OK(hx_forcefield_create(model, &ff));
    T_OK(hx_forcefield_apply(ff, s));
    hx_nb_params p = {rc, eps_rf, eps_r};
    hx_nb *nb = NULL;
    T_OK(hx_nb_create(ff, &p, nthreads, &nb));
    int *mol = malloc(sizeof(int) * (size_t)s->natoms);
    hx_zone_range rg;
    hx_local_set set;
    hx_local_set_from_system(&set, s, mol, &rg);
    T_OK(hx_nb_search(nb, &set, rlist, 0, NULL));
    if (move > 0) {
        /* move every molecule rigidly by < (rlist - rc)/2 (some across the box edge, left
         * unwrapped as the engine does): the list must stay valid */
        t_rng r;
        t_rng_seed(&r, 99);
        for (int k = 0; k < s->nmol; k++) {
            double dxyz[3];
            for (int d = 0; d < 3; d++)
                dxyz[d] = move * (2 * t_rng_uniform(&r) - 1) / sqrt(3.0);
            for (int a = s->mol_start[k]; a < s->mol_start[k + 1]; a++)
                for (int d = 0; d < 3; d++)
                    s->x[3 * a + d] += dxyz[d];
        }
    }
    double *f = calloc(3 * (size_t)s->natoms, sizeof(double));
    hx_nb_energies e;
    T_OK(hx_nb_compute(nb, &set, f, &e, 0));
    char buf[160];
    snprintf(buf, sizeof buf, "%s (%s, %d atoms, rc %g, rlist %g, eps_rf %g, eps_r %g, %d thr)",
             what, model, s->natoms, rc, rlist, eps_rf, eps_r, nthreads);
    compare(buf, s, ff, rc, eps_rf, eps_r, e.lj, e.coulomb, f);
    free(f);
    free(mol);
    hx_nb_destroy(&nb);
    hx_forcefield_destroy(&ff);
}

/* Two domains along x (ndim 1): each holds its home molecules (by first atom) as zone 0 and all
 * molecules of the upper neighbour as zone 1, shifted by +L where the neighbour wraps. */
static void two_domains(hx_system *s, const char *model, double rc, double rlist, double eps_rf)
{
    hx_forcefield *ff = NULL;
    T_OK(hx_forcefield_create(model, &ff));
    T_OK(hx_forcefield_apply(ff, s));
    hx_nb_params p = {rc, eps_rf, 1.0};
    int n = s->natoms;
    double L = s->box[0];
    /* molecules whole and first atoms inside [0, L) along x */
    int *owner = malloc(sizeof(int) * (size_t)s->nmol);
    for (int k = 0; k < s->nmol; k++) {
        int a0 = s->mol_start[k];
        double sh = -L * floor(s->x[3 * a0] / L);
        for (int a = a0; a < s->mol_start[k + 1]; a++)
            s->x[3 * a] += sh;
        owner[k] = s->x[3 * a0] < 0.5 * L ? 0 : 1;
    }
    double *ftot = calloc(3 * (size_t)n, sizeof(double));
    double lj = 0, coul = 0;
    double *xl = malloc(sizeof(double) * 3 * (size_t)n);
    int *tl = malloc(sizeof(int) * (size_t)n), *ml = malloc(sizeof(int) * (size_t)n);
    int *gid = malloc(sizeof(int) * (size_t)n);
    double *ql = malloc(sizeof(double) * (size_t)n), *fl = malloc(sizeof(double) * 3 * (size_t)n);
    for (int dom = 0; dom < 2; dom++) {
        int nl = 0;
        hx_zone_range rg[2];
        for (int pass = 0; pass < 2; pass++) {
            int want = pass == 0 ? dom : 1 - dom;
            double shift = (pass == 1 && dom == 1) ? L : 0.0;
            rg[pass].begin = nl;
            rg[pass].zone = pass;
            for (int k = 0; k < s->nmol; k++) {
                if (owner[k] != want)
                    continue;
                for (int a = s->mol_start[k]; a < s->mol_start[k + 1]; a++) {
                    for (int d = 0; d < 3; d++)
                        xl[3 * nl + d] = s->x[3 * a + d] + (d == 0 ? shift : 0.0);
                    tl[nl] = s->type[a];
                    ql[nl] = s->q[a];
                    ml[nl] = k;
                    gid[nl] = a;
                    nl++;
                }
            }
            rg[pass].end = nl;
        }
        hx_local_set set = {0};
        set.n = nl;
        set.x = xl;
        set.type = tl;
        set.q = ql;
        set.mol = ml;
        set.nranges = 2;
        set.ranges = rg;
        set.ndim = 1;
        set.periodic[0] = 0;
        set.periodic[1] = set.periodic[2] = 1;
        for (int d = 0; d < 3; d++)
            set.box[d] = s->box[d];
        hx_nb *nb = NULL;
        T_OK(hx_nb_create(ff, &p, 2, &nb));
        T_OK(hx_nb_search(nb, &set, rlist, 0, NULL));
        hx_nb_energies e;
        T_OK(hx_nb_compute(nb, &set, fl, &e, 0));
        lj += e.lj;
        coul += e.coulomb;
        for (int i = 0; i < nl; i++)
            for (int d = 0; d < 3; d++)
                ftot[3 * gid[i] + d] += fl[3 * i + d];
        hx_nb_destroy(&nb);
    }
    char buf[128];
    snprintf(buf, sizeof buf, "2 domains along x (%s, %d atoms, rc %g, rlist %g)", model, n, rc,
             rlist);
    compare(buf, s, ff, rc, eps_rf, 1.0, lj, coul, ftot);
    free(owner);
    free(ftot);
    free(xl);
    free(tl);
    free(ml);
    free(gid);
    free(ql);
    free(fl);
    hx_forcefield_destroy(&ff);
}

static void bad_names(void)
{
    hx_system *s = tmd_water_lattice("spce", 2, 0.0, 3);
    snprintf(s->atom_name[4], HX_NAME_LEN, "CA");
    hx_forcefield *ff = NULL;
    T_OK(hx_forcefield_create("spce", &ff));
    hx_status st = hx_forcefield_apply(ff, s);
    ncases++;
    /* atom 5 is the first hydrogen of the second water (residue 2) */
    const char *want = "atom 5 (residue 2 SOL, name CA): unknown water atom name; expected an "
                       "oxygen (OW, O, OH2) or a hydrogen (HW1, HW2, H1, H2)";
    T_CHECK(st == HX_ERR_INPUT && strcmp(hx_last_error_message(), want) == 0,
            "unknown atom name: got %s '%s', expected '%s'", hx_status_name(st),
            hx_last_error_message(), want);
    hx_forcefield_destroy(&ff);
    T_CHECK(hx_forcefield_create("tip5p", &ff) == HX_ERR_INVALID_ARG, "unknown model accepted");
    hx_system_destroy(&s);
}

int main(void)
{
    struct {
        int water, nside;
        double rc, rlist, eps_rf, eps_r, move;
        int threads;
    } cases[] = {
        {1, 6, 0.9, 0.9, 0.0, 1.0, 0.0, 1},   {1, 6, 0.8, 0.85, 78.0, 1.0, 0.0, 2},
        {1, 8, 1.0, 1.1, 0.0, 1.0, 0.0, 3},   {1, 8, 1.0, 1.1, 0.0, 1.0, 0.05, 2},
        {1, 7, 0.7, 0.8, 78.0, 2.0, 0.03, 1}, {0, 8, 1.0, 1.0, 0.0, 1.0, 0.0, 1},
        {0, 9, 1.2, 1.3, 0.0, 1.0, 0.049, 2}, {0, 6, 0.9, 0.95, 0.0, 1.0, 0.0, 4},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        hx_system *s = cases[c].water ? tmd_water_lattice("spce", cases[c].nside, 0.05, 10 + c)
                                      : tmd_argon_lattice(cases[c].nside, 0.05, 10 + c);
        single(cases[c].move > 0 ? "moved after search" : "single point", s,
               cases[c].water ? "spce" : "argon", cases[c].rc, cases[c].rlist, cases[c].eps_rf,
               cases[c].eps_r, cases[c].threads, cases[c].move);
        hx_system_destroy(&s);
    }
    hx_system *s = tmd_water_lattice("tip3p", 8, 0.05, 5);
    single("single point", s, "tip3p", 1.0, 1.05, 0.0, 1.0, 2, 0.0);
    hx_system_destroy(&s);
    s = tmd_water_lattice("spce", 10, 0.05, 6);
    two_domains(s, "spce", 1.0, 1.1, 0.0);
    hx_system_destroy(&s);
    s = tmd_argon_lattice(10, 0.05, 7);
    two_domains(s, "argon", 1.0, 1.0, 0.0);
    hx_system_destroy(&s);
    bad_names();
    return t_finish("test_md_energy", ncases);
}
