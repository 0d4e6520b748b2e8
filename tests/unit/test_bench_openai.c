/* test_bench_openai.c - the OpenAI wire format: request bodies, streamed chunks of both APIs,
 * error bodies, the model list, JSONL and synthetic prompts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "check.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/bench_openai.h"

static void chunk(const char *data, gm_bench_chunk *c)
{
    gm_bench_chunk_parse(data, strlen(data), true, c);
}

/* ---- the scanner against jansson ------------------------------------------------------- */

/* What a chunk says, read with jansson: the reference the scanner must agree with. */
static void reference_parse(const char *data, size_t len, gm_bench_chunk *out)
{
    memset(out, 0, sizeof *out);
    out->prompt_tokens = out->completion_tokens = -1;
    json_t *o = json_loadb(data, len, 0, NULL);
    if (!json_is_object(o)) {
        out->kind = GM_CHUNK_MALFORMED;
        json_decref(o);
        return;
    }
    const json_t *e = json_object_get(o, "error");
    if (e && !json_is_null(e)) {
        out->kind = GM_CHUNK_ERROR;
        const json_t *m = json_is_string(e) ? e : json_object_get(e, "message");
        if (!json_is_string(m))
            m = json_object_get(e, "detail");
        snprintf(out->error, sizeof out->error, "%s",
                 json_is_string(m) ? json_string_value(m) : "an error without a message");
        json_decref(o);
        return;
    }
    out->kind = GM_CHUNK_DATA;
    const json_t *id = json_object_get(o, "id");
    if (json_is_string(id))
        snprintf(out->id, sizeof out->id, "%s", json_string_value(id));
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(o, "choices"), i, c)
    {
        const json_t *t = json_object_get(c, "text");
        if (json_is_string(t))
            out->content_bytes += json_string_length(t);
        const json_t *d = json_object_get(c, "delta");
        if (json_is_object(d)) {
            t = json_object_get(d, "content");
            if (json_is_string(t))
                out->content_bytes += json_string_length(t);
            t = json_object_get(d, "reasoning_content");
            if (json_is_string(t))
                out->content_bytes += json_string_length(t);
        }
        const json_t *fr = json_object_get(c, "finish_reason");
        if (fr && !json_is_null(fr))
            out->finished = true;
    }
    const json_t *u = json_object_get(o, "usage");
    if (json_is_object(u)) {
        const json_t *pt = json_object_get(u, "prompt_tokens");
        const json_t *ct = json_object_get(u, "completion_tokens");
        if (json_is_integer(pt) && json_integer_value(pt) >= 0)
            out->prompt_tokens = json_integer_value(pt);
        if (json_is_integer(ct) && json_integer_value(ct) >= 0)
            out->completion_tokens = json_integer_value(ct);
        out->has_usage = out->completion_tokens >= 0;
    }
    json_decref(o);
}

static void agree(const char *data, size_t len)
{
    gm_bench_chunk a, b;
    gm_bench_chunk_parse(data, len, true, &a);
    /* A NUL byte outside a string is not JSON; jansson 2.14 reads past it. */
    if (memchr(data, '\0', len)) {
        assert_int_equal(a.kind, GM_CHUNK_MALFORMED);
        return;
    }
    reference_parse(data, len, &b);
    if (a.kind != b.kind)
        fail_msg("kind %d, jansson %d: %.*s", a.kind, b.kind, (int)len, data);
    if (a.kind == GM_CHUNK_MALFORMED)
        return;
    if (a.kind == GM_CHUNK_ERROR) {
        /* Printable text: the scanner replaces control characters with spaces. */
        for (char *c = b.error; *c; c++)
            if ((unsigned char)*c < 0x20 || *c == 0x7f)
                *c = ' ';
        if (strncmp(a.error, b.error, 64) != 0)
            fail_msg("error \"%s\", jansson \"%s\": %.*s", a.error, b.error, (int)len, data);
        return;
    }
    if (a.content_bytes != b.content_bytes || a.has_usage != b.has_usage ||
        a.prompt_tokens != b.prompt_tokens || a.completion_tokens != b.completion_tokens ||
        a.finished != b.finished)
        fail_msg("content %zu/%zu usage %d/%d %lld/%lld %lld/%lld finished %d/%d: %.*s",
                 a.content_bytes, b.content_bytes, a.has_usage, b.has_usage, a.prompt_tokens,
                 b.prompt_tokens, a.completion_tokens, b.completion_tokens, a.finished, b.finished,
                 (int)len, data);
    if (strchr(b.id, '\\') == NULL &&
        strspn(b.id, " !#$%&()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMN"
                     "OPQRSTUVWXYZ[]^_`abcdefghijklmnopqrstuvwxyz{|}~") == strlen(b.id) &&
        strcmp(a.id, b.id) != 0)
        fail_msg("id \"%s\", jansson \"%s\"", a.id, b.id);
}

