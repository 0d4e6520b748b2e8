/* docker.c - the Docker Engine API over a unix socket with libcurl: one easy handle per
 * request, JSON through jansson, log frames demultiplexed as they stream in. */
#include "core/docker.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/curl.h"
#include "base/json.h"
#include "base/parse.h"
#include "base/error.h"
#include "base/str.h"

/* Most bytes of an answer that is read whole (an inspect is a few KiB, a list of a thousand
 * containers about a MiB). */
#define ANSWER_MAX ((size_t)16 << 20)
/* Most bytes of one progress line of a pull, and of one log line kept by gm_docker_logs_tail. */
#define LINE_MAX_BYTES 4096
/* Time limits of a request that is not a stream: connecting, and the whole answer (a create
 * copies the image's layers on some storage drivers; a stop waits for the container). */
#define CONNECT_TIMEOUT_MS 10000L
#define REQUEST_TIMEOUT_MS 300000L
#define IMAGES_TIMEOUT_MS  10000L

struct gm_docker {
    char socket[sizeof(((struct sockaddr_un *)0)->sun_path)];
};

static int curl_ready(gm_error *err)
{
    return gm_curl_start(err);
}

int gm_docker_open(const char *host, gm_docker **out, gm_error *err)
{
    *out = NULL;
    if (!host) {
        host = getenv("DOCKER_HOST");
        if (!host || !*host)
            host = GM_DOCKER_DEFAULT_HOST;
    }
    if (strncmp(host, "unix://", 7) != 0) {
        if (strstr(host, "://"))
            return gm_error_set(err, GM_ENOTSUP,
                                "DOCKER_HOST=%s: gpumon speaks to the container engine over its "
                                "unix socket only (unix:///var/run/docker.sock)",
                                host);
        return gm_error_set(err, GM_EINVAL,
                            "DOCKER_HOST=%s is not a unix:// address (unix:///PATH)", host);
    }
    const char *path = host + 7;
    if (path[0] != '/')
        return gm_error_set(err, GM_EINVAL, "DOCKER_HOST=%s: the socket path must be absolute",
                            host);
    gm_docker *d = calloc(1, sizeof *d);
    if (!d)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    if (strlen(path) >= sizeof d->socket) {
        free(d);
        return gm_error_set(err, GM_EINVAL, "DOCKER_HOST=%s: the socket path is too long", host);
    }
    snprintf(d->socket, sizeof d->socket, "%s", path);
    *out = d;
    return GM_OK;
}

void gm_docker_close(gm_docker *d)
{
    free(d);
}

const char *gm_docker_socket(const gm_docker *d)
{
    return d->socket;
}

bool gm_docker_ref_ok(const char *ref)
{
    if (!ref || !*ref || *ref == '-' || *ref == '/' || strstr(ref, "..") || strstr(ref, "//"))
        return false;
    size_t n = 0;
    for (const char *p = ref; *p; p++, n++) {
        char c = *p;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '/' || c == ':' || c == '@' || c == '-'))
            return false;
    }
    return n <= 255;
}

/* ---- frames of a log stream --------------------------------------------------------------- */

void gm_docker_demux_feed(gm_docker_demux *m, const char *p, size_t n, const gm_docker_stream *s)
{
    while (n > 0) {
        if (m->raw) {
            if (s->data)
                s->data(s->arg, 1, p, n);
            return;
        }
        if (m->left == 0) {
            size_t take = 8 - m->hlen < n ? 8 - m->hlen : n;
            memcpy(m->hdr + m->hlen, p, take);
            m->hlen += take;
            p += take;
            n -= take;
            if (m->hlen < 8)
                return;
            m->hlen = 0;
            bool framed = m->hdr[0] <= 2 && !m->hdr[1] && !m->hdr[2] && !m->hdr[3];
            if (!framed && !m->decided) {
                m->raw = true;
                if (s->data)
                    s->data(s->arg, 1, (const char *)m->hdr, 8);
                continue;
            }
            m->decided = true;
            m->stream = m->hdr[0] == 2 ? 2 : 1;
            m->left = (uint32_t)m->hdr[4] << 24 | (uint32_t)m->hdr[5] << 16 |
                      (uint32_t)m->hdr[6] << 8 | m->hdr[7];
            continue;
        }
        size_t take = m->left < n ? m->left : n;
        if (s->data)
            s->data(s->arg, m->stream, p, take);
        m->left -= (uint32_t)take;
        p += take;
        n -= take;
    }
}

/* ---- one request -------------------------------------------------------------------------- */

