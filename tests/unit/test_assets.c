/* test_assets.c - server/assets: the dashboard table (embedded, or the built-in page of a
 * -DGM_WEB=OFF build: the ASan build runs that branch), the gzip variant chosen only for
 * clients that accept it and holding the same bytes, strong ETags and If-None-Match matching,
 * Accept-Encoding with q-values, content types by extension, and the --web-root reader's
 * refusals (traversal, hidden files, links out, non-regular files) over a temporary tree. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "check.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "server/assets.h"

/* ---- static files --------------------------------------------------------------------------- */

static void test_accept_encoding(void **state)
{
    (void)state;
    assert_true(gm_accepts_gzip("gzip"));
    assert_true(gm_accepts_gzip("gzip, deflate, br"));
    assert_true(gm_accepts_gzip("br;q=1.0, GZIP;q=0.5"));
    assert_true(gm_accepts_gzip("x-gzip"));
    assert_true(gm_accepts_gzip("*"));
    assert_true(gm_accepts_gzip("identity, *;q=0.1"));
    assert_false(gm_accepts_gzip(NULL));
    assert_false(gm_accepts_gzip(""));
    assert_false(gm_accepts_gzip("identity"));
    assert_false(gm_accepts_gzip("deflate, br"));
    assert_false(gm_accepts_gzip("gzip;q=0"));
    assert_false(gm_accepts_gzip("gzip; q=0.000, deflate"));
    assert_false(gm_accepts_gzip("*, gzip;q=0")); /* named wins over the wildcard */
    assert_false(gm_accepts_gzip("*;q=0"));
    assert_false(gm_accepts_gzip("gzip;q=abc"));
    assert_false(gm_accepts_gzip("gzipper"));
    assert_true(gm_accepts_gzip("  gzip ;q=0.001"));
}

static void test_etag_match(void **state)
{
    (void)state;
    const char *tag = "\"00ab\"";
    assert_true(gm_etag_matches("\"00ab\"", tag));
    assert_true(gm_etag_matches("W/\"00ab\"", tag));
    assert_true(gm_etag_matches("\"x\", \"00ab\"", tag));
    assert_true(gm_etag_matches("*", tag));
    assert_false(gm_etag_matches("\"00ac\"", tag));
    assert_false(gm_etag_matches("00ab", tag));
    assert_false(gm_etag_matches("", tag));
    assert_false(gm_etag_matches(NULL, tag));
    assert_false(gm_etag_matches("\"00ab", tag));
}

