/* The pair lists a run chooses (hx_md_list_setup_resolve, src/md/list_setup.c) against the rule
 * as documented in include/halox/md.h, recomputed here from the public buffer estimate
 * (hx_nb_rlist_from_tolerance) and the decomposition's pulse count (hx_md_dd_pulses):
 *  - one domain: the largest of 20, 25, 40, 50, 80, 100 whose outer list, measured as
 *    (r + dr)^3 with dr = 0.6 ((8 - 1 + 4 - 1) / rho)^(1/3), is at most 1.5x the nstlist-10
 *    list, taking candidates in order until one reaches 1.4x;
 *  - decomposed: the lowest 1 + 0.077 (F - 1) + sigma / N (sigma 20 with the search on the
 *    host, 8 with it on the device, or HALOX_SEARCH_COST_STEPS) over the reference and
 *    20 .. 300, F <= 4, no more halo pulses;
 *  - the rolling prune: 4 parts (8 where the outer list is at least 2x the nstlist-10 one),
 *    inner radius the estimate for parts + 1 steps at a hundredth of the tolerance, parts
 *    raised while that is rc itself, off when it does not shorten the list by 3 % in radius
 *    or when parts >= nstlist - 1.
 * For SPC/E water (3000 and 24000 atoms) and an OPLS-AA ethanol/TIP3P mixture (10 % ethanol) at
 * 300 K, and water at 30 and 3 K (where the prune's rule has to act), on 1, 2 and 8 domains.
 * Every field must agree exactly (the same estimate, the same arithmetic of the rule); the
 * intervals of the H200 runs are also pinned (25 on one domain, 150 on two for 24000 atoms, 50
 * for 3000 atoms on two, where a third pulse stops the list), so that a rule changed in both
 * places at once still fails. Then what must not be chosen: an explicit interval
 * (nstlist_auto 0) always wins, the cpu backend keeps 10, an explicit rlist keeps the interval,
 * a continuation keeps it, nstlist_divides restricts the candidates. */
#include "test_ethanol_common.h"
#include "test_md_common.h"

#include "halox/dd.h"
#include "halox/decomp.h"
#include "mdrun/md_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct expect {
    int nstlist, parts;
    double rlist, rref, factor, inner;
} expect;

typedef struct sysinfo {
    hx_forcefield *ff;
    hx_system *s; /* force field applied, molecules whole */
    const char *model;
} sysinfo;

static double g_tol = 0.005; /* the run's buffer tolerance */
static double g_ptol = 0.0;  /* the inner list's (0: a hundredth of g_tol) */

static double rest(const sysinfo *si, int nstlist, double temp, double tol, int *ok)
{
    hx_nb_params nbp = {.rc = 1.0, .eps_rf = 0.0, .eps_r = 1.0};
    double r = 0.0;
    *ok = hx_nb_rlist_from_tolerance(si->ff, si->s, &nbp, 0.002, nstlist, temp, tol, &r) == HX_OK;
    hx_clear_error();
    return r;
}

/* The pulse count is the decomposition's own mechanics (hx_dd_choose_grid, hx_dd_create: the
 * dd tests check them); the rule that stops at a new pulse is what this test recomputes. */
static int pulses(const hx_system *s, double r, int nd)
{
    return hx_md_dd_pulses(s, 1.0, hx_system_molecule_radius(s), r, nd, NULL);
}

