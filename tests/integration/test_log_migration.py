"""A log a schema-4 daemon wrote (every delta's stream.delta event a row of
its own, beside the delta, and every delta a row of its own) served by this
daemon: migrated once at start, said so in its log, and every run reads as
it did, byte for byte."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import unittest

from harness import Bridge, bridge_binary
from log_rows import run_deltas


def as_version_4(db) -> int:
    """Gives every delta a row of its own and its event row again, at the
    seq it holds, in version 4's tables, and calls the log version 4.
    Returns how many event rows that added."""
    added = 0
    with sqlite3.connect(db) as c:
        runs = {run_no: run_deltas(c, run_no) for (run_no,) in c.execute("SELECT run_no FROM runs").fetchall()}
        c.executescript("DROP TABLE deltas; CREATE TABLE deltas(run_no INTEGER NOT NULL, seq INTEGER NOT NULL,"
                        " at REAL NOT NULL, text TEXT NOT NULL, PRIMARY KEY(run_no, seq)) WITHOUT ROWID;"
                        "CREATE TABLE events_v4(run_no INTEGER NOT NULL, seq INTEGER NOT NULL, at REAL NOT NULL,"
                        " body TEXT NOT NULL, PRIMARY KEY(run_no, seq)) WITHOUT ROWID;"
                        "INSERT INTO events_v4 SELECT run_no, seq, at, body FROM events;"
                        "DROP TABLE events; ALTER TABLE events_v4 RENAME TO events;")
        for run_no, deltas in runs.items():
            c.executemany("INSERT INTO deltas VALUES(?, ?, ?, ?)", [(run_no, *d) for d in deltas])
            taken = {seq for (seq,) in c.execute("SELECT seq FROM events WHERE run_no=?", (run_no,))}
            free = (seq for seq in range(len(taken) + len(deltas)) if seq not in taken)
            for (_, at, text), seq in zip(deltas, free):
                c.execute("INSERT INTO events VALUES(?, ?, ?, ?)",
                          (run_no, seq, at, json.dumps({"event": "stream.delta", "delta": text})))
                added += 1
        c.execute("UPDATE meta SET value='4' WHERE key='schema_version'")
    return added


class Migration(unittest.TestCase):
    def test_a_version_4_log_is_migrated_once_and_reads_the_same(self):
        first = Bridge().start()
        runs = [first.chat("m", "script:say hello ;tool terminal ls;say world", wait=True)["run_id"],
                first.chat("m", "script:stream 50 0", wait=True)["run_id"]]

        def read_all(b: Bridge) -> list[dict]:
            return [b.request({"action": "get_output", "run_id": run, "cursor": 0, "event_cursor": 0})
                    for run in runs]

        before = read_all(first)
        self.assertTrue(all(out["done"] for out in before))
        first.request({"action": "shutdown"})
        first.proc.wait(10)
        first.proc.stdout.close()
        db = first.home / "hermes-bridge" / "events.db"
        self.assertGreaterEqual(as_version_4(db), 52)

        again = Bridge()
        again.dir, again.home, again.endpoint, again.agent_log = first.dir, first.home, first.endpoint, first.agent_log
        with again:
            self.assertIn("event=log.migrating", again.stderr())
            self.assertIn("from=4", again.stderr())
            self.assertEqual(read_all(again), before)
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
                self.assertEqual(c.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone(), ("7",))
                self.assertEqual(c.execute("SELECT count(*) FROM events WHERE body LIKE "
                                           "'{\"event\": \"stream.delta\"%'").fetchone(), (0,))
            verdict = subprocess.run([str(bridge_binary()), "verify", "--db", str(db)], capture_output=True,
                                     timeout=60)
            self.assertEqual(verdict.returncode, 0, verdict.stdout + verdict.stderr)


if __name__ == "__main__":
    unittest.main()