enum answer_kind { ANSWER_WHOLE, ANSWER_LOGS, ANSWER_PULL };

typedef struct request {
    enum answer_kind kind;
    const gm_docker_stream *s;
    gm_buf body; /* ANSWER_WHOLE, and any answer that is not 200 (an error's body) */
    long status; /* known once the first byte arrives */
    CURL *curl;
    gm_docker_demux dm; /* ANSWER_LOGS */
    gm_buf line;        /* ANSWER_PULL: the progress line being read */
    char pull_error[512];
    bool cancelled;
    double last_tick;
    long timeout_ms; /* a whole answer's limit; 0: REQUEST_TIMEOUT_MS */
} request;

static void pull_line(request *r, const char *text, size_t len);

static size_t on_data(char *p, size_t size, size_t nmemb, void *arg)
{
    request *r = arg;
    size_t n = size * nmemb;
    if (r->status == 0)
        curl_easy_getinfo(r->curl, CURLINFO_RESPONSE_CODE, &r->status);
    if (r->kind == ANSWER_WHOLE || r->status != 200) {
        gm_buf_put(&r->body, p, n);
        return r->body.failed ? 0 : n;
    }
    if (r->kind == ANSWER_LOGS) {
        gm_docker_demux_feed(&r->dm, p, n, r->s);
        return n;
    }
    /* A pull: one JSON object per line. */
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\n') {
            if (!r->line.failed)
                pull_line(r, r->line.p ? r->line.p : "", r->line.len);
            gm_buf_free(&r->line);
            gm_buf_init(&r->line, LINE_MAX_BYTES);
        } else {
            gm_buf_put(&r->line, p + i, 1);
        }
    }
    return n;
}

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    (void)dt, (void)dn, (void)ut, (void)un;
    request *r = arg;
    if (r->s && r->s->tick && !r->s->tick(r->s->arg)) {
        r->cancelled = true;
        return 1;
    }
    return 0;
}

/* The engine's message in an error body ({"message": "..."}), else its text, else "". */
static void engine_message(const request *r, char *buf, size_t len)
{
    buf[0] = '\0';
    if (!r->body.p || r->body.len == 0)
        return;
    json_t *j = json_loadb(r->body.p, r->body.len, 0, NULL);
    const char *m = json_string_value(json_object_get(j, "message"));
    if (m)
        snprintf(buf, len, "%s", m);
    else
        snprintf(buf, len, "%.*s", (int)(r->body.len < 300 ? r->body.len : 300), r->body.p);
    json_decref(j);
    size_t n = strlen(buf);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
        buf[--n] = '\0';
}

/* Sends method path (under the API version) with body (JSON, may be NULL) and reads the
 * answer as r->kind says. what names the operation in messages ("inspecting container x").
 * GM_OK with r->status set (any HTTP status: the caller judges it), GM_EIO when the engine
 * cannot be reached or the answer is cut, GM_ECANCELED when the tick said so. */
static int perform(gm_docker *d, const char *method, const char *path, const char *body, request *r,
                   bool stream, const char *what, gm_error *err)
{
    int crc = curl_ready(err);
    if (crc < 0)
        return crc;
    gm_buf_init(&r->body, ANSWER_MAX);
    gm_buf_init(&r->line, LINE_MAX_BYTES);
    CURL *c = curl_easy_init();
    if (!c)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    r->curl = c;
    char url[2048];
    snprintf(url, sizeof url, "http://localhost/%s%s", GM_DOCKER_API_VERSION, path);
    /* No "Expect: 100-continue" for a larger body: an engine that does not answer it would
     * cost a second per create. */
    struct curl_slist *hdrs = curl_slist_append(NULL, "Expect:");
    if (hdrs && body)
        hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, d->socket);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (strcmp(method, "POST") == 0) {
        curl_easy_setopt(c, CURLOPT_POST, 1L);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body ? body : "");
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)(body ? strlen(body) : 0));
    }
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_TIMEOUT_MS);
    if (!stream)
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, r->timeout_ms ? r->timeout_ms : REQUEST_TIMEOUT_MS);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
    if (r->s && r->s->tick) {
        curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(c, CURLOPT_XFERINFODATA, r);
    }
    char cerr[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
    CURLcode rc = curl_easy_perform(c);
    if (rc == CURLE_OK || r->status == 0)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    curl_easy_cleanup(c);
    curl_slist_free_all(hdrs);
    r->curl = NULL;
    if (rc == CURLE_OK && r->kind == ANSWER_PULL && r->line.len > 0 && !r->line.failed)
        pull_line(r, r->line.p, r->line.len);
    if (r->cancelled)
        return gm_error_set(err, GM_ECANCELED, "%s: cancelled", what);
    if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST) {
        struct stat sb;
        const char *why = stat(d->socket, &sb) < 0  ? "no socket there"
                          : !S_ISSOCK(sb.st_mode)   ? "not a socket"
                          : access(d->socket, W_OK) ? "permission denied"
                                                    : "connection refused";
        return gm_error_set(err, GM_EIO,
                            "cannot reach the container engine at %s (%s): is Docker, or podman "
                            "system service, running? DOCKER_HOST=unix://PATH names another "
                            "socket",
                            d->socket, why);
    }
    if (rc == CURLE_WRITE_ERROR && r->body.failed)
        return gm_error_set(err, GM_EIO, "%s: the engine's answer is larger than %zu MiB", what,
                            ANSWER_MAX >> 20);
    if (rc != CURLE_OK)
        return gm_error_set(err, GM_EIO, "%s: the container engine at %s did not answer: %s", what,
                            d->socket, cerr[0] ? cerr : curl_easy_strerror(rc));
    return GM_OK;
}

