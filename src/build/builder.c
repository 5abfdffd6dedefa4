/* System builders: liquid water and argon boxes of any size, in O(N) time and memory.
 *
 * Water (hx_build_water) is tiled from a 1000-molecule box of the model equilibrated at 300 K
 * with halox md (data/water_<model>.gro, made by scripts/make_equilibrated_box.sh and embedded
 * at build time as water_boxes.c, see src/build/water_boxes.h). The seed picks one of the 48
 * symmetries of the cube and a periodic shift of that box, and which molecules are removed. Two
 * ways to fill the box:
 *  - seamless: the box edge is close to a whole number n of tiles (scale within 1 %, at most
 *    2 % of the n^3 * 1000 molecules to remove at random): the tiles are scaled to the box, so
 *    neighbours across tile faces are the periodic neighbours of the equilibrated box;
 *  - cut: otherwise a cube is cut from the periodic tiles, a little larger than the box so that
 *    it holds enough molecules, and scaled down to the box (a few % at most). Across its faces
 *    liquid meets liquid it never saw: molecules that clash there are turned or removed. Their
 *    broken H-bonds warm MD from such a box by roughly 400 K nm / edge (+90 K at 4.5 nm, +50 K
 *    at 6.7 nm). Boxes too small for that (under ~800 molecules) use the lattice.
 * Either way molecules are rebuilt rigidly with the model's exact geometry, then exactly nmol
 * of the candidates are kept with selection sampling, and O-O >= 0.23 nm is verified.
 *
 * Lattice (hx_build_water_lattice, argon): the cubic box is filled with a periodic lattice
 * (simple cubic, bcc or fcc; whichever keeps the nearest-neighbour distance largest for the
 * number of molecules) whose sites number at least the molecules. A random subset of exactly
 * nmol sites is taken with selection sampling (one pass over the sites, no site array), so the
 * density is exact overall and the vacancies are spread uniformly. Each molecule's first atom (O
 * or Ar) sits on its site and the molecule is turned by a uniformly random rotation. Because the
 * lattice is periodic in the box, the smallest O-O distance, across the boundaries too, is the
 * lattice's nearest-neighbour distance, which is checked against the minimum before building and
 * verified afterwards with a cell list. */
#include "halox/build.h"
#include "halox/log.h"
#include "halox/models.h"
#include "core/error.h"
#include "core/geom.h"
#include "core/rng.h"
#include "build/water_boxes.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BUILD_MAX_MOL (0x7fffffff / 3)

/* random numbers: src/core/rng.h (stream 0 of the seed) */

/* ---- lattice source --------------------------------------------------------------------- */

typedef struct lattice {
    const char *kind;
    int nbasis;     /* sites per cubic cell */
    int n;          /* cells per edge */
    double a;       /* cell edge, nm */
    double nn;      /* nearest-neighbour distance, nm */
    int64_t nsites; /* nbasis * n^3 */
} lattice;

/* Basis positions in units of the cell edge, for sc (1), bcc (2), fcc (4). */
static const double basis_sc[1][3] = {{0, 0, 0}};
static const double basis_bcc[2][3] = {{0, 0, 0}, {0.5, 0.5, 0.5}};
static const double basis_fcc[4][3] = {{0, 0, 0}, {0.5, 0.5, 0}, {0.5, 0, 0.5}, {0, 0.5, 0.5}};

static const double (*basis_of(int nbasis))[3]
{
    return nbasis == 1 ? basis_sc : nbasis == 2 ? basis_bcc : basis_fcc;
}

/* The lattice with the largest nearest-neighbour distance that has at least nmol sites in a
 * cube of edge L. For each lattice type the smallest n with nbasis*n^3 >= nmol is used. */
static void choose_lattice(int64_t nmol, double L, lattice *best)
{
    static const struct {
        const char *kind;
        int nbasis;
        double nn_per_a;
    } types[3] = {{"sc", 1, 1.0}, {"bcc", 2, 0.86602540378443865}, {"fcc", 4, 0.70710678118654752}};
    *best = (lattice){"sc", 1, 1, L, -1.0, 1};
    for (int t = 0; t < 3; t++) {
        int64_t n = (int64_t)floor(cbrt((double)nmol / types[t].nbasis));
        if (n < 1)
            n = 1;
        while (types[t].nbasis * n * n * n < nmol)
            n++;
        while (n > 1 && types[t].nbasis * (n - 1) * (n - 1) * (n - 1) >= nmol)
            n--;
        double a = L / (double)n;
        double nn = a * types[t].nn_per_a;
        if (nn > best->nn) {
            best->kind = types[t].kind;
            best->nbasis = types[t].nbasis;
            best->n = (int)n;
            best->a = a;
            best->nn = nn;
            best->nsites = types[t].nbasis * n * n * n;
        }
    }
}

/* Position of site idx. Sites are offset by a quarter cell so that none lies on a face of the
 * box: every molecule's centre is strictly inside [0, L). Order: x fastest, then y, z, so that
 * atoms that are close in the file are close in space. */
static void lattice_site(const lattice *lat, int64_t idx, double pos[3])
{
    int64_t cell = idx / lat->nbasis;
    int b = (int)(idx % lat->nbasis);
    int64_t c[3] = {cell % lat->n, (cell / lat->n) % lat->n, cell / ((int64_t)lat->n * lat->n)};
    const double(*bp)[3] = basis_of(lat->nbasis);
    for (int d = 0; d < 3; d++)
        pos[d] = ((double)c[d] + bp[b][d] + 0.25) * lat->a;
}

