/* Test-only fault injection (see fault.h). */
#include "core/fault.h"

#include <string.h>

static _Thread_local const char *hx_fault_site;

void hx_fault_arm(const char *site)
{
    hx_fault_site = site;
}

int hx_fault_hit(const char *site)
{
    if (!hx_fault_site || strcmp(hx_fault_site, site) != 0)
        return 0;
    hx_fault_site = NULL;
    return 1;
}