static void test_assets_table(void **state)
{
    (void)state;
    /* Whatever this build embeds, "/" is served, raw to clients without gzip. */
    const gm_asset *raw = gm_assets_find("/", false);
    assert_non_null(raw);
    assert_false(raw->gzip);
    assert_non_null(strstr(raw->content_type, "text/html"));
    const gm_asset *gz = gm_assets_find("/", true);
    assert_non_null(gz);
    assert_true(gz == raw || gz->gzip);
    assert_int_equal(gm_assets_has_gzip("/"), gz->gzip);
    const char *t1 = gm_assets_etag(raw);
    assert_int_equal(strlen(t1), 18);
    assert_int_equal(t1[0], '"');
    assert_string_equal(t1, gm_assets_etag(raw)); /* kept */
    if (gz != raw)
        assert_string_not_equal(gm_assets_etag(gz), t1);
    assert_null(gm_assets_find("/nope", true));
    if (!gm_assets_embedded())
        assert_non_null(strstr((const char *)raw->data, "/api/health"));
    /* Every dashboard row has a raw twin after its gzip row. */
    for (size_t i = 0; i < gm_web_assets_count; i++)
        if (gm_web_assets[i].gzip) {
            check_lt(i + 1, gm_web_assets_count);
            assert_string_equal(gm_web_assets[i + 1].path, gm_web_assets[i].path);
            assert_false(gm_web_assets[i + 1].gzip);
        }
    assert_null(gm_web_assets[gm_web_assets_count].path);

    assert_string_equal(gm_content_type_for("/a/b.JS"), "text/javascript; charset=utf-8");
    assert_string_equal(gm_content_type_for("x.css"), "text/css; charset=utf-8");
    assert_string_equal(gm_content_type_for("/index.html"), "text/html; charset=utf-8");
    assert_string_equal(gm_content_type_for("/a.b/c"), "application/octet-stream");
    assert_string_equal(gm_content_type_for("/LICENSE"), "application/octet-stream");
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_webroot(void **state)
{
    (void)state;
    char base[] = "/tmp/gm-webroot-XXXXXX";
    assert_non_null(mkdtemp(base));
    char p[PATH_MAX], root[PATH_MAX];
    snprintf(p, sizeof p, "%s/root", base);
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(p, sizeof p, "%s/root/sub", base);
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(p, sizeof p, "%s/outside", base);
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(p, sizeof p, "%s/root/index.html", base);
    write_file(p, "<html>hi</html>");
    snprintf(p, sizeof p, "%s/root/app.js", base);
    write_file(p, "console.log(1)");
    snprintf(p, sizeof p, "%s/root/sub/x.css", base);
    write_file(p, "a{}");
    snprintf(p, sizeof p, "%s/root/.env", base);
    write_file(p, "SECRET=1");
    snprintf(p, sizeof p, "%s/outside/secret.txt", base);
    write_file(p, "secret");
    char link[PATH_MAX];
    snprintf(link, sizeof link, "%s/root/escape.txt", base);
    assert_int_equal(symlink(p, link), 0);
    snprintf(link, sizeof link, "%s/root/inside.js", base);
    assert_int_equal(symlink("app.js", link), 0);
    snprintf(p, sizeof p, "%s/root/big.bin", base);
    int fd = open(p, O_CREAT | O_WRONLY, 0600);
    check_ge(fd, 0);
    assert_int_equal(ftruncate(fd, (off_t)GM_WEBROOT_MAX_FILE + 1), 0); /* sparse */
    close(fd);
    snprintf(p, sizeof p, "%s/root", base);
    assert_non_null(realpath(p, root));

    char *data;
    size_t len;
    const char *ctype;
    gm_error err;
    assert_int_equal(gm_webroot_read(root, "/", &data, &len, &ctype, &err), GM_OK);
    assert_int_equal(len, 15);
    assert_memory_equal(data, "<html>hi</html>", 15);
    assert_string_equal(ctype, "text/html; charset=utf-8");
    free(data);
    assert_int_equal(gm_webroot_read(root, "/app.js", &data, &len, &ctype, &err), GM_OK);
    assert_string_equal(ctype, "text/javascript; charset=utf-8");
    free(data);
    assert_int_equal(gm_webroot_read(root, "/sub/x.css", &data, &len, &ctype, &err), GM_OK);
    assert_int_equal(len, 3);
    free(data);
    /* A link that stays inside is followed; one that leaves is refused. */
    assert_int_equal(gm_webroot_read(root, "/inside.js", &data, &len, &ctype, &err), GM_OK);
    free(data);
    assert_int_equal(gm_webroot_read(root, "/escape.txt", &data, &len, &ctype, &err), GM_EPERM);
    assert_null(data);
    static const char *const refused[] = {"/../outside/secret.txt",
                                          "/sub/../../outside/secret.txt",
                                          "/.env",
                                          "/sub/..",
                                          "relative",
                                          "/a\\b"};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++)
        assert_int_equal(gm_webroot_read(root, refused[i], &data, &len, &ctype, &err), GM_EPERM);
    assert_int_equal(gm_webroot_read(root, "/missing.js", &data, &len, &ctype, &err), GM_ENOENT);
    assert_int_equal(gm_webroot_read(root, "/sub", &data, &len, &ctype, &err), GM_ENOENT);
    assert_int_equal(gm_webroot_read(root, "/sub/", &data, &len, &ctype, &err), GM_ENOENT);
    assert_int_equal(gm_webroot_read(root, "/big.bin", &data, &len, &ctype, &err), GM_EINVAL);
    assert_non_null(strstr(err.msg, "16 MiB"));

    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    assert_int_equal(system(cmd), 0);
}

/* ---- more cases ------------------------------------------------------------------------------ */

/* Inflates a gzip member into a malloc'd buffer; *len its size. */
static unsigned char *gunzip(const unsigned char *in, size_t n, size_t *len)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    assert_int_equal(inflateInit2(&zs, 16 + MAX_WBITS), Z_OK);
    size_t cap = n * 8 + 1024;
    unsigned char *out = malloc(cap);
    assert_non_null(out);
    zs.next_in = (unsigned char *)in;
    zs.avail_in = (uInt)n;
    int rc;
    do {
        if (zs.total_out == cap) {
            cap *= 2;
            out = realloc(out, cap);
            assert_non_null(out);
        }
        zs.next_out = out + zs.total_out;
        zs.avail_out = (uInt)(cap - zs.total_out);
        rc = inflate(&zs, Z_NO_FLUSH);
    } while (rc == Z_OK);
    assert_int_equal(rc, Z_STREAM_END);
    *len = zs.total_out;
    inflateEnd(&zs);
    return out;
}

