/* Zones of the eighth-shell method and the i-zone x j-zone interaction table.
 *
 * A domain's atoms are split into zones by where they come from: zone 0 is home, zone z > 0 holds
 * atoms from the upper neighbours shifted by zone_shift(z) cells along (d_0, d_1, d_2). A pair of
 * atoms in zones (a, b) is computed on this domain only when the shifts of a and b have no
 * dimension in common (the domain is the componentwise lowest cell of the pair); listing each such
 * unordered zone pair once gives the table below, so every pair in the system is computed by
 * exactly one domain. */
#include "halox/dd.h"

static const int zone_shifts[HX_MAX_ZONES][3] = {
    {0, 0, 0}, {1, 0, 0}, {1, 1, 0}, {0, 1, 0}, {0, 1, 1}, {0, 0, 1}, {1, 0, 1}, {1, 1, 1},
};

/* {j0, j1} per i-zone, for 3 decomposed dimensions; the 2D and 1D tables are truncations that
 * only keep zones of the lower dimensionality (zones 0..3 in 2D, 0..1 in 1D). */
static const int izone_3d[4][2] = {{0, 8}, {3, 6}, {5, 6}, {5, 7}};
static const int izone_2d[2][2] = {{0, 4}, {3, 4}};

int hx_zone_count(int ndim)
{
    return 1 << ndim;
}

void hx_zone_shift(int zone, int shift[3])
{
    for (int d = 0; d < 3; d++)
        shift[d] = zone_shifts[zone][d];
}

int hx_zone_from_shift(const int shift[3])
{
    for (int z = 0; z < HX_MAX_ZONES; z++)
        if (zone_shifts[z][0] == (shift[0] != 0) && zone_shifts[z][1] == (shift[1] != 0) &&
            zone_shifts[z][2] == (shift[2] != 0))
            return z;
    return -1;
}

int hx_izone_count(int ndim)
{
    return ndim == 3 ? 4 : (ndim == 2 ? 2 : 1);
}

void hx_izone_jrange(int ndim, int izone, int *j0, int *j1)
{
    if (ndim == 3) {
        *j0 = izone_3d[izone][0];
        *j1 = izone_3d[izone][1];
    } else if (ndim == 2) {
        *j0 = izone_2d[izone][0];
        *j1 = izone_2d[izone][1];
    } else {
        *j0 = 0;
        *j1 = hx_zone_count(ndim);
    }
}
