"""`hermes-bridge verify` on logs the real daemon wrote (answered, timed
out and crash-settled approvals, tools, errors, a kill -9 and its
recovery): healthy, while the daemon serves and after; then the same log
damaged on purpose, each problem named, exit code 5."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import time
import unittest
from pathlib import Path

from harness import Bridge, bridge_binary


def verify(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("HERMES_BRIDGE_DB", None)
    return subprocess.run([str(bridge_binary()), "verify", *args], capture_output=True, timeout=60, env=env)


class Verify(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="hb-verify-"))
        cls.first = first = Bridge().start()  # its directory (and the log) goes with it
        cls.home, cls.db = first.home, first.home / "hermes-bridge" / "events.db"
        try:
            run = first.chat("v1", "script:say hi;tool terminal ls;approve-cli rm -rf /tmp/x;say done")["run_id"]
            asked = first.wait_event(run, "approval.requested")
            first.request({"action": "approval_respond", "approval_id": asked["approval_id"], "choice": "once"})
            first.wait_done(run)
            first.chat("v1", "script:approve-gw rm -rf /;say after", wait=True)  # answered by nobody: timeout
            first.chat("v2", "script:say oops;raise boom", wait=True)
            first.chat("v3", "script:stream 30 0", wait=True)
            first.request({"action": "destroy", "session_id": "v3"})
            cls.serving = verify("--db", str(cls.db), "--json")
            cut = first.chat("v4", "script:say asking;approve-gw rm -rf /;stream 50 5")["run_id"]
            first.wait_event(cut, "approval.requested")
            first.proc.send_signal(signal.SIGKILL)
            first.proc.wait(10)
            first.proc.stdout.close()
        except BaseException:
            first.stop()
            raise
        cls.crashed = verify("--db", str(cls.db))  # before recovery: a live run, not damage
        with Bridge(args=["--db", str(cls.db)]) as again:
            settled = again.request({"action": "get_result", "run_id": cut})
            assert settled.get("status") == "interrupted", settled
        cls.cut_run = cut

    @classmethod
    def tearDownClass(cls):
        cls.first.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def copy(self) -> Path:
        d = Path(tempfile.mkdtemp(dir=self.tmp))
        for suffix in ("", "-wal"):
            if Path(f"{self.db}{suffix}").exists():
                shutil.copy(f"{self.db}{suffix}", d / f"events.db{suffix}")
        with sqlite3.connect(d / "events.db") as c:  # everything in the main file, to damage it there
            c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return d / "events.db"

    def test_a_healthy_log_is_healthy(self):
        p = verify("--db", str(self.db))
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        first = p.stdout.decode().splitlines()[0]
        self.assertIn(": healthy (schema version 7, 4 sessions, 5 runs", first)
        self.assertIn("integrity_check: ok", first)
        report = json.loads(verify("--db", str(self.db), "--json").stdout)
        self.assertEqual((report["ok"], report["verdict"], report["schema_version"], report["integrity_check"]),
                         (True, "healthy", 7, "ok"))
        self.assertEqual(report["problems"], [])
        self.assertEqual(report["live_runs"], 0)

    def test_healthy_while_served_and_after_a_crash(self):
        self.assertEqual(self.serving.returncode, 0, self.serving.stdout)
        self.assertTrue(json.loads(self.serving.stdout)["ok"])
        self.assertEqual(self.crashed.returncode, 0, self.crashed.stdout)
        self.assertIn(b"1 run(s) still 'running'", self.crashed.stdout)

    def test_the_default_location_from_hermes_home(self):
        p = verify("--hermes-home", str(self.home))
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn(str(self.db).encode(), p.stdout)

    def test_damage_is_named_with_its_run_and_seq(self):
        db = self.copy()
        with sqlite3.connect(db) as c:
            run_no, run_id = c.execute("SELECT run_no, run_id FROM runs WHERE session_id='v3'").fetchone()
            seqs = [seq for (seq,) in c.execute("SELECT seq FROM events WHERE run_no=? ORDER BY seq", (run_no,))]
            self.assertGreater(len(seqs), 1)
            c.execute("DELETE FROM events WHERE run_no=? AND seq=?", (run_no, seqs[0]))
            c.execute("UPDATE runs SET status='running', ended_at=NULL, result=NULL WHERE run_id=?", (self.cut_run,))
            c.execute("INSERT INTO events(run_no, seq, at, body) VALUES(4242, 0, 1.0, '{\"event\": \"step\"}')")
        p = verify("--db", str(db))
        self.assertEqual(p.returncode, 5, p.stdout + p.stderr)
        text = p.stdout.decode()
        self.assertIn(": DAMAGED", text)
        gap = f"gap: 1 event seq(s) up to {seqs[-1]} hold neither an event nor a delta"
        self.assertIn(f"events run {run_id} seq {seqs[-1]}: {gap}", text)
        self.assertIn(f"runs run {self.cut_run}: still 'running' although recovery settled it", text)
        self.assertIn("events run run_no 4242: 1 orphan row(s)", text)
        report = json.loads(verify("--db", str(db), "--json").stdout)
        self.assertFalse(report["ok"])
        self.assertIn({"table": "events", "run_id": run_id, "seq": seqs[-1], "problem": gap}, report["problems"])

    def test_a_flipped_page(self):
        db = self.copy()
        with sqlite3.connect(db) as c:
            page_size = c.execute("PRAGMA page_size").fetchone()[0]
            root = c.execute("SELECT rootpage FROM sqlite_master WHERE name='events'").fetchone()[0]
        with open(db, "r+b") as f:
            f.seek((root - 1) * page_size)
            f.write(b"\xa5" * 64)
        p = verify("--db", str(db), "--json")
        self.assertEqual(p.returncode, 5, p.stdout + p.stderr)
        report = json.loads(p.stdout)
        self.assertNotEqual(report["integrity_check"], "ok")
        self.assertTrue(any(x["table"] == "sqlite" for x in report["problems"]), report)

    def test_no_log_and_not_a_log(self):
        p = verify("--db", str(self.tmp / "nothing.db"))
        self.assertEqual(p.returncode, 2)
        self.assertIn(b"no event log at", p.stderr)
        junk = self.tmp / "junk.db"
        junk.write_bytes(b"this is not sqlite" * 100)
        p = verify("--db", str(junk))
        self.assertEqual(p.returncode, 5, p.stdout)


if __name__ == "__main__":
    unittest.main()
