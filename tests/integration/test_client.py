"""The terminal client (`hermes-bridge chat`, `call`) against a running
daemon, and recorded runs replayed through the daemon (`chat` with
"replay")."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import time
import unittest

from harness import Bridge, bridge_binary, events_named


def client(bridge: Bridge, *args: str, stdin: str | None = None, timeout: float = 30):
    return subprocess.run([str(bridge_binary()), *args, "--endpoint", bridge.endpoint], input=stdin,
                          capture_output=True, text=True, timeout=timeout)


class Call(unittest.TestCase):
    def test_one_raw_request(self):
        with Bridge() as b:
            out = client(b, "call", '{"action": "ping"}')
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertTrue(json.loads(out.stdout)["pong"])
            out = client(b, "call", stdin='{"action": "nope"}\n')
            self.assertEqual(out.returncode, 1)
            self.assertEqual(json.loads(out.stdout)["error"], "unknown action: nope")

    def test_no_daemon_is_exit_code_6(self):
        out = subprocess.run([str(bridge_binary()), "call", '{"action": "ping"}', "--endpoint",
                              "ipc:///tmp/hermes-bridge-nobody-here.sock"], capture_output=True, text=True)
        self.assertEqual(out.returncode, 6)
        self.assertIn("no daemon answers", out.stderr)


class Chat(unittest.TestCase):
    def test_streams_a_turn_and_answers_approvals(self):
        with Bridge() as b:
            out = client(b, "chat", "--session", "cli", "--approve", "once",
                         "script:say hello ;tool terminal ls;approve-gw rm -rf /;say after")
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn("hello", out.stdout)
            self.assertIn("terminal", out.stdout)
            self.assertIn("choice=once", out.stdout)
            self.assertIn("after", out.stdout)
            self.assertIn("[complete]", out.stderr)
            denied = client(b, "chat", "--session", "cli", "--approve", "deny", "script:approve-gw rm -rf /")
            self.assertIn("choice=deny", denied.stdout)

    def test_a_session_continues_its_conversation(self):
        # hermes-agent remembers nothing between turns by itself: the client
        # sends the conversation, as Hermes Studio does.
        with Bridge() as b:
            self.assertEqual(client(b, "chat", "--session", "talk", "first").returncode, 0)
            second = client(b, "chat", "--session", "talk", "script:history")
            self.assertEqual(second.returncode, 0, second.stderr)
            self.assertIn("history=2", second.stdout)
            history = b.request({"action": "get_history", "session_id": "talk"})["history"]
            self.assertEqual([m["content"] for m in history if m["role"] == "user"], ["first", "script:history"])

    def test_message_from_stdin(self):
        with Bridge() as b:
            out = client(b, "chat", stdin="from a pipe\n")
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn("echo: from a pipe", out.stdout)

    def test_ctrl_c_interrupts_the_run(self):
        with Bridge() as b:
            proc = subprocess.Popen([str(bridge_binary()), "chat", "--session", "stopme", "--endpoint", b.endpoint,
                                     "script:stream 500 20"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True)
            # Ctrl-C once the run is under way (the client names it on stderr):
            # a fixed sleep was too short for a client built with sanitizers.
            started = ""
            deadline = time.monotonic() + 30
            while "run " not in started and time.monotonic() < deadline:
                if select.select([proc.stderr], [], [], 1.0)[0]:
                    chunk = os.read(proc.stderr.fileno(), 4096)  # unbuffered: communicate() reads on
                    if not chunk:
                        break
                    started += chunk.decode()
            self.assertIn("run ", started, "the client never said which run it started")
            time.sleep(0.3)  # some of the stream first
            proc.send_signal(signal.SIGINT)
            stdout, rest = proc.communicate(timeout=20)
            stderr = started + rest
            self.assertEqual(proc.returncode, 130, stderr)
            self.assertIn("[interrupting", stderr)
            self.assertIn("[interrupted]", stderr)
            run_id = stderr.split("run ")[1].split("]")[0]
            self.assertEqual(b.request({"action": "get_result", "run_id": run_id})["status"], "interrupted")


# The command an agent asks to run, and what a terminal shows when it is
# printed as is: the carriage return and erase-line leave only "ls -la".
HIDDEN = "rm -rf ~/x\r\x1b[2Kls -la"
SHOWN = "rm -rf ~/x\\x0d\\x1b[2Kls -la"


def on_a_terminal(args: list[str], answer: bytes, until: bytes, timeout: float = 30) -> tuple[bytes, int]:
    """Runs the client with a pseudo-terminal as its controlling terminal
    (what /dev/tty opens), types `answer` once `until` has appeared, and
    returns everything it wrote there and its exit code."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: exec at once, never return into the test
        try:
            os.execv(args[0], args)
        finally:
            os._exit(127)
    seen, answered = b"", False
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.2)
            if not ready:
                continue
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # EIO: the child closed its side
                break
            if not chunk:
                break
            seen += chunk
            if not answered and until in seen:
                os.write(fd, answer)
                answered = True
    finally:
        os.close(fd)
    _, status = os.waitpid(pid, 0)
    return seen, os.waitstatus_to_exitcode(status)


