/* buf.h - the one growable byte buffer: appends never fail one by one; the first allocation
 * failure, or growth past the buffer's limit, sticks, and the caller checks once at the end.
 * Always NUL-terminated after the first append, so text can be used as a C string. */
#ifndef GM_BUF_H
#define GM_BUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct gm_buf {
    char *p;
    size_t len, cap;
    size_t limit; /* most bytes it may hold (0: no limit) */
    bool failed;  /* out of memory or over the limit; later appends are dropped */
} gm_buf;

/* An empty buffer that may grow to limit bytes (0: no limit). Allocates nothing yet. */
void gm_buf_init(gm_buf *b, size_t limit);
/* Makes room for extra more bytes; false (and failed) when it cannot. */
bool gm_buf_reserve(gm_buf *b, size_t extra);
void gm_buf_put(gm_buf *b, const void *data, size_t n);
void gm_buf_puts(gm_buf *b, const char *s);
void gm_buf_printf(gm_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gm_buf_vprintf(gm_buf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* Hands the bytes over (malloc'd, NUL-terminated; *len their length) and empties b; NULL when
 * the buffer failed (its memory is then freed). An empty buffer gives "". */
char *gm_buf_take(gm_buf *b, size_t *len);
/* Frees the bytes; b is empty again. */
void gm_buf_free(gm_buf *b);

#endif
