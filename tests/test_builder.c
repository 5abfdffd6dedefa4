/* System builders: for every water model and argon at several sizes, the density, the minimum
 * O-O (Ar-Ar) distance (own cell list), the size, the exact rigid geometry, names, molecules
 * whole with their O in the box, random orientations, determinism, and refused inputs.
 * hx_build_min_distance is checked against an O(N^2) search on the small systems.
 *
 * Water is tiled from the equilibrated boxes embedded in the library: they must equal
 * data/water_<model>.gro (argv[2]), and a tiled 3000-atom SPC/E box must be a relaxed liquid:
 * 1 ps of NVE MD (`halox md`, argv[1]) from velocities drawn at 300 K stays within 30 K of
 * 300 K and its potential energy stays that of the liquid. A lattice heats to ~1000 K. */
#include "testutil.h"

#include "halox/build.h"
#include "halox/io.h"
#include "halox/models.h"
#include "build/water_boxes.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Molecules of the embedded equilibrated box: tiles repeat their orientations. */
#define BASE_NMOL 1000

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double mi_dist(const double *a, const double *b, const double box[3])
{
    double r2 = 0;
    for (int d = 0; d < 3; d++) {
        double dx = a[d] - b[d];
        dx -= box[d] * round(dx / box[d]);
        r2 += dx * dx;
    }
    return sqrt(r2);
}

/* Count pairs among atoms first, first+stride, ... closer than rmin, with a grid of cells of
 * edge >= rmin (27 neighbours, periodic). Independent of the library's own cell list. */
static long close_pairs(const hx_system *s, int stride, double rmin, int *ex_i, int *ex_j,
                        double *ex_d)
{
    int n = s->natoms / stride;
    int nc[3];
    for (int d = 0; d < 3; d++) {
        nc[d] = (int)(s->box[d] / rmin);
        if (nc[d] < 1)
            nc[d] = 1;
    }
    long ncell = (long)nc[0] * nc[1] * nc[2];
    int *count = calloc((size_t)ncell + 1, sizeof *count);
    int *start = calloc((size_t)ncell + 1, sizeof *start);
    int *order = malloc((size_t)n * sizeof *order);
    int *cell = malloc((size_t)n * sizeof *cell);
    for (int i = 0; i < n; i++) {
        const double *x = &s->x[3 * (size_t)i * stride];
        int c[3];
        for (int d = 0; d < 3; d++) {
            double f = x[d] / s->box[d] - floor(x[d] / s->box[d]);
            c[d] = (int)(f * nc[d]) % nc[d];
        }
        cell[i] = (c[2] * nc[1] + c[1]) * nc[0] + c[0];
        count[cell[i]]++;
    }
    for (long c = 0; c < ncell; c++)
        start[c + 1] = start[c] + count[c];
    memset(count, 0, (size_t)ncell * sizeof *count);
    for (int i = 0; i < n; i++)
        order[start[cell[i]] + count[cell[i]]++] = i;
    long nclose = 0;
    for (int i = 0; i < n; i++) {
        int cx = cell[i] % nc[0], cy = cell[i] / nc[0] % nc[1], cz = cell[i] / nc[0] / nc[1];
        /* with fewer than 3 cells a neighbour cell repeats: visit each distinct cell once */
        int seen[27], nseen = 0;
        for (int dz = -1; dz <= 1; dz++)
            for (int dy = -1; dy <= 1; dy++)
                for (int dx = -1; dx <= 1; dx++) {
                    int c =
                        (((cz + dz + nc[2]) % nc[2]) * nc[1] + (cy + dy + nc[1]) % nc[1]) * nc[0] +
                        (cx + dx + nc[0]) % nc[0];
                    int dup = 0;
                    for (int k = 0; k < nseen; k++)
                        dup |= seen[k] == c;
                    if (dup)
                        continue;
                    seen[nseen++] = c;
                    for (int q = start[c]; q < start[c + 1]; q++) {
                        int j = order[q];
                        if (j <= i)
                            continue;
                        double r = mi_dist(&s->x[3 * (size_t)i * stride],
                                           &s->x[3 * (size_t)j * stride], s->box);
                        if (r < rmin) {
                            if (nclose == 0)
                                *ex_i = i, *ex_j = j, *ex_d = r;
                            nclose++;
                        }
                    }
                }
    }
    free(count), free(start), free(order), free(cell);
    return nclose;
}

