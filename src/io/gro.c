/* GROMACS .gro reading and writing.
 *
 * The reader works on one memory buffer (hx_gro_read maps the file) so that the same code serves
 * files, tests and the fuzzer, and so that no line-length limit of a stdio buffer applies. The
 * buffer is not NUL-terminated: every field is copied into a small local string before it is
 * converted, which also makes an embedded NUL byte an ordinary "not a number" error.
 *
 * Column layout (GROMACS): "%5d%-5s%5s%5d" = residue number, residue name, atom name, atom
 * number; then x y z in fields of width w = n+5 with n decimals, optionally vx vy vz in fields of
 * the same width. w is the distance between the first two decimal points of the first atom line,
 * as GROMACS determines it. The atom number column is ignored (GROMACS wraps it and some tools
 * write asterisks there). The box line is free format: 3 values, or 9 for a triclinic box. */
#include "halox/io.h"
#include "core/error.h"
#include "halox/files.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Residue and atom numbers are 5 columns wide; GROMACS writes them modulo 100000. */
#define GRO_WRAP 100000
/* Widest coordinate field accepted (n up to 20 decimals); more is surely not a .gro file. */
#define GRO_MAX_FIELD 26

/* ---- reading ---------------------------------------------------------------------------- */

typedef struct gro_line {
    const char *s;
    size_t len; /* without the newline and a trailing '\r' */
    long no;    /* 1-based line number */
} gro_line;

typedef struct gro_cursor {
    const char *data;
    size_t len, pos;
    long line_no; /* number of the line last returned */
} gro_cursor;

/* Next line; returns 0 at end of data. A final line without newline counts as a line. */
static int next_line(gro_cursor *c, gro_line *l)
{
    if (c->pos >= c->len)
        return 0;
    const char *start = c->data + c->pos;
    const char *nl = memchr(start, '\n', c->len - c->pos);
    size_t n = nl ? (size_t)(nl - start) : c->len - c->pos;
    c->pos += n + (nl ? 1 : 0);
    if (n > 0 && start[n - 1] == '\r')
        n--;
    l->s = start;
    l->len = n;
    l->no = ++c->line_no;
    return 1;
}

/* Lines left from the cursor on, counted without converting anything (to refuse a huge atom
 * count before allocating for it). */
static size_t count_lines(const gro_cursor *c)
{
    size_t n = 0, pos = c->pos;
    while (pos < c->len) {
        const char *nl = memchr(c->data + pos, '\n', c->len - pos);
        n++;
        if (!nl)
            break;
        pos = (size_t)(nl - c->data) + 1;
    }
    return n;
}

static int is_blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n' && s[i] != '\f' &&
            s[i] != '\v')
            return 0;
    return 1;
}

/* Copy s[0..n) without surrounding blanks into out (size cap), with non-printable bytes
 * replaced by '?', for quoting input text in messages. */
static const char *show(const char *s, size_t n, char *out, size_t cap)
{
    while (n > 0 && (*s == ' ' || *s == '\t'))
        s++, n--;
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    size_t k = 0;
    for (; k < n && k + 4 < cap; k++)
        out[k] = (s[k] >= 32 && s[k] < 127) ? s[k] : '?';
    if (k < n) {
        memcpy(out + k, "...", 3);
        k += 3;
    }
    out[k] = '\0';
    return out;
}

/* Trimmed copy of a field into buf (cut to cap-1 bytes); returns the trimmed length before
 * cutting, so that callers can refuse a field that did not fit (0 when blank). */
static size_t field_copy(const char *s, size_t n, char *buf, size_t cap)
{
    while (n > 0 && (*s == ' ' || *s == '\t'))
        s++, n--;
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    size_t k = n < cap ? n : cap - 1;
    memcpy(buf, s, k);
    buf[k] = '\0';
    return n;
}

/* Whole-field integer; 0 on success. */
static int parse_long(const char *s, size_t n, long *out)
{
    char buf[32];
    size_t k = field_copy(s, n, buf, sizeof buf);
    if (k == 0 || k >= sizeof buf)
        return -1;
    char *end = NULL;
    errno = 0;
    long v = strtol(buf, &end, 10);
    if (errno || end != buf + k)
        return -1;
    *out = v;
    return 0;
}

