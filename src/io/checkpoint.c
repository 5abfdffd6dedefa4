/* Checkpoint files.
 *
 * Layout (format 2; format 1, before the thermostat's work was recorded, is still read):
 *   HALOX-CHECKPOINT 2\n
 *   key value\n ...            step, natoms, nmol, title, box (hex floats), rng, rlist, ranks,
 *                              threads, thermostat_work (hex float), energy/traj file sizes and
 *                              paths, param key value, paramhash, endian
 *   data\n
 *   int32 mol_start[nmol+1], int32 res_id[natoms], char res_name[natoms][8],
 *   char atom_name[natoms][8], double x[3 natoms], double v[3 natoms]   (native byte order,
 *   checked by the endian line)
 *   uint64 FNV-1a of every byte before it
 * Doubles in the header are written as C99 hex floats so that they read back exactly. */
#include "halox/checkpoint.h"
#include "core/error.h"
#include "halox/files.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CKPT_MAGIC "HALOX-CHECKPOINT 2\n"
#define CKPT_MAGIC_1 "HALOX-CHECKPOINT 1\n" /* read: no thermostat_work line */
#define CKPT_ENDIAN 0x01020304u

static uint64_t fnv1a(const unsigned char *p, size_t n, uint64_t h)
{
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}
#define FNV_INIT 0xcbf29ce484222325ULL

#if defined(__GNUC__)
#define HX_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define HX_PRINTF(a, b)
#endif

static void add_param(hx_ckpt_params *o, const char *k, const char *fmt, ...) HX_PRINTF(3, 4);
static void add_param(hx_ckpt_params *o, const char *k, const char *fmt, ...)
{
    if (o->n >= HX_CKPT_MAX_PARAMS)
        return;
    snprintf(o->key[o->n], HX_CKPT_KEY_LEN, "%s", k);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->value[o->n], HX_CKPT_VALUE_LEN, fmt, ap);
    va_end(ap);
    o->n++;
}

void hx_ckpt_params_from_md(const hx_md_params *p, double rlist_option, int natoms,
                            hx_ckpt_params *out)
{
    memset(out, 0, sizeof *out);
    add_param(out, "natoms", "%d", natoms);
    add_param(out, "model", "%s", p->model ? p->model : "spce");
    add_param(out, "dt", "%.17g", p->dt);
    add_param(out, "rc", "%.17g", p->rc);
    add_param(out, "rlist", "%.17g", rlist_option);
    add_param(out, "buffer_tol", "%.17g", p->verlet_buffer_tolerance);
    add_param(out, "nstlist", "%d", p->nstlist);
    add_param(out, "eps_rf", "%.17g", p->eps_rf);
    add_param(out, "eps_r", "%.17g", p->eps_r);
    add_param(out, "thermostat", "%s",
              p->thermostat == HX_THERMOSTAT_VRESCALE ? "v-rescale" : "no");
    if (p->thermostat == HX_THERMOSTAT_VRESCALE) {
        add_param(out, "tau_t", "%.17g", p->tau_t);
        add_param(out, "ref_t", "%.17g", p->ref_t);
        add_param(out, "nsttcouple", "%d", p->nsttcouple);
    }
    add_param(out, "seed", "%llu", (unsigned long long)p->seed);
    add_param(out, "precision", "%s", p->nb_precision == HX_NB_MIXED ? "mixed" : "double");
}

uint64_t hx_ckpt_params_hash(const hx_ckpt_params *p)
{
    uint64_t h = FNV_INIT;
    for (int i = 0; i < p->n; i++) {
        h = fnv1a((const unsigned char *)p->key[i], strlen(p->key[i]) + 1, h);
        h = fnv1a((const unsigned char *)p->value[i], strlen(p->value[i]) + 1, h);
    }
    return h;
}

/* A parameter value as a person reads it: numbers are stored with 17 digits so that they
 * compare exactly ("0.69999999999999996"), and shown with the fewest digits that give the same
 * double back ("0.7"); anything else as it is. */
static const char *readable(const char *v, char *buf, size_t cap)
{
    char *end = NULL;
    double d = strtod(v, &end);
    if (end == v || *end || !isfinite(d))
        return v;
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, cap, "%.*g", prec, d);
        if (strtod(buf, NULL) == d)
            return buf;
    }
    return v;
}

