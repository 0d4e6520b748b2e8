/* gzip.c - gzip streams through zlib (gzip.h). */
#include "base/gzip.h"

#include <stdlib.h>
#include <zlib.h>

unsigned char *gm_gzip(const void *src, size_t len, size_t headroom, size_t *out_len)
{
    z_stream z = {0};
    *out_len = 0;
    /* windowBits 15 + 16: a gzip header and trailer instead of zlib's. */
    if (!src || deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return NULL;
    size_t cap = deflateBound(&z, (uLong)len) + 32;
    unsigned char *m = malloc(headroom + cap + 1);
    if (m) {
        z.next_in = (unsigned char *)src;
        z.avail_in = (uInt)len;
        z.next_out = m + headroom;
        z.avail_out = (uInt)cap;
        if (deflate(&z, Z_FINISH) == Z_STREAM_END) {
            *out_len = z.total_out;
            m[headroom + z.total_out] = '\0';
        } else {
            free(m);
            m = NULL;
        }
    }
    deflateEnd(&z);
    return m;
}
