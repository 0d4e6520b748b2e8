/* test_container.c - core/container: whose a container is (its owner labels judged against
 * a procfs written by the test: alive, gone, the PID reused by another process, another host)
 * and the readiness probe (an answer's status, nothing listening). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "check.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/container.h"

static char root[256];

/* <root>/<pid>/stat with comm and start time (field 22). */
static void write_stat(long pid, const char *comm, unsigned long long start)
{
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/%ld", root, pid);
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/stat", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f,
            "%ld (%s) S 1 %ld %ld 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 %llu 1000000 100 "
            "18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n",
            pid, comm, pid, pid, start);
    fclose(f);
}

static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof root, "/tmp/gm-test-container-%d", (int)getpid());
    mkdir(root, 0755);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_proc_start(void **state)
{
    (void)state;
    uint64_t t = 0;
    write_stat(100, "gpumon", 424242);
    assert_int_equal(gm_container_proc_start(root, 100, &t), GM_OK);
    assert_int_equal(t, 424242);
    /* A command name with spaces and parentheses does not shift the fields. */
    write_stat(101, "a) (b c) S 9 9", 77);
    assert_int_equal(gm_container_proc_start(root, 101, &t), GM_OK);
    assert_int_equal(t, 77);
    assert_int_equal(gm_container_proc_start(root, 102, &t), GM_ENOENT);
    /* This very process, from the real /proc. */
    assert_int_equal(gm_container_proc_start(NULL, (long)getpid(), &t), GM_OK);
    check_gt(t, 0);
}

static void test_owner(void **state)
{
    (void)state;
    write_stat(200, "gpumon", 5000);
    assert_int_equal(gm_container_owner_check("node1:200", "5000", "node1", root), GM_OWNER_ALIVE);
    assert_int_equal(gm_container_owner_check("node1:200", NULL, "node1", root), GM_OWNER_ALIVE);
    /* The PID now names another process (started later). */
    assert_int_equal(gm_container_owner_check("node1:200", "4000", "node1", root), GM_OWNER_GONE);
    assert_int_equal(gm_container_owner_check("node1:201", "5000", "node1", root), GM_OWNER_GONE);
    assert_int_equal(gm_container_owner_check("node2:200", "5000", "node1", root),
                     GM_OWNER_OTHER_HOST);
    /* A host name that is a prefix of this one is another host. */
    assert_int_equal(gm_container_owner_check("node:200", "5000", "node1", root),
                     GM_OWNER_OTHER_HOST);
    assert_int_equal(gm_container_owner_check(NULL, NULL, "node1", root), GM_OWNER_UNKNOWN);
    assert_int_equal(gm_container_owner_check("node1", NULL, "node1", root), GM_OWNER_UNKNOWN);
    assert_int_equal(gm_container_owner_check("node1:x", NULL, "node1", root), GM_OWNER_UNKNOWN);
    assert_int_equal(gm_container_owner_check(":200", NULL, "node1", root), GM_OWNER_UNKNOWN);
    assert_int_equal(gm_container_owner_check("node1:-3", NULL, "node1", root), GM_OWNER_UNKNOWN);
    assert_string_equal(gm_container_owner_state_name(GM_OWNER_GONE), "gone");
    assert_string_equal(gm_container_owner_state_name(GM_OWNER_OTHER_HOST), "other host");
}

static void test_owner_self(void **state)
{
    (void)state;
    char owner[320], start[32], host[256] = "";
    gm_container_owner_self(owner, sizeof owner, start, sizeof start);
    gethostname(host, sizeof host - 1);
    char want[320];
    snprintf(want, sizeof want, "%s:%d", host, (int)getpid());
    assert_string_equal(owner, want);
    check_ne(start[0], '\0');
    /* And this process is alive by its own labels. */
    assert_int_equal(gm_container_owner_check(owner, start, NULL, NULL), GM_OWNER_ALIVE);
}

typedef struct server {
    int fd;
    int port;
    const char *answer;
    pthread_t thread;
} server;

static void *serve_one(void *arg)
{
    server *s = arg;
    int c = accept(s->fd, NULL, NULL);
    if (c >= 0) {
        char buf[4096];
        ssize_t n = read(c, buf, sizeof buf);
        (void)n;
        ssize_t w = send(c, s->answer, strlen(s->answer), MSG_NOSIGNAL);
        (void)w;
        close(c);
    }
    return NULL;
}

static void server_start(server *s, const char *answer)
{
    s->fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(s->fd, (struct sockaddr *)&sa, sizeof sa), 0);
    socklen_t sl = sizeof sa;
    getsockname(s->fd, (struct sockaddr *)&sa, &sl);
    s->port = ntohs(sa.sin_port);
    assert_int_equal(listen(s->fd, 4), 0);
    s->answer = answer;
    pthread_create(&s->thread, NULL, serve_one, s);
}

static void test_probe(void **state)
{
    (void)state;
    server s;
    char url[128], why[160];
    long status = -1;
    gm_error err = {0};
    server_start(&s, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 2\r\n"
                     "Connection: close\r\n\r\n{}");
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/health/ready", s.port);
    assert_int_equal(gm_container_probe(url, 2000, &status, why, sizeof why, &err), GM_OK);
    assert_int_equal(status, 503);
    pthread_join(s.thread, NULL);
    close(s.fd);
    server_start(&s, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    snprintf(url, sizeof url, "http://127.0.0.1:%d/health", s.port);
    assert_int_equal(gm_container_probe(url, 2000, &status, why, sizeof why, &err), GM_OK);
    assert_int_equal(status, 200);
    pthread_join(s.thread, NULL);
    close(s.fd);
    /* Nothing listens there any more: refused. */
    assert_int_equal(gm_container_probe(url, 2000, &status, why, sizeof why, &err), GM_EIO);
    assert_string_equal(why, "connection refused");
    assert_non_null(strstr(err.msg, url));
    /* A proxy in the environment is not used for the server's own address. */
    setenv("http_proxy", "http://127.0.0.1:1", 1);
    server_start(&s, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    snprintf(url, sizeof url, "http://127.0.0.1:%d/health", s.port);
    assert_int_equal(gm_container_probe(url, 2000, &status, why, sizeof why, &err), GM_OK);
    assert_int_equal(status, 200);
    pthread_join(s.thread, NULL);
    close(s.fd);
    unsetenv("http_proxy");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_proc_start),
        cmocka_unit_test(test_owner),
        cmocka_unit_test(test_owner_self),
        cmocka_unit_test(test_probe),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
