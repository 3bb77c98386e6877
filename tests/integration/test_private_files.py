"""Transcripts on disk are the owner's alone (issue 21, item 9): under the
usual umask 022, the event log's directory is created 0700, the database
and its -wal and -shm 0600, and `export -o` / `timeline -o` files 0600;
files that were readable by others before are tightened, and a symbolic
link where the log goes is refused rather than followed."""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
import subprocess
import tempfile
import unittest
from pathlib import Path

from harness import Bridge, bridge_binary


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def tool(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("HERMES_BRIDGE_DB", None)
    return subprocess.run([str(bridge_binary()), *args], capture_output=True, timeout=60, env=env)


class PrivateFiles(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.old_umask = os.umask(0o022)  # what most logins have; children inherit it
        cls.tmp = Path(tempfile.mkdtemp(prefix="hb-private-"))

    @classmethod
    def tearDownClass(cls):
        os.umask(cls.old_umask)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_the_log_directory_and_files_are_owner_only(self):
        with Bridge() as b:
            run = b.chat("p", "script:stream 20 0", wait=True)["run_id"]
            log_dir = b.home / "hermes-bridge"
            db = log_dir / "events.db"
            # While it serves: the WAL and its index exist beside the database.
            self.assertEqual(oct(mode(log_dir)), oct(0o700))
            for name in ("events.db", "events.db-wal", "events.db-shm"):
                with self.subTest(file=name):
                    self.assertEqual(oct(mode(log_dir / name)), oct(0o600))
            b.request({"action": "shutdown"})  # (stop() would remove the files with its home)
            b.proc.wait(15)
            self.assertEqual(oct(mode(db)), oct(0o600))
            # the tools' outputs carry the same transcripts
            export = self.tmp / "run.jsonl"
            page = self.tmp / "run.html"
            self.assertEqual(tool("export", run, "--db", str(db), "-o", str(export)).returncode, 0)
            self.assertEqual(tool("timeline", run, "--db", str(db), "-o", str(page)).returncode, 0)
            self.assertEqual(oct(mode(export)), oct(0o600))
            self.assertEqual(oct(mode(page)), oct(0o600))
            # ... also when a readable file of that name was there before
            for out, command in ((export, "export"), (page, "timeline")):
                with self.subTest(replaced=command):
                    out.chmod(0o644)
                    self.assertEqual(tool(command, run, "--db", str(db), "-o", str(out)).returncode, 0)
                    self.assertEqual(oct(mode(out)), oct(0o600))
                    self.assertGreater(out.stat().st_size, 100)
            # a log made by import
            target_dir = self.tmp / "imported" / "deeper"
            p = tool("import", str(export), "--db", str(target_dir / "events.db"))
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(oct(mode(self.tmp / "imported")), oct(0o700))
            self.assertEqual(oct(mode(target_dir)), oct(0o700))
            self.assertEqual(oct(mode(target_dir / "events.db")), oct(0o600))

    def test_a_readable_log_is_made_owner_only(self):
        d = Path(tempfile.mkdtemp(dir=self.tmp))
        db = d / "events.db"
        with Bridge(args=["--db", str(db)]) as b:
            b.chat("p", "script:say hi", wait=True)
        # A reader keeps a WAL and its index there, all readable by everyone,
        # as an earlier hermes-bridge left them.
        keep_open = sqlite3.connect(db)
        keep_open.execute("SELECT count(*) FROM runs").fetchall()
        try:
            for name in ("events.db", "events.db-wal", "events.db-shm"):
                (d / name).chmod(0o644)
            with Bridge(args=["--db", str(db)]) as b:
                self.assertTrue(b.request({"action": "ping"})["pong"])
                for name in ("events.db", "events.db-wal", "events.db-shm"):
                    with self.subTest(file=name):
                        self.assertEqual(oct(mode(d / name)), oct(0o600))
        finally:
            keep_open.close()

    def test_a_symbolic_link_for_the_log_is_refused(self):
        d = Path(tempfile.mkdtemp(dir=self.tmp))
        elsewhere = d / "elsewhere.db"
        link = d / "events.db"
        link.symlink_to(elsewhere)
        b = Bridge(args=["--db", str(link)])
        try:
            with self.assertRaises(AssertionError) as refused:
                b.start()
            self.assertIn("is a symbolic link", str(refused.exception))
            self.assertFalse(elsewhere.exists())
        finally:
            b.stop()


if __name__ == "__main__":
    unittest.main()
