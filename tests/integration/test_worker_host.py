"""The worker host (serve --agent-host worker): agents in a process per
profile on the agent's own interpreter, supervised by the daemon."""

from __future__ import annotations

import glob
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import unittest
from pathlib import Path

from harness import FAKE_AGENT, Bridge

WORKER = ["--agent-host", "worker"]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone for our purposes (the daemon reaps its own).
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def workers(b: Bridge, profile: str | None = None) -> list[dict]:
    found = b.request({"action": "health"})["agent"].get("workers", [])
    return [w for w in found if profile is None or w["profile"] == profile]


def live_pid(b: Bridge, profile: str) -> int:
    return next(w["pid"] for w in workers(b, profile) if w["alive"])


def add_profile(b: Bridge, name: str, env: dict[str, str]) -> None:
    home = b.home / "profiles" / name
    home.mkdir(parents=True)
    (home / "config.yaml").write_text((b.home / "config.yaml").read_text())
    (home / ".env").write_text("".join(f"{k}={v}\n" for k, v in env.items()))


def wait_until(pred, timeout: float = 10.0, step: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(step)
    return pred()


class VenvRoot(Bridge):
    """A bridge whose agent root is a copy of the fake agent with one of its
    packages (fake_support) only inside a real venv at <root>/venv: only the
    venv's interpreter can run it, and nothing but --agent-root points there."""

    def __init__(self, python: str = "/usr/bin/python3", **kw) -> None:
        super().__init__(**kw)
        self.root = self.dir / "agent"
        shutil.copytree(FAKE_AGENT, self.root, ignore=shutil.ignore_patterns("fake_support", "__pycache__"))
        subprocess.run([python, "-m", "venv", "--without-pip", str(self.root / "venv")], check=True)
        site = glob.glob(str(self.root / "venv" / "lib" / "python3*" / "site-packages"))[0]
        shutil.copytree(FAKE_AGENT / "fake_support", Path(site) / "fake_support",
                        ignore=shutil.ignore_patterns("__pycache__"))

    def command(self) -> list[str]:
        cmd = super().command()
        cmd[cmd.index("--agent-root") + 1] = str(self.root)
        return cmd


class WorkerHostTest(unittest.TestCase):
    def test_agent_in_a_venv_is_found_from_agent_root_alone(self):
        env = {"PYTHONPATH": "", "HERMES_AGENT_PYTHON": "", "PYTHON": ""}
        with VenvRoot(args=WORKER, env=env) as b:
            # Outside the venv the agent cannot be imported.
            probe = subprocess.run(["/usr/bin/python3", "-c", "import fake_support"], cwd=b.root,
                                   capture_output=True)
            self.assertNotEqual(probe.returncode, 0)
            agent = b.request({"action": "health"})["agent"]
            self.assertEqual(agent["host"], "worker")
            self.assertEqual(agent["python_source"], "venv")
            self.assertEqual(agent["python_command"], str(b.root / "venv" / "bin" / "python3"))
            self.assertRegex(agent["python_version"], r"^3\.\d+")
            done = b.chat("s", "hello venv", wait=True)
            self.assertEqual((done["status"], done["output"]), ("complete", "echo: hello venv"), done)
            ping = b.request({"action": "ping"})
            self.assertTrue(ping["agent_root"].endswith("/agent"))
            (w,) = [w for w in workers(b) if w["slot"] == 0]  # (slot 1: a spare, once it turned busy)
            self.assertEqual(w["python"], str(b.root / "venv" / "bin" / "python3"))
            # ping and status name the interpreter, its version and the agent's
            # (the fake agent has no pyproject.toml: no version to report)
            for where in (ping["agent"], b.request({"action": "status", "session_id": "s"})["agent"]):
                self.assertEqual((where["host"], where["python"], where["python_version"], where["agent_version"]),
                                 ("worker", w["python"], w["python_version"], None))

    def test_no_interpreter_is_an_error_at_chat_and_in_health_and_the_daemon_serves(self):
        with Bridge(args=WORKER + ["--agent-python", "/nonexistent/python3"]) as b:
            agent = b.request({"action": "health"})["agent"]
            self.assertIsNone(agent["python"])
            self.assertIn("/nonexistent/python3", agent["error"])
            reply = b.chat("s", "hello")
            self.assertFalse(reply["ok"])
            self.assertIn("/nonexistent/python3", reply["error"])
            self.assertIn("run_agent", reply["error"])
            self.assertTrue(b.request({"action": "ping"})["pong"])

    def test_no_agent_root_anywhere_is_an_error_naming_the_places_tried(self):
        b = Bridge(args=WORKER, env={"HOME": "/nonexistent-home", "HERMES_AGENT_ROOT": "", "HERMES_BIN": "/nonexistent/hermes"})
        cmd = b.command()
        cmd[cmd.index("--agent-root") + 1] = "/nonexistent/agent"
        b.command = lambda: cmd
        with b:
            reply = b.chat("s", "hello")
            self.assertFalse(reply["ok"])
            self.assertIn("No hermes-agent source tree (run_agent.py) in: /nonexistent/agent", reply["error"])
            self.assertIn("/usr/local/lib/hermes-agent", reply["error"])
            self.assertIn("--agent-root", b.request({"action": "health"})["agent"]["error"])

    def test_two_profiles_stream_at_once_and_never_see_each_others_env(self):
        with Bridge(args=WORKER) as b:
            add_profile(b, "alpha", {"ONLY_ALPHA": "a-secret", "SHARED": "from-alpha"})
            add_profile(b, "beta", {"ONLY_BETA": "b-secret", "SHARED": "from-beta"})
            script = "script:pid;env ONLY_ALPHA;env ONLY_BETA;env SHARED;stream 20 20;env ONLY_ALPHA;env ONLY_BETA;env SHARED"
            runs = {p: b.chat(f"s-{p}", script, profile=p)["run_id"] for p in ("alpha", "beta")}
            out = {p: b.wait_done(r) for p, r in runs.items()}
            a, z = out["alpha"]["output"], out["beta"]["output"]
            self.assertEqual(a.count("ONLY_ALPHA=a-secret"), 2, a)
            self.assertEqual(a.count("ONLY_BETA=<unset>"), 2, a)
            self.assertEqual(a.count("SHARED=from-alpha"), 2, a)
            self.assertEqual(z.count("ONLY_BETA=b-secret"), 2, z)
            self.assertEqual(z.count("ONLY_ALPHA=<unset>"), 2, z)
            self.assertEqual(z.count("SHARED=from-beta"), 2, z)
            pid = lambda text: text.split("pid=")[1].split()[0]
            self.assertNotEqual(pid(a), pid(z))  # a process each
            self.assertEqual({w["profile"] for w in workers(b)}, {"default", "alpha", "beta"})  # default: started ahead

    def test_a_slow_turn_in_one_profile_does_not_delay_another(self):
        with Bridge(args=WORKER) as b:
            add_profile(b, "slow", {})
            add_profile(b, "fast", {})
            b.chat("warm", "hi", profile="fast", wait=True)  # its worker is up
            # The slow profile's turn holds its worker's thread for 8 s: the
            # fast one is done while it still runs (no timing compared, so a
            # slow machine or a sanitizer build cannot make it flake).
            slow = b.chat("slow", "script:hang 8000;say done", profile="slow")
            b.wait_event(slow["run_id"], "bridge.context.ready")
            fast = b.chat("warm", "script:say quick", profile="fast", wait=True)
            self.assertEqual(fast["output"], "quick")
            self.assertFalse(b.request({"action": "get_output", "run_id": slow["run_id"]})["done"],
                             "the fast profile's turn waited for the slow one")
            self.assertEqual(b.wait_done(slow["run_id"], timeout=60)["status"], "complete")

    def test_kill_9_of_one_worker_ends_only_its_runs_and_its_session_resumes(self):
        with Bridge(args=WORKER) as b:
            add_profile(b, "doomed", {})
            add_profile(b, "other", {})
            b.chat("d", "script:say first turn", profile="doomed", wait=True)
            runs = {p: b.chat(s, "script:stream 60 25", profile=p)["run_id"]
                    for p, s in (("doomed", "d"), ("other", "o"))}
            self.assertTrue(wait_until(
                lambda: b.request({"action": "get_output", "run_id": runs["doomed"]})["cursor"] >= 5))
            victim = live_pid(b, "doomed")
            os.kill(victim, signal.SIGKILL)
            killed = b.wait_done(runs["doomed"])
            self.assertEqual(killed["status"], "error")
            self.assertIn("killed by signal 9 (SIGKILL)", killed["error"])
            # Everything it streamed before it died is there, in order, nothing after.
            n = killed["cursor"]
            self.assertGreaterEqual(n, 5)
            self.assertEqual(killed["seen_text"], "".join(f"d{i} " for i in range(n)))
            other = b.wait_done(runs["other"])
            self.assertEqual(other["status"], "complete")
            self.assertEqual(other["cursor"], 60)
            self.assertEqual(other["seen_text"], "".join(f"d{i} " for i in range(60)))
            # The session resumes in a new worker with the history the log has.
            again = b.chat("d", "script:history;pid", profile="doomed", wait=True)
            self.assertEqual(again["status"], "complete", again)
            self.assertIn("history=2 ", again["output"])
            self.assertNotIn(f"pid={victim} ", again["output"])
            status = b.request({"action": "status", "session_id": "d"})
            self.assertTrue(status["config"]["resumed"])
            # The death is on record: on the slot that was restarted, or (a spare
            # took the session) on the dead one.
            self.assertTrue(any("SIGKILL" in w.get("last_death", "") + w.get("exit", "")
                                for w in workers(b, "doomed")), workers(b, "doomed"))

    def test_a_tool_that_exits_its_process_ends_the_run_with_the_exit_code(self):
        with Bridge(args=WORKER) as b:
            run = b.chat("x", "script:say before ;exit 7")
            done = b.wait_done(run["run_id"])
            self.assertEqual(done["status"], "error")
            self.assertIn("exit code 7", done["error"])
            self.assertEqual(done["seen_text"], "before")
            self.assertEqual(b.chat("x", "after", wait=True)["output"], "echo: after")

    def test_a_worker_that_keeps_dying_is_restarted_later_and_later(self):
        # One slot: automatic, a warm spare would take the sessions of a slot waiting to restart.
        with Bridge(args=WORKER + ["--workers-per-profile", "1"]) as b:
            for _ in range(2):  # the first death costs nothing: the next chat starts a worker at once
                self.assertEqual(b.chat("x", "script:exit 3", wait=True)["status"], "error")
            refused = b.chat("x", "hi")
            self.assertFalse(refused["ok"])
            self.assertIn("keeps dying (2 times in a row, last: exit code 3)", refused["error"])
            (w,) = workers(b, "default")
            self.assertEqual((w["crashes_in_a_row"], w["last_death"]), (2, "exit code 3"))
            time.sleep(0.6)
            self.assertEqual(b.chat("x", "hi", wait=True)["output"], "echo: hi")

    def test_a_question_pending_when_the_worker_dies_is_settled(self):
        with Bridge(args=WORKER) as b:
            run = b.chat("q", "script:approve-cli rm -rf /")["run_id"]
            b.wait_event(run, "approval.requested")
            os.kill(live_pid(b, "default"), signal.SIGKILL)
            done = b.wait_done(run)
            self.assertEqual(done["status"], "error")
            names = [e["event"] for e in done["seen_events"]]
            self.assertIn("approval.resolved", names)
            self.assertEqual(b.request({"action": "health"})["pending_questions"], 0)

    def test_workers_leave_when_the_daemon_is_killed(self):
        with Bridge(args=WORKER + ["--worker-orphan-timeout-s", "0"]) as b:
            run = b.chat("s", "script:stream 500 20")["run_id"]
            b.wait_event(run, "stream.delta")
            pid = live_pid(b, "default")
            b.proc.kill()
            b.proc.wait()
            started = time.monotonic()
            self.assertTrue(wait_until(lambda: not alive(pid), timeout=10), "the worker outlived its daemon")
            self.assertLess(time.monotonic() - started, 6)

    def test_a_graceful_stop_stops_the_workers(self):
        with Bridge(args=WORKER) as b:
            b.chat("s", "hi", wait=True)
            pid = live_pid(b, "default")
            b.request({"action": "shutdown"})
            b.proc.wait(10)
            self.assertTrue(wait_until(lambda: not alive(pid), timeout=5))

    def test_the_default_profiles_worker_is_started_ahead_of_the_first_chat(self):
        with Bridge(args=WORKER) as b:
            self.assertTrue(wait_until(lambda: any(w["alive"] for w in workers(b, "default"))))
            self.assertEqual(b.chat("s", "hi", wait=True)["output"], "echo: hi")
            (w,) = [w for w in workers(b, "default") if w["slot"] == 0]  # (slot 1: a spare, once it turned busy)
            self.assertEqual(w["starts"], 1)
            self.assertEqual(b.request({"action": "status", "session_id": "s"})["agent"]["worker_pid"], w["pid"])

    def test_a_worker_lets_go_of_a_turns_frames_once_the_log_holds_them(self):
        with Bridge(args=WORKER + ["--worker-heartbeat-s", "0.1"]) as b:
            run = b.chat("s", "script:stream 300 0;sleep 20000;say done")["run_id"]
            self.assertTrue(wait_until(lambda: b.request({"action": "get_output", "run_id": run})["cursor"] >= 300))
            pid = b.request({"action": "status", "session_id": "s"})["agent"]["worker_pid"]
            kept = lambda: next(w for w in workers(b) if w.get("pid") == pid).get("unacknowledged_frames")
            # The turn still runs; its 300 deltas are committed, and the worker was told so.
            self.assertTrue(wait_until(lambda: kept() == 0, timeout=2.5), kept())
            self.assertTrue(next(w for w in workers(b) if w.get("pid") == pid)["live_turns"] == 1)
            b.request({"action": "interrupt", "session_id": "s"})
            b.wait_done(run)
            self.assertTrue(wait_until(lambda: kept() == 0), kept())  # its end too

    def test_the_commits_of_several_turns_reach_their_worker_together(self):
        # One worker, two streaming turns: the daemon gathers both turns'
        # `committed` frames and writes them as one; the worker must take
        # each of them from that write.
        with Bridge(args=WORKER + ["--workers-per-profile", "1", "--worker-heartbeat-s", "0.1"]) as b:
            runs = [b.chat(s, "script:stream 300 0;sleep 20000;say done")["run_id"] for s in ("one", "two")]
            for run in runs:
                self.assertTrue(wait_until(lambda: b.request({"action": "get_output", "run_id": run})["cursor"] >= 300))
            (w,) = [w for w in workers(b, "default") if w["alive"]]
            kept = lambda: next(x for x in workers(b) if x.get("pid") == w["pid"]).get("unacknowledged_frames")
            self.assertTrue(wait_until(lambda: kept() == 0, timeout=2.5), kept())
            self.assertEqual(next(x for x in workers(b) if x.get("pid") == w["pid"])["live_turns"], 2)
            for s, run in zip(("one", "two"), runs):
                b.request({"action": "interrupt", "session_id": s})
                b.wait_done(run)
            self.assertTrue(wait_until(lambda: kept() == 0), kept())

    def test_several_workers_per_profile_share_its_sessions(self):
        with Bridge(args=WORKER + ["--workers-per-profile", "2"]) as b:
            pids = {s: b.chat(s, "script:pid", wait=True)["output"] for s in ("one", "two")}
            self.assertEqual(len(set(pids.values())), 2, pids)
            self.assertEqual(len([w for w in workers(b) if w["alive"]]), 2)
            # ping reports them as Hermes Studio's broker does, keyed per worker;
            # status says which one hosts a session
            ping = b.request({"action": "ping"})
            self.assertEqual(ping["workers"], {"default": True})
            details = ping["worker_details"]
            self.assertEqual(sorted(details), ["default", "default#1"])
            by_pid = {f"pid={d['pid']} ": key for key, d in details.items()}
            for key, d in details.items():
                self.assertEqual((d["running"], d["profile"], d["endpoint"]), (True, "default", "socketpair"))
                self.assertLessEqual(abs(d["last_used_at"] - time.time()), 60)
            for session, pid in pids.items():
                agent = b.request({"action": "status", "session_id": session})["agent"]
                self.assertEqual((agent["worker_key"], f"pid={agent['worker_pid']} ", agent["loaded"]),
                                 (by_pid[pid], pid, True))

    def test_skills_and_mcp_servers_change_in_every_worker_of_a_profile(self):
        # Each worker process has its own skill table and MCP servers: a
        # reload or a server edit, done in whichever worker, reaches them all.
        with Bridge(args=WORKER + ["--workers-per-profile", "2"], env={"HB_TEST_MCP": "from-env"}) as b:
            def add_skill(name: str) -> None:
                (b.home / "skills" / name).mkdir(parents=True)
                (b.home / "skills" / name / "SKILL.md").write_text(f"description: {name}\n")

            sessions = {s: b.chat(s, "script:pid", wait=True)["output"] for s in ("one", "two")}
            self.assertEqual(len(set(sessions.values())), 2, sessions)
            cmd = lambda s, text: b.request({"action": "command", "session_id": s, "command": text})
            add_skill("review")
            for s in sessions:  # each worker has scanned its skills (an empty table is scanned on every use)
                self.assertEqual(cmd(s, "/review it")["message"], "[skill review] it")
            add_skill("deploy")
            reloaded = b.request({"action": "skills_reload"})
            self.assertEqual([a["name"] for a in reloaded["added"]], ["deploy"])
            for s in sessions:
                self.assertEqual((cmd(s, "/reload-skills")["added"], cmd(s, "/deploy now")["message"]),
                                 ([], "[skill deploy] now"), s)
            add_skill("ops")  # a session's own /reload-skills too
            self.assertEqual([a["name"] for a in cmd("one", "/reload-skills")["added"]], ["ops"])
            self.assertEqual(cmd("two", "/ops x")["message"], "[skill ops] x")
            mcp = lambda s: b.chat(s, "script:mcp", wait=True)["output"]
            # connected as the agent connects it: ${VAR}s filled in, in every worker
            server = lambda tool: {"command": "${HB_TEST_MCP}", "fake_tools": [{"name": tool}]}
            for action, config, expected in (("mcp_server_add", server("read"), "mcp=web:read@from-env "),
                                             ("mcp_server_update", server("write"), "mcp=web:write@from-env "),
                                             ("mcp_server_remove", None, "mcp= ")):
                request = {"action": action, "name": "web", **({"config": config} if config else {})}
                self.assertTrue(b.request(request)["ok"])
                for s in sessions:
                    self.assertTrue(wait_until(lambda: mcp(s) == expected), (action, s, mcp(s)))

    def test_an_idle_worker_exits_and_comes_back_on_demand(self):
        with Bridge(args=WORKER + ["--worker-idle-timeout", "1"]) as b:
            b.chat("s", "hi", wait=True)
            pid = live_pid(b, "default")
            b.request({"action": "destroy", "session_id": "s"})
            self.assertTrue(wait_until(lambda: not alive(pid), timeout=10))
            self.assertEqual(b.chat("t", "back", wait=True)["output"], "echo: back")

    def test_a_worker_over_its_memory_limit_is_recycled_between_turns(self):
        with Bridge(args=WORKER + ["--worker-max-rss-mb", "1"]) as b:  # any worker is over 1 MB
            first = b.chat("s", "script:pid", wait=True)["output"]
            self.assertTrue(wait_until(lambda: not alive(int(first.split("=")[1])), timeout=10))
            again = b.chat("s", "script:pid;history", wait=True)
            self.assertEqual(again["status"], "complete", again)
            self.assertNotEqual(again["output"].split()[0], first.split()[0])
            self.assertIn("history=2 ", again["output"])  # resumed from the log

    def test_the_agents_stdout_never_reaches_the_daemons(self):
        with Bridge(args=WORKER) as b:
            b.chat("p", "script:print to-stdout;say ok", wait=True)
            b.request({"action": "shutdown"})
            b.proc.wait(10)
            self.assertNotIn("to-stdout", b.stdout_rest())
            self.assertIn("to-stdout", b.stderr())


class EmbeddedHostWithAVenv(unittest.TestCase):
    """The embedded host borrows the agent's venv when it is of its own
    Python version (one of another version is refused: in
    test_worker_other_python, since not every machine has another Python)."""

    def test_a_venv_of_the_daemons_python_lends_its_site_packages(self):
        with VenvRoot(args=["--agent-host", "embedded"], env={"PYTHONPATH": ""}) as b:
            done = b.chat("s", "hello embedded", wait=True)
            self.assertEqual((done["status"], done["output"]), ("complete", "echo: hello embedded"), done)


if __name__ == "__main__":
    unittest.main()
