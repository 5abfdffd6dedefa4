/* hx_nb_compute_part on domain-decomposition local sets (1, 2 and 3 decomposed dimensions,
 * 2 domains per decomposed dimension, halos = whole upper-neighbour domains):
 *  - LOCAL then NONLOCAL gives ALL's forces (1e-12 of the largest force in double, 2e-6 in
 *    mixed precision, where the float force buffers are summed in another order) and energies
 *    that add up to ALL's (1e-12 relative in double, 1e-7 in mixed);
 *  - LOCAL leaves halo atoms at zero force and only sees zone 0 x zone 0 pairs (checked against
 *    a single-zone set of the home atoms alone);
 *  - ALL summed over domains equals the O(N^2) double reference (1e-9 relative in double);
 *  - the same call twice, and a fresh hx_nb with the same thread count, give bit-identical
 *    forces and energies; without energies (e = NULL) the forces are bit-identical too;
 *  - empty sets and empty halo zones work; LOCAL ignores halo positions (NaN there). */
#include "test_md_common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int ncases;

static double maxabs(const double *v, int n)
{
    double m = 0;
    for (int k = 0; k < n; k++)
        m = fmax(m, fabs(v[k]));
    return m;
}

static void run(const char *model, int nside, const int g[3], double rc, double rlist,
                hx_nb_precision prec, int nthreads, uint64_t seed)
{
    hx_system *s = !strcmp(model, "argon") ? tmd_argon_lattice(nside, 0.05, seed)
                                           : tmd_water_lattice(model, nside, 0.05, seed);
    hx_forcefield *ff = NULL;
    T_OK(hx_forcefield_create(model, &ff));
    T_OK(hx_forcefield_apply(ff, s));
    int n = s->natoms, ndom = g[0] * g[1] * g[2];
    /* whole molecules with the first atom inside the box; owner = cell of the first atom */
    int *owner = malloc(sizeof(int) * (size_t)s->nmol);
    for (int m = 0; m < s->nmol; m++) {
        int a0 = s->mol_start[m], cc[3];
        for (int d = 0; d < 3; d++) {
            double L = s->box[d];
            double sh = -L * floor(s->x[3 * a0 + d] / L);
            for (int a = a0; a < s->mol_start[m + 1]; a++)
                s->x[3 * a + d] += sh;
            cc[d] = (int)(s->x[3 * a0 + d] / (L / g[d]));
            cc[d] = cc[d] >= g[d] ? g[d] - 1 : cc[d];
        }
        owner[m] = (cc[0] * g[1] + cc[1]) * g[2] + cc[2];
    }
    hx_nb_params p = {rc, 0.0, 1.0};
    double *ftot = calloc(3 * (size_t)n, sizeof(double));
    double lj = 0, coul = 0;
    const double ftol = prec == HX_NB_DOUBLE ? 1e-12 : 2e-6;
    const double etol = prec == HX_NB_DOUBLE ? 1e-12 : 1e-7;
    char what[160];
    snprintf(what, sizeof what,
             "%s %d atoms, grid %dx%dx%d, rc %g, rlist %g, %s, %d thr, seed %llu", model, n, g[0],
             g[1], g[2], rc, rlist, prec == HX_NB_DOUBLE ? "double" : "mixed", nthreads,
             (unsigned long long)seed);
    for (int dom = 0; dom < ndom; dom++) {
        t_domain ds;
        t_domain_build(s, owner, g, dom, &ds);
        int nl = ds.set.n, nh = ds.rg[0].end;
        hx_nb *nb = NULL;
        T_OK(hx_nb_create(ff, &p, nthreads, &nb));
        T_OK(hx_nb_set_precision(nb, prec));
        T_OK(hx_nb_search(nb, &ds.set, rlist, 0, NULL));
        double *fa = malloc(sizeof(double) * 3 * (size_t)nl);
        double *fb = malloc(sizeof(double) * 3 * (size_t)nl);
        double *fc = malloc(sizeof(double) * 3 * (size_t)nl);
        hx_nb_energies ea, el, en, e2;
        T_OK(hx_nb_compute_part(nb, &ds.set, fa, &ea, 0, HX_NB_ALL));
        /* garbage in fb first: LOCAL must overwrite every entry */
        for (int k = 0; k < 3 * nl; k++)
            fb[k] = 1e30;
        T_OK(hx_nb_compute_part(nb, &ds.set, fb, &el, 0, HX_NB_LOCAL));
        ncases++;
        int bad = 0;
        for (int a = nh; a < nl && bad < 3; a++)
            for (int d = 0; d < 3; d++)
                if (fb[3 * a + d] != 0.0) {
                    T_FAIL("%s, domain %d: LOCAL gave halo atom %d force[%d] = %g, want 0", what,
                           dom, a, d, fb[3 * a + d]);
                    bad++;
                    break;
                }
        /* LOCAL equals ALL on the home atoms alone as a single-zone open set */
        {
            hx_local_set hs = ds.set;
            hx_zone_range r0 = {0, nh, 0};
            hs.n = nh;
            hs.nranges = 1;
            hs.ranges = &r0;
            hx_nb *nh_nb = NULL;
            T_OK(hx_nb_create(ff, &p, nthreads, &nh_nb));
            T_OK(hx_nb_set_precision(nh_nb, prec));
            T_OK(hx_nb_search(nh_nb, &hs, rlist, 0, NULL));
            hx_nb_energies eh;
            T_OK(hx_nb_compute(nh_nb, &hs, fc, &eh, 0));
            double fm = maxabs(fc, 3 * nh);
            ncases++;
            T_CHECK(t_reldiff(eh.lj, el.lj, 1e-3) < etol &&
                        t_reldiff(eh.coulomb, el.coulomb, 1e-3) < etol,
                    "%s, domain %d: LOCAL energies LJ %.12g Coulomb %.12g, home atoms alone "
                    "%.12g %.12g",
                    what, dom, el.lj, el.coulomb, eh.lj, eh.coulomb);
            for (int k = 0; k < 3 * nh; k++)
                if (fabs(fc[k] - fb[k]) > ftol * fm) {
                    T_FAIL("%s, domain %d: LOCAL force on home atom %d [%d] %.12g, home atoms "
                           "alone %.12g",
                           what, dom, k / 3, k % 3, fb[k], fc[k]);
                    break;
                }
            hx_nb_destroy(&nh_nb);
        }
        /* LOCAL reads only home positions: halo coordinates still in flight (NaN here) must not
         * change it */
        {
            double *xs = malloc(sizeof(double) * 3 * (size_t)nl);
            memcpy(xs, ds.x, sizeof(double) * 3 * (size_t)nl);
            for (int k = 3 * nh; k < 3 * nl; k++)
                ds.x[k] = NAN;
            hx_nb_energies e3;
            T_OK(hx_nb_compute_part(nb, &ds.set, fc, &e3, 0, HX_NB_LOCAL));
            ncases++;
            T_CHECK(!memcmp(fb, fc, sizeof(double) * 3 * (size_t)nl) && e3.lj == el.lj &&
                        e3.coulomb == el.coulomb,
                    "%s, domain %d: LOCAL changed when halo positions were NaN", what, dom);
            memcpy(ds.x, xs, sizeof(double) * 3 * (size_t)nl);
            free(xs);
        }
        T_OK(hx_nb_compute_part(nb, &ds.set, fb, &en, 0, HX_NB_NONLOCAL));
        double fm = maxabs(fa, 3 * nl);
        ncases++;
        bad = 0;
        for (int k = 0; k < 3 * nl && bad < 3; k++)
            if (fabs(fa[k] - fb[k]) > ftol * fm) {
                T_FAIL("%s, domain %d: LOCAL+NONLOCAL force on local atom %d [%d] %.15g, ALL "
                       "%.15g (largest force %g)",
                       what, dom, k / 3, k % 3, fb[k], fa[k], fm);
                bad++;
            }
        ncases++;
        T_CHECK(t_reldiff(el.lj + en.lj, ea.lj, 1e-3) < etol &&
                    t_reldiff(el.coulomb + en.coulomb, ea.coulomb, 1e-3) < etol,
                "%s, domain %d: LOCAL+NONLOCAL energies LJ %.15g Coulomb %.15g, ALL %.15g %.15g",
                what, dom, el.lj + en.lj, el.coulomb + en.coulomb, ea.lj, ea.coulomb);
        /* forces only (e = NULL): the same forces */
        T_OK(hx_nb_compute_part(nb, &ds.set, fc, NULL, 0, HX_NB_ALL));
        ncases++;
        T_CHECK(!memcmp(fa, fc, sizeof(double) * 3 * (size_t)nl),
                "%s, domain %d: forces without energies differ from forces with", what, dom);
        /* determinism: again, and with a fresh handle */
        T_OK(hx_nb_compute_part(nb, &ds.set, fc, &e2, 0, HX_NB_ALL));
        ncases++;
        T_CHECK(!memcmp(fa, fc, sizeof(double) * 3 * (size_t)nl) && e2.lj == ea.lj &&
                    e2.coulomb == ea.coulomb,
                "%s, domain %d: a second ALL call differs", what, dom);
        {
            hx_nb *nb2 = NULL;
            T_OK(hx_nb_create(ff, &p, nthreads, &nb2));
            T_OK(hx_nb_set_precision(nb2, prec));
            T_OK(hx_nb_search(nb2, &ds.set, rlist, 0, NULL));
            T_OK(hx_nb_compute(nb2, &ds.set, fc, &e2, 0));
            ncases++;
            T_CHECK(!memcmp(fa, fc, sizeof(double) * 3 * (size_t)nl) && e2.lj == ea.lj &&
                        e2.coulomb == ea.coulomb,
                    "%s, domain %d: a fresh hx_nb with the same threads differs", what, dom);
            hx_nb_destroy(&nb2);
        }
        lj += ea.lj;
        coul += ea.coulomb;
        for (int a = 0; a < nl; a++)
            for (int d = 0; d < 3; d++)
                ftot[3 * ds.gid[a] + d] += fa[3 * a + d];
        free(fa);
        free(fb);
        free(fc);
        hx_nb_destroy(&nb);
        t_domain_free(&ds);
    }
    if (prec == HX_NB_DOUBLE) {
        tmd_ref ref;
        tmd_reference(s, ff, rc, 0.0, 1.0, &ref);
        ncases++;
        T_CHECK(t_reldiff(lj, ref.lj, 1e-3) < 1e-9 && t_reldiff(coul, ref.coulomb, 1e-3) < 1e-9,
                "%s: energies summed over domains LJ %.12g Coulomb %.12g, reference %.12g %.12g",
                what, lj, coul, ref.lj, ref.coulomb);
        double fm = maxabs(ref.f, 3 * n);
        for (int k = 0; k < 3 * n; k++)
            if (fabs(ftot[k] - ref.f[k]) > 1e-9 * fm) {
                T_FAIL("%s: force on atom %d [%d] summed over domains %.12g, reference %.12g", what,
                       k / 3, k % 3, ftot[k], ref.f[k]);
                break;
            }
        free(ref.f);
    }
    free(ftot);
    free(owner);
    hx_forcefield_destroy(&ff);
    hx_system_destroy(&s);
}