/* Whole-field number; 0 on success, 1 when it parsed but is NaN or infinite, -1 otherwise. */
/* Fast path for plain fixed-point text ("  -12.345"): at most 15 digits make an exact integer
 * mantissa m < 2^53 and 10^k (k <= 15) is exact, so m / 10^k is one correctly rounded division,
 * the same double strtod returns. Anything else (exponents, nan, junk) returns -1 and goes
 * through strtod. Reading 30 million atoms is several times faster this way. */
static int parse_fixed(const char *s, size_t n, double *out)
{
    static const double pow10[] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                   1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
    size_t i = 0;
    while (i < n && s[i] == ' ')
        i++;
    int neg = 0;
    if (i < n && (s[i] == '-' || s[i] == '+'))
        neg = s[i++] == '-';
    int64_t m = 0;
    int ndig = 0, nfrac = 0, dot = 0;
    for (; i < n; i++) {
        char ch = s[i];
        if (ch >= '0' && ch <= '9') {
            if (++ndig > 15)
                return -1;
            m = m * 10 + (ch - '0');
            nfrac += dot;
        } else if (ch == '.' && !dot) {
            dot = 1;
        } else {
            break;
        }
    }
    while (i < n && s[i] == ' ')
        i++;
    if (i != n || ndig == 0)
        return -1;
    double v = (double)m / pow10[nfrac];
    *out = neg ? -v : v;
    return 0;
}

static int parse_double(const char *s, size_t n, double *out)
{
    if (parse_fixed(s, n, out) == 0)
        return 0;
    char buf[64];
    size_t k = field_copy(s, n, buf, sizeof buf);
    if (k == 0 || k >= sizeof buf)
        return -1;
    char *end = NULL;
    double v = strtod(buf, &end);
    if (end != buf + k)
        return -1;
    *out = v;
    return isfinite(v) ? 0 : 1;
}

static void copy_name(char dst[HX_NAME_LEN], const char *s, size_t n)
{
    char buf[HX_NAME_LEN];
    field_copy(s, n, buf, sizeof buf);
    memcpy(dst, buf, HX_NAME_LEN);
}

static hx_status read_box(const char *name, const gro_line *l, hx_system *sys)
{
    double v[9];
    int nv = 0;
    size_t i = 0;
    char tok[64];
    while (i < l->len) {
        while (i < l->len && (l->s[i] == ' ' || l->s[i] == '\t'))
            i++;
        if (i >= l->len)
            break;
        size_t j = i;
        while (j < l->len && l->s[j] != ' ' && l->s[j] != '\t')
            j++;
        HX_CHECK(nv < 9, HX_ERR_INPUT,
                 "%s:%ld: box line has more than 9 values; expected 3 box edges in nm (or 9 "
                 "values of a box matrix)",
                 name, l->no);
        int r = parse_double(l->s + i, j - i, &v[nv]);
        HX_CHECK(r == 0, HX_ERR_INPUT,
                 "%s:%ld: box value %d '%s' is %s; expected 3 box edges in nm, e.g. "
                 "'   3.00000   3.00000   3.00000'",
                 name, l->no, nv + 1, show(l->s + i, j - i, tok, sizeof tok),
                 r > 0 ? "not finite" : "not a number");
        nv++;
        i = j;
    }
    HX_CHECK(nv == 3 || nv == 9, HX_ERR_INPUT,
             "%s:%ld: box line has %d value%s; expected 3 box edges in nm (or 9 values of a "
             "box matrix)",
             name, l->no, nv, nv == 1 ? "" : "s");
    if (nv == 9) {
        for (int k = 3; k < 9; k++)
            HX_CHECK(v[k] == 0.0, HX_ERR_UNSUPPORTED,
                     "%s:%ld: triclinic box not supported (off-diagonal value %d is %g); halox "
                     "handles rectangular boxes only: build or solvate the system in one (gmx "
                     "editconf -bt cubic, or gmx solvate -box X Y Z; or halox build)",
                     name, l->no, k + 1, v[k]);
    }
    for (int d = 0; d < 3; d++)
        HX_CHECK(v[d] > 0.0, HX_ERR_INPUT,
                 "%s:%ld: box edge %c is %g nm; every box edge must be positive", name, l->no,
                 "xyz"[d], v[d]);
    memcpy(sys->box, v, sizeof sys->box);
    return HX_OK;
}

