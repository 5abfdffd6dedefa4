/* Decomposition geometry: uniform cells, pulses per dimension, and the automatic grid choice.
 *
 * The number of pulses along a decomposed dimension d is the smallest np with
 * np * cell_size(d) >= r_comm: each pulse moves atoms one cell down, so np pulses reach atoms up
 * to np cells away. np(d) >= cells(d) would bring a domain its own atoms (periodic wrap), which
 * the eighth-shell scheme cannot represent: that is an error, as is a cut-off that is not shorter
 * than half the box (the minimum-image convention would become ambiguous). */
#include "halox/dd.h"
#include "core/error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct hx_dd {
    double box[3];
    int grid[3];
    double r_comm;
    double cutoff;
    double cell[3];
    int np[3];
    int ndim;
    int dims[3];
    int npulses;
};

static const char dim_name[3] = {'x', 'y', 'z'};

/* Validation shared by hx_dd_create and the grid search; fills dd on success. When quiet, no
 * error message is recorded (the grid search probes many grids). */
static hx_status dd_setup(const hx_dd_params *p, hx_dd *dd, int quiet)
{
#define DD_FAIL(st, ...)                                                                           \
    do {                                                                                           \
        if (quiet)                                                                                 \
            return (st);                                                                           \
        HX_FAIL((st), __VA_ARGS__);                                                                \
    } while (0)
    memset(dd, 0, sizeof *dd);
    for (int d = 0; d < 3; d++) {
        if (!(p->box[d] > 0.0) || !isfinite(p->box[d]))
            DD_FAIL(HX_ERR_INVALID_ARG,
                    "box edge along %c is %g nm: it must be positive and finite", dim_name[d],
                    p->box[d]);
        if (p->grid[d] < 1)
            DD_FAIL(HX_ERR_INVALID_ARG, "domain grid along %c is %d: it must be at least 1",
                    dim_name[d], p->grid[d]);
    }
    if (!(p->cutoff > 0.0) || !isfinite(p->cutoff))
        DD_FAIL(HX_ERR_INVALID_ARG, "cut-off is %g nm: it must be positive", p->cutoff);
    if (!(p->r_comm >= p->cutoff) || !isfinite(p->r_comm))
        DD_FAIL(HX_ERR_INVALID_ARG,
                "communication distance %g nm is shorter than the cut-off %g nm: it must be at "
                "least rlist (cut-off + buffer) plus the molecule radius",
                p->r_comm, p->cutoff);
    for (int d = 0; d < 3; d++) {
        if (p->cutoff >= 0.5 * p->box[d])
            DD_FAIL(HX_ERR_GEOMETRY,
                    "cut-off %g nm is not shorter than half the box along %c (%g nm): use a "
                    "cut-off below %g nm or a larger box",
                    p->cutoff, dim_name[d], p->box[d], 0.5 * p->box[d]);
    }
    int npulses = 0;
    for (int d = 0; d < 3; d++) {
        dd->box[d] = p->box[d];
        dd->grid[d] = p->grid[d];
        dd->cell[d] = p->box[d] / p->grid[d];
        if (p->grid[d] == 1)
            continue;
        int np = 1;
        while (np * dd->cell[d] < p->r_comm)
            np++;
        if (np >= p->grid[d]) {
            int max_cells = (int)floor(p->box[d] / p->r_comm);
            char fewer[64];
            if (max_cells > 1)
                snprintf(fewer, sizeof fewer, "use at most %d domains along %c", max_cells,
                         dim_name[d]);
            else
                snprintf(fewer, sizeof fewer, "do not divide %c (one domain along it)",
                         dim_name[d]);
            DD_FAIL(HX_ERR_GEOMETRY,
                    "cells along %c are too small: the communication distance %g nm needs %d "
                    "pulses of cell size %g nm, but there are only %d cells (pulses must be fewer "
                    "than cells); %s, or a shorter cut-off/rlist, or a larger box",
                    dim_name[d], p->r_comm, np, dd->cell[d], p->grid[d], fewer);
        }
        dd->np[d] = np;
        dd->dims[dd->ndim++] = d;
        npulses += np;
    }
    if (npulses > HX_MAX_PULSES)
        DD_FAIL(HX_ERR_GEOMETRY, "%d pulses needed, at most %d are supported: use fewer domains",
                npulses, HX_MAX_PULSES);
    dd->npulses = npulses;
    dd->r_comm = p->r_comm;
    dd->cutoff = p->cutoff;
    return HX_OK;
#undef DD_FAIL
}

