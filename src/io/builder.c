/* System builders: liquid water and argon boxes of any size, in O(N) time and memory.
 *
 * Method: the cubic box is filled with a periodic lattice (simple cubic, bcc or fcc; whichever
 * keeps the nearest-neighbour distance largest for the number of molecules) whose sites number
 * at least the molecules. A random subset of exactly nmol sites is taken with selection sampling
 * (one pass over the sites, no site array), so the density is exact overall and the vacancies
 * are spread uniformly. Each molecule's first atom (O or Ar) sits on its site and the molecule
 * is turned by a uniformly random rotation. Because the lattice is periodic in the box, the
 * smallest O-O distance, across the boundaries too, is the lattice's nearest-neighbour distance,
 * which is checked against the minimum before building and verified afterwards with a cell list.
 *
 * The placement is split into a source of (site, orientation) and a molecule template, so that
 * another source (tiling an equilibrated box, say) can be added next to the lattice without
 * touching the template or the system assembly. */
#include "halox/io.h"
#include "halox/log.h"
#include "halox/models.h"
#include "core/error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BUILD_MAX_MOL (0x7fffffff / 3)

/* ---- random numbers: splitmix64-seeded xoshiro256**, identical on every platform -------- */

typedef struct build_rng {
    uint64_t s[4];
} build_rng;

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void rng_seed(build_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

static uint64_t rotl64(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(build_rng *r)
{
    uint64_t *s = r->s;
    uint64_t out = rotl64(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl64(s[3], 45);
    return out;
}

static double rng_uniform(build_rng *r) /* [0, 1) */
{
    return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

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
static void random_rotation(build_rng *r, double R[3][3])
{
    double u1 = rng_uniform(r), u2 = rng_uniform(r), u3 = rng_uniform(r);
    double s1 = sqrt(1.0 - u1), s2 = sqrt(u1);
    double w = s1 * sin(2 * M_PI * u2), x = s1 * cos(2 * M_PI * u2);
    double y = s2 * sin(2 * M_PI * u3), z = s2 * cos(2 * M_PI * u3);
    double n = 1.0 / sqrt(w * w + x * x + y * y + z * z);
    w *= n, x *= n, y *= n, z *= n;
    R[0][0] = 1 - 2 * (y * y + z * z);
    R[0][1] = 2 * (x * y - w * z);
    R[0][2] = 2 * (x * z + w * y);
    R[1][0] = 2 * (x * y + w * z);
    R[1][1] = 1 - 2 * (x * x + z * z);
    R[1][2] = 2 * (y * z - w * x);
    R[2][0] = 2 * (x * z - w * y);
    R[2][1] = 2 * (y * z + w * x);
    R[2][2] = 1 - 2 * (x * x + y * y);
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
    build_rng rng;
    rng_seed(&rng, seed);
    /* Selection sampling (Knuth's algorithm S): site s is taken with probability
     * need / (sites left), which yields a uniformly random nmol-subset in one pass. */
    int64_t need = nmol;
    int k = 0;
    double R[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    for (int64_t s = 0; s < lat.nsites && need > 0; s++) {
        if (rng_uniform(&rng) * (double)(lat.nsites - s) >= (double)need)
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

hx_status hx_build_water(const char *model, int natoms, double box_nm, uint64_t seed,
                         hx_system **out)
{
    return hx_build_water_lattice(model, natoms, box_nm, seed, out);
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