hx_status hx_ckpt_params_compare(const hx_ckpt_params *saved, const hx_ckpt_params *now,
                                 const char *ckpt_path)
{
    char b1[40], b2[40];
    char diff[1024] = "";
    size_t len = 0;
    int ndiff = 0;
    for (int i = 0; i < now->n; i++) {
        const char *sv = NULL;
        for (int j = 0; j < saved->n; j++)
            if (strcmp(saved->key[j], now->key[i]) == 0)
                sv = saved->value[j];
        if (sv && strcmp(sv, now->value[i]) == 0)
            continue;
        ndiff++;
        int w = snprintf(diff + len, sizeof diff - len, "%s%s (checkpoint %s, this run %s)",
                         ndiff > 1 ? "; " : "", now->key[i],
                         sv ? readable(sv, b1, sizeof b1) : "absent",
                         readable(now->value[i], b2, sizeof b2));
        if (w > 0 && (size_t)w < sizeof diff - len)
            len += (size_t)w;
    }
    for (int j = 0; j < saved->n; j++) {
        int found = 0;
        for (int i = 0; i < now->n; i++)
            found |= strcmp(saved->key[j], now->key[i]) == 0;
        if (!found) {
            ndiff++;
            int w = snprintf(diff + len, sizeof diff - len, "%s%s (checkpoint %s, this run absent)",
                             ndiff > 1 ? "; " : "", saved->key[j],
                             readable(saved->value[j], b1, sizeof b1));
            if (w > 0 && (size_t)w < sizeof diff - len)
                len += (size_t)w;
        }
    }
    HX_CHECK(ndiff == 0, HX_ERR_INVALID_ARG,
             "%s was written by a run with other parameters: %s; give the same options as the "
             "original run to continue it",
             ckpt_path, diff);
    return HX_OK;
}

void hx_checkpoint_destroy(hx_checkpoint **c)
{
    if (!c || !*c)
        return;
    hx_system_destroy(&(*c)->sys);
    free(*c);
    *c = NULL;
}

/* ---- writing ------------------------------------------------------------------------------ */

typedef struct wbuf {
    unsigned char *d;
    size_t n, cap;
    int oom;
} wbuf;

static void put(wbuf *b, const void *p, size_t n)
{
    if (b->oom)
        return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n)
            cap *= 2;
        unsigned char *nd = realloc(b->d, cap);
        if (!nd) {
            b->oom = 1;
            return;
        }
        b->d = nd;
        b->cap = cap;
    }
    memcpy(b->d + b->n, p, n);
    b->n += n;
}