/* Uniformly random rotation matrix from a random unit quaternion (Shoemake's method). */
static void random_rotation(hx_rng *r, double R[3][3])
{
    double u1 = hx_rng_uniform(r), u2 = hx_rng_uniform(r), u3 = hx_rng_uniform(r);
    double s1 = sqrt(1.0 - u1), s2 = sqrt(u1);
    double w = s1 * sin(2 * M_PI * u2), x = s1 * cos(2 * M_PI * u2);
    double y = s2 * sin(2 * M_PI * u3), z = s2 * cos(2 * M_PI * u3);
    double n = 1.0 / sqrt(w * w + x * x + y * y + z * z);
    const double q[4] = {w * n, x * n, y * n, z * n};
    hx_geom_unit_quat_rotation(q, R);
}

/* ---- molecule template ------------------------------------------------------------------ */

typedef struct mol_template {
    int natoms;
    const char *res_name;
    const char *atom_name[3];
    double xb[3][3]; /* body-frame positions, atom 0 at the origin */
    int rotate;      /* 0 for single atoms */
} mol_template;

/* Molecule k (residue k+1) from its site and rotation into the system arrays. */
static void place_molecule(const mol_template *t, int k, const double site[3], double R[3][3],
                           hx_system *sys)
{
    int a0 = k * t->natoms;
    sys->mol_start[k] = a0;
    for (int i = 0; i < t->natoms; i++) {
        int a = a0 + i;
        double *x = &sys->x[3 * (size_t)a];
        for (int d = 0; d < 3; d++) {
            double r = t->rotate
                           ? R[d][0] * t->xb[i][0] + R[d][1] * t->xb[i][1] + R[d][2] * t->xb[i][2]
                           : 0.0;
            x[d] = site[d] + r;
        }
        /* Residue numbers wrap like the .gro column, so a written and re-read system is equal. */
        sys->res_id[a] = (k + 1) % 100000;
        strncpy(sys->res_name[a], t->res_name, HX_NAME_LEN - 1);
        strncpy(sys->atom_name[a], t->atom_name[i], HX_NAME_LEN - 1);
    }
}

/* Build nmol copies of template t on a lattice in a cube of edge L. min_dist: the smallest
 * allowed distance between the molecules' first atoms. */