/* Parse the atom line l into atom k. w: field width, nf: 3 or 6 coordinate fields. */
static hx_status read_atom(const char *name, const gro_line *l, int k, int w, int nf,
                           hx_system *sys)
{
    char tok[64];
    size_t need = 20 + (size_t)nf * (size_t)w;
    HX_CHECK(l->len >= need, HX_ERR_INPUT,
             "%s:%ld: atom line %d is %zu characters long; expected at least %zu (20 for "
             "residue number, residue name, atom name and atom number, then %d fields of width "
             "%d for %s)",
             name, l->no, k + 1, l->len, need, nf, w,
             nf == 6 ? "positions and velocities, as on the first atom line (line 3): every "
                       "atom line must have velocities, or none"
                     : "x, y, z");
    long resnr;
    HX_CHECK(parse_long(l->s, 5, &resnr) == 0, HX_ERR_INPUT,
             "%s:%ld: residue number '%s' (columns 1-5) is not an integer", name, l->no,
             show(l->s, 5, tok, sizeof tok));
    sys->res_id[k] = (int)resnr;
    copy_name(sys->res_name[k], l->s + 5, 5);
    copy_name(sys->atom_name[k], l->s + 10, 5);
    if (nf == 3) {
        /* GROMACS decides from the first atom line alone whether a file has velocities and
         * silently drops them on every other line when that one has none: a whole system
         * would then start at rest. Refuse a file that mixes the two kinds of line instead. */
        size_t end = l->len;
        while (end > need && (l->s[end - 1] == ' ' || l->s[end - 1] == '\t'))
            end--;
        HX_CHECK(end <= need, HX_ERR_INPUT,
                 "%s:%ld: atom line %d has text after z ('%s'), such as velocities, but the "
                 "first atom line (line 3) has none: every atom line must have velocities, or "
                 "none",
                 name, l->no, k + 1, show(l->s + need, end - need, tok, sizeof tok));
    }
    for (int f = 0; f < nf; f++) {
        const char *fs = l->s + 20 + (size_t)f * (size_t)w;
        double val;
        int r = parse_double(fs, (size_t)w, &val);
        HX_CHECK(r >= 0, HX_ERR_INPUT,
                 "%s:%ld: %s%c of atom %d '%s' (columns %d-%d) is not a number", name, l->no,
                 f < 3 ? "" : "v", "xyz"[f % 3], k + 1, show(fs, (size_t)w, tok, sizeof tok),
                 21 + f * w, 20 + (f + 1) * w);
        HX_CHECK(r == 0, HX_ERR_INPUT, "%s:%ld: %s%c of atom %d is '%s', which is not finite", name,
                 l->no, f < 3 ? "" : "v", "xyz"[f % 3], k + 1,
                 show(fs, (size_t)w, tok, sizeof tok));
        if (f < 3)
            sys->x[3 * (size_t)k + (size_t)f] = val;
        else
            sys->v[3 * (size_t)k + (size_t)(f - 3)] = val;
    }
    return HX_OK;
}

/* Field width and velocity presence from the first atom line, as GROMACS does. */
static hx_status gro_layout(const char *name, const gro_line *l, int *w, int *nf)
{
    const char *p1 = l->len > 20 ? memchr(l->s + 20, '.', l->len - 20) : NULL;
    const char *p2 = p1 ? memchr(p1 + 1, '.', (size_t)(l->s + l->len - p1 - 1)) : NULL;
    HX_CHECK(p1 && p2, HX_ERR_INPUT,
             "%s:%ld: first atom line has no decimal points for x and y after column 20; "
             "expected positions like '%%8.3f%%8.3f%%8.3f'",
             name, l->no);
    long dist = (long)(p2 - p1);
    HX_CHECK(dist >= 6 && dist <= GRO_MAX_FIELD, HX_ERR_INPUT,
             "%s:%ld: the decimal points of x and y are %ld columns apart; expected a field "
             "width of 6 to %d (8 for the usual %%8.3f)",
             name, l->no, dist, GRO_MAX_FIELD);
    *w = (int)dist;
    /* Trailing blanks do not make velocities. */
    size_t len = l->len;
    while (len > 0 && (l->s[len - 1] == ' ' || l->s[len - 1] == '\t'))
        len--;
    *nf = len >= 20 + 6 * (size_t)dist ? 6 : 3;
    return HX_OK;
}

