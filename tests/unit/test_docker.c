/* test_docker.c - core/docker against a fake engine on a unix socket (a thread of this test
 * that answers each connection with a canned HTTP answer, in pieces when asked, and keeps what
 * it was sent): request lines and bodies as the Docker Engine API documents them, errors as
 * sentences naming the image, the container and the engine's message, log frames split
 * anywhere, pull progress and its in-band errors, inspect and list. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/buf.h"
#include "core/docker.h"

#define MAX_ANSWERS 8

typedef struct answer {
    int status;
    const char *body;
    size_t len;   /* 0: strlen(body) */
    size_t piece; /* write the body in pieces of this size (0: at once) */
} answer;

typedef struct engine {
    char path[108];
    char host[128];
    int fd;
    pthread_t thread;
    bool joined;
    answer answers[MAX_ANSWERS];
    size_t nanswers;
    char request[MAX_ANSWERS][512]; /* "METHOD TARGET" */
    char *body[MAX_ANSWERS];
} engine;

static void read_request(int c, engine *e, size_t i)
{
    gm_buf in;
    gm_buf_init(&in, 1 << 20);
    char tmp[4096];
    for (;;) {
        ssize_t n = read(c, tmp, sizeof tmp);
        if (n <= 0)
            break;
        gm_buf_put(&in, tmp, (size_t)n);
        char *end = in.p ? strstr(in.p, "\r\n\r\n") : NULL;
        if (!end)
            continue;
        size_t head = (size_t)(end - in.p) + 4;
        const char *cl = strcasestr(in.p, "Content-Length:");
        size_t blen = cl && cl < end ? strtoul(cl + 15, NULL, 10) : 0;
        if (in.len < head + blen)
            continue;
        sscanf(in.p, "%15s %495s", e->request[i], e->request[i] + 16);
        e->request[i][strlen(e->request[i])] = ' ';
        memmove(e->request[i] + strlen(e->request[i]), e->request[i] + 16,
                strlen(e->request[i] + 16) + 1);
        e->body[i] = strndup(in.p + head, blen);
        break;
    }
    gm_buf_free(&in);
}

