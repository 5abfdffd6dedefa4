#include "test_ethanol_common.h"
#include "core/geom.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the reference model, transcribed here from the publications ------------------------
 * OPLS-AA (Jorgensen, Maxwell, Tirado-Rives, J. Am. Chem. Soc. 118, 11225 (1996); bonds and
 * angles as OPLS-AA took them from AMBER, Cornell et al. 1995): E_bond = K (r - r0)^2,
 * E_angle = K (theta - theta0)^2, E_torsion = V1/2 (1 + cos phi) + V2/2 (1 - cos 2phi) +
 * V3/2 (1 + cos 3phi), LJ 4 eps ((s/r)^12 - (s/r)^6) with geometric sigma and epsilon, 1-4 pairs
 * at half strength, pairs up to three bonds apart excluded. */

static const char *const eth_names[TET_NATOMS] = {"C1",  "H11", "H12", "H13", "C2",
                                                  "H21", "H22", "O",   "HO"};
/* bonded type, charge, sigma (A), epsilon (kcal/mol) per atom */
static const char *const eth_btype[TET_NATOMS] = {"CT", "HC", "HC", "HC", "CT",
                                                  "HC", "HC", "OH", "HO"};
static const double eth_q[TET_NATOMS] = {-0.18, 0.06, 0.06, 0.06, 0.145, 0.06, 0.06, -0.683, 0.418};
static const double eth_sig[TET_NATOMS] = {3.5, 2.5, 2.5, 2.5, 3.5, 2.5, 2.5, 3.12, 0.0};
static const double eth_eps[TET_NATOMS] = {0.066, 0.03, 0.03, 0.03, 0.066, 0.03, 0.03, 0.17, 0.0};
static const int eth_bonds[8][2] = {{0, 1}, {0, 2}, {0, 3}, {0, 4}, {4, 5}, {4, 6}, {4, 7}, {7, 8}};

typedef struct {
    const char *a, *b;
    double K, r0;
} p_bond;
typedef struct {
    const char *a, *b, *c;
    double K, th0;
} p_angle;
typedef struct {
    const char *a, *b, *c, *d;
    double V1, V2, V3;
} p_tors;
static const p_bond pb[] = {
    {"CT", "CT", 268.0, 1.529},
    {"CT", "HC", 340.0, 1.09},
    {"CT", "OH", 320.0, 1.41},
    {"OH", "HO", 553.0, 0.945},
};
static const p_angle pa[] = {
    {"HC", "CT", "HC", 33.0, 107.8}, {"HC", "CT", "CT", 37.5, 110.7},
    {"CT", "CT", "OH", 50.0, 109.5}, {"HC", "CT", "OH", 35.0, 109.5},
    {"CT", "OH", "HO", 55.0, 108.5},
};
static const p_tors pt[] = {
    {"HC", "CT", "CT", "HC", 0.0, 0.0, 0.3},
    {"HC", "CT", "CT", "OH", 0.0, 0.0, 0.468},
    {"CT", "CT", "OH", "HO", -0.356, -0.174, 0.492},
    {"HC", "CT", "OH", "HO", 0.0, 0.0, 0.45},
};

#define KCAL 4.184
#define FELEC 138.935458 /* kJ mol^-1 nm e^-2, GROMACS's ONE_4PI_EPS0 */

static int eq2(const char *x, const char *y, const char *a, const char *b)
{
    return (!strcmp(x, a) && !strcmp(y, b)) || (!strcmp(x, b) && !strcmp(y, a));
}

/* graph distances of the ethanol bond list, breadth-first */
static void eth_dist(int d[TET_NATOMS][TET_NATOMS])
{
    for (int s = 0; s < TET_NATOMS; s++) {
        for (int j = 0; j < TET_NATOMS; j++)
            d[s][j] = -1;
        int queue[TET_NATOMS], head = 0, tail = 0;
        d[s][s] = 0;
        queue[tail++] = s;
        while (head < tail) {
            int u = queue[head++];
            for (int b = 0; b < 8; b++) {
                int v = eth_bonds[b][0] == u   ? eth_bonds[b][1]
                        : eth_bonds[b][1] == u ? eth_bonds[b][0]
                                               : -1;
                if (v >= 0 && d[s][v] < 0) {
                    d[s][v] = d[s][u] + 1;
                    queue[tail++] = v;
                }
            }
        }
    }
}

static int bonded(int i, int j)
{
    for (int b = 0; b < 8; b++)
        if ((eth_bonds[b][0] == i && eth_bonds[b][1] == j) ||
            (eth_bonds[b][0] == j && eth_bonds[b][1] == i))
            return 1;
    return 0;
}

