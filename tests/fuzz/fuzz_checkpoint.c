/* libFuzzer entry point for the checkpoint reader: any byte string must give either a
 * consistent checkpoint or an error with a message, never a crash, a leak or undefined
 * behaviour. The checksum makes random bytes fail early, so the harness also re-seals each
 * input with a valid checksum (the second read) to reach the header and array parsing. */
#include "halox/checkpoint.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t fnv1a(const unsigned char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static void check(const unsigned char *d, size_t n)
{
    hx_checkpoint *c = NULL;
    hx_status st = hx_checkpoint_read_buffer(d, n, "fuzz.cpt", &c);
    if (st == HX_OK) {
        const hx_system *s = c->sys;
        if (!s || s->natoms < 1 || s->nmol < 1 || s->mol_start[0] != 0 ||
            s->mol_start[s->nmol] != s->natoms || c->step < 0 || !(c->rlist > 0))
            abort();
        for (int k = 0; k < s->nmol; k++)
            if (s->mol_start[k + 1] <= s->mol_start[k])
                abort();
        hx_checkpoint_destroy(&c);
    } else if (c != NULL || hx_last_error_message()[0] == '\0') {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check(data, size);
    if (size >= 8) {
        unsigned char *copy = malloc(size);
        if (!copy)
            return 0;
        memcpy(copy, data, size);
        uint64_t h = fnv1a(copy, size - 8);
        memcpy(copy + size - 8, &h, 8);
        check(copy, size);
        free(copy);
    }
    return 0;
}
