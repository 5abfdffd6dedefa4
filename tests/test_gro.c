/* .gro reading and writing: round trips of random systems (with and without velocities),
 * byte-exact re-writing, the writer's number formatting against printf, multi-frame output,
 * atomic replacement, and every malformed-input case with its line number. */
#include "testutil.h"

#include "halox/io.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>

static char tmpdir[256];

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t r;
    while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb) {
                free(buf);
                buf = NULL;
            } else {
                buf = nb;
            }
        }
    }
    fclose(f);
    if (buf)
        buf[n < cap ? n : cap - 1] = '\0';
    *len = n;
    return buf;
}

/* Number of files in tmpdir whose name contains ".tmp." (left-over temporaries). */
static int count_temporaries(void)
{
    DIR *d = opendir(tmpdir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        if (strstr(e->d_name, ".tmp."))
            n++;
    if (d)
        closedir(d);
    return n;
}

static const char *resnames[] = {"SOL", "NA", "CL", "ALA", "LONGRES", "X"};
static const char *atomnames[] = {"OW", "HW1", "HW2", "CA", "N", "LONGNAME", "C1"};

/* Random system: molecules of 1-4 atoms, residue ids starting near the 100000 wrap when
 * asked, coordinates within one box length of the box, small velocities. */
static hx_system *random_system(t_rng *r, int natoms, int wrap_ids)
{
    hx_system *s = NULL;
    if (hx_system_create(natoms, natoms, &s) != HX_OK || !s) {
        T_FAIL("hx_system_create(%d) gave no system", natoms);
        return NULL;
    }
    for (int d = 0; d < 3; d++)
        s->box[d] = 1.0 + 9.0 * t_rng_uniform(r);
    int res = wrap_ids ? 99990 : 1, left = 0, nmol = 0;
    const char *rn = "SOL";
    for (int i = 0; i < natoms; i++) {
        if (left == 0) {
            left = 1 + t_rng_int(r, 4);
            res = (res + 1) % 100000;
            rn = resnames[t_rng_int(r, 6)];
            s->mol_start[nmol++] = i;
        }
        left--;
        s->res_id[i] = res;
        snprintf(s->res_name[i], HX_NAME_LEN, "%.5s", rn);
        snprintf(s->atom_name[i], HX_NAME_LEN, "%.5s", atomnames[t_rng_int(r, 7)]);
        for (int d = 0; d < 3; d++) {
            s->x[3 * i + d] = s->box[d] * (-0.5 + 2.0 * t_rng_uniform(r));
            s->v[3 * i + d] = 0.7 * t_rng_normal(r);
        }
    }
    s->nmol = nmol;
    s->mol_start[nmol] = natoms;
    snprintf(s->title, sizeof s->title, "random test system %d", natoms);
    return s;
}

/* Expected text of a system written by hx_gro_write, produced with printf. */
static char *expected_text(const hx_system *s, int vel, size_t *len)
{
    size_t cap = 256 + (size_t)s->natoms * 80, n = 0;
    char *b = malloc(cap);
    n += (size_t)snprintf(b + n, cap - n, "%s\n%5d\n", s->title, s->natoms);
    for (int i = 0; i < s->natoms; i++) {
        n += (size_t)snprintf(b + n, cap - n, "%5d%-5.5s%5.5s%5d%8.3f%8.3f%8.3f",
                              s->res_id[i] % 100000, s->res_name[i], s->atom_name[i],
                              (i + 1) % 100000, s->x[3 * i], s->x[3 * i + 1], s->x[3 * i + 2]);
        if (vel)
            n += (size_t)snprintf(b + n, cap - n, "%8.4f%8.4f%8.4f", s->v[3 * i], s->v[3 * i + 1],
                                  s->v[3 * i + 2]);
        n += (size_t)snprintf(b + n, cap - n, "\n");
    }
    for (int d = 0; d < 3; d++) /* a blank is kept between box values of 1000 nm or more */
        n += (size_t)snprintf(b + n, cap - n, s->box[d] >= 1000 ? " %9.5f" : "%10.5f", s->box[d]);
    n += (size_t)snprintf(b + n, cap - n, "\n");
    *len = n;
    return b;
}

/* Compare a read-back system a with the original b: the written precision, exactly. */
static void compare_systems(const hx_system *a, const hx_system *b, int vel, const char *what)
{
    t_gro_same(a, b, vel, what);
}

static void test_round_trip(t_rng *r, int natoms, int vel, int wrap, int *ncases)
{
    char what[128], p1[512], p2[512];
    snprintf(what, sizeof what, "round trip natoms=%d vel=%d wrap=%d", natoms, vel, wrap);
    snprintf(p1, sizeof p1, "%s/a.gro", tmpdir);
    snprintf(p2, sizeof p2, "%s/b.gro", tmpdir);
    hx_system *s = random_system(r, natoms, wrap), *back = NULL, *back2 = NULL;
    (*ncases)++;
    if (!s)
        return;
    T_OK(hx_gro_write(p1, s, vel));
    size_t l1 = 0, l2 = 0, le = 0;
    char *t1 = slurp(p1, &l1);
    char *te = expected_text(s, vel, &le);
    T_CHECK(t1 && l1 == le && memcmp(t1, te, le) == 0,
            "%s: written text differs from printf formatting", what);
    if (t1 && l1 == le && memcmp(t1, te, le) != 0) {
        for (size_t i = 0; i < le; i++)
            if (t1[i] != te[i]) {
                size_t ls = i;
                while (ls > 0 && te[ls - 1] != '\n')
                    ls--;
                fprintf(stderr,
                        "  first difference at byte %zu:\n  got      %.70s\n  expected %.70s\n", i,
                        t1 + ls, te + ls);
                break;
            }
    }
    T_OK(hx_gro_read(p1, &back));
    if (back) {
        compare_systems(back, s, vel, what);
        /* the second write of the read-back system must give the same bytes */
        T_OK(hx_gro_write(p2, back, vel));
        char *t2 = slurp(p2, &l2);
        T_CHECK(t1 && t2 && l1 == l2 && memcmp(t1, t2, l1) == 0,
                "%s: re-writing the read system changed the text", what);
        T_OK(hx_gro_read(p2, &back2));
        /* reading the same text again gives the same system, bit for bit */
        if (back2) {
            char what2[160];
            snprintf(what2, sizeof what2, "%s, second round", what);
            t_gro_same(back2, back, vel, what2);
        }
        free(t2);
    }
    free(t1);
    free(te);
    hx_system_destroy(&s);
    hx_system_destroy(&back);
    hx_system_destroy(&back2);
}

/* Values at and near rounding ties and field limits: the fast formatter must equal printf. */
static void test_formatting(t_rng *r, int *ncases)
{
    static const double special[] = {0.0,       -0.0,     0.0005,    -0.0005,   0.0015,
                                     0.0025,    1.2345,   -1.2345,   9999.999,  -999.999,
                                     0.0004999, -0.00049, 2.5e-4,    123.4565,  -0.0001,
                                     999.9995,  0.1,      1.0 / 3.0, 7.0000005, 1e-300};
    const int n = 400;
    hx_system *s = NULL;
    T_OK(hx_system_create(n, n, &s));
    if (!s)
        return;
    s->box[0] = s->box[1] = s->box[2] = 5000.0;
    for (int i = 0; i < n; i++) {
        s->mol_start[i] = i;
        s->res_id[i] = i + 1;
        strcpy(s->res_name[i], "R");
        strcpy(s->atom_name[i], "A");
        for (int d = 0; d < 3; d++) {
            int k = 3 * i + d;
            if (k < (int)(sizeof special / sizeof special[0])) {
                s->x[k] = special[k];
                s->v[k] = special[k] / 10.0;
            } else {
                /* decimal ties k/2000 and random values of all magnitudes */
                s->x[k] = (i % 2) ? (double)(t_rng_int(r, 2000000) - 1000000) / 2000.0
                                  : (t_rng_uniform(r) - 0.3) * pow(10.0, t_rng_int(r, 7) - 3);
                s->v[k] = (i % 2) ? (double)(t_rng_int(r, 200000) - 100000) / 20000.0
                                  : (t_rng_uniform(r) - 0.3) * pow(10.0, t_rng_int(r, 6) - 4);
            }
        }
    }
    s->mol_start[n] = n;
    s->nmol = n;
    strcpy(s->title, "formatting");
    char p[512];
    snprintf(p, sizeof p, "%s/fmt.gro", tmpdir);
    (*ncases)++;
    T_OK(hx_gro_write(p, s, 1));
    size_t l1 = 0, le = 0;
    char *t1 = slurp(p, &l1);
    char *te = expected_text(s, 1, &le);
    int same = t1 && l1 == le && memcmp(t1, te, le) == 0;
    T_CHECK(same, "formatting: hx_gro_write differs from printf %%8.3f/%%8.4f");
    if (!same && t1) {
        const char *a = t1, *b = te;
        while (*a && *a == *b)
            a++, b++;
        while (a > t1 && a[-1] != '\n')
            a--, b--;
        fprintf(stderr, "  got      %.80s\n  expected %.80s\n", a, b);
    }
    /* The reader returns exactly the double strtod gives for each written field. */
    hx_system *b = NULL;
    T_OK(hx_gro_read(p, &b));
    for (int k = 0; b && k < 3 * n; k++) {
        char f[32];
        snprintf(f, sizeof f, "%8.3f", s->x[k]);
        double xe = strtod(f, NULL);
        snprintf(f, sizeof f, "%8.4f", s->v[k]);
        double ve = strtod(f, NULL);
        if (memcmp(&b->x[k], &xe, sizeof xe) != 0 || memcmp(&b->v[k], &ve, sizeof ve) != 0) {
            T_FAIL("formatting: value %d read as %.17g / %.17g, strtod gives %.17g / %.17g", k,
                   b->x[k], b->v[k], xe, ve);
            break;
        }
    }
    hx_system_destroy(&b);
    free(t1);
    free(te);
    /* A value that does not fit the field is refused, and the existing file stays. */
    (*ncases)++;
    size_t lbefore = 0, lafter = 0;
    char *before = slurp(p, &lbefore);
    s->x[5] = 12345.0;
    hx_status st = hx_gro_write(p, s, 1);
    T_CHECK(st == HX_ERR_INVALID_ARG, "x=12345 written as %s, expected HX_ERR_INVALID_ARG",
            hx_status_name(st));
    s->x[5] = NAN;
    st = hx_gro_write(p, s, 1);
    T_CHECK(st == HX_ERR_INVALID_ARG, "x=NaN written as %s, expected HX_ERR_INVALID_ARG",
            hx_status_name(st));
    char *after = slurp(p, &lafter);
    T_CHECK(before && after && lbefore == lafter && memcmp(before, after, lbefore) == 0,
            "failed write changed the existing file");
    T_CHECK(count_temporaries() == 0, "failed write left a temporary file in %s", tmpdir);
    free(before);
    free(after);
    hx_system_destroy(&s);
}

static void test_write_errors(int *ncases)
{
    hx_system *s = NULL;
    T_OK(hx_system_create(1, 1, &s));
    if (!s)
        return;
    s->box[0] = s->box[1] = s->box[2] = 1;
    s->mol_start[1] = 1;
    (*ncases)++;
    hx_status st = hx_gro_write("/nonexistent-halox-dir/x.gro", s, 0);
    T_CHECK(st == HX_ERR_IO, "writing into a missing directory gave %s, expected HX_ERR_IO",
            hx_status_name(st));
    char want[512];
    snprintf(want, sizeof want,
             "cannot create '/nonexistent-halox-dir/x.gro.tmp.%ld' (temporary for "
             "'/nonexistent-halox-dir/x.gro'): No such file or directory; check that the "
             "directory exists and is writable",
             (long)getpid());
    T_CHECK(strcmp(hx_last_error_message(), want) == 0, "message\n  '%s'\nexpected\n  '%s'",
            hx_last_error_message(), want);
    (*ncases)++;
    hx_system *r = NULL;
    st = hx_gro_read("/nonexistent-halox-dir/x.gro", &r);
    T_CHECK(st == HX_ERR_IO && r == NULL, "reading a missing file gave %s, expected HX_ERR_IO",
            hx_status_name(st));
    T_CHECK(strcmp(hx_last_error_message(), "cannot open '/nonexistent-halox-dir/x.gro' for "
                                            "reading: No such file or directory") == 0,
            "message: '%s'", hx_last_error_message());
    hx_system_destroy(&s);
}

/* Multi-frame trajectory: each frame reads back on its own, titles carry t= and step=. */
static void test_frames(t_rng *r, int *ncases)
{
    char p[512];
    snprintf(p, sizeof p, "%s/traj.gro", tmpdir);
    hx_system *s = random_system(r, 50, 0);
    (*ncases)++;
    FILE *f = fopen(p, "w");
    T_CHECK(f != NULL, "cannot open %s", p);
    if (!f || !s)
        return;
    double xs[3][150];
    for (int fr = 0; fr < 3; fr++) {
        for (int i = 0; i < 150; i++)
            s->x[i] += 0.01 * fr;
        memcpy(xs[fr], s->x, sizeof xs[fr]);
        T_OK(hx_gro_write_frame(f, s, 0.5 * fr, 250LL * fr, fr % 2));
    }
    fclose(f);
    size_t len = 0;
    char *t = slurp(p, &len);
    /* split at the title lines */
    const char *frames[4];
    int nfr = 0;
    for (const char *q = t; q && (q = strstr(q, "halox t=")) != NULL; q++)
        if (nfr < 3)
            frames[nfr++] = q;
    T_CHECK(nfr == 3, "trajectory has %d frame titles, expected 3", nfr);
    if (nfr == 3) {
        frames[3] = t + len;
        for (int fr = 0; fr < 3; fr++) {
            char expect[64];
            snprintf(expect, sizeof expect, "halox t= %.5f step= %lld\n", 0.5 * fr, 250LL * fr);
            T_CHECK(strncmp(frames[fr], expect, strlen(expect)) == 0, "frame %d title is not '%s'",
                    fr, expect);
            hx_system *b = NULL;
            T_OK(
                hx_gro_read_buffer(frames[fr], (size_t)(frames[fr + 1] - frames[fr]), "frame", &b));
            if (!b)
                continue;
            /* the frame as written: this frame's coordinates, the velocities on odd frames,
             * names, molecules, box and the frame title */
            hx_system *e = NULL;
            T_OK(hx_system_copy(s, &e));
            if (e) {
                memcpy(e->x, xs[fr], sizeof xs[fr]);
                snprintf(e->title, sizeof e->title, "halox t= %.5f step= %lld", 0.5 * fr,
                         250LL * fr);
                char what[32];
                snprintf(what, sizeof what, "frame %d", fr);
                t_gro_same(b, e, fr % 2, what);
            }
            hx_system_destroy(&e);
            hx_system_destroy(&b);
        }
        /* the whole trajectory is not one .gro file: text after the first box */
        hx_system *b = NULL;
        hx_status st = hx_gro_read_buffer(t, len, "traj.gro", &b);
        T_CHECK(st == HX_ERR_INPUT, "reading a 3-frame file as one frame gave %s",
                hx_status_name(st));
    }
    free(t);
    hx_system_destroy(&s);
}

/* ---- malformed input -------------------------------------------------------------------- */

#define A1 "    1SOL     OW    1   0.126   1.624   1.679\n"
#define A2 "    1SOL    HW1    2   0.190   1.661   1.747\n"
#define A3 "    2SOL     OW    3   1.770   1.916   1.582\n"
#define BOX "   3.00000   3.00000   3.00000\n"

typedef struct bad_case {
    const char *name;
    const char *text;
    hx_status expect;
    int line; /* line the message must name; 0: success expected */
} bad_case;

static const bad_case cases[] = {
    {"valid", "t\n3\n" A1 A2 A3 BOX, HX_OK, 0},
    {"valid crlf",
     "t\r\n3\r\n    1SOL     OW    1   0.126   1.624   1.679\r\n"
     "    1SOL    HW1    2   0.190   1.661   1.747\r\n"
     "    2SOL     OW    3   1.770   1.916   1.582\r\n   3.0 3.0 3.0\r\n",
     HX_OK, 0},
    {"valid no final newline", "t\n1\n" A1 "   3.0 3.0 3.0", HX_OK, 0},
    {"valid trailing blank lines", "t\n1\n" A1 BOX "\n   \n\n", HX_OK, 0},
    {"valid zero atoms", "t\n0\n" BOX, HX_OK, 0},
    {"valid 9-value rectangular box", "t\n1\n" A1 " 3 3 3 0 0 0 0 0 0\n", HX_OK, 0},
    {"valid 4 decimals",
     "t\n2\n    1SOL     OW    1    0.1260    1.6240    1.6790\n"
     "    2SOL     OW    2    1.1261    1.6241    1.6791\n" BOX,
     HX_OK, 0},
    {"valid velocities",
     "t\n2\n    1SOL     OW    1   0.126   1.624   1.679  0.1000 -0.2000  0.3000\n"
     "    2SOL     OW    2   1.126   1.624   1.679  0.1000 -0.2000  0.3000\n" BOX,
     HX_OK, 0},
    {"empty file", "", HX_ERR_INPUT, 1},
    {"blank file", "  \n\n", HX_ERR_INPUT, 1},
    {"title only", "title\n", HX_ERR_INPUT, 2},
    {"count not integer", "t\nabc\n" A1 BOX, HX_ERR_INPUT, 2},
    {"count fractional", "t\n1.5\n" A1 BOX, HX_ERR_INPUT, 2},
    {"count blank", "t\n\n" A1 BOX, HX_ERR_INPUT, 2},
    {"count negative", "t\n-3\n" A1 BOX, HX_ERR_INPUT, 2},
    {"count huge", "t\n99999999999999999999\n" A1 BOX, HX_ERR_INPUT, 2},
    {"truncated atoms", "t\n5\n" A1 A2, HX_ERR_INPUT, 4},
    {"missing box", "t\n3\n" A1 A2 A3, HX_ERR_INPUT, 5},
    {"extra line after box", "t\n2\n" A1 A2 BOX "    3SOL     OW    3   1.770   1.916   1.582\n",
     HX_ERR_INPUT, 6},
    {"atom line too short", "t\n3\n" A1 "    1SOL    HW1    2   0.190   1.661\n" A3 BOX,
     HX_ERR_INPUT, 4},
    {"no decimal points", "t\n1\n    1SOL     OW    1   0126    1624    1679 \n" BOX, HX_ERR_INPUT,
     3},
    {"residue number not integer", "t\n2\n" A1 "   xxSOL    HW1    2   0.190   1.661   1.747\n" BOX,
     HX_ERR_INPUT, 4},
    {"coordinate not numeric", "t\n2\n" A1 "    1SOL    HW1    2   0.190   1.6a1   1.747\n" BOX,
     HX_ERR_INPUT, 4},
    {"coordinate blank", "t\n2\n" A1 "    1SOL    HW1    2   0.190           1.747\n" BOX,
     HX_ERR_INPUT, 4},
    {"coordinate nan", "t\n2\n" A1 "    1SOL    HW1    2   0.190     nan   1.747\n" BOX,
     HX_ERR_INPUT, 4},
    {"coordinate inf", "t\n2\n" A1 "    1SOL    HW1    2    -inf   1.661   1.747\n" BOX,
     HX_ERR_INPUT, 4},
    {"velocity missing on second line",
     "t\n2\n    1SOL     OW    1   0.126   1.624   1.679  0.1000 -0.2000  0.3000\n" A2 BOX,
     HX_ERR_INPUT, 4},
    /* the first line decides in GROMACS, which would drop every other velocity silently */
    {"velocities after a first line without",
     "t\n3\n" A1 "    1SOL    HW1    2   0.190   1.661   1.747  0.1000 -0.2000  0.3000\n"
     "    2SOL     OW    3   1.770   1.916   1.582  0.1000 -0.2000  0.3000\n" BOX,
     HX_ERR_INPUT, 4},
    {"text after z after a first line without velocities",
     "t\n2\n" A1 "    1SOL    HW1    2   0.190   1.661   1.747  junk\n" BOX, HX_ERR_INPUT, 4},
    {"valid trailing blanks after z",
     "t\n2\n" A1 "    1SOL    HW1    2   0.190   1.661   1.747    \n" BOX, HX_OK, 0},
    {"velocity not numeric",
     "t\n2\n    1SOL     OW    1   0.126   1.624   1.679  0.1000 -0.2000  0.3000\n"
     "    2SOL     OW    2   1.126   1.624   1.679  0.1000 -0.2x00  0.3000\n" BOX,
     HX_ERR_INPUT, 4},
    {"box blank", "t\n1\n" A1 "\n", HX_ERR_INPUT, 4},
    {"box not numeric", "t\n1\n" A1 "   3.0 abc 3.0\n", HX_ERR_INPUT, 4},
    {"box two values", "t\n1\n" A1 "   3.0 3.0\n", HX_ERR_INPUT, 4},
    {"box five values", "t\n1\n" A1 "   3.0 3.0 3.0 1.0 1.0\n", HX_ERR_INPUT, 4},
    {"box ten values", "t\n1\n" A1 " 3 3 3 0 0 0 0 0 0 0\n", HX_ERR_INPUT, 4},
    {"box zero edge", "t\n1\n" A1 "   3.0 0.0 3.0\n", HX_ERR_INPUT, 4},
    {"box negative edge", "t\n1\n" A1 "   3.0 3.0 -3.0\n", HX_ERR_INPUT, 4},
    {"box nan", "t\n1\n" A1 "   3.0 nan 3.0\n", HX_ERR_INPUT, 4},
    {"triclinic box", "t\n1\n" A1 " 3 3 3 0 0 0.5 0 0 0\n", HX_ERR_UNSUPPORTED, 4},
    {"atom far outside box", "t\n3\n" A1 A2 "    2SOL     OW    3   7.000   1.916   1.582\n" BOX,
     HX_ERR_INPUT, 5},
    {"atom far below box", "t\n2\n" A1 "    1SOL    HW1    2   0.190  -3.100   1.747\n" BOX,
     HX_ERR_INPUT, 4},
    {"embedded NUL in coordinate",
     "t\n2\n" A1 "    1SOL    HW1    2   0.190   1.\0001   1.747\n" BOX, HX_ERR_INPUT, 4},
};

/* Length of a case's text: the NUL case has an embedded NUL, so use the literal's size. */
static size_t case_len(const bad_case *c)
{
    if (strcmp(c->name, "embedded NUL in coordinate") == 0)
        return sizeof("t\n2\n" A1 "    1SOL    HW1    2   0.190   1.\0001   1.747\n" BOX) - 1;
    return strlen(c->text);
}

static void test_malformed(int *ncases)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const bad_case *c = &cases[i];
        (*ncases)++;
        hx_system *s = NULL;
        hx_clear_error();
        hx_status st = hx_gro_read_buffer(c->text, case_len(c), "case.gro", &s);
        if (st != c->expect) {
            T_FAIL("case '%s': got %s, expected %s; message: %s", c->name, hx_status_name(st),
                   hx_status_name(c->expect), hx_last_error_message());
        } else if (c->line > 0) {
            char where[32];
            snprintf(where, sizeof where, "case.gro:%d:", c->line);
            T_CHECK(strncmp(hx_last_error_message(), where, strlen(where)) == 0,
                    "case '%s': message does not start with '%s': %s", c->name, where,
                    hx_last_error_message());
            T_CHECK(s == NULL, "case '%s': failed read returned a system", c->name);
        } else {
            T_CHECK(s != NULL, "case '%s': no system", c->name);
        }
        if (st == HX_OK && s && strcmp(c->name, "valid") == 0) {
            T_CHECK(s->natoms == 3 && s->nmol == 2 && s->mol_start[1] == 2,
                    "case 'valid': natoms %d nmol %d", s->natoms, s->nmol);
            T_CHECK(strcmp(s->atom_name[1], "HW1") == 0 && strcmp(s->res_name[1], "SOL") == 0,
                    "case 'valid': names '%s' '%s'", s->res_name[1], s->atom_name[1]);
            T_CHECK(fabs(s->x[4] - 1.661) < 1e-12, "case 'valid': y of atom 2 %.6f", s->x[4]);
        }
        if (st == HX_OK && s && strcmp(c->name, "valid 4 decimals") == 0)
            T_CHECK(fabs(s->x[3] - 1.1261) < 1e-12 && fabs(s->x[5] - 1.6791) < 1e-12,
                    "case '4 decimals': x %.6f z %.6f", s->x[3], s->x[5]);
        if (st != HX_OK && strstr(c->name, "after a first line without"))
            T_CHECK(
                strstr(hx_last_error_message(), "every atom line must have velocities, or none"),
                "case '%s': the message does not say what to do: %s", c->name,
                hx_last_error_message());
        if (st == HX_OK && s && strcmp(c->name, "valid velocities") == 0)
            T_CHECK(s->has_velocities && fabs(s->v[4] + 0.2) < 1e-12,
                    "case 'velocities': has %d vy %.6f", s->has_velocities, s->v[4]);
        hx_system_destroy(&s);
    }
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/halox_test_gro_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    int ncases = 0;
    uint64_t seed = 20240601;
    t_rng r;
    t_rng_seed(&r, seed);
    printf("test_gro: seed %llu, files in %s\n", (unsigned long long)seed, tmpdir);
    const int sizes[] = {1, 7, 300, 5000};
    for (int k = 0; k < 4; k++)
        for (int vel = 0; vel < 2; vel++)
            test_round_trip(&r, sizes[k], vel, k % 2, &ncases);
    test_formatting(&r, &ncases);
    test_write_errors(&ncases);
    test_frames(&r, &ncases);
    test_malformed(&ncases);
    T_CHECK(count_temporaries() == 0, "temporary files left in %s", tmpdir);
    /* clean up */
    const char *files[] = {"a.gro", "b.gro", "fmt.gro", "traj.gro"};
    for (int i = 0; i < 4; i++) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", tmpdir, files[i]);
        remove(p);
    }
    rmdir(tmpdir);
    return t_finish("test_gro", ncases);
}
