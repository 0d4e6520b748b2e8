/* bench_openai.c - OpenAI-compatible requests, prompts and streamed chunks (see bench_openai.h). */
#include "core/bench_openai.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "base/json.h"
#include "base/buf.h"
#include "base/utf8.h"
#include "base/error.h"

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
    char *buf;
    size_t len;
    int rc = gm_file_read_all(path, GM_BENCH_PROMPT_FILE_MAX, "prompt file", &buf, &len, err);
    if (rc < 0)
        return rc;
    gm_error e = {0};
    rc = gm_bench_prompts_parse(buf, len, api, out, &e);
    free(buf);
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
    int bad = json_object_set_new(body, "model", gm_json_str(model ? model : ""));
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

/* ---- streamed chunks: a JSON scanner ------------------------------------------------------
 *
 * A chunk is parsed once per streamed token, so this is the client's hot path: a scanner that
 * checks the whole JSON grammar (RFC 8259: strings with their escapes and UTF-8, numbers,
 * literals, nesting) without building a tree or allocating, and picks out only what a benchmark
 * needs. It reads a chunk the way jansson does (which tests/unit/test_bench_openai.c checks on
 * generated inputs): what jansson refuses is GM_CHUNK_MALFORMED here too. */

#define SCAN_DEPTH_MAX 64

typedef struct scan {
    const char *p, *end;
    const char *why; /* set on the first error */
} scan;

static bool scan_fail(scan *s, const char *why)
{
    if (!s->why)
        s->why = why;
    return false;
}

