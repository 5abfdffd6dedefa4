/* halox: JSON output of halox files (energy lines, `halox plan --json`) through cJSON.
 *
 * cJSON builds the tree and escapes strings; numbers are formatted here, because cJSON prints
 * 15 significant digits whenever they read back within one ulp, which is not exact. Rules, for
 * every file halox writes:
 *  - a number reads back (strtod) as the same double: the shortest of 15, 16 or 17 significant
 *    digits that does (%.17g-exact, without the noise digits where fewer suffice);
 *  - NaN and infinities, which JSON cannot express, are written as null;
 *  - integers are written as integers;
 *  - strings are valid UTF-8 with JSON escapes: quotes, backslashes and control characters are
 *    escaped by cJSON, bytes that are not UTF-8 become U+FFFD.
 * Public for programs that write JSON the same way; it needs cJSON's header (libcjson-dev), so
 * the umbrella halox/halox.h does not include it. */
#ifndef HALOX_JSON_H
#define HALOX_JSON_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "halox/md.h"

#ifdef __cplusplus
extern "C" {
#endif

/* New items (NULL when out of memory). */
cJSON *hx_json_number(double v);
cJSON *hx_json_int(long long v);
cJSON *hx_json_string(const char *s);
cJSON *hx_json_number_array(const double *v, int n);
cJSON *hx_json_int_array(const int *v, int n);

/* Add an item to obj under key; returns 0 when out of memory (obj unchanged or item freed). */
int hx_json_add(cJSON *obj, const char *key, cJSON *item);

/* The exact text of v as hx_json_number writes it, into buf (at least 32 bytes); "null" for
 * NaN and infinities. */
void hx_json_format_number(double v, char *buf, size_t len);

/* One energy frame as a compact JSON object without newline: keys step, time, lj, coulomb,
 * [bonds, angles, dihedrals, lj14, coulomb14 when e->has_bonded,] potential, kinetic, total,
 * temperature (docs/energy-json.md). *out: free with cJSON_free. */
hx_status hx_json_energies(const hx_md_energies *e, char **out);

#ifdef __cplusplus
}
#endif

#endif
