/* GROMACS topologies written by hx_topology_write, checked without GROMACS (gromacs_topology.sh
 * runs them in GROMACS): for every model the [ molecules ] count equals the system's molecules,
 * every c6/c12 in [ nonbond_params ] is exactly the force field's (read back from %.17g), the
 * charges of one molecule are the model's and sum to zero, rigid water has its SETTLE distances
 * and all intramolecular exclusions, and atom names are the system's; a system whose names do
 * not fit the model is refused naming the atom, and nothing is written. */
#include "testutil.h"

#include "halox/build.h"
#include "halox/io.h"
#include "halox/md.h"
#include "halox/models.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[256];

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    size_t got = buf ? fread(buf, 1, (size_t)n, f) : 0;
    fclose(f);
    if (!buf)
        return NULL;
    buf[got] = '\0';
    return buf;
}

/* The text of section "[ name ]" up to the next section (a pointer into top; NUL-terminated
 * copy in out). */
static int section(const char *top, const char *name, int which, char *out, size_t cap)
{
    char head[64];
    snprintf(head, sizeof head, "\n[ %s ]", name); /* at the start of a line */
    const char *p = top;
    for (int k = 0; k <= which; k++) {
        p = strstr(p, head);
        if (!p)
            return 0;
        p += strlen(head);
    }
    const char *end = strstr(p, "\n[ ");
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n >= cap)
        n = cap - 1;
    memcpy(out, p, n);
    out[n] = '\0';
    return 1;
}

