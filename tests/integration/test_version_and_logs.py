"""What an operator reads (issue 25): `--version` (and the `version`
object of ping and health) names the build and its libraries; with
`--log-format json` every line the daemon writes on stderr is one JSON object
with the same fields as the default logfmt line."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import unittest

from harness import REPO, Bridge, bridge_binary
from test_worker_host import WORKER, wait_until

VERSION_KEYS = {"version", "commit", "caf", "sqlite", "nlohmann_json", "python"}


def project_version() -> str:
    found = re.search(r"project\(hermes_bridge VERSION ([0-9.]+)", (REPO / "CMakeLists.txt").read_text())
    assert found, "CMakeLists.txt sets no project VERSION"
    return found.group(1)


class Version(unittest.TestCase):
    def test_version_flag_and_command(self):
        flag = subprocess.run([str(bridge_binary()), "--version"], capture_output=True, timeout=30)
        self.assertEqual(flag.returncode, 0, flag.stderr)
        text = flag.stdout.decode()
        self.assertRegex(text, rf"^hermes-bridge {re.escape(project_version())} \(commit [0-9a-f]+(-dirty)?\)\n"
                               r"|^hermes-bridge .* \(commit unknown\)\n")
        self.assertIn(f"SQLite {sqlite3.sqlite_version}", text)  # the library loaded at run time
        self.assertRegex(text, r"CAF 0\.17\.\d+, SQLite [\d.]+, nlohmann_json 3\.\d+\.\d+, built against Python 3\.\d+")
        command = subprocess.run([str(bridge_binary()), "version"], capture_output=True, timeout=30)
        self.assertEqual(command.stdout, flag.stdout)

    def test_version_in_ping_and_health(self):
        with Bridge() as b:
            ping = b.request({"action": "ping"})
            health = b.request({"action": "health"})
        self.assertEqual(set(ping["version"]), VERSION_KEYS)
        self.assertEqual(ping["version"]["version"], project_version())
        self.assertEqual(ping["version"]["sqlite"], sqlite3.sqlite_version)
        self.assertEqual(health["version"], ping["version"])


def stderr_after_shutdown(b: Bridge) -> str:
    """The daemon's whole stderr, once it has stopped (Bridge.stop() removes it)."""
    b.request({"action": "shutdown"})
    b.proc.wait(30)
    return b.stderr()


class LogFormat(unittest.TestCase):
    def test_json_lines(self):
        with Bridge(args=["--log-format", "json"]) as b:
            b.chat("j1", "script:say hi", wait=True)
            lines = [line for line in stderr_after_shutdown(b).splitlines() if line.strip()]
        records = []
        for line in lines:
            try:
                records.append(json.loads(line))
            except ValueError:
                self.fail(f"not a JSON line on stderr: {line!r}")
        for r in records:
            self.assertIsInstance(r["level"], str, r)
            self.assertTrue(all(isinstance(v, str) for v in r.values()), r)
        events = [r["event"] for r in records]
        for name in ("log.recovered", "agent.environment", "daemon.stopping", "daemon.stopped"):
            self.assertIn(name, events)
        recovered = next(r for r in records if r["event"] == "log.recovered")
        self.assertEqual((recovered["level"], recovered["runs_interrupted"]), ("info", "0"))
        self.assertIn("path", recovered)

    def test_a_worker_that_dies_or_hangs_is_logged(self):
        with Bridge(args=WORKER + ["--log-format", "json", "--worker-heartbeat-s", "0.2",
                                   "--worker-unresponsive-s", "2"]) as b:
            self.assertEqual(b.chat("x", "script:say before ;exit 7", wait=True)["status"], "error")
            b.chat("y", "script:say first", wait=True)
            run = b.chat("y", "script:stream 400 50")["run_id"]
            self.assertTrue(wait_until(lambda: b.request({"action": "get_output", "run_id": run})["cursor"] >= 3))
            victim = b.request({"action": "status", "session_id": "y"})["agent"]["worker_pid"]  # (there may be a spare)
            os.kill(victim, signal.SIGSTOP)  # a deadlock, as far as the daemon can tell
            self.assertEqual(b.wait_done(run, timeout=20)["status"], "error")
            records = [json.loads(line) for line in stderr_after_shutdown(b).splitlines()
                       if line.startswith("{")]
        died = [r for r in records if r["event"] == "worker.died"]
        self.assertTrue(any("exit code 7" in r["reason"] and r["turns_cut"] == "1" for r in died), died)
        self.assertTrue(all(r["level"] == "warn" and r["profile"] == "default" for r in died), died)
        (hung,) = [r for r in records if r["event"] == "worker.unresponsive"]
        self.assertEqual((hung["level"], hung["pid"]), ("warn", str(victim)))
        self.assertIn("unresponsive for 2 s", hung["reason"])
        self.assertTrue(any(r["pid"] == str(victim) and "SIGKILL" in r["reason"] for r in died), died)

    def test_logfmt_stays_the_default(self):
        with Bridge() as b:
            text = stderr_after_shutdown(b)
        self.assertRegex(text, r"(?m)^hermes-bridge level=info event=log\.recovered path=\S+ ms=\d+ ")

    def test_a_bad_format_is_refused(self):
        p = subprocess.run([str(bridge_binary()), "serve", "--log-format", "xml"], capture_output=True, timeout=30)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn(b"--log-format", p.stderr)
        self.assertIn(b"logfmt", p.stderr)  # the values it takes, not only "unknown option"


if __name__ == "__main__":
    unittest.main()
