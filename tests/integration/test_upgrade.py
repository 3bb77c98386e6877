"""Upgrades without downtime (issue 24): `serve --take-over` takes the
listening socket of the daemon serving the same log; that daemon answers what
it was asked and exits, leaving its workers, and the new one goes on with
them. Clients that keep asking meanwhile, as Hermes Studio does (a connection
per request), see no refused connection and no error."""

from __future__ import annotations

import json
import threading
import time
import unittest

import test_worker_host as workers_of
from harness import Bridge, events_named
from test_survive_restart import SCRIPT, WORKER, Follower, worker_pids


def successor(before: Bridge, args: list[str] | None = None) -> Bridge:
    """A new daemon on the same home, log, endpoint and runtime directory,
    started while `before` still serves."""
    after = Bridge(args=(args or WORKER) + ["--take-over"])
    after.dir, after.home, after.endpoint = before.dir, before.home, before.endpoint
    after.agent_log = before.agent_log
    return after


class Asker(threading.Thread):
    """`ping` and `get_output` in a loop, each on its own connection."""

    def __init__(self, bridge: Bridge, run_id: str) -> None:
        super().__init__(daemon=True)
        self.bridge, self.run_id = bridge, run_id
        self.stop = threading.Event()
        self.answers, self.errors = 0, []

    def run(self) -> None:
        while not self.stop.is_set():
            for request in ({"action": "ping"}, {"action": "get_output", "run_id": self.run_id}):
                try:
                    answer = self.bridge.request(request, timeout=20)
                except (OSError, ValueError) as e:
                    self.errors.append(repr(e))
                    continue
                if not answer.get("ok", True) or ("pong" not in answer and "cursor" not in answer):
                    self.errors.append(answer)
                else:
                    self.answers += 1


class Upgrade(unittest.TestCase):
    def test_a_take_over_under_load_loses_no_request_no_byte_and_no_question(self):
        b = Bridge(args=WORKER).start()
        self.addCleanup(b.stop)
        control = b.chat("control", SCRIPT, wait=True)
        expected = b.wait_done(control["run_id"])["seen_text"]
        runs = {sid: b.chat(sid, SCRIPT)["run_id"] for sid in ("a", "b", "c")}
        question = b.chat("q", "script:approve-cli rm -rf /tmp/x;say after")["run_id"]
        asked = b.wait_event(question, "approval.requested")
        followers = [Follower(b, run) for run in runs.values()]
        askers = [Asker(b, run) for run in list(runs.values())[:2]]
        for t in followers + askers:
            t.start()
        for run in runs.values():
            workers_of.wait_until(lambda: b.request({"action": "get_output", "run_id": run})["cursor"] >= 20)
        pids = worker_pids(b)

        after = successor(b)
        self.addCleanup(after.stop)
        after.start()
        self.assertEqual(b.proc.wait(30), 0)
        time.sleep(0.5)  # the askers go on against the new daemon
        for t in askers:
            t.stop.set()
            t.join(30)
        for f in followers:
            f.join(60)

        for t in askers:
            self.assertEqual(t.errors, [], b.stderr()[-3000:])
            self.assertGreater(t.answers, 10)
        for f in followers:
            self.assertIsNotNone(f.final, f"a follower never saw the end ({f.refused} refused, {f.errors})")
            self.assertEqual((f.refused, f.errors), (0, []))
            self.assertEqual(f.text, expected)  # each byte once, across the hand-over
        for run in runs.values():
            self.assertEqual(after.request({"action": "get_result", "run_id": run})["status"], "complete")
        self.assertEqual(worker_pids(after), pids)  # the same processes, adopted
        self.assertIn("daemon.handed_over", b.stderr())
        self.assertIn("daemon.took_over", after.stderr())
        # The question asked of the old daemon is answered at the new one, under its id.
        answer = after.request({"action": "approval_respond", "approval_id": asked["approval_id"], "choice": "once"})
        self.assertTrue(answer.get("resolved"), answer)
        done = after.wait_done(question)
        self.assertIn("choice=once", done["seen_text"])
        self.assertEqual(len(events_named(done["seen_events"], "approval.requested")), 1)

    def test_a_subscriber_is_told_where_to_go_on_and_a_long_poll_is_answered(self):
        b = Bridge(args=WORKER).start()
        self.addCleanup(b.stop)
        run = b.chat("s", "script:stream 300 20")["run_id"]
        b.wait_event(run, "stream.delta")
        # A run that waits on a question writes nothing: its long-poll waits.
        quiet = b.chat("q", "script:approve-cli ls;say after")["run_id"]
        b.wait_event(quiet, "approval.requested")
        now = b.request({"action": "get_output", "run_id": quiet})
        polled, streamed = {}, []

        def long_poll() -> None:
            out = b.request({"action": "get_output", "run_id": quiet, "cursor": now["cursor"],
                             "event_cursor": now["event_cursor"], "wait_ms": 20000}, timeout=30)
            polled.update(out)

        def subscribe() -> None:
            with b.connect(timeout=30) as sock:
                sock.sendall(b'{"action": "subscribe", "run_id": "' + run.encode() + b'"}\n')
                for line in sock.makefile("rb"):
                    streamed.append(line)
        threads = [threading.Thread(target=long_poll), threading.Thread(target=subscribe)]
        for t in threads:
            t.start()
        time.sleep(0.3)
        after = successor(b)
        self.addCleanup(after.stop)
        started = time.monotonic()
        after.start()
        for t in threads:
            t.join(30)
        self.assertLess(time.monotonic() - started, 15)  # the long-poll did not hold the old daemon its 20 s
        self.assertTrue(polled.get("ok"), polled)
        self.assertEqual((polled["cursor"], polled["done"]), (now["cursor"], False))
        last = json.loads(streamed[-1])
        self.assertEqual((last["ok"], last["error_type"]), (False, "HandedOver"))
        self.assertGreater(last["cursor"], 0)  # where to go on
        self.assertEqual(after.wait_done(run)["status"], "complete")

    def test_with_no_daemon_running_take_over_starts_as_usual(self):
        b = Bridge(args=WORKER + ["--take-over"]).start()
        self.addCleanup(b.stop)
        self.assertIn("daemon.take_over_nobody", b.stderr())
        self.assertEqual(b.chat("x", "hi", wait=True)["output"], "echo: hi")


if __name__ == "__main__":
    unittest.main()
