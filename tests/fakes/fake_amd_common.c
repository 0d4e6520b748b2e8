/* fake_amd_common.c - the scenario, failure injection and per-read numbers both fake AMD
 * libraries share (fake_amd_common.h). */
#include "fake_amd_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

fake_amd F = {.mu = PTHREAD_MUTEX_INITIALIZER};

static json_t *default_scenario(void)
{
    return json_pack("{s:[{s:s, s:s, s:s, s:i, s:I, s:I}]}", "gpus", "name", "AMD Instinct MI300X",
                     "unique_id", "5f2c7a31b4e0d001", "bus_id", "0000:83:00.0", "busy", 10,
                     "vram_total", (json_int_t)206141652992, "vram_used", (json_int_t)1073741824);
}

int fake_amd_init(const char *env, const char *who, int bad_file)
{
    int rc = 0;
    pthread_mutex_lock(&F.mu);
    F.init_calls++;
    if (F.refcount++ == 0) {
        const char *path = getenv(env);
        json_error_t je;
        F.scenario = path && *path ? json_load_file(path, 0, &je) : default_scenario();
        memset(F.reads, 0, sizeof F.reads);
        json_t *ie = F.scenario ? json_object_get(F.scenario, "init_error") : NULL;
        if (!F.scenario) {
            fprintf(stderr, "fake %s: %s: %s\n", who, path, je.text);
            rc = bad_file;
        } else if (json_is_integer(ie)) {
            rc = (int)json_integer_value(ie);
        }
        if (rc) {
            json_decref(F.scenario);
            F.scenario = NULL;
            F.refcount = 0;
        }
    }
    pthread_mutex_unlock(&F.mu);
    return rc;
}

void fake_amd_shut_down(void)
{
    pthread_mutex_lock(&F.mu);
    F.shutdown_calls++;
    if (F.refcount > 0 && --F.refcount == 0) {
        json_decref(F.scenario);
        F.scenario = NULL;
    }
    pthread_mutex_unlock(&F.mu);
}

json_t *fake_amd_top(const char *key)
{
    return F.scenario ? json_object_get(F.scenario, key) : NULL;
}

static bool listed(json_t *g, const char *call)
{
    json_t *a = json_object_get(g, "unsupported"), *v;
    size_t i;
    json_array_foreach(a, i, v)
    {
        if (json_is_string(v) &&
            (strcmp(json_string_value(v), call) == 0 || strcmp(json_string_value(v), "*") == 0))
            return true;
    }
    return false;
}

json_t *fake_amd_gpu(unsigned dv, const char *call, const fake_amd_codes *codes, int *rc)
{
    *rc = 0;
    if (!F.scenario) {
        *rc = codes->not_init;
        return NULL;
    }
    json_t *g = json_array_get(fake_amd_top("gpus"), dv);
    if (!g) {
        *rc = codes->no_gpu;
        return NULL;
    }
    json_t *gone = json_object_get(g, "gone_after");
    if (json_is_integer(gone) && dv < FAKE_AMD_MAX_GPUS && F.reads[dv] > json_integer_value(gone)) {
        /* Its sysfs files went with it: FILE_ERROR, or what "gone_status" says (the libraries
         * answer NOT_SUPPORTED for a file that is not there). */
        json_t *gs = json_object_get(g, "gone_status");
        *rc = json_is_integer(gs) ? (int)json_integer_value(gs) : codes->file_error;
        return NULL;
    }
    json_t *e = json_object_get(json_object_get(g, "errors"), call);
    if (json_is_integer(e)) {
        *rc = (int)json_integer_value(e);
        return NULL;
    }
    if (listed(g, call)) {
        *rc = codes->not_supported;
        return NULL;
    }
    return g;
}

void fake_amd_count_read(unsigned dv)
{
    if (dv < FAKE_AMD_MAX_GPUS)
        F.reads[dv]++;
}

bool fake_amd_num(json_t *g, unsigned dv, const char *key, double *out)
{
    json_t *v = json_object_get(g, key);
    if (json_is_array(v) && json_array_size(v))
        v = json_array_get(v, (dv < FAKE_AMD_MAX_GPUS ? F.reads[dv] - (F.reads[dv] > 0) : 0) %
                                  json_array_size(v));
    if (!json_is_number(v))
        return false;
    *out = json_number_value(v);
    return true;
}