static void test_gzip_variant_only_when_accepted(void **state)
{
    (void)state;
    if (!gm_assets_embedded()) {
        /* The built-in page: one raw row, for every client. */
        const gm_asset *a = gm_assets_find("/", true);
        assert_non_null(a);
        assert_false(a->gzip);
        assert_ptr_equal(a, gm_assets_find("/", false));
        assert_false(gm_assets_has_gzip("/"));
        assert_string_equal(a->cache_control, "no-cache");
        assert_null(gm_assets_find("/index.html", false));
        assert_int_equal(gm_web_assets_count, 0);
        return;
    }
    size_t gz_rows = 0;
    for (size_t i = 0; i < gm_web_assets_count; i++) {
        const gm_asset *row = &gm_web_assets[i];
        if (!row->gzip) {
            /* Every raw row is what a client without gzip gets for its path. */
            assert_ptr_equal(gm_assets_find(row->path, false), row);
            if (!gm_assets_has_gzip(row->path))
                assert_ptr_equal(gm_assets_find(row->path, true), row);
            continue;
        }
        gz_rows++;
        const gm_asset *raw = &gm_web_assets[i + 1];
        assert_ptr_equal(gm_assets_find(row->path, true), row);
        assert_ptr_equal(gm_assets_find(row->path, false), raw);
        assert_true(gm_assets_has_gzip(row->path));
        /* The same file: same type and caching, and the gzip bytes inflate to the raw ones. */
        assert_string_equal(row->content_type, raw->content_type);
        assert_string_equal(row->cache_control, raw->cache_control);
        check_lt(row->len, raw->len);
        assert_int_equal(row->data[0], 0x1f);
        assert_int_equal(row->data[1], 0x8b);
        size_t len = 0;
        unsigned char *plain = gunzip(row->data, row->len, &len);
        assert_int_equal(len, raw->len);
        assert_memory_equal(plain, raw->data, len);
        free(plain);
        /* Hashed files are immutable; pages revalidate. */
        if (strncmp(row->path, "/assets/", 8) == 0)
            assert_non_null(strstr(row->cache_control, "immutable"));
        else
            assert_string_equal(row->cache_control, "no-cache");
    }
    check_gt(gz_rows, 0);
    /* "/" is index.html, byte for byte. */
    const gm_asset *root = gm_assets_find("/", false),
                   *index = gm_assets_find("/index.html", false);
    assert_non_null(index);
    assert_int_equal(root->len, index->len);
    assert_memory_equal(root->data, index->data, root->len);
    assert_string_equal(gm_assets_etag(root), gm_assets_etag(index));
    /* Paths match exactly. */
    assert_null(gm_assets_find("/INDEX.HTML", true));
    assert_null(gm_assets_find("/index.html/", true));
    assert_null(gm_assets_find("", true));
    assert_false(gm_assets_has_gzip("/nope"));
}

static void test_etags_of_the_table(void **state)
{
    (void)state;
    size_t n = gm_web_assets_count ? gm_web_assets_count : 1;
    const gm_asset *rows = gm_web_assets_count ? gm_web_assets : gm_assets_find("/", false);
    for (size_t i = 0; i < n; i++) {
        const char *tag = gm_assets_etag(&rows[i]);
        /* Strong, quoted, sixteen hex digits. */
        assert_int_equal(strlen(tag), 18);
        assert_int_equal(tag[0], '"');
        assert_int_equal(tag[17], '"');
        for (int k = 1; k < 17; k++)
            assert_non_null(strchr("0123456789abcdef", tag[k]));
        /* A client holding it gets a match, plain, weak or in a list. */
        char weak[32], list[64];
        snprintf(weak, sizeof weak, "W/%s", tag);
        snprintf(list, sizeof list, "\"zzz\", %s", tag);
        assert_true(gm_etag_matches(tag, tag));
        assert_true(gm_etag_matches(weak, tag));
        assert_true(gm_etag_matches(list, tag));
        /* Rows with other bytes have other tags. */
        for (size_t k = 0; k < i; k++)
            if (rows[k].len != rows[i].len || memcmp(rows[k].data, rows[i].data, rows[i].len))
                assert_string_not_equal(gm_assets_etag(&rows[k]), tag);
    }
}

