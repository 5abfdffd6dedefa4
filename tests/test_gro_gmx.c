/* GROMACS reads our trajectories: a 4-frame .gro written with hx_gro_write_frame (frames with
 * and without velocities) must pass `gmx check` with 4 coordinate frames and a 0.5 ps time
 * step parsed from our titles. Argument: the gmx program. */
#include "testutil.h"

#include "halox/io.h"

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
    remove(gro);
    remove(path);
    hx_system_destroy(&s);
    return t_finish("test_gro_gmx", 1);
}
