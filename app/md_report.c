/* Energy statistics and timing tables of the halox md log (see md_report.h).
 *
 * Averages, fluctuations and the time covariance are accumulated online (Welford's update), so
 * a run of any length needs no stored frames; the drift of a term is the slope of its
 * least-squares line against time, reported over the run's length as GROMACS's "Tot-Drift"
 * column, and for the total energy also per atom and ps: the figure a conservation check
 * compares with the buffer tolerance. */
#include "md_report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const term_names[HX_APP_NTERMS] = {
    "lj",    "coulomb", "potential", "kinetic", "total",     "temperature",
    "bonds", "angles",  "dihedrals", "lj14",    "coulomb14", "conserved"};
#define TOTAL 4
#define TEMPERATURE 5 /* the row in K */
#define BONDS 6
#define CONSERVED 11

void hx_app_estats_add(hx_app_estats *s, const hx_md_energies *e)
{
    const double x[HX_APP_NTERMS] = {e->lj,        e->coulomb,     e->potential, e->kinetic,
                                     e->total,     e->temperature, e->bonds,     e->angles,
                                     e->dihedrals, e->lj14,        e->coulomb14, e->conserved};
    s->has_bonded |= e->has_bonded;
    s->has_thermostat |= e->has_thermostat;
    for (int k = 0; k < HX_APP_NTERMS; k++)
        if (!isfinite(x[k]))
            return; /* a step without potential energies is no energy frame */
    if (s->n == 0) {
        s->first_step = e->step;
        s->first_time = e->time;
    }
    s->last_step = e->step;
    s->last_time = e->time;
    s->n++;
    double n = (double)s->n;
    double dt = e->time - s->mean_t;
    s->mean_t += dt / n;
    for (int k = 0; k < HX_APP_NTERMS; k++) {
        double dx = x[k] - s->mean[k];
        s->mean[k] += dx / n;
        s->m2[k] += dx * (x[k] - s->mean[k]);
        s->cov[k] += dt * (x[k] - s->mean[k]);
    }
    s->m2_t += dt * (e->time - s->mean_t);
}

void hx_app_estats_write(FILE *f, const hx_app_estats *s, int natoms, int thermostat)
{
    if (s->n == 0) {
        fprintf(f, "energies: no energy frame\n");
        return;
    }
    fprintf(f, "\nenergies over %lld frame%s, steps %lld to %lld (%.4f to %.4f ps):\n", s->n,
            s->n == 1 ? "" : "s", s->first_step, s->last_step, s->first_time, s->last_time);
    fprintf(f, "  %-20s %16s %12s %14s\n", "term", "average", "rmsd", "drift over run");
    const double span = s->last_time - s->first_time;
    /* the terms of the potential first, then potential, kinetic, total, conserved (with a
     * thermostat), temperature */
    int order[HX_APP_NTERMS], nrow = 0;
    order[nrow++] = 0;
    order[nrow++] = 1;
    for (int k = BONDS; s->has_bonded && k < CONSERVED; k++)
        order[nrow++] = k;
    for (int k = 2; k <= TOTAL; k++)
        order[nrow++] = k;
    if (s->has_thermostat)
        order[nrow++] = CONSERVED;
    order[nrow++] = TEMPERATURE;
    for (int r = 0; r < nrow; r++) {
        const int k = order[r];
        double rmsd = s->n > 1 ? sqrt(s->m2[k] / (double)s->n) : 0.0;
        char name[40];
        snprintf(name, sizeof name, "%s (%s)", term_names[k], k == TEMPERATURE ? "K" : "kJ/mol");
        if (s->n > 1 && s->m2_t > 0)
            fprintf(f, "  %-20s %16.6f %12.6f %14.6f\n", name, s->mean[k], rmsd,
                    s->cov[k] / s->m2_t * span);
        else
            fprintf(f, "  %-20s %16.6f %12s %14s\n", name, s->mean[k], "-", "-");
    }
    if (s->n < 2 || !(s->m2_t > 0) || natoms <= 0) {
        fprintf(f, "conserved-energy drift: needs at least two energy frames\n");
        return;
    }
    double drift = s->cov[TOTAL] / s->m2_t / natoms;
    if (thermostat == HX_THERMOSTAT_NONE) {
        fprintf(f,
                "conserved-energy drift: %.4g kJ/mol/ps per atom (NVE: total energy; slope of a "
                "linear fit over the energy frames)\n",
                drift);
        return;
    }
    fprintf(f,
            "total-energy drift: %.4g kJ/mol/ps per atom (v-rescale exchanges energy with its "
            "bath: not conserved)\n",
            drift);
    fprintf(f,
            "conserved-energy drift: %.4g kJ/mol/ps per atom (v-rescale: total energy minus "
            "the thermostat's work, GROMACS's \"Conserved En.\"; slope of a linear fit over the "
            "energy frames)\n",
            s->cov[CONSERVED] / s->m2_t / natoms);
}