static hx_status build_on_lattice(const mol_template *t, int64_t nmol, double L, uint64_t seed,
                                  double min_dist, const char *what, hx_system **out)
{
    lattice lat;
    choose_lattice(nmol, L, &lat);
    HX_CHECK(lat.nn >= min_dist, HX_ERR_INVALID_ARG,
             "cannot place %lld %s in a %.4g nm box with %s-%s distances of at least %.2f nm (the "
             "best lattice, %s, gives %.4f nm); give more atoms or a larger box",
             (long long)nmol, what, L, t->atom_name[0], t->atom_name[0], min_dist, lat.kind,
             lat.nn);
    hx_system *sys = NULL;
    HX_TRY(hx_system_create((int)(nmol * t->natoms), (int)nmol, &sys));
    /* Guard against a create that reports success without a system (seen during development:
     * a clear error beats a crash in every caller). */
    HX_CHECK(sys, HX_ERR_INTERNAL,
             "hx_system_create returned HX_OK but no system (src/core/system.c must store *out)");
    sys->box[0] = sys->box[1] = sys->box[2] = L;
    hx_rng rng;
    hx_rng_seed(&rng, seed, 0);
    /* Selection sampling (Knuth's algorithm S): site s is taken with probability
     * need / (sites left), which yields a uniformly random nmol-subset in one pass. */
    int64_t need = nmol;
    int k = 0;
    double R[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    for (int64_t s = 0; s < lat.nsites && need > 0; s++) {
        if (hx_rng_uniform(&rng) * (double)(lat.nsites - s) >= (double)need)
            continue;
        double site[3];
        lattice_site(&lat, s, site);
        if (t->rotate)
            random_rotation(&rng, R);
        place_molecule(t, k++, site, R, sys);
        need--;
    }
    if (need != 0) {
        hx_system_destroy(&sys);
        HX_FAIL(HX_ERR_INTERNAL, "lattice selection placed %d of %lld molecules", k,
                (long long)nmol);
    }
    sys->mol_start[nmol] = (int)(nmol * t->natoms);
    double dmin = 0;
    /* Verify with a cut-off of the minimum itself: only violations matter here, and small
     * cells make this cheap (under a second for 10 million molecules). */
    hx_status st = hx_build_min_distance(sys, t->atom_name[0], min_dist, &dmin);
    if (st != HX_OK) {
        hx_system_destroy(&sys);
        return hx_error_trace(st, __FILE__, __LINE__, "hx_build_min_distance");
    }
    if (dmin < min_dist * (1 - 1e-12)) {
        hx_system_destroy(&sys);
        HX_FAIL(HX_ERR_INTERNAL, "built %s have a %s-%s distance of %.4f nm < %.2f nm", what,
                t->atom_name[0], t->atom_name[0], dmin, min_dist);
    }
    hx_log(HX_LOG_DEBUG, "built %lld %s on a %s lattice (%d^3 cells, %lld sites, %.4f nm apart)",
           (long long)nmol, what, lat.kind, lat.n, (long long)lat.nsites, lat.nn);
    *out = sys;
    return HX_OK;
}

/* Number of molecules and box edge from the caller's natoms (atoms per molecule apm) or box. */
static hx_status size_system(int natoms, double box_nm, int apm, double number_density,
                             int64_t *nmol, double *L)
{
    HX_CHECK(natoms >= 0, HX_ERR_INVALID_ARG, "number of atoms %d is negative", natoms);
    HX_CHECK(isfinite(box_nm) && box_nm >= 0, HX_ERR_INVALID_ARG,
             "box edge %g nm is not usable; give a positive edge or 0 to derive it from natoms",
             box_nm);
    HX_CHECK(natoms > 0 || box_nm > 0, HX_ERR_INVALID_ARG,
             "give the number of atoms (> 0) or the box edge (> 0 nm)");
    if (natoms > 0) {
        /* nearest whole number of molecules, at least one */
        *nmol = ((int64_t)natoms + apm / 2) / apm;
        if (*nmol < 1)
            *nmol = 1;
        *L = box_nm > 0 ? box_nm : cbrt((double)*nmol / number_density);
    } else {
        double n = number_density * box_nm * box_nm * box_nm;
        HX_CHECK(n < (double)BUILD_MAX_MOL * 3 / apm, HX_ERR_INVALID_ARG,
                 "a %g nm box holds %.3g molecules; halox supports up to %d atoms", box_nm, n,
                 0x7fffffff / 3);
        *nmol = llround(n);
        HX_CHECK(*nmol >= 1, HX_ERR_INVALID_ARG,
                 "a %g nm box holds less than one molecule at the model's density; give a "
                 "larger box",
                 box_nm);
        *L = box_nm;
    }
    HX_CHECK(*nmol * apm <= BUILD_MAX_MOL, HX_ERR_INVALID_ARG,
             "%lld atoms are more than halox supports (%d)", (long long)(*nmol * apm),
             BUILD_MAX_MOL);
    return HX_OK;
}

hx_status hx_build_water_lattice(const char *model, int natoms, double box_nm, uint64_t seed,
                                 hx_system **out)
{
    HX_CHECK(out, HX_ERR_INVALID_ARG, "hx_build_water_lattice: out is NULL");
    *out = NULL;
    const hx_water_model *m = NULL;
    HX_TRY(hx_water_model_find(model ? model : "(null)", &m));
    int64_t nmol = 0;
    double L = 0;
    HX_TRY(size_system(natoms, box_nm, 3, hx_water_number_density(m), &nmol, &L));
    /* Body frame: O at the origin, the H atoms in the xy plane symmetric about y, at exactly
     * the model's r_OH from O and r_HH from each other (SETTLE keeps these). */
    double h = sqrt(m->r_oh * m->r_oh - 0.25 * m->r_hh * m->r_hh);
    mol_template t = {3,
                      "SOL",
                      {"OW", "HW1", "HW2"},
                      {{0, 0, 0}, {0.5 * m->r_hh, h, 0}, {-0.5 * m->r_hh, h, 0}},
                      1};
    HX_TRY(build_on_lattice(&t, nmol, L, seed, 0.23, "water molecules", out));
    snprintf((*out)->title, sizeof(*out)->title, "halox water %s lattice %d atoms seed %llu",
             m->name, (*out)->natoms, (unsigned long long)seed);
    return HX_OK;
}

/* ---- tiling the equilibrated box ------------------------------------------------------- */

/* Tolerances of the tiler. A whole number of tiles joins seamlessly when the tiles are scaled
 * by at most TILE_MAX_STRETCH and at most TILE_MAX_VACANT of their molecules must be removed
 * (each removed molecule takes its share of H-bonds with it: removing a fraction f of the
 * molecules raises the potential energy by about f * 41 kJ/mol per molecule, which MD turns into
 * roughly f * 1600 K; 2 % is about 30 K). Otherwise a cube is cut from the periodic liquid and
 * the molecules that meet across the cut faces too closely are removed (SEAM_*). */
#define TILE_MAX_STRETCH 0.01
#define TILE_MAX_VACANT 0.02
#define SEAM_OO 0.25    /* O-O closer than this across a cut face: a clash (nm) */
#define SEAM_OH 0.15    /* O-H: closer than an H-bond gets in the liquid */
#define SEAM_HH 0.17    /* H-H */
#define SEAM_REACH 0.45 /* SEAM_OO + 2 * r_OH rounded up: O-O of any possible clash */

typedef struct tile_src {
    int nb;      /* molecules of the equilibrated box */
    double lb;   /* its edge, nm */
    double *o;   /* 3 * nb: O positions in [0, lb), after the seed's symmetry and shift */
    double *off; /* 6 * nb: H1 and H2 minus O, the model's exact geometry, same symmetry */
} tile_src;

static void tile_src_free(tile_src *t)
{
    free(t->o), free(t->off);
    t->o = t->off = NULL;
}

/* The equilibrated box of model m with one of the 48 symmetries of the cube (axis permutation
 * and signs) and a random periodic shift: both keep it an equilibrium periodic liquid, and they
 * make boxes of different seeds differ even when the requested size is exactly one tile. Each
 * molecule is rebuilt rigidly with the model's exact r_OH and r_HH (the .gro keeps 0.001 nm)
 * from its O position and the orientation of its H-O-H plane. */
static hx_status tile_src_init(const hx_water_box *wb, const hx_water_model *m, hx_rng *rng,
                               tile_src *t)
{
    HX_CHECK(wb->box[0] == wb->box[1] && wb->box[1] == wb->box[2] && wb->nmol > 0, HX_ERR_INTERNAL,
             "embedded water box of %s is not cubic (check data/water_%s.gro)", wb->model,
             wb->model);
    t->nb = wb->nmol;
    t->lb = wb->box[0] * 1e-5;
    t->o = malloc(3 * (size_t)t->nb * sizeof *t->o);
    t->off = malloc(6 * (size_t)t->nb * sizeof *t->off);
    if (!t->o || !t->off) {
        tile_src_free(t);
        HX_FAIL(HX_ERR_NOMEM, "out of memory for %d template molecules", t->nb);
    }
    static const int perms[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                    {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    int g = (int)(hx_rng_next(rng) % 48);
    const int *perm = perms[g % 6];
    double sign[3] = {g & 8 ? -1.0 : 1.0, g & 16 ? -1.0 : 1.0, g & 32 ? -1.0 : 1.0};
    double shift[3];
    for (int d = 0; d < 3; d++)
        shift[d] = hx_rng_uniform(rng) * t->lb;
    double h = sqrt(m->r_oh * m->r_oh - 0.25 * m->r_hh * m->r_hh);
    for (int k = 0; k < t->nb; k++) {
        const int32_t *x = &wb->x[9 * (size_t)k];
        double o[3], d1[3], d2[3], e1[3], e2[3], n1 = 0, n2 = 0, dot = 0;
        for (int d = 0; d < 3; d++) {
            o[d] = x[d] * 1e-3;
            d1[d] = (x[3 + d] - x[d]) * 1e-3;
            d2[d] = (x[6 + d] - x[d]) * 1e-3;
            /* molecules may be split over the boundary in the file */
            d1[d] -= t->lb * nearbyint(d1[d] / t->lb);
            d2[d] -= t->lb * nearbyint(d2[d] / t->lb);
            e1[d] = d1[d] + d2[d]; /* along the bisector */
            e2[d] = d1[d] - d2[d]; /* H2 -> H1 */
            n1 += e1[d] * e1[d];
        }
        n1 = sqrt(n1);
        for (int d = 0; d < 3; d++) {
            e1[d] /= n1;
            dot += e2[d] * e1[d];
        }
        for (int d = 0; d < 3; d++) {
            e2[d] -= dot * e1[d];
            n2 += e2[d] * e2[d];
        }
        n2 = sqrt(n2);
        HX_CHECK(n1 > 0.05 && n2 > 0.05, HX_ERR_INTERNAL,
                 "embedded %s box: molecule %d is not a water (check data/water_%s.gro)", wb->model,
                 k + 1, wb->model);
        for (int d = 0; d < 3; d++) {
            int sd = perm[d];
            double od = sign[d] * o[sd] + shift[d];
            t->o[3 * k + d] = od - t->lb * floor(od / t->lb);
            if (t->o[3 * k + d] >= t->lb) /* rounding of a tiny negative */
                t->o[3 * k + d] = 0.0;
            double a = sign[d] * e1[sd], b = sign[d] * e2[sd] / n2;
            t->off[6 * k + d] = h * a + 0.5 * m->r_hh * b;
            t->off[6 * k + 3 + d] = h * a - 0.5 * m->r_hh * b;
        }
    }
    return HX_OK;
}

/* The periodic liquid of tiles nt^3, cut to the cube [0, lc)^3 (lc <= nt * lb) and scaled by
 * sc. Molecule e = tile * nb + k; state[e]: 0 outside the cut, 1 kept, 2 removed. */
typedef struct tiling {
    const tile_src *src;
    int nt;
    double lc, sc, L;
    int64_t ne;
    unsigned char *state;
    int64_t *slot; /* per molecule: its row of roff, or -1 (NULL: none turned) */
    double *roff;  /* H offsets of the molecules at the cut faces, possibly turned */
} tiling;

static void tiling_pos(const tiling *tl, int64_t e, double x[3])
{
    int64_t tile = e / tl->src->nb;
    int k = (int)(e % tl->src->nb);
    int64_t t3[3] = {tile % tl->nt, tile / tl->nt % tl->nt, tile / ((int64_t)tl->nt * tl->nt)};
    for (int d = 0; d < 3; d++)
        x[d] = tl->src->o[3 * k + d] + (double)t3[d] * tl->src->lb;
}

/* Whether molecules a (O at xa, H offsets oa) and b clash: an O-O, O-H or H-H distance below
 * SEAM_*. With only_wrap, only when their nearest images are joined across the boundary, where
 * the liquid on the two sides of a cut face was never in contact. */
static int clash(double L, const double xa[3], const double *oa, const double xb[3],
                 const double *ob, int only_wrap)
{
    double dr[3];
    int wraps = 0;
    for (int d = 0; d < 3; d++) {
        double dx = xb[d] - xa[d];
        double w = L * nearbyint(dx / L);
        wraps |= w != 0.0;
        dr[d] = dx - w;
    }
    if (only_wrap && !wraps)
        return 0;
    if (dr[0] * dr[0] + dr[1] * dr[1] + dr[2] * dr[2] >= SEAM_REACH * SEAM_REACH)
        return 0;
    static const double zero[3] = {0, 0, 0};
    const double *pa[3] = {zero, oa, oa + 3}, *pb[3] = {zero, ob, ob + 3};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            double r2 = 0;
            for (int d = 0; d < 3; d++) {
                double v = dr[d] + pb[j][d] - pa[i][d];
                r2 += v * v;
            }
            double lim = i == 0 && j == 0 ? SEAM_OO : (i == 0 || j == 0) ? SEAM_OH : SEAM_HH;
            if (r2 < lim * lim)
                return 1 + (i == 0 && j == 0);
        }
    return 0;
}

/* Cell index of x along each axis for nc cells in the box. */
static void cell_of(const double x[3], double L, int nc, int ci[3])
{
    for (int d = 0; d < 3; d++) {
        int v = (int)(x[d] / L * nc);
        ci[d] = v < 0 ? 0 : v >= nc ? nc - 1 : v;
    }
}

/* Mark the cut cube's molecules and repair the cut faces: a molecule within SEAM_REACH of a
 * face that clashes with one from the other side is turned to a random orientation that clashes
 * with none of its neighbours (first of up to 64 tries), and removed when none does or its O is
 * too close. Turning instead of removing keeps the count, so the cube needs almost no
 * compression afterwards (compression is what costs energy: 3 % shortens every contact). The
 * molecules within 2 SEAM_REACH of a face go into a cell list, so the turned ones are checked
 * against all their neighbours. */
static hx_status tiling_cut(tiling *tl, hx_rng *rng, int64_t *kept)
{
    int64_t nk = 0, ncand = 0;
    double x[3];
    const double reach = 2 * SEAM_REACH;
    const int seam = tl->lc < tl->nt * tl->src->lb * (1 - 1e-12);
    for (int64_t e = 0; e < tl->ne; e++) {
        tiling_pos(tl, e, x);
        int in = x[0] < tl->lc && x[1] < tl->lc && x[2] < tl->lc;
        tl->state[e] = (unsigned char)in;
        nk += in;
        if (in && seam)
            for (int d = 0; d < 3; d++)
                if (x[d] * tl->sc < reach || x[d] * tl->sc >= tl->L - reach) {
                    ncand++;
                    break;
                }
    }
    *kept = nk;
    if (!seam || ncand == 0)
        return HX_OK;
    int nc = (int)fmin(floor(tl->L / SEAM_REACH), 1024.0);
    /* cells only for the candidates, which are few (a shell of the box): coarsen */
    while (nc > 3 && (double)nc * nc * nc > 4.0 * (double)ncand + 64)
        nc = nc * 3 / 4 < 3 ? 3 : nc * 3 / 4;
    if (nc < 3)
        nc = 1; /* a box of a few nm: one cell, every pair */
    size_t ncell = (size_t)nc * nc * nc;
    int64_t *cand = malloc((size_t)ncand * sizeof *cand);
    double *cx = malloc(3 * (size_t)ncand * sizeof *cx);
    int64_t *head = malloc(ncell * sizeof *head), *next = malloc((size_t)ncand * sizeof *next);
    tl->roff = malloc(6 * (size_t)ncand * sizeof *tl->roff);
    tl->slot = malloc((size_t)tl->ne * sizeof *tl->slot);
    if (!cand || !cx || !head || !next || !tl->roff || !tl->slot) {
        free(cand), free(cx), free(head), free(next);
        HX_FAIL(HX_ERR_NOMEM, "out of memory for %lld molecules at the cut faces",
                (long long)ncand);
    }
    int64_t c = 0;
    for (int64_t e = 0; e < tl->ne; e++) {
        tl->slot[e] = -1;
        if (tl->state[e] != 1)
            continue;
        tiling_pos(tl, e, x);
        int near = 0;
        for (int d = 0; d < 3; d++) {
            x[d] *= tl->sc;
            near |= x[d] < reach || x[d] >= tl->L - reach;
        }
        if (near) {
            cand[c] = e;
            tl->slot[e] = c;
            memcpy(&cx[3 * c], x, sizeof x);
            memcpy(&tl->roff[6 * c], &tl->src->off[6 * (e % tl->src->nb)], 6 * sizeof(double));
            c++;
        }
    }
    for (size_t q = 0; q < ncell; q++)
        head[q] = -1;
    for (int64_t i = ncand - 1; i >= 0; i--) {
        int ci[3];
        cell_of(&cx[3 * i], tl->L, nc, ci);
        size_t q = ((size_t)ci[2] * nc + ci[1]) * nc + ci[0];
        next[i] = head[q];
        head[q] = i;
    }
    int64_t removed = 0, turned = 0;
    const int span = nc >= 3 ? 1 : 0;
    for (int64_t i = 0; i < ncand; i++) {
        const double *xi = &cx[3 * i];
        int face = 0;
        for (int d = 0; d < 3; d++)
            face |= xi[d] < SEAM_REACH || xi[d] >= tl->L - SEAM_REACH;
        if (!face)
            continue;
        int ci[3];
        cell_of(xi, tl->L, nc, ci);
        /* try = 0: the molecule as it is, against the far side only; then random turns,
         * against every neighbour */
        for (int attempt = 0; attempt <= 64; attempt++) {
            double *oi = &tl->roff[6 * i];
            if (attempt > 0) {
                double R[3][3];
                random_rotation(rng, R);
                const double *o0 = &tl->src->off[6 * (cand[i] % tl->src->nb)];
                for (int h = 0; h < 2; h++)
                    for (int d = 0; d < 3; d++)
                        oi[3 * h + d] =
                            R[d][0] * o0[3 * h] + R[d][1] * o0[3 * h + 1] + R[d][2] * o0[3 * h + 2];
            }
            int bad = 0;
            for (int dz = -span; dz <= span && bad < 2; dz++)
                for (int dy = -span; dy <= span && bad < 2; dy++)
                    for (int dx = -span; dx <= span && bad < 2; dx++) {
                        size_t q = ((size_t)((ci[2] + dz + nc) % nc) * nc +
                                    (size_t)((ci[1] + dy + nc) % nc)) *
                                       nc +
                                   (size_t)((ci[0] + dx + nc) % nc);
                        for (int64_t j = head[q]; j >= 0 && bad < 2; j = next[j])
                            if (j != i && tl->state[cand[j]] == 1) {
                                int cl = clash(tl->L, xi, oi, &cx[3 * j], &tl->roff[6 * j],
                                               attempt == 0);
                                bad = cl > bad ? cl : bad;
                            }
                    }
            if (bad == 0) {
                turned += attempt > 0;
                break;
            }
            if (bad == 2 || attempt == 64) { /* O-O: turning cannot help */
                tl->state[cand[i]] = 2;
                removed++;
                break;
            }
        }
    }
    free(cand), free(cx), free(head), free(next);
    *kept = nk - removed;
    hx_log(HX_LOG_DEBUG,
           "cut %.4f nm from %d^3 tiles: %lld molecules, %lld near the faces, %lld turned and "
           "%lld removed for clashes across them",
           tl->lc, tl->nt, (long long)nk, (long long)ncand, (long long)turned, (long long)removed);
    return HX_OK;
}

/* nmol molecules of the tiled equilibrated box in a cube of edge L (see the file comment). */
static hx_status build_tiled(const hx_water_box *wb, const hx_water_model *m, int64_t nmol,
                             double L, uint64_t seed, hx_system **out)
{
    hx_rng rng;
    hx_rng_seed(&rng, seed, 0);
    tile_src src = {0};
    HX_TRY(tile_src_init(wb, m, &rng, &src));
    hx_status st = HX_OK;
    hx_system *sys = NULL;
    tiling tl = {&src, 1, 0, 1, L, 0, NULL, NULL, NULL};
    double rho_b = src.nb / (src.lb * src.lb * src.lb);
    int64_t kept = 0;
    /* Seamless: a whole number of tiles, scaled by a factor close to 1. */
    int n = (int)fmax(1.0, nearbyint(L / src.lb));
    double s = L / (n * src.lb);
    int64_t m_all = (int64_t)n * n * n * src.nb;
    const char *how = "seamless";
    if (nmol <= m_all && 1.0 - (double)nmol / (double)m_all <= TILE_MAX_VACANT &&
        fabs(s - 1) <= TILE_MAX_STRETCH) {
        tl.nt = n, tl.lc = n * src.lb, tl.sc = s, tl.ne = m_all;
        tl.state = malloc((size_t)tl.ne);
        if (!tl.state)
            HX_FAIL_GOTO(st, HX_ERR_NOMEM, done, "out of memory for %lld molecules",
                         (long long)tl.ne);
        HX_TRY_GOTO(st, tiling_cut(&tl, &rng, &kept), done);
    } else {
        /* Cut a cube from the periodic liquid. Its edge lc holds the molecules needed plus a few
         * for the face clashes and the fluctuation of the count; the cube is then scaled to L
         * (a compression of a few 0.1 % at most). Too few after the clashes: a larger cut. */
        how = "cut";
        double extra = fmax(4.0, 0.002 * (double)nmol);
        for (int attempt = 0; attempt < 8; attempt++) {
            double want = ((double)nmol + extra) / rho_b;
            tl.lc = fmax(L, cbrt(want));
            tl.sc = L / tl.lc;
            /* Small boxes are mostly faces: too many clashes to make up by compression
             * without O-O contacts under 0.23 nm. The caller falls back to the lattice. */
            if (tl.sc < 0.96)
                HX_FAIL_GOTO(st, HX_ERR_UNSUPPORTED, done,
                             "a cut of the equilibrated box for %lld molecules would need a "
                             "compression by %.3f",
                             (long long)nmol, tl.sc);
            tl.nt = (int)ceil(tl.lc / src.lb * (1 - 1e-12));
            tl.ne = (int64_t)tl.nt * tl.nt * tl.nt * src.nb;
            free(tl.state), free(tl.slot), free(tl.roff);
            tl.slot = NULL, tl.roff = NULL;
            tl.state = malloc((size_t)tl.ne);
            if (!tl.state)
                HX_FAIL_GOTO(st, HX_ERR_NOMEM, done, "out of memory for %lld molecules",
                             (long long)tl.ne);
            HX_TRY_GOTO(st, tiling_cut(&tl, &rng, &kept), done);
            if (kept >= nmol)
                break;
            extra += 1.2 * (double)(nmol - kept) + 4.0;
        }
        if (kept < nmol)
            HX_FAIL_GOTO(st, HX_ERR_INTERNAL, done,
                         "cut of the equilibrated box holds %lld of %lld molecules",
                         (long long)kept, (long long)nmol);
    }
    HX_TRY_GOTO(st, hx_system_create((int)(nmol * 3), (int)nmol, &sys), done);
    if (!sys)
        HX_FAIL_GOTO(st, HX_ERR_INTERNAL, done, "hx_system_create returned HX_OK but no system");
    sys->box[0] = sys->box[1] = sys->box[2] = L;
    /* Selection sampling again: a uniformly random nmol-subset of the kept molecules. */
    int64_t need = nmol, left = kept;
    int k = 0;
    static const char *names[3] = {"OW", "HW1", "HW2"};
    for (int64_t e = 0; e < tl.ne && need > 0; e++) {
        if (tl.state[e] != 1)
            continue;
        if (hx_rng_uniform(&rng) * (double)left-- >= (double)need)
            continue;
        double x[3];
        tiling_pos(&tl, e, x);
        const double *off =
            tl.slot && tl.slot[e] >= 0 ? &tl.roff[6 * tl.slot[e]] : &src.off[6 * (e % src.nb)];
        int a0 = 3 * k;
        sys->mol_start[k] = a0;
        for (int d = 0; d < 3; d++) {
            double o = x[d] * tl.sc;
            if (o >= L) /* rounding at the top face */
                o -= L;
            sys->x[3 * (size_t)a0 + d] = o;
            sys->x[3 * (size_t)a0 + 3 + d] = o + off[d];
            sys->x[3 * (size_t)a0 + 6 + d] = o + off[3 + d];
        }
        for (int i = 0; i < 3; i++) {
            sys->res_id[a0 + i] = (k + 1) % 100000;
            strncpy(sys->res_name[a0 + i], "SOL", HX_NAME_LEN - 1);
            strncpy(sys->atom_name[a0 + i], names[i], HX_NAME_LEN - 1);
        }
        k++;
        need--;
    }
    if (need != 0)
        HX_FAIL_GOTO(st, HX_ERR_INTERNAL, done, "tiling placed %d of %lld molecules", k,
                     (long long)nmol);
    sys->mol_start[nmol] = (int)(3 * nmol);
    double dmin = 0;
    HX_TRY_GOTO(st, hx_build_min_distance(sys, "OW", 0.23, &dmin), done);
    if (dmin < 0.23)
        HX_FAIL_GOTO(st, HX_ERR_INTERNAL, done,
                     "tiled water has an O-O distance of %.4f nm < 0.23 nm (%s, %d tiles, scale "
                     "%.4f)",
                     dmin, how, tl.nt, tl.sc);
    hx_log(HX_LOG_DEBUG,
           "water %s: %lld molecules, %s tiling of the %d-molecule box: %d^3 tiles, scale %.5f, "
           "%lld of %lld molecules removed at random",
           m->name, (long long)nmol, how, src.nb, tl.nt, tl.sc, (long long)(kept - nmol),
           (long long)kept);
    *out = sys;
    sys = NULL;
done:
    hx_system_destroy(&sys);
    free(tl.state), free(tl.slot), free(tl.roff);
    tile_src_free(&src);
    return st;
}

hx_status hx_build_water(const char *model, int natoms, double box_nm, uint64_t seed,
                         hx_system **out)
{
    HX_CHECK(out, HX_ERR_INVALID_ARG, "hx_build_water: out is NULL");
    *out = NULL;
    const hx_water_model *m = NULL;
    HX_TRY(hx_water_model_find(model ? model : "(null)", &m));
    int64_t nmol = 0;
    double L = 0;
    HX_TRY(size_system(natoms, box_nm, 3, hx_water_number_density(m), &nmol, &L));
    const hx_water_box *wb = NULL;
    for (const hx_water_box *b = hx_water_boxes; b->model; b++)
        if (strcmp(b->model, m->name) == 0)
            wb = b;
    double rho = (double)nmol / (L * L * L);
    if (!wb || rho > 1.01 * hx_water_number_density(m)) {
        /* A liquid cannot be compressed much by scaling: denser than the model's liquid (both
         * --atoms and --box given) is only possible on a lattice. */
        hx_log(HX_LOG_WARN,
               "water %s: %s; using the lattice builder (not relaxed: start MD with a thermostat "
               "and a small time step)",
               m->name,
               wb ? "the requested density is above the model's" : "no equilibrated box embedded");
        return hx_build_water_lattice(model, natoms, box_nm, seed, out);
    }
    hx_status st = build_tiled(wb, m, nmol, L, seed, out);
    if (st == HX_ERR_UNSUPPORTED) {
        hx_log(HX_LOG_WARN,
               "water %s, %lld molecules: %s; using the lattice builder (not relaxed: start MD "
               "with a thermostat and a small time step)",
               m->name, (long long)nmol, hx_last_error_message());
        return hx_build_water_lattice(model, natoms, box_nm, seed, out);
    }
    if (st != HX_OK)
        return hx_error_trace(st, __FILE__, __LINE__, "build_tiled");
    snprintf((*out)->title, sizeof(*out)->title, "halox water %s %d atoms seed %llu", m->name,
             (*out)->natoms, (unsigned long long)seed);
    return HX_OK;
}

hx_status hx_build_argon(int natoms, double box_nm, uint64_t seed, hx_system **out)
{
    HX_CHECK(out, HX_ERR_INVALID_ARG, "hx_build_argon: out is NULL");
    *out = NULL;
    const hx_lj_model *m = hx_argon_model();
    int64_t nmol = 0;
    double L = 0;
    HX_TRY(size_system(natoms, box_nm, 1, m->number_density, &nmol, &L));
    mol_template t = {1, "AR", {"AR", NULL, NULL}, {{0, 0, 0}}, 0};
    HX_TRY(build_on_lattice(&t, nmol, L, seed, 0.3, "argon atoms", out));
    snprintf((*out)->title, sizeof(*out)->title, "halox argon %d atoms seed %llu", (*out)->natoms,
             (unsigned long long)seed);
    return HX_OK;
}

/* ---- minimum distance with a cell list -------------------------------------------------- */

static double pair_dist2(const double *a, const double *b, const double box[3])
{
    double r2 = 0;
    for (int d = 0; d < 3; d++) {
        double dx = fabs(a[d] - b[d]);
        /* coordinates in the box or near it: at most a few box lengths apart */
        if (dx > 0.5 * box[d])
            dx -= box[d] * nearbyint(dx / box[d]);
        r2 += dx * dx;
    }
    return r2;
}

hx_status hx_build_min_distance(const hx_system *sys, const char *atom_name, double cutoff,
                                double *out_min)
{
    HX_CHECK(sys && out_min, HX_ERR_INVALID_ARG, "hx_build_min_distance: NULL argument");
    HX_CHECK(cutoff > 0 && isfinite(cutoff), HX_ERR_INVALID_ARG,
             "hx_build_min_distance: cut-off %g must be positive", cutoff);
    for (int d = 0; d < 3; d++)
        HX_CHECK(sys->box[d] > 0 && isfinite(sys->box[d]), HX_ERR_INVALID_ARG,
                 "hx_build_min_distance: box edge %c is %g", "xyz"[d], sys -> box[d]);
    double best2 = cutoff * cutoff;
    /* An atom is at distance box[d] from its own image. */
    for (int d = 0; d < 3; d++)
        best2 = fmin(best2, sys->box[d] * sys->box[d]);
    int nsel = 0;
    for (int i = 0; i < sys->natoms; i++)
        if (!atom_name || strcmp(sys->atom_name[i], atom_name) == 0)
            nsel++;
    int *sel = malloc(((size_t)nsel + 1) * sizeof *sel);
    HX_CHECK(sel, HX_ERR_NOMEM, "out of memory for %d atoms", nsel);
    nsel = 0;
    for (int i = 0; i < sys->natoms; i++)
        if (!atom_name || strcmp(sys->atom_name[i], atom_name) == 0)
            sel[nsel++] = i;
    int nc[3];
    for (int d = 0; d < 3; d++) {
        double c = floor(sys->box[d] / cutoff);
        nc[d] = c > 4096 ? 4096 : (int)c;
    }
    /* A sparse selection in a big box would need more cells than atoms: coarsen (larger cells
     * only cost pair tests, they never miss a pair). */
    while ((size_t)nc[0] * (size_t)nc[1] * (size_t)nc[2] > 2 * (size_t)nsel + 64) {
        int d = nc[0] >= nc[1] && nc[0] >= nc[2] ? 0 : nc[1] >= nc[2] ? 1 : 2;
        if (nc[d] <= 3)
            break;
        nc[d] = nc[d] * 3 / 4 < 3 ? 3 : nc[d] * 3 / 4;
    }
    if (nc[0] < 3 || nc[1] < 3 || nc[2] < 3) {
        /* Box too small for distinct neighbour cells: all pairs (few atoms fit in such a box). */
        for (int i = 0; i < nsel; i++)
            for (int j = i + 1; j < nsel; j++)
                best2 = fmin(best2, pair_dist2(&sys->x[3 * (size_t)sel[i]],
                                               &sys->x[3 * (size_t)sel[j]], sys->box));
        free(sel);
        *out_min = sqrt(best2);
        return HX_OK;
    }
    size_t ncell = (size_t)nc[0] * (size_t)nc[1] * (size_t)nc[2];
    int *head = malloc(ncell * sizeof *head);
    int *next = malloc(((size_t)nsel + 1) * sizeof *next);
    if (!head || !next) {
        free(head), free(next), free(sel);
        HX_FAIL(HX_ERR_NOMEM, "out of memory for a cell list of %zu cells", ncell);
    }
    for (size_t c = 0; c < ncell; c++)
        head[c] = -1;
    for (int i = 0; i < nsel; i++) {
        const double *x = &sys->x[3 * (size_t)sel[i]];
        int ci[3];
        for (int d = 0; d < 3; d++) {
            double f = x[d] / sys->box[d];
            f -= floor(f);
            int c = (int)(f * nc[d]);
            ci[d] = c < 0 ? 0 : c >= nc[d] ? nc[d] - 1 : c;
        }
        int c = (ci[2] * nc[1] + ci[1]) * nc[0] + ci[0];
        next[i] = head[c];
        head[c] = i;
    }
    /* Half shell: pairs inside a cell, then with 13 of the 26 neighbour cells, so that every
     * pair of cells is visited once (nc >= 3 makes the neighbours distinct). */
    static const int half[13][3] = {{1, 0, 0},  {-1, 1, 0}, {0, 1, 0},  {1, 1, 0}, {-1, -1, 1},
                                    {0, -1, 1}, {1, -1, 1}, {-1, 0, 1}, {0, 0, 1}, {1, 0, 1},
                                    {-1, 1, 1}, {0, 1, 1},  {1, 1, 1}};
    for (int cz = 0; cz < nc[2]; cz++)
        for (int cy = 0; cy < nc[1]; cy++)
            for (int cx = 0; cx < nc[0]; cx++) {
                int c = (cz * nc[1] + cy) * nc[0] + cx;
                for (int i = head[c]; i >= 0; i = next[i]) {
                    const double *xi = &sys->x[3 * (size_t)sel[i]];
                    for (int j = next[i]; j >= 0; j = next[j])
                        best2 = fmin(best2, pair_dist2(xi, &sys->x[3 * (size_t)sel[j]], sys->box));
                    for (int h = 0; h < 13; h++) {
                        int nx = (cx + half[h][0] + nc[0]) % nc[0];
                        int ny = (cy + half[h][1] + nc[1]) % nc[1];
                        int nz = (cz + half[h][2] + nc[2]) % nc[2];
                        for (int j = head[(nz * nc[1] + ny) * nc[0] + nx]; j >= 0; j = next[j])
                            best2 =
                                fmin(best2, pair_dist2(xi, &sys->x[3 * (size_t)sel[j]], sys->box));
                    }
                }
            }
    free(head), free(next), free(sel);
    *out_min = sqrt(best2);
    return HX_OK;
}
