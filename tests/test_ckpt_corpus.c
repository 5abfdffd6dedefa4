/* Replays the checkpoint seed corpus through the reader in every build: valid_* files must read
 * (with a consistent system; the format-1 files with no thermostat work, valid_format2_* with
 * theirs), bad_* files must fail with HX_ERR_INPUT and a message naming the
 * file, anything else (e.g. a fuzzer's crash reproducer) must merely not crash. */
#include "halox/checkpoint.h"
#include "testutil.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_ckpt_corpus DIR\n");
        return 2;
    }
    DIR *d = opendir(argv[1]);
    if (!d) {
        fprintf(stderr, "cannot open %s\n", argv[1]);
        return 2;
    }
    int n = 0, nvalid = 0, nbad = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", argv[1], e->d_name);
        hx_checkpoint *c = NULL;
        hx_status st = hx_checkpoint_read(path, &c);
        n++;
        if (strncmp(e->d_name, "valid_", 6) == 0) {
            nvalid++;
            T_CHECK(st == HX_OK, "%s: %s", e->d_name, hx_last_error());
            if (c)
                T_CHECK(c->sys->natoms > 0 && c->sys->mol_start[c->sys->nmol] == c->sys->natoms,
                        "%s: inconsistent system", e->d_name);
            /* format 2 carries the thermostat's work; format 1 (before it) reads with 0 */
            if (c && strstr(e->d_name, "format2"))
                T_CHECK(c->format == 2 && c->thermostat_work == -19.0,
                        "%s: format %d, thermostat work %g (want 2, -19)", e->d_name, c->format,
                        c->thermostat_work);
            else if (c)
                T_CHECK(c->format == 1 && c->thermostat_work == 0.0,
                        "%s: format %d, thermostat work %g (want 1, 0)", e->d_name, c->format,
                        c->thermostat_work);
        } else if (strncmp(e->d_name, "bad_", 4) == 0) {
            nbad++;
            T_CHECK(st == HX_ERR_INPUT && c == NULL &&
                        strstr(hx_last_error_message(), e->d_name) != NULL,
                    "%s: expected HX_ERR_INPUT naming the file, got %s (%s)", e->d_name,
                    hx_status_name(st), hx_last_error_message());
        }
        hx_checkpoint_destroy(&c);
    }
    closedir(d);
    T_CHECK(nvalid >= 2 && nbad >= 2, "corpus too small: %d valid, %d bad", nvalid, nbad);
    return t_finish("test_ckpt_corpus", n);
}
