/* fuzz_docker.c - what gpumon reads from a container engine (core/docker.c): the 8-byte frame
 * headers of a log stream and the inspect answer. An engine is trusted less than it seems: a
 * container's own output reaches the demultiplexer, and a remote DOCKER_HOST could be anyone.
 * Checks, for any bytes: fed whole or in pieces the stream gives the same output on the same
 * streams, never more bytes than came in; read as an inspect answer, every text field stays
 * terminated, at most GM_DOCKER_PORTS_MAX ports, each a real port number. */
#include "core/docker.h"
#include "fuzz.h"

typedef struct sink {
    char out[2][8192];
    size_t len[2];
    size_t total;
} sink;

static void on_data(void *arg, int stream, const char *p, size_t n)
{
    sink *k = arg;
    FUZZ_CHECK(stream == 1 || stream == 2);
    k->total += n;
    size_t *len = &k->len[stream - 1];
    size_t take = n < sizeof k->out[0] - *len ? n : sizeof k->out[0] - *len;
    memcpy(k->out[stream - 1] + *len, p, take);
    *len += take;
}

static void demux_whole_and_pieces(const uint8_t *data, size_t size)
{
    sink a = {0}, b = {0};
    gm_docker_demux ma = {0}, mb = {0};
    gm_docker_stream sa = {.data = on_data, .arg = &a}, sb = {.data = on_data, .arg = &b};
    gm_docker_demux_feed(&ma, (const char *)data, size, &sa);
    /* Pieces of 1 to 16 bytes, their sizes taken from the data itself. */
    for (size_t at = 0, k = 0; at < size; k++) {
        size_t n = 1 + (size ? data[k % size] % 16 : 0);
        if (n > size - at)
            n = size - at;
        gm_docker_demux_feed(&mb, (const char *)data + at, n, &sb);
        at += n;
    }
    FUZZ_CHECK(a.total <= size && a.total == b.total);
    for (int s = 0; s < 2; s++)
        FUZZ_CHECK(a.len[s] == b.len[s] && memcmp(a.out[s], b.out[s], a.len[s]) == 0);
}

static void inspect_answer(const uint8_t *data, size_t size)
{
    json_error_t e;
    json_t *j = json_loadb((const char *)data, size, JSON_DECODE_ANY, &e);
    gm_docker_state st;
    gm_docker_state_parse(j, &st); /* NULL (not JSON) included: all fields empty */
    FUZZ_CHECK(fuzz_terminated(st.id, sizeof st.id));
    FUZZ_CHECK(fuzz_terminated(st.name, sizeof st.name));
    FUZZ_CHECK(fuzz_terminated(st.image, sizeof st.image));
    FUZZ_CHECK(fuzz_terminated(st.image_id, sizeof st.image_id));
    FUZZ_CHECK(fuzz_terminated(st.status, sizeof st.status));
    FUZZ_CHECK(fuzz_terminated(st.error, sizeof st.error));
    FUZZ_CHECK(fuzz_terminated(st.started_at, sizeof st.started_at));
    FUZZ_CHECK(fuzz_terminated(st.finished_at, sizeof st.finished_at));
    FUZZ_CHECK(fuzz_terminated(st.health, sizeof st.health));
    FUZZ_CHECK(st.nports <= GM_DOCKER_PORTS_MAX);
    for (size_t i = 0; i < st.nports; i++) {
        FUZZ_CHECK(st.ports[i].container_port >= 1 && st.ports[i].container_port <= 65535);
        FUZZ_CHECK(st.ports[i].host_port <= 65535);
        FUZZ_CHECK(fuzz_terminated(st.ports[i].host_ip, sizeof st.ports[i].host_ip));
    }
    if (!j)
        FUZZ_CHECK(!st.id[0] && !st.running && st.nports == 0);
    char ip[64];
    unsigned port = gm_docker_state_host_port(&st, 8000, ip);
    FUZZ_CHECK(port <= 65535 && fuzz_terminated(ip, sizeof ip));
    json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 65536)
        return 0;
    demux_whole_and_pieces(data, size);
    inspect_answer(data, size);
    return 0;
}
