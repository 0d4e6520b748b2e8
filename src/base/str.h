/* str.h - the one bounded string copy, for the fixed-size text fields of the model (names,
 * UUIDs, versions): it always terminates and never reads past what it copies. */
#ifndef GM_STR_H
#define GM_STR_H

#include <stddef.h>

/* Copies src (NULL reads as "") into dst of cap bytes, truncated to cap - 1 bytes, always
 * NUL-terminated when cap > 0; nothing is written when cap is 0. Returns the bytes copied. */
size_t gm_str_copy(char *dst, size_t cap, const char *src);

#endif
