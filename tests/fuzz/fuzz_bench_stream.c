/* fuzz_bench_stream.c - what `gpumon bench` reads from an inference server it does not control:
 * the event stream of a completion (core/bench_sse.c), each event's JSON chunk, an error body
 * and a GET /v1/models answer (core/bench_openai.c). Checks, for any bytes:
 *   - the SSE parser gives the same events whether the bytes come at once or in pieces (split
 *     points taken from the input), and fails the same way;
 *   - every event's data is classified, with its text fields terminated, and token counts from
 *     usage never below -1 (absent);
 *   - an error body's message and the first model id are always terminated strings. */
#include "core/bench_openai.h"
#include "core/bench_sse.h"
#include "fuzz.h"

/* The events of one parse, flattened: name NUL data-length data, for comparison. */
typedef struct seen {
    gm_buf all;
    unsigned long n;
} seen;

static int on_event(void *arg, const char *event, const char *data, size_t len)
{
    seen *s = arg;
    FUZZ_CHECK(data[len] == '\0');
    FUZZ_CHECK(fuzz_terminated(event, 64));
    gm_buf_put(&s->all, event, strlen(event) + 1);
    gm_buf_put(&s->all, &len, sizeof len);
    gm_buf_put(&s->all, data, len);
    s->n++;

    gm_bench_chunk c;
    gm_bench_chunk_parse(data, len, s->n == 1, &c);
    FUZZ_CHECK(c.kind >= GM_CHUNK_DATA && c.kind <= GM_CHUNK_MALFORMED);
    FUZZ_CHECK(fuzz_terminated(c.id, sizeof c.id) && fuzz_terminated(c.error, sizeof c.error));
    FUZZ_CHECK(c.prompt_tokens >= -1 && c.completion_tokens >= -1);
    if (c.kind == GM_CHUNK_MALFORMED)
        FUZZ_CHECK(c.error[0] != '\0');
    return 0;
}

/* Parses data in pieces cut at the offsets the cuts bytes give (none: all at once). */
static int parse(const uint8_t *data, size_t size, const uint8_t *cuts, size_t ncuts, seen *s,
                 bool *partial)
{
    gm_sse p;
    gm_sse_init(&p, 4096); /* small, so the limit is reached too */
    size_t at = 0;
    int rc = GM_OK;
    for (size_t i = 0; i < ncuts && rc == GM_OK && at < size; i++) {
        size_t n = cuts[i] % 64;
        if (n > size - at)
            n = size - at;
        rc = gm_sse_feed(&p, data + at, n, on_event, s);
        at += n;
    }
    if (rc == GM_OK && at < size)
        rc = gm_sse_feed(&p, data + at, size - at, on_event, s);
    if (rc == GM_OK)
        rc = gm_sse_finish(&p, on_event, s, partial);
    gm_sse_free(&p);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The first 8 bytes (when there are more) choose where the stream is cut. */
    size_t ncuts = size > 8 ? 8 : 0;
    const uint8_t *cuts = data;
    data += ncuts;
    size -= ncuts;

    seen whole = {0}, pieces = {0};
    bool partial_whole = false, partial_pieces = false;
    int rc_whole = parse(data, size, NULL, 0, &whole, &partial_whole);
    int rc_pieces = parse(data, size, cuts, ncuts, &pieces, &partial_pieces);
    FUZZ_CHECK(rc_whole == rc_pieces);
    FUZZ_CHECK(rc_whole == GM_OK || rc_whole == GM_EPARSE);
    if (rc_whole == GM_OK) {
        FUZZ_CHECK(partial_whole == partial_pieces);
        FUZZ_CHECK(whole.n == pieces.n && whole.all.len == pieces.all.len);
        FUZZ_CHECK(whole.all.len == 0 || memcmp(whole.all.p, pieces.all.p, whole.all.len) == 0);
    }
    gm_buf_free(&whole.all);
    gm_buf_free(&pieces.all);

    char msg[256];
    gm_bench_error_text((const char *)data, size, msg, sizeof msg);
    FUZZ_CHECK(fuzz_terminated(msg, sizeof msg));

    char model[128];
    gm_error err = {0};
    int rc = gm_bench_models_first((const char *)data, size, model, sizeof model, &err);
    FUZZ_CHECK(rc == GM_OK || rc == GM_EPARSE || rc == GM_ENOENT || rc == GM_ENOMEM);
    if (rc == GM_OK)
        FUZZ_CHECK(fuzz_terminated(model, sizeof model));
    else
        FUZZ_CHECK(err.msg[0] && fuzz_terminated(err.msg, sizeof err.msg));
    return 0;
}
