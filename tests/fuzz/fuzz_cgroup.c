/* fuzz_cgroup.c - the /proc/<pid>/cgroup parser (collect/cgroup.c), which reads a file any
 * process on the node shapes by where it runs. Checks, for any bytes: both fields stay
 * terminated; a pod UID is 36 characters 8-4-4-4-12 or 32 hex digits; a container ID is 12 to 64
 * hex digits or dashes; the answer says "found" exactly when a field is set; and a line that
 * parsed alone parses the same with a line of nothing around it. */
#include "collect/cgroup.h"
#include "fuzz.h"

static int is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static void check_ident(const gm_cgroup_ident *id, bool found)
{
    FUZZ_CHECK(fuzz_terminated(id->pod_uid, sizeof id->pod_uid));
    FUZZ_CHECK(fuzz_terminated(id->container_id, sizeof id->container_id));
    FUZZ_CHECK(found == (id->pod_uid[0] || id->container_id[0]));
    size_t n = strlen(id->pod_uid);
    FUZZ_CHECK(n == 0 || n == 32 || n == 36);
    for (size_t i = 0; i < n; i++) {
        bool dash = n == 36 && (i == 8 || i == 13 || i == 18 || i == 23);
        FUZZ_CHECK(dash ? id->pod_uid[i] == '-' : is_hex(id->pod_uid[i]));
    }
    n = strlen(id->container_id);
    FUZZ_CHECK(n == 0 || (n >= 12 && n <= 64));
    for (size_t i = 0; i < n; i++)
        FUZZ_CHECK(is_hex(id->container_id[i]) || id->container_id[i] == '-');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gm_cgroup_ident id;
    bool found = gm_cgroup_parse((const char *)data, size, &id);
    check_ident(&id, found);

    /* The same text after an empty line and before a host line: a line that placed the
     * process in a pod still does (the first pod line wins, and these two have none). */
    if (size < 8192) {
        char *text = malloc(size + 32);
        FUZZ_CHECK(text != NULL);
        memcpy(text, "\n", 1);
        if (size)
            memcpy(text + 1, data, size);
        memcpy(text + 1 + size, "\n0::/init.scope\n", 16);
        gm_cgroup_ident again;
        bool found2 = gm_cgroup_parse(text, size + 17, &again);
        check_ident(&again, found2);
        if (id.pod_uid[0] && !memchr(data, '\n', size))
            FUZZ_CHECK(strcmp(again.pod_uid, id.pod_uid) == 0);
        free(text);
    }
    return 0;
}
