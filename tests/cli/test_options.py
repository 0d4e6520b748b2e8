"""The option handling every command shares (src/cli/common.c): provider flags, getopt errors,
number parsers and the no-GPU report, each command saying them in its own name."""
import json
import os
import shutil
import tempfile
import unittest

from gmtest import env, run

# Commands that take --provider/--simulate/--seed, with the arguments that complete them.
SOURCE_COMMANDS = {
    "query": [],
    "snapshot": [],
    "select": [],
    "wait": [],
    "record": ["--no-db", "--", "true"],
    "run": ["--no-db", "--", "true"],
}
ALL_COMMANDS = list(SOURCE_COMMANDS) + ["estimate", "diff", "history"]


class Base(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gm-options-test-")
        self.env = env(extra={"GPU_MONITOR_LEASE_DIR": os.path.join(self.tmp, "leases"),
                              "GPU_MONITOR_DB": os.path.join(self.tmp, "gpumon.db")})
        self.env.pop("CUDA_VISIBLE_DEVICES", None)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def gpumon(self, *args):
        return run(list(args), env=self.env)

    def usage_error(self, args, message):
        p = self.gpumon(*args)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertEqual(p.stderr, message + "\n")
        self.assertEqual(p.stdout, "")


class GetoptErrors(Base):
    def test_unknown_option(self):
        for cmd in ALL_COMMANDS:
            with self.subTest(cmd=cmd):
                self.usage_error([cmd, "--bogus"],
                                 f'gpumon {cmd}: unknown option "--bogus" (see gpumon {cmd} --help)')
        # serve reads its table's flags, then GPU_MONITOR_*: the same words.
        for flag in ("--bogus", "-Z", "-v"):
            with self.subTest(cmd="serve", flag=flag):
                self.usage_error(["serve", flag],
                                 f'gpumon serve: unknown option "{flag}" (see gpumon serve --help)')

    def test_missing_value(self):
        for cmd in SOURCE_COMMANDS:
            with self.subTest(cmd=cmd):
                self.usage_error([cmd, "--seed"], f"gpumon {cmd}: --seed needs a value")
        self.usage_error(["estimate", "--format"], "gpumon estimate: --format needs a value")
        self.usage_error(["diff", "--strict", "--power-tolerance-w"],
                         "gpumon diff: --power-tolerance-w needs a value")
        self.usage_error(["history", "--limit"], "gpumon history: --limit needs a value")

    def test_unexpected_argument(self):
        for cmd in ["query", "snapshot", "select", "wait"]:
            with self.subTest(cmd=cmd):
                self.usage_error([cmd, "--simulate", "1", "extra"],
                                 f'gpumon {cmd}: unexpected argument "extra"')
        self.usage_error(["estimate", "a.json", "b.json"], 'gpumon estimate: unexpected argument "b.json"')
        self.usage_error(["history", "list", "more"], 'gpumon history: unexpected argument "more"')


class Help(Base):
    """gpumon help [COMMAND], COMMAND -h, -v/--version, and what a typo gets."""

    def commands(self):
        out = self.gpumon("--help").stdout
        block = out.split("Commands:\n", 1)[1].split("\n\n", 1)[0]
        return [line.split()[0] for line in block.splitlines()]

    def test_help_and_version(self):
        usage = self.gpumon("--help")
        self.assertEqual(usage.returncode, 0)
        self.assertTrue(usage.stdout.startswith("usage: gpumon <command> [options]\n"))
        self.assertEqual(self.gpumon("help").stdout, usage.stdout)
        self.assertEqual(self.gpumon("-h").stdout, usage.stdout)
        bare = self.gpumon()
        self.assertEqual((bare.returncode, bare.stdout, bare.stderr), (2, "", usage.stdout))
        for flag in ("-v", "-V", "--version"):
            with self.subTest(flag=flag):
                p = self.gpumon(flag)
                self.assertEqual(p.returncode, 0)
                self.assertRegex(p.stdout, r"^gpumon \d+\.\d+\.\d+\n$")

    def test_every_command_has_help(self):
        cmds = self.commands()
        self.assertIn("top", cmds)
        for cmd in cmds:
            with self.subTest(cmd=cmd):
                long_help = self.gpumon(cmd, "--help")
                self.assertEqual(long_help.returncode, 0, long_help.stderr)
                self.assertEqual(long_help.stderr, "")
                self.assertEqual(self.gpumon(cmd, "-h").stdout, long_help.stdout)
                self.assertEqual(self.gpumon("help", cmd).stdout, long_help.stdout)
                if cmd != "smi":  # nvidia-smi's own help text
                    self.assertIn(f"usage: gpumon {cmd}", long_help.stdout)

    def test_typos_get_the_likely_command(self):
        for typo, want in (("qeury", "query"), ("recrod", "record"), ("hist", "history"),
                           ("sever", "serve"), ("tpo", "top"), ("wiat", "wait")):
            with self.subTest(typo=typo):
                self.usage_error([typo], f'gpumon: unknown command "{typo}"; did you mean "{want}"?')
        self.usage_error(["frobnicate"], 'gpumon: unknown command "frobnicate" (see gpumon --help)')
        self.usage_error(["help", "qeury"], 'gpumon: unknown command "qeury"; did you mean "query"?')
        self.usage_error(["help", "query", "run"], "gpumon help: one command at a time (gpumon help <command>)")
        self.usage_error(["--verison"], 'gpumon: unknown option "--verison"; did you mean "--version"?')
        self.usage_error(["--bogus"], 'gpumon: unknown option "--bogus" (see gpumon --help)')

    def test_subcommand_typos(self):
        for argv, msg in ((["containers", "lsit"], 'unknown subcommand "lsit"; did you mean "list"?'),
                          (["containers", "clean"], 'unknown subcommand "clean"; did you mean "cleanup"?'),
                          (["cluster", "stauts"], 'unknown subcommand "stauts"; did you mean "status"?'),
                          (["cluster", "frob"], 'unknown subcommand "frob" (status or select'),
                          (["cluster", "-Z"], 'unknown option "-Z" before the subcommand'),
                          (["cluster", "status", "-Z"], 'unknown option "-Z" (see gpumon cluster status --help)')):
            with self.subTest(argv=argv):
                p = self.gpumon(*argv)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(f"gpumon {argv[0]}", p.stderr)
                self.assertIn(msg, p.stderr)

    def test_option_typos_and_misuse(self):
        self.usage_error(["record", "--intervl", "1", "--", "true"],
                         'gpumon record: unknown option "--intervl"; did you mean "--interval"?')
        self.usage_error(["query", "--fromat", "json"],
                         'gpumon query: unknown option "--fromat"; did you mean "--format"?')
        self.usage_error(["select", "--count=2", "--min-fre-mb=3"],
                         'gpumon select: unknown option "--min-fre-mb"; did you mean "--min-free-mb"?')
        self.usage_error(["record", "--snap", "--", "true"],
                         'gpumon record: option "--snap" is ambiguous; it could be --snapshot, '
                         '--snapshot-window-ms')
        self.usage_error(["record", "--no-db=yes", "--", "true"], "gpumon record: --no-db takes no value")
        # A short option inside a cluster is named by its letter, not by what came before.
        self.usage_error(["query", "--format=json", "-xh"], 'gpumon query: unknown option "-x" (see gpumon query --help)')
        self.usage_error(["query", "-i"], "gpumon query: -i needs a value")

    def test_unknown_short_option_everywhere(self):
        for cmd in ALL_COMMANDS + ["bench", "top", "containers"]:
            with self.subTest(cmd=cmd):
                self.usage_error([cmd, "-Z"], f'gpumon {cmd}: unknown option "-Z" (see gpumon {cmd} --help)')


class Letters(Base):
    """One meaning per letter in every command (docs/CLI.md): -n is a number of GPUs, -i the
    GPUs, -l query's loop; letters a command gave up say what replaced them."""

    def test_removed_letters_name_their_replacement(self):
        gpus = "-n is --count, a number of GPUs, in every command"
        loop = "-l is --loop, in query and smi"
        for cmd, letter, now, why, rest in (
            ("record", "n", "--interval", gpus, ["--", "true"]),
            ("record", "l", "--label", loop, ["--", "true"]),
            ("run", "l", "--label", loop, ["--", "true"]),
            ("bench", "l", "--label", loop, []),
            ("history", "n", "--limit", gpus, []),
        ):
            with self.subTest(cmd=cmd, letter=letter):
                self.usage_error([cmd, "-" + letter, "x"] + rest,
                                 f"gpumon {cmd}: -{letter} is no longer short for {now}; use {now} ({why})")

    def test_run_n_is_a_gpu_count(self):
        # `run -n 2` once set a 2 s sampling interval: it now asks for two GPUs, and the
        # interval stays at its default.
        for flag in ("-n", "--count", "-c"):
            with self.subTest(flag=flag):
                out = os.path.join(self.tmp, "run%s.json" % flag)
                p = self.gpumon("run", "--simulate", "3", flag, "2", "--wait", "0", "--no-db", "-q",
                                "-o", out, "--", "true")
                self.assertEqual(p.returncode, 0, p.stderr)
                with open(out) as f:
                    doc = json.load(f)
                self.assertEqual(len(doc["selection"]["indices"]), 2)
                self.assertEqual(doc["interval_seconds"], 1)
        out = os.path.join(self.tmp, "interval.json")
        p = self.gpumon("run", "--simulate", "1", "--interval", "0.05", "--wait", "0", "--no-db", "-q",
                        "-o", out, "--", "true")
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out) as f:
            self.assertEqual(json.load(f)["interval_seconds"], 0.05)

    def test_n_and_count_are_a_gpu_count_everywhere(self):
        # The same letter and word, with the same range check, in every command that takes a
        # number of GPUs (cluster select also keeps --gpus N, the name fleet.md uses).
        for argv in (["select"], ["wait"], ["run"], ["bench", "--url", "http://127.0.0.1:9"],
                     ["cluster", "select"]):
            for flag in ("-n", "--count"):
                with self.subTest(cmd=argv[0], flag=flag):
                    p = self.gpumon(*argv, flag, "0")
                    self.assertEqual(p.returncode, 2, p.stderr)
                    self.assertIn("--count", p.stderr)
                    self.assertIn('"0"', p.stderr)

    def test_bench_takes_the_lease_letters_of_run(self):
        for flag, value, says in (("-m", "-1", "--min-free-mb"), ("-u", "101", "--max-util"),
                                  ("-w", "x", "--wait")):
            with self.subTest(flag=flag):
                p = self.gpumon("bench", "--image", "a:1", flag, value)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(says, p.stderr)

    def test_interval_is_the_sampling_interval_everywhere(self):
        # query: --interval is --loop's other name.
        p = self.gpumon("query", "--simulate", "1", "--interval", "0")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--loop expects a duration", p.stderr)
        # snapshot: --interval between power readings (--power-interval still works).
        for flag in ("--interval", "--power-interval"):
            p = self.gpumon("snapshot", "--simulate", "1", "--power-window", "100ms", flag, "50ms")
            self.assertEqual(p.returncode, 0, p.stderr)
        # wait: --check-interval (run's name for it) is --interval too.
        p = self.gpumon("wait", "--simulate", "1", "--check-interval", "0", "--timeout", "0")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--interval expects a duration", p.stderr)


