/* fuzz.h - what every harness in tests/fuzz shares: the libFuzzer entry point, checks that
 * hold in every build (assert() is compiled out of RelWithDebInfo), and a NUL-terminated copy
 * of the input for functions that take a C string. */
#ifndef GM_FUZZ_H
#define GM_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Aborts with the failed condition, so libFuzzer saves the input as a crash. */
#define FUZZ_CHECK(cond)                                                             \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                 \
        }                                                                            \
    } while (0)

/* A malloc'd copy of data[0..size) with a NUL after it (embedded NULs end the string early,
 * as they would for the function under test). Never NULL. */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        abort();
    if (size)
        memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* True when s (cap bytes) holds a NUL: a fixed-size text field was left terminated. */
static inline int fuzz_terminated(const char *s, size_t cap)
{
    return memchr(s, '\0', cap) != NULL;
}

#endif
