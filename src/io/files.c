/* Output files: kinds, identity, start-up checks, backups and locks (see files.h for the rules).
 *
 * Locks use fcntl record locks (POSIX; flock is not in the standard this library is compiled
 * against), on a separate small lock file rather than on the output itself: the output is
 * renamed to a backup at the start of a run and replaced at the end, so a lock on it would
 * move with the old file, and a second run could back up a file the first one is still writing
 * before it ever saw the lock. fcntl locks belong to the process and are dropped when any
 * descriptor of the file is closed; halox opens each lock file once, and the program refuses
 * two outputs that are the same file before it locks them. */
#include "halox/files.h"
#include "core/error.h"
#include "halox/log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

hx_path_kind hx_path_kind_of(const char *path)
{
    struct stat sb;
    if (!path || !*path || stat(path, &sb) != 0)
        return HX_PATH_MISSING;
    if (S_ISREG(sb.st_mode))
        return HX_PATH_REGULAR;
    if (S_ISDIR(sb.st_mode))
        return HX_PATH_DIR;
    return HX_PATH_SPECIAL;
}

int hx_path_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (!a || !b || stat(a, &sa) != 0 || stat(b, &sb) != 0)
        return 0;
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

long long hx_path_size(const char *path)
{
    struct stat sb;
    if (!path || stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
        return -1;
    return (long long)sb.st_size;
}

/* Directory part of path ("." when there is none, "/" for a file in the root). */
static void parent_dir(const char *path, char *dir, size_t cap)
{
    const char *slash = strrchr(path, '/');
    if (!slash) {
        snprintf(dir, cap, ".");
        return;
    }
    size_t n = (size_t)(slash - path);
    if (n == 0)
        n = 1;
    snprintf(dir, cap, "%.*s", (int)n, path);
}

hx_status hx_path_sibling(const char *path, const char *prefix, const char *suffix, char *out,
                          size_t cap)
{
    HX_CHECK(path && *path && prefix && suffix && out && cap > 0, HX_ERR_INVALID_ARG,
             "hx_path_sibling: empty argument");
    const char *slash = strrchr(path, '/');
    const int dirlen = slash ? (int)(slash - path + 1) : 0;
    const char *base = path + dirlen;
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%.*s", dirlen ? dirlen : 1, dirlen ? path : ".");
    long name_max = pathconf(dir, _PC_NAME_MAX);
    if (name_max <= 0)
        name_max = 255;
    const size_t fixed = strlen(prefix) + strlen(suffix), nb = strlen(base);
    int n;
    if (fixed + nb <= (size_t)name_max) {
        n = snprintf(out, cap, "%.*s%s%s%s", dirlen, path, prefix, base, suffix);
    } else {
        /* FNV-1a of the whole name: the shortened names of two long names still differ */
        uint32_t h = 2166136261u;
        for (size_t i = 0; i < nb; i++) {
            h ^= (unsigned char)base[i];
            h *= 16777619u;
        }
        const long keep = name_max - (long)fixed - 9;
        HX_CHECK(keep >= 1, HX_ERR_INVALID_ARG,
                 "the directory of '%s' allows names of %ld bytes only: too short for '%s...%s'",
                 path, name_max, prefix, suffix);
        n = snprintf(out, cap, "%.*s%s%.*s~%08x%s", dirlen, path, prefix, (int)keep, base,
                     (unsigned)h, suffix);
    }
    HX_CHECK(n > 0 && (size_t)n < cap, HX_ERR_INVALID_ARG, "path '%s' is too long", path);
    return HX_OK;
}

hx_status hx_path_canonical(const char *path, char *out, size_t cap)
{
    HX_CHECK(path && *path && out && cap > 0, HX_ERR_INVALID_ARG,
             "hx_path_canonical: empty argument");
    char buf[PATH_MAX];
    if (realpath(path, buf)) {
        HX_CHECK(strlen(buf) < cap, HX_ERR_INVALID_ARG, "path '%s' is too long", path);
        snprintf(out, cap, "%s", buf);
        return HX_OK;
    }
    /* not there yet: the resolved directory plus the name */
    char dir[PATH_MAX];
    parent_dir(path, dir, sizeof dir);
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    HX_CHECK(realpath(dir, buf), HX_ERR_IO, "cannot resolve the directory '%s' of '%s': %s", dir,
             path, strerror(errno));
    int n = snprintf(out, cap, "%s%s%s", buf, strcmp(buf, "/") == 0 ? "" : "/", base);
    HX_CHECK(n > 0 && (size_t)n < cap, HX_ERR_INVALID_ARG, "path '%s' is too long", path);
    return HX_OK;
}

hx_status hx_output_check(const char *path, const char *what)
{
    HX_CHECK(path && *path, HX_ERR_IO, "%s has an empty file name", what);
    size_t len = strlen(path);
    HX_CHECK(path[len - 1] != '/', HX_ERR_IO,
             "%s '%s' ends in '/', which names a directory: give a file name", what, path);
    struct stat sb;
    if (stat(path, &sb) == 0) {
        HX_CHECK(!S_ISDIR(sb.st_mode), HX_ERR_IO,
                 "%s '%s' is a directory: give the name of a file (in it, or elsewhere)", what,
                 path);
        HX_CHECK(access(path, W_OK) == 0, HX_ERR_IO,
                 "%s '%s' exists and is not writable (%s): change its permissions or choose "
                 "another name",
                 what, path, strerror(errno));
        if (!S_ISREG(sb.st_mode))
            return HX_OK; /* written through: the directory is not touched */
    }
    /* A new file, or a regular file that is backed up (renamed) or replaced atomically: both
     * need a writable directory. */
    char dir[PATH_MAX];
    parent_dir(path, dir, sizeof dir);
    struct stat db;
    if (stat(dir, &db) != 0) {
        int e = errno;
        HX_CHECK(e != ENOENT, HX_ERR_IO,
                 "the directory '%s' of %s '%s' does not exist: create it (mkdir -p %s) or "
                 "choose another path",
                 dir, what, path, dir);
        HX_FAIL(HX_ERR_IO, "the directory '%s' of %s '%s' cannot be used: %s", dir, what, path,
                strerror(e));
    }
    HX_CHECK(S_ISDIR(db.st_mode), HX_ERR_IO,
             "'%s' in the path of %s '%s' is not a directory: choose another path", dir, what,
             path);
    HX_CHECK(access(dir, W_OK | X_OK) == 0, HX_ERR_IO,
             "cannot create files in the directory '%s' for %s '%s' (%s): choose a writable "
             "directory",
             dir, what, path, strerror(errno));
    return HX_OK;
}

/* Copy src to a new file dst (O_EXCL), for a backup where a hard link is not possible. */
static hx_status copy_file(const char *src, const char *dst)
{
    int in = open(src, O_RDONLY);
    HX_CHECK(in >= 0, HX_ERR_IO, "cannot read %s to back it up: %s", src, strerror(errno));
    int out = open(dst, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (out < 0) {
        int e = errno;
        close(in);
        HX_FAIL(HX_ERR_IO, "cannot create the backup %s: %s", dst, strerror(e));
    }
    char buf[1 << 16];
    hx_status st = HX_OK;
    for (;;) {
        ssize_t r = read(in, buf, sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (r < 0)
                st = hx_error_set(HX_ERR_IO, __FILE__, __LINE__, __func__, "reading %s: %s", src,
                                  strerror(errno));
            break;
        }
        for (ssize_t off = 0; off < r && st == HX_OK;) {
            ssize_t w = write(out, buf + off, (size_t)(r - off));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                st = hx_error_set(HX_ERR_IO, __FILE__, __LINE__, __func__, "writing %s: %s", dst,
                                  strerror(errno));
            else
                off += w;
        }
        if (st != HX_OK)
            break;
    }
    close(in);
    if (close(out) != 0 && st == HX_OK)
        st = hx_error_set(HX_ERR_IO, __FILE__, __LINE__, __func__, "closing %s: %s", dst,
                          strerror(errno));
    if (st != HX_OK)
        unlink(dst);
    return st;
}

hx_status hx_output_backup(const char *path, int keep_original, char *backup, size_t cap)
{
    if (backup && cap)
        backup[0] = '\0';
    if (hx_path_kind_of(path) != HX_PATH_REGULAR)
        return HX_OK; /* nothing there, or a device/FIFO: written through, never renamed */
    const char *slash = strrchr(path, '/');
    int dirlen = slash ? (int)(slash - path + 1) : 0;
    char bak[PATH_MAX + 16];
    struct stat sb;
    for (int k = 1; k < 100; k++) {
        char suffix[16];
        snprintf(suffix, sizeof suffix, ".%d#", k);
        HX_TRY(hx_path_sibling(path, "#", suffix, bak, sizeof bak));
        if (lstat(bak, &sb) == 0)
            continue;
        if (!keep_original) {
            HX_CHECK(rename(path, bak) == 0, HX_ERR_IO, "cannot back up %s as %s: %s", path, bak,
                     strerror(errno));
        } else if (link(path, bak) != 0) {
            HX_TRY(copy_file(path, bak));
        }
        if (backup && cap)
            snprintf(backup, cap, "%s", bak);
        return HX_OK;
    }
    HX_FAIL(HX_ERR_IO, "%s: 99 backups exist already; remove old #%s.N# files", path,
            path + dirlen);
}

hx_status hx_output_write(const char *path, const char *what,
                          hx_status (*writer)(FILE *f, void *user), void *user)
{
    HX_CHECK(path && *path && writer, HX_ERR_INVALID_ARG, "hx_output_write: empty argument");
    const int special = hx_path_kind_of(path) == HX_PATH_SPECIAL;
    char tmp[PATH_MAX + 32];
    if (special) {
        snprintf(tmp, sizeof tmp, "%s", path);
    } else {
        HX_CHECK(access(path, F_OK) != 0 || access(path, W_OK) == 0, HX_ERR_IO,
                 "%s '%s' exists and is not writable; choose another name or change its "
                 "permissions",
                 what, path);
        char suffix[32];
        snprintf(suffix, sizeof suffix, ".tmp.%ld", (long)getpid());
        HX_TRY(hx_path_sibling(path, "", suffix, tmp, sizeof tmp));
    }
    FILE *f = fopen(tmp, "w");
    HX_CHECK(f, HX_ERR_IO,
             "cannot create %s '%s': %s; check that the directory exists and is "
             "writable",
             what, path, strerror(errno));
    hx_status st = writer(f, user);
    if (st == HX_OK && fflush(f) != 0)
        st = hx_error_set(HX_ERR_IO, __FILE__, __LINE__, __func__, "error writing %s '%s': %s",
                          what, path, strerror(errno));
    if (st == HX_OK && !special && fsync(fileno(f)) != 0)
        st = hx_error_set(HX_ERR_IO, __FILE__, __LINE__, __func__, "error writing %s '%s': %s",
                          what, path, strerror(errno));
    if (fclose(f) != 0 && st == HX_OK)
        st = hx_error_set(HX_ERR_IO, __FILE__, __LINE__, __func__, "error closing %s '%s': %s",
                          what, path, strerror(errno));
    if (!special) {
        if (st == HX_OK && rename(tmp, path) != 0)
            st = hx_error_set(HX_ERR_IO, __FILE__, __LINE__, __func__,
                              "cannot rename '%s' to '%s': %s", tmp, path, strerror(errno));
        if (st != HX_OK)
            remove(tmp);
    }
    return st;
}

struct hx_lock {
    int fd;
    char path[PATH_MAX + 32];
};

hx_status hx_lock_acquire(const char *path, const char *what, const char *info, hx_lock **out)
{
    HX_CHECK(path && what && out, HX_ERR_INVALID_ARG, "hx_lock_acquire: NULL argument");
    *out = NULL;
    if (hx_path_kind_of(path) == HX_PATH_SPECIAL)
        return HX_OK; /* /dev/null and friends: any number of runs may write them */
    char canon[PATH_MAX];
    HX_TRY(hx_path_canonical(path, canon, sizeof canon));
    hx_lock *l = calloc(1, sizeof *l);
    HX_CHECK(l, HX_ERR_NOMEM, "out of memory");
    l->fd = -1;
    hx_status st = hx_path_sibling(canon, ".", ".halox-lock", l->path, sizeof l->path);
    if (st != HX_OK) {
        free(l);
        return st;
    }
    /* A releasing run unlinks its lock file while it still holds the lock; a run that opened
     * the old file in between gets its lock on an unlinked file, notices that the path now
     * names another (or no) file, and tries again. */
    for (int attempt = 0; attempt < 20; attempt++) {
        int fd = open(l->path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) {
            st = hx_error_set(HX_ERR_IO, __FILE__, __LINE__, __func__,
                              "cannot create the lock file %s for %s %s: %s", l->path, what, path,
                              strerror(errno));
            break;
        }
        struct flock fl;
        memset(&fl, 0, sizeof fl);
        fl.l_type = F_WRLCK;
        fl.l_whence = SEEK_SET;
        if (fcntl(fd, F_SETLK, &fl) != 0) {
            int e = errno;
            if (e == EACCES || e == EAGAIN) {
                char other[512];
                ssize_t n = pread(fd, other, sizeof other - 1, 0);
                other[n > 0 ? n : 0] = '\0';
                char *nl = strchr(other, '\n');
                if (nl)
                    *nl = '\0';
                close(fd);
                st = hx_error_set(HX_ERR_IO, __FILE__, __LINE__, __func__,
                                  "%s %s is being written by another halox run (%s): wait for "
                                  "it to end, or give this run other output names",
                                  what, path, other[0] ? other : "details unknown");
                break;
            }
            /* a file system without locks (some network mounts): run, but say so */
            close(fd);
            hx_log(HX_LOG_WARN,
                   "cannot lock %s for %s %s (%s): another run writing the same file would not "
                   "be noticed",
                   l->path, what, path, strerror(e));
            free(l);
            return HX_OK;
        }
        struct stat a, b;
        if (fstat(fd, &a) != 0 || stat(l->path, &b) != 0 || a.st_dev != b.st_dev ||
            a.st_ino != b.st_ino) {
            close(fd);
            continue;
        }
        l->fd = fd;
        size_t n = info ? strlen(info) : 0;
        if (ftruncate(fd, 0) != 0 || (n && pwrite(fd, info, n, 0) != (ssize_t)n) ||
            pwrite(fd, "\n", 1, (off_t)n) != 1)
            hx_log(HX_LOG_DEBUG, "could not record the owner in %s: %s", l->path, strerror(errno));
        *out = l;
        return HX_OK;
    }
    if (st == HX_OK)
        st = hx_error_set(HX_ERR_IO, __FILE__, __LINE__, __func__,
                          "could not take the lock %s for %s %s: it keeps changing", l->path, what,
                          path);
    free(l);
    return st;
}

void hx_lock_release(hx_lock **lock)
{
    if (!lock || !*lock)
        return;
    hx_lock *l = *lock;
    if (l->fd >= 0) {
        /* unlink first, while the lock is still held: see hx_lock_acquire */
        unlink(l->path);
        close(l->fd);
    }
    free(l);
    *lock = NULL;
}
