/* halox: status codes and error reporting.
 *
 * Every fallible halox call returns an hx_status. On failure the library records a message in
 * a thread-local slot: what failed, where (file:line of the check), the failing call, and what
 * to change. The library never prints on its own behalf unless logging is enabled and never
 * exits the process: the caller decides. */
#ifndef HALOX_STATUS_H
#define HALOX_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hx_status {
    HX_OK = 0,
    HX_ERR_INVALID_ARG = 1,  /* a parameter value is not usable (NULL, negative, ...) */
    HX_ERR_INPUT = 2,        /* an input file is malformed */
    HX_ERR_GEOMETRY = 3,     /* the decomposition cannot be built for this box/cut-off */
    HX_ERR_NOMEM = 4,        /* an allocation failed */
    HX_ERR_IO = 5,           /* reading or writing a file failed */
    HX_ERR_UNSUPPORTED = 6,  /* a feature this build or version does not do */
    HX_ERR_NOT_COMPILED = 7, /* a backend that was not compiled in (MPI, CUDA, NVSHMEM) */
    HX_ERR_MPI = 8,          /* an MPI call failed */
    HX_ERR_CUDA = 9,         /* a CUDA call failed */
    HX_ERR_NVSHMEM = 10,     /* an NVSHMEM call failed */
    HX_ERR_PHYSICS = 11,     /* the simulation went wrong: non-finite values, atoms too fast */
    HX_ERR_REMOTE = 12,      /* another rank failed; its message was forwarded */
    HX_ERR_INTERNAL = 13,    /* a broken invariant inside halox: a bug, please report */
    HX_ERR_TIMEOUT = 14      /* a wait for another rank or the GPU passed its deadline (timer.h) */
} hx_status;

/* Short constant name of a status ("HX_ERR_INPUT"). */
const char *hx_status_name(hx_status st);

/* Full message of the most recent error on this thread: the message, then
 * "  at file:line in function", then the chain of calls it propagated through.
 * Empty string when there was none. Valid until the next halox call on this thread. */
const char *hx_last_error(void);

/* Only the first line (the human message) of the most recent error. */
const char *hx_last_error_message(void);

/* Forget the recorded error. */
void hx_clear_error(void);

#ifdef __cplusplus
}
#endif
#endif