static unsigned rnd(unsigned *seed)
{
    *seed = *seed * 1103515245u + 12345u;
    return (*seed >> 16) & 0x7fff;
}

static void test_scanner_agrees_with_jansson(void **state)
{
    (void)state;
    static const char *const seeds[] = {
        "{\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":1,\"model\":\"m\","
        "\"choices\":[{\"index\":0,\"text\":\" hi\",\"logprobs\":null,\"finish_reason\":null}]}",
        "{\"id\":\"chatcmpl-9\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
        "\"content\":\"caf\\u00e9 \\ud83d\\ude00\\n\\\"x\\\"\"},\"finish_reason\":\"length\"}],"
        "\"usage\":null}",
        "{\"id\":\"x\",\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":34,"
        "\"total_tokens\":46,\"details\":{\"cached\":[1,2.5e3,-0.5,true,false,null]}}}",
        "{\"choices\":[{\"delta\":{\"reasoning_content\":\"\\u4e2d\\t\",\"content\":null}},"
        "{\"text\":\"two\"}]}",
        "{\"error\":{\"message\":\"out of \\u00e9 memory\",\"type\":\"E\",\"code\":500}}",
        "{\"error\":{\"detail\":\"d\",\"message\":\"m\"}}",
        "{\"error\":\"plain\"}",
        "{\"error\":[1]}",
        "{\"error\":null,\"choices\":[{\"text\":\"\"}]}",
        "{\"usage\":{\"completion_tokens\":9223372036854775807,\"prompt_tokens\":-1}}",
        "  {\"choices\" : [ { \"text\" : \"a\" } ] }  \n",
        "{\"choices\":{\"text\":\"not an array\"},\"usage\":[1]}",
        "{}",
        "[]",
        "\"str\"",
        "{\"a\":[[[[[[[[[[{\"b\":[]}]]]]]]]]]]}",
    };
    unsigned seed = 2026;
    for (size_t i = 0; i < sizeof seeds / sizeof *seeds; i++) {
        size_t n = strlen(seeds[i]);
        agree(seeds[i], n);
        /* Every prefix (a chunk cut short), and random single-byte changes. */
        for (size_t k = 0; k < n; k++)
            agree(seeds[i], k);
        char buf[512];
        for (int round = 0; round < 3000; round++) {
            memcpy(buf, seeds[i], n);
            int flips = 1 + rnd(&seed) % 3;
            for (int f = 0; f < flips; f++) {
                static const char pool[] =
                    "{}[]\":,\\0123456789-+.eEtrufalsn \t\nu\x01\x7f\xc3\xa9\xff";
                size_t at = rnd(&seed) % n;
                buf[at] = rnd(&seed) % 4 ? pool[rnd(&seed) % (sizeof pool - 1)] : (char)rnd(&seed);
            }
            agree(buf, n);
        }
    }
}

static void test_api_names(void **state)
{
    (void)state;
    gm_bench_api a;
    assert_int_equal(gm_bench_api_parse("chat", &a), GM_OK);
    assert_int_equal(a, GM_BENCH_API_CHAT);
    assert_string_equal(gm_bench_api_path(a), "/v1/chat/completions");
    assert_int_equal(gm_bench_api_parse("completions", &a), GM_OK);
    assert_string_equal(gm_bench_api_path(a), "/v1/completions");
    assert_string_equal(gm_bench_api_name(a), "completions");
    assert_int_equal(gm_bench_api_parse("Chat", &a), GM_EINVAL);
    assert_int_equal(gm_bench_api_parse(NULL, &a), GM_EINVAL);
}

