/* cmd_containers.c - `gpumon containers`: the containers gpumon started (labelled
 * gpumon.owner), listed with whether their gpumon still runs; cleanup removes those whose gpumon
 * is gone (killed with -9, a crashed host session); follow prints one's output until it exits
 * and exits with its status (how `gpumon run --image` watches its container). */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/suggest.h"
#include "base/clock.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "core/container.h"
#include "core/docker.h"
#include "base/error.h"

static gm_docker *open_engine(void)
{
    gm_docker *d = NULL;
    gm_error err = {0};
    char ver[128];
    if (gm_docker_open(NULL, &d, &err) < 0 || gm_docker_version(d, ver, sizeof ver, &err) < 0) {
        fprintf(stderr, "gpumon containers: %s\n", err.msg);
        gm_docker_close(d);
        return NULL;
    }
    return d;
}

/* The engine, with the containers gpumon labelled in *list; NULL (message printed) when it
 * cannot be reached or listed. */
static gm_docker *open_listed(json_t **list)
{
    gm_docker *d = open_engine();
    if (!d)
        return NULL;
    gm_error err = {0};
    if (gm_docker_list(d, GM_CONTAINER_LABEL_OWNER, list, &err) < 0) {
        fprintf(stderr, "gpumon containers: %s\n", err.msg);
        gm_docker_close(d);
        return NULL;
    }
    return d;
}

static const char *label(const json_t *c, const char *key)
{
    return json_string_value(json_object_get(json_object_get(c, "labels"), key));
}

static gm_container_owner_state owner_state(const json_t *c)
{
    return gm_container_owner_check(label(c, GM_CONTAINER_LABEL_OWNER),
                                    label(c, GM_CONTAINER_LABEL_OWNER_START), NULL, NULL);
}

static int cmd_list(bool json)
{
    json_t *list = NULL;
    gm_docker *d = open_listed(&list);
    if (!d)
        return GM_EXIT_FAILURE;
    size_t i;
    json_t *c;
    json_array_foreach(list, i, c)
    {
        json_object_set_new(c, "owner", json_string(label(c, GM_CONTAINER_LABEL_OWNER) ?: ""));
        json_object_set_new(c, "owner_state",
                            json_string(gm_container_owner_state_name(owner_state(c))));
        const char *run = label(c, GM_CONTAINER_LABEL_RUN);
        json_object_set_new(c, "run", run ? json_string(run) : json_null());
        const char *keep = label(c, GM_CONTAINER_LABEL_KEEP);
        json_object_set_new(c, "kept", json_boolean(keep && strcmp(keep, "1") == 0));
    }
    if (json) {
        gm_cli_write_json(stdout, list, isatty(STDOUT_FILENO));
    } else if (json_array_size(list) == 0) {
        printf("no gpumon containers (engine at %s)\n", gm_docker_socket(d));
    } else {
        printf("%-36s %-30s %-8s %-24s %s\n", "NAME", "IMAGE", "STATE", "OWNER", "OWNER STATE");
        json_array_foreach(list, i, c)
        {
            printf("%-36s %-30s %-8s %-24s %s%s\n", json_string_value(json_object_get(c, "name")),
                   json_string_value(json_object_get(c, "image")),
                   json_string_value(json_object_get(c, "state")),
                   json_string_value(json_object_get(c, "owner")),
                   json_string_value(json_object_get(c, "owner_state")),
                   json_is_true(json_object_get(c, "kept")) ? " (kept)" : "");
        }
    }
    json_decref(list);
    gm_docker_close(d);
    return GM_EXIT_OK;
}

static int cmd_cleanup(bool all, bool dry_run)
{
    json_t *list = NULL;
    gm_docker *d = open_listed(&list);
    if (!d)
        return GM_EXIT_FAILURE;
    gm_error err = {0};
    int rc = GM_EXIT_OK;
    unsigned removed = 0, in_use = 0, kept = 0, elsewhere = 0;
    size_t i;
    json_t *c;
    json_array_foreach(list, i, c)
    {
        const char *name = json_string_value(json_object_get(c, "name"));
        const char *id = json_string_value(json_object_get(c, "id"));
        const char *owner = label(c, GM_CONTAINER_LABEL_OWNER);
        const char *keep = label(c, GM_CONTAINER_LABEL_KEEP);
        gm_container_owner_state os = owner_state(c);
        if (os == GM_OWNER_ALIVE) {
            in_use++;
            continue;
        }
        if (os != GM_OWNER_GONE) {
            elsewhere++;
            continue;
        }
        if (keep && strcmp(keep, "1") == 0 && !all) {
            kept++;
            continue;
        }
        if (dry_run) {
            printf("would remove %s (image %s): its gpumon (%s) is gone\n", name,
                   json_string_value(json_object_get(c, "image")), owner);
            removed++;
            continue;
        }
        if (gm_docker_remove(d, id, &err) < 0 && err.code != GM_ENOENT) {
            fprintf(stderr, "gpumon containers: %s\n", err.msg);
            rc = GM_EXIT_FAILURE;
            continue;
        }
        printf("removed %s (image %s): its gpumon (%s) is gone\n", name,
               json_string_value(json_object_get(c, "image")), owner);
        removed++;
    }
    printf("%s %u container%s", dry_run ? "would remove" : "removed", removed,
           removed == 1 ? "" : "s");
    if (in_use)
        printf("; %u in use by a running gpumon", in_use);
    if (kept)
        printf("; %u kept with --keep-container (--all removes them)", kept);
    if (elsewhere)
        printf("; %u started on another host or unlabelled, left alone", elsewhere);
    printf("\n");
    json_decref(list);
    gm_docker_close(d);
    return rc;
}

