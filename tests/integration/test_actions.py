"""Every action of the protocol and its error cases, against the real daemon,
over a unix socket and over TCP."""

from __future__ import annotations

import json
import os
import re
import time
import unittest

from harness import Bridge, events_named

HEX32 = re.compile(r"[0-9a-f]{32}\Z")


class ActionsOverIpc(unittest.TestCase):
    transport = "ipc"

    @classmethod
    def setUpClass(cls) -> None:
        cls.bridge = Bridge(transport=cls.transport).start()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.bridge.stop()

    def req(self, **fields):
        return self.bridge.request(fields)

    def assert_error(self, reply: dict, error_type: str, message: str | None = None) -> None:
        self.assertEqual(reply["ok"], False, reply)
        self.assertEqual(reply["error_type"], error_type, reply)
        self.assertEqual(set(reply), {"ok", "error", "error_type"})
        if message is not None:
            self.assertEqual(reply["error"], message)

    # -- ping, framing ------------------------------------------------------------
    def test_ping(self):
        before = time.time()
        reply = self.req(action="ping")
        self.assertEqual(reply["ok"], True)
        self.assertEqual(reply["pong"], True)
        self.assertGreaterEqual(reply["time"], before - 1)
        self.assertTrue(reply["agent_root"].endswith("tests/fake_agent"), reply)

    def test_answer_bytes_use_python_separators(self):
        raw = self.bridge.raw(b'{"action": "nope"}\n')
        self.assertEqual(raw, b'{"ok": false, "error": "unknown action: nope", "error_type": "ValueError"}\n')

    def test_request_split_across_writes(self):
        with self.bridge.connect() as sock:
            sock.sendall(b'{"act')
            time.sleep(0.05)
            sock.sendall(b'ion": "ping"}\n')
            reply = sock.recv(65536)
        self.assertIn(b'"pong": true', reply)

    def test_framing_errors(self):
        self.assert_error(self.bridge.raw_json(b"\n"), "RuntimeError", "empty request")
        self.assert_error(self.bridge.raw_json(b"{oops\n"), "JSONDecodeError")
        self.assert_error(self.bridge.raw_json(b"[1, 2]\n"), "ValueError",
                          "request must be a JSON object, got list")
        self.assert_error(self.bridge.raw_json(b'{"action": "\xff"}\n'), "UnicodeDecodeError")
        self.assert_error(self.req(), "ValueError", "action is required")
        self.assert_error(self.req(action="  "), "ValueError", "action is required")
        self.assert_error(self.req(action="frobnicate"), "ValueError", "unknown action: frobnicate")
        # Hermes Studio's action, not an unknown one any more
        self.assert_error(self.req(action="command"), "ValueError", "session_id is required")

    # -- chat and reading a run ------------------------------------------------------
    def test_chat_then_poll(self):
        started = self.req(action="chat", session_id="poll", message="script:say one two three")
        self.assertEqual(set(started), {"ok", "run_id", "session_id", "status"})
        self.assertRegex(started["run_id"], HEX32)
        self.assertEqual((started["session_id"], started["status"]), ("poll", "running"))
        done = self.bridge.wait_done(started["run_id"])
        self.assertEqual(list(done), ["ok", "run_id", "session_id", "status", "delta", "cursor", "output",
                                      "done", "result", "error", "events", "event_cursor",
                                      "seen_text", "seen_events"])
        self.assertEqual(done["status"], "complete")
        self.assertEqual(done["seen_text"], "one two three")
        self.assertEqual(done["output"], "one two three")
        self.assertEqual(done["cursor"], 3)
        self.assertIsNone(done["error"])
        self.assertEqual(done["result"]["final_response"], "one two three")
        # cursor counts deltas: from cursor 1 the rest of the text, events from 0 again
        again = self.req(action="get_output", run_id=started["run_id"], cursor=1, event_cursor=0)
        self.assertEqual(again["delta"], "two three")
        self.assertEqual(len(again["events"]), again["event_cursor"])
        # Python's int(): strings count, negatives clamp to 0, past the end is empty
        self.assertEqual(self.req(action="get_output", run_id=started["run_id"], cursor="2")["delta"], "three")
        self.assertEqual(self.req(action="get_output", run_id=started["run_id"], cursor=-5)["delta"],
                         "one two three")
        past = self.req(action="get_output", run_id=started["run_id"], cursor=99, event_cursor=99)
        self.assertEqual((past["delta"], past["cursor"], past["events"]), ("", 3, []))

    def test_get_output_errors(self):
        self.assert_error(self.req(action="get_output", run_id="nope"), "KeyError", "'unknown run: nope'")
        self.assert_error(self.req(action="get_output", run_id="nope", cursor="abc"), "ValueError",
                          "invalid literal for int() with base 10: 'abc'")
        self.assert_error(self.req(action="get_output", run_id="nope", event_cursor=[1]), "TypeError")
        self.assert_error(self.req(action="get_output"), "KeyError", "'unknown run: '")

    def test_chat_wait_returns_the_result_shape(self):
        reply = self.req(action="chat", session_id="waiter", message="hi there", wait=True, timeout=20)
        self.assertEqual(list(reply), ["ok", "run_id", "session_id", "status", "started_at", "ended_at",
                                       "output", "deltas", "events", "result", "error"])
        self.assertEqual(reply["status"], "complete")
        self.assertEqual(reply["output"], "echo: hi there")
        self.assertEqual("".join(reply["deltas"]), reply["output"])
        self.assertLessEqual(reply["started_at"], reply["ended_at"])
        same = self.req(action="get_result", run_id=reply["run_id"])
        self.assertEqual(same, reply)

    def test_chat_wait_timeout_returns_running_snapshot(self):
        reply = self.req(action="chat", session_id="slowwait", message="script:stream 30 50",
                         wait=True, timeout=0.3)
        self.assertEqual(reply["status"], "running")
        self.assertIsNone(reply["ended_at"])
        self.bridge.wait_done(reply["run_id"])

    def test_chat_generates_a_session_id(self):
        reply = self.req(action="chat", message="hello")
        self.assertRegex(reply["session_id"], HEX32)
        self.bridge.wait_done(reply["run_id"])

    def test_chat_accepts_input_and_content_blocks(self):
        reply = self.req(action="chat", session_id="blocks", input="from input", wait=True)
        self.assertEqual(reply["output"], "echo: from input")
        reply = self.req(action="chat", session_id="blocks",
                         message=[{"type": "text", "text": "block text"}], wait=True)
        self.assertEqual(reply["output"], "echo: block text")

    def test_second_chat_on_a_running_session_is_refused(self):
        first = self.req(action="chat", session_id="busy", message="script:sleep 500")
        second = self.req(action="chat", session_id="busy", message="again")
        self.assert_error(second, "RuntimeError", "session busy is already running")
        self.assertEqual(self.bridge.wait_done(first["run_id"])["status"], "complete")

    def test_agent_construction_errors_surface_and_leave_no_session(self):
        reply = self.req(action="chat", session_id="broken", message="x", model="fail-init")
        self.assert_error(reply, "RuntimeError", "fake init failure for model fail-init")
        reply = self.req(action="chat", session_id="broken2", message="x", provider="broken")
        self.assert_error(reply, "RuntimeError", "Provider 'broken' is set but no API key")
        ids = [s["session_id"] for s in self.req(action="list")["sessions"]]
        self.assertNotIn("broken", ids)
        self.assertNotIn("broken2", ids)

    def test_invalid_wait_timeout_starts_nothing(self):
        reply = self.req(action="chat", session_id="badtimeout", message="x", wait=True, timeout="abc")
        self.assert_error(reply, "ValueError", "could not convert string to float: 'abc'")
        status = self.req(action="status", session_id="badtimeout")
        self.assertFalse(status["running"])

    def test_get_result_errors(self):
        self.assert_error(self.req(action="get_result", run_id="zzz"), "KeyError", "'unknown run: zzz'")
        self.assert_error(self.req(action="get_result", run_id=["a"]), "KeyError", "\"unknown run: ['a']\"")

    # -- sessions -----------------------------------------------------------------
    def test_history_status_list_destroy(self):
        run = self.req(action="chat", session_id="lifecycle", message="hello", wait=True)
        history = self.req(action="get_history", session_id="lifecycle")
        self.assertEqual(history["session_id"], "lifecycle")
        self.assertEqual([m["role"] for m in history["history"]], ["user", "assistant"])
        status = self.req(action="status", session_id="lifecycle")
        self.assertEqual(list(status), ["ok", "session_id", "exists", "running", "current_run_id",
                                        "created_at", "last_used_at", "message_count", "config", "agent"])
        host = os.environ.get("HB_TEST_AGENT_HOST", "worker")
        self.assertEqual((status["agent"]["host"], status["agent"]["loaded"]), (host, True))
        self.assertEqual("worker_pid" in status["agent"], host == "worker")
        self.assertEqual((status["exists"], status["running"], status["current_run_id"]), (True, False, None))
        self.assertEqual(status["message_count"], 2)
        self.assertEqual(status["config"], {
            "requested_session_id": "lifecycle", "profile": "default", "model": "fake-model",
            "provider": "fake", "base_url": "http://127.0.0.1:9/v1", "api_mode": "chat_completions",
            "platform": "cli", "resumed": False, "resumed_message_count": 0, "db_error": None})
        self.assertEqual(self.req(action="status_if_loaded", session_id="lifecycle"), status | {"loaded": True} | {
            "last_used_at": status["last_used_at"]})
        listed = [s for s in self.req(action="list")["sessions"] if s["session_id"] == "lifecycle"]
        self.assertEqual(len(listed), 1)
        self.assertEqual(list(listed[0]), ["session_id", "running", "current_run_id", "created_at",
                                           "last_used_at", "message_count", "config", "profile", "worker_key"])
        self.assertEqual((listed[0]["profile"], listed[0]["worker_key"]), ("default", "default"))
        self.assertEqual(self.req(action="destroy", session_id="lifecycle"),
                         {"ok": True, "session_id": "lifecycle", "destroyed": True})
        self.assertEqual(self.req(action="destroy", session_id="lifecycle"),
                         {"ok": True, "session_id": "lifecycle", "destroyed": False})
        self.assertEqual(self.req(action="status", session_id="lifecycle"),
                         {"ok": True, "session_id": "lifecycle", "exists": False, "running": False,
                          "message_count": 0})
        # the run outlives its session in the log
        self.assertEqual(self.req(action="get_result", run_id=run["run_id"])["status"], "complete")

    def test_session_errors(self):
        for action in ("interrupt", "get_history"):
            self.assert_error(self.req(action=action, session_id="ghost"), "KeyError", "'unknown session: ghost'")
        self.assert_error(self.req(action="steer", session_id="ghost", text="x"), "KeyError",
                          "'unknown session: ghost'")
        self.assert_error(self.req(action="steer", session_id="ghost"), "ValueError", "text is required")
        self.assert_error(self.req(action="steer", session_id="ghost", text="   "), "ValueError",
                          "text is required")

    def test_running_status_while_a_run_is_live(self):
        run = self.req(action="chat", session_id="live", message="script:sleep 400")
        status = self.req(action="status", session_id="live")
        self.assertEqual((status["running"], status["current_run_id"]), (True, run["run_id"]))
        self.bridge.wait_done(run["run_id"])
        self.assertFalse(self.req(action="status", session_id="live")["running"])

    def test_a_new_profile_recreates_an_idle_session_a_new_model_switches_it(self):
        self.req(action="chat", session_id="switch", message="a", wait=True)
        before = self.req(action="status", session_id="switch")
        reply = self.req(action="chat", session_id="switch", message="b", model="other-model", wait=True)
        self.assertEqual(reply["status"], "complete")
        after = self.req(action="status", session_id="switch")
        self.assertEqual(after["config"]["model"], "other-model")
        self.assertEqual(after["created_at"], before["created_at"])  # the same agent, switched in place
        (self.bridge.home / "profiles" / "other").mkdir(parents=True)  # a profile is a directory
        reply = self.req(action="chat", session_id="switch", message="c", profile="other", wait=True)
        self.assertEqual(reply["status"], "complete")
        again = self.req(action="status", session_id="switch")
        self.assertEqual(again["config"]["profile"], "other")
        self.assertGreater(again["created_at"], after["created_at"])

    def test_destroy_all_counts_sessions(self):
        bridge = Bridge(transport=self.transport).start()
        try:
            for sid in ("a", "b"):
                bridge.request({"action": "chat", "session_id": sid, "message": "x", "wait": True})
            self.assertEqual(bridge.request({"action": "destroy_all"}), {"ok": True, "destroyed": 2})
            self.assertEqual(bridge.request({"action": "list"}), {"ok": True, "sessions": []})
            self.assertEqual(bridge.request({"action": "destroy_all"}), {"ok": True, "destroyed": 0})
        finally:
            bridge.stop()

    # -- interrupt and steer ------------------------------------------------------------
    def test_interrupt_stops_a_stream(self):
        run = self.req(action="chat", session_id="stopme", message="script:stream 200 20")
        time.sleep(0.2)
        reply = self.req(action="interrupt", session_id="stopme", message="stop please")
        self.assertEqual(reply, {"ok": True, "status": "interrupted", "session_id": "stopme", "synced": True})
        done = self.bridge.wait_done(run["run_id"])
        self.assertEqual(done["status"], "interrupted")
        self.assertEqual(done["result"]["interrupt_message"], "stop please")
        self.assertLess(done["cursor"], 200)

    def test_interrupt_idle_session_does_not_poison_the_next_turn(self):
        self.req(action="chat", session_id="stale", message="x", wait=True)
        self.assertTrue(self.req(action="interrupt", session_id="stale")["synced"])
        reply = self.req(action="chat", session_id="stale", message="next", wait=True)
        self.assertEqual(reply["status"], "complete")
        self.assertEqual(reply["output"], "echo: next")

    def test_steer_reaches_the_running_turn(self):
        run = self.req(action="chat", session_id="steered", message="script:steer-wait 400")
        time.sleep(0.1)
        reply = self.req(action="steer", session_id="steered", text="  go left  ")
        self.assertEqual(reply, {"ok": True, "status": "queued", "accepted": True, "text": "go left"})
        done = self.bridge.wait_done(run["run_id"])
        self.assertIn("steered=go left", done["output"])

    # -- events ------------------------------------------------------------------------
    def test_tool_turn_events_in_order(self):
        reply = self.req(action="chat", session_id="tools",
                         message="script:say before ;tool terminal ls -la;say after", wait=True)
        names = [e["event"] for e in reply["events"]]
        self.assertLess(names.index("stream.delta"), names.index("turn.boundary"))
        self.assertLess(names.index("turn.boundary"), names.index("tool.started"))
        self.assertLess(names.index("tool.started"), names.index("tool.completed"))
        # the title hermes gave the session's first exchange comes last
        self.assertEqual(names[-3:], ["stream.delta", "reasoning.available", "session.title.updated"])
        started = events_named(reply["events"], "tool.started")[0]
        self.assertEqual(started, {"event": "tool.started", "tool_call_id": "call_1", "tool_name": "terminal",
                                   "args": {"arg": "ls -la"}})
        completed = events_named(reply["events"], "tool.completed")[0]
        self.assertEqual(completed["result"], "ran terminal: ls -la")
        self.assertEqual(completed["result_preview"], "ran terminal: ls -la")
        streamed = "".join(e["delta"] for e in events_named(reply["events"], "stream.delta"))
        self.assertEqual(streamed, reply["output"])
        step = events_named(reply["events"], "step")[0]
        self.assertEqual(step["step_info"]["prev_tools"][0]["name"], "terminal")

    def test_status_thinking_reasoning_events(self):
        reply = self.req(action="chat", session_id="chatter",
                         message="script:status lifecycle warming up;think pondering;reason because", wait=True)
        self.assertIn({"event": "status", "kind": "lifecycle", "text": "warming up"}, reply["events"])
        # The spinner's text stays out of the conversation (as in Studio's bridge).
        self.assertIn({"event": "thinking.delta", "text": ""}, reply["events"])
        self.assertNotIn("pondering", json.dumps(reply["events"]))
        self.assertIn({"event": "reasoning.delta", "text": "because"}, reply["events"])

    def test_agent_exception_becomes_an_error_run(self):
        reply = self.req(action="chat", session_id="raiser", message="script:say partial;raise kaboom", wait=True)
        self.assertEqual(reply["status"], "error")
        self.assertEqual(reply["error"], "kaboom")
        self.assertEqual(reply["result"]["error"], "kaboom")
        self.assertIn("RuntimeError: kaboom", reply["result"]["traceback"])
        self.assertEqual(reply["output"], "partial")
        # the daemon and the session live on
        self.assertEqual(self.req(action="chat", session_id="raiser", message="ok", wait=True)["status"], "complete")

    def test_unencodable_agent_output_is_sanitised(self):
        reply = self.bridge.raw(b'{"action": "chat", "session_id": "weird", "message": "script:surrogate;nan", '
                                b'"wait": true}\n')
        self.assertNotIn(b"NaN", reply)
        parsed = json.loads(reply)
        self.assertEqual(parsed["output"], "bad\ufffdtext ")
        self.assertIsNone(parsed["result"]["score"])

    def test_lone_surrogate_in_request_is_replaced(self):
        reply = self.bridge.raw(b'{"action": "chat", "session_id": "sur", "message": "a\\ud800b", "wait": true}\n')
        self.assertEqual(json.loads(reply)["output"], "echo: a\ufffdb")


class ActionsOverTcp(ActionsOverIpc):
    transport = "tcp"

if __name__ == "__main__":
    unittest.main()
