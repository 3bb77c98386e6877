"""kill -9 at random moments while several sessions stream and clients poll;
after each restart everything a client was shown is still there, at the same
cursors, with the same bytes; live runs are interrupted with the reason;
pending approvals are denied with the reason; sessions resume."""

from __future__ import annotations

import json
import random
import signal
import threading
import time
import unittest

from harness import Bridge, events_named

# The path a run takes when nothing of it can survive (a worker gone with its
# daemon): workers that outlive their daemon are test_survive_restart's.
NO_SURVIVORS = ["--worker-orphan-timeout-s", "0"]

ROUNDS = 20
SESSIONS = 3


class Poller(threading.Thread):
    """Polls one run like a client and records every answer it was shown."""

    def __init__(self, bridge: Bridge, run_id: str) -> None:
        super().__init__(daemon=True)
        self.bridge, self.run_id = bridge, run_id
        self.shown: list[tuple[int, int, dict]] = []  # (cursor, event_cursor, answer)

    def run(self) -> None:
        cursor = event_cursor = 0
        while True:
            try:
                out = self.bridge.request({"action": "get_output", "run_id": self.run_id,
                                           "cursor": cursor, "event_cursor": event_cursor}, timeout=5)
            except (OSError, ValueError):
                return  # the daemon died under us
            self.shown.append((cursor, event_cursor, out))
            cursor, event_cursor = out["cursor"], out["event_cursor"]
            if out["done"]:
                return
            time.sleep(0.005)


