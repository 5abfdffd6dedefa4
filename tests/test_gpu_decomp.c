/* The decomposed search step on the device (src/md/gpu/decomp_gpu.cu) against the host's
 * decomposition (hx_decomp: hx_migrate, hx_plan_build, hx_decomp_update_local), exactly, at
 * every search step of a run in which molecules move fast enough to cross faces, edges, corners
 * and the periodic boundary (free flight: every molecule moves by its own velocity, each atom
 * with a small jitter, so that centres change in their last bits too).
 *
 * Every domain of a decomposition runs in this process (the serial communicator; the device's
 * messages go through the in-process transport), so the CPU emulation of CUDA
 * (-DHALOX_GPU_EMULATE=ON) runs it in CI. Compared after every search step, per domain:
 *  - the home molecules (global indices, starts, order), their positions (wrapped into the box
 *    as hx_migrate wraps them) and velocities, bit for bit;
 *  - the plan: per pulse the send and receive counts by zone, dep_offset, the dependency sets
 *    and their reverse, atom offsets, where our atoms land on the receiver, zone ranges; the
 *    index maps entry by entry (and, when the order differs, as sets, to say which);
 *  - the local topology of every local atom (global index, molecule, type, charge, exclusions,
 *    position in its molecule) and the home atoms' masses as the GPU backend hands them on;
 *  - the home molecule lists the GPU update and bonded terms take (SETTLE groups, SHAKE and
 *    bonded molecules, free atoms), against the GPU backend's rule applied to the host's set.
 * Cases: water 1D/2D/3D grids, two pulses in 1D, 2D and 3D, the ethanol-water mixture (SHAKE
 * and bonded molecules), the slow path (fault site "gpu_dd.shrink": every capacity far too small
 * at the start, grown by all domains together, the step run again, the same result), and a
 * molecule moved two cells (HX_ERR_PHYSICS naming it, as the host path fails); and a case with
 * the per-kernel timing on (HALOX_GPU_DD_KTIMES=1: the same results, every kernel timed). */
#include "halox/halox.h"
#include "halox/build.h"
#include "halox/io.h"
#include "dd/plan_counts.h"
#include "dd/plan_image.h"
#include "core/fault.h"
#include "md/gpu/decomp_gpu.h"
#include "test_ethanol_common.h"
#include "test_gpu_common.h"
#include "testutil.h"

#include <cuda_runtime.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct tcase {
    const char *name;
    int eth;    /* ethanol-water mixture (oplsaa), else SPC/E water */
    int natoms; /* water: atoms; mixture: lattice sites per edge */
    int grid[3];
    double rc, rlist;
    int searches;
    double reach; /* largest displacement per search step, in cells */
    int shrink;   /* capacities shrunk (fault site "gpu_dd.shrink") */
    int blowup;   /* push one molecule two cells at the last search step */
    uint64_t seed;
    /* > 0: the motion of a molecular dynamics run at this temperature (K) instead of free
     * flight: the CPU engine on the whole system, 10 steps of 2 fs between search steps */
    double md_temp;
} tcase;

static int quick = 0;
/* the run with HALOX_GPU_DD_KTIMES=1: its kernel times checked (check_kernel_times) */
static int kt_check = 0;

/* ---- host references -------------------------------------------------------------------- */

/* The GPU backend's lists of the home molecules of a host local set (gpu_backend.cu's
 * set_local): SETTLE groups (oxygen by type, hydrogens in order), SHAKE molecules, bonded
 * molecules, then the atoms in neither a SETTLE nor a SHAKE group. */
typedef struct ref_lists {
    int nsettle, nshake, nbonded, nfree;
    int *settle, *shs, *sht, *bds, *bdt, *freeat;
} ref_lists;

