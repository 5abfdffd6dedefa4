/* Test hooks of the NVSHMEM exchange (HX_NVSHMEM_HOOKS: only in the test variant of the module,
 * halox_nvshmem_hooks, which the test programs and halox-test link; the production module has
 * none of this, in its kernels or on the host):
 *
 *   trace     HALOX_NVSHMEM_TRACE=PREFIX: the kernels stamp %globaltimer into a device ring of
 *             the last NV_TRACE_STEPS steps, written per PE to PREFIX.<instance>.rank<R>.txt at
 *             destroy (scripts/nvshmem_trace.py);
 *   withhold  HALOX_TEST_WITHHOLD=rank:x|f:pulse:step: that rank skips that signal, and the
 *             receiver's deadline must report it (test_gpu_halo_deadline);
 *   inject    HALOX_TEST_INJECT=x-early|f-early: every P2P coordinate block publishes its share
 *             before it packs its dependent entries, or every force-accumulating block its fdone
 *             share before its adds: ordering faults the tests must catch;
 *   stress    hx_halo_config.stress_seed: random delays in blocks (kernels) and processes (a
 *             pause before enqueueing, a delay kernel ahead of the exchange).
 * The settings come from the agreed configuration (src/halo/nvshmem/nvshmem_config.h). */
#include "halo/nvshmem/nvshmem_impl.h"
#include "comm/shmem.h"
#include "comm/comm_impl.h"
#include "gpu/cuda_check.h"
#include "halox/log.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int g_traces; /* exchanges traced so far in this process: the instance of trace files */

/* The trace ring to m->trace_path (written through a temporary file and renamed): a header
 * with this PE's pulses, then one line per traced step, times in ns of %globaltimer. A failure
 * is logged, not returned: destroy cannot fail. */
static void trace_write(hx_halo *h, nv_impl *m)
{
    nv_trace *t = (nv_trace *)malloc(NV_TRACE_STEPS * sizeof *t);
    char tmp[sizeof m->trace_path + 8];
    FILE *f = NULL;
    if (!t ||
        cudaMemcpy(t, m->trace, NV_TRACE_STEPS * sizeof *t, cudaMemcpyDeviceToHost) != cudaSuccess)
        goto fail;
    snprintf(tmp, sizeof tmp, "%s.tmp", m->trace_path);
    f = fopen(tmp, "w");
    if (!f)
        goto fail;
    {
        const hx_domain_plan *p = hx_plan_domain(h->plan, 0);
        const int np = p->npulses < NV_TRACE_PULSES ? p->npulses : NV_TRACE_PULSES;
        fprintf(f, "# halox nvshmem trace v1\nrank %d npes %d pulses %d traced %d\n",
                hx_comm_rank(h->comm), hx_shmem_n_pes(), p->npulses, np);
        for (int q = 0; q < np; q++)
            fprintf(f, "pulse %d send_pe %d recv_pe %d deps %llu send %d recv %d\n", q,
                    p->pulses[q].send_pe, p->pulses[q].recv_pe,
                    (unsigned long long)p->pulses[q].deps, p->pulses[q].send_count,
                    p->pulses[q].recv_count);
        fprintf(f, "describe %s\n", h->describe);
        fprintf(f, "# step x_start f_start f_end, then per pulse: x_dep x_sent x_recv f_sent "
                   "f_recv f_done\n");
        for (int i = 0; i < NV_TRACE_STEPS; i++) {
            const nv_trace *r = &t[i];
            if (r->step == 0 || r->step % NV_TRACE_STEPS != (uint64_t)i)
                continue;
            fprintf(f, "%llu %llu %llu %llu", (unsigned long long)r->step,
                    (unsigned long long)r->x_start, (unsigned long long)r->f_start,
                    (unsigned long long)r->f_end);
            for (int q = 0; q < np; q++)
                fprintf(f, " %llu %llu %llu %llu %llu %llu", (unsigned long long)r->x_dep[q],
                        (unsigned long long)r->x_sent[q], (unsigned long long)r->x_recv[q],
                        (unsigned long long)r->f_sent[q], (unsigned long long)r->f_recv[q],
                        (unsigned long long)r->f_done[q]);
            fputc('\n', f);
        }
    }
    if (fclose(f) != 0) {
        f = NULL;
        goto fail;
    }
    f = NULL;
    if (rename(tmp, m->trace_path) != 0)
        goto fail;
    free(t);
    return;
fail:
    if (f)
        fclose(f);
    free(t);
    hx_log(HX_LOG_WARN, "nvshmem: could not write the trace '%s'", m->trace_path);
}

hx_status hx_nv_hooks_setup(hx_halo *h, nv_impl *m)
{
    if (!m->cfg.trace[0])
        return HX_OK;
    const int n = snprintf(m->trace_path, sizeof m->trace_path, "%s.%d.rank%d.txt", m->cfg.trace,
                           g_traces++, hx_comm_rank(h->comm));
    HX_CHECK(n > 0 && (size_t)n < sizeof m->trace_path, HX_ERR_INVALID_ARG,
             "HALOX_NVSHMEM_TRACE: prefix too long (%zu characters)", strlen(m->cfg.trace));
    HX_CUDA(cudaMalloc((void **)&m->trace, NV_TRACE_STEPS * sizeof(nv_trace)));
    HX_CUDA(cudaMemset(m->trace, 0, NV_TRACE_STEPS * sizeof(nv_trace)));
    return HX_OK;
}

void hx_nv_hooks_args(hx_halo *h, nv_impl *m)
{
    const int rank = hx_comm_rank(h->comm);
    nv_args *a = &m->args;
    const hx_nv_config *c = &m->cfg;
    a->stress = c->stress_seed;
    a->trace = m->trace;
    a->wh_dir = c->wh_dir >= 0 && c->wh_rank == rank ? c->wh_dir : -1;
    a->wh_pulse = c->wh_pulse;
    a->wh_step = c->wh_step;
    a->inject = c->inject;
    m->stress_rng = c->stress_seed ^ (0x9e3779b97f4a7c15ull * (unsigned long long)(rank + 1));
    if (a->wh_dir >= 0)
        hx_log(HX_LOG_WARN,
               "nvshmem: test hook: rank %d withholds its %s signal of pulse %d at "
               "step %llu",
               rank, a->wh_dir == 0 ? "coordinate" : "force", a->wh_pulse, a->wh_step);
    if (a->inject && rank == 0)
        hx_log(HX_LOG_WARN, "nvshmem: test hook: HALOX_TEST_INJECT=%s",
               a->inject == HX_NV_INJECT_X_EARLY ? "x-early" : "f-early");
}

/* Stress mode, host side: a random pause before enqueueing, and a random delay kernel ahead of
 * the exchange on the stream, so that PEs reach each step at different times. */
hx_status hx_nv_hooks_before_launch(nv_impl *m, hx_stream s)
{
    if (!m->args.stress)
        return HX_OK;
    uint64_t z = (m->stress_rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    if ((z & 7) == 0)
        usleep((useconds_t)((z >> 8) % 200));
    if ((z & 0x30) == 0)
        HX_TRY(hx_nv_delay(s, (z >> 20) % 50000));
    return HX_OK;
}

void hx_nv_hooks_destroy(hx_halo *h, nv_impl *m)
{
    if (!m->trace)
        return;
    trace_write(h, m);
    cudaFree(m->trace);
    m->trace = NULL;
}
