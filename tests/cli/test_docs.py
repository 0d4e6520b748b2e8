"""The endpoint tables of README.md and docs/API.md against the route table the daemon serves
(src/server/routes.c): every route, and every method it takes, is documented in both."""
import os
import re
import unittest

from gmtest import SOURCE

METHODS = {"GM_HTTP_GET": "GET", "GM_HTTP_POST": "POST", "GM_HTTP_DELETE": "DELETE"}


def routes():
    """(path, prefix, methods) of each row of routes[] in routes.c."""
    with open(os.path.join(SOURCE, "src", "server", "routes.c")) as f:
        text = f.read()
    table = text.split("static const gm_route routes[] = {", 1)[1].split("\n};", 1)[0]
    out = []
    # One row per designated initialiser: {.path = "...", .prefix = true, .methods = A | B, ...}
    for row in re.finditer(r"\{([^{}]*)\}", table):
        fields = row.group(1)
        path = re.search(r'\.path\s*=\s*"(/[^"]*)"', fields)
        methods_m = re.search(r"\.methods\s*=\s*([A-Z_ |]+)", fields)
        if not path or not methods_m:
            continue
        prefix = re.search(r"\.prefix\s*=\s*true", fields) is not None
        methods = {METHODS[w.strip()] for w in methods_m.group(1).split("|")
                   if w.strip() in METHODS}
        if path.group(1).startswith("/ws/"):
            methods = {"WS"}  # a WebSocket stream: the docs write `WS /ws/...`
        out.append((path.group(1), prefix, methods))
    return out


def endpoint_rows(path):
    """The table rows of a Markdown file that name endpoints (first cell has a method or /)."""
    with open(os.path.join(SOURCE, path)) as f:
        return [line for line in f if line.startswith("| `") and "/" in line.split("|")[1]]


class EndpointTables(unittest.TestCase):
    def test_route_table_was_read(self):
        paths = [p for p, _, _ in routes()]
        self.assertIn("/api/health", paths)
        self.assertIn("/ws/gpu", paths)
        self.assertGreaterEqual(len(paths), 18)

    def test_every_route_and_method_is_documented(self):
        for doc in ("README.md", os.path.join("docs", "API.md")):
            rows = endpoint_rows(doc)
            for path, prefix, methods in routes():
                # /api/gpus/ serves /api/gpus/{index}, /api/sessions/ /api/sessions/{id}/...
                want = path + "{" if prefix else path
                named = [r for r in rows
                         if re.search(re.escape(want) + (r"" if prefix else r"[`?,\s]"), r)]
                with self.subTest(doc=doc, path=path):
                    self.assertTrue(named, "%s has no endpoint row for %s" % (doc, want))
                if doc == "README.md":
                    continue  # the README's table groups methods; API.md names each
                for method in methods:
                    with self.subTest(doc=doc, path=path, method=method):
                        self.assertTrue(any("`%s %s" % (method, want) in r for r in rows),
                                        "%s lacks `%s %s...`" % (doc, method, want))


if __name__ == "__main__":
    unittest.main()