class SourceOptions(Base):
    def test_simulate_and_seed_ranges(self):
        for cmd, rest in SOURCE_COMMANDS.items():
            with self.subTest(cmd=cmd):
                self.usage_error([cmd, "--simulate", "0"] + rest,
                                 f'gpumon {cmd}: --simulate expects a whole number from 1 to 64, got "0"')
                self.usage_error([cmd, "--seed", "-1"] + rest,
                                 f'gpumon {cmd}: --seed expects a whole number from 0 to '
                                 f'18446744073709551615, got "-1"')

    def test_simulate_and_seed_pick_the_gpus(self):
        a = json.loads(self.gpumon("query", "--simulate", "3", "--seed", "7", "--format", "json").stdout)
        self.assertEqual(a["provider"], "sim")
        self.assertEqual(a["gpu_count"], 3)
        p = self.gpumon("query", "--provider", "sim", "--simulate", "2", "--format", "json")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout)["gpu_count"], 2)

    def test_run_passes_source_on_to_record(self):
        out = os.path.join(self.tmp, "run.json")
        p = self.gpumon("run", "--provider", "sim", "--simulate", "3", "--seed", "9", "--wait", "0",
                        "--no-db", "--quiet", "-o", out, "--", "true")
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out) as f:
            doc = json.load(f)
        self.assertEqual(doc["provider"], "sim")
        self.assertEqual(doc["kind"], "run")


