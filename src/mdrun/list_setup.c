/* The pair lists of a run: the outer radius from the Verlet buffer estimate (src/md/buffer.c),
 * the interval between pair searches (fixed, or chosen on the GPU as GROMACS's mdrun chooses
 * it), and the GPU's rolling prune (parts and inner radius). The rule is stated with
 * hx_md_list_setup_resolve in include/halox/md.h; here is why it is that rule.
 *
 * What a longer interval buys and costs. A search is paid once per interval; a longer interval
 * needs a longer outer radius, and with the rolling prune the pair kernel works on the inner
 * list (its radius does not depend on the interval), so what grows with the outer list is the
 * prune (a quarter of the outer list per step), the search itself, and with a decomposition the
 * halo. Measured on one H200 at 45k SPC/E atoms (docs/design/gpu-results.md, nstlist 20 to 100
 * with the prune): a plain step grows by 6.8 us per unit of the outer list's size in units of
 * the nstlist-10 list, 0.077 of the 88.6 us step; the search step of one domain costs 19 us
 * more than a plain step in `halox bench md` (106 against 87 us), and `halox md --gpu` at
 * nstlist 10 spent 118 us per search (bench/results/h200-2026-12-04g-roofab/compare/1gpu-45k:
 * 0.93 s in 7901 searches, 12 % of the run, 1790 ns/day against 2039 without the searches).
 * The list sizes compare as (r + dr)^3: a cluster-pair list covers atom pairs beyond its
 * radius r, by dr for clusters at the cut-off.
 *
 * One domain: the search runs on the GPU and costs between 0.2 and 3 plain steps, and within that
 * range the best interval of the model 1 + 0.077 (F - 1) + sigma / N moves from 10 to 40; the
 * rule that needs no such constant, GROMACS's (the largest candidate whose outer list is at most
 * 1.5x the nstlist-10 list, stopping at 1.4x), picks 25 for water at 300 K (F = 1.36), within
 * 1.5 % of the model's best over that whole range; with the 118 us measured (sigma 1.2) the model
 * puts 25 first (91.8 us per step, 20: 92.2, 40: 92.5, 100: 96.2, 10: 96.5). GROMACS itself chose
 * 25 on the same H200 for the same box (its log there: rlist 1.068 -> 1.222).
 *
 * Decomposed, search on the host (migration, plan, halo set-up, upload): 2.5-5 ms against plain
 * steps of 75-140 us, 20-60 plain steps; the model's best then lies at 125-200 for water (45k on
 * two H200s: 331 ns/day at nstlist 10, 886 at 40, 1414 at 100), where the GROMACS rule would
 * stop at 25. So the model decides there, with the low end of the search cost (sigma = 20: the
 * interval is not stretched for a search cheaper than measured) and the outer list at most 4x
 * the reference (the step's growth was measured up to 6x).
 *
 * Decomposed, search on the device (a GPU run unless HALOX_GPU_DD=0; docs/design/gpu-search.md):
 * sigma = 8, measured: at 45k on 4 ranks of one GPU (H100, MPS, nvshmem; bench/results/
 * h100-2026-12-05b-gpusearch) the search step took 1008 / 1150 us on the engine's step clock
 * against plain steps of 111 / 122 us (4x1x1 / 2x2x1): 8.0 and 8.4 plain steps more than a
 * plain step; and `halox md --gpu` there ran nstlist 100 4 % faster than the nstlist 40 that
 * sigma 3 chose (1239 against 1189 ns/day, h100-2026-12-05d-waitcost-autonstlist), as this
 * model with sigma 8 predicts (5 %). What follows is the prediction sigma 3 came from, written
 * before the step ran on a GPU; the device parts alone took 352 us, not tens (one block per
 * domain walking its atoms, four processes sharing the GPU), and the host's set-up between the
 * counts and the pair search another ~260 (docs/design/gpu-search.md, "Limits"). The search
 * step adds to a plain step the
 * migration's kernels and messages (about ten launches and one message per neighbour, 2-3 us
 * each under MPS), the counts' read-back and one small reduction (tens of us), the halo's
 * refresh without allocation, and the pair search (on one domain of 45k atoms the search step
 * costs 3 plain steps in all, 238 against 80 us, gpu_md_bench in
 * bench/results/h200-2026-12-04g-roofab): some 250-400 us against plain steps of 110-150 us at
 * 45k on 4 ranks, 1-3 plain steps more than a plain step. The run that finds the device
 * search step cannot start falls back to the host search (agreed) with the interval already
 * chosen. HALOX_SEARCH_COST_STEPS overrides either value. Since then the device search step
 * became ~3 plain steps more than a plain step (517 against 127 us at 4x1x1 on an H100,
 * bench/results/h100-2026-12-07a-searchnodes), but sigma stays 8: swept in that call, nstlist
 * 100 (this rule's choice) and 80 ran 4-5 % faster than the 40-50 that sigma 3 would pick,
 * because the list term below does not hold for a decomposed run's long lists (from 2x the
 * nstlist-10 list the prune runs in 8 parts, and the plain step did not grow from 50 to 100).
 * Re-fit both terms together, against such a sweep, before changing either. The halo grows with
 * the radius too; a
 * candidate that needs more pulses (or no grid fits) ends the candidates.
 *
 * The rolling prune: a part pruned at step t serves steps t+1 .. t+parts, so its inner radius is
 * the buffer estimate for parts + 1 steps, at a hundredth of the run's tolerance. Measured on the
 * H200 (bench/results/h200-2026-12-03e, 3000 SPC/E atoms, 25 ps NVE on one GPU, two seeds,
 * kJ/mol/ps per atom): without the prune, nstlist 10 drifts 1.3e-4 and nstlist 20 below 1e-5;
 * with 4 parts at the run's own tolerance (inner 1.026 nm) 2.9-3.4e-4, at a tenth (1.035)
 * 3.6-6.5e-5, at a hundredth (1.042) 0.5-2.3e-5. The estimate over-states the drift of long
 * lists far more than of a 5-step one (ballistic motion over 8 fs is close to the truth, over
 * 40 fs it is not), so the same tolerance would let the inner list dominate a run's drift; at a
 * hundredth it does not, and the pair kernel pays 1 us of 65 at 45k atoms for it. The engine at
 * 45k / 180k / 360k atoms: 94.4 / 289 / 557 us per step (h200-2026-12-03f) against 102.2 / 323 /
 * 608 without the prune. An outer list at least twice the nstlist-10 list (a decomposed run's
 * interval of 100 and more: 2.5x at 45k) is pruned in 8 parts: in 4, a quarter of it each step
 * is some 0.6 of an nstlist-10 list re-pruned per step beside the pair kernel. In 8 parts (inner
 * radius 1.092 nm for 1.042, a 9-step lifetime) `halox md --gpu` at 45k ran 2.7-3.4 % faster on
 * 4x1x1, 2x2x1 and 2x2x2 ranks of one H100 (bench/results/h100-2026-12-06a-nbvar); 12 parts
 * were slower than 8, 2 parts 10-13 % slower than 4, and on one GPU (nstlist 25, 1.36x) 12 parts
 * 8 % slower than 4 (h100-2026-12-06b-defaults; one GPU at nstlist 100 not measured). Not by
 * the decomposition: at nstlist 10, 8 parts' inner radius reaches the outer one and the prune is
 * dropped, as it was when every decomposed run had 8 parts (test_gpu_dd_md, nstlist 10, drifted
 * as the plain nstlist-10 list, 1.8e-4 kJ/mol/ps per atom, against the pruned one-GPU run's
 * 1.4-5.5e-5). More parts only where the inner buffer is nothing at all (GROMACS's loop, for
 * cold or slow systems). The prune is dropped where it cannot pay: an inner list less than 3 %
 * shorter (GROMACS's 0.99 of the radius), or parts that reach the next search anyway. The cpu
 * backend has no rolling prune.
 *
 * No search is triggered by displacement (LAMMPS's "check yes": rebuild once an atom has moved
 * half the buffer). The buffer here is statistical, as GROMACS's: it bounds the drift of the rare
 * pairs it misses, not the largest displacement. Measured with the CPU engine (3000 SPC/E atoms,
 * 300 K, 50 fs = 25 steps): 20-32 atoms moved more than half the nstlist-25 buffer (0.109 nm)
 * in each of four intervals, the largest 0.156-0.179 nm, so such a trigger would fire in every
 * interval and undo the interval chosen here (more so at 45k atoms). */
