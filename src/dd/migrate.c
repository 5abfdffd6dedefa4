/* Migration of molecules between domains at repartition.
 *
 * Molecules travel whole, one cell per dimension, in the dimension order of the halo: first
 * along d_0 to the up or down neighbour, then along d_1, and so on, so a molecule that crossed a
 * corner reaches its diagonal neighbour through forwarding, with the same six-neighbour message
 * pattern as the halo exchange. Between repartitions an atom moves a small fraction of a cell;
 * a molecule that has to go further than one cell means the run has blown up (or nstlist is far
 * too long): that is an error, reported with step, molecule and domains.
 *
 * Wire format per molecule (doubles, so that one buffer type carries it all):
 *   mol_gid, natoms, then per atom: gid, x, y, z, vx, vy, vz.
 *
 * Every local step that can fail (bad arguments, allocations, a molecule too far) is followed by
 * an agreement before the next message, so that a failure on one rank stops all of them
 * instead of leaving its neighbours waiting. */
#include "halox/decomp.h"
#include "halox/migrate.h"
#include "comm/comm_impl.h"
#include "core/error.h"
#include "core/fault.h"
#include "dd/home.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define HX_MIG_PER_ATOM 7

void hx_home_free(hx_home *h)
{
    if (!h)
        return;
    free(h->gid);
    free(h->mol_start);
    free(h->mol_gid);
    free(h->x);
    free(h->v);
    memset(h, 0, sizeof *h);
}

hx_status hx_home_reserve(hx_home *h, int natoms, int nmol)
{
    if (natoms > h->cap_atoms) {
        int cap = h->cap_atoms ? h->cap_atoms : 64;
        while (cap < natoms)
            cap *= 2;
        int *g = realloc(h->gid, (size_t)cap * sizeof *g);
        if (g)
            h->gid = g;
        double *x = realloc(h->x, 3 * (size_t)cap * sizeof *x);
        if (x)
            h->x = x;
        double *v = realloc(h->v, 3 * (size_t)cap * sizeof *v);
        if (v)
            h->v = v;
        HX_CHECK(g && x && v, HX_ERR_NOMEM, "out of memory for %d home atoms", cap);
        h->cap_atoms = cap;
    }
    if (nmol + 1 > h->cap_mol || !h->mol_start) {
        int cap = h->cap_mol ? h->cap_mol : 64;
        while (cap < nmol + 1)
            cap *= 2;
        int *ms = realloc(h->mol_start, (size_t)cap * sizeof *ms);
        if (ms)
            h->mol_start = ms;
        int *mg = realloc(h->mol_gid, (size_t)cap * sizeof *mg);
        if (mg)
            h->mol_gid = mg;
        HX_CHECK(ms && mg, HX_ERR_NOMEM, "out of memory for %d home molecules", cap);
        h->cap_mol = cap;
        if (h->nmol == 0)
            h->mol_start[0] = 0;
    }
    return HX_OK;
}

/* The one centre-of-geometry routine (hx_molecule_centre), so that migration, the initial
 * distribution and a restart put a molecule on the same domain. */
static void mol_centre(const hx_home *h, int m, double c[3])
{
    hx_molecule_centre(h->x, h->mol_start[m], h->mol_start[m + 1], c);
}

void hx_wrap_molecules(double *x, const int *mol_start, int nmol, const double box[3])
{
    for (int m = 0; m < nmol; m++) {
        int a0 = mol_start[m], a1 = mol_start[m + 1];
        double c[3];
        hx_molecule_centre(x, a0, a1, c);
        for (int d = 0; d < 3; d++) {
            double s = -floor(c[d] / box[d]) * box[d];
            if (c[d] + s >= box[d]) /* rounding at the upper edge */
                s -= box[d];
            if (s != 0.0)
                for (int a = a0; a < a1; a++)
                    x[3 * a + d] += s;
        }
    }
}

/* Canonical layout: molecules sorted by global index. The order then does not depend on the
 * path molecules took between domains, so a run restarted from a checkpoint (which distributes
 * molecules in global order) computes in exactly the same order as the uninterrupted run. */
static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