static void ref_lists_make(const hx_system *sys, const hx_forcefield *ff, const hx_home *h,
                           const int *type, ref_lists *r)
{
    memset(r, 0, sizeof *r);
    r->settle = malloc(sizeof(int) * (3 * (size_t)h->nmol + 1));
    r->shs = malloc(sizeof(int) * ((size_t)h->nmol + 1));
    r->sht = malloc(sizeof(int) * ((size_t)h->nmol + 1));
    r->bds = malloc(sizeof(int) * ((size_t)h->nmol + 1));
    r->bdt = malloc(sizeof(int) * ((size_t)h->nmol + 1));
    r->freeat = malloc(sizeof(int) * ((size_t)h->natoms + 1));
    char *constrained = calloc((size_t)h->natoms + 1, 1);
    const hx_water_model *w = hx_forcefield_water(ff);
    const int to = hx_forcefield_water_o_type(ff);
    /* the compact SHAKE numbering: constrained molecule types in force-field order */
    int tmap[64], nsh = 0;
    for (int k = 0; k < hx_forcefield_nmoltypes(ff) && k < 64; k++) {
        const hx_moltype *t = hx_forcefield_moltype(ff, k);
        tmap[k] = t && !t->rigid_water && t->nconstraints > 0 ? nsh++ : -1;
    }
    for (int k = 0; k < h->nmol; k++) {
        const int mt = sys->mol_type ? sys->mol_type[h->mol_gid[k]] : 0;
        const hx_moltype *t = hx_forcefield_moltype(ff, mt);
        const int a0 = h->mol_start[k];
        if (!t || t->rigid_water) {
            if (!w)
                continue;
            int nhy = 0;
            for (int a = a0; a < h->mol_start[k + 1]; a++) {
                if (type[a] == to)
                    r->settle[3 * r->nsettle] = a;
                else if (nhy < 2)
                    r->settle[3 * r->nsettle + 1 + nhy++] = a;
                constrained[a] = 1;
            }
            r->nsettle++;
            continue;
        }
        if (t->nconstraints > 0) {
            r->shs[r->nshake] = a0;
            r->sht[r->nshake++] = tmap[mt];
            for (int a = a0; a < h->mol_start[k + 1]; a++)
                constrained[a] = 1;
        }
        if (t->nbonds || t->nangles || t->ndihedrals || t->npairs) {
            r->bds[r->nbonded] = a0;
            r->bdt[r->nbonded++] = mt;
        }
    }
    for (int a = 0; a < h->natoms; a++)
        if (!constrained[a])
            r->freeat[r->nfree++] = a;
    free(constrained);
}

static void ref_lists_free(ref_lists *r)
{
    free(r->settle);
    free(r->shs);
    free(r->sht);
    free(r->bds);
    free(r->bdt);
    free(r->freeat);
}

/* ---- device reads ------------------------------------------------------------------------ */

static void *dget(const void *dev, size_t bytes)
{
    void *h = malloc(bytes + 16);
    if (bytes && cudaMemcpy(h, dev, bytes, cudaMemcpyDeviceToHost) != cudaSuccess)
        T_FAIL("cudaMemcpy of %zu bytes from the device failed", bytes);
    return h;
}

/* n ints equal? prints the first difference */
static int same_int(const char *what, const char *tag, int i, const int *got, const int *want,
                    int n)
{
    for (int k = 0; k < n; k++)
        if (got[k] != want[k]) {
            T_FAIL("%s domain %d: %s[%d] = %d on the device, %d on the host", tag, i, what, k,
                   got[k], want[k]);
            return 0;
        }
    return 1;
}

static int same_bits(const char *what, const char *tag, int i, const void *got, const void *want,
                     size_t elem, int n)
{
    for (int k = 0; k < n; k++)
        if (memcmp((const char *)got + elem * k, (const char *)want + elem * k, elem)) {
            if (elem == sizeof(double))
                T_FAIL("%s domain %d: %s[%d] = %.17g on the device, %.17g on the host", tag, i,
                       what, k, ((const double *)got)[k], ((const double *)want)[k]);
            else
                T_FAIL("%s domain %d: %s[%d] differs", tag, i, what, k);
            return 0;
        }
    return 1;
}