#include "halox/dd.h"
#include "halox/decomp.h"
#include "halox/md.h"
#include "core/error.h"
#include "mdrun/md_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the GPU backend's rolling prune when the parameters leave it to the backend (see above);
 * HALOX_GPU_PRUNE_PARTS (0: off) and HALOX_GPU_PRUNE_TOLERANCE override parts and tolerance */
#define PRUNE_PARTS_DEFAULT 4
/* and 8 where the outer list is at least twice the nstlist-10 list (see above) */
#define PRUNE_PARTS_LONG 8
#define PRUNE_LONG_FACTOR 2.0
#define PRUNE_TOLERANCE_FRACTION 0.01
/* GROMACS's: an inner list at least 3 % shorter, in radius (r + dr) 0.99 */
#define PRUNE_MIN_SHRINK 0.99

/* the automatic interval (see above and include/halox/md.h) */
static const int try_one[] = {20, 25, 40, 50, 80, 100};
static const int try_dd[] = {20, 25, 40, 50, 80, 100, 125, 150, 200, 250, 300};
#define LIST_FACTOR_OK 1.4
#define LIST_FACTOR_MAX 1.5
#define LIST_FACTOR_CAP_DD 4.0
#define STEP_LIST_SHARE 0.077
#define DD_SEARCH_STEPS 20.0
#define DD_DEVICE_SEARCH_STEPS 8.0
/* a cluster-pair list of i clusters of 8 atoms and j halves of 4 (the GPU's) covers pairs to
 * about r + dr, dr = 0.6 ((8 - 1) + (4 - 1))^(1/3) / rho^(1/3) (GROMACS's estimate) */
