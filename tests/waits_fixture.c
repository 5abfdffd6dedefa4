/* The fixture of the tests that no rank is left waiting (waits_fixture.h). */
#include "waits_fixture.h"

#include "halox/comm.h"
#include "halox/error.h"
#include "halox/timer.h"
#include "comm/comm_impl.h"
#include "testutil.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char *g_test = "test";
static struct hx_comm *g_world;
static unsigned g_watchdog = 60;
static int g_cases;
/* read by the signal handler: the name of the case running now */
static const char *volatile g_case = "start";

/* async-signal-safe: write(2) and _exit only */
static void on_alarm(int sig)
{
    (void)sig;
    static const char fail[] = "FAIL ", hung[] = ": hung in case: ";
    const char *t = g_test, *c = g_case;
    if (write(2, fail, sizeof fail - 1) < 0 || write(2, t, strlen(t)) < 0 ||
        write(2, hung, sizeof hung - 1) < 0 || write(2, c, strlen(c)) < 0 || write(2, "\n", 1) < 0)
        _exit(3);
    _exit(3);
}

void tw_init(const char *test, struct hx_comm *world, unsigned watchdog_seconds)
{
    g_test = test;
    g_world = world;
    g_watchdog = watchdog_seconds;
    signal(SIGALRM, on_alarm);
}

struct hx_comm *tw_case_comm(void)
{
    hx_comm *c = NULL;
    T_OK(hx_comm_create_world(&c));
    if (c)
        hx_comm_set_in_step(c, 1);
    return c;
}

double tw_begin(const char *name)
{
    g_case = name;
    alarm(g_watchdog);
    T_OK(hx_comm_agree(g_world, HX_OK));
    return hx_wtime();
}

void tw_end(void)
{
    T_OK(hx_comm_agree(g_world, HX_OK));
    alarm(0);
    g_cases++;
}

int tw_cases(void)
{
    return g_cases;
}

void tw_report(const char *what, hx_status st, double dt)
{
    printf("  rank %d, %s: %s after %.2f s: %s\n", g_world ? hx_comm_rank(g_world) : 0, what,
           hx_status_name(st), dt, hx_last_error_message());
    fflush(stdout);
}

int tw_agreed(hx_status st, int culprit, hx_status want, const char *msg, int prefix,
              hx_status *expect_st, char *exp, size_t cap)
{
    const int rank = g_world ? hx_comm_rank(g_world) : 0;
    if (rank == culprit)
        snprintf(exp, cap, "%s", msg);
    else
        snprintf(exp, cap, "rank %d failed (%s): %s", culprit, hx_status_name(want), msg);
    *expect_st = rank == culprit ? want : HX_ERR_REMOTE;
    const char *got = hx_last_error_message();
    return st == *expect_st &&
           (prefix ? strncmp(got, exp, strlen(exp)) == 0 : strcmp(got, exp) == 0);
}
