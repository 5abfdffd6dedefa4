/* What every benchmark series shares: the provenance ("meta") of a result file and its atomic
 * write (docs/results-format.md). */
#include "bench.h"

#include "cli.h"
#include "halox/dd.h"
#include "halox/gpu.h"
#include "halox/comm.h"
#include "halox/halo.h"
#include "halox/log.h"
#include "halox/version.h"
#include "halox/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef HALOX_SOURCE_DIR
#define HALOX_SOURCE_DIR "."
#endif

void hx_bench_git_revision(char *buf, size_t len)
{
    const char *env = getenv("HALOX_GIT_REVISION");
    snprintf(buf, len, "%s", env ? env : "unknown");
    if (env)
        return;
    FILE *f = popen("git -C '" HALOX_SOURCE_DIR "' rev-parse HEAD 2>/dev/null", "r");
    if (f) {
        if (fgets(buf, (int)len, f))
            buf[strcspn(buf, "\n")] = 0;
        else
            snprintf(buf, len, "unknown");
        pclose(f);
    }
    f = popen("git -C '" HALOX_SOURCE_DIR "' status --porcelain --untracked-files=no 2>/dev/null",
              "r");
    if (f) {
        char line[256];
        if (fgets(line, sizeof line, f) && strlen(buf) + 7 < len)
            strcat(buf, "-dirty");
        pclose(f);
    }
}

/* `nvidia-smi topo -m` as an array of lines, or NULL where it is not available. */
static cJSON *gpu_topology(void)
{
    FILE *f = popen("nvidia-smi topo -m 2>/dev/null", "r");
    if (!f)
        return NULL;
    cJSON *lines = cJSON_CreateArray();
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (line[0])
            cJSON_AddItemToArray(lines, cJSON_CreateString(line));
    }
    if (pclose(f) != 0 || cJSON_GetArraySize(lines) == 0) {
        cJSON_Delete(lines);
        return NULL;
    }
    return lines;
}

hx_status hx_bench_gpu_context(hx_comm *world, const char *gpu_ids, hx_gpu_context **out)
{
    int ids[64], n = 0;
    /* a bad list is the same on every rank: all fail here together */
    if (gpu_ids)
        HX_TRY(hx_gpu_parse_device_ids(gpu_ids, ids, 64, &n));
    hx_gpu_context_params gp;
    hx_gpu_context_params_default(&gp);
    gp.device_ids = n > 0 ? ids : NULL;
    gp.ndevice_ids = n;
    gp.make_current = 1;
    return hx_gpu_context_create(&gp, world, out);
}

