"""The real hermes-agent (not our fake) through the daemon, on the worker host
and the embedded one, against tests/fake_openai.

Runs when HERMES_REAL_AGENT_ROOT names a hermes-agent checkout (assembled by
../shared/tools/real-agent-env.sh: 0.18.2 at /tmp/real-agent/root, 0.20.3 at
/tmp/real-agent-new/root); HERMES_REAL_AGENT_DEPS adds the packages Debian
lacks, HERMES_REAL_AGENT_PYTHON picks the interpreter (/usr/bin/python3; empty:
the daemon finds it, e.g. the installer layout's venv):

    HERMES_REAL_AGENT_ROOT=/tmp/real-agent-new/root HERMES_REAL_AGENT_DEPS=/tmp/real-agent/deps \\
        HERMES_BRIDGE_BIN=build/hermes-bridge python3 -m unittest -v test_agent_real

CI has no real agent: the module is skipped there (and CTest says so).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import tempfile
import time
import unittest
from pathlib import Path

from harness import REPO, Bridge

ROOT = os.environ.get("HERMES_REAL_AGENT_ROOT", "")
DEPS = os.environ.get("HERMES_REAL_AGENT_DEPS", "")
PYTHON = os.environ.get("HERMES_REAL_AGENT_PYTHON", "/usr/bin/python3")
MODEL_SERVER = REPO / "tests" / "fake_openai" / "server.py"


def version_of(root: str) -> str:
    text = (Path(root) / "pyproject.toml").read_text(encoding="utf-8")
    found = re.search(r'(?m)^version\s*=\s*"([^"]+)"', text)
    return found.group(1) if found else ""


class RealAgentBridge(Bridge):
    def __init__(self, host: str, port: int, **kw) -> None:
        config = {"model": {"default": "fake-model", "provider": "custom",
                            "base_url": f"http://127.0.0.1:{port}/v1", "context_length": 131072},
                  "approvals": {"mode": "manual", "timeout": 60},
                  "security": {"tirith_enabled": False}}
        env = {"PYTHONPATH": DEPS} if DEPS else {}
        super().__init__(config=config, env=env,
                         args=["--agent-host", host] + (["--agent-python", PYTHON] if PYTHON else []), **kw)

    def command(self) -> list[str]:
        cmd = super().command()
        cmd[cmd.index("--agent-root") + 1] = ROOT
        return cmd


@unittest.skipUnless(ROOT, "HERMES_REAL_AGENT_ROOT is not set: the real hermes-agent is not tried "
                           "(see ../shared/tools/real-agent-env.sh)")
class RealAgentBase:
    host = "worker"

    @classmethod
    def setUpClass(cls) -> None:
        if not (Path(ROOT) / "run_agent.py").exists():
            raise unittest.SkipTest(f"no run_agent.py in HERMES_REAL_AGENT_ROOT={ROOT}")
        cls.tmp = Path(tempfile.mkdtemp(prefix="hb-real-agent-"))
        cls.model = subprocess.Popen(["/usr/bin/python3", str(MODEL_SERVER), "--log", str(cls.tmp / "model.log")],
                                     stdout=subprocess.PIPE, text=True)
        port = json.loads(cls.model.stdout.readline())["port"]
        cls.bridge = RealAgentBridge(cls.host, port).start(timeout=60)
        cls.version = version_of(ROOT)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.bridge.stop()
        cls.model.terminate()
        cls.model.wait(10)

    def turn(self, session: str, message: str, **fields) -> dict:
        # (the socket waits as long as the turn may: a first turn builds the agent)
        done = self.bridge.request({"action": "chat", "session_id": session, "message": message, "wait": True,
                                    "timeout": 120, **fields}, timeout=150)
        self.assertTrue(done.get("ok"), done)
        return done

    def wait_event(self, run_id: str, name: str, timeout: float = 60) -> dict:
        return self.bridge.wait_event(run_id, name, timeout=timeout)

    # -- the tests --------------------------------------------------------------------

    def test_01_versions_are_reported(self) -> None:
        b = self.bridge
        self.turn("versions", "hello")
        ping = b.request({"action": "ping"})["agent"]
        self.assertEqual((ping["host"], ping["agent_version"]), (self.host, self.version))
        self.assertRegex(ping["python_version"], r"^3\.\d+\.\d+")
        status = b.request({"action": "status", "session_id": "versions"})["agent"]
        self.assertEqual((status["agent_version"], status["loaded"]), (self.version, True))
        health = b.request({"action": "health"})["agent"]
        self.assertEqual(health["agent_version"], self.version)

    def test_01_the_interpreter_taken_is_the_first_that_imports_the_agent(self) -> None:
        agent = self.bridge.request({"action": "health"})["agent"]
        if self.host != "worker" or PYTHON:
            self.skipTest("the interpreter is chosen by the daemon only on the worker host without --agent-python")
        verdicts = [c["ok"] for c in agent["candidates"]]
        self.assertIn(True, verdicts, agent["candidates"])
        taken = verdicts.index(True)
        # Refused before it (each with its reason), not probed after it.
        self.assertEqual(verdicts, [False] * taken + [True] + [None] * (len(verdicts) - taken - 1))
        for refused in agent["candidates"][:taken]:
            self.assertTrue(refused["reason"], refused)
        self.assertIn("imports run_agent.AIAgent", agent["candidates"][taken]["reason"])
        self.assertIn(f"hermes-agent {self.version}", agent["candidates"][taken]["reason"])

    def test_02_plain_turn_streams(self) -> None:
        done = self.turn("plain", "hello there")
        self.assertEqual((done["status"], done["output"]), ("complete", "echo: hello there"))
        again = self.turn("plain", "second", conversation_history=self.bridge.request(
            {"action": "get_history", "session_id": "plain"})["history"])
        self.assertEqual(again["output"], "echo: second")
        history = self.bridge.request({"action": "get_history", "session_id": "plain"})["history"]
        self.assertEqual([m["content"] for m in history if m["role"] == "user"], ["hello there", "second"])

    def test_02_each_turn_reaches_state_db_once(self) -> None:
        # The agent writes its turns and stamps what it wrote; the bridge's
        # copy (for an agent that writes none) must not write them again.
        self.turn("rows", "one")
        self.turn("rows", "two", conversation_history=self.bridge.request(
            {"action": "get_history", "session_id": "rows"})["history"])
        self.turn("rows", "three")  # no history passed: still written once
        with sqlite3.connect(self.bridge.home / "state.db") as conn:
            rows = conn.execute("SELECT role, content FROM messages WHERE session_id = 'rows' ORDER BY id").fetchall()
        self.assertEqual(rows, [("user", "one"), ("assistant", "echo: one"), ("user", "two"),
                                ("assistant", "echo: two"), ("user", "three"), ("assistant", "echo: three")])

    def test_03_dangerous_command_asks_and_deny_blocks_it(self) -> None:
        b = self.bridge
        marker = self.tmp / "must-survive"
        marker.mkdir()
        run = b.chat("danger", f"danger rm -rf {marker}")["run_id"]
        asked = self.wait_event(run, "approval.requested")
        self.assertIn("rm -rf", asked["command"])
        answer = b.request({"action": "approval_respond", "session_id": "danger", "choice": "deny",
                            "approval_id": asked["approval_id"]})
        self.assertTrue(answer.get("ok"), answer)
        done = b.wait_done(run, timeout=120)
        self.assertEqual(done["status"], "complete", done)
        self.assertTrue(marker.exists())
        resolved = [e for e in done["seen_events"] if e.get("event") == "approval.resolved"]
        self.assertEqual([e.get("choice") for e in resolved], ["deny"], done["seen_events"])

    def test_04_clarify_reaches_the_client_and_back(self) -> None:
        b = self.bridge
        run = b.chat("clarify", "clarify Which colour? / red,blue")["run_id"]
        asked = self.wait_event(run, "clarify.requested")
        self.assertEqual(asked["question"], "Which colour?")
        self.assertEqual([c.split(" (")[0] for c in asked["choices"]], ["red", "blue"])  # 0.20 marks one "(Recommended)"
        answer = b.request({"action": "clarify_respond", "clarify_id": asked["clarify_id"], "response": "blue"})
        self.assertEqual(answer.get("resolved"), True, answer)
        done = b.wait_done(run, timeout=120)
        self.assertEqual(done["status"], "complete", done)
        self.assertIn("blue", done["seen_text"])

    def test_05_interrupt_stops_the_turn(self) -> None:
        b = self.bridge
        run = b.chat("slow", "slow 30")["run_id"]
        deadline = time.monotonic() + 60
        while "tick1" not in b.request({"action": "get_output", "run_id": run})["output"]:
            self.assertLess(time.monotonic(), deadline, "no streamed text")
            time.sleep(0.1)
        stopped = b.request({"action": "interrupt", "session_id": "slow"}, timeout=60)
        self.assertEqual((stopped["status"], stopped["synced"]), ("interrupted", True), stopped)
        done = b.wait_done(run)
        self.assertEqual(done["status"], "interrupted")
        self.assertNotIn("done", done["seen_text"])

    def test_06_turn_lease_wait_is_shown_and_interruptible(self) -> None:
        if not hasattr(self, "version") or tuple(int(x) for x in self.version.split(".")[:2]) < (0, 20):
            self.skipTest(f"hermes-agent {self.version} has no session turn leases (0.20+)")
        b = self.bridge
        self.turn("leased", "first")
        other = subprocess.Popen(["sleep", "600"])
        try:
            with sqlite3.connect(b.home / "state.db") as conn:
                now = time.time()
                conn.execute("INSERT OR REPLACE INTO session_turn_leases VALUES (?, ?, ?, ?)",
                             ("leased", f"pid={other.pid}:turn=t:platform=cli", now, now + 600))
            run = b.chat("leased", "second")["run_id"]
            waiting = self.wait_event(run, "status")
            self.assertIn("Another Hermes process", waiting["text"])
            stopped = b.request({"action": "interrupt", "session_id": "leased"}, timeout=60)
            self.assertEqual((stopped["status"], stopped["synced"]), ("interrupted", True), stopped)
            done = b.wait_done(run)
            self.assertEqual(done["status"], "interrupted")
            self.assertIn("Stopped waiting", done["result"]["final_response"])
        finally:
            other.kill()
            other.wait()
        # The other process is gone: its lease is reclaimed.
        self.assertEqual(self.turn("leased", "third")["output"], "echo: third")


class RealAgentOnWorker(RealAgentBase, unittest.TestCase):
    host = "worker"

    def test_07_a_live_turn_goes_on_across_a_kill_9_of_the_daemon(self) -> None:
        port = int(re.search(r":(\d+)/v1", json.dumps(json.loads((self.bridge.home / "config.yaml").read_text())))
                   .group(1))
        first = RealAgentBridge("worker", port).start(timeout=60)
        self.addCleanup(first.stop)
        run = first.request({"action": "chat", "session_id": "survivor", "message": "slow 6"}, timeout=150)["run_id"]
        deadline = time.monotonic() + 120
        while "tick1" not in first.request({"action": "get_output", "run_id": run})["output"]:
            self.assertLess(time.monotonic(), deadline, "the turn never streamed")
            time.sleep(0.1)
        pid = first.request({"action": "status", "session_id": "survivor"})["agent"]["worker_pid"]
        first.proc.kill()
        first.proc.wait(10)
        first.proc.stdout.close()
        again = RealAgentBridge("worker", port)
        again.dir, again.home, again.endpoint = first.dir, first.home, first.endpoint
        again.start(timeout=60)
        self.addCleanup(again.stop)
        done = again.wait_done(run, timeout=60)
        self.assertEqual(done["status"], "complete", done)
        self.assertEqual(done["seen_text"], "".join(f"tick{i} " for i in range(6)) + "done")
        self.assertEqual(again.request({"action": "status", "session_id": "survivor"})["agent"]["worker_pid"], pid)
        self.assertEqual(again.request({"action": "chat", "session_id": "survivor", "message": "after", "wait": True,
                                        "timeout": 60}, timeout=90)["output"], "echo: after")

    def port(self) -> int:
        return int(re.search(r":(\d+)/v1", json.dumps(json.loads((self.bridge.home / "config.yaml").read_text())))
                   .group(1))

    def successor(self, first: RealAgentBridge, extra: list[str] | None = None) -> RealAgentBridge:
        again = RealAgentBridge("worker", self.port())
        again.args += extra or []
        again.dir, again.home, again.endpoint = first.dir, first.home, first.endpoint
        return again

    def test_08_an_approval_pending_at_a_kill_9_is_answered_after_it_under_its_id(self) -> None:
        first = RealAgentBridge("worker", self.port()).start(timeout=60)
        self.addCleanup(first.stop)
        marker = first.dir / "must-survive"
        marker.mkdir()
        run = first.chat("asker", f"danger rm -rf {marker}")["run_id"]
        asked = first.wait_event(run, "approval.requested", timeout=120)
        first.proc.kill()
        first.proc.wait(10)
        first.proc.stdout.close()
        again = self.successor(first).start(timeout=60)
        self.addCleanup(again.stop)
        # At once: the answer waits for the question to be open again.
        answer = again.request({"action": "approval_respond", "approval_id": asked["approval_id"], "choice": "deny"})
        self.assertTrue(answer.get("resolved"), answer)
        done = again.wait_done(run, timeout=120)
        self.assertEqual(done["status"], "complete", done)
        self.assertTrue(marker.exists())
        self.assertEqual([e["approval_id"] for e in done["seen_events"] if e.get("event") == "approval.requested"],
                         [asked["approval_id"]])

    def test_09_a_take_over_leaves_a_live_turn_running(self) -> None:
        first = RealAgentBridge("worker", self.port()).start(timeout=60)
        self.addCleanup(first.stop)
        run = first.chat("upgraded", "slow 6")["run_id"]
        deadline = time.monotonic() + 120
        while "tick1" not in first.request({"action": "get_output", "run_id": run})["output"]:
            self.assertLess(time.monotonic(), deadline, "the turn never streamed")
            time.sleep(0.1)
        again = self.successor(first, ["--take-over"]).start(timeout=90)
        self.addCleanup(again.stop)
        self.assertEqual(first.proc.wait(30), 0)
        done = again.wait_done(run, timeout=60)
        self.assertEqual(done["status"], "complete", done)
        self.assertEqual(done["seen_text"], "".join(f"tick{i} " for i in range(6)) + "done")

    def test_10_skills_and_mcp_edits_reach_both_workers_of_a_profile(self) -> None:
        two = RealAgentBridge("worker", self.port())
        two.args += ["--workers-per-profile", "2"]
        two.start(timeout=60)
        self.addCleanup(two.stop)
        for session in ("left", "right"):
            two.request({"action": "chat", "session_id": session, "message": "hello", "wait": True,
                         "timeout": 120}, timeout=150)
        pids = {two.request({"action": "status", "session_id": s})["agent"]["worker_pid"] for s in ("left", "right")}
        self.assertEqual(len(pids), 2)
        cmd = lambda s, text: two.request({"action": "command", "session_id": s, "command": text}, timeout=60)

        def add_skill(name: str) -> None:
            (two.home / "skills" / name).mkdir(parents=True)
            (two.home / "skills" / name / "SKILL.md").write_text(
                f"---\nname: {name}\ndescription: the {name} skill\n---\nDo {name}.\n")

        add_skill("review")
        for s in ("left", "right"):  # each worker's table holds it
            self.assertEqual(cmd(s, "/review now")["type"], "skill")
        add_skill("deploy")
        self.assertEqual([a["name"] for a in two.request({"action": "skills_reload"})["added"]], ["deploy"])
        for s in ("left", "right"):
            self.assertEqual(cmd(s, "/reload-skills")["added"], [], s)
        # MCP edits: answered, and followed in the other worker without an error
        # (no MCP server runs here: the real agent logs its failed connection)
        server = {"command": "/bin/true"}
        self.assertEqual(two.request({"action": "mcp_server_add", "name": "web", "config": server})["ok"], True)
        self.assertEqual(two.request({"action": "mcp_server_remove", "name": "web"}), {"ok": True})
        self.assertNotIn("failed:", two.stderr())


class RealAgentEmbedded(RealAgentBase, unittest.TestCase):
    host = "embedded"


del RealAgentBase  # not a test case of its own

if __name__ == "__main__":
    unittest.main()
