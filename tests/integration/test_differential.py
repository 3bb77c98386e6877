"""Differential test: hermes-bridge (ours) against the Python seed bridge.

The same scenario script runs against a fresh seed bridge and a fresh bridge
of ours (same fake agent, same config). Every response is recorded, the
random and time-based values are masked, ids are renamed consistently
("<run1>", "<approval1>", ...), and the normalised responses (and, for the
simple actions, the masked raw bytes) must be identical.

The deliberate differences (ours fixes the seed) are filtered or normalised
before the comparison and asserted explicitly in their own test methods.

Run: cd tests/integration && /usr/bin/python3 -m unittest -v test_differential
"""

from __future__ import annotations

import json
import math
import sys
import time
import unittest
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import DEFAULT_CONFIG, Bridge, events_named  # noqa: E402

from differential_support import *  # noqa: F401,F403  (the scenario vocabulary)

# ---------------------------------------------------------------------------
# The main scenario. Labels are "<theme>/<what>"; each theme has a test method.
# RUN(n) is the n-th run started (Start / ChatWait), in this order.
# ---------------------------------------------------------------------------

MAIN_SCENARIO = [
    # -- basics: ping, action dispatch, framing -----------------------------
    Req("basic/ping", {"action": "ping"}, {"ok": True, "pong": True}),
    Req("basic/padded action", {"action": " ping "}, {"ok": True, "pong": True}),
    Req("basic/missing action", {}, err("ValueError", "action is required")),
    Req("basic/null action", {"action": None}, err("ValueError", "action is required")),
    Req("basic/blank action", {"action": "   "}, err("ValueError", "action is required")),
    Req("basic/unknown action", {"action": "nope"}, err("ValueError", "unknown action: nope")),
    Req("basic/numeric action", {"action": 5}, err("ValueError", "unknown action: 5")),
    Req("basic/command action", {"action": "command"}, err("ValueError", "unknown action: command")),
    Raw("basic/empty line", b"\n", err("RuntimeError", "empty request")),
    Raw("basic/blank line", b"  \r\n", err("RuntimeError", "empty request")),
    Raw("basic/compact json", b'{"action":"list"}\n', {"ok": True, "sessions": []}),
    Raw("basic/pipelined", b'{"action": "destroy_all"}\n{"action": "ping"}\n', {"ok": True, "destroyed": 0}),
    Raw("basic/trailing spaces", b'  {"action": "list"}  \n', {"ok": True, "sessions": []}),
    Req("basic/list empty", {"action": "list"}, {"ok": True, "sessions": []}),

    # -- unknown runs / sessions (KeyError keeps Python's quotes) -----------
    Req("unknown/get_result", {"action": "get_result", "run_id": "nope"}, key_err("unknown run", "nope")),
    Req("unknown/get_result no id", {"action": "get_result"}, key_err("unknown run", "")),
    Req("unknown/get_output", get_output("nope"), key_err("unknown run", "nope")),
    Req("unknown/get_output bad cursor", get_output("nope", cursor="abc"),
        err("ValueError", "invalid literal for int() with base 10: 'abc'")),
    Req("unknown/interrupt", {"action": "interrupt", "session_id": "nope"}, key_err("unknown session", "nope")),
    Req("unknown/steer", {"action": "steer", "session_id": "nope", "text": "hi"},
        key_err("unknown session", "nope")),
    Req("unknown/steer via message", {"action": "steer", "session_id": "nope", "message": "hi"},
        key_err("unknown session", "nope")),
    Req("unknown/steer without text", {"action": "steer", "session_id": "nope"},
        err("ValueError", "text is required")),
    Req("unknown/steer blank text", {"action": "steer", "session_id": "nope", "text": "  "},
        err("ValueError", "text is required")),
    Req("unknown/get_history", {"action": "get_history", "session_id": "nope"},
        key_err("unknown session", "nope")),
    Req("unknown/destroy", {"action": "destroy", "session_id": "nope"},
        {"ok": True, "session_id": "nope", "destroyed": False}),
    Req("unknown/non-ascii id", {"action": "get_result", "run_id": "ñ✓日本"}, key_err("unknown run", "ñ✓日本")),
    Req("unknown/apostrophe id", {"action": "get_result", "run_id": "it's"}, key_err("unknown run", "it's")),
    Req("unknown/both quotes id", {"action": "get_result", "run_id": "a'b\"c"},
        key_err("unknown run", "a'b\"c")),
    Req("unknown/newline id", {"action": "get_history", "session_id": "a\nb\\c"},
        key_err("unknown session", "a\nb\\c")),
    Req("unknown/numeric id", {"action": "get_result", "run_id": 12}, key_err("unknown run", "12")),
    Req("unknown/bool id", {"action": "get_output", "run_id": True}, key_err("unknown run", "True")),
    Req("unknown/float id", {"action": "get_history", "session_id": 1.5}, key_err("unknown session", "1.5")),

    # -- approval_respond / compression_respond validation ------------------
    Req("respond/approval no id", {"action": "approval_respond", "choice": "once"},
        err("ValueError", "approval_id is required")),
    Req("respond/approval blank id", {"action": "approval_respond", "approval_id": "  "},
        err("ValueError", "approval_id is required")),
    Req("respond/approval unknown ONCE", {"action": "approval_respond", "approval_id": "nope", "choice": " ONCE "},
        {"ok": True, "approval_id": "nope", "resolved": False, "choice": "once"}),
    Req("respond/approval unknown maybe", {"action": "approval_respond", "approval_id": "nope", "choice": "maybe"},
        {"ok": True, "approval_id": "nope", "resolved": False, "choice": "deny"}),
    Req("respond/approval unknown Session", {"action": "approval_respond", "approval_id": " x ", "choice": "Session"},
        {"ok": True, "approval_id": "x", "resolved": False, "choice": "session"}),
    Req("respond/approval no choice", {"action": "approval_respond", "approval_id": "nope"},
        {"ok": True, "resolved": False, "choice": "deny"}),
    Req("respond/approval numeric", {"action": "approval_respond", "approval_id": 7, "choice": 1},
        {"ok": True, "approval_id": "7", "resolved": False, "choice": "deny"}),
    Req("respond/compression no id", {"action": "compression_respond", "messages": []},
        err("ValueError", "request_id is required")),
    Req("respond/compression messages str", {"action": "compression_respond", "request_id": "nope", "messages": "x"},
        err("ValueError", "messages must be a list")),
    Req("respond/compression messages dict", {"action": "compression_respond", "request_id": "nope", "messages": {}},
        err("ValueError", "messages must be a list")),
    Req("respond/compression unknown", {"action": "compression_respond", "request_id": " nope ", "messages": []},
        err("RuntimeError", "compression request nope not found")),
    Req("respond/compression unknown no messages", {"action": "compression_respond", "request_id": "nope"},
        err("RuntimeError", "compression request nope not found")),

    # -- RUN(1): a tool turn, polled without wait ----------------------------
    Run("tool/turn", chat("s1", TOOL_SCRIPT), 1, {"status": "complete", "output": "ab"}),

    # -- get_output cursor semantics on the finished RUN(1) -------------------
    Req("poll/cursor 0", get_output(RUN(1), cursor=0, event_cursor=0), {"delta": "ab", "cursor": 2}, raw=False),
    Req("poll/no cursors", get_output(RUN(1)), {"delta": "ab", "done": True}, raw=False),
    Req("poll/cursor 1", get_output(RUN(1), cursor=1), {"delta": "b", "cursor": 2}, raw=False),
    Req("poll/cursor '1'", get_output(RUN(1), cursor="1"), {"delta": "b"}, raw=False),
    Req("poll/cursor ' 1 '", get_output(RUN(1), cursor=" 1 "), {"delta": "b"}, raw=False),
    Req("poll/cursor 2", get_output(RUN(1), cursor=2), {"delta": "", "output": "ab"}, raw=False),
    Req("poll/cursor '2'", get_output(RUN(1), cursor="2"), {"delta": ""}, raw=False),
    Req("poll/cursor -3", get_output(RUN(1), cursor=-3), {"delta": "ab", "cursor": 2}, raw=False),
    Req("poll/cursor '-1'", get_output(RUN(1), cursor="-1"), {"delta": "ab"}, raw=False),
    Req("poll/cursor 100", get_output(RUN(1), cursor=100), {"delta": "", "cursor": 2}, raw=False),
    Req("poll/cursor 1.7", get_output(RUN(1), cursor=1.7), {"delta": "b"}, raw=False),
    Req("poll/cursor true", get_output(RUN(1), cursor=True), {"delta": "b"}, raw=False),
    Req("poll/cursor null", get_output(RUN(1), cursor=None), {"delta": "ab"}, raw=False),
    Req("poll/cursor ''", get_output(RUN(1), cursor=""), {"delta": "ab"}, raw=False),
    Req("poll/cursor huge", get_output(RUN(1), cursor=10 ** 20), {"delta": "", "cursor": 2}, raw=False),
    Req("poll/cursor 1e30", get_output(RUN(1), cursor=1e30), {"delta": "", "cursor": 2}, raw=False),
    Req("poll/cursor 'abc'", get_output(RUN(1), cursor="abc"),
        err("ValueError", "invalid literal for int() with base 10: 'abc'")),
    Req("poll/cursor '1.5'", get_output(RUN(1), cursor="1.5"),
        err("ValueError", "invalid literal for int() with base 10: '1.5'")),
    Req("poll/cursor list", get_output(RUN(1), cursor=[1]), {"ok": False, "error_type": "TypeError"}),
    Req("poll/cursor dict", get_output(RUN(1), cursor={"a": 1}), {"ok": False, "error_type": "TypeError"}),
    Req("poll/event_cursor 1", get_output(RUN(1), cursor=2, event_cursor=EventCursor(1, 1)), raw=False),
    Req("poll/event_cursor 3", get_output(RUN(1), cursor=2, event_cursor=EventCursor(1, 3)), raw=False),
    Req("poll/event_cursor -2", get_output(RUN(1), event_cursor=-2), raw=False),
    Req("poll/event_cursor 100", get_output(RUN(1), event_cursor=100), {"events": []}, raw=False),
    Req("poll/event_cursor 'x'", get_output(RUN(1), event_cursor="x"),
        err("ValueError", "invalid literal for int() with base 10: 'x'")),
    Req("poll/event_cursor list", get_output(RUN(1), event_cursor=[]), {"ok": True}, raw=False),

    # -- RUN(2): chat with wait ----------------------------------------------
    ChatWait("wait/chat", chat("s1", "script:say waited here"),
             {"ok": True, "status": "complete", "output": "waited here", "deltas": ["waited ", "here"]}),
    Req("wait/get_result", {"action": "get_result", "run_id": RUN(2)}, {"status": "complete"}, raw=False),
    Req("wait/get_history", {"action": "get_history", "session_id": "s1"}),
    Req("wait/list", {"action": "list"}),

    # -- RUN(3): gateway approval answered ------------------------------------
    Start("gateway/chat", chat("s1", "script:approve-gw rm -rf /;say after")),
    AnswerApproval("gateway/answer", RUN(3), " Once ", {"ok": True, "resolved": True, "choice": "once"}),
    Finish("gateway/done", RUN(3), {"status": "complete"}),
    Req("gateway/answer again", {"action": "approval_respond", "approval_id": APPROVAL(1), "choice": "once"},
        {"ok": True, "resolved": False}),

    # -- RUN(4): terminal (CLI callback) approval answered --------------------
    Start("cli-approval/chat", chat("s1", "script:approve-cli rm -rf /tmp/x;say after")),
    AnswerApproval("cli-approval/answer", RUN(4), "SESSION", {"ok": True, "resolved": True, "choice": "session"}),
    Finish("cli-approval/done", RUN(4), {"status": "complete"}),
    Req("cli-approval/answer again", {"action": "approval_respond", "approval_id": APPROVAL(2)},
        {"ok": True, "resolved": False, "choice": "deny"}),

    # -- RUN(5..7): compression answered with messages / error / nothing -------
    Start("compression/chat", chat("s1", "script:compress;sysmsg", instructions="be brief")),
    AnswerCompression("compression/answer", RUN(5), {"ok": True, "handled": True},
                      messages=SUMMARY, system_message="shorter"),
    Finish("compression/done", RUN(5), {"status": "complete"}),
    Req("compression/answer again", {"action": "compression_respond", "request_id": REQUEST(1), "messages": []},
        {"ok": False, "error_type": "RuntimeError"}),
    Start("compression/error chat", chat("s1", "script:compress;say never", system_message="sys")),
    AnswerCompression("compression/error answer", RUN(6), {"ok": True, "handled": True}, error="no thanks"),
    Finish("compression/error done", RUN(6), {"status": "error", "error": "no thanks"}),
    Start("compression/empty chat", chat("s1", "script:compress")),
    AnswerCompression("compression/empty answer", RUN(7), {"ok": True, "handled": True}),
    Finish("compression/empty done", RUN(7), {"status": "error"}),

    # -- RUN(8): a run that raises ---------------------------------------------
    Run("raise/run", chat("s1", "script:say pre;raise boom"), 8, {"status": "error", "error": "boom"}),
    Req("raise/history", {"action": "get_history", "session_id": "s1"}),

    # -- RUN(9..10): steer (idle, then while running) ----------------------------
    Req("steer/idle", {"action": "steer", "session_id": "s1", "text": "  go left  "},
        {"ok": True, "text": "go left"}),
    Run("steer/next run", chat("s1", "script:steer-wait 0"), 9, {"output": "steered=go left "}),
    Start("steer/chat", chat("s2", "script:steer-wait 400")),
    Req("steer/running", {"action": "steer", "session_id": "s2", "message": " go right "},
        {"ok": True, "status": "queued", "accepted": True, "text": "go right"}),
    Finish("steer/done", RUN(10), {"status": "complete", "output": "steered=go right "}),

    # -- RUN(11): interrupt a running turn ---------------------------------------
    Start("interrupt/chat", chat("s2", "script:say x;status note sleeping;sleep 5000;say y")),
    WaitEvent(RUN(11), "status"),  # "say x" is over: the interrupt lands in the sleep
    Req("interrupt/running", {"action": "interrupt", "session_id": "s2", "message": "stop"},
        {"ok": True, "status": "interrupted", "session_id": "s2", "synced": True}),
    Finish("interrupt/done", RUN(11), {"status": "interrupted"}),

    # -- RUN(12): a chat while the session runs ------------------------------------
    Start("busy/chat", chat("s3", "script:sleep 600;say z")),
    Req("busy/second chat", chat("s3", "hi"), err("RuntimeError", "session s3 is already running")),
    Req("busy/second chat new model", chat("s3", "hi", model="other-model"),
        err("RuntimeError", "session s3 is already running")),
    Req("busy/list", {"action": "list"}),
    Finish("busy/done", RUN(12), {"status": "complete"}),

    # -- RUN(13..14): config change recreates an idle session ----------------------
    ChatWait("config/new model", chat("s1", "hi", model="other-model"), {"status": "complete"}),
    Req("config/list", {"action": "list"}),
    Req("config/old run", {"action": "get_result", "run_id": RUN(1)}, key_err("unknown run", "<run1>"), raw=False),
    Req("config/history", {"action": "get_history", "session_id": "s1"}),
    ChatWait("config/same model", chat("s1", "again", model="other-model"), {"status": "complete"}),
    Req("config/list again", {"action": "list"}),

    # -- RUN(15..18): message shapes -----------------------------------------------
    ChatWait("message/content blocks", chat("blocks", [
        {"type": "text", "text": "hello"}, {"type": "image_url", "image_url": {"url": "data:x"}},
        {"type": "text", "text": "world"}]), {"output": "echo: hello world"}),
    ChatWait("message/input alias", {"action": "chat", "session_id": "alias", "input": "via input"},
             {"output": "echo: via input"}),
    ChatWait("message/unicode", chat("uni", "héllo ✓ 日本 \"q\" \\ \t"), {"status": "complete"}),
    ChatWait("message/generated session", {"action": "chat", "message": "anon"}, {"status": "complete"}),
    Req("message/unicode history", {"action": "get_history", "session_id": "uni"}),

    # -- RUN(19): a longer stream polled while it runs ------------------------------
    Run("stream/run", chat("s4", "script:stream 20 10;say end"), 19, {"status": "complete"}),

    # -- lifecycle: destroy / destroy_all / shutdown -------------------------------
    Req("lifecycle/list", {"action": "list"}),
    Req("lifecycle/destroy", {"action": "destroy", "session_id": "s2"},
        {"ok": True, "session_id": "s2", "destroyed": True}),
    Req("lifecycle/destroy again", {"action": "destroy", "session_id": "s2"},
        {"ok": True, "session_id": "s2", "destroyed": False}),
    Req("lifecycle/destroy no id", {"action": "destroy"}, {"ok": True, "session_id": "", "destroyed": False}),
    Req("lifecycle/history after destroy", {"action": "get_history", "session_id": "s2"},
        key_err("unknown session", "s2")),
    Req("lifecycle/run after destroy", {"action": "get_result", "run_id": RUN(11)}, raw=False),
    Req("lifecycle/destroy_all", {"action": "destroy_all"}, {"ok": True}),
    Req("lifecycle/list after destroy_all", {"action": "list"}, {"ok": True, "sessions": []}),
    Req("lifecycle/destroy_all again", {"action": "destroy_all"}, {"ok": True, "destroyed": 0}),
    Shutdown("lifecycle/shutdown"),
]