static void request_free(request *r)
{
    gm_buf_free(&r->body);
    gm_buf_free(&r->line);
}

/* A failed answer as a sentence: "<what>: <engine message> (HTTP N from the engine at S)". */
static int answer_error(gm_docker *d, const request *r, int code, const char *what, gm_error *err)
{
    char m[400];
    engine_message(r, m, sizeof m);
    return gm_error_set(err, code, "%s: %s (HTTP %ld from the engine at %s)", what,
                        m[0] ? m : "no reason given", r->status, d->socket);
}

/* The answer's body as JSON; GM_EIO naming what when it is not. */
static int answer_json(gm_docker *d, const request *r, const char *what, json_t **out,
                       gm_error *err)
{
    json_error_t je;
    *out = r->body.p ? json_loadb(r->body.p, r->body.len, 0, &je) : NULL;
    if (!*out)
        return gm_error_set(err, GM_EIO,
                            "%s: the engine at %s answered something that is not "
                            "JSON",
                            what, d->socket);
    return GM_OK;
}

/* A reference that goes into a URL: an image may have '/', a container (id or name) not. */
static int check_ref(const char *kind, const char *ref, gm_error *err)
{
    if (gm_docker_ref_ok(ref) && (strcmp(kind, "image") == 0 || !strchr(ref, '/')))
        return GM_OK;
    return gm_error_set(err, GM_EINVAL, "%s \"%s\" is not a valid reference", kind, ref ? ref : "");
}

/* ---- engine, images ----------------------------------------------------------------------- */

int gm_docker_version(gm_docker *d, char *buf, size_t len, gm_error *err)
{
    request r = {.kind = ANSWER_WHOLE};
    const char *what = "asking the container engine its version";
    int rc = perform(d, "GET", "/version", NULL, &r, false, what, err);
    json_t *j = NULL;
    if (rc == GM_OK && r.status != 200)
        rc = answer_error(d, &r, GM_EIO, what, err);
    if (rc == GM_OK)
        rc = answer_json(d, &r, what, &j, err);
    if (rc == GM_OK) {
        /* Components[0] names the engine ("Engine" for dockerd, "Podman Engine"). */
        const json_t *comp = json_array_get(json_object_get(j, "Components"), 0);
        const char *name = json_string_value(json_object_get(comp, "Name"));
        const char *ver = json_string_value(json_object_get(j, "Version"));
        if (name && strcmp(name, "Engine") == 0)
            name = "Docker Engine";
        snprintf(buf, len, "%s %s", name ? name : "Docker Engine", ver ? ver : "?");
    }
    json_decref(j);
    request_free(&r);
    return rc;
}

int gm_docker_image_id(gm_docker *d, const char *image, char *id, size_t len, gm_error *err)
{
    int rc = check_ref("image", image, err);
    if (rc < 0)
        return rc;
    char path[512], what[320];
    snprintf(path, sizeof path, "/images/%s/json", image);
    snprintf(what, sizeof what, "looking up image %s", image);
    request r = {.kind = ANSWER_WHOLE};
    rc = perform(d, "GET", path, NULL, &r, false, what, err);
    json_t *j = NULL;
    if (rc == GM_OK && r.status == 404) {
        char m[400];
        engine_message(&r, m, sizeof m);
        rc = gm_error_set(err, GM_ENOENT, "image %s is not on this machine (the engine at %s: %s)",
                          image, d->socket, m[0] ? m : "no such image");
    } else if (rc == GM_OK && r.status != 200)
        rc = answer_error(d, &r, GM_EIO, what, err);
    if (rc == GM_OK)
        rc = answer_json(d, &r, what, &j, err);
    if (rc == GM_OK)
        gm_str_copy(id, len, json_string_value(json_object_get(j, "Id")));
    json_decref(j);
    request_free(&r);
    return rc;
}

