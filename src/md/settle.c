/* SETTLE: analytical constraint solution for rigid three-site water (Miyamoto & Kollman 1992).
 *
 * Derivation used here (worked out for this file):
 *  - The constraint displacements are forces along the *old* bonds, so they lie in the plane of
 *    the old molecule and conserve the centre of mass. In a frame with Z normal to the old plane
 *    the z coordinates of the unconstrained new positions relative to the COM are therefore kept.
 *  - X is chosen perpendicular to the new oxygen's COM vector a1 (X = a1 x Z), so a1 has no x
 *    component. The canonical triangle (O at (0, ra), H at (-+hc, -rb), COM at the origin) is
 *    rotated by psi about Y, then phi about X, then theta about Z. Z rotations keep z, so
 *      sin(phi) = z_a1 / ra,  sin(psi) = (z_b1 - z_c1) / (2 hc cos(phi)).
 *  - theta follows from zero torque of the constraint forces about the old positions:
 *      sum_k m_k (r0_k x d_k)_z = 0 with d_k = new - unconstrained,
 *    which, with r0 taken relative to the old oxygen, reads alpha sin(theta) + beta cos(theta)
 *    = gamma (alpha, beta from the old and the rotated canonical positions, gamma from the old
 *    and the unconstrained positions). The root near theta = 0 is taken.
 * A configuration for which one of these has no real solution (|sin| > 1, alpha^2 + beta^2 <
 * gamma^2) cannot be constrained: HX_ERR_PHYSICS. */
#include "halox/md.h"
#include "core/error.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct hx_settle {
    int nw;
    int nthreads;
    int *idx; /* [3*nw] O, H, H */
    double m_o, m_h;
    double d_oh, d_hh;
    double ra, rb, hc; /* canonical triangle: COM to O, COM to HH midpoint, half H-H */
};

hx_status hx_settle_create(const hx_forcefield *ff, const hx_system *sys, hx_settle **out)
{
    HX_CHECK(ff && sys && out, HX_ERR_INVALID_ARG, "hx_settle_create: NULL argument");
    HX_CHECK(sys->type, HX_ERR_INVALID_ARG, "SETTLE: apply the force field to the system first");
    return hx_settle_create_local(ff, sys->nmol, sys->mol_start, sys->type, out);
}

static void settle_geometry(hx_settle *s, const hx_water_model *w)
{
    s->nthreads = 1;
    s->m_o = w->m_o;
    s->m_h = w->m_h;
    s->d_oh = w->r_oh;
    s->d_hh = w->r_hh;
    s->hc = 0.5 * w->r_hh;
    double h = sqrt(w->r_oh * w->r_oh - s->hc * s->hc);
    s->ra = 2.0 * w->m_h * h / (w->m_o + 2.0 * w->m_h);
    s->rb = h - s->ra;
}

hx_status hx_settle_create_triples(const hx_forcefield *ff, int nw, const int *idx, hx_settle **out)
{
    HX_CHECK(ff && out && nw >= 0 && (nw == 0 || idx), HX_ERR_INVALID_ARG,
             "hx_settle_create_triples: NULL argument");
    *out = NULL;
    const hx_water_model *w = hx_forcefield_water(ff);
    HX_CHECK(w, HX_ERR_INVALID_ARG, "SETTLE needs a water model, not %s", hx_forcefield_model(ff));
    hx_settle *s = calloc(1, sizeof *s);
    HX_CHECK(s, HX_ERR_NOMEM, "out of memory");
    s->idx = malloc(((size_t)nw * 3 + 1) * sizeof *s->idx);
    if (!s->idx) {
        free(s);
        HX_FAIL(HX_ERR_NOMEM, "out of memory for %d waters", nw);
    }
    memcpy(s->idx, idx, (size_t)nw * 3 * sizeof *idx);
    s->nw = nw;
    settle_geometry(s, w);
    *out = s;
    return HX_OK;
}