class CrashResume(unittest.TestCase):
    def test_kill_9_at_random_moments(self):
        rng = random.Random(20261130)
        # A long gateway deadline: the approval each round asks must still be
        # pending at the kill, however slow the machine.
        first = Bridge(args=NO_SURVIVORS, config={"model": {"default": "fake-model", "provider": "fake"},
                                                  "approvals": {"timeout": 120}})
        home, db = first.home, first.home / "hermes-bridge" / "events.db"
        bridge = first.start()
        try:
            for round_no in range(ROUNDS):
                with self.subTest(round=round_no):
                    bridge = self.crash_round(bridge, home, db, round_no, rng)
        finally:
            bridge.stop()
            first.stop()

    def crash_round(self, bridge: Bridge, home, db, round_no: int, rng: random.Random) -> Bridge:
        sessions = [f"r{round_no}s{i}" for i in range(SESSIONS)]
        for sid in sessions:  # one finished turn each, so there is history to resume
            self.assertEqual(bridge.chat(sid, f"first turn of {sid}", wait=True)["status"], "complete")
        runs = {sid: bridge.chat(sid, "script:say go;tool terminal ls;stream 200 5")["run_id"]
                for sid in sessions[:-1]}
        asking = sessions[-1]
        runs[asking] = bridge.chat(asking, "script:say asking;approve-gw rm -rf /;stream 50 5")["run_id"]
        pollers = [Poller(bridge, run_id) for run_id in runs.values()]
        for p in pollers:
            p.start()
        # Committed, so a client saw it: the kill comes while it is pending.
        pending = bridge.wait_event(runs[asking], "approval.requested", timeout=20)
        time.sleep(rng.uniform(0.02, 0.6))
        bridge.proc.send_signal(signal.SIGKILL)
        bridge.proc.wait(10)
        for p in pollers:
            p.join(10)
        bridge.proc.stdout.close()

        restarted = Bridge(args=NO_SURVIVORS + ["--db", str(db)])
        restarted.home = home
        restarted.start()

        for p in pollers:
            self.assert_shown_is_kept(restarted, p)
        cut = restarted.request({"action": "get_result", "run_id": runs[asking]})
        self.assertEqual(cut["status"], "interrupted")  # it waited for its answer when killed
        self.assertEqual([e["approval_id"] for e in events_named(cut["events"], "approval.requested")],
                         [pending["approval_id"]])
        self.assertEqual([(e["approval_id"], e["choice"], e.get("reason"))
                          for e in events_named(cut["events"], "approval.resolved")],
                         [(pending["approval_id"], "deny", "daemon restarted")])
        for sid, run_id in runs.items():
            result = restarted.request({"action": "get_result", "run_id": run_id})
            if result["status"] == "interrupted":
                self.assertEqual(result["error"], "hermes-bridge restarted while this run was live")
                self.assertEqual(result["events"][-1]["event"], "bridge.recovered")
            else:
                self.assertEqual(result["status"], "complete")  # it finished before the kill
            asked = events_named(result["events"], "approval.requested")
            answered = {e["approval_id"]: e for e in events_named(result["events"], "approval.resolved")}
            for request in asked:
                self.assertIn(request["approval_id"], answered)  # nothing is left pending
                if result["status"] == "interrupted":
                    resolution = answered[request["approval_id"]]
                    self.assertEqual(resolution["choice"], "deny")
                    self.assertIn(resolution.get("reason"), ("daemon restarted", "timeout"))
        listed = {s["session_id"] for s in restarted.request({"action": "list"})["sessions"]}
        self.assertTrue(set(sessions) <= listed)
        # The first turn, continued, and the second too, finished or cut.
        history = restarted.request({"action": "get_history", "session_id": sessions[0]})["history"]
        second = restarted.request({"action": "get_result", "run_id": runs[sessions[0]]})
        if second["status"] == "interrupted":  # (it streams for a second: the kill comes sooner)
            # (the finished turn's rows as the agent returned them: stamped "_db_persisted")
            self.assertEqual((history[0]["role"], history[0]["content"]), ("user", f"first turn of {sessions[0]}"))
            self.assertEqual(history[2], {"role": "user", "content": "script:say go;tool terminal ls;stream 200 5"})
            self.assertIn("cut off: hermes-bridge restarted", history[-1]["content"])
        follow = restarted.chat(sessions[0], "script:history", wait=True)
        self.assertEqual(follow["status"], "complete")
        self.assertEqual(follow["output"], f"history={len(history)} ")
        config = restarted.request({"action": "status", "session_id": sessions[0]})["config"]
        self.assertEqual((config["resumed"], config["resumed_message_count"]), (True, len(history)))
        return restarted

    def assert_shown_is_kept(self, bridge: Bridge, poller: Poller) -> None:
        full = bridge.request({"action": "get_result", "run_id": poller.run_id})
        for cursor, event_cursor, shown in poller.shown:
            self.assertEqual("".join(full["deltas"][cursor:shown["cursor"]]), shown["delta"])
            self.assertEqual(full["events"][event_cursor:shown["event_cursor"]], shown["events"])
            self.assertTrue(full["output"].startswith(shown["output"]))
            again = bridge.request({"action": "get_output", "run_id": poller.run_id, "cursor": cursor,
                                    "event_cursor": event_cursor})
            self.assertTrue(again["delta"].startswith(shown["delta"]))
            self.assertEqual(again["events"][:len(shown["events"])], shown["events"])


class CutTurn(unittest.TestCase):
    """kill -9 during a session's first turn: the turn is not erased from
    the history the agent continues from."""

    def test_the_turn_a_crash_cut_stays_in_the_history(self):
        first = Bridge(args=NO_SURVIVORS).start()
        db = first.home / "hermes-bridge" / "events.db"
        try:
            message = "script:say partial words here;slow-tool terminal 60000"
            run_id = first.chat("cut", message)["run_id"]
            started = first.wait_event(run_id, "tool.started")
            first.proc.send_signal(signal.SIGKILL)
            first.proc.wait(10)
            first.proc.stdout.close()
            with Bridge(args=NO_SURVIVORS + ["--db", str(db)]) as again:
                self.assertEqual(again.request({"action": "get_result", "run_id": run_id})["status"], "interrupted")
                self.assertIn("turns_kept=1", again.stderr())
                history = again.request({"action": "get_history", "session_id": "cut"})["history"]
                self.assertEqual(len(history), 4, history)
                user, reply, tool, note = history
                self.assertEqual(user, {"role": "user", "content": message})
                self.assertEqual(reply["role"], "assistant")
                self.assertEqual(reply["content"], "partial words here")  # all it had streamed
                self.assertEqual(reply["tool_calls"], [{
                    "id": started["tool_call_id"], "type": "function",
                    "function": {"name": "terminal", "arguments": json.dumps(started["args"])}}])
                self.assertEqual(tool["role"], "tool")
                self.assertEqual(tool["tool_call_id"], started["tool_call_id"])
                self.assertIn("hermes-bridge restarted before this tool reported", tool["content"])
                self.assertIn("unknown", tool["content"])
                self.assertEqual(note, {"role": "assistant", "content":
                                        "[this reply was cut off: hermes-bridge restarted before the turn finished]"})
                # The agent's next turn starts from it (no conversation_history sent).
                follow = again.chat("cut", "script:history", wait=True)
                self.assertEqual(follow["output"], "history=4 ")
                self.assertEqual(follow["result"]["messages"][:4], history)
                status = again.request({"action": "status", "session_id": "cut"})["config"]
                self.assertEqual((status["resumed"], status["resumed_message_count"]), (True, 4))
        finally:
            first.stop()