static double brute_min(const hx_system *s, int stride)
{
    double best = fmin(s->box[0], fmin(s->box[1], s->box[2]));
    int n = s->natoms / stride;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            best = fmin(best, mi_dist(&s->x[3 * (size_t)i * stride], &s->x[3 * (size_t)j * stride],
                                      s->box));
    return best;
}

static double dist(const double *a, const double *b)
{
    return sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) +
                (a[2] - b[2]) * (a[2] - b[2]));
}

static void check_water(const hx_water_model *m, int natoms, uint64_t seed, int lattice,
                        int *ncases)
{
    char what[96];
    snprintf(what, sizeof what, "water %s%s natoms=%d seed=%llu", m->name,
             lattice ? " lattice" : "", natoms, (unsigned long long)seed);
    (*ncases)++;
    hx_system *s = NULL;
    double t0 = now_s();
    if (lattice)
        T_OK(hx_build_water_lattice(m->name, natoms, 0.0, seed, &s));
    else
        T_OK(hx_build_water(m->name, natoms, 0.0, seed, &s));
    double t_build = now_s() - t0;
    if (!s)
        return;
    int nmol = s->nmol;
    T_CHECK(s->natoms % 3 == 0 && abs(s->natoms - natoms) <= 1 && nmol * 3 == s->natoms,
            "%s: got %d atoms in %d molecules (want within one molecule, nearest)", what, s->natoms,
            nmol);
    double vol = s->box[0] * s->box[1] * s->box[2];
    double rho = nmol / vol, rho0 = hx_water_number_density(m);
    T_CHECK(fabs(rho / rho0 - 1) < 0.01, "%s: density %.4f /nm^3, model %.4f (tolerance 1%%)", what,
            rho, rho0);
    T_CHECK(s->box[0] == s->box[1] && s->box[1] == s->box[2], "%s: box not cubic", what);
    T_CHECK(strstr(s->title, m->name) != NULL, "%s: title '%s' lacks the model", what, s->title);
    int bad = 0;
    double dip[3] = {0, 0, 0}, cos2 = 0;
    for (int k = 0; k < nmol && bad < 5; k++) {
        int a = 3 * k;
        if (s->mol_start[k] != a || s->mol_start[k + 1] != a + 3) {
            T_FAIL("%s: molecule %d spans atoms %d..%d", what, k, s->mol_start[k],
                   s->mol_start[k + 1]);
            bad++;
        }
        const double *o = &s->x[3 * (size_t)a], *h1 = o + 3, *h2 = o + 6;
        double e1 = fabs(dist(o, h1) - m->r_oh), e2 = fabs(dist(o, h2) - m->r_oh);
        double e3 = fabs(dist(h1, h2) - m->r_hh);
        if (e1 > 1e-12 || e2 > 1e-12 || e3 > 1e-12) {
            T_FAIL("%s: molecule %d geometry off by %.3g %.3g %.3g nm (tolerance 1e-12)", what, k,
                   e1, e2, e3);
            bad++;
        }
        double com[3];
        for (int d = 0; d < 3; d++) {
            com[d] = (m->m_o * o[d] + m->m_h * (h1[d] + h2[d])) / (m->m_o + 2 * m->m_h);
            /* the O (the site the builders place) in [0, box); the centre of mass is whole-
             * molecule, at most r_OH from O */
            if (!(o[d] >= 0 && o[d] < s->box[d] && com[d] >= -m->r_oh &&
                  com[d] < s->box[d] + m->r_oh)) {
                T_FAIL("%s: molecule %d O at %.4f or centre at %.4f outside [0, %.4f) along %c",
                       what, k, o[d], com[d], s->box[d], "xyz"[d]);
                bad++;
            }
        }
        if (strcmp(s->atom_name[a], "OW") || strcmp(s->atom_name[a + 1], "HW1") ||
            strcmp(s->atom_name[a + 2], "HW2") || strcmp(s->res_name[a], "SOL") ||
            s->res_id[a] != (k + 1) % 100000 || s->res_id[a + 2] != (k + 1) % 100000) {
            T_FAIL("%s: molecule %d names %s %s %s %s resid %d", what, k, s->res_name[a],
                   s->atom_name[a], s->atom_name[a + 1], s->atom_name[a + 2], s->res_id[a]);
            bad++;
        }
        double u[3], nu = 0;
        for (int d = 0; d < 3; d++) {
            u[d] = 0.5 * (h1[d] + h2[d]) - o[d];
            nu += u[d] * u[d];
        }
        nu = sqrt(nu);
        for (int d = 0; d < 3; d++)
            dip[d] += u[d] / nu;
        cos2 += (u[2] / nu) * (u[2] / nu);
    }
    /* Isotropic orientations: the mean dipole direction has sigma 1/sqrt(3 n) per component,
     * <cos^2> = 1/3 with sigma sqrt(4/45/n); 5 sigma bounds. Tiles repeat the BASE_NMOL
     * orientations of the equilibrated box, so at most that many are independent. */
    int nind = nmol < BASE_NMOL ? nmol : BASE_NMOL;
    double mean = sqrt(dip[0] * dip[0] + dip[1] * dip[1] + dip[2] * dip[2]) / nmol;
    T_CHECK(mean < 5.0 * sqrt(1.0 / nind),
            "%s: mean dipole direction %.4f, not isotropic (bound %.4f)", what, mean,
            5.0 * sqrt(1.0 / nind));
    T_CHECK(fabs(cos2 / nmol - 1.0 / 3.0) < 5.0 * sqrt(4.0 / 45.0 / nind),
            "%s: <cos^2 theta_z> = %.4f, expected 1/3", what, cos2 / nmol);
    int ei = -1, ej = -1;
    double ed = 0;
    long nclose = close_pairs(s, 3, 0.23, &ei, &ej, &ed);
    T_CHECK(nclose == 0, "%s: %ld O-O pairs closer than 0.23 nm, e.g. molecules %d and %d at %.4f",
            what, nclose, ei, ej, ed);
    double dmin = 0;
    T_OK(hx_build_min_distance(s, "OW", 0.5, &dmin));
    if (nmol <= 12000) {
        double bm = fmin(brute_min(s, 3), 0.5);
        T_CHECK(fabs(dmin - bm) < 1e-12, "%s: hx_build_min_distance %.6f, brute force %.6f", what,
                dmin, bm);
    }
    printf("  %-32s %8d atoms  box %7.3f nm  rho %.5f/nm3  min O-O %.4f nm  %.3f s\n", what,
           s->natoms, s->box[0], rho, dmin, t_build);
    hx_system_destroy(&s);
}

