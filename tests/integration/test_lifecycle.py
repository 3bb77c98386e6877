"""The daemon as a process: concurrency (nothing blocks another client),
agent threads and kwargs, profiles, idle collection, stdout hygiene, the
command line, shutdown and the event log surviving a restart."""

from __future__ import annotations

import json
import shutil
import tempfile
import os
import signal
import subprocess
import threading
import time
import unittest
from pathlib import Path

from harness import FAKE_AGENT, Bridge, bridge_binary, events_named


def in_background(fn, *args):
    box: dict = {}

    def run():
        try:
            box["value"] = fn(*args)
        except Exception as exc:  # surfaced by the test that joins
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, box


class Concurrency(unittest.TestCase):
    def test_two_sessions_stream_at_the_same_time(self):
        with Bridge() as b:
            a = b.chat("a", "script:stream 20 40")
            c = b.chat("c", "script:stream 20 40")
            # While a is still streaming, c has already produced text: the
            # runs overlap instead of queueing behind a global lock.
            overlap = False
            while True:
                out_a = b.request({"action": "get_output", "run_id": a["run_id"]})
                out_c = b.request({"action": "get_output", "run_id": c["run_id"]})
                if not out_a["done"] and out_c["cursor"] > 0 and not out_c["done"] and out_a["cursor"] > 0:
                    overlap = True
                if out_a["done"] and out_c["done"]:
                    break
                time.sleep(0.02)
            self.assertTrue(overlap)
            res_a = b.request({"action": "get_result", "run_id": a["run_id"]})
            res_c = b.request({"action": "get_result", "run_id": c["run_id"]})
            self.assertLess(res_c["started_at"], res_a["ended_at"])
            self.assertEqual(len(res_a["deltas"]), 20)
            self.assertEqual(len(res_c["deltas"]), 20)

    def test_chat_wait_does_not_block_other_clients(self):
        with Bridge() as b:
            thread, box = in_background(b.chat, "waiting", "script:stream 10 100", )
            waiter, wbox = in_background(lambda: b.request(
                {"action": "chat", "session_id": "w2", "message": "script:stream 10 100", "wait": True}))
            time.sleep(0.1)
            self.assertTrue(b.request({"action": "ping"})["pong"])
            quick = b.request({"action": "chat", "session_id": "quick", "message": "hi", "wait": True})
            self.assertEqual(quick["status"], "complete")
            self.assertTrue(waiter.is_alive(), "the waiting chat returned before the quick one")
            waiter.join(20)
            self.assertEqual(wbox["value"]["status"], "complete")
            thread.join(5)

    def test_slow_interrupt_does_not_block_other_clients(self):
        with Bridge() as b:
            run = b.chat("stubborn", "script:hang 1500;say done")
            time.sleep(0.1)
            thread, box = in_background(b.request, {"action": "interrupt", "session_id": "stubborn"})
            time.sleep(0.1)
            self.assertTrue(b.request({"action": "ping"})["pong"])
            self.assertTrue(thread.is_alive(), "interrupt returned before the turn stopped")
            thread.join(15)
            self.assertEqual(box["value"]["synced"], True)
            self.assertIn(b.wait_done(run["run_id"])["status"], ("interrupted", "complete"))

    def test_agent_construction_does_not_block_other_clients(self):
        with Bridge(env={"FAKE_AGENT_INIT_DELAY_MS": "1500"}) as b:
            thread, box = in_background(b.chat, "slowinit", "hi")
            time.sleep(0.2)
            self.assertTrue(b.request({"action": "ping"})["pong"])
            self.assertTrue(thread.is_alive(), "the slow chat answered before ping")
            thread.join(15)
            self.assertEqual(box["value"]["status"], "running")


class MisbehavingClients(unittest.TestCase):
    def test_half_sent_request_times_out_without_blocking_others(self):
        with Bridge(args=["--read-timeout-ms", "300"]) as b:
            stalled = b.connect()
            stalled.sendall(b'{"action": "pi')
            self.assertTrue(b.request({"action": "ping"})["pong"])
            reply = json.loads(stalled.recv(65536))
            self.assertEqual(reply, {"ok": False, "error": "no complete request line within 300 ms",
                                     "error_type": "RuntimeError"})
            stalled.close()

    def test_overlong_request_line_is_refused(self):
        with Bridge(args=["--max-line-bytes", "1000"]) as b:
            reply = b.raw_json(b'{"action": "ping", "pad": "' + b"x" * 5000 + b'"}\n')
            self.assertEqual(reply["error_type"], "ValueError")
            self.assertIn("exceeds 1000 bytes", reply["error"])
            self.assertTrue(b.request({"action": "ping", "pad": "x" * 500})["pong"])


