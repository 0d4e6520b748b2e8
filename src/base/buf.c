/* buf.c - the growable byte buffer: doubling growth, one sticky failure flag. */
#include "base/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gm_buf_init(gm_buf *b, size_t limit)
{
    memset(b, 0, sizeof *b);
    b->limit = limit;
}

bool gm_buf_reserve(gm_buf *b, size_t extra)
{
    if (b->failed)
        return false;
    if (extra < b->cap - b->len && b->cap) /* room for extra plus the NUL */
        return true;
    size_t need = b->len + extra + 1;
    if (need < b->len || (b->limit && need > b->limit + 1)) {
        b->failed = true;
        return false;
    }
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap *= 2;
    if (b->limit && cap > b->limit + 1)
        cap = b->limit + 1;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->failed = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}

void gm_buf_put(gm_buf *b, const void *data, size_t n)
{
    if (!gm_buf_reserve(b, n))
        return;
    if (n)
        memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void gm_buf_puts(gm_buf *b, const char *s)
{
    gm_buf_put(b, s, strlen(s));
}

void gm_buf_vprintf(gm_buf *b, const char *fmt, va_list ap)
{
    if (b->failed)
        return;
    char small[256];
    va_list copy;
    va_copy(copy, ap);
    int n = vsnprintf(small, sizeof small, fmt, copy);
    va_end(copy);
    if (n < 0) {
        b->failed = true;
        return;
    }
    if ((size_t)n < sizeof small) {
        gm_buf_put(b, small, (size_t)n);
        return;
    }
    if (!gm_buf_reserve(b, (size_t)n))
        return;
    vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    b->len += (size_t)n;
}

void gm_buf_printf(gm_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gm_buf_vprintf(b, fmt, ap);
    va_end(ap);
}

char *gm_buf_take(gm_buf *b, size_t *len)
{
    if (b->failed) {
        gm_buf_free(b);
        return NULL;
    }
    if (!b->p && !gm_buf_reserve(b, 0))
        return NULL;
    b->p[b->len] = '\0';
    char *p = b->p;
    if (len)
        *len = b->len;
    size_t limit = b->limit;
    gm_buf_init(b, limit);
    return p;
}

void gm_buf_free(gm_buf *b)
{
    free(b->p);
    size_t limit = b->limit;
    gm_buf_init(b, limit);
}
