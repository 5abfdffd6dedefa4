/* Leveled logging. Kept deliberately small: one global level, stderr plus an optional file. */
#include "halox/log.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static hx_log_level g_level = HX_LOG_INFO;
static int g_level_from_env_done;
static FILE *g_file;
static int g_rank, g_nranks = 1;

static void level_from_env(void)
{
    if (g_level_from_env_done)
        return;
    g_level_from_env_done = 1;
    const char *e = getenv("HALOX_LOG");
    if (e) {
        int l = hx_log_level_parse(e);
        if (l >= 0)
            g_level = (hx_log_level)l;
    }
}

int hx_log_level_parse(const char *name)
{
    static const char *names[] = {"error", "warn", "info", "debug"};
    if (!name)
        return -1;
    for (int i = 0; i < 4; i++)
        if (strcasecmp(name, names[i]) == 0)
            return i;
    return -1;
}

void hx_log_set_level(hx_log_level level)
{
    g_level_from_env_done = 1;
    g_level = level;
}

hx_log_level hx_log_get_level(void)
{
    level_from_env();
    return g_level;
}

void hx_log_set_file(FILE *f)
{
    g_file = f;
}

void hx_log_set_rank(int rank, int nranks)
{
    g_rank = rank;
    g_nranks = nranks;
}

void hx_log(hx_log_level level, const char *fmt, ...)
{
    level_from_env();
    if (level > g_level)
        return;
    if (g_nranks > 1 && g_rank != 0 && level > HX_LOG_WARN) {
        const char *all = getenv("HALOX_LOG_ALL_RANKS");
        if (!all || strcmp(all, "1") != 0)
            return;
    }
    static const char *tags[] = {"error", "warning", "", "debug"};
    char prefix[48] = "";
    if (g_nranks > 1)
        snprintf(prefix, sizeof prefix, "[rank %d] ", g_rank);
    va_list ap;
    FILE *streams[2] = {stderr, g_file};
    for (int s = 0; s < 2; s++) {
        FILE *out = streams[s];
        if (!out)
            continue;
        if (level == HX_LOG_INFO)
            fprintf(out, "%s", prefix);
        else
            fprintf(out, "%s%s: ", prefix, tags[level]);
        va_start(ap, fmt);
        vfprintf(out, fmt, ap);
        va_end(ap);
        fputc('\n', out);
        fflush(out);
    }
}
