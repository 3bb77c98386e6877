"""An idle daemon (no client, no run) sleeps: its threads, and its worker
process, wake only for the few timers that have work to look at.

Counted, not timed: the number of timeslices every thread of the process
tree ran over a few seconds (harness.idle_activity, from
/proc/<pid>/task/<tid>/schedstat). A polling scheduler runs hundreds a
second whatever the machine's load; a quiet daemon a handful. The bound sits
far from both, and a sanitizer build changes neither (it slows what runs, not
how often a timer fires)."""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
import time
import unittest
from pathlib import Path

import harness

# CAF's work-stealing workers at their default settings woke ~100 times a
# second each (~400/s for the daemon); a daemon that only keeps its timers
# wakes a few times a second. 50/s fails the first by far and spares the
# second the noise of a busy machine.
WAKEUPS_PER_S_BOUND = 50.0
WINDOW_S = 3.0
# Start-up work (the worker's imports, the first checkpoint, connecting
# threads) must not count: a window that still sees it is followed by
# another, and the quietest of them is judged.
WINDOWS = 3


class IdleTest(unittest.TestCase):
    def quietest(self, b: harness.Bridge) -> dict:
        best = None
        for _ in range(WINDOWS):
            a = harness.idle_activity(b.proc.pid, WINDOW_S)
            if best is None or a["wakeups_per_s"] < best["wakeups_per_s"]:
                best = a
            if best["wakeups_per_s"] < WAKEUPS_PER_S_BOUND / 5:
                break
        return best

    def assert_quiet(self, a: dict) -> None:
        top = ", ".join(f"{k}: {v}" for k, v in list(a["woken"].items())[:8])
        self.assertLess(a["wakeups_per_s"], WAKEUPS_PER_S_BOUND,
                        f"{a['wakeups_per_s']:.0f} wake-ups/s over {a['seconds']:.1f} s "
                        f"({a['cpu_pct']:.2f} % of a core, {a['threads']} threads); most woken: {top}")

    def test_idle_daemon_and_its_worker_sleep(self) -> None:
        with harness.Bridge(args=["--agent-host", "worker"]) as b:
            # The default profile's worker starts with the daemon: it is
            # part of what an idle daemon costs, so it is counted.
            harness.wait_for(lambda: len(harness.process_tree(b.proc.pid)) >= 2, 30,
                             "the default profile's worker process")
            a = self.quietest(b)
            self.assertGreaterEqual(a["processes"], 2, "the worker was not counted")
            self.assert_quiet(a)

    def test_idle_embedded_host_sleeps(self) -> None:
        with harness.Bridge(args=["--agent-host", "embedded"]) as b:
            self.assert_quiet(self.quietest(b))

    def test_idle_after_work(self) -> None:
        # Work leaves the scheduler's workers in their polling phases and
        # arms timers (keepalive sweeps, checkpoints): once it is over they
        # must go back to sleep, not stay awake for the connection that was.
        with harness.Bridge(args=["--agent-host", "worker"]) as b:
            for i in range(3):
                out = b.wait_done(b.chat(f"idle-{i}", "script:stream 20 0")["run_id"])
                self.assertEqual(out["status"], "complete", out)
            time.sleep(1.0)
            self.assert_quiet(self.quietest(b))

    def test_commits_reach_the_database_file_after_a_quiet_spell(self) -> None:
        # The checkpointer stops its timer while nothing is committed; the
        # next commit must wake it, or the WAL would grow without end and
        # the database file would never see another row.
        with harness.Bridge(args=["--agent-host", "worker"]) as b:
            db = b.home / "hermes-bridge" / "events.db"
            time.sleep(3.0)  # a few checkpoint periods without a commit: it sleeps
            run_id = b.chat("quiet-then-busy", "script:stream 5 0")["run_id"]
            self.assertEqual(b.wait_done(run_id)["status"], "complete")

            def in_main_file() -> bool:
                # The main file alone, without its WAL: only what a checkpoint moved there.
                with tempfile.TemporaryDirectory(prefix="hb-idle-db-") as tmp:
                    copy = Path(tmp) / "events.db"
                    shutil.copyfile(db, copy)
                    con = sqlite3.connect(f"file:{copy}?mode=ro&immutable=1", uri=True)
                    try:
                        return con.execute("SELECT count(*) FROM runs WHERE run_id = ?", (run_id,)).fetchone()[0] == 1
                    except sqlite3.DatabaseError:
                        return False  # copied while a checkpoint wrote it: look again
                    finally:
                        con.close()

            harness.wait_for(in_main_file, 30, "the run in the database file (a checkpoint after the quiet spell)")


if __name__ == "__main__":
    unittest.main()