#define CLUSTER_I 8
#define CLUSTER_J 4
#define CLUSTER_OUTSIDE 0.6

/* The buffer estimate's inputs, once per resolution: the input with the force field applied,
 * the temperature the lists must serve. */
typedef struct list_est {
    hx_forcefield *ff;
    hx_system *s;
    hx_nb_params nbp;
    double temp, dt;
} list_est;

static double kinetic(const hx_system *s)
{
    double ke = 0.0;
    for (int a = 0; s->v && a < s->natoms; a++)
        ke += 0.5 * s->m[a] *
              (s->v[3 * a] * s->v[3 * a] + s->v[3 * a + 1] * s->v[3 * a + 1] +
               s->v[3 * a + 2] * s->v[3 * a + 2]);
    return ke;
}

static void est_close(list_est *e)
{
    hx_system_destroy(&e->s);
    hx_forcefield_destroy(&e->ff);
}

static hx_status est_open(const hx_system *sys, const hx_md_params *p, list_est *e)
{
    memset(e, 0, sizeof *e);
    hx_status st = HX_OK;
    HX_TRY_GOTO(st, hx_forcefield_create(p->model ? p->model : "spce", &e->ff), fail);
    HX_TRY_GOTO(st, hx_system_copy(sys, &e->s), fail);
    HX_TRY_GOTO(st, hx_forcefield_apply(e->ff, e->s), fail);
    /* The temperature the list must serve: the generated one, or that of the input's
     * velocities, at least the thermostat's; a cold start heats up, so room temperature. */
    double t = p->gen_vel ? p->gen_temp
                          : 2.0 * kinetic(e->s) / (hx_forcefield_ndf(e->ff, e->s) * HX_BOLTZ);
    if (p->thermostat != HX_THERMOSTAT_NONE && p->ref_t > t)
        t = p->ref_t;
    if (!(t > 0))
        t = 300.0;
    e->temp = t;
    e->dt = p->dt;
    e->nbp = (hx_nb_params){.rc = p->rc, .eps_rf = p->eps_rf, .eps_r = p->eps_r};
    return HX_OK;
fail:
    est_close(e);
    return st;
}

