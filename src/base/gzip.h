/* gzip.h - one gzip compressor for the bodies the daemon serves more often than they change
 * (a sample's /metrics and /api/gpus, the fleet's answer): compressed once, sent many times. */
#ifndef GM_GZIP_H
#define GM_GZIP_H

#include <stddef.h>

/* src[0..len) as a gzip stream (level 6) in a new block with headroom free bytes before it
 * (a frame header can be written there later) and a NUL after it. Returns the block (free() it);
 * the stream starts at block + headroom and is *out_len bytes. NULL when out of memory or
 * zlib refuses. */
unsigned char *gm_gzip(const void *src, size_t len, size_t headroom, size_t *out_len);

#endif