/* ---- dual numbers: value and derivative along one coordinate ---------------------------- */

typedef struct {
    double v, d;
} dual;

static dual dc(double v)
{
    return (dual){v, 0.0};
}
static dual dadd(dual a, dual b)
{
    return (dual){a.v + b.v, a.d + b.d};
}
static dual dsub(dual a, dual b)
{
    return (dual){a.v - b.v, a.d - b.d};
}
static dual dmul(dual a, dual b)
{
    return (dual){a.v * b.v, a.d * b.v + a.v * b.d};
}
static dual ddiv(dual a, dual b)
{
    return (dual){a.v / b.v, (a.d * b.v - a.v * b.d) / (b.v * b.v)};
}
static dual dsqrt_(dual a)
{
    double s = sqrt(a.v);
    return (dual){s, 0.5 * a.d / s};
}
static dual dacos_(dual a)
{
    return (dual){acos(a.v), -a.d / sqrt(1.0 - a.v * a.v)};
}
static dual dscale(double s, dual a)
{
    return (dual){s * a.v, s * a.d};
}

typedef struct {
    dual c[3];
} dvec;

static dvec vsub(dvec a, dvec b)
{
    dvec r;
    for (int k = 0; k < 3; k++)
        r.c[k] = dsub(a.c[k], b.c[k]);
    return r;
}
static dual vdot(dvec a, dvec b)
{
    return dadd(dadd(dmul(a.c[0], b.c[0]), dmul(a.c[1], b.c[1])), dmul(a.c[2], b.c[2]));
}
static dvec vcross(dvec a, dvec b)
{
    dvec r;
    r.c[0] = dsub(dmul(a.c[1], b.c[2]), dmul(a.c[2], b.c[1]));
    r.c[1] = dsub(dmul(a.c[2], b.c[0]), dmul(a.c[0], b.c[2]));
    r.c[2] = dsub(dmul(a.c[0], b.c[1]), dmul(a.c[1], b.c[0]));
    return r;
}