static void scan_ws(scan *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

static int hex4(const char *p)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/* A string at s->p (the opening quote). Its decoded UTF-8 length into *dlen; with buf, the
 * decoded text too (truncated to cap - 1 bytes, NUL-terminated). One function on purpose: it
 * scans every streamed chunk, and moving the \u escape out made plain chunks 4-6 % slower
 * (bench/chunk_parse.c, docs/PERFORMANCE.md). */
static bool scan_string(scan *s, size_t *dlen, char *buf, size_t cap)
{
    size_t n = 0, w = 0;
    if (s->p >= s->end || *s->p != '"')
        return scan_fail(s, "expected a string");
    s->p++;
    gm_utf8_stream u = {0};
    for (;;) {
        const char *q = s->p;
        /* The plain run up to a quote, a backslash or a control character. */
        while (q < s->end && *q != '"' && *q != '\\' && (unsigned char)*q >= 0x20)
            q++;
        if (q > s->p) {
            if (!gm_utf8_feed(&u, (const uint8_t *)s->p, (size_t)(q - s->p)))
                return scan_fail(s, "invalid UTF-8 in a string");
            size_t k = (size_t)(q - s->p);
            if (buf && w + 1 < cap) {
                size_t room = cap - 1 - w, c = k < room ? k : room;
                memcpy(buf + w, s->p, c);
                w += c;
            }
            n += k;
            s->p = q;
        }
        if (s->p >= s->end)
            return scan_fail(s, "a string is not closed");
        char c = *s->p;
        if (c == '"') {
            if (!gm_utf8_complete(&u))
                return scan_fail(s, "invalid UTF-8 in a string");
            s->p++;
            break;
        }
        if ((unsigned char)c < 0x20)
            return scan_fail(s, "a control character in a string");
        /* An escape. */
        if (!gm_utf8_complete(&u))
            return scan_fail(s, "invalid UTF-8 in a string");
        if (s->end - s->p < 2)
            return scan_fail(s, "a string is not closed");
        char e = s->p[1];
        char one = e == '"'    ? '"'
                   : e == '\\' ? '\\'
                   : e == '/'  ? '/'
                   : e == 'b'  ? '\b'
                   : e == 'f'  ? '\f'
                   : e == 'n'  ? '\n'
                   : e == 'r'  ? '\r'
                   : e == 't'  ? '\t'
                               : 0;
        if (one) {
            if (buf && w + 1 < cap)
                buf[w++] = one;
            n++;
            s->p += 2;
            continue;
        }
        if (e != 'u' || s->end - s->p < 6)
            return scan_fail(s, "an invalid escape in a string");
        int cp = hex4(s->p + 2);
        if (cp < 0)
            return scan_fail(s, "an invalid \\u escape");
        s->p += 6;
        if (cp >= 0xDC00 && cp <= 0xDFFF)
            return scan_fail(s, "a lone low surrogate");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            int lo = s->end - s->p >= 6 && s->p[0] == '\\' && s->p[1] == 'u' ? hex4(s->p + 2) : -1;
            if (lo < 0xDC00 || lo > 0xDFFF)
                return scan_fail(s, "a lone high surrogate");
            s->p += 6;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        if (cp == 0)
            return scan_fail(s, "\\u0000 in a string");
        char enc[4];
        size_t k;
        if (cp < 0x80) {
            enc[0] = (char)cp;
            k = 1;
        } else if (cp < 0x800) {
            enc[0] = (char)(0xC0 | (cp >> 6));
            enc[1] = (char)(0x80 | (cp & 0x3F));
            k = 2;
        } else if (cp < 0x10000) {
            enc[0] = (char)(0xE0 | (cp >> 12));
            enc[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
            enc[2] = (char)(0x80 | (cp & 0x3F));
            k = 3;
        } else {
            enc[0] = (char)(0xF0 | (cp >> 18));
            enc[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
            enc[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
            enc[3] = (char)(0x80 | (cp & 0x3F));
            k = 4;
        }
        if (buf && w + k < cap) {
            memcpy(buf + w, enc, k);
            w += k;
        }
        n += k;
    }
    if (buf && cap)
        buf[w < cap ? w : cap - 1] = '\0';
    if (dlen)
        *dlen = n;
    return true;
}

/* A number; *integer set when it is a whole number that fits a long long (no fraction or
 * exponent), its value in *v. */
static bool scan_number(scan *s, bool *integer, long long *v)
{
    const char *p = s->p, *e = s->end;
    bool neg = p < e && *p == '-';
    if (neg)
        p++;
    if (p >= e || *p < '0' || *p > '9')
        return scan_fail(s, "an invalid number");
    unsigned long long acc = 0;
    bool overflow = false;
    if (*p == '0') {
        p++;
    } else {
        while (p < e && *p >= '0' && *p <= '9') {
            unsigned d = (unsigned)(*p++ - '0');
            if (acc > (ULLONG_MAX - d) / 10)
                overflow = true;
            else
                acc = acc * 10 + d;
        }
    }
    bool whole = true;
    if (p < e && *p == '.') {
        whole = false;
        p++;
        if (p >= e || *p < '0' || *p > '9')
            return scan_fail(s, "an invalid number");
        while (p < e && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        whole = false;
        p++;
        if (p < e && (*p == '+' || *p == '-'))
            p++;
        if (p >= e || *p < '0' || *p > '9')
            return scan_fail(s, "an invalid number");
        while (p < e && *p >= '0' && *p <= '9')
            p++;
    }
    /* jansson refuses a whole number that does not fit its integer type, and a real one that
     * does not fit a double. */
    if (whole && (overflow || acc > (unsigned long long)LLONG_MAX + neg))
        return scan_fail(s, "too big an integer");
    if (!whole) {
        size_t n = (size_t)(p - s->p);
        char small[128], *t = n < sizeof small ? small : malloc(n + 1);
        if (!t)
            return scan_fail(s, "out of memory");
        memcpy(t, s->p, n);
        t[n] = '\0';
        double d = strtod(t, NULL);
        if (t != small)
            free(t);
        if (!isfinite(d))
            return scan_fail(s, "real number overflow");
    }
    s->p = p;
    if (integer)
        *integer = whole;
    if (v)
        *v = whole ? (neg ? (long long)(0 - acc) : (long long)acc) : 0;
    return true;
}

static bool scan_literal(scan *s, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0)
        return scan_fail(s, "an invalid literal");
    s->p += n;
    return true;
}

static bool scan_value(scan *s, int depth);

/* An object or array's members, each handed to fn (NULL: just checked). For an object, fn
 * gets the key (decoded, truncated) and must consume the value. */
typedef bool (*member_fn)(scan *s, void *arg, const char *key, int depth);

static bool scan_object(scan *s, int depth, member_fn fn, void *arg)
{
    if (depth > SCAN_DEPTH_MAX)
        return scan_fail(s, "nested too deeply");
    s->p++; /* { */
    scan_ws(s);
    if (s->p < s->end && *s->p == '}') {
        s->p++;
        return true;
    }
    for (;;) {
        char key[32];
        scan_ws(s);
        if (!scan_string(s, NULL, key, sizeof key))
            return false;
        scan_ws(s);
        if (s->p >= s->end || *s->p != ':')
            return scan_fail(s, "expected ':' in an object");
        s->p++;
        scan_ws(s);
        if (!(fn ? fn(s, arg, key, depth) : scan_value(s, depth + 1)))
            return false;
        scan_ws(s);
        if (s->p < s->end && *s->p == ',') {
            s->p++;
            continue;
        }
        if (s->p < s->end && *s->p == '}') {
            s->p++;
            return true;
        }
        return scan_fail(s, "expected ',' or '}' in an object");
    }
}

static bool scan_array(scan *s, int depth, member_fn fn, void *arg)
{
    if (depth > SCAN_DEPTH_MAX)
        return scan_fail(s, "nested too deeply");
    s->p++; /* [ */
    scan_ws(s);
    if (s->p < s->end && *s->p == ']') {
        s->p++;
        return true;
    }
    for (;;) {
        scan_ws(s);
        if (!(fn ? fn(s, arg, NULL, depth) : scan_value(s, depth + 1)))
            return false;
        scan_ws(s);
        if (s->p < s->end && *s->p == ',') {
            s->p++;
            continue;
        }
        if (s->p < s->end && *s->p == ']') {
            s->p++;
            return true;
        }
        return scan_fail(s, "expected ',' or ']' in an array");
    }
}

static bool scan_value(scan *s, int depth)
{
    if (s->p >= s->end)
        return scan_fail(s, "unexpected end of the text");
    switch (*s->p) {
    case '{':
        return scan_object(s, depth, NULL, NULL);
    case '[':
        return scan_array(s, depth, NULL, NULL);
    case '"':
        return scan_string(s, NULL, NULL, 0);
    case 't':
        return scan_literal(s, "true");
    case 'f':
        return scan_literal(s, "false");
    case 'n':
        return scan_literal(s, "null");
    default:
        return scan_number(s, NULL, NULL);
    }
}

/* What the picked members say while the chunk is read. */
typedef struct pick {
    gm_bench_chunk *out;
    bool want_id;
    bool error;     /* a non-null "error" */
    bool error_msg; /* its message was found */
} pick;

static bool is_null(scan *s)
{
    return (size_t)(s->end - s->p) >= 4 && memcmp(s->p, "null", 4) == 0;
}

/* A string member counted as content when it is a string (null and others skipped). */
static bool content_string(scan *s, pick *k)
{
    if (s->p < s->end && *s->p == '"') {
        size_t n;
        if (!scan_string(s, &n, NULL, 0))
            return false;
        k->out->content_bytes += n;
        return true;
    }
    return scan_value(s, 2);
}

static bool delta_member(scan *s, void *arg, const char *key, int depth)
{
    if (strcmp(key, "content") == 0 || strcmp(key, "reasoning_content") == 0)
        return content_string(s, arg);
    return scan_value(s, depth + 1);
}

static bool choice_member(scan *s, void *arg, const char *key, int depth)
{
    pick *k = arg;
    if (strcmp(key, "text") == 0)
        return content_string(s, k);
    if (strcmp(key, "delta") == 0 && s->p < s->end && *s->p == '{')
        return scan_object(s, depth + 1, delta_member, k);
    if (strcmp(key, "finish_reason") == 0 && !is_null(s))
        k->out->finished = true;
    return scan_value(s, depth + 1);
}

static bool choice(scan *s, void *arg, const char *key, int depth)
{
    (void)key;
    if (s->p < s->end && *s->p == '{')
        return scan_object(s, depth + 1, choice_member, arg);
    return scan_value(s, depth + 1);
}

static bool usage_member(scan *s, void *arg, const char *key, int depth)
{
    pick *k = arg;
    bool pt = strcmp(key, "prompt_tokens") == 0, ct = strcmp(key, "completion_tokens") == 0;
    if ((pt || ct) && s->p < s->end && (*s->p == '-' || (*s->p >= '0' && *s->p <= '9'))) {
        bool integer;
        long long v;
        if (!scan_number(s, &integer, &v))
            return false;
        if (integer && v >= 0)
            *(pt ? &k->out->prompt_tokens : &k->out->completion_tokens) = v;
        return true;
    }
    return scan_value(s, depth + 1);
}

static bool error_member(scan *s, void *arg, const char *key, int depth)
{
    pick *k = arg;
    if ((strcmp(key, "message") == 0 || (!k->error_msg && strcmp(key, "detail") == 0)) &&
        s->p < s->end && *s->p == '"') {
        char msg[sizeof k->out->error];
        if (!scan_string(s, NULL, msg, sizeof msg))
            return false;
        /* "message" wins over "detail", whichever comes first. */
        if (strcmp(key, "message") == 0 || !k->error_msg) {
            memcpy(k->out->error, msg, sizeof msg);
            k->error_msg = strcmp(key, "message") == 0 ? true : k->error_msg;
        }
        return true;
    }
    return scan_value(s, depth + 1);
}

static bool top_member(scan *s, void *arg, const char *key, int depth)
{
    pick *k = arg;
    gm_bench_chunk *out = k->out;
    if (strcmp(key, "id") == 0 && k->want_id && s->p < s->end && *s->p == '"')
        return scan_string(s, NULL, out->id, sizeof out->id);
    if (strcmp(key, "choices") == 0 && s->p < s->end && *s->p == '[')
        return scan_array(s, depth + 1, choice, k);
    if (strcmp(key, "usage") == 0 && s->p < s->end && *s->p == '{')
        return scan_object(s, depth + 1, usage_member, k);
    if (strcmp(key, "error") == 0 && !is_null(s)) {
        k->error = true;
        if (s->p < s->end && *s->p == '"')
            return scan_string(s, NULL, out->error, sizeof out->error) && (k->error_msg = true);
        if (s->p < s->end && *s->p == '{')
            return scan_object(s, depth + 1, error_member, k);
    }
    return scan_value(s, depth + 1);
}

void gm_bench_chunk_parse(const char *data, size_t len, bool want_id, gm_bench_chunk *out)
{
    memset(out, 0, sizeof *out);
    out->prompt_tokens = out->completion_tokens = -1;
    if (len == 6 && memcmp(data, "[DONE]", 6) == 0) {
        out->kind = GM_CHUNK_DONE;
        return;
    }
    scan s = {.p = data, .end = data + len};
    pick k = {.out = out, .want_id = want_id};
    scan_ws(&s);
    bool ok;
    if (s.p < s.end && *s.p == '{') {
        ok = scan_object(&s, 1, top_member, &k);
    } else {
        ok = scan_value(&s, 1) && scan_fail(&s, "not a JSON object");
    }
    if (ok) {
        scan_ws(&s);
        if (s.p != s.end)
            ok = scan_fail(&s, "end of file expected");
    }
    if (!ok) {
        gm_bench_chunk m = {
            .kind = GM_CHUNK_MALFORMED, .prompt_tokens = -1, .completion_tokens = -1};
        snprintf(m.error, sizeof m.error, "%s", s.why ? s.why : "malformed");
        *out = m;
        return;
    }
    if (k.error) {
        bool had = k.error_msg || out->error[0];
        char msg[sizeof out->error];
        memcpy(msg, out->error, sizeof msg);
        gm_bench_chunk e = {.kind = GM_CHUNK_ERROR, .prompt_tokens = -1, .completion_tokens = -1};
        if (had && msg[0])
            set_text(e.error, sizeof e.error, msg, strlen(msg));
        else if (had)
            e.error[0] = '\0';
        else
            snprintf(e.error, sizeof e.error, "an error without a message");
        *out = e;
        return;
    }
    out->kind = GM_CHUNK_DATA;
    out->has_usage = out->completion_tokens >= 0;
    if (out->id[0]) {
        char raw[sizeof out->id];
        memcpy(raw, out->id, sizeof raw);
        set_text(out->id, sizeof out->id, raw, strlen(raw));
    }
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
