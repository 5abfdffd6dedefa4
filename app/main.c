/* halox: the command-line program. Dispatches to subcommands (app/cmd_*.c). */
#include "commands.h"

#include "halox/gpu.h"
#include "halox/halo.h"
#include "halox/md.h"
#include "halox/version.h"

#include <stdio.h>
#include <string.h>

static int run_version(int argc, char **argv);

const hx_cmd hx_cmd_version = {"version", "print the version and the compiled-in backends",
                               "halox version", NULL, run_version};

/* Order is the order of `halox --help`. */
static const hx_cmd *const commands[] = {
    &hx_cmd_plan, &hx_cmd_build, &hx_cmd_md, &hx_cmd_bench, &hx_cmd_version,
};
static const int ncommands = (int)(sizeof commands / sizeof commands[0]);

static int run_version(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("halox %s\n", HALOX_VERSION);
    printf("  mpi:     %s\n", HALOX_HAVE_MPI ? "compiled" : "not compiled");
    printf("  openmp:  %s\n", HALOX_HAVE_OPENMP ? "compiled" : "not compiled");
    printf("  cuda:    %s\n", HALOX_HAVE_CUDA ? "compiled" : "not compiled");
    printf("  nvshmem: %s\n", HALOX_HAVE_NVSHMEM ? "compiled" : "not compiled");
    /* what a run can select, asked of the library rather than of the configure step */
    printf("  md backends:  ");
    static const char *const md_names[] = {"cpu", "gpu"};
    for (int i = 0; i < 2; i++)
        printf("%s%s%s", i ? ", " : "", md_names[i],
               hx_md_backend_available(md_names[i]) == HX_OK ? "" : " (not compiled)");
    printf("\n  halo backends:");
    const char *const *hn = hx_halo_backend_names();
    for (int i = 0; hn[i]; i++)
        printf("%s %s%s", i ? "," : "", hn[i],
               hx_halo_backend_available(hn[i]) == HX_OK ? "" : " (not compiled)");
    printf("\n");
    int ngpu = 0;
    const char *why = NULL;
    hx_gpu_device_count(&ngpu, &why);
    if (ngpu == 0)
        printf("  gpus:    none (%s)\n", why ? why : "none visible");
    for (int d = 0; d < ngpu; d++) {
        hx_gpu_info g;
        char line[512];
        if (hx_gpu_get_info(d, &g) == HX_OK) {
            hx_gpu_describe(&g, line, (int)sizeof line);
            printf("  gpu %d:   %s\n", d, line);
        }
    }
    hx_clear_error();
    printf("  build:   %s, %s, C flags '%s'\n", HALOX_BUILD_TYPE, HALOX_BUILD_COMPILER,
           HALOX_BUILD_FLAGS);
    return 0;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: halox <command> [options]   (halox <command> --help for details)\n\n");
    fprintf(out, "halox: GPU-resident halo exchange for domain-decomposed molecular dynamics.\n\n");
    fprintf(out, "commands:\n");
    for (int i = 0; i < ncommands; i++)
        fprintf(out, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0)
        return run_version(0, NULL);
    for (int i = 0; i < ncommands; i++)
        if (strcmp(argv[1], commands[i]->name) == 0)
            return commands[i]->run(argc - 1, argv + 1);
    fprintf(stderr, "halox: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
