"""`gpumon estimate MODEL` without a task file: a built-in model's name (its published shape), a
Hugging Face config.json or a model directory, with --tp/--pp/--dp, --dtype, --batch and
--seq-len as options; the task file keeps working, and --help fits 80 columns."""
import json
import os
import tempfile
import unittest

from gmtest import FIXTURES, env, run

TASKS = os.path.join(FIXTURES, "tasks")


def estimate(*args, **kw):
    return run(["estimate"] + list(args), env=dict(env(), COLUMNS="80"), **kw)


class EstimateModel(unittest.TestCase):
    def test_builtin_name_with_options(self):
        p = estimate("llama-3-70b", "--tp", "4", "--format", "json")
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual(doc["gpus"], 4)
        self.assertEqual(doc["parallel"]["tp"], {"size": 4, "parameter": "--tp"})
        m = doc["memory"]
        self.assertEqual((m["source"], m["layers"], m["kv_heads"], m["head_dim"]),
                         ("built-in", 80, 8, 128))
        self.assertFalse(m["shape_assumed"])
        self.assertLess(abs(m["params"] - 70562938880) / 70562938880, 0.01)
        # pp, dtype, batch, seq-len: 8 GPUs, int8 weights, 2 x 8192 tokens of fp16 KV cache.
        doc = json.loads(estimate("meta-llama/Meta-Llama-3-70B-Instruct", "--tp", "4", "--pp", "2",
                                  "--dtype", "int8", "--batch", "2", "--seq-len", "8192",
                                  "--format", "json").stdout)
        m = doc["memory"]
        self.assertEqual(doc["gpus"], 8)
        self.assertEqual((m["dtype"], m["kv_dtype"], m["batch"], m["context"]),
                         ("int8", "fp16", 2, 8192))
        self.assertEqual(m["kv_bytes_per_token"], 2 * 40 * 2 * 128 * 2)
        self.assertAlmostEqual(m["weights_mib"], m["params"] / 8 / 2**20)

    def test_text_output(self):
        p = estimate("mixtral-8x7b", "--tp", "2")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("GPUs needed:     2  (tp 2 x pp 1", p.stdout)
        self.assertIn("(mixtral-8x7b: 46.7B parameters from its published shape, fp16)", p.stdout)

    def test_config_json_path(self):
        with tempfile.TemporaryDirectory() as d:
            cfg = os.path.join(d, "config.json")
            with open(cfg, "w") as f:
                json.dump({"architectures": ["LlamaForCausalLM"], "hidden_size": 4096,
                           "intermediate_size": 14336, "num_attention_heads": 32,
                           "num_hidden_layers": 32, "num_key_value_heads": 8,
                           "vocab_size": 128256, "torch_dtype": "bfloat16"}, f)
            for arg in (cfg, d):
                with self.subTest(arg=arg):
                    p = estimate(arg, "--tp", "2", "--format", "json")
                    self.assertEqual(p.returncode, 0, p.stderr)
                    doc = json.loads(p.stdout)
                    self.assertEqual(doc["memory"]["source"], "config.json")
                    self.assertEqual(doc["memory"]["config"], cfg)
                    self.assertEqual(doc["memory"]["params"], 8030261248)
                    self.assertEqual(doc["memory"]["dtype"], "bf16")
                    self.assertEqual(doc["gpus"], 2)

    def test_task_file_keeps_working_and_options_override_it(self):
        task = os.path.join(TASKS, "seed_example.json")
        for args in ((task,), ("--task", task)):
            doc = json.loads(estimate(*args, "--format", "json").stdout)
            self.assertEqual(doc["gpus"], 4)
            self.assertEqual(doc["parallel"]["tp"]["parameter"], "tp-size")
        doc = json.loads(estimate("--task", task, "--tp", "8", "--format", "json").stdout)
        self.assertEqual(doc["gpus"], 8)

    def test_unknown_model(self):
        p = estimate("no-such-model")
        self.assertEqual(p.returncode, 2)
        self.assertIn('"no-such-model" is neither a file nor a model gpumon knows', p.stderr)
        self.assertIn("llama-3-70b", p.stderr)
        p = estimate()
        self.assertEqual(p.returncode, 2)
        self.assertIn("give a MODEL or --task FILE", p.stderr)
        p = estimate("llama-3-8b", "--tp", "0")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--tp", p.stderr)

    def test_list_models(self):
        p = estimate("--list-models")
        self.assertEqual(p.returncode, 0, p.stderr)
        names = p.stdout.split()
        for name in ("llama-2-7b", "llama-3-8b", "llama-3-70b", "mistral-7b", "mixtral-8x7b"):
            self.assertIn(name, names)
        for name in names:  # each one estimates from its published shape
            doc = json.loads(estimate(name, "--format", "json").stdout)
            self.assertEqual(doc["memory"]["source"], "built-in", name)

    def test_help_fits_80_columns(self):
        p = estimate("--help")
        self.assertEqual(p.returncode, 0)
        long = [l for l in p.stdout.splitlines() if len(l) > 80]
        self.assertFalse(long, "\n".join(long))
        for flag in ("--tp", "--pp", "--dtype", "--batch", "--seq-len", "--list-models", "MODEL"):
            self.assertIn(flag, p.stdout)
        self.assertNotIn("seed", p.stdout)

    def test_options_come_from_its_table(self):
        """One table gives the help, the completion and the docs: estimate is in the dump, and
        a message still names the spelling given."""
        doc = json.loads(run(["help", "--dump", "json"]).stdout)
        names = [r["name"] for r in doc["estimate"]["options"]]
        for name in ("task", "tp", "seq-len", "overhead-mib", "format"):
            self.assertIn(name, names)
        for spelling in ("--seq-len", "--context", "--max-model-len", "--tensor-parallel-size"):
            p = estimate("llama-3-8b", spelling, "0")
            self.assertEqual(p.returncode, 2)
            self.assertTrue(p.stderr.startswith("gpumon estimate: %s expects a whole number"
                                                % spelling), p.stderr)
        p = estimate("llama-3-8b", "--format", "xml")
        self.assertEqual(p.stderr, 'gpumon estimate: invalid --format "xml" (expected text or '
                                   'json)\n')


if __name__ == "__main__":
    unittest.main()
