/* Ethanol-water mixtures for the oplsaa force field (include/halox/io.h, hx_build_mixture).
 *
 * Density. Experiment at 20 °C: the densities of ethanol-water mixtures by mass fraction w in
 * steps of 0.1 from Perry's Chemical Engineers' Handbook (7th ed., 1997, "Densities of mixtures
 * of C2H5OH and H2O at 20°C"), interpolated as specific volume by a piecewise cubic (Catmull-Rom
 * tangents). Moved to 300 K (26.85 °C) with the excess specific volume v_E(w) = v(w) - w v_e -
 * (1 - w) v_w kept at its 20 °C value and the pure components at 300 K: water from IAPWS-95
 * (0.998207 g/cm^3 at 20 °C, 0.996513 at 300 K, applied as a ratio to the table's water),
 * ethanol with its cubic expansion coefficient 1.09e-3 /K at 20 °C (CRC Handbook of Chemistry
 * and Physics). Over 6.85 K the excess volume of ethanol-water changes by well under 1 % of
 * itself, so the correction is good to ~1e-4 g/cm^3 - finer than the models' own density
 * error, which is what one compares against (docs/design/ethanol.md).
 *
 * Placement. Molecules are inserted one by one at random positions and orientations, ethanols
 * first (torsion C-C-O-H trans or gauche at random), then waters; an insertion is refused when
 * two atoms of different molecules are closer than 0.57 times the sum of their van der Waals
 * radii (Bondi 1964: C 0.17, O 0.152, H 0.12 nm), the rule of gmx insert-molecules, which packs
 * to liquid density with contacts that a minimisation removes in a few hundred steps.
 *
 * Relaxation. Steepest descent (hx_minimize), then MD with v-rescale at 300 K (tau 0.1 ps,
 * coupled every step) at 0.5, 1 and 2 fs: the random insertion has no hydrogen-bond network,
 * and forming it releases heat that the thermostat removes; the short time steps first keep the
 * constraints solvable while that happens. Always on two threads, so that the result of a seed
 * does not depend on the machine (the non-bonded sums depend on the thread count).
 *
 * Size. Relaxing a large box costs time in proportion, so boxes of more than 12000 atoms are
 * tiles^3 copies of one relaxed tile of about 6000 atoms: the tile holds ceil(n / tiles^3) of
 * each kind, the copies are placed side by side (the tile is periodic, so copies join without
 * seams), the surplus molecules (fewer than tiles^3 of each kind) are removed at random, and the
 * molecules' centres are scaled to the box of the exact density. */
#include "halox/decomp.h"
#include "halox/halo.h"
#include "halox/build.h"
#include "halox/log.h"
#include "halox/md.h"
#include "halox/models.h"
#include "core/error.h"
#include "core/geom.h"
#include "core/rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define AMU_NM3_IN_G_CM3 1.66053906660e-3 /* 1 amu/nm^3 in g/cm^3 */
#define MIX_DIRECT_MAX 12000
#define MIX_TILE_ATOMS 6000.0
#define MIX_THREADS 2
#define MIX_MAX_TRIES 20000

/* ---- density --------------------------------------------------------------------------- */

/* Perry's 20 °C table, w = 0, 0.1, ..., 1 (g/cm^3). */
static const double rho20[11] = {0.99823, 0.98187, 0.96864, 0.95382, 0.93518, 0.91384,
                                 0.89113, 0.86766, 0.84344, 0.81797, 0.78934};

