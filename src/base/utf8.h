/* utf8.h - the one UTF-8 validator: whole strings, streams that arrive in pieces (WebSocket
 * text), and a repair that keeps what is valid and marks the rest with U+FFFD, so a stray byte
 * from a client or a driver never fails a whole JSON document. Strict RFC 3629: no overlong
 * forms, no surrogates, nothing above U+10FFFF. */
#ifndef GM_UTF8_H
#define GM_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Incremental state; zero-initialise before the first gm_utf8_feed. */
typedef struct gm_utf8_stream {
    uint8_t need;   /* continuation bytes still expected */
    uint8_t lo, hi; /* range the next continuation byte must fall in */
} gm_utf8_stream;

/* Feeds n bytes; false at the first byte that cannot be valid UTF-8 (the state is then
 * meaningless). A sequence may end in one call and go on in the next. */
bool gm_utf8_feed(gm_utf8_stream *st, const uint8_t *p, size_t n);

/* True when no sequence is left half-finished. */
bool gm_utf8_complete(const gm_utf8_stream *st);

/* True when s[0..n) is complete, valid UTF-8 (NUL bytes count as valid characters). */
bool gm_utf8_valid(const char *s, size_t n);

/* Length of the valid sequence at s[0..n) (1 to 4); 0 when the byte at s cannot begin one
 * there; -1 when it is a valid beginning cut short by the end (n bytes). n >= 1. */
int gm_utf8_seq_len(const uint8_t *s, size_t n);

/* Copies s[0..n) into dst (cap >= 1 bytes, always NUL-terminated), replacing every byte that is
 * not part of a valid sequence, and a sequence cut short by the end of s, with U+FFFD. Stops
 * before a character that would not fit whole. Returns the bytes written, without the NUL. */
size_t gm_utf8_repair(char *dst, size_t cap, const char *s, size_t n);

/* A GPU's name in at most width bytes (+ NUL) into out, for a table column: as it is when it
 * fits; else without a leading "NVIDIA " (every GPU here is one); then cut after the last whole
 * word that fits; a first word longer than width is cut at width, never inside a character.
 * Trailing spaces and dashes are dropped. */
void gm_utf8_shorten_name(const char *name, size_t width, char *out, size_t outlen);

#endif
