/* fuzz_utf8.c - the UTF-8 validator and repair (base/utf8.c) that stand between bytes from
 * clients or drivers and every JSON document. Checks, for any bytes:
 *   - gm_utf8_valid agrees with a decoder written here from RFC 3629 and with gm_utf8_feed
 *     given the same bytes in pieces (split points taken from the input);
 *   - gm_utf8_repair's output is always valid UTF-8, terminated, within its capacity, equal to
 *     the input when that was valid, and a prefix of the full repair when the room is short;
 *   - gm_json_text, which repairs what jansson refuses, always gives a string or null. */
#include <jansson.h>

#include "base/json.h"
#include "base/utf8.h"
#include "fuzz.h"

/* Straight from RFC 3629 section 4: decode each sequence and check the code point. */
static bool ref_valid(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t b = s[i];
        size_t len;
        uint32_t cp;
        if (b < 0x80) {
            i++;
            continue;
        } else if ((b & 0xE0) == 0xC0) {
            len = 2;
            cp = b & 0x1F;
        } else if ((b & 0xF0) == 0xE0) {
            len = 3;
            cp = b & 0x0F;
        } else if ((b & 0xF8) == 0xF0) {
            len = 4;
            cp = b & 0x07;
        } else {
            return false;
        }
        if (i + len > n)
            return false;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return false;
            cp = cp << 6 | (s[i + k] & 0x3F);
        }
        static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min_cp[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += len;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    bool valid = gm_utf8_valid(s, size);
    FUZZ_CHECK(valid == ref_valid(data, size));

    /* The same bytes in pieces of 1 to 8 bytes, the lengths drawn from the bytes themselves. */
    gm_utf8_stream st = {0};
    bool fed = true;
    for (size_t i = 0; i < size && fed;) {
        size_t piece = 1 + data[(i * 7) % size] % 8;
        if (piece > size - i)
            piece = size - i;
        fed = gm_utf8_feed(&st, data + i, piece);
        i += piece;
    }
    FUZZ_CHECK(valid == (fed && gm_utf8_complete(&st)));

    /* Room for every byte to become U+FFFD. */
    size_t cap = 3 * size + 1;
    char *full = malloc(cap);
    FUZZ_CHECK(full);
    size_t n = gm_utf8_repair(full, cap, s, size);
    FUZZ_CHECK(n < cap && full[n] == '\0');
    FUZZ_CHECK(gm_utf8_valid(full, n));
    if (valid)
        FUZZ_CHECK(n == size && memcmp(full, s, size) == 0);

    /* Short of room: a valid prefix of the full repair, never a character cut in two. */
    size_t small_cap = 1 + (size ? data[0] % 16 : 0);
    char small[17];
    size_t m = gm_utf8_repair(small, small_cap, s, size);
    FUZZ_CHECK(m < small_cap && small[m] == '\0');
    FUZZ_CHECK(gm_utf8_valid(small, m));
    FUZZ_CHECK(m <= n && memcmp(small, full, m) == 0);
    FUZZ_CHECK(m + 5 > small_cap || m == n); /* it stops only when the next one does not fit */
    free(full);

    /* A NUL-terminated copy, as the snapshot's text fields hold it. */
    char *cs = fuzz_cstr(data, size);
    json_t *j = gm_json_text(cs, size);
    FUZZ_CHECK(j && (json_is_string(j) || json_is_null(j)));
    json_decref(j);
    free(cs);
    return 0;
}
