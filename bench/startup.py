#!/usr/bin/python3
"""startup.py - time from exec of `gpumon serve` to the first 200 on /api/gpus.

Picks a free loopback port, starts the daemon on it, and polls GET /api/gpus every INTERVAL
seconds on fresh connections (connection refused while it is not listening yet) until a 200
arrives; also notes when the port first accepted a connection. Median of RUNS runs.
Usage: bench/startup.py GPUMON [RUNS=10] [SIMULATE=8] [INTERVAL=0.002] [extra serve flags...]
"""
import http.client
import socket
import statistics
import subprocess
import sys
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def one_run(gpumon, simulate, interval, extra):
    port = free_port()
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [gpumon, "serve", "--simulate", str(simulate), "--listen", f"127.0.0.1:{port}",
         "--log-level", "warn"] + extra,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t_accept = None
    try:
        while time.monotonic() - t0 < 30:
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
                c.request("GET", "/api/gpus")
                if t_accept is None:
                    t_accept = time.monotonic() - t0
                r = c.getresponse()
                r.read()
                c.close()
                if r.status == 200:
                    return time.monotonic() - t0, t_accept
            except (ConnectionRefusedError, ConnectionResetError, http.client.HTTPException):
                pass
            time.sleep(interval)
        raise RuntimeError("no 200 within 30 s")
    finally:
        proc.terminate()
        proc.wait()


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    gpumon = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    simulate = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    interval = float(sys.argv[4]) if len(sys.argv) > 4 else 0.002
    extra = sys.argv[5:]
    firsts = []
    for i in range(runs):
        t, ta = one_run(gpumon, simulate, interval, extra)
        firsts.append(t)
        print(f"run={i + 1} first_200_ms={t * 1000:.1f} first_accept_ms={ta * 1000:.1f}")
    print(f"median first_200_ms={statistics.median(firsts) * 1000:.1f} "
          f"min={min(firsts) * 1000:.1f} max={max(firsts) * 1000:.1f} runs={runs} "
          f"simulate={simulate} poll_every_ms={interval * 1000:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
