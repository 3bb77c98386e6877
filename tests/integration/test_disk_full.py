"""The event log on a full disk: clients get errors instead of new runs,
nothing committed is damaged, output of the live run is held and written
once space returns, and the daemon carries on. Needs root (a small tmpfs)."""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
import unittest
from pathlib import Path

from harness import Bridge


class DiskFull(unittest.TestCase):
    def setUp(self):
        self.mount = Path(tempfile.mkdtemp(prefix="hb-tmpfs-"))
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(self.mount)],
                              capture_output=True)
        if done.returncode != 0:
            os.rmdir(self.mount)
            raise unittest.SkipTest("cannot mount a tmpfs here (needs root): " + done.stderr.decode())

    def tearDown(self):
        subprocess.run(["umount", "-l", str(self.mount)])
        os.rmdir(self.mount)

    def test_a_full_disk_is_survived(self):
        db = self.mount / "events.db"
        with Bridge(args=["--db", str(db)]) as b:
            kept = b.chat("before", "hello", wait=True)
            self.assertEqual(kept["status"], "complete")
            live = b.chat("live", "script:stream 300 10")  # streaming while the disk fills up
            b.wait_event(live["run_id"], "stream.delta")
            filler = self.mount / "filler"
            try:  # take (almost) all the space there is; closing may hit the full disk too
                with open(filler, "wb") as f:
                    while True:
                        f.write(b"\0" * 65536)
                        f.flush()
            except OSError:
                pass
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


if __name__ == "__main__":
    unittest.main()