/* Specific volume at 20 °C (cm^3/g), piecewise cubic Hermite through the table. */
static double v20(double w)
{
    double v[11], m[11];
    for (int k = 0; k < 11; k++)
        v[k] = 1.0 / rho20[k];
    for (int k = 0; k < 11; k++) {
        int a = k > 0 ? k - 1 : 0, b = k < 10 ? k + 1 : 10;
        m[k] = (v[b] - v[a]) / (0.1 * (b - a)); /* dv/dw */
    }
    int k = (int)floor(w * 10.0);
    k = k < 0 ? 0 : (k > 9 ? 9 : k);
    const double t = w * 10.0 - k, h = 0.1;
    const double t2 = t * t, t3 = t2 * t;
    return (2 * t3 - 3 * t2 + 1) * v[k] + (t3 - 2 * t2 + t) * h * m[k] +
           (-2 * t3 + 3 * t2) * v[k + 1] + (t3 - t2) * h * m[k + 1];
}

double hx_ethanol_water_density(double w)
{
    w = w < 0 ? 0 : (w > 1 ? 1 : w);
    const double vw20 = 1.0 / rho20[0], ve20 = 1.0 / rho20[10];
    const double vexcess = v20(w) - w * ve20 - (1.0 - w) * vw20;
    const double vw300 = vw20 * (0.998207 / 0.996513);
    const double ve300 = ve20 * exp(1.09e-3 * (300.0 - 293.15));
    return 1.0 / (w * ve300 + (1.0 - w) * vw300 + vexcess);
}

/* ---- molecule templates ------------------------------------------------------------------ */

static double bond_length(const hx_moltype *t, int i, int j)
{
    for (int b = 0; b < t->nbonds; b++)
        if ((t->bonds[b].i == i && t->bonds[b].j == j) ||
            (t->bonds[b].i == j && t->bonds[b].j == i))
            return t->bonds[b].b0;
    for (int c = 0; c < t->nconstraints; c++)
        if ((t->constraints[c].i == i && t->constraints[c].j == j) ||
            (t->constraints[c].i == j && t->constraints[c].j == i))
            return t->constraints[c].d;
    return 0.1;
}

static double angle0(const hx_moltype *t, int i, int j, int k)
{
    for (int a = 0; a < t->nangles; a++)
        if (t->angles[a].j == j && ((t->angles[a].i == i && t->angles[a].k == k) ||
                                    (t->angles[a].i == k && t->angles[a].k == i)))
            return t->angles[a].theta0;
    return 109.47 * M_PI / 180.0;
}

/* Ethanol at its equilibrium bond lengths and angles, staggered, the hydroxyl trans (conf 0)
 * or gauche (1, 2), centred on its centre of geometry. Positions: C1 H11 H12 H13 C2 H21 H22 O
 * HO. */
static void ethanol_template(const hx_moltype *t, int conf, double x[9][3])
{
    memset(x, 0, 9 * sizeof x[0]);
    const double ref[3] = {0.0, 1.0, 0.0}, third = 2.0 * M_PI / 3.0;
    x[4][0] = bond_length(t, 0, 4);
    hx_geom_zplace(ref, x[0], x[4], bond_length(t, 4, 7), angle0(t, 0, 4, 7), 0.0, x[7]);
    const double hoh = conf == 0 ? M_PI : (conf == 1 ? M_PI / 3.0 : -M_PI / 3.0);
    hx_geom_zplace(x[0], x[4], x[7], bond_length(t, 7, 8), angle0(t, 4, 7, 8), hoh, x[8]);
    hx_geom_zplace(x[7], x[0], x[4], bond_length(t, 4, 5), angle0(t, 0, 4, 5), third, x[5]);
    hx_geom_zplace(x[7], x[0], x[4], bond_length(t, 4, 6), angle0(t, 0, 4, 6), -third, x[6]);
    for (int h = 1; h <= 3; h++)
        hx_geom_zplace(x[7], x[4], x[0], bond_length(t, 0, h), angle0(t, 4, 0, h),
                       M_PI + (h - 1) * third, x[h]);
    double c[3] = {0, 0, 0};
    for (int a = 0; a < 9; a++)
        for (int k = 0; k < 3; k++)
            c[k] += x[a][k] / 9.0;
    for (int a = 0; a < 9; a++)
        for (int k = 0; k < 3; k++)
            x[a][k] -= c[k];
}