/* The five bonded terms of one ethanol (kJ/mol) with derivatives along the seeded coordinate. */
static void eth_bonded_dual(const dvec *X, int hcons, double eps_r, dual e[5])
{
    for (int k = 0; k < 5; k++)
        e[k] = dc(0.0);
    /* bonds, in Angstrom and kcal/mol */
    for (int b = 0; b < 8; b++) {
        int i = eth_bonds[b][0], j = eth_bonds[b][1];
        if (hcons && (eth_btype[i][0] == 'H' || eth_btype[j][0] == 'H'))
            continue;
        const p_bond *p = NULL;
        for (size_t q = 0; q < sizeof pb / sizeof pb[0]; q++)
            if (eq2(eth_btype[i], eth_btype[j], pb[q].a, pb[q].b))
                p = &pb[q];
        dvec d = vsub(X[i], X[j]);
        dual r = dscale(10.0, dsqrt_(vdot(d, d)));
        dual dr = dsub(r, dc(p->r0));
        e[0] = dadd(e[0], dscale(p->K * KCAL, dmul(dr, dr)));
    }
    /* angles */
    for (int j = 0; j < TET_NATOMS; j++)
        for (int i = 0; i < TET_NATOMS; i++)
            for (int k = i + 1; k < TET_NATOMS; k++) {
                if (!bonded(i, j) || !bonded(j, k))
                    continue;
                const p_angle *p = NULL;
                for (size_t q = 0; q < sizeof pa / sizeof pa[0]; q++)
                    if (!strcmp(eth_btype[j], pa[q].b) &&
                        eq2(eth_btype[i], eth_btype[k], pa[q].a, pa[q].c))
                        p = &pa[q];
                dvec u = vsub(X[i], X[j]), w = vsub(X[k], X[j]);
                dual c = ddiv(vdot(u, w), dsqrt_(dmul(vdot(u, u), vdot(w, w))));
                dual th = dsub(dacos_(c), dc(p->th0 * M_PI / 180.0));
                e[1] = dadd(e[1], dscale(p->K * KCAL, dmul(th, th)));
            }
    /* torsions i-j-k-l about every bond j-k: cos(phi) from the IUPAC normals */
    for (int b = 0; b < 8; b++)
        for (int o = 0; o < 2; o++) {
            int j = eth_bonds[b][o], k = eth_bonds[b][1 - o];
            if (o == 1)
                continue; /* each central bond once: i on j's side, l on k's side */
            for (int i = 0; i < TET_NATOMS; i++)
                for (int l = 0; l < TET_NATOMS; l++) {
                    if (i == k || l == j || i == l || !bonded(i, j) || !bonded(k, l))
                        continue;
                    const p_tors *p = NULL;
                    for (size_t q = 0; q < sizeof pt / sizeof pt[0]; q++) {
                        const p_tors *t = &pt[q];
                        if ((!strcmp(eth_btype[i], t->a) && !strcmp(eth_btype[j], t->b) &&
                             !strcmp(eth_btype[k], t->c) && !strcmp(eth_btype[l], t->d)) ||
                            (!strcmp(eth_btype[l], t->a) && !strcmp(eth_btype[k], t->b) &&
                             !strcmp(eth_btype[j], t->c) && !strcmp(eth_btype[i], t->d)))
                            p = t;
                    }
                    dvec b1 = vsub(X[j], X[i]), b2 = vsub(X[k], X[j]), b3 = vsub(X[l], X[k]);
                    dvec m = vcross(b1, b2), n = vcross(b2, b3);
                    dual c = ddiv(vdot(m, n), dsqrt_(dmul(vdot(m, m), vdot(n, n))));
                    dual c2 = dsub(dscale(2.0, dmul(c, c)), dc(1.0));
                    dual c3 = dsub(dscale(4.0, dmul(c, dmul(c, c))), dscale(3.0, c));
                    dual v = dadd(dadd(dscale(0.5 * p->V1, dadd(dc(1.0), c)),
                                       dscale(0.5 * p->V2, dsub(dc(1.0), c2))),
                                  dscale(0.5 * p->V3, dadd(dc(1.0), c3)));
                    e[2] = dadd(e[2], dscale(KCAL, v));
                }
        }
    /* 1-4 pairs: three bonds apart, half LJ (kJ/mol, nm) and half plain Coulomb */
    int d[TET_NATOMS][TET_NATOMS];
    eth_dist(d);
    for (int i = 0; i < TET_NATOMS; i++)
        for (int j = i + 1; j < TET_NATOMS; j++) {
            if (d[i][j] != 3)
                continue;
            dvec u = vsub(X[i], X[j]);
            dual r = dsqrt_(vdot(u, u));
            double s = 0.1 * sqrt(eth_sig[i] * eth_sig[j]),
                   ep = KCAL * sqrt(eth_eps[i] * eth_eps[j]);
            dual sr = ddiv(dc(s), r);
            dual sr6 = dmul(dmul(sr, sr), dmul(dmul(sr, sr), dmul(sr, sr)));
            e[3] = dadd(e[3], dscale(0.5 * 4.0 * ep, dsub(dmul(sr6, sr6), sr6)));
            e[4] = dadd(e[4], ddiv(dc(0.5 * FELEC / eps_r * eth_q[i] * eth_q[j]), r));
        }
}

void tet_ethanol_bonded(const double *x, int h_constrained, double eps_r, tet_ref *r, double *f)
{
    dvec X[TET_NATOMS];
    for (int a = 0; a < TET_NATOMS; a++)
        for (int k = 0; k < 3; k++)
            X[a].c[k] = dc(x[3 * a + k]);
    dual e[5];
    eth_bonded_dual(X, h_constrained, eps_r, e);
    r->bonds += e[0].v;
    r->angles += e[1].v;
    r->dihedrals += e[2].v;
    r->lj14 += e[3].v;
    r->coulomb14 += e[4].v;
    for (int a = 0; a < TET_NATOMS; a++)
        for (int k = 0; k < 3; k++) {
            X[a].c[k].d = 1.0;
            eth_bonded_dual(X, h_constrained, eps_r, e);
            X[a].c[k].d = 0.0;
            f[3 * a + k] -= e[0].d + e[1].d + e[2].d + e[3].d + e[4].d;
        }
}

/* ---- geometry ------------------------------------------------------------------------ */

static void random_rotation(t_rng *r, double R[3][3])
{
    double q[4];
    for (int k = 0; k < 4; k++)
        q[k] = t_rng_normal(r);
    hx_geom_quat_rotation(q, R);
}

