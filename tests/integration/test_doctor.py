"""`hermes-bridge doctor` (issue 25): a line per check with ok, warn or fail
and a fix; exit code 1 when something would stop `serve`, `--json` for
scripts. A healthy set-up (the fake agent) and broken ones: no agent root, a
socket directory anyone can write to, a damaged log, TCP without a token."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import tempfile
import unittest
from pathlib import Path

from harness import FAKE_AGENT, Bridge, bridge_binary

SYSTEM_ROOTS = ("/usr/local/lib/hermes-agent", "/usr/local/hermes-agent", "/opt/hermes/hermes-agent",
                "/opt/hermes-agent")


def doctor(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("HERMES_AGENT_ROOT", "HERMES_BRIDGE_DB", "HERMES_AGENT_PYTHON", "HERMES_HOME",
                                "HERMES_BRIDGE_TOKEN_FILE", "HERMES_AGENT_BRIDGE_ENDPOINT")}
    environment.update(env or {})
    return subprocess.run([str(bridge_binary()), "doctor", *args], capture_output=True, timeout=120,
                          cwd=cwd, env=environment)


def checks(p: subprocess.CompletedProcess) -> dict[str, list[dict]]:
    report = json.loads(p.stdout)
    by_name: dict[str, list[dict]] = {}
    for c in report["checks"]:
        by_name.setdefault(c["check"], []).append(c)
    return by_name


class Doctor(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="hb-doctor-"))
        # A log written by a real daemon, which then stopped.
        with Bridge() as first:
            first.chat("d1", "script:say hello", wait=True)
            cls.home = cls.tmp / "home"
            shutil.copytree(first.home, cls.home)
        cls.db = cls.home / "hermes-bridge" / "events.db"
        cls.socket_dir = cls.tmp / "run"
        cls.runtime = cls.tmp / "xdg"  # the workers' and native sessions' directories go below it
        cls.runtime.mkdir(mode=0o700)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_doctor(self, *extra: str, endpoint: str | None = None, home: Path | None = None,
                   runtime: Path | None = None) -> subprocess.CompletedProcess:
        return doctor("--agent-root", str(FAKE_AGENT), "--hermes-home", str(home or self.home),
                      "--endpoint", endpoint or f"ipc://{self.socket_dir}/bridge.sock", *extra, cwd=self.tmp,
                      env={"XDG_RUNTIME_DIR": str(runtime or self.runtime)})

    def test_a_healthy_set_up(self):
        p = self.run_doctor()
        self.assertEqual(p.returncode, 0, p.stdout.decode() + p.stderr.decode())
        text = p.stdout.decode()
        self.assertIn(f"ok   agent_root: {FAKE_AGENT} (given by --agent-root", text)
        self.assertRegex(text, r"ok   agent_python: agent workers run on \S+")
        self.assertIn(f"ok   event_log: {self.db} (", text)
        self.assertIn("schema version 7, quick_check ok", text)
        self.assertIn(f"ok   socket_dir: {self.socket_dir} (not there yet", text)
        self.assertIn("HERMES_AGENT_BRIDGE_PYTHON=", text)
        self.assertTrue(text.rstrip().endswith("warning(s)") and "ready to serve" in text, text)

        p = self.run_doctor("--json")
        self.assertEqual(p.returncode, 0, p.stdout)
        report = json.loads(p.stdout)
        self.assertEqual((report["ok"], report["failed"]), (True, 0))
        self.assertEqual(set(report["version"]), {"version", "commit", "caf", "sqlite", "nlohmann_json", "python"})
        for c in report["checks"]:
            self.assertEqual(set(c), {"check", "status", "detail", "fix"}, c)
            self.assertIn(c["status"], ("ok", "warn"), c)
            if c["status"] == "warn":
                self.assertTrue(c["fix"], c)
        found = checks(p)
        for name in ("agent_root", "interpreter", "agent_python", "hermes_home", "disk", "event_log", "endpoint",
                     "socket_dir", "worker_dir", "native_dir", "tmux", "hermes_command", "studio"):
            self.assertIn(name, found)
        self.assertTrue(any(c["status"] == "ok" for c in found["interpreter"]), found["interpreter"])
        self.assertIn("profiles: default", found["hermes_home"][0]["detail"])

    def test_no_agent_root(self):
        if any(Path(r, "run_agent.py").exists() for r in SYSTEM_ROOTS):
            self.skipTest("a hermes-agent is installed in a system place, which the search finds")
        empty_home = self.tmp / "empty-home"
        empty_home.mkdir(exist_ok=True)
        missing = self.tmp / "no-such-agent"
        p = doctor("--agent-root", str(missing), "--hermes-home", str(empty_home), "--json",
                   "--endpoint", f"ipc://{self.socket_dir}/bridge.sock", cwd=empty_home,
                   env={"HOME": str(empty_home)})
        self.assertEqual(p.returncode, 1, p.stdout)
        root = checks(p)["agent_root"][0]
        self.assertEqual(root["status"], "fail", root)
        self.assertIn(str(missing), root["detail"])
        self.assertIn("--agent-root", root["fix"])
        self.assertEqual(checks(p)["agent_python"][0]["status"], "fail")
        text = doctor("--agent-root", str(missing), "--hermes-home", str(empty_home), cwd=empty_home,
                      env={"HOME": str(empty_home)}).stdout.decode()
        self.assertIn(f"fail agent_root: no hermes-agent source tree (run_agent.py) in: {missing}", text)
        self.assertIn("problem(s) stop serving", text)

    def test_a_socket_directory_anyone_can_write(self):
        shared = self.tmp / "shared-run"
        shared.mkdir()
        os.chmod(shared, 0o777)
        p = self.run_doctor("--json", endpoint=f"ipc://{shared}/bridge.sock")
        self.assertEqual(p.returncode, 1, p.stdout)
        sock = checks(p)["socket_dir"][0]
        self.assertEqual(sock["status"], "fail", sock)
        self.assertIn(f"{shared} (owner uid {os.getuid()}, mode 0777)", sock["detail"])
        self.assertIn(f"chmod 700 {shared}", sock["fix"])
        os.chmod(shared, 0o700)
        self.assertEqual(checks(self.run_doctor("--json", endpoint=f"ipc://{shared}/bridge.sock"))
                         ["socket_dir"][0]["status"], "ok")

    def test_runtime_directories_anyone_can_write(self):
        shared = self.tmp / "shared-xdg"
        (shared / "hermes-bridge").mkdir(parents=True)
        os.chmod(shared / "hermes-bridge", 0o777)
        p = self.run_doctor("--json", runtime=shared)
        self.assertEqual(p.returncode, 1, p.stdout)
        found = checks(p)
        for name in ("worker_dir", "native_dir"):
            self.assertEqual(found[name][0]["status"], "fail", found[name])
            self.assertIn(str(shared / "hermes-bridge"), found[name][0]["detail"])
        native = self.tmp / "native-elsewhere"
        p = self.run_doctor("--json", "--native-dir", str(native), runtime=shared)
        self.assertEqual(checks(p)["native_dir"][0], {"check": "native_dir", "status": "ok", "fix": None,
                                                       "detail": f"{native} (not there yet: serve creates it 0700)"})

    def test_a_damaged_log(self):
        home = self.tmp / "damaged-home"
        shutil.copytree(self.home, home)
        db = home / "hermes-bridge" / "events.db"
        with sqlite3.connect(db) as c:  # everything in the main file, to damage it there
            c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            page_size = c.execute("PRAGMA page_size").fetchone()[0]
            root = c.execute("SELECT rootpage FROM sqlite_master WHERE name='events'").fetchone()[0]
        with open(db, "r+b") as f:
            f.seek((root - 1) * page_size)
            f.write(b"\xa5" * 64)
        p = self.run_doctor("--json", home=home)
        self.assertEqual(p.returncode, 1, p.stdout)
        log = checks(p)["event_log"][0]
        self.assertEqual(log["status"], "fail", log)
        self.assertIn(str(db), log["detail"])
        self.assertIn("quick_check", log["detail"])
        self.assertIn(".recover", log["fix"])

    def test_tcp_without_a_token(self):
        p = self.run_doctor("--json", endpoint="tcp://127.0.0.1:18999")
        self.assertEqual(p.returncode, 0, p.stdout)
        endpoint = checks(p)["endpoint"][0]
        self.assertEqual(endpoint["status"], "warn", endpoint)
        self.assertIn("tcp://127.0.0.1:18999: TCP on loopback without a token", endpoint["detail"])
        self.assertIn("--token-file", endpoint["fix"])

        p = self.run_doctor("--json", endpoint="tcp://0.0.0.0:18999")
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertEqual(checks(p)["endpoint"][0]["status"], "fail")

        token = self.tmp / "token"
        token.write_text("s3cret\n")
        os.chmod(token, 0o600)
        p = self.run_doctor("--json", "--token-file", str(token), endpoint="tcp://0.0.0.0:18999")
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertEqual([c["status"] for c in checks(p)["endpoint"] + checks(p)["token"]], ["ok", "ok"])
        os.chmod(token, 0o644)
        p = self.run_doctor("--json", "--token-file", str(token), endpoint="tcp://0.0.0.0:18999")
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn(str(token), checks(p)["token"][0]["detail"])


if __name__ == "__main__":
    unittest.main()
