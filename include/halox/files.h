/* halox: output files: what halox does with a path it is asked to write. The library's own
 * rules, public so that a program built on halox (the halox program first) checks, backs up,
 * locks and writes its outputs the same way.
 *
 * GROMACS users expect three things of an output path, and halox gives them only where they make
 * sense:
 *  - an existing regular file is kept as #name.N# before a new run writes its own (backups);
 *  - a finished file is replaced atomically (temporary file, fsync, rename);
 *  - anything that is not a regular file (a device such as /dev/null, a FIFO, a socket, or a
 *    symbolic link to one of those) is *written through*: opened and written in place, never
 *    renamed, never backed up, never replaced. Renaming /dev/null away and putting a regular
 *    file in its place, as root, would break the machine.
 * Before a run starts every output is checked (directory exists and is writable, an existing
 * file is writable and not a directory), so that a typo fails in a second, not after hours.
 * Two runs writing the same files are kept apart by an advisory lock per output. */
#ifndef HALOX_FILES_H
#define HALOX_FILES_H

#include "halox/status.h"

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hx_path_kind {
    HX_PATH_MISSING = 0, /* nothing there (or a dangling symbolic link) */
    HX_PATH_REGULAR = 1, /* a regular file, or a symbolic link to one */
    HX_PATH_DIR = 2,     /* a directory */
    HX_PATH_SPECIAL = 3  /* device, FIFO, socket (or a link to one): written through */
} hx_path_kind;

/* What path refers to, following symbolic links. */
hx_path_kind hx_path_kind_of(const char *path);

/* 1 when a and b name the same file (device and inode, so "./d/f", "d//f" and a symbolic link
 * to d/f are all the same), 0 when they do not or either does not exist. */
int hx_path_same_file(const char *a, const char *b);

/* Absolute path with symbolic links resolved: of the file when it exists, else of its
 * directory plus the name. Two outputs with the same canonical path are the same file. */
hx_status hx_path_canonical(const char *path, char *out, size_t cap);

/* The name of a file next to path: path's directory, then prefix + path's file name + suffix
 * (".NAME.halox-lock", "#NAME.1#", "NAME.tmp.123", "NAME.prev"). When that file name would be
 * longer than the directory allows (NAME_MAX, 255 bytes on most file systems), so that a legal
 * long output name would make its lock, backup or temporary fail, the end of path's file name
 * is replaced by '~' and 8 hex digits of a hash of the whole name: the sibling fits, and
 * different long names keep different siblings. HX_ERR_INVALID_ARG when out is too small. */
hx_status hx_path_sibling(const char *path, const char *prefix, const char *suffix, char *out,
                          size_t cap);

/* Size of a regular file in bytes; -1 when it does not exist or is not regular. */
long long hx_path_size(const char *path);

/* Check before a run that path can be written as an output: `what` names it in messages
 * ("the energy file"). Refused, with what to do: an empty name, a directory, an existing file
 * that is not writable, a missing parent directory, a parent that is not a directory or not
 * writable. HX_ERR_IO. */
hx_status hx_output_check(const char *path, const char *what);

/* GROMACS convention: rename an existing *regular* file to #name.N# (first free N < 100) and
 * report the name in backup (may be NULL; cap bytes). keep_original: make the backup a second
 * link to the file (the original path keeps it too; a copy where links are not possible), used
 * when the file is an input that the run reads and later replaces. Nothing happens for a
 * missing or non-regular path (backup receives ""). */
hx_status hx_output_backup(const char *path, int keep_original, char *backup, size_t cap);

/* Write an output file through writer(f, user), atomically for a regular or new file
 * (PATH.tmp.<pid>, fsync, rename: an existing file is replaced only when everything was
 * written) and straight into a device or FIFO. `what` names the file in messages. */
hx_status hx_output_write(const char *path, const char *what,
                          hx_status (*writer)(FILE *f, void *user), void *user);

/* Advisory locks (fcntl) that keep two runs from writing the same output. The lock lives in a
 * small file ".NAME.halox-lock" next to the output (in the directory the output resolves to),
 * holding `info` (who holds it: pid, host, start time, log); it is removed on release, and a
 * lock file left by a run that died is taken over (the kernel drops the lock with its owner).
 * A path that is not a regular file (e.g. /dev/null) takes no lock: *out is NULL. When another
 * process holds the lock: HX_ERR_IO, "<what> <path> is being written by another halox run
 * (<its info>): ...". */
typedef struct hx_lock hx_lock;
hx_status hx_lock_acquire(const char *path, const char *what, const char *info, hx_lock **out);
void hx_lock_release(hx_lock **lock);

#ifdef __cplusplus
}
#endif

#endif
