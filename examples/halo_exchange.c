/* Using halox from another code: decompose your own particles, build the halo plan and run one
 * coordinate and one force exchange, with only the public API (include/halox).
 *
 * The layers, as the engine uses them: a system (atoms grouped in molecules) -> the
 * decomposition (hx_decomp: grid, molecules to domains, plan, local atom sets) -> the halo
 * exchange (hx_halo: a backend by name, owning the local coordinate and force arrays).
 *
 * The example holds every domain in one process (the serial communicator); with MPI, create the
 * communicator with hx_comm_create_mpi(&comm_world, ...) and each rank holds its own domain.
 * It checks what it computes and exits non-zero when something is wrong. */
#include <halox/decomp.h>
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
    /* 4000 point particles (one-atom molecules) on a jittered lattice in a 5 nm box, cut-off
     * 0.9 nm, pair-list radius 1.0 nm, 2x2x2 domains. */
    const int n = 4000;
    hx_system *sys = NULL;
    CHECK(hx_system_create(n, n, &sys));
    sys->box[0] = sys->box[1] = sys->box[2] = 5.0;
    unsigned long long s = 12345;
    int side = (int)ceil(cbrt((double)n));
    for (int i = 0; i < n; i++) {
        int c[3] = {i % side, (i / side) % side, i / (side * side)};
        for (int d = 0; d < 3; d++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            double jitter = ((double)(s >> 11) / 9007199254740992.0 - 0.5) * 0.05;
            sys->x[3 * i + d] =
                fmod((c[d] + 0.5) * sys->box[d] / side + jitter + sys->box[d], sys->box[d]);
        }
        sys->mol_start[i] = i;
    }
    sys->mol_start[n] = n;

    hx_comm *comm = NULL;
    hx_decomp *dec = NULL;
    hx_halo *halo = NULL;
    CHECK(hx_comm_create_serial(8, &comm));
    hx_decomp_params dp = {0.9, 1.0, {2, 2, 2}};
    CHECK(hx_decomp_create(sys, &dp, comm, &dec));
    CHECK(hx_decomp_update_local(dec)); /* global ids of the halo atoms */
    /* The exchange (the host backend in double here; "nvshmem" etc. on GPUs) owns the local
     * arrays [home | halo]. */
    CHECK(hx_halo_create(hx_decomp_plan(dec), comm, NULL, &halo));
    const int nd = hx_decomp_nlocal(dec);
    long halo_total = 0;
    for (int d = 0; d < nd; d++) {
        const hx_decomp_local *loc = hx_decomp_get_local(dec, d);
        double *x = hx_halo_x(halo, d), *f = hx_halo_f(halo, d);
        memcpy(x, loc->home->x, sizeof(double) * 3 * loc->n_home);
        /* A force of 1 on every halo copy: each owner must get back one unit per copy. */
        for (int i = 0; i < loc->n_local; i++)
            f[3 * i] = f[3 * i + 1] = f[3 * i + 2] = i >= loc->n_home ? 1.0 : 0.0;
        halo_total += loc->n_local - loc->n_home;
    }
    CHECK(hx_halo_exchange_x(halo, NULL));
    CHECK(hx_halo_exchange_f(halo, NULL));

    double returned = 0, worst = 0;
    for (int d = 0; d < nd; d++) {
        const hx_decomp_local *loc = hx_decomp_get_local(dec, d);
        const double *x = hx_halo_x(halo, d), *f = hx_halo_f(halo, d);
        for (int i = 0; i < loc->n_home; i++)
            returned += f[3 * i];
        /* every halo atom is its global particle, shifted by whole box vectors */
        for (int i = loc->n_home; i < loc->n_local; i++)
            for (int k = 0; k < 3; k++) {
                double dx = x[3 * i + k] - sys->x[3 * loc->gid[i] + k];
                dx -= sys->box[k] * nearbyint(dx / sys->box[k]);
                worst = fmax(worst, fabs(dx));
            }
    }
    printf("%d domains, %d pulses, %ld halo atoms; forces returned to owners: %.0f; largest halo "
           "coordinate error %.3g nm\n",
           nd, hx_dd_npulses(hx_decomp_dd(dec)), halo_total, returned, worst);
    int ok = fabs(returned - (double)halo_total) < 0.5 && worst < 1e-12;
    printf("%s\n", ok ? "OK" : "MISMATCH");

    hx_halo_destroy(&halo);
    hx_decomp_destroy(&dec);
    hx_comm_destroy(&comm);
    hx_system_destroy(&sys);
    return ok ? 0 : 1;
}
