"""The Python module against the CLI (SPEC §4b): same dicts, errors as exceptions.

Run by ctest (`make test`) with PYTHONPATH=build/python, MFUSIM_SOURCE (the
source tree) and MFUSIM_CLI (the built mfusim binary)."""
import json
import os
import subprocess
import unittest

import mfusim

SRC = os.environ.get("MFUSIM_SOURCE", os.path.join(os.path.dirname(__file__), "..", ".."))
CLI = os.environ.get("MFUSIM_CLI", os.path.join(SRC, "build", "mfusim"))
S8 = os.path.join(SRC, "scenarios", "8xh100_llama3_8b.toml")


def cli_json(*args):
    out = subprocess.run([CLI, *args], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


class RunTest(unittest.TestCase):
    def test_run_equals_cli_json(self):
        self.assertEqual(mfusim.run(S8), cli_json("run", S8, "--json"))

    def test_set_equals_cli_set(self):
        py = mfusim.run(S8, set={"parallel.tp": 4, "features.flash_attention": False})
        cli = cli_json("run", S8, "--json", "--set", "parallel.tp=4", "--set", "features.flash_attention=false")
        self.assertEqual(py, cli)
        self.assertEqual(py["parallel"]["tp"], 4)
        self.assertFalse(py["resolved"]["features"]["flash_attention"])

    def test_dict_scenario_equals_its_file(self):
        d = {
            "name": "Llama-3-8B on 8 x H100",
            "model": "llama3-8b",
            "hardware": "h100-sxm",
            "cluster": {"gpus": 8},
            "training": {"seq_len": 8192, "global_batch": 128, "micro_batch": 1, "precision": "bf16"},
            "parallel": {"tp": 2, "pp": 1, "cp": 1, "sequence_parallel": True, "distributed_optimizer": True},
            "schedule": {"name": "1f1b"},
            "features": {"flash_attention": True, "fused_kernels": True, "overlap_grad_reduce": True,
                         "overlap_param_gather": True, "recompute": "none", "dataloader_workers": 8},
        }
        a, b = mfusim.run(d), mfusim.run(S8)
        self.assertAlmostEqual(a["step_time_s"], b["step_time_s"], places=12)
        self.assertEqual(a["mfu"], b["mfu"])
        self.assertEqual(a["memory"], b["memory"])

    def test_whatif_list_of_tables(self):
        d = {"model": "llama3-8b", "hardware": "h100-sxm", "cluster": {"gpus": 8},
             "training": {"seq_len": 4096, "global_batch": 64},
             "parallel": {"tp": 2},
             "whatif": [{"name": "tp 4", "parallel": {"tp": 4}}]}
        r = mfusim.run(d)
        self.assertEqual([w["name"] for w in r["whatif"]], ["tp 4"])

    def test_bad_dict_raises_with_position(self):
        with self.assertRaises(mfusim.ScenarioError) as e:
            mfusim.run({"model": "llama3-8b", "hardware": "h100-sxm", "cluster": {"gpus": 8},
                        "training": {"seq_len": 4096, "global_batch": 64, "micro_btach": 1}})
        msg = str(e.exception)
        self.assertRegex(msg, r"scenario\.toml:\d+:\d+: error: unknown key 'training.micro_btach'")
        self.assertIsInstance(e.exception, ValueError)

    def test_bad_set_and_missing_file_raise(self):
        with self.assertRaises(mfusim.ScenarioError) as e:
            mfusim.run(S8, set={"parallel.tp": 3})
        self.assertIn("error:", str(e.exception))
        with self.assertRaises(mfusim.ScenarioError):
            mfusim.run(os.path.join(SRC, "scenarios", "no-such-file.toml"))


class StudyTest(unittest.TestCase):
    def test_sweep_equals_cli(self):
        py = mfusim.sweep(S8, vary={"parallel.tp": [1, 2, 3], "training.micro_batch": [1, 2]})
        cli = cli_json("sweep", S8, "--json", "--vary", "parallel.tp=1,2,3", "--vary", "training.micro_batch=1,2")
        self.assertEqual(py, cli)
        self.assertEqual(len(py), 6)
        self.assertTrue(any("error" in r for r in py))   # tp 3 does not divide: a row that says why

    def test_sweep_shards_merge_to_the_whole(self):
        vary = {"parallel.tp": [1, 2, 4, 8], "training.micro_batch": [1, 2]}
        whole = mfusim.sweep(S8, vary=vary)
        parts = [mfusim.sweep(S8, vary=vary, shard=f"{k}/3") for k in (3, 1, 2)]
        self.assertEqual(sum(len(p["rows"]) for p in parts), len(whole))
        self.assertEqual(mfusim.merge(parts), whole)

    def test_plan_equals_cli_and_honours_set(self):
        py = mfusim.plan(S8, top=3, set={"schedule.name": "1f1b", "parallel.cp": 1})
        cli = cli_json("plan", S8, "--json", "--top", "3", "--set", "schedule.name=1f1b", "--set", "parallel.cp=1")
        strip = lambda rows: [{k: v for k, v in r.items()} for r in rows]
        self.assertEqual(strip(py), strip(cli))
        self.assertTrue(py)
        for r in py:
            self.assertEqual(r["point"]["schedule"], "1f1b")
            self.assertEqual(r["parallel"]["cp"], 1)
            self.assertIn("margin_gib", r["point"])

    def test_diagnose_is_a_list_of_levers(self):
        d = mfusim.diagnose(S8)
        self.assertIsInstance(d, list)
        self.assertTrue(d)
        for x in d:
            self.assertIn("lever", x)
            self.assertIn("delta_mfu", x)


if __name__ == "__main__":
    unittest.main()
