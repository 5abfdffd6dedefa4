/* Collective safety: one rank fails, every rank returns.
 *
 * A collective that one rank leaves early (bad arguments, an allocation that failed there only)
 * while the others enter it hangs the job. For each collective of src/comm and for hx_migrate,
 * one rank is made to fail (rank 0 and the last rank in turn): with an invalid argument on that
 * rank only, or with an allocation failure injected there (src/core/fault.h). Every rank must
 * return an error: the failing rank its own status and exact message, the others HX_ERR_REMOTE
 * with "rank R failed (STATUS): message". Afterwards the communicator must still work (a sum
 * over the ranks and the failed operation repeated without the fault, with exact results).
 * A watchdog alarm turns a hang into a failure naming the case; CTest's timeout is the
 * backstop. Messages in pieces (the MPI transport's large-message path) are checked with a
 * 7-byte piece size. */
#include "halox/halox.h"
#include "halox/build.h"
#include "halox/error.h"
#include "comm/comm_impl.h"
#include "core/fault.h"
#include "testutil.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WATCHDOG_SECONDS 30

static int g_rank, g_size;
static const char *volatile g_case = "start";

static void on_alarm(int sig)
{
    (void)sig;
    static const char head[] = "FAIL test_comm_fail: hung in case: ";
    const char *c = g_case;
    /* async-signal-safe output only */
    if (write(2, head, sizeof head - 1) < 0 || write(2, c, strlen(c)) < 0 || write(2, "\n", 1) < 0)
        _exit(3);
    _exit(3);
}

static void begin(const char *name)
{
    g_case = name;
    alarm(WATCHDOG_SECONDS);
}

/* The failing rank gets `want` with exactly `msg`; every other rank HX_ERR_REMOTE naming it. */
static void expect_fail(hx_status st, int culprit, hx_status want, const char *msg)
{
    const char *got = hx_last_error_message();
    if (g_rank == culprit) {
        T_CHECK(st == want && strcmp(got, msg) == 0,
                "%s, rank %d failing: returned %s \"%s\", expected %s \"%s\"", g_case, culprit,
                hx_status_name(st), got, hx_status_name(want), msg);
        return;
    }
    char exp[1400];
    snprintf(exp, sizeof exp, "rank %d failed (%s): %s", culprit, hx_status_name(want), msg);
    T_CHECK(st == HX_ERR_REMOTE && strcmp(got, exp) == 0,
            "%s, rank %d failing, seen on rank %d: returned %s \"%s\", expected HX_ERR_REMOTE "
            "\"%s\"",
            g_case, culprit, g_rank, hx_status_name(st), got, exp);
}

/* The communicator still works: sum of rank+1 over the ranks, exact. */
static void check_alive(hx_comm *c)
{
    double in = g_rank + 1.0, out = -1.0;
    T_OK(hx_comm_sum_f64(c, &in, &out, 1));
    T_CHECK(out == g_size * (g_size + 1) / 2.0, "%s: afterwards the sum over %d ranks is %g",
            g_case, g_size, out);
    alarm(0);
}