static void check_argon(int natoms, uint64_t seed, int *ncases)
{
    char what[96];
    snprintf(what, sizeof what, "argon natoms=%d seed=%llu", natoms, (unsigned long long)seed);
    (*ncases)++;
    hx_system *s = NULL;
    T_OK(hx_build_argon(natoms, 0.0, seed, &s));
    if (!s)
        return;
    T_CHECK(s->natoms == natoms && s->nmol == natoms, "%s: %d atoms %d molecules", what, s->natoms,
            s->nmol);
    double rho = s->natoms / (s->box[0] * s->box[1] * s->box[2]);
    double rho0 = hx_argon_model()->number_density;
    T_CHECK(fabs(rho / rho0 - 1) < 0.01, "%s: density %.4f, model %.4f", what, rho, rho0);
    int bad = 0;
    for (int i = 0; i < s->natoms && bad < 5; i++) {
        if (strcmp(s->atom_name[i], "AR") || strcmp(s->res_name[i], "AR") || s->mol_start[i] != i ||
            s->res_id[i] != (i + 1) % 100000) {
            T_FAIL("%s: atom %d names %s %s", what, i, s->res_name[i], s->atom_name[i]);
            bad++;
        }
        for (int d = 0; d < 3; d++)
            if (!(s->x[3 * i + d] >= 0 && s->x[3 * i + d] < s->box[d])) {
                T_FAIL("%s: atom %d outside the box", what, i);
                bad++;
            }
    }
    int ei = -1, ej = -1;
    double ed = 0;
    long nclose = close_pairs(s, 1, 0.3, &ei, &ej, &ed);
    T_CHECK(nclose == 0, "%s: %ld pairs closer than 0.3 nm, e.g. %d-%d at %.4f", what, nclose, ei,
            ej, ed);
    double dmin = 0;
    T_OK(hx_build_min_distance(s, "AR", 0.5, &dmin));
    if (natoms <= 12000) {
        double bm = fmin(brute_min(s, 1), 0.5);
        T_CHECK(fabs(dmin - bm) < 1e-12, "%s: hx_build_min_distance %.6f, brute force %.6f", what,
                dmin, bm);
    }
    printf("  %-32s %8d atoms  box %7.3f nm  rho %.5f/nm3  min Ar-Ar %.4f nm\n", what, s->natoms,
           s->box[0], rho, dmin);
    hx_system_destroy(&s);
}