class AgentContract(unittest.TestCase):
    def test_threads_kwargs_and_turn_preparation(self):
        with Bridge() as b:
            b.chat("t", "script:say hi;tool terminal ls", wait=True)
            b.chat("t", "again", wait=True)
            log = b.agent_log_entries()
        init = [e for e in log if e["op"] == "init"][0]
        for name in ("stream_delta_callback", "step_callback", "tool_start_callback", "session_db",
                     "ephemeral_system_prompt", "platform", "quiet_mode"):
            self.assertIn(name, init["kwargs"])
        runs = [e for e in log if e["op"] == "run"]
        self.assertEqual(len(runs), 2)
        self.assertTrue(all(r["interrupt_cleared"] for r in runs))
        self.assertTrue(all(r["HERMES_EXEC_ASK"] == "1" for r in runs))
        callbacks = [e for e in log if e["op"] == "cb"]
        stream_threads = {e["thread"] for e in callbacks if e["name"] == "stream_callback"}
        tool_threads = {e["thread"] for e in callbacks if e["name"] == "tool_start_callback"}
        self.assertTrue(stream_threads and all("_call" in t for t in stream_threads), stream_threads)
        self.assertEqual(tool_threads, {runs[0]["thread"]})
        self.assertNotIn(runs[0]["thread"], stream_threads)

    def test_profiles_get_their_own_home_and_env(self):
        b = Bridge()
        work = b.home / "profiles" / "work"
        work.mkdir(parents=True)
        (work / "config.yaml").write_text(json.dumps({"model": {"default": "work-model", "provider": "fake"}}))
        (work / ".env").write_text("WORK_KEY=work-secret\n")
        (b.home / ".env").write_text("BASE_KEY=base-secret\n")
        with b:
            work_run = b.chat("w", "script:env WORK_KEY;env BASE_KEY;env HERMES_HOME", profile="work", wait=True)
            self.assertEqual(work_run["output"],
                             f"WORK_KEY=work-secret BASE_KEY=<unset> HERMES_HOME={work} ")
            self.assertEqual(b.request({"action": "status", "session_id": "w"})["config"]["model"], "work-model")
            base_run = b.chat("d", "script:env WORK_KEY;env BASE_KEY", wait=True)
            self.assertEqual(base_run["output"], "WORK_KEY=<unset> BASE_KEY=base-secret ")

    def test_agent_stdout_goes_to_stderr(self):
        b = Bridge().start()
        b.chat("p", "script:print hello-from-the-agent;say ok", wait=True)
        b.request({"action": "shutdown"})
        b.proc.wait(10)
        self.assertEqual(b.stdout_rest(), "")
        self.assertIn("hello-from-the-agent", b.stderr())
        b.stop()

    def test_destroyed_session_keeps_its_run_in_the_log(self):
        with Bridge() as b:
            run = b.chat("gone", "script:stream 50 20")
            time.sleep(0.15)
            self.assertTrue(b.request({"action": "destroy", "session_id": "gone"})["destroyed"])
            deadline = time.monotonic() + 10
            while True:
                result = b.request({"action": "get_result", "run_id": run["run_id"]})
                if result["status"] != "running" or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            self.assertEqual(result["status"], "interrupted")
            self.assertEqual(result["result"]["interrupt_message"], "Session destroyed")
            self.assertGreater(len(result["deltas"]), 0)
            self.assertEqual(len(events_named(result["events"], "stream.delta")), len(result["deltas"]))


class IdleCollection(unittest.TestCase):
    def test_idle_sessions_release_their_agent_but_never_while_running(self):
        with Bridge(args=["--idle-timeout", "1", "--gc-interval", "1"]) as b:
            done = b.chat("idle", "hi", wait=True)
            live = b.chat("busy", "script:sleep 3000")
            time.sleep(2.5)
            # Both stay listed; the idle one lost its agent, the busy one kept it.
            ids = [s["session_id"] for s in b.request({"action": "list"})["sessions"]]
            self.assertEqual(sorted(ids), ["busy", "idle"])
            self.assertEqual(b.wait_done(live["run_id"])["status"], "complete")
            again = b.chat("idle", "script:history", wait=True)
            self.assertEqual(again["output"], "history=2 ")  # the stored conversation continues
            status = b.request({"action": "status", "session_id": "idle"})
            self.assertEqual((status["config"]["resumed"], status["config"]["resumed_message_count"]), (True, 2))
            inits = [e["session_id"] for e in b.agent_log_entries() if e["op"] == "init"]
            self.assertEqual(inits.count("idle"), 2)
            self.assertEqual(inits.count("busy"), 1)
            self.assertEqual(b.request({"action": "get_result", "run_id": done["run_id"]})["status"], "complete")


