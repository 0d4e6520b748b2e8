/* assets.h - the static files the daemon serves (for now a small index page). The dashboard
 * replaces the table with its built, gzip'd files: one row per path, nothing else changes. */
#ifndef GM_SERVER_ASSETS_H
#define GM_SERVER_ASSETS_H

#include <stdbool.h>
#include <stddef.h>

typedef struct gm_asset {
    const char *path;         /* request path, e.g. "/" or "/assets/app.js" */
    const char *content_type; /* e.g. "text/html; charset=utf-8" */
    const unsigned char *data;
    size_t len;
    bool gzip;                 /* data is gzip'd: served with Content-Encoding: gzip, and only
                                * to clients that accept it */
    const char *cache_control; /* NULL: "no-cache" */
} gm_asset;

/* The asset served at path, NULL when none. */
const gm_asset *gm_assets_find(const char *path);

#endif