static void test_completions_chunks(void **state)
{
    (void)state;
    gm_bench_chunk c;
    chunk("{\"id\":\"cmpl-7\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":"
          "\" hello\",\"finish_reason\":null}]}",
          &c);
    assert_int_equal(c.kind, GM_CHUNK_DATA);
    assert_int_equal(c.content_bytes, 6);
    assert_string_equal(c.id, "cmpl-7");
    assert_false(c.finished);
    assert_false(c.has_usage);
    assert_int_equal(c.completion_tokens, -1);
    chunk("{\"choices\":[{\"text\":\"\",\"finish_reason\":\"length\"}]}", &c);
    assert_int_equal(c.content_bytes, 0);
    assert_true(c.finished);
    /* The usage chunk: choices empty. */
    chunk("{\"id\":\"x\",\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":"
          "34,\"total_tokens\":46}}",
          &c);
    assert_int_equal(c.kind, GM_CHUNK_DATA);
    assert_true(c.has_usage);
    assert_int_equal(c.prompt_tokens, 12);
    assert_int_equal(c.completion_tokens, 34);
    assert_int_equal(c.content_bytes, 0);
    /* usage: null, as vLLM sends on every chunk with continuous_usage_stats off */
    chunk("{\"choices\":[{\"text\":\"a\"}],\"usage\":null}", &c);
    assert_false(c.has_usage);
    assert_int_equal(c.content_bytes, 1);
}

static void test_chat_chunks(void **state)
{
    (void)state;
    gm_bench_chunk c;
    /* The role-only first chunk has no content: it is not the first token. */
    chunk("{\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
          "\"content\":\"\"}}]}",
          &c);
    assert_int_equal(c.kind, GM_CHUNK_DATA);
    assert_int_equal(c.content_bytes, 0);
    chunk("{\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}", &c);
    assert_int_equal(c.content_bytes, 0);
    chunk("{\"choices\":[{\"delta\":{\"content\":\"caf\\u00e9\"}}]}", &c);
    assert_int_equal(c.content_bytes, 5); /* UTF-8 bytes */
    /* Reasoning models stream their thinking first: it is output too. */
    chunk("{\"choices\":[{\"delta\":{\"reasoning_content\":\"hmm\",\"content\":null}}]}", &c);
    assert_int_equal(c.content_bytes, 3);
    /* Not asked for: the id is left alone. */
    gm_bench_chunk_parse("{\"id\":\"z\",\"choices\":[]}", 23, false, &c);
    assert_string_equal(c.id, "");
}

static void test_done_errors_and_garbage(void **state)
{
    (void)state;
    gm_bench_chunk c;
    chunk("[DONE]", &c);
    assert_int_equal(c.kind, GM_CHUNK_DONE);
    chunk("{\"error\":{\"message\":\"out of KV cache\",\"type\":\"InternalServerError\","
          "\"code\":500}}",
          &c);
    assert_int_equal(c.kind, GM_CHUNK_ERROR);
    assert_string_equal(c.error, "out of KV cache");
    chunk("{\"error\":\"plain text\\nwith a newline\"}", &c);
    assert_int_equal(c.kind, GM_CHUNK_ERROR);
    assert_string_equal(c.error, "plain text with a newline");
    chunk("{\"error\":{}}", &c);
    assert_int_equal(c.kind, GM_CHUNK_ERROR);
    assert_string_equal(c.error, "an error without a message");
    chunk("{\"error\":null,\"choices\":[{\"text\":\"ok\"}]}", &c);
    assert_int_equal(c.kind, GM_CHUNK_DATA);
    chunk("<html>", &c);
    assert_int_equal(c.kind, GM_CHUNK_MALFORMED);
    check_gt(strlen(c.error), 0);
    chunk("[1,2]", &c);
    assert_int_equal(c.kind, GM_CHUNK_MALFORMED);
    assert_string_equal(c.error, "not a JSON object");
    chunk("", &c);
    assert_int_equal(c.kind, GM_CHUNK_MALFORMED);
    /* Odd shapes are not fatal: no content. */
    chunk("{\"choices\":\"nope\",\"usage\":{\"completion_tokens\":\"3\"}}", &c);
    assert_int_equal(c.kind, GM_CHUNK_DATA);
    assert_int_equal(c.content_bytes, 0);
    assert_false(c.has_usage);
}

