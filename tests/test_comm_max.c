/* hx_comm_max_f64: the exact maximum of doubles over every domain of the job, through the
 * integer reduction. Checked against the maximum computed here from the values every domain is
 * known to contribute (they are a function of the domain): negative values of every magnitude,
 * +0.0 against -0.0, values one ulp apart, infinities, and a NaN that must come out as +infinity
 * (a NaN timing must show up, not vanish). Also the minimum through negation, and both on the
 * serial communicator with several domains in one process. Run with 1-4 MPI ranks. */
#include "halox/comm.h"
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NV 9

/* Domain d's contribution to each of the NV reductions; ndom domains in the job. */
static double value(int d, int ndom, int k)
{
    switch (k) {
    case 0: /* all negative, of very different magnitudes: the largest is the smallest magnitude */
        return -pow(10.0, 300 - 37 * d);
    case 1: /* mixed signs */
        return (d % 2 ? -1.0 : 1.0) * (d + 0.5);
    case 2: /* -0.0 everywhere but the last domain, which has +0.0: the max is +0.0 */
        return d == ndom - 1 ? 0.0 : -0.0;
    case 3: /* one ulp apart: the exact value must come back */
        return nextafter(1.0, 2.0 * (d == ndom / 2));
    case 4: /* a NaN on the last domain */
        return d == ndom - 1 ? NAN : (double)d;
    case 5: /* -infinity everywhere but domain 0 */
        return d == 0 ? -1e-300 : -INFINITY;
    case 6: /* +infinity on domain 0 */
        return d == 0 ? INFINITY : 1e308;
    case 7: /* subnormals */
        return 4.9e-324 * (d + 1);
    default: /* the largest finite negative (closest to zero) */
        return -5e-324 * (ndom - d);
    }
}

/* The maximum as this program defines it: NaN counts as +infinity, -0.0 below +0.0. */
static double expected_max(int ndom, int k, int negate)
{
    double m = 0.0;
    for (int d = 0; d < ndom; d++) {
        double v = negate ? -value(d, ndom, k) : value(d, ndom, k);
        if (isnan(v))
            v = INFINITY;
        if (d == 0 || v > m || (v == 0.0 && m == 0.0 && !signbit(v)))
            m = v;
    }
    return m;
}

static int same(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

static void check(hx_comm *c, const char *what)
{
    const int nl = hx_comm_nlocal(c), nd = hx_comm_ndomains(c);
    double *in = malloc((size_t)nl * NV * sizeof *in), out[NV];
    for (int neg = 0; neg < 2; neg++) {
        for (int i = 0; i < nl; i++)
            for (int k = 0; k < NV; k++) {
                const double v = value(hx_comm_local_domain(c, i), nd, k);
                in[i * NV + k] = neg ? -v : v;
            }
        T_OK(hx_comm_max_f64(c, in, out, NV));
        for (int k = 0; k < NV; k++) {
            const double want = expected_max(nd, k, neg);
            T_CHECK(same(out[k], want),
                    "%s, %d domains, reduction %d%s: got %.17g (sign %d), want %.17g (sign %d)",
                    what, nd, k, neg ? " (negated: the minimum)" : "", out[k], !!signbit(out[k]),
                    want, !!signbit(want));
        }
    }
    free(in);
    /* bad arguments on every rank: an error everywhere, nobody left waiting */
    T_CHECK(hx_comm_max_f64(c, NULL, out, 1) == HX_ERR_INVALID_ARG, "%s: NULL input accepted",
            what);
}

int main(int argc, char **argv)
{
    hx_comm *world = NULL;
    int rank = 0, size = 1;
    t_mpi_begin(&argc, &argv, &world, &rank, &size);
    if (world)
        check(world, "world communicator");
    /* every process alone: the serial communicator with several domains */
    for (int nd = 1; nd <= 5; nd += 2) {
        hx_comm *s = NULL;
        T_OK(hx_comm_create_serial(nd, &s));
        if (s)
            check(s, "serial communicator");
        hx_comm_destroy(&s);
    }
    return t_mpi_end(&world, "test_comm_max", 2);
}
