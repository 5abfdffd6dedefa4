/* The fixture of the tests that no rank is left waiting (test_waits: the MPI transport, the host
 * halo backend and the CPU engine; test_gpu_waits: the GPU halo backends).
 *
 * Each case makes one rank fail or hang at a point where a job used to hang, and checks that
 * every rank returns within the deadline with a message. What the cases share:
 *
 *  - the step deadline TW_DEADLINE (hx_wait_timeout_set) and the slack TW_SLACK that a loaded
 *    machine may add to a bounded exit;
 *  - a communicator of the case's own (tw_case_comm): a timed-out one is unusable, so one case's
 *    hang cannot end the next one early;
 *  - tw_begin / tw_end around a case: every rank starts it together (an agreement on the world
 *    communicator, which no case breaks) and the start time is what the bounded exit is measured
 *    from;
 *  - a watchdog: a case that runs longer than the given seconds hung, which would otherwise end
 *    only at CTest's timeout with no word of which case it was; the alarm prints
 *    "FAIL <test>: hung in case: <name>" and ends the process (mpiexec then ends the job);
 *  - the agreed outcome (tw_agreed): the failing rank keeps its own status and message, the
 *    others get HX_ERR_REMOTE "rank R failed (STATUS): message".
 */
#ifndef HX_WAITS_FIXTURE_H
#define HX_WAITS_FIXTURE_H

#include <stddef.h>

#include "halox/status.h"

/* s: the step deadline of the cases (a sanitizer build's steps stay well below it) */
#define TW_DEADLINE 5.0
/* s: what a loaded CI machine may add to a bounded exit */
#define TW_SLACK 4.0

struct hx_comm;

/* Once, after MPI started: the test's name for the watchdog's message, the world communicator
 * the cases start and end on, and the seconds after which a case counts as hung. */
void tw_init(const char *test, struct hx_comm *world, unsigned watchdog_seconds);

/* A communicator of the case's own (the world's ranks), with the step deadline for its
 * collectives too; NULL (after a counted failure) if it cannot be made. */
struct hx_comm *tw_case_comm(void);

/* Every rank starts case `name` together; arms the watchdog; returns the start time
 * (hx_wtime). */
double tw_begin(const char *name);

/* Every rank ends the case together; disarms the watchdog; counts the case. */
void tw_end(void);

/* The cases run so far (for t_mpi_end). */
int tw_cases(void);

/* "  rank R, what: STATUS after T s: message" on stdout, flushed (the ranks' lines interleave
 * in the test's log, each whole). */
void tw_report(const char *what, hx_status st, double dt);

/* Whether this rank's (st, last message) is the agreed outcome of rank `culprit` failing with
 * `want` and `msg`: that status and exactly that message on the culprit, HX_ERR_REMOTE with
 * "rank C failed (WANT): msg" elsewhere (prefix: the message may go on after it). The status and
 * message expected on this rank are written to *expect_st and exp (cap bytes) for the test's
 * failure message. */
int tw_agreed(hx_status st, int culprit, hx_status want, const char *msg, int prefix,
              hx_status *expect_st, char *exp, size_t cap);

#endif
