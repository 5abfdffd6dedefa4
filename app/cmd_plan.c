/* halox plan: build the decomposition and halo plan of a system and report it. */
#include "commands.h"

#include "halox/halox.h"
#include "halox/io.h"
#include "core/error.h"
#include "io/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int run_plan(int argc, char **argv);

const hx_cmd hx_cmd_plan = {
    "plan",
    "build a domain decomposition and its halo plan, and report it",
    "halox plan [-c conf.gro] [--dd AxBxC | --ranks N] [--rc NM] [--rlist NM] [--json]",
    "Builds the halo plan of a GROMACS-style eighth-shell domain decomposition in one process\n"
    "(every domain in memory) and prints the grid, cell sizes, the communication distance,\n"
    "pulses per dimension, per-pulse send/receive atom counts (min/avg/max over domains), and\n"
    "home and halo totals. Without -c it uses a built-in SPC/E water box (--atoms, --seed).\n"
    "Molecules come from residues and are assigned to the domain of their centre of geometry;\n"
    "r_comm = rlist + the largest molecule radius. --json prints one JSON object (schema in\n"
    "docs/plan-json.md).",
    run_plan,
};

typedef struct pulse_sum {
    int dim, pulse;
    long long send_total, recv_total;
    int send_min, send_max, recv_min, recv_max;
} pulse_sum;

static double mol_radius(const hx_system *s, int m, double cen[3])
{
    int a0 = s->mol_start[m], a1 = s->mol_start[m + 1];
    cen[0] = cen[1] = cen[2] = 0;
    for (int a = a0; a < a1; a++)
        for (int d = 0; d < 3; d++)
            cen[d] += s->x[3 * a + d];
    for (int d = 0; d < 3; d++)
        cen[d] /= (a1 - a0);
    double r2max = 0;
    for (int a = a0; a < a1; a++) {
        double r2 = 0;
        for (int d = 0; d < 3; d++)
            r2 += (s->x[3 * a + d] - cen[d]) * (s->x[3 * a + d] - cen[d]);
        if (r2 > r2max)
            r2max = r2;
    }
    return sqrt(r2max);
}

typedef struct plan_totals {
    int domains;
    long long home, halo;
    int halo_min, halo_max;
} plan_totals;

/* The --json object (docs/plan-json.md) through cJSON: strings escaped, numbers exact. */
static hx_status print_json(const hx_system *sys, const hx_dd *dd, const int grid[3], double rc,
                            double rlist, double rmol, double r_comm, const pulse_sum *ps,
                            int npulses, const plan_totals *t)
{
    static const char *dn[3] = {"x", "y", "z"};
    const double box[3] = {sys->box[0], sys->box[1], sys->box[2]};
    const double cell[3] = {hx_dd_cell_size(dd, 0), hx_dd_cell_size(dd, 1), hx_dd_cell_size(dd, 2)};
    const int ppd[3] = {hx_dd_pulses_dim(dd, 0), hx_dd_pulses_dim(dd, 1), hx_dd_pulses_dim(dd, 2)};
    /* hx_json_add frees what it cannot attach; everything attached goes with root */
    cJSON *root = cJSON_CreateObject(), *system = NULL, *pulses = NULL;
    int ok = hx_json_add(root, "system", system = cJSON_CreateObject()) &&
             hx_json_add(system, "title", hx_json_string(sys->title)) &&
             hx_json_add(system, "atoms", hx_json_int(sys->natoms)) &&
             hx_json_add(system, "molecules", hx_json_int(sys->nmol)) &&
             hx_json_add(system, "box", hx_json_number_array(box, 3)) &&
             hx_json_add(root, "grid", hx_json_int_array(grid, 3)) &&
             hx_json_add(root, "cell_size", hx_json_number_array(cell, 3)) &&
             hx_json_add(root, "rc", hx_json_number(rc)) &&
             hx_json_add(root, "rlist", hx_json_number(rlist)) &&
             hx_json_add(root, "molecule_radius", hx_json_number(rmol)) &&
             hx_json_add(root, "r_comm", hx_json_number(r_comm)) &&
             hx_json_add(root, "pulses_per_dim", hx_json_int_array(ppd, 3)) &&
             hx_json_add(root, "pulses", pulses = cJSON_CreateArray());
    for (int q = 0; ok && q < npulses; q++) {
        cJSON *p = cJSON_CreateObject();
        ok = p && cJSON_AddItemToArray(pulses, p) &&
             hx_json_add(p, "dim", cJSON_CreateString(dn[ps[q].dim])) &&
             hx_json_add(p, "pulse", hx_json_int(ps[q].pulse)) &&
             hx_json_add(p, "send_atoms_total", hx_json_int(ps[q].send_total)) &&
             hx_json_add(p, "send_atoms_min", hx_json_int(ps[q].send_min)) &&
             hx_json_add(p, "send_atoms_avg",
                         hx_json_number((double)ps[q].send_total / t->domains)) &&
             hx_json_add(p, "send_atoms_max", hx_json_int(ps[q].send_max)) &&
             hx_json_add(p, "recv_atoms_total", hx_json_int(ps[q].recv_total)) &&
             hx_json_add(p, "recv_atoms_min", hx_json_int(ps[q].recv_min)) &&
             hx_json_add(p, "recv_atoms_avg",
                         hx_json_number((double)ps[q].recv_total / t->domains)) &&
             hx_json_add(p, "recv_atoms_max", hx_json_int(ps[q].recv_max));
    }
    ok = ok && hx_json_add(root, "domains", hx_json_int(t->domains)) &&
         hx_json_add(root, "home_atoms_total", hx_json_int(t->home)) &&
         hx_json_add(root, "halo_atoms_total", hx_json_int(t->halo)) &&
         hx_json_add(root, "halo_atoms_min", hx_json_int(t->halo_min)) &&
         hx_json_add(root, "halo_atoms_max", hx_json_int(t->halo_max)) &&
         hx_json_add(root, "halo_to_home",
                     hx_json_number(t->home ? (double)t->halo / t->home : 0.0));
    char *text = ok ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    HX_CHECK(text, HX_ERR_NOMEM, "out of memory writing the plan as JSON");
    int written = printf("%s\n", text) > 0;
    cJSON_free(text);
    HX_CHECK(written, HX_ERR_IO, "writing the plan to standard output failed");
    return HX_OK;
}

