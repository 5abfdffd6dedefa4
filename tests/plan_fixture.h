/* Random systems and decomposition cases for the plan tests (serial and MPI). */
#ifndef HX_PLAN_FIXTURE_H
#define HX_PLAN_FIXTURE_H

#include "testutil.h"

typedef struct sysgen {
    int natoms, nmol;
    double box[3];
    double *x;   /* [natoms][3], molecules whole */
    int *mol;    /* molecule of each atom */
    double *cen; /* [nmol][3] molecule centres (in the box) */
    double mol_radius;
} sysgen;

typedef struct caseparams {
    int grid[3];
    double box[3];
    double rc, r_comm;
    int kind; /* 0 uniform, 1 clustered, 2 half-empty */
} caseparams;

/* Draw a case: a grid (from a list, or `grid` when not NULL) and a box such that each decomposed
 * dimension needs 1..3 pulses. Returns 0 when the draw is invalid (draw again). */
int pf_choose_case(t_rng *r, const int *grid, caseparams *c);
/* Random molecules of 1..3 atoms within `radius` of their centre. */
void pf_make_system(t_rng *r, int kind, int nmol, double radius, const double box[3], sysgen *s);
/* Draw a whole case and its system from a seed (the same on every rank). */
void pf_draw(uint64_t seed, const int *grid, caseparams *c, sysgen *s, t_rng *r);
void pf_free(sysgen *s);
double pf_min_image(double dx, double L);

#endif
