/* test_fleet.c - the fleet model on canned Prometheus answers: the PromQL it asks, nodes built
 * from targets and GPU series (a down target under its node's earlier name, a target without
 * Hostname, a node with two targets), idle GPUs under the default rule (utilization under 30 %,
 * memory under 50 %) and other thresholds, aggregates and health, the choice of a node (most idle
 * GPUs, then lowest mean utilization, then name; never a node with a target down) with every node's
 * reason, and the JSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fleet.h"

static const gm_fleet_thresholds default_rule = {GM_FLEET_MAX_UTIL_DEFAULT,
                                                 GM_FLEET_MAX_MEM_DEFAULT};

/* ---- canned answers ----------------------------------------------------------------------- */

/* An instant vector answer's data; rows are "labels JSON", "value" pairs, NULL-terminated. */
static json_t *vector(const char *const *rows)
{
    json_t *result = json_array();
    for (size_t i = 0; rows[i]; i += 2) {
        json_error_t e;
        json_t *m = json_loads(rows[i], 0, &e);
        if (!m)
            fail_msg("bad labels %s: %s", rows[i], e.text);
        json_array_append_new(
            result, json_pack("{s:o, s:[f,s]}", "metric", m, "value", 1764148800.0, rows[i + 1]));
    }
    return json_pack("{s:s, s:o}", "resultType", "vector", "result", result);
}

static void add(gm_fleet *f, gm_fleet_query q, const char *const *rows)
{
    json_t *d = vector(rows);
    gm_error err = {0};
    if (gm_fleet_add(f, q, d, &err) < 0)
        fail_msg("add: %s", err.msg);
    json_decref(d);
}

/* Labels as the two GPU queries answer them: GM_FLEET_Q_GPUS aggregates utilization to the
 * identity labels (no name), GM_FLEET_Q_READINGS the other series to name, instance, Hostname
 * and gpu. */
#define HOST(h) ",\"Hostname\":\"" h "\""
#define ID(inst, host, gpu)                                                       \
    "{\"instance\":\"" inst "\",\"gpu\":\"" gpu "\",\"UUID\":\"GPU-" inst "-" gpu \
    "\",\"modelName\":\"NVIDIA H100\"" host "}"
#define GPU(name, inst, host, gpu) \
    "{\"__name__\":\"DCGM_FI_DEV_" name "\",\"instance\":\"" inst "\",\"gpu\":\"" gpu "\"" host "}"
/* A GPU's utilization (%), for GM_FLEET_Q_GPUS. */
#define UTIL(inst, host, gpu, util) ID(inst, host, gpu), util
/* Its framebuffer used and free (MiB), power (W) and temperature (C), for ..._READINGS. */
#define READ(inst, host, gpu, used, free_, power, temp)                            \
    GPU("FB_USED", inst, host, gpu), used, GPU("FB_FREE", inst, host, gpu), free_, \
        GPU("POWER_USAGE", inst, host, gpu), power, GPU("GPU_TEMP", inst, host, gpu), temp

/* Adds the answers of both GPU queries. */
static void add_gpus(gm_fleet *f, const char *const *ids, const char *const *readings)
{
    add(f, GM_FLEET_Q_GPUS, ids);
    add(f, GM_FLEET_Q_READINGS, readings);
}

