/* Verlet buffer estimate (in the spirit of GROMACS's verlet-buffer-tolerance).
 *
 * Model, per list lifetime t = (nstlist - 1) dt:
 *  - Each atom moves ballistically; its displacement along one dimension is Gaussian with
 *    variance kT t^2 / m for a free atom. A site of a rigid water moves with the molecule and
 *    rotates with it: variance kT t^2 (1/M + <v_rot^2>/(3 kT)), with <|w x r|^2> = kT (y^2/Ix +
 *    x^2/Iy + (x^2+y^2)/Iz) for the site at (x, y) in the principal frame of the molecule.
 *    An atom constrained to a heavier partner (a hydrogen of ethanol) moves with the partner and
 *    turns about it: variance kT t^2 (1/m_partner + 2/(3 m)), the rotation of a free rotor
 *    (two rotational degrees of freedom of m d^2, projected on one dimension); other atoms of
 *    flexible molecules count as free atoms of their own mass. Both over-estimate (the partner
 *    is held by the rest of its molecule), which only makes the buffer safer.
 *  - Atoms are grouped into classes of equal LJ type, charge and variance; pair types below are
 *    pairs of classes.
 *  - A pair's distance change is Gaussian with the summed variance s^2 (radial projection).
 *  - Pairs start beyond rlist, uniformly at density rho_j per shell 4 pi rc^2 dr; those that end
 *    inside rc miss an interaction V(r) ~ |V'(rc)| x + |V''(rc)| x^2 / 2, x = rc - r (V(rc) = 0
 *    for shifted LJ and reaction field). Integrating over start positions and displacements gives
 *    per pair type   4 pi rc^2 rho_j [ |V'| M2 / 2 + |V''| M3 / 6 ],
 *    with M_k = E[(y - (rlist - rc))^k; y > rlist - rc] for y ~ N(0, s^2).
 *  - Half of that summed over atoms i and types j, divided by the list period nstlist dt, is the
 *    estimated drift per atom; absolute values make it an over-estimate (errors of opposite sign
 *    cancel in reality, notably for neutral water molecules).
 * The smallest rlist (0.001 nm steps) below the tolerance is chosen. */
#include "halox/md.h"
#include "core/error.h"

#include <math.h>

/* Variance factor (per kT t^2) of a site of a rigid water: oxygen (is_o) or hydrogen. */
static double water_var_factor(const hx_water_model *w, int is_o)
{
    double mo = w->m_o, mh = w->m_h, M = mo + 2.0 * mh;
    double hc = 0.5 * w->r_hh, h = sqrt(w->r_oh * w->r_oh - hc * hc);
    double ra = 2.0 * mh * h / M, rb = h - ra;
    double ix = mo * ra * ra + 2.0 * mh * rb * rb; /* about x: sum m y^2 */
    double iy = 2.0 * mh * hc * hc;                /* about y: sum m x^2 */
    double iz = ix + iy;
    double x = is_o ? 0.0 : hc, y = is_o ? ra : -rb;
    double rot = y * y / ix + x * x / iy + (x * x + y * y) / iz;
    return 1.0 / M + rot / 3.0;
}

/* Variance factor of position p of molecule type t (see the file comment). */
static double site_var_factor(const hx_forcefield *ff, const hx_moltype *t, int p, int atom_type)
{
    if (t->rigid_water)
        return water_var_factor(hx_forcefield_water(ff),
                                atom_type == hx_forcefield_water_o_type(ff));
    double heavier = 0.0;
    for (int c = 0; c < t->nconstraints; c++) {
        const hx_constraint *cs = &t->constraints[c];
        const int o = cs->i == p ? cs->j : (cs->j == p ? cs->i : -1);
        if (o >= 0 && t->m[o] > t->m[p] && t->m[o] > heavier)
            heavier = t->m[o];
    }
    if (heavier > 0.0)
        return 1.0 / heavier + 2.0 / (3.0 * t->m[p]);
    return 1.0 / t->m[p];
}

#define BUF_MAX_CLASS 64

typedef struct buf_class {
    int type;
    double q, var, count;
} buf_class;

