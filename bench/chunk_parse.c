/* chunk_parse.c - the cost of reading one streamed chunk in `gpumon bench`'s client: the JSON
 * scanner (core/bench_openai.c, gm_bench_chunk_parse) over three chunks shaped as vLLM sends
 * them: a chat delta of one token, a completions chunk of five words, and a chat delta full of
 * escapes (\u00e9, a surrogate pair, quotes, a newline). The scanner runs once per chunk of
 * every stream, so nanoseconds here are the client's ceiling in requests/s.
 *
 * Build (after cmake --build build):
 *   cc -O2 -std=gnu11 -Iinclude -Isrc -o /tmp/chunk_parse bench/chunk_parse.c \
 *      build/libgpumon_core.a build/libgpumon_collect.a build/libgpumon_base.a -ljansson -lm
 * Usage: /tmp/chunk_parse [N]   (N parses per run, default 1000000; the best of 7 runs) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/bench_openai.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name, *text;
    } chunks[] = {
        {"chat, one token",
         "{\"id\":\"chatcmpl-8f2a9c1e4b7d\",\"object\":\"chat.completion.chunk\",\"created\":"
         "1732752000,\"model\":\"meta-llama/Llama-3.1-8B-Instruct\",\"choices\":[{\"index\":0,"
         "\"delta\":{\"content\":\" the\"},\"logprobs\":null,\"finish_reason\":null}]}"},
        {"completions, five words",
         "{\"id\":\"cmpl-8f2a9c1e4b7d\",\"object\":\"text_completion\",\"created\":1732752000,"
         "\"model\":\"meta-llama/Llama-3.1-8B-Instruct\",\"choices\":[{\"index\":0,\"text\":"
         "\" quick brown fox jumps over\",\"logprobs\":null,\"finish_reason\":null,"
         "\"stop_reason\":null}],\"usage\":null}"},
        {"chat, escapes",
         "{\"id\":\"chatcmpl-8f2a9c1e4b7d\",\"object\":\"chat.completion.chunk\",\"created\":"
         "1732752000,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":"
         "\"caf\\u00e9 \\\"quoted\\\"\\n\\ud83d\\ude00\"},\"finish_reason\":null}]}"},
    };
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 1000000;
    if (n <= 0) {
        fprintf(stderr, "usage: chunk_parse [N]\n");
        return 2;
    }
    size_t kept = 0; /* read back so the parses cannot be optimised away */
    for (size_t k = 0; k < sizeof chunks / sizeof *chunks; k++) {
        size_t len = strlen(chunks[k].text);
        double best = 1e30;
        for (int run = 0; run < 7; run++) {
            gm_bench_chunk c;
            double t0 = now_s();
            for (long i = 0; i < n; i++) {
                gm_bench_chunk_parse(chunks[k].text, len, i == 0, &c);
                kept += c.content_bytes;
            }
            double dt = now_s() - t0;
            if (dt < best)
                best = dt;
        }
        printf("%-24s %3zu bytes  %7.1f ns per chunk (best of 7 x %ld)\n", chunks[k].name, len,
               best / (double)n * 1e9, n);
    }
    return kept == 0;
}
