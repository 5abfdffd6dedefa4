/* Verlet buffer estimate (in the spirit of GROMACS's verlet-buffer-tolerance).
 *
 * Model, per list lifetime t = (nstlist - 1) dt:
 *  - Each atom moves ballistically; its displacement along one dimension is Gaussian with
 *    variance kT t^2 / m for a free atom. A site of a rigid water moves with the molecule and
 *    rotates with it: translation kT t^2 / M plus the rotation's share. Ballistic rotation gives
 *    the share kT t^2 <|w x r|^2> / (3 kT), with <|w x r|^2> = kT (y^2/Ix + x^2/Iy + (x^2+y^2)/Iz)
 *    for the site at (x, y) in the principal frame of the molecule. An atom constrained to a
 *    heavier partner (a hydrogen of ethanol) moves with the partner and turns about it at the
 *    bond length d: kT t^2 / m_partner plus the share 2 kT t^2 / (3 m) of a free rotor (two
 *    rotational degrees of freedom of m d^2, projected on one dimension). Other atoms of
 *    flexible molecules count as free atoms of their own mass.
 *  - A rotating site stays on a sphere of radius r about its centre (the molecule's centre of
 *    mass, or the partner): it never moves more than 2 r, and a randomised orientation moves it
 *    by 2 r^2 / 3 per dimension on average. Unbounded, the ballistic share is what made long
 *    lists (nstlist 40-100) so costly: 0.27 nm of displacement for a water hydrogen at 0.2 ps,
 *    whose arm is 0.096 nm. The share used is s_rot^2 = r^2 (1 - exp(-b / r^2)), b the
 *    ballistic share: equal to b for short lists, never above r^2. Against a free rigid rotor
 *    with Gaussian angular velocities (Monte Carlo over rotation vectors w t), it is above the
 *    rotor's per-dimension variance at every lifetime, by 0.4-40 % for a linear rotor and
 *    1-160 % for SPC/E water (the asymmetric top averages more), so it stays an over-estimate;
 *    in a liquid the rotation is hindered further. The translation is still ballistic and
 *    unbounded, and the partner is treated as free (it is held by the rest of its molecule):
 *    both over-estimate, which only makes the buffer safer.
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

/* The displacement model of one site: variance per dimension kT t^2 trans + the bounded
 * rotational share of kT t^2 rot on an arm of squared length arm2 (rot = 0: no rotation). */
typedef struct buf_motion {
    double trans, rot, arm2;
} buf_motion;

/* Displacement variance per dimension over the lifetime t (see the file comment). */
static double motion_var(buf_motion m, double kT_t2)
{
    double s2 = kT_t2 * m.trans;
    if (m.rot > 0.0 && m.arm2 > 0.0)
        s2 += m.arm2 * -expm1(-kT_t2 * m.rot / m.arm2);
    return s2;
}

/* A site of a rigid water: oxygen (is_o) or hydrogen. */
static buf_motion water_motion(const hx_water_model *w, int is_o)
{
    double mo = w->m_o, mh = w->m_h, M = mo + 2.0 * mh;
    double hc = 0.5 * w->r_hh, h = sqrt(w->r_oh * w->r_oh - hc * hc);
    double ra = 2.0 * mh * h / M, rb = h - ra;
    double ix = mo * ra * ra + 2.0 * mh * rb * rb; /* about x: sum m y^2 */
    double iy = 2.0 * mh * hc * hc;                /* about y: sum m x^2 */
    double iz = ix + iy;
    double x = is_o ? 0.0 : hc, y = is_o ? ra : -rb;
    double rot = y * y / ix + x * x / iy + (x * x + y * y) / iz;
    return (buf_motion){1.0 / M, rot / 3.0, x * x + y * y};
}

/* Position p of molecule type t (see the file comment). */
static buf_motion site_motion(const hx_forcefield *ff, const hx_moltype *t, int p, int atom_type)
{
    if (t->rigid_water)
        return water_motion(hx_forcefield_water(ff), atom_type == hx_forcefield_water_o_type(ff));
    double heavier = 0.0, arm = 0.0;
    for (int c = 0; c < t->nconstraints; c++) {
        const hx_constraint *cs = &t->constraints[c];
        const int o = cs->i == p ? cs->j : (cs->j == p ? cs->i : -1);
        if (o >= 0 && t->m[o] > t->m[p] && t->m[o] > heavier) {
            heavier = t->m[o];
            arm = cs->d;
        }
    }
    if (heavier > 0.0)
        return (buf_motion){1.0 / heavier, 2.0 / (3.0 * t->m[p]), arm * arm};
    return (buf_motion){1.0 / t->m[p], 0.0, 0.0};
}

#define BUF_MAX_CLASS 64

typedef struct buf_class {
    int type;
    double q, count;
    buf_motion mo;
} buf_class;

