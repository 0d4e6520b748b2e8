#!/usr/bin/python3
"""job_watch.py - the measurements of bench/job-under-watch.sh.

  job_watch.py probe BASE TOKEN SECONDS HZ OUT
      GET BASE/api/health HZ times a second for SECONDS, a new connection each time (as a
      health checker opens one); one line per probe in OUT: "START_MS LATENCY_MS STATUS",
      START_MS on the wall clock. The latency runs from connect to the last byte of the answer.
  job_watch.py cadence FILE FROM_MS TO_MS
      FILE is bench/ws_fanout -t's log ("RECV_MS SEQ TIMESTAMP_MS" per frame of one client);
      the frames whose sample was taken between FROM_MS and TO_MS: the gaps between their
      samples' timestamps (the sampler's cadence), samples missing by seq, and the delivery
      delay (arrival minus the sample's timestamp). One JSON line.
  job_watch.py health OUT FROM_MS TO_MS
      the probes of OUT started between FROM_MS and TO_MS: latency p50/p99/max, failures.
  job_watch.py ttft SERVER_LOG POINT_JSON [TRACE]
      the client's TTFT against the fake server's log (tests/fakes/fake_openai --log). With
      TRACE (gpumon bench --trace): per request, as bench/trace_error.py computes it. Without
      (a daemon job: the daemon takes no trace file), from the stored point's distribution:
      its mean minus the server's mean over the same requests (exactly the mean of the
      per-request errors) and the differences of p50 and p99 (not the percentiles of the
      errors, an approximation). The server's side: its ok requests, the last COUNT by arrival
      (COUNT the point's TTFT count; the earlier ones are the server check). One JSON line."""
import http.client
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trace_error import pct, summary  # noqa: E402  the same percentile and summary


def probe(base, token, seconds, hz, out):
    host, port = base.replace("http://", "").rsplit(":", 1)
    period = 1.0 / float(hz)
    end = time.monotonic() + float(seconds)
    nxt = time.monotonic()
    with open(out, "w") as f:
        while time.monotonic() < end:
            start_ms = time.time() * 1e3
            t0 = time.monotonic()
            status = 0
            try:
                c = http.client.HTTPConnection(host, int(port), timeout=5)
                c.request("GET", "/api/health", headers={"Authorization": "Bearer " + token})
                r = c.getresponse()
                r.read()
                status = r.status
                c.close()
            except OSError:
                status = -1
            f.write("%.3f %.3f %d\n" % (start_ms, (time.monotonic() - t0) * 1e3, status))
            f.flush()
            nxt += period
            delay = nxt - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            else:
                nxt = time.monotonic()  # late: no burst to catch up


def stats(v):
    v = sorted(v)
    if not v:
        return None
    return {"n": len(v), "p50": round(pct(v, 50), 2), "p99": round(pct(v, 99), 2),
            "max": round(v[-1], 2)}


def cadence(path, lo, hi):
    rows = []
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) == 3 and p[2] != "-" and lo <= float(p[2]) <= hi:
                rows.append((float(p[0]), int(p[1]), float(p[2])))
    rows.sort(key=lambda r: r[1])
    gaps = [b[2] - a[2] for a, b in zip(rows, rows[1:])]
    missing = sum(b[1] - a[1] - 1 for a, b in zip(rows, rows[1:]))
    print(json.dumps({"frames": len(rows), "missing_by_seq": missing,
                      "gap_ms": stats(gaps), "delivery_ms": stats([r[0] - r[2] for r in rows])}))


def health(path, lo, hi):
    lat, failed = [], 0
    with open(path) as f:
        for line in f:
            start, ms, status = line.split()
            if lo <= float(start) <= hi:
                if status == "200":
                    lat.append(float(ms))
                else:
                    failed += 1
    s = stats(lat) or {}
    s["failed"] = failed
    s["over_50ms"] = sum(x > 50 for x in lat)
    print(json.dumps(s))


def ttft(log_path, point_path, trace_path=None):
    with open(log_path) as f:
        log = [e for e in map(json.loads, f) if e["outcome"] == "ok"]
    with open(point_path) as f:
        point = json.load(f)["points"][0]["ttft_ms"]
    log.sort(key=lambda e: e["n"])
    server = [(e["first_ns"] - (e.get("arrived_ns") or e["recv_ns"])) / 1e6
              for e in log[-point["count"]:]]
    server_sorted = sorted(server)
    out = {"n_client": point["count"], "n_server_ok": len(log),
           "mean_error_ms": round(point["mean"] - sum(server) / len(server), 4),
           "p50_diff_ms": round(point["p50"] - pct(server_sorted, 50), 4),
           "p99_diff_ms": round(point["p99"] - pct(server_sorted, 99), 4)}
    if trace_path:
        by_id = {e["id"]: e for e in log}
        err = []
        with open(trace_path) as f:
            for r in map(json.loads, f):
                s = by_id.get(r.get("id"))
                if s and r.get("first_ns"):
                    arrived = s.get("arrived_ns") or s["recv_ns"]
                    err.append(((r["first_ns"] - r["sent_ns"]) - (s["first_ns"] - arrived)) / 1e6)
        out["per_request_ms"] = {k: round(v, 4) for k, v in summary(err).items()}
        out["per_request_ms"]["n"] = len(err)
    print(json.dumps(out))


if __name__ == "__main__":
    cmd, args = (sys.argv[1], sys.argv[2:]) if len(sys.argv) > 1 else ("", [])
    if cmd == "probe" and len(args) == 5:
        probe(*args)
    elif cmd == "cadence" and len(args) == 3:
        cadence(args[0], float(args[1]), float(args[2]))
    elif cmd == "health" and len(args) == 3:
        health(args[0], float(args[1]), float(args[2]))
    elif cmd == "ttft" and len(args) in (2, 3):
        ttft(*args)
    else:
        sys.exit(__doc__.split("\n\n")[1])
