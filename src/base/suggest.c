/* suggest.c - the closest known word to a mistyped one (edit distance over small words). */
#include "base/suggest.h"

#include <stdint.h>
#include <string.h>

size_t gm_edit_distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    if (n > GM_SUGGEST_MAX_LEN || m > GM_SUGGEST_MAX_LEN)
        return SIZE_MAX;
    /* Three rows of the dynamic programme: i-2, i-1, i. */
    size_t rows[3][GM_SUGGEST_MAX_LEN + 1];
    for (size_t j = 0; j <= m; j++)
        rows[0][j] = j;
    for (size_t i = 1; i <= n; i++) {
        size_t *cur = rows[i % 3], *prev = rows[(i - 1) % 3], *prev2 = rows[(i - 2 + 3) % 3];
        cur[0] = i;
        for (size_t j = 1; j <= m; j++) {
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            size_t best = prev[j] + 1; /* delete */
            if (cur[j - 1] + 1 < best)
                best = cur[j - 1] + 1; /* insert */
            if (prev[j - 1] + cost < best)
                best = prev[j - 1] + cost; /* substitute */
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                prev2[j - 2] + 1 < best)
                best = prev2[j - 2] + 1; /* swap */
            cur[j] = best;
        }
    }
    return rows[n % 3][m];
}

const char *gm_suggest(const char *word, const char *const *candidates, size_t n)
{
    size_t len = strlen(word);
    if (len == 0)
        return NULL;
    size_t allowed = len <= 4 ? 1 : len <= 8 ? 2 : 3;
    const char *best = NULL, *prefixed = NULL;
    size_t best_d = SIZE_MAX, nprefixed = 0;
    for (size_t i = 0; i < n; i++) {
        if (!candidates[i])
            continue;
        if (strncmp(candidates[i], word, len) == 0 && candidates[i][len]) {
            prefixed = candidates[i];
            nprefixed++;
        }
        size_t d = gm_edit_distance(word, candidates[i]);
        if (d < best_d) {
            best_d = d;
            best = candidates[i];
        }
    }
    if (best && best_d <= allowed)
        return best;
    return nprefixed == 1 ? prefixed : NULL;
}