static gm_fleet *fleet(void)
{
    gm_fleet *f = NULL;
    gm_error err = {0};
    assert_int_equal(gm_fleet_new(&f, &err), GM_OK);
    /* Targets: a, b, d, e, f, g1 up; c and g2 down. */
    const char *up[] = {"{\"__name__\":\"up\",\"instance\":\"a:9400\",\"job\":\"gpumon\"}",
                        "1",
                        "{\"__name__\":\"up\",\"instance\":\"b:9400\",\"job\":\"gpumon\"}",
                        "1",
                        "{\"__name__\":\"up\",\"instance\":\"c:9400\",\"job\":\"gpumon\"}",
                        "0",
                        "{\"__name__\":\"up\",\"instance\":\"d:9400\",\"job\":\"gpumon\"}",
                        "1",
                        "{\"__name__\":\"up\",\"instance\":\"e:9400\",\"job\":\"gpumon\"}",
                        "1",
                        "{\"__name__\":\"up\",\"instance\":\"f:9400\",\"job\":\"gpumon\"}",
                        "1",
                        "{\"__name__\":\"up\",\"instance\":\"g1:9400\",\"job\":\"gpumon\"}",
                        "1",
                        "{\"__name__\":\"up\",\"instance\":\"g2:9400\",\"job\":\"gpumon\"}",
                        "0",
                        NULL};
    add(f, GM_FLEET_Q_UP, up);
    const char *when[] = {"{\"instance\":\"a:9400\",\"job\":\"gpumon\"}", "1764148799.5",
                          "{\"instance\":\"c:9400\",\"job\":\"gpumon\"}", "1764148790", NULL};
    add(f, GM_FLEET_Q_SCRAPE_TIME, when);
    /* c and g2 are down: their names come from their earlier series. */
    const char *names[] = {"{\"instance\":\"a:9400\",\"Hostname\":\"node-a\"}",
                           "2",
                           "{\"instance\":\"c:9400\",\"Hostname\":\"node-c\"}",
                           "2",
                           "{\"instance\":\"g2:9400\",\"Hostname\":\"node-g\"}",
                           "1",
                           NULL};
    add(f, GM_FLEET_Q_NAMES, names);
    const char *ids[] = {
        /* node-a: GPU 0 busy (87 %, half its memory: not below 50 %), GPU 1 idle. */
        UTIL("a:9400", HOST("node-a"), "0", "87"), UTIL("a:9400", HOST("node-a"), "1", "3"),
        /* node-b: two idle GPUs, mean 15 %. */
        UTIL("b:9400", HOST("node-b"), "0", "10"), UTIL("b:9400", HOST("node-b"), "1", "20"),
        /* d:9400 has no Hostname label: a node named by its instance. */
        UTIL("d:9400", "", "0", "0"),
        /* node-e: three GPUs, the gpu labels out of order; GPU 2's utilization is NaN. */
        UTIL("e:9400", HOST("node-e"), "10", "95"), UTIL("e:9400", HOST("node-e"), "2", "NaN"),
        UTIL("e:9400", HOST("node-e"), "1", "0"),
        /* node-f: ties node-b (two idle, mean 15 %): node-b comes first by name. */
        UTIL("f:9400", HOST("node-f"), "0", "5"), UTIL("f:9400", HOST("node-f"), "1", "25"),
        /* node-g: four idle GPUs through g1, but its other target g2 is down. */
        UTIL("g1:9400", HOST("node-g"), "0", "0"), UTIL("g1:9400", HOST("node-g"), "1", "0"),
        UTIL("g1:9400", HOST("node-g"), "2", "0"), UTIL("g1:9400", HOST("node-g"), "3", "0"), NULL};
    const char *readings[] = {
        READ("a:9400", HOST("node-a"), "0", "40000", "40000", "500", "64"),
        READ("a:9400", HOST("node-a"), "1", "1", "79999", "70", "31"),
        GPU("XID_ERRORS", "a:9400", HOST("node-a"), "0"), "0",
        GPU("XID_ERRORS", "a:9400", HOST("node-a"), "1"), "0",
        READ("b:9400", HOST("node-b"), "0", "100", "79900", "90", "40"),
        READ("b:9400", HOST("node-b"), "1", "100", "79900", "95", "41"),
        /* d's power is not reported, nor its temperature. */
        GPU("FB_USED", "d:9400", "", "0"), "0", GPU("FB_FREE", "d:9400", "", "0"), "1000",
        /* node-e: all three with a health problem. */
        READ("e:9400", HOST("node-e"), "10", "70000", "10000", "600", "70"),
        READ("e:9400", HOST("node-e"), "2", "100", "79900", "80", "72"),
        READ("e:9400", HOST("node-e"), "1", "100", "79900", "80", "35"),
        GPU("XID_ERRORS", "e:9400", HOST("node-e"), "1"), "79",
        GPU("ECC_DBE_VOL_TOTAL", "e:9400", HOST("node-e"), "2"), "2",
        GPU("ROW_REMAP_FAILURE", "e:9400", HOST("node-e"), "10"), "1",
        READ("f:9400", HOST("node-f"), "0", "100", "79900", "90", "40"),
        READ("f:9400", HOST("node-f"), "1", "100", "79900", "95", "41"),
        READ("g1:9400", HOST("node-g"), "0", "1", "79999", "60", "30"),
        READ("g1:9400", HOST("node-g"), "1", "1", "79999", "60", "30"),
        READ("g1:9400", HOST("node-g"), "2", "1", "79999", "60", "30"),
        READ("g1:9400", HOST("node-g"), "3", "1", "79999", "60", "30"),
        /* Not a per-GPU series of ours: ignored. */
        "{\"__name__\":\"DCGM_FI_DEV_SM_CLOCK\",\"instance\":\"a:9400\",\"gpu\":\"0\"}", "1755",
        NULL};
    add_gpus(f, ids, readings);
    gm_fleet_evaluate(f, &default_rule);
    return f;
}

