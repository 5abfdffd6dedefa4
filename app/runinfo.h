/* What a run log starts with, GROMACS-style: which halox (version, build, backends), how it was
 * called, when, where and on what hardware; and wall-clock helpers for progress lines. */
#ifndef HX_APP_RUNINFO_H
#define HX_APP_RUNINFO_H

#include <stddef.h>
#include <stdio.h>

/* "halox md -c 'my conf.gro' --steps 10": the command line, quoted so it can be pasted into a
 * shell. argv[0] is the subcommand. */
void hx_app_command_line(int argc, char **argv, char *buf, size_t cap);
/* The header lines. nranks, nthreads: the run's MPI ranks and OpenMP threads per rank. */
void hx_app_write_run_header(FILE *f, const char *command_line, int nranks, int nthreads);
/* When a run that needs `seconds` more will end, local time: "at 14:32:05" today,
 * "at 2026-12-04 02:10" on another day, "in about 3.17e+03 years" beyond a century. */
void hx_app_clock_after(double seconds, char *buf, size_t cap);
/* The local date and time now, "2026-12-03 14:32:05". */
void hx_app_now(char *buf, size_t cap);
/* The host's name ("unknown" when it cannot be read). */
void hx_app_hostname(char *buf, size_t cap);

#endif
