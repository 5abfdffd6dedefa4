/* The closing part of a halox md log: energy averages and drift over the run, the timing table
 * over ranks with the load imbalance, the performance line. */
#ifndef HX_APP_MD_REPORT_H
#define HX_APP_MD_REPORT_H

#include "halox/comm.h"
#include "halox/md.h"

#include <stdio.h>

/* Running averages, fluctuations and linear drifts of the energy terms over the energy frames
 * of a run (those with computed potential energies). */
#define HX_APP_NTERMS                                                                              \
    12 /* lj, coulomb, potential, kinetic, total, temperature, then the                            \
        * bonded terms bonds, angles, dihedrals, lj14, coulomb14, and conserved */
typedef struct hx_app_estats {
    int has_bonded;     /* the bonded rows are written only for systems that have them */
    int has_thermostat; /* and the conserved energy only with a thermostat */
    long long n, first_step, last_step;
    double first_time, last_time;
    double mean_t, m2_t;
    double mean[HX_APP_NTERMS], m2[HX_APP_NTERMS], cov[HX_APP_NTERMS];
} hx_app_estats;

void hx_app_estats_add(hx_app_estats *s, const hx_md_energies *e);
/* thermostat: the run's (the total energy is a conservation check only without one). */
void hx_app_estats_write(FILE *f, const hx_app_estats *s, int natoms, int thermostat);

/* The energies of one step as GROMACS writes them every nstlog steps ("Step Time", then
 * "Energies (kJ/mol)" with LJ (SR), Coulomb (SR), ..., Conserved En., Temperature). */
void hx_app_log_energies(FILE *f, const hx_md_energies *e);

/* Wall times of the run's parts over every rank: HX_APP_NTIMES rows of the table (the last is
 * the total), then HX_APP_NSEARCH parts of the repartition+search row. */
#define HX_APP_NTIMES 10
/* the six parts tile the search row; then the coordinate halo (inside the last one) and, for a
 * search step on the device, the device time of its parts, the counts, and the host's time in
 * the plan from the counts and in the agreements after them (inside the others) */
#define HX_APP_NSEARCH 13
#define HX_APP_NSEARCH_TILE 6
#define HX_APP_NALL (HX_APP_NTIMES + HX_APP_NSEARCH)
typedef struct hx_app_timing {
    int nranks;
    double min[HX_APP_NALL], avg[HX_APP_NALL], max[HX_APP_NALL];
    double nb_imbalance; /* max/avg - 1 of the non-bonded work over ranks */
    long long extra_max; /* the largest `extra` any rank passed in */
} hx_app_timing;

/* Collective over comm: every rank passes its timings (and one extra integer, reduced by max,
 * e.g. the signal that stopped it); every rank gets the result. */
hx_status hx_app_timing_reduce(hx_comm *comm, const hx_md_timings *t, long long extra,
                               hx_app_timing *out);
void hx_app_timing_write(FILE *f, const hx_app_timing *r);
/* One line: the search step in µs per search by part, slowest rank of each part, where it ran
 * (device or host) and its slow paths (t: this rank's timings; every rank searches together).
 * Nothing without searches. */
void hx_app_search_write(FILE *f, const hx_app_timing *r, const hx_md_timings *t);

/* ns/day and hours/ns of a run of `steps` steps of dt ps in `seconds`. */
void hx_app_performance(double dt, long long steps, double seconds, double *ns_day,
                        double *hours_ns);

#endif
