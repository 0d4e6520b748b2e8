/* parse.c - strict decimal numbers, durations and booleans, written as small scanners rather
 * than strtod/strtoul, which accept hex, exponents, "inf", leading spaces and signs. */
#include "base/parse.h"

#include "base/error.h"

#include <ctype.h>
#include <math.h>
#include <string.h>
#include <strings.h>

static bool digit(char c)
{
    return c >= '0' && c <= '9';
}

int gm_parse_uint(const char *s, unsigned long long min, unsigned long long max,
                  unsigned long long *out)
{
    if (!s || !digit(*s))
        return GM_EINVAL;
    unsigned long long v = 0;
    for (; *s; s++) {
        if (!digit(*s))
            return GM_EINVAL;
        unsigned d = (unsigned)(*s - '0');
        if (v > (~0ull - d) / 10)
            return GM_EINVAL; /* overflow */
        v = v * 10 + d;
    }
    if (v < min || v > max)
        return GM_EINVAL;
    *out = v;
    return GM_OK;
}

/* Scans digits[.digits] at *p into *v; false when there is none. Advances *p. */
static bool scan_decimal(const char **p, double *v)
{
    const char *s = *p;
    if (!digit(*s))
        return false;
    double x = 0;
    for (; digit(*s); s++)
        x = x * 10 + (*s - '0');
    if (*s == '.') {
        s++;
        if (!digit(*s))
            return false;
        double scale = 0.1;
        for (; digit(*s); s++, scale /= 10)
            x += (*s - '0') * scale;
    }
    *v = x;
    *p = s;
    return true;
}

int gm_parse_number(const char *s, double min, double max, double *out)
{
    if (!s)
        return GM_EINVAL;
    bool neg = *s == '-';
    const char *p = s + neg;
    double v;
    if (!scan_decimal(&p, &v) || *p || !isfinite(v))
        return GM_EINVAL;
    if (neg)
        v = -v;
    if (v < min || v > max)
        return GM_EINVAL;
    *out = v;
    return GM_OK;
}

int gm_parse_bool(const char *s, bool *out)
{
    static const char *const yes[] = {"true", "1", "yes", "on"};
    static const char *const no[] = {"false", "0", "no", "off"};
    if (!s)
        return GM_EINVAL;
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *out = true;
            return GM_OK;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *out = false;
            return GM_OK;
        }
    }
    return GM_EINVAL;
}

int gm_parse_duration_ms(const char *s, int64_t min_ms, int64_t max_ms, int64_t *out_ms)
{
    static const struct {
        const char *unit;
        double ms;
    } units[] = {{"d", 86400e3}, {"h", 3600e3}, {"m", 60e3}, {"s", 1e3}, {"ms", 1}};
    enum { N_UNITS = sizeof units / sizeof *units };
    if (!s || !*s)
        return GM_EINVAL;
    const char *p = s;
    double total = 0;
    size_t next = 0; /* units come in order, each once */
    for (;;) {
        double v;
        const char *start = p;
        if (!scan_decimal(&p, &v))
            return GM_EINVAL;
        bool fraction = memchr(start, '.', (size_t)(p - start)) != NULL;
        if (!*p) {
            if (start != s)
                return GM_EINVAL; /* a number without a unit after a component */
            total = v * 1e3;      /* a plain number: seconds */
            break;
        }
        /* The unit: "ms" before "m". */
        size_t u = N_UNITS, len = 0;
        for (size_t k = next; k < N_UNITS; k++) {
            size_t n = strlen(units[k].unit);
            bool ms_not_m = n == 1 && (p[0] | 0x20) == 'm' && (p[1] | 0x20) == 's';
            if (strncasecmp(p, units[k].unit, n) == 0 && !ms_not_m) {
                u = k;
                len = n;
                break;
            }
        }
        if (u == N_UNITS)
            return GM_EINVAL;
        total += v * units[u].ms;
        p += len;
        next = u + 1;
        if (total > 1e15)
            return GM_EINVAL;
        if (!*p)
            break;
        if (fraction)
            return GM_EINVAL; /* only the last component may have a fraction */
    }
    /* The same bound for a plain number as for components: 1e15 ms (31 700 years) also keeps
     * llround within int64_t, where an out-of-range result is unspecified. */
    if (!isfinite(total) || total > 1e15)
        return GM_EINVAL;
    int64_t ms = (int64_t)llround(total);
    if (ms < min_ms || ms > max_ms)
        return GM_EINVAL;
    *out_ms = ms;
    return GM_OK;
}

int gm_parse_size_bytes(const char *s, int64_t min, int64_t max, int64_t *out)
{
    if (!s)
        return GM_EINVAL;
    const char *p = s;
    double v;
    if (!scan_decimal(&p, &v))
        return GM_EINVAL;
    static const struct {
        char letter;
        double scale;
    } units[] = {{'b', 1},
                 {'k', 1024.0},
                 {'m', 1024.0 * 1024},
                 {'g', 1024.0 * 1024 * 1024},
                 {'t', 1024.0 * 1024 * 1024 * 1024}};
    double scale = 1;
    if (*p) {
        char u = (char)tolower((unsigned char)*p);
        size_t k = 0;
        while (k < sizeof units / sizeof *units && units[k].letter != u)
            k++;
        if (k == sizeof units / sizeof *units)
            return GM_EINVAL;
        scale = units[k].scale;
        p++;
        /* kb, kib (b alone takes no suffix) */
        if (u != 'b' && (*p == 'i' || *p == 'I'))
            p++;
        if (u != 'b' && (*p == 'b' || *p == 'B'))
            p++;
        else if (p[-1] == 'i' || p[-1] == 'I')
            return GM_EINVAL; /* "ki" */
        if (*p)
            return GM_EINVAL;
    }
    double bytes = floor(v * scale);
    if (!isfinite(bytes) || bytes > 9.0e18 || bytes < (double)min || bytes > (double)max)
        return GM_EINVAL;
    *out = (int64_t)bytes;
    return GM_OK;
}

const char *gm_parse_duration_help(void)
{
    return "a duration such as 90, 0.5, 500ms, 15m, 1h30m or 1d";
}

int gm_parse_gpu_list(const char *list, char items[][GM_UUID_LEN], size_t *n, gm_error *err)
{
    *n = 0;
    const char *p = list ? list : "";
    if (!*p)
        return gm_error_set(err, GM_EINVAL, "empty GPU list");
    while (p && *p) { /* a trailing comma ends the list */
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        while (len && *p == ' ')
            p++, len--;
        while (len && p[len - 1] == ' ')
            len--;
        bool control = false;
        for (size_t i = 0; i < len; i++)
            control |= (unsigned char)p[i] < 0x20;
        if (len == 0 || len >= GM_UUID_LEN || control || *n >= GM_MAX_GPUS)
            return gm_error_set(err, GM_EINVAL,
                                "invalid GPU list \"%s\" (expected indices, UUIDs or PCI bus ids "
                                "separated by commas)",
                                list);
        memcpy(items[*n], p, len);
        items[*n][len] = '\0';
        (*n)++;
        p = comma ? comma + 1 : NULL;
    }
    return GM_OK;
}
