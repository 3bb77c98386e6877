"""What Hermes Studio's current client (EKKOLearnAI/hermes-studio 18618ad8)
sends on top of the seed's protocol, answered as Studio's own bridge
answers it: chat's workspace / reasoning_effort / source, context
estimates, slash commands, goals, model switches, titles, clarify, MCP and
skills, destroy_profile, worker_ping, ping's broker fields, and gateway
approvals answered by their own id. Against the real daemon, over its
socket, with the fake agent.

Run: cd tests/integration && /usr/bin/python3 -m unittest -v test_studio_protocol
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
import unittest
from pathlib import Path

from harness import DEFAULT_CONFIG, Bridge, events_named, wait_for


class StudioTest(unittest.TestCase):
    maxDiff = None
    env: dict = {}
    config: dict = DEFAULT_CONFIG

    def setUp(self) -> None:
        self.bridge = Bridge(config=self.config, env=self.env).start()
        self.addCleanup(self.bridge.stop)
        self.tmp = Path(tempfile.mkdtemp(prefix="hb-studio-ws-"))
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def req(self, **fields):
        return self.bridge.request(fields)

    def run_chat(self, session_id: str, message, **fields) -> dict:
        """The finished run as get_result has it (every event)."""
        return self.finish(self.bridge.chat(session_id, message, **fields))

    def finish(self, started: dict) -> dict:
        self.assertTrue(started["ok"], started)
        self.bridge.wait_done(started["run_id"])
        return self.req(action="get_result", run_id=started["run_id"])

    def assert_error(self, reply: dict, error_type: str, message: str) -> None:
        self.assertEqual((reply["ok"], reply.get("error_type"), reply["error"]), (False, error_type, message))


class ChatFields(StudioTest):
    def test_workspace_binds_the_tools_and_sticks_to_the_session(self):
        ws = self.tmp / "project"
        ws.mkdir()
        res = self.run_chat("w1", "script:cwd", workspace=str(ws))
        self.assertEqual(res["output"], f"cwd={ws} ")
        # the tool ran there too: tool.completed carries the terminal's cwd
        self.assertEqual(events_named(res["events"], "tool.completed")[0]["result"], str(ws))
        # later turns that omit it keep it; status and list show it
        self.assertEqual(self.run_chat("w1", "script:cwd")["output"], f"cwd={ws} ")
        status = self.req(action="status", session_id="w1")
        self.assertEqual(status["config"]["workspace"], str(ws))
        listed = [s for s in self.req(action="list")["sessions"] if s["session_id"] == "w1"]
        self.assertEqual(listed[0]["config"]["workspace"], str(ws))
        # another session is not affected, and a new workspace replaces the old
        self.assertNotEqual(self.run_chat("w2", "script:cwd")["output"], f"cwd={ws} ")
        other = self.tmp / "other"
        other.mkdir()
        self.assertEqual(self.run_chat("w1", "script:cwd", workspace=str(other))["output"], f"cwd={other} ")
        self.assertEqual(self.req(action="status", session_id="w1")["config"]["workspace"], str(other))

    def test_workspace_survives_a_restart(self):
        ws = self.tmp / "kept"
        ws.mkdir()
        self.run_chat("w3", "script:cwd", workspace=str(ws))
        self.bridge.proc.kill()
        self.bridge.proc.wait()
        again = Bridge(config=self.config, env=self.env)
        again.dir, again.home, again.endpoint = self.bridge.dir, self.bridge.home, self.bridge.endpoint
        again.start()
        self.addCleanup(again.stop)
        self.assertEqual(again.request({"action": "status", "session_id": "w3"})["config"]["workspace"], str(ws))
        run = again.chat("w3", "script:cwd")
        self.assertEqual(again.wait_done(run["run_id"])["output"], f"cwd={ws} ")

    def test_a_workspace_that_is_not_a_directory_is_refused_and_touches_nothing(self):
        missing = self.tmp / "missing"
        self.assert_error(self.bridge.chat("w4", "hi", workspace=str(missing)), "ValueError",
                          f"workspace is not a directory: {missing}")
        afile = self.tmp / "file"
        afile.write_text("x")
        self.assert_error(self.bridge.chat("w4", "hi", workspace=str(afile)), "ValueError",
                          f"workspace is not a directory: {afile}")
        self.assertEqual(self.req(action="status", session_id="w4")["exists"], False)
        self.assertFalse(missing.exists())

    def test_reasoning_effort_is_per_turn_and_parsed_as_the_agent_parses_it(self):
        reasoning = lambda **kw: self.run_chat("r1", "script:reasoning", **kw)["output"]
        self.assertEqual(reasoning(), "reasoning=null ")
        self.assertEqual(reasoning(reasoning_effort=" HIGH "), 'reasoning={"effort": "high", "enabled": true} ')
        self.assertEqual(reasoning(), "reasoning=null ")  # restored after the turn
        self.assertEqual(reasoning(reasoning_effort="none"), 'reasoning={"enabled": false} ')
        self.assertEqual(reasoning(reasoning_effort="turbo"), "reasoning=null ")  # not a level: the agent's own

    def test_source_and_wait_as_studio_sends_them(self):
        out = self.bridge.chat("src", "hello", source="cli", wait=True, timeout=20)
        self.assertEqual((out["ok"], out["status"], out["output"]), (True, "complete", "echo: hello"))
        self.assertEqual(list(out)[:4], ["ok", "run_id", "session_id", "status"])

    def test_context_ready_comes_first_and_the_title_follows_the_first_turn(self):
        res = self.run_chat("t1", "plan the garden")
        first = res["events"][0]
        self.assertEqual(first["event"], "bridge.context.ready")
        self.assertEqual((first["session_id"], first["profile"], first["model"], first["provider"]),
                         ("t1", "default", "fake-model", "fake"))
        for key in ("token_count", "fixed_context_tokens", "system_prompt_tokens", "tool_tokens",
                    "tool_count", "tool_names", "mcp_tool_count", "mcp_tool_names", "system_prompt_chars"):
            self.assertIn(key, first)
        self.assertEqual(first["message_count"], 0)
        titles = events_named(res["events"], "session.title.updated")
        self.assertEqual(titles, [{"event": "session.title.updated", "session_id": "t1",
                                   "title": "Title: plan the garden [Title language:"}])
        self.assertEqual(self.req(action="get_session_title", session_id="t1"),
                         {"ok": True, "session_id": "t1", "title": "Title: plan the garden [Title language:"})
        self.assert_error(self.req(action="get_session_title"), "ValueError", "session_id is required")
        self.assert_error(self.req(action="get_session_title", session_id="nobody"), "KeyError",
                          "'unknown session: nobody'")
        self.assertEqual(self.req(action="get_session_title", session_id="nobody", profile="default"),
                         {"ok": True, "session_id": "nobody", "title": ""})

    def test_many_first_turns_at_once_all_complete_with_their_own_titles(self):
        # Every first turn starts a title thread; a turn waits only for its own.
        runs = {f"many{i}": self.bridge.chat(f"many{i}", f"first words {i}") for i in range(12)}
        for sid, run in runs.items():
            res = self.finish(run)
            self.assertEqual((res["status"], res["error"]), ("complete", None), sid)
        titles = {sid: self.req(action="get_session_title", session_id=sid)["title"] for sid in runs}
        for sid, title in titles.items():
            self.assertTrue(title.startswith(f"Title: first words {sid[4:]} "), (sid, title))

    def test_moa_and_thinking_events(self):
        res = self.run_chat("m1", "script:think (spinner);moa 2")
        self.assertEqual(events_named(res["events"], "thinking.delta"), [{"event": "thinking.delta", "text": ""}])
        self.assertEqual(events_named(res["events"], "moa.reference"), [
            {"event": "moa.reference", "label": "ref0", "text": "reference 0", "index": 0, "count": 2},
            {"event": "moa.reference", "label": "ref1", "text": "reference 1", "index": 1, "count": 2}])
        self.assertEqual(events_named(res["events"], "moa.aggregating"),
                         [{"event": "moa.aggregating", "aggregator": "aggregator"}])


class SlowTitles(StudioTest):
    """A title that takes long is not waited for: the run ends without it and
    get_session_title (which Studio's UI polls after `done`) has it later."""
    env = {"FAKE_AGENT_TITLE_DELAY_MS": "1500"}

    def test_the_run_does_not_wait_for_a_slow_title(self):
        res = self.run_chat("st1", "name this chat")
        self.assertEqual(events_named(res["events"], "session.title.updated"), [])
        self.assertEqual(self.req(action="get_session_title", session_id="st1")["title"], "")
        title = wait_for(lambda: self.req(action="get_session_title", session_id="st1")["title"], what="the title")
        self.assertTrue(title.startswith("Title: name this chat"), title)


class LegacyAgentWorkspace(StudioTest):
    """An agent older than per-session cwds (no agent.runtime_cwd, no
    register_task_env_overrides) still runs its tools in the workspace."""
    env = {"FAKE_AGENT_LEGACY_CWD": "1"}

    def test_tools_run_in_the_workspace_through_terminal_cwd(self):
        ws = self.tmp / "legacy"
        ws.mkdir()
        self.assertEqual(self.run_chat("l1", "script:cwd", workspace=str(ws))["output"], f"cwd={ws} ")
        self.assertEqual(self.run_chat("l1", "script:env TERMINAL_CWD")["output"], f"TERMINAL_CWD={ws} ")
        # a session without a workspace does not inherit it
        self.assertEqual(self.run_chat("l2", "script:env TERMINAL_CWD")["output"], "TERMINAL_CWD=<unset> ")


class SessionActions(StudioTest):
    def test_context_estimate_builds_the_session_and_answers_its_keys(self):
        out = self.req(action="context_estimate", session_id="ce", messages=[{"role": "user", "content": "x" * 400}])
        self.assertTrue(out["ok"], out)
        self.assertEqual(list(out)[:5], ["ok", "session_id", "profile", "model", "provider"])
        self.assertEqual((out["session_id"], out["profile"], out["model"], out["message_count"]),
                         ("ce", "default", "fake-model", 1))
        empty = self.req(action="context_estimate", session_id="ce")
        self.assertGreater(out["token_count"], empty["token_count"])
        self.assertEqual(empty["fixed_context_tokens"], empty["token_count"])
        self.assertEqual(self.req(action="status", session_id="ce")["exists"], True)
        self.assert_error(self.req(action="context_estimate", session_id="ce", messages="x"), "ValueError",
                          "messages must be a list")
        # while a turn runs, the estimate does not wait for it
        run = self.bridge.chat("ce", "script:sleep 8000")
        self.assertTrue(self.req(action="context_estimate", session_id="ce")["ok"])
        self.assertFalse(self.bridge.request({"action": "get_output", "run_id": run["run_id"]})["done"],
                         "the estimate waited for the turn")
        self.bridge.request({"action": "interrupt", "session_id": "ce"})
        self.bridge.wait_done(run["run_id"])
        # a new session id is made up when none is given
        self.assertEqual(len(self.req(action="context_estimate")["session_id"]), 32)

    def test_switch_session_model(self):
        not_loaded = self.req(action="switch_session_model", session_id="sw", model="other", provider="p")
        self.assertEqual(not_loaded, {"ok": True, "session_id": "sw", "model": "other", "provider": "p",
                                      "loaded": False, "switched": False, "reason": "session_not_loaded"})
        self.assert_error(self.req(action="switch_session_model", session_id="sw"), "ValueError",
                          "model is required")
        self.assert_error(self.req(action="switch_session_model", model="x"), "ValueError",
                          "session_id is required")
        self.run_chat("sw", "hi")
        out = self.req(action="switch_session_model", session_id="sw", model="other-model")
        self.assertEqual(out, {"ok": True, "session_id": "sw", "model": "other-model", "provider": "fake",
                               "loaded": True, "switched": True})
        self.assertEqual(self.req(action="status", session_id="sw")["config"]["model"], "other-model")
        # the next turn is told, in front of the user's message; the agent is the same one
        res = self.run_chat("sw", "who are you")
        self.assertTrue(res["output"].startswith("echo: [Note: model was just switched from fake-model to "
                                                 "other-model via fake."), res["output"])
        self.assertEqual(self.run_chat("sw", "script:model")["output"], "model=other-model ")
        inits = [e for e in self.bridge.agent_log_entries() if e.get("op") == "init"]
        self.assertEqual(len(inits), 1)
        # during a turn the switch waits for it
        run = self.bridge.chat("sw", "script:sleep 500")
        deferred = self.req(action="switch_session_model", session_id="sw", model="third")
        self.assertEqual((deferred["switched"], deferred["deferred"], deferred["reason"]),
                         (False, True, "session_running"))
        self.bridge.wait_done(run["run_id"])
        wait_for(lambda: self.req(action="status", session_id="sw")["config"]["model"] == "third",
                 what="the deferred switch")
        # an agent that refuses the switch: the error, and the session keeps its model
        out = self.req(action="switch_session_model", session_id="sw", model="fail-switch")
        self.assert_error(out, "RuntimeError", "fake switch failure for model fail-switch")
        self.assertEqual(self.req(action="status", session_id="sw")["config"]["model"], "third")

    def test_a_chat_with_a_new_model_switches_the_live_agent(self):
        self.run_chat("hs", "hi")
        created = self.req(action="status", session_id="hs")["created_at"]
        self.assertEqual(self.run_chat("hs", "script:model", model="other-model")["output"], "model=other-model ")
        status = self.req(action="status", session_id="hs")
        self.assertEqual((status["created_at"], status["config"]["model"]), (created, "other-model"))
        inits = lambda: [e for e in self.bridge.agent_log_entries() if e.get("op") == "init"]
        self.assertEqual(len(inits()), 1)  # the same agent, no note (Studio adds none here either)
        self.assertEqual(self.run_chat("hs", "plain")["output"], "echo: plain")
        # an agent that cannot switch is rebuilt with the new model
        self.assertEqual(self.run_chat("hs", "script:model", model="fail-switch")["output"], "model=fail-switch ")
        self.assertEqual(len(inits()), 2)

    def test_commands_goals_and_skills(self):
        self.run_chat("g1", "hi")
        cmd = lambda text, **kw: self.req(action="command", session_id="g1", command=text, **kw)
        out = cmd("/goal ship it")
        self.assertEqual((out["ok"], out["command"], out["type"], out["action"], out["kickoff_prompt"],
                          out["max_turns"]), (True, "goal", "goal", "set", "ship it", 20))
        self.assertTrue(out["message"].startswith("⊙ Goal set (20-turn budget): ship it"))
        self.assertEqual(cmd("goal status")["message"], "⊙ Goal (active, 0/20 turns): ship it")
        self.assertEqual(cmd("/subgoal tests first")["message"], "✓ Added subgoal 1: tests first")
        evaluated = self.req(action="goal_evaluate", session_id="g1", final_response="still going")
        self.assertEqual((evaluated["handled"], evaluated["active"], evaluated["should_continue"],
                          evaluated["verdict"]), (True, True, True, "continue"))
        paused = self.req(action="goal_pause", session_id="g1", reason="user-interrupted")
        self.assertEqual((paused["action"], paused["active"], paused["status"], paused["reason"],
                          paused["message"], paused["clear_goal_continuations"]),
                         ("pause", False, "paused", "user-interrupted", "⏸ Goal paused: ship it", True))
        inactive = self.req(action="goal_evaluate", session_id="g1", final_response="x")
        self.assertEqual(inactive, {"ok": True, "session_id": "g1", "handled": True, "active": False,
                                    "should_continue": False, "continuation_prompt": None, "message": "",
                                    "verdict": "inactive"})
        self.assertEqual(cmd("/learn rust")["message"], "Learn about: rust")
        unknown = cmd("/frob x")
        self.assertEqual(unknown, {"ok": True, "session_id": "g1", "command": "frob", "handled": False,
                                   "message": "not a supported bridge command: /frob"})
        # skills: a skill directory becomes a command once reloaded
        skill = self.bridge.home / "skills" / "deploy"
        skill.mkdir(parents=True)
        (skill / "SKILL.md").write_text("description: ship to prod\n")
        reloaded = self.req(action="skills_reload")
        self.assertEqual((reloaded["ok"], reloaded["action"], reloaded["added"], reloaded["total"]),
                         (True, "reload-skills", [{"name": "deploy", "description": "ship to prod"}], 1))
        self.assertEqual(cmd("/reload-skills")["added"], [])
        self.assertEqual(cmd("/deploy now")["message"], "[skill deploy] now")
        self.assertEqual(cmd("/deploy now")["type"], "skill")
        # errors
        self.assert_error(self.req(action="command", command="/goal"), "ValueError", "session_id is required")
        self.assert_error(cmd("  "), "ValueError", "command is required")
        self.assert_error(self.req(action="command", session_id="ghost", command="/goal"), "KeyError",
                          "'unknown session: ghost'")
        named = self.req(action="command", session_id="ghost", command="/goal", profile="default")
        self.assertEqual(named["message"], "No active goal. Set one with /goal <text>.")
        self.assert_error(self.req(action="goal_pause"), "ValueError", "session_id is required")

    def test_profile_on_session_actions_and_worker_key_on_destroy(self):
        self.run_chat("p1", "hi")
        self.assertEqual(self.req(action="status", session_id="p1", profile="default")["exists"], True)
        self.assertEqual(self.req(action="steer", session_id="p1", text="x", profile="default")["ok"], True)
        self.assertEqual(self.req(action="interrupt", session_id="p1", profile="default")["synced"], True)
        self.assertEqual(self.req(action="destroy", session_id="p1", profile="default", worker_key="default"),
                         {"ok": True, "session_id": "p1", "destroyed": True})

    def test_status_if_loaded(self):
        self.assertEqual(self.req(action="status_if_loaded", session_id="sl", profile="default"),
                         {"ok": True, "session_id": "sl", "exists": False, "running": False, "loaded": False})
        run = self.bridge.chat("sl", "script:sleep 400")
        out = self.req(action="status_if_loaded", session_id="sl", profile="default")
        self.assertEqual((out["exists"], out["running"], out["current_run_id"], out["loaded"]),
                         (True, True, run["run_id"], True))
        self.bridge.wait_done(run["run_id"])


class ClarifyQuestions(StudioTest):
    env = {"HERMES_BRIDGE_CLARIFY_TIMEOUT": "60"}

    def clarify_event(self, run_id: str) -> dict:
        return self.bridge.wait_event(run_id, "clarify.requested")

    def test_answered_once_then_resolved_false(self):
        run = self.bridge.chat("c1", "script:clarify Which colour?|red,blue")
        ev = self.clarify_event(run["run_id"])
        self.assertEqual({k: ev[k] for k in ("question", "choices", "timeout_ms")},
                         {"question": "Which colour?", "choices": ["red", "blue"], "timeout_ms": 60000})
        self.assertEqual(len(ev["clarify_id"]), 32)
        self.assertEqual(self.req(action="clarify_respond", clarify_id=ev["clarify_id"], response=" blue "),
                         {"ok": True, "clarify_id": ev["clarify_id"], "resolved": True})
        res = self.finish(run)
        self.assertTrue(res["output"].endswith("clarified=blue "), res["output"])
        self.assertEqual(events_named(res["events"], "clarify.resolved"),
                         [{"event": "clarify.resolved", "clarify_id": ev["clarify_id"], "response": "blue"}])
        # answered exactly once
        self.assertEqual(self.req(action="clarify_respond", clarify_id=ev["clarify_id"], response="red"),
                         {"ok": True, "clarify_id": ev["clarify_id"], "resolved": False})
        self.assert_error(self.req(action="clarify_respond", clarify_id="nope"), "KeyError",
                          "'unknown clarify request: nope'")
        self.assert_error(self.req(action="clarify_respond", clarify_id="  "), "ValueError",
                          "clarify_id is required")

    def test_an_interrupt_ends_the_question(self):
        run = self.bridge.chat("c2", "script:clarify Proceed?")
        ev = self.clarify_event(run["run_id"])
        self.assertIsNone(ev["choices"])
        self.assertTrue(self.req(action="interrupt", session_id="c2")["synced"])
        res = self.finish(run)
        resolved = events_named(res["events"], "clarify.resolved")
        self.assertEqual(resolved, [{"event": "clarify.resolved", "clarify_id": ev["clarify_id"],
                                     "response": None, "reason": "interrupted"}])


class ClarifyDeadline(StudioTest):
    env = {"HERMES_BRIDGE_CLARIFY_TIMEOUT": "1"}

    def test_nobody_answers(self):
        res = self.run_chat("c3", "script:clarify Anyone?")
        self.assertTrue(res["output"].endswith("clarified=[user did not respond within 1m] "), res["output"])
        self.assertEqual([e.get("reason") for e in events_named(res["events"], "clarify.resolved")], ["timeout"])


class ProfilesAndPing(StudioTest):
    def setUp(self) -> None:
        super().setUp()
        work = self.bridge.home / "profiles" / "work"
        work.mkdir(parents=True)
        (work / "config.yaml").write_text(json.dumps(self.config))

    def test_ping_worker_ping_and_destroy_profile(self):
        self.run_chat("d1", "hi")
        self.run_chat("w1", "hi", profile="work")
        self.run_chat("w2", "hi", profile="work")
        run = self.bridge.chat("w3", "script:sleep 600", profile="work")
        ping = self.req(action="ping")
        self.assertEqual(list(ping)[:4], ["ok", "pong", "time", "agent_root"])
        self.assertEqual((ping["mode"], ping["broker"]["pid"], ping["broker"]["endpoint"]),
                         ("broker", self.bridge.proc.pid, self.bridge.endpoint))
        self.assertEqual((ping["active_sessions"], ping["running_sessions"], ping["sessions_by_profile"],
                          ping["running_sessions_by_profile"]), (4, 1, {"default": 1, "work": 3}, {"work": 1}))
        wp = self.req(action="worker_ping", profile="work")
        self.assertEqual({k: wp[k] for k in ("ok", "pong", "pid", "profile", "session_count",
                                              "running_session_count", "worker_profile", "worker_key")},
                         {"ok": True, "pong": True, "pid": self.bridge.proc.pid, "profile": "work",
                          "session_count": 3, "running_session_count": 1, "worker_profile": "work",
                          "worker_key": "work"})
        self.assertEqual(wp["hermes_home"], str(self.bridge.home.resolve()))
        out = self.req(action="destroy_profile", profile="work")
        self.assertEqual(out, {"ok": True, "profile": "work", "destroyed": 3})
        self.assertEqual(self.bridge.wait_done(run["run_id"])["status"], "interrupted")
        left = [s["session_id"] for s in self.req(action="list")["sessions"]]
        self.assertEqual(left, ["d1"])
        self.assertEqual(self.req(action="destroy_profile", profile="work"),
                         {"ok": True, "profile": "work", "destroyed": 0})


class McpServers(StudioTest):
    config = {**DEFAULT_CONFIG, "mcp_servers": {
        "files": {"command": "files-mcp", "fake_tools": [{"name": "read", "description": "read a file"},
                                                          {"name": "write", "description": "write a file"}],
                  "tools": {"exclude": ["write"]}}}}

    def test_list_add_update_test_tools_remove_reload(self):
        listed = self.req(action="mcp_list")
        self.assertEqual((listed["ok"], [s["name"] for s in listed["servers"]]), (True, ["files"]))
        self.assertEqual(listed["servers"][0]["connected"], False)  # configured, not connected yet
        self.assertEqual(self.req(action="mcp_reload"), {"ok": True, "message": "MCP servers reloaded"})
        live = wait_for(lambda: (lambda s: s if s["servers"][0]["connected"] else None)(self.req(action="mcp_list")),
                        what="the server to connect")
        server = live["servers"][0]
        self.assertEqual((server["transport"], server["tools"], server["tool_names"], live["total_tools"]),
                         ("stdio", 2, ["read", "write"], 2))
        self.assertEqual(server["tool_details"], [{"name": "read", "description": "read a file"}])
        self.assertEqual(self.req(action="mcp_server_test", name="files"), {"ok": True, "tools": ["read", "write"]})
        tools = self.req(action="mcp_tools_list", server="files")["results"]
        self.assertEqual([t["name"] for t in tools[0]["tools"]], ["read"])
        raw = self.req(action="mcp_tools_list", raw=True)["results"]
        self.assertEqual([t["name"] for t in raw[0]["tools"]], ["read", "write"])
        # add, refuse a second add, update, remove: config.yaml follows
        added = self.req(action="mcp_server_add", name="web", config={"url": "http://x", "fake_tools": []})
        self.assertEqual(added, {"ok": True, "name": "web"})
        self.assertEqual(self.req(action="mcp_server_add", name="web", config={}),
                         {"ok": False, "error": "server 'web' already exists, use update instead"})
        self.assertEqual(self.req(action="mcp_server_update", name="web", config={"url": "http://y"}), {"ok": True})
        saved = json.loads((self.bridge.home / "config.yaml").read_text())
        self.assertEqual(saved["mcp_servers"]["web"], {"url": "http://y"})
        self.assertEqual(self.req(action="mcp_server_update", name="nope", config={}),
                         {"ok": False, "error": "server 'nope' not found in config"})
        self.assertEqual(self.req(action="mcp_server_remove", name="files"), {"ok": True})
        self.assertNotIn("files", json.loads((self.bridge.home / "config.yaml").read_text())["mcp_servers"])
        self.assertEqual(self.req(action="mcp_server_test", name="files"),
                         {"ok": False, "error": "server 'files' is not connected"})
        self.assertEqual(self.req(action="mcp_server_add", config={}),
                         {"ok": False, "error": "name and config are required"})
        self.assertEqual(self.req(action="mcp_reload", server="ghost"),
                         {"ok": False, "error": "server 'ghost' not found in config"})
        self.assertEqual(self.req(action="mcp_frob"), {"ok": False, "error": "unknown MCP action: mcp_frob"})


class GatewayApprovalsById(StudioTest):
    """Two gateway approvals wait at once in one session: each answer goes to
    the request it names, whatever order the answers come in."""
    config = {**DEFAULT_CONFIG, "approvals": {"timeout": 20}}

    def answer_in_reverse(self, session_id: str) -> None:
        run = self.bridge.chat(session_id, "script:danger-pair rm a|rm b")
        requested = wait_for(lambda: (lambda evs: evs if len(evs) == 2 else None)(events_named(
            self.bridge.request({"action": "get_result", "run_id": run["run_id"]})["events"], "approval.requested")),
            what="two approval requests")
        self.assertEqual([r["command"] for r in requested], ["rm a", "rm b"])
        for r in requested:
            self.assertEqual(r["pattern_keys"], ["fake_dangerous"])
            self.assertNotIn("agent_request_id", r)
            self.assertNotIn("bridge_token", r)
        second = self.req(action="approval_respond", approval_id=requested[1]["approval_id"], choice="once")
        self.assertEqual(second["resolved"], True)
        time.sleep(0.3)  # the first must still be waiting
        self.assertEqual(self.req(action="get_output", run_id=run["run_id"])["done"], False)
        first = self.req(action="approval_respond", approval_id=requested[0]["approval_id"], choice="deny")
        self.assertEqual(first["resolved"], True)
        res = self.finish(run)
        self.assertIn("pair=rm a:deny,rm b:once ", res["output"])
        self.assertEqual(self.req(action="approval_respond", approval_id=requested[0]["approval_id"],
                                  choice="once")["resolved"], False)

    def test_with_request_ids(self):
        self.answer_in_reverse("ga")


class GatewayApprovalsWithoutIds(GatewayApprovalsById):
    """hermes-agent before 0.20: no request ids; still never the wrong one."""
    env = {"FAKE_AGENT_LEGACY_APPROVALS": "1"}

    def test_with_request_ids(self):
        self.answer_in_reverse("gb")


class LateApprovalAnswer(StudioTest):
    config = {**DEFAULT_CONFIG, "approvals": {"timeout": 1}}

    def test_an_answer_after_the_timeout_is_not_resolved(self):
        run = self.bridge.chat("late", "script:approve-gw rm -rf /")
        ev = self.bridge.wait_event(run["run_id"], "approval.requested")
        self.bridge.wait_done(run["run_id"])
        self.assertEqual(self.req(action="approval_respond", approval_id=ev["approval_id"], choice="once"),
                         {"ok": True, "approval_id": ev["approval_id"], "resolved": False, "choice": "once"})


if __name__ == "__main__":
    unittest.main()