static gm_fleet_node *node(gm_fleet *f, const char *name)
{
    for (size_t i = 0; i < gm_fleet_node_count(f); i++)
        if (strcmp(gm_fleet_node_at(f, i)->name, name) == 0)
            return gm_fleet_node_at(f, i);
    fail_msg("no node %s", name);
    return NULL;
}

/* ---- tests -------------------------------------------------------------------------------- */

static void test_queries(void **state)
{
    (void)state;
    char q[512];
    assert_int_equal(gm_fleet_query_expr(GM_FLEET_Q_UP, "gpumon", q, sizeof q), GM_OK);
    assert_string_equal(q, "up{job=\"gpumon\"}");
    assert_int_equal(gm_fleet_query_expr(GM_FLEET_Q_SCRAPE_TIME, "gpumon", q, sizeof q), GM_OK);
    assert_string_equal(q, "timestamp(up{job=\"gpumon\"})");
    assert_int_equal(gm_fleet_query_expr(GM_FLEET_Q_NAMES, "dcgm-exporter", q, sizeof q), GM_OK);
    assert_string_equal(q, "count by (instance, Hostname) (last_over_time("
                           "DCGM_FI_DEV_GPU_UTIL{job=\"dcgm-exporter\"}[10m]))");
    assert_int_equal(gm_fleet_query_expr(GM_FLEET_Q_GPUS, "gpumon", q, sizeof q), GM_OK);
    assert_string_equal(q, "max by (instance, Hostname, gpu, UUID, modelName) "
                           "(DCGM_FI_DEV_GPU_UTIL{job=\"gpumon\"})");
    assert_int_equal(gm_fleet_query_expr(GM_FLEET_Q_READINGS, "gpumon", q, sizeof q), GM_OK);
    assert_string_equal(q, "max by (__name__, instance, Hostname, gpu) ({__name__=~\"DCGM_FI_DEV_"
                           "(FB_USED|FB_FREE|POWER_USAGE|GPU_TEMP|XID_ERRORS|ECC_DBE_VOL_TOTAL|"
                           "ROW_REMAP_FAILURE)\",job=\"gpumon\"})");
    /* A job name that would break out of the PromQL string is refused. */
    assert_int_equal(gm_fleet_query_expr(GM_FLEET_Q_UP, "a\"} or vector(1", q, sizeof q),
                     GM_EINVAL);
    assert_false(gm_fleet_job_ok(""));
    assert_false(gm_fleet_job_ok("a b"));
    assert_false(gm_fleet_job_ok("a\\b"));
    assert_true(gm_fleet_job_ok("kube-system/gpumon:metrics"));
    assert_int_equal(gm_fleet_query_expr(GM_FLEET_Q_UP, "gpumon", q, 8), GM_EINVAL);
}

