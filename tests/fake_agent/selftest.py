"""Self-test of the fake hermes-agent (stdlib unittest).

Run: /usr/bin/python3 tests/fake_agent/selftest.py
"""

import json
import os
import re
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import hermes_constants  # noqa: E402
import run_agent  # noqa: E402
from agent import prompt_builder  # noqa: E402
from fake_support import eventlog  # noqa: E402
from hermes_cli.config import load_config  # noqa: E402
from hermes_cli.runtime_provider import resolve_runtime_provider  # noqa: E402
from hermes_cli.tools_config import _get_platform_tools  # noqa: E402
from hermes_state import SessionDB  # noqa: E402
from tools import approval, terminal_tool  # noqa: E402

WORKER_NAME = re.compile(r"^Thread-\d+ \(_call\)$")


class Recorder:
    """Builds every AIAgent callback; records (name, thread, args)."""

    def __init__(self):
        self.calls = []
        self.lock = threading.Lock()

    def cb(self, name):
        def callback(*args, **kwargs):
            with self.lock:
                self.calls.append((name, threading.current_thread().name, args, kwargs))
        return callback

    def agent_kwargs(self):
        names = ["tool_progress_callback", "tool_start_callback", "tool_complete_callback",
                 "thinking_callback", "reasoning_callback", "step_callback",
                 "stream_delta_callback", "status_callback"]
        return {name: self.cb(name) for name in names}

    def names(self):
        return [c[0] for c in self.calls]


class FakeAgentTestCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.home = Path(self.tmp.name)
        self._saved_env = dict(os.environ)
        os.environ["HERMES_HOME"] = str(self.home)
        os.environ["FAKE_AGENT_LOG"] = str(self.home / "events.jsonl")
        os.environ.pop("HERMES_EXEC_ASK", None)
        eventlog.configure()

    def tearDown(self):
        os.environ.clear()
        os.environ.update(self._saved_env)
        eventlog.configure()
        terminal_tool.set_approval_callback(None)
        self.tmp.cleanup()

    def write_config(self, cfg):
        (self.home / "config.yaml").write_text(json.dumps(cfg), encoding="utf-8")

    def log_lines(self):
        path = self.home / "events.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]

    def later(self, seconds, fn, *args):
        timer = threading.Timer(seconds, fn, args)
        timer.start()
        self.addCleanup(timer.cancel)


