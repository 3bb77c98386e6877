"""The benchmark harnesses (scripts/bench, scripts/bench-hosts) in their tiny
form: every workload must produce numbers for every bridge. No timing
assertions: this only keeps the harnesses working."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import tempfile
import unittest
from pathlib import Path

import harness

WORKLOADS = ["W0", "W1", "W2", "W3", "W4", "W5", "W6", "W7"]


def is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def run_bench(script: str, args: list[str], tmp: str) -> tuple[subprocess.CompletedProcess, dict]:
    """Runs scripts/<script> on the daemon under test; its printout and its --json document."""
    bridge = harness.bridge_binary()  # SkipTest when not built
    out = Path(tmp) / f"{script}.json"
    cmd = [harness.PYTHON, str(harness.REPO / "scripts" / script), *args, "--json", str(out)]
    # Binaries next to the daemon under test when built there; otherwise
    # the load generator is compiled into the temporary directory.
    source = harness.REPO / "tests" / "bench" / "loadgen.cpp"
    loadgen = bridge.parent / "hb_loadgen"
    if not (loadgen.exists() and loadgen.stat().st_mtime >= source.stat().st_mtime):
        loadgen = Path(tmp) / "hb_loadgen"
    cmd += ["--loadgen", str(loadgen)]
    if (bridge.parent / "hb_log_bench").exists():
        cmd += ["--log-bench", str(bridge.parent / "hb_log_bench")]
    env = dict(os.environ, HERMES_BRIDGE_BIN=str(bridge))
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    if proc.returncode != 0:
        raise AssertionError(f"scripts/{script} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc, json.loads(out.read_text())


class BenchQuickTest(unittest.TestCase):
    def test_every_workload_has_numbers_for_both_bridges(self) -> None:
        harness.seed_script()  # SkipTest without the seed
        with tempfile.TemporaryDirectory(prefix="hb-bench-test-") as tmp:
            proc, doc = run_bench("bench", ["--quick", "--tiny"], tmp)

        self.assertIn("| W1 |", proc.stdout)  # the table was printed
        workloads = doc["workloads"]
        self.assertEqual(sorted(workloads), WORKLOADS)
        for name in WORKLOADS:
            for kind in ("seed", "ours"):
                with self.subTest(workload=name, bridge=kind):
                    metrics = workloads[name][kind]
                    self.assertTrue(metrics, f"{name}: no numbers for {kind}")
                    bad = {k: v for k, v in metrics.items() if not is_number(v)}
                    self.assertFalse(bad, f"{name} {kind}: not numbers: {bad}")
                    self.assertTrue(workloads[name]["runs"][kind], f"{name}: no runs of {kind}")
            self.assertTrue(workloads[name]["rows"], f"{name}: no table rows")
        self.assertTrue(is_number(workloads["W5"]["ours"].get("replay.s")), "W5: replay was not timed")

    def test_before_and_ours_are_compared_pair_by_pair(self) -> None:
        # The same binary on both sides: the table must still count every pair.
        harness.seed_script()
        with tempfile.TemporaryDirectory(prefix="hb-bench-ab-test-") as tmp:
            proc, doc = run_bench("bench", ["--tiny", "--only", "W1,W4", "--reps", "2",
                                            "--before-bin", str(harness.bridge_binary())], tmp)
        self.assertIn("Before and ours pair by pair", proc.stdout)
        table = proc.stdout.split("Before and ours pair by pair", 1)[1]
        rows = [line for line in table.splitlines() if line.startswith("| W")]
        metrics = {line.split("|")[2].strip() for line in rows}
        self.assertIn("ping.c1.keepalive.rps", metrics)
        self.assertIn("subscribe.p99_ms", metrics)
        for line in rows:
            cells = [c.strip() for c in line.split("|")[1:-1]]
            self.assertRegex(cells[5], r"^[0-2] of 2$", line)
            self.assertIn(cells[7], ("higher", "lower"), line)
        self.assertEqual(len(doc["workloads"]["W1"]["runs"]["before"]), 2)

    def test_sign_test(self) -> None:
        # The reporting half of scripts/bench, loaded by its path: scripts/ is not on sys.path here.
        spec = importlib.util.spec_from_file_location("bench_report", harness.REPO / "scripts" / "bench_report.py")
        report = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(report)
        self.assertAlmostEqual(report.sign_test_p(12, 3), 0.0352, places=4)
        self.assertAlmostEqual(report.sign_test_p(0, 9), 2 / 512, places=6)
        self.assertEqual(report.sign_test_p(3, 3), 1.0)
        self.assertEqual(report.sign_test_p(0, 0), 1.0)
        self.assertEqual(report.better_direction("ping.c16.keepalive.rps"), "higher")
        self.assertEqual(report.better_direction("wakeups_per_s"), "lower")
        self.assertEqual(report.better_direction("longpoll.p99_ms"), "lower")
        self.assertIsNone(report.better_direction("s16.sessions"))

    def test_host_comparison_and_profile_isolation_have_numbers_for_every_host(self) -> None:
        # Two of W1 to W7 (the others are scripts/bench's, run above) and the
        # isolation part; the real-agent part needs the real agent and minutes.
        harness.seed_script()
        with tempfile.TemporaryDirectory(prefix="hb-bench-hosts-test-") as tmp:
            proc, doc = run_bench("bench-hosts", ["--tiny", "--only", "hosts,isolation", "--workloads", "W3,W4"], tmp)

        self.assertIn("| W3 |", proc.stdout)
        self.assertIn("## Profile isolation", proc.stdout)
        hosts = doc["hosts"]
        self.assertEqual(sorted(hosts), ["W3", "W4"])
        for name, columns in (("W3", ["seed", "embedded", "worker", "worker x2"]),
                              ("W4", ["seed", "embedded", "worker"])):
            self.assertEqual(sorted(hosts[name]["medians"]), sorted(columns))
            for column in columns:
                with self.subTest(workload=name, bridge=column):
                    metrics = hosts[name]["medians"][column]
                    self.assertTrue(metrics, f"{name}: no numbers for {column}")
                    bad = {k: v for k, v in metrics.items() if not is_number(v)}
                    self.assertFalse(bad, f"{name} {column}: not numbers: {bad}")
        # W3's CPU split per delta and per turn, and by thread.
        self.assertIn("cost per delta and a cost per turn", proc.stdout)
        for column in ("seed", "worker"):
            for part, cost in hosts["W3"]["split"][column].items():
                with self.subTest(split=column, part=part):
                    self.assertTrue(is_number(cost["us_per_delta"]) and is_number(cost["ms_per_turn"]), cost)
        threads = hosts["W3"]["runs"]["worker"][0]["stream_threads"]
        self.assertTrue(any(name.startswith("daemon: ") for name in threads), threads)
        for column, metrics in doc["isolation"]["medians"].items():
            with self.subTest(isolation=column):
                for key in ("alone_s", "beside_s", "delay_s"):
                    self.assertTrue(is_number(metrics.get(key)), f"isolation {column}: no {key}")
        self.assertLessEqual({"embedded", "worker"}, set(doc["isolation"]["medians"]))


if __name__ == "__main__":
    unittest.main()
