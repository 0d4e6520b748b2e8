"""`gpumon serve --token T` on a terminal prints the dashboard's address with the token in its
fragment, ready to open; into a file or a pipe (a journal, a log) it never writes the token."""
import os
import pty
import select
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
from gmtest import GPUMON, env  # noqa: E402

TOKEN = "s3cr&t+/x=1"


def serve(args, stderr):
    port_file = tempfile.mktemp(prefix="gm-url-port-")
    p = subprocess.Popen([GPUMON, "serve", "--listen", "127.0.0.1:0", "--port-file", port_file,
                          "--simulate", "1", "--db", "none", "--log-level", "error"] + args,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
                         env=env())
    return p, port_file


def stop(p, port_file):
    p.terminate()
    p.wait(timeout=10)
    if os.path.exists(port_file):
        os.unlink(port_file)


def read_tty(fd, until, timeout=15):
    """Reads the terminal's output until `until` and the end of that line appear."""
    out = b""
    end = time.time() + timeout
    while time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try:
                out += os.read(fd, 4096)
            except OSError:
                break
            i = out.find(until)
            if i >= 0 and b"\n" in out[i:]:
                break
    return out.decode()


class TokenUrl(unittest.TestCase):
    def test_terminal_gets_the_address_with_the_token(self):
        master, slave = pty.openpty()
        p, pf = serve(["--token", TOKEN], slave)
        os.close(slave)
        try:
            text = read_tty(master, b"dashboard:")
            with open(pf) as f:
                port = int(f.read())
        finally:
            stop(p, pf)
            os.close(master)
        line = [ln for ln in text.splitlines() if "dashboard:" in ln]
        self.assertEqual(len(line), 1, text)
        url = line[0].split("dashboard: ", 1)[1].strip()
        self.assertTrue(url.startswith("http://127.0.0.1:%d/#token=" % port), url)
        # The page reads the fragment with URLSearchParams: the same decoding as this.
        frag = urllib.parse.urlsplit(url).fragment
        self.assertEqual(urllib.parse.parse_qs(frag)["token"], [TOKEN])

    def test_generated_token_on_a_terminal(self):
        master, slave = pty.openpty()
        p, pf = serve(["--token", "generate"], slave)
        os.close(slave)
        try:
            text = read_tty(master, b"dashboard:")
            with open(pf) as f:
                port = int(f.read())
            line = [ln for ln in text.splitlines() if "dashboard:" in ln]
            self.assertEqual(len(line), 1, text)
            url = line[0].split("dashboard: ", 1)[1].strip()
            token = urllib.parse.parse_qs(urllib.parse.urlsplit(url).fragment)["token"][0]
            self.assertRegex(token, r"^[0-9a-f]{32}$")
            base = "http://127.0.0.1:%d/api/sessions" % port
            with self.assertRaises(urllib.error.HTTPError) as cm:
                urllib.request.urlopen(urllib.request.Request(base, data=b"{}", method="POST"))
            self.assertEqual(cm.exception.code, 401)
            req = urllib.request.Request(base + "?kind=session",
                                         headers={"Authorization": "Bearer " + token})
            self.assertEqual(urllib.request.urlopen(req).status, 200)
        finally:
            stop(p, pf)
            os.close(master)

    def test_generated_token_needs_a_terminal(self):
        # Into a pipe or a journal it would be a secret nobody can read, or one everybody can.
        p = subprocess.run([GPUMON, "serve", "--listen", "127.0.0.1:0", "--simulate", "1",
                            "--db", "none", "--token", "generate"], capture_output=True,
                           text=True, timeout=20, env=env())
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("--token generate shows the token on a terminal", p.stderr)

    def test_no_token_in_a_file(self):
        with tempfile.TemporaryFile() as f:
            p, pf = serve(["--token", TOKEN], f)
            try:
                for _ in range(500):
                    if os.path.exists(pf) and os.path.getsize(pf):
                        break
                    time.sleep(0.02)
            finally:
                stop(p, pf)
            f.seek(0)
            text = f.read().decode()
        self.assertIn("listening on", text)
        self.assertNotIn("#token=", text)
        self.assertNotIn("s3cr", text)

    def test_no_address_line_without_a_token(self):
        master, slave = pty.openpty()
        p, pf = serve([], slave)
        os.close(slave)
        try:
            text = read_tty(master, b"listening on")
        finally:
            stop(p, pf)
            os.close(master)
        self.assertIn("listening on", text)
        self.assertNotIn("dashboard:", text)


if __name__ == "__main__":
    unittest.main()
