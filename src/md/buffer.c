/* Verlet buffer estimate (in the spirit of GROMACS's verlet-buffer-tolerance).
 *
 * Model, per list lifetime t = (nstlist - 1) dt:
 *  - Each atom moves ballistically; its displacement along one dimension is Gaussian with
 *    variance kT t^2 / m for a free atom. A site of a rigid water moves with the molecule and
 *    rotates with it: variance kT t^2 (1/M + <v_rot^2>/(3 kT)), with <|w x r|^2> = kT (y^2/Ix +
 *    x^2/Iy + (x^2+y^2)/Iz) for the site at (x, y) in the principal frame of the molecule.
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

static double site_var_factor(const hx_forcefield *ff, int type)
{
    const hx_water_model *w = hx_forcefield_water(ff);
    if (!w)
        return 1.0 / hx_argon_model()->mass;
    double mo = w->m_o, mh = w->m_h, M = mo + 2.0 * mh;
    double hc = 0.5 * w->r_hh, h = sqrt(w->r_oh * w->r_oh - hc * hc);
    double ra = 2.0 * mh * h / M, rb = h - ra;
    double ix = mo * ra * ra + 2.0 * mh * rb * rb; /* about x: sum m y^2 */
    double iy = 2.0 * mh * hc * hc;                /* about y: sum m x^2 */
    double iz = ix + iy;
    double x = type == 0 ? 0.0 : hc, y = type == 0 ? ra : -rb;
    double rot = y * y / ix + x * x / iy + (x * x + y * y) / iz;
    return 1.0 / M + rot / 3.0;
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
    double count[4] = {0}, qt[4] = {0};
    for (int a = 0; a < sys->natoms; a++) {
        count[sys->type[a]] += 1.0;
        qt[sys->type[a]] = sys->q[a];
    }
    double vol = sys->box[0] * sys->box[1] * sys->box[2];
    hx_rf_consts rf = hx_rf_constants(p);
    const double *c6 = hx_forcefield_c6(ff), *c12 = hx_forcefield_c12(ff);
    double kT = HX_BOLTZ * temperature;
    double half_box = 0.5 * fmin(sys->box[0], fmin(sys->box[1], sys->box[2]));
    double period = nstlist * dt;
    for (double rb = rc; rb < half_box; rb += 0.001) {
        double drift = 0.0;
        for (int ti = 0; ti < nt; ti++)
            for (int tj = 0; tj < nt; tj++) {
                if (count[ti] == 0 || count[tj] == 0)
                    continue;
                double s2 = kT * t * t * (site_var_factor(ff, ti) + site_var_factor(ff, tj));
                double s = sqrt(s2);
                double a = (rb - rc) / s;
                double phi = exp(-0.5 * a * a) / sqrt(2.0 * M_PI);
                double qtail = 0.5 * erfc(a / sqrt(2.0));
                double m2 = s2 * ((1.0 + a * a) * qtail - a * phi);
                double m3 = s2 * s * ((2.0 + a * a) * phi - a * (3.0 + a * a) * qtail);
                double C6 = c6[ti * nt + tj], C12 = c12[ti * nt + tj];
                double qq = rf.epsfac * qt[ti] * qt[tj];
                double r = rc;
                double d1 = -12.0 * C12 / pow(r, 13) + 6.0 * C6 / pow(r, 7) +
                            qq * (-1.0 / (r * r) + 2.0 * rf.k_rf * r);
                double d2 = 156.0 * C12 / pow(r, 14) - 42.0 * C6 / pow(r, 8) +
                            qq * (2.0 / (r * r * r) + 2.0 * rf.k_rf);
                double per_pair = 4.0 * M_PI * rc * rc * (count[tj] / vol) *
                                  (fabs(d1) * m2 / 2.0 + fabs(d2) * m3 / 6.0);
                drift += 0.5 * count[ti] * per_pair;
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
