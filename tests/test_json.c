/* JSON output (src/io/json.c): numbers read back as the same double, non-finite values are
 * null, strings are escaped and made valid UTF-8, energy lines have the documented text.
 *
 * Numbers: 200000 doubles from random bit patterns (every exponent, subnormals) and from
 * arithmetic that leaves 17-digit values (k * 0.1, 1/k), plus edge values (0, -0, the
 * smallest subnormal, the largest double, 2^53 +- 1); each printed number is parsed back with
 * strtod and with cJSON and must equal the original bit for bit. A number format that is exact
 * only to one ulp (cJSON's own) fails here. */
#include "halox/md.h"
#include "halox/json.h"
#include "testutil.h"

#include <float.h>
#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int same_bits(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

/* Print v through cJSON (as in the files) and parse it back two ways. */
static int roundtrip(double v, int *n17)
{
    cJSON *item = hx_json_number(v);
    char *text = item ? cJSON_PrintUnformatted(item) : NULL;
    int ok = text != NULL;
    if (ok) {
        double a = strtod(text, NULL);
        cJSON *back = cJSON_Parse(text);
        ok = same_bits(a, v) && back && cJSON_IsNumber(back) && same_bits(back->valuedouble, v);
        if (!ok) {
            unsigned long long bits;
            memcpy(&bits, &v, sizeof bits);
            T_FAIL("%.17g (bits %016llx) printed as \"%s\" reads back as %.17g", v, bits, text, a);
        }
        int digits = 0;
        for (const char *p = text; *p && *p != 'e'; p++)
            digits += *p >= '0' && *p <= '9';
        *n17 += digits >= 17;
        cJSON_Delete(back);
    } else {
        T_FAIL("%.17g: no JSON text", v);
    }
    cJSON_free(text);
    cJSON_Delete(item);
    return ok;
}

static void number_cases(int *ncases)
{
    t_rng r;
    t_rng_seed(&r, 20261207);
    int n17 = 0, bad = 0, n = 0;
    const double edge[] = {0.0,
                           -0.0,
                           5e-324,
                           -5e-324,
                           DBL_MIN,
                           DBL_MAX,
                           -DBL_MAX,
                           9007199254740991.0,
                           9007199254740992.0,
                           9007199254740994.0,
                           1e15,
                           123.0,
                           -7.0,
                           0.1,
                           1.0 / 3.0,
                           0.30000000000000004,
                           2.0 / 3.0 * 1e-300};
    for (size_t k = 0; k < sizeof edge / sizeof edge[0]; k++, n++)
        bad += !roundtrip(edge[k], &n17);
    for (int k = 0; k < 100000 && bad < 10; k++, n++) {
        uint64_t bits = t_rng_next(&r);
        double v;
        memcpy(&v, &bits, sizeof v);
        if (!isfinite(v))
            continue;
        bad += !roundtrip(v, &n17);
    }
    for (int k = 1; k <= 100000 && bad < 10; k++, n += 2) {
        bad += !roundtrip(k * 0.1, &n17);
        bad += !roundtrip(-1.0 / k, &n17);
    }
    printf("  %d numbers read back exactly (%d needed 17 digits)\n", n - bad, n17);
    T_CHECK(n17 > 1000, "only %d of %d numbers needed 17 digits: the set does not test exactness",
            n17, n);
    /* non-finite: null (JSON has no NaN or infinity) */
    const double nonfinite[] = {NAN, -NAN, INFINITY, -INFINITY};
    for (int k = 0; k < 4; k++) {
        cJSON *item = hx_json_number(nonfinite[k]);
        char *text = item ? cJSON_PrintUnformatted(item) : NULL;
        T_CHECK(text && strcmp(text, "null") == 0, "%g printed as \"%s\", expected null",
                nonfinite[k], text ? text : "(none)");
        cJSON_free(text);
        cJSON_Delete(item);
    }
    /* integers print as integers */
    char buf[40];
    hx_json_format_number(-42.0, buf, sizeof buf);
    T_CHECK(strcmp(buf, "-42") == 0, "-42.0 printed as \"%s\"", buf);
    hx_json_format_number(-0.0, buf, sizeof buf);
    T_CHECK(strcmp(buf, "-0.0") == 0, "-0.0 printed as \"%s\" (the sign must survive)", buf);
    *ncases += 4;
}