static hx_status sort_home(hx_home *h)
{
    int sorted = 1;
    for (int m = 1; m < h->nmol && sorted; m++)
        sorted = h->mol_gid[m - 1] < h->mol_gid[m];
    if (sorted)
        return HX_OK;
    int *order = malloc((size_t)h->nmol * sizeof *order);
    int *gid = malloc((size_t)h->natoms * sizeof *gid);
    double *x = malloc(3 * (size_t)h->natoms * sizeof *x);
    double *v = malloc(3 * (size_t)h->natoms * sizeof *v);
    int *ms = malloc(((size_t)h->nmol + 1) * sizeof *ms);
    int *mg = malloc((size_t)h->nmol * sizeof *mg);
    hx_status st = HX_OK;
    if (!order || !gid || !x || !v || !ms || !mg) {
        st = hx_error_set(HX_ERR_NOMEM, __FILE__, __LINE__, __func__,
                          "out of memory sorting %d home molecules", h->nmol);
        goto out;
    }
    /* sort (global index, position) pairs; global indices are unique */
    long long *key = malloc((size_t)h->nmol * sizeof *key);
    if (!key) {
        st = hx_error_set(HX_ERR_NOMEM, __FILE__, __LINE__, __func__, "out of memory");
        goto out;
    }
    for (int m = 0; m < h->nmol; m++)
        key[m] = ((long long)h->mol_gid[m] << 32) | (unsigned)m;
    qsort(key, (size_t)h->nmol, sizeof *key, cmp_ll);
    for (int m = 0; m < h->nmol; m++)
        order[m] = (int)(key[m] & 0xffffffffLL);
    free(key);
    int na = 0;
    for (int i = 0; i < h->nmol; i++) {
        int m = order[i];
        ms[i] = na;
        mg[i] = h->mol_gid[m];
        for (int a = h->mol_start[m]; a < h->mol_start[m + 1]; a++, na++) {
            gid[na] = h->gid[a];
            memcpy(&x[3 * na], &h->x[3 * a], 3 * sizeof(double));
            memcpy(&v[3 * na], &h->v[3 * a], 3 * sizeof(double));
        }
    }
    ms[h->nmol] = na;
    memcpy(h->gid, gid, (size_t)na * sizeof *gid);
    memcpy(h->x, x, 3 * (size_t)na * sizeof *x);
    memcpy(h->v, v, 3 * (size_t)na * sizeof *v);
    memcpy(h->mol_start, ms, ((size_t)h->nmol + 1) * sizeof *ms);
    memcpy(h->mol_gid, mg, (size_t)h->nmol * sizeof *mg);
out:
    free(order);
    free(gid);
    free(x);
    free(v);
    free(ms);
    free(mg);
    return st;
}

typedef struct buf {
    double *d;
    size_t n, cap;
} buf;

static hx_status buf_push(buf *b, double v)
{
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 1024;
        double *nd = realloc(b->d, cap * sizeof *nd);
        HX_CHECK(nd, HX_ERR_NOMEM, "out of memory for migration buffers");
        b->d = nd;
        b->cap = cap;
    }
    b->d[b->n++] = v;
    return HX_OK;
}

/* Move molecule m of h into b and mark it removed (mol_gid = -1). */
static hx_status pack_molecule(const hx_home *h, int m, buf *b)
{
    int a0 = h->mol_start[m], a1 = h->mol_start[m + 1];
    HX_TRY(buf_push(b, h->mol_gid[m]));
    HX_TRY(buf_push(b, a1 - a0));
    for (int a = a0; a < a1; a++) {
        HX_TRY(buf_push(b, h->gid[a]));
        for (int d = 0; d < 3; d++)
            HX_TRY(buf_push(b, h->x[3 * a + d]));
        for (int d = 0; d < 3; d++)
            HX_TRY(buf_push(b, h->v[3 * a + d]));
    }
    return HX_OK;
}

/* Remove the molecules flagged with mol_gid < 0, keeping the order of the rest. */
static void compact(hx_home *h)
{
    int nm = 0, na = 0;
    for (int m = 0; m < h->nmol; m++) {
        int a0 = h->mol_start[m], a1 = h->mol_start[m + 1];
        if (h->mol_gid[m] < 0)
            continue;
        int start = na;
        for (int a = a0; a < a1; a++, na++) {
            h->gid[na] = h->gid[a];
            memmove(&h->x[3 * na], &h->x[3 * a], 3 * sizeof(double));
            memmove(&h->v[3 * na], &h->v[3 * a], 3 * sizeof(double));
        }
        h->mol_gid[nm] = h->mol_gid[m];
        h->mol_start[nm] = start;
        nm++;
    }
    h->nmol = nm;
    h->natoms = na;
    h->mol_start[nm] = na;
}

