"""Agents that misbehave stay contained to their run and session: one that
raises, one that ignores interrupts, one that floods text, one whose threads
outlive the turn. `destroy` always frees the session id, and other sessions
are served throughout."""

from __future__ import annotations

import time
import unittest

from harness import Bridge


class MisbehavingAgents(unittest.TestCase):
    def test_an_agent_that_ignores_interrupt_and_destroy_frees_the_session(self):
        with Bridge() as b:
            stuck = b.chat("stuck", "script:hang 3000;say finally")
            time.sleep(0.2)
            started = time.monotonic()
            self.assertTrue(b.request({"action": "destroy", "session_id": "stuck"})["destroyed"])
            self.assertLess(time.monotonic() - started, 2.0)  # destroy does not wait for the agent
            fresh = b.chat("stuck", "hello again", wait=True)  # the id is usable at once
            self.assertEqual(fresh["status"], "complete")
            self.assertEqual(b.chat("other", "meanwhile", wait=True)["status"], "complete")
            # the stubborn turn ends in its own time and its run is recorded
            done = b.wait_done(stuck["run_id"], timeout=15)
            self.assertIn(done["status"], ("interrupted", "complete"))

    def test_a_flood_of_text_is_stored_and_served(self):
        with Bridge() as b:
            flood = b.chat("flood", "script:stream 50000 0", wait=True, timeout=60)
            self.assertEqual(flood["status"], "complete")
            self.assertEqual(len(flood["deltas"]), 50000)
            tail = b.request({"action": "get_output", "run_id": flood["run_id"], "cursor": 50000,
                              "event_cursor": 100000, "include_output": False})
            self.assertEqual((tail["delta"], tail["done"]), ("", True))
            self.assertTrue(b.request({"action": "ping"})["pong"])

    def test_threads_that_outlive_the_turn_cannot_write_into_it(self):
        with Bridge() as b:
            run = b.chat("leaky", "script:leak-thread;say done", wait=True)
            time.sleep(0.6)  # the leaked thread calls back after the turn
            again = b.request({"action": "get_result", "run_id": run["run_id"]})
            self.assertEqual(again, run)  # nothing was appended after the end
            self.assertEqual(b.chat("leaky", "next", wait=True)["output"], "echo: next")

    def test_an_agent_that_raises_fails_only_its_run(self):
        with Bridge() as b:
            bad = b.chat("bad", "script:raise no good", wait=True)
            self.assertEqual((bad["status"], bad["error"]), ("error", "no good"))
            self.assertEqual(b.chat("bad", "still here", wait=True)["status"], "complete")


if __name__ == "__main__":
    unittest.main()