static void putf(wbuf *b, const char *fmt, ...) HX_PRINTF(2, 3);
static void putf(wbuf *b, const char *fmt, ...)
{
    char line[2 * HX_CKPT_PATH_LEN];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > 0)
        put(b, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

static int has_newline(const char *s)
{
    return strchr(s, '\n') != NULL || strchr(s, '\r') != NULL;
}

hx_status hx_checkpoint_write(const char *path, const hx_checkpoint *c)
{
    HX_CHECK(path && c && c->sys, HX_ERR_INVALID_ARG, "hx_checkpoint_write: NULL argument");
    const hx_system *s = c->sys;
    HX_CHECK(!has_newline(s->title) && !has_newline(c->energy_path) && !has_newline(c->traj_path),
             HX_ERR_INVALID_ARG, "checkpoint: a title or path contains a line break");
    wbuf b = {0};
    put(&b, CKPT_MAGIC, strlen(CKPT_MAGIC));
    putf(&b, "endian %u\n", CKPT_ENDIAN);
    putf(&b, "step %lld\nnatoms %d\nnmol %d\n", c->step, s->natoms, s->nmol);
    putf(&b, "title %s\n", s->title);
    putf(&b, "box %a %a %a\n", s->box[0], s->box[1], s->box[2]);
    putf(&b, "rng %016" PRIx64 " %016" PRIx64 " %016" PRIx64 " %016" PRIx64 "\n", c->rng_state[0],
         c->rng_state[1], c->rng_state[2], c->rng_state[3]);
    putf(&b, "rlist %a\nranks %d\nthreads %d\n", c->rlist, c->nranks, c->nthreads);
    putf(&b, "thermostat_work %a\n", c->thermostat_work);
    if (c->energy_bytes >= 0)
        putf(&b, "energy_file %lld %s\n", c->energy_bytes, c->energy_path);
    if (c->traj_bytes >= 0)
        putf(&b, "traj_file %lld %s\n", c->traj_bytes, c->traj_path);
    for (int i = 0; i < c->params.n; i++)
        putf(&b, "param %s %s\n", c->params.key[i], c->params.value[i]);
    putf(&b, "paramhash %016" PRIx64 "\n", hx_ckpt_params_hash(&c->params));
    putf(&b, "data\n");
    size_t n = (size_t)s->natoms;
    put(&b, s->mol_start, ((size_t)s->nmol + 1) * sizeof(int32_t));
    put(&b, s->res_id, n * sizeof(int32_t));
    put(&b, s->res_name, n * HX_NAME_LEN);
    put(&b, s->atom_name, n * HX_NAME_LEN);
    put(&b, s->x, 3 * n * sizeof(double));
    put(&b, s->v, 3 * n * sizeof(double));
    uint64_t h = fnv1a(b.d, b.n, FNV_INIT);
    put(&b, &h, sizeof h);
    if (b.oom) {
        free(b.d);
        HX_FAIL(HX_ERR_NOMEM, "out of memory writing checkpoint %s", path);
    }

    if (hx_path_kind_of(path) == HX_PATH_SPECIAL) {
        /* /dev/null or a FIFO: written through, no temporary file, no FILE.prev */
        hx_status sst = HX_OK;
        int sfd = open(path, O_WRONLY);
        if (sfd < 0)
            sst = hx_error_set(HX_ERR_IO, __FILE__, __LINE__, __func__,
                               "cannot open checkpoint %s for writing: %s", path, strerror(errno));
        for (size_t off = 0; sst == HX_OK && off < b.n;) {
            ssize_t w = write(sfd, b.d + off, b.n - off);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                sst = hx_error_set(HX_ERR_IO, __FILE__, __LINE__, __func__,
                                   "writing checkpoint %s failed: %s", path, strerror(errno));
            else
                off += (size_t)w;
        }
        if (sfd >= 0 && close(sfd) != 0 && sst == HX_OK)
            sst = hx_error_set(HX_ERR_IO, __FILE__, __LINE__, __func__,
                               "closing checkpoint %s failed: %s", path, strerror(errno));
        free(b.d);
        return sst;
    }
    char tmp[PATH_MAX + 64], prev[PATH_MAX + 16], suffix[32];
    snprintf(suffix, sizeof suffix, ".tmp.%ld", (long)getpid());
    hx_status st = hx_path_sibling(path, "", suffix, tmp, sizeof tmp);
    if (st == HX_OK)
        st = hx_checkpoint_prev_name(path, prev, sizeof prev);
    if (st != HX_OK)
        goto out;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        st = hx_error_set(HX_ERR_IO, __FILE__, __LINE__, __func__,
                          "cannot create checkpoint %s: %s", tmp, strerror(errno));
        goto out;
    }
    size_t off = 0;
    while (off < b.n) {
        ssize_t w = write(fd, b.d + off, b.n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            st = hx_error_set(HX_ERR_IO, __FILE__, __LINE__, __func__,
                              "writing checkpoint %s failed: %s", tmp, strerror(errno));
            break;
        }
        off += (size_t)w;
    }
    if (st == HX_OK && fsync(fd) != 0)
        st = hx_error_set(HX_ERR_IO, __FILE__, __LINE__, __func__,
                          "flushing checkpoint %s to disk failed: %s", tmp, strerror(errno));
    if (close(fd) != 0 && st == HX_OK)
        st = hx_error_set(HX_ERR_IO, __FILE__, __LINE__, __func__,
                          "closing checkpoint %s failed: %s", tmp, strerror(errno));
    if (st == HX_OK) {
        struct stat sb;
        if (stat(path, &sb) == 0 && rename(path, prev) != 0)
            st = hx_error_set(HX_ERR_IO, __FILE__, __LINE__, __func__,
                              "cannot keep the previous checkpoint as %s: %s", prev,
                              strerror(errno));
    }
    if (st == HX_OK && rename(tmp, path) != 0)
        st = hx_error_set(HX_ERR_IO, __FILE__, __LINE__, __func__,
                          "cannot move checkpoint %s into place as %s: %s", tmp, path,
                          strerror(errno));
    if (st != HX_OK)
        unlink(tmp);
out:
    free(b.d);
    return st;
}

/* ---- reading ------------------------------------------------------------------------------ */

