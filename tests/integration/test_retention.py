"""Retention through the daemon: finished runs past the limit lose their
output and say so; a session's latest run and live runs are kept."""

from __future__ import annotations

import time
import unittest

from harness import Bridge


class Retention(unittest.TestCase):
    def test_old_runs_are_pruned_with_a_clear_error(self):
        # 0.00002 days is about 1.7 s.
        with Bridge(args=["--retain-days", "0.00002", "--prune-interval", "0.2"]) as b:
            old = [b.chat("a", f"turn {i}", wait=True)["run_id"] for i in range(3)]
            live = b.chat("b", "script:sleep 4000")["run_id"]
            time.sleep(3.0)
            for run_id in old[:2]:
                for action in ("get_result", "get_output"):
                    reply = b.request({"action": action, "run_id": run_id, "cursor": 1})
                    self.assertEqual(reply["ok"], False)
                    self.assertEqual(reply["error_type"], "RunPruned")
                    self.assertIn(f"run {run_id} was pruned", reply["error"])
            latest = b.request({"action": "get_result", "run_id": old[2]})
            self.assertEqual((latest["status"], latest["output"]), ("complete", "echo: turn 2"))
            self.assertEqual(b.request({"action": "get_output", "run_id": live})["done"], False)
            # the session's history is untouched
            history = b.request({"action": "get_history", "session_id": "a"})["history"]
            self.assertEqual(history[-1]["content"], "echo: turn 2")
            self.assertEqual(b.wait_done(live)["status"], "complete")


if __name__ == "__main__":
    unittest.main()