static int cmp_int(const void *a, const void *b)
{
    return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

/* ---- one comparison ------------------------------------------------------------------------ */

static void compare(const char *tag, const hx_system *sys, const hx_forcefield *ff, hx_decomp *dec,
                    hx_gpu_decomp *g, hx_plan *dplan)
{
    const int nl = hx_decomp_nlocal(dec);
    for (int i = 0; i < nl; i++) {
        const hx_decomp_local *L = hx_decomp_get_local(dec, i);
        const hx_domain_plan *hp = L->plan;
        const hx_domain_plan *dp = hx_plan_domain(dplan, i);
        const hx_gpu_dd_local *V = hx_gpu_decomp_local(g, i);
        const hx_gpu_dd_counts *c = V->c;
        const hx_home *h = L->home;
        T_CHECK(c->n_home == h->natoms && c->nmol == h->nmol && c->n_local == L->n_local &&
                    c->map_len == hp->index_map_len,
                "%s domain %d: device home %d atoms / %d molecules, %d local, %d map entries; "
                "host %d / %d, %d, %d",
                tag, i, c->n_home, c->nmol, c->n_local, c->map_len, h->natoms, h->nmol, L->n_local,
                hp->index_map_len);
        if (c->n_home != h->natoms || c->nmol != h->nmol || c->n_local != L->n_local ||
            c->map_len != hp->index_map_len)
            continue;
        const int nh = h->natoms, nm = h->nmol, n = L->n_local;
        int *gid = dget(V->gid, sizeof(int) * (size_t)nh);
        int *mg = dget(V->mol_gid, sizeof(int) * (size_t)nm);
        int *ms = dget(V->mol_start, sizeof(int) * ((size_t)nm + 1));
        double *x = dget(V->x, sizeof(double) * 3 * (size_t)nh);
        double *v = dget(V->v, sizeof(double) * 3 * (size_t)nh);
        same_int("home molecule", tag, i, mg, h->mol_gid, nm);
        same_int("molecule start", tag, i, ms, h->mol_start, nm + 1);
        same_int("home atom", tag, i, gid, h->gid, nh);
        same_bits("home position", tag, i, x, h->x, sizeof(double), 3 * nh);
        same_bits("home velocity", tag, i, v, h->v, sizeof(double), 3 * nh);
        free(gid);
        free(mg);
        free(ms);
        free(x);
        free(v);
        /* local topology */
        int *lg = dget(V->lgid, sizeof(int) * (size_t)n);
        int *lm = dget(V->mol, sizeof(int) * (size_t)n);
        int *lt = dget(V->type, sizeof(int) * (size_t)n);
        double *lq = dget(V->q, sizeof(double) * (size_t)n);
        uint32_t *le = dget(V->excl, sizeof(uint32_t) * (size_t)n);
        unsigned char *lp = dget(V->mol_pos, (size_t)n);
        same_int("local atom", tag, i, lg, L->gid, n);
        same_int("local molecule", tag, i, lm, L->mol, n);
        same_int("local type", tag, i, lt, L->type, n);
        same_bits("local charge", tag, i, lq, L->q, sizeof(double), n);
        same_bits("local exclusions", tag, i, le, L->excl, sizeof(uint32_t), n);
        same_bits("position in molecule", tag, i, lp, L->mol_pos, 1, n);
        free(lg);
        free(lm);
        free(lt);
        free(lq);
        free(le);
        free(lp);
        /* masses as the GPU backend derives them: m = 1 / invmass; the update: 1 / m */
        double *hm = dget(V->mass, sizeof(double) * (size_t)nh);
        double *him = dget(V->invmass, sizeof(double) * (size_t)nh);
        for (int a = 0; a < nh; a++) {
            const double m = 1.0 / L->invmass[a], im = 1.0 / m;
            if (memcmp(&hm[a], &m, sizeof m) || memcmp(&him[a], &im, sizeof im)) {
                T_FAIL("%s domain %d: home atom %d mass %.17g / %.17g on the device, %.17g / "
                       "%.17g on the host",
                       tag, i, a, hm[a], him[a], m, im);
                break;
            }
        }
        free(hm);
        free(him);
        /* the plan */
        T_CHECK(dp->n_home == hp->n_home && dp->n_local == hp->n_local &&
                    dp->index_map_len == hp->index_map_len && dp->nranges == hp->nranges,
                "%s domain %d: plan from counts n_home %d n_local %d map %d ranges %d; host %d "
                "%d %d %d",
                tag, i, dp->n_home, dp->n_local, dp->index_map_len, dp->nranges, hp->n_home,
                hp->n_local, hp->index_map_len, hp->nranges);
        for (int r = 0; r < dp->nranges && r < hp->nranges; r++)
            T_CHECK(dp->ranges[r].begin == hp->ranges[r].begin &&
                        dp->ranges[r].end == hp->ranges[r].end &&
                        dp->ranges[r].zone == hp->ranges[r].zone,
                    "%s domain %d: zone range %d [%d,%d) zone %d, host [%d,%d) zone %d", tag, i, r,
                    dp->ranges[r].begin, dp->ranges[r].end, dp->ranges[r].zone, hp->ranges[r].begin,
                    hp->ranges[r].end, hp->ranges[r].zone);
        int *map = dget(V->index_map, sizeof(int) * (size_t)hp->index_map_len);
        for (int q = 0; q < hp->npulses; q++) {
            const hx_pulse *P = &hp->pulses[q], *Q = &dp->pulses[q];
            T_CHECK(
                P->send_count == Q->send_count && P->dep_offset == Q->dep_offset &&
                    P->deps == Q->deps && P->rdeps == Q->rdeps && P->recv_count == Q->recv_count &&
                    P->atom_offset == Q->atom_offset &&
                    P->peer_atom_offset == Q->peer_atom_offset && P->map_offset == Q->map_offset &&
                    !memcmp(P->send_zone_count, Q->send_zone_count, sizeof P->send_zone_count) &&
                    !memcmp(P->recv_zone_count, Q->recv_zone_count, sizeof P->recv_zone_count),
                "%s domain %d pulse %d: device send %d (dep_offset %d, deps %#llx, rdeps "
                "%#llx) recv %d at %d, lands at %d; host send %d (%d, %#llx, %#llx) recv %d "
                "at %d, lands at %d",
                tag, i, q, Q->send_count, Q->dep_offset, (unsigned long long)Q->deps,
                (unsigned long long)Q->rdeps, Q->recv_count, Q->atom_offset, Q->peer_atom_offset,
                P->send_count, P->dep_offset, (unsigned long long)P->deps,
                (unsigned long long)P->rdeps, P->recv_count, P->atom_offset, P->peer_atom_offset);
            if (P->send_count != Q->send_count)
                continue;
            const int *hm_ = hp->index_map + P->map_offset, *dm = map + P->map_offset;
            if (memcmp(hm_, dm, sizeof(int) * (size_t)P->send_count)) {
                /* as sets? */
                int *a = malloc(sizeof(int) * ((size_t)P->send_count + 1));
                int *b = malloc(sizeof(int) * ((size_t)P->send_count + 1));
                memcpy(a, hm_, sizeof(int) * (size_t)P->send_count);
                memcpy(b, dm, sizeof(int) * (size_t)P->send_count);
                qsort(a, (size_t)P->send_count, sizeof(int), cmp_int);
                qsort(b, (size_t)P->send_count, sizeof(int), cmp_int);
                const int sets = !memcmp(a, b, sizeof(int) * (size_t)P->send_count);
                int e = 0;
                while (hm_[e] == dm[e])
                    e++;
                T_FAIL("%s domain %d pulse %d: index map entry %d is atom %d on the device, %d "
                       "on the host (%s)",
                       tag, i, q, e, dm[e], hm_[e],
                       sets ? "the same set in another order" : "different sets");
                free(a);
                free(b);
            }
        }
        free(map);
        /* the update's and bonded terms' lists */
        ref_lists r;
        ref_lists_make(sys, ff, h, L->type, &r);
        T_CHECK(c->nsettle == r.nsettle && c->nshake == r.nshake && c->nbonded == r.nbonded &&
                    c->nfree == r.nfree,
                "%s domain %d: device lists settle %d shake %d bonded %d free %d; host %d %d %d "
                "%d",
                tag, i, c->nsettle, c->nshake, c->nbonded, c->nfree, r.nsettle, r.nshake, r.nbonded,
                r.nfree);
        if (c->nsettle == r.nsettle && c->nshake == r.nshake && c->nbonded == r.nbonded &&
            c->nfree == r.nfree) {
            int *st = dget(V->settle, sizeof(int) * 3 * (size_t)r.nsettle);
            int *shs = dget(V->shake_start, sizeof(int) * (size_t)r.nshake);
            int *sht = dget(V->shake_type, sizeof(int) * (size_t)r.nshake);
            int *bds = dget(V->bonded_start, sizeof(int) * (size_t)r.nbonded);
            int *bdt = dget(V->bonded_type, sizeof(int) * (size_t)r.nbonded);
            int *fa = dget(V->free_at, sizeof(int) * (size_t)r.nfree);
            same_int("SETTLE atom", tag, i, st, r.settle, 3 * r.nsettle);
            same_int("SHAKE molecule start", tag, i, shs, r.shs, r.nshake);
            same_int("SHAKE type", tag, i, sht, r.sht, r.nshake);
            same_int("bonded molecule start", tag, i, bds, r.bds, r.nbonded);
            same_int("bonded molecule type", tag, i, bdt, r.bdt, r.nbonded);
            same_int("free atom", tag, i, fa, r.freeat, r.nfree);
            int consecutive = 1;
            for (int w = 0; w < r.nsettle; w++)
                for (int j = 0; j < 3; j++)
                    consecutive &= r.settle[3 * w + j] == r.settle[0] + 3 * w + j;
            T_CHECK(!consecutive || c->settle_consecutive,
                    "%s domain %d: SETTLE groups are consecutive but the device says not", tag, i);
            free(st);
            free(shs);
            free(sht);
            free(bds);
            free(bdt);
            free(fa);
        }
        ref_lists_free(&r);
    }
}

/* ---- motion -------------------------------------------------------------------------------- */

/* Every molecule moves by its displacement per search step, each atom with a jitter; the
 * velocities (carried along, never used) are the displacement plus a per-atom mark. */
static void move(hx_decomp *dec, const double *vmol, double scale, double jitter, t_rng *r)
{
    for (int i = 0; i < hx_decomp_nlocal(dec); i++) {
        hx_home *h = hx_decomp_get_local(dec, i)->home;
        for (int k = 0; k < h->nmol; k++)
            for (int a = h->mol_start[k]; a < h->mol_start[k + 1]; a++)
                for (int d = 0; d < 3; d++) {
                    h->x[3 * a + d] += scale * vmol[3 * h->mol_gid[k] + d] +
                                       jitter * (2.0 * t_rng_uniform(r) - 1.0);
                    h->v[3 * a + d] = vmol[3 * h->mol_gid[k] + d] + 1e-3 * h->gid[a];
                }
    }
}

/* The homes' positions and velocities from a molecular dynamics run of the whole system (its
 * gathered state, molecules whole), by global atom index. */
static void from_md(hx_decomp *dec, hx_md *md)
{
    hx_md_set_steps(md, 10);
    hx_md_output out;
    memset(&out, 0, sizeof out);
    T_OK(hx_md_run(md, &out));
    T_OK(hx_md_gather(md));
    const hx_system *ms = hx_md_system(md);
    for (int i = 0; i < hx_decomp_nlocal(dec); i++) {
        hx_home *h = hx_decomp_get_local(dec, i)->home;
        for (int a = 0; a < h->natoms; a++)
            for (int d = 0; d < 3; d++) {
                h->x[3 * a + d] = ms->x[3 * h->gid[a] + d];
                h->v[3 * a + d] = ms->v[3 * h->gid[a] + d];
            }
    }
}

/* ---- a case -------------------------------------------------------------------------------- */

/* HALOX_GPU_DD_KTIMES=1: every kernel of the step and the messages timed at every run, each
 * exactly as often as the step launches it (per run: once per local domain; the migration's per
 * decomposed dimension (both directions in one pass), the pulses' per pulse; a message per
 * pulse and per migration direction, one direction only along a dimension of two cells), the times
 * not negative, and their sum within the parts' events and at least half of them (the marks lie
 * between the step's first and last event; after the last mark only the control records'
 * copies). */
static void check_kernel_times(const tcase *tc, const hx_gpu_decomp *g, int nl, int ndim,
                               int npulses, int searches, double parts_s)
{
    static const char *want[] = {
        "k_mig_init", "k_mig_mark_scan", "k_mig_pack",       "message",      "k_mig_unpack",
        "k_fin_b",    "k_fin_d",         "k_pulse_sel_scan", "k_pulse_pack", "k_pulse_recv"};
    const int nwant = (int)(sizeof want / sizeof want[0]);
    /* launches per run of each, in want's order */
    int mig_msgs = 0;
    for (int d = 0; d < 3; d++)
        mig_msgs += tc->grid[d] == 1 ? 0 : tc->grid[d] == 2 ? 1 : 2;
    const long long mig = (long long)ndim * nl, pul = (long long)npulses * nl;
    const long long per_run[] = {nl, mig, mig, mig_msgs + npulses, mig, nl, nl, pul, pul, pul};
    const char *name[32];
    double ms[32];
    long long launches[32], runs = 0;
    const int nk = hx_gpu_decomp_kernel_times(g, 32, name, ms, launches, &runs);
    T_CHECK(runs >= searches && nk == nwant,
            "%s: kernel times of %lld runs, %d kernels (%d searches; expected %d kernels)",
            tc->name, runs, nk, searches, nwant);
    for (int w = 0; w < nwant; w++) {
        int j = 0;
        while (j < nk && strcmp(name[j], want[w]) != 0)
            j++;
        T_CHECK(j < nk, "%s: no time for %s", tc->name, want[w]);
        if (j == nk)
            continue;
        T_CHECK(launches[j] == runs * per_run[w] && ms[j] >= 0.0,
                "%s: %s: %lld launches (expected %lld in %lld runs), %.4f ms", tc->name, want[w],
                launches[j], runs * per_run[w], runs, ms[j]);
    }
    double sum = 0.0;
    for (int j = 0; j < nk; j++)
        sum += ms[j];
    T_CHECK(1e-3 * sum >= 0.5 * parts_s && 1e-3 * sum <= parts_s * (1.0 + 1e-3) + 1e-6,
            "%s: kernel times sum to %.4f ms, the parts' events to %.4f ms", tc->name, sum,
            1e3 * parts_s);
    printf("%-32s kernel times (HALOX_GPU_DD_KTIMES=1): %d kernels, %lld runs, %.3f of %.3f ms "
           "of the parts\n",
           tc->name, nk, runs, sum, 1e3 * parts_s);
}

static hx_system *make_system(const tcase *tc, hx_forcefield **ff)
{
    hx_system *s = NULL;
    if (tc->eth) {
        s = tet_mixture_lattice("tip3p", tc->natoms, 0.42, 0.25, 0.02, tc->seed);
        T_OK(hx_forcefield_create("oplsaa", ff));
    } else {
        T_OK(hx_build_water("spce", tc->natoms, 0.0, tc->seed, &s));
        T_OK(hx_forcefield_create("spce", ff));
    }
    if (s && *ff)
        T_OK(hx_forcefield_apply(*ff, s));
    return s;
}

static void run_case(const tcase *tc)
{
    const int fails0 = hx_test_failures;
    hx_forcefield *ff = NULL;
    hx_system *sys = make_system(tc, &ff);
    if (!sys || !ff)
        return;
    const int nd = tc->grid[0] * tc->grid[1] * tc->grid[2];
    hx_comm *comm = NULL;
    hx_decomp *dec = NULL;
    hx_gpu_decomp *g = NULL;
    hx_plan *dplan = NULL;
    hx_md *md = NULL;
    T_OK(hx_comm_create_serial(nd, &comm));
    hx_decomp_params dp = {tc->rc, tc->rlist, {tc->grid[0], tc->grid[1], tc->grid[2]}};
    T_OK(hx_decomp_create(sys, &dp, comm, &dec));
    if (!dec)
        goto out;
    T_OK(hx_decomp_update_local(dec));
    const hx_dd *dd = hx_decomp_dd(dec);
    int pulses[3];
    for (int d = 0; d < 3; d++)
        pulses[d] = hx_dd_pulses_dim(dd, d);
    t_rng r;
    t_rng_seed(&r, tc->seed ^ 0x5eedULL);
    double *vmol = malloc(sizeof(double) * 3 * (size_t)sys->nmol);
    for (int k = 0; k < sys->nmol; k++)
        for (int d = 0; d < 3; d++)
            vmol[3 * k + d] = (2.0 * t_rng_uniform(&r) - 1.0) * tc->reach * hx_dd_cell_size(dd, d);
    move(dec, vmol, 0.0, 0.0, &r); /* velocities into the home stores */
    int *mol_dom = malloc(sizeof(int) * (size_t)sys->nmol);
    for (int i = 0; i < hx_decomp_nlocal(dec); i++) {
        const hx_home *h = hx_decomp_get_local(dec, i)->home;
        for (int k = 0; k < h->nmol; k++)
            mol_dom[h->mol_gid[k]] = hx_comm_local_domain(comm, i);
    }
    if (tc->md_temp > 0) {
        hx_md_params mp;
        hx_md_params_default(&mp);
        mp.model = "spce";
        mp.rc = tc->rc;
        mp.rlist = tc->rlist;
        mp.gen_vel = 1;
        mp.gen_temp = tc->md_temp;
        mp.seed = (int)tc->seed;
        mp.nstlist = 10;
        T_OK(hx_md_create(sys, &mp, &md));
        if (!md)
            goto out;
    }
    hx_gpu_dd_transport tr;
    T_OK(hx_gpu_dd_transport_local(comm, &tr));
    if (tc->shrink)
        hx_fault_arm("gpu_dd.shrink");
    T_OK(hx_gpu_decomp_create(dec, sys, ff, &tr, &g));
    hx_fault_arm(NULL);
    T_OK(hx_plan_create(dd, comm, &dplan));
    if (!g || !dplan)
        goto out;
    const int nl = hx_decomp_nlocal(dec);
    double **xs = calloc((size_t)nl, sizeof *xs), **vs = calloc((size_t)nl, sizeof *vs);
    hx_gpu_dd_state *in = calloc((size_t)nl, sizeof *in);
    hx_plan_domain_counts *pc = calloc((size_t)nl, sizeof *pc);
    for (int i = 0; i < nl; i++) {
        T_CHECK(cudaMalloc((void **)&xs[i], sizeof(double) * 3 * (size_t)sys->natoms) ==
                        cudaSuccess &&
                    cudaMalloc((void **)&vs[i], sizeof(double) * 3 * (size_t)sys->natoms) ==
                        cudaSuccess,
                "cudaMalloc");
        in[i].x = xs[i];
        in[i].v = vs[i];
    }
    long long gmax[HX_MAX_PULSES + 1];
    /* odd search steps on a stream of the test's own (the step's parts replayed as graphs, as
     * the engine runs them), even ones on the legacy default stream (direct launches) */
    cudaStream_t stream = NULL;
    T_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess,
            "cudaStreamCreateWithFlags");
    int moved = 0, crossed_periodic = 0, migrated = 0;
    double parts_s = 0.0; /* the step's device parts, summed over the runs (events) */
    for (int step = 1; step <= tc->searches && hx_test_failures == fails0; step++) {
        if (md)
            from_md(dec, md);
        else
            move(dec, vmol, 1.0, 1e-3, &r);
        const int blow = tc->blowup && step == tc->searches;
        if (blow) {
            /* one molecule two cells further along the first dimension with 4+ cells */
            hx_home *h = hx_decomp_get_local(dec, 0)->home;
            int d = 0;
            while (d < 3 && tc->grid[d] < 4)
                d++;
            for (int a = h->mol_start[0]; d < 3 && a < h->mol_start[1]; a++)
                h->x[3 * a + d] += 2.2 * hx_dd_cell_size(dd, d);
        }
        /* the legacy stream's copies from pageable memory may still be in flight when they
         * return, and the non-blocking stream does not wait for them: synchronise */
        for (int i = 0; i < nl; i++) {
            const hx_home *h = hx_decomp_get_local(dec, i)->home;
            cudaMemcpy(xs[i], h->x, sizeof(double) * 3 * (size_t)h->natoms, cudaMemcpyHostToDevice);
            cudaMemcpy(vs[i], h->v, sizeof(double) * 3 * (size_t)h->natoms, cudaMemcpyHostToDevice);
        }
        T_CHECK(cudaDeviceSynchronize() == cudaSuccess, "cudaDeviceSynchronize");
        hx_gpu_dd_times tm;
        const hx_status dst =
            hx_gpu_decomp_run(g, step, HX_OK, in, step % 2 ? (hx_stream)stream : NULL, gmax, &tm);
        const hx_status hst = hx_decomp_repartition(dec, step);
        if (dst == HX_OK) {
            parts_s += tm.migrate + tm.local_set + tm.plan;
            /* the parts' events, recorded between direct launches (the legacy stream) or by
             * the one graph of the three parts at each replay: in order, within the run */
            T_CHECK(tm.migrate >= 0.0 && tm.local_set >= 0.0 && tm.plan >= 0.0 &&
                        tm.migrate + tm.local_set + tm.plan <= tm.device + 1e-3,
                    "%s step %d (%s): parts %.6f + %.6f + %.6f s, the run %.6f s", tc->name, step,
                    step % 2 ? "graph" : "direct launches", tm.migrate, tm.local_set, tm.plan,
                    tm.device);
        }
        if (blow) {
            T_CHECK(dst == HX_ERR_PHYSICS && hst == HX_ERR_PHYSICS,
                    "%s: a molecule moved two cells: device %s, host %s", tc->name,
                    hx_status_name(dst), hx_status_name(hst));
            T_CHECK(dst != HX_ERR_PHYSICS || strstr(hx_last_error(), "moved more than one cell"),
                    "%s: the message does not name the problem: %s", tc->name, hx_last_error());
            break;
        }
        T_CHECK(dst == HX_OK, "%s step %d: device search step failed: %s", tc->name, step,
                hx_last_error());
        T_CHECK(hst == HX_OK, "%s step %d: host repartition failed: %s", tc->name, step,
                hx_last_error());
        if (dst != HX_OK || hst != HX_OK)
            break;
        T_OK(hx_decomp_update_local(dec));
        for (int i = 0; i < nl; i++) {
            const hx_gpu_dd_local *V = hx_gpu_decomp_local(g, i);
            pc[i].n_home = V->c->n_home;
            pc[i].send_zone_count = V->c->send_zone_count;
            pc[i].recv_zone_count = V->c->recv_zone_count;
            pc[i].deps = V->c->deps;
            void *img;
            size_t cap;
            T_OK(hx_gpu_decomp_image(g, i, &img, &cap));
            hx_plan_set_device_image(dplan, i, img, cap);
        }
        T_OK(hx_plan_set_counts(dplan, HX_OK, pc, gmax));
        char tag[96];
        snprintf(tag, sizeof tag, "%s step %d", tc->name, step);
        compare(tag, sys, ff, dec, g, dplan);
        if (tc->shrink && step == 1)
            T_CHECK(hx_gpu_decomp_growths(g) > 0,
                    "%s: capacities shrunk by %d, but no growth happened", tc->name,
                    HX_GPU_DD_TEST_SHRINK);
        /* how much happened: molecules that changed domain, and molecules whose wrapped
         * position is a box away from where their flight took them (the periodic boundary) */
        for (int i = 0; i < nl; i++) {
            const hx_home *h = hx_decomp_get_local(dec, i)->home;
            for (int k = 0; k < h->nmol; k++) {
                const int mg = h->mol_gid[k], me = hx_comm_local_domain(comm, i);
                migrated += mol_dom[mg] != me;
                mol_dom[mg] = me;
                const double *x0 = &h->x[3 * h->mol_start[k]];
                const double *xg = &sys->x[3 * sys->mol_start[mg]];
                for (int d = 0; d < 3; d++)
                    if (fabs(x0[d] - xg[d] - (md ? 0.0 : step * vmol[3 * mg + d])) >
                        0.5 * sys->box[d])
                        crossed_periodic++;
            }
        }
        moved++;
    }
    T_CHECK(tc->blowup || moved == tc->searches || hx_test_failures > fails0,
            "%s: %d of %d search steps compared", tc->name, moved, tc->searches);
    T_CHECK(tc->blowup || (crossed_periodic > 0 && migrated > 0),
            "%s: %d molecules crossed the periodic boundary, %d changed domain: the case tests "
            "too little",
            tc->name, crossed_periodic, migrated);
    printf("%-32s grid %dx%dx%d, pulses %d/%d/%d, %d atoms, %d search steps, %d migrations, %d "
           "growths: %s\n",
           tc->name, tc->grid[0], tc->grid[1], tc->grid[2], pulses[0], pulses[1], pulses[2],
           sys->natoms, moved, migrated, hx_gpu_decomp_growths(g),
           hx_test_failures == fails0 ? "identical" : "FAILED");
    if (kt_check)
        check_kernel_times(tc, g, nl, hx_dd_ndim(dd, NULL), pulses[0] + pulses[1] + pulses[2],
                           moved, parts_s);
    for (int i = 0; i < nl; i++) {
        cudaFree(xs[i]);
        cudaFree(vs[i]);
    }
    if (stream)
        cudaStreamDestroy(stream);
    free(xs);
    free(vs);
    free(in);
    free(pc);
    free(vmol);
    free(mol_dom);
out:
    hx_md_destroy(&md);
    hx_plan_destroy(&dplan);
    hx_gpu_decomp_destroy(&g);
    hx_decomp_destroy(&dec);
    hx_comm_destroy(&comm);
    hx_system_destroy(&sys);
    hx_forcefield_destroy(&ff);
}