void hx_app_log_energies(FILE *f, const hx_md_energies *e)
{
    /* GROMACS's block and names, so that its readers' eyes (and greps) find them; halox's
     * constraint deviation is the largest relative one, not GROMACS's rmsd, hence its name */
    const char *name[16];
    double val[16];
    int n = 0;
    if (e->has_bonded) {
        const char *bn[5] = {"Bond", "Angle", "Ryckaert-Bell.", "LJ-14", "Coulomb-14"};
        const double bv[5] = {e->bonds, e->angles, e->dihedrals, e->lj14, e->coulomb14};
        for (int k = 0; k < 5; k++) {
            name[n] = bn[k];
            val[n++] = bv[k];
        }
    }
    const char *rn[8] = {"LJ (SR)",      "Coulomb (SR)",  "Potential",   "Kinetic En.",
                         "Total Energy", "Conserved En.", "Temperature", "Constr. dev."};
    const double rv[8] = {e->lj,    e->coulomb,   e->potential,   e->kinetic,
                          e->total, e->conserved, e->temperature, e->constraint_deviation};
    for (int k = 0; k < 8; k++) {
        name[n] = rn[k];
        val[n++] = rv[k];
    }
    fprintf(f, "\n%15s %15s\n%15lld %15.5f\n\n   Energies (kJ/mol)\n", "Step", "Time", e->step,
            e->time);
    for (int r = 0; r < n; r += 5) {
        for (int k = r; k < n && k < r + 5; k++)
            fprintf(f, "%15s", name[k]);
        fprintf(f, "\n");
        for (int k = r; k < n && k < r + 5; k++)
            fprintf(f, "   %12.5e", val[k]);
        fprintf(f, "\n");
    }
}

static void timing_values(const hx_md_timings *t, double v[HX_APP_NALL])
{
    double other = t->total - t->nb_local - t->nb_nonlocal - t->halo_x - t->halo_f - t->search -
                   t->update - t->reduce - t->output;
    const double vals[HX_APP_NALL] = {t->nb_local,
                                      t->halo_x,
                                      t->nb_nonlocal,
                                      t->halo_f,
                                      t->update,
                                      t->search,
                                      t->reduce,
                                      t->output,
                                      other > 0 ? other : 0.0,
                                      t->total,
                                      t->search_download,
                                      t->search_migrate,
                                      t->search_plan,
                                      t->search_halo,
                                      t->search_set_local,
                                      t->search_pairs,
                                      t->search_halo_x,
                                      t->search_dev_migrate,
                                      t->search_dev_local_set,
                                      t->search_dev_plan,
                                      t->search_counts,
                                      t->search_plan_counts,
                                      t->search_agree};
    memcpy(v, vals, sizeof vals);
}

static const char *const time_names[HX_APP_NTIMES] = {"non-bonded local",
                                                      "halo exchange x",
                                                      "non-bonded non-local",
                                                      "halo exchange f",
                                                      "constr/update",
                                                      "repartition+search",
                                                      "reductions",
                                                      "output",
                                                      "other",
                                                      "total"};
/* the parts of "repartition+search" (HX_APP_NTIMES ..), printed under it */
#define HX_APP_SEARCH_ROW 5
static const char *const search_names[HX_APP_NSEARCH] = {
    "state to host",    "migration",          "topology+plan",     "halo set-up",
    "local set+upload", "x halo+pair search", "  of which x halo", "device migration",
    "device local set", "device plan maps",   "counts+reduction",  "plan from counts",
    "agreements"};

hx_status hx_app_timing_reduce(hx_comm *comm, const hx_md_timings *t, long long extra,
                               hx_app_timing *out)
{
    memset(out, 0, sizeof *out);
    double v[HX_APP_NALL + 1];
    timing_values(t, v);
    v[HX_APP_NALL] = t->nb_local + t->nb_nonlocal; /* the work whose balance is reported */
    const int nv = HX_APP_NALL + 1;
    out->nranks = hx_comm_nranks(comm);
    if (out->nranks <= 1) {
        for (int k = 0; k < HX_APP_NALL; k++)
            out->min[k] = out->avg[k] = out->max[k] = v[k];
        out->extra_max = extra;
        return HX_OK;
    }
    /* Reductions take one row per local domain: each domain of this process reports the
     * process's values, and the average divides by the number of domains. min is the max of the
     * negated values. Negative times count as 0; a NaN stays NaN, so that it shows up (+inf in
     * max, -inf in min, NaN in the average) rather than passing for a time of 0. */
    const int nl = hx_comm_nlocal(comm), nd = hx_comm_ndomains(comm);
    const int ni = 2 * nv + 1;
    double *sin = calloc((size_t)nl * (size_t)nv, sizeof *sin);
    double *iin = calloc((size_t)nl * (size_t)ni, sizeof *iin);
    double *sum = calloc((size_t)nv, sizeof *sum);
    double *imax = calloc((size_t)ni, sizeof *imax);
    hx_status st = sin && iin && sum && imax ? HX_OK : HX_ERR_NOMEM;
    if (st == HX_OK) {
        for (int i = 0; i < nl; i++)
            for (int k = 0; k < nv; k++) {
                double x = v[k] > 0 || isnan(v[k]) ? v[k] : 0.0;
                sin[i * nv + k] = x;
                iin[i * ni + k] = x;
                iin[i * ni + nv + k] = -x;
                iin[i * ni + 2 * nv] = (double)extra; /* a count: exact below 2^53 */
            }
    }
    /* every rank takes part in both reductions, also one that ran out of memory */
    st = hx_comm_agree(comm, st);
    if (st == HX_OK)
        st = hx_comm_sum_f64(comm, sin, sum, nv);
    if (st == HX_OK)
        st = hx_comm_max_f64(comm, iin, imax, ni);
    if (st == HX_OK) {
        for (int k = 0; k < HX_APP_NALL; k++) {
            out->avg[k] = sum[k] / nd;
            out->max[k] = imax[k];
            out->min[k] = -imax[nv + k];
        }
        double avg_nb = sum[HX_APP_NALL] / nd, max_nb = imax[HX_APP_NALL];
        out->nb_imbalance = avg_nb > 0 ? max_nb / avg_nb - 1.0 : 0.0;
        out->extra_max = (long long)imax[2 * nv];
    }
    free(sin);
    free(iin);
    free(sum);
    free(imax);
    return st;
}