static void sum_cases(hx_comm *c, int culprit, int *ncases)
{
    double in[3] = {1, 2, 3}, out[3];
    begin("sum_f64 with a NULL input on one rank");
    hx_status st = hx_comm_sum_f64(c, g_rank == culprit ? NULL : in, out, 3);
    expect_fail(st, culprit, HX_ERR_INVALID_ARG, "hx_comm_sum_f64: NULL argument");
    check_alive(c);

    /* an agreement folded into a sum: one rank's failure reaches every rank with its message,
     * and without one the values are summed as by hx_comm_sum_f64 */
    begin("agree_sum_f64 with a failure on one rank");
    hx_status local = HX_OK;
    if (g_rank == culprit)
        local =
            hx_error_set(HX_ERR_INTERNAL, __FILE__, __LINE__, __func__, "the pair search failed");
    double agreed[3] = {-1, -1, -1};
    st = hx_comm_agree_sum_f64(c, local, g_rank == culprit ? NULL : in, agreed, 3);
    expect_fail(st, culprit, HX_ERR_INTERNAL, "the pair search failed");
    T_CHECK(agreed[0] == -1 && agreed[1] == -1 && agreed[2] == -1,
            "%s: rank %d's output was written after a failed agreement", g_case, g_rank);
    check_alive(c);
    begin("agree_sum_f64 without a failure");
    T_OK(hx_comm_agree_sum_f64(c, HX_OK, in, agreed, 3));
    T_CHECK(agreed[0] == g_size && agreed[1] == 2.0 * g_size && agreed[2] == 3.0 * g_size,
            "%s: sums %g %g %g over %d ranks", g_case, agreed[0], agreed[1], agreed[2], g_size);
    alarm(0);

    /* Growth of the reduction buffers past their capacity, failing on one rank; n grows 4x per
     * call so that every call of this case needs new buffers (capacity = n then). */
    static int n = 100;
    n *= 4;
    double *big = malloc((size_t)n * sizeof *big), *sum = malloc((size_t)n * sizeof *sum);
    for (int k = 0; k < n; k++)
        big[k] = g_rank + k;
    begin("sum_f64 whose buffers must grow, allocation failing on one rank");
    if (g_rank == culprit)
        hx_fault_arm("mpi.reserve");
    st = hx_comm_sum_f64(c, big, sum, n);
    hx_fault_arm(NULL);
    char msg[128];
    snprintf(msg, sizeof msg, "out of memory for reduction buffers of %d values", n);
    expect_fail(st, culprit, HX_ERR_NOMEM, msg);
    check_alive(c);
    begin("sum_f64 whose buffers must grow, repeated without the fault");
    T_OK(hx_comm_sum_f64(c, big, sum, n));
    for (int k = 0; k < n; k++)
        if (sum[k] != g_size * (g_size - 1) / 2.0 + (double)g_size * k) {
            T_FAIL("%s: sum[%d] = %.17g, expected %.17g", g_case, k, sum[k],
                   g_size * (g_size - 1) / 2.0 + (double)g_size * k);
            break;
        }
    alarm(0);
    free(big);
    free(sum);

    long long li[2] = {g_rank, -g_rank}, lo[2];
    begin("max_i64 with a NULL input on one rank");
    st = hx_comm_max_i64(c, li, g_rank == culprit ? NULL : lo, 2);
    expect_fail(st, culprit, HX_ERR_INVALID_ARG, "hx_comm_max_i64: NULL argument");
    check_alive(c);
    begin("max_i64 afterwards");
    T_OK(hx_comm_max_i64(c, li, lo, 2));
    T_CHECK(lo[0] == g_size - 1 && lo[1] == 0, "%s: max %lld %lld", g_case, lo[0], lo[1]);
    alarm(0);
    *ncases += 4;
}

static void gather_cases(hx_comm *c, int culprit, int *ncases)
{
    /* rank r sends r+1 bytes of value r */
    char blk[64];
    memset(blk, g_rank, sizeof blk);
    const void *in[1] = {blk};
    size_t bytes[1] = {(size_t)g_rank + 1};
    size_t *counts = malloc((size_t)g_size * sizeof *counts);
    void *all = NULL;
    const void *none[1] = {NULL};
    begin("gather_bytes with a NULL block on one rank");
    hx_status st = hx_comm_gather_bytes(c, g_rank == culprit ? none : in, bytes, &all, counts);
    expect_fail(st, culprit, HX_ERR_INVALID_ARG,
                "hx_comm_gather_bytes: NULL block with a positive size");
    T_CHECK(all == NULL, "%s: output buffer set after a failure", g_case);
    check_alive(c);
    if (culprit == 0) {
        begin("gather_bytes with rank 0 out of memory for the result");
        if (g_rank == 0)
            hx_fault_arm("mpi.gather");
        st = hx_comm_gather_bytes(c, in, bytes, &all, counts);
        hx_fault_arm(NULL);
        char msg[128];
        snprintf(msg, sizeof msg, "out of memory gathering %d bytes on rank 0",
                 g_size * (g_size + 1) / 2);
        expect_fail(st, 0, HX_ERR_NOMEM, msg);
        T_CHECK(all == NULL, "%s: output buffer set after a failure", g_case);
        check_alive(c);
        (*ncases)++;
    }
    begin("gather_bytes afterwards");
    T_OK(hx_comm_gather_bytes(c, in, bytes, &all, counts));
    if (g_rank == 0 && all) {
        const unsigned char *b = all;
        for (int r = 0, off = 0; r < g_size; off += r + 1, r++) {
            T_CHECK(counts[r] == (size_t)r + 1, "%s: rank %d sent %zu bytes, %d expected", g_case,
                    r, counts[r], r + 1);
            for (int k = 0; k <= r; k++)
                if (b[off + k] != r) {
                    T_FAIL("%s: byte %d of rank %d is %d", g_case, k, r, b[off + k]);
                    break;
                }
        }
    } else {
        T_CHECK(all == NULL, "%s: rank %d got a buffer", g_case, g_rank);
    }
    alarm(0);
    free(all);
    free(counts);

    long long v[2] = {7, 8};
    begin("bcast_bytes with a NULL buffer on one rank");
    st = hx_comm_bcast_bytes(c, g_rank == culprit ? NULL : v, sizeof v);
    expect_fail(st, culprit, HX_ERR_INVALID_ARG, "hx_comm_bcast_bytes: NULL buffer");
    check_alive(c);
    *ncases += 3;
}