class NumberOptions(Base):
    def test_gpu_indices_are_plain_numbers(self):
        # As /api/history?gpu=+1 is a 400, -i +1 is no index (strtoul would have read GPU 1).
        for item in ("+1", "0x1", "1e0"):
            with self.subTest(item=item):
                self.usage_error(["query", "--simulate", "2", "-i", item],
                                 'gpumon query: no GPU matches "%s" (have 2 GPUs)' % item)

    def test_seconds_and_numbers(self):
        # One grammar everywhere: durations take 90, 0.5, 500ms, 15m, 1h30m; numbers are plain
        # decimals (no hex, exponent, nan or inf, as strtod would take).
        dur = "(such as 90, 0.5, 500ms, 15m, 1h30m)"
        self.usage_error(["query", "--loop", "0.05"],
                         'gpumon query: --loop expects a duration from 0.1s to 86400s %s, got "0.05"' % dur)
        self.usage_error(["query", "--loop", ""],
                         'gpumon query: --loop expects a duration from 0.1s to 86400s %s, got ""' % dur)
        self.usage_error(["record", "--interval", "1e-400", "--", "true"],
                         'gpumon record: --interval expects a duration from 0.01s to 3600s %s, got "1e-400"' % dur)
        self.usage_error(["run", "--wait", "nan", "--", "true"],
                         'gpumon run: --wait expects a duration from 0s to 604800s %s, got "nan"' % dur)
        self.usage_error(["select", "-u", "101"],
                         'gpumon select: --max-util expects a number from 0 to 100, got "101"')
        self.usage_error(["select", "-u", "0x64"],
                         'gpumon select: --max-util expects a number from 0 to 100, got "0x64"')
        self.usage_error(["wait", "--interval", "0"],
                         'gpumon wait: --interval expects a duration from 0.001s to 86400s %s, got "0"' % dur)
        self.usage_error(["diff", "--mem-tolerance-mb", "-1", "a", "b"],
                         'gpumon diff: --mem-tolerance-mb expects a number from 0 to 1000000000, got "-1"')


