"""Socket-directory trust where only root can set it up: a directory that
belongs to another user is refused. In a module of its own so that, run
without root, CTest reports it skipped."""

from __future__ import annotations

import os
import unittest

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


if __name__ == "__main__":
    unittest.main()
