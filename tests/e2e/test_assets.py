"""`gpumon serve` static files: --web-root from disk (content types, missing files, traversal
and symbolic-link escapes refused) and the embedded dashboard (gzip or identity by
Accept-Encoding, Vary, cache headers, ETag and If-None-Match). The embedded checks need a build
with the dashboard (-DGM_WEB=ON); a -DGM_WEB=OFF build checks its built-in index page instead."""
import gzip
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from daemon import Daemon

FILES = {
    "index.html": b"<!doctype html><title>dev</title><script src=\"/app.js\"></script>",
    "app.js": b"console.log('dev build');\n",
    "style.css": b"body { color: red }\n",
    "sub/data.json": b"{\"a\": 1}\n",
    "sub/index.html": b"<p>sub index</p>",
    "img.png": b"\x89PNG\r\n\x1a\n" + bytes(range(64)),
    "blob.xyz": b"\x00\x01\x02",
    ".env": b"SECRET=hidden-dotfile\n",
}
SECRET = b"outside-the-root-secret"


class WebRoot(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="gpumon-webroot-")
        cls.root = os.path.join(cls.tmp, "root")
        for name, data in FILES.items():
            path = os.path.join(cls.root, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
        os.makedirs(os.path.join(cls.tmp, "outside"))
        with open(os.path.join(cls.tmp, "outside", "secret.txt"), "wb") as f:
            f.write(SECRET)
        os.symlink(os.path.join(cls.tmp, "outside", "secret.txt"), os.path.join(cls.root, "escape.txt"))
        os.symlink(os.path.join(cls.tmp, "outside"), os.path.join(cls.root, "outdir"))
        os.symlink("app.js", os.path.join(cls.root, "alias.js"))
        cls.d = Daemon(["--web-root", cls.root, "--db", "none"]).start()

    @classmethod
    def tearDownClass(cls):
        rc = cls.d.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)
        assert rc == 0, "exit %s: %s" % (rc, cls.d.log())

    def test_files_and_types(self):
        cases = [("/", "index.html", "text/html; charset=utf-8"),
                 ("/app.js", "app.js", "text/javascript; charset=utf-8"),
                 ("/style.css", "style.css", "text/css; charset=utf-8"),
                 ("/sub/data.json", "sub/data.json", "application/json"),
                 ("/sub/", "sub/index.html", "text/html; charset=utf-8"),
                 ("/img.png", "img.png", "image/png"),
                 ("/blob.xyz", "blob.xyz", "application/octet-stream"),
                 ("/alias.js", "app.js", "text/javascript; charset=utf-8")]
        for path, name, ctype in cases:
            with self.subTest(path=path):
                status, hdrs, body = self.d.request(path, headers=["Accept-Encoding: gzip"])
                self.assertEqual(status, 200)
                self.assertEqual(body, FILES[name])
                self.assertEqual(hdrs["content-type"], ctype)
                self.assertEqual(hdrs["content-length"], str(len(FILES[name])))
                # Development files change under the same name: never cached, never gzip'd.
                self.assertEqual(hdrs["cache-control"], "no-store")
                self.assertNotIn("content-encoding", hdrs)
                self.assertNotIn("etag", hdrs)
        status, hdrs, body = self.d.request("/app.js", method="HEAD")
        self.assertEqual((status, body), (200, b""))
        self.assertEqual(hdrs["content-length"], str(len(FILES["app.js"])))

    def test_missing_and_methods(self):
        for path in ("/missing.js", "/sub/nope.css", "/sub", "/outside/secret.txt"):
            with self.subTest(path=path):
                status, hdrs, body = self.d.request(path)
                self.assertEqual(status, 404)
                self.assertIn("error", json.loads(body))
        status, hdrs, _ = self.d.request("/app.js", method="POST", body=b"x")
        self.assertEqual(status, 405)
        self.assertIn("GET", hdrs["allow"])
        # The API is still the API.
        self.assertEqual(self.d.get_json("/api/health")["status"], "ok")
        self.assertEqual(self.d.get_json("/api/config")["dashboard"], "web_root")
        self.assertEqual(self.d.request("/api/nope")[0], 404)

    def test_traversal_and_escapes(self):
        attempts = ["/../outside/secret.txt", "/sub/../../outside/secret.txt",
                    "/%2e%2e/outside/secret.txt", "/sub/%2e%2e/%2e%2e/outside/secret.txt",
                    "/..%2foutside%2fsecret.txt", "/escape.txt", "/outdir/secret.txt",
                    "/.env", "/sub/.%2e/.env", "/%2eenv"]
        for path in attempts:
            with self.subTest(path=path):
                status, _, body = self.d.request(path, path_as_is=True)
                self.assertIn(status, (403, 404), body[:100])
                self.assertNotIn(SECRET, body)
                self.assertNotIn(b"hidden-dotfile", body)
        # Symbolic links that leave the root are refused as such.
        self.assertEqual(self.d.request("/escape.txt")[0], 403)
        self.assertEqual(self.d.request("/outdir/secret.txt")[0], 403)

    def test_bad_web_root_is_a_usage_error(self):
        from gmtest import env, run
        p = run(["serve", "--listen", "127.0.0.1:0", "--web-root", os.path.join(self.tmp, "nope")],
                env=env(), timeout=20)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("--web-root", p.stderr)
        p = run(["serve", "--listen", "127.0.0.1:0"], env=env(extra={"GPU_MONITOR_WEB_ROOT": os.path.join(self.root, "app.js")}),
                timeout=20)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("not a directory", p.stderr)


