/* bench_openai.c - OpenAI-compatible requests, prompts and streamed chunks (see bench_openai.h). */
#include "core/bench_openai.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/utf8.h"

int gm_bench_api_parse(const char *s, gm_bench_api *out)
{
    if (s && strcmp(s, "completions") == 0)
        *out = GM_BENCH_API_COMPLETIONS;
    else if (s && strcmp(s, "chat") == 0)
        *out = GM_BENCH_API_CHAT;
    else
        return GM_EINVAL;
    return GM_OK;
}

const char *gm_bench_api_name(gm_bench_api api)
{
    return api == GM_BENCH_API_CHAT ? "chat" : "completions";
}

const char *gm_bench_api_path(gm_bench_api api)
{
    return api == GM_BENCH_API_CHAT ? "/v1/chat/completions" : "/v1/completions";
}

unsigned gm_bench_tokens_estimate(size_t bytes)
{
    size_t t = (bytes + 3) / 4;
    return t > GM_BENCH_TOKENS_MAX ? GM_BENCH_TOKENS_MAX : (unsigned)t;
}

void gm_bench_prompts_free(gm_bench_prompts *ps)
{
    for (size_t i = 0; ps->v && i < ps->n; i++)
        json_decref(ps->v[i].prompt);
    free(ps->v);
    ps->v = NULL;
    ps->n = 0;
}

/* ---- JSONL ------------------------------------------------------------------------------ */

/* Checks a messages array; its content bytes into *bytes. NULL, or what is wrong. */
static const char *check_messages(const json_t *m, size_t *bytes)
{
    if (!json_is_array(m) || json_array_size(m) == 0)
        return "\"messages\" must be a non-empty array";
    *bytes = 0;
    size_t i;
    const json_t *x;
    json_array_foreach(m, i, x)
    {
        const json_t *role = json_object_get(x, "role");
        const json_t *content = json_object_get(x, "content");
        if (!json_is_object(x) || !json_is_string(role) || !json_is_string(content))
            return "each message must be {\"role\": string, \"content\": string}";
        *bytes += json_string_length(content);
    }
    return NULL;
}

int gm_bench_prompts_parse(const char *text, size_t len, gm_bench_api api, gm_bench_prompts *out,
                           gm_error *err)
{
    out->v = NULL;
    out->n = 0;
    size_t cap = 0, lineno = 0;
    const char *p = text, *end = text + len;
    int rc = GM_OK;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        lineno++;
        const char *a = p, *b = le;
        p = nl ? nl + 1 : end;
        while (a < b && (*a == ' ' || *a == '\t' || *a == '\r'))
            a++;
        while (b > a && (b[-1] == ' ' || b[-1] == '\t' || b[-1] == '\r'))
            b--;
        if (a == b)
            continue; /* blank line */
        json_error_t jerr;
        json_t *o = json_loadb(a, (size_t)(b - a), JSON_REJECT_DUPLICATES, &jerr);
        if (!json_is_object(o)) {
            rc = gm_error_set(err, GM_EPARSE, "line %zu: %s", lineno,
                              o ? "not a JSON object" : jerr.text);
            json_decref(o);
            goto fail;
        }
        json_t *prompt = json_object_get(o, "prompt");
        json_t *messages = json_object_get(o, "messages");
        json_t *mt = json_object_get(o, "max_tokens");
        const char *why = NULL;
        size_t bytes = 0;
        if (prompt && messages)
            why = "has both \"prompt\" and \"messages\"";
        else if (prompt && !json_is_string(prompt))
            why = "\"prompt\" must be a string";
        else if (prompt)
            bytes = json_string_length(prompt);
        else if (messages && api != GM_BENCH_API_CHAT)
            why = "\"messages\" needs --api chat";
        else if (messages)
            why = check_messages(messages, &bytes);
        else
            why = "needs \"prompt\" or \"messages\"";
        if (!why && mt && !json_is_null(mt) &&
            (!json_is_integer(mt) || json_integer_value(mt) < 1 ||
             json_integer_value(mt) > GM_BENCH_TOKENS_MAX))
            why = "\"max_tokens\" must be a whole number from 1 to 1000000";
        if (why) {
            rc = gm_error_set(err, GM_EPARSE, "line %zu: %s", lineno, why);
            json_decref(o);
            goto fail;
        }
        if (out->n == GM_BENCH_PROMPTS_MAX) {
            rc = gm_error_set(err, GM_EINVAL, "more than %d prompts", GM_BENCH_PROMPTS_MAX);
            json_decref(o);
            goto fail;
        }
        if (out->n == cap) {
            cap = cap ? cap * 2 : 64;
            gm_bench_prompt *nv = realloc(out->v, cap * sizeof *nv);
            if (!nv) {
                rc = gm_error_set(err, GM_ENOMEM, "out of memory reading prompts");
                json_decref(o);
                goto fail;
            }
            out->v = nv;
        }
        gm_bench_prompt *e = &out->v[out->n++];
        e->prompt = json_incref(prompt ? prompt : messages);
        e->max_tokens = json_is_integer(mt) ? (unsigned)json_integer_value(mt) : 0;
        e->input_tokens = gm_bench_tokens_estimate(bytes);
        json_decref(o);
    }
    if (out->n == 0) {
        rc = gm_error_set(err, GM_EINVAL, "no prompt in it (one JSON object per line)");
        goto fail;
    }
    return GM_OK;
