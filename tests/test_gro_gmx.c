/* GROMACS interoperability: a 4-frame .gro trajectory written with hx_gro_write_frame must pass
 * `gmx check` with 4 coordinate and velocity frames 0.5 ps apart (time parsed from our titles);
 * `gmx editconf` must re-write a file of ours byte for byte (title aside) and we must read its
 * output; GROMACS's own spc216.gro must read as 216 molecules. Argument: the gmx program. */
#include "testutil.h"

#include "halox/build.h"
#include "halox/io.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_gro_gmx <gmx>\n");
        return 2;
    }
    char path[] = "/tmp/halox_gmx_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) {
        perror("mkstemp");
        return 1;
    }
    close(fd);
    /* gmx picks the format from the extension */
    char gro[64];
    snprintf(gro, sizeof gro, "%s.gro", path);
    hx_system *s = NULL;
    T_OK(hx_build_water("spce", 648, 0, 4, &s));
    FILE *f = fopen(gro, "w");
    T_CHECK(f != NULL, "cannot open %s", gro);
    if (!s || !f)
        return t_finish("test_gro_gmx", 1);
    for (int i = 0; i < 3 * s->natoms; i++)
        s->v[i] = 0.01 * (i % 7 - 3);
    for (int fr = 0; fr < 4; fr++)
        T_OK(hx_gro_write_frame(f, s, 0.5 * fr, 250LL * fr, 1));
    fclose(f);
    char cmd[512], out[16384];
    snprintf(cmd, sizeof cmd, "'%s' -quiet check -f %s 2>&1", argv[1], gro);
    FILE *p = popen(cmd, "r");
    size_t n = p ? fread(out, 1, sizeof out - 1, p) : 0;
    out[n] = '\0';
    int st = p ? pclose(p) : -1;
    T_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "'%s' failed:\n%s", cmd, out);
    /* the summary table: "Coords  4  0.5" and "Velocities  4  0.5" */
    const char *c = strstr(out, "Coords"), *v = strstr(out, "Velocities");
    int nc = 0, nv = 0;
    double dtc = 0, dtv = 0;
    T_CHECK(c && sscanf(c, "Coords %d %lf", &nc, &dtc) == 2 && nc == 4 && dtc == 0.5,
            "gmx check did not see 4 coordinate frames 0.5 ps apart:\n%s", out);
    T_CHECK(v && sscanf(v, "Velocities %d %lf", &nv, &dtv) == 2 && nv == 4,
            "gmx check did not see 4 velocity frames:\n%s", out);
    T_CHECK(strstr(out, "648") != NULL, "gmx check did not report 648 atoms:\n%s", out);
    /* GROMACS re-writes one of our frames byte for byte (all but the title line). */
    char one[80], theirs[80];
    snprintf(one, sizeof one, "%s_1.gro", path);
    snprintf(theirs, sizeof theirs, "%s_2.gro", path);
    T_OK(hx_gro_write(one, s, 1));
    snprintf(cmd, sizeof cmd, "'%s' -quiet editconf -f %s -o %s 2>&1", argv[1], one, theirs);
    p = popen(cmd, "r");
    n = p ? fread(out, 1, sizeof out - 1, p) : 0;
    out[n] = '\0';
    st = p ? pclose(p) : -1;
    T_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "'%s' failed:\n%s", cmd, out);
    FILE *fa = fopen(one, "r"), *fb = fopen(theirs, "r");
    char la[256], lb[256];
    int line = 0, differ = 0;
    while (fa && fb) {
        char *ra = fgets(la, sizeof la, fa), *rb = fgets(lb, sizeof lb, fb);
        line++;
        if (!ra || !rb) {
            T_CHECK(!ra && !rb, "gmx editconf output has a different number of lines");
            break;
        }
        if (line > 1 && strcmp(la, lb) != 0 && differ++ == 0)
            T_FAIL("line %d differs after gmx editconf:\n  ours   %s  theirs %s", line, la, lb);
    }
    T_CHECK(fa && fb && line > 600, "could not compare %s with %s", one, theirs);
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    /* ... and we read what GROMACS wrote back to the same system */
    hx_system *b = NULL;
    T_OK(hx_gro_read(theirs, &b));
    if (b) {
        /* everything but the title, which GROMACS writes its own way */
        hx_system *e = NULL;
        T_OK(hx_system_copy(s, &e));
        if (e) {
            snprintf(e->title, sizeof e->title, "%s", b->title);
            t_gro_same(b, e, 1, "gmx editconf output");
        }
        hx_system_destroy(&e);
    }
    hx_system_destroy(&b);
    /* GROMACS's own water box, when the data files are where Debian puts them */
    const char *spc = "/usr/share/gromacs/top/spc216.gro";
    if (access(spc, R_OK) == 0) {
        T_OK(hx_gro_read(spc, &b));
        if (b)
            T_CHECK(b->natoms == 648 && b->nmol == 216 && strcmp(b->atom_name[1], "HW1") == 0 &&
                        fabs(b->box[0] - 1.86206) < 1e-9,
                    "%s read as %d atoms %d molecules box %g", spc, b->natoms, b->nmol, b->box[0]);
        hx_system_destroy(&b);
    }
    remove(one);
    remove(theirs);
    remove(gro);
    remove(path);
    hx_system_destroy(&s);
    return t_finish("test_gro_gmx", 3);
}