static void random_rotation(hx_rng *r, double R[3][3])
{
    double q[4];
    for (int k = 0; k < 4; k++)
        q[k] = hx_rng_normal(r);
    hx_geom_quat_rotation(q, R);
}

/* ---- random insertion with a cell list ---------------------------------------------------- */

typedef struct ins_grid {
    double L, cw;
    int nc;
    int *head;   /* [nc^3] */
    int *next;   /* [natoms] */
    double *pos; /* [3 natoms] wrapped */
    double *rad; /* [natoms] scaled van der Waals radius */
    int n;
} ins_grid;

static int cell_of(const ins_grid *g, const double *p, int c[3])
{
    for (int d = 0; d < 3; d++) {
        int k = (int)(p[d] / g->cw);
        c[d] = k < 0 ? 0 : (k >= g->nc ? g->nc - 1 : k);
    }
    return (c[2] * g->nc + c[1]) * g->nc + c[0];
}

static double wrap1(double v, double L)
{
    v -= L * floor(v / L);
    return v >= L ? v - L : v;
}

/* 1 when atoms xm[n] with radii r[n] (wrapped into the box) clash with nothing placed. */
static int fits(const ins_grid *g, int n, const double (*xm)[3], const double *r)
{
    for (int a = 0; a < n; a++) {
        int c[3];
        cell_of(g, xm[a], c);
        for (int dz = -1; dz <= 1; dz++)
            for (int dy = -1; dy <= 1; dy++)
                for (int dx = -1; dx <= 1; dx++) {
                    int cc = (((c[2] + dz + g->nc) % g->nc) * g->nc + (c[1] + dy + g->nc) % g->nc) *
                                 g->nc +
                             (c[0] + dx + g->nc) % g->nc;
                    for (int j = g->head[cc]; j >= 0; j = g->next[j]) {
                        double d2 = 0;
                        for (int d = 0; d < 3; d++) {
                            double v = xm[a][d] - g->pos[3 * j + d];
                            v -= g->L * nearbyint(v / g->L);
                            d2 += v * v;
                        }
                        double lim = 0.57 * (r[a] + g->rad[j]);
                        if (d2 < lim * lim)
                            return 0;
                    }
                }
    }
    return 1;
}

static void add_atoms(ins_grid *g, int n, const double (*xm)[3], const double *r)
{
    for (int a = 0; a < n; a++) {
        int c[3];
        int cc = cell_of(g, xm[a], c);
        memcpy(&g->pos[3 * g->n], xm[a], 3 * sizeof(double));
        g->rad[g->n] = r[a];
        g->next[g->n] = g->head[cc];
        g->head[cc] = g->n;
        g->n++;
    }
}

/* van der Waals radius (Bondi) by element, from the mass */
static double vdw_radius(double m)
{
    return m < 2.0 ? 0.12 : (m < 13.0 ? 0.17 : 0.152);
}

/* ---- relaxation ------------------------------------------------------------------------- */

static hx_status md_stage(hx_system **sys, const char *model, double rc, double dt, double ps,
                          int gen, uint64_t seed, double *temp, double *epot)
{
    hx_md_params q;
    hx_md_params_default(&q);
    q.model = model;
    q.rc = rc;
    q.rlist = rc + 0.1;
    q.dt = dt;
    q.nstcheck = 0;
    q.gen_vel = gen;
    q.gen_temp = 300.0;
    q.seed = seed;
    q.thermostat = HX_THERMOSTAT_VRESCALE;
    q.tau_t = 0.1;
    q.ref_t = 300.0;
    q.nsttcouple = 1;
    q.nthreads = MIX_THREADS;
    hx_md *md = NULL;
    HX_TRY(hx_md_create(*sys, &q, &md));
    const long long steps = llround(ps / dt);
    hx_status st = HX_OK;
    for (long long s = 0; s < steps && st == HX_OK; s++)
        st = hx_md_step(md);
    hx_system *next = NULL;
    if (st == HX_OK)
        st = hx_md_evaluate(md);
    if (st == HX_OK) {
        *temp = hx_md_last_energies(md)->temperature;
        *epot = hx_md_last_energies(md)->potential;
        st = hx_system_copy(hx_md_system(md), &next);
    }
    hx_md_destroy(&md);
    HX_TRY(st);
    hx_system_destroy(sys);
    *sys = next;
    return HX_OK;
}

