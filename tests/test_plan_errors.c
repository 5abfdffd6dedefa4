/* Every geometry error returns its status with a message that names the problem; nothing
 * crashes. Each case prints what it expected when it fails. */
#include "halox/halox.h"
#include "testutil.h"

#include <string.h>

static void expect_dd_error(const char *name, hx_dd_params p, hx_status want, const char *needle)
{
    hx_dd *dd = NULL;
    hx_status st = hx_dd_create(&p, &dd);
    T_CHECK(st == want, "%s: expected %s, got %s", name, hx_status_name(want), hx_status_name(st));
    T_CHECK(dd == NULL, "%s: a handle was returned on failure", name);
    T_CHECK(strstr(hx_last_error_message(), needle) != NULL,
            "%s: message '%s' does not mention '%s'", name, hx_last_error_message(), needle);
    hx_dd_destroy(&dd);
}

int main(void)
{
    int n = 0;
    /* cut-off not shorter than half the box */
    expect_dd_error("half box", (hx_dd_params){{3, 3, 1.8}, {2, 1, 1}, 1.0, 0.9}, HX_ERR_GEOMETRY,
                    "half the box along z"),
        n++;
    /* more pulses than cells: 3 cells of 1 nm, r_comm 2.5 nm needs 3 pulses */
    expect_dd_error("pulses >= cells", (hx_dd_params){{3, 6, 6}, {3, 1, 1}, 2.5, 1.0},
                    HX_ERR_GEOMETRY, "too small"),
        n++;
    /* the message must say what to change */
    expect_dd_error("advice", (hx_dd_params){{3, 6, 6}, {3, 1, 1}, 2.5, 1.0}, HX_ERR_GEOMETRY,
                    "use at most"),
        n++;
    expect_dd_error("r_comm < cutoff", (hx_dd_params){{5, 5, 5}, {2, 1, 1}, 0.8, 1.0},
                    HX_ERR_INVALID_ARG, "shorter than the cut-off"),
        n++;
    expect_dd_error("zero grid", (hx_dd_params){{5, 5, 5}, {0, 1, 1}, 1.0, 1.0}, HX_ERR_INVALID_ARG,
                    "at least 1"),
        n++;
    expect_dd_error("negative box", (hx_dd_params){{5, -5, 5}, {1, 1, 1}, 1.0, 1.0},
                    HX_ERR_INVALID_ARG, "positive"),
        n++;
    expect_dd_error("zero cutoff", (hx_dd_params){{5, 5, 5}, {1, 1, 1}, 1.0, 0.0},
                    HX_ERR_INVALID_ARG, "cut-off"),
        n++;

    /* grid strings */
    int g[3];
    const char *bad[] = {"", "x", "2x", "2x2x2x2", "0x1x1", "2y2", "-1", "abc", "2x2x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++, n++) {
        hx_status st = hx_dd_parse_grid(bad[i], g);
        T_CHECK(st == HX_ERR_INVALID_ARG, "grid '%s' was accepted", bad[i]);
        T_CHECK(strstr(hx_last_error_message(), "AxBxC") != NULL, "grid '%s': message '%s'", bad[i],
                hx_last_error_message());
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
    T_CHECK(strstr(hx_last_error_message(), "4 domains") != NULL, "message: %s",
            hx_last_error_message());
    n++;
    hx_comm_destroy(&comm);

    /* non-finite coordinates are refused by the plan builder */
    T_OK(hx_comm_create_serial(4, &comm));
    T_OK(hx_plan_create(dd, comm, &plan));
    double x0[3] = {0.5, 0.5, 0.5}, x1[3] = {4.0, 0.5, 0.0 / 0.0};
    const double *xs[4] = {x0, x1, x0, x0};
    int nh[4] = {1, 1, 1, 1};
    st = hx_plan_build(plan, nh, xs);
    T_CHECK(st == HX_ERR_INVALID_ARG, "NaN coordinate accepted (%s)", hx_status_name(st));
    T_CHECK(strstr(hx_last_error_message(), "non-finite") != NULL, "message: %s",
            hx_last_error_message());
    n++;
    hx_plan_destroy(&plan);
    hx_comm_destroy(&comm);
    hx_dd_destroy(&dd);

    /* automatic grid: no fit */
    /* 2 domains of 1.1 nm need 2 pulses for r_comm 1.2: no factorisation fits */
    st = hx_dd_choose_grid((double[3]){2.2, 2.2, 2.2}, 1.2, 1.0, 2, g);
    T_CHECK(st == HX_ERR_GEOMETRY, "2 domains in a 2.2 nm box accepted (%s)", hx_status_name(st));
    T_CHECK(strstr(hx_last_error_message(), "fewer domains") != NULL, "message: %s",
            hx_last_error_message());
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
    n++;
    return t_finish("test_plan_errors", n);
}
