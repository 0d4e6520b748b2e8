/* assets.c - static files: the embedded dashboard table with gzip negotiation and ETags, the
 * built-in index page of builds without a dashboard, and --web-root files read from disk. */
#include "server/assets.h"
#include "base/error.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

static const char index_html[] =
    "<!doctype html>\n"
    "<html lang=\"en\"><head><meta charset=\"utf-8\"><title>gpumon</title></head>\n"
    "<body>\n"
    "<h1>gpumon</h1>\n"
    "<p>GPU telemetry daemon. The dashboard is not built into this binary (configured with "
    "-DGM_WEB=OFF); the API is:</p>\n"
    "<ul>\n"
    "<li><a href=\"/api/health\">/api/health</a> - liveness and sampling state</li>\n"
    "<li><a href=\"/api/config\">/api/config</a> - effective configuration</li>\n"
    "<li><a href=\"/api/gpus\">/api/gpus</a> - latest sample (also /api/gpus/{index})</li>\n"
    "<li><a href=\"/api/processes\">/api/processes</a> - GPU processes</li>\n"
    "<li><a href=\"/api/system\">/api/system</a> - host metrics</li>\n"
    "<li><a href=\"/api/history?metric=utilization.gpu&amp;seconds=60\">/api/history</a> - "
    "time series</li>\n"
    "<li><a href=\"/api/sessions\">/api/sessions</a> - monitoring sessions (POST to start "
    "one)</li>\n"
    "<li><a href=\"/api/allocation?count=1\">/api/allocation</a> - the GPUs to use now</li>\n"
    "<li><a href=\"/metrics\">/metrics</a> - Prometheus exposition</li>\n"
    "<li><a href=\"/stats\">/stats</a> - system inventory</li>\n"
    "<li><a href=\"/api/v1/monitoring/gpu-metrics\">/api/v1/monitoring/gpu-metrics</a> - "
    "fleet format</li>\n"
    "<li>WebSocket <code>/ws/gpu</code> (full samples) and <code>/ws/metrics</code></li>\n"
    "</ul>\n"
    "</body></html>\n";

static const gm_asset builtin[] = {
    {"/", "text/html; charset=utf-8", (const unsigned char *)index_html, sizeof index_html - 1,
     false, "no-cache"},
};

#define BUILTIN_COUNT (sizeof builtin / sizeof *builtin)

bool gm_assets_embedded(void)
{
    return gm_web_assets_count > 0;
}

/* The table in use: the dashboard's, or the built-in page when the build has none. */
static const gm_asset *table(size_t *n)
{
    if (gm_web_assets_count > 0) {
        *n = gm_web_assets_count;
        return gm_web_assets;
    }
    *n = BUILTIN_COUNT;
    return builtin;
}

const gm_asset *gm_assets_find(const char *path, bool gzip_ok)
{
    size_t n;
    const gm_asset *t = table(&n);
    /* Rows of one path are adjacent, gzip first: the first acceptable one wins. */
    for (size_t i = 0; i < n; i++)
        if (strcmp(t[i].path, path) == 0 && (gzip_ok || !t[i].gzip))
            return &t[i];
    return NULL;
}

bool gm_assets_has_gzip(const char *path)
{
    size_t n;
    const gm_asset *t = table(&n);
    for (size_t i = 0; i < n; i++)
        if (t[i].gzip && strcmp(t[i].path, path) == 0)
            return true;
    return false;
}

const char *gm_assets_etag(const gm_asset *a)
{
    /* One slot per row of either table; filled by the loop thread alone, on first use, so a
     * binary that never serves a file never hashes it. */
    static char tags[1024][20];
    static char spill[20];
    size_t n;
    const gm_asset *t = table(&n);
    char *slot = spill;
    if (a >= t && a < t + n && (size_t)(a - t) < sizeof tags / sizeof *tags)
        slot = tags[a - t];
    if (slot[0] && slot != spill)
        return slot;
    uint64_t h = 0xcbf29ce484222325u; /* FNV-1a 64 */
    for (size_t i = 0; i < a->len; i++) {
        h ^= a->data[i];
        h *= 0x100000001b3u;
    }
    snprintf(slot, 20, "\"%016llx\"", (unsigned long long)h);
    return slot;
}

/* ---- header values ------------------------------------------------------------------------ */

/* Parses the q-value of one Accept-Encoding element's parameters ("; q=0.5"): 1 when absent,
 * 0 when malformed (an element one cannot read is not an acceptance). */
static double element_q(const char *params, size_t len)
{
    const char *p = params, *end = params + len;
    while (p < end) {
        while (p < end && (*p == ';' || *p == ' ' || *p == '\t'))
            p++;
        const char *name = p;
        while (p < end && *p != '=' && *p != ';')
            p++;
        size_t nlen = (size_t)(p - name);
        while (nlen && (name[nlen - 1] == ' ' || name[nlen - 1] == '\t'))
            nlen--;
        if (p < end && *p == '=') {
            p++;
            while (p < end && (*p == ' ' || *p == '\t'))
                p++;
            const char *val = p;
            while (p < end && *p != ';')
                p++;
            if (nlen == 1 && (name[0] == 'q' || name[0] == 'Q')) {
                char buf[16];
                size_t vlen = (size_t)(p - val);
                while (vlen && (val[vlen - 1] == ' ' || val[vlen - 1] == '\t'))
                    vlen--;
                if (vlen == 0 || vlen >= sizeof buf)
                    return 0;
                memcpy(buf, val, vlen);
                buf[vlen] = '\0';
                /* RFC 9110 qvalue: 0[.ddd] or 1[.000]. */
                if (strspn(buf, "0123456789.") != vlen || (buf[0] != '0' && buf[0] != '1'))
                    return 0;
                double q = strtod(buf, NULL);
                return q > 1 ? 0 : q;
            }
        }
    }
    return 1;
}