hx_status hx_gro_read_buffer(const char *data, size_t len, const char *name, hx_system **out)
{
    HX_CHECK(out, HX_ERR_INVALID_ARG, "hx_gro_read_buffer: out is NULL");
    *out = NULL;
    HX_CHECK(data || len == 0, HX_ERR_INVALID_ARG, "hx_gro_read_buffer: data is NULL");
    if (!name)
        name = "<buffer>";
    char tok[64];
    gro_cursor c = {data, len, 0, 0};
    gro_line title = {0}, cnt = {0}, l = {0};
    HX_CHECK(len > 0 && !is_blank(data, len), HX_ERR_INPUT,
             "%s:1: empty file; expected a .gro file (title line, atom count, atom lines, box)",
             name);
    next_line(&c, &title);
    HX_CHECK(next_line(&c, &cnt), HX_ERR_INPUT,
             "%s:2: file ends after the title; expected the number of atoms on line 2", name);
    long natoms;
    HX_CHECK(parse_long(cnt.s, cnt.len, &natoms) == 0, HX_ERR_INPUT,
             "%s:2: '%s' is not an atom count; expected one integer on line 2", name,
             show(cnt.s, cnt.len, tok, sizeof tok));
    HX_CHECK(natoms >= 0, HX_ERR_INPUT, "%s:2: atom count %ld is negative", name, natoms);
    HX_CHECK(natoms <= 0x7fffffffL / 3, HX_ERR_INPUT,
             "%s:2: atom count %ld is larger than halox supports (%d)", name, natoms,
             0x7fffffff / 3);
    size_t left = count_lines(&c);
    HX_CHECK(left > (size_t)natoms, HX_ERR_INPUT,
             "%s:%ld: file ends here, but line 2 announces %ld atoms, so %ld atom lines and a "
             "box line must follow and only %zu lines do (truncated file or missing box line)",
             name, 2 + (long)left, natoms, natoms, left);

    hx_system *sys = NULL;
    hx_status st;
    int *mstart = NULL;
    HX_TRY(hx_system_create((int)natoms, 0, &sys));
    /* Guard against a create that reports success without a system (seen during development:
     * a clear error beats a crash in every caller). */
    HX_CHECK(sys, HX_ERR_INTERNAL,
             "hx_system_create returned HX_OK but no system (src/core/system.c must store *out)");
    /* Molecule starts are collected here first: the count is known only at the end. */
    mstart = malloc(((size_t)natoms + 1) * sizeof *mstart);
    if (!mstart)
        HX_FAIL_GOTO(st, HX_ERR_NOMEM, fail, "out of memory reading %ld atoms from %s", natoms,
                     name);
    {
        size_t tl = title.len < sizeof sys->title - 1 ? title.len : sizeof sys->title - 1;
        memcpy(sys->title, title.s, tl);
        sys->title[tl] = '\0';
    }
    int w = 8, nf = 3, nmol = 0;
    for (int k = 0; k < (int)natoms; k++) {
        next_line(&c, &l);
        if (k == 0)
            HX_TRY_GOTO(st, gro_layout(name, &l, &w, &nf), fail);
        HX_TRY_GOTO(st, read_atom(name, &l, k, w, nf, sys), fail);
        if (k == 0 || sys->res_id[k] != sys->res_id[k - 1] ||
            strcmp(sys->res_name[k], sys->res_name[k - 1]) != 0)
            mstart[nmol++] = k;
    }
    sys->has_velocities = nf == 6;
    next_line(&c, &l);
    HX_TRY_GOTO(st, read_box(name, &l, sys), fail);
    long box_line = l.no;
    while (next_line(&c, &l))
        if (!is_blank(l.s, l.len))
            HX_FAIL_GOTO(st, HX_ERR_INPUT, fail,
                         "%s:%ld: unexpected text '%s' after the box line (line %ld); a .gro "
                         "file ends with its box line (multi-frame files are not read)",
                         name, l.no, show(l.s, l.len, tok, sizeof tok), box_line);
    /* A coordinate more than one box length outside [0, L) is no periodic image slip but a
     * wrong box or a broken file; the decomposition would place such an atom nowhere. */
    for (int k = 0; k < (int)natoms; k++) {
        const double *x = &sys->x[3 * (size_t)k];
        for (int d = 0; d < 3; d++)
            if (x[d] < -sys->box[d] || x[d] >= 2.0 * sys->box[d])
                HX_FAIL_GOTO(st, HX_ERR_INPUT, fail,
                             "%s:%d: atom %d at (%g, %g, %g) is outside the box (%g, %g, %g) "
                             "by more than one box length along %c; check the box line "
                             "(line %ld) and the coordinates",
                             name, 3 + k, k + 1, x[0], x[1], x[2], sys->box[0], sys->box[1],
                             sys->box[2], "xyz"[d], box_line);
    }
    /* Replace the empty molecule table with the one found. */
    free(sys->mol_start);
    mstart[nmol] = (int)natoms;
    sys->mol_start = mstart;
    sys->nmol = nmol;
    *out = sys;
    return HX_OK;
fail:
    free(mstart);
    hx_system_destroy(&sys);
    return st;
}

