/* assets.c - the table of static files, today only the index page that links the endpoints. */
#include "server/assets.h"

#include <string.h>

static const char index_html[] =
    "<!doctype html>\n"
    "<html lang=\"en\"><head><meta charset=\"utf-8\"><title>gpumon</title></head>\n"
    "<body>\n"
    "<h1>gpumon</h1>\n"
    "<p>GPU telemetry daemon. The dashboard is not built into this binary yet; the API is:</p>\n"
    "<ul>\n"
    "<li><a href=\"/api/health\">/api/health</a> - liveness and sampling state</li>\n"
    "<li><a href=\"/api/config\">/api/config</a> - effective configuration</li>\n"
    "<li><a href=\"/api/gpus\">/api/gpus</a> - latest sample (also /api/gpus/{index})</li>\n"
    "<li><a href=\"/api/processes\">/api/processes</a> - GPU processes</li>\n"
    "<li><a href=\"/api/system\">/api/system</a> - host metrics</li>\n"
    "<li><a href=\"/api/history?metric=utilization.gpu&amp;seconds=60\">/api/history</a> - "
    "time series</li>\n"
    "<li><a href=\"/metrics\">/metrics</a> - Prometheus exposition</li>\n"
    "<li><a href=\"/stats\">/stats</a> - system inventory</li>\n"
    "<li><a href=\"/api/v1/monitoring/gpu-metrics\">/api/v1/monitoring/gpu-metrics</a> - "
    "fleet format</li>\n"
    "<li>WebSocket <code>/ws/gpu</code> (full samples) and <code>/ws/metrics</code></li>\n"
    "</ul>\n"
    "</body></html>\n";

static const gm_asset assets[] = {
    {"/", "text/html; charset=utf-8", (const unsigned char *)index_html, sizeof index_html - 1,
     false, NULL},
};

const gm_asset *gm_assets_find(const char *path)
{
    for (size_t i = 0; i < sizeof assets / sizeof *assets; i++)
        if (strcmp(assets[i].path, path) == 0)
            return &assets[i];
    return NULL;
}