typedef struct rd {
    const unsigned char *d;
    size_t n, pos;
    const char *name;
    int line;
} rd;

/* Next header line into buf (without the newline); 0 at a missing newline. */
static int next_line(rd *r, char *buf, size_t cap)
{
    size_t i = 0;
    while (r->pos < r->n && r->d[r->pos] != '\n') {
        if (i + 1 < cap)
            buf[i++] = (char)r->d[r->pos];
        r->pos++;
    }
    buf[i] = '\0';
    if (r->pos >= r->n)
        return 0;
    r->pos++;
    r->line++;
    return 1;
}

#define CK_FAIL(...)                                                                               \
    do {                                                                                           \
        st = hx_error_set(HX_ERR_INPUT, __FILE__, __LINE__, __func__, __VA_ARGS__);                \
        goto fail;                                                                                 \
    } while (0)

hx_status hx_checkpoint_prev_name(const char *path, char *out, size_t cap)
{
    return hx_path_sibling(path, "", ".prev", out, cap);
}

/* damaged (may be NULL): set to 1 when the file is a halox checkpoint whose checksum fails, the
 * case where the previous checkpoint is the way on. */
static hx_status read_buffer(const unsigned char *data, size_t len, const char *name,
                             hx_checkpoint **out, int *damaged)
{
    HX_CHECK(data && name && out, HX_ERR_INVALID_ARG, "hx_checkpoint_read_buffer: NULL argument");
    *out = NULL;
    hx_status st = HX_OK;
    hx_checkpoint *c = calloc(1, sizeof *c);
    HX_CHECK(c, HX_ERR_NOMEM, "out of memory");
    c->energy_bytes = c->traj_bytes = -1;
    rd r = {data, len, 0, name, 0};
    char line[2 * HX_CKPT_PATH_LEN + 64];
    const size_t nmagic = strlen(CKPT_MAGIC);
    if (len >= nmagic + 8 && memcmp(data, CKPT_MAGIC, nmagic) == 0)
        c->format = 2;
    else if (len >= nmagic + 8 && memcmp(data, CKPT_MAGIC_1, nmagic) == 0)
        c->format = 1;
    else if (len >= 17 && memcmp(data, "HALOX-CHECKPOINT ", 17) == 0) {
        int n = 17;
        while ((size_t)n < len && n < 40 && isdigit(data[n]))
            n++;
        CK_FAIL("%s is a checkpoint of format '%.*s', which this halox cannot read (it reads "
                "formats 1 and 2): continue it with the halox that wrote it",
                name, n - 17, (const char *)data + 17);
    } else
        CK_FAIL("%s is not a halox checkpoint (no 'HALOX-CHECKPOINT' header)", name);
    /* checksum first: a damaged file is refused before any of it is trusted */
    uint64_t want;
    memcpy(&want, data + len - sizeof want, sizeof want);
    if (fnv1a(data, len - sizeof want, FNV_INIT) != want) {
        if (damaged)
            *damaged = 1;
        CK_FAIL("%s is damaged or truncated (checksum mismatch)", name);
    }
    r.n = len - sizeof want;
    next_line(&r, line, sizeof line);
    long long natoms = -1, nmol = -1, step = -1;
    int have_box = 0, have_rng = 0, have_rlist = 0, have_data = 0, have_endian = 0;
    double box[3] = {0, 0, 0};
    char title[128] = "";
    uint64_t hash = 0;
    int have_hash = 0, have_work = c->format < 2;
    while (next_line(&r, line, sizeof line)) {
        char *sp = strchr(line, ' ');
        const char *val = sp ? sp + 1 : "";
        if (sp)
            *sp = '\0';
        if (strcmp(line, "data") == 0) {
            have_data = 1;
            break;
        } else if (strcmp(line, "endian") == 0) {
            unsigned e = 0;
            if (sscanf(val, "%u", &e) != 1 || e != CKPT_ENDIAN)
                CK_FAIL("%s line %d: written on a machine of another byte order", name, r.line);
            have_endian = 1;
        } else if (strcmp(line, "step") == 0) {
            if (sscanf(val, "%lld", &step) != 1 || step < 0)
                CK_FAIL("%s line %d: bad step '%s'", name, r.line, val);
        } else if (strcmp(line, "natoms") == 0) {
            if (sscanf(val, "%lld", &natoms) != 1 || natoms < 1 || natoms > 500000000)
                CK_FAIL("%s line %d: bad atom count '%s'", name, r.line, val);
        } else if (strcmp(line, "nmol") == 0) {
            if (sscanf(val, "%lld", &nmol) != 1 || nmol < 1 || nmol > 500000000)
                CK_FAIL("%s line %d: bad molecule count '%s'", name, r.line, val);
        } else if (strcmp(line, "title") == 0) {
            snprintf(title, sizeof title, "%s", val);
        } else if (strcmp(line, "box") == 0) {
            if (sscanf(val, "%la %la %la", &box[0], &box[1], &box[2]) != 3 ||
                !(box[0] > 0 && box[1] > 0 && box[2] > 0) || !isfinite(box[0] + box[1] + box[2]))
                CK_FAIL("%s line %d: bad box '%s'", name, r.line, val);
            have_box = 1;
        } else if (strcmp(line, "rng") == 0) {
            if (sscanf(val, "%" SCNx64 " %" SCNx64 " %" SCNx64 " %" SCNx64, &c->rng_state[0],
                       &c->rng_state[1], &c->rng_state[2], &c->rng_state[3]) != 4)
                CK_FAIL("%s line %d: bad random state", name, r.line);
            have_rng = 1;
        } else if (strcmp(line, "rlist") == 0) {
            if (sscanf(val, "%la", &c->rlist) != 1 || !(c->rlist > 0) || !isfinite(c->rlist))
                CK_FAIL("%s line %d: bad rlist '%s'", name, r.line, val);
            have_rlist = 1;
        } else if (strcmp(line, "ranks") == 0) {
            if (sscanf(val, "%d", &c->nranks) != 1)
                CK_FAIL("%s line %d: bad rank count", name, r.line);
        } else if (strcmp(line, "threads") == 0) {
            if (sscanf(val, "%d", &c->nthreads) != 1)
                CK_FAIL("%s line %d: bad thread count", name, r.line);
        } else if (strcmp(line, "thermostat_work") == 0 && c->format >= 2) {
            if (sscanf(val, "%la", &c->thermostat_work) != 1 || !isfinite(c->thermostat_work))
                CK_FAIL("%s line %d: bad thermostat work '%s'", name, r.line, val);
            have_work = 1;
        } else if (strcmp(line, "energy_file") == 0 || strcmp(line, "traj_file") == 0) {
            int en = line[0] == 'e';
            long long bytes;
            int used = 0;
            if (sscanf(val, "%lld %n", &bytes, &used) != 1 || bytes < 0 || !val[used])
                CK_FAIL("%s line %d: bad output file record", name, r.line);
            snprintf(en ? c->energy_path : c->traj_path, HX_CKPT_PATH_LEN, "%s", val + used);
            *(en ? &c->energy_bytes : &c->traj_bytes) = bytes;
        } else if (strcmp(line, "param") == 0) {
            const char *sp2 = strchr(val, ' ');
            if (!sp2 || c->params.n >= HX_CKPT_MAX_PARAMS || sp2 == val ||
                (size_t)(sp2 - val) >= HX_CKPT_KEY_LEN)
                CK_FAIL("%s line %d: bad parameter line", name, r.line);
            snprintf(c->params.key[c->params.n], HX_CKPT_KEY_LEN, "%.*s", (int)(sp2 - val), val);
            snprintf(c->params.value[c->params.n], HX_CKPT_VALUE_LEN, "%s", sp2 + 1);
            c->params.n++;
        } else if (strcmp(line, "paramhash") == 0) {
            if (sscanf(val, "%" SCNx64, &hash) != 1)
                CK_FAIL("%s line %d: bad parameter hash", name, r.line);
            have_hash = 1;
        } else {
            CK_FAIL("%s line %d: unknown key '%s'", name, r.line, line);
        }
    }
    if (!have_data || !have_endian || step < 0 || natoms < 0 || nmol < 0 || !have_box ||
        !have_rng || !have_rlist || !have_hash || !have_work)
        CK_FAIL("%s: the header is incomplete (needs endian, step, natoms, nmol, box, rng, "
                "rlist, %sparamhash and data)",
                name, c->format >= 2 ? "thermostat_work, " : "");
    if (nmol > natoms)
        CK_FAIL("%s: %lld molecules but only %lld atoms", name, nmol, natoms);
    if (hash != hx_ckpt_params_hash(&c->params))
        CK_FAIL("%s: the parameter hash does not match the parameters", name);
    size_t need = ((size_t)nmol + 1) * 4 + (size_t)natoms * (4 + 2 * HX_NAME_LEN + 48);
    if (r.n - r.pos != need)
        CK_FAIL("%s: %zu bytes of data where %lld atoms need %zu", name, r.n - r.pos, natoms, need);
    if ((st = hx_system_create((int)natoms, (int)nmol, &c->sys)) != HX_OK)
        goto fail;
    hx_system *s = c->sys;
    size_t n = (size_t)natoms;
    const unsigned char *p = r.d + r.pos;
    memcpy(s->mol_start, p, ((size_t)nmol + 1) * 4);
    p += ((size_t)nmol + 1) * 4;
    memcpy(s->res_id, p, n * 4);
    p += n * 4;
    memcpy(s->res_name, p, n * HX_NAME_LEN);
    p += n * HX_NAME_LEN;
    memcpy(s->atom_name, p, n * HX_NAME_LEN);
    p += n * HX_NAME_LEN;
    memcpy(s->x, p, 3 * n * sizeof(double));
    p += 3 * n * sizeof(double);
    memcpy(s->v, p, 3 * n * sizeof(double));
    s->has_velocities = 1;
    memcpy(s->box, box, sizeof box);
    snprintf(s->title, sizeof s->title, "%s", title);
    for (size_t a = 0; a < n; a++) {
        s->res_name[a][HX_NAME_LEN - 1] = '\0';
        s->atom_name[a][HX_NAME_LEN - 1] = '\0';
    }
    if (s->mol_start[0] != 0 || s->mol_start[nmol] != natoms)
        CK_FAIL("%s: molecule boundaries do not cover the atoms", name);
    for (long long m = 0; m < nmol; m++)
        if (s->mol_start[m + 1] <= s->mol_start[m])
            CK_FAIL("%s: molecule %lld has no atoms", name, m);
    for (size_t k = 0; k < 3 * n; k++)
        if (!isfinite(s->x[k]) || !isfinite(s->v[k]))
            CK_FAIL("%s: atom %zu has a non-finite position or velocity", name, k / 3 + 1);
    c->step = step;
    *out = c;
    return HX_OK;
fail:
    hx_checkpoint_destroy(&c);
    return st;
}