/* The documented rule, from the public estimate. */
static expect rule(const sysinfo *si, double temp, int nd, double sigma, int divides, int given)
{
    const double tol = g_tol, rho = si->s->natoms / (si->s->box[0] * si->s->box[1] * si->s->box[2]);
    const double dr = 0.6 * cbrt((7.0 + 3.0) / rho);
    int ok = 0;
    expect e = {10, 0, 0, 0, 1.0, 0};
    e.rref = e.rlist = rest(si, given > 0 ? given : 10, temp, tol, &ok);
    if (given > 0)
        e.nstlist = given, nd = 0; /* no candidates */
    static const int one[] = {20, 25, 40, 50, 80, 100};
    static const int dd[] = {20, 25, 40, 50, 80, 100, 125, 150, 200, 250, 300};
    const int np0 = nd > 1 ? pulses(si->s, e.rref, nd) : 0;
    double best = 1.0 + sigma / 10.0;
    for (int k = 0; nd > 0 && np0 >= 0 && k < (nd > 1 ? 11 : 6); k++) {
        const int n = nd > 1 ? dd[k] : one[k];
        if (divides > 0 && divides % n != 0)
            continue;
        const double r = rest(si, n, temp, tol, &ok);
        if (!ok)
            break;
        if (nd > 1) {
            const int np = pulses(si->s, r, nd);
            if (np < 0 || np > np0)
                break;
        }
        const double f = pow((r + dr) / (e.rref + dr), 3);
        if (nd == 1) {
            if (f > 1.5)
                break;
            e.nstlist = n, e.rlist = r, e.factor = f;
            if (f >= 1.4)
                break;
        } else {
            if (f > 4.0)
                break;
            const double c = 1.0 + 0.077 * (f - 1.0) + sigma / n;
            if (c < best * (1.0 - 1e-9))
                best = c, e.nstlist = n, e.rlist = r, e.factor = f;
        }
    }
    const double r10 = rest(si, 10, temp, tol, &ok);
    e.parts = ok && pow((e.rlist + dr) / (r10 + dr), 3) >= 2.0 ? 8 : 4;
    const double ptol = g_ptol > 0 ? g_ptol : tol * 0.01;
    e.inner = rest(si, e.parts + 1, temp, ptol, &ok);
    while (e.inner <= 1.0 && e.parts + 1 < e.nstlist - 1) {
        e.parts++;
        e.inner = rest(si, e.parts + 1, temp, ptol, &ok);
    }
    if (!(e.inner + dr < 0.99 * (e.rlist + dr)) || e.parts >= e.nstlist - 1)
        e.parts = 0;
    if (e.parts == 0 || e.inner > e.rlist)
        e.inner = e.rlist;
    return e;
}

static void params(hx_md_params *p, const char *model, double temp)
{
    hx_md_params_default(p);
    p->model = model;
    p->gen_vel = 1; /* the estimate's temperature is then exactly temp */
    p->gen_temp = temp;
    p->backend = "gpu";
    p->nstlist_auto = 1;
    p->verlet_buffer_tolerance = g_tol;
}

/* given > 0: that interval, fixed (only the prune's rule applies) */
static void check_case(const char *name, const sysinfo *si, const hx_system *input, double temp,
                       int nd, double sigma, int divides, int given, int pinned)
{
    hx_md_params p;
    params(&p, si->model, temp);
    p.nstlist_divides = divides;
    if (given > 0) {
        p.nstlist_auto = 0;
        p.nstlist = given;
    }
    hx_md_list_setup got;
    T_OK(hx_md_list_setup_resolve(input, &p, nd, NULL, &got));
    const expect e = rule(si, temp, nd, sigma, divides, given);
    printf("%-22s %5.0f K, %d domain%s: nstlist %d -> %d, rlist %.3f -> %.3f nm (%.2fx), inner "
           "%.3f nm, %d parts; %s\n",
           name, temp, nd, nd > 1 ? "s" : " ", got.nstlist_ref, got.nstlist, got.rlist_ref,
           got.rlist, got.size_factor, got.rlist_inner, got.prune_parts, got.note);
    T_CHECK(got.automatic == (given == 0) && got.nstlist_ref == (given ? given : 10),
            "%s: automatic %d, reference %d", name, got.automatic, got.nstlist_ref);
    T_CHECK(got.nstlist == e.nstlist, "%s, %d domains: nstlist %d, the rule gives %d", name, nd,
            got.nstlist, e.nstlist);
    T_CHECK(got.rlist == e.rlist && got.rlist_ref == e.rref,
            "%s, %d domains: rlist %.6f (reference %.6f), the rule gives %.6f (%.6f)", name, nd,
            got.rlist, got.rlist_ref, e.rlist, e.rref);
    T_CHECK(fabs(got.size_factor - e.factor) < 1e-12,
            "%s, %d domains: list size factor %.9f, the rule gives %.9f", name, nd, got.size_factor,
            e.factor);
    T_CHECK(got.prune_parts == e.parts && got.rlist_inner == e.inner,
            "%s, %d domains: prune %d parts at %.6f nm, the rule gives %d at %.6f", name, nd,
            got.prune_parts, got.rlist_inner, e.parts, e.inner);
    T_CHECK(pinned == 0 || got.nstlist == pinned, "%s, %d domains: nstlist %d, expected %d", name,
            nd, got.nstlist, pinned);
}