class Embedded(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon(["--db", "none"]).start()
        status, hdrs, body = cls.d.request("/")
        assert status == 200, status
        cls.index = body
        m = re.search(rb'<script[^>]+src="\.?(/assets/[^"]+\.js)"', body)
        cls.script = m.group(1).decode() if m else None

    @classmethod
    def tearDownClass(cls):
        rc = cls.d.stop()
        assert rc == 0, "exit %s: %s" % (rc, cls.d.log())

    def need_dashboard(self):
        if not self.script:
            self.skipTest("this build has no embedded dashboard (configured with -DGM_WEB=OFF): "
                          "gzip and cache checks of the dashboard skipped")

    def test_index_revalidates_with_etag(self):
        for ae in ([], ["Accept-Encoding: gzip"]):
            with self.subTest(accept=ae):
                status, hdrs, body = self.d.request("/", headers=ae)
                self.assertEqual(status, 200)
                self.assertEqual(hdrs["cache-control"], "no-cache")
                self.assertTrue(hdrs["content-type"].startswith("text/html"))
                tag = hdrs["etag"]
                self.assertRegex(tag, r'^"[0-9a-f]{16}"$')
                # The same representation asked again with its ETag: 304 and no body.
                status, h304, body = self.d.request("/", headers=ae + ["If-None-Match: " + tag])
                self.assertEqual(status, 304)
                self.assertEqual(body, b"")
                self.assertEqual(h304["etag"], tag)
                self.assertEqual(h304["cache-control"], "no-cache")
                self.assertNotIn("content-encoding", h304)
                status, _, _ = self.d.request("/", headers=ae + ['If-None-Match: "0000000000000000", W/' + tag])
                self.assertEqual(status, 304)
                status, _, body = self.d.request("/", headers=ae + ['If-None-Match: "0000000000000000"'])
                self.assertEqual(status, 200)
                self.assertGreater(len(body), 0)

    def test_builtin_page_without_dashboard(self):
        if self.script:
            self.skipTest("this build embeds the dashboard")
        self.assertIn(b"/api/health", self.index)
        self.assertIn(b"/api/sessions", self.index)
        status, hdrs, _ = self.d.request("/", headers=["Accept-Encoding: gzip"])
        self.assertNotIn("content-encoding", hdrs)  # nothing gzip'd to offer
        self.assertEqual(self.d.get_json("/api/config")["dashboard"], "builtin")

    def test_gzip_or_identity(self):
        self.need_dashboard()
        self.assertEqual(self.d.get_json("/api/config")["dashboard"], "embedded")
        for path in ("/", "/index.html", self.script):
            with self.subTest(path=path):
                status, plain_h, plain = self.d.request(path)
                self.assertEqual(status, 200)
                self.assertNotIn("content-encoding", plain_h)
                self.assertEqual(plain_h["vary"], "Accept-Encoding")
                self.assertEqual(int(plain_h["content-length"]), len(plain))
                status, gz_h, gz = self.d.request(path, headers=["Accept-Encoding: gzip, deflate, br"])
                self.assertEqual(status, 200)
                self.assertEqual(gz_h["content-encoding"], "gzip")
                self.assertEqual(gz_h["vary"], "Accept-Encoding")
                self.assertEqual(int(gz_h["content-length"]), len(gz))
                self.assertLess(len(gz), len(plain))
                self.assertEqual(gzip.decompress(gz), plain)
                self.assertNotEqual(gz_h["etag"], plain_h["etag"])
                self.assertEqual(gz_h["content-type"], plain_h["content-type"])
                # q=0 refuses gzip; a wildcard accepts it.
                _, h, body = self.d.request(path, headers=["Accept-Encoding: gzip;q=0, br"])
                self.assertNotIn("content-encoding", h)
                self.assertEqual(body, plain)
                _, h, _ = self.d.request(path, headers=["Accept-Encoding: *"])
                self.assertEqual(h.get("content-encoding"), "gzip")
                # HEAD: same headers, no body.
                status, hh, body = self.d.request(path, method="HEAD", headers=["Accept-Encoding: gzip"])
                self.assertEqual((status, body), (200, b""))
                self.assertEqual(hh["content-length"], gz_h["content-length"])

    def test_cache_headers(self):
        self.need_dashboard()
        _, h, _ = self.d.request(self.script, headers=["Accept-Encoding: gzip"])
        self.assertEqual(h["cache-control"], "public, max-age=31536000, immutable")
        self.assertTrue(h["content-type"].startswith("text/javascript"))
        _, h, _ = self.d.request("/index.html")
        self.assertEqual(h["cache-control"], "no-cache")
        status, h, _ = self.d.request(self.script, headers=["If-None-Match: " + h.get("etag", '"x"')])
        self.assertEqual(status, 200)  # another file's tag does not match
        self.assertEqual(self.d.request("/assets/nope.js")[0], 404)


if __name__ == "__main__":
    unittest.main()