hx_status hx_settle_create_local(const hx_forcefield *ff, int nmol, const int *mol_start,
                                 const int *type, hx_settle **out)
{
    HX_CHECK(ff && out && (nmol == 0 || (mol_start && type)), HX_ERR_INVALID_ARG,
             "hx_settle_create_local: NULL argument");
    *out = NULL;
    const hx_water_model *w = hx_forcefield_water(ff);
    HX_CHECK(w, HX_ERR_INVALID_ARG, "SETTLE needs a water model, not %s", hx_forcefield_model(ff));
    hx_settle *s = calloc(1, sizeof *s);
    HX_CHECK(s, HX_ERR_NOMEM, "out of memory");
    s->idx = malloc(((size_t)nmol * 3 + 1) * sizeof *s->idx);
    if (!s->idx) {
        free(s);
        HX_FAIL(HX_ERR_NOMEM, "out of memory for %d waters", nmol);
    }
    s->nw = nmol;
    for (int k = 0; k < nmol; k++) {
        int a0 = mol_start[k], nh = 0;
        if (mol_start[k + 1] - a0 != 3) {
            free(s->idx);
            free(s);
            HX_FAIL(HX_ERR_INVALID_ARG, "SETTLE: molecule %d has %d atoms, not 3", k,
                    mol_start[k + 1] - a0);
        }
        for (int a = a0; a < mol_start[k + 1]; a++) {
            if (type[a] == 0)
                s->idx[3 * k] = a;
            else
                s->idx[3 * k + 1 + (nh++ & 1)] = a;
        }
    }
    settle_geometry(s, w);
    *out = s;
    return HX_OK;
}

void hx_settle_set_threads(hx_settle *s, int nthreads)
{
    s->nthreads = nthreads > 0 ? nthreads : 1;
}

void hx_settle_destroy(hx_settle **s)
{
    if (!s || !*s)
        return;
    free((*s)->idx);
    free(*s);
    *s = NULL;
}

static inline void cross(const double a[3], const double b[3], double c[3])
{
    c[0] = a[1] * b[2] - a[2] * b[1];
    c[1] = a[2] * b[0] - a[0] * b[2];
    c[2] = a[0] * b[1] - a[1] * b[0];
}

static inline double dot(const double a[3], const double b[3])
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

static inline int normalise(double a[3])
{
    double n = sqrt(dot(a, a));
    if (!(n > 0.0) || !isfinite(n))
        return 0;
    a[0] /= n;
    a[1] /= n;
    a[2] /= n;
    return 1;
}

/* One water; returns 0 when it cannot be constrained. */
static int settle_one(const hx_settle *s, const double *a0, const double *b0, const double *c0,
                      double *a1, double *b1, double *c1)
{
    const double mo = s->m_o, mh = s->m_h, mt = mo + 2.0 * mh;
    double com[3], ra1[3], rb1[3], rc1[3], ob[3], oc[3];
    for (int d = 0; d < 3; d++) {
        com[d] = (mo * a1[d] + mh * (b1[d] + c1[d])) / mt;
        ra1[d] = a1[d] - com[d];
        rb1[d] = b1[d] - com[d];
        rc1[d] = c1[d] - com[d];
        ob[d] = b0[d] - a0[d];
        oc[d] = c0[d] - a0[d];
    }
    double ez[3], ex[3], ey[3];
    cross(ob, oc, ez);
    if (!normalise(ez))
        return 0;
    cross(ra1, ez, ex);
    if (!normalise(ex))
        return 0;
    cross(ez, ex, ey);
    /* old bond vectors and new COM-relative positions in the frame */
    double xb0 = dot(ob, ex), yb0 = dot(ob, ey), xc0 = dot(oc, ex), yc0 = dot(oc, ey);
    double za1 = dot(ra1, ez);
    double xb1 = dot(rb1, ex), yb1 = dot(rb1, ey), zb1 = dot(rb1, ez);
    double xc1 = dot(rc1, ex), yc1 = dot(rc1, ey), zc1 = dot(rc1, ez);

    double sphi = za1 / s->ra;
    if (!(fabs(sphi) <= 1.0))
        return 0;
    double cphi = sqrt(1.0 - sphi * sphi);
    if (!(cphi > 0.0))
        return 0;
    double spsi = (zb1 - zc1) / (2.0 * s->hc * cphi);
    if (!(fabs(spsi) <= 1.0))
        return 0;
    double cpsi = sqrt(1.0 - spsi * spsi);

    /* rotated canonical triangle before the theta rotation */
    double ya2 = s->ra * cphi;
    double xb2 = -s->hc * cpsi;
    double yb2 = -s->rb * cphi - s->hc * spsi * sphi;
    double yc2 = -s->rb * cphi + s->hc * spsi * sphi;
    double xc2 = -xb2;
    double zb2 = -s->rb * sphi + s->hc * spsi * cphi;
    double zc2 = -s->rb * sphi - s->hc * spsi * cphi;

    double alpha = xb2 * (xb0 - xc0) + yb0 * yb2 + yc0 * yc2;
    double beta = xb2 * (yc0 - yb0) + xb0 * yb2 + xc0 * yc2;
    double gamma = xb0 * yb1 - yb0 * xb1 + xc0 * yc1 - yc0 * xc1;
    double ab2 = alpha * alpha + beta * beta;
    double disc = ab2 - gamma * gamma;
    if (!(disc >= 0.0) || !(ab2 > 0.0))
        return 0;
    double sth = (alpha * gamma - beta * sqrt(disc)) / ab2;
    double cth = sqrt(1.0 - sth * sth);
    if (!isfinite(sth) || !isfinite(cth))
        return 0;

    double xa3 = -ya2 * sth, ya3 = ya2 * cth;
    double xb3 = xb2 * cth - yb2 * sth, yb3 = xb2 * sth + yb2 * cth;
    double xc3 = xc2 * cth - yc2 * sth, yc3 = xc2 * sth + yc2 * cth;
    for (int d = 0; d < 3; d++) {
        a1[d] = com[d] + xa3 * ex[d] + ya3 * ey[d] + za1 * ez[d];
        b1[d] = com[d] + xb3 * ex[d] + yb3 * ey[d] + zb2 * ez[d];
        c1[d] = com[d] + xc3 * ex[d] + yc3 * ey[d] + zc2 * ez[d];
    }
    (void)zb1;
    (void)zc1;
    return 1;
}

