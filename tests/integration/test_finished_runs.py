"""Finished runs answered from memory: every get_output answer is byte for
byte what the event log gives (a daemon without the cache is the oracle),
whether it comes from the log, from a reader's memory or from the broker's
own shortcut at the tail; a pruned run is never served from memory."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
import unittest
from pathlib import Path

from harness import Bridge

SCRIPT = ("script:say héllo \"quoted\"\nline; tool search café; stream 40 0; surrogate; "
          "status lifecycle done; say the end")


def requests_for(run_id: str, deltas: int, events: int) -> list[bytes]:
    """A matrix of reads: every cursor region, with and without output."""
    out = []
    for cursor in (0, 1, deltas // 2, deltas, deltas + 5, -3, "2"):
        for event_cursor in (0, events - 1, events, events + 9):
            for include in (None, False, True):
                req = {"action": "get_output", "run_id": run_id, "cursor": cursor, "event_cursor": event_cursor}
                if include is not None:
                    req["include_output"] = include
                out.append((json.dumps(req) + "\n").encode())
    out.append((json.dumps({"action": "get_output", "run_id": run_id}) + "\n").encode())
    out.append((json.dumps({"action": "get_output", "run_id": run_id, "cursor": deltas,
                            "event_cursor": events, "wait_ms": 5000}) + "\n").encode())
    return out


class FinishedRuns(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="hb-finished-"))
        self.db = self.tmp / "events.db"

    def tearDown(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_answers_from_memory_equal_the_logs_byte_for_byte(self):
        with Bridge(args=["--db", str(self.db)]) as b:
            run_id = b.chat("s", SCRIPT, wait=True)["run_id"]
            tail = b.request({"action": "get_output", "run_id": run_id})
            deltas, events = tail["cursor"], tail["event_cursor"]
            self.assertGreater(deltas, 40)
            self.assertGreater(events, 40)
        reads = requests_for(run_id, deltas, events)
        with Bridge(args=["--db", str(self.db), "--finished-cache-mb", "0"]) as oracle:
            expected = [oracle.raw(r) for r in reads]
        with Bridge(args=["--db", str(self.db)]) as cached:
            first = [cached.raw(r) for r in reads]    # the first read fills the cache
            second = [cached.raw(r) for r in reads]   # then all from memory
        for req, want, got1, got2 in zip(reads, expected, first, second):
            with self.subTest(request=req.decode().strip()):
                self.assertEqual(got1, want)
                self.assertEqual(got2, want)

    def test_a_pruned_run_is_not_served_from_memory(self):
        # 0.00002 days is about 1.7 s.
        with Bridge(args=["--retain-days", "0.00002", "--prune-interval", "0.2"]) as b:
            old = b.chat("a", "script:stream 30 0", wait=True)["run_id"]
            for _ in range(3):  # cached, and read at the tail through the broker
                self.assertEqual(b.request({"action": "get_output", "run_id": old})["cursor"], 30)
            b.chat("a", "newer turn", wait=True)  # the session's latest run is never pruned
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                reply = b.request({"action": "get_output", "run_id": old, "cursor": 30})
                if not reply["ok"]:
                    break
                time.sleep(0.2)
            self.assertEqual(reply.get("error_type"), "RunPruned", reply)
            tail = b.request({"action": "get_output", "run_id": old, "cursor": 30, "event_cursor": 30})
            self.assertEqual(tail.get("error_type"), "RunPruned", tail)


if __name__ == "__main__":
    unittest.main()