class CommandLine(unittest.TestCase):
    def run_binary(self, *args, env=None, timeout=20):
        full_env = dict(os.environ)
        full_env.update(env or {})
        return subprocess.run([str(bridge_binary()), *args], capture_output=True, text=True,
                              timeout=timeout, env=full_env)

    def test_log_lines_are_structured_and_levelled(self):
        b = Bridge().start()
        b.request({"action": "shutdown"})
        b.proc.wait(10)
        lines = b.stderr().splitlines()
        b.stop()
        self.assertTrue(any(line.startswith("hermes-bridge level=info event=log.recovered ") for line in lines), lines)
        self.assertIn("hermes-bridge level=info event=daemon.stopped", lines)
        quiet = Bridge(args=["--log-level", "warn"]).start()
        quiet.request({"action": "shutdown"})
        quiet.proc.wait(10)
        self.assertNotIn("level=info", quiet.stderr())
        quiet.stop()

    def test_help_explains_the_flags(self):
        out = self.run_binary("serve", "--help")
        self.assertEqual(out.returncode, 0)
        for flag in ("--endpoint", "--agent-root", "--hermes-home", "--db", "--idle-timeout",
                     "HERMES_AGENT_BRIDGE_ENDPOINT"):
            self.assertIn(flag, out.stdout)

    def test_bad_endpoints_fail_before_ready(self):
        out = self.run_binary("--endpoint", "udp://x", "--agent-root", str(FAKE_AGENT))
        self.assertEqual(out.returncode, 1)
        self.assertEqual(out.stdout, "")
        self.assertIn("unsupported endpoint scheme: udp://x", out.stderr)
        out = self.run_binary("--endpoint", "tcp://127.0.0.1", "--agent-root", str(FAKE_AGENT))
        self.assertIn("tcp endpoint requires a port: tcp://127.0.0.1", out.stderr)

    def test_missing_agent_root_is_a_clear_error(self):
        with Bridge() as b:
            home = b.home
        # The embedded host cannot start without the agent (the worker host
        # serves and says so at each chat: test_worker_host.py). A home of its
        # own: a shared /tmp path collects logs of other builds' schemas.
        missing_home = tempfile.mkdtemp(prefix="hb-missing-home-")
        self.addCleanup(shutil.rmtree, missing_home, True)
        out = self.run_binary("--endpoint", f"ipc:///tmp/hb-missing-{os.getpid()}.sock", "--agent-root",
                              "/nonexistent/agent", "--hermes-home", missing_home, "--agent-host", "embedded",
                              env={"HOME": "/nonexistent-home", "HERMES_AGENT_ROOT": ""})
        self.assertEqual(out.returncode, 1, out.stderr)
        self.assertIn("hermes-agent run_agent.py not found", out.stderr)
        self.assertFalse(home.exists())

    def test_started_like_the_python_script(self):
        b = Bridge()
        b.args = []
        cmd = b.command()
        b.command = lambda: [cmd[0], "/opt/studio/hermes_bridge.py"] + cmd[1:]
        with b:
            # The script's line, then what the agent runs on (which Studio does not read).
            ready = json.loads(b.ready_line)
            self.assertEqual(list(ready.items())[:2], [("event", "ready"), ("endpoint", b.endpoint)])
            self.assertEqual(list(ready), ["event", "endpoint", "agent"])
            self.assertTrue(b.ready_line.endswith("}\n") and b.ready_line.count("\n") == 1)
            self.assertTrue(b.request({"action": "ping"})["pong"])

    def test_endpoint_from_the_environment(self):
        b = Bridge()
        cmd = b.command()
        i = cmd.index("--endpoint")
        b.command = lambda: cmd[:i] + cmd[i + 2:]
        b.env = {"HERMES_AGENT_BRIDGE_ENDPOINT": b.endpoint}
        with b:
            self.assertEqual(json.loads(b.ready_line)["endpoint"], b.endpoint)


