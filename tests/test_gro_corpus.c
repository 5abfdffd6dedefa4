/* Replays every file of the fuzzing seed corpus through the .gro reader in the normal build,
 * so CI exercises the inputs the fuzzer starts from (and any crash reproducer added to it).
 * Files named valid_* must read, round-trip through hx_gro_write/hx_gro_read_buffer and keep
 * their atom count; bad_* must fail with HX_ERR_INPUT or HX_ERR_UNSUPPORTED and a message that
 * names the file and a line; anything else (a crash reproducer) must not crash, and if it
 * reads, writing it must be refused with HX_ERR_INVALID_ARG or give a file that reads back.
 * Argument: the corpus directory. */
#include "testutil.h"

#include "halox/io.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The whole file, malloc'ed (NULL if unreadable). */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = n >= 0 ? malloc((size_t)n + 1) : NULL;
    *len = b ? fread(b, 1, (size_t)n, f) : 0;
    fclose(f);
    return b;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_gro_corpus <corpus directory>\n");
        return 2;
    }
    DIR *d = opendir(argv[1]);
    if (!d) {
        fprintf(stderr, "test_gro_corpus: cannot open %s\n", argv[1]);
        return 1;
    }
    char *names[4096];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < 4096)
        if (e->d_name[0] != '.')
            names[n++] = strdup(e->d_name);
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], cmp_str);
    int nvalid = 0, nbad = 0;
    char tmp[] = "/tmp/halox_corpus_XXXXXX";
    int fd = mkstemp(tmp);
    if (fd >= 0)
        close(fd);
    for (int i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", argv[1], names[i]);
        hx_system *s = NULL;
        hx_status st = hx_gro_read(path, &s);
        if (strncmp(names[i], "valid_", 6) == 0) {
            nvalid++;
            T_CHECK(st == HX_OK, "%s: %s: %s", names[i], hx_status_name(st),
                    hx_last_error_message());
            if (s) {
                /* written and read back: the content to the written precision, exactly; a
                 * second write of what was read gives the same bytes */
                hx_system *b = NULL;
                T_OK(hx_gro_write(tmp, s, s->has_velocities));
                size_t l1 = 0, l2 = 0;
                char *t1 = slurp(tmp, &l1);
                T_OK(hx_gro_read(tmp, &b));
                if (b) {
                    char what[300];
                    snprintf(what, sizeof what, "%s round trip", names[i]);
                    t_gro_same(b, s, s->has_velocities, what);
                    T_OK(hx_gro_write(tmp, b, b->has_velocities));
                    char *t2 = slurp(tmp, &l2);
                    T_CHECK(t1 && t2 && l1 == l2 && memcmp(t1, t2, l1) == 0,
                            "%s: writing the read-back system changed the text", names[i]);
                    free(t2);
                } else {
                    T_FAIL("%s: the written file does not read back", names[i]);
                }
                free(t1);
                hx_system_destroy(&b);
            }
        } else if (st == HX_OK && strncmp(names[i], "bad_", 4) != 0) {
            /* A reproducer that reads: the writer must refuse it cleanly or write text that
             * reads back (the fuzz harness's rule; rounding may push an atom out of the box). */
            hx_status wst = hx_gro_write(tmp, s, s->has_velocities);
            T_CHECK(wst == HX_OK || wst == HX_ERR_INVALID_ARG, "%s: write gave %s: %s", names[i],
                    hx_status_name(wst), hx_last_error_message());
            if (wst == HX_OK) {
                hx_system *b = NULL;
                hx_status rst = hx_gro_read(tmp, &b);
                T_CHECK(rst == HX_OK || strstr(hx_last_error_message(), "outside the box"),
                        "%s: written file does not read back: %s", names[i],
                        hx_last_error_message());
                hx_system_destroy(&b);
            }
        } else if (strncmp(names[i], "bad_", 4) == 0) {
            nbad++;
            T_CHECK(st == HX_ERR_INPUT || st == HX_ERR_UNSUPPORTED,
                    "%s: got %s, expected HX_ERR_INPUT or HX_ERR_UNSUPPORTED", names[i],
                    hx_status_name(st));
            char where[4200];
            snprintf(where, sizeof where, "%s:", path);
            T_CHECK(st == HX_OK || strncmp(hx_last_error_message(), where, strlen(where)) == 0,
                    "%s: message does not name the file and line: %s", names[i],
                    hx_last_error_message());
        }
        T_CHECK((st == HX_OK) == (s != NULL), "%s: status %s but system %p", names[i],
                hx_status_name(st), (void *)s);
        hx_system_destroy(&s);
        free(names[i]);
    }
    remove(tmp);
    T_CHECK(nvalid > 0 && nbad > 0, "corpus %s has %d valid_ and %d bad_ files; expected both",
            argv[1], nvalid, nbad);
    printf("test_gro_corpus: %d files (%d valid_, %d bad_)\n", n, nvalid, nbad);
    return t_finish("test_gro_corpus", n);
}
