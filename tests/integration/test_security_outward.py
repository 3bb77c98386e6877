"""TCP bound to this machine's own non-loopback address is refused without
a token, whatever the address is called. Needs such an address; in a module
of its own so that, on a machine without one, CTest reports it skipped."""

from __future__ import annotations

import subprocess
import unittest

from harness import Bridge, free_port


class OutwardTcp(unittest.TestCase):
    def test_the_machines_own_address_is_not_loopback(self):
        outward = [a for a in subprocess.run(["hostname", "-I"], capture_output=True, text=True).stdout.split()
                   if "." in a and not a.startswith("127.")]
        if not outward:
            self.skipTest("this machine has no non-loopback IPv4 address")
        c = Bridge(transport="tcp")
        c.endpoint = f"tcp://{outward[0]}:{free_port()}"
        with self.assertRaises(AssertionError) as refused:
            c.start()
        self.assertIn(f"is bound to {outward[0]}:", str(refused.exception))
        c.stop()


if __name__ == "__main__":
    unittest.main()
