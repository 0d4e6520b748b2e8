/* fuzz_parse.c - the number, duration and boolean grammar (base/parse.c) that every flag,
 * environment variable, query parameter and config value goes through. Besides crashes, checks
 * each accepted value against an independent reading (strtoull, strtod) and its bounds. */
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>

#include "base/parse.h"
#include "fuzz.h"

static int all_digits(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s))
            return 0;
    return 1;
}

/* [-]digits[.digits], nothing else. */
static int decimal_form(const char *s)
{
    if (*s == '-')
        s++;
    if (!isdigit((unsigned char)*s))
        return 0;
    while (isdigit((unsigned char)*s))
        s++;
    if (*s == '.') {
        s++;
        if (!isdigit((unsigned char)*s))
            return 0;
        while (isdigit((unsigned char)*s))
            s++;
    }
    return *s == '\0';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size);

    unsigned long long u = 0;
    if (gm_parse_uint(s, 0, ULLONG_MAX, &u) == GM_OK) {
        FUZZ_CHECK(all_digits(s));
        errno = 0;
        FUZZ_CHECK(strtoull(s, NULL, 10) == u && errno == 0);
    } else if (all_digits(s)) {
        errno = 0;
        strtoull(s, NULL, 10);
        FUZZ_CHECK(errno == ERANGE); /* only an overflow refuses plain digits */
    }
    if (gm_parse_uint(s, 10, 1000, &u) == GM_OK)
        FUZZ_CHECK(u >= 10 && u <= 1000);

    double d = 0;
    if (gm_parse_number(s, -DBL_MAX, DBL_MAX, &d) == GM_OK) {
        FUZZ_CHECK(decimal_form(s) && isfinite(d));
        double ref = strtod(s, NULL);
        FUZZ_CHECK(fabs(d - ref) <= 1e-9 * fmax(1.0, fabs(ref)));
    }
    if (gm_parse_number(s, 0.5, 100, &d) == GM_OK)
        FUZZ_CHECK(d >= 0.5 && d <= 100);

    bool b;
    (void)gm_parse_bool(s, &b);

    int64_t ms = 0;
    if (gm_parse_duration_ms(s, 0, INT64_MAX, &ms) == GM_OK) {
        FUZZ_CHECK(ms >= 0 && ms <= (int64_t)1e15);
        if (decimal_form(s)) { /* a plain number is seconds */
            double ref = strtod(s, NULL) * 1e3;
            FUZZ_CHECK(fabs((double)ms - ref) <= 1.0 + 1e-9 * ref);
        }
    }
    if (gm_parse_duration_ms(s, 1, (int64_t)UINT32_MAX * 1000, &ms) == GM_OK)
        FUZZ_CHECK(ms >= 1 && ms <= (int64_t)UINT32_MAX * 1000);

    free(s);
    return 0;
}
