/* replay.c - a main for the fuzz harnesses outside libFuzzer: runs LLVMFuzzerTestOneInput once
 * on every file named on the command line (a directory: on each file in it, in name order), so
 * the committed corpora, with the inputs of every defect the fuzzers found, run as regression
 * tests in the gcc and ASan builds (ctest fuzz/replay_*). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    size_t cap = 4096, len = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (!buf)
            abort();
        if (len == cap) {
            cap *= 2;
            buf = realloc(buf, cap);
            continue;
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        if (n == 0)
            break;
        len += n;
    }
    fclose(f);
    /* An exact-size copy, so ASan sees a read one byte past the input as libFuzzer would. */
    uint8_t *exact = malloc(len ? len : 1);
    if (!exact)
        abort();
    memcpy(exact, buf, len);
    free(buf);
    LLVMFuzzerTestOneInput(exact, len);
    free(exact);
    return 0;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    unsigned runs = 0, failed = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            failed++;
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            failed += run_file(argv[i]) != 0;
            runs++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        if (!d) {
            perror(argv[i]);
            failed++;
            continue;
        }
        char **names = NULL;
        size_t n = 0;
        for (struct dirent *e; (e = readdir(d));) {
            if (e->d_name[0] == '.')
                continue;
            names = realloc(names, (n + 1) * sizeof *names);
            if (!names)
                abort();
            names[n++] = strdup(e->d_name);
        }
        closedir(d);
        if (n)
            qsort(names, n, sizeof *names, name_cmp);
        for (size_t k = 0; k < n; k++) {
            size_t len = strlen(argv[i]) + strlen(names[k]) + 2;
            char *path = malloc(len);
            if (!path)
                abort();
            snprintf(path, len, "%s/%s", argv[i], names[k]);
            failed += run_file(path) != 0;
            runs++;
            free(path);
            free(names[k]);
        }
        free(names);
    }
    printf("replayed %u inputs, %u unreadable\n", runs, failed);
    return failed || runs == 0 ? 1 : 0;
}
