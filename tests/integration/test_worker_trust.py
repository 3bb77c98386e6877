"""Where a worker's Python comes from (issue 21, item 1): the runtime
directory the daemon writes the adapter's sources to must be trusted along
its whole path, or the daemon refuses to start naming the path; the files
are owner-only; the worker imports the bridge's modules from that directory
only, never from its current directory or PYTHONPATH."""

from __future__ import annotations

import os
import stat
import tempfile
import unittest
from pathlib import Path

from harness import Bridge, start_refused
from test_worker_host import WORKER, live_pid, wait_until


def in_tmpdir(tmp: Path, args: list[str] | None = None, env: dict | None = None) -> Bridge:
    """A bridge whose runtime directories are the TMPDIR-based defaults."""
    return Bridge(args=WORKER + (args or []), env={"TMPDIR": str(tmp), "XDG_RUNTIME_DIR": "", **(env or {})})


class RuntimeDirectory(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="hb-trust-"))
        self.root = self.tmp / f"hermes-bridge-{os.getuid()}"
        self.addCleanup(lambda: os.system(f"chmod -R u+rwx {self.tmp} 2>/dev/null; rm -rf {self.tmp}"))

    def test_a_root_another_user_could_write_to_is_refused_naming_it(self):
        self.root.mkdir()
        self.root.chmod(0o777)  # made first by someone else, say, not sticky
        message = start_refused(self, in_tmpdir(self.tmp))
        self.assertIn(f"agent worker directory {self.root} is writable by group or others", message)
        self.assertFalse((self.root / "workers").exists())  # nothing was written below it

    def test_a_symlinked_root_is_followed_and_what_it_points_to_checked(self):
        elsewhere = self.tmp / "elsewhere"
        elsewhere.mkdir()
        elsewhere.chmod(0o777)
        self.root.symlink_to(elsewhere)
        message = start_refused(self, in_tmpdir(self.tmp))
        self.assertIn(f"{elsewhere} is writable by group or others", message)
        self.assertFalse((elsewhere / "workers").exists())

    def test_a_native_directory_below_an_open_one_is_refused(self):
        open_dir = self.tmp / "open"
        open_dir.mkdir()
        open_dir.chmod(0o777)
        message = start_refused(self, in_tmpdir(self.tmp, ["--native-dir", str(open_dir / "native")]))
        self.assertIn(f"native session directory {open_dir} is writable by group or others", message)

    def test_the_sources_are_owner_only_and_a_chat_works(self):
        with in_tmpdir(self.tmp) as b:
            workers_dir = self.root / "workers"
            self.assertTrue(wait_until(lambda: any(workers_dir.glob("worker-*/worker_main.py"))))
            for d in (self.root, workers_dir):
                self.assertEqual(stat.S_IMODE(d.stat().st_mode), 0o700, d)
            (made,) = workers_dir.glob("worker-*")
            self.assertEqual(stat.S_IMODE(made.stat().st_mode), 0o700)
            for f in made.iterdir():
                self.assertEqual(stat.S_IMODE(f.lstat().st_mode), 0o600, f)
            self.assertEqual(b.chat("s", "hi", wait=True)["output"], "echo: hi")

    def test_an_owner_only_umask_makes_no_directory_unusable(self):
        # The modes are the daemon's to set, never the umask's: under 0177 a
        # directory made 0700 would come out 0600, which nobody can enter
        # (the socket's own 0600 once came from narrowing the process-wide
        # umask around bind(), racing the pool's first worker).
        b = in_tmpdir(self.tmp)
        self.addCleanup(b.stop)
        old = os.umask(0o177)
        try:
            b.start()
        finally:
            os.umask(old)
        workers_dir = self.root / "workers"
        self.assertTrue(wait_until(lambda: any(workers_dir.glob("worker-*/worker_main.py"))))
        for d in (self.root, workers_dir, *workers_dir.glob("worker-*")):
            self.assertEqual(stat.S_IMODE(d.stat().st_mode), 0o700, d)
        self.assertEqual(stat.S_IMODE(os.stat(b.endpoint.removeprefix("ipc://")).st_mode), 0o600)
        self.assertEqual(b.chat("s", "hi", wait=True)["output"], "echo: hi")


class PlantedModules(unittest.TestCase):
    def test_modules_of_the_bridges_names_elsewhere_are_never_imported(self):
        b = Bridge(args=WORKER)
        planted = b.dir / "planted"
        planted.mkdir()
        marker = b.dir / "imported-a-planted-module"
        code = f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n"
        # In the daemon's (and so the worker's) current directory and on
        # PYTHONPATH, which the agent needs and keeps.
        for where in (b.dir, planted):
            for name in ("worker_main", "bridge_adapter", "bridge_json", "worker_frames", "bridge_profiles"):
                (where / f"{name}.py").write_text(code)
        b.env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(planted), os.environ.get("PYTHONPATH", "")]))
        with b:
            self.assertEqual(b.chat("s", "script:pid", wait=True)["status"], "complete")
            pid = live_pid(b, "default")
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            self.assertIn(b"-c", cmdline)  # the bootstrap, not a script found by path
        self.assertFalse(marker.exists(), marker.read_text() if marker.exists() else "")


if __name__ == "__main__":
    unittest.main()
