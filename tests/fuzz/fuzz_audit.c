/* fuzz_audit.c - snapshot files as `gpumon diff` reads them (core/audit.c): gm_audit_parse
 * (JSON, then the schema checks) and, for two valid snapshots, gm_audit_diff with its text and
 * JSON reports. The input is one document, or two separated by a line "----" (before, then
 * after). Checks that a diff of two valid snapshots always succeeds, and that a snapshot
 * compared with itself has no difference at all. */
#include <jansson.h>

#include "core/audit.h"
#include "fuzz.h"

static FILE *devnull(void)
{
    static FILE *f;
    if (!f)
        f = fopen("/dev/null", "w");
    FUZZ_CHECK(f);
    return f;
}

static void diff(const json_t *b, const json_t *a, bool strict, bool same)
{
    gm_audit_tolerance t;
    gm_audit_tolerance_init(&t);
    t.strict = strict;
    gm_audit_verdict v;
    gm_error err = {0};
    int rc = gm_audit_diff(b, a, &t, &v, &err);
    FUZZ_CHECK(rc == GM_OK); /* both validated: nothing left to refuse */
    FUZZ_CHECK(v.report);
    const json_t *items = json_object_get(v.report, "differences");
    FUZZ_CHECK(json_array_size(items) == (size_t)v.changes + v.warnings + v.notes);
    FUZZ_CHECK(v.changed == (v.changes > 0 || (strict && v.warnings > 0)));
    if (same)
        FUZZ_CHECK(v.changes == 0 && v.warnings == 0 && v.notes == 0 && !v.changed);
    gm_audit_print_text(devnull(), &v);
    char *text = json_dumps(v.report, JSON_INDENT(2));
    FUZZ_CHECK(text);
    free(text);
    gm_audit_verdict_free(&v);
    FUZZ_CHECK(v.report == NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char sep[] = "\n----\n";
    const char *text = (const char *)data;
    const char *cut = size >= sizeof sep - 1 ? memmem(text, size, sep, sizeof sep - 1) : NULL;
    size_t blen = cut ? (size_t)(cut - text) : size;
    const char *atext = cut ? cut + sizeof sep - 1 : text;
    size_t alen = cut ? size - blen - (sizeof sep - 1) : size;

    json_t *before = NULL, *after = NULL;
    gm_error err = {0};
    int rb = gm_audit_parse(text, blen, "before", &before, &err);
    if (memchr(text, '\0', blen))
        FUZZ_CHECK(rb < 0); /* JSON text holds no NUL byte */
    if (rb < 0)
        FUZZ_CHECK(rb == GM_EPARSE && !before && strncmp(err.msg, "before: ", 8) == 0);
    else
        FUZZ_CHECK(gm_audit_validate(before, &err) == GM_OK);
    int ra = gm_audit_parse(atext, alen, "after", &after, &err);
    if (ra < 0)
        FUZZ_CHECK(ra == GM_EPARSE && !after);

    if (before) {
        diff(before, before, false, true);
        diff(before, before, true, true);
    }
    if (before && after && cut) {
        diff(before, after, false, false);
        diff(before, after, true, false);
        diff(after, before, false, false);
    }
    json_decref(before);
    json_decref(after);
    return 0;
}
