/* halox: logging with levels.
 *
 * Messages go to stderr (and optionally a second stream, e.g. the run's .log file). The level
 * comes from hx_log_set_level or the environment variable HALOX_LOG (error, warn, info, debug).
 * In parallel runs only rank 0 logs below "warn" unless HALOX_LOG_ALL_RANKS=1. */
#ifndef HALOX_LOG_H
#define HALOX_LOG_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hx_log_level {
    HX_LOG_ERROR = 0,
    HX_LOG_WARN = 1,
    HX_LOG_INFO = 2,
    HX_LOG_DEBUG = 3
} hx_log_level;

void hx_log_set_level(hx_log_level level);
hx_log_level hx_log_get_level(void);
/* Parse "error|warn|info|debug"; returns -1 when unknown. */
int hx_log_level_parse(const char *name);
/* Extra stream that receives every message at or below the level (NULL to stop). */
void hx_log_set_file(FILE *f);
/* Rank used as a prefix and to silence non-root ranks. */
void hx_log_set_rank(int rank, int nranks);

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void hx_log(hx_log_level level, const char *fmt, ...);

#ifdef __cplusplus
}
#endif
#endif