void hx_app_timing_write(FILE *f, const hx_app_timing *r)
{
    const double tot = r->avg[HX_APP_NTIMES - 1] > 0 ? r->avg[HX_APP_NTIMES - 1] : 1.0;
    if (r->nranks <= 1) {
        fprintf(f, "\ntiming (1 rank)         seconds      %%\n");
        for (int k = 0; k < HX_APP_NTIMES; k++) {
            fprintf(f, "  %-20s %10.3f %6.1f\n", time_names[k], r->avg[k],
                    k == HX_APP_NTIMES - 1 ? 100.0 : 100 * r->avg[k] / tot);
            for (int j = 0; k == HX_APP_SEARCH_ROW && r->avg[k] > 0 && j < HX_APP_NSEARCH; j++)
                if (j < HX_APP_NSEARCH_TILE || r->avg[HX_APP_NTIMES + j] > 0)
                    fprintf(f, "    %-18s %10.3f %6.1f\n", search_names[j],
                            r->avg[HX_APP_NTIMES + j], 100 * r->avg[HX_APP_NTIMES + j] / tot);
        }
        return;
    }
    fprintf(f, "\ntiming over %d ranks    avg seconds      %%        min        max\n", r->nranks);
    for (int k = 0; k < HX_APP_NTIMES; k++) {
        fprintf(f, "  %-20s %10.3f %6.1f %10.3f %10.3f\n", time_names[k], r->avg[k],
                k == HX_APP_NTIMES - 1 ? 100.0 : 100 * r->avg[k] / tot, r->min[k], r->max[k]);
        for (int j = 0; k == HX_APP_SEARCH_ROW && r->avg[k] > 0 && j < HX_APP_NSEARCH; j++) {
            const int i = HX_APP_NTIMES + j;
            if (j >= HX_APP_NSEARCH_TILE && !(r->avg[i] > 0))
                continue;
            fprintf(f, "    %-18s %10.3f %6.1f %10.3f %10.3f\n", search_names[j], r->avg[i],
                    100 * r->avg[i] / tot, r->min[i], r->max[i]);
        }
    }
    fprintf(f,
            "load imbalance of the non-bonded work: %.1f %% (slowest rank / average - 1; the "
            "others wait for it at the halo exchange)\n",
            100.0 * r->nb_imbalance);
}

void hx_app_search_write(FILE *f, const hx_app_timing *r, const hx_md_timings *t)
{
    if (t->searches <= 0)
        return;
    const double us = 1e6 / (double)t->searches;
    const int dev = t->dd_searches > 0;
    /* the first search of a run (at the start) is always on the host: "of" says how many */
    fprintf(f, "search step: %.1f us per search, slowest rank (%lld searches, %lld on the device",
            us * r->max[HX_APP_SEARCH_ROW], t->searches, t->dd_searches);
    if (dev)
        fprintf(f, "; slow paths: %lld buffer growths, %lld halo updates", t->dd_retries,
                t->dd_halo_updates);
    fprintf(f, "):");
    for (int j = 0; j < HX_APP_NSEARCH; j++) {
        const int i = HX_APP_NTIMES + j;
        if (j >= HX_APP_NSEARCH_TILE && !(r->max[i] > 0))
            continue;
        const char *name = search_names[j];
        while (*name == ' ')
            name++;
        fprintf(f, "%s %s %.1f", j ? "," : "", name, us * r->max[i]);
    }
    fprintf(f, " us\n");
}

void hx_app_performance(double dt, long long steps, double seconds, double *ns_day,
                        double *hours_ns)
{
    double ns = dt * 1e-3 * (double)steps;
    *ns_day = seconds > 0 && ns > 0 ? ns * 86400.0 / seconds : 0.0;
    *hours_ns = *ns_day > 0 ? 24.0 / *ns_day : 0.0;
}