class DamagedLog(unittest.TestCase):
    def make_damaged_log(self) -> tuple[Bridge, "Path"]:
        import sqlite3
        b = Bridge(args=NO_SURVIVORS).start()
        db = b.home / "hermes-bridge" / "events.db"
        for i in range(4):
            b.chat(f"s{i}", "script:stream 1500 0", wait=True)
        b.request({"action": "shutdown"})
        b.proc.wait(10)
        b.proc.stdout.close()
        with sqlite3.connect(db) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            page_size = conn.execute("PRAGMA page_size").fetchone()[0]
            root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name='deltas'").fetchone()[0]
        # Break the deltas table's root page: the check must see it, while the
        # tables start-up reads (runs, sessions) stay readable.
        with open(db, "r+b") as f:
            f.seek((root - 1) * page_size)
            f.write(b"\xa5" * 64)
        return b, db

    def test_a_damaged_log_is_refused_with_advice(self):
        b, db = self.make_damaged_log()
        try:
            again = Bridge(args=NO_SURVIVORS + ["--db", str(db)])
            with self.assertRaises(AssertionError) as refused:
                again.start()
            self.assertIn("is damaged", str(refused.exception))
            self.assertIn(".recover", str(refused.exception))
            self.assertEqual(again.proc.wait(5), 1)
            again.stop()
            # told to, it serves what it can
            forced = Bridge(args=["--db", str(db), "--skip-integrity-check"]).start()
            self.assertTrue(forced.request({"action": "ping"})["pong"])
            forced.stop()
            # a log over the pre-start limit is checked right after the ready line
            later = Bridge(args=["--db", str(db), "--integrity-check-max-mb", "0"]).start()
            deadline = time.monotonic() + 10
            while "is damaged" not in later.stderr() and time.monotonic() < deadline:
                time.sleep(0.05)
            self.assertIn("is damaged", later.stderr())
            # ... and `health` says so, as it does for a log that takes no writes
            health = later.request({"action": "health"})
            self.assertEqual(health["status"], "degraded", health)
            self.assertEqual(health["log"]["state"], "degraded", health)
            self.assertIn("the integrity check after start found the event log damaged",
                          health["log"]["reason"])
            self.assertGreater(health["log"]["since"], 0)
            self.assertTrue(later.request({"action": "ping"})["pong"])  # still serving
            later.stop()
            # a sound log checked after start stays "ok"
            with Bridge(args=["--integrity-check-max-mb", "0"]) as sound:
                sound.chat("h", "script:say hi", wait=True)
                sound.request({"action": "shutdown"})
                sound.proc.wait(15)
                again = Bridge(args=["--db", str(sound.home / "hermes-bridge" / "events.db"),
                                     "--integrity-check-max-mb", "0"]).start()
                try:
                    self.assertTrue(again.log_has("event=log.integrity_ok", timeout=10), again.stderr())
                    self.assertEqual(again.request({"action": "health"})["status"], "ok")
                finally:
                    again.stop()
        finally:
            b.stop()


if __name__ == "__main__":
    unittest.main()