static int same_system(const hx_system *a, const hx_system *b)
{
    return a->natoms == b->natoms && memcmp(a->box, b->box, sizeof a->box) == 0 &&
           memcmp(a->x, b->x, 3 * (size_t)a->natoms * sizeof *a->x) == 0;
}

static void check_determinism(int *ncases)
{
    (*ncases)++;
    hx_system *a = NULL, *b = NULL, *c = NULL;
    T_OK(hx_build_water("spce", 3000, 0, 42, &a));
    T_OK(hx_build_water("spce", 3000, 0, 42, &b));
    T_OK(hx_build_water("spce", 3000, 0, 43, &c));
    if (a && b && c) {
        T_CHECK(same_system(a, b), "water seed 42 built twice differs");
        T_CHECK(!same_system(a, c), "water seeds 42 and 43 give the same system");
    }
    hx_system_destroy(&a), hx_system_destroy(&b), hx_system_destroy(&c);
    /* a size that is cut from the tiles (not a whole number of them) */
    T_OK(hx_build_water("tip3p", 9000, 0, 5, &a));
    T_OK(hx_build_water("tip3p", 9000, 0, 5, &b));
    T_OK(hx_build_water("tip3p", 9000, 0, 6, &c));
    if (a && b && c) {
        T_CHECK(same_system(a, b), "water 9000 seed 5 built twice differs");
        T_CHECK(!same_system(a, c), "water 9000 seeds 5 and 6 give the same system");
    }
    hx_system_destroy(&a), hx_system_destroy(&b), hx_system_destroy(&c);
    /* argon on a partially filled lattice: the site subset depends on the seed */
    T_OK(hx_build_argon(1000, 0, 7, &a));
    T_OK(hx_build_argon(1000, 0, 7, &b));
    T_OK(hx_build_argon(1000, 0, 8, &c));
    if (a && b && c) {
        T_CHECK(same_system(a, b), "argon seed 7 built twice differs");
        T_CHECK(!same_system(a, c), "argon seeds 7 and 8 give the same system");
    }
    hx_system_destroy(&a), hx_system_destroy(&b), hx_system_destroy(&c);
}

static void check_box_input(int *ncases)
{
    (*ncases)++;
    const hx_water_model *m = NULL;
    T_OK(hx_water_model_find("spce", &m));
    hx_system *s = NULL;
    T_OK(hx_build_water("spce", 0, 3.0, 5, &s));
    if (s && m) {
        double rho = s->nmol / 27.0;
        T_CHECK(s->box[0] == 3.0 && fabs(rho / hx_water_number_density(m) - 1) < 0.01,
                "water --box 3: box %.4f density %.4f vs %.4f", s->box[0], rho,
                hx_water_number_density(m));
    }
    hx_system_destroy(&s);
    T_OK(hx_build_argon(0, 4.0, 5, &s));
    if (s)
        T_CHECK(fabs(s->natoms / 64.0 / hx_argon_model()->number_density - 1) < 0.01,
                "argon --box 4: %d atoms", s->natoms);
    hx_system_destroy(&s);
    /* both given: the count and the box are kept */
    T_OK(hx_build_water("tip3p", 900, 3.0, 5, &s));
    if (s)
        T_CHECK(s->natoms == 900 && s->box[0] == 3.0, "water 900 atoms in 3 nm: %d atoms box %g",
                s->natoms, s->box[0]);
    hx_system_destroy(&s);
}

