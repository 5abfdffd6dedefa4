/* Constraints of whole molecules (include/halox/md.h, hx_constr): SETTLE for rigid water
 * (src/md/settle.c), SHAKE for the constraints of flexible molecules.
 *
 * SHAKE (Ryckaert, Ciccotti, Berendsen 1977): the constraint forces act along the bonds of the
 * old (constrained) positions, G_c = g_c r_c(old). Each sweep goes through the constraints of a
 * molecule and corrects one at a time, to first order in g:
 *     s = x_i - x_j (new),  g = (d^2 - s^2) / (2 (s . r_old) (1/m_i + 1/m_j)),
 *     x_i += g r_old / m_i,  x_j -= g r_old / m_j,
 * until a sweep finds every |s| within tol (relative) of d. The corrections are mass-weighted
 * and along the old bonds, so the centre of mass and the angular momentum of the molecule are
 * kept. For ethanol the constraints form three small stars (CH3, CH2, OH) and the sweeps
 * converge geometrically; the default tolerance 1e-10 takes about ten of them and keeps the
 * constraint error far below what a 2 fs step changes anyway (see docs/design/ethanol.md).
 *
 * Why SHAKE and not LINCS: the constrained groups are tiny and independent, so an iterative
 * per-molecule solver is exact to any tolerance at negligible cost, works unchanged under
 * domain decomposition (whole molecules stay on one domain) and needs no coupling matrix; LINCS'
 * advantage, parallelism over large coupled constraint networks, does not apply here. */
#include "halox/md.h"
#include "core/error.h"
#include "md/shake.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct hx_constr {
    const hx_forcefield *ff;
    hx_settle *settle; /* the waters; NULL without */
    int nshake;        /* molecules SHAKE handles */
    int *sh_start, *sh_type, *sh_gid;
    int nthreads;
    double tol;
    long long ncons;
};

void hx_constr_destroy(hx_constr **cp)
{
    if (!cp || !*cp)
        return;
    hx_constr *c = *cp;
    hx_settle_destroy(&c->settle);
    free(c->sh_start);
    free(c->sh_type);
    free(c->sh_gid);
    free(c);
    *cp = NULL;
}

hx_status hx_constr_create(const hx_forcefield *ff, const hx_mol_list *ml, const int *atom_type,
                           hx_constr **out)
{
    HX_CHECK(ff && ml && out && (ml->nmol == 0 || (ml->start && ml->type && atom_type)),
             HX_ERR_INVALID_ARG, "hx_constr_create: NULL argument");
    *out = NULL;
    hx_constr *c = calloc(1, sizeof *c);
    HX_CHECK(c, HX_ERR_NOMEM, "out of memory");
    c->ff = ff;
    c->nthreads = 1;
    c->tol = HX_SHAKE_TOL;
    hx_status st = HX_OK;
    const int n = ml->nmol;
    int *tri = malloc(3 * ((size_t)n + 1) * sizeof *tri);
    c->sh_start = malloc(((size_t)n + 1) * sizeof *c->sh_start);
    c->sh_type = malloc(((size_t)n + 1) * sizeof *c->sh_type);
    c->sh_gid = malloc(((size_t)n + 1) * sizeof *c->sh_gid);
    if (!tri || !c->sh_start || !c->sh_type || !c->sh_gid)
        HX_FAIL_GOTO(st, HX_ERR_NOMEM, fail, "out of memory for the constraints of %d molecules",
                     n);
    int nw = 0;
    const int to = hx_forcefield_water_o_type(ff);
    for (int k = 0; k < n; k++) {
        const hx_moltype *t = hx_forcefield_moltype(ff, ml->type[k]);
        if (!t)
            HX_FAIL_GOTO(st, HX_ERR_INVALID_ARG, fail, "molecule %d has type %d of %d", k + 1,
                         ml->type[k], hx_forcefield_nmoltypes(ff));
        const int a0 = ml->start[k];
        if (t->rigid_water) {
            /* oxygen by its type, the hydrogens in their order (as hx_settle_create_local) */
            int nh = 0, no = 0;
            for (int a = a0; a < a0 + 3; a++) {
                if (atom_type[a] == to) {
                    tri[3 * nw] = a;
                    no++;
                } else if (nh < 2) {
                    tri[3 * nw + 1 + nh++] = a;
                }
            }
            if (no != 1 || nh != 2)
                HX_FAIL_GOTO(st, HX_ERR_INVALID_ARG, fail,
                             "water molecule %d (atoms %d-%d) has %d oxygens", k + 1, a0 + 1,
                             a0 + 3, no);
            nw++;
            c->ncons += 3;
        } else if (t->nconstraints > 0) {
            c->sh_start[c->nshake] = a0;
            c->sh_type[c->nshake] = ml->type[k];
            c->sh_gid[c->nshake] = ml->gid ? ml->gid[k] : k;
            c->nshake++;
            c->ncons += t->nconstraints;
        }
    }
    if (nw > 0)
        HX_TRY_GOTO(st, hx_settle_create_triples(ff, nw, tri, &c->settle), fail);
    free(tri);
    *out = c;
    return HX_OK;
fail:
    free(tri);
    hx_constr_destroy(&c);
    return st;
}