class ScriptedRunTests(FakeAgentTestCase):
    def test_callback_order_and_threads(self):
        rec = Recorder()
        agent = run_agent.AIAgent(model="m", **rec.agent_kwargs())
        result = agent.run_conversation("script:say hello world;tool terminal ls;say done",
                                        stream_callback=rec.cb("stream_callback"))
        main = threading.current_thread().name
        deltas = [c for c in rec.calls if c[0] in ("stream_callback", "stream_delta_callback")
                  and c[2] != (None,)]
        self.assertEqual([c[2][0] for c in deltas],
                         ["hello ", "hello ", "world", "world", "done", "done"])
        # per-turn stream_callback first, then stream_delta_callback, per delta
        self.assertEqual([c[0] for c in deltas[:2]], ["stream_callback", "stream_delta_callback"])
        for call in deltas:
            self.assertRegex(call[1], WORKER_NAME)
        self.assertNotEqual(deltas[0][1], deltas[-1][1], "a new worker per API call")
        turn_side = [c for c in rec.calls if c not in deltas]
        for call in turn_side:
            self.assertEqual(call[1], main, call)
        order = [(c[0], c[2][0] if c[0] == "tool_progress_callback" else None) for c in turn_side]
        self.assertEqual(order, [
            ("tool_progress_callback", "reasoning.available"),
            ("stream_delta_callback", None),
            ("tool_progress_callback", "tool.started"),
            ("tool_start_callback", None),
            ("tool_progress_callback", "tool.completed"),
            ("tool_complete_callback", None),
            ("step_callback", None),
            ("tool_progress_callback", "reasoning.available"),
        ])
        completed = [c for c in turn_side if c[0] == "tool_progress_callback"
                     and c[2][0] == "tool.completed"][0]
        self.assertEqual(completed[3], {"duration": 0.01, "is_error": False,
                                        "result": "ran terminal: ls"})
        self.assertEqual(result["final_response"], "done")
        self.assertEqual(result["turn_exit_reason"], "text_response")
        self.assertEqual([m["role"] for m in result["messages"]],
                         ["user", "assistant", "assistant", "tool", "assistant"])
        runs = [e for e in self.log_lines() if e["op"] == "run"]
        self.assertEqual(runs[0]["thread"], main)

    def test_echo_with_content_blocks(self):
        agent = run_agent.AIAgent()
        blocks = [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {}},
                  {"type": "text", "text": "here"}]
        result = agent.run_conversation(blocks)
        self.assertEqual(result["final_response"], "echo: look here")
        self.assertEqual(result["messages"][0]["content"], blocks)

    def test_callback_exceptions_are_swallowed(self):
        def boom(*a, **k):
            raise ValueError("bridge bug")
        agent = run_agent.AIAgent(stream_delta_callback=boom, tool_progress_callback=boom)
        result = agent.run_conversation("script:say ok;tool t x")
        self.assertEqual(result["final_response"], "ok")

    def test_unknown_kwarg_and_fail_init(self):
        with self.assertRaises(TypeError):
            run_agent.AIAgent(model="m", event_callback=lambda *a: None)
        with self.assertRaisesRegex(RuntimeError, "fake init failure"):
            run_agent.AIAgent(model="fail-init")
        run_agent.AIAgent(model="m", quiet_mode=True)
        inits = [e for e in self.log_lines() if e["op"] == "init"]
        self.assertEqual(inits[-1]["kwargs"], ["model", "quiet_mode"])
        self.assertEqual(inits[-1]["HERMES_HOME"], str(self.home))

    def test_compress_uses_instance_override(self):
        seen = {}

        def hook(messages, system_message, **kwargs):
            seen.update(kwargs, count=len(messages))
            return [{"role": "user", "content": "summary"}], "new-system"
        agent = run_agent.AIAgent()
        agent._compress_context = hook
        result = agent.run_conversation("script:say a;compress", system_message="old")
        self.assertEqual(seen, {"approx_tokens": 1234, "focus_topic": "test", "count": 2})
        self.assertEqual(result["final_response"], "compressed 1 system='new-system' ")