/* An empty local set and a set with empty halo zones: no pairs, zero energies, no failure. */
static void empty_sets(void)
{
    hx_forcefield *ff = NULL;
    T_OK(hx_forcefield_create("spce", &ff));
    hx_nb_params p = {0.9, 0.0, 1.0};
    hx_nb *nb = NULL;
    T_OK(hx_nb_create(ff, &p, 2, &nb));
    hx_zone_range rg[2] = {{0, 0, 0}, {0, 0, 1}};
    hx_local_set set = {0};
    set.nranges = 2;
    set.ranges = rg;
    set.ndim = 1;
    set.periodic[1] = set.periodic[2] = 1;
    set.box[0] = set.box[1] = set.box[2] = 3.0;
    double f[3] = {0, 0, 0};
    int dummy_i = 0;
    double dummy_d = 0;
    set.x = &dummy_d;
    set.q = &dummy_d;
    set.type = &dummy_i;
    set.mol = &dummy_i;
    T_OK(hx_nb_search(nb, &set, 1.0, 1, NULL));
    hx_nb_energies e = {1, 1};
    T_OK(hx_nb_compute_part(nb, &set, f, &e, 0, HX_NB_LOCAL));
    T_OK(hx_nb_compute_part(nb, &set, f, &e, 0, HX_NB_NONLOCAL));
    ncases++;
    T_CHECK(e.lj == 0 && e.coulomb == 0 && hx_nb_npairs(nb) == 0,
            "empty set: energies %g %g, %lld pairs", e.lj, e.coulomb, hx_nb_npairs(nb));
    T_CHECK(hx_nb_compute_part(nb, &set, f, &e, 0, 5) == HX_ERR_INVALID_ARG, "part 5 accepted");
    /* one water at home, nothing in the halo zone */
    double x[9] = {1.0, 1.0, 1.0, 1.08, 1.03, 1.0, 0.97, 1.09, 1.0};
    double q[3] = {-0.8476, 0.4238, 0.4238};
    int type[3] = {0, 1, 1}, mol[3] = {0, 0, 0};
    rg[0].end = rg[1].begin = rg[1].end = 3;
    set.n = 3;
    set.x = x;
    set.q = q;
    set.type = type;
    set.mol = mol;
    T_OK(hx_nb_search(nb, &set, 1.0, 0, NULL));
    double fl[9], fa[9];
    hx_nb_energies el, ea;
    T_OK(hx_nb_compute_part(nb, &set, fl, &el, 0, HX_NB_LOCAL));
    T_OK(hx_nb_compute_part(nb, &set, fa, &ea, 0, HX_NB_ALL));
    ncases++;
    T_CHECK(hx_nb_npairs(nb) == 0 && el.lj == 0 && el.coulomb == ea.coulomb && el.coulomb < 0 &&
                !memcmp(fl, fa, sizeof fl),
            "one water: %lld pairs, LOCAL %g %g, ALL %g %g", hx_nb_npairs(nb), el.lj, el.coulomb,
            ea.lj, ea.coulomb);
    hx_nb_destroy(&nb);
    hx_forcefield_destroy(&ff);
}

int main(void)
{
    empty_sets();
    const int g1[3] = {2, 1, 1}, g2[3] = {2, 2, 1}, g3[3] = {2, 2, 2}, gy[3] = {1, 2, 1};
    for (int prec = 0; prec < 2; prec++) {
        hx_nb_precision pr = prec ? HX_NB_MIXED : HX_NB_DOUBLE;
        run("spce", 10, g1, 1.0, 1.1, pr, 2, 1);
        run("spce", 10, g2, 0.8, 0.9, pr, 2, 2);
        run("spce", 10, g3, 0.7, 0.75, pr, 3, 3);
        run("spce", 9, gy, 0.9, 0.9, pr, 1, 4);
        run("argon", 10, g3, 1.0, 1.05, pr, 2, 5);
    }
    return t_finish("test_nb_split", ncases);
}