class Shutdown(unittest.TestCase):
    def test_shutdown_action_stops_and_unlinks_the_socket(self):
        b = Bridge().start()
        sock_path = Path(b.endpoint[len("ipc://"):])
        self.assertEqual(b.request({"action": "shutdown"}), {"ok": True, "status": "shutting_down"})
        self.assertEqual(b.proc.wait(10), 0)
        self.assertFalse(sock_path.exists())
        b.stop()

    def test_sigterm_drains_live_runs_and_the_log_survives_a_restart(self):
        db = Bridge().dir / "events.db"
        first = Bridge(args=["--db", str(db)]).start()
        finished = first.chat("keep", "script:say kept", wait=True)
        live = first.chat("live", "script:stream 500 20")
        time.sleep(0.3)
        first.signal(signal.SIGTERM)
        self.assertEqual(first.proc.wait(10), 0)
        first.proc.stdout.close()
        second = Bridge(args=["--db", str(db)]).start()
        try:
            again = second.request({"action": "get_result", "run_id": finished["run_id"]})
            self.assertEqual(again, finished)
            drained = second.request({"action": "get_result", "run_id": live["run_id"]})
            self.assertEqual(drained["status"], "interrupted")
            self.assertGreater(len(drained["deltas"]), 0)
            # Drained, not recovered: the run ended in the first daemon with
            # its agent's own result (the text it had streamed), and the
            # second daemon found nothing to recover.
            names = [e["event"] for e in drained["events"]]
            self.assertNotIn("bridge.recovered", names)
            self.assertIsNone(drained.get("error"), drained.get("error"))
            self.assertIsInstance(drained["result"], dict, drained["result"])
            self.assertIs(drained["result"]["interrupted"], True)
            self.assertEqual(drained["result"]["final_response"], "".join(drained["deltas"]))
            self.assertLess(len(drained["deltas"]), 500)  # cut by the drain, not finished
            self.assertIn("runs_interrupted=0", second.stderr())
        finally:
            second.stop()
            first.stop()


FAULTS = {"HERMES_BRIDGE_TEST_FAULTS": "actions"}  # the test_fault action (actors/test_faults.hpp)


class FailureIsVisible(unittest.TestCase):
    """An actor the daemon cannot run without dies: the daemon settles what
    it can, says why and exits non-zero, so its supervisor restarts it; the
    next daemon recovers from the log."""

    def lose(self, fault: str, actor: str) -> None:
        db = Bridge().dir / "events.db"
        first = Bridge(args=["--db", str(db)], env=FAULTS).start()
        second = None
        try:
            kept = first.chat("keep", "script:say kept", wait=True)
            live = first.chat("live", "script:stream 500 20")
            first.wait_event(live["run_id"], "stream.delta")
            try:
                first.request({"action": "test_fault", "fault": fault}, timeout=5)
            except (OSError, ValueError):
                pass  # the broker may be gone before it answers
            self.assertNotEqual(first.proc.wait(30), 0, first.stderr())
            log = first.stderr()
            self.assertIn(f"event=daemon.actor_died actor={actor}", log)
            self.assertIn("event=daemon.stopped", log)
            self.assertIn("exit_code=1", log)
            first.proc.stdout.close()
            second = Bridge(args=["--db", str(db)]).start()
            self.assertEqual(second.request({"action": "get_result", "run_id": kept["run_id"]}), kept)
            cut = second.request({"action": "get_result", "run_id": live["run_id"]})
            self.assertEqual(cut["status"], "interrupted")
        finally:
            if second:
                second.stop()
            first.stop()

    def test_a_dead_log_writer_stops_the_daemon_non_zero(self):
        self.lose("kill_writer", "log_writer")

    def test_a_dead_broker_stops_the_daemon_non_zero(self):
        self.lose("kill_broker", "broker")

    def test_a_reader_that_could_not_open_the_log_retries(self):
        with Bridge(env={"HERMES_BRIDGE_TEST_FAULTS": "reader_open_fails"}) as b:
            # (readers open the log as they start, beside the ready line)
            self.assertTrue(b.log_has("event=log.reader_open_failed", timeout=10), b.stderr())
            done = b.chat("s", "script:say hello", wait=True)
            self.assertEqual(done["status"], "complete", done)
            self.assertIn("hello", done["output"])
            for _ in range(4):  # every reader, in turn
                again = b.request({"action": "get_result", "run_id": done["run_id"]})
                self.assertEqual(again["status"], "complete", again)
            self.assertTrue(b.log_has("event=log.reader_opened", timeout=10), b.stderr())

    def test_without_the_fault_setting_there_is_no_fault_action(self):
        with Bridge() as b:
            reply = b.request({"action": "test_fault", "fault": "kill_writer"})
            self.assertEqual(reply["ok"], False)
            self.assertIn("unknown action", reply["error"])
            self.assertTrue(b.request({"action": "ping"})["pong"])


if __name__ == "__main__":
    unittest.main()
