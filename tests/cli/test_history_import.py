"""`gpumon history import` of vLLM (`vllm bench serve --save-result`) and GenAI-Perf
(profile_export_genai_perf.json) result files, `history export --format vllm` back to vLLM's
shape (round trips keep every figure), and `history export --format html`: one self-contained
page. The fixtures in tests/fixtures/import are written from the keys those tools' sources
write (vllm/benchmarks/serve.py, genai_perf/export_data/json_exporter.py)."""
import html.parser
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unittest
import urllib.error
import urllib.request

from gmtest import FIXTURES, GPUMON, env, run
from test_bench import FakeServer

IMPORT = os.path.join(FIXTURES, "import")
# The figures a point keeps through a round trip, and a distribution's statistics.
FIGURES = ("requests", "completed", "failed", "duration_s", "requests_per_s",
           "output_tokens_per_s", "total_tokens_per_s", "output_tokens", "input_tokens",
           "concurrency", "request_rate", "peak_concurrency")
DISTS = ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms")
STATS = ("mean", "std", "p50", "p90", "p95", "p99")


class Page(html.parser.HTMLParser):
    """Checks that tags nest and close, and collects every URL attribute."""
    VOID = {"meta", "br", "hr", "img", "input", "link", "circle", "line", "polyline", "path",
            "rect"}

    def __init__(self):
        super().__init__()
        self.stack, self.urls, self.tags, self.errors = [], [], set(), []

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.urls += [v for k, v in attrs if k in ("src", "href", "xlink:href", "action") and v]
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.add(tag)
        self.urls += [v for k, v in attrs if k in ("src", "href", "xlink:href") and v]

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append("</%s> closes <%s>" % (tag, self.stack[-1] if self.stack else ""))
        else:
            self.stack.pop()