static void test_request_bodies(void **state)
{
    (void)state;
    gm_bench_prompt p = {.prompt = json_string("the of and"), .input_tokens = 3};
    size_t len;
    char *text = gm_bench_request_body(GM_BENCH_API_COMPLETIONS, "m/1", &p, 64, &len);
    assert_non_null(text);
    assert_int_equal(strlen(text), len);
    json_t *b = json_loads(text, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(b, "model")), "m/1");
    assert_string_equal(json_string_value(json_object_get(b, "prompt")), "the of and");
    assert_int_equal(json_integer_value(json_object_get(b, "max_tokens")), 64);
    assert_int_equal(json_integer_value(json_object_get(b, "min_tokens")), 64);
    assert_true(json_is_true(json_object_get(b, "ignore_eos")));
    assert_true(json_is_true(json_object_get(b, "stream")));
    assert_true(
        json_is_true(json_object_get(json_object_get(b, "stream_options"), "include_usage")));
    assert_null(json_object_get(b, "messages"));
    json_decref(b);
    free(text);
    /* A string prompt to chat becomes one user message. */
    text = gm_bench_request_body(GM_BENCH_API_CHAT, "m", &p, 8, NULL);
    b = json_loads(text, 0, NULL);
    json_t *m = json_object_get(b, "messages");
    assert_int_equal(json_array_size(m), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(m, 0), "role")), "user");
    assert_string_equal(json_string_value(json_object_get(json_array_get(m, 0), "content")),
                        "the of and");
    assert_null(json_object_get(b, "prompt"));
    json_decref(b);
    free(text);
    json_decref(p.prompt);
    /* Messages go as they are. */
    p.prompt = json_loads("[{\"role\":\"system\",\"content\":\"be brief\"},{\"role\":\"user\","
                          "\"content\":\"hi\"}]",
                          0, NULL);
    text = gm_bench_request_body(GM_BENCH_API_CHAT, "m", &p, 8, NULL);
    b = json_loads(text, 0, NULL);
    assert_true(json_equal(json_object_get(b, "messages"), p.prompt));
    json_decref(b);
    free(text);
    json_decref(p.prompt);
}

static void test_jsonl_prompts(void **state)
{
    (void)state;
    const char *text = "{\"prompt\": \"abcdefgh\"}\n"
                       "\n"
                       "   \r\n"
                       "{\"prompt\": \"abc\", \"max_tokens\": 7, \"other\": 1}\r\n"
                       "{\"messages\": [{\"role\": \"user\", \"content\": \"12345\"}]}";
    gm_bench_prompts ps;
    gm_error err = {0};
    assert_int_equal(gm_bench_prompts_parse(text, strlen(text), GM_BENCH_API_CHAT, &ps, &err),
                     GM_OK);
    assert_int_equal(ps.n, 3);
    assert_int_equal(ps.v[0].input_tokens, 2); /* 8 bytes / 4 */
    assert_int_equal(ps.v[0].max_tokens, 0);
    assert_int_equal(ps.v[1].input_tokens, 1);
    assert_int_equal(ps.v[1].max_tokens, 7);
    assert_true(json_is_array(ps.v[2].prompt));
    assert_int_equal(ps.v[2].input_tokens, 2); /* 5 bytes */
    gm_bench_prompts_free(&ps);
    assert_null(ps.v);
}

static void expect_bad(const char *text, gm_bench_api api, int code, const char *needle)
{
    gm_bench_prompts ps;
    gm_error err = {0};
    assert_int_equal(gm_bench_prompts_parse(text, strlen(text), api, &ps, &err), code);
    if (!strstr(err.msg, needle))
        fail_msg("\"%s\" does not say \"%s\"", err.msg, needle);
    assert_null(ps.v);
    assert_int_equal(ps.n, 0);
}

