/* The CUDA device API: count, properties, selection. On a machine without a GPU it reports
 * skipped; on the H200 machine it checks what the log will print. */
#include "halox/gpu.h"
#include "testutil.h"

#include <string.h>

int main(void)
{
    if (!t_gpu_require("test_gpu_device"))
        return T_SKIP_CODE;
    int n = 0;
    T_OK(hx_gpu_device_count(&n, NULL));
    T_CHECK(n >= 1, "device count %d", n);
    for (int d = 0; d < n; d++) {
        hx_gpu_info g;
        T_OK(hx_gpu_get_info(d, &g));
        char line[512];
        hx_gpu_describe(&g, line, (int)sizeof line);
        printf("device %d: %s\n", d, line);
        T_CHECK(g.cc_major >= 7, "device %d: compute capability %d.%d", d, g.cc_major, g.cc_minor);
        T_CHECK(g.sm_count > 0 && g.memory_gib > 0.5, "device %d: %d SMs, %.2f GiB", d, g.sm_count,
                g.memory_gib);
        T_CHECK(g.driver_version >= g.runtime_version, "device %d: driver %d older than runtime %d",
                d, g.driver_version, g.runtime_version);
        T_CHECK(strlen(g.pci_bus_id) > 0, "device %d: no PCI bus id", d);
    }
    int dev = -1;
    T_OK(hx_gpu_select_for_rank(n, &dev));
    T_CHECK(dev == 0, "rank %d of %d devices got device %d, expected 0", n, n, dev);
    return t_finish("test_gpu_device", n);
}