static void test_nodes(void **state)
{
    (void)state;
    gm_fleet *f = fleet();
    assert_int_equal(gm_fleet_node_count(f), 7);
    /* Ordered by name; d:9400 sorts before the node-* names. */
    const char *order[] = {"d:9400", "node-a", "node-b", "node-c", "node-e", "node-f", "node-g"};
    for (size_t i = 0; i < 7; i++)
        assert_string_equal(gm_fleet_node_at(f, i)->name, order[i]);
    check_eq(gm_fleet_time(f), 1764148800.0);

    gm_fleet_node *a = node(f, "node-a");
    assert_true(a->named && a->up);
    assert_int_equal(a->ntargets, 1);
    assert_string_equal(a->targets[0].instance, "a:9400");
    check_eq(a->last_scrape_s, 1764148799.5);
    assert_int_equal(a->ngpus, 2);
    assert_int_equal(a->idle, 1);
    assert_false(a->gpus[0].idle);
    assert_true(a->gpus[1].idle);
    check_eq(a->util_mean_pct, 45);
    check_eq(a->mem_used_mib, 40001);
    check_eq(a->mem_total_mib, 160000);
    check_eq(a->power_w, 570);
    check_eq(a->hottest_c, 64);
    assert_string_equal(a->hottest_gpu, "0");
    assert_int_equal(a->health, GM_FLEET_HEALTH_OK); /* XID series at 0 */
    assert_string_equal(a->problems, "");
    assert_string_equal(a->gpus[0].uuid, "GPU-a:9400-0");
    assert_string_equal(a->gpus[0].model, "NVIDIA H100");

    /* Down, no series left: named from the last 10 minutes, nothing else known. */
    gm_fleet_node *c = node(f, "node-c");
    assert_true(c->named);
    assert_false(c->up);
    assert_int_equal(c->ngpus, 0);
    check_eq(c->last_scrape_s, 1764148790);
    assert_true(isnan(c->util_mean_pct) && isnan(c->power_w) && isnan(c->mem_used_pct));
    assert_null(c->hottest_gpu);
    assert_int_equal(c->health, GM_FLEET_HEALTH_UNKNOWN);

    /* No Hostname: the instance names the node; no power, no health series. */
    gm_fleet_node *d = node(f, "d:9400");
    assert_false(d->named);
    assert_true(d->up);
    assert_int_equal(d->idle, 1);
    assert_true(isnan(d->power_w));
    assert_true(isnan(d->last_scrape_s));
    assert_int_equal(d->health, GM_FLEET_HEALTH_UNKNOWN);

    /* gpu labels in numeric order; NaN utilization is absent (not idle, not in the mean). */
    gm_fleet_node *e = node(f, "node-e");
    assert_string_equal(e->gpus[0].gpu, "1");
    assert_string_equal(e->gpus[1].gpu, "2");
    assert_string_equal(e->gpus[2].gpu, "10");
    assert_true(isnan(e->gpus[1].util_pct));
    assert_false(e->gpus[1].idle);
    assert_int_equal(e->idle, 1);
    check_eq(e->util_mean_pct, 47.5);
    assert_int_equal(e->health, GM_FLEET_HEALTH_DEGRADED);
    assert_string_equal(e->problems, "GPU 1: XID 79; GPU 2: 2 uncorrectable ECC errors; GPU 10: "
                                     "row remapping failed");
    assert_string_equal(e->hottest_gpu, "2");

    /* Two targets, one down: the node is down whatever the other says. */
    gm_fleet_node *g = node(f, "node-g");
    assert_int_equal(g->ntargets, 2);
    assert_false(g->up);
    assert_int_equal(g->idle, 4);
    gm_fleet_free(f);
}

static void test_thresholds(void **state)
{
    (void)state;
    gm_fleet *f = fleet();
    /* Below, not at: 10 % is not below 10. */
    gm_fleet_evaluate(f, &(gm_fleet_thresholds){10, 50});
    assert_int_equal(node(f, "node-b")->idle, 0);
    assert_int_equal(node(f, "node-f")->idle, 1);
    assert_int_equal(node(f, "node-a")->idle, 1);
    /* Memory at exactly 50 % is not below 50; at 51 it is. */
    gm_fleet_evaluate(f, &(gm_fleet_thresholds){100, 51});
    assert_int_equal(node(f, "node-a")->idle, 2);
    gm_fleet_evaluate(f, &(gm_fleet_thresholds){0, 100});
    assert_int_equal(node(f, "node-g")->idle, 0);
    gm_fleet_free(f);
}

