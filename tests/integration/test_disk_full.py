"""The event log on a full disk: clients get errors instead of new runs,
nothing committed is damaged, output of the live run is held and written
once space returns (its agent slowed meanwhile, not its output dropped),
`health` says degraded with the reason and counts, a stop that cannot write
what it holds exits non-zero, and the daemon carries on. Needs root (a small
tmpfs); without it every test skips and CTest reports the module skipped."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
import unittest
from pathlib import Path

from harness import Bridge, wait_for


class DiskFull(unittest.TestCase):
    SIZE = "3m"

    def setUp(self):
        self.mount = Path(tempfile.mkdtemp(prefix="hb-tmpfs-"))
        size = getattr(self, "size_" + self._testMethodName, self.SIZE)
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(self.mount)],
                              capture_output=True)
        if done.returncode != 0:
            os.rmdir(self.mount)
            raise unittest.SkipTest("cannot mount a tmpfs here (needs root): " + done.stderr.decode())

    def tearDown(self):
        subprocess.run(["umount", "-l", str(self.mount)])
        os.rmdir(self.mount)

    def fill(self) -> Path:
        """Takes (almost) all the space there is; closing may hit the full disk too."""
        filler = self.mount / "filler"
        with open(filler, "wb", buffering=0) as f:
            for chunk in (65536, 4096, 512, 1):  # down to the last byte
                try:
                    while True:
                        f.write(b"\0" * chunk)
                except OSError:
                    pass
        return filler

    def wait_degraded(self, b: Bridge, timeout: float = 20) -> dict:
        return wait_for(lambda: (lambda h: h if h["status"] == "degraded" else None)(b.request({"action": "health"})),
                        timeout=timeout, what="health to say degraded")

    def test_a_full_disk_is_survived(self):
        db = self.mount / "events.db"
        with Bridge(args=["--db", str(db)]) as b:
            kept = b.chat("before", "hello", wait=True)
            self.assertEqual(kept["status"], "complete")
            live = b.chat("live", "script:stream 300 10")  # streaming while the disk fills up
            b.wait_event(live["run_id"], "stream.delta")
            filler = self.fill()
            refused = None
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                reply = b.request({"action": "chat", "session_id": "new", "message": "hi"})
                if not reply["ok"]:
                    refused = reply
                    break
                b.wait_done(reply["run_id"], timeout=15)
                time.sleep(0.1)
            self.assertIsNotNone(refused, "the daemon never noticed the full disk")
            self.assertIn("event log", refused["error"])
            health = b.request({"action": "health"})
            self.assertEqual(health["status"], "degraded", health)
            self.assertEqual(health["log"]["state"], "degraded", health)
            self.assertTrue(health["log"]["reason"], health)
            self.assertGreater(health["log"]["held_operations"], 0, health)
            self.assertGreater(health["log"]["held_bytes"], 0, health)
            self.assertEqual(health["log"]["failed_runs"], 0, health)
            # what was committed before is intact and readable
            self.assertEqual(b.request({"action": "get_result", "run_id": kept["run_id"]}), kept)
            self.assertTrue(b.request({"action": "ping"})["pong"])
            filler.unlink()  # space returns
            done = b.wait_done(live["run_id"], timeout=30)
            self.assertEqual(done["status"], "complete")
            full = b.request({"action": "get_result", "run_id": live["run_id"]})
            self.assertEqual(len(full["deltas"]), 300)  # nothing held back was lost
            self.assertEqual(full["deltas"][:3], ["d0 ", "d1 ", "d2 "])
            after = b.chat("after", "hello again", wait=True)
            self.assertEqual(after["status"], "complete")
            self.assertIn("writable again", b.stderr())
            health = b.request({"action": "health"})
            self.assertEqual((health["status"], health["log"]["state"]), ("ok", "ok"), health)
            self.assertEqual((health["log"]["held_operations"], health["log"]["held_bytes"]), (0, 0), health)

    # Room for the flood once freed: its rows hold the output about five times
    # (deltas, events, result, session history), and a checkpointer that lags
    # (the sanitizer pass) leaves all of it in the WAL as well.
    size_test_a_flood_on_a_full_disk_waits_instead_of_piling_up = "384m"

    def test_a_flood_on_a_full_disk_waits_instead_of_piling_up(self):
        """An agent streaming 24 MiB while nothing can be written is held
        back (about 8 MiB of its output wait in memory, not all of it) and
        loses nothing once space returns."""
        db = self.mount / "events.db"
        with Bridge(args=["--db", str(db)]) as b:
            live = b.chat("flood", "script:stream 40 25;flood 24")
            b.wait_event(live["run_id"], "stream.delta")
            filler = self.fill()
            self.wait_degraded(b)
            most = 0
            deadline = time.monotonic() + 4  # the flood outruns any disk by far in this time
            while time.monotonic() < deadline:
                most = max(most, b.request({"action": "health"})["log"]["held_bytes"])
                time.sleep(0.05)
            # Held bytes count a delta twice (its text and its stream.delta
            # event): 8 MiB of output waiting is 16 MiB; all of it would be 48.
            self.assertLess(most, 32 << 20, f"held {most} bytes: the agent was not slowed")
            out = b.request({"action": "get_output", "run_id": live["run_id"]})
            self.assertFalse(out["done"], "the flood finished while nothing could be written")
            filler.unlink()
            done = b.wait_done(live["run_id"], timeout=120)
            self.assertEqual(done["status"], "complete")
            full = b.request({"action": "get_result", "run_id": live["run_id"]})
            self.assertEqual(len(full["deltas"]), 40 + 24 * 16)  # 64 KiB deltas: none dropped
            self.assertEqual("".join(full["deltas"][40:]), full["result"]["final_response"])  # the flood, whole
            health = b.request({"action": "health"})
            self.assertEqual(health["status"], "ok", (health, b.stderr()[-3000:]))

    def test_a_stop_that_cannot_write_what_it_holds_exits_non_zero(self):
        db = self.mount / "events.db"
        b = Bridge(args=["--db", str(db)]).start()
        try:
            # More output than a WAL already on disk can take in its old pages.
            live = b.chat("live", "script:stream 40 25;flood 8")
            b.wait_event(live["run_id"], "stream.delta")
            self.fill()
            wait_for(lambda: b.request({"action": "health"})["log"]["held_bytes"] > (4 << 20), timeout=30,
                     what="the flood to be held")
            b.signal(signal.SIGTERM)
            self.assertEqual(b.proc.wait(60), 1, b.stderr())
            log = b.stderr()
            self.assertIn("event=log.final_flush_failed", log)
            self.assertIn("never written", log)
            self.assertIn("exit_code=1", log)
        finally:
            b.stop()


if __name__ == "__main__":
    unittest.main()
