"""Socket- and runtime-directory trust where only root can set it up: a
directory that belongs to another user is refused. In a module of its own so that, run
without root, CTest reports it skipped."""

from __future__ import annotations

import os
import shutil
import tempfile
import unittest
from pathlib import Path

from harness import Bridge


class OtherUsersDirectories(unittest.TestCase):
    def test_a_socket_directory_of_another_user_is_refused(self):
        if os.geteuid() != 0:
            self.skipTest("needs root to hand a directory to another user")
        b = Bridge()
        theirs = b.dir / "theirs"
        theirs.mkdir(mode=0o755)
        os.chown(theirs, 12345, 12345)
        b.endpoint = f"ipc://{theirs}/bridge.sock"
        with self.assertRaises(AssertionError) as refused:
            b.start()
        b.stop()
        self.assertIn(f"socket directory {theirs} belongs to uid 12345", str(refused.exception))

    def test_a_worker_runtime_root_of_another_user_is_refused(self):
        # Made first in a shared TMPDIR by uid 65534 (nobody): that user could
        # swap the module directory and run code in our workers.
        if os.geteuid() != 0:
            self.skipTest("needs root to hand a directory to another user")
        tmp = Path(tempfile.mkdtemp(prefix="hb-root-"))
        self.addCleanup(shutil.rmtree, tmp, True)
        theirs = tmp / f"hermes-bridge-{os.getuid()}"
        theirs.mkdir(mode=0o755)
        os.chown(theirs, 65534, 65534)
        b = Bridge(args=["--agent-host", "worker"], env={"TMPDIR": str(tmp), "XDG_RUNTIME_DIR": ""})
        with self.assertRaises(AssertionError) as refused:
            b.start()
        b.stop()
        self.assertIn(f"agent worker directory {theirs} belongs to uid 65534", str(refused.exception))
        self.assertFalse((theirs / "workers").exists())


if __name__ == "__main__":
    unittest.main()