static void test_jsonl_errors_name_the_line(void **state)
{
    (void)state;
    gm_bench_api c = GM_BENCH_API_COMPLETIONS, chat = GM_BENCH_API_CHAT;
    expect_bad("{\"prompt\":\"a\"}\n{\"prompt\":\n", c, GM_EPARSE, "line 2");
    expect_bad("{\"prompt\":\"a\"}\n[1]\n", c, GM_EPARSE, "line 2: not a JSON object");
    expect_bad("{\"prompt\":3}", c, GM_EPARSE, "\"prompt\" must be a string");
    expect_bad("{\"text\":\"a\"}", c, GM_EPARSE, "needs \"prompt\" or \"messages\"");
    expect_bad("{\"prompt\":\"a\",\"messages\":[]}", chat, GM_EPARSE, "both");
    expect_bad("{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}]}", c, GM_EPARSE,
               "needs --api chat");
    expect_bad("{\"messages\":[]}", chat, GM_EPARSE, "non-empty array");
    expect_bad("{\"messages\":[{\"role\":\"user\"}]}", chat, GM_EPARSE, "each message");
    expect_bad("{\"prompt\":\"a\",\"max_tokens\":0}", c, GM_EPARSE, "max_tokens");
    expect_bad("{\"prompt\":\"a\",\"max_tokens\":1.5}", c, GM_EPARSE, "max_tokens");
    expect_bad("{\"prompt\":\"a\",\"prompt\":\"b\"}", c, GM_EPARSE, "line 1");
    expect_bad("\n\n  \n", c, GM_EINVAL, "no prompt");
    expect_bad("", c, GM_EINVAL, "no prompt");
}

static void test_prompt_file(void **state)
{
    (void)state;
    char path[] = "/tmp/gm-prompts-XXXXXX";
    int fd = mkstemp(path);
    check_ge(fd, 0);
    const char *text = "{\"prompt\": \"x\"}\n{\"prompt\": 1}\n";
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    gm_bench_prompts ps;
    gm_error err = {0};
    assert_int_equal(gm_bench_prompts_load(path, GM_BENCH_API_COMPLETIONS, &ps, &err), GM_EPARSE);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "line 2"));
    unlink(path);
    assert_int_equal(gm_bench_prompts_load(path, GM_BENCH_API_COMPLETIONS, &ps, &err), GM_ENOENT);
    assert_non_null(strstr(err.msg, "cannot read"));
}

static void test_synthetic_prompts(void **state)
{
    (void)state;
    gm_bench_prompts a, b, c;
    gm_error err = {0};
    assert_int_equal(gm_bench_prompts_synthetic(50, 4, 7, &a, &err), GM_OK);
    assert_int_equal(gm_bench_prompts_synthetic(50, 4, 7, &b, &err), GM_OK);
    assert_int_equal(gm_bench_prompts_synthetic(50, 4, 8, &c, &err), GM_OK);
    assert_int_equal(a.n, 4);
    for (size_t i = 0; i < a.n; i++) {
        const char *s = json_string_value(a.v[i].prompt);
        /* N words: N - 1 spaces, none doubled, none at the ends. */
        size_t spaces = 0;
        for (const char *p = s; *p; p++)
            spaces += *p == ' ';
        assert_int_equal(spaces, 49);
        check_ne(s[0], ' ');
        check_ne(s[strlen(s) - 1], ' ');
        assert_null(strstr(s, "  "));
        assert_int_equal(a.v[i].input_tokens, 50);
        assert_int_equal(a.v[i].max_tokens, 0);
        assert_string_equal(s, json_string_value(b.v[i].prompt)); /* same seed */
        if (i)
            assert_string_not_equal(s, json_string_value(a.v[i - 1].prompt));
    }
    assert_string_not_equal(json_string_value(a.v[0].prompt), json_string_value(c.v[0].prompt));
    gm_bench_prompts_free(&a);
    gm_bench_prompts_free(&b);
    gm_bench_prompts_free(&c);
    assert_int_equal(gm_bench_prompts_synthetic(0, 4, 7, &a, &err), GM_EINVAL);
    assert_int_equal(gm_bench_prompts_synthetic(4, 0, 7, &a, &err), GM_EINVAL);
}

