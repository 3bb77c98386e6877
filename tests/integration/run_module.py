"""Runs one integration test module for CTest and says how it went in the
exit code: 0 passed, 1 failed, 77 (CTest's SKIP_RETURN_CODE) when every test
in it was skipped, so that CTest reports the module skipped rather than
passed. The reasons for every skip are printed at the end either way.

    python3 run_module.py test_disk_full [unittest names in it...]
"""

from __future__ import annotations

import sys
import unittest

SKIPPED = 77


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: run_module.py MODULE [TEST...]", file=sys.stderr)
        return 2
    module, names = argv[1], argv[2:]
    loader = unittest.defaultTestLoader
    suite = loader.loadTestsFromNames([f"{module}.{n}" for n in names] if names else [module])
    result = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(suite)
    sys.stdout.flush()
    reasons = sorted({reason for _, reason in result.skipped})
    for reason in reasons:
        print(f"skipped: {reason}")
    if not result.wasSuccessful():
        return 1
    # A class whose setUpClass skips (or a module whose setUpModule does)
    # counts a skip but no test run, so compare what passed, not the two
    # counts; a module with neither a test nor a skip is a mistake.
    if result.testsRun == 0 and not result.skipped:
        print(f"{module}: no tests ran", file=sys.stderr)
        return 1
    if result.testsRun - len(result.skipped) <= 0:
        print(f"{module}: every test skipped (reported to CTest as skipped)")
        return SKIPPED
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
