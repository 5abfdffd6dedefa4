/* halox build: write a starting configuration (water, argon or an ethanol-water mixture) as a
 * .gro file. */
#include "commands.h"
#include "runinfo.h"

#include "halox/build.h"
#include "halox/io.h"
#include "halox/log.h"
#include "halox/models.h"
#include "halox/error.h"
#include "halox/files.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int run_build(int argc, char **argv);
static int build_and_write(const char *kind, const char *model, const hx_water_model *wm,
                           int is_water, int is_argon, int is_mix, int atoms, double box, int seed,
                           int lattice, double fraction, double relax, const char *output,
                           const char *top);

const hx_cmd hx_cmd_build = {
    "build", "build a water, argon or ethanol-water box and write it as .gro",
    "halox build water|argon|mixture [options]",
    "Fills a cubic box with rigid water molecules of the chosen model at its liquid density by\n"
    "tiling a 1000-molecule box equilibrated at 300 K with halox (shipped in the library; see\n"
    "data/README.md): relaxed liquid, ready for MD at 300 K. A box of whole tiles is seamless;\n"
    "other sizes are cut from the tiles, with the molecules that clash at the cut faces turned\n"
    "or removed (MD from such a box warms by roughly 400 K nm / box edge). Below about 800\n"
    "molecules, and with --lattice, molecules go on a lattice with random orientations (not\n"
    "relaxed: use a thermostat and a small time step first). Argon always uses a lattice.\n"
    "Give --atoms or --box (or both). The same seed gives the same file. The output is\n"
    "replaced only when writing succeeds.\n"
    "mixture: ethanol in water (--model oplsaa-tip3p, -spce or -spc: OPLS-AA ethanol in that\n"
    "water, the name halox md takes; oplsaa alone is oplsaa-tip3p) at --ethanol-fraction (a\n"
    "MOLE fraction, 0.1 unless given) and the experimental density of the mixture at 300 K;\n"
    "molecules are inserted at random, minimised and run for --relax ps (2.5 unless given)\n"
    "with a thermostat at 300 K (boxes above 12000 atoms: copies of one relaxed tile), and\n"
    "written with their velocities. Give --atoms; the report compares the built density with\n"
    "the experimental one. --top writes the topology for the same model.",
    run_build};

