"""The installed documentation follows the help texts: docs/gpumon.1 is what scripts/gen-man.py
makes of this build's --help output (`make man` regenerates it), and the bash completion
(deploy/gpumon.bash) offers every command and every option the help texts list."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

from gmtest import GPUMON, SOURCE, run

MAN = os.path.join(SOURCE, "docs", "gpumon.1")
GEN = os.path.join(SOURCE, "scripts", "gen-man.py")
COMPLETION = os.path.join(SOURCE, "deploy", "gpumon.bash")


def commands():
    out = run(["--help"]).stdout
    block = out.split("Commands:\n", 1)[1].split("\n\n", 1)[0]
    return [line.split()[0] for line in block.splitlines()]


def help_options(cmd):
    """The options a command's help lists: every -x/--xyz in the first column of its option
    lines (the text after two spaces is description)."""
    opts = set()
    for line in run([cmd, "--help"]).stdout.splitlines():
        if not re.match(r"^ {2,9}-", line):
            continue
        term = re.split(r"\s{2,}", line.strip(), maxsplit=1)[0]
        opts.update(re.findall(r"(?:^|[\s,])(--?[A-Za-z][\w-]*)", term))
    return opts


class ManPage(unittest.TestCase):
    def test_committed_page_is_current(self):
        with tempfile.TemporaryDirectory() as tmp:
            fresh = os.path.join(tmp, "gpumon.1")
            subprocess.run([sys.executable, GEN, GPUMON, fresh], check=True, timeout=60)
            with open(fresh, encoding="utf-8") as f:
                want = f.read()
        with open(MAN, encoding="utf-8") as f:
            got = f.read()
        self.assertEqual(got, want, "docs/gpumon.1 is out of date with gpumon --help: run `make man`")

    def test_page_covers_every_command_and_option(self):
        with open(MAN, encoding="utf-8") as f:
            page = f.read().replace("\\-", "-")
        for cmd in commands():
            self.assertIn(f".SH GPUMON {cmd.upper()}", page)
            for opt in help_options(cmd):
                self.assertIn(opt, page, f"gpumon {cmd} {opt}")

    def test_page_formats_without_warnings(self):
        if not shutil.which("groff"):
            self.skipTest("groff is not installed (groff-base)")
        p = subprocess.run(["groff", "-man", "-ww", "-z", MAN], capture_output=True, text=True)
        self.assertEqual((p.returncode, p.stderr), (0, ""))


class Completion(unittest.TestCase):
    def test_every_command_and_option_completes(self):
        with open(COMPLETION, encoding="utf-8") as f:
            text = f.read()
        listed = re.search(r"local commands='([^']*)'", text).group(1).split()
        self.assertEqual(listed, commands())
        for cmd in commands():
            m = re.search(rf"_gpumon_opts_{cmd}='([^']*)'", text)
            self.assertIsNotNone(m, f"no option list for {cmd}")
            have = set(m.group(1).split())
            missing = help_options(cmd) - have
            self.assertEqual(missing, set(), f"gpumon {cmd}: options missing from deploy/gpumon.bash")
            extra = have - help_options(cmd)
            self.assertEqual(extra, set(), f"gpumon {cmd}: options in deploy/gpumon.bash that --help lacks")

    def test_completion_parses(self):
        subprocess.run(["bash", "-n", COMPLETION], check=True)


if __name__ == "__main__":
    unittest.main()