static int run_plan(int argc, char **argv)
{
    const char *conf = NULL, *grid_text = NULL;
    double rc = 1.0, rlist = -1.0;
    int ranks = 0, json = 0, atoms = 3000, seed = 1;
    hx_opt opts[] = {
        {"c", NULL, HX_OPT_STRING, &conf, "FILE", "input configuration (.gro); default: built-in"},
        {"atoms", NULL, HX_OPT_INT, &atoms, "N", "atoms of the built-in SPC/E box (without -c)"},
        {"seed", NULL, HX_OPT_INT, &seed, "S", "seed of the built-in box"},
        {"dd", NULL, HX_OPT_STRING, &grid_text, "AxBxC",
         "domain grid (default: chosen for --ranks)"},
        {"ranks", NULL, HX_OPT_INT, &ranks, "N",
         "number of domains when --dd is not given (default 8)"},
        {"rc", NULL, HX_OPT_DOUBLE, &rc, "NM", "interaction cut-off"},
        {"rlist", NULL, HX_OPT_DOUBLE, &rlist, "NM", "pair-list radius (default: rc + 0.1)"},
        {"json", NULL, HX_OPT_FLAG, &json, NULL, "print one JSON object instead of a table"},
    };
    int pr = hx_cli_parse(&hx_cmd_plan, opts, (int)(sizeof opts / sizeof opts[0]), argc, argv);
    if (pr != 0)
        return pr > 0 ? 0 : 2;
    if (rlist < 0)
        rlist = rc + 0.1;
    if (rlist < rc) {
        fprintf(stderr,
                "halox plan: error: --rlist %g is shorter than --rc %g: the pair-list "
                "radius must be at least the cut-off\n",
                rlist, rc);
        return 1;
    }
    hx_system *sys = NULL;
    hx_dd *dd = NULL;
    hx_comm *comm = NULL;
    hx_plan *plan = NULL;
    int **dom_atoms = NULL;
    double **xh = NULL;
    int *nhome = NULL, nd = 0, rcode = 1;
    pulse_sum *ps = NULL;
    hx_status st;
    if (conf)
        st = hx_gro_read(conf, &sys);
    else
        st = hx_build_water("spce", atoms, 0.0, (uint64_t)seed, &sys);
    if (st != HX_OK)
        goto fail;
    if (sys->nmol == 0) {
        fprintf(stderr, "halox plan: error: the system has no atoms\n");
        goto out;
    }
    /* Molecule centres (assignment) and the largest radius (r_comm). */
    double *cen = malloc(sizeof(double) * 3 * sys->nmol);
    double rmol = 0;
    for (int m = 0; m < sys->nmol; m++) {
        double r = mol_radius(sys, m, &cen[3 * m]);
        if (r > rmol)
            rmol = r;
    }
    double r_comm = rlist + rmol;
    int grid[3] = {0, 0, 0};
    if (grid_text) {
        if ((st = hx_dd_parse_grid(grid_text, grid)) != HX_OK) {
            free(cen);
            goto fail;
        }
    } else {
        if ((st = hx_dd_choose_grid(sys->box, r_comm, rc, ranks > 0 ? ranks : 8, grid)) != HX_OK) {
            free(cen);
            goto fail;
        }
    }
    hx_dd_params p = {
        {sys->box[0], sys->box[1], sys->box[2]}, {grid[0], grid[1], grid[2]}, r_comm, rc};
    if ((st = hx_dd_create(&p, &dd)) != HX_OK) {
        free(cen);
        goto fail;
    }
    nd = hx_dd_ndomains(dd);
    nhome = calloc(nd, sizeof *nhome);
    xh = calloc(nd, sizeof *xh);
    int *owner = malloc(sizeof(int) * sys->nmol);
    for (int m = 0; m < sys->nmol; m++) {
        owner[m] = hx_dd_domain_of_point(dd, &cen[3 * m]);
        nhome[owner[m]] += sys->mol_start[m + 1] - sys->mol_start[m];
    }
    for (int d = 0; d < nd; d++) {
        xh[d] = malloc(sizeof(double) * 3 * (nhome[d] + 1));
        nhome[d] = 0;
    }
    for (int m = 0; m < sys->nmol; m++) {
        int d = owner[m];
        /* Put the molecule's centre in the box; the molecule stays whole around it. */
        double sh[3];
        for (int k = 0; k < 3; k++)
            sh[k] = -floor(cen[3 * m + k] / sys->box[k]) * sys->box[k];
        for (int a = sys->mol_start[m]; a < sys->mol_start[m + 1]; a++, nhome[d]++)
            for (int k = 0; k < 3; k++)
                xh[d][3 * nhome[d] + k] = sys->x[3 * a + k] + sh[k];
    }
    free(owner);
    free(cen);
    if ((st = hx_comm_create_serial(nd, &comm)) != HX_OK ||
        (st = hx_plan_create(dd, comm, &plan)) != HX_OK ||
        (st = hx_plan_build(plan, nhome, (const double *const *)xh)) != HX_OK)
        goto fail;

    int npulses = hx_dd_npulses(dd);
    ps = calloc(npulses + 1, sizeof *ps);
    long long home_total = 0, halo_total = 0;
    int halo_min = 1 << 30, halo_max = 0;
    for (int q = 0; q < npulses; q++) {
        ps[q].send_min = ps[q].recv_min = 1 << 30;
    }
    for (int d = 0; d < nd; d++) {
        const hx_domain_plan *dp = hx_plan_domain(plan, d);
        home_total += dp->n_home;
        int halo = dp->n_local - dp->n_home;
        halo_total += halo;
        halo_min = halo < halo_min ? halo : halo_min;
        halo_max = halo > halo_max ? halo : halo_max;
        for (int q = 0; q < npulses; q++) {
            const hx_pulse *P = &dp->pulses[q];
            ps[q].dim = P->dim;
            ps[q].pulse = P->pulse_in_dim;
            ps[q].send_total += P->send_count;
            ps[q].recv_total += P->recv_count;
            ps[q].send_min = P->send_count < ps[q].send_min ? P->send_count : ps[q].send_min;
            ps[q].send_max = P->send_count > ps[q].send_max ? P->send_count : ps[q].send_max;
            ps[q].recv_min = P->recv_count < ps[q].recv_min ? P->recv_count : ps[q].recv_min;
            ps[q].recv_max = P->recv_count > ps[q].recv_max ? P->recv_count : ps[q].recv_max;
        }
    }
    const char dn[3] = {'x', 'y', 'z'};
    if (json) {
        plan_totals t = {nd, home_total, halo_total, nd ? halo_min : 0, halo_max};
        if ((st = print_json(sys, dd, grid, rc, rlist, rmol, r_comm, ps, npulses, &t)) != HX_OK)
            goto fail;
    } else {
        printf("system      %d atoms, %d molecules, box %.4f x %.4f x %.4f nm\n", sys->natoms,
               sys->nmol, sys->box[0], sys->box[1], sys->box[2]);
        printf("grid        %d x %d x %d = %d domains\n", grid[0], grid[1], grid[2], nd);
        printf("cell size   %.4f x %.4f x %.4f nm\n", hx_dd_cell_size(dd, 0),
               hx_dd_cell_size(dd, 1), hx_dd_cell_size(dd, 2));
        printf("r_comm      %.4f nm  (rlist %.4f + molecule radius %.4f; rc %.4f)\n", r_comm, rlist,
               rmol, rc);
        printf("pulses      x %d, y %d, z %d (total %d)\n", hx_dd_pulses_dim(dd, 0),
               hx_dd_pulses_dim(dd, 1), hx_dd_pulses_dim(dd, 2), npulses);
        if (npulses) {
            printf("\n pulse  dim   send min/avg/max          recv min/avg/max\n");
            for (int q = 0; q < npulses; q++)
                printf(" %5d  %c%-2d  %7d %9.1f %7d    %7d %9.1f %7d\n", q, dn[ps[q].dim],
                       ps[q].pulse, ps[q].send_min, (double)ps[q].send_total / nd, ps[q].send_max,
                       ps[q].recv_min, (double)ps[q].recv_total / nd, ps[q].recv_max);
            printf("\n");
        }
        printf("home atoms  %lld total, %.1f per domain\n", home_total, (double)home_total / nd);
        printf("halo atoms  %lld total, min %d, avg %.1f, max %d per domain\n", halo_total,
               halo_min, (double)halo_total / nd, halo_max);
        printf("halo/home   %.3f\n", home_total ? (double)halo_total / home_total : 0.0);
    }
    rcode = 0;
    goto out;
fail:
    hx_cli_report_error("plan", st);
out:
    if (xh)
        for (int d = 0; d < nd; d++)
            free(xh[d]);
    free(xh);
    free(nhome);
    free(ps);
    free(dom_atoms);
    hx_plan_destroy(&plan);
    hx_comm_destroy(&comm);
    hx_dd_destroy(&dd);
    hx_system_destroy(&sys);
    return rcode;
}
