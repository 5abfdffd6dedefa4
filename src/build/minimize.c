/* Steepest-descent energy minimisation (include/halox/md.h, hx_minimize).
 *
 * Why here and not in the engine: minimisation is a start-up tool (the mixture builder places
 * molecules at random and must remove overlaps before MD can take 2 fs steps); it runs on one
 * domain with the same force routines as the CPU backend (hx_nb, hx_bonded_compute, hx_constr)
 * and needs none of the decomposition, the halo or the step schedule.
 *
 * The step follows GROMACS's steep: displacement h F / max|F| (the atom with the largest force
 * moves by h), constrained with the current positions as reference; accepted when the
 * potential energy drops (h *= 1.2), else undone (h *= 0.2). The forces include the components
 * along constrained bonds, which the constraint step removes; the largest force reported is
 * therefore an upper bound of what is left to minimise. */
#include "halox/build.h"
#include "halox/decomp.h"
#include "halox/md.h"
#include "core/error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct mz {
    const hx_forcefield *ff;
    hx_nb *nb;
    hx_constr *cn;
    hx_local_set set;
    hx_zone_range range;
    hx_mol_list ml;
    int *mol, *start;
    unsigned char *mpos;
    double epsfac, rlist;
    int nthreads;
} mz;

/* Potential energy and forces at x (list rebuilt on x). */
static hx_status energy_forces(mz *z, const double *x, double *f, double *epot, long long step)
{
    z->set.x = x;
    HX_TRY(hx_nb_search(z->nb, &z->set, z->rlist, 0, NULL));
    hx_nb_energies e;
    HX_TRY(hx_nb_compute(z->nb, &z->set, f, &e, step));
    hx_bonded_energies b;
    HX_TRY(hx_bonded_compute(z->ff, &z->ml, x, f, z->epsfac, z->nthreads, &b, step));
    *epot = e.lj + e.coulomb + b.bonds + b.angles + b.dihedrals + b.lj14 + b.coulomb14;
    return HX_OK;
}

static double max_force(const double *f, int n)
{
    double m2 = 0.0;
    for (int a = 0; a < n; a++) {
        double f2 = f[3 * a] * f[3 * a] + f[3 * a + 1] * f[3 * a + 1] + f[3 * a + 2] * f[3 * a + 2];
        m2 = f2 > m2 ? f2 : m2;
    }
    return sqrt(m2);
}

hx_status hx_minimize(hx_system *sys, const hx_md_params *p, int nsteps, hx_minimize_result *res)
{
    HX_CHECK(sys && p && res, HX_ERR_INVALID_ARG, "hx_minimize: NULL argument");
    HX_CHECK(nsteps >= 0, HX_ERR_INVALID_ARG, "hx_minimize: %d steps", nsteps);
    memset(res, 0, sizeof *res);
    mz z;
    memset(&z, 0, sizeof z);
    hx_forcefield *ff = NULL;
    hx_status st = HX_OK;
    const int n = sys->natoms;
    double *f = NULL, *ft = NULL, *xt = NULL;
    HX_TRY_GOTO(st, hx_forcefield_create(p->model ? p->model : "spce", &ff), out);
    HX_TRY_GOTO(st, hx_forcefield_apply(ff, sys), out);
    hx_system_make_whole(sys);
    z.ff = ff;
    z.nthreads = p->nthreads > 0 ? p->nthreads : 1;
    z.rlist = p->rc + 0.1;
    for (int d = 0; d < 3; d++)
        if (!(z.rlist < 0.5 * sys->box[d]))
            HX_FAIL_GOTO(st, HX_ERR_INVALID_ARG, out,
                         "minimisation: cut-off %g nm + 0.1 nm list buffer is not below half the "
                         "box edge %g nm: use a shorter cut-off",
                         p->rc, sys->box[d]);
    hx_nb_params nbp = {.rc = p->rc, .eps_rf = p->eps_rf, .eps_r = p->eps_r};
    z.epsfac = hx_rf_constants(&nbp).epsfac;
    HX_TRY_GOTO(st, hx_nb_create(ff, &nbp, z.nthreads, &z.nb), out);
    z.mol = malloc(((size_t)n + 1) * sizeof *z.mol);
    z.mpos = malloc((size_t)n + 1);
    z.start = malloc(((size_t)sys->nmol + 1) * sizeof *z.start);
    f = malloc((3 * (size_t)n + 1) * sizeof *f);
    ft = malloc((3 * (size_t)n + 1) * sizeof *ft);
    xt = malloc((3 * (size_t)n + 1) * sizeof *xt);
    if (!z.mol || !z.mpos || !z.start || !f || !ft || !xt)
        HX_FAIL_GOTO(st, HX_ERR_NOMEM, out, "out of memory minimising %d atoms", n);
    hx_local_set_from_system(&z.set, sys, z.mol, &z.range);
    for (int k = 0; k < sys->nmol; k++) {
        z.start[k] = sys->mol_start[k];
        for (int a = sys->mol_start[k]; a < sys->mol_start[k + 1]; a++)
            z.mpos[a] = (unsigned char)(a - sys->mol_start[k]);
    }
    z.set.excl = sys->excl;
    z.set.mol_pos = z.mpos;
    z.ml = (hx_mol_list){sys->nmol, z.start, sys->mol_type, NULL};
    HX_TRY_GOTO(st, hx_constr_create(ff, &z.ml, sys->type, &z.cn), out);
    hx_constr_set_threads(z.cn, z.nthreads);
    /* constrained start */
    memcpy(xt, sys->x, 3 * (size_t)n * sizeof *xt);
    HX_TRY_GOTO(st, hx_constr_apply(z.cn, sys->x, xt, NULL, 1.0, 0), out);
    memcpy(sys->x, xt, 3 * (size_t)n * sizeof *xt);
    double e = 0.0;
    HX_TRY_GOTO(st, energy_forces(&z, sys->x, f, &e, 0), out);
    res->epot0 = e;
    double h = 0.01;
    for (int step = 1; step <= nsteps && h >= 1e-6; step++) {
        res->steps = step;
        const double fm = max_force(f, n);
        if (!(fm > 0.0))
            break;
        const double s = h / fm;
        for (size_t k = 0; k < 3 * (size_t)n; k++)
            xt[k] = sys->x[k] + s * f[k];
        double et = 0.0;
        hx_status cs = hx_constr_apply(z.cn, sys->x, xt, NULL, 1.0, step);
        if (cs == HX_OK)
            cs = energy_forces(&z, xt, ft, &et, step);
        if (cs == HX_OK && et < e) {
            double *tmp = f;
            f = ft;
            ft = tmp;
            memcpy(sys->x, xt, 3 * (size_t)n * sizeof *xt);
            e = et;
            h *= 1.2;
            res->accepted++;
        } else {
            /* an overshoot (higher energy, a constraint that cannot follow, a non-finite
             * force): undo and take a shorter step */
            hx_clear_error();
            h *= 0.2;
        }
    }
    /* the forces of the accepted positions (the list may stem from a rejected trial) */
    HX_TRY_GOTO(st, energy_forces(&z, sys->x, f, &e, nsteps), out);
    res->epot = e;
    res->fmax = max_force(f, n);
out:
    hx_constr_destroy(&z.cn);
    hx_nb_destroy(&z.nb);
    free(z.mol);
    free(z.mpos);
    free(z.start);
    free(f);
    free(ft);
    free(xt);
    hx_forcefield_destroy(&ff);
    return st;
}