static hx_status est_rlist(const list_est *e, int nstlist, double tol, double *r)
{
    return hx_nb_rlist_from_tolerance(e->ff, e->s, &e->nbp, e->dt, nstlist, e->temp, tol, r);
}

hx_status hx_md_pair_list_radius(const hx_system *sys, const hx_md_params *p, double *rlist)
{
    HX_CHECK(sys && p && rlist, HX_ERR_INVALID_ARG, "hx_md_pair_list_radius: NULL argument");
    if (p->rlist > 0) {
        *rlist = p->rlist;
        return HX_OK;
    }
    list_est e;
    HX_TRY(est_open(sys, p, &e));
    hx_status st = est_rlist(&e, p->nstlist, p->verlet_buffer_tolerance, rlist);
    est_close(&e);
    return st;
}

/* How far beyond its radius a cluster-pair list reaches, at the system's atom density. */
static double cluster_reach(const hx_system *sys)
{
    const double vol = sys->box[0] * sys->box[1] * sys->box[2];
    const double rho = vol > 0 ? sys->natoms / vol : 0.0;
    return rho > 0 ? CLUSTER_OUTSIDE * cbrt(((CLUSTER_I - 1) + (CLUSTER_J - 1)) / rho) : 0.0;
}

/* Halo pulses of the decomposition with pair-list radius r (its grid, or the one chosen for
 * ndomains); -1: no grid fits. */
int hx_md_dd_pulses(const hx_system *s, double rc, double rmol, double r, int ndomains,
                    const int grid[3])
{
    int g[3] = {grid ? grid[0] : 0, grid ? grid[1] : 0, grid ? grid[2] : 0};
    if (g[0] <= 0 && hx_dd_choose_grid(s->box, r + rmol, rc, ndomains, g) != HX_OK) {
        hx_clear_error();
        return -1;
    }
    hx_dd_params dp = {{s->box[0], s->box[1], s->box[2]}, {g[0], g[1], g[2]}, r + rmol, rc};
    hx_dd *dd = NULL;
    if (hx_dd_create(&dp, &dd) != HX_OK) {
        hx_clear_error();
        return -1;
    }
    const int n = hx_dd_npulses(dd);
    hx_dd_destroy(&dd);
    return n;
}

/* sigma: a decomposed search step's cost in plain steps; *device: the search step will run on
 * the device (a GPU run with the device search allowed) */
static hx_status search_cost_steps(const hx_md_params *p, double *sigma, int *device)
{
    *device = p->backend && strcmp(p->backend, "gpu") == 0 && hx_md_device_search_allowed();
    *sigma = *device ? DD_DEVICE_SEARCH_STEPS : DD_SEARCH_STEPS;
    const char *env = getenv("HALOX_SEARCH_COST_STEPS");
    if (env && env[0]) {
        char *end = NULL;
        *sigma = strtod(env, &end);
        HX_CHECK(end && *end == '\0' && *sigma > 0 && isfinite(*sigma), HX_ERR_INVALID_ARG,
                 "HALOX_SEARCH_COST_STEPS=%s: give the cost of a decomposed pair-search step in "
                 "plain steps (> 0)",
                 env);
    }
    return HX_OK;
}

