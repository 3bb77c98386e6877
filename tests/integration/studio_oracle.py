"""Runs the differential test against Hermes Studio's own bridge
(studio_differential.StudioDifferentialTest) as a CTest test of its own, so
that CTest reports it skipped, not passed, when the bridge is not there.

Run: HERMES_STUDIO_BRIDGE=$(scripts/studio-oracle) /usr/bin/python3 tests/integration/studio_oracle.py
"""

import os
import sys
import unittest
from pathlib import Path

SKIP = 77  # CTest's SKIP_RETURN_CODE for this test

if __name__ == "__main__":
    path = os.environ.get("HERMES_STUDIO_BRIDGE", "")
    if not path or not Path(path).exists():
        print("skipped: Hermes Studio's bridge is not available; set HERMES_STUDIO_BRIDGE to its "
              "hermes_bridge.py (scripts/studio-oracle extracts it from a fetched EKKOLearnAI/hermes-studio)")
        sys.exit(SKIP)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    suite = unittest.defaultTestLoader.loadTestsFromName("studio_differential.StudioDifferentialTest")
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    sys.exit(0 if result.wasSuccessful() and not result.skipped else 1)
