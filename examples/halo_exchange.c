/* Using halox from another code: build a halo plan for your own particles and run one coordinate
 * and one force exchange, with only the public API (include/halox).
 *
 * The example holds every domain in one process (the serial communicator); with MPI, create the
 * communicator with hx_comm_create_mpi(&comm_world, ...) and pass only your rank's domain.
 * It checks what it computes and exits non-zero when something is wrong. */
#include <halox/halox.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        hx_status st_ = (call);                                                                    \
        if (st_ != HX_OK) {                                                                        \
            fprintf(stderr, "%s failed:\n%s\n", #call, hx_last_error());                           \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

int main(void)
{
    /* 4000 point particles on a jittered lattice in a 5 nm box, cut-off 0.9 nm, 2x2x2 domains. */
    const double box[3] = {5.0, 5.0, 5.0}, rc = 0.9;
    const int n = 4000;
    double *x = malloc(sizeof(double) * 3 * n);
    unsigned long long s = 12345;
    int side = (int)ceil(cbrt((double)n));
    for (int i = 0; i < n; i++) {
        int c[3] = {i % side, (i / side) % side, i / (side * side)};
        for (int d = 0; d < 3; d++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            double jitter = ((double)(s >> 11) / 9007199254740992.0 - 0.5) * 0.05;
            x[3 * i + d] = fmod((c[d] + 0.5) * box[d] / side + jitter + box[d], box[d]);
        }
    }

    hx_dd *dd = NULL;
    hx_dd_params p = {{box[0], box[1], box[2]}, {2, 2, 2}, rc + 0.1, rc};
    CHECK(hx_dd_create(&p, &dd));
    int nd = hx_dd_ndomains(dd);

    /* Sort the particles into their domains (home atoms). */
    int *nhome = calloc(nd, sizeof(int));
    double **xl = calloc(nd, sizeof(double *));
    double **fl = calloc(nd, sizeof(double *));
    for (int i = 0; i < n; i++)
        nhome[hx_dd_domain_of_point(dd, &x[3 * i])]++;
    for (int d = 0; d < nd; d++) {
        xl[d] = malloc(sizeof(double) * 3 * nhome[d]);
        nhome[d] = 0;
    }
    for (int i = 0; i < n; i++) {
        int d = hx_dd_domain_of_point(dd, &x[3 * i]);
        for (int k = 0; k < 3; k++)
            xl[d][3 * nhome[d] + k] = x[3 * i + k];
        nhome[d]++;
    }

    hx_comm *comm = NULL;
    hx_plan *plan = NULL;
    hx_halo *halo = NULL;
    CHECK(hx_comm_create_serial(nd, &comm));
    CHECK(hx_plan_create(dd, comm, &plan));
    CHECK(hx_plan_build(plan, nhome, (const double *const *)xl));
    /* The exchange (here the host backend in double) owns the local arrays [home | halo]. */
    CHECK(hx_halo_create(plan, comm, NULL, &halo));
    long halo_total = 0;
    for (int d = 0; d < nd; d++) {
        const hx_domain_plan *dp = hx_plan_domain(plan, d);
        double *x = hx_halo_x(halo, d);
        memcpy(x, xl[d], sizeof(double) * 3 * dp->n_home);
        free(xl[d]);
        xl[d] = x;
        fl[d] = hx_halo_f(halo, d);
        memset(fl[d], 0, sizeof(double) * 3 * dp->n_local);
        halo_total += dp->n_local - dp->n_home;
        /* A force of 1 on every halo copy: each owner must get back one unit per copy. */
        for (int i = dp->n_home; i < dp->n_local; i++)
            fl[d][3 * i] = 1.0;
    }
    CHECK(hx_halo_exchange_x(halo, NULL));
    CHECK(hx_halo_exchange_f(halo, NULL));

    double returned = 0;
    for (int d = 0; d < nd; d++) {
        const hx_domain_plan *dp = hx_plan_domain(plan, d);
        for (int i = 0; i < dp->n_home; i++)
            returned += fl[d][3 * i];
    }
    printf("%d domains, %d pulses, %ld halo atoms; forces returned to owners: %.0f\n", nd,
           hx_dd_npulses(dd), halo_total, returned);
    int ok = fabs(returned - (double)halo_total) < 0.5;
    printf("%s\n", ok ? "OK" : "MISMATCH");

    free(xl);
    free(fl);
    free(nhome);
    free(x);
    hx_halo_destroy(&halo);
    hx_plan_destroy(&plan);
    hx_comm_destroy(&comm);
    hx_dd_destroy(&dd);
    return ok ? 0 : 1;
}
