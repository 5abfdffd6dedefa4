/* libFuzzer entry point for the .gro reader: any byte string must give either a consistent
 * system or an error with a message, never a crash, a leak or undefined behaviour. Built only
 * with -DHALOX_FUZZ=ON and clang (see tests/io.cmake and tests/fuzz/README.md). */
#include "halox/io.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        /* Writer on the same system: either a clear refusal (a value that does not fit the
         * fixed columns) or text that reads back with the same atoms. */
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        if (f) {
            hx_status wst = hx_gro_write_frame(f, s, 0.0, 0, s->has_velocities);
            fclose(f);
            if (wst == HX_OK) {
                hx_system *b = NULL;
                hx_status rst = hx_gro_read_buffer(text, len, "rewrite.gro", &b);
                /* rounding to the written precision may move an atom just across the
                 * one-box-length limit; anything else must read back */
                if (rst != HX_OK && !strstr(hx_last_error_message(), "outside the box"))
                    abort();
                if (b && (b->natoms != s->natoms || b->has_velocities != s->has_velocities))
                    abort();
                hx_system_destroy(&b);
            } else if (wst != HX_ERR_INVALID_ARG) {
                abort();
            }
            free(text);
        }
    } else if (s != NULL || hx_last_error_message()[0] == '\0') {
        abort();
    }
    hx_system_destroy(&s);
    return 0;
}
