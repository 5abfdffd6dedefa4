/* The deadlines of halox's waits (include/halox/timer.h): HALOX_WAIT_TIMEOUT, read once, or what
 * hx_wait_timeout_set gave. */
#include "core/wait.h"
#include "core/error.h"

#include <stdio.h>
#include <stdlib.h>

#define HX_WAIT_STEP_DEFAULT 60.0
#define HX_WAIT_SETUP_DEFAULT 600.0

static int wait_read;      /* the environment was read (or a value set) */
static int wait_bad;       /* HALOX_WAIT_TIMEOUT was malformed */
static double wait_s[2];   /* step, set-up */
static char wait_env[128]; /* the malformed value, for the message */

/* "STEP" or "STEP,SETUP", seconds >= 0 */
static int parse(const char *e, double *step, double *setup)
{
    char *end = NULL;
    const double a = strtod(e, &end);
    if (end == e || !(a >= 0) || a > 1e9)
        return 0;
    double b = a * 10.0;
    if (*end == ',') {
        const char *s = end + 1;
        b = strtod(s, &end);
        if (end == s || !(b >= 0) || b > 1e9)
            return 0;
    }
    if (*end)
        return 0;
    *step = a;
    *setup = b;
    return 1;
}

static void wait_init(void)
{
    if (wait_read)
        return;
    wait_s[HX_WAIT_STEP] = HX_WAIT_STEP_DEFAULT;
    wait_s[HX_WAIT_SETUP] = HX_WAIT_SETUP_DEFAULT;
    const char *e = getenv("HALOX_WAIT_TIMEOUT");
    if (e && *e && !parse(e, &wait_s[HX_WAIT_STEP], &wait_s[HX_WAIT_SETUP])) {
        wait_bad = 1;
        snprintf(wait_env, sizeof wait_env, "%s", e);
    }
    wait_read = 1;
}

double hx_wait_timeout(hx_wait_kind kind)
{
    wait_init();
    return wait_s[kind == HX_WAIT_SETUP ? HX_WAIT_SETUP : HX_WAIT_STEP];
}

void hx_wait_timeout_set(double step, double setup)
{
    if (step < 0) {
        wait_read = wait_bad = 0;
        wait_init();
        return;
    }
    wait_read = 1;
    wait_bad = 0;
    wait_s[HX_WAIT_STEP] = step;
    wait_s[HX_WAIT_SETUP] = setup >= 0 ? setup : 10.0 * step;
}

hx_status hx_wait_timeout_check(void)
{
    wait_init();
    HX_CHECK(!wait_bad, HX_ERR_INVALID_ARG,
             "HALOX_WAIT_TIMEOUT='%s': give the deadline of a wait in seconds, STEP or "
             "STEP,SETUP (e.g. 60 or 60,600; 0: no deadline)",
             wait_env);
    return HX_OK;
}