static void set_names(hx_system *s, int a, int mol, const char *res, const char *name)
{
    s->res_id[a] = (mol + 1) % 100000;
    snprintf(s->res_name[a], HX_NAME_LEN, "%s", res);
    snprintf(s->atom_name[a], HX_NAME_LEN, "%s", name);
}

/* One relaxed box of ne ethanols and nw waters (ethanols first) of edge L. */
static hx_status build_box(const hx_forcefield *ff, const hx_mixture_params *p, int ne, int nw,
                           double L, hx_system **out, hx_mixture_info *info)
{
    *out = NULL;
    const hx_moltype *mw = hx_forcefield_moltype(ff, 0), *me = hx_forcefield_moltype(ff, 1);
    const hx_water_model *wm = hx_forcefield_water(ff);
    hx_system *s = NULL;
    HX_TRY(hx_system_create(9 * ne + 3 * nw, ne + nw, &s));
    for (int d = 0; d < 3; d++)
        s->box[d] = L;
    hx_rng rng;
    hx_rng_seed(&rng, p->seed, 3);
    ins_grid g;
    memset(&g, 0, sizeof g);
    g.L = L;
    g.nc = (int)floor(L / 0.2);
    g.nc = g.nc < 3 ? 3 : (g.nc > 400 ? 400 : g.nc);
    g.cw = L / g.nc;
    hx_status st = HX_OK;
    g.head = malloc((size_t)g.nc * g.nc * g.nc * sizeof *g.head);
    g.next = malloc(((size_t)s->natoms + 1) * sizeof *g.next);
    g.pos = malloc((3 * (size_t)s->natoms + 1) * sizeof *g.pos);
    g.rad = malloc(((size_t)s->natoms + 1) * sizeof *g.rad);
    if (!g.head || !g.next || !g.pos || !g.rad)
        HX_FAIL_GOTO(st, HX_ERR_NOMEM, out, "out of memory placing %d atoms", s->natoms);
    for (size_t c = 0; c < (size_t)g.nc * g.nc * g.nc; c++)
        g.head[c] = -1;
    double tmpl[3][9][3], wt[3][3] = {{0}};
    for (int c = 0; c < 3; c++)
        ethanol_template(me, c, tmpl[c]);
    {
        /* water: O at the origin, H in the xy plane, then centred on the oxygen */
        double hc = 0.5 * wm->r_hh, h = sqrt(wm->r_oh * wm->r_oh - hc * hc);
        wt[1][0] = hc;
        wt[1][1] = h;
        wt[2][0] = -hc;
        wt[2][1] = h;
    }
    double rad_e[9], rad_w[3];
    for (int a = 0; a < 9; a++)
        rad_e[a] = vdw_radius(me->m[a]);
    for (int a = 0; a < 3; a++)
        rad_w[a] = vdw_radius(mw->m[a]);
    int at = 0;
    for (int k = 0; k < ne + nw; k++) {
        const int eth = k < ne, na = eth ? 9 : 3;
        double xm[9][3], xw[9][3];
        int tries = 0;
        for (;; tries++) {
            if (tries == MIX_MAX_TRIES)
                HX_FAIL_GOTO(st, HX_ERR_UNSUPPORTED, out,
                             "could not insert %s %d of %d in %d tries (box %.3f nm): the "
                             "mixture is too dense for random insertion",
                             eth ? "ethanol" : "water", eth ? k + 1 : k - ne + 1, eth ? ne : nw,
                             MIX_MAX_TRIES, L);
            double R[3][3], c[3];
            random_rotation(&rng, R);
            for (int d = 0; d < 3; d++)
                c[d] = hx_rng_uniform(&rng) * L;
            const double(*b)[3] =
                eth ? (const double(*)[3])tmpl[hx_rng_next(&rng) % 3] : (const double(*)[3])wt;
            for (int a = 0; a < na; a++)
                for (int d = 0; d < 3; d++) {
                    xm[a][d] = c[d] + R[d][0] * b[a][0] + R[d][1] * b[a][1] + R[d][2] * b[a][2];
                    xw[a][d] = wrap1(xm[a][d], L);
                }
            if (fits(&g, na, (const double(*)[3])xw, eth ? rad_e : rad_w))
                break;
        }
        add_atoms(&g, na, (const double(*)[3])xw, eth ? rad_e : rad_w);
        s->mol_start[k] = at;
        for (int a = 0; a < na; a++) {
            memcpy(&s->x[3 * (at + a)], xm[a], 3 * sizeof(double));
            set_names(s, at + a, k, eth ? me->name : mw->name,
                      eth ? me->atom_name[a] : mw->atom_name[a]);
        }
        at += na;
    }
    s->mol_start[ne + nw] = at;
    free(g.head), free(g.next), free(g.pos), free(g.rad);
    g.head = g.next = NULL;
    g.pos = g.rad = NULL;
    /* relaxation; a cut-off the box can hold */
    {
        const double rc = fmin(1.0, 0.45 * L - 0.1);
        hx_md_params q;
        hx_md_params_default(&q);
        q.model = hx_forcefield_model(ff);
        q.rc = rc;
        q.nthreads = MIX_THREADS;
        hx_minimize_result mr;
        HX_TRY_GOTO(st, hx_minimize(s, &q, p->min_steps, &mr), out);
        info->epot_min = mr.epot;
        hx_log(HX_LOG_INFO,
               "mixture: minimised %d atoms in %d steps (%d accepted): potential %.1f -> %.1f "
               "kJ/mol, largest force %.0f kJ/mol/nm",
               s->natoms, mr.steps, mr.accepted, mr.epot0, mr.epot, mr.fmax);
        const double dts[3] = {0.0005, 0.001, 0.002};
        int gen = 1;
        for (int k = 0; k < 3; k++) {
            if (!(p->md_ps[k] > 0))
                continue;
            HX_TRY_GOTO(st,
                        md_stage(&s, q.model, rc, dts[k], p->md_ps[k], gen, p->seed,
                                 &info->temperature, &info->epot_md),
                        out);
            gen = 0;
            hx_log(HX_LOG_INFO, "mixture: %.2f ps at %g fs: T %.1f K, potential %.1f kJ/mol",
                   p->md_ps[k], dts[k] * 1e3, info->temperature, info->epot_md);
        }
    }
    hx_wrap_molecules(s->x, s->mol_start, s->nmol, s->box);
    *out = s;
    s = NULL;
out:
    free(g.head), free(g.next), free(g.pos), free(g.rad);
    hx_system_destroy(&s);
    return st;
}

