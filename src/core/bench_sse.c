/* bench_sse.c - the incremental event-stream parser (see bench_sse.h). */
#include "core/bench_sse.h"

#include <string.h>

void gm_sse_init(gm_sse *p, size_t max)
{
    memset(p, 0, sizeof *p);
    p->max = max && max <= GM_SSE_DEFAULT_MAX * 64 ? max : GM_SSE_DEFAULT_MAX;
    gm_buf_init(&p->line, 0);
    gm_buf_init(&p->data, 0);
}

void gm_sse_free(gm_sse *p)
{
    gm_buf_free(&p->line);
    gm_buf_free(&p->data);
    size_t max = p->max;
    gm_sse_init(p, max);
}

void gm_sse_reset(gm_sse *p)
{
    gm_buf line = p->line, data = p->data;
    size_t max = p->max;
    memset(p, 0, sizeof *p);
    p->max = max;
    p->line = line;
    p->data = data;
    p->line.len = p->data.len = 0;
    p->line.failed = p->data.failed = false;
}

/* Appends n bytes to b unless that passes the limit: GM_EPARSE, or GM_ENOMEM. */
static int append(const gm_sse *p, gm_buf *b, const char *s, size_t n)
{
    if (n > p->max || b->len > p->max - n)
        return GM_EPARSE;
    gm_buf_put(b, s, n);
    return b->failed ? GM_ENOMEM : GM_OK;
}

static int dispatch(gm_sse *p, gm_sse_event_fn fn, void *arg)
{
    bool had = p->have_data;
    p->have_data = false;
    if (!had) {
        p->event[0] = '\0';
        return GM_OK;
    }
    p->events++;
    int rc = fn ? fn(arg, p->event, p->data.p ? p->data.p : "", p->data.len) : 0;
    p->data.len = 0;
    if (p->data.p)
        p->data.p[0] = '\0';
    p->event[0] = '\0';
    return rc;
}

/* One complete line (without its end). */
static int line(gm_sse *p, const char *s, size_t n, gm_sse_event_fn fn, void *arg)
{
    p->lines++;
    if (n == 0)
        return dispatch(p, fn, arg);
    if (s[0] == ':') {
        p->comments++;
        return GM_OK;
    }
    const char *colon = memchr(s, ':', n);
    size_t name_len = colon ? (size_t)(colon - s) : n;
    const char *value = colon ? colon + 1 : s + n;
    size_t value_len = (size_t)(s + n - value);
    if (value_len && value[0] == ' ') {
        value++;
        value_len--;
    }
    if (name_len == 4 && memcmp(s, "data", 4) == 0) {
        int rc;
        if (p->have_data && (rc = append(p, &p->data, "\n", 1)) < 0)
            return rc;
        if ((rc = append(p, &p->data, value, value_len)) < 0)
            return rc;
        p->have_data = true;
    } else if (name_len == 5 && memcmp(s, "event", 5) == 0) {
        size_t k = value_len < sizeof p->event - 1 ? value_len : sizeof p->event - 1;
        memcpy(p->event, value, k);
        p->event[k] = '\0';
    }
    /* id, retry and unknown fields: nothing a benchmark uses. */
    return GM_OK;
}

int gm_sse_feed(gm_sse *p, const void *bytes, size_t n, gm_sse_event_fn fn, void *arg)
{
    static const unsigned char bom[3] = {0xEF, 0xBB, 0xBF};
    const char *s = bytes;
    size_t i = 0;
    if (p->line.failed || p->data.failed)
        return GM_EPARSE;
    /* A byte order mark may only open the stream; its bytes may come one at a time. */
    while (!p->started && i < n) {
        if ((unsigned char)s[i] == bom[p->bom]) {
            i++;
            if (++p->bom == sizeof bom)
                p->started = true;
            continue;
        }
        p->started = true;
        if (p->bom) { /* a false start: those bytes were text */
            int rc = append(p, &p->line, (const char *)bom, p->bom);
            if (rc < 0)
                return rc;
        }
    }
    if (p->cr && i < n) {
        p->cr = false;
        if (s[i] == '\n')
            i++; /* the LF of a CRLF cut between two pieces */
    }
    while (i < n) {
        size_t j = i;
        while (j < n && s[j] != '\n' && s[j] != '\r')
            j++;
        if (j == n) {
            int rc = append(p, &p->line, s + i, n - i);
            if (rc < 0) {
                p->line.failed = true;
                return rc;
            }
            break;
        }
        int rc;
        if (p->line.len) {
            if ((rc = append(p, &p->line, s + i, j - i)) < 0) {
                p->line.failed = true;
                return rc;
            }
            rc = line(p, p->line.p, p->line.len, fn, arg);
            p->line.len = 0;
        } else {
            if (j - i > p->max) {
                p->line.failed = true;
                return GM_EPARSE;
            }
            rc = line(p, s + i, j - i, fn, arg);
        }
        if (s[j] == '\r') {
            if (j + 1 < n) {
                if (s[j + 1] == '\n')
                    j++;
            } else {
                p->cr = true;
            }
        }
        i = j + 1;
        if (rc == GM_EPARSE || rc == GM_ENOMEM)
            p->data.failed = true;
        if (rc)
            return rc;
    }
    return GM_OK;
}

int gm_sse_finish(gm_sse *p, gm_sse_event_fn fn, void *arg, bool *partial)
{
    static const unsigned char bom[3] = {0xEF, 0xBB, 0xBF};
    if (partial)
        *partial = false;
    if (p->line.failed || p->data.failed)
        return GM_EPARSE;
    int rc = GM_OK;
    if (!p->started && p->bom) { /* the stream was only part of a byte order mark */
        if (partial)
            *partial = p->bom < sizeof bom;
        p->started = true;
    }
    if (p->line.len) {
        const char *s = p->line.p;
        size_t n = p->line.len;
        /* Only a data line is worth completing: a field name cut short is not one. */
        bool data_line = n >= 4 && memcmp(s, "data", 4) == 0 && (n == 4 || s[4] == ':');
        if (!data_line && partial && s[0] != ':')
            *partial = true;
        rc = line(p, s, n, fn, arg);
        p->line.len = 0;
        if (rc)
            return rc;
    }
    if (p->have_data)
        rc = dispatch(p, fn, arg);
    return rc;
}