static void system_cases(hx_comm *c, int culprit, int *ncases)
{
    hx_system *sys = NULL;
    if (culprit == 0) {
        begin("system_bcast without a system on rank 0");
        hx_status st = hx_system_bcast(c, &sys);
        expect_fail(st, 0, HX_ERR_INVALID_ARG, "hx_system_bcast: no system on rank 0");
        T_CHECK(sys == NULL, "%s: rank %d has a system", g_case, g_rank);
        check_alive(c);
        (*ncases)++;
    }
    hx_system *ref = NULL;
    T_OK(hx_build_water("spce", 300, 0.0, 5, &ref));
    if (g_rank == 0)
        T_OK(hx_system_copy(ref, &sys));
    if (culprit != 0) {
        begin("system_bcast with an allocation failing on a receiving rank");
        if (g_rank == culprit)
            hx_fault_arm("system_bcast");
        hx_status st = hx_system_bcast(c, &sys);
        hx_fault_arm(NULL);
        expect_fail(st, culprit, HX_ERR_NOMEM, "out of memory for the system copy");
        T_CHECK(g_rank == 0 ? sys != NULL : sys == NULL,
                "%s: rank %d %s a system after the failure", g_case, g_rank, sys ? "has" : "lost");
        check_alive(c);
        (*ncases)++;
    }
    begin("system_bcast afterwards");
    T_OK(hx_system_bcast(c, &sys));
    T_CHECK(sys && sys->natoms == ref->natoms && sys->nmol == ref->nmol &&
                memcmp(sys->x, ref->x, 3 * (size_t)ref->natoms * sizeof *ref->x) == 0 &&
                memcmp(sys->box, ref->box, sizeof ref->box) == 0,
            "%s: rank %d received a different system", g_case, g_rank);
    alarm(0);
    hx_system_destroy(&sys);
    hx_system_destroy(&ref);
    (*ncases)++;
}

/* One atom per domain at the centre of its cell of a 1D grid: nothing migrates, but every
 * direction still allocates its receive buffer, where the fault strikes. */
static void migrate_case(hx_comm *c, int culprit, int *ncases)
{
    hx_dd_params p = {{3.0 * g_size, 3.0, 3.0}, {g_size, 1, 1}, 1.0, 0.9};
    hx_dd *dd = NULL;
    T_OK(hx_dd_create(&p, &dd));
    hx_home h = {0};
    h.natoms = h.nmol = 1;
    h.cap_atoms = h.cap_mol = 2;
    h.gid = malloc(2 * sizeof *h.gid);
    h.mol_gid = malloc(2 * sizeof *h.mol_gid);
    h.mol_start = malloc(2 * sizeof *h.mol_start);
    h.x = calloc(6, sizeof *h.x);
    h.v = calloc(6, sizeof *h.v);
    h.gid[0] = h.mol_gid[0] = g_rank;
    h.mol_start[0] = 0;
    h.mol_start[1] = 1;
    h.x[0] = 3.0 * g_rank + 1.5;
    h.x[1] = h.x[2] = 1.5;
    hx_home *homes[1] = {&h};
    begin("migrate with a receive buffer failing on one rank");
    if (g_rank == culprit)
        hx_fault_arm("migrate.recv");
    hx_status st = hx_migrate(dd, c, homes, 10);
    hx_fault_arm(NULL);
    char msg[128];
    snprintf(msg, sizeof msg, "out of memory for 0 migrating values from domain %d",
             (culprit + g_size - 1) % g_size);
    expect_fail(st, culprit, HX_ERR_NOMEM, msg);
    check_alive(c);
    begin("migrate afterwards");
    T_OK(hx_migrate(dd, c, homes, 10));
    T_CHECK(h.natoms == 1 && h.gid[0] == g_rank, "%s: rank %d holds %d atoms", g_case, g_rank,
            h.natoms);
    alarm(0);
    hx_home_free(&h);
    hx_dd_destroy(&dd);
    *ncases += 2;
}

