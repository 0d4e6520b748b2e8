/* bench_openai.h - the OpenAI-compatible wire format as `gpumon bench` speaks it
 * (/work/shared/notes/inference-bench.md): the two APIs and their paths, the prompts (JSONL files
 * or synthetic ones of a target length), the streaming request bodies, and what each streamed
 * chunk, error body and model list says. Pure functions over bytes: no network, no clock.
 *
 * Requests ask for an exact output length: `max_tokens` N with vLLM's and SGLang's
 * `ignore_eos: true` and `min_tokens: N`, streamed (`stream: true`) with a final usage chunk
 * (`stream_options: {"include_usage": true}`).
 *
 * Token counts without a tokenizer: a synthetic prompt of N tokens is N words drawn from a list
 * of short, frequent English words, each a single token (with its leading space) in the common
 * byte-pair vocabularies, so the model sees about N tokens (plus its chat template with the chat
 * API). The input length of a prompt from a file is estimated at one token per 4
 * bytes of its text; a server's `usage.prompt_tokens`, when it sends one, replaces both. */
#ifndef GM_BENCH_OPENAI_H
#define GM_BENCH_OPENAI_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpumon.h"

typedef enum gm_bench_api {
    GM_BENCH_API_COMPLETIONS, /* POST /v1/completions, choices[0].text */
    GM_BENCH_API_CHAT,        /* POST /v1/chat/completions, choices[0].delta.content */
} gm_bench_api;

/* "completions" or "chat" into *out: GM_OK or GM_EINVAL. */
int gm_bench_api_parse(const char *s, gm_bench_api *out);
const char *gm_bench_api_name(gm_bench_api api);
/* The request path: "/v1/completions" or "/v1/chat/completions". */
const char *gm_bench_api_path(gm_bench_api api);

/* Most prompts a file may hold, and most bytes it may have. */
#define GM_BENCH_PROMPTS_MAX     1000000
#define GM_BENCH_PROMPT_FILE_MAX (256u << 20)
/* Largest output length asked for (--output-tokens, a file's max_tokens), and input length. */
#define GM_BENCH_TOKENS_MAX 1000000

/* One prompt: a string for the completions API or a messages array for chat (a string is sent
 * to chat as one user message). */
typedef struct gm_bench_prompt {
    json_t *prompt;        /* string, or array of {"role", "content"} (owned) */
    unsigned max_tokens;   /* the file's "max_tokens"; 0: the benchmark's --output-tokens */
    unsigned input_tokens; /* approximated (see above) */
} gm_bench_prompt;

typedef struct gm_bench_prompts {
    gm_bench_prompt *v;
    size_t n;
} gm_bench_prompts;

void gm_bench_prompts_free(gm_bench_prompts *ps);

/* Parses JSONL: one JSON object per non-blank line with "prompt" (a string) or "messages" (a
 * non-empty array of {"role": string, "content": string}), and optionally "max_tokens" (1 to
 * GM_BENCH_TOKENS_MAX); other keys are ignored. "messages" needs the chat API. GM_OK, or
 * GM_EPARSE with err naming the line and what is wrong; GM_EINVAL for an empty file, more than
 * GM_BENCH_PROMPTS_MAX prompts; GM_ENOMEM. */
int gm_bench_prompts_parse(const char *text, size_t len, gm_bench_api api, gm_bench_prompts *out,
                           gm_error *err);
/* Reads and parses the file at path (at most GM_BENCH_PROMPT_FILE_MAX bytes); as
 * gm_file_read_all when it cannot be read, else as gm_bench_prompts_parse (messages name the
 * file). */
int gm_bench_prompts_load(const char *path, gm_bench_api api, gm_bench_prompts *out, gm_error *err);
/* count synthetic prompts of input_tokens words each (see above), different from each other,
 * the same for the same seed. GM_OK, GM_EINVAL (0 tokens or prompts, too many), GM_ENOMEM. */
int gm_bench_prompts_synthetic(unsigned input_tokens, size_t count, uint64_t seed,
                               gm_bench_prompts *out, gm_error *err);
/* Estimated tokens of a text: ceil(bytes / 4), at least 1 for a non-empty text. */
unsigned gm_bench_tokens_estimate(size_t bytes);

/* The streaming request body for prompt p with max_tokens tokens (exact: ignore_eos and
 * min_tokens set too), as compact JSON (malloc'd, *len its length). A string prompt sent to the
 * chat API becomes [{"role": "user", "content": prompt}]. NULL when out of memory. */
char *gm_bench_request_body(gm_bench_api api, const char *model, const gm_bench_prompt *p,
                            unsigned max_tokens, size_t *len);

/* What one streamed event says. */
typedef enum gm_bench_chunk_kind {
    GM_CHUNK_DATA,      /* a completion chunk (maybe without content: role only, usage only) */
    GM_CHUNK_DONE,      /* data: [DONE] */
    GM_CHUNK_ERROR,     /* {"error": ...}: the server failed mid-stream */
    GM_CHUNK_MALFORMED, /* not JSON, or not an object */
} gm_bench_chunk_kind;

typedef struct gm_bench_chunk {
    gm_bench_chunk_kind kind;
    /* Bytes of generated text: choices[].text (completions), choices[].delta.content and
     * .reasoning_content (chat). 0: a chunk without content (role, finish, usage). */
    size_t content_bytes;
    bool has_usage;
    long long prompt_tokens;     /* usage.prompt_tokens, -1 when absent */
    long long completion_tokens; /* usage.completion_tokens, -1 when absent */
    bool finished;               /* some choice has a finish_reason */
    char id[64];                 /* the chunk's "id" ("" when none), truncated */
    char error[256];             /* ERROR: the server's message; MALFORMED: what is wrong */
} gm_bench_chunk;

/* Classifies the data of one event. Never fails: what cannot be read is GM_CHUNK_MALFORMED.
 * want_id: copy the "id" (only the first chunk's is needed). */
void gm_bench_chunk_parse(const char *data, size_t len, bool want_id, gm_bench_chunk *out);

/* The message of an error body, for people: {"error": {"message"}}, {"error": "text"},
 * {"message"}, {"detail"} (FastAPI), else the body's start with control characters and invalid
 * UTF-8 replaced; "" for an empty body. Written to buf (always NUL-terminated). */
void gm_bench_error_text(const char *body, size_t len, char *buf, size_t cap);

/* The first model id of a GET /v1/models answer ({"data": [{"id": ...}, ...]}) into buf.
 * GM_OK, GM_EPARSE (not that shape: err says why), GM_ENOENT (no model listed). */
int gm_bench_models_first(const char *body, size_t len, char *buf, size_t cap, gm_error *err);

#endif
