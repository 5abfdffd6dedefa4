/* halox plan: build the decomposition and halo plan of a system and report it. */
#include "commands.h"

#include "halox/build.h"
#include "halox/halox.h"
#include "halox/decomp.h"
#include "halox/io.h"
#include "halox/md.h"
#include "halox/error.h"
#include "halox/json.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int run_plan(int argc, char **argv);

const hx_cmd hx_cmd_plan = {
    "plan",
    "build a domain decomposition and its halo plan, and report it",
    "halox plan [-c conf.gro] [--dd AxBxC | --ranks N] [md options] [--json]",
    "Builds the halo plan of a GROMACS-style eighth-shell domain decomposition in one process\n"
    "(every domain in memory) and prints the grid, cell sizes, the communication distance,\n"
    "pulses per dimension, per-pulse send/receive atom counts (min/avg/max over domains), and\n"
    "home and halo totals. Without -c it uses a built-in SPC/E water box (--atoms, --seed).\n"
    "Molecules come from residues and are assigned to the domain of their centre of geometry;\n"
    "r_comm = rlist + the largest molecule radius. The pair-list radius and the decomposition\n"
    "come from the same code as `halox md` with the same options (--rc, --rlist, --buffer-tol,\n"
    "--nstlist, --dt, --model, --gen-vel, --thermostat, --ref-t, --eps-rf, --eps-r, --gpu), so\n"
    "the plan is the one `mpirun -np N halox md` will use (with --gpu and no --nstlist the\n"
    "interval and rlist it chooses). --json prints one JSON object (schema in\n"
    "docs/plan-json.md).",
    run_plan,
};

typedef struct pulse_sum {
    int dim, pulse;
    long long send_total, recv_total;
    int send_min, send_max, recv_min, recv_max;
} pulse_sum;

typedef struct plan_totals {
    int domains;
    long long home, halo;
    int halo_min, halo_max;
} plan_totals;