cJSON *hx_bench_meta(int argc, char **argv, const char *nvshmem_version)
{
    cJSON *m = cJSON_CreateObject();
    char buf[1024];
    hx_bench_git_revision(buf, sizeof buf);
    cJSON_AddStringToObject(m, "git_revision", buf);
    time_t now = time(NULL);
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    cJSON_AddStringToObject(m, "date", buf);
    if (gethostname(buf, sizeof buf) != 0)
        snprintf(buf, sizeof buf, "unknown");
    cJSON_AddStringToObject(m, "host", buf);
    FILE *f = fopen("/proc/cpuinfo", "r");
    snprintf(buf, sizeof buf, "unknown");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f))
            if (strncmp(line, "model name", 10) == 0 && strchr(line, ':')) {
                snprintf(buf, sizeof buf, "%s", strchr(line, ':') + 2);
                buf[strcspn(buf, "\n")] = 0;
                break;
            }
        fclose(f);
    }
    cJSON_AddStringToObject(m, "cpu", buf);
    hx_gpu_info g;
    int dev = 0, ndev = 0;
    hx_gpu_device_count(&ndev, NULL);
    if (ndev > 0 && hx_gpu_current_device(&dev) == HX_OK && hx_gpu_get_info(dev, &g) == HX_OK) {
        cJSON_AddStringToObject(m, "gpu", g.name);
        snprintf(buf, sizeof buf, "CUDA driver API %d.%d", g.driver_version / 1000,
                 (g.driver_version % 1000) / 10);
        cJSON_AddStringToObject(m, "driver", buf);
        snprintf(buf, sizeof buf, "%d.%d", g.runtime_version / 1000,
                 (g.runtime_version % 1000) / 10);
        cJSON_AddStringToObject(m, "cuda", buf);
        cJSON_AddNumberToObject(m, "gpus_visible", ndev);
        /* how the GPUs are linked (NVLink, PCIe): a result across GPUs means little without it */
        cJSON *topo = gpu_topology();
        if (topo)
            cJSON_AddItemToObject(m, "gpu_topology", topo);
        else
            cJSON_AddNullToObject(m, "gpu_topology");
    } else {
        cJSON_AddNullToObject(m, "gpu");
        cJSON_AddNullToObject(m, "driver");
        cJSON_AddNullToObject(m, "cuda");
    }
    if (nvshmem_version[0])
        cJSON_AddStringToObject(m, "nvshmem", nvshmem_version);
    else
        cJSON_AddNullToObject(m, "nvshmem");
    hx_mpi_library_version(buf, (int)sizeof buf);
    cJSON_AddStringToObject(m, "mpi", buf);
    const char *cmd = getenv("HALOX_BENCH_COMMAND");
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; i < argc && k + 2 < sizeof buf; i++)
        k += (size_t)snprintf(buf + k, sizeof buf - k, "%s%s", i ? " " : "", argv[i]);
    cJSON_AddStringToObject(m, "command", cmd ? cmd : buf);
    cJSON_AddStringToObject(m, "halox", HALOX_VERSION);
    const char *mps = getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
    if (mps)
        cJSON_AddStringToObject(m, "mps_active_thread_percentage", mps);
    return m;
}

/* Atomic write: a reader never sees half a file. */
hx_status hx_bench_write_json(const char *path, cJSON *root)
{
    char *text = cJSON_Print(root);
    HX_CHECK(text, HX_ERR_NOMEM, "out of memory printing JSON");
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        free(text);
        HX_FAIL(HX_ERR_IO, "cannot write %s", tmp);
    }
    int ok = fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    ok = fclose(f) == 0 && ok;
    free(text);
    if (!ok || rename(tmp, path) != 0) {
        remove(tmp);
        HX_FAIL(HX_ERR_IO, "cannot write %s", path);
    }
    return HX_OK;
}

hx_comm *hx_bench_world(const char *name, int *argc, char ***argv)
{
    int parallel = 0;
    hx_status st = hx_mpi_init(argc, argv, &parallel);
    hx_comm *world = NULL;
    if (st == HX_OK)
        st = hx_comm_create_world(&world);
    if (st != HX_OK) {
        hx_cli_report_error(name, st);
        return NULL;
    }
    hx_log_set_rank(hx_comm_rank(world), hx_comm_nranks(world));
    return world;
}

int hx_bench_parse_ints(const char *list, long vmax, int *out, int max)
{
    int n = 0;
    const char *p = list;
    while (p && *p && n < max) {
        char *end = NULL;
        long v = strtol(p, &end, 10);
        if (end == p || v <= 0 || v > vmax || (*end && *end != ','))
            return -1;
        out[n++] = (int)v;
        p = *end == ',' ? end + 1 : NULL;
    }
    return n;
}

int hx_bench_parse_grids(const char *list, int (*grids)[3], int max, hx_status *st)
{
    char tmp[256];
    int n = 0;
    *st = HX_OK;
    snprintf(tmp, sizeof tmp, "%s", list);
    for (char *tok = strtok(tmp, ","); tok && n < max; tok = strtok(NULL, ",")) {
        if ((*st = hx_dd_parse_grid(tok, grids[n])) != HX_OK)
            break;
        n++;
    }
    return n;
}