class ControlCharacters(unittest.TestCase):
    """What an agent sends is shown, not obeyed: the terminal client makes
    controls visible and quotes the command it asks about (issue 21, item 10)."""

    def test_the_command_to_approve_is_shown_quoted_with_its_controls_visible(self):
        with Bridge() as b:
            args = [str(bridge_binary()), "chat", "--session", "tty", "--endpoint", b.endpoint,
                    f"script:approve-gw {HIDDEN};say after"]
            seen, code = on_a_terminal(args, b"d\n", until=b"[d]eny: ")
            text = seen.decode(errors="replace")
            self.assertEqual(code, 0, text)
            # the terminal turns \n into \r\n: the prompt's lines, the command on one of its own
            self.assertIn(f"Approve this command?\r\n  '{SHOWN}'\r\n[o]nce, [s]ession, [a]lways, [d]eny: ", text)
            self.assertIn(f"[approval requested] {SHOWN}", text)
            self.assertNotIn("\x1b[2K", text)
            self.assertIn("choice=deny", text)

    def test_agent_text_tool_output_and_approvals_are_shown_visibly(self):
        with Bridge() as b:
            out = subprocess.run([str(bridge_binary()), "chat", "--endpoint", b.endpoint, "--session", "esc",
                                  "--approve", "deny", "script:say red \x1b[31mtext\x07 ;tool terminal \x1b[8mhidden\x07;"
                                  f"approve-gw {HIDDEN};say bye\u009b2J"], capture_output=True, timeout=30)
            stdout, stderr = out.stdout.decode(), out.stderr.decode()  # bytes: a CR must not pass as a newline
            self.assertEqual(out.returncode, 0, stderr)
            self.assertIn("red \\x1b[31mtext\\x07", stdout)
            self.assertIn("ran terminal: \\x1b[8mhidden\\x07", stdout)
            self.assertIn(f"[approval requested] {SHOWN}", stdout)
            self.assertIn("bye\\u009b2J", stdout)
            for raw in ("\x1b", "\x07", "\r", "\u009b"):
                self.assertNotIn(raw, stdout + stderr)

    def test_replay_shows_escape_codes_visibly(self):
        with Bridge() as b:
            run = b.chat("r", f"script:say clear\x1b[2J\x1b[H ;tool terminal {HIDDEN};raise bad\rgood", wait=True)
            self.assertEqual(run["status"], "error")
            db = b.home / "hermes-bridge" / "events.db"
            for color in ("never", "always"):
                with self.subTest(color=color):
                    out = subprocess.run([str(bridge_binary()), "replay", run["run_id"], "--db", str(db),
                                          "--instant", "--color", color], capture_output=True, timeout=30)
                    stdout = out.stdout.decode()
                    self.assertEqual(out.returncode, 0, out.stderr)
                    self.assertIn("clear\\x1b[2J\\x1b[H", stdout)
                    self.assertIn(f"arg: {SHOWN}", stdout)
                    self.assertIn(f"ran terminal: {SHOWN}", stdout)
                    self.assertIn("bad\\x0dgood", stdout)
                    self.assertNotIn("\r", stdout)
                    for raw in ("\x1b[2J", "\x1b[H", "\x1b[2K"):  # our own styles are all that is left
                        self.assertNotIn(raw, stdout)