static void check_refused(int *ncases)
{
    struct {
        const char *model;
        int natoms;
        double box;
    } bad[] = {{"spce", 0, 0.0}, {"spce", -30, 0.0},   {"nosuch", 300, 0.0}, {"spce", 300, -1.0},
               {"spce", 0, NAN}, {"spce", 30000, 1.0}, {"spce", 0, 1.0e5}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        (*ncases)++;
        hx_system *s = NULL;
        hx_status st = hx_build_water(bad[i].model, bad[i].natoms, bad[i].box, 1, &s);
        T_CHECK(st == HX_ERR_INVALID_ARG && s == NULL,
                "water model=%s natoms=%d box=%g gave %s, expected HX_ERR_INVALID_ARG",
                bad[i].model, bad[i].natoms, bad[i].box, hx_status_name(st));
        T_CHECK(hx_last_error_message()[0] != '\0', "no message for refused case %zu", i);
    }
    (*ncases)++;
    hx_system *s = NULL;
    hx_status st = hx_build_argon(0, 0, 1, &s);
    T_CHECK(st == HX_ERR_INVALID_ARG, "argon with no size gave %s", hx_status_name(st));
}

/* The embedded boxes are the shipped data/water_<model>.gro, digit for digit. */
static void check_embedded(const char *datadir, int *ncases)
{
    const char *const *names = hx_water_model_names();
    for (int k = 0; names[k]; k++) {
        (*ncases)++;
        const hx_water_box *wb = NULL;
        for (const hx_water_box *b = hx_water_boxes; b->model; b++)
            if (strcmp(b->model, names[k]) == 0)
                wb = b;
        T_CHECK(wb, "no embedded equilibrated box for %s", names[k]);
        char path[4096];
        snprintf(path, sizeof path, "%s/water_%s.gro", datadir, names[k]);
        hx_system *s = NULL;
        T_OK(hx_gro_read(path, &s));
        if (!wb || !s) {
            hx_system_destroy(&s);
            continue;
        }
        T_CHECK(s->natoms == 3 * wb->nmol, "%s: %d atoms, embedded %d molecules", path, s->natoms,
                wb->nmol);
        /* digit for digit: the file's values in its units (0.001 nm, 0.00001 nm for the box)
         * are integers, which the embedded arrays must hold exactly */
        int bad = 0;
        for (int i = 0; i < 3 * s->natoms && i < 9 * wb->nmol && bad < 3; i++)
            if (lround(s->x[i] * 1e3) != wb->x[i]) {
                T_FAIL("%s: atom %d coordinate %c %.3f, embedded %d x 0.001 nm (the build "
                       "generates the embedded copy: rebuild)",
                       path, i / 3 + 1, "xyz"[i % 3], s -> x[i], wb -> x[i]);
                bad++;
            }
        for (int d = 0; d < 3; d++)
            T_CHECK(lround(s->box[d] * 1e5) == wb->box[d],
                    "%s: box %c %.5f, embedded %d x 0.00001 nm", path, "xyz"[d], s -> box[d],
                    wb -> box[d]);
        hx_system_destroy(&s);
    }
}