hx_status hx_gro_read(const char *path, hx_system **out)
{
    HX_CHECK(path && out, HX_ERR_INVALID_ARG, "hx_gro_read: NULL argument");
    *out = NULL;
    int fd = open(path, O_RDONLY);
    HX_CHECK(fd >= 0, HX_ERR_IO, "cannot open '%s' for reading: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        HX_FAIL(HX_ERR_IO, "cannot stat '%s': %s", path, strerror(e));
    }
    hx_status st;
    if (S_ISREG(sb.st_mode) && sb.st_size > 0) {
        /* Mapping avoids a second in-memory copy of a multi-GB file. */
        size_t n = (size_t)sb.st_size;
        void *p = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p != MAP_FAILED) {
            close(fd);
            st = hx_gro_read_buffer(p, n, path, out);
            munmap(p, n);
            if (st != HX_OK)
                return hx_error_trace(st, __FILE__, __LINE__, "hx_gro_read_buffer");
            return HX_OK;
        }
    }
    /* Pipes, empty files, or a failed map: read through a growing buffer. */
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    if (!buf) {
        close(fd);
        HX_FAIL(HX_ERR_NOMEM, "out of memory reading '%s'", path);
    }
    for (;;) {
        if (len == cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                close(fd);
                HX_FAIL(HX_ERR_NOMEM, "out of memory reading '%s'", path);
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + len, cap - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            free(buf);
            close(fd);
            HX_FAIL(HX_ERR_IO, "error reading '%s': %s", path, strerror(e));
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    st = hx_gro_read_buffer(buf, len, path, out);
    free(buf);
    if (st != HX_OK)
        return hx_error_trace(st, __FILE__, __LINE__, "hx_gro_read_buffer");
    return HX_OK;
}

/* ---- writing ---------------------------------------------------------------------------- */

/* Append x in a right-aligned field of width w with nd decimals, exactly as printf("%*.*f")
 * would write it, or return -1 when it does not fit the field (a .gro column must not grow).
 * The fast path rounds x*10^nd to an integer; values close to a rounding tie, where the
 * product's own rounding could decide the digit, go through snprintf. Writing 30 million atoms
 * with fprintf alone takes most of a minute; this is several times faster. */
static int put_fixed(char *p, double x, int w, int nd)
{
    static const double pow10[] = {1, 10, 100, 1e3, 1e4, 1e5, 1e6};
    double r = x * pow10[nd];
    double fl = floor(r);
    double frac = r - fl;
    /* Below 1e9 the product is within 1e-7 of x*10^nd, so away from a tie it rounds the same. */
    if (!(fabs(r) < 1e9) || fabs(frac - 0.5) < 1e-6) {
        char tmp[64];
        int n = snprintf(tmp, sizeof tmp, "%*.*f", w, nd, x);
        if (n != w)
            return -1;
        memcpy(p, tmp, (size_t)w);
        return 0;
    }
    long long q = (long long)(frac > 0.5 ? fl + 1 : fl);
    int neg = q < 0 || (q == 0 && signbit(x));
    unsigned long long u = (unsigned long long)(q < 0 ? -q : q);
    char tmp[32];
    int n = 0;
    /* digits, least significant first, at least nd+1 of them ("0.000") */
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
        if (n == nd)
            tmp[n++] = '.';
    } while (u > 0 || n <= nd + 1);
    if (neg)
        tmp[n++] = '-';
    if (n > w)
        return -1;
    int pad = w - n;
    memset(p, ' ', (size_t)pad);
    for (int i = 0; i < n; i++)
        p[pad + i] = tmp[n - 1 - i];
    return 0;
}

/* Right-aligned non-negative integer below 100000 in 5 columns. */
static void put_int5(char *p, int v)
{
    for (int i = 4; i >= 0; i--) {
        p[i] = (v > 0 || i == 4) ? (char)('0' + v % 10) : ' ';
        v /= 10;
    }
}

