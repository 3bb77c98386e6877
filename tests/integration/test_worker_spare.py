"""The worker host's automatic worker count (--workers-per-profile auto, the
default): sessions only ever go to a worker that has imported the agent, a
spare is warmed in the background as soon as the first worker is warm and
again whenever the warm ones are busy, and the caps hold. A fixed count
still means that many workers."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import unittest
from pathlib import Path

from harness import Bridge

HOST = ["--agent-host", "worker"]
WORKER = HOST + ["--workers-per-profile", "auto"]  # the default, said out loud
# The real agent imports for seconds; so does the fake one here.
SLOW_IMPORT = {"FAKE_AGENT_IMPORT_DELAY_MS": "5000"}


def workers(b: Bridge, profile: str = "default") -> list[dict]:
    return [w for w in b.request({"action": "health"})["agent"]["workers"] if w["profile"] == profile]


def wait_until(pred, timeout: float = 30.0, step: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = pred()
        if got:
            return got
        time.sleep(step)
    return pred()


def warm_pids(b: Bridge, profile: str = "default") -> set[int]:
    return {w["pid"] for w in workers(b, profile) if w["alive"] and w["warm"]}


def hosted_by(b: Bridge, session: str) -> tuple[str, int]:
    agent = b.request({"action": "status", "session_id": session})["agent"]
    return agent["worker_key"], agent["worker_pid"]


@unittest.skipIf(len(os.sched_getaffinity(0)) < 2, "one core: the automatic count is one worker, no spare")
class AutomaticWorkers(unittest.TestCase):
    def test_a_spare_is_warm_before_the_first_chat_and_a_second_concurrent_session_takes_it(self):
        with Bridge() as b:  # the default flags
            both = wait_until(lambda: len(warm_pids(b)) == 2 and warm_pids(b))
            self.assertEqual(len(both), 2, workers(b))
            a = b.chat("a", "script:sleep 60000;say a")["run_id"]  # busy: its worker has a live turn
            a_pid = hosted_by(b, "a")[1]
            # The second session goes to the other one, warm before either came.
            (spare,) = both - {a_pid}
            self.assertEqual(b.chat("b", "script:pid", wait=True)["output"], f"pid={spare} ")
            # Both busy at once: the cap (two cores here, or fewer) starts no third.
            b2 = b.chat("b", "script:sleep 60000;say b")["run_id"]
            time.sleep(0.5)
            if len(os.sched_getaffinity(0)) == 2:
                self.assertEqual(len(workers(b)), 2, workers(b))
            for s, run in (("a", a), ("b", b2)):
                b.request({"action": "interrupt", "session_id": s})
                b.wait_done(run)
            for w in workers(b):
                self.assertGreater(w["rss_mb"], 1, w)  # health says what each one costs

    def test_a_spare_imports_the_agent_nicer_and_serves_at_the_first_workers_priority(self):
        notes = Path(tempfile.mkdtemp(prefix="hb-nice-"))
        self.addCleanup(shutil.rmtree, notes, True)
        with Bridge(env={"FAKE_AGENT_IMPORT_NOTE": str(notes / "import")}) as b:  # the default flags
            both = wait_until(lambda: len(warm_pids(b)) == 2 and warm_pids(b))
            self.assertEqual(len(both), 2, workers(b))
            # The first worker imports at the daemon's priority: sessions wait
            # for it. The spare, started once the first is warm, 10 nicer.
            imported = {pid: int((notes / f"import.{pid}").read_text()) for pid in both}
            first, spare = sorted(both, key=imported.get)
            self.assertEqual(imported[spare] - imported[first], 10, imported)
            # Only its warm-up thread: the process (its reading thread, the
            # threads its turns run on) keeps the first one's priority.
            def nice(pid: int) -> int:
                return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[16])
            self.assertEqual(nice(spare), nice(first))
            self.assertEqual(nice(first), imported[first])

    def test_a_spare_is_warmed_again_when_every_warm_worker_is_busy(self):
        with Bridge(args=WORKER + ["--worker-idle-timeout", "1"]) as b:
            wait_until(lambda: len(warm_pids(b)) == 2)
            # Neither has a session: both retire when idle, as any idle worker.
            self.assertTrue(wait_until(lambda: not [w for w in workers(b) if w["alive"]], timeout=60), workers(b))
            a = b.chat("a", "script:sleep 60000;say a")["run_id"]  # starts one, and waits for it
            kept = hosted_by(b, "a")[1]
            spare = wait_until(lambda: warm_pids(b) - {kept})
            self.assertEqual(len(spare), 1, workers(b))
            self.assertEqual(b.chat("b", "script:pid", wait=True)["output"], f"pid={spare.pop()} ")
            b.request({"action": "interrupt", "session_id": "a"})
            b.wait_done(a)

    def test_a_session_started_while_a_worker_is_still_importing_is_placed_on_a_ready_one(self):
        with Bridge(args=WORKER, env=SLOW_IMPORT) as b:
            (ready,) = wait_until(lambda: warm_pids(b), timeout=60)
            a = b.chat("a", "script:sleep 60000;say a")["run_id"]
            # The spare started once the first was warm, and imports for seconds.
            wait_until(lambda: len([w for w in workers(b) if w["alive"]]) == 2)
            out = b.chat("b", "script:pid", wait=True)  # placed now, while the spare imports
            if not [w for w in workers(b) if w["alive"] and not w["warm"]]:
                self.skipTest("the spare finished importing before the second session came (a very slow machine)")
            self.assertEqual(out["output"], f"pid={ready} ")
            self.assertEqual(hosted_by(b, "b"), ("default", ready))
            b.request({"action": "interrupt", "session_id": "a"})
            b.wait_done(a)

    def test_no_spare_past_max_workers_and_a_spare_makes_room_for_a_profile_that_needs_one(self):
        with Bridge(args=WORKER + ["--max-workers", "2"]) as b:
            (b.home / "profiles" / "other").mkdir(parents=True)
            (b.home / "profiles" / "other" / "config.yaml").write_text((b.home / "config.yaml").read_text())
            wait_until(lambda: len(warm_pids(b)) == 2)
            a = b.chat("a", "script:sleep 60000;say a")["run_id"]
            # Two workers in all: the other profile's first session takes the spare's place.
            self.assertEqual(b.chat("o", "script:pid", wait=True, profile="other")["status"], "complete")
            alive = [w for w in b.request({"action": "health"})["agent"]["workers"] if w["alive"]]
            self.assertEqual(sorted(w["profile"] for w in alive), ["default", "other"], alive)
            self.assertEqual({w["pid"] for w in alive if w["profile"] == "default"}, {hosted_by(b, "a")[1]})
            b.request({"action": "interrupt", "session_id": "a"})
            b.wait_done(a)

    def test_a_single_worker_cap_starts_no_spare(self):
        with Bridge(args=WORKER + ["--max-workers", "1"]) as b:
            (pid,) = wait_until(lambda: warm_pids(b))
            a = b.chat("a", "script:sleep 60000;say a")["run_id"]
            self.assertEqual(b.chat("b", "script:pid", wait=True)["output"], f"pid={pid} ")
            # A spare would have had its slot from the moment A's turn started.
            self.assertEqual(len(workers(b)), 1, workers(b))
            b.request({"action": "interrupt", "session_id": "a"})
            b.wait_done(a)


class FixedWorkers(unittest.TestCase):
    def test_a_fixed_count_gives_that_many_workers_and_no_spare(self):
        with Bridge(args=HOST + ["--workers-per-profile", "3"]) as b:
            wait_until(lambda: warm_pids(b))
            time.sleep(0.3)
            # Started on demand: the prestarted one is up, the other slots are neither up nor on their way.
            self.assertEqual(sorted((w["slot"], w["alive"], w["starting"]) for w in workers(b)),
                             [(0, True, False), (1, False, False), (2, False, False)])
            runs = [b.chat(s, "script:sleep 60000")["run_id"] for s in ("one", "two", "three")]
            pids = {hosted_by(b, s)[1] for s in ("one", "two", "three")}
            self.assertEqual(len(pids), 3)
            self.assertEqual(sorted(w["slot"] for w in workers(b)), [0, 1, 2])  # all busy, still three
            for s, run in zip(("one", "two", "three"), runs):
                b.request({"action": "interrupt", "session_id": s})
                b.wait_done(run)

    def test_an_unknown_count_is_refused(self):
        for bad in ("0", "many"):
            b = Bridge(args=HOST + ["--workers-per-profile", bad])
            with self.assertRaises(AssertionError):
                b.start()
            self.assertIn("workers-per-profile", b.stderr())


if __name__ == "__main__":
    unittest.main()
