/* Thread-local error record. One message (the first, innermost failure) plus a short trace of
 * the calls it propagated through, so that a user sees what went wrong and a developer sees
 * where. */
#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define HX_ERR_MSG_LEN 1024
#define HX_ERR_FULL_LEN 4096

static _Thread_local char hx_err_msg[HX_ERR_MSG_LEN];
static _Thread_local char hx_err_full[HX_ERR_FULL_LEN];
static _Thread_local size_t hx_err_full_len;

static const char *basename_of(const char *path)
{
    const char *s = strstr(path, "src/");
    if (s)
        return s;
    s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static void full_append(const char *fmt, ...)
{
    if (hx_err_full_len >= HX_ERR_FULL_LEN - 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(hx_err_full + hx_err_full_len, HX_ERR_FULL_LEN - hx_err_full_len, fmt, ap);
    va_end(ap);
    if (n > 0)
        hx_err_full_len += (size_t)n;
    if (hx_err_full_len >= HX_ERR_FULL_LEN)
        hx_err_full_len = HX_ERR_FULL_LEN - 1;
}

hx_status hx_error_set(hx_status st, const char *file, int line, const char *func, const char *fmt,
                       ...)
{
    /* Format into a scratch buffer first: a caller may pass hx_last_error_message() as an
     * argument to wrap an inner error, and formatting straight into hx_err_msg would then read
     * the string while overwriting it (the message came out nested in itself). */
    char msg[HX_ERR_MSG_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    memcpy(hx_err_msg, msg, sizeof msg);
    hx_err_full_len = 0;
    hx_err_full[0] = '\0';
    full_append("%s\n  at %s:%d in %s() [%s]", hx_err_msg, basename_of(file), line, func,
                hx_status_name(st));
    return st;
}

hx_status hx_error_trace(hx_status st, const char *file, int line, const char *call)
{
    if (hx_err_full_len == 0) {
        /* A status without a message: a callee forgot to record one. Say so. */
        snprintf(hx_err_msg, sizeof hx_err_msg, "%s (no message recorded)", hx_status_name(st));
        full_append("%s", hx_err_msg);
    }
    full_append("\n  via %s:%d: %s", basename_of(file), line, call);
    return st;
}

const char *hx_last_error(void)
{
    return hx_err_full;
}

const char *hx_last_error_message(void)
{
    return hx_err_msg;
}

void hx_clear_error(void)
{
    hx_err_msg[0] = '\0';
    hx_err_full[0] = '\0';
    hx_err_full_len = 0;
}

const char *hx_status_name(hx_status st)
{
    switch (st) {
    case HX_OK:
        return "HX_OK";
    case HX_ERR_INVALID_ARG:
        return "HX_ERR_INVALID_ARG";
    case HX_ERR_INPUT:
        return "HX_ERR_INPUT";
    case HX_ERR_GEOMETRY:
        return "HX_ERR_GEOMETRY";
    case HX_ERR_NOMEM:
        return "HX_ERR_NOMEM";
    case HX_ERR_IO:
        return "HX_ERR_IO";
    case HX_ERR_UNSUPPORTED:
        return "HX_ERR_UNSUPPORTED";
    case HX_ERR_NOT_COMPILED:
        return "HX_ERR_NOT_COMPILED";
    case HX_ERR_MPI:
        return "HX_ERR_MPI";
    case HX_ERR_CUDA:
        return "HX_ERR_CUDA";
    case HX_ERR_NVSHMEM:
        return "HX_ERR_NVSHMEM";
    case HX_ERR_PHYSICS:
        return "HX_ERR_PHYSICS";
    case HX_ERR_REMOTE:
        return "HX_ERR_REMOTE";
    case HX_ERR_INTERNAL:
        return "HX_ERR_INTERNAL";
    case HX_ERR_TIMEOUT:
        return "HX_ERR_TIMEOUT";
    }
    return "HX_ERR_UNKNOWN";
}