fail:
    gm_bench_prompts_free(out);
    return rc;
}

int gm_bench_prompts_load(const char *path, gm_bench_api api, gm_bench_prompts *out, gm_error *err)
{
    out->v = NULL;
    out->n = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return gm_error_set(err, GM_EIO, "cannot read %s: %s", path, strerror(errno));
    gm_buf b;
    gm_buf_init(&b, GM_BENCH_PROMPT_FILE_MAX);
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0 && !b.failed)
        gm_buf_put(&b, chunk, n);
    bool read_err = ferror(f);
    fclose(f);
    if (read_err || b.failed) {
        gm_buf_free(&b);
        return read_err ? gm_error_set(err, GM_EIO, "cannot read %s", path)
                        : gm_error_set(err, GM_EINVAL, "%s: larger than %u MiB", path,
                                       GM_BENCH_PROMPT_FILE_MAX >> 20);
    }
    gm_error e = {0};
    int rc = gm_bench_prompts_parse(b.p ? b.p : "", b.len, api, out, &e);
    gm_buf_free(&b);
    if (rc < 0)
        return gm_error_set(err, rc, "%s: %s", path, e.msg);
    return GM_OK;
}

/* ---- synthetic prompts ------------------------------------------------------------------ */

/* Short, frequent English words: each is a single token (with the space before it) in the
 * byte-pair vocabularies of the common model families, so N of them make about N tokens. No
 * tokenizer is consulted here: the count is an approximation, and "input_tokens_source" says
 * when the server's own count (usage.prompt_tokens) replaced it. */
static const char *const words[] = {
    "the",   "of",     "and",    "to",    "in",    "is",     "that",  "for",   "it",    "as",
    "was",   "with",   "be",     "by",    "on",    "not",    "he",    "this",  "are",   "or",
    "his",   "from",   "at",     "which", "but",   "have",   "an",    "had",   "they",  "you",
    "were",  "their",  "one",    "all",   "we",    "can",    "her",   "has",   "there", "been",
    "if",    "more",   "when",   "will",  "would", "who",    "so",    "no",    "time",  "people",
    "year",  "new",    "work",   "world", "first", "day",    "water", "long",  "way",   "good",
    "great", "small",  "large",  "old",   "man",   "life",   "house", "city",  "book",  "music",
    "light", "power",  "system", "data",  "model", "number", "part",  "place", "point", "state",
    "home",  "school", "game",   "story", "group", "market", "open",  "river", "road",  "table",
};
#define NWORDS (sizeof words / sizeof *words)

/* splitmix64: a good spread from a seed, enough for picking words. */
static uint64_t mix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

int gm_bench_prompts_synthetic(unsigned input_tokens, size_t count, uint64_t seed,
                               gm_bench_prompts *out, gm_error *err)
{
    out->v = NULL;
    out->n = 0;
    if (input_tokens == 0 || input_tokens > GM_BENCH_TOKENS_MAX || count == 0 ||
        count > GM_BENCH_PROMPTS_MAX)
        return gm_error_set(err, GM_EINVAL, "synthetic prompts: bad length or count");
    out->v = calloc(count, sizeof *out->v);
    if (!out->v)
        return gm_error_set(err, GM_ENOMEM, "out of memory for prompts");
    uint64_t st = seed;
    gm_buf b;
    gm_buf_init(&b, 0);
    for (size_t i = 0; i < count; i++) {
        b.len = 0;
        for (unsigned w = 0; w < input_tokens; w++) {
            if (w)
                gm_buf_put(&b, " ", 1);
            gm_buf_puts(&b, words[mix(&st) % NWORDS]);
        }
        json_t *s = b.failed ? NULL : json_stringn(b.p, b.len);
        if (!s) {
            gm_buf_free(&b);
            gm_bench_prompts_free(out);
            return gm_error_set(err, GM_ENOMEM, "out of memory for prompts");
        }
        out->v[i].prompt = s;
        out->v[i].input_tokens = input_tokens;
        out->n++;
    }
    gm_buf_free(&b);
    return GM_OK;
}

/* ---- requests --------------------------------------------------------------------------- */

