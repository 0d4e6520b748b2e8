/* fuzz_http_request.c - what the daemon reads of a request head before any route runs
 * (server/request.c, server/query.c): the request target split into a percent-decoded path
 * and query parameters, the GET /api/history parameters validated from them, and the header
 * field checks (token, value, Sec-WebSocket-Key, comma lists). The input is the raw request
 * target as libmicrohttpd hands it over (at most GM_HTTP_URI_MAX bytes); the header checks see
 * the same bytes. Checks the results against what each function promises. */
#include <ctype.h>
#include <stdbool.h>
#include <strings.h>

#include "server/query.h"
#include "server/request.h"
#include "fuzz.h"

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* RFC 9110 5.6.2 tchar, written out. */
static bool tchar(unsigned char c)
{
    return isalnum(c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* RFC 9110 5.5 field-vchar, SP and HTAB. */
static bool vchar(unsigned char c)
{
    return c == ' ' || c == '\t' || (c >= 0x21 && c <= 0x7e) || c >= 0x80;
}

/* Case-insensitive membership of a comma-separated list, the slow way: split, trim, compare
 * (token is never empty here). */
static bool ref_list_has(const char *list, const char *token)
{
    char *copy = strdup(list), *save = NULL;
    FUZZ_CHECK(copy);
    bool found = false;
    size_t tl = strlen(token);
    for (char *it = strtok_r(copy, ",", &save); it && !found; it = strtok_r(NULL, ",", &save)) {
        while (*it == ' ' || *it == '\t')
            it++;
        size_t n = strlen(it);
        while (n && (it[n - 1] == ' ' || it[n - 1] == '\t'))
            n--;
        found = n == tl && strncasecmp(it, token, tl) == 0;
    }
    free(copy);
    return found;
}

static void check_history(const gm_query *q, unsigned gpu_count, const bool *present,
                          unsigned history_s, unsigned poll_ms)
{
    gm_history_params hp;
    gm_error err = {0};
    int rc = gm_history_params_parse(q, gpu_count, present, history_s, poll_ms, &hp, &err);
    if (rc < 0) {
        FUZZ_CHECK(rc == GM_EINVAL && err.msg[0] && fuzz_terminated(err.msg, sizeof err.msg));
        return;
    }
    FUZZ_CHECK(rc == GM_OK && history_s > 0);
    FUZZ_CHECK(hp.count <= GM_HISTORY_MAX_SERIES);
    if (hp.count == 0) /* only GPU metrics, and no GPU recorded: no series, not an error */
        for (unsigned g = 0; g < gpu_count && g < GM_MAX_GPUS; g++)
            FUZZ_CHECK(present && !present[g]);
    FUZZ_CHECK(hp.range_ms >= 1 && hp.range_ms <= (int64_t)history_s * 1000);
    FUZZ_CHECK(hp.step_ms >= 0 && hp.step_ms <= hp.range_ms);
    int64_t res = hp.step_ms > (int64_t)poll_ms ? hp.step_ms : (int64_t)poll_ms;
    FUZZ_CHECK(hp.range_ms / res + 1 <= GM_HISTORY_MAX_POINTS);
    FUZZ_CHECK((int64_t)hp.count * (hp.range_ms / res + 1) <= GM_HISTORY_MAX_TOTAL_POINTS);
    for (size_t i = 0; i < hp.count; i++) {
        const gm_history_pick *p = &hp.series[i];
        if (p->source == GM_RING_GPU) {
            FUZZ_CHECK(p->gpu < gpu_count && p->gpu < GM_MAX_GPUS);
            FUZZ_CHECK(!present || present[p->gpu]);
            FUZZ_CHECK(p->metric >= 0 && p->metric < GM_M__COUNT);
        } else {
            FUZZ_CHECK(p->source == GM_RING_HOST);
            FUZZ_CHECK(p->metric >= 0 && p->metric < GM_H__COUNT);
        }
        char name[128];
        FUZZ_CHECK(gm_history_series_name(p, name, sizeof name)[0] != '\0');
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* An exact-size copy: the target parser takes a length, and must not read past it. */
    char *raw = malloc(size ? size : 1);
    FUZZ_CHECK(raw);
    memcpy(raw, data, size);

    char path[GM_HTTP_PATH_MAX];
    gm_query *q = malloc(sizeof *q);
    FUZZ_CHECK(q);
    gm_error err = {0};
    int rc = gm_http_target_parse(raw, size, path, sizeof path, q, &err);
    if (rc == GM_OK) {
        FUZZ_CHECK(size > 0 && raw[0] == '/' && !memchr(raw, '#', size));
        size_t plen = strnlen(path, sizeof path);
        FUZZ_CHECK(plen < sizeof path && plen >= 1 && path[0] == '/');
        for (size_t i = 0; i < plen; i++)
            FUZZ_CHECK((unsigned char)path[i] >= 0x20 && path[i] != 0x7f);
        FUZZ_CHECK(q->count <= GM_QUERY_MAX_PARAMS && q->used <= GM_QUERY_MAX_BYTES);
        for (size_t i = 0; i < q->count; i++) {
            const char *k = q->p[i].key, *v = q->p[i].value;
            FUZZ_CHECK(k >= q->buf && k < q->buf + q->used && k[0] != '\0');
            FUZZ_CHECK(v >= q->buf && v < q->buf + q->used);
            for (const char *c = k; *c; c++)
                FUZZ_CHECK((unsigned char)*c >= 0x20 && *c != 0x7f);
            for (const char *c = v; *c; c++)
                FUZZ_CHECK((unsigned char)*c >= 0x20 && *c != 0x7f);
            FUZZ_CHECK(gm_query_get(q, k) != NULL);
        }
        /* GET /api/history as the daemon runs it: 4 GPUs; 8 with gaps in the latest sample;
         * no GPU yet; history off; the longest history at the shortest poll. */
        bool all[GM_MAX_GPUS], gaps[GM_MAX_GPUS];
        for (unsigned g = 0; g < GM_MAX_GPUS; g++) {
            all[g] = true;
            gaps[g] = g % 3 != 1;
        }
        check_history(q, 4, all, 3600, 1000);
        check_history(q, 8, gaps, 600, 100);
        check_history(q, 0, NULL, 60, 1000);
        check_history(q, GM_MAX_GPUS, all, 7 * 86400, 100);
        check_history(q, 2, all, 0, 1000);
    } else {
        FUZZ_CHECK(rc == GM_EINVAL && err.msg[0] && fuzz_terminated(err.msg, sizeof err.msg));
    }

    /* The query string alone, as gm_http_target_parse hands it on (no '?' needed). */
    gm_query_init(q);
    if (gm_query_parse(q, raw, size, &err) == GM_OK)
        FUZZ_CHECK(q->count <= GM_QUERY_MAX_PARAMS && size <= GM_QUERY_MAX_BYTES);

    /* Percent-decoding into room as small as the first byte says. */
    char dec[64];
    size_t cap = size ? (size_t)(data[0] % sizeof dec) : 0;
    int n = gm_http_pct_decode(raw, size, size && (data[0] & 0x80), dec, cap, &err);
    if (n >= 0 && cap == 0)
        FUZZ_CHECK(n == 0 && size == 0); /* no room: nothing written, not even the NUL */
    else if (n >= 0)
        FUZZ_CHECK((size_t)n < cap && dec[n] == '\0' && strlen(dec) == (size_t)n);

    /* Header field checks on the same bytes: a name, a value. */
    bool tok = size > 0;
    for (size_t i = 0; i < size && tok; i++)
        tok = tchar(data[i]);
    FUZZ_CHECK(gm_http_token_ok(raw, size) == tok);
    bool val = true;
    for (size_t i = 0; i < size && val; i++)
        val = vchar(data[i]);
    FUZZ_CHECK(gm_http_value_ok(raw, size) == val);

    /* As C strings: a method, a Sec-WebSocket-Key, a Connection/Upgrade list. */
    char *cs = fuzz_cstr(data, size);
    unsigned m = gm_http_method(cs);
    FUZZ_CHECK(m == 0 || strcmp(gm_http_method_name(m), cs) == 0);
    if (gm_ws_key_ok(cs)) {
        FUZZ_CHECK(strlen(cs) == 24 && strspn(cs, b64) == 22 && strcmp(cs + 22, "==") == 0);
        /* The last character carries 2 bits of the 16th byte and 4 of padding, all zero. */
        FUZZ_CHECK(((strchr(b64, cs[21]) - b64) & 0xF) == 0);
    }
    static const char *const tokens[] = {"upgrade", "websocket", "keep-alive", "gzip"};
    for (size_t t = 0; t < sizeof tokens / sizeof *tokens; t++)
        FUZZ_CHECK(gm_http_list_has(cs, tokens[t]) == ref_list_has(cs, tokens[t]));
    /* The part after the first comma as the token looked for in the whole list. */
    const char *comma = strchr(cs, ',');
    if (comma && comma[1] && !strchr(comma + 1, ','))
        FUZZ_CHECK(gm_http_list_has(cs, comma + 1) == ref_list_has(cs, comma + 1));

    free(cs);
    free(q);
    free(raw);
    return 0;
}
