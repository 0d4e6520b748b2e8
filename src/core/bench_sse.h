/* bench_sse.h - an incremental parser of Server-Sent Events (the WHATWG text/event-stream
 * format), as OpenAI-compatible servers stream completions: `data: {json}\n\n` per chunk, a
 * final `data: [DONE]\n\n`, `:` comment lines. It takes the bytes in whatever pieces the network
 * gives them (a line, an event or a UTF-8 sequence may be cut anywhere) and calls back once per
 * complete event with its data.
 *
 * What it follows of the format: lines end in LF, CRLF or a lone CR (a CRLF cut between two
 * pieces is one line end); a leading byte order mark is dropped; a line is a field `name:value`
 * (one space after the colon is dropped), `name` alone (an empty value), or a comment (starts
 * with `:`); `data` lines accumulate, joined by LF; `event` names the event; `id` and `retry` are
 * read and ignored; a blank line dispatches the event when it has data (an event with no data
 * line is dropped, as the standard says).
 *
 * Bounded: a line or an event's data longer than the limit is an error (GM_EPARSE), so a server
 * answering a large body without line breaks (an HTML page, binary) is refused rather than
 * buffered. Feeding arbitrary bytes is safe (the fuzzing target).
 *
 * Not thread-safe; one parser per stream. */
#ifndef GM_BENCH_SSE_H
#define GM_BENCH_SSE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"
#include "gpumon.h"

/* The default and the largest limit on a line and on an event's data, bytes. */
#define GM_SSE_DEFAULT_MAX (1u << 20)

/* Called per dispatched event: event is its `event:` name ("" when none: a "message"), data
 * its data lines joined by LF, NUL-terminated, len bytes (embedded NULs possible). A non-zero
 * return stops the feed, which returns it. */
typedef int (*gm_sse_event_fn)(void *arg, const char *event, const char *data, size_t len);

typedef struct gm_sse {
    gm_buf line;            /* the line being read (without its end) */
    gm_buf data;            /* the data of the event being built */
    char event[64];         /* its event name, truncated */
    bool have_data;         /* a data line came since the last dispatch */
    bool cr;                /* the previous byte was a CR: an LF right after it ends nothing */
    bool started;           /* past the first bytes (the byte order mark check) */
    size_t bom;             /* bytes of a byte order mark matched so far */
    size_t max;             /* limit on a line and on an event's data */
    unsigned long events;   /* events dispatched */
    unsigned long comments; /* comment lines seen */
    unsigned long lines;    /* lines read */
} gm_sse;

/* Zeroes p for a new stream with a limit of max bytes (0: GM_SSE_DEFAULT_MAX). Allocates
 * nothing yet. */
void gm_sse_init(gm_sse *p, size_t max);
/* Frees what p holds; p may be initialised again. */
void gm_sse_free(gm_sse *p);
/* Starts a new stream with the same limit, keeping the buffers' memory. */
void gm_sse_reset(gm_sse *p);

/* Parses n more bytes, calling fn for each event they complete. Returns GM_OK, GM_EPARSE (a
 * line or an event over the limit: not an event stream; the parser stays failed), GM_ENOMEM, or
 * the first non-zero value fn returned (the rest of the bytes are then not read). */
int gm_sse_feed(gm_sse *p, const void *bytes, size_t n, gm_sse_event_fn fn, void *arg);

/* The stream ended. A server that closes without the blank line after its last event (seen in
 * the wild after `data: [DONE]`) would lose that event under the standard; here an event whose
 * last data line was complete is dispatched, and an unterminated last line is taken as a line.
 * Returns what gm_sse_feed would; *partial (may be NULL) is set when bytes were left that made
 * no event (a field cut short, an event with no data). */
int gm_sse_finish(gm_sse *p, gm_sse_event_fn fn, void *arg, bool *partial);

#endif