class ReplayThroughTheDaemon(unittest.TestCase):
    def test_a_recorded_run_streams_again_and_asks_again(self):
        with Bridge() as b:
            original = b.chat("o", "script:say hi ;tool terminal ls;approve-gw rm -rf /;stream 10 20;say done")
            asked = b.wait_event(original["run_id"], "approval.requested")
            b.request({"action": "approval_respond", "approval_id": asked["approval_id"], "choice": "once"})
            recorded = b.wait_done(original["run_id"])
            again = b.chat("viewer", "", replay=original["run_id"], speed=4)
            self.assertNotEqual(again["run_id"], original["run_id"])
            asked_again = b.wait_event(again["run_id"], "approval.requested")
            self.assertNotEqual(asked_again["approval_id"], asked["approval_id"])
            self.assertEqual(asked_again["command"], "rm -rf /")
            b.request({"action": "approval_respond", "approval_id": asked_again["approval_id"], "choice": "deny"})
            replayed = b.wait_done(again["run_id"])
            self.assertEqual(replayed["status"], recorded["status"])
            self.assertEqual(replayed["output"], recorded["output"])

            def without_approvals(events):
                return [e for e in events if not e["event"].startswith("approval.")]
            full = {r: b.request({"action": "get_result", "run_id": r}) for r in (original["run_id"], again["run_id"])}
            self.assertEqual(without_approvals(full[again["run_id"]]["events"]),
                             without_approvals(full[original["run_id"]]["events"]))
            self.assertEqual(full[again["run_id"]]["result"], full[original["run_id"]]["result"])
            resolved = events_named(full[again["run_id"]]["events"], "approval.resolved")
            self.assertEqual([e["choice"] for e in resolved], ["deny"])  # this client's answer, not the recording's

    def test_a_live_run_is_refused_and_the_replay_ends(self):
        """A run still streaming has no end to copy: its replay ends at once
        with a clear error (it used to copy `running` and never finish)."""
        with Bridge() as b:
            live = b.chat("o", "script:stream 400 20")
            b.wait_event(live["run_id"], "stream.delta")
            again = b.chat("viewer", "", replay=live["run_id"])
            replayed = b.wait_done(again["run_id"], timeout=10)
            self.assertEqual(replayed["status"], "error")
            self.assertIn("still running", replayed["error"])
            self.assertEqual(b.request({"action": "status", "session_id": "viewer"})["running"], False)
            self.assertEqual(b.request({"action": "get_output", "run_id": live["run_id"]})["status"], "running")
            b.request({"action": "interrupt", "session_id": "o"})
            self.assertEqual(b.wait_done(live["run_id"])["status"], "interrupted")
            after = b.chat("viewer", "", replay=live["run_id"], wait=True)  # finished now: it replays
            self.assertEqual(after["status"], "interrupted")

    def test_recorded_timing_is_scaled_and_interrupt_stops_it(self):
        with Bridge() as b:
            slow = b.chat("s", "script:stream 40 50", wait=True)  # 2 s; its replay at 10x about 0.2 s
            started = time.monotonic()
            fast = b.chat("v", "", replay=slow["run_id"], speed=10, wait=True)
            elapsed = time.monotonic() - started
            self.assertEqual(fast["output"], slow["output"])
            self.assertLess(elapsed, slow["ended_at"] - slow["started_at"])
            long = b.chat("v", "", replay=slow["run_id"], speed=0.1)
            time.sleep(0.3)
            self.assertTrue(b.request({"action": "interrupt", "session_id": "v"})["synced"])
            self.assertEqual(b.wait_done(long["run_id"])["status"], "interrupted")
            missing = b.chat("w", "", replay="no-such-run", wait=True)
            self.assertEqual(missing["status"], "error")
            self.assertIn("not in the event log", missing["error"])


if __name__ == "__main__":
    unittest.main()
