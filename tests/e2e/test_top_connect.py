"""`gpumon top --connect URL` against a real `gpumon serve` (REST /api/gpus through libcurl),
in tmux: the token from --token or GPU_MONITOR_TOKEN, a 401 said in words, and a daemon that
goes away shown as such while the last reading stays."""
import os
import shutil
import sys
import unittest

from daemon import Daemon

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
from gmtest import env  # noqa: E402
from test_top import TMUX, TmuxScreen  # noqa: E402


@unittest.skipUnless(TMUX, "tmux is not installed (scripts/install-deps.sh test)")
class TopConnect(TmuxScreen, unittest.TestCase):
    def setUp(self):
        super().setUp()
        self.d = Daemon(["--simulate", "2", "--interval", "0.2", "--token", "s3cret"]).start()
        self.env = env()

    def tearDown(self):
        self.d.stop()
        shutil.rmtree(self.d.tmp, ignore_errors=True)
        super().tearDown()

    def test_token_401_and_daemon_gone(self):
        # No token: the daemon says 401 and top says what to do.
        self.start(["--connect", self.d.base, "--interval", "0.2"])
        text = self.wait_screen(lambda t: "answered 401" in t)
        self.assertIn("%s answered 401: give its token with --token or GPU_MONITOR_TOKEN" % self.d.base, text)
        self.keys("q")
        self.assertEqual(self.exit_status(), 0)
        self.tmux("kill-server")
        self.socket += "-b"

        # The token from the environment; the daemon's GPUs and processes, by URL.
        self.start(["--connect", self.d.base.replace("http://", ""), "--interval", "0.2"],
                   extra_env={"GPU_MONITOR_TOKEN": "s3cret"})
        text = self.wait_screen(lambda t: "python train.py --simulated" in t)
        lines = text.splitlines()
        self.assertTrue(lines[0].startswith(" gpumon top  %s  " % self.d.base), lines[0])
        self.assertIn("2 GPUs", lines[1])
        self.assertIn("provider sim", lines[1])
        self.assertRegex(text, r"0   H100 80GB HBM3 +UTIL\[")
        self.assertRegex(text, r"1   H100 80GB HBM3 +UTIL\[")
        # Simulated processes have PIDs no process of this host has: not killable.
        self.keys("K")
        self.wait_screen(lambda t: "is not a process this host shows in /proc" in t)

        # The daemon stops: the error, with the last reading still on the screen.
        self.d.stop()
        text = self.wait_screen(lambda t: "(showing the last reading)" in t)
        self.assertIn("python train.py --simulated", text)
        self.keys("q")
        self.assertEqual(self.exit_status(), 0)

    def test_token_flag(self):
        self.start(["--connect", self.d.base + "/", "--token", "s3cret", "--interval", "0.2"])
        self.wait_screen(lambda t: "python train.py --simulated" in t)
        self.keys("q")
        self.assertEqual(self.exit_status(), 0)


if __name__ == "__main__":
    unittest.main()
