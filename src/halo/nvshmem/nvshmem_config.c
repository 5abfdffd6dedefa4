/* The NVSHMEM exchange's configuration (src/halo/nvshmem/nvshmem_config.h): resolved on rank 0 from
 * hx_halo_config and rank 0's environment, checked there, broadcast to every rank. */
#include "halo/nvshmem/nvshmem_config.h"
#include "core/error.h"
#include "core/wait.h"
#include "halox/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Rank 0's reading: everything that can be wrong is said here, naming the variable. */
static hx_status resolve(const hx_halo_config *cfg, hx_nv_config *c)
{
    memset(c, 0, sizeof *c);
    /* deadline: the configuration, else half the step deadline of every wait of halox
     * (HALOX_WAIT_TIMEOUT, default 60 s: 30 s here, so that the device's report comes before
     * the host waits give up, src/core/wait.h); on in every build, a clock read every 16th poll */
    double t = cfg->wait_timeout;
    if (t < 0) {
        HX_TRY(hx_wait_timeout_check());
        t = hx_wait_timeout_device();
    }
    c->timeout = t > 0 ? t : 0;
    /* polling backoff: the configuration, else HALOX_NVSHMEM_BACKOFF_NS, else the default */
    int b = cfg->wait_backoff_ns;
    const char *be = getenv("HALOX_NVSHMEM_BACKOFF_NS");
    if (b < 0)
        b = be ? atoi(be) : HX_NVSHMEM_BACKOFF_DEFAULT_NS;
    HX_CHECK(b >= 0 && b <= 1000000, HX_ERR_INVALID_ARG,
             "nvshmem wait backoff of %d ns (hx_halo_config.wait_backoff_ns or "
             "HALOX_NVSHMEM_BACKOFF_NS): give 0 (spin) to 1000000 ns",
             b);
    c->backoff_ns = b;
    const char *fe = getenv("HALOX_NVSHMEM_FENCE");
    HX_CHECK(!fe || !strcmp(fe, "release") || !strcmp(fe, "block") || !strcmp(fe, "thread"),
             HX_ERR_INVALID_ARG, "HALOX_NVSHMEM_FENCE='%s': give 'release', 'block' or 'thread'",
             fe);
    c->fence_mode = !fe || !strcmp(fe, "release") ? HX_NV_FENCE_RELEASE
                    : !strcmp(fe, "block")        ? HX_NV_FENCE_BLOCK
                                                  : HX_NV_FENCE_THREAD;
    const char *sc = getenv("HALOX_NVSHMEM_SCOPE");
    HX_CHECK(!sc || !strcmp(sc, "auto") || !strcmp(sc, "sys"), HX_ERR_INVALID_ARG,
             "HALOX_NVSHMEM_SCOPE='%s': give 'auto' or 'sys'", sc);
    c->scope_sys = sc && !strcmp(sc, "sys");
    const char *pd = getenv("HALOX_NVSHMEM_PDL");
    HX_CHECK(!pd || !strcmp(pd, "0") || !strcmp(pd, "1"), HX_ERR_INVALID_ARG,
             "HALOX_NVSHMEM_PDL='%s': give 0 or 1", pd);
    c->pdl = !(pd && !strcmp(pd, "0"));
    const char *ce = getenv("HALOX_NVSHMEM_CHUNK");
    if (ce && ce[0]) {
        char *end = NULL;
        const long v = strtol(ce, &end, 10);
        HX_CHECK(end != ce && !*end && v >= 1024 && v % 1024 == 0 && v <= (1L << 24),
                 HX_ERR_INVALID_ARG,
                 "HALOX_NVSHMEM_CHUNK='%s': give a multiple of 1024 atoms per block, at most %d",
                 ce, 1 << 24);
        c->chunk = (int)v;
    }
    const char *mps = getenv("HALOX_ALLOW_NO_MPS");
    c->allow_no_mps = mps && !strcmp(mps, "1");
    /* test hooks */
    c->stress_seed = cfg->stress_seed;
    const char *tp = getenv("HALOX_NVSHMEM_TRACE");
    if (tp && tp[0]) {
        const int n = snprintf(c->trace, sizeof c->trace, "%s", tp);
        HX_CHECK(n > 0 && (size_t)n < sizeof c->trace - 32, HX_ERR_INVALID_ARG,
                 "HALOX_NVSHMEM_TRACE: prefix too long (%zu characters)", strlen(tp));
    }
    c->wh_dir = -1;
    const char *w = getenv("HALOX_TEST_WITHHOLD");
    if (w && w[0]) {
        char dir = 0;
        HX_CHECK(sscanf(w, "%d:%c:%d:%llu", &c->wh_rank, &dir, &c->wh_pulse, &c->wh_step) == 4 &&
                     (dir == 'x' || dir == 'f'),
                 HX_ERR_INVALID_ARG, "HALOX_TEST_WITHHOLD='%s': give rank:x|f:pulse:step", w);
        c->wh_dir = dir == 'x' ? 0 : 1;
    }
    const char *inj = getenv("HALOX_TEST_INJECT");
    HX_CHECK(!inj || !inj[0] || !strcmp(inj, "x-early") || !strcmp(inj, "f-early"),
             HX_ERR_INVALID_ARG, "HALOX_TEST_INJECT='%s': give x-early or f-early", inj);
    c->inject = inj && !strcmp(inj, "x-early")   ? HX_NV_INJECT_X_EARLY
                : inj && !strcmp(inj, "f-early") ? HX_NV_INJECT_F_EARLY
                                                 : HX_NV_INJECT_NONE;
    return HX_OK;
}

