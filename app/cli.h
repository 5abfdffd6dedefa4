/* Command-line options from one table per subcommand.
 *
 * Each subcommand declares a table of hx_opt; the parser, the --help text and the options
 * reference in docs/ are generated from the same table, so they cannot drift apart. */
#ifndef HX_APP_CLI_H
#define HX_APP_CLI_H

#include "halox/status.h"

typedef enum hx_opt_type {
    HX_OPT_FLAG,   /* no value; *(int *)dest = 1 */
    HX_OPT_INT,    /* int */
    HX_OPT_INT64,  /* long long (step counts: runs of more than 2^31 steps are ordinary) */
    HX_OPT_DOUBLE, /* double */
    HX_OPT_STRING  /* const char * (points into argv) */
} hx_opt_type;

typedef struct hx_opt {
    const char *name;  /* long name without dashes: "rc" for --rc; may be "c" for -c */
    const char *alias; /* second spelling or NULL ("o" for -o) */
    hx_opt_type type;
    void *dest;
    const char *metavar; /* "NM", "FILE", ... */
    /* One line. The default is printed from *dest, unless the line already says what the
     * default is (it contains "default"): a sentinel such as 0 or -1 that means "chosen for
     * you" is explained in words and must not be printed as a number after them. */
    const char *help;
} hx_opt;

typedef struct hx_cmd {
    const char *name;
    const char *summary;
    const char *usage;       /* "halox plan [options]" */
    const char *description; /* paragraph printed by --help */
    int (*run)(int argc, char **argv);
} hx_cmd;

/* Parse argv[1..argc) (argv[0] is the subcommand name). Prints --help and returns 1 when asked
 * (the caller exits 0); returns 0 on success; prints a message and returns -1 on a bad option.
 * Options may be written --name value, --name=value or -name value. */
int hx_cli_parse(const hx_cmd *cmd, hx_opt *opts, int nopts, int argc, char **argv);
void hx_cli_print_help(const hx_cmd *cmd, const hx_opt *opts, int nopts);
/* Print the library's last error as "halox <cmd>: error: <message>" with the trace at debug. */
void hx_cli_report_error(const char *cmd, hx_status st);

#endif
