/* libFuzzer entry point for the .gro reader: any byte string must give either a consistent
 * system or an error with a message, never a crash, a leak or undefined behaviour. Built only
 * with -DHALOX_FUZZ=ON and clang (see tests/io.cmake and tests/fuzz/README.md). */
#include "halox/io.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hx_system *s = NULL;
    hx_status st = hx_gro_read_buffer((const char *)data, size, "fuzz.gro", &s);
    if (st == HX_OK) {
        /* Invariants of a successful read; abort() makes a violation a finding. */
        if (!s || s->natoms < 0 || s->nmol < 0 || (s->natoms > 0 && s->nmol == 0) ||
            s->mol_start[0] != 0 || s->mol_start[s->nmol] != s->natoms)
            abort();
        for (int k = 0; k < s->nmol; k++)
            if (s->mol_start[k + 1] <= s->mol_start[k])
                abort();
        for (int d = 0; d < 3; d++)
            if (!(s->box[d] > 0))
                abort();
        for (int i = 0; i < 3 * s->natoms; i++)
            if (!(s->x[i] >= -1e300 && s->x[i] <= 1e300))
                abort();
    } else if (s != NULL || hx_last_error_message()[0] == '\0') {
        abort();
    }
    hx_system_destroy(&s);
    return 0;
}