hx_status hx_checkpoint_read_buffer(const unsigned char *data, size_t len, const char *name,
                                    hx_checkpoint **out)
{
    return read_buffer(data, len, name, out, NULL);
}

hx_status hx_checkpoint_read(const char *path, hx_checkpoint **out)
{
    HX_CHECK(path && out, HX_ERR_INVALID_ARG, "hx_checkpoint_read: NULL argument");
    *out = NULL;
    FILE *f = fopen(path, "rb");
    HX_CHECK(f, HX_ERR_IO, "cannot open checkpoint %s: %s", path, strerror(errno));
    unsigned char *buf = NULL;
    size_t n = 0, cap = 0;
    hx_status st = HX_OK;
    for (;;) {
        if (n == cap) {
            cap = cap ? 2 * cap : 1 << 20;
            unsigned char *nb = realloc(buf, cap);
            if (!nb) {
                st = hx_error_set(HX_ERR_NOMEM, __FILE__, __LINE__, __func__,
                                  "out of memory reading %s", path);
                break;
            }
            buf = nb;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f))
                st = hx_error_set(HX_ERR_IO, __FILE__, __LINE__, __func__, "reading %s failed",
                                  path);
            break;
        }
    }
    fclose(f);
    int damaged = 0;
    if (st == HX_OK)
        st = read_buffer(buf, n, path, out, &damaged);
    free(buf);
    if (damaged) {
        /* the way on: the previous checkpoint, where there is one */
        char prev[PATH_MAX + 16], msg[1024];
        snprintf(msg, sizeof msg, "%s", hx_last_error_message());
        if (hx_checkpoint_prev_name(path, prev, sizeof prev) == HX_OK &&
            hx_path_kind_of(prev) == HX_PATH_REGULAR)
            st = hx_error_set(st, __FILE__, __LINE__, __func__,
                              "%s; the previous checkpoint %s is there: continue from it with "
                              "--restart %s",
                              msg, prev, prev);
        else
            st = hx_error_set(st, __FILE__, __LINE__, __func__,
                              "%s; there is no previous checkpoint (%s) to continue from: start "
                              "the run again",
                              msg, prev);
    }
    return st;
}
