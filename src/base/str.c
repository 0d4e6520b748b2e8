/* str.c - the bounded string copy. */
#include "base/str.h"

#include <string.h>

size_t gm_str_copy(char *dst, size_t cap, const char *src)
{
    if (cap == 0)
        return 0;
    /* strnlen: src need not be terminated within the bytes we may copy. */
    size_t n = src ? strnlen(src, cap - 1) : 0;
    memcpy(dst, src ? src : "", n);
    dst[n] = '\0';
    return n;
}