/* ---- tiling -------------------------------------------------------------------------------- */

/* k^3 copies of tile t (ethanols first), keeping ne ethanols and nw waters (random subsets),
 * molecule centres scaled to the box edge L. */
static hx_status tile_out(const hx_system *t, int nt_e, int k, int ne, int nw, double L,
                          uint64_t seed, hx_system **out)
{
    const int nt_w = t->nmol - nt_e;
    const long long copies = (long long)k * k * k;
    hx_system *s = NULL;
    HX_TRY(hx_system_create(9 * ne + 3 * nw, ne + nw, &s));
    for (int d = 0; d < 3; d++)
        s->box[d] = L;
    const double Lt = t->box[0], scale = L / (k * Lt);
    hx_rng rng;
    hx_rng_seed(&rng, seed, 4);
    int mol = 0, at = 0;
    for (int kind = 0; kind < 2; kind++) {
        const int per = kind == 0 ? nt_e : nt_w, m0 = kind == 0 ? 0 : nt_e;
        long long need = kind == 0 ? ne : nw, left = copies * per;
        for (long long c = 0; c < copies; c++) {
            const int cx = (int)(c % k), cy = (int)((c / k) % k),
                      cz = (int)(c / ((long long)k * k));
            const double off[3] = {cx * Lt, cy * Lt, cz * Lt};
            for (int m = m0; m < m0 + per; m++) {
                /* selection sampling: a uniformly random subset of exactly `need` */
                if (hx_rng_uniform(&rng) * (double)left-- >= (double)need)
                    continue;
                need--;
                const int a0 = t->mol_start[m], na = t->mol_start[m + 1] - a0;
                double cg[3];
                hx_molecule_centre(t->x, a0, a0 + na, cg);
                s->mol_start[mol] = at;
                for (int a = 0; a < na; a++) {
                    for (int d = 0; d < 3; d++) {
                        s->x[3 * (at + a) + d] =
                            (cg[d] + off[d]) * scale + (t->x[3 * (a0 + a) + d] - cg[d]);
                        s->v[3 * (at + a) + d] = t->v[3 * (a0 + a) + d];
                    }
                    set_names(s, at + a, mol, t->res_name[a0 + a], t->atom_name[a0 + a]);
                }
                at += na;
                mol++;
            }
        }
    }
    s->mol_start[mol] = at;
    if (mol != ne + nw || at != 9 * ne + 3 * nw) {
        hx_system_destroy(&s);
        HX_FAIL(HX_ERR_INTERNAL, "tiling placed %d molecules and %d atoms of %d and %d", mol, at,
                ne + nw, 9 * ne + 3 * nw);
    }
    hx_wrap_molecules(s->x, s->mol_start, s->nmol, s->box);
    s->has_velocities = t->has_velocities;
    *out = s;
    return HX_OK;
}

