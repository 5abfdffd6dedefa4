/* halox: recording errors the library's way, for code built on halox (the halox program first).
 * See include/halox/status.h for the contract: a failing call records a message with the file,
 * line and function where it failed, each caller that passes it on adds itself to the trace, and
 * hx_last_error_message() reports it all.
 *
 *   HX_FAIL(st, fmt, ...)       record a message at this line and return st
 *   HX_CHECK(cond, st, fmt,...) HX_FAIL unless cond
 *   HX_TRY(call)                propagate a failing status, adding this call to the trace
 *   HX_TRY_GOTO(st, call, lbl)  same, but store the status in st and jump to cleanup
 *   HX_FAIL_GOTO(st, code, lbl, fmt, ...)  record an error and jump to cleanup
 */
#ifndef HALOX_ERROR_H
#define HALOX_ERROR_H

#include "halox/status.h"

#ifdef __cplusplus
extern "C" { /* also used by the CUDA sources, which nvcc compiles as C++ */
#endif

#if defined(__GNUC__)
__attribute__((format(printf, 5, 6)))
#endif
hx_status
hx_error_set(hx_status st, const char *file, int line, const char *func, const char *fmt, ...);
/* Append "via file:line: call" to the current error's trace; returns st. */
hx_status hx_error_trace(hx_status st, const char *file, int line, const char *call);

#ifdef __cplusplus
}
#endif

#define HX_FAIL(st, ...) return hx_error_set((st), __FILE__, __LINE__, __func__, __VA_ARGS__)

#define HX_CHECK(cond, st, ...)                                                                    \
    do {                                                                                           \
        if (!(cond))                                                                               \
            HX_FAIL((st), __VA_ARGS__);                                                            \
    } while (0)

#define HX_TRY(call)                                                                               \
    do {                                                                                           \
        hx_status hx_try_st_ = (call);                                                             \
        if (hx_try_st_ != HX_OK)                                                                   \
            return hx_error_trace(hx_try_st_, __FILE__, __LINE__, #call);                          \
    } while (0)

#define HX_TRY_GOTO(st, call, label)                                                               \
    do {                                                                                           \
        (st) = (call);                                                                             \
        if ((st) != HX_OK) {                                                                       \
            hx_error_trace((st), __FILE__, __LINE__, #call);                                       \
            goto label;                                                                            \
        }                                                                                          \
    } while (0)

/* Record an error and jump to cleanup (for functions that own resources). */
#define HX_FAIL_GOTO(st, code, label, ...)                                                         \
    do {                                                                                           \
        (st) = hx_error_set((code), __FILE__, __LINE__, __func__, __VA_ARGS__);                    \
        goto label;                                                                                \
    } while (0)

#endif