class HistoryImport(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gm-import-")
        self.db = os.path.join(self.tmp, "gpumon.db")
        self.servers = []

    def tearDown(self):
        for s in self.servers:
            s.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def history(self, *args, rc=0):
        p = run(["history", "--db", self.db] + list(args), env=env())
        self.assertEqual(p.returncode, rc, p.stdout + p.stderr)
        return p

    def imported(self, path):
        """Imports path; returns the stored benchmark's id."""
        out = self.history("import", path).stdout
        m = re.search(r"imported .* as (\S+):", out)
        self.assertTrue(m, out)
        return m.group(1)

    def doc(self, bid):
        return json.loads(self.history("show", bid, "--format", "json").stdout)

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def assertSameFigures(self, a, b):
        for k in FIGURES:
            self.assertEqual(a.get(k), b.get(k), k)
        for d in DISTS:
            for s in STATS:
                va, vb = (a.get(d) or {}).get(s), (b.get(d) or {}).get(s)
                if va is None or vb is None:
                    self.assertEqual(va, vb, "%s.%s" % (d, s))
                else:
                    self.assertAlmostEqual(va, vb, places=6, msg="%s.%s" % (d, s))

    # ---- import ----------------------------------------------------------------------------

    def test_vllm_result(self):
        bid = self.imported(os.path.join(IMPORT, "vllm_concurrency8.json"))
        listed = json.loads(self.history("list", "--format", "json").stdout)
        self.assertEqual([(e["id"], e["kind"]) for e in listed], [(bid, "bench")])
        self.assertIn(" import ", listed[0]["command"])
        doc = self.doc(bid)
        self.assertEqual(doc["source"], "imported from vLLM")
        self.assertEqual(doc["imported"], {"format": "vllm", "file": "vllm_concurrency8.json"})
        self.assertEqual(doc["model"], "meta-llama/Llama-3.1-8B-Instruct")
        self.assertEqual(doc["api"], "chat")
        self.assertTrue(bid.startswith("20261120-"), bid)  # the run's date, not the import's
        [p] = doc["points"]
        self.assertEqual(p["concurrency"], 8)
        self.assertEqual(p["requests_per_s"], 4.846)
        self.assertEqual(p["output_tokens_per_s"], 620.3)
        self.assertEqual(p["ttft_ms"], {"mean": 95.2, "std": 21.4, "p50": 88.1, "p99": 161.7})
        self.assertEqual(p["tpot_ms"]["p99"], 14.6)
        self.assertEqual((p["completed"], p["failed"], p["output_tokens"]), (200, 0, 25600))
        # No GPU was sampled: the GPU figures are absent, never zero.
        for k in ("energy_j", "output_tokens_per_joule", "gpu_monitoring", "valid"):
            self.assertIsNone(p.get(k), k)
        table = self.history("show", bid).stdout
        self.assertIn("imported from vLLM", table)
        self.assertIn("Mean TTFT (ms):", table)
        self.assertIn("95.20", table)

    def test_vllm_appended_results_are_a_sweep(self):
        bid = self.imported(os.path.join(IMPORT, "vllm_rate_sweep_appended.json"))
        doc = self.doc(bid)
        self.assertEqual(doc["label"], "sweep-rate")
        self.assertEqual([p["request_rate"] for p in doc["points"]], [2.0, 8.0])
        self.assertEqual([p["e2e_ms"]["p90"] for p in doc["points"]], [1402.0, 1402.0])
        self.assertEqual([p["ttft_ms"]["p90"] for p in doc["points"]], [80.5, 260.9])

    def test_vllm_nan_statistics_read_as_absent(self):
        doc = self.doc(self.imported(os.path.join(IMPORT, "vllm_nothing_completed.json")))
        [p] = doc["points"]
        self.assertEqual((p["completed"], p["failed"]), (0, 200))
        self.assertNotIn("ttft_ms", p)

    def test_genai_perf_export(self):
        bid = self.imported(os.path.join(IMPORT, "profile_export_genai_perf.json"))
        doc = self.doc(bid)
        self.assertEqual(doc["source"], "imported from GenAI-Perf")
        self.assertEqual(doc["model"], "llama-3.1-8b-instruct")
        self.assertEqual(doc["api"], "chat")
        [p] = doc["points"]
        self.assertEqual(p["concurrency"], 4)
        self.assertEqual(p["requests_per_s"], 3.79)
        self.assertEqual(p["output_tokens_per_s"], 484.77)
        self.assertEqual((p["ttft_ms"]["mean"], p["ttft_ms"]["p99"]), (41.83, 71.33))
        # GenAI-Perf's inter-token latency is per request (E2E - TTFT) / (tokens - 1): TPOT.
        self.assertEqual(p["tpot_ms"]["p50"], 7.88)
        self.assertEqual(p["e2e_ms"]["max"], 1223.4)
        self.assertNotIn("requests", p)  # request_count 0: it ran for a time, not a count
        # The file says no duration: unknown in the document and the list, never 0 s.
        self.assertIsNone(doc["duration_s"])
        out = subprocess.run([GPUMON, "history", "list", "--db", self.db, "--json"],
                             capture_output=True, text=True, env=env())
        [row] = [r for r in json.loads(out.stdout) if r["id"] == bid]
        self.assertIsNone(row["duration_seconds"])

    def test_broken_or_foreign_files_are_refused(self):
        with open(os.path.join(IMPORT, "vllm_concurrency8.json")) as f:
            good = json.load(f)
        with open(os.path.join(IMPORT, "profile_export_genai_perf.json")) as f:
            genai = json.load(f)
        cases = {
            "truncated.json": (json.dumps(good)[:200], "not JSON"),
            "empty.json": ("", "empty"),
            "array.json": ("[1, 2]", "not a result file"),
            "snapshot.json": (json.dumps({"kind": "snapshot", "gpus": []}), "neither a vLLM"),
            "type.json": (json.dumps(dict(good, request_throughput="fast")), "neither a vLLM"),
            "count.json": (json.dumps(dict(good, completed=-3)), "\"completed\""),
            "rate.json": (json.dumps(dict(good, request_rate="soon")), "\"request_rate\""),
            "ttft.json": (json.dumps(dict(good, p99_ttft_ms="slow")), "\"p99_ttft_ms\""),
            "unit.json": (json.dumps(dict(genai, time_to_first_token=dict(
                genai["time_to_first_token"], unit="ns"))), "not ms"),
            "append.json": (json.dumps(good) + "\n" + json.dumps(genai), "result 2"),
            "nul.json": (json.dumps(good) + "\0", "not JSON"),
        }
        for name, (text, why) in cases.items():
            p = self.history("import", self.write(name, text), rc=2)
            self.assertIn(name, p.stderr)
            self.assertIn(why, p.stderr, name)
        p = self.history("import", os.path.join(self.tmp, "missing.json"), rc=1)
        self.assertIn("No such file", p.stderr)
        self.assertFalse(os.path.exists(self.db))  # nothing stored, not even a database
        self.history("import", rc=2)

    # ---- export as vLLM --------------------------------------------------------------------

    def test_vllm_round_trip_of_a_vllm_file(self):
        for name in ("vllm_concurrency8.json", "vllm_rate_sweep_appended.json"):
            first = self.doc(self.imported(os.path.join(IMPORT, name)))
            out = os.path.join(self.tmp, "again-" + name)
            self.history("export", first["id"], "--format", "vllm", "-o", out)
            with open(out) as f:
                lines = [json.loads(l) for l in f]
            self.assertEqual(len(lines), len(first["points"]))
            with open(os.path.join(IMPORT, name)) as f:
                original = [json.loads(l) for l in f if l.strip()]
            for mine, theirs in zip(lines, original):
                for k in ("request_throughput", "output_throughput", "mean_ttft_ms",
                          "median_ttft_ms", "p99_ttft_ms", "max_concurrency", "request_rate",
                          "num_prompts", "model_id", "backend", "date"):
                    if isinstance(theirs.get(k), float):  # written to 12 significant digits
                        self.assertAlmostEqual(mine.get(k), theirs[k], delta=abs(theirs[k]) * 1e-11)
                    else:
                        self.assertEqual(mine.get(k), theirs.get(k), k)
            again = self.doc(self.imported(out))
            for a, b in zip(first["points"], again["points"]):
                self.assertSameFigures(a, b)

    def test_vllm_round_trip_of_a_gpumon_benchmark(self):
        s = FakeServer(self.tmp, "--ttft-ms", "5")
        self.servers.append(s)
        out = os.path.join(self.tmp, "bench.json")
        p = run(["bench", "--url", s.url, "--concurrency", "1,4", "--requests", "12",
                 "--output-tokens", "8", "--idle-seconds", "0", "-q", "--db", self.db,
                 "-o", out, "--label", "mine"], env=env(), timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out) as f:
            bench = json.load(f)
        one = os.path.join(self.tmp, "point2.json")
        self.history("export", bench["id"], "--format", "vllm", "--point", "2", "-o", one)
        with open(one) as f:
            v = json.load(f)
        self.assertEqual(v["max_concurrency"], 4)
        self.assertEqual(v["request_rate"], "inf")
        self.assertEqual(v["backend"], "openai")
        back = self.doc(self.imported(one))
        self.assertEqual(back["source"], "imported from vLLM")
        self.assertSameFigures(bench["points"][1], back["points"][0])
        p = self.history("export", bench["id"], "--format", "vllm", "--point", "3", rc=2)
        self.assertIn("has 2 points", p.stderr)
        self.history("export", bench["id"], "--format", "csv", "--point", "1", rc=2)

    # ---- HTML --------------------------------------------------------------------------------

    def check_page(self, text):
        page = Page()
        page.feed(text)
        page.close()
        self.assertEqual(page.errors, [])
        self.assertEqual(page.stack, [])
        self.assertTrue(text.startswith("<!DOCTYPE html>"))
        self.assertIn("svg", page.tags)
        self.assertIn("style", page.tags)
        # Self-contained: nothing to fetch, no script.
        self.assertEqual(page.urls, [])
        self.assertFalse(re.search(r"(src|href)\s*=\s*[\"']?\s*(https?:)?//", text, re.I))
        for tag in ("script", "link", "img", "iframe", "object"):
            self.assertNotIn(tag, page.tags)
        return page

    def test_html_report_of_a_benchmark_and_a_comparison(self):
        s = FakeServer(self.tmp, "--ttft-ms", "5")
        self.servers.append(s)
        out = os.path.join(self.tmp, "bench.json")
        p = run(["bench", "--url", s.url, "--concurrency", "1,4", "--requests", "12",
                 "--output-tokens", "8", "--idle-seconds", "0", "-q", "--db", self.db,
                 "--simulate", "2", "-o", out, "--label", "a <b>bold</b> & label"], env=env(),
                timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out) as f:
            bid = json.load(f)["id"]
        report = os.path.join(self.tmp, "report.html")
        self.history("export", bid, "--format", "html", "-o", report)
        with open(report) as f:
            text = f.read()
        self.check_page(text)
        self.assertIn("a &lt;b&gt;bold&lt;/b&gt; &amp; label", text)
        self.assertNotIn("<b>bold", text)
        for title in ("Time to first token against throughput", "Output tokens/s against the load",
                      "Output tokens per joule against the load", "GPU power over the run",
                      "GPU utilization over the run"):
            self.assertIn(title, text)
        self.assertIn("GPU 1", text)  # a line per GPU from the points' timelines
        self.assertIn("simulated GPUs", text)

        vllm = self.imported(os.path.join(IMPORT, "vllm_concurrency8.json"))
        stdout = self.history("export", bid + "," + vllm, "--format", "html").stdout
        self.check_page(stdout)
        self.assertIn("Benchmark comparison", stdout)
        self.assertIn("imported from vLLM", stdout)
        self.assertIn("different settings", stdout)
        self.assertIn("an imported result has no GPU samples", stdout)
        p = self.history("export", bid + "," + vllm, "--format", "json", rc=2)
        self.assertIn("several IDs", p.stderr)

        # The daemon serves the same page, as an attachment (the dashboard's download).
        port_file = os.path.join(self.tmp, "serve.port")
        d = subprocess.Popen([GPUMON, "serve", "--listen", "127.0.0.1:0", "--port-file", port_file,
                              "--simulate", "1", "--db", self.db, "--log-level", "error"],
                             env=env())
        try:
            for _ in range(1000):
                if os.path.exists(port_file) and os.path.getsize(port_file):
                    break
                time.sleep(0.02)
            with open(port_file) as f:
                base = "http://127.0.0.1:%d/api/benchmarks/" % int(f.read())
            with urllib.request.urlopen(base + bid + "/report.html", timeout=20) as r:
                self.assertEqual(r.headers["Content-Type"], "text/html; charset=utf-8")
                self.assertIn("gpumon-%s.html" % bid, r.headers["Content-Disposition"])
                served = r.read().decode()
            self.check_page(served)
            self.assertEqual(re.sub(r"Written by gpumon [^<]*", "", served),
                             re.sub(r"Written by gpumon [^<]*", "", text))
            for bad in ("nope/report.html", bid + "/report.htm"):
                with self.assertRaises(urllib.error.HTTPError) as e:
                    urllib.request.urlopen(base + bad, timeout=20)
                self.assertEqual(e.exception.code, 404, bad)
        finally:
            d.send_signal(signal.SIGTERM)
            d.wait(timeout=20)


if __name__ == "__main__":
    unittest.main()