class ApprovalTests(FakeAgentTestCase):
    def test_gateway_round_trip(self):
        self.write_config({"approvals": {"timeout": 5}})
        os.environ["HERMES_EXEC_ASK"] = "1"
        notified = []
        approval.register_gateway_notify(
            "sess-1", lambda data: notified.append((threading.current_thread().name, data)))
        self.addCleanup(approval.unregister_gateway_notify, "sess-1")
        token = approval.set_current_session_key("sess-1")
        self.addCleanup(approval.reset_current_session_key, token)
        self.later(0.2, approval.resolve_gateway_approval, "sess-1", "once")
        result = run_agent.AIAgent().run_conversation("script:danger rm -rf /")
        self.assertEqual(notified[0][0], threading.current_thread().name)
        self.assertEqual(notified[0][1]["command"], "rm -rf /")
        self.assertEqual(set(notified[0][1]), {"command", "pattern_key", "pattern_keys",
                                               "description", "allow_permanent", "request_id"})
        self.assertEqual(result["final_response"], "choice=once ")
        self.assertEqual(result["messages"][-1]["content"], "ran terminal: rm -rf /")

    def test_gateway_timeout_and_missing_cb_deny(self):
        self.write_config({"approvals": {"timeout": 0.2}})
        approval.register_gateway_notify("k", lambda data: None)
        self.addCleanup(approval.unregister_gateway_notify, "k")
        token = approval.set_current_session_key("k")
        self.addCleanup(approval.reset_current_session_key, token)
        result = run_agent.AIAgent().run_conversation("script:approve-gw rm x")
        self.assertEqual(result["final_response"], "choice=deny ")
        self.assertEqual(result["messages"][-1]["content"], "BLOCKED: denied")
        self.assertEqual(approval.wait_for_gateway_decision("nobody", {}), "deny")

    def test_gateway_fifo_and_unregister_wakes(self):
        self.write_config({"approvals": {"timeout": 5}})
        approval.register_gateway_notify("q", lambda data: None)
        results = {}

        def wait(tag):
            results[tag] = approval.wait_for_gateway_decision("q", {"tag": tag})
        first = threading.Thread(target=wait, args=("first",))
        first.start()
        while approval.pending_count("q") < 1:
            time.sleep(0.01)
        second = threading.Thread(target=wait, args=("second",))
        second.start()
        while approval.pending_count("q") < 2:
            time.sleep(0.01)
        self.assertEqual(approval.resolve_gateway_approval("q", "session"), 1)
        first.join(2)
        self.assertEqual(results, {"first": "session"})
        approval.unregister_gateway_notify("q")
        second.join(2)
        self.assertEqual(results["second"], "deny")

    def test_cli_callback_is_thread_local(self):
        asked = []

        def cb(command, description, **kwargs):
            asked.append((command, kwargs, threading.current_thread().name))
            return "session"
        terminal_tool.set_approval_callback(cb)
        result = run_agent.AIAgent().run_conversation("script:danger rm -rf /tmp/x")
        self.assertEqual(asked, [("rm -rf /tmp/x", {"allow_permanent": True},
                                  threading.current_thread().name)])
        self.assertEqual(result["final_response"], "choice=session ")
        other = {}
        t = threading.Thread(target=lambda: other.update(
            r=run_agent.AIAgent().run_conversation("script:approve-cli ls")))
        t.start()
        t.join(5)
        self.assertEqual(other["r"]["final_response"], "choice=deny ")

    def test_no_approver_fails_open(self):
        result = run_agent.AIAgent().run_conversation("script:danger rm -rf /")
        self.assertEqual(result["final_response"], "choice=once ")


class InterruptSteerTests(FakeAgentTestCase):
    def test_interrupt_mid_stream(self):
        agent = run_agent.AIAgent()
        self.later(0.25, agent.interrupt, "stop please")
        started = time.monotonic()
        result = agent.run_conversation("script:stream 100 20;say never")
        self.assertLess(time.monotonic() - started, 1.5)
        self.assertTrue(result["interrupted"])
        self.assertEqual(result["turn_exit_reason"], "interrupted_during_api_call")
        self.assertEqual(result["interrupt_message"], "stop please")
        self.assertTrue(result["final_response"].startswith("d0 d1 "))
        self.assertNotIn("d99", result["final_response"])
        self.assertFalse(agent.is_interrupted, "a consumed interrupt is cleared at turn end")

    def test_flood_sends_big_deltas(self):
        rec = Recorder()
        agent = run_agent.AIAgent(**rec.agent_kwargs())
        result = agent.run_conversation("script:flood 0.5 16")
        deltas = [c[2][0] for c in rec.calls if c[0] == "stream_delta_callback" and c[2][0]]
        self.assertEqual(len(deltas), 32)
        self.assertTrue(all(len(d) == 16 * 1024 and d.endswith("f ") for d in deltas))
        self.assertEqual(result["final_response"], "".join(deltas))

    def test_stale_interrupt_and_clear_interrupt(self):
        agent = run_agent.AIAgent()
        agent.interrupt("stale")
        result = agent.run_conversation("script:say hi")
        self.assertTrue(result["interrupted"])
        self.assertEqual(result["api_calls"], 0)
        agent.interrupt("stale again")
        agent.steer("dropped")
        agent.clear_interrupt()
        result = agent.run_conversation("script:say hi")
        self.assertFalse(result["interrupted"])
        self.assertNotIn("pending_steer", result)
        runs = [e for e in self.log_lines() if e["op"] == "run"]
        self.assertEqual([r["interrupt_cleared"] for r in runs], [False, True])

    def test_steer_drains(self):
        agent = run_agent.AIAgent()
        self.assertFalse(agent.steer(""))
        self.later(0.05, agent.steer, "first")
        self.later(0.1, agent.steer, "second")
        result = agent.run_conversation("script:steer-wait 300")
        self.assertEqual(result["final_response"], "steered=first\nsecond ")
        self.later(0.05, agent.steer, "use less")
        result = agent.run_conversation("script:sleep 200;tool terminal ls;say ok")
        self.assertIn("[OUT-OF-BAND USER MESSAGE]\nuse less\n[/OUT-OF-BAND USER MESSAGE]",
                      result["messages"][2]["content"])
        agent.steer("too late")
        result = agent.run_conversation("script:say hi")
        self.assertEqual(result["pending_steer"], "too late")


