/* Every geometry error returns its status with its exact message (what is wrong, the numbers,
 * what to change); nothing crashes. Each case prints the message it got and the one expected
 * when it fails. Includes the limit of HX_MAX_PULSES (64) pulses: 64 are built, 65 refused. */
#include "halox/halox.h"
#include "testutil.h"

#include <math.h>
#include <string.h>

/* The last error message is exactly want. */
static void expect_message(const char *name, const char *want)
{
    T_CHECK(strcmp(hx_last_error_message(), want) == 0, "%s: message\n  '%s'\nexpected\n  '%s'",
            name, hx_last_error_message(), want);
}

static void expect_dd_error(const char *name, hx_dd_params p, hx_status want, const char *msg)
{
    hx_dd *dd = NULL;
    hx_status st = hx_dd_create(&p, &dd);
    T_CHECK(st == want, "%s: expected %s, got %s", name, hx_status_name(want), hx_status_name(st));
    T_CHECK(dd == NULL, "%s: a handle was returned on failure", name);
    expect_message(name, msg);
    hx_dd_destroy(&dd);
}

/* HX_MAX_PULSES: 64 pulses are supported (dependency sets are 64-bit masks), 65 are refused. */
static void pulse_limit(int *n)
{
    hx_dd *dd = NULL;
    /* 1D: 70 cells of 1 nm; r_comm 63.5 nm needs 64 pulses, 64.5 nm needs 65 */
    T_OK(hx_dd_create(&(hx_dd_params){{70, 5, 5}, {70, 1, 1}, 63.5, 1.0}, &dd));
    T_CHECK(dd && hx_dd_npulses(dd) == 64, "64 pulses: got %d", dd ? hx_dd_npulses(dd) : -1);
    hx_dd_destroy(&dd);
    expect_dd_error("65 pulses along x", (hx_dd_params){{70, 5, 5}, {70, 1, 1}, 64.5, 1.0},
                    HX_ERR_GEOMETRY,
                    "65 pulses needed, at most 64 are supported: use fewer domains");
    /* 3D: 30 cells of 1 nm per dimension; r_comm 21.5 nm needs 22 pulses each, 66 in total,
     * though every dimension alone is within its cells */
    expect_dd_error("66 pulses over x, y, z", (hx_dd_params){{30, 30, 30}, {30, 30, 30}, 21.5, 1.0},
                    HX_ERR_GEOMETRY,
                    "66 pulses needed, at most 64 are supported: use fewer domains");
    *n += 3;
}