void hx_constr_set_threads(hx_constr *c, int nthreads)
{
    c->nthreads = nthreads > 0 ? nthreads : 1;
    if (c->settle)
        hx_settle_set_threads(c->settle, c->nthreads);
}

void hx_constr_set_tolerance(hx_constr *c, double tol)
{
    if (tol > 0)
        c->tol = tol;
}

long long hx_constr_count(const hx_constr *c)
{
    return c->ncons;
}

/* SHAKE one molecule at atom offset a0 (src/md/shake.h, shared with the GPU update). Returns
 * the sweeps it took, -1 when a constraint turned by 90 degrees or more (or became non-finite),
 * -2 without convergence. */
static int shake_one(const hx_moltype *t, int a0, const double *xo, double *xn, double tol)
{
    return hx_shake_molecule(t->nconstraints, t->constraints, t->m, xo + 3 * (size_t)a0,
                             xn + 3 * (size_t)a0, tol, HX_SHAKE_MAXITER);
}

hx_status hx_constr_apply(const hx_constr *c, const double *x_old, double *x_new, double *v,
                          double dt, long long step)
{
    HX_CHECK(c && x_old && x_new, HX_ERR_INVALID_ARG, "hx_constr_apply: NULL argument");
    HX_CHECK(!v || dt > 0, HX_ERR_INVALID_ARG, "hx_constr_apply: dt = %g", dt);
    if (c->settle)
        HX_TRY(hx_settle_apply(c->settle, x_old, x_new, v, dt, step));
    if (c->nshake == 0)
        return HX_OK;
    const double idt = v ? 1.0 / dt : 0.0;
    /* the failing molecule with the lowest index is reported (the message does not depend on
     * threads): key 2k for a turned or non-finite bond, 2k+1 for no convergence */
    int bad = INT_MAX;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(c->nthreads) reduction(min : bad)
#endif
    for (int k = 0; k < c->nshake; k++) {
        const hx_moltype *t = hx_forcefield_moltype(c->ff, c->sh_type[k]);
        const int a0 = c->sh_start[k];
        const int rc = shake_one(t, a0, x_old, x_new, c->tol);
        if (rc < 0) {
            const int key = 2 * k + (rc == -2);
            bad = key < bad ? key : bad;
            continue;
        }
        if (v)
            for (int a = 3 * a0; a < 3 * (a0 + t->natoms); a++)
                v[a] = (x_new[a] - x_old[a]) * idt;
    }
    if (bad != INT_MAX) {
        const int k = bad / 2;
        const hx_moltype *t = hx_forcefield_moltype(c->ff, c->sh_type[k]);
        const int a0 = c->sh_start[k];
        if (bad % 2)
            HX_FAIL(HX_ERR_PHYSICS,
                    "step %lld: SHAKE did not constrain molecule %d (%s, atoms %d-%d here) to the "
                    "relative tolerance %g in %d sweeps: the molecule is strongly distorted; use "
                    "a smaller time step or check the starting structure",
                    step, c->sh_gid[k] + 1, t->name, a0 + 1, a0 + t->natoms, c->tol,
                    HX_SHAKE_MAXITER);
        HX_FAIL(HX_ERR_PHYSICS,
                "step %lld: SHAKE cannot constrain molecule %d (%s, atoms %d-%d here): a bond to "
                "hydrogen turned by 90 degrees or more in one step, or a position became "
                "non-finite; use a smaller time step or check the starting structure",
                step, c->sh_gid[k] + 1, t->name, a0 + 1, a0 + t->natoms);
    }
    return HX_OK;
}

double hx_constr_deviation(const hx_constr *c, const double *x)
{
    double dev = c->settle ? hx_settle_deviation(c->settle, x) : 0.0;
    for (int k = 0; k < c->nshake; k++) {
        const hx_moltype *t = hx_forcefield_moltype(c->ff, c->sh_type[k]);
        const int a0 = c->sh_start[k];
        for (int q = 0; q < t->nconstraints; q++) {
            const hx_constraint *cs = &t->constraints[q];
            double r2 = 0.0;
            for (int d = 0; d < 3; d++) {
                const double s = x[3 * (a0 + cs->i) + d] - x[3 * (a0 + cs->j) + d];
                r2 += s * s;
            }
            const double rel = fabs(sqrt(r2) - cs->d) / cs->d;
            if (!(rel <= dev))
                dev = isfinite(rel) ? rel : INFINITY;
        }
    }
    return dev;
}