/* One line of a pull's answer: progress for people, or the error that ends it. */
static void pull_line(request *r, const char *text, size_t len)
{
    json_t *j = json_loadb(text, len, 0, NULL);
    if (!j)
        return;
    const char *e =
        json_string_value(json_object_get(json_object_get(j, "errorDetail"), "message"));
    if (!e)
        e = json_string_value(json_object_get(j, "error"));
    if (e) {
        if (!r->pull_error[0])
            snprintf(r->pull_error, sizeof r->pull_error, "%s", e);
        json_decref(j);
        return;
    }
    const char *status = json_string_value(json_object_get(j, "status"));
    const char *id = json_string_value(json_object_get(j, "id"));
    const json_t *pd = json_object_get(j, "progressDetail");
    double cur = json_number_value(json_object_get(pd, "current"));
    double total = json_number_value(json_object_get(pd, "total"));
    char line[512];
    int n =
        snprintf(line, sizeof line, "%s%s%s", id ? id : "", id ? ": " : "", status ? status : "");
    if (total > 0 && n > 0 && (size_t)n < sizeof line)
        snprintf(line + n, sizeof line - (size_t)n, " %.1f of %.1f MB", cur / 1e6, total / 1e6);
    if (status && r->s && r->s->data)
        r->s->data(r->s->arg, 0, line, strlen(line));
    json_decref(j);
}

int gm_docker_pull(gm_docker *d, const char *image, const gm_docker_stream *s, gm_error *err)
{
    int rc = check_ref("image", image, err);
    if (rc < 0)
        return rc;
    if ((rc = curl_ready(err)) < 0)
        return rc;
    /* name[:tag] or name@digest; the tag is what follows the last ':' after the last '/'. */
    char name[256], tag[256] = "latest";
    snprintf(name, sizeof name, "%s", image);
    char *at = strchr(name, '@');
    char *slash = strrchr(name, '/');
    char *colon = strrchr(name, ':');
    if (at) {
        snprintf(tag, sizeof tag, "%s", at + 1);
        *at = '\0';
    } else if (colon && (!slash || colon > slash)) {
        snprintf(tag, sizeof tag, "%s", colon + 1);
        *colon = '\0';
    }
    char *en = curl_easy_escape(NULL, name, 0), *et = curl_easy_escape(NULL, tag, 0);
    if (!en || !et) {
        curl_free(en);
        curl_free(et);
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    }
    char path[1024], what[320];
    snprintf(path, sizeof path, "/images/create?fromImage=%s&tag=%s", en, et);
    curl_free(en);
    curl_free(et);
    snprintf(what, sizeof what, "pulling image %s", image);
    request r = {.kind = ANSWER_PULL, .s = s};
    rc = perform(d, "POST", path, NULL, &r, true, what, err);
    if (rc == GM_OK && r.status == 404)
        rc = answer_error(d, &r, GM_ENOENT, what, err);
    else if (rc == GM_OK && r.status != 200)
        rc = answer_error(d, &r, GM_EIO, what, err);
    else if (rc == GM_OK && r.pull_error[0])
        rc = gm_error_set(err, GM_EIO, "%s: %s", what, r.pull_error);
    request_free(&r);
    return rc;
}

/* ---- containers --------------------------------------------------------------------------- */

