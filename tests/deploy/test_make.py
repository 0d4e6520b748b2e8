"""The Makefile's `run` and `demo`: PORT and LISTEN pick where the daemon listens (none: serve's
own default); README says so, and names the Grafana dashboard it documents."""
import json
import os
import subprocess
import unittest

ROOT = os.environ.get("GM_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")


def serve_line(target, *assign):
    """The command `make TARGET ASSIGN...` would start the daemon with (make -n runs nothing)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PORT", "LISTEN", "MAKEFLAGS")}
    p = subprocess.run(["make", "-n", "-C", ROOT, target] + list(assign), capture_output=True,
                       text=True, env=env, timeout=60)
    if p.returncode != 0:
        raise AssertionError(p.stdout + p.stderr)
    lines = [l.strip() for l in p.stdout.splitlines() if "/gpumon serve" in l]
    if len(lines) != 1:
        raise AssertionError(p.stdout)
    return lines[0].split("/gpumon ", 1)[1].split()


class Make(unittest.TestCase):
    def test_port(self):
        self.assertEqual(serve_line("demo", "PORT=8123"),
                         ["serve", "--simulate", "4", "--listen", "127.0.0.1:8123"])
        self.assertEqual(serve_line("run", "PORT=8123"), ["serve", "--listen", "127.0.0.1:8123"])

    def test_listen(self):
        self.assertEqual(serve_line("run", "LISTEN=0.0.0.0:9999"),
                         ["serve", "--listen", "0.0.0.0:9999"])
        self.assertEqual(serve_line("demo", "LISTEN=[::1]:9401"),
                         ["serve", "--simulate", "4", "--listen", "[::1]:9401"])

    def test_default_is_serves_own(self):
        # No --listen: GPU_MONITOR_LISTEN, or 127.0.0.1:9401.
        self.assertEqual(serve_line("run"), ["serve"])
        self.assertEqual(serve_line("demo"), ["serve", "--simulate", "4"])


class Readme(unittest.TestCase):
    def assertIn(self, member, container, msg=None):
        # The README is long: say what is missing, not the whole of it.
        self.assertTrue(member in container, msg or "README.md lacks %r" % member)

    def setUp(self):
        with open(os.path.join(ROOT, "README.md")) as f:
            self.readme = " ".join(f.read().split())  # a phrase may wrap

    def test_port_documented(self):
        self.assertIn("make run PORT=", self.readme)
        self.assertIn("LISTEN=", self.readme)

    def test_grafana_dashboard_named_and_importable(self):
        path = "deploy/grafana/gpumon-dashboard.json"
        self.assertIn("`%s`" % path, self.readme)
        with open(os.path.join(ROOT, path)) as f:
            dash = json.load(f)
        self.assertIn('"%s"' % dash["title"], self.readme)
        self.assertIn("Dashboards > New > Import", self.readme)
        # What provisioning must replace is the dashboard's own data source input.
        for i in dash["__inputs"]:
            self.assertIn("${%s}" % i["name"], self.readme)


if __name__ == "__main__":
    unittest.main()
