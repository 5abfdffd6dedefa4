/* `halox md` command line: bad parameters exit 1 with exactly their message (the library's
 * message with its status line, or the program's own) and leave an existing -o file untouched;
 * a valid single point (--steps 0) prints exactly the energies the library computes for the
 * same input and writes -o. argv[1]: the halox program. */
#include "test_md_common.h"

#include "halox/io.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[256];

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static int run(const char *prog, const char *args)
{
    char cmd[2048];
    /* HALOX_LOG would change what an error prints (debug adds the trace) */
    snprintf(cmd, sizeof cmd, "cd %s && env -u HALOX_LOG %s md %s >stdout.txt 2>stderr.txt", dir,
             prog, args);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* stderr must be exactly expect */
static void bad(const char *prog, const char *args, const char *expect)
{
    char path[512];
    snprintf(path, sizeof path, "%s/out.gro", dir);
    FILE *f = fopen(path, "w");
    fputs("KEEP ME\n", f);
    fclose(f);
    int rc = run(prog, args);
    const char *err = slurp(strcat(strcpy(path, dir), "/stderr.txt"));
    T_CHECK(rc == 1, "'halox md %s': exit %d, expected 1", args, rc);
    T_CHECK(err && strcmp(err, expect) == 0, "'halox md %s': stderr\n%s\nexpected\n%s", args,
            err ? err : "(none)", expect);
    snprintf(path, sizeof path, "%s/out.gro", dir);
    const char *out = slurp(path);
    T_CHECK(out && strcmp(out, "KEEP ME\n") == 0, "'halox md %s' touched out.gro", args);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_md_cli /path/to/halox\n");
        return 2;
    }
    const char *prog = argv[1];
    snprintf(dir, sizeof dir, "/tmp/halox_md_cli.%d", (int)getpid());
    char cmd[512];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
    T_CHECK(system(cmd) == 0, "mkdir %s", dir);
    hx_system *s = tmd_water_lattice("spce", 6, 0.02, 3);
    char path[512];
    snprintf(path, sizeof path, "%s/conf.gro", dir);
    T_OK(hx_gro_write(path, s, 0));
    /* the box edge as the program reads it (five decimals) */
    hx_system *conf = NULL;
    T_OK(hx_gro_read(path, &conf));
    /* the program names the input and its box; velocities are generated so that the start
     * from rest warning does not precede the error */
    char halfbox[512];
    const double L = conf ? conf->box[0] : 0.0;
    snprintf(halfbox, sizeof halfbox,
             "halox md: error: conf.gro (box %g x %g x %g nm): cut-off/pair-list radius 1.2 nm is "
             "not below half the box edge along x (the edge is %g nm, half of it %g nm): use a "
             "shorter cut-off or a larger box\n"
             "  (HX_ERR_INVALID_ARG; set HALOX_LOG=debug for where it was raised)\n",
             L, L, L, L, 0.5 * L); /* the edge and its half (it said "half the edge x = edge") */
    hx_system_destroy(&conf);
#define LIB_ERROR(msg)                                                                             \
    "halox md: error: " msg "\n  (HX_ERR_INVALID_ARG; set HALOX_LOG=debug for where it was "       \
    "raised)\n"
    const char *common = "-c conf.gro -o out.gro -g run.log";
    struct {
        const char *extra, *expect;
    } cases[] = {
        {"--steps 10 --dt 0", LIB_ERROR("time step dt = 0 ps: must be positive (typically 0.002)")},
        {"--steps 10 --dt -0.001",
         LIB_ERROR("time step dt = -0.001 ps: must be positive (typically 0.002)")},
        {"--steps 10 --rc 1.0 --rlist 0.9",
         LIB_ERROR("rlist = 0.9 nm is shorter than the cut-off rc = 1 nm: use rlist >= rc (or "
                   "leave it out to take it from the buffer tolerance)")},
        {"--steps 10 --nstlist 0", LIB_ERROR("nstlist = 0: must be >= 1")},
        {"--steps -5", "halox md: --steps (-5), --nstenergy (100), --nstxout (0), --threads (0), "
                       "--seed (1), --nstcheckpoint (0) and --nstlog (1000) must be >= 0\n"},
        {"--steps 10 --rc 1.2 --gen-vel 300", halfbox},
        {"--steps 10 --model tip5p",
         LIB_ERROR(
             "unknown model 'tip5p': use spce, spc, tip3p, argon or oplsaa (ethanol in water)")},
        {"--steps 10 --thermostat berendsen",
         "halox md: unknown thermostat 'berendsen': use no or v-rescale\n"},
    };
#undef LIB_ERROR
    int ncase = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++, ncase++) {
        char args[512];
        snprintf(args, sizeof args, "%s %s", common, cases[i].extra);
        bad(prog, args, cases[i].expect);
    }
    bad(prog, "-o out.gro --steps 10",
        "halox md: missing the input configuration: -c conf.gro (or --restart checkpoint)\n");
    bad(prog, "-c missing.gro -o out.gro --steps 10",
        "halox md: error: cannot open 'missing.gro' for reading: No such file or directory\n"
        "  (HX_ERR_IO; set HALOX_LOG=debug for where it was raised)\n");
    ncase += 2;
    /* a valid single point: the printed energies are the library's for the same input, seed and
     * thread count (one thread: the same summation order), digit for digit */
    int rc = run(prog, "-c conf.gro -o good.gro --steps 0 --rc 0.8 --rlist 0.85 --gen-vel 300 "
                       "--threads 1");
    snprintf(path, sizeof path, "%s/stdout.txt", dir);
    const char *outp = slurp(path);
    char want[512] = "(library run failed)";
    snprintf(path, sizeof path, "%s/conf.gro", dir);
    T_OK(hx_gro_read(path, &conf));
    hx_md_params mp;
    hx_md_params_default(&mp);
    mp.rc = 0.8;
    mp.rlist = 0.85;
    mp.gen_vel = 1;
    mp.gen_temp = 300;
    mp.nthreads = 1;
    hx_md *md = NULL;
    if (conf && hx_md_create(conf, &mp, &md) == HX_OK && hx_md_evaluate(md) == HX_OK) {
        const hx_md_energies *e = hx_md_last_energies(md);
        snprintf(want, sizeof want,
                 "single-point energies (kJ/mol):\n  lj        %.8f\n  coulomb   %.8f\n"
                 "  potential %.8f\n  kinetic   %.8f\n  total     %.8f\n  temperature %.4f K\n",
                 e->lj, e->coulomb, e->potential, e->kinetic, e->total, e->temperature);
    }
    hx_md_destroy(&md);
    hx_system_destroy(&conf);
    T_CHECK(rc == 0 && outp && strcmp(outp, want) == 0,
            "single point: exit %d, stdout:\n%s\nexpected (library, same input):\n%s", rc,
            outp ? outp : "", want);
    snprintf(path, sizeof path, "%s/good.gro", dir);
    T_CHECK(access(path, F_OK) == 0, "single point did not write good.gro");
    snprintf(path, sizeof path, "%s/md.log", dir);
    const char *log = slurp(path);
    T_CHECK(log && strstr(log, "performance:"), "md.log lacks the performance line");
    ncase++;
    /* Missed pairs: with an explicit, too short rlist one warning on stderr (not one per check)
     * and the total in the log; with rlist from the buffer tolerance no warning at all. */
    rc = run(prog, "-c conf.gro -o miss.gro -g miss.log --steps 60 --rc 0.7 --rlist 0.7001 "
                   "--nstlist 10 --check-pairs 1 --gen-vel 300");
    snprintf(path, sizeof path, "%s/stderr.txt", dir);
    const char *err = slurp(path);
    int nwarn = 0;
    for (const char *q = err; q && (q = strstr(q, "were missing from the pair list")); q++)
        nwarn++;
    T_CHECK(rc == 0 && nwarn == 1, "rlist 0.7001: exit %d, %d missed-pair warnings (want 1):\n%s",
            rc, nwarn, err ? err : "");
    snprintf(path, sizeof path, "%s/miss.log", dir);
    log = slurp(path);
    const char *tot = log ? strstr(log, "checked for missed pairs:") : NULL;
    long long nmissed = -1;
    T_CHECK(tot && sscanf(tot, "checked for missed pairs: %lld missed", &nmissed) == 1 &&
                nmissed > 0,
            "miss.log: missed-pair total %lld, want > 0 with rlist 0.7001", nmissed);
    rc = run(prog, "-c conf.gro -o auto.gro -g auto.log --steps 60 --rc 0.7 --nstlist 10 "
                   "--check-pairs 1 --gen-vel 300");
    snprintf(path, sizeof path, "%s/stderr.txt", dir);
    err = slurp(path);
    T_CHECK(rc == 0 && err && !strstr(err, "were missing from the pair list"),
            "rlist from the tolerance: exit %d, stderr:\n%s", rc, err ? err : "");
    ncase += 2;
    hx_system_destroy(&s);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return t_finish("test_md_cli", ncase);
}