static void test_etag_lists(void **state)
{
    (void)state;
    const char *tag = "\"0123456789abcdef\"";
    assert_true(gm_etag_matches("\"a\",\"0123456789abcdef\"", tag));        /* no spaces */
    assert_true(gm_etag_matches("\t\"a\" ,  W/\"0123456789abcdef\"", tag)); /* tabs, spaces */
    assert_true(gm_etag_matches(", , \"0123456789abcdef\" ,", tag));        /* empty entries */
    assert_true(gm_etag_matches("\"a\", *", tag));                          /* "*" anywhere */
    assert_true(gm_etag_matches("W/\"x\", W/\"0123456789abcdef\"", tag));
    assert_false(gm_etag_matches("\"a\", \"b\"", tag));
    assert_false(gm_etag_matches("\"0123456789abcde\"", tag));    /* a prefix of it */
    assert_false(gm_etag_matches("\"0123456789abcdef0\"", tag));  /* longer */
    assert_false(gm_etag_matches("\"0123456789ABCDEF\"", tag));   /* case matters */
    assert_false(gm_etag_matches("0123456789abcdef", tag));       /* unquoted */
    assert_false(gm_etag_matches("w/\"0123456789abcdef\"", tag)); /* the prefix is W/ */
    assert_false(gm_etag_matches(" , ,", tag));
    assert_false(gm_etag_matches("W/", tag));
    assert_false(gm_etag_matches("\"a\", \"0123", tag)); /* unterminated */
    assert_false(gm_etag_matches("\"a\"", NULL));
}

static void test_accept_encoding_q_values(void **state)
{
    (void)state;
    static const char *const yes[] = {
        "gzip;q=1",     "gzip;q=1.0",       "gzip;q=1.000",       "gzip;q=0.5",   "gzip; q=0.001",
        "gzip;Q=0.5",   "gzip ; q = 0.5",   "deflate,gzip",       "gzip;level=9", "gzip;q=0.5;x=1",
        "x-gzip;q=0.2", "*;q=0.3, deflate", "identity;q=0, gzip", "br;q=0, *",    "GZip",
    };
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
        if (!gm_accepts_gzip(yes[i]))
            fail_msg("\"%s\" refused", yes[i]);
    /* q=0 refuses; a q-value that cannot be read is no acceptance either. */
    static const char *const no[] = {
        "gzip;q=0",    "gzip;q=0.0", "gzip;q=0.000", "gzip;q=1.5",  "gzip;q=2",
        "gzip;q=-1",   "gzip;q=",    "gzip;q=.5",    "gzip;q=0x1",  "gzip;q=1e0",
        "gzip;q=0.5x", "gzip;q= ",   "*;q=0, br",    "gzip;q=0, *", "br, deflate, zstd",
        "gzip2",       "xgzip",      "gz",           ",",           "identity;q=1",
    };
    for (size_t i = 0; i < sizeof no / sizeof *no; i++)
        if (gm_accepts_gzip(no[i]))
            fail_msg("\"%s\" accepted", no[i]);
}

static void test_content_types(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"/a.html", "text/html; charset=utf-8"},
        {"/a.htm", "text/html; charset=utf-8"},
        {"/a.mjs", "text/javascript; charset=utf-8"},
        {"/a.json", "application/json"},
        {"/a.js.map", "application/json"},
        {"/a.svg", "image/svg+xml"},
        {"/a.PNG", "image/png"},
        {"/a.jpeg", "image/jpeg"},
        {"/a.ico", "image/x-icon"},
        {"/a.woff2", "font/woff2"},
        {"/a.woff", "font/woff"},
        {"/a.txt", "text/plain; charset=utf-8"},
        {"/a.wasm", "application/wasm"},
        {"/site.webmanifest", "application/manifest+json"},
        {"/assets/index-CST9nahA.js", "text/javascript; charset=utf-8"},
        /* Only the extension of the last segment counts. */
        {"/dir.js/readme", "application/octet-stream"},
        {"/a.", "application/octet-stream"},
        {"/a.jsx", "application/octet-stream"},
        {"/a.exe", "application/octet-stream"},
        {"", "application/octet-stream"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        assert_string_equal(gm_content_type_for(cases[i][0]), cases[i][1]);
}

