"""Native sessions on the REAL hermes TUI (hermes-agent's prompt_toolkit CLI),
driven by the real daemon, against the stdlib fake model server
(tests/fake_openai/server.py). Not in CI: the agent is not installed there.

Runs when HERMES_REAL_AGENT_ROOT names a hermes-agent checkout (run_agent.py
and the `hermes` script at its top), e.g. one assembled offline by
../shared/tools/real-agent-env.sh; HERMES_REAL_AGENT_DEPS adds a
PYTHONPATH entry for what the checkout needs beyond Debian's packages, and
HERMES_REAL_AGENT_PYTHON picks the interpreter (/usr/bin/python3).

    HERMES_REAL_AGENT_ROOT=/tmp/real-agent/root HERMES_REAL_AGENT_DEPS=/tmp/real-agent/deps \\
        /usr/bin/python3 tests/integration/test_native_real.py -v
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sqlite3
import subprocess
import tempfile
import time
import unittest
from pathlib import Path

from harness import REPO, Bridge, events_named

ROOT = os.environ.get("HERMES_REAL_AGENT_ROOT", "")
DEPS = os.environ.get("HERMES_REAL_AGENT_DEPS", "")
PYTHON = os.environ.get("HERMES_REAL_AGENT_PYTHON", "/usr/bin/python3")
MODEL_SERVER = REPO / "tests" / "fake_openai" / "server.py"


def tmux(socket_path: str, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TMUX"}
    return subprocess.run(["tmux", "-S", socket_path, *args], capture_output=True, text=True, env=env, timeout=10)


@unittest.skipUnless(ROOT, "HERMES_REAL_AGENT_ROOT is not set: the real hermes TUI is not tried "
                           "(see ../shared/tools/real-agent-env.sh)")
class RealTui(unittest.TestCase):
    """One daemon, one model server and one TUI for the whole class: the real
    TUI takes seconds to start."""

    @classmethod
    def setUpClass(cls) -> None:
        if shutil.which("tmux") is None:
            raise unittest.SkipTest("tmux is not installed")
        if not (Path(ROOT) / "hermes").exists():
            raise unittest.SkipTest(f"no hermes script in HERMES_REAL_AGENT_ROOT={ROOT}")
        cls.tmp = Path(tempfile.mkdtemp(prefix="hb-real-"))
        cls.workspace = cls.tmp / "workspace"
        cls.workspace.mkdir()
        cls.model = subprocess.Popen([PYTHON, str(MODEL_SERVER), "--log", str(cls.tmp / "model.log")],
                                     stdout=subprocess.PIPE, text=True)
        port = json.loads(cls.model.stdout.readline())["port"]
        config = {"model": {"default": "fake-model", "provider": "custom",
                            "base_url": f"http://127.0.0.1:{port}/v1", "context_length": 131072},
                  "approvals": {"mode": "manual", "timeout": 60},
                  "security": {"tirith_enabled": False}}
        path = ":".join(p for p in (ROOT, DEPS) if p)
        # A command line, as --hermes-bin takes it.
        command = " ".join(shlex.quote(w) for w in ["env", f"PYTHONPATH={path}", PYTHON, str(Path(ROOT) / "hermes")])
        cls.config = config
        cls.bridge = Bridge(config=config, args=["--hermes-bin", command, "--native-dir", str(cls.tmp / "native"),
                                                 "--db", str(cls.tmp / "events.db")]).start()
        cls.state_db = cls.bridge.home / "state.db"

    @classmethod
    def tearDownClass(cls) -> None:
        native = cls.tmp / "native"
        cls.bridge.stop()
        for sock in native.glob("*/tmux.sock") if native.exists() else []:
            tmux(str(sock), "kill-server")
        cls.model.terminate()
        cls.model.wait(10)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    # -- helpers ------------------------------------------------------------------
    def chat(self, message: str, session: str = "real") -> str:
        out = self.bridge.chat(session, message, harness="native", workspace=str(self.workspace))
        self.assertTrue(out["ok"], out)
        return out["run_id"]

    def turn(self, message: str, timeout: float = 90) -> dict:
        return self.bridge.wait_done(self.chat(message), timeout=timeout)

    def rows(self) -> list[tuple]:
        with sqlite3.connect(self.state_db) as db:
            return list(db.execute("SELECT id, role, content, finish_reason FROM messages ORDER BY id"))

    def user_rows(self) -> list[str]:
        return [r[2] for r in self.rows() if r[1] == "user"]

    def wait_for(self, predicate, timeout: float = 30, what: str = "condition"):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            time.sleep(0.1)
        self.fail(f"no {what} within {timeout}s")

    def socket_path(self) -> str:
        return self.bridge.request({"action": "status", "session_id": "real"})["config"]["tmux_socket"]

    # -- the tries, in order (one TUI) ---------------------------------------------
    def test_01_plain_and_tool_turns(self):
        done = self.turn("hello real tui")
        self.assertEqual((done["status"], done["output"]), ("complete", "echo: hello real tui"), done)
        done = self.turn("tool echo hi")
        self.assertEqual(done["status"], "complete", done)
        self.assertIn("ran echo hi:", done["output"])
        self.assertEqual([e["event"] for e in done["seen_events"] if e["event"].startswith("tool.")],
                         ["tool.started", "tool.completed"])

    def test_02_interrupt_stops_the_turn_and_keeps_the_partial_answer(self):
        run_id = self.chat("slow 30")
        self.wait_for(lambda: "slow 30" in self.user_rows(), what="user row")
        time.sleep(3)
        self.assertTrue(self.bridge.request({"action": "interrupt", "session_id": "real"})["ok"])
        done = self.bridge.wait_done(run_id, timeout=30)
        self.assertEqual(done["status"], "interrupted", done)
        self.assertTrue(done["output"].startswith("tick0"), done)
        self.assertNotIn("done", done["output"])
        [stop] = events_named(done["seen_events"], "native.interrupt")
        self.assertTrue(stop["confirmed"], stop)
        last = self.rows()[-1]
        self.assertEqual((last[1], last[2], last[3]), ("assistant", done["output"], None))
        after = self.turn("after the interrupt")
        self.assertEqual(after["output"], "echo: after the interrupt")  # nothing inherited

    def test_03_a_chat_waits_for_a_turn_typed_at_the_terminal(self):
        sock = self.socket_path()
        tmux(sock, "send-keys", "-t", "main", "slow 4")
        tmux(sock, "send-keys", "-t", "main", "Enter")
        self.wait_for(lambda: "slow 4" in self.user_rows(), what="their turn")
        done = self.turn("after yours")
        self.assertEqual(done["output"], "echo: after yours")
        self.assertIn("tick0 tick1 tick2 tick3 done", [r[2] for r in self.rows()])

    def test_04_steer_carried_by_a_tool_result(self):
        run_id = self.chat("tool sleep 4")
        self.wait_for(lambda: "tool sleep 4" in self.user_rows(), what="user row")
        time.sleep(1.5)
        out = self.bridge.request({"action": "steer", "session_id": "real", "text": "also print the date"})
        self.assertTrue(out.get("accepted"), out)
        done = self.bridge.wait_done(run_id, timeout=60)
        self.assertEqual(done["status"], "complete", done)
        self.assertIn("also print the date", done["output"])  # the model saw it with the tool result
        self.assertNotIn("also print the date", self.user_rows())

    def test_05_steer_that_becomes_the_next_turn(self):
        run_id = self.chat("slow 3")
        self.wait_for(lambda: "slow 3" in self.user_rows(), what="user row")
        time.sleep(1)
        out = self.bridge.request({"action": "steer", "session_id": "real", "text": "and then stop"})
        self.assertTrue(out.get("accepted"), out)
        done = self.bridge.wait_done(run_id, timeout=60)
        self.assertEqual(done["status"], "complete", done)
        self.assertEqual(done["output"], "tick0 tick1 tick2 done\n\necho: and then stop")

    def test_06_a_long_paste(self):
        message = "\n".join(f"line {i}\twith a tab" for i in range(8))
        started = time.monotonic()
        done = self.turn(message)
        self.assertEqual(done["status"], "complete", done)
        self.assertEqual(self.user_rows()[-1], message)
        self.assertEqual(done["output"], "echo: " + message)
        self.assertLess(time.monotonic() - started, 10)

    def test_07_approvals_deny_and_a_long_command(self):
        target = self.workspace / "x"
        run_id = self.chat(f"danger rm -rf {target}")
        asked = self.bridge.wait_event(run_id, "approval.requested", timeout=60)
        self.assertEqual(asked["command"], f"rm -rf {target}")
        self.assertEqual(asked["choices"], ["once", "session", "always", "deny"])
        self.bridge.request({"action": "approval_respond", "approval_id": asked["approval_id"], "choice": "deny"})
        done = self.bridge.wait_done(run_id, timeout=60)
        self.assertEqual(done["status"], "complete", done)
        self.assertIn("BLOCKED", done["output"])
        long_cmd = "rm -rf " + " ".join(f"{self.workspace}/some/rather/long/path/{i}/of/many" for i in range(7))
        run_id = self.chat("danger " + long_cmd)
        asked = self.bridge.wait_event(run_id, "approval.requested", timeout=60)
        self.assertEqual(asked["command"], long_cmd)
        self.bridge.request({"action": "approval_respond", "approval_id": asked["approval_id"], "choice": "deny"})
        self.assertEqual(self.bridge.wait_done(run_id, timeout=60)["status"], "complete")

    def test_08_approval_once_and_one_answered_at_the_terminal(self):
        run_id = self.chat(f"danger rm -rf {self.workspace}/y")
        asked = self.bridge.wait_event(run_id, "approval.requested", timeout=60)
        self.bridge.request({"action": "approval_respond", "approval_id": asked["approval_id"], "choice": "once"})
        done = self.bridge.wait_done(run_id, timeout=60)
        self.assertNotIn("BLOCKED", done["output"])
        self.assertIn("exit_code\": 0", done["output"])
        run_id = self.chat(f"danger rm -rf {self.workspace}/z")
        asked = self.bridge.wait_event(run_id, "approval.requested", timeout=60)
        tmux(self.socket_path(), "send-keys", "-t", "main", "4")  # the person at the TUI
        done = self.bridge.wait_done(run_id, timeout=60)
        [resolved] = events_named(done["seen_events"], "approval.resolved")
        self.assertEqual((resolved["choice"], resolved["reason"]), (None, "answered in the terminal"))
        self.assertIn("BLOCKED", done["output"])

    def test_09_interrupt_while_the_approval_panel_shows(self):
        run_id = self.chat(f"danger rm -rf {self.workspace}/w")
        self.bridge.wait_event(run_id, "approval.requested", timeout=60)
        self.assertTrue(self.bridge.request({"action": "interrupt", "session_id": "real"})["ok"])
        done = self.bridge.wait_done(run_id, timeout=30)
        self.assertEqual(done["status"], "interrupted", done)
        self.assertEqual(self.turn("still alive?")["output"], "echo: still alive?")

    def test_10_a_leftover_draft_and_short_multiline_text_with_tabs(self):
        sock = self.socket_path()
        tmux(sock, "set-buffer", "-b", "d", "left over\nsecond row\nthird row")
        tmux(sock, "paste-buffer", "-p", "-d", "-b", "d", "-t", "main")
        self.wait_for(lambda: "third row" in tmux(sock, "capture-pane", "-p", "-t", "main").stdout, what="draft")
        message = "first\tcolumn\n\tindented\nends with a backslash \\"
        done = self.turn(message)
        self.assertEqual(self.user_rows()[-1], message)
        self.assertEqual(done["output"], "echo: " + message)

    def test_11_a_long_single_line(self):
        message = "word " * 450  # 2250 characters: collapsed by length
        done = self.turn(message)
        # Hermes strips the draft, then puts the paste's file back: its text as pasted
        self.assertEqual(self.user_rows()[-1], message)
        self.assertEqual(done["status"], "complete", done)


    def test_12_a_clarify_question_waits_for_the_terminal_and_refuses_a_steer(self):
        sock = self.socket_path()
        run_id = self.chat("clarify Which colour? / red,blue")
        self.wait_for(lambda: "Hermes needs your input" in tmux(sock, "capture-pane", "-p", "-t", "main").stdout,
                      timeout=60, what="the clarify panel")
        out = self.bridge.request({"action": "steer", "session_id": "real", "text": "pick any"})
        self.assertFalse(out.get("accepted"), out)  # its Enter would have picked the first choice
        tmux(sock, "send-keys", "-t", "main", "Down")
        time.sleep(0.3)
        tmux(sock, "send-keys", "-t", "main", "Enter")
        done = self.bridge.wait_done(run_id, timeout=60)
        self.assertEqual(done["status"], "complete", done)
        self.assertIn("blue", done["output"])
        self.assertNotIn("pick any", done["output"])
        [asked] = events_named(done["seen_events"], "clarify.requested")  # the client was asked too
        [closed] = events_named(done["seen_events"], "clarify.resolved")
        self.assertEqual((closed["clarify_id"], closed["response"], closed["reason"]),
                         (asked["clarify_id"], None, "answered in the terminal"))

    def clarify_through_the_socket(self, message: str, response: str) -> tuple[dict, dict]:
        run_id = self.chat(message)
        asked = self.bridge.wait_event(run_id, "clarify.requested", timeout=60)
        out = self.bridge.request({"action": "clarify_respond", "clarify_id": asked["clarify_id"],
                                   "response": response})
        self.assertTrue(out["resolved"], out)
        done = self.bridge.wait_done(run_id, timeout=60)
        self.assertEqual(done["status"], "complete", done)
        return asked, done

    @staticmethod
    def user_response(done: dict):
        [tool] = [e for e in done["seen_events"] if e.get("event") == "tool.completed"]
        return json.loads(tool["result"])["user_response"]

    def test_13_a_clarify_question_answered_by_the_client(self):
        asked, done = self.clarify_through_the_socket("clarify Which colour? / red,blue,green", "green")
        self.assertEqual((asked["question"], asked["choices"]), ("Which colour?", ["red", "blue", "green"]))
        self.assertTrue(0 < asked["timeout_ms"] <= 120_000, asked)
        self.assertEqual(self.user_response(done), "green")
        asked, done = self.clarify_through_the_socket("clarify Which size? / small,large", "medium please")
        self.assertEqual(self.user_response(done), "medium please")  # through "Other"
        asked, done = self.clarify_through_the_socket("clarify What name?", "Bob")
        self.assertIsNone(asked["choices"])
        self.assertEqual(self.user_response(done), "Bob")

    def test_14_a_multi_select_clarify_answered_by_the_client(self):
        if "multi_select" not in (Path(ROOT) / "tools" / "clarify_tool.py").read_text():
            self.skipTest("this hermes has no multi-select clarify (0.20 added it)")
        asked, done = self.clarify_through_the_socket("clarify-some Which toppings? / cheese,ham,olives",
                                                      "olives, cheese, pepper")
        self.assertTrue(asked["multi_select"], asked)
        self.assertEqual(self.user_response(done), ["cheese", "olives", "pepper"])

    def test_15_a_bang_line_is_refused_unless_asked_for_and_then_runs_once(self):
        version = next((line.split('"')[1] for line in (Path(ROOT) / "pyproject.toml").read_text().splitlines()
                        if line.startswith("version")), "0")
        if tuple(int(p) for p in version.split(".")[:2]) < (0, 20):
            self.skipTest(f"hermes-agent {version} sends a ! line to the agent (bang commands came with 0.20)")
        marker = self.tmp / "banged"
        out = self.bridge.chat("real", f"!echo ran >> {marker}", harness="native", workspace=str(self.workspace))
        self.assertEqual((out["ok"], out.get("error_type")), (False, "ValueError"), out)
        rows_before = len(self.rows())
        out = self.bridge.chat("real", f"!echo ran >> {marker}", harness="native", workspace=str(self.workspace),
                               tui_command=True)
        self.assertTrue(out["ok"], out)
        self.assertEqual(self.bridge.wait_done(out["run_id"], timeout=60)["status"], "complete")
        self.wait_for(marker.exists, what="the bang command's file")
        done = self.turn("after the bang")  # the TUI took a message after it: the bang is long over
        self.assertEqual(done["output"], "echo: after the bang")
        self.assertEqual(marker.read_text(), "ran\n")
        self.assertEqual([r[2] for r in self.rows()[rows_before:] if r[1] == "user"], ["after the bang"])

    def restart_after_kill_9(self) -> None:
        """The daemon dies (its pid alone); a new one on the same home, log,
        endpoint and native directory takes its place."""
        old = type(self).bridge
        old.proc.kill()
        old.proc.wait(10)
        old.proc.stdout.close()
        new = Bridge(config=self.config, args=old.args)
        new.dir, new.home, new.endpoint = old.dir, old.home, old.endpoint
        type(self).bridge = new.start()

    def test_16_a_turn_and_the_questions_live_at_a_kill_9_go_on_after_the_restart(self):
        run_id = self.chat("tool sleep 4")
        self.bridge.wait_event(run_id, "tool.started", timeout=60)
        self.restart_after_kill_9()
        done = self.bridge.wait_done(run_id, timeout=60)
        self.assertEqual(done["status"], "complete", done)
        self.assertEqual([e["event"] for e in done["seen_events"] if e["event"].startswith("tool.")],
                         ["tool.started", "tool.completed"])  # each once, across the restart
        run_id = self.chat(f"danger rm -rf {self.workspace}/k")
        asked = self.bridge.wait_event(run_id, "approval.requested", timeout=60)
        self.restart_after_kill_9()
        self.wait_for(lambda: self.bridge.request({"action": "health"})["pending_questions"] == 1,
                      what="the prompt asked again")
        answer = self.bridge.request({"action": "approval_respond", "approval_id": asked["approval_id"],
                                      "choice": "once"})
        self.assertTrue(answer["resolved"], answer)
        done = self.bridge.wait_done(run_id, timeout=60)
        self.assertIn("exit_code\": 0", done["output"])
        self.assertEqual(len(events_named(done["seen_events"], "approval.requested")), 1)
        run_id = self.chat("clarify Which colour? / red,blue")
        asked = self.bridge.wait_event(run_id, "clarify.requested", timeout=60)
        self.restart_after_kill_9()
        answer = self.bridge.request({"action": "clarify_respond", "clarify_id": asked["clarify_id"],
                                      "response": "blue"})
        self.assertTrue(answer["resolved"], answer)
        done = self.bridge.wait_done(run_id, timeout=60)
        self.assertEqual(self.user_response(done), "blue")
        self.assertEqual(len(events_named(done["seen_events"], "clarify.requested")), 1)


if __name__ == "__main__":
    unittest.main()
