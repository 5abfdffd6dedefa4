/* Run-log header and wall-clock helpers (see runinfo.h). Everything here is best effort: a value
 * the system does not give (no /proc, no host name) is printed as "unknown", never an error. */
#include "runinfo.h"

#include "halox/version.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

/* Characters that need no quoting in a POSIX shell word. */
static int plain_word(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%", *s))
            return 0;
    return 1;
}

void hx_app_command_line(int argc, char **argv, char *buf, size_t cap)
{
    size_t n = (size_t)snprintf(buf, cap, "halox");
    for (int i = 0; i < argc && n < cap; i++) {
        const char *a = argv[i];
        if (plain_word(a)) {
            n += (size_t)snprintf(buf + n, cap - n, " %s", a);
            continue;
        }
        /* single quotes; a quote inside becomes '\'' */
        n += (size_t)snprintf(buf + n, cap - n, " '");
        for (; *a && n < cap; a++)
            n += (size_t)(*a == '\'' ? snprintf(buf + n, cap - n, "'\\''")
                                     : snprintf(buf + n, cap - n, "%c", *a));
        if (n < cap)
            n += (size_t)snprintf(buf + n, cap - n, "'");
    }
}

void hx_app_now(char *buf, size_t cap)
{
    time_t t = time(NULL);
    struct tm tm;
    if (!localtime_r(&t, &tm) || !strftime(buf, cap, "%Y-%m-%d %H:%M:%S", &tm))
        snprintf(buf, cap, "unknown");
}

void hx_app_clock_after(double seconds, char *buf, size_t cap)
{
    const double year = 365.2425 * 86400.0;
    if (!(seconds >= 0) || !isfinite(seconds)) {
        snprintf(buf, cap, "at an unknown time");
        return;
    }
    /* A date more than a century away says nothing a number of years does not, and beyond
     * that a time_t or the year field may overflow. */
    if (seconds > 100 * year) {
        snprintf(buf, cap, "in about %.3g years", seconds / year);
        return;
    }
    time_t now = time(NULL);
    time_t then = now + (time_t)(seconds + 0.5);
    struct tm a, b;
    if (!localtime_r(&now, &a) || !localtime_r(&then, &b)) {
        snprintf(buf, cap, "at an unknown time");
        return;
    }
    /* today: the time; another day: the date with its year (a run may end next year) */
    const char *fmt =
        a.tm_year == b.tm_year && a.tm_yday == b.tm_yday ? "at %H:%M:%S" : "at %Y-%m-%d %H:%M";
    if (!strftime(buf, cap, fmt, &b))
        snprintf(buf, cap, "at an unknown time");
}

void hx_app_hostname(char *buf, size_t cap)
{
    if (gethostname(buf, cap) != 0 || !buf[0])
        snprintf(buf, cap, "unknown");
    buf[cap - 1] = '\0';
}

/* "AMD EPYC 7B13" from /proc/cpuinfo's first "model name" line. */
static void cpu_model(char *buf, size_t cap)
{
    snprintf(buf, cap, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0)
            continue;
        const char *c = strchr(line, ':');
        if (!c)
            continue;
        c++;
        while (*c == ' ' || *c == '\t')
            c++;
        snprintf(buf, cap, "%s", c);
        size_t n = strlen(buf);
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
            buf[--n] = '\0';
        break;
    }
    fclose(f);
}

void hx_app_write_run_header(FILE *f, const char *command_line, int nranks, int nthreads)
{
    char now[64], host[256], cpu[256], cwd[4096];
    hx_app_now(now, sizeof now);
    hx_app_hostname(host, sizeof host);
    cpu_model(cpu, sizeof cpu);
    if (!getcwd(cwd, sizeof cwd))
        snprintf(cwd, sizeof cwd, "unknown");
    struct utsname u;
    int have_uname = uname(&u) == 0;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    double gib = pages > 0 && page > 0 ? (double)pages * (double)page / (1024.0 * 1024 * 1024) : 0;
    fprintf(f, "halox %s\n", HALOX_VERSION);
    fprintf(f, "  build        %s, %s, C flags '%s'\n", HALOX_BUILD_TYPE, HALOX_BUILD_COMPILER,
            HALOX_BUILD_FLAGS);
    /* what this binary was built with; the engine and halo backend a run uses are in its
     * parameters ("backend gpu, halo exchange nvshmem") */
    fprintf(f, "  built with   mpi %s, openmp %s, cuda %s, nvshmem %s\n",
            HALOX_HAVE_MPI ? "yes" : "no", HALOX_HAVE_OPENMP ? "yes" : "no",
            HALOX_HAVE_CUDA ? "yes" : "no", HALOX_HAVE_NVSHMEM ? "yes" : "no");
    fprintf(f, "  command      %s\n", command_line);
    fprintf(f, "  directory    %s\n", cwd);
    fprintf(f, "  started      %s\n", now);
    if (have_uname)
        fprintf(f, "  host         %s (%s %s %s)\n", host, u.sysname, u.release, u.machine);
    else
        fprintf(f, "  host         %s\n", host);
    fprintf(f, "  hardware     %s, %ld logical CPUs, %.1f GiB memory\n", cpu, ncpu, gib);
    fprintf(f, "  parallel     %d MPI rank%s x %d OpenMP thread%s\n", nranks,
            nranks == 1 ? "" : "s", nthreads, nthreads == 1 ? "" : "s");
}