char *gm_bench_request_body(gm_bench_api api, const char *model, const gm_bench_prompt *p,
                            unsigned max_tokens, size_t *len)
{
    json_t *body = json_object();
    json_t *input;
    if (api == GM_BENCH_API_CHAT && json_is_string(p->prompt))
        input = json_pack("[{s:s, s:O}]", "role", "user", "content", p->prompt);
    else
        input = json_incref(p->prompt);
    if (!body || !input) {
        json_decref(body);
        json_decref(input);
        return NULL;
    }
    int bad = json_object_set_new(body, "model", json_string(model ? model : ""));
    bad |= json_object_set_new(body, api == GM_BENCH_API_CHAT ? "messages" : "prompt", input);
    bad |= json_object_set_new(body, "max_tokens", json_integer(max_tokens));
    bad |= json_object_set_new(body, "stream", json_true());
    bad |= json_object_set_new(body, "stream_options", json_pack("{s:b}", "include_usage", 1));
    bad |= json_object_set_new(body, "ignore_eos", json_true());
    bad |= json_object_set_new(body, "min_tokens", json_integer(max_tokens));
    char *text = bad ? NULL : json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (text && len)
        *len = strlen(text);
    return text;
}

/* ---- responses -------------------------------------------------------------------------- */

static void set_text(char *dst, size_t cap, const char *s, size_t n)
{
    gm_utf8_repair(dst, cap, s, n);
    for (char *c = dst; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = ' ';
}

/* The message inside an error value: {"message": ...} or a string. */
static const char *error_message(const json_t *e)
{
    if (json_is_string(e))
        return json_string_value(e);
    const json_t *m = json_object_get(e, "message");
    if (json_is_string(m))
        return json_string_value(m);
    m = json_object_get(e, "detail");
    return json_is_string(m) ? json_string_value(m) : NULL;
}

void gm_bench_chunk_parse(const char *data, size_t len, bool want_id, gm_bench_chunk *out)
{
    memset(out, 0, sizeof *out);
    out->prompt_tokens = out->completion_tokens = -1;
    if (len == 6 && memcmp(data, "[DONE]", 6) == 0) {
        out->kind = GM_CHUNK_DONE;
        return;
    }
    json_error_t jerr;
    json_t *o = json_loadb(data, len, 0, &jerr);
    if (!json_is_object(o)) {
        out->kind = GM_CHUNK_MALFORMED;
        snprintf(out->error, sizeof out->error, "%s", o ? "not a JSON object" : jerr.text);
        json_decref(o);
        return;
    }
    const json_t *e = json_object_get(o, "error");
    if (e && !json_is_null(e)) {
        out->kind = GM_CHUNK_ERROR;
        const char *m = error_message(e);
        if (m)
            set_text(out->error, sizeof out->error, m, strlen(m));
        else
            snprintf(out->error, sizeof out->error, "an error without a message");
        json_decref(o);
        return;
    }
    out->kind = GM_CHUNK_DATA;
    if (want_id) {
        const json_t *id = json_object_get(o, "id");
        if (json_is_string(id))
            set_text(out->id, sizeof out->id, json_string_value(id), json_string_length(id));
    }
    const json_t *choices = json_object_get(o, "choices");
    size_t i;
    const json_t *c;
    json_array_foreach(choices, i, c)
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

void gm_bench_error_text(const char *body, size_t len, char *buf, size_t cap)
{
    if (cap == 0)
        return;
    buf[0] = '\0';
    if (!body || len == 0)
        return;
    json_t *o = json_loadb(body, len, 0, NULL);
    const char *m = NULL;
    if (json_is_object(o)) {
        const json_t *e = json_object_get(o, "error");
        m = e ? error_message(e) : NULL;
        if (!m)
            m = error_message(o);
    }
    if (m) {
        set_text(buf, cap, m, strlen(m));
    } else {
        size_t n = len < 200 ? len : 200;
        set_text(buf, cap, body, n);
    }
    json_decref(o);
    /* Trim what repair and the control characters left at the ends. */
    size_t n = strlen(buf);
    while (n && buf[n - 1] == ' ')
        buf[--n] = '\0';
}

int gm_bench_models_first(const char *body, size_t len, char *buf, size_t cap, gm_error *err)
{
    if (cap)
        buf[0] = '\0';
    json_error_t jerr;
    json_t *o = json_loadb(body ? body : "", len, 0, &jerr);
    const json_t *data = json_object_get(o, "data");
    if (!json_is_object(o) || !json_is_array(data)) {
        json_decref(o);
        return gm_error_set(err, GM_EPARSE, "the model list is not {\"data\": [{\"id\": ...}]}%s%s",
                            o ? "" : ": ", o ? "" : jerr.text);
    }
    const json_t *id = json_object_get(json_array_get(data, 0), "id");
    if (!json_is_string(id) || json_string_length(id) == 0) {
        bool empty = json_array_size(data) == 0;
        json_decref(o);
        return empty ? gm_error_set(err, GM_ENOENT, "the server lists no model")
                     : gm_error_set(err, GM_EPARSE, "the first model has no \"id\" string");
    }
    if (json_string_length(id) >= cap) {
        json_decref(o);
        return gm_error_set(err, GM_EPARSE, "the first model id is over %zu bytes", cap - 1);
    }
    memcpy(buf, json_string_value(id), json_string_length(id) + 1);
    json_decref(o);
    return GM_OK;
}
