#!/usr/bin/python3
"""trace_error.py - how far a client's TTFT and E2E are from the server's own, request by request.

Usage: trace_error.py SERVER_LOG CLIENT_TRACE
SERVER_LOG: tests/fakes/fake_openai --log (recv_ns, first_ns, last_ns per request id);
CLIENT_TRACE: gpumon bench --trace or bench/py_client.py --trace (sent_ns, first_ns, last_ns per
id), both CLOCK_MONOTONIC ns. The error of a request is the client's TTFT (first chunk received -
request sent) minus the server's (first chunk written - request arrived, by the kernel's receive
timestamp, so the server's own scheduling is on its side): what the client's own sending,
receiving and scheduling added. Prints one JSON line: n, and mean/p50/p90/p99/max of
the TTFT error and of the E2E error in ms."""
import json
import sys


def pct(v, p):
    """numpy's linear percentile of sorted v."""
    h = (len(v) - 1) * p / 100
    lo = int(h)
    return v[lo] if lo + 1 >= len(v) else v[lo] + (h - lo) * (v[lo + 1] - v[lo])


def summary(v):
    v = sorted(v)
    return {"mean": sum(v) / len(v), "p50": pct(v, 50), "p90": pct(v, 90), "p99": pct(v, 99),
            "max": v[-1]}


def main(log_path, trace_path):
    with open(log_path) as f:
        log = {e["id"]: e for e in map(json.loads, f)}
    ttft, e2e = [], []
    with open(trace_path) as f:
        for r in map(json.loads, f):
            s = log.get(r.get("id"))
            if not s or not r.get("first_ns") or s["outcome"] != "ok":
                continue
            # The request's arrival: the kernel's receive time when the server logs it.
            arrived = s.get("arrived_ns") or s["recv_ns"]
            ttft.append(((r["first_ns"] - r["sent_ns"]) - (s["first_ns"] - arrived)) / 1e6)
            e2e.append(((r["last_ns"] - r["sent_ns"]) - (s["last_ns"] - arrived)) / 1e6)
    if not ttft:
        sys.exit("trace_error.py: no request of the trace is in the log")
    print(json.dumps({"n": len(ttft), "ttft_error_ms": summary(ttft),
                      "e2e_error_ms": summary(e2e)}))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__.split("\n\n")[1])
    main(sys.argv[1], sys.argv[2])