static void sys_open(sysinfo *si, const hx_system *in, const char *model)
{
    si->model = model;
    T_OK(hx_forcefield_create(model, &si->ff));
    T_OK(hx_system_copy(in, &si->s));
    T_OK(hx_forcefield_apply(si->ff, si->s));
    hx_system_make_whole(si->s);
}

static void sys_close(sysinfo *si)
{
    hx_system_destroy(&si->s);
    hx_forcefield_destroy(&si->ff);
}

/* What the user fixes, and where the rule does not apply. */
static void overrides(const hx_system *w)
{
    hx_md_params p;
    hx_md_list_setup o;
    /* an explicit interval wins, whatever it is */
    const int given[] = {10, 15, 40};
    for (int k = 0; k < 3; k++) {
        params(&p, "spce", 300.0);
        p.nstlist_auto = 0;
        p.nstlist = given[k];
        T_OK(hx_md_list_setup_resolve(w, &p, 1, NULL, &o));
        double r = 0.0;
        T_OK(hx_md_pair_list_radius(w, &p, &r));
        T_CHECK(!o.automatic && o.nstlist == given[k] && o.rlist == r,
                "explicit nstlist %d: got %d (automatic %d), rlist %.4f for %.4f", given[k],
                o.nstlist, o.automatic, o.rlist, r);
        T_OK(hx_md_list_setup_resolve(w, &p, 2, NULL, &o));
        T_CHECK(o.nstlist == given[k], "explicit nstlist %d on 2 domains: got %d", given[k],
                o.nstlist);
    }
    /* the cpu backend keeps its interval and has no prune */
    params(&p, "spce", 300.0);
    p.backend = NULL;
    T_OK(hx_md_list_setup_resolve(w, &p, 1, NULL, &o));
    T_CHECK(!o.automatic && o.nstlist == 10 && o.prune_parts == 0 && o.rlist_inner == o.rlist,
            "cpu backend: nstlist %d (automatic %d), prune %d parts", o.nstlist, o.automatic,
            o.prune_parts);
    /* an explicit rlist: nothing to re-estimate */
    params(&p, "spce", 300.0);
    p.rlist = 1.1;
    T_OK(hx_md_list_setup_resolve(w, &p, 1, NULL, &o));
    T_CHECK(!o.automatic && o.nstlist == 10 && o.rlist == 1.1 && o.note[0],
            "explicit rlist: nstlist %d (automatic %d), rlist %g, note '%s'", o.nstlist,
            o.automatic, o.rlist, o.note);
    /* a continuation (its rlist from the checkpoint) keeps what it was given */
    params(&p, "spce", 300.0);
    p.continuation = 1;
    p.rlist = 1.217;
    p.nstlist = 25;
    T_OK(hx_md_list_setup_resolve(w, &p, 1, NULL, &o));
    T_CHECK(!o.automatic && o.nstlist == 25, "continuation: nstlist %d (automatic %d)", o.nstlist,
            o.automatic);
    /* the engine: the cpu backend with nstlist_auto runs at 10 */
    params(&p, "spce", 300.0);
    p.backend = NULL;
    hx_md *md = NULL;
    T_OK(hx_md_create(w, &p, &md));
    if (md)
        T_CHECK(hx_md_get_params(md)->nstlist == 10, "cpu engine with nstlist_auto: nstlist %d",
                hx_md_get_params(md)->nstlist);
    hx_md_destroy(&md);
    /* nstlist_divides must be a multiple of the reference */
    params(&p, "spce", 300.0);
    p.nstlist_divides = 25;
    T_CHECK(hx_md_params_check(&p, w) == HX_ERR_INVALID_ARG,
            "nstlist_divides 25 with nstlist 10 accepted");
    hx_clear_error();
}