int main(void)
{
    int n = 0;
    /* cut-off not shorter than half the box */
    expect_dd_error("half box", (hx_dd_params){{3, 3, 1.8}, {2, 1, 1}, 1.0, 0.9}, HX_ERR_GEOMETRY,
                    "cut-off 0.9 nm is not shorter than half the box along z (1.8 nm): use a "
                    "cut-off below 0.9 nm or a larger box"),
        n++;
    /* more pulses than cells: 3 cells of 1 nm, r_comm 2.5 nm needs 3 pulses; the message says
     * what to change */
    expect_dd_error("pulses >= cells", (hx_dd_params){{3, 6, 6}, {3, 1, 1}, 2.5, 1.0},
                    HX_ERR_GEOMETRY,
                    "cells along x are too small: the communication distance 2.5 nm needs 3 "
                    "pulses of cell size 1 nm, but there are only 3 cells (pulses must be fewer "
                    "than cells); do not divide x (one domain along it), or a shorter "
                    "cut-off/rlist, or a "
                    "larger box"),
        n++;
    expect_dd_error("r_comm < cutoff", (hx_dd_params){{5, 5, 5}, {2, 1, 1}, 0.8, 1.0},
                    HX_ERR_INVALID_ARG,
                    "communication distance 0.8 nm is shorter than the cut-off 1 nm: it must be "
                    "at least rlist (cut-off + buffer) plus the molecule radius"),
        n++;
    expect_dd_error("zero grid", (hx_dd_params){{5, 5, 5}, {0, 1, 1}, 1.0, 1.0}, HX_ERR_INVALID_ARG,
                    "domain grid along x is 0: it must be at least 1"),
        n++;
    expect_dd_error("negative box", (hx_dd_params){{5, -5, 5}, {1, 1, 1}, 1.0, 1.0},
                    HX_ERR_INVALID_ARG,
                    "box edge along y is -5 nm: it must be positive and finite"),
        n++;
    expect_dd_error("zero cutoff", (hx_dd_params){{5, 5, 5}, {1, 1, 1}, 1.0, 0.0},
                    HX_ERR_INVALID_ARG, "cut-off is 0 nm: it must be positive"),
        n++;
    pulse_limit(&n);

    /* grid strings */
    int g[3];
    const char *bad[] = {"", "x", "2x", "2x2x2x2", "0x1x1", "2y2", "-1", "abc", "2x2x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++, n++) {
        hx_status st = hx_dd_parse_grid(bad[i], g);
        T_CHECK(st == HX_ERR_INVALID_ARG, "grid '%s' was accepted", bad[i]);
        char want[160];
        snprintf(want, sizeof want,
                 "domain grid '%s' is malformed: write it as AxBxC with positive integers, e.g. "
                 "2x2x1",
                 bad[i]);
        expect_message(bad[i], want);
    }
    T_OK(hx_dd_parse_grid("4x2x1", g));
    n++;
    T_CHECK(g[0] == 4 && g[1] == 2 && g[2] == 1, "4x2x1 parsed as %dx%dx%d", g[0], g[1], g[2]);
    T_OK(hx_dd_parse_grid("3", g));
    n++;
    T_CHECK(g[0] == 3 && g[1] == 1 && g[2] == 1, "3 parsed as %dx%dx%d", g[0], g[1], g[2]);

    /* grid of a different size than the communicator */
    hx_dd *dd = NULL;
    hx_comm *comm = NULL;
    hx_plan *plan = NULL;
    T_OK(hx_dd_create(&(hx_dd_params){{6, 6, 6}, {2, 2, 1}, 1.1, 1.0}, &dd));
    T_OK(hx_comm_create_serial(3, &comm));
    hx_status st = hx_plan_create(dd, comm, &plan);
    T_CHECK(st == HX_ERR_INVALID_ARG && plan == NULL, "grid/rank mismatch accepted (%s)",
            hx_status_name(st));
    expect_message("grid/rank mismatch",
                   "the domain grid has 4 domains but the communicator has 3 (ranks); give a grid "
                   "whose product equals the number of ranks, or omit it to choose one "
                   "automatically");
    n++;
    hx_comm_destroy(&comm);

    /* non-finite coordinates are refused by the plan builder */
    T_OK(hx_comm_create_serial(4, &comm));
    T_OK(hx_plan_create(dd, comm, &plan));
    double x0[3] = {0.5, 0.5, 0.5}, x1[3] = {4.0, 0.5, NAN};
    const double *xs[4] = {x0, x1, x0, x0};
    int nh[4] = {1, 1, 1, 1};
    st = hx_plan_build(plan, nh, xs);
    T_CHECK(st == HX_ERR_INVALID_ARG, "NaN coordinate accepted (%s)", hx_status_name(st));
    expect_message("NaN coordinate", "domain 1: home atom 0 has a non-finite coordinate (nan)");
    n++;
    hx_plan_destroy(&plan);
    hx_comm_destroy(&comm);
    hx_dd_destroy(&dd);

    /* automatic grid: no fit */
    /* 2 domains of 1.1 nm need 2 pulses for r_comm 1.2: no factorisation fits */
    st = hx_dd_choose_grid((double[3]){2.2, 2.2, 2.2}, 1.2, 1.0, 2, g);
    T_CHECK(st == HX_ERR_GEOMETRY, "2 domains in a 2.2 nm box accepted (%s)", hx_status_name(st));
    expect_message("no grid",
                   "no domain grid for 2 domains fits this box (2.2 x 2.2 x 2.2 nm) with a "
                   "communication distance of 1.2 nm (e.g. 2x1x1: cells along x are too small: "
                   "the communication distance 1.2 nm needs 2 pulses of cell size 1.1 nm, but "
                   "there are only 2 cells (pulses must be fewer than cells); do not divide x "
                   "(one domain along it), or a shorter cut-off/rlist, or a larger box); use "
                   "fewer domains");
    n++;
    /* automatic grid: a fit, and it must be buildable */
    T_OK(hx_dd_choose_grid((double[3]){8, 8, 8}, 1.1, 1.0, 8, g));
    T_CHECK(g[0] * g[1] * g[2] == 8, "grid %dx%dx%d is not 8 domains", g[0], g[1], g[2]);
    T_OK(hx_dd_choose_grid((double[3]){12, 4, 4}, 1.1, 1.0, 4, g));
    T_CHECK(g[0] == 4 && g[1] == 1 && g[2] == 1, "elongated box: expected 4x1x1, got %dx%dx%d",
            g[0], g[1], g[2]);
    n++;

    /* MPI communicator without MPI initialised, or not compiled */
    int dummy = 0;
    st = hx_comm_create_mpi(&dummy, &comm);
    T_CHECK(st != HX_OK && comm == NULL, "MPI communicator created without MPI_Init");
    if (st == HX_ERR_NOT_COMPILED)
        expect_message("MPI not compiled",
                       "halox was built without MPI: install an MPI library (scripts/setup.sh) and "
                       "reconfigure with -DHALOX_WITH_MPI=ON");
    else
        expect_message("MPI not initialised",
                       "hx_comm_create_mpi: MPI is not initialised; call MPI_Init first");
    n++;
    return t_finish("test_plan_errors", n);
}