class NoGpu(Base):
    """No NVML library and no nvidia-smi on PATH: auto finds nothing."""

    def test_report_names_what_was_tried(self):
        for cmd, hint in [("query", True), ("snapshot", True), ("select", False), ("wait", False)]:
            with self.subTest(cmd=cmd):
                p = self.gpumon(cmd, "--timeout", "0") if cmd == "wait" else self.gpumon(cmd)
                self.assertEqual(p.returncode, 3, p.stderr)
                lines = p.stderr.splitlines()
                self.assertEqual(lines[0], f"gpumon {cmd}: no GPU found; tried:")
                self.assertTrue(lines[1].startswith("  nvml: "), p.stderr)
                self.assertEqual(lines[2], "  nvidia-smi: not found on PATH")
                self.assertTrue(lines[3].startswith("  amd_smi: cannot load amdsmi library"), p.stderr)
                self.assertTrue(lines[4].startswith("  rocm_smi: cannot load ROCm SMI library"), p.stderr)
                self.assertTrue(lines[5].startswith("  amdgpu: no GPU driven by amdgpu"), p.stderr)
                self.assertTrue(lines[6].startswith("  nvtop: "), p.stderr)
                self.assertEqual(len(lines), 8 if hint else 7, p.stderr)
                if hint:
                    self.assertEqual(lines[7], "Use --simulate N to try gpumon with simulated GPUs.")

    def test_bad_provider_is_a_usage_error(self):
        for cmd in ["query", "snapshot", "select"]:
            with self.subTest(cmd=cmd):
                p = self.gpumon(cmd, "--provider", "bogus")
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertTrue(p.stderr.startswith(f"gpumon {cmd}: "), p.stderr)


if __name__ == "__main__":
    unittest.main()