/* A tiled SPC/E box is relaxed liquid: NVE from 300 K velocities stays near 300 K. */
static void check_relaxed_md(const char *halox, int *ncases)
{
    (*ncases)++;
    char dir[] = "/tmp/halox_test_builder.XXXXXX";
    T_CHECK(mkdtemp(dir) != NULL, "cannot make a temporary directory");
    char gro[256], json[256], cmd[2048];
    snprintf(gro, sizeof gro, "%s/w.gro", dir);
    snprintf(json, sizeof json, "%s/e.json", dir);
    hx_system *s = NULL;
    T_OK(hx_build_water("spce", 3000, 0, 17, &s));
    if (!s)
        return;
    T_OK(hx_gro_write(gro, s, 0));
    int nmol = s->nmol;
    hx_system_destroy(&s);
    /* 500 steps of 2 fs, NVE; a fixed rlist so that no pair is missed */
    snprintf(cmd, sizeof cmd,
             "'%s' md -c %s -o %s/out.gro -g %s/md.log -e %s --nstenergy 50 --steps 500 "
             "--dt 0.002 --gen-vel 300 --seed 3 --model spce --rc 1.0 --rlist 1.15 --threads 2 "
             "> %s/md.out 2>&1",
             halox, gro, dir, dir, json, dir);
    int rc = system(cmd);
    T_CHECK(rc == 0, "halox md failed (%d): %s", rc, cmd);
    FILE *f = fopen(json, "r");
    T_CHECK(f != NULL, "no energy file %s", json);
    double tsum = 0, tmin = 1e9, tmax = -1e9, u0 = 0, u1 = 0, t_end = 0;
    int n = 0, nlate = 0;
    char line[1024];
    while (f && fgets(line, sizeof line, f)) {
        if (strstr(line, "\"halox_energy_file\""))
            continue; /* the metadata line (docs/energy-file.md) */
        const char *pt = strstr(line, "\"temperature\":");
        const char *pu = strstr(line, "\"potential\":");
        const char *ptime = strstr(line, "\"time\":");
        if (!pt || !pu || !ptime)
            continue;
        double temp = atof(pt + 14), u = atof(pu + 12) / nmol, time = atof(ptime + 7);
        if (n == 0)
            u0 = u;
        u1 = u, t_end = time;
        n++;
        tmin = fmin(tmin, temp), tmax = fmax(tmax, temp);
        if (time >= 0.5 - 1e-9) {
            tsum += temp;
            nlate++;
        }
    }
    if (f)
        fclose(f);
    T_CHECK(n == 11 && fabs(t_end - 1.0) < 1e-9, "energy file %s: %d lines up to %.3f ps", json, n,
            t_end);
    double tmean = nlate ? tsum / nlate : 0;
    T_CHECK(fabs(tmean - 300) < 30,
            "tiled SPC/E (seed 17), NVE from 300 K: mean T over 0.5-1 ps %.1f K, not within "
            "30 K of 300 K",
            tmean);
    T_CHECK(tmin > 255 && tmax < 345, "tiled SPC/E: T ranged %.1f-%.1f K in 1 ps (bound 255-345)",
            tmin, tmax);
    /* the equilibrated SPC/E liquid (RF eps_rf = inf, rc 1.0) is at -46.4 kJ/mol */
    T_CHECK(u0 < -44 && u1 < -44,
            "tiled SPC/E potential %.2f -> %.2f kJ/mol/molecule, not the liquid's (< -44)", u0, u1);
    printf("  tiled spce 3000 atoms, 1 ps NVE from 300 K: T %.1f-%.1f K, mean(0.5-1 ps) %.1f K, "
           "potential %.2f -> %.2f kJ/mol/molecule\n",
           tmin, tmax, tmean, u0, u1);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "note: could not remove %s\n", dir);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_builder HALOX DATADIR\n");
        return 2;
    }
    int ncases = 0;
    const char *const *names = hx_water_model_names();
    /* 300: below the tiler's smallest box (lattice); 3001: one tile; 24000: 2^3 whole tiles;
     * 30000: cut from 3^3 tiles */
    const int sizes[] = {300, 3001, 24000, 30000};
    for (int k = 0; names[k]; k++) {
        const hx_water_model *m = NULL;
        T_OK(hx_water_model_find(names[k], &m));
        for (int i = 0; m && i < 4; i++)
            check_water(m, sizes[i], 1 + (uint64_t)i, 0, &ncases);
        if (m)
            check_water(m, 3000, 9, 1, &ncases);
    }
    /* one large box: O(N) build and the cell-list check on 300k molecules */
    const hx_water_model *spce = NULL;
    T_OK(hx_water_model_find("spce", &spce));
    if (spce)
        check_water(spce, 900000, 11, 0, &ncases);
    check_embedded(argv[2], &ncases);
    check_relaxed_md(argv[1], &ncases);
    check_argon(300, 1, &ncases);
    check_argon(3000, 2, &ncases);
    check_argon(30000, 3, &ncases);
    check_determinism(&ncases);
    check_box_input(&ncases);
    check_refused(&ncases);
    return t_finish("test_builder", ncases);
}