static void test_select(void **state)
{
    (void)state;
    gm_fleet *f = fleet();
    /* Two GPUs: node-b and node-f have two idle at 15 % mean; node-b by name. node-g has four
     * idle but a target down. */
    long i = gm_fleet_select(f, 2);
    check_ge(i, 0);
    assert_string_equal(gm_fleet_node_at(f, (size_t)i)->name, "node-b");
    gm_fleet_node *b = node(f, "node-b");
    assert_true(b->chosen && b->fits);
    assert_string_equal(b->reason, "chosen: the most idle GPUs (2), mean utilization 15 %");
    assert_string_equal(node(f, "node-f")->reason,
                        "fits (2 idle), ties with node-b on idle GPUs and mean utilization; "
                        "node-b comes first by name");
    assert_false(node(f, "node-f")->chosen);
    assert_string_equal(node(f, "node-a")->reason, "1 idle GPU, 2 needed");
    assert_string_equal(node(f, "node-c")->reason, "its target c:9400 is down");
    assert_string_equal(node(f, "node-g")->reason, "its target g2:9400 is down");
    assert_false(node(f, "node-g")->fits);

    /* One GPU: the most idle GPUs wins over a lower utilization. */
    i = gm_fleet_select(f, 1);
    assert_string_equal(gm_fleet_node_at(f, (size_t)i)->name, "node-b");
    assert_string_equal(node(f, "d:9400")->reason,
                        "fits (1 idle), but node-b has more idle GPUs (2)");

    /* A lower mean utilization breaks a tie on idle GPUs, before the name. */
    gm_fleet *g = NULL;
    gm_error err = {0};
    assert_int_equal(gm_fleet_new(&g, &err), GM_OK);
    add(g, GM_FLEET_Q_UP,
        (const char *[]){"{\"instance\":\"b:1\"}", "1", "{\"instance\":\"f:1\"}", "1", NULL});
    add_gpus(g,
             (const char *[]){UTIL("b:1", HOST("node-b"), "0", "20"),
                              UTIL("f:1", HOST("node-f"), "0", "10"), NULL},
             (const char *[]){READ("b:1", HOST("node-b"), "0", "1", "99", "1", "1"),
                              READ("f:1", HOST("node-f"), "0", "1", "99", "1", "1"), NULL});
    gm_fleet_evaluate(g, &default_rule);
    i = gm_fleet_select(g, 1);
    assert_string_equal(gm_fleet_node_at(g, (size_t)i)->name, "node-f");
    assert_string_equal(node(g, "node-b")->reason,
                        "fits (1 idle), but node-f has as many idle GPUs and a lower mean "
                        "utilization (10 % vs 20 %)");
    gm_fleet_free(g);

    /* Three: only node-g has them, and it is down. */
    assert_int_equal(gm_fleet_select(f, 3), -1);
    for (size_t k = 0; k < gm_fleet_node_count(f); k++)
        assert_false(gm_fleet_node_at(f, k)->chosen);
    assert_string_equal(node(f, "node-b")->reason, "2 idle GPUs, 3 needed");
    gm_fleet_free(f);
}