static void create_case(int culprit, int *ncases)
{
    hx_comm *c = NULL;
    begin("comm_create_mpi with an allocation failing on one rank");
    if (g_rank == culprit)
        hx_fault_arm("mpi.create");
    hx_status st = hx_comm_create_world(&c);
    hx_fault_arm(NULL);
    if (g_rank == culprit)
        T_CHECK(
            st == HX_ERR_NOMEM && c == NULL &&
                strcmp(hx_last_error_message(), "out of memory creating the MPI communicator") == 0,
            "%s: rank %d returned %s \"%s\"", g_case, g_rank, hx_status_name(st),
            hx_last_error_message());
    else
        T_CHECK(st == HX_ERR_REMOTE && c == NULL &&
                    strcmp(hx_last_error_message(),
                           "another rank ran out of memory creating the MPI communicator") == 0,
                "%s: rank %d returned %s \"%s\"", g_case, g_rank, hx_status_name(st),
                hx_last_error_message());
    hx_comm_destroy(&c);
    alarm(0);
    (*ncases)++;
}

/* Ring exchange in 7-byte pieces: every size from 0 to 40 bytes arrives intact. */
static void piece_case(hx_comm *c, int *ncases)
{
    begin("sendrecv in pieces of 7 bytes");
    hx_comm_mpi_set_piece_bytes(c, 7);
    unsigned char sbuf[40], rbuf[40];
    for (int len = 0; len <= 40; len++) {
        for (int k = 0; k < len; k++)
            sbuf[k] = (unsigned char)(g_rank * 41 + k + len);
        memset(rbuf, 0xee, sizeof rbuf);
        int dest[1] = {(g_rank + 1) % g_size}, src[1] = {(g_rank + g_size - 1) % g_size};
        const void *sp[1] = {sbuf};
        void *rp[1] = {rbuf};
        size_t sb[1] = {(size_t)len}, rb[1] = {(size_t)len};
        T_OK(hx_comm_sendrecv(c, dest, sp, sb, src, rp, rb));
        for (int k = 0; k < len; k++)
            if (rbuf[k] != (unsigned char)(src[0] * 41 + k + len)) {
                T_FAIL("%s: %d-byte message from rank %d: byte %d is %d", g_case, len, src[0], k,
                       rbuf[k]);
                break;
            }
    }
    hx_comm_mpi_set_piece_bytes(c, (size_t)1 << 30);
    alarm(0);
    (*ncases)++;
}

int main(int argc, char **argv)
{
    hx_comm *world = NULL;
    t_mpi_begin(&argc, &argv, &world, &g_rank, &g_size);
    signal(SIGALRM, on_alarm);
    hx_log_set_level(HX_LOG_ERROR);
    int ncases = 0;
    if (world) {
        const int culprits[2] = {0, g_size - 1};
        for (int k = 0; k < (g_size > 1 ? 2 : 1); k++) {
            sum_cases(world, culprits[k], &ncases);
            gather_cases(world, culprits[k], &ncases);
            system_cases(world, culprits[k], &ncases);
            if (g_size > 1) /* one domain: nothing to migrate, no buffers */
                migrate_case(world, culprits[k], &ncases);
            create_case(culprits[k], &ncases);
        }
        piece_case(world, &ncases);
    }
    return t_mpi_end(&world, "test_comm_fail", ncases);
}
