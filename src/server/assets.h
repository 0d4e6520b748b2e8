/* assets.h - the static files the daemon serves: the dashboard embedded at build time
 * (scripts/embed_web.py generates gm_web_assets), a built-in index page when the build has no
 * dashboard, or files from a directory on disk (--web-root, for dashboard development); plus
 * the pure HTTP helpers they need (Accept-Encoding, ETag / If-None-Match). */
#ifndef GM_SERVER_ASSETS_H
#define GM_SERVER_ASSETS_H

#include <stdbool.h>
#include <stddef.h>

#include "gpumon.h"

typedef struct gm_asset {
    const char *path;         /* request path, e.g. "/" or "/assets/app.js" */
    const char *content_type; /* e.g. "text/html; charset=utf-8" */
    const unsigned char *data;
    size_t len;
    bool gzip;                 /* data is gzip'd: served with Content-Encoding: gzip, and only
                                * to clients that accept it */
    const char *cache_control; /* NULL: "no-cache" */
} gm_asset;

/* The generated dashboard table: per file a gzip row (when gzip makes it smaller) then a raw
 * row with the same path, "/" repeating index.html; gm_web_assets_count rows, then an all-NULL
 * row. Empty (count 0) in a build configured with -DGM_WEB=OFF. */
extern const gm_asset gm_web_assets[];
extern const size_t gm_web_assets_count;

/* Largest file --web-root serves; bigger ones are refused (the dashboard's are far smaller). */
#define GM_WEBROOT_MAX_FILE (16u << 20)

/* True when this binary embeds the dashboard (gm_web_assets_count > 0). */
bool gm_assets_embedded(void);

/* The file served at path: from the dashboard table when the binary has one (its gzip row when
 * gzip_ok and there is one, else its raw row), else the built-in index page at "/". NULL when
 * there is none. */
const gm_asset *gm_assets_find(const char *path, bool gzip_ok);

/* True when the file at path exists in a gzip'd form too, so its responses must carry
 * "Vary: Accept-Encoding". */
bool gm_assets_has_gzip(const char *path);

/* The strong ETag (quoted, e.g. "\"9f3c0a1b2c3d4e5f\"") of an asset found by gm_assets_find: a
 * 64-bit FNV-1a hash of its bytes, so the gzip and raw forms differ. Computed at first use and
 * kept: call from one thread only (the libwebsockets loop). */
const char *gm_assets_etag(const gm_asset *a);

/* Whether an Accept-Encoding value admits gzip: "gzip" or "x-gzip" with a q-value above 0, or
 * "*" with a q-value above 0 when gzip is not listed. NULL or "" admits nothing but identity. */
bool gm_accepts_gzip(const char *accept_encoding);

/* Whether an If-None-Match value matches etag: "*", or any entry of its comma-separated list,
 * compared weakly (a W/ prefix is ignored, as RFC 9110 asks for If-None-Match). */
bool gm_etag_matches(const char *if_none_match, const char *etag);

/* The Content-Type for a file name by its extension ("application/octet-stream" when unknown). */
const char *gm_content_type_for(const char *name);

/* Reads the file that request path names under root (a canonical absolute directory, as
 * realpath() gives it) for --web-root: "/" and paths ending in "/" mean their index.html.
 * Refuses, without touching the disk, paths with a segment starting with '.' (no "..", no
 * hidden files) or holding a backslash; then refuses anything whose canonical path leaves root
 * (a symbolic link pointing out) or is not a regular file. On GM_OK, *data (malloc'd, free it)
 * and *len hold the bytes and *ctype the content type. Returns GM_ENOENT (missing, not a
 * regular file), GM_EPERM (outside root or refused name), GM_EINVAL (larger than
 * GM_WEBROOT_MAX_FILE), GM_EIO, GM_ENOMEM; err says which. */
int gm_webroot_read(const char *root, const char *path, char **data, size_t *len,
                    const char **ctype, gm_error *err);

#endif