static int run_build(int argc, char **argv)
{
    const char *model = NULL, *output = "conf.gro", *top = NULL;
    int atoms = 0, seed = 1, lattice = 0;
    double box = 0.0, fraction = 0.1;
    const char *fraction_text = NULL; /* a string: NULL tells "not given" */
    const char *relax_text = NULL;
    hx_opt opts[] = {
        {"model", NULL, HX_OPT_STRING, &model, "NAME",
         "the model as halox md takes it (default spce, for a mixture oplsaa): water spce, spc "
         "or tip3p; a mixture oplsaa (= oplsaa-tip3p), oplsaa-spce or oplsaa-spc"},
        {"relax", NULL, HX_OPT_STRING, &relax_text, "PS",
         "mixture: MD of the relaxation at 300 K, ps (default 2.5; 0: minimisation only)"},
        {"ethanol-fraction", NULL, HX_OPT_STRING, &fraction_text, "X",
         "mixture: mole fraction of ethanol, 0..1 (default 0.1)"},
        {"atoms", "n", HX_OPT_INT, &atoms, "N", "number of atoms (rounded to whole molecules)"},
        {"box", NULL, HX_OPT_DOUBLE, &box, "NM", "cubic box edge; 0: from --atoms and density"},
        {"seed", NULL, HX_OPT_INT, &seed, "S", "random seed (>= 0) for sites and orientations"},
        {"lattice", NULL, HX_OPT_FLAG, &lattice, NULL,
         "water on a lattice with random orientations (not relaxed)"},
        {"output", "o", HX_OPT_STRING, &output, "FILE", "output .gro file"},
        {"top", "p", HX_OPT_STRING, &top, "FILE",
         "also write a GROMACS topology (.top) of the system, for gmx grompp with the same .gro"},
    };
    const int nopts = (int)(sizeof opts / sizeof opts[0]);

    /* The system kind is the first word; shift it off so the option parser sees only options
     * (argv[0] of the shifted vector is the kind, which the parser skips like a command name). */
    const char *kind = NULL;
    if (argc >= 2 && argv[1][0] != '-') {
        kind = argv[1];
        argc--;
        argv++;
    }
    int pr = hx_cli_parse(&hx_cmd_build, opts, nopts, argc, argv);
    if (pr > 0)
        return 0;
    if (pr < 0)
        return 1;
    if (!kind) {
        fprintf(stderr, "halox build: missing the system kind: 'halox build water ...', "
                        "'halox build argon ...' or 'halox build mixture ...'\n");
        return 1;
    }
    int is_water = strcmp(kind, "water") == 0, is_argon = strcmp(kind, "argon") == 0;
    int is_mix = strcmp(kind, "mixture") == 0;
    if (!is_water && !is_argon && !is_mix) {
        fprintf(stderr,
                "halox build: unknown system kind '%s'; use 'water', 'argon' or 'mixture'\n", kind);
        return 1;
    }
    if (!is_mix && fraction_text) {
        fprintf(stderr, "halox build: --ethanol-fraction is for 'halox build mixture'\n");
        return 1;
    }
    if (is_mix && (box != 0.0 || lattice)) {
        fprintf(stderr, "halox build: a mixture takes --atoms (its box follows from the "
                        "density); --box and --lattice are for water\n");
        return 1;
    }
    if (fraction_text) {
        char *end = NULL;
        errno = 0;
        fraction = strtod(fraction_text, &end);
        if (end == fraction_text || *end || errno || !(fraction >= 0.0 && fraction <= 1.0)) {
            fprintf(stderr,
                    "halox build: --ethanol-fraction '%s': give a mole fraction between 0 and 1 "
                    "(e.g. 0.1)\n",
                    fraction_text);
            return 1;
        }
    }
    /* One set of model names with halox md: water takes its water model (spce), a mixture the
     * model md runs it with (oplsaa-spce; oplsaa alone is oplsaa-tip3p, as in md). A mixture
     * built with --model spce needed --model oplsaa-spce in md. */
    if (!model)
        model = is_mix ? "oplsaa" : "spce";
    const int oplsaa_name = strncmp(model, "oplsaa", 6) == 0;
    if (is_water && oplsaa_name) {
        fprintf(stderr,
                "halox build: --model %s is the model of an ethanol-water mixture (halox build "
                "mixture); for water give the water model: spce, spc or tip3p\n",
                model);
        return 1;
    }
    if (is_mix && !oplsaa_name) {
        fprintf(stderr,
                "halox build: --model %s is a water model; a mixture's model is oplsaa-%s "
                "(OPLS-AA ethanol in %s water), the name halox md runs it with: give --model "
                "oplsaa-%s\n",
                model, model, model, model);
        return 1;
    }
    const char *water_name = model;
    if (is_mix)
        water_name = model[6] == '\0' ? "tip3p" : model[6] == '-' ? model + 7 : "";
    const hx_water_model *wm = NULL;
    if (is_water || is_mix) {
        hx_status st = hx_water_model_find(water_name, &wm);
        if (st != HX_OK) {
            if (is_mix)
                fprintf(stderr,
                        "halox build: unknown mixture model '%s': use oplsaa (ethanol in TIP3P), "
                        "oplsaa-tip3p, oplsaa-spce or oplsaa-spc\n",
                        model);
            else
                hx_cli_report_error("build", st);
            return 1;
        }
    }
    if (!is_mix && relax_text) {
        fprintf(stderr, "halox build: --relax is for 'halox build mixture'\n");
        return 1;
    }
    double relax = 2.5;
    if (relax_text) {
        char *end = NULL;
        errno = 0;
        relax = strtod(relax_text, &end);
        if (end == relax_text || *end || errno || !(relax >= 0.0 && relax <= 1000.0)) {
            fprintf(stderr,
                    "halox build: --relax '%s': give the relaxation's length in ps, 0 to 1000 "
                    "(0: minimisation only)\n",
                    relax_text);
            return 1;
        }
    }
    if (is_mix && atoms <= 0) {
        fprintf(stderr, "halox build: a mixture needs --atoms N (> 0); got --atoms %d\n", atoms);
        return 1;
    }
    if (atoms < 0 || box < 0 || (atoms == 0 && box <= 0)) {
        fprintf(stderr,
                "halox build: give --atoms N (> 0) or --box NM (> 0); got --atoms %d "
                "--box %g\n",
                atoms, box);
        return 1;
    }
    if (seed < 0) {
        fprintf(stderr, "halox build: --seed must be >= 0, got %d\n", seed);
        return 1;
    }
    if (!output || !*output) {
        fprintf(stderr, "halox build: --output needs a file name\n");
        return 1;
    }
    /* Check and lock the outputs before the build, which can take a while for large systems:
     * the same rules as halox md's outputs (a missing directory, a directory given as a file,
     * an unwritable file fail now; another run writing the same file is refused). */
    const char *out_path[2] = {output, top};
    const char *out_what[2] = {"the configuration (-o)", "the topology (--top)"};
    hx_lock *locks[2] = {NULL, NULL};
    hx_status st = HX_OK;
    for (int k = 0; k < 2 && st == HX_OK; k++)
        if (out_path[k])
            st = hx_output_check(out_path[k], out_what[k]);
    if (st == HX_OK && top && hx_path_same_file(top, output))
        st = hx_error_set(HX_ERR_INVALID_ARG, __FILE__, __LINE__, __func__,
                          "the topology (--top) and the configuration (-o) are the same file %s: "
                          "give them different names",
                          top);
    if (st == HX_OK) {
        char host[256], now[64], info[512];
        hx_app_hostname(host, sizeof host);
        hx_app_now(now, sizeof now);
        snprintf(info, sizeof info, "pid %ld on %s, started %s, halox build", (long)getpid(), host,
                 now);
        for (int k = 0; k < 2 && st == HX_OK; k++)
            if (out_path[k])
                st = hx_lock_acquire(out_path[k], out_what[k], info, &locks[k]);
    }
    if (st != HX_OK) {
        hx_cli_report_error("build", st);
        for (int k = 0; k < 2; k++)
            hx_lock_release(&locks[k]);
        return 1;
    }
    int rc = build_and_write(kind, water_name, wm, is_water, is_argon, is_mix, atoms, box, seed,
                             lattice, fraction, relax, output, top);
    for (int k = 0; k < 2; k++)
        hx_lock_release(&locks[k]);
    return rc;
}