hx_status hx_dd_create(const hx_dd_params *p, hx_dd **out)
{
    HX_CHECK(p && out, HX_ERR_INVALID_ARG, "hx_dd_create: NULL argument");
    *out = NULL;
    hx_dd *dd = malloc(sizeof *dd);
    HX_CHECK(dd, HX_ERR_NOMEM, "out of memory");
    hx_status st = dd_setup(p, dd, 0);
    if (st != HX_OK) {
        free(dd);
        return st;
    }
    *out = dd;
    return HX_OK;
}

void hx_dd_destroy(hx_dd **dd)
{
    if (dd) {
        free(*dd);
        *dd = NULL;
    }
}

/* Halo volume per domain of the eighth shell: the home cell grown by r_comm towards the upper
 * side along every decomposed dimension, minus the home cell. Corner rounding trims the corners;
 * the estimate ignores that, which only matters for ranking near-equal grids. */
static double halo_volume(const hx_dd *dd)
{
    double grown = 1.0, home = 1.0;
    for (int d = 0; d < 3; d++) {
        double c = dd->cell[d];
        home *= c;
        grown *= dd->grid[d] > 1 ? c + dd->r_comm : c;
    }
    return grown - home;
}

hx_status hx_dd_choose_grid(const double box[3], double r_comm, double cutoff, int ndomains,
                            int grid_out[3])
{
    HX_CHECK(box && grid_out, HX_ERR_INVALID_ARG, "hx_dd_choose_grid: NULL argument");
    HX_CHECK(ndomains >= 1, HX_ERR_INVALID_ARG, "number of domains is %d: it must be >= 1",
             ndomains);
    double best = INFINITY;
    int best_ndim = 4, found = 0;
    for (int nx = 1; nx <= ndomains; nx++) {
        if (ndomains % nx)
            continue;
        for (int ny = 1; ny <= ndomains / nx; ny++) {
            if ((ndomains / nx) % ny)
                continue;
            int nz = ndomains / nx / ny;
            hx_dd_params p = {{box[0], box[1], box[2]}, {nx, ny, nz}, r_comm, cutoff};
            hx_dd dd;
            if (dd_setup(&p, &dd, 1) != HX_OK)
                continue;
            double v = halo_volume(&dd);
            /* Prefer smaller halos; on (relative) ties fewer decomposed dimensions: fewer pulses
             * and fewer messages. Enumeration order makes x before y before z on full ties. */
            if (v < best * (1.0 - 1e-9) || (v <= best * (1.0 + 1e-9) && dd.ndim < best_ndim)) {
                best = v;
                best_ndim = dd.ndim;
                grid_out[0] = nx;
                grid_out[1] = ny;
                grid_out[2] = nz;
                found = 1;
            }
        }
    }
    if (!found) {
        /* Re-run the simplest candidate loudly so the user sees a concrete reason. */
        hx_dd_params p = {{box[0], box[1], box[2]}, {ndomains, 1, 1}, r_comm, cutoff};
        hx_dd dd;
        hx_status st = dd_setup(&p, &dd, 0);
        if (st == HX_OK)
            st = HX_ERR_INTERNAL;
        /* a copy: the new message is formatted into the buffer the old one lives in */
        char reason[512];
        snprintf(reason, sizeof reason, "%s", hx_last_error_message());
        HX_FAIL(st,
                "no domain grid for %d domains fits this box (%g x %g x %g nm) with a "
                "communication distance of %g nm (e.g. %dx1x1: %s); use fewer domains",
                ndomains, box[0], box[1], box[2], r_comm, ndomains, reason);
    }
    return HX_OK;
}