/* ---- follow ----------------------------------------------------------------------------- */

static volatile sig_atomic_t signals_seen;

static void on_signal(int sig)
{
    (void)sig;
    signals_seen++;
}

typedef struct follow_ctx {
    gm_docker *d;
    const char *name;
    double stop_s;
    sig_atomic_t handled; /* signals acted on */
    double term_at;       /* when SIGTERM was sent (0: not yet) */
    bool killed;
} follow_ctx;

static void follow_data(void *arg, int stream, const char *p, size_t n)
{
    (void)arg;
    FILE *f = stream == 2 ? stderr : stdout;
    fwrite(p, 1, n, f);
    fflush(f);
}

/* Turns signals into the container's stop: SIGTERM at the first, SIGKILL at a second or after
 * the grace period. Keeps following: the stream ends when the container does. */
static bool follow_tick(void *arg)
{
    follow_ctx *f = arg;
    gm_error err = {0};
    if (signals_seen > f->handled) {
        if (f->handled == 0) {
            gm_docker_kill(f->d, f->name, "SIGTERM", &err);
            f->term_at = gm_clock_mono_s();
        } else if (!f->killed) {
            gm_docker_kill(f->d, f->name, "SIGKILL", &err);
            f->killed = true;
        }
        f->handled = signals_seen;
    }
    if (f->term_at > 0 && !f->killed && gm_clock_mono_s() - f->term_at >= f->stop_s) {
        gm_docker_kill(f->d, f->name, "SIGKILL", &err);
        f->killed = true;
    }
    return true;
}

static int cmd_follow(const char *name, double stop_s)
{
    gm_docker *d = open_engine();
    if (!d)
        return GM_EXIT_FAILURE;
    struct sigaction sa = {.sa_handler = on_signal}, old[3];
    sigemptyset(&sa.sa_mask);
    const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
    for (int i = 0; i < 3; i++)
        sigaction(sigs[i], &sa, &old[i]);
    follow_ctx f = {.d = d, .name = name, .stop_s = stop_s};
    gm_docker_stream s = {.data = follow_data, .tick = follow_tick, .arg = &f};
    gm_error err = {0};
    int rc = GM_EXIT_OK;
    gm_docker_state st;
    /* The stream ends when the container exits. Should it break earlier, the rest is waited
     * for without its output (asking again would repeat what was printed). */
    if (gm_docker_logs(d, name, 0, true, &s, &err) < 0) {
        fprintf(stderr, "gpumon containers: %s\n", err.msg);
        rc = GM_EXIT_FAILURE;
    }
    while (rc == GM_EXIT_OK) {
        if (gm_docker_inspect(d, name, &st, &err) < 0) {
            fprintf(stderr, "gpumon containers: %s\n", err.msg);
            rc = GM_EXIT_FAILURE;
            break;
        }
        if (!st.running && strcmp(st.status, "created") != 0) {
            if (st.oom_killed)
                fprintf(stderr, "gpumon containers: %s was killed: out of memory\n", name);
            rc = st.exit_code;
            break;
        }
        follow_tick(&f);
        gm_clock_sleep_ms(200);
    }
    for (int i = 0; i < 3; i++)
        sigaction(sigs[i], &old[i], NULL);
    gm_docker_close(d);
    return rc;
}

typedef struct containers_opts {
    bool json, all, dry, stop_given, format_given;
    double stop_s;
} containers_opts;

static int set_format(void *base, const gm_opt *row, const char *arg, gm_error *err)
{
    (void)row;
    containers_opts *o = base;
    if (strcmp(arg, "json") == 0)
        o->json = true;
    else if (strcmp(arg, "table") == 0)
        o->json = false;
    else
        return gm_error_set(err, GM_EINVAL, "invalid --format \"%s\" (expected table or json)",
                            arg);
    o->format_given = true;
    return GM_OK;
}