/* An existing file is kept as #name.N# (a second link: the file itself stays in place until
 * the new one replaces it atomically, so a failed write loses nothing), as halox md and GROMACS
 * do with every file they replace. */
static hx_status keep_old(const char *path)
{
    char bak[PATH_MAX + 32];
    HX_TRY(hx_output_backup(path, 1, bak, sizeof bak));
    if (bak[0])
        fprintf(stderr, "halox build: backed up %s to %s\n", path, bak);
    return HX_OK;
}

static int build_and_write(const char *kind, const char *model, const hx_water_model *wm,
                           int is_water, int is_argon, int is_mix, int atoms, double box, int seed,
                           int lattice, double fraction, double relax, const char *output,
                           const char *top)
{
    hx_system *sys = NULL;
    hx_mixture_info mi;
    memset(&mi, 0, sizeof mi);
    hx_status st;
    if (is_mix) {
        hx_mixture_params mp;
        hx_mixture_params_default(&mp);
        mp.ethanol_fraction = fraction;
        mp.natoms = atoms;
        mp.water = model;
        mp.seed = (uint64_t)seed;
        for (int k = 0; k < 3; k++) /* the stages in proportion (defaults 0.1, 0.4, 2.0 ps) */
            mp.md_ps[k] *= relax / 2.5;
        st = hx_build_mixture(&mp, &sys, &mi);
    } else {
        st = !is_water ? hx_build_argon(atoms, box, (uint64_t)seed, &sys)
             : lattice ? hx_build_water_lattice(model, atoms, box, (uint64_t)seed, &sys)
                       : hx_build_water(model, atoms, box, (uint64_t)seed, &sys);
    }
    if (st != HX_OK) {
        hx_cli_report_error("build", st);
        return 1;
    }
    double dmin = 0;
    /* the closest O-O of waters (a mixture: between water oxygens too; without two waters,
     * between ethanol oxygens: pure ethanol reported an OW-OW distance of the search radius) */
    const int mix_eth_only = is_mix && mi.n_water < 2;
    const char *first = is_argon ? "AR" : mix_eth_only ? "O" : "OW";
    st = hx_build_min_distance(sys, first, 0.5, &dmin);
    if (st == HX_OK)
        st = keep_old(output);
    if (st == HX_OK) /* with velocities where the build has them (a relaxed mixture) */
        st = hx_gro_write(output, sys, sys->has_velocities);
    if (st == HX_OK && top)
        st = keep_old(top);
    char mixmodel[32];
    snprintf(mixmodel, sizeof mixmodel, "oplsaa-%s", wm ? wm->name : "tip3p");
    if (st == HX_OK && top)
        st = hx_topology_write(top, sys, is_mix ? mixmodel : is_water ? wm->name : "argon");
    if (st != HX_OK) {
        hx_cli_report_error("build", st);
        hx_system_destroy(&sys);
        return 1;
    }
    if (is_mix) {
        printf("halox build: mixture oplsaa-%s: %d atoms, %d ethanol + %d water (mole fraction "
               "%.4f, mass fraction %.4f), box %.5f x %.5f x %.5f nm, density %.4f g/cm3 "
               "(experiment at 300 K: %.4f), %s, relaxed to %.1f K, min %s %.4f nm -> "
               "%s\n",
               wm->name, sys->natoms, mi.n_ethanol, mi.n_water, mi.mole_fraction, mi.mass_fraction,
               sys->box[0], sys->box[1], sys->box[2], mi.density, mi.density_exp,
               mi.tiles > 1 ? "from tiles" : "one box", mi.temperature,
               mix_eth_only ? "O-O (ethanol)" : "OW-OW", dmin, output);
        if (top)
            printf("halox build: GROMACS topology -> %s (gmx grompp -c %s -p %s; halox md "
                   "--model %s)\n",
                   top, output, top, mixmodel);
        hx_system_destroy(&sys);
        return 0;
    }
    /* g/cm^3 = amu/nm^3 * 1.66053906660e-24 g/amu / 1e-21 cm^3/nm^3 */
    double mass =
        is_water ? sys->nmol * (wm->m_o + 2 * wm->m_h) : sys->nmol * hx_argon_model()->mass;
    double vol = sys->box[0] * sys->box[1] * sys->box[2];
    double rho = mass / vol * 1.66053906660e-3;
    printf("halox build: %s%s%s: %d atom%s, %d molecule%s, box %.5f x %.5f x %.5f nm, density "
           "%.4f g/cm3, min %s-%s %.4f nm -> %s\n",
           kind, is_water ? " " : "", is_water ? wm->name : "", sys->natoms,
           sys->natoms == 1 ? "" : "s", sys->nmol, sys->nmol == 1 ? "" : "s", sys->box[0],
           sys->box[1], sys->box[2], rho, is_water ? "O" : "Ar", is_water ? "O" : "Ar", dmin,
           output);
    if (top)
        printf("halox build: GROMACS topology -> %s (gmx grompp -c %s -p %s)\n", top, output, top);
    hx_system_destroy(&sys);
    return 0;
}