static hx_status unpack_molecules(hx_home *h, const double *d, size_t n)
{
    size_t i = 0;
    while (i < n) {
        HX_CHECK(i + 2 <= n, HX_ERR_INTERNAL, "truncated migration message");
        int mg = (int)d[i], na = (int)d[i + 1];
        i += 2;
        HX_CHECK(na > 0 && i + (size_t)na * HX_MIG_PER_ATOM <= n, HX_ERR_INTERNAL,
                 "malformed migration message (molecule %d, %d atoms)", mg, na);
        HX_TRY(hx_home_reserve(h, h->natoms + na, h->nmol + 1));
        for (int k = 0; k < na; k++, i += HX_MIG_PER_ATOM) {
            int a = h->natoms + k;
            h->gid[a] = (int)d[i];
            memcpy(&h->x[3 * a], &d[i + 1], 3 * sizeof(double));
            memcpy(&h->v[3 * a], &d[i + 4], 3 * sizeof(double));
        }
        h->mol_gid[h->nmol] = mg;
        h->mol_start[h->nmol] = h->natoms;
        h->natoms += na;
        h->nmol++;
        h->mol_start[h->nmol] = h->natoms;
    }
    return HX_OK;
}

hx_status hx_migrate(const hx_dd *dd, hx_comm *comm, hx_home *const *homes, long long step)
{
    HX_CHECK(comm, HX_ERR_INVALID_ARG, "hx_migrate: NULL communicator");
    const int nl = hx_comm_nlocal(comm);
    hx_status st = HX_OK;
    if (!dd || !homes)
        st = hx_error_set(HX_ERR_INVALID_ARG, __FILE__, __LINE__, __func__,
                          "hx_migrate: NULL argument");
    for (int i = 0; i < nl && st == HX_OK; i++)
        if (!homes[i])
            st = hx_error_set(HX_ERR_INVALID_ARG, __FILE__, __LINE__, __func__,
                              "hx_migrate: no home store for local domain %d", i);
    HX_TRY(hx_comm_agree(comm, st));
    double box[3];
    int grid[3], dims[3];
    hx_dd_box(dd, box);
    hx_dd_grid(dd, grid);
    const int ndim = hx_dd_ndim(dd, dims);
    static const char dn[3] = {'x', 'y', 'z'};

    for (int i = 0; i < nl && st == HX_OK; i++) {
        st = hx_home_reserve(homes[i], homes[i]->natoms, homes[i]->nmol);
        if (st == HX_OK)
            hx_wrap_molecules(homes[i]->x, homes[i]->mol_start, homes[i]->nmol, box);
    }
    HX_TRY(hx_comm_agree(comm, st));
    if (ndim == 0)
        return HX_OK;

    buf *out = calloc((size_t)nl, sizeof *out);
    double **in = calloc((size_t)nl, sizeof *in);
    int *dest = malloc((size_t)nl * sizeof *dest), *src = malloc((size_t)nl * sizeof *src);
    const void **sp = malloc((size_t)nl * sizeof *sp);
    void **rp = malloc((size_t)nl * sizeof *rp);
    size_t *sb = malloc((size_t)nl * sizeof *sb), *rb = malloc((size_t)nl * sizeof *rb);
    long long *cnt_out = malloc((size_t)nl * sizeof *cnt_out);
    long long *cnt_in = malloc((size_t)nl * sizeof *cnt_in);
    if (!out || !in || !dest || !src || !sp || !rp || !sb || !rb || !cnt_out || !cnt_in)
        st = hx_error_set(HX_ERR_NOMEM, __FILE__, __LINE__, __func__,
                          "out of memory for migration buffers");
    HX_TRY_GOTO(st, hx_comm_agree(comm, st), done);

    for (int k = 0; k < ndim; k++) {
        const int d = dims[k];
        /* dir 0: to the upper neighbour, dir 1: to the lower one. With two cells both are the
         * same domain; every move then goes "up" and the "down" phase carries nothing. */
        for (int dir = 0; dir < 2; dir++) {
            for (int i = 0; i < nl; i++) {
                hx_home *h = homes[i];
                int me = hx_comm_local_domain(comm, i), c[3];
                hx_dd_coord_of(dd, me, c);
                out[i].n = 0;
                for (int m = 0; m < h->nmol && st == HX_OK; m++) {
                    if (h->mol_gid[m] < 0)
                        continue;
                    double cen[3];
                    int t[3];
                    mol_centre(h, m, cen);
                    hx_dd_coord_of(dd, hx_dd_domain_of_point(dd, cen), t);
                    int delta = ((t[d] - c[d]) % grid[d] + grid[d]) % grid[d];
                    if (delta == 0)
                        continue;
                    if (delta != 1 && delta != grid[d] - 1) {
                        st = hx_error_set(
                            HX_ERR_PHYSICS, __FILE__, __LINE__, __func__,
                            "at step %lld molecule %d (global index, 0-based) moved more than "
                            "one cell along %c since the last repartition: from domain %d to "
                            "domain %d; the system is unstable or nstlist is too long",
                            step, h->mol_gid[m], dn[d], me, hx_dd_domain_of_point(dd, cen));
                        break;
                    }
                    int up = delta == 1;
                    if ((dir == 0) != up)
                        continue;
                    st = pack_molecule(h, m, &out[i]);
                    h->mol_gid[m] = -1;
                }
                if (st == HX_OK)
                    compact(h);
                int nb[3] = {c[0], c[1], c[2]};
                nb[d] += dir == 0 ? 1 : -1;
                dest[i] = hx_dd_domain_at(dd, nb);
                nb[d] = c[d] + (dir == 0 ? -1 : 1);
                src[i] = hx_dd_domain_at(dd, nb);
                cnt_out[i] = (long long)out[i].n;
            }
            HX_TRY_GOTO(st, hx_comm_agree(comm, st), done);
            /* counts, then payload */
            for (int i = 0; i < nl; i++) {
                sp[i] = &cnt_out[i];
                rp[i] = &cnt_in[i];
                sb[i] = rb[i] = sizeof(long long);
            }
            HX_TRY_GOTO(st,
                        hx_comm_sendrecv_tagged(comm, hx_msg_tag(HX_MSG_MIGRATE_COUNT, 2 * d + dir),
                                                HX_OK, dest, sp, sb, src, rp, rb),
                        done);
            for (int i = 0; i < nl && st == HX_OK; i++) {
                free(in[i]);
                in[i] = hx_fault_hit("migrate.recv")
                            ? NULL
                            : malloc((size_t)cnt_in[i] * sizeof(double) + 8);
                if (!in[i])
                    st = hx_error_set(HX_ERR_NOMEM, __FILE__, __LINE__, __func__,
                                      "out of memory for %lld migrating values from domain %d",
                                      cnt_in[i], src[i]);
                sp[i] = out[i].d;
                sb[i] = (size_t)cnt_out[i] * sizeof(double);
                rp[i] = in[i];
                rb[i] = (size_t)cnt_in[i] * sizeof(double);
            }
            HX_TRY_GOTO(st, hx_comm_agree(comm, st), done);
            HX_TRY_GOTO(st,
                        hx_comm_sendrecv_tagged(comm, hx_msg_tag(HX_MSG_MIGRATE, 2 * d + dir),
                                                HX_OK, dest, sp, sb, src, rp, rb),
                        done);
            for (int i = 0; i < nl && st == HX_OK; i++)
                st = unpack_molecules(homes[i], in[i], (size_t)cnt_in[i]);
            HX_TRY_GOTO(st, hx_comm_agree(comm, st), done);
        }
    }
    for (int i = 0; i < nl && st == HX_OK; i++)
        st = sort_home(homes[i]);
    HX_TRY_GOTO(st, hx_comm_agree(comm, st), done);
done:
    if (out)
        for (int i = 0; i < nl; i++)
            free(out[i].d);
    if (in)
        for (int i = 0; i < nl; i++)
            free(in[i]);
    free(out);
    free(in);
    free(dest);
    free(src);
    free(sp);
    free(rp);
    free(sb);
    free(rb);
    free(cnt_out);
    free(cnt_in);
    return st;
}
