/* timeline.h - the one writer of a session's timeline, the samples it holds in order, in its
 * two forms: JSON (the "timeline" array of GET /api/sessions/{id}, `record -o` and
 * `history export --format json`: [{"t": seconds, "gpus": {"<index>": {"<metric>": value|null,
 * ...}}}, ...]) and CSV (`history export --format csv`: one row per GPU per sample, columns
 * time (ISO 8601 UTC, ms), t_s, gpu, utilization_percent, memory_used_mib,
 * memory_used_percent, temperature_c, power_w, energy_j, simulated; each number with a fixed
 * number of decimals, empty where absent). It is fed one sample at a time, from a session in memory
 * (gm_timeline_add_session) or from the store's rows, and writes text as it goes: never a tree of
 * objects per value, and with a file, never the whole text in memory. */
#ifndef GM_TIMELINE_H
#define GM_TIMELINE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "base/buf.h"
#include "core/session.h"

typedef enum gm_timeline_format {
    GM_TIMELINE_JSON,        /* compact, as the API answers */
    GM_TIMELINE_JSON_PRETTY, /* two-space indents, as jansson's JSON_INDENT(2), for files */
    GM_TIMELINE_CSV,
} gm_timeline_format;

typedef struct gm_timeline gm_timeline;

/* Starts a timeline in format f written into out; with file, the text is written to file
 * whenever out holds more than 64 KiB, and at the end. JSON: the bare array; CSV: the header
 * line first. GM_OK or GM_ENOMEM. */
int gm_timeline_open(gm_timeline_format f, gm_buf *out, FILE *file, gm_timeline **tl);

/* Starts doc (a JSON object, not stolen) with its timeline: doc as JSON in format f (JSON or
 * JSON_PRETTY) with a last member "timeline" holding the array; gm_timeline_close closes both.
 * GM_OK, GM_EINVAL (doc is not an object, or f is CSV) or GM_ENOMEM. */
int gm_timeline_open_doc(gm_timeline_format f, const json_t *doc, gm_buf *out, FILE *file,
                         gm_timeline **tl);

/* One sample: its offset t_s (seconds from the start) and, for each of its ngpus GPUs
 * (gpu[k], a driver index), GM_SM__COUNT values at values[k * GM_SM__COUNT + m] (NaN: absent,
 * written null in JSON and empty in CSV). */
void gm_timeline_add(gm_timeline *tl, double t_s, size_t ngpus, const unsigned *gpu,
                     const double *values);

/* Every sample of s's timeline. */
void gm_timeline_add_session(gm_timeline *tl, const gm_session *s);

/* The session's start (epoch ms), from which CSV rows get their absolute time (without it the
 * time column is empty), and whether its GPUs were simulated (the CSV's last column). Call
 * before adding samples; gm_timeline_add_session sets the start from its session. */
void gm_timeline_set_start_ms(gm_timeline *tl, int64_t started_ms);
void gm_timeline_set_simulated(gm_timeline *tl, bool simulated);

/* Samples added so far. */
size_t gm_timeline_count(const gm_timeline *tl);

/* Ends the text (closing the array and the document; a newline at the end of a pretty document
 * or a file), flushes it to the file when there is one, and frees tl. GM_OK, GM_ENOMEM when the
 * buffer failed, GM_EIO when the file could not be written (err says why). */
int gm_timeline_close(gm_timeline *tl, gm_error *err);

#endif