bool gm_accepts_gzip(const char *ae)
{
    if (!ae)
        return false;
    double gzip_q = -1, star_q = -1;
    const char *p = ae;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        const char *e = p, *end = p + len;
        while (e < end && (*e == ' ' || *e == '\t'))
            e++;
        const char *tok = e;
        while (e < end && *e != ';' && *e != ' ' && *e != '\t')
            e++;
        size_t tlen = (size_t)(e - tok);
        double q = element_q(e, (size_t)(end - e));
        if ((tlen == 4 && strncasecmp(tok, "gzip", 4) == 0) ||
            (tlen == 6 && strncasecmp(tok, "x-gzip", 6) == 0))
            gzip_q = gzip_q < 0 || q < gzip_q ? q : gzip_q;
        else if (tlen == 1 && tok[0] == '*')
            star_q = q;
        if (!comma)
            break;
        p = comma + 1;
    }
    if (gzip_q >= 0)
        return gzip_q > 0;
    return star_q > 0;
}

bool gm_etag_matches(const char *inm, const char *etag)
{
    if (!inm || !etag)
        return false;
    size_t elen = strlen(etag);
    const char *p = inm;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        if (!*p)
            break;
        if (*p == '*')
            return true;
        if (p[0] == 'W' && p[1] == '/')
            p += 2;
        const char *start = p;
        if (*p == '"') {
            const char *close = strchr(p + 1, '"');
            if (!close)
                return false;
            p = close + 1;
        } else {
            while (*p && *p != ',' && *p != ' ')
                p++;
        }
        if ((size_t)(p - start) == elen && strncmp(start, etag, elen) == 0)
            return true;
    }
    return false;
}

const char *gm_content_type_for(const char *name)
{
    static const struct {
        const char *ext;
        const char *type;
    } types[] = {
        {".html", "text/html; charset=utf-8"},
        {".htm", "text/html; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"},
        {".mjs", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},
        {".json", "application/json"},
        {".map", "application/json"},
        {".svg", "image/svg+xml"},
        {".png", "image/png"},
        {".jpg", "image/jpeg"},
        {".jpeg", "image/jpeg"},
        {".gif", "image/gif"},
        {".ico", "image/x-icon"},
        {".webp", "image/webp"},
        {".woff2", "font/woff2"},
        {".woff", "font/woff"},
        {".txt", "text/plain; charset=utf-8"},
        {".wasm", "application/wasm"},
        {".webmanifest", "application/manifest+json"},
    };
    const char *slash = strrchr(name, '/');
    const char *dot = strrchr(slash ? slash : name, '.');
    if (dot)
        for (size_t i = 0; i < sizeof types / sizeof *types; i++)
            if (strcasecmp(dot, types[i].ext) == 0)
                return types[i].type;
    return "application/octet-stream";
}

/* ---- --web-root ---------------------------------------------------------------------------- */

/* False for request paths that must never reach the file system: not absolute, a segment that
 * starts with '.' ("..", ".git", ".env"), a backslash, or a control character. */
static bool path_acceptable(const char *path)
{
    if (path[0] != '/')
        return false;
    for (const char *p = path; *p; p++) {
        if (*p == '\\' || (unsigned char)*p < 0x20 || *p == 0x7f)
            return false;
        if (*p == '/' && p[1] == '.')
            return false;
    }
    return true;
}

int gm_webroot_read(const char *root, const char *path, char **data, size_t *len,
                    const char **ctype, gm_error *err)
{
    *data = NULL;
    *len = 0;
    if (!path_acceptable(path))
        return gm_error_set(err, GM_EPERM, "refused path");
    char joined[PATH_MAX], real[PATH_MAX];
    size_t plen = strlen(path);
    int n = snprintf(joined, sizeof joined, "%s%s%s", root, path,
                     path[plen - 1] == '/' ? "index.html" : "");
    if (n < 0 || (size_t)n >= sizeof joined)
        return gm_error_set(err, GM_ENOENT, "path too long");
    if (!realpath(joined, real))
        return gm_error_set(err, errno == EACCES ? GM_EPERM : GM_ENOENT, "%s", strerror(errno));
    /* The canonical path must stay under the canonical root: this is what stops a symbolic
     * link inside the root from serving a file outside it. */
    size_t rlen = strlen(root);
    if (strncmp(real, root, rlen) != 0 || (real[rlen] != '/' && !(rlen == 1 && root[0] == '/')))
        return gm_error_set(err, GM_EPERM, "outside the web root");
    /* O_NOFOLLOW: the name was just resolved; a link swapped in since is not followed. */
    int fd = open(real, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return gm_error_set(err, errno == EACCES ? GM_EPERM : GM_ENOENT, "%s", strerror(errno));
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return gm_error_set(err, GM_ENOENT, "not a regular file");
    }
    if (st.st_size > (off_t)GM_WEBROOT_MAX_FILE) {
        close(fd);
        return gm_error_set(err, GM_EINVAL, "file of %lld bytes is over the %u MiB limit",
                            (long long)st.st_size, GM_WEBROOT_MAX_FILE >> 20);
    }
    size_t size = (size_t)st.st_size;
    char *buf = malloc(size ? size : 1);
    if (!buf) {
        close(fd);
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    }
    size_t got = 0;
    while (got < size) {
        ssize_t r = read(fd, buf + got, size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    if (got != size) { /* shrank or failed while read: serve nothing rather than a torn file */
        free(buf);
        return gm_error_set(err, GM_EIO, "short read");
    }
    *data = buf;
    *len = size;
    *ctype = gm_content_type_for(real);
    return GM_OK;
}