hx_status hx_settle_apply(const hx_settle *s, const double *x_old, double *x_new, double *v,
                          double dt, long long step)
{
    HX_CHECK(s && x_old && x_new, HX_ERR_INVALID_ARG, "hx_settle_apply: NULL argument");
    HX_CHECK(!v || dt > 0, HX_ERR_INVALID_ARG, "hx_settle_apply: dt = %g", dt);
    const double idt = v ? 1.0 / dt : 0.0;
    int bad = INT_MAX;
    /* waters are independent: parallel over molecules, the failing one with the lowest index
     * is reported so that the message does not depend on threads */
#ifdef _OPENMP
#pragma omp parallel for schedule(static) reduction(min : bad) num_threads(s->nthreads)
#endif
    for (int k = 0; k < s->nw; k++) {
        const int *id = &s->idx[3 * k];
        if (!settle_one(s, &x_old[3 * id[0]], &x_old[3 * id[1]], &x_old[3 * id[2]],
                        &x_new[3 * id[0]], &x_new[3 * id[1]], &x_new[3 * id[2]])) {
            bad = k < bad ? k : bad;
            continue;
        }
        if (v)
            for (int t = 0; t < 3; t++)
                for (int d = 0; d < 3; d++)
                    v[3 * id[t] + d] = (x_new[3 * id[t] + d] - x_old[3 * id[t] + d]) * idt;
    }
    HX_CHECK(bad == INT_MAX, HX_ERR_PHYSICS,
             "step %lld: SETTLE cannot constrain water molecule %d (atoms %d-%d): the atoms "
             "moved too far in one step or became non-finite; use a smaller time step or check "
             "the starting structure",
             step, bad + 1, s->idx[3 * bad] + 1, s->idx[3 * bad + 2] + 1);
    return HX_OK;
}

double hx_settle_deviation(const hx_settle *s, const double *x)
{
    double dev = 0.0;
    for (int k = 0; k < s->nw; k++) {
        const int *id = &s->idx[3 * k];
        const int pairs[3][2] = {{0, 1}, {0, 2}, {1, 2}};
        for (int p = 0; p < 3; p++) {
            double r2 = 0.0;
            for (int d = 0; d < 3; d++) {
                double t = x[3 * id[pairs[p][0]] + d] - x[3 * id[pairs[p][1]] + d];
                r2 += t * t;
            }
            double d0 = p < 2 ? s->d_oh : s->d_hh;
            double rel = fabs(sqrt(r2) - d0) / d0;
            if (!(rel <= dev))
                dev = isfinite(rel) ? rel : INFINITY;
        }
    }
    return dev;
}
