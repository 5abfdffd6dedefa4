/* JSON output through cJSON with exact numbers (see json.h for the rules and why). */
#include "halox/json.h"
#include "core/error.h"

#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void hx_json_format_number(double v, char *buf, size_t len)
{
    if (!isfinite(v)) {
        snprintf(buf, len, "null");
        return;
    }
    /* Integers below 2^53 print as integers: exact, and no exponent for a count. */
    if (v == floor(v) && fabs(v) < 9007199254740992.0) {
        snprintf(buf, len, "%.0f", v);
        if (strcmp(buf, "-0") == 0)
            snprintf(buf, len, "-0.0"); /* keep the sign: "-0" reads back as integer 0 */
        return;
    }
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, len, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    /* A locale with a decimal comma (set by a host program) must not reach the file: JSON's
     * decimal point is '.'. strtod above used the same locale, so the check still held. */
    const char *dp = localeconv()->decimal_point;
    if (dp && dp[0] && dp[0] != '.' && !dp[1])
        for (char *p = buf; *p; p++)
            if (*p == dp[0])
                *p = '.';
}

cJSON *hx_json_number(double v)
{
    if (!isfinite(v))
        return cJSON_CreateNull();
    char text[40];
    hx_json_format_number(v, text, sizeof text);
    return cJSON_CreateRaw(text);
}

cJSON *hx_json_int(long long v)
{
    char text[32];
    snprintf(text, sizeof text, "%lld", v);
    return cJSON_CreateRaw(text);
}

/* Length of the valid UTF-8 sequence at s (1-4), or 0 if the bytes there are not one. */
static int utf8_len(const unsigned char *s)
{
    if (s[0] < 0x80)
        return 1;
    if (s[0] < 0xc2 || s[0] > 0xf4) /* continuation byte, overlong lead, beyond U+10FFFF */
        return 0;
    const int n = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : 2;
    for (int k = 1; k < n; k++)
        if ((s[k] & 0xc0) != 0x80)
            return 0;
    /* overlong 3- and 4-byte forms, surrogates, beyond U+10FFFF */
    if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0) ||
        (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))
        return 0;
    return n;
}

cJSON *hx_json_string(const char *s)
{
    size_t n = strlen(s);
    char *clean = malloc(3 * n + 1); /* a replaced byte becomes 3 */
    if (!clean)
        return NULL;
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        int k = utf8_len(p);
        if (k == 0) {
            memcpy(clean + o, "\xef\xbf\xbd", 3); /* U+FFFD REPLACEMENT CHARACTER */
            o += 3;
            p++;
            continue;
        }
        memcpy(clean + o, p, (size_t)k);
        o += (size_t)k;
        p += k;
    }
    clean[o] = '\0';
    cJSON *item = cJSON_CreateString(clean);
    free(clean);
    return item;
}

cJSON *hx_json_number_array(const double *v, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int k = 0; a && k < n; k++) {
        cJSON *item = hx_json_number(v[k]);
        if (!item || !cJSON_AddItemToArray(a, item)) {
            cJSON_Delete(item);
            cJSON_Delete(a);
            return NULL;
        }
    }
    return a;
}

cJSON *hx_json_int_array(const int *v, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int k = 0; a && k < n; k++) {
        cJSON *item = hx_json_int(v[k]);
        if (!item || !cJSON_AddItemToArray(a, item)) {
            cJSON_Delete(item);
            cJSON_Delete(a);
            return NULL;
        }
    }
    return a;
}

int hx_json_add(cJSON *obj, const char *key, cJSON *item)
{
    if (!obj || !item || !cJSON_AddItemToObject(obj, key, item)) {
        cJSON_Delete(item);
        return 0;
    }
    return 1;
}

hx_status hx_json_energies(const hx_md_energies *e, char **out)
{
    HX_CHECK(e && out, HX_ERR_INVALID_ARG, "hx_json_energies: NULL argument");
    *out = NULL;
    cJSON *o = cJSON_CreateObject();
    int ok = o && hx_json_add(o, "step", hx_json_int(e->step)) &&
             hx_json_add(o, "time", hx_json_number(e->time)) &&
             hx_json_add(o, "lj", hx_json_number(e->lj)) &&
             hx_json_add(o, "coulomb", hx_json_number(e->coulomb));
    /* the bonded terms only for systems that have them (water's lines stay as they were) */
    if (ok && e->has_bonded)
        ok = hx_json_add(o, "bonds", hx_json_number(e->bonds)) &&
             hx_json_add(o, "angles", hx_json_number(e->angles)) &&
             hx_json_add(o, "dihedrals", hx_json_number(e->dihedrals)) &&
             hx_json_add(o, "lj14", hx_json_number(e->lj14)) &&
             hx_json_add(o, "coulomb14", hx_json_number(e->coulomb14));
    ok = ok && hx_json_add(o, "potential", hx_json_number(e->potential)) &&
         hx_json_add(o, "kinetic", hx_json_number(e->kinetic)) &&
         hx_json_add(o, "total", hx_json_number(e->total));
    /* with a thermostat only: in NVE it is the total (NVE files stay as they were) */
    if (ok && e->has_thermostat)
        ok = hx_json_add(o, "conserved", hx_json_number(e->conserved));
    ok = ok && hx_json_add(o, "temperature", hx_json_number(e->temperature));
    char *text = ok ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    HX_CHECK(text, HX_ERR_NOMEM, "out of memory formatting the energies of step %lld", e->step);
    *out = text;
    return HX_OK;
}