static json_t *string_array(const char *const *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        if (json_array_append_new(a, gm_json_str(v[i] ? v[i] : "")) < 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

json_t *gm_docker_create_body(const gm_docker_spec *s)
{
    json_t *b = json_object(), *hc = json_object();
    if (!b || !hc)
        goto oom;
    if (json_object_set_new(b, "Image", gm_json_str(s->image ? s->image : "")) < 0)
        goto oom;
    if (s->ncmd && json_object_set_new(b, "Cmd", string_array(s->cmd, s->ncmd)) < 0)
        goto oom;
    if (s->nenv && json_object_set_new(b, "Env", string_array(s->env, s->nenv)) < 0)
        goto oom;
    if (s->nlabels) {
        json_t *l = json_object();
        if (json_object_set_new(b, "Labels", l) < 0)
            goto oom;
        for (size_t i = 0; i < s->nlabels; i++)
            if (json_object_set_new(l, s->label_key[i], gm_json_str(s->label_value[i])) < 0)
                goto oom;
    }
    if (s->container_port) {
        char key[32], hp[16] = "";
        snprintf(key, sizeof key, "%u/tcp", s->container_port);
        if (s->host_port)
            snprintf(hp, sizeof hp, "%u", s->host_port);
        /* HostPort is a string; "" lets the engine pick a free port. */
        json_t *exposed = json_pack("{s:{}}", key);
        json_t *bind = json_pack("{s:[{s:s, s:s}]}", key, "HostIp",
                                 s->host_ip ? s->host_ip : "127.0.0.1", "HostPort", hp);
        if (json_object_set_new(b, "ExposedPorts", exposed) < 0 ||
            json_object_set_new(hc, "PortBindings", bind) < 0)
            goto oom;
    }
    if (s->ngpus) {
        json_t *dr = json_pack("[{s:s, s:o, s:[[s]]}]", "Driver", "nvidia", "DeviceIDs",
                               string_array(s->gpu_ids, s->ngpus), "Capabilities", "gpu");
        if (json_object_set_new(hc, "DeviceRequests", dr) < 0)
            goto oom;
    }
    if (s->shm_bytes > 0 && json_object_set_new(hc, "ShmSize", json_integer(s->shm_bytes)) < 0)
        goto oom;
    if (s->nbinds && json_object_set_new(hc, "Binds", string_array(s->binds, s->nbinds)) < 0)
        goto oom;
    if (json_object_set_new(b, "HostConfig", hc) < 0) {
        hc = NULL;
        goto oom;
    }
    return b;
oom:
    json_decref(b);
    return NULL;
}

int gm_docker_create(gm_docker *d, const gm_docker_spec *s, char *id, size_t len, gm_error *err)
{
    int rc = check_ref("image", s->image, err);
    if (rc == GM_OK && s->name)
        rc = check_ref("container name", s->name, err);
    if (rc < 0)
        return rc;
    char path[512], what[512];
    snprintf(path, sizeof path, "/containers/create%s%s", s->name ? "?name=" : "",
             s->name ? s->name : "");
    snprintf(what, sizeof what, "cannot create container %s from image %s",
             s->name ? s->name : "(unnamed)", s->image);
    json_t *body = gm_docker_create_body(s);
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!text)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    request r = {.kind = ANSWER_WHOLE};
    rc = perform(d, "POST", path, text, &r, false, what, err);
    free(text); /* it may carry secrets (Env): never kept, never logged */
    json_t *j = NULL;
    if (rc == GM_OK && r.status != 201 && r.status != 200) {
        /* dockerd answers a taken name 409; podman 500 with "already in use". */
        char m[400];
        engine_message(&r, m, sizeof m);
        int code = r.status == 404                                          ? GM_ENOENT
                   : r.status == 409 || strstr(m, "already in use") != NULL ? GM_EEXIST
                   : r.status == 400                                        ? GM_EINVAL
                                                                            : GM_EIO;
        rc = answer_error(d, &r, code, what, err);
    }
    if (rc == GM_OK)
        rc = answer_json(d, &r, what, &j, err);
    if (rc == GM_OK) {
        gm_str_copy(id, len, json_string_value(json_object_get(j, "Id")));
        if (!id[0])
            rc = gm_error_set(err, GM_EIO, "%s: the engine gave no container id", what);
    }
    json_decref(j);
    request_free(&r);
    return rc;
}

/* A POST or DELETE on container ref answered without a body: 204 (or 304: nothing to do) is
 * success; 404 GM_ENOENT; 409 conflict_code. */
static int container_call(gm_docker *d, const char *method, const char *ref, const char *suffix,
                          const char *verb, int conflict_code, gm_error *err)
{
    int rc = check_ref("container", ref, err);
    if (rc < 0)
        return rc;
    char path[512], what[400];
    snprintf(path, sizeof path, "/containers/%s%s", ref, suffix);
    snprintf(what, sizeof what, "cannot %s container %s", verb, ref);
    request r = {.kind = ANSWER_WHOLE};
    rc = perform(d, method, path, NULL, &r, false, what, err);
    if (rc == GM_OK && r.status != 204 && r.status != 304 && r.status != 200 && r.status != 201)
        rc = answer_error(d, &r,
                          r.status == 404   ? GM_ENOENT
                          : r.status == 409 ? conflict_code
                                            : GM_EIO,
                          what, err);
    request_free(&r);
    return rc;
}

int gm_docker_start(gm_docker *d, const char *ref, gm_error *err)
{
    return container_call(d, "POST", ref, "/start", "start", GM_ESTATE, err);
}

int gm_docker_kill(gm_docker *d, const char *ref, const char *signal, gm_error *err)
{
    char suffix[64];
    snprintf(suffix, sizeof suffix, "/kill?signal=%s",
             signal && gm_docker_ref_ok(signal) ? signal : "SIGKILL");
    int rc = container_call(d, "POST", ref, suffix, "signal", GM_ESTATE, err);
    /* podman answers a container that is not running 500 "container state improper". */
    if (rc == GM_EIO && err &&
        (strstr(err->msg, "state improper") || strstr(err->msg, "not running")))
        rc = err->code = GM_ESTATE;
    return rc;
}

int gm_docker_stop(gm_docker *d, const char *ref, unsigned timeout_s, gm_error *err)
{
    char suffix[32];
    snprintf(suffix, sizeof suffix, "/stop?t=%u", timeout_s);
    return container_call(d, "POST", ref, suffix, "stop", GM_ESTATE, err);
}

int gm_docker_remove(gm_docker *d, const char *ref, gm_error *err)
{
    return container_call(d, "DELETE", ref, "?force=1&v=1", "remove", GM_EBUSY, err);
}

void gm_docker_state_parse(const json_t *j, gm_docker_state *out)
{
    memset(out, 0, sizeof *out);
    gm_str_copy(out->id, sizeof out->id, json_string_value(json_object_get(j, "Id")));
    const char *name = json_string_value(json_object_get(j, "Name"));
    snprintf(out->name, sizeof out->name, "%s", name ? name + (name[0] == '/') : "");
    gm_str_copy(out->image, sizeof out->image,
                json_string_value(json_object_get(json_object_get(j, "Config"), "Image")));
    gm_str_copy(out->image_id, sizeof out->image_id,
                json_string_value(json_object_get(j, "Image")));
    const json_t *st = json_object_get(j, "State");
    gm_str_copy(out->status, sizeof out->status, json_string_value(json_object_get(st, "Status")));
    out->running = json_is_true(json_object_get(st, "Running"));
    out->oom_killed = json_is_true(json_object_get(st, "OOMKilled"));
    out->exit_code = (int)json_integer_value(json_object_get(st, "ExitCode"));
    out->pid = (pid_t)json_integer_value(json_object_get(st, "Pid"));
    gm_str_copy(out->error, sizeof out->error, json_string_value(json_object_get(st, "Error")));
    gm_str_copy(out->started_at, sizeof out->started_at,
                json_string_value(json_object_get(st, "StartedAt")));
    gm_str_copy(out->finished_at, sizeof out->finished_at,
                json_string_value(json_object_get(st, "FinishedAt")));
    gm_str_copy(out->health, sizeof out->health,
                json_string_value(json_object_get(json_object_get(st, "Health"), "Status")));
    const char *key;
    json_t *binds;
    json_object_foreach(json_object_get(json_object_get(j, "NetworkSettings"), "Ports"), key, binds)
    {
        /* "8000/tcp": a port number, then the protocol. */
        char *end;
        unsigned long cport = strtoul(key, &end, 10);
        if (end == key || strcmp(end, "/tcp") != 0 || cport == 0 || cport > 65535 ||
            !json_is_array(binds))
            continue;
        size_t i;
        json_t *b;
        json_array_foreach(binds, i, b)
        {
            if (out->nports == GM_DOCKER_PORTS_MAX)
                break;
            out->ports[out->nports].container_port = (unsigned)cport;
            gm_str_copy(out->ports[out->nports].host_ip, sizeof out->ports[0].host_ip,
                        json_string_value(json_object_get(b, "HostIp")));
            const char *hp = json_string_value(json_object_get(b, "HostPort"));
            unsigned long long port = 0;
            if (!hp || gm_parse_uint(hp, 1, 65535, &port) < 0)
                port = 0; /* "" before the engine chose one, or nonsense: none */
            out->ports[out->nports].host_port = (unsigned)port;
            out->nports++;
        }
    }
}

int gm_docker_inspect(gm_docker *d, const char *ref, gm_docker_state *out, gm_error *err)
{
    memset(out, 0, sizeof *out);
    int rc = check_ref("container", ref, err);
    if (rc < 0)
        return rc;
    char path[512], what[320];
    snprintf(path, sizeof path, "/containers/%s/json", ref);
    snprintf(what, sizeof what, "cannot inspect container %s", ref);
    request r = {.kind = ANSWER_WHOLE};
    rc = perform(d, "GET", path, NULL, &r, false, what, err);
    json_t *j = NULL;
    if (rc == GM_OK && r.status != 200)
        rc = answer_error(d, &r, r.status == 404 ? GM_ENOENT : GM_EIO, what, err);
    if (rc == GM_OK)
        rc = answer_json(d, &r, what, &j, err);
    if (rc == GM_OK)
        gm_docker_state_parse(j, out);
    json_decref(j);
    request_free(&r);
    return rc;
}

unsigned gm_docker_state_host_port(const gm_docker_state *st, unsigned container_port, char *ip)
{
    for (size_t i = 0; i < st->nports; i++)
        if (st->ports[i].container_port == container_port && st->ports[i].host_port) {
            if (ip)
                snprintf(ip, 64, "%s", st->ports[i].host_ip);
            return st->ports[i].host_port;
        }
    if (ip)
        ip[0] = '\0';
    return 0;
}

int gm_docker_logs(gm_docker *d, const char *ref, unsigned tail, bool follow,
                   const gm_docker_stream *s, gm_error *err)
{
    int rc = check_ref("container", ref, err);
    if (rc < 0)
        return rc;
    char path[512], what[320], tailv[16] = "all";
    if (tail)
        snprintf(tailv, sizeof tailv, "%u", tail);
    snprintf(path, sizeof path, "/containers/%s/logs?stdout=1&stderr=1&tail=%s%s", ref, tailv,
             follow ? "&follow=1" : "");
    snprintf(what, sizeof what, "cannot read the output of container %s", ref);
    gm_docker_stream none = {0};
    request r = {.kind = ANSWER_LOGS, .s = s ? s : &none};
    rc = perform(d, "GET", path, NULL, &r, follow, what, err);
    if (rc == GM_OK && r.status != 200)
        rc = answer_error(d, &r, r.status == 404 ? GM_ENOENT : GM_EIO, what, err);
    request_free(&r);
    return rc;
}

/* Lines of a log as they complete, per stream, into a JSON array that keeps the last n. */
typedef struct tail_lines {
    json_t *lines;
    size_t n;
    gm_buf part[3];
} tail_lines;

static void tail_push(tail_lines *t, gm_buf *b)
{
    size_t len = b->len;
    while (len > 0 && b->p[len - 1] == '\r')
        len--;
    json_t *s = gm_json_text(b->p ? b->p : "", len);
    if (s)
        json_array_append_new(t->lines, s);
    while (json_array_size(t->lines) > t->n)
        json_array_remove(t->lines, 0);
    gm_buf_free(b);
    gm_buf_init(b, LINE_MAX_BYTES);
}

static void tail_data(void *arg, int stream, const char *p, size_t n)
{
    tail_lines *t = arg;
    gm_buf *b = &t->part[stream == 2 ? 2 : 1];
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\n')
            tail_push(t, b);
        else if (b->len + 1 < LINE_MAX_BYTES)
            gm_buf_put(b, p + i, 1);
    }
}

