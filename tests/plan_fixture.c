#include "plan_fixture.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void pf_free(sysgen *s)
{
    free(s->x);
    free(s->mol);
    free(s->cen);
}

/* Random molecules of 1..3 atoms within `radius` of their centre; centres from one of three
 * distributions. */
void pf_make_system(t_rng *r, int kind, int nmol, double radius, const double box[3], sysgen *s)
{
    memset(s, 0, sizeof *s);
    memcpy(s->box, box, sizeof s->box);
    s->nmol = nmol;
    s->cen = malloc(sizeof(double) * 3 * nmol);
    s->x = malloc(sizeof(double) * 9 * nmol);
    s->mol = malloc(sizeof(int) * 3 * nmol);
    double blob[4][3];
    for (int b = 0; b < 4; b++)
        for (int d = 0; d < 3; d++)
            blob[b][d] = t_rng_uniform(r) * box[d];
    int n = 0;
    for (int m = 0; m < nmol; m++) {
        for (int d = 0; d < 3; d++) {
            double c;
            if (kind == 0) { /* uniform */
                c = t_rng_uniform(r) * box[d];
            } else if (kind == 1) { /* clustered: gaussian blobs, periodic */
                c = blob[m % 4][d] + 0.15 * box[d] * t_rng_normal(r);
            } else { /* half-empty: only the lower 40% of x (and y) hold atoms */
                double frac = d < 2 ? 0.4 : 1.0;
                c = t_rng_uniform(r) * frac * box[d];
            }
            c -= floor(c / box[d]) * box[d];
            if (c >= box[d])
                c = 0.0;
            s->cen[3 * m + d] = c;
        }
        int na = radius > 0 ? 1 + t_rng_int(r, 3) : 1;
        for (int a = 0; a < na; a++, n++) {
            double dir[3], len = 0;
            for (int d = 0; d < 3; d++) {
                dir[d] = t_rng_normal(r);
                len += dir[d] * dir[d];
            }
            len = sqrt(len) + 1e-300;
            double rr = na == 1 ? 0.0 : radius * t_rng_uniform(r);
            for (int d = 0; d < 3; d++)
                s->x[3 * n + d] = s->cen[3 * m + d] + rr * dir[d] / len;
            s->mol[n] = m;
        }
    }
    s->natoms = n;
    s->mol_radius = radius;
}

double pf_min_image(double dx, double L)
{
    return dx - L * round(dx / L);
}

/* Choose a grid and a box so that each decomposed dimension gets the wanted number of pulses. */
int pf_choose_case(t_rng *r, const int *grid, caseparams *c)
{
    static const int shapes[][3] = {{2, 1, 1}, {3, 1, 1}, {4, 1, 1}, {1, 2, 1}, {1, 1, 3},
                                    {2, 2, 1}, {3, 2, 1}, {1, 3, 4}, {2, 1, 2}, {4, 4, 1},
                                    {2, 2, 2}, {3, 3, 2}, {2, 3, 4}, {3, 3, 3}, {4, 4, 4},
                                    {4, 2, 3}, {4, 1, 1}, {1, 4, 4}};
    int ns = (int)(sizeof shapes / sizeof shapes[0]);
    memcpy(c->grid, shapes[t_rng_int(r, ns)], sizeof c->grid);
    if (grid)
        memcpy(c->grid, grid, sizeof c->grid);
    c->rc = 0.4 + 0.5 * t_rng_uniform(r);
    double buffer = 0.15 * t_rng_uniform(r);
    double radius = t_rng_uniform(r) < 0.5 ? 0.0 : 0.12 * t_rng_uniform(r);
    c->r_comm = c->rc + buffer + radius;
    for (int d = 0; d < 3; d++) {
        if (c->grid[d] == 1) {
            c->box[d] = 2.0 * c->rc * (1.05 + t_rng_uniform(r));
            continue;
        }
        int maxp = c->grid[d] - 1 < 3 ? c->grid[d] - 1 : 3;
        int want = 1 + t_rng_int(r, maxp);
        /* cell in (r_comm/want, r_comm/(want-1)): exactly `want` pulses */
        double v = 0.05 + 0.9 * t_rng_uniform(r);
        double cell = c->r_comm / (want - 1 + v);
        c->box[d] = cell * c->grid[d];
    }
    for (int d = 0; d < 3; d++)
        if (c->rc >= 0.5 * c->box[d])
            return 0; /* not a valid case; draw another */
    c->kind = t_rng_int(r, 3);
    return 1;
}

void pf_draw(uint64_t seed, const int *grid, caseparams *c, sysgen *s, t_rng *r)
{
    t_rng_seed(r, seed);
    while (!pf_choose_case(r, grid, c)) {
    }
    double vol = c->box[0] * c->box[1] * c->box[2];
    int nmol = 80 + (int)(t_rng_uniform(r) * fmin(900.0, 40.0 * vol));
    /* r_comm = rc + buffer + radius: sometimes use all the slack for the molecule radius, so
     * that the test is tight (no buffer hides a missing atom). */
    double slack = c->r_comm - c->rc;
    double u = t_rng_uniform(r);
    double mol_radius = slack > 0.02 ? (u < 0.3 ? slack : slack * u) : 0.0;
    pf_make_system(r, c->kind, nmol, mol_radius, c->box, s);
}