/* Name in 5 columns, left- or right-aligned, cut to 5 characters like GROMACS's %-5.5s. */
static void put_name(char *p, const char *name, int left)
{
    size_t n = strnlen(name, 5);
    memset(p, ' ', 5);
    memcpy(left ? p : p + 5 - n, name, n);
}

static int wrap_id(int v)
{
    int r = v % GRO_WRAP;
    return r < 0 ? r + GRO_WRAP : r;
}

static hx_status check_system(const hx_system *sys, const char *who)
{
    HX_CHECK(sys, HX_ERR_INVALID_ARG, "%s: system is NULL", who);
    HX_CHECK(sys->natoms >= 0 &&
                 (sys->natoms == 0 || (sys->x && sys->res_id && sys->res_name && sys->atom_name)),
             HX_ERR_INVALID_ARG, "%s: system arrays are missing", who);
    for (int d = 0; d < 3; d++)
        HX_CHECK(isfinite(sys->box[d]) && sys->box[d] > 0, HX_ERR_INVALID_ARG,
                 "%s: box edge %c is %g; every edge must be positive and finite", who, "xyz"[d],
                 sys -> box[d]);
    /* The box line has 5 decimals: an edge below 0.000005 nm would be written as 0.00000 and
     * the file could not be read back. */
    for (int d = 0; d < 3; d++)
        HX_CHECK(sys->box[d] >= 0.5e-5, HX_ERR_INVALID_ARG,
                 "%s: box edge %c is %g nm, too small for the 5 decimals of a .gro box line "
                 "(it would be written as 0); check the box units (nm)",
                 who, "xyz"[d], sys -> box[d]);
    return HX_OK;
}

/* Format the whole frame into the stream. Returns HX_ERR_INVALID_ARG for values that do not
 * fit the format and HX_ERR_IO for a failing stream. */
static hx_status write_stream(FILE *f, const hx_system *sys, const char *title, int with_vel,
                              const char *where)
{
    char t[sizeof sys->title];
    size_t tl = 0;
    for (; title[tl] && tl < sizeof t - 1; tl++)
        t[tl] = (title[tl] == '\n' || title[tl] == '\r') ? ' ' : title[tl];
    t[tl] = '\0';
    HX_CHECK(fprintf(f, "%s\n%5d\n", t, sys->natoms) > 0, HX_ERR_IO, "error writing %s: %s", where,
             strerror(errno));
    const int w = 8, nf = with_vel ? 6 : 3;
    char line[20 + 6 * 8 + 1];
    size_t ll = 20 + (size_t)nf * w + 1;
    for (int k = 0; k < sys->natoms; k++) {
        put_int5(line, wrap_id(sys->res_id[k]));
        put_name(line + 5, sys->res_name[k], 1);
        put_name(line + 10, sys->atom_name[k], 0);
        put_int5(line + 15, (k + 1) % GRO_WRAP);
        for (int fi = 0; fi < nf; fi++) {
            double v = fi < 3 ? sys->x[3 * (size_t)k + (size_t)fi]
                              : sys->v[3 * (size_t)k + (size_t)(fi - 3)];
            int nd = fi < 3 ? 3 : 4;
            HX_CHECK(isfinite(v) && put_fixed(line + 20 + fi * w, v, w, nd) == 0,
                     HX_ERR_INVALID_ARG,
                     "writing %s: %s%c of atom %d is %g, which does not fit the .gro field "
                     "%%8.%df (%s); the system has blown up or is far outside the box",
                     where, fi < 3 ? "" : "v", "xyz"[fi % 3], k + 1, v, nd,
                     fi < 3 ? "-999.999 to 9999.999 nm" : "-99.9999 to 999.9999 nm/ps");
        }
        line[ll - 1] = '\n';
        HX_CHECK(fwrite(line, 1, ll, f) == ll, HX_ERR_IO, "error writing %s: %s", where,
                 strerror(errno));
    }
    /* GROMACS's %10.5f, but a box edge of 1000 nm or more fills the field and would run into
     * its neighbour: keep one blank between values so that the line stays readable. */
    for (int d = 0; d < 3; d++) {
        char b[64];
        int n = snprintf(b, sizeof b, "%10.5f", sys->box[d]);
        HX_CHECK(fprintf(f, "%s%s", n >= 10 && b[0] != ' ' ? " " : "", b) > 0, HX_ERR_IO,
                 "error writing %s: %s", where, strerror(errno));
    }
    HX_CHECK(fputc('\n', f) != EOF, HX_ERR_IO, "error writing %s: %s", where, strerror(errno));
    return HX_OK;
}