int gm_docker_logs_tail(gm_docker *d, const char *ref, unsigned n, json_t **out, gm_error *err)
{
    *out = NULL;
    tail_lines t = {.lines = json_array(), .n = n ? n : 1};
    if (!t.lines)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    for (int i = 0; i < 3; i++)
        gm_buf_init(&t.part[i], LINE_MAX_BYTES);
    gm_docker_stream s = {.data = tail_data, .arg = &t};
    int rc = gm_docker_logs(d, ref, n, false, &s, err);
    for (int i = 1; i < 3; i++) {
        if (t.part[i].len > 0)
            tail_push(&t, &t.part[i]);
        gm_buf_free(&t.part[i]);
    }
    gm_buf_free(&t.part[0]);
    if (rc < 0) {
        json_decref(t.lines);
        return rc;
    }
    *out = t.lines;
    return GM_OK;
}

/* GETs path, whose answer must be a JSON list, into *out: add turns each item into zero or more
 * entries (a negative return: out of memory). timeout_ms 0 is the usual limit. */
static int get_list(gm_docker *d, const char *path, long timeout_ms, const char *what,
                    int (*add)(json_t *item, json_t *list), json_t **out, gm_error *err)
{
    *out = NULL;
    request r = {.kind = ANSWER_WHOLE, .timeout_ms = timeout_ms};
    int rc = perform(d, "GET", path, NULL, &r, false, what, err);
    json_t *j = NULL, *list = NULL;
    if (rc == GM_OK && r.status != 200)
        rc = answer_error(d, &r, GM_EIO, what, err);
    if (rc == GM_OK)
        rc = answer_json(d, &r, what, &j, err);
    if (rc == GM_OK && !json_is_array(j))
        rc = gm_error_set(err, GM_EIO, "%s: the engine's answer is not a list", what);
    if (rc == GM_OK && !(list = json_array()))
        rc = gm_error_set(err, GM_ENOMEM, "out of memory");
    size_t i;
    json_t *item;
    json_array_foreach(rc == GM_OK ? j : NULL, i, item)
    {
        if (add(item, list) < 0) {
            rc = gm_error_set(err, GM_ENOMEM, "out of memory");
            break;
        }
    }
    json_decref(j);
    request_free(&r);
    if (rc < 0) {
        json_decref(list);
        return rc;
    }
    *out = list;
    return GM_OK;
}