class PersistenceAndConfigTests(FakeAgentTestCase):
    def test_session_db_flush_and_prepersist(self):
        db = SessionDB()
        self.addCleanup(db.close)
        self.assertEqual(db.db_path, self.home / "state.db")
        agent = run_agent.AIAgent(session_id="s1", session_db=db, platform="webui", model="m")
        first = agent.run_conversation("script:tool terminal ls;say done")
        rows = db.get_messages("s1")
        self.assertEqual([r["role"] for r in rows], ["user", "assistant", "tool", "assistant"])
        self.assertEqual(rows[1]["tool_calls"][0]["id"], "call_1")
        self.assertEqual(rows[2]["tool_call_id"], "call_1")
        self.assertEqual(db.get_session("s1")["source"], "webui")
        # As the real agent (0.18+): what it wrote comes back stamped, so the
        # history passed back is not written again; the new rows are.
        history = first["messages"]
        self.assertTrue(all(m.get("_db_persisted") for m in history))
        agent.run_conversation("second", conversation_history=history)
        convo = db.get_messages_as_conversation("s1")
        self.assertEqual([m["content"] for m in convo if m["role"] == "user"],
                         ["script:tool terminal ls;say done", "second"])
        self.assertEqual(convo[-1]["content"], "echo: second")
        # A turn with no history passed still writes its own rows (no
        # positional cursor left over from the turn before).
        agent.run_conversation("third")
        self.assertEqual(db.message_count("s1"), len(convo) + 2)

    def test_config_runtime_toolsets_reasoning(self):
        self.assertEqual(load_config(), {})
        (self.home / "config.yaml").write_text("model: [not json", encoding="utf-8")
        self.assertEqual(load_config(), {})
        self.write_config({"model": {"provider": "custom", "base_url": "http://x/v1"},
                           "platform_toolsets": {"cli": ["web"]}})
        rt = resolve_runtime_provider()
        self.assertEqual((rt["provider"], rt["base_url"], rt["api_key"]),
                         ("custom", "http://x/v1", "fake-key"))
        with self.assertRaisesRegex(RuntimeError, "no API key"):
            resolve_runtime_provider(requested="broken")
        self.assertEqual(_get_platform_tools(load_config(), "cli"), {"web"})
        self.assertEqual(_get_platform_tools({}, "webui"), {"hermes-webui"})
        self.assertEqual(hermes_constants.parse_reasoning_effort("High"),
                         {"enabled": True, "effort": "high"})
        self.assertEqual(hermes_constants.parse_reasoning_effort(False), {"enabled": False})
        self.assertIsNone(hermes_constants.parse_reasoning_effort(""))
        self.assertIs(run_agent.PLATFORM_HINTS, prompt_builder.PLATFORM_HINTS)


