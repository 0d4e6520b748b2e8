#!/usr/bin/env python3
"""starve.py - a hostile local peer against `gpumon serve` while /api/health is timed.

  starve.py PORT idle N SECONDS      N connections from 127.0.0.1 that send nothing (the head
                                     deadline cuts them: they reconnect at once, for SECONDS)
  starve.py PORT history N SECONDS   N connections from 127.0.0.1, each sending 3 pipelined
                                     /api/history requests and reading the answers, again and
                                     again for SECONDS

Meanwhile a probe (a process of its own, so the attacker's work never delays its timing) connects
from 127.0.0.2 (another loopback address: another client, as a
kubelet or Prometheus would be) every 20 ms and times GET /api/health to its last byte (2 s at
most; a timeout counts as 2000 ms). Prints one line: health_ms p50=.. p99=.. max=.. n=..
timeouts=.. Loopback only; everything it opens is closed when it ends."""
import multiprocessing
import selectors
import socket
import sys
import time

HOST = "127.0.0.1"
PROBE_FROM = "127.0.0.2"
HEALTH = b"GET /api/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
HISTORY = (b"GET /api/history?metric=utilization.gpu,memory.used,power.draw,temperature.gpu"
           b"&seconds=60 HTTP/1.1\r\nHost: x\r\n\r\n")


def probe(port, stop, results):
    out = []
    while not stop.is_set():
        t0 = time.monotonic()
        ok = False
        try:
            s = socket.socket()
            s.settimeout(2)
            s.bind((PROBE_FROM, 0))
            s.connect((HOST, port))
            s.sendall(HEALTH)
            buf = b""
            while True:
                b = s.recv(65536)
                if not b:
                    break
                buf += b
            ok = buf.startswith(b"HTTP/1.1 200 ")
            s.close()
        except OSError:
            pass
        ms = (time.monotonic() - t0) * 1000
        out.append(ms if ok else 2000.0)
        time.sleep(0.02)
    results.send(out)


def connect(port):
    s = socket.socket()
    s.setblocking(False)
    try:
        s.connect((HOST, port))
    except BlockingIOError:
        pass
    except OSError:
        s.close()
        return None
    return s


def attack(port, mode, n, seconds):
    sel = selectors.DefaultSelector()
    end = time.monotonic() + seconds
    live = {}

    def add():
        s = connect(port)
        if s is None:
            return
        live[s] = {"sent": False, "got": 0, "buf": b""}
        sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE)

    def drop(s):
        sel.unregister(s)
        s.close()
        del live[s]

    while time.monotonic() < end:
        while len(live) < n and time.monotonic() < end:
            add()
            if len(live) % 200 == 0:
                break  # accept some events between bursts
        for key, ev in sel.select(timeout=0.05):
            s, st = key.fileobj, live.get(key.fileobj)
            if st is None:
                continue
            if ev & selectors.EVENT_WRITE:
                if mode == "history" and not st["sent"]:
                    try:
                        s.send(HISTORY * 3)
                    except OSError:
                        drop(s)
                        continue
                    st["sent"] = True
                sel.modify(s, selectors.EVENT_READ)
            if ev & selectors.EVENT_READ:
                try:
                    b = s.recv(262144)
                except OSError:
                    b = b""
                if not b:
                    drop(s)  # cut by the daemon: reconnect on the next pass
                    continue
                if mode == "history":
                    st["got"] += b.count(b"HTTP/1.1 ")
                    if st["got"] >= 3:  # all three answered: send three more
                        st["got"] = 0
                        st["sent"] = False
                        sel.modify(s, selectors.EVENT_READ | selectors.EVENT_WRITE)
    for s in list(live):
        drop(s)


def main():
    port, mode, n, seconds = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    stop = multiprocessing.Event()
    recv_end, send_end = multiprocessing.Pipe(duplex=False)
    t = multiprocessing.Process(target=probe, args=(port, stop, send_end))
    t.start()
    try:
        attack(port, mode, n, seconds)
    finally:
        stop.set()
    lat = recv_end.recv()
    t.join()
    lat.sort()
    if not lat:
        print("health_ms n=0")
        return

    def pct(p):
        return lat[min(len(lat) - 1, int(p / 100 * len(lat)))]
    print("health_ms p50=%.1f p99=%.1f max=%.1f n=%d timeouts=%d" %
          (pct(50), pct(99), lat[-1], len(lat), sum(1 for x in lat if x >= 2000)))


if __name__ == "__main__":
    main()