static void *engine_main(void *arg)
{
    engine *e = arg;
    for (size_t i = 0; i < e->nanswers; i++) {
        int c = accept(e->fd, NULL, NULL);
        if (c < 0)
            break;
        read_request(c, e, i);
        const answer *a = &e->answers[i];
        size_t len = a->len ? a->len : strlen(a->body);
        char head[256];
        int hl = snprintf(head, sizeof head,
                          "HTTP/1.1 %d X\r\nContent-Type: application/json\r\n"
                          "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                          a->status, len);
        ssize_t w = send(c, head, (size_t)hl, MSG_NOSIGNAL);
        for (size_t off = 0; w >= 0 && off < len;) {
            size_t n = a->piece && a->piece < len - off ? a->piece : len - off;
            w = send(c, a->body + off, n, MSG_NOSIGNAL);
            off += n;
            if (a->piece)
                usleep(2000);
        }
        close(c);
    }
    return NULL;
}

/* Starts an engine answering these, in order, one connection each. */
static engine *engine_start(const answer *answers, size_t n)
{
    engine *e = calloc(1, sizeof *e);
    assert_non_null(e);
    snprintf(e->path, sizeof e->path, "/tmp/gm-test-docker-%d.sock", (int)getpid());
    snprintf(e->host, sizeof e->host, "unix://%s", e->path);
    unlink(e->path);
    e->fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", e->path);
    assert_int_equal(bind(e->fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(e->fd, 8), 0);
    memcpy(e->answers, answers, n * sizeof *answers);
    e->nanswers = n;
    assert_int_equal(pthread_create(&e->thread, NULL, engine_main, e), 0);
    return e;
}

/* Waits until every answer was given (the requests are then readable). */
static void engine_wait(engine *e)
{
    if (!e->joined)
        pthread_join(e->thread, NULL);
    e->joined = true;
}

/* Stops it, answered or not (an accept still waiting fails). */
static void engine_stop(engine *e)
{
    shutdown(e->fd, SHUT_RDWR);
    engine_wait(e);
    close(e->fd);
    unlink(e->path);
    for (size_t i = 0; i < MAX_ANSWERS; i++)
        free(e->body[i]);
    free(e);
}

static gm_docker *client(const engine *e)
{
    gm_docker *d = NULL;
    gm_error err = {0};
    if (gm_docker_open(e->host, &d, &err) < 0)
        fail_msg("open: %s", err.msg);
    return d;
}

static void test_host(void **state)
{
    (void)state;
    gm_docker *d = NULL;
    gm_error err = {0};
    unsetenv("DOCKER_HOST");
    assert_int_equal(gm_docker_open(NULL, &d, &err), GM_OK);
    assert_string_equal(gm_docker_socket(d), "/var/run/docker.sock");
    gm_docker_close(d);
    setenv("DOCKER_HOST", "unix:///run/podman/podman.sock", 1);
    assert_int_equal(gm_docker_open(NULL, &d, &err), GM_OK);
    assert_string_equal(gm_docker_socket(d), "/run/podman/podman.sock");
    gm_docker_close(d);
    unsetenv("DOCKER_HOST");
    assert_int_equal(gm_docker_open("tcp://10.0.0.1:2375", &d, &err), GM_ENOTSUP);
    assert_non_null(strstr(err.msg, "tcp://10.0.0.1:2375"));
    assert_int_equal(gm_docker_open("unix://relative.sock", &d, &err), GM_EINVAL);
    assert_int_equal(gm_docker_open("/var/run/docker.sock", &d, &err), GM_EINVAL);
}

static void test_refs(void **state)
{
    (void)state;
    assert_true(gm_docker_ref_ok("nvcr.io/nim/meta/llama-3.1-8b-instruct:1.3.3"));
    assert_true(gm_docker_ref_ok("localhost/gm-test:1"));
    assert_true(gm_docker_ref_ok("busybox@sha256:0123abcd"));
    assert_true(gm_docker_ref_ok("gpumon-20260101-000000-abcdef"));
    assert_false(gm_docker_ref_ok(""));
    assert_false(gm_docker_ref_ok("-rm"));
    assert_false(gm_docker_ref_ok("/etc"));
    assert_false(gm_docker_ref_ok("a b"));
    assert_false(gm_docker_ref_ok("a?x=1"));
    assert_false(gm_docker_ref_ok("a#b"));
    assert_false(gm_docker_ref_ok("a%2f"));
    char longref[300];
    memset(longref, 'a', sizeof longref - 1);
    longref[sizeof longref - 1] = '\0';
    assert_false(gm_docker_ref_ok(longref));
}

static const char *const uuids[] = {"GPU-aaaa", "GPU-bbbb"};
static const char *const env[] = {"NGC_API_KEY=secret", "NIM_LOG_LEVEL=INFO"};
static const char *const binds[] = {"/data/cache:/opt/nim/.cache"};
static const char *const keys[] = {"gpumon.owner", "gpumon.run"};
static const char *const values[] = {"host:42", "20260101-000000-abcdef"};
static const char *const args[] = {"--port", "8000"};

static gm_docker_spec spec(void)
{
    return (gm_docker_spec){.name = "gpumon-20260101-000000-abcdef",
                            .image = "nvcr.io/nim/x:1",
                            .cmd = args,
                            .ncmd = 2,
                            .env = env,
                            .nenv = 2,
                            .binds = binds,
                            .nbinds = 1,
                            .label_key = keys,
                            .label_value = values,
                            .nlabels = 2,
                            .container_port = 8000,
                            .shm_bytes = 16LL << 30,
                            .gpu_ids = uuids,
                            .ngpus = 2};
}

static void test_create_body(void **state)
{
    (void)state;
    gm_docker_spec s = spec();
    json_t *b = gm_docker_create_body(&s);
    json_t *want = json_loads(
        "{\"Image\": \"nvcr.io/nim/x:1\", \"Cmd\": [\"--port\", \"8000\"],"
        " \"Env\": [\"NGC_API_KEY=secret\", \"NIM_LOG_LEVEL=INFO\"],"
        " \"Labels\": {\"gpumon.owner\": \"host:42\", \"gpumon.run\": \"20260101-000000-abcdef\"},"
        " \"ExposedPorts\": {\"8000/tcp\": {}},"
        " \"HostConfig\": {\"PortBindings\": {\"8000/tcp\": [{\"HostIp\": \"127.0.0.1\","
        "   \"HostPort\": \"\"}]},"
        "  \"DeviceRequests\": [{\"Driver\": \"nvidia\", \"DeviceIDs\": [\"GPU-aaaa\", "
        "\"GPU-bbbb\"],"
        "   \"Capabilities\": [[\"gpu\"]]}],"
        "  \"ShmSize\": 17179869184, \"Binds\": [\"/data/cache:/opt/nim/.cache\"]}}",
        0, NULL);
    assert_non_null(want);
    if (!json_equal(b, want)) {
        char *t = json_dumps(b, JSON_SORT_KEYS);
        fail_msg("body: %s", t);
    }
    json_decref(want);
    json_decref(b);
    /* No GPU, no port, nothing optional: none of their keys. */
    gm_docker_spec bare = {.image = "x"};
    b = gm_docker_create_body(&bare);
    char *t = json_dumps(b, JSON_SORT_KEYS | JSON_COMPACT);
    assert_string_equal(t, "{\"HostConfig\":{},\"Image\":\"x\"}");
    free(t);
    json_decref(b);
}

static void test_create_start(void **state)
{
    (void)state;
    answer a[] = {{.status = 201, .body = "{\"Id\": \"c0ffee\", \"Warnings\": []}"},
                  {.status = 204, .body = ""},
                  {.status = 304, .body = ""}};
    engine *e = engine_start(a, 3);
    gm_docker *d = client(e);
    gm_docker_spec s = spec();
    char id[GM_DOCKER_ID_LEN];
    gm_error err = {0};
    assert_int_equal(gm_docker_create(d, &s, id, sizeof id, &err), GM_OK);
    assert_string_equal(id, "c0ffee");
    assert_int_equal(gm_docker_start(d, id, &err), GM_OK);
    assert_int_equal(gm_docker_start(d, id, &err), GM_OK); /* 304: already running */
    engine_wait(e);
    assert_string_equal(e->request[0],
                        "POST /v1.41/containers/create?name=gpumon-20260101-000000-abcdef");
    assert_string_equal(e->request[1], "POST /v1.41/containers/c0ffee/start");
    json_t *got = json_loads(e->body[0], 0, NULL);
    json_t *want = gm_docker_create_body(&s);
    assert_true(json_equal(got, want));
    json_decref(got);
    json_decref(want);
    engine_stop(e);
    gm_docker_close(d);
}

static void test_errors_name_things(void **state)
{
    (void)state;
    answer a[] = {
        {.status = 404, .body = "{\"message\": \"No such image: nvcr.io/nim/x:1\"}"},
        /* podman answers a taken name 500 */
        {.status = 500,
         .body = "{\"cause\": \"that name is already in use\", \"message\": \"container create: "
                 "the container name \\\"gpumon-x\\\" is already in use\", \"response\": 500}"},
        {.status = 500,
         .body = "{\"message\": \"OCI runtime error: nvidia-container-cli: device error: "
                 "GPU-aaaa: unknown device\"}"},
        {.status = 404,
         .body = "{\"message\": \"no container with name or ID \\\"gpumon-x\\\" found\"}"},
        {.status = 500,
         .body = "{\"message\": \"can only kill running containers. x is in state exited: "
                 "container state improper\"}"},
        {.status = 404, .body = "{\"message\": \"failed to find image nope:1\"}"},
        {.status = 200, .body = "not json"},
    };
    engine *e = engine_start(a, 7);
    gm_docker *d = client(e);
    gm_docker_spec s = spec();
    s.name = "gpumon-x";
    char id[GM_DOCKER_ID_LEN];
    gm_error err = {0};
    assert_int_equal(gm_docker_create(d, &s, id, sizeof id, &err), GM_ENOENT);
    assert_non_null(strstr(err.msg, "cannot create container gpumon-x from image nvcr.io/nim/x:1"));
    assert_non_null(strstr(err.msg, "No such image: nvcr.io/nim/x:1"));
    assert_non_null(strstr(err.msg, "HTTP 404"));
    assert_non_null(strstr(err.msg, e->path));
    assert_int_equal(gm_docker_create(d, &s, id, sizeof id, &err), GM_EEXIST);
    assert_non_null(strstr(err.msg, "already in use"));
    assert_int_equal(gm_docker_start(d, "gpumon-x", &err), GM_EIO);
    assert_non_null(strstr(err.msg, "cannot start container gpumon-x"));
    assert_non_null(strstr(err.msg, "unknown device"));
    gm_docker_state st;
    assert_int_equal(gm_docker_inspect(d, "gpumon-x", &st, &err), GM_ENOENT);
    assert_non_null(strstr(err.msg, "cannot inspect container gpumon-x"));
    assert_int_equal(gm_docker_kill(d, "gpumon-x", "SIGTERM", &err), GM_ESTATE);
    assert_int_equal(gm_docker_image_id(d, "nope:1", id, sizeof id, &err), GM_ENOENT);
    assert_non_null(strstr(err.msg, "image nope:1 is not on this machine"));
    assert_non_null(strstr(err.msg, "failed to find image"));
    char ver[64];
    assert_int_equal(gm_docker_version(d, ver, sizeof ver, &err), GM_EIO);
    assert_non_null(strstr(err.msg, "not JSON"));
    engine_stop(e);
    /* A bad reference never reaches the engine (there is none left to answer). */
    assert_int_equal(gm_docker_start(d, "x/../../images", &err), GM_EINVAL);
    assert_int_equal(gm_docker_image_id(d, "x/../../containers/y", id, sizeof id, &err), GM_EINVAL);
    assert_int_equal(gm_docker_remove(d, "a/b", &err), GM_EINVAL);
    assert_int_equal(gm_docker_inspect(d, "a b", &st, &err), GM_EINVAL);
    assert_non_null(strstr(err.msg, "\"a b\""));
    gm_docker_close(d);
}

static void test_unreachable(void **state)
{
    (void)state;
    gm_docker *d = NULL;
    gm_error err = {0};
    assert_int_equal(gm_docker_open("unix:///nonexistent/docker.sock", &d, &err), GM_OK);
    char ver[64];
    assert_int_equal(gm_docker_version(d, ver, sizeof ver, &err), GM_EIO);
    assert_non_null(strstr(err.msg, "cannot reach the container engine at /nonexistent/docker.sock "
                                    "(no socket there)"));
    assert_non_null(strstr(err.msg, "DOCKER_HOST"));
    gm_docker_close(d);
}

static void test_version_and_image(void **state)
{
    (void)state;
    answer a[] = {
        {.status = 200,
         .body =
             "{\"Platform\": {\"Name\": \"linux\"}, \"Components\": [{\"Name\": \"Podman Engine\","
             " \"Version\": \"4.3.1\"}], \"Version\": \"4.3.1\"}"},
        {.status = 200,
         .body = "{\"Components\": [{\"Name\": \"Engine\", \"Version\": \"24.0.7\"}], \"Version\": "
                 "\"24.0.7\"}"},
        {.status = 200,
         .body = "{\"Id\": \"sha256:abc\", \"RepoTags\": [\"localhost/gm-test:1\"]}"},
    };
    engine *e = engine_start(a, 3);
    gm_docker *d = client(e);
    char ver[64], id[GM_DOCKER_ID_LEN];
    gm_error err = {0};
    assert_int_equal(gm_docker_version(d, ver, sizeof ver, &err), GM_OK);
    assert_string_equal(ver, "Podman Engine 4.3.1");
    assert_int_equal(gm_docker_version(d, ver, sizeof ver, &err), GM_OK);
    assert_string_equal(ver, "Docker Engine 24.0.7");
    assert_int_equal(gm_docker_image_id(d, "localhost/gm-test:1", id, sizeof id, &err), GM_OK);
    assert_string_equal(id, "sha256:abc");
    engine_wait(e);
    assert_string_equal(e->request[0], "GET /v1.41/version");
    assert_string_equal(e->request[2], "GET /v1.41/images/localhost/gm-test:1/json");
    engine_stop(e);
    gm_docker_close(d);
}

static void test_inspect(void **state)
{
    (void)state;
    answer a[] = {{.status = 200,
                   .body =
                       "{\"Id\": \"c0ffee\", \"Name\": \"/gpumon-x\", \"Image\": \"sha256:abc\","
                       " \"Config\": {\"Image\": \"localhost/gm-test:1\"},"
                       " \"State\": {\"Status\": \"exited\", \"Running\": false, \"OOMKilled\": "
                       "true, \"Pid\": 0, \"ExitCode\": 137, \"Error\": \"\", \"StartedAt\": "
                       "\"2026-01-01T00:00:00Z\", \"FinishedAt\": \"2026-01-01T00:01:00Z\","
                       " \"Health\": {\"Status\": \"unhealthy\"}},"
                       " \"NetworkSettings\": {\"Ports\": {\"8000/tcp\": [{\"HostIp\": "
                       "\"127.0.0.1\", \"HostPort\": \"40607\"}], \"9000/udp\": [{\"HostIp\": "
                       "\"\", \"HostPort\": \"9\"}], \"8001/tcp\": null}}}"}};
    engine *e = engine_start(a, 1);
    gm_docker *d = client(e);
    gm_docker_state st;
    gm_error err = {0};
    assert_int_equal(gm_docker_inspect(d, "gpumon-x", &st, &err), GM_OK);
    assert_string_equal(st.id, "c0ffee");
    assert_string_equal(st.name, "gpumon-x");
    assert_string_equal(st.image, "localhost/gm-test:1");
    assert_string_equal(st.image_id, "sha256:abc");
    assert_string_equal(st.status, "exited");
    assert_false(st.running);
    assert_true(st.oom_killed);
    assert_int_equal(st.exit_code, 137);
    assert_string_equal(st.health, "unhealthy");
    assert_string_equal(st.finished_at, "2026-01-01T00:01:00Z");
    char ip[64];
    assert_int_equal(gm_docker_state_host_port(&st, 8000, ip), 40607);
    assert_string_equal(ip, "127.0.0.1");
    assert_int_equal(gm_docker_state_host_port(&st, 9000, ip), 0); /* udp is not published tcp */
    assert_int_equal(gm_docker_state_host_port(&st, 8001, NULL), 0);
    engine_stop(e);
    gm_docker_close(d);
}

/* Frames: {stream, 0, 0, 0, big-endian size} then the bytes. */
static size_t frame(char *out, int stream, const char *text)
{
    size_t n = strlen(text);
    out[0] = (char)stream;
    out[1] = out[2] = out[3] = 0;
    out[4] = (char)(n >> 24);
    out[5] = (char)(n >> 16);
    out[6] = (char)(n >> 8);
    out[7] = (char)n;
    memcpy(out + 8, text, n);
    return n + 8;
}

typedef struct seen {
    gm_buf out, err;
} seen;

static void on_log(void *arg, int stream, const char *p, size_t n)
{
    seen *s = arg;
    gm_buf_put(stream == 2 ? &s->err : &s->out, p, n);
}

static void test_logs_demultiplexed(void **state)
{
    (void)state;
    static char body[512];
    size_t len = 0;
    len += frame(body + len, 1, "loading the model\nshard 1 of");
    len += frame(body + len, 2, "warning: slow disk\n");
    len += frame(body + len, 1, " 2\n");
    len += frame(body + len, 2, "");
    len += frame(body + len, 1, "no newline at the end");
    /* The same bytes at once, in 3-byte pieces (headers split), and byte by byte. */
    answer a[] = {{.status = 200, .body = body, .len = len},
                  {.status = 200, .body = body, .len = len, .piece = 3},
                  {.status = 200, .body = body, .len = len, .piece = 1},
                  {.status = 200, .body = body, .len = len, .piece = 5}};
    engine *e = engine_start(a, 4);
    gm_docker *d = client(e);
    gm_error err = {0};
    for (int i = 0; i < 3; i++) {
        seen s;
        gm_buf_init(&s.out, 0);
        gm_buf_init(&s.err, 0);
        gm_docker_stream st = {.data = on_log, .arg = &s};
        assert_int_equal(gm_docker_logs(d, "gpumon-x", 0, false, &st, &err), GM_OK);
        assert_string_equal(s.out.p, "loading the model\nshard 1 of 2\nno newline at the end");
        assert_string_equal(s.err.p, "warning: slow disk\n");
        gm_buf_free(&s.out);
        gm_buf_free(&s.err);
    }
    json_t *lines = NULL;
    assert_int_equal(gm_docker_logs_tail(d, "gpumon-x", 3, &lines, &err), GM_OK);
    /* The last three lines, in the order they completed (a partial line at the end counts). */
    assert_int_equal(json_array_size(lines), 3);
    assert_string_equal(json_string_value(json_array_get(lines, 0)), "warning: slow disk");
    assert_string_equal(json_string_value(json_array_get(lines, 1)), "shard 1 of 2");
    assert_string_equal(json_string_value(json_array_get(lines, 2)), "no newline at the end");
    json_decref(lines);
    engine_wait(e);
    assert_string_equal(e->request[0],
                        "GET /v1.41/containers/gpumon-x/logs?stdout=1&stderr=1&tail=all");
    assert_string_equal(e->request[3],
                        "GET /v1.41/containers/gpumon-x/logs?stdout=1&stderr=1&tail=3");
    engine_stop(e);
    gm_docker_close(d);
}

static void test_logs_of_a_tty_are_raw(void **state)
{
    (void)state;
    answer a[] = {{.status = 200, .body = "plain output\r\nfrom a tty\r\n"}};
    engine *e = engine_start(a, 1);
    gm_docker *d = client(e);
    gm_error err = {0};
    json_t *lines = NULL;
    assert_int_equal(gm_docker_logs_tail(d, "gpumon-x", 50, &lines, &err), GM_OK);
    assert_int_equal(json_array_size(lines), 2);
    assert_string_equal(json_string_value(json_array_get(lines, 0)), "plain output");
    assert_string_equal(json_string_value(json_array_get(lines, 1)), "from a tty");
    json_decref(lines);
    engine_stop(e);
    gm_docker_close(d);
}

static void on_progress_line(void *arg, int stream, const char *p, size_t n)
{
    (void)stream;
    gm_buf *b = arg;
    gm_buf_put(b, p, n);
    gm_buf_put(b, "|", 1);
}

static void test_pull(void **state)
{
    (void)state;
    answer a[] = {
        {.status = 200,
         .body =
             "{\"status\": \"Pulling from nim/x\", \"id\": \"1\"}\n"
             "{\"status\": \"Downloading\", \"progressDetail\": {\"current\": 1500000, \"total\": "
             "3000000}, \"id\": \"a1b2c3\"}\n{\"status\": \"Download complete\", \"id\": "
             "\"a1b2c3\"}\n",
         .piece = 7},
        {.status = 200,
         .body =
             "{\"status\": \"Trying to pull\"}\n{\"errorDetail\": {\"message\": \"unauthorized: "
             "authentication required\"}, \"error\": \"unauthorized: authentication required\"}\n"},
        {.status = 404, .body = "{\"message\": \"repository nope not found\"}"},
    };
    engine *e = engine_start(a, 3);
    gm_docker *d = client(e);
    gm_error err = {0};
    gm_buf lines;
    gm_buf_init(&lines, 0);
    gm_docker_stream s = {.data = on_progress_line, .arg = &lines};
    assert_int_equal(gm_docker_pull(d, "nvcr.io/nim/x:1.2", &s, &err), GM_OK);
    assert_string_equal(lines.p, "1: Pulling from nim/x|a1b2c3: Downloading 1.5 of 3.0 MB|"
                                 "a1b2c3: Download complete|");
    assert_int_equal(gm_docker_pull(d, "nvcr.io/nim/x", &s, &err), GM_EIO);
    assert_non_null(strstr(err.msg, "pulling image nvcr.io/nim/x: unauthorized"));
    assert_int_equal(gm_docker_pull(d, "localhost:5000/nope@sha256:00ff", &s, &err), GM_ENOENT);
    assert_non_null(strstr(err.msg, "repository nope not found"));
    pthread_join(e->thread, NULL);
    /* name and tag apart; no tag is latest (the API would pull every tag); a registry port is
     * not a tag; a digest is the tag. */
    assert_string_equal(e->request[0],
                        "POST /v1.41/images/create?fromImage=nvcr.io%2Fnim%2Fx&tag=1.2");
    assert_string_equal(e->request[1],
                        "POST /v1.41/images/create?fromImage=nvcr.io%2Fnim%2Fx&tag=latest");
    assert_string_equal(e->request[2], "POST /v1.41/images/create?fromImage=localhost%3A5000%2Fnope"
                                       "&tag=sha256%3A00ff");
    engine_stop(e);
    gm_buf_free(&lines);
    gm_docker_close(d);
}

/* Lets the stream start, then ends it. */
static bool stop_soon(void *arg)
{
    int *calls = arg;
    return ++*calls < 3;
}

static void test_tick_cancels(void **state)
{
    (void)state;
    /* A slow stream: a byte every 2 ms for a while; the tick ends it. */
    static char body[4000];
    memset(body, 'x', sizeof body);
    answer a[] = {{.status = 200, .body = body, .len = sizeof body, .piece = 1}};
    engine *e = engine_start(a, 1);
    gm_docker *d = client(e);
    gm_error err = {0};
    int calls = 0;
    gm_docker_stream s = {.tick = stop_soon, .arg = &calls};
    assert_int_equal(gm_docker_logs(d, "gpumon-x", 0, true, &s, &err), GM_ECANCELED);
    engine_stop(e);
    gm_docker_close(d);
}

static void test_list(void **state)
{
    (void)state;
    answer a[] = {{.status = 200,
                   .body =
                       "[{\"Id\": \"c1\", \"Names\": [\"/gpumon-a\"], \"Image\": \"img:1\", "
                       "\"ImageID\": \"sha256:1\", \"State\": \"running\", \"Status\": \"Up 2 s\","
                       " \"Created\": 1700000000, \"Labels\": {\"gpumon.owner\": \"h:1\"},"
                       " \"Ports\": [{\"IP\": \"127.0.0.1\", \"PrivatePort\": 8000, "
                       "\"PublicPort\": 40000, \"Type\": \"tcp\"}]},"
                       " {\"Id\": \"c2\", \"Names\": [\"/gpumon-b\"], \"Image\": \"img:2\", "
                       "\"State\": \"exited\", \"Labels\": null, \"Ports\": null}]"}};
    engine *e = engine_start(a, 1);
    gm_docker *d = client(e);
    gm_error err = {0};
    json_t *list = NULL;
    assert_int_equal(gm_docker_list(d, "gpumon.owner", &list, &err), GM_OK);
    assert_int_equal(json_array_size(list), 2);
    json_t *want = json_loads(
        "[{\"id\": \"c1\", \"name\": \"gpumon-a\", \"image\": \"img:1\", \"image_id\": "
        "\"sha256:1\","
        " \"state\": \"running\", \"status\": \"Up 2 s\", \"created\": 1700000000,"
        " \"labels\": {\"gpumon.owner\": \"h:1\"}, \"ports\": [{\"container_port\": 8000,"
        " \"host_ip\": \"127.0.0.1\", \"host_port\": 40000}]},"
        " {\"id\": \"c2\", \"name\": \"gpumon-b\", \"image\": \"img:2\", \"image_id\": \"\","
        " \"state\": \"exited\", \"status\": \"\", \"created\": 0, \"labels\": {}, \"ports\": []}]",
        0, NULL);
    assert_true(json_equal(list, want));
    json_decref(want);
    json_decref(list);
    engine_wait(e);
    assert_string_equal(e->request[0], "GET /v1.41/containers/json?all=1&filters=%7B%22label%22%3A"
                                       "%5B%22gpumon.owner%22%5D%7D");
    engine_stop(e);
    gm_docker_close(d);
}

static void test_images(void **state)
{
    (void)state;
    answer a[] = {{.status = 200,
                   .body =
                       "[{\"Id\": \"sha256:1\", \"RepoTags\": [\"a/b:1\", \"a/b:latest\"], "
                       "\"Size\": 5000, \"Created\": 1700000000},"
                       " {\"Id\": \"sha256:2\", \"RepoTags\": [\"<none>:<none>\"], \"Size\": 1},"
                       " {\"Id\": \"sha256:3\", \"RepoTags\": null, \"Size\": 2}]"},
                  {.status = 500, .body = "{\"message\": \"storage is broken\"}"}};
    engine *e = engine_start(a, 2);
    gm_docker *d = client(e);
    gm_error err = {0};
    json_t *list = NULL;
    assert_int_equal(gm_docker_images(d, &list, &err), GM_OK);
    json_t *want = json_loads("[{\"image\": \"a/b:1\", \"id\": \"sha256:1\", \"size_bytes\": 5000,"
                              " \"created\": 1700000000}, {\"image\": \"a/b:latest\", \"id\": "
                              "\"sha256:1\", \"size_bytes\": 5000, \"created\": 1700000000}]",
                              0, NULL);
    assert_true(json_equal(list, want));
    json_decref(want);
    json_decref(list);
    assert_int_equal(gm_docker_images(d, &list, &err), GM_EIO);
    assert_null(list);
    assert_non_null(strstr(err.msg, "cannot list the engine's images: storage is broken"));
    engine_wait(e);
    assert_string_equal(e->request[0], "GET /v1.41/images/json");
    engine_stop(e);
    gm_docker_close(d);
}

static void test_stop_remove(void **state)
{
    (void)state;
    answer a[] = {{.status = 204, .body = ""},
                  {.status = 304, .body = ""},
                  {.status = 204, .body = ""},
                  {.status = 404, .body = "{\"message\": \"no such container\"}"},
                  {.status = 409,
                   .body = "{\"message\": \"removal of container x is already in progress\"}"}};
    engine *e = engine_start(a, 5);
    gm_docker *d = client(e);
    gm_error err = {0};
    assert_int_equal(gm_docker_stop(d, "gpumon-x", 10, &err), GM_OK);
    assert_int_equal(gm_docker_stop(d, "gpumon-x", 10, &err), GM_OK); /* already stopped */
    assert_int_equal(gm_docker_remove(d, "gpumon-x", &err), GM_OK);
    assert_int_equal(gm_docker_remove(d, "gpumon-x", &err), GM_ENOENT);
    assert_int_equal(gm_docker_remove(d, "gpumon-x", &err), GM_EBUSY);
    assert_non_null(strstr(err.msg, "cannot remove container gpumon-x"));
    engine_wait(e);
    assert_string_equal(e->request[0], "POST /v1.41/containers/gpumon-x/stop?t=10");
    assert_string_equal(e->request[2], "DELETE /v1.41/containers/gpumon-x?force=1&v=1");
    engine_stop(e);
    gm_docker_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_host),
        cmocka_unit_test(test_refs),
        cmocka_unit_test(test_create_body),
        cmocka_unit_test(test_create_start),
        cmocka_unit_test(test_errors_name_things),
        cmocka_unit_test(test_unreachable),
        cmocka_unit_test(test_version_and_image),
        cmocka_unit_test(test_inspect),
        cmocka_unit_test(test_logs_demultiplexed),
        cmocka_unit_test(test_logs_of_a_tty_are_raw),
        cmocka_unit_test(test_pull),
        cmocka_unit_test(test_tick_cancels),
        cmocka_unit_test(test_list),
        cmocka_unit_test(test_images),
        cmocka_unit_test(test_stop_remove),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