static int add_container(json_t *c, json_t *list)
{
    const char *name = json_string_value(json_array_get(json_object_get(c, "Names"), 0));
    json_t *ports = json_array();
    size_t k;
    json_t *p;
    json_array_foreach(json_object_get(c, "Ports"), k, p)
    {
        const char *type = json_string_value(json_object_get(p, "Type"));
        if (type && strcmp(type, "tcp") != 0)
            continue;
        json_array_append_new(
            ports, json_pack("{s:I, s:s, s:I}", "container_port",
                             json_integer_value(json_object_get(p, "PrivatePort")), "host_ip",
                             json_string_value(json_object_get(p, "IP")) ?: "", "host_port",
                             json_integer_value(json_object_get(p, "PublicPort"))));
    }
    json_t *labels = json_object_get(c, "Labels");
    labels = json_is_object(labels) ? json_incref(labels) : json_object();
    json_t *e = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:o, s:o}", "id",
                          json_string_value(json_object_get(c, "Id")) ?: "", "name",
                          name ? name + (name[0] == '/') : "", "image",
                          json_string_value(json_object_get(c, "Image")) ?: "", "image_id",
                          json_string_value(json_object_get(c, "ImageID")) ?: "", "state",
                          json_string_value(json_object_get(c, "State")) ?: "", "status",
                          json_string_value(json_object_get(c, "Status")) ?: "", "created",
                          json_integer_value(json_object_get(c, "Created")), "labels", labels,
                          "ports", ports ? ports : json_array());
    return e ? json_array_append_new(list, e) : -1;
}