static void test_webroot_more(void **state)
{
    (void)state;
    char base[] = "/tmp/gm-webroot-XXXXXX";
    assert_non_null(mkdtemp(base));
    char p[PATH_MAX], root[PATH_MAX], link[PATH_MAX];
    snprintf(p, sizeof p, "%s/root", base);
    assert_int_equal(mkdir(p, 0700), 0);
    assert_non_null(realpath(p, root));
    /* A sibling whose name starts with the root's: a link into it is still outside. */
    snprintf(p, sizeof p, "%s/root-evil", base);
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(p, sizeof p, "%s/root-evil/x.js", base);
    write_file(p, "evil");
    snprintf(link, sizeof link, "%s/root/sibling.js", base);
    assert_int_equal(symlink(p, link), 0);
    /* A directory link out, and a file reached through it. */
    snprintf(p, sizeof p, "%s/root-evil", base);
    snprintf(link, sizeof link, "%s/root/out", base);
    assert_int_equal(symlink(p, link), 0);
    /* A FIFO: not a regular file, and opening it must not wait for a writer. */
    snprintf(p, sizeof p, "%s/root/fifo.js", base);
    assert_int_equal(mkfifo(p, 0600), 0);
    /* An empty file, a directory with its index, a dangling link. */
    snprintf(p, sizeof p, "%s/root/empty.txt", base);
    write_file(p, "");
    snprintf(p, sizeof p, "%s/root/docs", base);
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(p, sizeof p, "%s/root/docs/index.html", base);
    write_file(p, "<p>docs</p>");
    snprintf(link, sizeof link, "%s/root/dangling.js", base);
    assert_int_equal(symlink("/nonexistent/gm-nothing.js", link), 0);

    char *data = (char *)1;
    size_t len = 99;
    const char *ctype = NULL;
    gm_error err;
    assert_int_equal(gm_webroot_read(root, "/sibling.js", &data, &len, &ctype, &err), GM_EPERM);
    assert_null(data);
    assert_int_equal(len, 0);
    assert_int_equal(gm_webroot_read(root, "/out/x.js", &data, &len, &ctype, &err), GM_EPERM);
    assert_int_equal(gm_webroot_read(root, "/fifo.js", &data, &len, &ctype, &err), GM_ENOENT);
    assert_int_equal(gm_webroot_read(root, "/dangling.js", &data, &len, &ctype, &err), GM_ENOENT);
    assert_int_equal(gm_webroot_read(root, "/empty.txt", &data, &len, &ctype, &err), GM_OK);
    assert_non_null(data);
    assert_int_equal(len, 0);
    assert_string_equal(ctype, "text/plain; charset=utf-8");
    free(data);
    assert_int_equal(gm_webroot_read(root, "/docs/", &data, &len, &ctype, &err), GM_OK);
    assert_int_equal(len, 11);
    assert_memory_equal(data, "<p>docs</p>", 11);
    assert_string_equal(ctype, "text/html; charset=utf-8");
    free(data);
    /* Refused before the disk is touched: any segment starting with '.', backslashes,
     * control characters. */
    static const char *const refused[] = {"/..",
                                          "/./docs/",
                                          "/docs/./index.html",
                                          "/.git/config",
                                          "/docs/.x",
                                          "/docs\\index.html",
                                          "/a\x01b",
                                          "/a\x7f",
                                          "/a\nb",
                                          "",
                                          "docs/"};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++)
        if (gm_webroot_read(root, refused[i], &data, &len, &ctype, &err) != GM_EPERM)
            fail_msg("\"%s\" was not refused", refused[i]);
    /* A dot inside a name is fine. */
    snprintf(p, sizeof p, "%s/root/a..b.js", base);
    write_file(p, "x");
    assert_int_equal(gm_webroot_read(root, "/a..b.js", &data, &len, &ctype, &err), GM_OK);
    free(data);

    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accept_encoding),
        cmocka_unit_test(test_accept_encoding_q_values),
        cmocka_unit_test(test_etag_match),
        cmocka_unit_test(test_etag_lists),
        cmocka_unit_test(test_assets_table),
        cmocka_unit_test(test_gzip_variant_only_when_accepted),
        cmocka_unit_test(test_etags_of_the_table),
        cmocka_unit_test(test_content_types),
        cmocka_unit_test(test_webroot),
        cmocka_unit_test(test_webroot_more),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