static void test_names(void **state)
{
    (void)state;
    gm_fleet *f = NULL;
    gm_error err = {0};
    assert_int_equal(gm_fleet_new(&f, &err), GM_OK);
    add(f, GM_FLEET_Q_UP,
        (const char *[]){"{\"instance\":\"x:1\"}", "1", "{\"instance\":\"y:1\"}", "0", NULL});
    /* y:1 had two names in the window: the smaller, whatever the order of the answer. */
    add(f, GM_FLEET_Q_NAMES,
        (const char *[]){"{\"instance\":\"x:1\",\"Hostname\":\"old-x\"}", "1",
                         "{\"instance\":\"y:1\",\"Hostname\":\"zz\"}", "1",
                         "{\"instance\":\"y:1\",\"Hostname\":\"yy\"}", "1", NULL});
    /* x:1 is up and its series now say new-x: that wins over the window's old name. */
    add_gpus(f, (const char *[]){UTIL("x:1", HOST("new-x"), "0", "1"), NULL},
             (const char *[]){READ("x:1", HOST("new-x"), "0", "1", "99", "1", "1"), NULL});
    gm_fleet_evaluate(f, &default_rule);
    assert_int_equal(gm_fleet_node_count(f), 2);
    assert_string_equal(gm_fleet_node_at(f, 0)->name, "new-x");
    assert_int_equal(gm_fleet_node_at(f, 0)->ngpus, 1);
    assert_string_equal(gm_fleet_node_at(f, 1)->name, "yy");
    gm_fleet_free(f);

    /* The readings before the identities: a GPU gets its UUID and model all the same. */
    assert_int_equal(gm_fleet_new(&f, &err), GM_OK);
    add(f, GM_FLEET_Q_READINGS,
        (const char *[]){READ("x:1", HOST("x"), "0", "1", "99", "1", "1"), NULL});
    add(f, GM_FLEET_Q_GPUS, (const char *[]){UTIL("x:1", HOST("x"), "0", "7"), NULL});
    gm_fleet_evaluate(f, &default_rule);
    gm_fleet_node *x = gm_fleet_node_at(f, 0);
    assert_int_equal(x->ngpus, 1);
    assert_string_equal(x->gpus[0].uuid, "GPU-x:1-0");
    assert_string_equal(x->gpus[0].model, "NVIDIA H100");
    check_eq(x->gpus[0].util_pct, 7);
    check_eq(x->gpus[0].fb_free_mib, 99);
    gm_fleet_free(f);
}

static void test_url(void **state)
{
    (void)state;
    gm_fleet *f = fleet();
    char u[300];
    gm_fleet_node_url(node(f, "node-a"), u, sizeof u);
    assert_string_equal(u, "http://a:9400/");
    /* The first target that is up. */
    gm_fleet_node_url(node(f, "node-g"), u, sizeof u);
    assert_string_equal(u, "http://g1:9400/");
    gm_fleet_node_url(node(f, "node-c"), u, sizeof u);
    assert_string_equal(u, "http://c:9400/");
    gm_fleet_free(f);

    /* Instances that are not HOST:PORT make no link. */
    const char *bad[] = {"a.example", "evil.example/x:80", "u@h:80", "h:80/x", ":80", "h:"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        gm_fleet_target t = {.up = true};
        snprintf(t.instance, sizeof t.instance, "%s", bad[i]);
        gm_fleet_node n = {.targets = &t, .ntargets = 1};
        gm_fleet_node_url(&n, u, sizeof u);
        assert_string_equal(u, "");
    }
    gm_fleet_target t6 = {.instance = "[fd00::1]:9400", .up = true};
    gm_fleet_node n6 = {.targets = &t6, .ntargets = 1};
    gm_fleet_node_url(&n6, u, sizeof u);
    assert_string_equal(u, "http://[fd00::1]:9400/");
}