int gm_docker_list(gm_docker *d, const char *label, json_t **out, gm_error *err)
{
    *out = NULL;
    int rc = curl_ready(err);
    if (rc < 0)
        return rc;
    json_t *f = json_pack("{s:[s]}", "label", label ? label : "");
    char *ftext = f ? json_dumps(f, JSON_COMPACT) : NULL;
    json_decref(f);
    char *enc = ftext ? curl_easy_escape(NULL, ftext, 0) : NULL;
    free(ftext);
    if (!enc)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    char path[1024], what[320];
    snprintf(path, sizeof path, "/containers/json?all=1&filters=%s", enc);
    curl_free(enc);
    snprintf(what, sizeof what, "cannot list the containers labelled %s", label ? label : "");
    return get_list(d, path, 0, what, add_container, out, err);
}

/* One entry per name: an image tagged twice is offered under both. Untagged layers
 * ("<none>:<none>") name nothing a job could start. */
static int add_image(json_t *im, json_t *list)
{
    size_t k;
    json_t *tag;
    json_array_foreach(json_object_get(im, "RepoTags"), k, tag)
    {
        const char *name = json_string_value(tag);
        if (!name || !*name || strncmp(name, "<none>", 6) == 0)
            continue;
        json_t *e = json_pack("{s:s, s:s, s:I, s:I}", "image", name, "id",
                              json_string_value(json_object_get(im, "Id")) ?: "", "size_bytes",
                              json_integer_value(json_object_get(im, "Size")), "created",
                              json_integer_value(json_object_get(im, "Created")));
        if (!e || json_array_append_new(list, e) < 0)
            return -1;
    }
    return 0;
}

int gm_docker_images(gm_docker *d, json_t **out, gm_error *err)
{
    /* A listing is asked for by a page that waits for it: an engine that hangs fails it soon. */
    return get_list(d, "/images/json", IMAGES_TIMEOUT_MS, "cannot list the engine's images",
                    add_image, out, err);
}
