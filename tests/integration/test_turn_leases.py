"""hermes-agent 0.20+'s session turn leases (`session_turn_leases` in
state.db): while another hermes process holds a session's lease, the agent
waits (up to 30 minutes) before the turn. The run must say that it waits,
`interrupt` must end the wait, and the wait must hold up no other session.
The fake agent waits as 0.20.3 does (see tests/fake_agent/run_agent.py)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import time
import unittest

from harness import Bridge

WAITING = "Another Hermes process is using this session"


def other_process_holds(db_path, session_id: str, holder_pid: int) -> None:
    """Writes the lease another hermes process (pid `holder_pid`) would hold."""
    with sqlite3.connect(db_path) as conn:
        now = time.time()
        conn.execute("INSERT OR REPLACE INTO session_turn_leases VALUES (?, ?, ?, ?)",
                     (session_id, f"pid={holder_pid}:turn=t1:platform=cli", now, now + 600))


def statuses(out: dict) -> list[str]:
    return [e.get("text") or "" for e in out["events"] if e.get("event") == "status"]


def wait_status(b: Bridge, run_id: str, text: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = b.request({"action": "get_output", "run_id": run_id})
        if any(text in s for s in statuses(out)):
            return
        if out["done"]:
            raise AssertionError(f"run ended without a status saying {text!r}: {out['events']}")
        time.sleep(0.05)
    raise AssertionError(f"no status saying {text!r} within {timeout}s")


class TurnLeaseTest(unittest.TestCase):
    def setUp(self) -> None:
        # The other hermes process: alive, so its lease cannot be reclaimed.
        self.other = subprocess.Popen(["sleep", "600"])
        self.addCleanup(self.other.wait)
        self.addCleanup(self.other.kill)
        self.bridge = Bridge(env={"FAKE_AGENT_LEASE_NOTICE_S": "0.5"})
        self.bridge.start()
        self.addCleanup(self.bridge.stop)
        profile_home = self.bridge.home / "profiles" / "other"
        profile_home.mkdir(parents=True)
        (profile_home / "config.yaml").write_text((self.bridge.home / "config.yaml").read_text())

    def held_session(self) -> str:
        """A session state.db knows (its first turn made the row), now leased by another process."""
        b = self.bridge
        first = b.chat("leased", "first", wait=True, timeout=30)
        self.assertEqual(first["status"], "complete", first)
        other_process_holds(b.home / "state.db", "leased", self.other.pid)
        return "leased"

    def test_wait_is_shown_and_holds_up_no_other_session(self) -> None:
        b = self.bridge
        sid = self.held_session()
        run = b.chat(sid, "second")["run_id"]
        wait_status(b, run, WAITING)
        # Others go on meanwhile: a session of the same profile, and (with a
        # worker per profile; the embedded host shares one os.environ between
        # profiles and serialises them) one of another profile.
        same = b.chat("free", "meanwhile", wait=True, timeout=20)
        self.assertEqual((same["status"], same["output"]), ("complete", "echo: meanwhile"))
        if os.environ.get("HB_TEST_AGENT_HOST", "worker") == "worker":
            other = b.chat("elsewhere", "meanwhile", profile="other", wait=True, timeout=20)
            self.assertEqual((other["status"], other["output"]), ("complete", "echo: meanwhile"))
        status = b.request({"action": "status", "session_id": sid})
        self.assertEqual((status["running"], status["current_run_id"]), (True, run))
        # Still waiting, and saying so again (the notice repeats).
        time.sleep(1.2)
        out = b.request({"action": "get_output", "run_id": run})
        self.assertFalse(out["done"])
        self.assertGreaterEqual(sum(WAITING in s or "Still waiting" in s for s in statuses(out)), 2, out["events"])
        # The other process ends: its dead pid's lease is reclaimed and the turn runs.
        self.other.kill()
        self.other.wait()
        done = b.wait_done(run, timeout=20)
        self.assertEqual((done["status"], done["seen_text"]), ("complete", "echo: second"))
        self.assertTrue(any("Session is free" in s for s in statuses({"events": done["seen_events"]})), done["seen_events"])
        history = b.request({"action": "get_history", "session_id": sid})
        self.assertEqual([m["content"] for m in history["history"] if m["role"] == "user"], ["first", "second"])

    def test_interrupt_ends_the_wait(self) -> None:
        b = self.bridge
        sid = self.held_session()
        before = b.request({"action": "get_history", "session_id": sid})["history"]
        # The client sends its conversation, as Hermes Studio does.
        run = b.chat(sid, "never runs", conversation_history=before)["run_id"]
        wait_status(b, run, WAITING)
        started = time.monotonic()
        stopped = b.request({"action": "interrupt", "session_id": sid, "message": "stop waiting"}, timeout=30)
        self.assertEqual((stopped["status"], stopped["synced"]), ("interrupted", True), stopped)
        self.assertLess(time.monotonic() - started, 15)  # not the lease's 30 minutes
        done = b.wait_done(run)
        self.assertEqual(done["status"], "interrupted", done)
        self.assertEqual(done["seen_text"], "")  # the agent never ran the turn
        self.assertIn("Stopped waiting for another Hermes process", done["result"]["final_response"])
        # The message was not processed: the conversation holds the first turn only.
        self.assertEqual(b.request({"action": "get_history", "session_id": sid})["history"], before)
        self.assertEqual([m["content"] for m in before if m["role"] == "user"], ["first"])
        # The lease is still the other process's; once it is gone, the session works again.
        self.other.kill()
        self.other.wait()
        again = b.chat(sid, "now", wait=True, timeout=30)
        self.assertEqual((again["status"], again["output"]), ("complete", "echo: now"))

    def test_a_wait_that_times_out_says_why(self) -> None:
        b = Bridge(env={"FAKE_AGENT_LEASE_WAIT_S": "1"})
        b.start()
        self.addCleanup(b.stop)
        self.assertEqual(b.chat("leased", "first", wait=True, timeout=30)["status"], "complete")
        other_process_holds(b.home / "state.db", "leased", self.other.pid)
        done = b.chat("leased", "second", wait=True, timeout=30)
        # As Hermes Studio's bridge reports it: the turn completed without
        # running, its result failed with the agent's reason, and a warning.
        self.assertEqual(done["status"], "complete", done)
        self.assertEqual(done["result"]["error"], "session_turn_lease_timeout:leased")
        self.assertTrue(done["result"]["failed"])
        out = b.request({"action": "get_output", "run_id": done["run_id"]})
        self.assertTrue(any(e.get("kind") == "warn" and "busy too long" in (e.get("text") or "")
                            for e in out["events"] if e.get("event") == "status"), out["events"])


if __name__ == "__main__":
    unittest.main()
