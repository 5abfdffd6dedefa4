#include "cli.h"

#include "halox/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <limits.h>
#include <math.h>

static const char *type_metavar(const hx_opt *o)
{
    if (o->metavar)
        return o->metavar;
    switch (o->type) {
    case HX_OPT_INT:
    case HX_OPT_INT64:
        return "N";
    case HX_OPT_DOUBLE:
        return "X";
    case HX_OPT_STRING:
        return "S";
    default:
        return "";
    }
}

static void print_default(const hx_opt *o)
{
    if (strstr(o->help, "default"))
        return;
    switch (o->type) {
    case HX_OPT_INT:
        printf(" (default %d)", *(int *)o->dest);
        break;
    case HX_OPT_INT64:
        printf(" (default %lld)", *(long long *)o->dest);
        break;
    case HX_OPT_DOUBLE:
        printf(" (default %g)", *(double *)o->dest);
        break;
    case HX_OPT_STRING:
        if (*(const char **)o->dest)
            printf(" (default %s)", *(const char **)o->dest);
        break;
    default:
        break;
    }
}

void hx_cli_print_help(const hx_cmd *cmd, const hx_opt *opts, int nopts)
{
    printf("usage: %s\n\n", cmd->usage);
    if (cmd->description)
        printf("%s\n\n", cmd->description);
    printf("options:\n");
    for (int i = 0; i < nopts; i++) {
        const hx_opt *o = &opts[i];
        char lhs[64];
        const char *dash = strlen(o->name) == 1 ? "-" : "--";
        if (o->alias)
            snprintf(lhs, sizeof lhs, "%s%s, %s%s %s", dash, o->name,
                     strlen(o->alias) == 1 ? "-" : "--", o->alias, type_metavar(o));
        else
            snprintf(lhs, sizeof lhs, "%s%s %s", dash, o->name, type_metavar(o));
        printf("  %-26s %s", lhs, o->help);
        print_default(o);
        printf("\n");
    }
    printf("  %-26s %s\n", "-h, --help", "print this help and exit");
}

static hx_opt *find_opt(hx_opt *opts, int nopts, const char *name, size_t len)
{
    for (int i = 0; i < nopts; i++) {
        if (strlen(opts[i].name) == len && strncmp(opts[i].name, name, len) == 0)
            return &opts[i];
        if (opts[i].alias && strlen(opts[i].alias) == len && strncmp(opts[i].alias, name, len) == 0)
            return &opts[i];
    }
    return NULL;
}

int hx_cli_parse(const hx_cmd *cmd, hx_opt *opts, int nopts, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            hx_cli_print_help(cmd, opts, nopts);
            return 1;
        }
        if (a[0] != '-' || a[1] == '\0') {
            fprintf(stderr, "halox %s: unexpected argument '%s' (see 'halox %s --help')\n",
                    cmd->name, a, cmd->name);
            return -1;
        }
        const char *name = a + (a[1] == '-' ? 2 : 1);
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        hx_opt *o = find_opt(opts, nopts, name, len);
        if (!o) {
            fprintf(stderr, "halox %s: unknown option '%s' (see 'halox %s --help')\n", cmd->name, a,
                    cmd->name);
            return -1;
        }
        if (o->type == HX_OPT_FLAG) {
            if (eq) {
                fprintf(stderr, "halox %s: option '--%s' takes no value\n", cmd->name, o->name);
                return -1;
            }
            *(int *)o->dest = 1;
            continue;
        }
        const char *val = eq ? eq + 1 : NULL;
        if (!val) {
            if (i + 1 >= argc) {
                fprintf(stderr, "halox %s: option '%s' needs a value (%s)\n", cmd->name, a,
                        type_metavar(o));
                return -1;
            }
            val = argv[++i];
        }
        char *end = NULL;
        errno = 0;
        switch (o->type) {
        case HX_OPT_INT: {
            long v = strtol(val, &end, 10);
            if (errno == 0 && end != val && *end == '\0' && (v < -2147483647L || v > 2147483647L))
                errno = ERANGE;
            if (end == val || *end != '\0') {
                fprintf(stderr, "halox %s: option '--%s' expects an integer, got '%s'\n", cmd->name,
                        o->name, val);
                return -1;
            }
            if (errno == ERANGE) {
                fprintf(stderr, "halox %s: option '--%s' value '%s' is out of range (at most %d)\n",
                        cmd->name, o->name, val, 2147483647);
                return -1;
            }
            *(int *)o->dest = (int)v;
            break;
        }
        case HX_OPT_INT64: {
            long long v = strtoll(val, &end, 10);
            if (end == val || *end != '\0') {
                fprintf(stderr, "halox %s: option '--%s' expects an integer, got '%s'\n", cmd->name,
                        o->name, val);
                return -1;
            }
            if (errno == ERANGE) {
                fprintf(stderr,
                        "halox %s: option '--%s' value '%s' is out of range (at most %lld)\n",
                        cmd->name, o->name, val, LLONG_MAX);
                return -1;
            }
            *(long long *)o->dest = v;
            break;
        }
        case HX_OPT_DOUBLE: {
            double v = strtod(val, &end);
            if (errno || end == val || *end != '\0' || !isfinite(v)) {
                fprintf(stderr, "halox %s: option '--%s' expects a finite number, got '%s'\n",
                        cmd->name, o->name, val);
                return -1;
            }
            *(double *)o->dest = v;
            break;
        }
        case HX_OPT_STRING:
            *(const char **)o->dest = val;
            break;
        default:
            break;
        }
    }
    return 0;
}

void hx_cli_report_error(const char *cmd, hx_status st)
{
    fprintf(stderr, "halox %s: error: %s\n", cmd, hx_last_error_message());
    if (hx_log_get_level() >= HX_LOG_DEBUG)
        fprintf(stderr, "%s\n", hx_last_error());
    else
        fprintf(stderr, "  (%s; set HALOX_LOG=debug for where it was raised)\n",
                hx_status_name(st));
}