# Differences found by this test that are NOT deliberate (not in the brief's
# list): excluded from the theme comparisons, compared strictly (and expected
# to fail) in test_unlisted_differences.
# Steps whose answers differ on purpose and are asserted by their own test.
DELIBERATE_SKIPS = {
    "config/old run": "seed: a config change drops the old session's runs (KeyError); ours keeps them (diff 11)",
    "basic/command action": "seed: unknown action; ours: Hermes Studio's `command` action (diff 12)",
    # seed: a new model recreates the session (a new created_at, listed last); ours, like Hermes
    # Studio's bridge, switches the live agent's model in place (diff 12, test_studio_protocol)
    "config/list": "the session keeps its created_at across a model change",
    "config/list again": "the session keeps its created_at across a model change",
    "lifecycle/list": "the session keeps its created_at across a model change",
}

THEMES = ["basic", "unknown", "respond", "tool", "poll", "wait", "gateway", "cli-approval", "compression",
          "raise", "steer", "interrupt", "busy", "config", "message", "stream", "lifecycle"]


# ---------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------


class DifferentialTest(unittest.TestCase):
    maxDiff = None
    seed: Trace
    ours: Trace

    @classmethod
    def setUpClass(cls) -> None:
        cls.seed, cls.ours = run_both(MAIN_SCENARIO)

    # -- helpers ---------------------------------------------------------------
    def assert_same_records(self, seed: Trace, ours: Trace, prefix: str = "",
                            skip: Any = DELIBERATE_SKIPS) -> int:
        """Normalised answers equal (key order included), raw bytes equal where
        flagged, and the seed's answer matches the step's expectation."""
        self.assertEqual([r.label for r in ours.records], [r.label for r in seed.records])
        compared = 0
        for s, o in zip(seed.records, ours.records):
            if not s.label.startswith(prefix):
                continue
            with self.subTest(step=s.label):
                self.assertIsNotNone(s.resp, "the seed sent no answer")
                for key, value in (s.expect or {}).items():
                    self.assertEqual(s.norm.get(key), value, f"seed: {key} (scenario expectation)")
                for kind, rec in (("seed", s), ("ours", o)):
                    if rec.raw:  # each wire is Python's json.dumps(ensure_ascii=False) of what it carries
                        self.assertEqual(rec.raw, python_dumps(rec.raw), f"{kind}: not json.dumps output")
                if s.label in skip:
                    continue
                compared += 1
                self.assertEqual(o.norm, s.norm)
                self.assertEqual(json.dumps(o.norm, ensure_ascii=False), json.dumps(s.norm, ensure_ascii=False),
                                 "key order differs")
                if s.compare_raw:
                    self.assertIsNotNone(s.raw_norm)
                    self.assertEqual(o.raw_norm, s.raw_norm, "raw bytes differ")
        return compared

    def check_theme(self, theme: str) -> None:
        self.assertGreater(self.assert_same_records(self.seed, self.ours, theme + "/"), 0)

    def full_events(self, trace: Trace, n: int) -> list[dict]:
        return trace.full_events[trace.refs["run"][n - 1]]

    # -- the main scenario, one theme per test -----------------------------------
    def test_ours_never_answers_done_without_result(self) -> None:
        """Seed quirk 11: status flips before result/ended_at are set. Ours must not tear."""
        self.assertEqual(self.ours.torn_reads, [])

    def test_every_step_has_a_theme(self) -> None:
        for rec in self.seed.records:
            self.assertIn(rec.label.split("/", 1)[0], THEMES, rec.label)

    def test_basic_and_framing(self) -> None:
        self.check_theme("basic")
        ping = self.seed.by_label()["basic/ping"].raw_norm
        self.assertTrue(ping.startswith('{"ok": true, "pong": true, "time": <num>, "agent_root": '), ping)

    def test_unknown_ids(self) -> None:
        self.check_theme("unknown")

    def test_respond_validation(self) -> None:
        self.check_theme("respond")

    def test_tool_turn(self) -> None:
        self.check_theme("tool")
        names = [e["event"] for e in self.seed.by_label()["tool/turn (get_result)"].norm["events"]]
        self.assertIn("tool.started", names)
        self.assertIn("tool.completed", names)

    def test_polling_cursors(self) -> None:
        self.check_theme("poll")
        # polling with cursors reassembles the whole text and event log, for every run
        for trace in (self.seed, self.ours):
            records = trace.by_label()
            for label, rec in records.items():
                if label.endswith(" (polled)"):
                    with self.subTest(kind=trace.kind, run=label):
                        result = records[label.replace(" (polled)", " (get_result)")].resp
                        self.assertEqual(rec.resp["seen_text"], rec.resp["output"])
                        self.assertEqual(rec.resp["seen_text"], result["output"])
                        seen, told = rec.resp["seen_events"], result["events"]
                        if trace is self.seed:
                            # Seed quirk: it keeps the agent's live message dicts in its
                            # events and encodes them when read, so a stamp the agent puts
                            # on them later (state.db's "_db_persisted") shows in
                            # get_result but not in what was polled before.
                            seen, told = unstamped(seen), unstamped(told)
                        self.assertEqual(seen, told)
                        self.assertEqual(rec.resp["cursor"], len(result["deltas"]))

    def test_chat_wait(self) -> None:
        self.check_theme("wait")

    def test_gateway_approval(self) -> None:
        self.check_theme("gateway")
        done = self.seed.by_label()["gateway/done (get_result)"].norm
        self.assertEqual(done["output"], "choice=once after")
        self.assertEqual([e["event"] for e in done["events"] if e["event"].startswith("approval.")],
                         ["approval.requested", "approval.resolved"])

    def test_cli_approval(self) -> None:
        self.check_theme("cli-approval")
        done = self.seed.by_label()["cli-approval/done (get_result)"].norm
        self.assertEqual(done["output"], "choice=session after")

    def test_compression(self) -> None:
        self.check_theme("compression")
        done = self.seed.by_label()["compression/done (get_result)"].norm
        self.assertEqual(done["output"], "compressed 1 system='shorter' system=shorter ")

    def test_raise(self) -> None:
        self.check_theme("raise")
        result = self.seed.by_label()["raise/run (get_result)"].norm["result"]
        self.assertEqual(result, {"error": "boom", "traceback": "RuntimeError: boom"})

    def test_steer(self) -> None:
        self.check_theme("steer")

    def test_interrupt(self) -> None:
        self.check_theme("interrupt")

    def test_busy_session(self) -> None:
        self.check_theme("busy")

    def test_config_change(self) -> None:
        self.check_theme("config")
        sessions = self.seed.by_label()["config/list"].norm["sessions"]
        self.assertEqual([s["config"]["model"] for s in sessions if s["session_id"] == "s1"], ["other-model"])

    def test_message_shapes(self) -> None:
        self.check_theme("message")

    def test_stream(self) -> None:
        self.check_theme("stream")
        output = self.seed.by_label()["stream/run (get_result)"].norm["output"]
        self.assertEqual(output, "".join(f"d{i} " for i in range(20)) + "end")

    def test_lifecycle(self) -> None:
        self.check_theme("lifecycle")

    def test_diff11_runs_outlive_a_config_change(self) -> None:
        """The seed forgets a session's runs when a config change replaces it;
        ours keeps every run readable in its event log."""
        seed = self.seed.by_label()["config/old run"]
        ours = self.ours.by_label()["config/old run"]
        self.assertEqual(seed.norm, key_err("unknown run", "<run1>"))
        self.assertEqual(ours.norm["ok"], True)
        self.assertEqual(ours.norm["run_id"], "<run1>")
        self.assertEqual(ours.norm["status"], "complete")

    # -- deliberate differences ----------------------------------------------------
    def test_diff1_stream_delta_turn_boundary_step(self) -> None:
        for n, run_id in enumerate(self.seed.refs["run"], 1):
            self.assertFalse([e for e in self.seed.full_events[run_id] if is_extra(e)], f"seed RUN({n})")
        checked = 0
        for n, run_id in enumerate(self.ours.refs["run"], 1):
            if run_id not in self.ours.full_events:
                continue
            result = json.loads(self.ours.raw_results[run_id]) if run_id in self.ours.raw_results else None
            deltas = [e["delta"] for e in self.ours.full_events[run_id] if e["event"] == "stream.delta"]
            if result is not None:
                with self.subTest(run=n):
                    self.assertEqual("".join(deltas), result["output"])
                    self.assertEqual(deltas, [d for d in result["deltas"] if d])
                    checked += 1
        self.assertGreater(checked, 5)
        events = self.full_events(self.ours, 1)
        names = [e["event"] for e in events]
        a = events.index({"event": "stream.delta", "delta": "a"})
        b = events.index({"event": "stream.delta", "delta": "b"})
        started, completed = names.index("tool.started"), names.index("tool.completed")
        self.assertLess(a, started)
        self.assertLess(completed, b)
        self.assertIn("turn.boundary", names[a:started])
        self.assertIn("step", names[completed:b])
        self.assertEqual(events[names.index("turn.boundary")], {"event": "turn.boundary"})

    def test_diff2_gateway_timeout_ms(self) -> None:
        for trace, expected in ((self.seed, 300_000), (self.ours, DEFAULT_CONFIG["approvals"]["timeout"] * 1000)):
            requested = events_named(self.full_events(trace, 3), "approval.requested")
            self.assertEqual([e["timeout_ms"] for e in requested], [expected], trace.kind)
        # the terminal (CLI) path: the seed's 60 s, Hermes Studio's current 120 s (ours, difference 12)
        for trace, expected in ((self.seed, 60_000), (self.ours, 120_000)):
            requested = events_named(self.full_events(trace, 4), "approval.requested")
            self.assertEqual([e["timeout_ms"] for e in requested], [expected], trace.kind)

    def test_diff3_gateway_approval_timeout(self) -> None:
        config = {**DEFAULT_CONFIG, "approvals": {"timeout": 1}}
        # the agent gives up after 1 s and the run ends right after: the log must still say "timeout"
        seed, ours = run_both(Run("timeout/run", chat("g", "script:approve-gw rm -rf /;say after"), 1,
                                  {"status": "complete", "output": "choice=deny after"}), config)
        seed_events, ours_events = self.full_events(seed, 1), self.full_events(ours, 1)
        self.assertEqual(events_named(seed_events, "approval.resolved"), [])
        self.assertEqual([e["timeout_ms"] for e in events_named(seed_events, "approval.requested")], [300_000])
        requested = events_named(ours_events, "approval.requested")
        self.assertEqual([e["timeout_ms"] for e in requested], [1000])
        resolved = events_named(ours_events, "approval.resolved")
        self.assertEqual(resolved, [{"event": "approval.resolved", "approval_id": requested[0]["approval_id"],
                                     "choice": "deny", "reason": "timeout"}])
        self.assertEqual(list(resolved[0]), ["event", "approval_id", "choice", "reason"])
        self.assertLess(ours_events.index(requested[0]), ours_events.index(resolved[0]))
        # everything else is the seed's (the extra event also moved ours' event_cursor by one)
        for rec in ours.records:
            rec.norm = drop_events(rec.norm, lambda e: e.get("reason") == "timeout")
            if isinstance(rec.norm, dict) and "event_cursor" in rec.norm:
                rec.norm["event_cursor"] -= 1
        self.assert_same_records(seed, ours)

    def test_diff4_non_object_request(self) -> None:
        with both_bridges() as (seed, ours):
            s, o = json.loads(seed.raw(b"[1,2]\n")), json.loads(ours.raw(b"[1,2]\n"))
            self.assertEqual(s, err("AttributeError", "'list' object has no attribute 'get'"))
            self.assertEqual(o, err("ValueError", "request must be a JSON object, got list"))
            self.assertEqual(ours.raw(b"[1,2]\n"),
                             b'{"ok": false, "error": "request must be a JSON object, got list", '
                             b'"error_type": "ValueError"}\n')
            for payload in (b'"text"\n', b"5\n", b"null\n"):
                with self.subTest(payload=payload):
                    self.assertEqual(json.loads(seed.raw(payload))["error_type"], "AttributeError")
                    self.assertEqual(json.loads(ours.raw(payload))["error_type"], "ValueError")
            for payload in (b"{bad\n", b'{"action": "ping"\n', b"nope\n"):
                with self.subTest(payload=payload):
                    s, o = json.loads(seed.raw(payload)), json.loads(ours.raw(payload))
                    self.assertEqual((s["ok"], s["error_type"]), (False, "JSONDecodeError"))
                    self.assertEqual((o["ok"], o["error_type"]), (False, "JSONDecodeError"))
                    self.assertEqual(list(o), list(s))

    def test_diff5_status_action(self) -> None:
        with both_bridges() as (seed, ours):
            for bridge in (seed, ours):
                bridge.chat("st", "hi", wait=True, timeout=20)
            for action in ("status", "status_if_loaded"):
                with self.subTest(action=action):
                    self.assertEqual(seed.request({"action": action, "session_id": "st"}),
                                     err("ValueError", f"unknown action: {action}"))
                    # status_if_loaded answers as Hermes Studio's broker does (`loaded`, difference 12)
                    tail = b'"loaded": false}\n' if action == "status_if_loaded" else b'"message_count": 0}\n'
                    self.assertEqual(ours.raw((json.dumps({"action": action, "session_id": "nope"}) + "\n").encode()),
                                     b'{"ok": true, "session_id": "nope", "exists": false, "running": false, ' + tail)
                    listed = ours.request({"action": "list"})["sessions"][0]
                    for key in ("profile", "worker_key"):  # list entries as Studio's broker lists them
                        self.assertEqual(listed.pop(key), "default")
                    loaded = {"loaded": True} if action == "status_if_loaded" else {}
                    status = ours.request({"action": action, "session_id": "st"})
                    self.assertEqual(list(status), ["ok", "session_id", "exists", "running", "current_run_id",
                                                    "created_at", "last_used_at", "message_count", "config",
                                                    "agent", *loaded])
                    agent = status.pop("agent")  # where the agent runs (issue 14)
                    self.assertEqual((agent["loaded"], agent["python"] is not None), (True, True))
                    self.assertEqual(status, {"ok": True, "exists": True, **listed, **loaded})
            run = ours.chat("st", "script:sleep 300")
            status = ours.request({"action": "status", "session_id": "st"})
            self.assertEqual((status["running"], status["current_run_id"]), (True, run["run_id"]))
            ours.wait_done(run["run_id"])

    def test_diff6_lone_surrogate(self) -> None:
        with both_bridges() as (seed, ours):
            runs = {b.kind: b.chat("sur", "script:say ok;surrogate")["run_id"] for b in (seed, ours)}
            for bridge in (seed, ours):
                wait_idle(bridge, "sur")
            for _ in range(2):  # every poll, not just the first
                for req in (get_output(runs["seed"]), {"action": "get_result", "run_id": runs["seed"]}):
                    self.assertEqual(seed.raw((json.dumps(req) + "\n").encode()), b"")
            self.assertEqual(seed.request({"action": "ping"})["ok"], True)  # still serving
            out = ours.request(get_output(runs["ours"]))
            self.assertEqual((out["status"], out["output"]), ("complete", "okbad\ufffdtext "))
            raw = ours.raw((json.dumps({"action": "get_result", "run_id": runs["ours"]}) + "\n").encode())
            self.assertIn("bad\ufffdtext ".encode(), raw)
            self.assertNotIn(b"\\ud800", raw)
            self.assertEqual(json.loads(raw)["deltas"], ["ok", "bad\ufffdtext "])

    def test_diff7_nan(self) -> None:
        def strict(raw: bytes) -> dict:
            return json.loads(raw, parse_constant=lambda c: self.fail(f"non-JSON constant {c}"))

        with both_bridges() as (seed, ours):
            raws = {}
            for bridge in (seed, ours):
                run_id = bridge.chat("n", "script:nan")["run_id"]
                bridge.wait_done(run_id)
                raws[bridge.kind] = bridge.raw((json.dumps({"action": "get_result", "run_id": run_id}) + "\n").encode())
            self.assertIn(b'"score": NaN', raws["seed"])
            self.assertTrue(math.isnan(json.loads(raws["seed"])["result"]["score"]))
            self.assertIn(b'"score": null', raws["ours"])
            self.assertNotIn(b"NaN", raws["ours"])
            self.assertIsNone(strict(raws["ours"])["result"]["score"])

    def test_diff8_stale_interrupt(self) -> None:
        with both_bridges() as (seed, ours):
            answers = {}
            for bridge in (seed, ours):
                bridge.chat("si", "hi", wait=True, timeout=20)
                answers[bridge.kind] = bridge.request({"action": "interrupt", "session_id": "si"})
            self.assertEqual(answers["seed"], {"ok": True, "status": "interrupted", "session_id": "si", "synced": True})
            self.assertEqual(answers["ours"], answers["seed"])
            s = seed.chat("si", "script:say after", wait=True, timeout=20)
            o = ours.chat("si", "script:say after", wait=True, timeout=20)
            self.assertEqual((s["status"], s["output"]), ("interrupted", ""))
            self.assertEqual((o["status"], o["output"]), ("complete", "after"))

    def test_diff9_compression_reply_without_system_message(self) -> None:
        seed, ours = run_both([
            Start("c/chat", chat("c", "script:compress;say end", instructions="be brief")),
            AnswerCompression("c/answer", RUN(1), {"ok": True, "handled": True}, messages=SUMMARY),
            Finish("c/done", RUN(1), {"status": "complete"}),
        ])
        seed_done, ours_done = seed.by_label()["c/done (get_result)"], ours.by_label()["c/done (get_result)"]
        self.assertEqual(seed_done.norm["output"], "compressed 1 system=None end")
        self.assertEqual(ours_done.norm["output"], "compressed 1 system='be brief' end")
        # apart from that text, the same: events, status, the answer
        for s, o in zip(seed.records, ours.records):
            with self.subTest(step=s.label):
                for key in ("ok", "status", "request_id", "handled", "error"):
                    self.assertEqual(o.norm.get(key), s.norm.get(key), key)
                for key in ("events", "seen_events"):
                    self.assertEqual(without_text_events(o.norm.get(key)), without_text_events(s.norm.get(key)), key)

    def test_diff10_wait_with_bad_timeout(self) -> None:
        with both_bridges() as (seed, ours):
            req = chat("t", "script:say x", wait=True, timeout="abc")
            expected = err("ValueError", "could not convert string to float: 'abc'")
            self.assertEqual(seed.request(req), expected)
            self.assertEqual(ours.request(req), expected)
            # the seed started a run anyway; ours did not
            self.assertEqual(wait_idle(seed, "t")["message_count"], 2)
            time.sleep(0.2)  # time enough for a run to have shown up
            self.assertEqual(ours.request({"action": "list"}), {"ok": True, "sessions": []})
            self.assertEqual(ours.request({"action": "get_history", "session_id": "t"}),
                             key_err("unknown session", "t"))
            self.assertEqual([e for e in ours.agent_log_entries() if e.get("op") == "run"], [])

    def test_diff13_a_profile_that_does_not_exist_or_is_a_path_is_refused(self) -> None:
        """The seed runs a profile with no directory on the default profile's
        config and .env (and one that is a path on that path's, when it
        exists); ours refuses both before anything runs (issue 21)."""
        with both_bridges() as (seed, ours):
            for profile, error_type, message in (("ghost", "KeyError", "'unknown profile: ghost (no directory "),
                                                 ("../..", "ValueError", "profile must be a plain name")):
                with self.subTest(profile=profile):
                    req = chat(f"p{error_type}", "hi", wait=True, profile=profile)
                    self.assertEqual(seed.request(req)["status"], "complete")
                    answer = ours.request(req)
                    self.assertEqual((answer["ok"], answer["error_type"]), (False, error_type), answer)
                    self.assertTrue(answer["error"].startswith(message), answer)
            self.assertEqual(ours.request({"action": "list"}), {"ok": True, "sessions": []})

    def test_ready_line(self) -> None:
        for transport in ("ipc", "tcp"):
            with self.subTest(transport=transport):
                with Bridge(kind="seed", transport=transport) as seed, Bridge(kind="ours", transport=transport) as ours:
                    self.assertEqual(seed.ready_line.replace(seed.endpoint, "<endpoint>"),
                                     '{"event": "ready", "endpoint": "<endpoint>"}\n')
                    # The seed's fields, in its order; ours adds what the agent runs on.
                    ready = json.loads(ours.ready_line)
                    agent = ready.pop("agent")
                    # The worker host says which interpreters it tried; the
                    # embedded one runs on the daemon's own Python.
                    self.assertIn("candidates" if agent["host"] == "worker" else "python_version", agent)
                    self.assertEqual(json.dumps(ready).replace(ours.endpoint, "<endpoint>") + "\n",
                                     seed.ready_line.replace(seed.endpoint, "<endpoint>"))
                    self.assertIn(ours.endpoint, ours.ready_line)



if __name__ == "__main__":
    unittest.main()
