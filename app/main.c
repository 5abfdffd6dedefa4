/* halox: the command-line program. Dispatches to subcommands (app/cmd_*.c). */
#include "commands.h"

#include "halox/version.h"

#include <stdio.h>
#include <string.h>

static int run_version(int argc, char **argv);

const hx_cmd hx_cmd_version = {"version", "print the version and the compiled-in backends",
                               "halox version", NULL, run_version};

/* Order is the order of `halox --help`. */
static const hx_cmd *const commands[] = {
    &hx_cmd_plan,
    &hx_cmd_build,
    &hx_cmd_md,
    &hx_cmd_version,
};
static const int ncommands = (int)(sizeof commands / sizeof commands[0]);

static int run_version(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("halox %s\n", HALOX_VERSION);
    printf("  mpi:     %s\n", HALOX_HAVE_MPI ? "yes" : "no");
    printf("  openmp:  %s\n", HALOX_HAVE_OPENMP ? "yes" : "no");
    printf("  cuda:    %s\n", HALOX_HAVE_CUDA ? "yes" : "no");
    printf("  nvshmem: %s\n", HALOX_HAVE_NVSHMEM ? "yes" : "no");
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