void hx_nv_config_describe(const hx_nv_config *c, char *buf, size_t len)
{
    char deadline[32] = "off", chunk[32] = "automatic";
    if (c->timeout > 0)
        snprintf(deadline, sizeof deadline, "%.3g s", c->timeout);
    if (c->chunk > 0)
        snprintf(chunk, sizeof chunk, "%d", c->chunk);
    const int n = snprintf(
        buf, len,
        "deadline %s, wait backoff %d ns, publish by %s, scope %s, programmatic launch %s, "
        "atoms per block %s, several PEs per GPU without MPS %s",
        deadline, c->backoff_ns,
        c->fence_mode == HX_NV_FENCE_RELEASE ? "release atomic"
        : c->fence_mode == HX_NV_FENCE_BLOCK ? "fence per block"
                                             : "fence per thread",
        c->scope_sys ? "sys" : "auto", c->pdl ? "on" : "off", chunk,
        c->allow_no_mps ? "allowed" : "refused");
    if (n > 0 && (size_t)n < len && (c->stress_seed || c->trace[0] || c->wh_dir >= 0 || c->inject))
        snprintf(buf + n, len - (size_t)n, "; test hooks:%s%s%s%s", c->stress_seed ? " stress" : "",
                 c->trace[0] ? " trace" : "", c->wh_dir >= 0 ? " withhold" : "",
                 c->inject ? " inject" : "");
}

hx_status hx_nv_config_agree(hx_comm *comm, const hx_halo_config *cfg, hx_nv_config *out)
{
    hx_status st = hx_comm_rank(comm) == 0 ? resolve(cfg, out) : HX_OK;
    /* a bad value on rank 0 fails every rank, with rank 0's message */
    HX_TRY(hx_comm_agree(comm, st));
    HX_TRY(hx_comm_bcast_bytes(comm, out, sizeof *out));
    if (hx_comm_rank(comm) == 0) {
        char line[512];
        hx_nv_config_describe(out, line, sizeof line);
        hx_log(HX_LOG_INFO, "nvshmem configuration (rank 0's, used by every rank): %s", line);
    }
    return HX_OK;
}
