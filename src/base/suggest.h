/* suggest.h - "did you mean ...?": the known word closest to a mistyped one, for the messages
 * that answer an unknown command, option or action. */
#ifndef GM_SUGGEST_H
#define GM_SUGGEST_H

#include <stddef.h>

/* Edits that turn a into b: insertions, deletions, substitutions and swaps of two neighbouring
 * characters (Damerau-Levenshtein, optimal string alignment), byte by byte. Words longer than
 * GM_SUGGEST_MAX_LEN count as infinitely far (SIZE_MAX). */
size_t gm_edit_distance(const char *a, const char *b);

#define GM_SUGGEST_MAX_LEN 64

/* The candidate closest to word when it is close enough to be a typo of it (at most 1 edit for
 * words of up to 4 characters, 2 up to 8, 3 beyond), else NULL. word may also be the start of
 * exactly one candidate ("hist" -> "history"). Ties go to the earlier candidate; NULL entries
 * are skipped. */
const char *gm_suggest(const char *word, const char *const *candidates, size_t n);

#endif
