/* `halox build` as a user runs it: it writes a file that hx_gro_read reads back and that equals
 * the library's build for the same arguments; bad input exits non-zero, says why, and leaves no
 * output file and no temporary behind. Arguments: path of the halox program. */
#include "testutil.h"

#include "halox/io.h"

#include <dirent.h>
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
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", halox, args);
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
    char out[8192], args[1024], path[512];

    /* a water box, read back and compared with the library's build */
    ncases++;
    snprintf(path, sizeof path, "%s/water.gro", dir);
    snprintf(args, sizeof args, "build water --model tip3p --atoms 3000 --seed 3 -o %s", path);
    int rc = run(args, out, sizeof out);
    T_CHECK(rc == 0, "'halox %s' exited %d:\n%s", args, rc, out);
    T_CHECK(strstr(out, "3000 atoms") && strstr(out, "1000 molecules") && strstr(out, "g/cm3"),
            "summary line lacks atoms/molecules/density: %s", out);
    hx_system *s = NULL, *ref = NULL;
    T_OK(hx_gro_read(path, &s));
    T_OK(hx_build_water("tip3p", 3000, 0, 3, &ref));
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

    /* --help works without a system kind */
    ncases++;
    rc = run("build --help", out, sizeof out);
    T_CHECK(rc == 0 && strstr(out, "--atoms") && strstr(out, "--model"),
            "'halox build --help' exited %d:\n%s", rc, out);

    /* bad input: non-zero exit, a message, no output file */
    const struct {
        const char *args;
        const char *says;
    } bad[] = {
        {"build ice --atoms 300 -o %s", "unknown system kind"},
        {"build water --model nosuch --atoms 300 -o %s", "unknown water model"},
        {"build water --atoms 0 -o %s", "--atoms"},
        {"build water --atoms -9 -o %s", "--atoms"},
        {"build water --atoms abc -o %s", "integer"},
        {"build water --atoms 300 --bogus 1 -o %s", "unknown option"},
        {"build --atoms 300 -o %s", "kind"},
        {"build water --atoms 30000 --box 1.0 -o %s", "cannot place"},
    };
    snprintf(path, sizeof path, "%s/bad.gro", dir);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ncases++;
        snprintf(args, sizeof args, bad[i].args, path);
        rc = run(args, out, sizeof out);
        T_CHECK(rc != 0, "'halox %s' exited 0", args);
        T_CHECK(strstr(out, bad[i].says) != NULL, "'halox %s' did not say '%s':\n%s", args,
                bad[i].says, out);
        T_CHECK(!exists(path), "'halox %s' created %s", args, path);
    }

    /* an output that cannot be written: missing directory */
    ncases++;
    rc = run("build water --atoms 300 -o /nonexistent-halox-dir/w.gro", out, sizeof out);
    T_CHECK(rc != 0 && strstr(out, "/nonexistent-halox-dir"),
            "writing into a missing directory exited %d:\n%s", rc, out);

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
