/* utf8.c - UTF-8 validation as the ranges of RFC 3629, table 3-7 of the Unicode standard. */
#include "base/utf8.h"

#include <string.h>

/* Starts a sequence at lead byte b: false when b cannot start one. */
static bool lead(gm_utf8_stream *st, uint8_t b)
{
    st->lo = 0x80;
    st->hi = 0xBF;
    if (b < 0x80)
        st->need = 0;
    else if (b >= 0xC2 && b <= 0xDF)
        st->need = 1;
    else if (b == 0xE0) {
        st->need = 2;
        st->lo = 0xA0; /* no overlong three-byte forms */
    } else if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF)
        st->need = 2;
    else if (b == 0xED) {
        st->need = 2;
        st->hi = 0x9F; /* no surrogates */
    } else if (b == 0xF0) {
        st->need = 3;
        st->lo = 0x90;
    } else if (b >= 0xF1 && b <= 0xF3)
        st->need = 3;
    else if (b == 0xF4) {
        st->need = 3;
        st->hi = 0x8F; /* nothing above U+10FFFF */
    } else
        return false;
    return true;
}

bool gm_utf8_feed(gm_utf8_stream *st, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint8_t b = p[i];
        if (st->need == 0) {
            if (b < 0x80)
                continue;
            if (!lead(st, b))
                return false;
        } else {
            if (b < st->lo || b > st->hi)
                return false;
            st->need--;
            st->lo = 0x80;
            st->hi = 0xBF;
        }
    }
    return true;
}

bool gm_utf8_complete(const gm_utf8_stream *st)
{
    return st->need == 0;
}

bool gm_utf8_valid(const char *s, size_t n)
{
    gm_utf8_stream st = {0};
    return gm_utf8_feed(&st, (const uint8_t *)s, n) && gm_utf8_complete(&st);
}

int gm_utf8_seq_len(const uint8_t *s, size_t n)
{
    gm_utf8_stream st = {0};
    if (!lead(&st, s[0]))
        return 0;
    size_t len = 1 + (size_t)st.need;
    size_t have = len > n ? n : len;
    if (!gm_utf8_feed(&st, s + 1, have - 1))
        return 0;
    return have < len ? -1 : (int)len;
}

size_t gm_utf8_repair(char *dst, size_t cap, const char *s, size_t n)
{
    static const char fffd[] = "\xEF\xBF\xBD";
    const uint8_t *u = (const uint8_t *)s;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        int sl = gm_utf8_seq_len(u + i, n - i);
        size_t len = sl > 0 ? (size_t)sl : 0;
        const char *src = len ? s + i : fffd;
        size_t w = len ? len : 3;
        if (o + w + 1 > cap)
            break;
        memcpy(dst + o, src, w);
        o += w;
        i += len ? len : 1;
    }
    if (cap)
        dst[o] = '\0';
    return o;
}

void gm_utf8_shorten_name(const char *name, size_t width, char *out, size_t outlen)
{
    if (!outlen)
        return;
    if (width >= outlen)
        width = outlen - 1;
    size_t len = strlen(name);
    if (len > width && strncmp(name, "NVIDIA ", 7) == 0) {
        name += 7;
        len -= 7;
    }
    if (len > width) {
        size_t cut = 0;
        for (size_t i = 1; i <= width; i++)
            if (name[i] == ' ' || name[i] == '\0')
                cut = i;
        len = cut ? cut : width;
        while (!cut && len > 0 && ((unsigned char)name[len] & 0xC0) == 0x80)
            len--; /* not inside a character */
    }
    while (len > 1 && (name[len - 1] == ' ' || name[len - 1] == '-'))
        len--;
    memcpy(out, name, len);
    out[len] = '\0';
}