int main(int argc, char **argv)
{
    int only = -1;
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--quick"))
            quick = 1;
        else if (!strcmp(argv[a], "--case") && a + 1 < argc)
            only = atoi(argv[++a]);
    }
    if (!t_gpu_require("test_gpu_decomp"))
        return T_SKIP_CODE;
    /* the device module works on the current device: the test's GPU context makes it current */
    if (!tg_gpu())
        return t_finish("test_gpu_decomp", 0);
    static const tcase cases[] = {
        {"water 2x1x1", 0, 1500, {2, 1, 1}, 0.9, 0.95, 6, 0.35, 0, 0, 11, 0.0},
        {"water 3x1x1 two pulses", 0, 1500, {3, 1, 1}, 0.9, 0.95, 6, 0.35, 0, 0, 12, 0.0},
        {"water 4x1x1 two pulses", 0, 1500, {4, 1, 1}, 0.9, 0.95, 5, 0.3, 0, 0, 13, 0.0},
        {"water 2x2x1", 0, 3000, {2, 2, 1}, 0.9, 0.95, 5, 0.35, 0, 0, 14, 0.0},
        {"water 1x3x2", 0, 3000, {1, 3, 2}, 0.9, 0.95, 4, 0.35, 0, 0, 15, 0.0},
        {"water 4x2x1 two pulses", 0, 3000, {4, 2, 1}, 0.9, 0.95, 4, 0.3, 0, 0, 16, 0.0},
        {"water 2x2x2", 0, 3000, {2, 2, 2}, 0.9, 0.95, 4, 0.35, 0, 0, 17, 0.0},
        {"water 4x2x2 two pulses 3D", 0, 3000, {4, 2, 2}, 0.9, 0.95, 3, 0.3, 0, 0, 18, 0.0},
        {"ethanol-water 2x2x1", 1, 8, {2, 2, 1}, 0.9, 0.95, 4, 0.35, 0, 0, 19, 0.0},
        {"ethanol-water 3x1x1 two pulses", 1, 8, {3, 1, 1}, 0.9, 0.95, 4, 0.3, 0, 0, 20, 0.0},
        {"water 2x2x1 slow path", 0, 3000, {2, 2, 1}, 0.9, 0.95, 3, 0.35, 1, 0, 21, 0.0},
        {"water 4x1x1 moved too far", 0, 1500, {4, 1, 1}, 0.9, 0.95, 2, 0.2, 0, 1, 22, 0.0},
        /* molecular dynamics of hot water (the CPU engine): what a run's search steps see */
        {"water 2x2x1 MD at 600 K", 0, 3000, {2, 2, 1}, 0.9, 0.95, 6, 0.0, 0, 0, 23, 600.0},
    };
    const int n = (int)(sizeof cases / sizeof cases[0]);
    int ran = 0;
