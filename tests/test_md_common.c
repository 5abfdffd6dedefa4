#include "test_md_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

hx_system *tmd_system_alloc(int natoms, int nmol)
{
    hx_system *s = NULL;
    if (hx_system_create(natoms, nmol, &s) != HX_OK)
        fprintf(stderr, "tmd_system_alloc: %s\n", hx_last_error());
    return s;
}

static void set_names(hx_system *s, int a, int res, const char *rn, const char *an)
{
    s->res_id[a] = res;
    snprintf(s->res_name[a], HX_NAME_LEN, "%s", rn);
    snprintf(s->atom_name[a], HX_NAME_LEN, "%s", an);
}

hx_system *tmd_water_lattice(const char *model, int nside, double jitter, uint64_t seed)
{
    const hx_water_model *w = NULL;
    if (hx_water_model_find(model, &w) != HX_OK)
        return NULL;
    int nw = nside * nside * nside;
    hx_system *s = tmd_system_alloc(3 * nw, nw);
    double a = cbrt(1.0 / hx_water_number_density(w));
    for (int d = 0; d < 3; d++)
        s->box[d] = a * nside;
    snprintf(s->title, sizeof s->title, "test water lattice");
    t_rng r;
    t_rng_seed(&r, seed);
    double hc = 0.5 * w->r_hh, h = sqrt(w->r_oh * w->r_oh - hc * hc);
    int k = 0;
    for (int ix = 0; ix < nside; ix++)
        for (int iy = 0; iy < nside; iy++)
            for (int iz = 0; iz < nside; iz++, k++) {
                double o[3] = {(ix + 0.5) * a, (iy + 0.5) * a, (iz + 0.5) * a};
                for (int d = 0; d < 3; d++)
                    o[d] += jitter * (2.0 * t_rng_uniform(&r) - 1.0);
                /* random orthonormal frame: bisector u, in-plane perpendicular p */
                double u[3], p[3], t[3];
                for (int d = 0; d < 3; d++)
                    u[d] = t_rng_normal(&r);
                double nu = sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
                for (int d = 0; d < 3; d++) {
                    u[d] /= nu;
                    t[d] = t_rng_normal(&r);
                }
                double tu = t[0] * u[0] + t[1] * u[1] + t[2] * u[2];
                for (int d = 0; d < 3; d++)
                    p[d] = t[d] - tu * u[d];
                double np_ = sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]);
                for (int d = 0; d < 3; d++)
                    p[d] /= np_;
                int a0 = 3 * k;
                s->mol_start[k] = a0;
                for (int d = 0; d < 3; d++) {
                    s->x[3 * a0 + d] = o[d];
                    s->x[3 * (a0 + 1) + d] = o[d] + h * u[d] + hc * p[d];
                    s->x[3 * (a0 + 2) + d] = o[d] + h * u[d] - hc * p[d];
                }
                set_names(s, a0, k + 1, "SOL", "OW");
                set_names(s, a0 + 1, k + 1, "SOL", "HW1");
                set_names(s, a0 + 2, k + 1, "SOL", "HW2");
            }
    s->mol_start[nw] = 3 * nw;
    return s;
}

hx_system *tmd_argon_lattice(int nside, double jitter, uint64_t seed)
{
    int n = nside * nside * nside;
    hx_system *s = tmd_system_alloc(n, n);
    double a = cbrt(1.0 / hx_argon_model()->number_density);
    for (int d = 0; d < 3; d++)
        s->box[d] = a * nside;
    t_rng r;
    t_rng_seed(&r, seed);
    int k = 0;
    for (int ix = 0; ix < nside; ix++)
        for (int iy = 0; iy < nside; iy++)
            for (int iz = 0; iz < nside; iz++, k++) {
                int c[3] = {ix, iy, iz};
                for (int d = 0; d < 3; d++)
                    s->x[3 * k + d] = (c[d] + 0.5) * a + jitter * (2.0 * t_rng_uniform(&r) - 1.0);
                s->mol_start[k] = k;
                set_names(s, k, k + 1, "AR", "AR");
            }
    s->mol_start[n] = n;
    return s;
}

void tmd_reference(const hx_system *s, const hx_forcefield *ff, double rc, double eps_rf,
                   double eps_r, tmd_ref *out)
{
    /* written from the formulas of the brief, independently of src/md */
    int n = s->natoms, nt = hx_forcefield_ntypes(ff);
    const double *c6 = hx_forcefield_c6(ff), *c12 = hx_forcefield_c12(ff);
    double f_el = 138.935458 / eps_r;
    double krf = eps_rf == 0 ? 1.0 / (2 * rc * rc * rc)
                             : (eps_rf - eps_r) / ((2 * eps_rf + eps_r) * rc * rc * rc);
    double crf = 1.0 / rc + krf * rc * rc;
    int *mol = malloc(sizeof(int) * (size_t)n);
    for (int k = 0; k < s->nmol; k++)
        for (int a = s->mol_start[k]; a < s->mol_start[k + 1]; a++)
            mol[a] = k;
    out->f = calloc(3 * (size_t)n, sizeof(double));
    double elj = 0, ec = 0;
    for (int i = 0; i < n; i++) {
        ec += -0.5 * f_el * s->q[i] * s->q[i] * crf;
        for (int j = i + 1; j < n; j++) {
            double d[3], r2 = 0;
            for (int k = 0; k < 3; k++) {
                d[k] = s->x[3 * i + k] - s->x[3 * j + k];
                d[k] -= s->box[k] * round(d[k] / s->box[k]);
                r2 += d[k] * d[k];
            }
            if (r2 >= rc * rc)
                continue;
            double r = sqrt(r2), qq = f_el * s->q[i] * s->q[j];
            double dvdr; /* dV/dr */
            if (mol[i] == mol[j]) {
                ec += qq * (krf * r2 - crf);
                dvdr = qq * 2 * krf * r;
            } else {
                double C6 = c6[s->type[i] * nt + s->type[j]],
                       C12 = c12[s->type[i] * nt + s->type[j]];
                elj += C12 * (pow(r, -12) - pow(rc, -12)) - C6 * (pow(r, -6) - pow(rc, -6));
                ec += qq * (1 / r + krf * r2 - crf);
                dvdr = -12 * C12 * pow(r, -13) + 6 * C6 * pow(r, -7) + qq * (-1 / r2 + 2 * krf * r);
            }
            for (int k = 0; k < 3; k++) {
                double fk = -dvdr * d[k] / r;
                out->f[3 * i + k] += fk;
                out->f[3 * j + k] -= fk;
            }
        }
    }
    out->lj = elj;
    out->coulomb = ec;
    free(mol);
}

hx_md *tmd_water_md(const hx_system *s, double dt, int nstlist, double tol, int thermo, int gen,
                    int nthreads)
{
    hx_md_params p;
    hx_md_params_default(&p);
    p.dt = dt;
    p.rc = 1.0;
    p.nstlist = nstlist;
    if (tol > 0)
        p.verlet_buffer_tolerance = tol;
    p.nstcheck = 1;
    p.gen_vel = gen;
    p.gen_temp = 300;
    p.seed = 2024;
    p.thermostat = thermo ? HX_THERMOSTAT_VRESCALE : HX_THERMOSTAT_NONE;
    p.tau_t = 0.05;
    p.ref_t = 300;
    p.nthreads = nthreads;
    hx_md *md = NULL;
    T_OK(hx_md_create(s, &p, &md));
    return md;
}