void tet_ethanol_coords(t_rng *r, const double c[3], double jitter, double x[3 * TET_NATOMS])
{
    const double D = M_PI / 180.0;
    double p[TET_NATOMS][3] = {{0}};
    const double ref[3] = {0.0, 1.0, 0.0};
    p[4][0] = 0.1529;                                             /* C2 on x */
    hx_geom_zplace(ref, p[0], p[4], 0.141, 109.5 * D, 0.0, p[7]); /* O */
    hx_geom_zplace(p[0], p[4], p[7], 0.0945, 108.5 * D, M_PI, p[8]);
    hx_geom_zplace(p[7], p[0], p[4], 0.109, 110.7 * D, 120.0 * D, p[5]);
    hx_geom_zplace(p[7], p[0], p[4], 0.109, 110.7 * D, -120.0 * D, p[6]);
    hx_geom_zplace(p[7], p[4], p[0], 0.109, 110.7 * D, M_PI, p[1]);
    hx_geom_zplace(p[7], p[4], p[0], 0.109, 110.7 * D, M_PI / 3.0, p[2]);
    hx_geom_zplace(p[7], p[4], p[0], 0.109, 110.7 * D, -M_PI / 3.0, p[3]);
    double cg[3] = {0, 0, 0};
    for (int a = 0; a < TET_NATOMS; a++)
        for (int k = 0; k < 3; k++)
            cg[k] += p[a][k] / TET_NATOMS;
    double R[3][3];
    random_rotation(r, R);
    for (int a = 0; a < TET_NATOMS; a++)
        for (int k = 0; k < 3; k++) {
            double v = 0;
            for (int l = 0; l < 3; l++)
                v += R[k][l] * (p[a][l] - cg[l]);
            x[3 * a + k] = c[k] + v + jitter * (2.0 * t_rng_uniform(r) - 1.0);
        }
}

static void set_names(hx_system *s, int a, int res, const char *rn, const char *an)
{
    s->res_id[a] = res % 100000;
    snprintf(s->res_name[a], HX_NAME_LEN, "%s", rn);
    snprintf(s->atom_name[a], HX_NAME_LEN, "%s", an);
}

hx_system *tet_mixture_lattice(const char *water_model, int nside, double a, double frac_eth,
                               double jitter, uint64_t seed)
{
    const hx_water_model *w = NULL;
    if (hx_water_model_find(water_model, &w) != HX_OK)
        return NULL;
    t_rng r;
    t_rng_seed(&r, seed);
    const int nsite = nside * nside * nside;
    int *is_eth = malloc(sizeof(int) * (size_t)nsite);
    int natoms = 0;
    for (int k = 0; k < nsite; k++) {
        is_eth[k] = t_rng_uniform(&r) < frac_eth;
        natoms += is_eth[k] ? TET_NATOMS : 3;
    }
    hx_system *s = NULL;
    if (hx_system_create(natoms, nsite, &s) != HX_OK) {
        free(is_eth);
        return NULL;
    }
    for (int d = 0; d < 3; d++)
        s->box[d] = a * nside;
    snprintf(s->title, sizeof s->title, "test ethanol-water lattice");
    double hc = 0.5 * w->r_hh, h = sqrt(w->r_oh * w->r_oh - hc * hc);
    int at = 0, k = 0;
    for (int ix = 0; ix < nside; ix++)
        for (int iy = 0; iy < nside; iy++)
            for (int iz = 0; iz < nside; iz++, k++) {
                double c[3] = {(ix + 0.5) * a, (iy + 0.5) * a, (iz + 0.5) * a};
                s->mol_start[k] = at;
                if (is_eth[k]) {
                    tet_ethanol_coords(&r, c, jitter, &s->x[3 * at]);
                    for (int p = 0; p < TET_NATOMS; p++)
                        set_names(s, at + p, k + 1, "ETH", eth_names[p]);
                    at += TET_NATOMS;
                } else {
                    double R[3][3];
                    random_rotation(&r, R);
                    double body[3][3] = {{0, 0, 0}, {hc, h, 0}, {-hc, h, 0}};
                    for (int p = 0; p < 3; p++)
                        for (int d = 0; d < 3; d++) {
                            double v = 0;
                            for (int l = 0; l < 3; l++)
                                v += R[d][l] * body[p][l];
                            s->x[3 * (at + p) + d] =
                                c[d] + v + (p == 0 ? jitter * (2.0 * t_rng_uniform(&r) - 1.0) : 0);
                        }
                    /* the hydrogens follow the jittered oxygen rigidly */
                    set_names(s, at, k + 1, "SOL", "OW");
                    set_names(s, at + 1, k + 1, "SOL", "HW1");
                    set_names(s, at + 2, k + 1, "SOL", "HW2");
                    at += 3;
                }
            }
    s->mol_start[nsite] = at;
    free(is_eth);
    return s;
}