/* ---- the builder -------------------------------------------------------------------------- */

void hx_mixture_params_default(hx_mixture_params *p)
{
    memset(p, 0, sizeof *p);
    p->ethanol_fraction = 0.1;
    p->water = "tip3p";
    p->seed = 1;
    p->min_steps = 500;
    p->md_ps[0] = 0.1;
    p->md_ps[1] = 0.4;
    p->md_ps[2] = 2.0;
}

hx_status hx_build_mixture(const hx_mixture_params *p, hx_system **out, hx_mixture_info *info)
{
    HX_CHECK(p && out, HX_ERR_INVALID_ARG, "hx_build_mixture: NULL argument");
    *out = NULL;
    hx_mixture_info dummy;
    if (!info)
        info = &dummy;
    memset(info, 0, sizeof *info);
    const double x = p->ethanol_fraction;
    HX_CHECK(x >= 0.0 && x <= 1.0, HX_ERR_INVALID_ARG,
             "ethanol mole fraction %g: must be between 0 and 1 (e.g. 0.1)", x);
    HX_CHECK(p->natoms > 0 && p->natoms <= 0x7fffffff / 3, HX_ERR_INVALID_ARG,
             "number of atoms %d: must be positive and at most %d", p->natoms, 0x7fffffff / 3);
    HX_CHECK(p->min_steps >= 0, HX_ERR_INVALID_ARG, "minimisation steps %d", p->min_steps);
    char model[32];
    snprintf(model, sizeof model, "oplsaa-%s", p->water ? p->water : "tip3p");
    hx_forcefield *ff = NULL;
    HX_TRY(hx_forcefield_create(model, &ff));
    hx_status st = HX_OK;
    hx_system *tile = NULL;
    const double n = p->natoms / (9.0 * x + 3.0 * (1.0 - x));
    long long ne = llround(x * n);
    long long nw = llround((p->natoms - 9.0 * (double)ne) / 3.0);
    if (nw < 0)
        nw = 0;
    if (x > 0 && ne == 0)
        HX_FAIL_GOTO(st, HX_ERR_INVALID_ARG, out,
                     "%d atoms at ethanol mole fraction %g hold no ethanol: give more atoms (at "
                     "least %.0f)",
                     p->natoms, x, ceil(0.5 / x * (9.0 * x + 3.0 * (1.0 - x))));
    if (ne + nw == 0)
        HX_FAIL_GOTO(st, HX_ERR_INVALID_ARG, out, "%d atoms hold no molecule", p->natoms);
    const hx_moltype *mw = hx_forcefield_moltype(ff, 0), *me = hx_forcefield_moltype(ff, 1);
    double Mw = 0, Me = 0;
    for (int a = 0; a < 3; a++)
        Mw += mw->m[a];
    for (int a = 0; a < 9; a++)
        Me += me->m[a];
    const double mass = (double)ne * Me + (double)nw * Mw;
    const double w = (double)ne * Me / mass;
    const double rho = hx_ethanol_water_density(w);
    const double L = cbrt(mass * AMU_NM3_IN_G_CM3 / rho);
    info->n_ethanol = (int)ne;
    info->n_water = (int)nw;
    info->mole_fraction = (double)ne / (double)(ne + nw);
    info->mass_fraction = w;
    info->density_exp = rho;
    info->box = L;
    const long long natoms = 9 * ne + 3 * nw;
    int k = 1;
    if (natoms > MIX_DIRECT_MAX) {
        k = (int)llround(cbrt((double)natoms / MIX_TILE_ATOMS));
        k = k < 2 ? 2 : k;
    }
    const long long copies = (long long)k * k * k;
    const int te = (int)((ne + copies - 1) / copies), tw = (int)((nw + copies - 1) / copies);
    const double tmass = te * Me + tw * Mw;
    const double Lt = cbrt(tmass * AMU_NM3_IN_G_CM3 / hx_ethanol_water_density(te * Me / tmass));
    if (!(Lt >= 2.0)) /* a relaxation cut-off of 0.8 nm + list buffer must fit twice */
        HX_FAIL_GOTO(st, HX_ERR_INVALID_ARG, out,
                     "a mixture of %lld atoms makes a %.2f nm box; relaxing it needs at least "
                     "2.0 nm (about 800 atoms): give more atoms",
                     natoms, Lt);
    info->tiles = k;
    info->tile_atoms = 9 * te + 3 * tw;
    hx_log(HX_LOG_INFO,
           "mixture: %lld ethanol + %lld water (x = %.4f, w = %.4f), %.4f g/cm3, box %.4f nm%s", ne,
           nw, info->mole_fraction, w, rho, L, k > 1 ? ", from tiles" : "");
    HX_TRY_GOTO(st, build_box(ff, p, te, tw, Lt, &tile, info), out);
    if (k == 1) {
        *out = tile;
        tile = NULL;
    } else {
        HX_TRY_GOTO(st, tile_out(tile, te, k, (int)ne, (int)nw, L, p->seed, out), out);
    }
    info->density = mass / (L * L * L) * AMU_NM3_IN_G_CM3;
    snprintf((*out)->title, sizeof(*out)->title,
             "halox mixture ethanol x=%.4f %s %d atoms seed %llu", info->mole_fraction,
             hx_forcefield_water(ff)->name, (*out)->natoms, (unsigned long long)p->seed);
    /* with the velocities of the relaxation at 300 K (a tile's copies share its velocities),
     * so that a run from the file does not start from rest */
out:
    hx_system_destroy(&tile);
    hx_forcefield_destroy(&ff);
    return st;
}
