/* Non-bonded benchmark: µs per pair search and per force call on a water box, double and mixed
 * precision, for several thread counts; plus the accuracy of the mixed kernel against the double
 * one on the same list. Minimum over repetitions (the machine is shared).
 *
 *   nb_bench [--gro FILE | --atoms N] [--seed S] [--rc 1.0] [--rlist R] [--nstlist 10]
 *            [--threads 1,2] [--reps 20]
 *
 * Without --gro an SPC/E box of --atoms (default 45198) is built with seed --seed (default 1), as
 * `halox build water --atoms 45198 --seed 1`. rlist defaults to rc + 0.1 nm. The "step" column
 * is force + search/nstlist, the non-bonded part of one MD step; "fonly" and "stepf" the same
 * with forces only (e = NULL), as on steps whose energies are not reported. */
#include "halox/build.h"
#include "halox/io.h"
#include "halox/md.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#define CHECK(call)                                                                                \
    do {                                                                                           \
        hx_status st_ = (call);                                                                    \
        if (st_ != HX_OK) {                                                                        \
            fprintf(stderr, "nb_bench: %s failed: %s\n", #call, hx_last_error());                  \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

int main(int argc, char **argv)
{
    const char *gro = NULL;
    int natoms = 45198, nstlist = 10, reps = 20;
    unsigned long long seed = 1;
    double rc = 1.0, rlist = 0.0;
    char threads_arg[64] = "1,2";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            fprintf(stderr, "nb_bench: %s needs a value\n", a);
            return 2;
        }
        if (!strcmp(a, "--gro"))
            gro = v;
        else if (!strcmp(a, "--atoms"))
            natoms = atoi(v);
        else if (!strcmp(a, "--seed"))
            seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--rc"))
            rc = atof(v);
        else if (!strcmp(a, "--rlist"))
            rlist = atof(v);
        else if (!strcmp(a, "--nstlist"))
            nstlist = atoi(v);
        else if (!strcmp(a, "--threads"))
            snprintf(threads_arg, sizeof threads_arg, "%s", v);
        else if (!strcmp(a, "--reps"))
            reps = atoi(v);
        else {
            fprintf(stderr, "nb_bench: unknown option %s (see the comment in bench/nb_bench.c)\n",
                    a);
            return 2;
        }
        i++;
    }
    if (rlist <= 0)
        rlist = rc + 0.1;
    hx_system *sys = NULL;
    if (gro)
        CHECK(hx_gro_read(gro, &sys));
    else
        CHECK(hx_build_water("spce", natoms, 0.0, seed, &sys));
    hx_forcefield *ff = NULL;
    CHECK(hx_forcefield_create("spce", &ff));
    CHECK(hx_forcefield_apply(ff, sys));
    int n = sys->natoms;
    int *mol = malloc(sizeof(int) * (size_t)n);
    double *fd = malloc(sizeof(double) * 3 * (size_t)n);
    double *fm = malloc(sizeof(double) * 3 * (size_t)n);
    hx_zone_range rg;
    hx_local_set set;
    hx_local_set_from_system(&set, sys, mol, &rg);
    hx_nb_params p = {rc, 0.0, 1.0};
    printf("nb_bench: %d atoms, box %.4f nm, rc %.3f, rlist %.3f, nstlist %d, min of %d reps\n", n,
           sys->box[0], rc, rlist, nstlist, reps);
    printf("%-8s %-12s %7s %10s %10s %10s %10s %10s\n", "threads", "kernel", "pairs/M", "search_us",
           "force_us", "fonly_us", "step_ms", "stepf_ms");
    char *save = NULL;
    for (char *tok = strtok_r(threads_arg, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int nth = atoi(tok);
        for (int prec = 0; prec < 2; prec++) {
            hx_nb *nb = NULL;
            CHECK(hx_nb_create(ff, &p, nth, &nb));
            CHECK(hx_nb_set_precision(nb, prec ? HX_NB_MIXED : HX_NB_DOUBLE));
            double ts = INFINITY, tf = INFINITY, tl = INFINITY;
            hx_nb_energies e;
            for (int r = 0; r < reps; r++) {
                long long missed = 0;
                double t0 = now();
                CHECK(hx_nb_search(nb, &set, rlist, 1, &missed));
                double t1 = now();
                CHECK(hx_nb_compute(nb, &set, prec ? fm : fd, &e, 0));
                double t2 = now();
                CHECK(hx_nb_compute(nb, &set, prec ? fm : fd, NULL, 0));
                double t3 = now();
                ts = fmin(ts, t1 - t0);
                tf = fmin(tf, t2 - t1);
                tl = fmin(tl, t3 - t2);
            }
            CHECK(hx_nb_compute(nb, &set, prec ? fm : fd, &e, 0));
            printf("%-8d %-12s %7.2f %10.0f %10.0f %10.0f %10.2f %10.2f\n", nth,
                   hx_nb_kernel_name(nb), 1e-6 * (double)hx_nb_npairs(nb), 1e6 * ts, 1e6 * tf,
                   1e6 * tl, 1e3 * (tf + ts / nstlist), 1e3 * (tl + ts / nstlist));
            if (prec == 1) {
                /* accuracy of the mixed kernel against the double one (same thread count) */
                hx_nb_energies ed;
                CHECK(hx_nb_set_precision(nb, HX_NB_DOUBLE));
                CHECK(hx_nb_compute(nb, &set, fd, &ed, 0));
                double fbig = 0, emax = 0, s2 = 0, f2 = 0;
                for (int k = 0; k < 3 * n; k++) {
                    fbig = fmax(fbig, fabs(fd[k]));
                    emax = fmax(emax, fabs(fm[k] - fd[k]));
                    s2 += (fm[k] - fd[k]) * (fm[k] - fd[k]);
                    f2 += fd[k] * fd[k];
                }
                printf("         energies double: LJ %.6f Coulomb %.6f; mixed: LJ %.6f Coulomb "
                       "%.6f kJ/mol\n",
                       ed.lj, ed.coulomb, e.lj, e.coulomb);
                printf("         mixed vs double: LJ rel %.2e, Coulomb rel %.2e, force max "
                       "|df|/max|f| %.2e, rms |df|/rms|f| %.2e\n",
                       fabs(e.lj - ed.lj) / fabs(ed.lj),
                       fabs(e.coulomb - ed.coulomb) / fabs(ed.coulomb), emax / fbig, sqrt(s2 / f2));
            }
            hx_nb_destroy(&nb);
        }
    }
    free(mol);
    free(fd);
    free(fm);
    hx_forcefield_destroy(&ff);
    hx_system_destroy(&sys);
    return 0;
}
