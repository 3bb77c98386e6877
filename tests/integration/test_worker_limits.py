"""What a worker cannot do to the daemon (issue 21, items 8, 11 and 12):
hang unnoticed, start without bound, flood it with questions, send more
than a frame part at once, or leave a workspace to the next session of the
same id."""

from __future__ import annotations

import json
import os
import signal
import tempfile
import time
import unittest
from pathlib import Path

from harness import Bridge
from test_worker_host import WORKER, add_profile, alive, live_pid, wait_until, workers

QUICK_BEATS = ["--worker-heartbeat-s", "0.2", "--worker-unresponsive-s", "3"]


def threads_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    return 0


def kill_quietly(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


class HungWorker(unittest.TestCase):
    def test_a_stopped_worker_is_shown_unresponsive_then_killed_and_its_session_resumes(self):
        # One worker, so that the session resumes in the slot that records the death.
        with Bridge(args=WORKER + QUICK_BEATS + ["--workers-per-profile", "1"]) as b:
            b.chat("s", "script:say first", wait=True)
            run = b.chat("s", "script:stream 400 50")["run_id"]
            self.assertTrue(wait_until(lambda: b.request({"action": "get_output", "run_id": run})["cursor"] >= 3))
            victim = live_pid(b, "default")
            self.addCleanup(kill_quietly, victim)
            os.kill(victim, signal.SIGSTOP)  # stands in for a deadlock, or a C call holding the GIL
            stopped_at = time.monotonic()
            seen = {}

            def shown_unresponsive() -> bool:
                (w,) = workers(b, "default")
                details = b.request({"action": "ping"})["worker_details"]["default"]
                seen.update(health=w, ping=details)
                return w.get("unresponsive") is True

            self.assertTrue(wait_until(shown_unresponsive, timeout=3), seen)
            self.assertTrue(seen["health"]["alive"])
            self.assertFalse(seen["ping"]["running"])
            done = b.wait_done(run, timeout=20)
            self.assertEqual(done["status"], "error")
            self.assertIn("unresponsive for 3 s", done["error"])
            self.assertIn("SIGKILL", done["error"])
            self.assertLess(time.monotonic() - stopped_at, 10)
            again = b.chat("s", "script:pid;history", wait=True)
            self.assertEqual(again["status"], "complete", again)
            self.assertNotIn(f"pid={victim} ", again["output"])
            self.assertIn("history=2 ", again["output"])  # resumed from the log: the first turn
            (w,) = [w for w in workers(b, "default") if w["alive"]]
            self.assertFalse(w["unresponsive"])
            self.assertIn("unresponsive for 3 s", w["last_death"])

    def test_an_interrupt_the_worker_does_not_answer_kills_it(self):
        # Heartbeats far apart: here the unanswered interrupt is what notices.
        with Bridge(args=WORKER + ["--worker-heartbeat-s", "600", "--worker-unresponsive-s", "2"]) as b:
            run = b.chat("s", "script:stream 400 50")["run_id"]
            self.assertTrue(wait_until(lambda: b.request({"action": "get_output", "run_id": run})["cursor"] >= 3))
            victim = live_pid(b, "default")
            self.addCleanup(kill_quietly, victim)
            os.kill(victim, signal.SIGSTOP)
            b.request({"action": "interrupt", "session_id": "s"}, timeout=30)
            done = b.wait_done(run, timeout=20)
            self.assertEqual(done["status"], "error")
            self.assertIn("did not answer an interrupt within 2 s", done["error"])
            self.assertTrue(wait_until(lambda: not alive(victim)))
            self.assertEqual(b.chat("s", "after", wait=True)["output"], "echo: after")

    def test_a_busy_worker_is_not_taken_for_a_hung_one(self):
        # A turn that holds its own thread (no interrupt checks) and a
        # stream: the reading thread still answers every heartbeat.
        with Bridge(args=WORKER + ["--worker-heartbeat-s", "0.2", "--worker-unresponsive-s", "2"]) as b:
            done = b.chat("s", "script:hang 4000;stream 40 20", wait=True)
            self.assertEqual(done["status"], "complete", done)
            (w,) = [w for w in workers(b, "default") if w["slot"] == 0]  # the turn's (slot 1: a spare)
            self.assertEqual((w["alive"], w["unresponsive"], w["crashes_in_a_row"]), (True, False, 0))


class Bounds(unittest.TestCase):
    def test_max_workers_caps_processes_over_all_profiles(self):
        with Bridge(args=WORKER + ["--max-workers", "2"]) as b:
            add_profile(b, "one", {})
            add_profile(b, "two", {})
            self.assertTrue(wait_until(lambda: any(w["alive"] for w in workers(b, "default"))))
            self.assertEqual(b.chat("a", "hi", profile="one", wait=True)["output"], "echo: hi")
            refused = b.chat("b", "hi", profile="two")
            self.assertFalse(refused["ok"])
            self.assertEqual(refused["error_type"], "RuntimeError")
            self.assertIn("too many agent workers (2)", refused["error"])
            self.assertEqual(len([w for w in workers(b) if w["alive"]]), 2)
            # Once one is gone there is room again.
            os.kill(live_pid(b, "one"), signal.SIGKILL)
            self.assertTrue(wait_until(lambda: not any(w["alive"] for w in workers(b, "one"))))
            self.assertEqual(b.chat("b", "hi", profile="two", wait=True)["output"], "echo: hi")

    def test_a_flood_of_questions_starts_a_bounded_number_of_threads(self):
        with Bridge(args=WORKER) as b:
            add_profile(b, "flood", {})  # a fresh worker: its first turn is turn 1
            request = json.dumps({"command": "rm -rf /", "description": "flood"})
            ask = json.dumps({"t": "ask", "turn": 1, "seq": 1, "ask": 1, "kind": "approval",
                              "request": request, "timeout_s": 3})
            baseline = threads_of(b.proc.pid)
            run = b.chat("f", f"script:rawframe 1000 {ask};hang 1500;say done", profile="flood")["run_id"]
            most = 0
            deadline = time.monotonic() + 1.5
            while time.monotonic() < deadline:
                most = max(most, threads_of(b.proc.pid))
                time.sleep(0.02)
            self.assertLess(most - baseline, 120, f"{most} threads, {baseline} before the flood")
            done = b.wait_done(run, timeout=30)
            self.assertEqual(done["status"], "complete", done)
            self.assertTrue(b.request({"action": "ping"})["pong"])


    def test_no_thread_to_be_had_fails_the_question_closed_and_the_daemon_lives(self):
        # Under an address-space limit only a few more thread stacks fit:
        # starting a thread for a question throws, which must deny that
        # question, not reach std::terminate.
        with Bridge(args=WORKER) as probe:
            probe.chat("s", "hi", wait=True)
            vm_kb = int(Path(f"/proc/{probe.proc.pid}/status").read_text().split("VmSize:")[1].split()[0])
        b = Bridge(args=WORKER)
        command = b.command()
        # In the sanitizer build, AddressSanitizer gives each new thread an
        # alternate signal stack after its stack was mapped, and aborts the
        # process when that mapping fails: at the limit, a thread start that
        # would have failed cleanly killed the daemon in 1 run of 3. Without
        # those stacks the start fails as it does in a normal build.
        asan = ":".join(filter(None, [os.environ.get("ASAN_OPTIONS", ""), "use_sigaltstack=0"]))
        b.command = lambda: ["env", f"ASAN_OPTIONS={asan}", "prlimit", f"--as={(vm_kb << 10) + (320 << 20)}",
                             "--"] + command
        with b:
            add_profile(b, "flood", {})
            request = json.dumps({"command": "rm -rf /", "description": "flood"})
            ask = json.dumps({"t": "ask", "turn": 1, "seq": 1, "ask": 1, "kind": "approval",
                              "request": request, "timeout_s": 3})
            run = b.chat("f", f"script:rawframe 200 {ask};hang 1000;say done", profile="flood")["run_id"]
            done = b.wait_done(run, timeout=30)
            self.assertEqual(done["status"], "complete", done)
            self.assertTrue(b.request({"action": "ping"})["pong"])
            self.assertIsNone(b.proc.poll())


class Frames(unittest.TestCase):
    def test_a_turn_whose_outcome_is_bigger_than_a_frame_part_arrives_whole(self):
        with Bridge(args=WORKER) as b:
            # turn_end carries the result (its final_response and messages)
            # and the history: 60 MiB in one frame, over a 32 MiB part.
            # 13 s alone in the sanitizer build, more beside other tests: room to spare.
            done = b.request({"action": "chat", "session_id": "big", "message": "script:flood 20 1024",
                              "wait": True}, timeout=180)
            self.assertEqual(done["status"], "complete", {k: done[k] for k in ("status", "error")})
            self.assertEqual(len(done["output"]), 20 << 20)
            self.assertEqual(len(done["result"]["final_response"]), 20 << 20)
            status = b.request({"action": "status", "session_id": "big"})
            self.assertEqual(status["message_count"], 2)  # the history arrived whole too
            self.assertEqual((w := workers(b, "default")[0])["crashes_in_a_row"], 0, w)

    def test_a_corrupt_frame_ends_that_worker_never_the_daemon(self):
        with Bridge(args=WORKER) as b:
            run = b.chat("c", 'script:rawframe 1 {"t": "text", "turn": "x"}')["run_id"]
            done = b.wait_done(run)
            self.assertEqual(done["status"], "error")
            self.assertIn("sent a corrupt frame", done["error"])
            self.assertEqual(b.chat("c", "after", wait=True)["output"], "echo: after")


class Workspaces(unittest.TestCase):
    def test_a_session_id_reused_after_destroy_does_not_inherit_the_workspace(self):
        ws = tempfile.mkdtemp(prefix="hb-ws-")
        self.addCleanup(os.rmdir, ws)
        # One worker: the same process, whose tool state could carry the workspace over.
        with Bridge(args=WORKER + ["--workers-per-profile", "1"]) as b:
            first = b.chat("s", "script:cwd", workspace=ws, wait=True)
            self.assertEqual(first["output"], f"cwd={ws} ")
            pid = live_pid(b, "default")
            self.assertTrue(b.request({"action": "destroy", "session_id": "s"})["ok"])
            again = b.chat("s", "script:cwd", wait=True)
            self.assertEqual(live_pid(b, "default"), pid)  # the same worker, so the same tool state
            self.assertNotEqual(again["output"], f"cwd={ws} ")


if __name__ == "__main__":
    unittest.main()