hx_status hx_gro_write(const char *path, const hx_system *sys, int with_velocities)
{
    HX_CHECK(path && *path, HX_ERR_INVALID_ARG, "hx_gro_write: path is empty");
    HX_TRY(check_system(sys, "hx_gro_write"));
    HX_CHECK(!with_velocities || sys->natoms == 0 || sys->v, HX_ERR_INVALID_ARG,
             "hx_gro_write: velocities requested but the system has none");
    if (hx_path_kind_of(path) == HX_PATH_SPECIAL) {
        /* a device, FIFO or a link to one: written through; renaming a temporary file over it
         * would replace /dev/null (as root) with a regular file */
        FILE *f = fopen(path, "w");
        HX_CHECK(f, HX_ERR_IO, "cannot open '%s' for writing: %s", path, strerror(errno));
        const char *title = sys->title[0] ? sys->title : "halox";
        hx_status st = write_stream(f, sys, title, with_velocities, path);
        if (fflush(f) != 0 && st == HX_OK)
            st = hx_error_set(HX_ERR_IO, __FILE__, __LINE__, __func__, "error writing '%s': %s",
                              path, strerror(errno));
        if (fclose(f) != 0 && st == HX_OK)
            st = hx_error_set(HX_ERR_IO, __FILE__, __LINE__, __func__, "error writing '%s': %s",
                              path, strerror(errno));
        return st;
    }
    /* Replacing through rename would succeed even for a write-protected file; respect the
     * protection instead. */
    HX_CHECK(access(path, F_OK) != 0 || access(path, W_OK) == 0, HX_ERR_IO,
             "output file '%s' exists and is not writable; choose another name or change its "
             "permissions",
             path);
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 32), suffix[32];
    HX_CHECK(tmp, HX_ERR_NOMEM, "out of memory");
    snprintf(suffix, sizeof suffix, ".tmp.%ld", (long)getpid());
    hx_status sst = hx_path_sibling(path, "", suffix, tmp, plen + 32);
    if (sst != HX_OK) {
        free(tmp);
        return sst;
    }
    FILE *f = fopen(tmp, "w");
    if (!f) {
        hx_status e = hx_error_set(HX_ERR_IO, __FILE__, __LINE__, __func__,
                                   "cannot create '%s' (temporary for '%s'): %s; check that the "
                                   "directory exists and is writable",
                                   tmp, path, strerror(errno));
        free(tmp);
        return e;
    }
    /* A large buffer: one write system call per megabyte instead of per 4 KB. */
    setvbuf(f, NULL, _IOFBF, 1 << 20);
    hx_status st = HX_OK;
    const char *title = sys->title[0] ? sys->title : "halox";
    HX_TRY_GOTO(st, write_stream(f, sys, title, with_velocities, path), fail);
    if (fflush(f) != 0 || fsync(fileno(f)) != 0)
        HX_FAIL_GOTO(st, HX_ERR_IO, fail, "error writing '%s': %s", path, strerror(errno));
    if (fclose(f) != 0) {
        f = NULL;
        HX_FAIL_GOTO(st, HX_ERR_IO, fail, "error closing '%s': %s", path, strerror(errno));
    }
    f = NULL;
    if (rename(tmp, path) != 0)
        HX_FAIL_GOTO(st, HX_ERR_IO, fail, "cannot rename '%s' to '%s': %s", tmp, path,
                     strerror(errno));
    free(tmp);
    return HX_OK;
fail:
    if (f)
        fclose(f);
    remove(tmp);
    free(tmp);
    return st;
}

hx_status hx_gro_write_frame(FILE *f, const hx_system *sys, double time_ps, long long step,
                             int with_velocities)
{
    HX_CHECK(f, HX_ERR_INVALID_ARG, "hx_gro_write_frame: stream is NULL");
    HX_TRY(check_system(sys, "hx_gro_write_frame"));
    char title[128];
    snprintf(title, sizeof title, "halox t= %.5f step= %lld", time_ps, step);
    HX_TRY(write_stream(f, sys, title, with_velocities, "trajectory frame"));
    return HX_OK;
}
