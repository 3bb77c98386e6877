"""run_module.py's verdicts, as CTest reads them: a module whose every test
skips (however it skips: per test, in setUpClass, in setUpModule) exits 77
(skipped), a module that runs nothing and skips nothing exits 1, a pass 0.
A fresh clone has no ../shared, so whole modules skip there (issue 25)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import tempfile
import textwrap
import unittest

RUNNER = pathlib.Path(__file__).resolve().parents[1] / "integration" / "run_module.py"

MODULES = {
    "skips_each": """
        import unittest
        class T(unittest.TestCase):
            @unittest.skip("no seed here")
            def test_a(self): pass
    """,
    "skips_class": """
        import unittest
        class T(unittest.TestCase):
            @classmethod
            def setUpClass(cls): raise unittest.SkipTest("no seed here")
            def test_a(self): pass
    """,
    "skips_module": """
        import unittest
        def setUpModule(): raise unittest.SkipTest("no seed here")
        class T(unittest.TestCase):
            def test_a(self): pass
    """,
    "empty": """
        import unittest
    """,
    "passes": """
        import unittest
        class T(unittest.TestCase):
            def test_a(self): self.assertEqual(1 + 1, 2)
            @unittest.skip("one skip among passes")
            def test_b(self): pass
    """,
    "fails": """
        import unittest
        class T(unittest.TestCase):
            def test_a(self): self.assertEqual(1 + 1, 3)
    """,
}


class RunModuleVerdicts(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        for name, text in MODULES.items():
            pathlib.Path(cls.dir.name, name + ".py").write_text(textwrap.dedent(text))

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def verdict(self, module: str) -> subprocess.CompletedProcess:
        env = dict(os.environ, PYTHONPATH=self.dir.name)
        return subprocess.run([sys.executable, str(RUNNER), module], cwd=self.dir.name, env=env,
                              capture_output=True, text=True, timeout=60)

    def test_every_way_of_skipping_is_skipped(self):
        for module in ("skips_each", "skips_class", "skips_module"):
            with self.subTest(module=module):
                done = self.verdict(module)
                self.assertEqual(done.returncode, 77, done.stdout + done.stderr)
                self.assertIn("skipped: no seed here", done.stdout)

    def test_nothing_run_and_nothing_skipped_fails(self):
        done = self.verdict("empty")
        self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
        self.assertIn("no tests ran", done.stderr)

    def test_pass_and_fail(self):
        self.assertEqual(self.verdict("passes").returncode, 0)
        self.assertEqual(self.verdict("fails").returncode, 1)


if __name__ == "__main__":
    unittest.main()