#ifdef HX_CUDA_EMULATION
    /* the emulation scans in shared memory (its warp shuffles are slow barriers of host
     * threads): the first case once more with the GPU's warp-shuffle scan */
    if (only < 0) {
        setenv("HALOX_EMU_SHUFFLE_SCAN", "1", 1);
        run_case(&cases[0]);
        unsetenv("HALOX_EMU_SHUFFLE_SCAN");
        ran++;
    }
#endif
    for (int k = 0; k < n; k++) {
        if ((only >= 0 && k != only) ||
            (only < 0 && quick && k % 3 == 2 && !cases[k].shrink && !cases[k].blowup))
            continue;
        run_case(&cases[k]);
        ran++;
    }
    if (only < 0) {
        /* the per-kernel timing (a diagnosis): direct launches, the same results; a two-pulse
         * grid with a slow path, so that every kernel runs and runs repeat */
        static const tcase kt = {
            "water 4x2x1 kernel times", 0, 3000, {4, 2, 1}, 0.9, 0.95, 3, 0.3, 1, 0, 24, 0.0};
        setenv("HALOX_GPU_DD_KTIMES", "1", 1);
        kt_check = 1;
        run_case(&kt);
        kt_check = 0;
        unsetenv("HALOX_GPU_DD_KTIMES");
        ran++;
    }
    tg_gpu_end();
    return t_finish("test_gpu_decomp", ran);
}
