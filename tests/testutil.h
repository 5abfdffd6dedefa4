/* Small helpers shared by the test programs: checks that print what failed, a seeded RNG. */
#ifndef HX_TESTUTIL_H
#define HX_TESTUTIL_H

#include <stdint.h>
#include <stdio.h>

#include "halox/status.h"

extern int hx_test_failures;

/* Fail the current test (counted) and print the message with file:line. */
#define T_FAIL(...)                                                                                \
    do {                                                                                           \
        hx_test_failures++;                                                                        \
        fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                       \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fputc('\n', stderr);                                                                       \
    } while (0)

#define T_CHECK(cond, ...)                                                                         \
    do {                                                                                           \
        if (!(cond))                                                                               \
            T_FAIL(__VA_ARGS__);                                                                   \
    } while (0)

/* A halox call that must succeed; prints the library's message on failure. */
#define T_OK(call)                                                                                 \
    do {                                                                                           \
        hx_status t_st_ = (call);                                                                  \
        if (t_st_ != HX_OK)                                                                        \
            T_FAIL("%s returned %s:\n%s", #call, hx_status_name(t_st_), hx_last_error());          \
    } while (0)

/* Relative difference |a-b| / max(|a|,|b|,floor). */
double t_reldiff(double a, double b, double floor_);

/* the library's generator (src/core/rng.h), stream 0 of the seed */
#include "core/rng.h"
typedef hx_rng t_rng;
void t_rng_seed(t_rng *r, uint64_t seed);
uint64_t t_rng_next(t_rng *r);
double t_rng_uniform(t_rng *r); /* [0,1) */
int t_rng_int(t_rng *r, int n); /* [0,n) */
double t_rng_normal(t_rng *r);

/* A system read from a .gro file (got) holds exactly what hx_gro_write writes for want (vel:
 * written with velocities): the same atoms, molecules, residue numbers (modulo 100000), names
 * (5 characters, blanks trimmed) and title ("halox" for an empty one), and every coordinate,
 * velocity and box edge equal, bit for bit, to the double that strtod gives for its printed
 * field (%.3f, %.4f, %.5f): the written precision, exactly. Without velocities got has none.
 * Prints the first differences (atom, field, both values) after what; returns how many. */
struct hx_system;
int t_gro_same(const struct hx_system *got, const struct hx_system *want, int vel,
               const char *what);

/* Print "N passed, N failed" style summary for the program and return its exit code. */
int t_finish(const char *name, int ncases);

/* Local set of domain dom of a g[0] x g[1] x g[2] grid with halos of whole upper-neighbour
 * domains: home (zone 0) = the molecules m with owner[m] == dom, zone z = every molecule of the
 * upper neighbour at zone z's shift, moved by a box edge where the neighbour wraps; gid = the
 * system's index of each local atom. Free with t_domain_free. */
#include "halox/md.h"
typedef struct t_domain {
    hx_local_set set;
    hx_zone_range rg[HX_MAX_ZONES];
    double *x, *q;
    int *type, *mol, *gid;
} t_domain;
void t_domain_build(const hx_system *s, const int *owner, const int g[3], int dom, t_domain *ds);
void t_domain_free(t_domain *ds);

/* hx_md_params_default for model with velocities generated at 300 K from seed and a 2 fs step:
 * the start the MD tests share (each then sets its cut-offs, backend, threads). */
void t_md_params(hx_md_params *p, const char *model, uint64_t seed);
/* The largest distance between the positions of a and b (same atoms, a's box), each the
 * minimum image: how far two runs of the same system have gone apart. */
double t_max_pos_dev(const hx_system *a, const hx_system *b);

#endif

/* Tests that run under mpiexec use the library's program-level MPI entry points (only
 * src/comm/mpi.c calls MPI). t_mpi_begin starts MPI and returns the world communicator (one
 * domain per rank); t_mpi_end sums the failures of all ranks, prints the summary on rank 0,
 * destroys the communicator, finalizes MPI and returns the exit code. */
struct hx_comm;
void t_mpi_begin(int *argc, char ***argv, struct hx_comm **world, int *rank, int *size);
int t_mpi_end(struct hx_comm **world, const char *name, int ncases);

/* GPU tests: exit code 77 makes CTest report SKIPPED. t_gpu_require() returns 1 when a CUDA
 * device is usable; otherwise it prints "SKIPPED: <reason>" and the caller returns
 * T_SKIP_CODE. */
#define T_SKIP_CODE 77
int t_gpu_require(const char *name);