/* The automatic interval (o->nstlist_ref, o->rlist_ref set; the radius from the tolerance). */
static hx_status choose_interval(list_est *e, const hx_md_params *p, int ndomains,
                                 const int grid[3], hx_md_list_setup *o)
{
    const int dd = ndomains > 1;
    const double dr = cluster_reach(e->s), tol = p->verlet_buffer_tolerance;
    const double vref = pow(o->rlist_ref + dr, 3);
    double sigma = 0.0, rmol = 0.0, best = 0.0;
    int pulses_ref = 0, on_device = 0;
    if (dd) {
        HX_TRY(search_cost_steps(p, &sigma, &on_device));
        hx_system_make_whole(e->s); /* as the engine's decomposition sees it */
        rmol = hx_system_molecule_radius(e->s);
        pulses_ref = hx_md_dd_pulses(e->s, p->rc, rmol, o->rlist_ref, ndomains, grid);
        if (pulses_ref < 0) {
            snprintf(o->note, sizeof o->note, "kept: no domain grid fits even at nstlist %d",
                     o->nstlist_ref);
            return HX_OK;
        }
        best = 1.0 + sigma / o->nstlist_ref;
    }
    const int *cand = dd ? try_dd : try_one;
    const int ncand =
        dd ? (int)(sizeof try_dd / sizeof try_dd[0]) : (int)(sizeof try_one / sizeof try_one[0]);
    char stop[120] = "no longer candidate";
    for (int k = 0; k < ncand; k++) {
        const int n = cand[k];
        if (n <= o->nstlist_ref || (p->nstlist_divides > 0 && p->nstlist_divides % n != 0))
            continue;
        double r = 0.0;
        if (est_rlist(e, n, tol, &r) != HX_OK) {
            hx_clear_error(); /* expected: no radius below half the box */
            snprintf(stop, sizeof stop, "nstlist %d would need rlist beyond half the box", n);
            break;
        }
        if (dd) {
            const int np = hx_md_dd_pulses(e->s, p->rc, rmol, r, ndomains, grid);
            if (np < 0 || np > pulses_ref) {
                snprintf(stop, sizeof stop,
                         "nstlist %d (rlist %.3f nm) would need more halo "
                         "pulses%s",
                         n, r, np < 0 ? " than any grid allows" : "");
                break;
            }
        }
        const double f = pow(r + dr, 3) / vref;
        if (!dd) {
            if (f > LIST_FACTOR_MAX) {
                snprintf(stop, sizeof stop, "nstlist %d would make it %.2fx (at most %.1fx)", n, f,
                         LIST_FACTOR_MAX);
                break;
            }
            o->nstlist = n;
            o->rlist = r;
            o->size_factor = f;
            if (f >= LIST_FACTOR_OK) {
                snprintf(stop, sizeof stop, "the target %.1fx is reached", LIST_FACTOR_OK);
                break;
            }
            continue;
        }
        if (f > LIST_FACTOR_CAP_DD) {
            snprintf(stop, sizeof stop,
                     "nstlist %d would make the outer list %.2fx (at most %.0fx)", n, f,
                     LIST_FACTOR_CAP_DD);
            break;
        }
        const double cost = 1.0 + STEP_LIST_SHARE * (f - 1.0) + sigma / n;
        if (cost < best * (1.0 - 1e-9)) {
            best = cost;
            o->nstlist = n;
            o->rlist = r;
            o->size_factor = f;
        }
    }
    if (dd)
        snprintf(o->note, sizeof o->note,
                 "decomposed: the lowest modelled cost, %.2f plain steps per step with a search "
                 "step of %g on the %s; the outer list %.2fx the nstlist-%d list; %s",
                 best, sigma, on_device ? "device" : "host", o->size_factor, o->nstlist_ref, stop);
    else
        snprintf(o->note, sizeof o->note,
                 "one domain: the outer list %.2fx the nstlist-%d list (GROMACS's GPU rule: "
                 "target %.1fx, at most %.1fx); %s",
                 o->size_factor, o->nstlist_ref, LIST_FACTOR_OK, LIST_FACTOR_MAX, stop);
    return HX_OK;
}

/* The rolling prune (gpu backend); o->nstlist and o->rlist final. e: NULL when the run has no
 * buffer tolerance. */
