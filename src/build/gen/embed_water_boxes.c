/* Build-time generator of src/build/water_boxes.c (in the build tree): the equilibrated water
 * boxes data/water_<model>.gro as C arrays, so that the library carries them and `halox build`
 * works from any directory after installation, without the .gro files and without a second,
 * committed copy of the same data that could drift from it.
 *
 *   embed_water_boxes OUT.c data/water_spc.gro data/water_spce.gro ...
 *
 * The digits are kept exactly: positions as integers in 0.001 nm (the files' three decimals),
 * box edges in 0.00001 nm (five decimals). The input must be exactly that: fixed .gro columns,
 * three decimals, molecules of OW, HW1, HW2, an orthorhombic box; anything else stops the build
 * with the file, line and what is wrong. OUT.c is written as OUT.c.tmp and renamed, so an
 * interrupted build leaves no half file. A host program of the build, not part of the library:
 * it prints and exits. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LINE 256

static void die(const char *path, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "embed_water_boxes: %s:%d: ", path, line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

/* A fixed-point number with exactly `decimals` decimals in s[0..len) (spaces around allowed),
 * as an integer in units of 10^-decimals. */
static long fixed(const char *path, int line, const char *s, int len, int decimals)
{
    char f[32];
    if (len <= 0 || len >= (int)sizeof f)
        die(path, line, "field of %d characters", len);
    memcpy(f, s, (size_t)len);
    f[len] = '\0';
    const char *p = f;
    while (*p == ' ')
        p++;
    int neg = *p == '-';
    p += neg;
    long v = 0;
    int digits = 0, frac = -1;
    for (; *p && *p != ' '; p++) {
        if (*p == '.' && frac < 0) {
            frac = 0;
            continue;
        }
        if (!isdigit((unsigned char)*p))
            die(path, line, "'%s' is not a number", f);
        v = 10 * v + (*p - '0');
        digits++;
        if (frac >= 0)
            frac++;
    }
    while (*p == ' ')
        p++;
    if (*p || digits == 0 || frac != decimals)
        die(path, line, "'%s' is not a number with %d decimals", f, decimals);
    return neg ? -v : v;
}

typedef struct box_data {
    char model[32];
    int nmol;
    long box[3];
    long *x; /* 9 * nmol */
} box_data;

static void read_box(const char *path, box_data *b)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t bl = strlen(base);
    if (strncmp(base, "water_", 6) != 0 || bl < 11 || strcmp(base + bl - 4, ".gro") != 0 ||
        bl - 10 >= sizeof b->model)
        die(path, 0, "the file name must be water_<model>.gro");
    memcpy(b->model, base + 6, bl - 10);
    b->model[bl - 10] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        die(path, 0, "cannot open");
    char l[MAX_LINE];
    int line = 1, n = 0;
    if (!fgets(l, sizeof l, f) || !fgets(l, sizeof l, f) || sscanf(l, "%d", &n) != 1)
        die(path, 2, "no atom count");
    line = 2;
    if (n <= 0 || n % 3 != 0)
        die(path, line, "%d atoms: expected whole water molecules (3 atoms each)", n);
    b->nmol = n / 3;
    b->x = malloc(3 * (size_t)n * sizeof *b->x);
    if (!b->x)
        die(path, line, "out of memory");
    static const char *names[3] = {"OW", "HW1", "HW2"};
    for (int a = 0; a < n; a++) {
        line++;
        if (!fgets(l, sizeof l, f))
            die(path, line, "file ends at atom %d of %d", a + 1, n);
        l[strcspn(l, "\r\n")] = '\0';
        if (strlen(l) < 44)
            die(path, line, "atom line of %zu characters: expected the .gro columns (44)",
                strlen(l));
        char name[6];
        if (sscanf(l + 10, "%5s", name) != 1 || strcmp(name, names[a % 3]) != 0)
            die(path, line, "atom %d is '%.5s': expected %s (molecules of OW, HW1, HW2)", a + 1,
                l + 10, names[a % 3]);
        for (int d = 0; d < 3; d++)
            b->x[3 * a + d] = fixed(path, line, l + 20 + 8 * d, 8, 3);
    }
    line++;
    if (!fgets(l, sizeof l, f))
        die(path, line, "no box line");
    l[strcspn(l, "\r\n")] = '\0';
    const char *p = l;
    for (int d = 0; d < 3; d++) {
        while (*p == ' ')
            p++;
        int len = (int)strcspn(p, " ");
        b->box[d] = fixed(path, line, p, len, 5);
        p += len;
    }
    while (*p == ' ')
        p++;
    if (*p)
        die(path, line, "box line with more than three numbers: only orthorhombic boxes");
    if (fgets(l, sizeof l, f) && strspn(l, " \r\n") != strlen(l))
        die(path, line + 1, "text after the box line");
    fclose(f);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: embed_water_boxes OUT.c water_<model>.gro ...\n");
        return 2;
    }
    const int nbox = argc - 2;
    box_data *b = calloc((size_t)nbox, sizeof *b);
    if (!b)
        die(argv[1], 0, "out of memory");
    for (int k = 0; k < nbox; k++)
        read_box(argv[k + 2], &b[k]);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
    FILE *o = fopen(tmp, "w");
    if (!o)
        die(tmp, 0, "cannot write");
    fprintf(o, "/* Generated at build time by src/build/gen/embed_water_boxes.c from\n"
               " * data/water_*.gro: do not edit. Equilibrated water boxes (O, H1, H2 per\n"
               " * molecule) that hx_build_water tiles; positions in 0.001 nm, box edges in\n"
               " * 0.00001 nm, as written in the .gro files. */\n"
               "#include \"build/water_boxes.h\"\n\n/* clang-format off */\n");
    for (int k = 0; k < nbox; k++) {
        const long nx = 9L * b[k].nmol;
        fprintf(o, "static const int32_t x_%s[%ld] = {\n", b[k].model, nx);
        for (long i = 0; i < nx; i += 12) {
            fputs("   ", o);
            for (long j = i; j < i + 12 && j < nx; j++)
                fprintf(o, " %ld,", b[k].x[j]);
            fputc('\n', o);
        }
        fputs("};\n\n", o);
    }
    fputs("const hx_water_box hx_water_boxes[] = {\n", o);
    for (int k = 0; k < nbox; k++)
        fprintf(o, "    {\"%s\", %d, {%ld, %ld, %ld}, x_%s},\n", b[k].model, b[k].nmol, b[k].box[0],
                b[k].box[1], b[k].box[2], b[k].model);
    fputs("    {NULL, 0, {0, 0, 0}, NULL},\n};\n/* clang-format on */\n", o);
    if (ferror(o) | fclose(o))
        die(tmp, 0, "writing failed");
    if (rename(tmp, argv[1]) != 0)
        die(argv[1], 0, "cannot rename %s to it", tmp);
    for (int k = 0; k < nbox; k++)
        free(b[k].x);
    free(b);
    return 0;
}