/* A host program may set a locale with a decimal comma; the files keep JSON's '.'. */
static void locale_case(int *ncases)
{
    const char *names[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "C.UTF-8", NULL};
    const char *got = NULL;
    for (int k = 0; names[k] && !got; k++)
        got = setlocale(LC_NUMERIC, names[k]);
    if (!got || strcmp(localeconv()->decimal_point, ",") != 0) {
        printf("  (no locale with a decimal comma installed: locale case skipped)\n");
        setlocale(LC_NUMERIC, "C");
        return;
    }
    char buf[40];
    hx_json_format_number(0.1, buf, sizeof buf);
    setlocale(LC_NUMERIC, "C");
    T_CHECK(strcmp(buf, "0.1") == 0, "in locale %s 0.1 printed as \"%s\"", got, buf);
    (*ncases)++;
}

static void string_case(const char *in, const char *want, int *ncases)
{
    cJSON *item = hx_json_string(in);
    char *text = item ? cJSON_PrintUnformatted(item) : NULL;
    T_CHECK(text && strcmp(text, want) == 0, "string printed as %s, expected %s",
            text ? text : "(none)", want);
    if (text) {
        cJSON *back = cJSON_Parse(text);
        T_CHECK(back && cJSON_IsString(back), "%s does not parse back as a string", text);
        cJSON_Delete(back);
    }
    cJSON_free(text);
    cJSON_Delete(item);
    (*ncases)++;
}

static void energy_cases(int *ncases)
{
    hx_md_energies e = {0};
    e.step = 12;
    e.time = 12 * 0.002;
    e.lj = -1234.5678901234567;
    e.coulomb = -0.1;
    e.potential = NAN;
    e.kinetic = 1.0 / 3.0;
    e.total = INFINITY;
    e.temperature = 300.0;
    char buf[256];
    hx_md_energies_json(&e, buf, sizeof buf);
    const char *want = "{\"step\":12,\"time\":0.024,\"lj\":-1234.5678901234567,\"coulomb\":-0.1,"
                       "\"potential\":null,\"kinetic\":0.3333333333333333,\"total\":null,"
                       "\"temperature\":300}";
    T_CHECK(strcmp(buf, want) == 0, "energy line\n  %s\nexpected\n  %s", buf, want);
    /* the longest line (every number 17 digits and an exponent) fits the documented 512 */
    char big[512];
    e.step = -9223372036854775807LL;
    e.time = e.lj = e.coulomb = e.potential = e.kinetic = e.total = e.temperature =
        -1.2345678901234567e-300;
    hx_md_energies_json(&e, big, sizeof big);
    T_CHECK(strlen(big) > 256 && strlen(big) < 512, "longest energy line: %zu bytes: %s",
            strlen(big), big);
    /* too small a buffer: an empty string, never a cut object */
    char small[40];
    hx_md_energies_json(&e, small, sizeof small);
    T_CHECK(small[0] == '\0', "a 40-byte buffer got \"%s\"", small);
    *ncases += 3;
}

int main(void)
{
    int ncases = 0;
    number_cases(&ncases);
    locale_case(&ncases);
    string_case("say \"hi\" \\ back\tslash", "\"say \\\"hi\\\" \\\\ back\\tslash\"", &ncases);
    string_case("bell\x07 nl\n", "\"bell\\u0007 nl\\n\"", &ncases);
    /* not UTF-8: a stray byte, an overlong '/', a surrogate, a cut sequence; then valid é, 😀 */
    string_case("a\xff"
                "b\xc0\xaf"
                "c\xed\xa0\x80"
                "d\xc3",
                "\"a\xef\xbf\xbd"
                "b\xef\xbf\xbd\xef\xbf\xbd"
                "c\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
                "d\xef\xbf\xbd\"",
                &ncases);
    string_case("caf\xc3\xa9 \xf0\x9f\x98\x80", "\"caf\xc3\xa9 \xf0\x9f\x98\x80\"", &ncases);
    energy_cases(&ncases);
    return t_finish("test_json", ncases);
}
