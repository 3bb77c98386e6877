"""The embedded host refuses an agent venv of another Python version,
naming both. Needs a second Python (pyenv's); in a module of its own so
that, on a machine without one, CTest reports it skipped."""

from __future__ import annotations

import glob
import unittest

from test_worker_host import VenvRoot


class EmbeddedHostWithAnotherPython(unittest.TestCase):
    def test_a_venv_of_another_python_is_a_clear_error(self):
        other = sorted(glob.glob("/root/.pyenv/versions/3.1[2-9]*/bin/python3"))
        if not other:
            self.skipTest("no Python other than 3.11 here to make a venv with")
        b = VenvRoot(python=other[0], args=["--agent-host", "embedded"])
        try:
            with self.assertRaises(AssertionError) as caught:
                b.start()
            message = str(caught.exception)
            self.assertIn("is Python 3.1", message)
            self.assertIn("the embedded host runs Python 3.11", message)
            self.assertIn("--agent-host worker", message)
        finally:
            b.stop()


if __name__ == "__main__":
    unittest.main()
