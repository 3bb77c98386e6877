"""Turns that survive a restart of the daemon (issue 24): the daemon is
killed with SIGKILL (its own pid only) while workers run turns or hold idle
agents; the next daemon re-attaches to the same worker processes, and the
runs go on, each byte once, for get_result and for a client that kept its
cursors across the restart."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
import unittest
from pathlib import Path

import test_worker_host as workers_of
from harness import Bridge, bridge_binary, events_named

WORKER = ["--agent-host", "worker"]
SCRIPT = "script:say go;stream 200 10;tool terminal ls;say end"


class Follower(threading.Thread):
    """Polls one run as Hermes Studio does, across a restart: a refused
    connection is tried again with the cursors it had."""

    def __init__(self, bridge: Bridge, run_id: str, timeout: float = 60.0) -> None:
        super().__init__(daemon=True)
        self.bridge, self.run_id, self.timeout = bridge, run_id, timeout
        self.text, self.events, self.final, self.errors = "", [], None, []
        self.refused = 0
        self.answers = 0

    def run(self) -> None:
        cursor = event_cursor = 0
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            try:
                out = self.bridge.request({"action": "get_output", "run_id": self.run_id, "cursor": cursor,
                                           "event_cursor": event_cursor}, timeout=5)
            except (OSError, ValueError):
                self.refused += 1
                time.sleep(0.02)
                continue
            if not out.get("ok", True):
                self.errors.append(out)
                time.sleep(0.02)
                continue
            self.answers += 1
            self.text += out["delta"]
            self.events += out["events"]
            cursor, event_cursor = out["cursor"], out["event_cursor"]
            if out["done"]:
                self.final = out
                return
            time.sleep(0.01)


def restarted(before: Bridge, args: list[str] | None = None) -> Bridge:
    """A new daemon on the same home, log, endpoint and runtime directory."""
    again = Bridge(args=args or WORKER)
    again.dir, again.home, again.endpoint = before.dir, before.home, before.endpoint
    again.agent_log = before.agent_log
    return again.start()


def kill_daemon(b: Bridge) -> None:
    b.proc.send_signal(signal.SIGKILL)  # the daemon's pid alone: its workers are not in its group
    b.proc.wait(10)
    b.proc.stdout.close()


def orphan_a_streaming_worker(b: Bridge) -> tuple[str, int]:
    """A long streaming turn, then its daemon killed: the run and its worker's pid."""
    run = b.chat("s", "script:stream 500 20")["run_id"]
    b.wait_event(run, "stream.delta")
    pid = workers_of.live_pid(b, "default")
    kill_daemon(b)
    return run, pid


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].startswith(" Z")


def worker_pids(b: Bridge) -> set[int]:
    return {w["pid"] for w in workers_of.workers(b) if w["alive"]}