static const gm_opt containers_table[] = {
    {.type = GM_OPT_CALLBACK,
     .name = "format",
     .arg = "FMT",
     .set = set_format,
     .values = "table json",
     .help = "list: table (default) or json."},
    GM_CLI_OPT_JSON(containers_opts, json, true, GM_OPT_GIVEN(containers_opts, format_given)),
    {.type = GM_OPT_FLAG,
     .name = "all",
     GM_OPT_AT(containers_opts, all),
     .help = "cleanup: kept containers too."},
    {.type = GM_OPT_FLAG,
     .name = "dry-run",
     GM_OPT_AT(containers_opts, dry),
     .help = "cleanup: say what would be removed, remove nothing."},
    {.type = GM_OPT_DURATION,
     .name = "stop-timeout",
     .arg = "S",
     GM_OPT_AT(containers_opts, stop_s),
     GM_OPT_GIVEN(containers_opts, stop_given),
     .min = 0,
     .max = 3600,
     .help = "follow: seconds between SIGTERM and SIGKILL (default 10)."},
    {0},
};

const gm_opt_command gm_cli_containers_command = {
    .name = "containers",
    .usage = "containers list [--format table|json]\n"
             "containers cleanup [--all] [--dry-run]\n"
             "containers follow [--stop-timeout S] NAME",
    .description = "The containers gpumon bench --image and gpumon run --image started, found by "
                   "their label gpumon.owner (HOST:PID of the gpumon that started them), through "
                   "the Docker Engine API ($DOCKER_HOST=unix://PATH, else "
                   "/var/run/docker.sock).",
    .table = containers_table,
    .epilogue = "Subcommands:\n"
                "  list     each one: name, image, state, its owner and whether that gpumon still\n"
                "           runs (alive, gone, other host)\n"
                "  cleanup  removes those whose gpumon is gone (killed with -9, say): not those\n"
                "           kept with --keep-container unless --all, never one whose gpumon runs\n"
                "           or that another host started\n"
                "  follow   prints NAME's output (stdout and stderr) until it exits, and exits\n"
                "           with its status; SIGINT and SIGTERM stop it (SIGKILL after\n"
                "           --stop-timeout, default 10 s, or at a second signal)\n\n"
                "Exit status: 0 ok (follow: the container's status); 1 failure (the engine cannot\n"
                "be reached, a removal failed); 2 usage error.\n",
};

int gm_cli_containers(int argc, char **argv)
{
    containers_opts o = {.stop_s = 10};
    int first;
    int rc = gm_cli_parse(&gm_cli_containers_command, argc, argv, &o, &first);
    if (rc != GM_CLI_PROCEED)
        return rc;
    optind = first;
    bool json = o.json, all = o.all, dry = o.dry, stop_given = o.stop_given,
         format_given = o.format_given;
    double stop_s = o.stop_s;
    if (optind >= argc) {
        fprintf(stderr, "gpumon containers: list, cleanup or follow? (see gpumon containers "
                        "--help)\n");
        return GM_EXIT_USAGE;
    }
    const char *sub = argv[optind++];
    const char *misplaced = strcmp(sub, "list") != 0 && format_given   ? "--format"
                            : strcmp(sub, "cleanup") != 0 && all       ? "--all"
                            : strcmp(sub, "cleanup") != 0 && dry       ? "--dry-run"
                            : strcmp(sub, "follow") != 0 && stop_given ? "--stop-timeout"
                                                                       : NULL;
    if (misplaced &&
        (strcmp(sub, "list") == 0 || strcmp(sub, "cleanup") == 0 || strcmp(sub, "follow") == 0)) {
        fprintf(stderr, "gpumon containers: %s is not an option of %s\n", misplaced, sub);
        return GM_EXIT_USAGE;
    }
    if (strcmp(sub, "list") == 0 || strcmp(sub, "cleanup") == 0) {
        if (!gm_cli_no_operands("containers", argc, argv))
            return GM_EXIT_USAGE;
        return strcmp(sub, "list") == 0 ? cmd_list(json) : cmd_cleanup(all, dry);
    }
    if (strcmp(sub, "follow") == 0) {
        if (optind + 1 != argc) {
            fprintf(stderr, "gpumon containers: follow takes one container name\n");
            return GM_EXIT_USAGE;
        }
        if (!gm_docker_ref_ok(argv[optind])) {
            fprintf(stderr, "gpumon containers: \"%s\" is not a container name\n", argv[optind]);
            return GM_EXIT_USAGE;
        }
        return cmd_follow(argv[optind], stop_s);
    }
    static const char *const subs[] = {"list", "cleanup", "follow"};
    const char *guess = gm_suggest(sub, subs, sizeof subs / sizeof *subs);
    if (guess)
        fprintf(stderr, "gpumon containers: unknown subcommand \"%s\"; did you mean \"%s\"?\n", sub,
                guess);
    else
        fprintf(stderr, "gpumon containers: unknown subcommand \"%s\" (list, cleanup or follow)\n",
                sub);
    return GM_EXIT_USAGE;
}