static void test_token_estimate(void **state)
{
    (void)state;
    assert_int_equal(gm_bench_tokens_estimate(0), 0);
    assert_int_equal(gm_bench_tokens_estimate(1), 1);
    assert_int_equal(gm_bench_tokens_estimate(4), 1);
    assert_int_equal(gm_bench_tokens_estimate(5), 2);
    assert_int_equal(gm_bench_tokens_estimate(4000), 1000);
}

static void test_error_text(void **state)
{
    (void)state;
    char buf[64];
    const char *b1 = "{\"error\":{\"message\":\"The model `x` does not exist.\",\"type\":"
                     "\"NotFoundError\",\"code\":404}}";
    gm_bench_error_text(b1, strlen(b1), buf, sizeof buf);
    assert_string_equal(buf, "The model `x` does not exist.");
    const char *b2 = "{\"object\":\"error\",\"message\":\"bad\"}";
    gm_bench_error_text(b2, strlen(b2), buf, sizeof buf);
    assert_string_equal(buf, "bad");
    const char *b3 = "{\"detail\":\"Not Found\"}";
    gm_bench_error_text(b3, strlen(b3), buf, sizeof buf);
    assert_string_equal(buf, "Not Found");
    const char *b4 = "<html>\r\n<body>502 Bad Gateway</body>\xff</html>\n";
    gm_bench_error_text(b4, strlen(b4), buf, sizeof buf);
    assert_non_null(strstr(buf, "502 Bad Gateway"));
    for (const char *p = buf; *p; p++)
        check_ge((unsigned char)*p, 0x20);
    gm_bench_error_text("", 0, buf, sizeof buf);
    assert_string_equal(buf, "");
    gm_bench_error_text(NULL, 0, buf, sizeof buf);
    assert_string_equal(buf, "");
    /* Truncated to the buffer, still a C string. */
    char tiny[8];
    gm_bench_error_text(b1, strlen(b1), tiny, sizeof tiny);
    check_lt(strlen(tiny), sizeof tiny);
}

static void test_models(void **state)
{
    (void)state;
    char buf[32];
    gm_error err = {0};
    const char *ok = "{\"object\":\"list\",\"data\":[{\"id\":\"meta/llama\",\"object\":\"model\"},"
                     "{\"id\":\"other\"}]}";
    assert_int_equal(gm_bench_models_first(ok, strlen(ok), buf, sizeof buf, &err), GM_OK);
    assert_string_equal(buf, "meta/llama");
    const char *empty = "{\"data\":[]}";
    assert_int_equal(gm_bench_models_first(empty, strlen(empty), buf, sizeof buf, &err), GM_ENOENT);
    const char *html = "<html>";
    assert_int_equal(gm_bench_models_first(html, strlen(html), buf, sizeof buf, &err), GM_EPARSE);
    const char *noid = "{\"data\":[{\"name\":\"x\"}]}";
    assert_int_equal(gm_bench_models_first(noid, strlen(noid), buf, sizeof buf, &err), GM_EPARSE);
    const char *longid = "{\"data\":[{\"id\":\"0123456789012345678901234567890123456789\"}]}";
    assert_int_equal(gm_bench_models_first(longid, strlen(longid), buf, sizeof buf, &err),
                     GM_EPARSE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_api_names),
        cmocka_unit_test(test_completions_chunks),
        cmocka_unit_test(test_chat_chunks),
        cmocka_unit_test(test_done_errors_and_garbage),
        cmocka_unit_test(test_request_bodies),
        cmocka_unit_test(test_jsonl_prompts),
        cmocka_unit_test(test_jsonl_errors_name_the_line),
        cmocka_unit_test(test_prompt_file),
        cmocka_unit_test(test_synthetic_prompts),
        cmocka_unit_test(test_token_estimate),
        cmocka_unit_test(test_error_text),
        cmocka_unit_test(test_models),
        cmocka_unit_test(test_scanner_agrees_with_jansson),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