class SurviveRestart(unittest.TestCase):
    def setUp(self):
        self.first = Bridge(args=WORKER).start()
        self.addCleanup(self.first.stop)

    def test_live_runs_go_on_with_every_byte_once_after_a_kill_9(self):
        b = self.first
        control = b.chat("control", SCRIPT, wait=True)
        self.assertEqual(control["status"], "complete", control)
        expected = b.wait_done(control["run_id"])["seen_text"]
        runs = {sid: b.chat(sid, SCRIPT)["run_id"] for sid in ("a", "b", "c")}
        followers = [Follower(b, run) for run in runs.values()]
        for f in followers:
            f.start()
        for run in runs.values():
            workers_of.wait_until(lambda: b.request({"action": "get_output", "run_id": run})["cursor"] >= 20)
        pids = worker_pids(b)
        kill_daemon(b)
        time.sleep(0.3)  # the turns stream on with nobody attached
        again = restarted(b)
        self.addCleanup(again.stop)
        for f in followers:
            f.join(60)
        for sid, run in runs.items():
            result = again.request({"action": "get_result", "run_id": run})
            self.assertEqual(result["status"], "complete", result)
            done = again.wait_done(run)
            self.assertEqual(done["seen_text"], expected, sid)
            self.assertEqual(len(events_named(done["seen_events"], "tool.completed")), 1)
            self.assertEqual(events_named(done["seen_events"], "bridge.recovered"), [])
        for f in followers:
            self.assertIsNotNone(f.final, f"a follower never saw the end ({f.refused} refused, {f.errors})")
            self.assertEqual(f.errors, [])
            self.assertEqual(f.text, expected)  # what it was shown before the kill, then the rest: each byte once
            self.assertEqual(len(events_named(f.events, "tool.completed")), 1)
        self.assertEqual(worker_pids(again), pids)
        adopted = [w for w in workers_of.workers(again) if w["alive"]]
        self.assertTrue(all(w["adopted"] for w in adopted), adopted)
        self.assertIn("log.runs_continued", again.stderr())
        # Afterwards the sessions go on in the same workers.
        self.assertEqual(again.chat("a", "after", wait=True)["output"], "echo: after")

    def test_an_idle_session_keeps_its_agent_across_a_restart(self):
        b = self.first
        self.assertEqual(b.chat("idle", "hello", wait=True)["output"], "echo: hello")
        pid = b.request({"action": "status", "session_id": "idle"})["agent"]["worker_pid"]
        kill_daemon(b)
        again = restarted(b)
        self.addCleanup(again.stop)
        status = again.request({"action": "status", "session_id": "idle"})
        self.assertEqual(status["agent"]["worker_pid"], pid, status)  # its agent, before any chat
        # As a live agent, which holds no history of its own to be given (a
        # rebuilt one would be resumed with the stored two messages).
        self.assertEqual(again.chat("idle", "script:history", wait=True)["output"], "history=0 ")
        inits = [e for e in again.agent_log_entries() if e.get("op") == "init" and e.get("session_id") == "idle"]
        self.assertEqual(len(inits), 1, "the agent was built again after the restart")

    def assert_answered_after_a_restart(self, script: str, config: dict | None = None) -> None:
        """A question pending at the kill is pending after it under the same
        id, announced once; the answer given to the next daemon reaches the
        agent, and its run completes."""
        b = self.first
        if config:
            b = Bridge(args=WORKER, config=config).start()
            self.addCleanup(b.stop)
        run = b.chat("q", script)["run_id"]
        asked = b.wait_event(run, "approval.requested")
        kill_daemon(b)
        again = restarted(b)
        self.addCleanup(again.stop)
        # Answered at once, as a client that kept retrying across the restart
        # would: the answer waits for the question to be open again.
        answer = again.request({"action": "approval_respond", "approval_id": asked["approval_id"],
                                "choice": "once"})
        self.assertEqual(answer, {"ok": True, "approval_id": asked["approval_id"], "resolved": True,
                                  "choice": "once"})
        done = again.wait_done(run)
        self.assertEqual(done["status"], "complete", done)
        self.assertIn("choice=once", done["seen_text"])  # the answer given after the restart reached the agent
        self.assertEqual([e["approval_id"] for e in events_named(done["seen_events"], "approval.requested")],
                         [asked["approval_id"]])  # not announced again
        resolved = events_named(done["seen_events"], "approval.resolved")
        self.assertEqual([(e["approval_id"], e["choice"], e.get("reason")) for e in resolved],
                         [(asked["approval_id"], "once", None)])
        self.assertEqual(again.request({"action": "health"})["pending_questions"], 0)

    def test_a_terminal_approval_pending_at_the_kill_is_answered_with_its_old_id(self):
        self.assert_answered_after_a_restart("script:say asking;approve-cli rm -rf /tmp/x;say after")

    def test_a_gateway_approval_pending_at_the_kill_is_answered_with_its_old_id(self):
        self.assert_answered_after_a_restart("script:say asking;approve-gw curl x | sh;say after",
                                             {"model": {"default": "fake-model", "provider": "fake"},
                                              "approvals": {"timeout": 60}})

    def test_a_question_keeps_the_deadline_it_was_asked_with(self):
        # Asked with 6 s to live; 4 of them pass before the next daemon
        # attaches: it is denied about 2 s after that, not 6.
        b = Bridge(args=WORKER, env={"HERMES_BRIDGE_APPROVAL_TIMEOUT": "6"}).start()
        self.addCleanup(b.stop)
        run = b.chat("q", "script:approve-cli rm -rf /tmp/x;say after")["run_id"]
        asked = b.wait_event(run, "approval.requested")
        asked_at = time.monotonic()
        kill_daemon(b)
        time.sleep(4)
        again = restarted(b)
        self.addCleanup(again.stop)
        done = again.wait_done(run, timeout=20)
        settled_after = time.monotonic() - asked_at
        self.assertIn("choice=deny", done["seen_text"])
        resolved = events_named(done["seen_events"], "approval.resolved")
        self.assertEqual([(e["approval_id"], e.get("reason")) for e in resolved], [(asked["approval_id"], "timeout")])
        self.assertLess(settled_after, 9)  # a fresh 6 s from the restart would end past 10 s

    def test_a_worker_that_dies_while_no_daemon_is_attached_takes_todays_path(self):
        b = self.first
        run, pid = orphan_a_streaming_worker(b)
        os.kill(pid, signal.SIGKILL)
        workers_of.wait_until(lambda: not workers_of.alive(pid))
        again = restarted(b)
        self.addCleanup(again.stop)
        result = again.request({"action": "get_result", "run_id": run})
        self.assertEqual(result["status"], "interrupted", result)
        self.assertNotIn(pid, worker_pids(again))
        self.assertIn("worker.record_stale", again.stderr())
        left = list((b.dir / "run" / "hermes-bridge" / "workers").glob(f"worker-{pid}.*"))
        self.assertEqual(left, [])
        self.assertEqual(again.chat("s", "again", wait=True)["output"], "echo: again")

    def test_an_orphan_waits_its_timeout_then_stops_its_turns_and_exits(self):
        b = Bridge(args=WORKER + ["--worker-orphan-timeout-s", "1"]).start()
        self.addCleanup(b.stop)
        run, pid = orphan_a_streaming_worker(b)
        time.sleep(0.5)
        self.assertTrue(workers_of.alive(pid), "the worker left before its orphan timeout")
        self.assertTrue(workers_of.wait_until(lambda: not workers_of.alive(pid), timeout=10))
        again = restarted(b)
        self.addCleanup(again.stop)
        self.assertEqual(again.request({"action": "get_result", "run_id": run})["status"], "interrupted")

    def test_with_no_orphan_timeout_workers_leave_with_their_daemon(self):
        b = Bridge(args=WORKER + ["--worker-orphan-timeout-s", "0"]).start()
        self.addCleanup(b.stop)
        run, pid = orphan_a_streaming_worker(b)
        started = time.monotonic()
        self.assertTrue(workers_of.wait_until(lambda: not workers_of.alive(pid), timeout=10))
        self.assertLess(time.monotonic() - started, 6)

    def test_stop_all_stops_the_workers_a_killed_daemon_left(self):
        b = self.first
        run, pid = orphan_a_streaming_worker(b)
        env = dict(os.environ, XDG_RUNTIME_DIR=str(b.dir / "run"))
        out = subprocess.run([str(bridge_binary()), "stop", "--all", "--endpoint", b.endpoint], env=env,
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("no daemon answers at", out.stdout)
        self.assertIn(f"stopped agent worker {pid} (profile default)", out.stdout)
        self.assertTrue(workers_of.wait_until(lambda: not workers_of.alive(pid)))
        wdir = b.dir / "run" / "hermes-bridge" / "workers"
        self.assertFalse((wdir / f"worker-{pid}.json").exists() or (wdir / f"worker-{pid}.sock").exists())
        # With a daemon: it is stopped cleanly, and its workers with it.
        again = restarted(b, WORKER + ["--worker-orphan-timeout-s", "0"])
        self.addCleanup(again.stop)
        out = subprocess.run([str(bridge_binary()), "stop", "--endpoint", again.endpoint], env=env,
                             capture_output=True, text=True, timeout=90)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("stopped the daemon at", out.stdout)
        self.assertEqual(again.proc.wait(10), 0)

    def test_a_worker_of_another_frame_version_finishes_its_turn_unseen_and_new_work_goes_elsewhere(self):
        b = self.first
        run = b.chat("v", "script:stream 60 50;say done")["run_id"]  # 3 s
        b.wait_event(run, "stream.delta")
        pid = workers_of.live_pid(b, "default")
        kill_daemon(b)
        # What a worker of another version would have written: the next
        # daemon cannot drive it, and says so in the one frame every
        # version understands.
        record_path = b.dir / "run" / "hermes-bridge" / "workers" / f"worker-{pid}.json"
        record = json.loads(record_path.read_text())
        record_path.write_text(json.dumps({**record, "version": 99}))
        again = restarted(b)
        self.addCleanup(again.stop)
        self.assertIn("worker.drained", again.stderr())
        self.assertNotIn(pid, worker_pids(again))
        result = again.request({"action": "get_result", "run_id": run})
        self.assertEqual(result["status"], "interrupted", result)  # this daemon cannot follow it
        # The worker is not cut: its turn runs to its end, then it exits.
        self.assertTrue(workers_of.wait_until(lambda: not process_alive(pid), timeout=20))
        ends = [e for e in again.agent_log_entries() if e.get("op") == "run_end"]
        self.assertEqual([e["interrupted"] for e in ends], [False])
        # The session goes on in a new worker.
        self.assertEqual(again.chat("v", "after", wait=True)["output"], "echo: after")
        self.assertNotIn(pid, worker_pids(again))

    def test_a_record_or_socket_another_user_planted_is_refused(self):
        if os.geteuid() != 0:
            self.skipTest("needs root to make files owned by another user")
        b = self.first
        wdir = b.dir / "run" / "hermes-bridge" / "workers"
        self.assertTrue(workers_of.wait_until(lambda: any(w["alive"] for w in workers_of.workers(b))))
        pid = workers_of.live_pid(b, "default")
        record = json.loads((wdir / f"worker-{pid}.json").read_text())
        kill_daemon(b)
        # A record of a live process that another user owns: not believed.
        planted = wdir / f"worker-{os.getpid()}.json"
        planted.write_text(json.dumps({**record, "pid": os.getpid(),
                                       "socket": str(wdir / f"worker-{os.getpid()}.sock")}))
        os.chmod(planted, 0o600)
        os.chown(planted, 65534, 65534)
        # The real worker's socket handed to another user: not connected to.
        os.chown(wdir / f"worker-{pid}.sock", 65534, 65534)
        again = restarted(b)
        self.addCleanup(again.stop)
        self.assertIn("belongs to another user", again.stderr())
        self.assertNotIn(pid, worker_pids(again))
        planted.unlink()
        os.kill(pid, signal.SIGKILL)  # refused, it would wait out its orphan timeout


if __name__ == "__main__":
    unittest.main()