static void check_model(const char *model, int *ncases)
{
    (*ncases)++;
    hx_system *s = NULL;
    if (strcmp(model, "argon") == 0)
        T_OK(hx_build_argon(500, 0.0, 3, &s));
    else
        T_OK(hx_build_water_lattice(model, 300, 0.0, 3, &s));
    if (!s)
        return;
    char path[512];
    snprintf(path, sizeof path, "%s/%s.top", dir, model);
    T_OK(hx_topology_write(path, s, model));
    char *top = slurp(path);
    T_CHECK(top != NULL, "%s: no topology written", model);
    hx_forcefield *ff = NULL;
    T_OK(hx_forcefield_create(model, &ff));
    if (!top || !ff) {
        free(top);
        hx_system_destroy(&s);
        return;
    }
    static char sec[1 << 16];
    /* [ molecules ]: one block, all molecules */
    T_CHECK(section(top, "molecules", 0, sec, sizeof sec), "%s: no [ molecules ]", model);
    char name[32];
    long long count = -1;
    const char *line = strchr(sec, '\n');
    while (line && (line[1] == ';' || line[1] == '\n'))
        line = strchr(line + 1, '\n');
    T_CHECK(line && sscanf(line + 1, "%31s %lld", name, &count) == 2 && count == s->nmol,
            "%s: [ molecules ] says %lld, the system has %d molecules", model, count, s->nmol);
    /* [ nonbond_params ]: exactly the force field's numbers */
    T_CHECK(section(top, "nonbond_params", 0, sec, sizeof sec), "%s: no [ nonbond_params ]", model);
    const int nt = hx_forcefield_ntypes(ff);
    const double *c6 = hx_forcefield_c6(ff), *c12 = hx_forcefield_c12(ff);
    int npairs = 0;
    for (char *l = strtok(sec, "\n"); l; l = strtok(NULL, "\n")) {
        char a[32], b[32];
        int func;
        double v6, v12;
        if (l[0] == ';' || sscanf(l, "%31s %31s %d %lf %lf", a, b, &func, &v6, &v12) != 5)
            continue;
        npairs++;
        /* the types are listed in force-field order: O, H for water; the pair (i, j) is the
         * npairs-th of the upper triangle */
        int k = 0, found = 0;
        for (int i = 0; i < nt && !found; i++)
            for (int j = i; j < nt && !found; j++, k++)
                if (k == npairs - 1) {
                    T_CHECK(v6 == c6[i * nt + j] && v12 == c12[i * nt + j],
                            "%s: pair %s-%s c6 %.17g c12 %.17g, force field %.17g %.17g", model, a,
                            b, v6, v12, c6[i * nt + j], c12[i * nt + j]);
                    found = 1;
                }
    }
    T_CHECK(npairs == nt * (nt + 1) / 2, "%s: %d type pairs, want %d", model, npairs,
            nt * (nt + 1) / 2);
    /* [ atoms ]: names from the system, charges summing to zero */
    T_CHECK(section(top, "atoms", 0, sec, sizeof sec), "%s: no [ atoms ]", model);
    double qsum = 0;
    int natoms = 0;
    for (char *l = strtok(sec, "\n"); l; l = strtok(NULL, "\n")) {
        int nr, resnr, cg;
        char type[32], res[32], atom[32];
        double q, m;
        if (l[0] == ';' || sscanf(l, "%d %31s %d %31s %31s %d %lf %lf", &nr, type, &resnr, res,
                                  atom, &cg, &q, &m) != 8)
            continue;
        T_CHECK(strcmp(atom, s->atom_name[natoms]) == 0 && strcmp(res, s->res_name[natoms]) == 0,
                "%s: atom %d is %s %s in the topology, %s %s in the system", model, nr, res, atom,
                s->res_name[natoms], s->atom_name[natoms]);
        qsum += q;
        natoms++;
    }
    T_CHECK(natoms == s->mol_start[1] - s->mol_start[0], "%s: %d atoms in the molecule type", model,
            natoms);
    T_CHECK(fabs(qsum) < 1e-12, "%s: the molecule's charges sum to %g", model, qsum);
    const hx_water_model *w = hx_forcefield_water(ff);
    if (w) {
        T_CHECK(section(top, "settles", 0, sec, sizeof sec), "%s: no [ settles ]", model);
        int o = 0, fn = 0;
        double doh = 0, dhh = 0;
        const char *l = strchr(sec, '\n');
        while (l && l[1] == ';')
            l = strchr(l + 1, '\n');
        T_CHECK(l && sscanf(l + 1, "%d %d %lf %lf", &o, &fn, &doh, &dhh) == 4 && o == 1 &&
                    doh == w->r_oh && dhh == w->r_hh,
                "%s: settles %d %d %g %g, model %g %g", model, o, fn, doh, dhh, w->r_oh, w->r_hh);
        T_CHECK(section(top, "exclusions", 0, sec, sizeof sec) && strstr(sec, "1 2 3") &&
                    strstr(sec, "2 1 3") && strstr(sec, "3 1 2"),
                "%s: the exclusions do not list every pair", model);
    }
    printf("ok   %s: %d molecules, %d type pairs, charges sum %g\n", model, s->nmol, npairs, qsum);
    free(top);
    hx_forcefield_destroy(&ff);
    hx_system_destroy(&s);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/halox_test_topology_XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    int ncases = 0;
    const char *models[] = {"spce", "spc", "tip3p", "argon"};
    for (int i = 0; i < 4; i++)
        check_model(models[i], &ncases);

    /* names that do not fit the model: refused, naming the atom; no file, no temporary */
    ncases++;
    hx_system *s = NULL;
    T_OK(hx_build_water_lattice("spce", 30, 0.0, 1, &s));
    if (s) {
        snprintf(s->atom_name[4], HX_NAME_LEN, "QQ");
        char path[512];
        snprintf(path, sizeof path, "%s/bad.top", dir);
        hx_status st = hx_topology_write(path, s, "spce");
        T_CHECK(st == HX_ERR_INPUT && strstr(hx_last_error_message(), "atom 5") &&
                    strstr(hx_last_error_message(), "QQ"),
                "unknown atom name: %s, '%s'", hx_status_name(st), hx_last_error_message());
        T_CHECK(access(path, F_OK) != 0, "a refused topology was written");
        /* the same system as argon: wrong molecule size */
        hx_status st2 = hx_topology_write(path, s, "argon");
        T_CHECK(st2 == HX_ERR_INPUT && strstr(hx_last_error_message(), "atoms, but model argon"),
                "water as argon: %s, '%s'", hx_status_name(st2), hx_last_error_message());
        /* a device is written through, not replaced */
        snprintf(s->atom_name[4], HX_NAME_LEN, "HW2");
        T_OK(hx_topology_write("/dev/null", s, "spce"));
        hx_system_destroy(&s);
    }
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return t_finish("test_topology", ncases);
}