/* The --json object (docs/plan-json.md) through cJSON: strings escaped, numbers exact. */
static hx_status print_json(const hx_system *sys, const hx_dd *dd, const int grid[3], double rc,
                            const hx_md_list_setup *ls, double rmol, double r_comm,
                            const pulse_sum *ps, int npulses, const plan_totals *t)
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
             hx_json_add(root, "rlist", hx_json_number(ls->rlist)) &&
             hx_json_add(root, "nstlist", hx_json_int(ls->nstlist)) &&
             hx_json_add(root, "nstlist_automatic", cJSON_CreateBool(ls->automatic)) &&
             hx_json_add(root, "rlist_inner", hx_json_number(ls->rlist_inner)) &&
             hx_json_add(root, "prune_parts", hx_json_int(ls->prune_parts)) &&
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
    const char *conf = NULL, *grid_text = NULL, *model = "spce", *thermostat = "no";
    int ranks = 8, json = 0, atoms = 3000, seed = 1, gpu = 0;
    int nstlist = INT_MIN; /* not given: halox md's default */
    hx_md_params mp;
    hx_md_params_default(&mp);
    double gen_vel = -1.0;
    hx_opt opts[] = {
        {"c", NULL, HX_OPT_STRING, &conf, "FILE", "input configuration (.gro); default: built-in"},
        {"atoms", NULL, HX_OPT_INT, &atoms, "N", "atoms of the built-in SPC/E box (without -c)"},
        {"seed", NULL, HX_OPT_INT, &seed, "S", "seed of the built-in box"},
        {"dd", NULL, HX_OPT_STRING, &grid_text, "AxBxC",
         "domain grid (default: chosen for --ranks)"},
        {"ranks", NULL, HX_OPT_INT, &ranks, "N", "number of domains when --dd is not given"},
        {"rc", NULL, HX_OPT_DOUBLE, &mp.rc, "NM", "interaction cut-off (as halox md)"},
        {"rlist", NULL, HX_OPT_DOUBLE, &mp.rlist, "NM",
         "pair-list radius (0: from --buffer-tol, as halox md)"},
        {"buffer-tol", NULL, HX_OPT_DOUBLE, &mp.verlet_buffer_tolerance, "KJ",
         "Verlet buffer tolerance, kJ/mol/ps per atom (as halox md)"},
        {"nstlist", NULL, HX_OPT_INT, &nstlist, "N",
         "steps between pair searches (default 10; with --gpu chosen, as halox md)"},
        {"gpu", NULL, HX_OPT_FLAG, &gpu, NULL, "the plan of a halox md --gpu run"},
        {"dt", NULL, HX_OPT_DOUBLE, &mp.dt, "PS", "time step"},
        {"model", NULL, HX_OPT_STRING, &model, "NAME",
         "spce, spc, tip3p, argon, or oplsaa[-spce|-spc|-tip3p] (ethanol in water)"},
        {"gen-vel", NULL, HX_OPT_DOUBLE, &gen_vel, "K",
         "temperature of generated velocities (<0: velocities of the input)"},
        {"thermostat", NULL, HX_OPT_STRING, &thermostat, "NAME", "no or v-rescale"},
        {"ref-t", NULL, HX_OPT_DOUBLE, &mp.ref_t, "K", "thermostat temperature"},
        {"eps-rf", NULL, HX_OPT_DOUBLE, &mp.eps_rf, "X", "reaction-field dielectric"},
        {"eps-r", NULL, HX_OPT_DOUBLE, &mp.eps_r, "X", "relative dielectric"},
        {"json", NULL, HX_OPT_FLAG, &json, NULL, "print one JSON object instead of a table"},
    };
    int pr = hx_cli_parse(&hx_cmd_plan, opts, (int)(sizeof opts / sizeof opts[0]), argc, argv);
    if (pr != 0)
        return pr > 0 ? 0 : 2;
    mp.model = model;
    mp.backend = gpu ? "gpu" : NULL;
    mp.nstlist_auto = nstlist == INT_MIN;
    mp.nstlist = mp.nstlist_auto ? 10 : nstlist;
    mp.gen_vel = gen_vel >= 0;
    mp.gen_temp = gen_vel >= 0 ? gen_vel : 0.0;
    if (strcmp(thermostat, "v-rescale") == 0)
        mp.thermostat = HX_THERMOSTAT_VRESCALE;
    else if (strcmp(thermostat, "no") != 0 && strcmp(thermostat, "none") != 0) {
        fprintf(stderr, "halox plan: error: unknown thermostat '%s': use no or v-rescale\n",
                thermostat);
        return 2;
    }
    /* Every option is checked before any work, each with its own message: a value that only
     * fails deep inside the grid search would come back as an unrelated geometry error. */
    if (!(mp.rc > 0)) {
        fprintf(stderr, "halox plan: error: --rc %g: the cut-off must be positive (e.g. 1.0)\n",
                mp.rc);
        return 1;
    }
    if (ranks < 1) {
        fprintf(stderr,
                "halox plan: error: --ranks %d: the number of domains must be at least 1 (or "
                "give the grid with --dd AxBxC)\n",
                ranks);
        return 1;
    }
    if (!conf && atoms < 1) {
        fprintf(stderr, "halox plan: error: --atoms %d: the built-in box needs at least 1 atom\n",
                atoms);
        return 1;
    }
    if (seed < 0) {
        fprintf(stderr, "halox plan: error: --seed %d: must be >= 0\n", seed);
        return 1;
    }
    hx_system *sys = NULL;
    hx_decomp *dec = NULL;
    hx_comm *comm = NULL;
    const hx_dd *dd = NULL;
    const hx_plan *plan = NULL;
    int nd = 0, rcode = 1;
    pulse_sum *ps = NULL;
    hx_status st;
    if (conf)
        st = hx_gro_read(conf, &sys);
    else
        st = hx_build_water("spce", atoms, 0.0, (uint64_t)seed, &sys);
    if (st != HX_OK)
        goto fail;
    const char *source = conf ? conf : "the built-in box";
    if (sys->nmol == 0) {
        fprintf(stderr, "halox plan: error: %s has no atoms\n", source);
        goto out;
    }
    for (int d = 0; d < 3; d++) {
        if (!(mp.rc < 0.5 * sys->box[d])) {
            fprintf(stderr,
                    "halox plan: error: %s: the box (%g x %g x %g nm) is too small for the "
                    "cut-off %g nm, which must be below half of every box edge (%c is %g nm); "
                    "use --rc below %g nm or a larger box\n",
                    source, sys->box[0], sys->box[1], sys->box[2], mp.rc, "xyz"[d], sys -> box[d],
                    0.5 * sys -> box[d]);
            goto out;
        }
    }
    /* exactly what halox md does: the pair lists, whole molecules, the decomposition */
    int grid[3] = {0, 0, 0};
    if (grid_text && (st = hx_dd_parse_grid(grid_text, grid)) != HX_OK)
        goto fail;
    nd = grid_text ? grid[0] * grid[1] * grid[2] : ranks;
    hx_md_list_setup ls;
    if ((st = hx_md_params_check(&mp, sys)) != HX_OK ||
        (st = hx_md_list_setup_resolve(sys, &mp, nd, grid, &ls)) != HX_OK)
        goto fail;
    const double rlist = ls.rlist, rc = mp.rc;
    hx_system_make_whole(sys);
    hx_decomp_params dparams = {rc, rlist, {grid[0], grid[1], grid[2]}};
    if ((st = hx_comm_create_serial(nd, &comm)) != HX_OK ||
        (st = hx_decomp_create(sys, &dparams, comm, &dec)) != HX_OK)
        goto fail;
    dd = hx_decomp_dd(dec);
    plan = hx_decomp_plan(dec);
    hx_dd_grid(dd, grid);
    const double rmol = hx_decomp_molecule_radius(dec), r_comm = hx_decomp_r_comm(dec);

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
        if ((st = print_json(sys, dd, grid, rc, &ls, rmol, r_comm, ps, npulses, &t)) != HX_OK)
            goto fail;
    } else {
        printf("system      %d atom%s, %d molecule%s, box %.4f x %.4f x %.4f nm\n", sys->natoms,
               sys->natoms == 1 ? "" : "s", sys->nmol, sys->nmol == 1 ? "" : "s", sys->box[0],
               sys->box[1], sys->box[2]);
        printf("grid        %d x %d x %d = %d domain%s\n", grid[0], grid[1], grid[2], nd,
               nd == 1 ? "" : "s");
        printf("cell size   %.4f x %.4f x %.4f nm\n", hx_dd_cell_size(dd, 0),
               hx_dd_cell_size(dd, 1), hx_dd_cell_size(dd, 2));
        if (ls.automatic)
            printf("nstlist     %d -> %d, rlist %.4f -> %.4f nm (chosen for the GPU)\n",
                   ls.nstlist_ref, ls.nstlist, ls.rlist_ref, ls.rlist);
        else
            printf("nstlist     %d\n", ls.nstlist);
        if (ls.prune_parts > 0)
            printf("prune       inner rlist %.4f nm, every %d steps\n", ls.rlist_inner,
                   ls.prune_parts);
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
    if (sys && st == HX_ERR_GEOMETRY) {
        /* a grid that does not fit is a property of this system's box: say which system */
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", hx_last_error_message());
        st = hx_error_set(st, __FILE__, __LINE__, __func__, "%s: %s",
                          conf ? conf : "the built-in box", msg);
    }
    hx_cli_report_error("plan", st);
out:
    free(ps);
    hx_decomp_destroy(&dec);
    hx_comm_destroy(&comm);
    hx_system_destroy(&sys);
    return rcode;
}