int main(void)
{
    unsetenv("HALOX_GPU_PRUNE_PARTS");
    unsetenv("HALOX_GPU_PRUNE_TOLERANCE");
    unsetenv("HALOX_SEARCH_COST_STEPS");
    /* the host's search cost (sigma 20) unless a case says otherwise */
    setenv("HALOX_GPU_DD", "0", 1);
    int ncase = 0;
    hx_system *w3 = tmd_water_lattice("spce", 10, 0.02, 7);
    hx_system *w24 = tmd_water_lattice("spce", 20, 0.02, 7);
    /* 10 % ethanol in TIP3P at about the liquid's molecular volume (0.037 nm^3 per molecule) */
    hx_system *mix = tet_mixture_lattice("tip3p", 14, 0.333, 0.1, 0.02, 3);
    sysinfo s3, s24, sm;
    sys_open(&s3, w3, "spce");
    sys_open(&s24, w24, "spce");
    sys_open(&sm, mix, "oplsaa-tip3p");
    ncase++, check_case("water 3000", &s3, w3, 300.0, 1, 20.0, 0, 0, 25);
    ncase++, check_case("water 3000", &s3, w3, 300.0, 2, 20.0, 0, 0, 50);
    ncase++, check_case("water 3000", &s3, w3, 300.0, 8, 20.0, 0, 0, 0);
    ncase++, check_case("water 3000", &s3, w3, 30.0, 1, 20.0, 0, 0, 0);
    ncase++, check_case("water 3000", &s3, w3, 3.0, 1, 20.0, 0, 0, 0);
    ncase++, check_case("water 24000", &s24, w24, 300.0, 1, 20.0, 0, 0, 25);
    ncase++, check_case("water 24000", &s24, w24, 300.0, 2, 20.0, 0, 0, 150);
    ncase++, check_case("water 24000", &s24, w24, 300.0, 8, 20.0, 0, 0, 0);
    ncase++, check_case("water 24000 /40", &s24, w24, 300.0, 1, 20.0, 40, 0, 20);
    ncase++, check_case("water 24000 /1000", &s24, w24, 300.0, 2, 20.0, 1000, 0, 0);
    setenv("HALOX_SEARCH_COST_STEPS", "3", 1);
    ncase++, check_case("water 24000 sigma 3", &s24, w24, 300.0, 2, 3.0, 0, 0, 0);
    unsetenv("HALOX_SEARCH_COST_STEPS");
    /* the search step on the device (a GPU run, HALOX_GPU_DD not 0): its own cost, 8 plain
     * steps (measured); the one-domain rule is unchanged */
    unsetenv("HALOX_GPU_DD");
    ncase++, check_case("water 24000 device", &s24, w24, 300.0, 2, 8.0, 0, 0, 100);
    ncase++, check_case("water 24000 device", &s24, w24, 300.0, 8, 8.0, 0, 0, 0);
    ncase++, check_case("water 24000 device", &s24, w24, 300.0, 1, 8.0, 0, 0, 25);
    setenv("HALOX_GPU_DD", "0", 1);
    ncase++, check_case("ethanol-water", &sm, mix, 300.0, 1, 20.0, 0, 0, 25);
    ncase++, check_case("ethanol-water", &sm, mix, 300.0, 2, 20.0, 0, 0, 0);
    /* the prune's rule at fixed intervals: off when the inner list is not 3 % shorter (6, 7, 8),
     * when a part reaches the next search (5 with an inner tolerance of 1, where the inner
     * list is the shorter), on at 10, off with no buffer at all (0.01 K); the
     * parts raised where 5 steps leave no inner buffer (20 K at tolerance 5: 7 parts) */
    ncase++, check_case("water 3000 fixed", &s3, w3, 300.0, 1, 20.0, 0, 6, 0);
    ncase++, check_case("water 3000 fixed", &s3, w3, 300.0, 1, 20.0, 0, 7, 0);
    ncase++, check_case("water 3000 fixed", &s3, w3, 300.0, 1, 20.0, 0, 8, 0);
    setenv("HALOX_GPU_PRUNE_TOLERANCE", "1", 1); /* an inner list shorter than the outer */
    g_ptol = 1.0;
    ncase++, check_case("water 3000 ptol 1", &s3, w3, 300.0, 1, 20.0, 0, 5, 0);
    ncase++, check_case("water 3000 ptol 1", &s3, w3, 300.0, 1, 20.0, 0, 6, 0);
    unsetenv("HALOX_GPU_PRUNE_TOLERANCE");
    g_ptol = 0.0;
    ncase++, check_case("water 3000 fixed", &s3, w3, 300.0, 1, 20.0, 0, 10, 0);
    ncase++, check_case("water 3000 fixed", &s3, w3, 0.01, 1, 20.0, 0, 100, 0);
    g_tol = 5.0;
    ncase++, check_case("water 3000 tol 5", &s3, w3, 20.0, 1, 20.0, 0, 100, 0);
    g_tol = 0.005;
    overrides(w3);
    ncase++;
    sys_close(&s3);
    sys_close(&s24);
    sys_close(&sm);
    hx_system_destroy(&w3);
    hx_system_destroy(&w24);
    hx_system_destroy(&mix);
    return t_finish("test_md_list_setup", ncase);
}
