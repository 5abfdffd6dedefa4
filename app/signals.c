/* Signal handling for graceful stops (see signals.h). The handler only stores the signal and
 * writes a prepared message with write(2): both are async-signal-safe. The second signal puts
 * the default action back and raises the signal again, so the process ends exactly as it would
 * have without halox's handler (exit status of death by that signal). */
#include "signals.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t g_stop;
static volatile sig_atomic_t g_signal;
static char g_note[2][512];
static size_t g_note_len[2];
static const int g_sigs[2] = {SIGINT, SIGTERM};

const char *hx_app_signal_name(int sig)
{
    static char buf[32];
    if (sig == SIGINT)
        return "SIGINT";
    if (sig == SIGTERM)
        return "SIGTERM";
    snprintf(buf, sizeof buf, "signal %d", sig);
    return buf;
}

static void on_signal(int sig)
{
    if (g_stop) {
        static const char again[] = "halox: second signal: ending at once\n";
        if (write(STDERR_FILENO, again, sizeof again - 1) < 0) {
            /* nothing to do: the process ends next */
        }
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    g_signal = sig;
    g_stop = 1;
    int k = sig == SIGINT ? 0 : 1;
    if (g_note_len[k] && write(STDERR_FILENO, g_note[k], g_note_len[k]) < 0) {
        /* a lost message must not stop the stop */
    }
}

void hx_app_signals_install(const char *note)
{
    for (int k = 0; k < 2; k++) {
        g_note_len[k] = 0;
        if (note) {
            /* the note holds one "%s" for the signal's name */
            const char *p = strstr(note, "%s");
            int n = p ? snprintf(g_note[k], sizeof g_note[k], "%.*s%s%s\n", (int)(p - note), note,
                                 hx_app_signal_name(g_sigs[k]), p + 2)
                      : snprintf(g_note[k], sizeof g_note[k], "%s\n", note);
            g_note_len[k] = n > 0 && (size_t)n < sizeof g_note[k] ? (size_t)n : 0;
        }
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        /* interrupted system calls (writes of the outputs) resume instead of failing */
        sa.sa_flags = SA_RESTART;
        sigaction(g_sigs[k], &sa, NULL);
    }
}

void hx_app_signals_restore(void)
{
    for (int k = 0; k < 2; k++)
        signal(g_sigs[k], SIG_DFL);
}

volatile sig_atomic_t *hx_app_stop_flag(void)
{
    return &g_stop;
}

int hx_app_stop_signal(void)
{
    return g_signal;
}