static void test_json(void **state)
{
    (void)state;
    gm_fleet *f = fleet();
    gm_fleet_select(f, 2);
    json_t *j = gm_fleet_json(f, &default_rule, true);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "time")), "2025-11-26T09:20:00.000Z");
    json_t *tot = json_object_get(j, "totals");
    assert_int_equal(json_integer_value(json_object_get(tot, "nodes")), 7);
    assert_int_equal(json_integer_value(json_object_get(tot, "nodes_up")), 5);
    assert_int_equal(json_integer_value(json_object_get(tot, "gpus")), 14);
    assert_int_equal(json_integer_value(json_object_get(tot, "idle_gpus")), 11);
    json_t *thr = json_object_get(j, "thresholds");
    assert_int_equal(json_integer_value(json_object_get(thr, "max_util_percent")), 30);
    json_t *nodes = json_object_get(j, "nodes");
    assert_int_equal(json_array_size(nodes), 7);

    json_t *c = json_array_get(nodes, 3);
    assert_string_equal(json_string_value(json_object_get(c, "name")), "node-c");
    assert_true(json_is_false(json_object_get(c, "up")));
    assert_true(json_is_null(json_object_get(c, "gpu_count"))); /* unknown, not 0 */
    assert_true(json_is_null(json_object_get(c, "idle_gpu_count")));
    assert_true(json_is_null(json_object_get(c, "hottest")));
    assert_string_equal(json_string_value(json_object_get(c, "url")), "http://c:9400/");
    assert_string_equal(json_string_value(json_object_get(c, "last_scrape")),
                        "2025-11-26T09:19:50.000Z");
    assert_int_equal(json_integer_value(json_object_get(c, "last_scrape_age_seconds")), 10);
    assert_string_equal(json_string_value(json_object_get(json_object_get(c, "health"), "status")),
                        "unknown");
    assert_string_equal(json_string_value(json_object_get(c, "reason")),
                        "its target c:9400 is down");

    json_t *b = json_array_get(nodes, 2);
    assert_true(json_is_true(json_object_get(b, "chosen")));
    assert_int_equal(json_integer_value(json_object_get(b, "gpu_count")), 2);
    assert_int_equal(json_integer_value(json_object_get(b, "idle_gpu_count")), 2);
    assert_int_equal(json_integer_value(json_object_get(b, "utilization_mean_percent")), 15);
    json_t *g0 = json_array_get(json_object_get(b, "gpus"), 0);
    assert_true(json_is_true(json_object_get(g0, "idle")));
    assert_int_equal(json_integer_value(json_object_get(g0, "memory_total_mib")), 80000);
    assert_true(json_is_null(json_object_get(g0, "xid_last")));
    assert_true(json_is_null(json_object_get(g0, "row_remap_failure")));

    json_t *e = json_array_get(nodes, 4);
    json_t *h = json_object_get(e, "health");
    assert_string_equal(json_string_value(json_object_get(h, "status")), "degraded");
    json_t *p = json_object_get(h, "problems");
    assert_int_equal(json_array_size(p), 3);
    assert_string_equal(json_string_value(json_array_get(p, 1)),
                        "GPU 2: 2 uncorrectable ECC errors");
    json_t *e10 = json_array_get(json_object_get(e, "gpus"), 2);
    assert_true(json_is_true(json_object_get(e10, "row_remap_failure")));

    json_t *d = json_array_get(nodes, 0);
    assert_true(json_is_null(json_object_get(d, "power_w")));
    assert_true(json_is_null(json_object_get(d, "last_scrape")));
    json_decref(j);

    /* Without the selection, no fits/chosen/reason. */
    j = gm_fleet_json(f, &default_rule, false);
    assert_null(json_object_get(json_array_get(json_object_get(j, "nodes"), 0), "reason"));
    json_decref(j);
    gm_fleet_free(f);
}

static void test_empty_and_malformed(void **state)
{
    (void)state;
    gm_fleet *f = NULL;
    gm_error err = {0};
    assert_int_equal(gm_fleet_new(&f, &err), GM_OK);
    gm_fleet_evaluate(f, &default_rule);
    assert_int_equal(gm_fleet_node_count(f), 0);
    assert_int_equal(gm_fleet_select(f, 1), -1);
    assert_true(isnan(gm_fleet_time(f)));
    json_t *j = gm_fleet_json(f, &default_rule, false);
    assert_true(json_is_null(json_object_get(j, "time")));
    assert_int_equal(json_array_size(json_object_get(j, "nodes")), 0);
    json_decref(j);

    json_t *m = json_loads("{\"resultType\":\"matrix\",\"result\":[]}", 0, NULL);
    assert_int_equal(gm_fleet_add(f, GM_FLEET_Q_UP, m, &err), GM_EPARSE);
    assert_non_null(strstr(err.msg, "matrix"));
    json_decref(m);
    gm_fleet_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_queries),    cmocka_unit_test(test_nodes),
        cmocka_unit_test(test_thresholds), cmocka_unit_test(test_select),
        cmocka_unit_test(test_names),      cmocka_unit_test(test_url),
        cmocka_unit_test(test_json),       cmocka_unit_test(test_empty_and_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
