/* `halox build` as a user runs it: it writes a file that hx_gro_read reads back and that equals
 * the library's build for the same arguments; bad input exits non-zero, says why, and leaves no
 * output file and no temporary behind; an existing output is kept as #name.1#, and one that
 * another run holds locked is refused untouched. Arguments: path of the halox program. */
#include "testutil.h"

#include "halox/build.h"
#include "halox/io.h"

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *halox;
static char dir[256];

/* Run "halox <args>" with stdout+stderr captured into out; returns the exit status. */
static int run(const char *args, char *out, size_t cap)
{
    char cmd[4096];
    /* HALOX_LOG would change what an error prints */
    snprintf(cmd, sizeof cmd, "env -u HALOX_LOG '%s' %s 2>&1", halox, args);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* 1 when the file holds exactly text */
static int same_text(const char *path, const char *text)
{
    char buf[256];
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strcmp(buf, text) == 0;
}

static int temporaries(void)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        n += strstr(e->d_name, ".tmp.") != NULL;
    if (d)
        closedir(d);
    return n;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_build_cli <path to halox>\n");
        return 2;
    }
    halox = argv[1];
    snprintf(dir, sizeof dir, "/tmp/halox_test_build_cli_XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    int ncases = 0;
    char out[8192], args[2048], path[512];

    /* a water box, read back and compared with the library's build */
    ncases++;
    snprintf(path, sizeof path, "%s/water.gro", dir);
    snprintf(args, sizeof args, "build water --model tip3p --atoms 3000 --seed 3 -o %s", path);
    int rc = run(args, out, sizeof out);
    T_CHECK(rc == 0, "'halox %s' exited %d:\n%s", args, rc, out);
    hx_system *s = NULL, *ref = NULL;
    T_OK(hx_gro_read(path, &s));
    T_OK(hx_build_water("tip3p", 3000, 0, 3, &ref));
    /* the summary line: density and closest O-O distance read from it (checked for range), the
     * rest exactly */
    double density = 0, doo = 0;
    const char *dl = strstr(out, "density ");
    if (!dl || sscanf(dl, "density %lf g/cm3, min O-O %lf nm", &density, &doo) != 2)
        T_FAIL("summary line lacks density and min O-O: %s", out);
    char summary[1024];
    snprintf(summary, sizeof summary,
             "halox build: water tip3p: 3000 atoms, 1000 molecules, box %.5f x %.5f x %.5f nm, "
             "density %.4f g/cm3, min O-O %.4f nm -> %s\n",
             ref ? ref->box[0] : 0, ref ? ref->box[1] : 0, ref ? ref->box[2] : 0, density, doo,
             path);
    T_CHECK(strcmp(out, summary) == 0 && fabs(density - 0.982) < 0.01 && doo >= 0.23,
            "summary\n%s\nexpected (TIP3P at 0.982 g/cm3, O-O >= 0.23 nm)\n%s", out, summary);
    if (s && ref) {
        /* the file holds the library's system to the written precision, exactly: atoms, names,
         * molecules, title, coordinates, box; no velocities */
        T_CHECK(s->natoms == 3000 && s->nmol == 1000, "read back %d atoms %d molecules", s->natoms,
                s->nmol);
        t_gro_same(s, ref, 0, "halox build water vs hx_build_water");
    }
    hx_system_destroy(&s);
    hx_system_destroy(&ref);

    /* argon by box edge; the same command twice gives the same bytes */
    ncases++;
    snprintf(path, sizeof path, "%s/argon.gro", dir);
    snprintf(args, sizeof args, "build argon --box 3.0 --seed 9 --output=%s", path);
    rc = run(args, out, sizeof out);
    T_CHECK(rc == 0, "'halox %s' exited %d:\n%s", args, rc, out);
    T_OK(hx_gro_read(path, &s));
    if (s)
        T_CHECK(s->natoms > 500 && strcmp(s->atom_name[0], "AR") == 0, "argon file: %d atoms %s",
                s->natoms, s->atom_name[0]);
    hx_system_destroy(&s);
    {
        char again[512], a1[1 << 15], a2[1 << 15];
        snprintf(again, sizeof again, "%s/argon2.gro", dir);
        snprintf(args, sizeof args, "build argon --box 3.0 --seed 9 --output=%s", again);
        rc = run(args, out, sizeof out);
        T_CHECK(rc == 0, "'halox %s' exited %d:\n%s", args, rc, out);
        FILE *f1 = fopen(path, "rb"), *f2 = fopen(again, "rb");
        size_t n1 = f1 ? fread(a1, 1, sizeof a1, f1) : 0, n2 = f2 ? fread(a2, 1, sizeof a2, f2) : 0;
        T_CHECK(n1 > 0 && n1 < sizeof a1 && n1 == n2 && memcmp(a1, a2, n1) == 0,
                "the same argon command wrote different files (%zu and %zu bytes)", n1, n2);
        if (f1)
            fclose(f1);
        if (f2)
            fclose(f2);
        remove(again);
    }

    /* --help works without a system kind */
    ncases++;
    rc = run("build --help", out, sizeof out);
    T_CHECK(rc == 0 && strstr(out, "--atoms") && strstr(out, "--model"),
            "'halox build --help' exited %d:\n%s", rc, out);

    /* bad input: non-zero exit, exactly its message, no output file */
#define LIB_ERROR(msg)                                                                             \
    "halox build: error: " msg "\n  (HX_ERR_INVALID_ARG; set HALOX_LOG=debug for where it was "    \
    "raised)\n"
    const struct {
        const char *args;
        const char *says;
    } bad[] = {
        {"build ice --atoms 300 -o %s",
         "halox build: unknown system kind 'ice'; use 'water', 'argon' or 'mixture'\n"},
        {"build water --model nosuch --atoms 300 -o %s",
         LIB_ERROR("unknown water model 'nosuch': use one of spce, spc, tip3p")},
        {"build water --atoms 0 -o %s",
         "halox build: give --atoms N (> 0) or --box NM (> 0); got --atoms 0 --box 0\n"},
        {"build water --atoms -9 -o %s",
         "halox build: give --atoms N (> 0) or --box NM (> 0); got --atoms -9 --box 0\n"},
        {"build water --atoms abc -o %s",
         "halox build: option '--atoms' expects an integer, got 'abc'\n"},
        {"build water --atoms 300 --bogus 1 -o %s",
         "halox build: unknown option '--bogus' (see 'halox build --help')\n"},
        {"build --atoms 300 -o %s", "halox build: missing the system kind: 'halox build water "
                                    "...', 'halox build argon ...' or 'halox build mixture "
                                    "...'\n"},
        {"build water --atoms 30000 --box 1.0 -o %s",
         "warning: water spce: the requested density is above the model's; using the lattice "
         "builder (not relaxed: start MD with a thermostat and a small time step)\n" LIB_ERROR(
             "cannot place 10000 water molecules in a 1 nm box with OW-OW distances of at least "
             "0.23 nm (the best lattice, fcc, gives 0.0505 nm); give more atoms or a larger box")},
    };
#undef LIB_ERROR
    snprintf(path, sizeof path, "%s/bad.gro", dir);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ncases++;
        snprintf(args, sizeof args, bad[i].args, path);
        rc = run(args, out, sizeof out);
        T_CHECK(rc != 0, "'halox %s' exited 0", args);
        T_CHECK(strcmp(out, bad[i].says) == 0, "'halox %s' said\n%s\nexpected\n%s", args, out,
                bad[i].says);
        T_CHECK(!exists(path), "'halox %s' created %s", args, path);
    }

    /* an output that cannot be written: missing directory */
    ncases++;
    rc = run("build water --atoms 300 -o /nonexistent-halox-dir/w.gro", out, sizeof out);
    T_CHECK(rc != 0 &&
                strcmp(out, "halox build: error: the directory '/nonexistent-halox-dir' of the "
                            "configuration (-o) '/nonexistent-halox-dir/w.gro' does not exist: "
                            "create it (mkdir -p /nonexistent-halox-dir) or choose another "
                            "path\n  (HX_ERR_IO; set HALOX_LOG=debug for where it was "
                            "raised)\n") == 0,
            "writing into a missing directory exited %d:\n%s", rc, out);

    /* existing files are kept as #name.1#, as halox md keeps them (they were overwritten) */
    ncases++;
    char conf[512], topf[512], bak[640];
    snprintf(conf, sizeof conf, "%s/keep.gro", dir);
    snprintf(topf, sizeof topf, "%s/keep.top", dir);
    write_text(conf, "old configuration\n");
    write_text(topf, "old topology\n");
    snprintf(args, sizeof args, "build argon --box 3.0 --seed 9 -o %s --top %s", conf, topf);
    rc = run(args, out, sizeof out);
    T_CHECK(rc == 0, "'halox %s' exited %d:\n%s", args, rc, out);
    snprintf(bak, sizeof bak, "%s/#keep.gro.1#", dir);
    T_CHECK(same_text(bak, "old configuration\n"), "the old %s was not kept as %s:\n%s", conf, bak,
            out);
    char said[1400];
    snprintf(said, sizeof said, "halox build: backed up %s to %s\n", conf, bak);
    T_CHECK(strstr(out, said) != NULL, "the backup of %s was not reported:\n%s", conf, out);
    remove(bak);
    snprintf(bak, sizeof bak, "%s/#keep.top.1#", dir);
    T_CHECK(same_text(bak, "old topology\n"), "the old %s was not kept as %s:\n%s", topf, bak, out);
    remove(bak);
    T_OK(hx_gro_read(conf, &s));
    T_CHECK(s && s->natoms > 500, "%s was not replaced by the new argon box", conf);
    hx_system_destroy(&s);
    remove(conf);
    remove(topf);

    /* a file that another run is writing (its lock held): refused, and left as it was */
    ncases++;
    char lockf[600];
    snprintf(conf, sizeof conf, "%s/locked.gro", dir);
    snprintf(lockf, sizeof lockf, "%s/.locked.gro.halox-lock", dir);
    write_text(conf, "being written\n");
    write_text(lockf, "pid 4242 on testhost, started now, halox md\n");
    int lfd = open(lockf, O_RDWR);
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    T_CHECK(lfd >= 0 && fcntl(lfd, F_SETLK, &fl) == 0, "cannot lock %s", lockf);
    snprintf(args, sizeof args, "build argon --box 3.0 --seed 9 -o %s", conf);
    rc = run(args, out, sizeof out);
    T_CHECK(rc != 0 && strstr(out, "is being written by another halox run (pid 4242 on testhost"),
            "'halox %s' with the output locked exited %d:\n%s", args, rc, out);
    T_CHECK(same_text(conf, "being written\n"), "the locked %s was changed", conf);
    snprintf(bak, sizeof bak, "%s/#locked.gro.1#", dir);
    T_CHECK(!exists(bak), "the locked %s was backed up", conf);
    if (lfd >= 0)
        close(lfd);
    remove(lockf);
    remove(conf);

    /* a write-protected existing file stays as it is (root may write anything: skipped) */
    if (geteuid() != 0) {
        ncases++;
        snprintf(path, sizeof path, "%s/protected.gro", dir);
        FILE *f = fopen(path, "w");
        if (f) {
            fputs("keep\n", f);
            fclose(f);
        }
        chmod(path, 0444);
        snprintf(args, sizeof args, "build water --atoms 300 -o %s", path);
        rc = run(args, out, sizeof out);
        struct stat sb;
        T_CHECK(rc != 0 && stat(path, &sb) == 0 && sb.st_size == 5,
                "write-protected output: exit %d, file changed:\n%s", rc, out);
        chmod(path, 0644);
        remove(path);
    } else {
        printf("test_build_cli: running as root, write-protection case skipped\n");
    }
    T_CHECK(temporaries() == 0, "temporary files left in %s", dir);

    const char *files[] = {"water.gro", "argon.gro", "bad.gro"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        remove(path);
    }
    rmdir(dir);
    return t_finish("test_build_cli", ncases);
}
