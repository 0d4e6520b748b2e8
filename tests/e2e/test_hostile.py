"""The hostile-input suite of the HTTP transport (src/server/http.c) and the WebSocket streams
(src/server/ws.c) end to end, against the real binary (their contracts in-process:
tests/unit/test_http.c and test_ws.c).

The daemon under hostile clients, over raw sockets: pipelining, bodies that never come, header
names that are prefixes of real ones, request smuggling, slowloris, a connection flood at the cap,
bytes that are not UTF-8, protocol strictness, and WebSocket protocol abuse. After each phase
/api/health must answer within a second. Each case reproduces a defect of issue #15 that the
daemon had on libwebsockets 4.1."""
import base64
import json
import os
import socket
import struct
import time
import unittest

from daemon import Daemon

HEALTH = b"GET /api/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"


def exchange(port, data, timeout=3.0, until_close=True):
    """Sends data on a fresh connection; returns (bytes received, seconds taken, closed by the
    server). Reads until the server closes or timeout."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    t0 = time.time()
    s.sendall(data)
    out, closed = b"", False
    try:
        while True:
            b = s.recv(65536)
            if not b:
                closed = True
                break
            out += b
            if not until_close and b"\r\n\r\n" in out:
                break
    except socket.timeout:
        pass
    except ConnectionResetError:
        closed = True
    s.close()
    return out, time.time() - t0, closed


def responses(raw):
    """Splits raw HTTP/1.1 responses (each with a Content-Length) into (status, headers, body)."""
    res = []
    while raw.startswith(b"HTTP/1.1 "):
        head, sep, rest = raw.partition(b"\r\n\r\n")
        if not sep:
            break
        lines = head.decode("latin1").split("\r\n")
        status = int(lines[0].split()[1])
        hdrs = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            hdrs[k.strip().lower()] = v.strip()
        n = 0 if status in (100, 101, 204, 304) else int(hdrs.get("content-length", "0"))
        res.append((status, hdrs, rest[:n]))
        raw = rest[n:]
    return res


class Hostile(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # A small ASan quarantine (under the sanitizers), so RSS means what it says.
        asan = {"ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=1"}
        cls.d = Daemon(["--poll-interval", "100", "--db", "none"], extra_env=asan).start()

    @classmethod
    def tearDownClass(cls):
        rc = cls.d.stop()
        assert rc == 0, "exit %s: %s" % (rc, cls.d.log())

    def assertHealthy(self):
        out, took, _ = exchange(self.d.port, HEALTH, timeout=2)
        r = responses(out)
        self.assertTrue(r and r[0][0] == 200, "no health answer: %r" % out[:200])
        self.assertLess(took, 1.0)

    def session_count(self):
        return len(self.d.get_json("/api/sessions?kind=session")["sessions"])

    # ---- defect 1: a pipelined request with a body ------------------------------------------

    def test_pipelined_request_with_body(self):
        data = (b"GET /api/health HTTP/1.1\r\nHost: x\r\n\r\n"
                b"POST /api/sessions/nope/stop HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: 2\r\n\r\n{}"
                b"GET /api/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        out, took, closed = exchange(self.d.port, data)
        self.assertEqual([r[0] for r in responses(out)], [200, 404, 200])
        self.assertTrue(closed)
        self.assertHealthy()

    def stop_running_sessions(self):
        for row in self.d.get_json("/api/sessions?kind=session")["sessions"]:
            if row["status"] == "running":
                self.assertEqual(self.d.call("/api/sessions/%s/stop" % row["id"], "POST", {})[0], 200)

    def test_the_issues_own_reproduction(self):
        # Issue #15's one packet, verbatim: a GET pipelined with a POST /api/sessions and its body
        # (it starts a session), and the bodiless POST of defect 2, answered at once.
        data = (b"GET /api/health HTTP/1.1\r\nHost: x\r\n\r\n"
                b"POST /api/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: 2\r\n\r\n{}")
        try:
            out, _, _ = exchange(self.d.port, data, timeout=1.5)
            self.assertEqual([r[0] for r in responses(out)], [200, 201])
            self.assertHealthy()
            out, took, closed = exchange(
                self.d.port, b"POST /api/sessions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            self.assertEqual(responses(out)[0][0], 201)
            self.assertTrue(closed)
            self.assertLess(took, 1.0)
            self.assertHealthy()
        finally:
            self.stop_running_sessions()

    def test_pipelined_headers_then_body_later(self):
        s = socket.create_connection(("127.0.0.1", self.d.port), timeout=3)
        s.sendall(b"GET /api/health HTTP/1.1\r\nHost: x\r\n\r\n"
                  b"POST /api/sessions/nope/stop HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 2\r\nConnection: close\r\n\r\n")
        time.sleep(0.3)
        s.sendall(b"{}")
        out = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
        s.close()
        self.assertEqual([r[0] for r in responses(out)], [200, 404])
        self.assertHealthy()

    # ---- defect 2: POST without Content-Length ----------------------------------------------

    def test_bodiless_posts_are_answered(self):
        # A POST without Content-Length has no body (RFC 9112 6.3): answered at once.
        out, took, closed = exchange(
            self.d.port, b"POST /api/sessions/nope/stop HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        self.assertEqual(responses(out)[0][0], 404)
        self.assertTrue(closed)
        self.assertLess(took, 1.0)
        socks = []
        for _ in range(300):
            s = socket.create_connection(("127.0.0.1", self.d.port), timeout=3)
            s.sendall(b"POST /api/sessions/nope/stop HTTP/1.1\r\nHost: x\r\n\r\n")
            socks.append(s)
        self.assertHealthy()
        for s in socks:
            self.assertIn(b" 404 ", s.recv(4096))
            s.close()

    # ---- defect 4: header names that are prefixes of known ones, and smuggling ----------------

    def test_prefix_header_names(self):
        for name in (b"Acc", b"Hos", b"Conn", b"Us", b"Content-Len"):
            with self.subTest(name=name):
                out, took, _ = exchange(self.d.port, b"GET /api/health HTTP/1.1\r\nHost: x\r\n" + name +
                                        b": 5\r\nConnection: close\r\n\r\n")
                self.assertEqual(responses(out)[0][0], 200)
                self.assertLess(took, 1.0)

    def test_no_smuggled_request(self):
        status, _, created = self.d.call("/api/sessions", "POST", {"label": "keep"})
        self.assertEqual(status, 201)
        sid = created["id"]
        smuggled = ("DELETE /api/sessions/%s HTTP/1.1\r\nHost: x\r\n\r\n" % sid).encode()
        attacks = [
            # A prefix name, then the real length: the body is the body, never a request.
            b"POST /api/sessions/nope/stop HTTP/1.1\r\nHost: x\r\nContent-Len: 5\r\nConnection: close\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(smuggled) + smuggled,
            # Whitespace before the colon: a malformed name, refused and the connection closed.
            b"POST /api/sessions/nope/stop HTTP/1.1\r\nHost: x\r\nContent-Length : 0\r\n\r\n" + smuggled,
            # Two lengths, or a length and chunked: refused and closed.
            b"POST /api/sessions/nope/stop HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 0\r\nContent-Length: %d\r\n\r\n" % len(smuggled) + smuggled,
            b"POST /api/sessions/nope/stop HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled,
        ]
        for data in attacks:
            with self.subTest(data=data[:90]):
                out, _, closed = exchange(self.d.port, data)
                statuses = [r[0] for r in responses(out)]
                self.assertNotIn(204, statuses)
                self.assertEqual(len(statuses), 1, out[:400])
                self.assertTrue(closed)
        status, _, _ = self.d.call("/api/sessions/%s" % sid)
        self.assertEqual(status, 200, "the smuggled DELETE ran")
        self.d.call("/api/sessions/%s/stop" % sid, "POST")

    # ---- defect 3 and the connection cap: slowloris -----------------------------------------

    def test_slowloris(self):
        socks = []
        for i in range(300):
            s = socket.create_connection(("127.0.0.1", self.d.port), timeout=3)
            s.sendall(b"GET /api/health HTTP/1.1\r\nHost: x\r\n")
            socks.append(s)
        closed_at = {}
        t0 = time.time()
        worst = 0.0
        # A header line every 2 s; the head deadline (10 s) must end them while health answers.
        while time.time() - t0 < 13:
            for i, s in enumerate(socks):
                if i in closed_at:
                    continue
                try:
                    s.sendall(b"X-Slow-%d: 1\r\n" % i)
                except OSError:
                    closed_at[i] = time.time() - t0
            start = time.time()
            self.assertHealthy()
            worst = max(worst, time.time() - start)
            time.sleep(2)
        for s in socks:
            s.settimeout(0.2)
            try:
                if s.recv(100) == b"":
                    closed_at.setdefault(id(s), 0)
            except (socket.timeout, OSError):
                pass
            s.close()
        self.assertLess(worst, 1.0)
        self.assertGreaterEqual(len(closed_at), 290, "slow heads were not cut at the deadline")

    def test_half_open_connections(self):
        base = self.d.rss_kib()
        silent, halfway = [], []
        for _ in range(50):  # connect and say nothing
            silent.append(socket.create_connection(("127.0.0.1", self.d.port), timeout=3))
        for _ in range(50):  # half a request, then our side shut: the rest never comes
            s = socket.create_connection(("127.0.0.1", self.d.port), timeout=3)
            s.sendall(b"POST /api/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 100\r\n\r\n{")
            s.shutdown(socket.SHUT_WR)
            halfway.append(s)
        self.assertHealthy()
        # Past the head and body deadlines every one has been closed by the daemon.
        time.sleep(12)
        for s in silent + halfway:
            s.settimeout(2)
            try:
                while s.recv(4096):
                    pass
            except (socket.timeout, OSError) as e:
                self.fail("connection still open after the deadlines: %r" % e)
            s.close()
        self.assertHealthy()
        self.assertLess(self.d.rss_kib() - base, 4096)

    # ---- defect 5: bytes that are not UTF-8 in what an error quotes --------------------------

    def test_non_utf8_in_errors(self):
        cases = [(b"/api/history?metric=%ff", 400), (b"/api/gpus/%ff", 400), (b"/nope%e9", 404),
                 (b"/api/history?metric=" + b"%c3%a9" * 299 + b"%c3", 400)]
        for target, want in cases:
            with self.subTest(target=target[:40]):
                out, _, _ = exchange(self.d.port, b"GET " + target + b" HTTP/1.1\r\nHost: x\r\n"
                                     b"Connection: close\r\n\r\n")
                status, hdrs, body = responses(out)[0]
                self.assertEqual(status, want)
                self.assertIn("error", json.loads(body.decode("utf-8")))

    # ---- defect 11: strictness ---------------------------------------------------------------

    def test_strict_request_line_and_lengths(self):
        cases = [
            (b"PROPFIND /api/health HTTP/1.1\r\nHost: x\r\n\r\n", 501),
            (b"get /api/health HTTP/1.1\r\nHost: x\r\n\r\n", 501),
            (b"GET /api/health HTTP/2.0\r\nHost: x\r\n\r\n", 505),
            (b"GET /api/health HTTP/9.9\r\nHost: x\r\n\r\n", 505),
            (b"GET /api/health HTTPS/1.1\r\nHost: x\r\n\r\n", 400),
            (b"GET /api/health%00 HTTP/1.1\r\nHost: x\r\n\r\n", 400),
            (b"GET /api/health HTTP/1.1\r\nHost: x\r\nX-Ctl: a\x01b\r\n\r\n", 400),
            (b"CONNECT x:80 HTTP/1.1\r\nHost: x\r\n\r\n", 405),
            (b"POST /api/sessions HTTP/1.1\r\nHost: x\r\nContent-Length: 5 \r\n\r\nhello", 400),
            (b"POST /api/sessions HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\nhello", 400),
            (b"POST /api/sessions HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\nhello", 400),
            (b"GET /api/health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n", 431),
        ]
        for data, want in cases:
            with self.subTest(data=data[:50]):
                out, took, closed = exchange(self.d.port, data)
                self.assertTrue(out.startswith(b"HTTP/1.1 %d " % want), out[:200])
                self.assertTrue(closed)
                self.assertLess(took, 1.0)
                if want in (501, 405):  # ours: JSON, not a library's HTML page
                    body = responses(out)[0][2]
                    self.assertIn("error", json.loads(body))
        # A NUL byte in the path is answered (libmicrohttpd ends the path there), never dropped.
        out, _, _ = exchange(self.d.port, b"GET /nope\x00x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        self.assertTrue(out.startswith(b"HTTP/1.1 404 "), out[:100])
        self.assertHealthy()

    def test_client_errors_do_not_flood_the_log(self):
        before = len(self.d.log().splitlines())
        for _ in range(100):
            exchange(self.d.port, b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", timeout=1)
            exchange(self.d.port, b"BREW /x HTTP/1.1\r\nHost: x\r\n\r\n", timeout=1)
            exchange(self.d.port, b"GET / HTTPS/1.1\r\n\r\n", timeout=1)
        self.assertLessEqual(len(self.d.log().splitlines()) - before, 2, self.d.log()[-2000:])

    # ---- a NUL in a header value, malformed request lines, bodies announced and withheld ----

    def test_nul_in_a_header_value_is_refused(self):
        # libmicrohttpd ends the value at the NUL: the rest of the line (here a Content-Length a
        # proxy in front would honour) must not vanish, so the request is refused and the
        # connection closed before the pipelined request behind it.
        for data in [b"GET /api/health HTTP/1.1\r\nHost: x\r\nX: a\x00Content-Length: 40\r\n\r\n",
                     b"GET /api/health HTTP/1.1\r\nX: a\x00junk\r\nHost: x\r\n\r\n",
                     b"GET /api/health HTTP/1.1\nHost: x\nX: a\x00junk\n\n"]:
            with self.subTest(data=data[:60]):
                out, _, closed = exchange(self.d.port, data + HEALTH)
                r = responses(out)
                self.assertEqual([x[0] for x in r], [400], out[:300])
                self.assertIn("X", json.loads(r[0][2])["error"])
                self.assertTrue(closed)
        # The same head without the NUL is answered.
        out, _, _ = exchange(self.d.port, b"GET /api/health HTTP/1.1\nHost: x\nX: a\n\n" + HEALTH)
        self.assertEqual([x[0] for x in responses(out)], [200, 200])

    def test_malformed_request_lines_get_an_answer(self):
        many = b"&".join([b"a"] * 200)
        cases = [(b"GET /api/health?" + many + b" HTTP/1.1\r\nHost: x\r\n\r\n", 400),
                 (b"GET /" + b"a" * 8000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),
                 (b"GET /" + b"a" * 5000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),
                 (b"GET\t/api/health HTTP/1.1\r\nHost: x\r\n\r\n", 400)]
        for data, want in cases:
            with self.subTest(data=data[:30], want=want):
                out, took, closed = exchange(self.d.port, data)
                self.assertTrue(out.startswith(b"HTTP/1.1 %d " % want), out[:200])
                self.assertTrue(closed)
                self.assertLess(took, 1.0)
        # libmicrohttpd drops a request line with two spaces between its parts before gpumon sees
        # it: closed at once without an answer (docs/API.md says so), never served.
        out, took, closed = exchange(self.d.port, b"GET  /api/health  HTTP/1.1\r\nHost: x\r\n\r\n")
        self.assertEqual(out, b"")
        self.assertTrue(closed)
        self.assertLess(took, 1.0)
        self.assertHealthy()

    def test_announced_bodies_share_one_budget(self):
        # Connections announcing the largest body and sending none of it hold no memory each:
        # past the budget (8 MiB: 128 such bodies) the next is answered 503 with Retry-After.
        head = (b"POST /api/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: 65536\r\n\r\n")
        # A first round announcing a 2-byte body pays what 128 connections cost anyway (their
        # pools, ASan's shadow of them); the round measured after it reuses that memory, so its
        # growth is what the announced bodies themselves take.
        small = head.replace(b"65536", b"2")
        warm = [socket.create_connection(("127.0.0.1", self.d.port), timeout=3) for _ in range(128)]
        for s in warm:
            s.sendall(small)
        time.sleep(0.3)
        for s in warm:
            s.close()
        time.sleep(0.3)
        base = self.d.rss_kib()
        socks = []
        try:
            for _ in range(128):
                s = socket.create_connection(("127.0.0.1", self.d.port), timeout=3)
                s.sendall(head)
                socks.append(s)
            time.sleep(0.3)
            out, _, closed = exchange(self.d.port, head)
            r = responses(out)
            self.assertEqual(r[0][0], 503, out[:200])
            self.assertEqual(r[0][1].get("retry-after"), "1")
            self.assertTrue(closed)
            self.assertLess(self.d.rss_kib() - base, 4096)
        finally:
            for s in socks:
                s.close()
        # Once they are gone, a body is taken again.
        time.sleep(0.3)
        out, _, _ = exchange(self.d.port, head.replace(b"65536", b"2") + b"{}")
        self.assertNotEqual(responses(out)[0][0], 503, out[:200])
        self.stop_running_sessions()
        self.assertHealthy()

    # ---- WebSocket protocol abuse -----------------------------------------------------------

    def ws_open(self, path=b"/ws/metrics"):
        s = socket.create_connection(("127.0.0.1", self.d.port), timeout=3)
        key = base64.b64encode(os.urandom(16))
        s.sendall(b"GET " + path + b" HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " + key + b"\r\n\r\n")
        head = b""
        while b"\r\n\r\n" not in head:
            head += s.recv(1)
        self.assertTrue(head.startswith(b"HTTP/1.1 101 "), head)
        return s

    @staticmethod
    def frame(opcode, payload, fin=True, mask=True, length=None):
        n = len(payload) if length is None else length
        b1 = (0x80 if fin else 0) | opcode
        if n < 126:
            hdr = struct.pack("!BB", b1, (0x80 if mask else 0) | n)
        elif n < 65536:
            hdr = struct.pack("!BBH", b1, (0x80 if mask else 0) | 126, n)
        else:
            hdr = struct.pack("!BBQ", b1, (0x80 if mask else 0) | 127, n)
        if not mask:
            return hdr + payload
        key = os.urandom(4)
        return hdr + key + bytes(c ^ key[i % 4] for i, c in enumerate(payload))

    def close_code(self, s, timeout=3):
        """Reads frames until a close frame; returns its code (None when the socket just ends)."""
        s.settimeout(timeout)
        buf = b""
        while True:
            try:
                b = s.recv(65536)
            except (socket.timeout, ConnectionResetError):
                return None
            if not b:
                return None
            buf += b
            while len(buf) >= 2:
                op, n = buf[0] & 0x0F, buf[1] & 0x7F
                off = 2
                if n == 126:
                    if len(buf) < 4:
                        break
                    n, off = struct.unpack("!H", buf[2:4])[0], 4
                elif n == 127:
                    if len(buf) < 10:
                        break
                    n, off = struct.unpack("!Q", buf[2:10])[0], 10
                if len(buf) < off + n:
                    break
                if op == 0x8:
                    return struct.unpack("!H", buf[off:off + 2])[0] if n >= 2 else 1005
                buf = buf[off + n:]

    def test_websocket_protocol_abuse(self):
        cases = [
            ("unmasked", self.frame(0x1, b"hi", mask=False), 1002),
            ("invalid utf-8 text", self.frame(0x1, b"\xff\xfe"), 1007),
            ("utf-8 cut across fragments then ended", self.frame(0x1, b"\xc3", fin=False) +
             self.frame(0x0, b""), 1007),
            ("2^63-byte frame", struct.pack("!BBQ", 0x81, 0xFF, 1 << 63) + os.urandom(4) + b"x", 1002),
            ("2^62-byte frame", struct.pack("!BBQ", 0x81, 0xFF, 1 << 62) + os.urandom(4) + b"x", 1009),
            ("oversized message", self.frame(0x2, b"x" * 5000), 1009),
            ("fragmented ping", self.frame(0x9, b"p", fin=False), 1002),
            ("long ping", self.frame(0x9, b"p" * 126), 1002),
            ("reserved bits", bytes([0xC1]) + self.frame(0x1, b"a")[1:], 1002),
            ("continuation first", self.frame(0x0, b"a"), 1002),
            ("unknown opcode", self.frame(0x3, b"a"), 1002),
            ("bad close code", self.frame(0x8, struct.pack("!H", 999)), 1002),
            ("close", self.frame(0x8, struct.pack("!H", 1000) + b"bye"), 1000),
        ]
        for name, data, want in cases:
            with self.subTest(case=name):
                s = self.ws_open()
                s.sendall(data)
                self.assertEqual(self.close_code(s), want)
                s.close()
        # A ping is answered with a pong carrying its payload.
        s = self.ws_open()
        s.sendall(self.frame(0x9, b"hello"))
        s.settimeout(3)
        buf = b""
        deadline = time.time() + 3
        while b"\x8a\x05hello" not in buf and time.time() < deadline:
            buf += s.recv(65536)
        self.assertIn(b"\x8a\x05hello", buf)
        s.close()
        self.assertHealthy()

    def test_websocket_frame_too_big_is_closed_at_its_header(self):
        # A header announcing 1 GB and not one byte of payload: closed with 1009 at once.
        s = self.ws_open()
        s.sendall(struct.pack("!BBQ", 0x82, 0xFF, 1 << 30) + os.urandom(4))
        self.assertEqual(self.close_code(s, timeout=2), 1009)
        s.close()
        s = self.ws_open()
        s.sendall(struct.pack("!BBH", 0x81, 0xFE, 5000) + os.urandom(4))
        self.assertEqual(self.close_code(s, timeout=2), 1009)
        s.close()
        self.assertHealthy()

    def test_websocket_handshake_refusals(self):
        def hs(extra):
            out, _, _ = exchange(self.d.port, b"GET /ws/gpu HTTP/1.1\r\nHost: x\r\n" + extra + b"\r\n")
            return int(out.split()[1]) if out else None
        key = b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        self.assertEqual(hs(b"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 8\r\n" + key), 426)
        self.assertEqual(hs(b"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                            b"Sec-WebSocket-Key: short\r\n"), 400)
        self.assertEqual(hs(b"Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n" + key), 400)

    def test_websocket_churn_keeps_memory_flat(self):
        def churn(n):
            for _ in range(n):
                s = self.ws_open(b"/ws/gpu")
                s.close()
        churn(50)
        time.sleep(0.5)
        base = self.d.rss_kib()
        churn(300)
        time.sleep(0.5)
        self.assertLess(self.d.rss_kib() - base, 4096)
        self.assertHealthy()


class Limits(unittest.TestCase):
    def test_flood_at_the_connection_cap(self):
        with Daemon(["--max-connections", "32", "--db", "none"]) as d:
            base = _sockets(d.proc.pid)
            socks = []
            for _ in range(48):  # past the cap: the rest wait in the kernel's backlog
                try:
                    socks.append(socket.create_connection(("127.0.0.1", d.port), timeout=3))
                except OSError:
                    pass
            time.sleep(0.5)
            self.assertLessEqual(_sockets(d.proc.pid) - base, 32)
            # Idle connections are cut at the head deadline; the daemon answers again.
            time.sleep(11)
            out, took, _ = exchange(d.port, HEALTH, timeout=2)
            self.assertTrue(out.startswith(b"HTTP/1.1 200 "), out[:100])
            self.assertLess(took, 1.0)
            for s in socks:
                s.close()

    def test_refused_upgrades_do_not_flood_the_log(self):
        # --max-connections 16 leaves 12 WebSocket clients; each refusal past them would be a
        # warning: one line per interval says how many there were.
        with Daemon(["--max-connections", "16", "--db", "none"]) as d:
            up = (b"GET /ws/metrics HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
            held = []
            for _ in range(12):
                s = socket.create_connection(("127.0.0.1", d.port), timeout=3)
                s.sendall(up)
                self.assertTrue(s.recv(12).startswith(b"HTTP/1.1 101"))
                held.append(s)
            codes = [exchange(d.port, up, timeout=2)[0][9:12] for _ in range(200)]
            self.assertEqual(set(codes), {b"503"})
            lines = [x for x in d.log().splitlines() if "websocket refused" in x]
            self.assertEqual(len(lines), 1, lines[:5])
            self.assertIn("refused=1", lines[0])
            for s in held:
                s.close()

    def test_a_taken_address_fails_the_second_daemon(self):
        with Daemon(["--db", "none"]) as first:
            second = Daemon(["--db", "none"])
            second.args[second.args.index("127.0.0.1:0")] = "127.0.0.1:%d" % first.port
            with self.assertRaises(AssertionError) as e:
                second.start()
            self.assertNotEqual(second.proc.returncode, 0)
            self.assertIn("address already in use", str(e.exception))
            self.assertIn("--listen", str(e.exception))
            second.stop()
            # The first still answers every request.
            for _ in range(20):
                out, _, _ = exchange(first.port, HEALTH)
                self.assertTrue(out.startswith(b"HTTP/1.1 200 "), out[:100])

    def test_connections_per_address(self):
        # One address holds at most --max-connections-per-ip connections; another address (here
        # 127.0.0.2, loopback too) still gets in and is answered.
        with Daemon(["--max-connections-per-ip", "4", "--db", "none"]) as d:
            held = [socket.create_connection(("127.0.0.1", d.port), timeout=3) for _ in range(4)]
            time.sleep(0.3)
            out, took, closed = exchange(d.port, HEALTH, timeout=2)
            self.assertEqual(out, b"")
            self.assertTrue(closed)
            s = socket.socket()
            s.settimeout(2)
            s.bind(("127.0.0.2", 0))
            s.connect(("127.0.0.1", d.port))
            s.sendall(HEALTH)
            out = b""
            while True:
                b = s.recv(65536)
                if not b:
                    break
                out += b
            s.close()
            self.assertTrue(out.startswith(b"HTTP/1.1 200 "), out[:100])
            for s in held:
                s.close()
            time.sleep(0.3)
            out, _, _ = exchange(d.port, HEALTH, timeout=2)
            self.assertTrue(out.startswith(b"HTTP/1.1 200 "), out[:100])

    def test_listening_beyond_loopback_warns(self):
        for listen in ("0.0.0.0:0", "[::]:0"):
            with self.subTest(listen=listen):
                d = Daemon(["--db", "none"])
                d.args[d.args.index("127.0.0.1:0")] = listen
                try:
                    d.start()
                except AssertionError as e:
                    if "[::]" in listen and "cannot listen" in str(e):
                        self.skipTest("no IPv6 on this host")
                    raise
                d.stop()
                self.assertIn("without a token", d.log())
        with Daemon(["--db", "none"]) as d:
            pass
        self.assertNotIn("without a token", d.log())


def _sockets(pid):
    """Sockets the process holds."""
    n = 0
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            n += os.readlink("/proc/%d/fd/%s" % (pid, fd)).startswith("socket:")
        except OSError:
            pass
    return n


if __name__ == "__main__":
    unittest.main()