class StudioSurfaceTests(FakeAgentTestCase):
    """The modules a Hermes Studio bridge reaches for besides the turn."""

    def test_request_id_resolves_that_request_only(self):
        self.write_config({"approvals": {"timeout": 5}})
        seen = []
        approval.register_gateway_notify("s", seen.append)
        self.addCleanup(approval.unregister_gateway_notify, "s")
        token = approval.set_current_session_key("s")
        self.addCleanup(approval.reset_current_session_key, token)

        def answer():
            while len(seen) < 2:
                time.sleep(0.01)
            # The second request first: the first must stay pending.
            self.assertEqual(approval.resolve_gateway_approval("s", "once", request_id=seen[1]["request_id"]), 1)
            self.assertEqual(approval.pending_count("s"), 1)
            approval.resolve_gateway_approval("s", "deny", request_id=seen[0]["request_id"])

        threading.Thread(target=answer).start()
        result = run_agent.AIAgent().run_conversation("script:danger-pair rm a|rm b")
        self.assertEqual(result["final_response"], "pair=rm a:deny,rm b:once ")

    def test_session_cwd_and_task_overrides(self):
        from agent import runtime_cwd
        workspace = str(self.home)
        agent = run_agent.AIAgent()
        runtime_cwd.set_session_cwd(workspace)
        self.addCleanup(runtime_cwd.clear_session_cwd)
        self.assertEqual(agent.run_conversation("script:cwd")["final_response"], f"cwd={workspace} ")
        terminal_tool.register_task_env_overrides("t1", {"cwd": "/"})
        self.addCleanup(terminal_tool.clear_task_env_overrides, "t1")
        self.assertEqual(agent.run_conversation("script:cwd", task_id="t1")["final_response"], "cwd=/ ")

    def test_clarify_and_titles(self):
        asked = []
        agent = run_agent.AIAgent(clarify_callback=lambda q, c: asked.append((q, c)) or "blue")
        self.assertEqual(agent.run_conversation("script:clarify Which colour?|red,blue")["final_response"],
                         "clarified=blue ")
        self.assertEqual(asked, [("Which colour?", ["red", "blue"])])
        from agent.title_generator import maybe_auto_title
        db = SessionDB()
        db.create_session("t", source="cli")
        titles = []
        maybe_auto_title(db, "t", "hello there world", "hi", [{"role": "user"}], title_callback=titles.append)
        deadline = time.time() + 2
        while not titles and time.time() < deadline:
            time.sleep(0.01)
        self.assertEqual(titles, ["Title: hello there world"])
        self.assertEqual(db.get_session_title("t"), "Title: hello there world")

    def test_goals_skills_and_mcp(self):
        from agent.skill_commands import reload_skills, resolve_skill_command_key
        from hermes_cli.goals import GoalManager
        from tools import mcp_tool
        mgr = GoalManager("g")
        mgr.set("ship it")
        self.assertTrue(GoalManager("g").is_active())  # state persists across managers
        self.assertTrue(mgr.evaluate_after_turn("working")["should_continue"])
        self.assertEqual(mgr.evaluate_after_turn("GOAL DONE")["verdict"], "done")
        (self.home / "skills" / "demo").mkdir(parents=True)
        (self.home / "skills" / "demo" / "SKILL.md").write_text("description: a demo\n")
        self.assertEqual(reload_skills()["added"], [{"name": "demo", "description": "a demo"}])
        self.assertEqual(resolve_skill_command_key("demo"), "/demo")
        self.write_config({"mcp_servers": {"files": {"command": "x", "fake_tools": [{"name": "read"}]}}})
        self.assertEqual(mcp_tool.discover_mcp_tools(), ["mcp_files_read"])
        task = mcp_tool._servers["files"]
        self.assertFalse(task._task.done())
        mcp_tool._run_on_mcp_loop(lambda: task.shutdown(), timeout=5)
        time.sleep(0.05)
        self.assertTrue(task._task.done())
        mcp_tool._servers.clear()


if __name__ == "__main__":
    unittest.main(verbosity=2)