hx_status hx_nb_rlist_from_tolerance(const hx_forcefield *ff, const hx_system *sys,
                                     const hx_nb_params *p, double dt, int nstlist,
                                     double temperature, double tolerance, double *rlist)
{
    HX_CHECK(ff && sys && p && rlist, HX_ERR_INVALID_ARG, "NULL argument");
    HX_CHECK(tolerance > 0 && dt > 0 && nstlist >= 1, HX_ERR_INVALID_ARG,
             "buffer estimate needs tolerance > 0 (%g), dt > 0 (%g), nstlist >= 1 (%d)", tolerance,
             dt, nstlist);
    HX_CHECK(sys->type && sys->q, HX_ERR_INVALID_ARG, "apply the force field first");
    const double rc = p->rc;
    double t = (nstlist - 1) * dt;
    if (t <= 0 || temperature <= 0) {
        *rlist = rc;
        return HX_OK;
    }
    HX_CHECK(sys->mol_type, HX_ERR_INVALID_ARG, "apply the force field first");
    int nt = hx_forcefield_ntypes(ff);
    /* classes of (type, charge, variance) in order of first appearance */
    buf_class cls[BUF_MAX_CLASS];
    int ncls = 0;
    for (int k = 0; k < sys->nmol; k++) {
        const hx_moltype *mt = hx_forcefield_moltype(ff, sys->mol_type[k]);
        HX_CHECK(mt, HX_ERR_INVALID_ARG, "molecule %d has no molecule type", k + 1);
        for (int a = sys->mol_start[k]; a < sys->mol_start[k + 1]; a++) {
            const double var = site_var_factor(ff, mt, a - sys->mol_start[k], sys->type[a]);
            int c = 0;
            while (c < ncls &&
                   !(cls[c].type == sys->type[a] && cls[c].q == sys->q[a] && cls[c].var == var))
                c++;
            if (c == ncls) {
                HX_CHECK(ncls < BUF_MAX_CLASS, HX_ERR_UNSUPPORTED,
                         "more than %d kinds of atom for the buffer estimate", BUF_MAX_CLASS);
                cls[ncls++] = (buf_class){sys->type[a], sys->q[a], var, 0.0};
            }
            cls[c].count += 1.0;
        }
    }
    double vol = sys->box[0] * sys->box[1] * sys->box[2];
    hx_rf_consts rf = hx_rf_constants(p);
    const double *c6 = hx_forcefield_c6(ff), *c12 = hx_forcefield_c12(ff);
    double kT = HX_BOLTZ * temperature;
    double half_box = 0.5 * fmin(sys->box[0], fmin(sys->box[1], sys->box[2]));
    double period = nstlist * dt;
    for (double rb = rc; rb < half_box; rb += 0.001) {
        double drift = 0.0;
        for (int ci = 0; ci < ncls; ci++)
            for (int cj = 0; cj < ncls; cj++) {
                const int ti = cls[ci].type, tj = cls[cj].type;
                double s2 = kT * t * t * (cls[ci].var + cls[cj].var);
                double s = sqrt(s2);
                double a = (rb - rc) / s;
                double phi = exp(-0.5 * a * a) / sqrt(2.0 * M_PI);
                double qtail = 0.5 * erfc(a / sqrt(2.0));
                double m2 = s2 * ((1.0 + a * a) * qtail - a * phi);
                double m3 = s2 * s * ((2.0 + a * a) * phi - a * (3.0 + a * a) * qtail);
                double C6 = c6[ti * nt + tj], C12 = c12[ti * nt + tj];
                double qq = rf.epsfac * cls[ci].q * cls[cj].q;
                double r = rc;
                double d1 = -12.0 * C12 / pow(r, 13) + 6.0 * C6 / pow(r, 7) +
                            qq * (-1.0 / (r * r) + 2.0 * rf.k_rf * r);
                double d2 = 156.0 * C12 / pow(r, 14) - 42.0 * C6 / pow(r, 8) +
                            qq * (2.0 / (r * r * r) + 2.0 * rf.k_rf);
                double per_pair = 4.0 * M_PI * rc * rc * (cls[cj].count / vol) *
                                  (fabs(d1) * m2 / 2.0 + fabs(d2) * m3 / 6.0);
                drift += 0.5 * cls[ci].count * per_pair;
            }
        drift /= (double)sys->natoms * period;
        if (drift <= tolerance) {
            *rlist = rb;
            return HX_OK;
        }
    }
    HX_FAIL(HX_ERR_INVALID_ARG,
            "no pair-list radius below half the box (%g nm) meets the buffer tolerance %g "
            "kJ/mol/ps: give --rlist, a larger tolerance or a smaller nstlist",
            half_box, tolerance);
}