hx_status hx_dd_parse_grid(const char *text, int grid_out[3])
{
    HX_CHECK(text && grid_out, HX_ERR_INVALID_ARG, "hx_dd_parse_grid: NULL argument");
    int g[3] = {1, 1, 1};
    const char *s = text;
    for (int d = 0; d < 3; d++) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 1 || v > 1000000)
            HX_FAIL(HX_ERR_INVALID_ARG,
                    "domain grid '%s' is malformed: write it as AxBxC with positive integers, "
                    "e.g. 2x2x1",
                    text);
        g[d] = (int)v;
        s = end;
        if (*s == '\0')
            break;
        if ((*s != 'x' && *s != 'X') || d == 2)
            HX_FAIL(HX_ERR_INVALID_ARG,
                    "domain grid '%s' is malformed: write it as AxBxC with positive integers, "
                    "e.g. 2x2x1",
                    text);
        s++;
    }
    memcpy(grid_out, g, sizeof g);
    return HX_OK;
}

int hx_dd_ndomains(const hx_dd *dd)
{
    return dd->grid[0] * dd->grid[1] * dd->grid[2];
}

void hx_dd_grid(const hx_dd *dd, int grid[3])
{
    memcpy(grid, dd->grid, sizeof dd->grid);
}

void hx_dd_box(const hx_dd *dd, double box[3])
{
    memcpy(box, dd->box, sizeof dd->box);
}

double hx_dd_r_comm(const hx_dd *dd)
{
    return dd->r_comm;
}

double hx_dd_cell_size(const hx_dd *dd, int dim)
{
    return dd->cell[dim];
}

int hx_dd_ndim(const hx_dd *dd, int dims[3])
{
    if (dims)
        memcpy(dims, dd->dims, sizeof dd->dims);
    return dd->ndim;
}

int hx_dd_pulses_dim(const hx_dd *dd, int dim)
{
    return dd->np[dim];
}

int hx_dd_npulses(const hx_dd *dd)
{
    return dd->npulses;
}

void hx_dd_coord_of(const hx_dd *dd, int domain, int coord[3])
{
    coord[2] = domain % dd->grid[2];
    coord[1] = (domain / dd->grid[2]) % dd->grid[1];
    coord[0] = domain / (dd->grid[2] * dd->grid[1]);
}

int hx_dd_domain_at(const hx_dd *dd, const int coord[3])
{
    int c[3];
    for (int d = 0; d < 3; d++)
        c[d] = ((coord[d] % dd->grid[d]) + dd->grid[d]) % dd->grid[d];
    return (c[0] * dd->grid[1] + c[1]) * dd->grid[2] + c[2];
}

int hx_dd_domain_of_point(const hx_dd *dd, const double x[3])
{
    int c[3];
    for (int d = 0; d < 3; d++) {
        double xd = x[d] - floor(x[d] / dd->box[d]) * dd->box[d];
        int k = (int)(xd / dd->cell[d]);
        c[d] = k < 0 ? 0 : (k >= dd->grid[d] ? dd->grid[d] - 1 : k);
    }
    return (c[0] * dd->grid[1] + c[1]) * dd->grid[2] + c[2];
}

void hx_dd_cell_bounds(const hx_dd *dd, int dim, int c, double *lo, double *hi)
{
    /* Computed from the index, not by accumulation, so every rank gets identical numbers. */
    *lo = dd->box[dim] * c / dd->grid[dim];
    *hi = c + 1 == dd->grid[dim] ? dd->box[dim] : dd->box[dim] * (c + 1) / dd->grid[dim];
}
