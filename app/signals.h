/* SIGINT/SIGTERM in the halox program: the first signal asks the run to stop at a step boundary
 * (the engine reads the flag through hx_md_output.stop; outputs are completed, a checkpoint is
 * written when checkpointing is on); a second signal ends the process at once, as the default
 * action would have. */
#ifndef HX_APP_SIGNALS_H
#define HX_APP_SIGNALS_H

#include <signal.h>

/* Install the handlers. note: what the first signal prints on stderr (a complete line, e.g.
 * "halox md: SIGTERM received: stopping at the next step; a second signal ends at once"), or
 * NULL for silence (ranks other than 0); "%s" in it is replaced by the signal's name. */
void hx_app_signals_install(const char *note);
/* Restore the default actions. */
void hx_app_signals_restore(void);
/* The flag the engine reads (non-zero once a signal has arrived). */
volatile sig_atomic_t *hx_app_stop_flag(void);
/* The signal that set the flag (0: none). */
int hx_app_stop_signal(void);
/* "SIGINT", "SIGTERM", or "signal N". */
const char *hx_app_signal_name(int sig);

#endif
