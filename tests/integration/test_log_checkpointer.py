"""The log checkpointer folds the WAL into the database file from its own
connection (the writer never checkpoints). When that connection fails to
open, it used to stay closed for the daemon's life, and the WAL grew with
every commit; now it is tried again with backoff, each failure logged
(issue 21, item 12)."""

from __future__ import annotations

import re
import shutil
import sqlite3
import tempfile
import unittest
from pathlib import Path

from harness import Bridge, wait_for


def runs_in_main_file(db: Path, scratch: Path) -> set[str]:
    """The runs a copy of the database file alone holds: what checkpoints
    have moved there (the -wal is left behind on purpose)."""
    copy = scratch / "main-only.db"
    shutil.copyfile(db, copy)
    try:
        with sqlite3.connect(copy) as c:
            return {row[0] for row in c.execute("SELECT run_id FROM runs")}
    except sqlite3.DatabaseError:  # copied halfway through a checkpoint, or no table yet
        return set()
    finally:
        copy.unlink()


class CheckpointerRetries(unittest.TestCase):
    def test_a_checkpointer_that_could_not_open_the_log_retries_with_backoff(self):
        scratch = Path(tempfile.mkdtemp(prefix="hb-ckpt-"))
        try:
            with Bridge(env={"HERMES_BRIDGE_TEST_FAULTS": "checkpointer_open_fails"}) as b:
                db = b.home / "hermes-bridge" / "events.db"
                self.assertTrue(b.log_has("event=log.checkpointer_opened", timeout=20), b.stderr())
                failures = [line for line in b.stderr().splitlines() if "event=log.checkpointer_open_failed" in line]
                self.assertEqual(len(failures), 2, failures)
                waits = [int(re.search(r"retry_in_ms=(\d+)", line).group(1)) for line in failures]
                self.assertEqual(waits, [500, 1000])  # each wait twice the one before
                run = b.chat("c", "script:stream 50 0", wait=True)["run_id"]
                wait_for(lambda: run in runs_in_main_file(db, scratch), timeout=15,
                         what="the run checkpointed into events.db")
        finally:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