/* ---- the whole system -------------------------------------------------------------------- */

typedef struct atom_par {
    double q, sig, eps; /* e, nm, kJ/mol */
    int mol, pos, eth;
} atom_par;

void tet_reference(const hx_system *s, const char *water_model, double rc, double eps_rf,
                   double eps_r, tet_ref *r)
{
    memset(r, 0, sizeof *r);
    const hx_water_model *w = NULL;
    hx_water_model_find(water_model, &w);
    const int n = s->natoms;
    atom_par *ap = calloc((size_t)n, sizeof *ap);
    r->f = calloc(3 * (size_t)n, sizeof *r->f);
    int d[TET_NATOMS][TET_NATOMS];
    eth_dist(d);
    for (int k = 0; k < s->nmol; k++) {
        int a0 = s->mol_start[k], na = s->mol_start[k + 1] - a0;
        int eth = na == TET_NATOMS;
        for (int p = 0; p < na; p++) {
            atom_par *q = &ap[a0 + p];
            q->mol = k;
            q->pos = p;
            q->eth = eth;
            if (eth) {
                q->q = eth_q[p];
                q->sig = 0.1 * eth_sig[p];
                q->eps = KCAL * eth_eps[p];
            } else {
                int is_o = s->atom_name[a0 + p][0] == 'O';
                q->q = is_o ? w->q_o : w->q_h;
                q->sig = is_o ? w->sigma_o : 0.0;
                q->eps = is_o ? w->epsilon_o : 0.0;
            }
        }
        if (eth) {
            double fm[3 * TET_NATOMS] = {0};
            tet_ethanol_bonded(&s->x[3 * a0], 1, eps_r, r, fm);
            for (int c = 0; c < 3 * TET_NATOMS; c++)
                r->f[3 * a0 + c] += fm[c];
        }
    }
    const double fel = FELEC / eps_r;
    const double krf = eps_rf == 0 ? 1.0 / (2 * rc * rc * rc)
                                   : (eps_rf - eps_r) / ((2 * eps_rf + eps_r) * rc * rc * rc);
    const double crf = 1.0 / rc + krf * rc * rc;
    double elj = 0, ec = 0;
    for (int i = 0; i < n; i++) {
        ec -= 0.5 * fel * ap[i].q * ap[i].q * crf;
        for (int j = i + 1; j < n; j++) {
            double dx[3], r2 = 0;
            for (int k = 0; k < 3; k++) {
                dx[k] = s->x[3 * i + k] - s->x[3 * j + k];
                dx[k] -= s->box[k] * round(dx[k] / s->box[k]);
                r2 += dx[k] * dx[k];
            }
            if (r2 >= rc * rc)
                continue;
            int excluded = 0;
            if (ap[i].mol == ap[j].mol)
                excluded = !ap[i].eth || d[ap[i].pos][ap[j].pos] <= 3;
            const double qq = fel * ap[i].q * ap[j].q;
            /* V(r) with its derivative by a dual number in r */
            dual rr = {sqrt(r2), 1.0};
            dual v = dscale(qq, dsub(dscale(krf, dmul(rr, rr)), dc(crf)));
            dual vlj = dc(0.0);
            if (!excluded) {
                v = dadd(v, ddiv(dc(qq), rr));
                double sg = sqrt(ap[i].sig * ap[j].sig), ep = sqrt(ap[i].eps * ap[j].eps);
                double s6 = sg * sg * sg;
                s6 *= s6;
                double c6 = 4 * ep * s6, c12 = 4 * ep * s6 * s6;
                dual r6 = dmul(dmul(rr, rr), dmul(dmul(rr, rr), dmul(rr, rr)));
                dual ir6 = ddiv(dc(1.0), r6);
                double rc6 = 1.0 / (rc * rc * rc * rc * rc * rc);
                vlj = dsub(dscale(c12, dsub(dmul(ir6, ir6), dc(rc6 * rc6))),
                           dscale(c6, dsub(ir6, dc(rc6))));
            }
            elj += vlj.v;
            ec += v.v;
            const double dvdr = v.d + vlj.d;
            for (int k = 0; k < 3; k++) {
                double fk = -dvdr * dx[k] / rr.v;
                r->f[3 * i + k] += fk;
                r->f[3 * j + k] -= fk;
            }
        }
    }
    r->lj = elj;
    r->coulomb = ec;
    free(ap);
}

void tet_ref_free(tet_ref *r)
{
    free(r->f);
    r->f = NULL;
}