/* The system's atoms as classes of (type, charge, motion), in order of first appearance. */
static hx_status buf_classes(const hx_forcefield *ff, const hx_system *sys, buf_class *cls,
                             int *ncls_out)
{
    HX_CHECK(sys->type && sys->q && sys->mol_type, HX_ERR_INVALID_ARG,
             "apply the force field first");
    int ncls = 0;
    for (int k = 0; k < sys->nmol; k++) {
        const hx_moltype *mt = hx_forcefield_moltype(ff, sys->mol_type[k]);
        HX_CHECK(mt, HX_ERR_INVALID_ARG, "molecule %d has no molecule type", k + 1);
        for (int a = sys->mol_start[k]; a < sys->mol_start[k + 1]; a++) {
            const buf_motion mo = site_motion(ff, mt, a - sys->mol_start[k], sys->type[a]);
            int c = 0;
            while (c < ncls && !(cls[c].type == sys->type[a] && cls[c].q == sys->q[a] &&
                                 cls[c].mo.trans == mo.trans && cls[c].mo.rot == mo.rot &&
                                 cls[c].mo.arm2 == mo.arm2))
                c++;
            if (c == ncls) {
                HX_CHECK(ncls < BUF_MAX_CLASS, HX_ERR_UNSUPPORTED,
                         "more than %d kinds of atom for the buffer estimate", BUF_MAX_CLASS);
                cls[ncls++] = (buf_class){sys->type[a], sys->q[a], 0.0, mo};
            }
            cls[c].count += 1.0;
        }
    }
    *ncls_out = ncls;
    return HX_OK;
}

/* Moments of the overshoot: M_k = E[(y - b)^k; y > b] for y ~ N(0, s2), k = 1, 2, 3. */
static void overshoot_moments(double s2, double b, double m[3])
{
    const double s = sqrt(s2), a = b / s;
    const double phi = exp(-0.5 * a * a) / sqrt(2.0 * M_PI);
    const double qtail = 0.5 * erfc(a / sqrt(2.0));
    m[0] = s * (phi - a * qtail);
    m[1] = s2 * ((1.0 + a * a) * qtail - a * phi);
    m[2] = s2 * s * ((2.0 + a * a) * phi - a * (3.0 + a * a) * qtail);
}

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
    int nt = hx_forcefield_ntypes(ff);
    buf_class cls[BUF_MAX_CLASS];
    int ncls = 0;
    HX_TRY(buf_classes(ff, sys, cls, &ncls));
    double vol = sys->box[0] * sys->box[1] * sys->box[2];
    hx_rf_consts rf = hx_rf_constants(p);
    const double *c6 = hx_forcefield_c6(ff), *c12 = hx_forcefield_c12(ff);
    double kT = HX_BOLTZ * temperature;
    double half_box = 0.5 * fmin(sys->box[0], fmin(sys->box[1], sys->box[2]));
    double period = nstlist * dt;
    double var[BUF_MAX_CLASS];
    for (int c = 0; c < ncls; c++)
        var[c] = motion_var(cls[c].mo, kT * t * t);
    for (double rb = rc; rb < half_box; rb += 0.001) {
        double drift = 0.0;
        for (int ci = 0; ci < ncls; ci++)
            for (int cj = 0; cj < ncls; cj++) {
                const int ti = cls[ci].type, tj = cls[cj].type;
                double m[3];
                overshoot_moments(var[ci] + var[cj], rb - rc, m);
                double C6 = c6[ti * nt + tj], C12 = c12[ti * nt + tj];
                double qq = rf.epsfac * cls[ci].q * cls[cj].q;
                double r = rc;
                double d1 = -12.0 * C12 / pow(r, 13) + 6.0 * C6 / pow(r, 7) +
                            qq * (-1.0 / (r * r) + 2.0 * rf.k_rf * r);
                double d2 = 156.0 * C12 / pow(r, 14) - 42.0 * C6 / pow(r, 8) +
                            qq * (2.0 / (r * r * r) + 2.0 * rf.k_rf);
                double per_pair = 4.0 * M_PI * rc * rc * (cls[cj].count / vol) *
                                  (fabs(d1) * m[1] / 2.0 + fabs(d2) * m[2] / 6.0);
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

hx_status hx_nb_buffer_missed_pairs(const hx_forcefield *ff, const hx_system *sys,
                                    const hx_nb_params *p, double t, double temperature,
                                    double rlist, double *missed)
{
    HX_CHECK(ff && sys && p && missed, HX_ERR_INVALID_ARG, "NULL argument");
    HX_CHECK(t >= 0 && rlist >= p->rc, HX_ERR_INVALID_ARG,
             "missed-pair estimate needs t >= 0 (%g ps) and rlist >= rc (%g, %g nm)", t, rlist,
             p->rc);
    *missed = 0.0;
    if (t <= 0 || temperature <= 0)
        return HX_OK;
    buf_class cls[BUF_MAX_CLASS];
    int ncls = 0;
    HX_TRY(buf_classes(ff, sys, cls, &ncls));
    const double vol = sys->box[0] * sys->box[1] * sys->box[2], rc = p->rc;
    const double kT_t2 = HX_BOLTZ * temperature * t * t;
    double n = 0.0;
    for (int ci = 0; ci < ncls; ci++)
        for (int cj = 0; cj < ncls; cj++) {
            double m[3];
            overshoot_moments(motion_var(cls[ci].mo, kT_t2) + motion_var(cls[cj].mo, kT_t2),
                              rlist - rc, m);
            n += 0.5 * cls[ci].count * 4.0 * M_PI * rc * rc * (cls[cj].count / vol) * m[0];
        }
    *missed = n;
    return HX_OK;
}