static hx_status resolve_prune(const list_est *e, const hx_system *sys, const hx_md_params *p,
                               hx_md_list_setup *o)
{
    int parts = p->prune_parts;
    int chosen = parts < 0 && p->rlist_inner == 0; /* both left to the engine */
    if (parts < 0 && !(p->rlist_inner == 0 && !e)) {
        const char *env = getenv("HALOX_GPU_PRUNE_PARTS");
        parts = PRUNE_PARTS_DEFAULT;
        /* no nstlist-10 radius below half the box: this list (a shorter interval's) is shorter
         * still, not long */
        if (!(env && env[0]) && e && p->rlist_inner == 0) {
            double r10 = 0.0;
            if (est_rlist(e, 10, p->verlet_buffer_tolerance, &r10) == HX_OK) {
                const double dr = cluster_reach(sys);
                if (pow((o->rlist + dr) / (r10 + dr), 3) >= PRUNE_LONG_FACTOR)
                    parts = PRUNE_PARTS_LONG;
            } else {
                hx_clear_error();
            }
        }
        if (env && env[0]) {
            parts = atoi(env);
            chosen = 0;
            HX_CHECK(parts >= 0 && parts <= 1000, HX_ERR_INVALID_ARG,
                     "HALOX_GPU_PRUNE_PARTS=%s: use 0 (no rolling prune) to 1000", env);
        }
    }
    if (parts < 0)
        parts = 0; /* an explicit rlist alone: no inner radius to choose */
    double inner = p->rlist_inner;
    if (parts > 0 && inner == 0) {
        HX_CHECK(e, HX_ERR_INVALID_ARG,
                 "the rolling prune (%d parts) needs rlist_inner or a positive buffer tolerance",
                 parts);
        double tol = p->verlet_buffer_tolerance * PRUNE_TOLERANCE_FRACTION;
        const char *env = getenv("HALOX_GPU_PRUNE_TOLERANCE");
        if (env && env[0]) {
            tol = atof(env);
            HX_CHECK(tol > 0, HX_ERR_INVALID_ARG,
                     "HALOX_GPU_PRUNE_TOLERANCE=%s: give the inner list's buffer tolerance in "
                     "kJ/mol/ps per atom (> 0)",
                     env);
        }
        /* a part pruned at step t serves steps t+1 .. t+parts */
        HX_TRY(est_rlist(e, parts + 1, tol, &inner));
        while (chosen && inner <= p->rc && parts + 1 < o->nstlist - 1) {
            parts++;
            HX_TRY(est_rlist(e, parts + 1, tol, &inner));
        }
    }
    if (chosen && parts > 0) {
        const double dr = cluster_reach(sys);
        if (!(inner + dr < PRUNE_MIN_SHRINK * (o->rlist + dr)) || parts >= o->nstlist - 1)
            parts = 0;
    }
    o->prune_parts = parts;
    o->rlist_inner = inner;
    if (parts == 0 || o->rlist_inner > o->rlist)
        o->rlist_inner = o->rlist;
    else if (o->rlist_inner < p->rc)
        o->rlist_inner = p->rc;
    return HX_OK;
}

hx_status hx_md_list_setup_resolve(const hx_system *sys, const hx_md_params *p, int ndomains,
                                   const int grid[3], hx_md_list_setup *out)
{
    HX_CHECK(sys && p && out, HX_ERR_INVALID_ARG, "hx_md_list_setup_resolve: NULL argument");
    HX_CHECK(ndomains >= 1, HX_ERR_INVALID_ARG, "ndomains = %d: must be >= 1", ndomains);
    memset(out, 0, sizeof *out);
    const int gpu = p->backend && strcmp(p->backend, "gpu") == 0;
    const int tol = p->verlet_buffer_tolerance > 0;
    out->nstlist = out->nstlist_ref = p->nstlist;
    out->size_factor = 1.0;
    list_est e;
    const int need_est = tol && (p->rlist == 0 || gpu);
    if (need_est)
        HX_TRY(est_open(sys, p, &e));
    hx_status st = HX_OK;
    if (p->rlist > 0)
        out->rlist = p->rlist;
    else
        HX_TRY_GOTO(st, est_rlist(&e, p->nstlist, p->verlet_buffer_tolerance, &out->rlist), done);
    out->rlist_ref = out->rlist;
    if (p->nstlist_auto && gpu) {
        if (p->rlist > 0)
            snprintf(out->note, sizeof out->note,
                     "kept: rlist is given, and only a radius from the buffer tolerance can "
                     "follow a longer interval");
        else if (p->continuation)
            snprintf(out->note, sizeof out->note, "kept: a continuation keeps its interval");
        else {
            out->automatic = 1;
            HX_TRY_GOTO(st, choose_interval(&e, p, ndomains, grid, out), done);
        }
    }
    out->prune_parts = 0;
    out->rlist_inner = out->rlist;
    if (gpu)
        st = resolve_prune(need_est ? &e : NULL, sys, p, out);
done:
    if (need_est)
        est_close(&e);
    return st;
}
