"""Native sessions: the hermes TUI (tests/fake_hermes/hermes) in a private tmux
server, driven by the real daemon, everything checked through the socket and
in the fake TUI's own state.db and input log."""

from __future__ import annotations

import hashlib
import os
import signal
import sqlite3
import stat
import subprocess
import time
import unittest
from pathlib import Path

from harness import events_named
from native_support import FAKE_HERMES, NativeFixture, tmux

class NativeTurns(NativeFixture):
    def test_plain_turn_and_where_to_attach(self):
        done = self.turn("n-plain", "hello native")
        self.assertEqual(done["status"], "complete", done)
        self.assertEqual(done["output"], "echo: hello native")
        self.assertEqual(done["result"]["final_response"], "echo: hello native")
        self.assertEqual(self.user_rows(), ["hello native"])

        status = self.native_status("n-plain")
        config, live = status["config"], status["native"]
        self.assertEqual(config["harness"], "native")
        self.assertEqual(config["workspace"], str(self.workspace.resolve()))
        self.assertEqual(config["tmux_target"], "main")
        self.assertTrue(live["alive"])
        self.assertTrue(live["hermes_session_id"])
        sock = config["tmux_socket"]
        self.assertTrue(stat.S_ISSOCK(os.stat(sock).st_mode))
        self.assertEqual(stat.S_IMODE(os.stat(Path(sock).parent).st_mode), 0o700)
        # Named by a collision-resistant digest of the session id (128 bits of SHA-256).
        self.assertEqual(Path(sock).parent.name, hashlib.sha256(b"n-plain").hexdigest()[:32])
        self.assertEqual(config["attach"], f"tmux -S '{sock}' attach -t main")
        # A person can reach the very TUI the daemon drives.
        self.assertEqual(tmux(sock, "has-session", "-t", "main").returncode, 0)
        self.assertIn("echo: hello native", tmux(sock, "capture-pane", "-p", "-t", "main").stdout)
        self.assertEqual(tmux(sock, "show-options", "-gv", "history-limit").stdout.strip(), "100000")
        self.assertEqual(tmux(sock, "display-message", "-p", "-t", "main", "#{window_width}x#{window_height}")
                         .stdout.strip(), "160x48")
        # `hermes-bridge attach` takes a person there (C-b d leaves again).
        attach = subprocess.run([str(self.bridge.command()[0]), "attach", "--endpoint", self.bridge.endpoint,
                                 "--print", "n-plain"], capture_output=True, text=True, timeout=30)
        self.assertEqual((attach.returncode, attach.stdout.strip()), (0, config["attach"]), attach.stderr)
        not_native = subprocess.run([str(self.bridge.command()[0]), "attach", "--endpoint", self.bridge.endpoint,
                                     "nobody"], capture_output=True, text=True, timeout=30)
        self.assertEqual(not_native.returncode, 3, not_native.stderr)
        listed = {s["session_id"]: s for s in self.bridge.request({"action": "list"})["sessions"]}
        self.assertEqual(listed["n-plain"]["config"]["tmux_socket"], sock)
        self.assertTrue(listed["n-plain"]["native"]["alive"])

        # The run is in the event log like any other: replay from cursor 0.
        again = self.bridge.request({"action": "get_output", "run_id": done["run_id"]})
        self.assertEqual(again["output"], "echo: hello native")
        self.assertEqual(events_named(again["events"], "stream.delta")[0]["delta"], "echo: hello native")

    def test_tool_turn_mirrors_calls_and_results_in_order(self):
        done = self.turn("n-tool", "tool ls -la")
        self.assertEqual(done["status"], "complete", done)
        self.assertEqual(done["seen_text"], "Let me run that.\n\nran ls -la")
        names = [e["event"] for e in done["seen_events"]]
        self.assertEqual(names, ["stream.delta", "tool.started", "tool.completed", "stream.delta"])
        started, completed = done["seen_events"][1], done["seen_events"][2]
        self.assertEqual(started["tool_name"], "terminal")
        self.assertEqual(started["args"], {"command": "ls -la"})
        self.assertEqual(completed["tool_call_id"], started["tool_call_id"])
        self.assertEqual(completed["result"], "output of ls -la")
        history = self.bridge.request({"action": "get_history", "session_id": "n-tool"})["history"]
        self.assertEqual([m["role"] for m in history], ["user", "assistant", "tool", "assistant"])

    def test_a_long_message_is_seen_as_its_collapsed_paste_and_arrives_whole(self):
        message = "\n".join(f"line {i}\twith a tab" for i in range(8))
        started = time.monotonic()
        done = self.turn("n-long", message)
        self.assertEqual(done["status"], "complete", done)
        self.assertLess(time.monotonic() - started, 4.5, "waited for text the TUI never shows")
        self.assertEqual(self.user_rows(), [message])
        self.assertEqual(done["output"], "echo: " + message)

    def test_a_leftover_multiline_draft_is_cleared_before_the_message(self):
        self.turn("n-draft", "hello")
        sock = self.native_status("n-draft")["config"]["tmux_socket"]
        tmux(sock, "set-buffer", "-b", "d", "left over\nsecond row\nthird row")
        tmux(sock, "paste-buffer", "-p", "-d", "-b", "d", "-t", "main")
        self.wait_for(lambda: "third row" in tmux(sock, "capture-pane", "-p", "-t", "main").stdout, what="draft")
        done = self.turn("n-draft", "only this")
        self.assertEqual(done["output"], "echo: only this")
        self.assertEqual(self.user_rows(), ["hello", "only this"])

    def test_hermes_bin_may_be_a_command_line(self):
        quoted = str(FAKE_HERMES).replace("'", "'\\''")
        b = self.start_bridge(args=[], hermes_bin=f"/usr/bin/python3 '{quoted}'")
        run = b.chat("n-cmdline", "via python", harness="native", workspace=str(self.workspace))
        self.assertTrue(run["ok"], run)
        self.assertEqual(b.wait_done(run["run_id"])["output"], "echo: via python")
        status = b.request({"action": "status", "session_id": "n-cmdline"})
        self.assertEqual(status["config"]["hermes_command"], ["/usr/bin/python3", str(FAKE_HERMES)])

    def test_multiline_message_with_tab_and_trailing_backslash_arrives_verbatim(self):
        message = "first line\n\tindented with a tab\nends with a backslash \\"
        done = self.turn("n-multi", message)
        self.assertEqual(done["status"], "complete", done)
        self.assertEqual(self.user_rows(), [message])
        self.assertEqual(done["output"], "echo: " + message)

    def test_a_clarify_question_in_the_terminal_keeps_the_turn_running_until_answered(self):
        run_id = self.chat("n-clarify", "clarify Which colour? / red,blue")["run_id"]
        sock = self.native_status("n-clarify")["config"]["tmux_socket"]
        self.wait_for(lambda: "Hermes needs your input" in tmux(sock, "capture-pane", "-p", "-t", "main").stdout,
                      what="the clarify panel")
        time.sleep(4)  # past the 3 s in which a fresh row alone keeps a turn open
        out = self.bridge.request({"action": "get_output", "run_id": run_id, "cursor": 0})
        self.assertFalse(out["done"], out)  # "? ❯" is a turn waiting, not an idle prompt
        tmux(sock, "send-keys", "-t", "main", "Down")
        tmux(sock, "send-keys", "-t", "main", "Enter")  # the person at the TUI answers
        done = self.bridge.wait_done(run_id, timeout=20)
        self.assertEqual(done["status"], "complete", done)
        self.assertTrue(done["output"].endswith("clarified: blue"), done)
        # The client had been asked too; the question closed without an answer of its own.
        [asked] = events_named(done["seen_events"], "clarify.requested")
        [closed] = events_named(done["seen_events"], "clarify.resolved")
        self.assertEqual((closed["clarify_id"], closed["response"], closed["reason"]),
                         (asked["clarify_id"], None, "answered in the terminal"))

    def test_an_interrupt_while_a_clarify_question_shows_stops_the_turn(self):
        run_id = self.chat("n-clarify-stop", "clarify Which colour? / red,blue")["run_id"]
        sock = self.native_status("n-clarify-stop")["config"]["tmux_socket"]
        self.wait_for(lambda: "Hermes needs your input" in tmux(sock, "capture-pane", "-p", "-t", "main").stdout,
                      what="the clarify panel")
        self.assertTrue(self.bridge.request({"action": "interrupt", "session_id": "n-clarify-stop"})["ok"])
        done = self.bridge.wait_done(run_id, timeout=20)
        self.assertEqual(done["status"], "interrupted", done)
        # ...in the TUI too: the panel went with a Ctrl-C, nothing was picked
        self.wait_for(lambda: "Hermes needs your input" not in tmux(sock, "capture-pane", "-p", "-t", "main").stdout,
                      what="the clarify panel to go")
        self.assertTrue(any(e.get("event") == "input" and "\\x03" in e["bytes"] for e in self.tui_log_entries()))
        self.assertEqual([e for e in self.tui_log_entries() if e.get("event") == "clarify"], [])

    def test_compression_moves_to_a_child_session_and_the_mirror_follows(self):
        done = self.turn("n-compress", "compress the story so far")
        self.assertEqual(done["output"], "compressed: the story so far")
        after = self.turn("n-compress", "still here?")
        self.assertEqual(after["status"], "complete", after)
        self.assertEqual(after["output"], "echo: still here?")

    def keys_typed(self) -> list[str]:
        return [e["bytes"] for e in self.tui_log_entries() if e.get("event") == "input" and not e.get("ignored")]

    def test_interrupt_sends_one_ctrl_c_and_keeps_the_partial_answer(self):
        run_id = self.chat("n-int", "slow 30")["run_id"]
        self.wait_for(lambda: "slow 30" in self.user_rows(), what="user row")
        time.sleep(1.6)  # tick0 and tick1 streamed
        out = self.bridge.request({"action": "interrupt", "session_id": "n-int"})
        self.assertTrue(out["ok"], out)
        done = self.bridge.wait_done(run_id, timeout=15)
        self.assertEqual(done["status"], "interrupted", done)
        self.assertRegex(done["output"], r"^tick0 tick1( tick2)?$")
        self.assertEqual(done["result"]["final_response"], done["output"])
        [stop] = events_named(done["seen_events"], "native.interrupt")
        self.assertTrue(stop["confirmed"], stop)
        with sqlite3.connect(self.state_db) as db:
            row = db.execute("SELECT content, finish_reason FROM messages ORDER BY id DESC LIMIT 1").fetchone()
        self.assertEqual(row, (done["output"], None))  # Hermes' partial row
        typed = self.keys_typed()
        self.assertEqual(typed.count("\\x03"), 1, typed)  # one Ctrl-C, and no Escape
        self.assertFalse([k for k in typed if k.startswith("\\x1b") and not k.startswith("\\x1b[")], typed)
        # The TUI is still there and takes the next message; its output is its own.
        self.assertEqual(self.turn("n-int", "next one")["output"], "echo: next one")

    def test_an_interrupt_before_anything_streamed_is_confirmed_by_the_idle_prompt(self):
        run_id = self.chat("n-int0", "slow 30")["run_id"]
        self.wait_for(lambda: "slow 30" in self.user_rows(), what="user row")
        self.assertTrue(self.bridge.request({"action": "interrupt", "session_id": "n-int0"})["ok"])
        done = self.bridge.wait_done(run_id, timeout=15)
        self.assertEqual(done["status"], "interrupted", done)
        [stop] = events_named(done["seen_events"], "native.interrupt")
        self.assertTrue(stop["confirmed"], stop)
        self.assertEqual(self.keys_typed().count("\\x03"), 1)
        self.assertTrue(self.native_status("n-int0")["native"]["alive"])

    def test_an_interrupt_the_tui_does_not_carry_out_is_reported_not_pretended(self):
        run_id = self.chat("n-stuck", "stuck 9")["run_id"]
        self.wait_for(lambda: "stuck 9" in self.user_rows(), what="user row")
        time.sleep(0.5)
        self.assertTrue(self.bridge.request({"action": "interrupt", "session_id": "n-stuck"})["ok"])
        done = self.bridge.wait_done(run_id, timeout=20)
        self.assertEqual(done["status"], "interrupted", done)
        self.assertIn("did not stop the hermes turn", done["error"])
        [stop] = events_named(done["seen_events"], "native.interrupt")
        self.assertFalse(stop["confirmed"], stop)
        typed = self.keys_typed()
        self.assertEqual(typed.count("\\x03"), 2, typed)  # a second one only after the 2 s that force-exit
        self.assertTrue(self.native_status("n-stuck")["native"]["alive"])
        # The next chat waits for the turn the TUI is still in, then runs.
        after = self.turn("n-stuck", "are you free?", timeout=30)
        self.assertEqual(after["output"], "echo: are you free?")
        self.assertEqual(self.user_rows(), ["stuck 9", "are you free?"])

    def test_a_chat_waits_while_the_tui_is_in_a_turn_and_mirrors_only_its_own(self):
        self.turn("n-busy", "hello")
        sock = self.native_status("n-busy")["config"]["tmux_socket"]
        # A person at the terminal starts a turn of their own.
        self.assertEqual(tmux(sock, "send-keys", "-t", "main", "slow 3", "Enter").returncode, 0)
        self.wait_for(lambda: "slow 3" in self.user_rows(), what="their turn")
        done = self.turn("n-busy", "after yours")
        self.assertEqual(done["status"], "complete", done)
        self.assertEqual(done["output"], "echo: after yours")  # nothing of the earlier turn
        self.assertEqual(self.user_rows(), ["hello", "slow 3", "after yours"])
        with sqlite3.connect(self.state_db) as db:
            contents = [r[0] for r in db.execute("SELECT content FROM messages ORDER BY id")]
        self.assertIn("tick0 tick1 tick2 done", contents)  # it was not interrupted

    def test_steer_types_the_steer_command_and_its_answer_is_mirrored(self):
        run_id = self.chat("n-steer", "tool sleep 2.5")["run_id"]
        sock = self.native_status("n-steer")["config"]["tmux_socket"]
        # While the tool runs, hermes 0.20 redraws its live line every 0.1 s: the
        # steer must not wait for a still screen (the tool would end first).
        self.wait_for(lambda: "tok)" in tmux(sock, "capture-pane", "-p", "-t", "main").stdout, what="live tool line")
        out = self.bridge.request({"action": "steer", "session_id": "n-steer", "text": "also check\nthe logs"})
        self.assertTrue(out["ok"], out)
        self.assertTrue(out["accepted"], out)
        done = self.bridge.wait_done(run_id, timeout=20)
        self.assertEqual(done["status"], "complete", done)
        self.assertEqual(done["output"], "Let me run that.\n\nran sleep 2.5 (steered: also check the logs)")
        self.assertEqual(self.user_rows(), ["tool sleep 2.5"])  # carried by the tool result, no turn of its own
        self.assertTrue(any("/steer also check the logs" in k for k in self.keys_typed()))
        idle = self.bridge.request({"action": "steer", "session_id": "n-steer", "text": "nobody listens"})
        self.assertFalse(idle["accepted"], idle)
        self.assertNotIn("nobody listens", self.user_rows())

    def test_a_steer_no_tool_result_carries_becomes_the_next_turn_of_the_same_run(self):
        run_id = self.chat("n-steer2", "slow 3")["run_id"]
        self.wait_for(lambda: "slow 3" in self.user_rows(), what="user row")
        time.sleep(0.5)
        out = self.bridge.request({"action": "steer", "session_id": "n-steer2", "text": "and then stop"})
        self.assertTrue(out["accepted"], out)
        done = self.bridge.wait_done(run_id, timeout=20)
        self.assertEqual(done["status"], "complete", done)
        self.assertEqual(done["output"], "tick0 tick1 tick2 done\n\necho: and then stop")
        self.assertEqual(self.user_rows(), ["slow 3", "and then stop"])

    def test_tui_exiting_mid_run_fails_the_run_and_the_next_chat_relaunches(self):
        first = self.chat("n-exit", "exit")
        done = self.bridge.wait_done(first["run_id"], timeout=20)
        self.assertEqual(done["status"], "error", done)
        self.assertIn("no longer running", done["error"])
        self.wait_for(lambda: not self.native_status("n-exit")["native"]["alive"], what="dead TUI reported")
        again = self.turn("n-exit", "are you back?")
        self.assertEqual(again["status"], "complete", again)
        self.assertEqual(again["output"], "echo: are you back?")
        self.assertTrue(self.native_status("n-exit")["native"]["alive"])

    def test_destroy_kills_the_tmux_server(self):
        self.turn("n-destroy", "hello")
        sock = self.native_status("n-destroy")["config"]["tmux_socket"]
        out = self.bridge.request({"action": "destroy", "session_id": "n-destroy"})
        self.assertTrue(out["ok"], out)
        self.wait_for(lambda: tmux(sock, "has-session", "-t", "main").returncode != 0, what="tmux gone")
        self.wait_for(lambda: not Path(sock).parent.exists(), what="session dir removed")

    def test_two_native_sessions_in_one_workspace_keep_their_own_rows(self):
        a = self.chat("n-a", "from a")
        b = self.chat("n-b", "from b")
        self.assertEqual(self.bridge.wait_done(a["run_id"])["output"], "echo: from a")
        self.assertEqual(self.bridge.wait_done(b["run_id"])["output"], "echo: from b")
        ids = {self.native_status(s)["native"]["hermes_session_id"] for s in ("n-a", "n-b")}
        self.assertEqual(len(ids), 2)


class FirstMessageDrop(NativeFixture):
    extra_env = {"FAKE_HERMES_DROP_FIRST": "1"}

    def test_a_dropped_first_message_is_delivered_again_once(self):
        done = self.turn("n-drop", "are you awake?", timeout=40)
        self.assertEqual(done["status"], "complete", done)
        self.assertEqual(done["output"], "echo: are you awake?")
        self.assertEqual(self.user_rows(), ["are you awake?"])
        self.assertEqual(len([e for e in self.tui_log_entries() if e.get("event") == "dropped"]), 1)


    def test_an_interrupt_while_the_message_waits_for_hermes_ends_the_run_interrupted(self):
        run_id = self.chat("n-drop-int", "never mind")["run_id"]
        self.wait_for(lambda: any(e.get("event") == "dropped" for e in self.tui_log_entries()),
                      what="the first paste dropped")
        self.assertTrue(self.bridge.request({"action": "interrupt", "session_id": "n-drop-int"})["ok"])
        done = self.bridge.wait_done(run_id, timeout=20)
        self.assertEqual(done["status"], "interrupted", done)
        self.assertIn("before hermes accepted the message", done["error"])
        self.assertEqual(self.user_rows(), [])  # it was not pasted again


class SlowFirstTurn(NativeFixture):
    # 0.20 stores the first message only after "Initializing agent...", which
    # on a busy machine outlasts --native-confirm-s (3 s here).
    extra_env = {"FAKE_HERMES_INIT_S": "5"}

    def test_a_message_the_tui_took_is_not_pasted_again_while_its_turn_starts(self):
        done = self.turn("n-init", "take your time", timeout=40)
        self.assertEqual(done["status"], "complete", done)
        self.assertEqual(done["output"], "echo: take your time")
        self.assertEqual(self.user_rows(), ["take your time"])
        pastes = [e for e in self.tui_log_entries() if e.get("event") == "input" and "200~" in e["bytes"]]
        self.assertEqual(len(pastes), 1, pastes)

    def test_an_interrupt_while_the_first_turn_starts_reaches_the_tui(self):
        run_id = self.chat("n-init-stop", "slow 20")["run_id"]
        time.sleep(3.5)  # past --native-confirm-s: the daemon waits for the row of a turn the TUI started
        self.assertTrue(self.bridge.request({"action": "interrupt", "session_id": "n-init-stop"})["ok"])
        done = self.bridge.wait_done(run_id, timeout=30)
        self.assertEqual(done["status"], "interrupted", done)
        self.assertTrue(any(e.get("event") == "input" and "\\x03" in e["bytes"] for e in self.tui_log_entries()),
                        (done, [e for e in self.tui_log_entries() if e.get("event") == "input"]))
        self.assertEqual(self.user_rows(), ["slow 20"])  # pasted once
        with sqlite3.connect(self.state_db) as db:
            contents = [r[0] for r in db.execute("SELECT content FROM messages ORDER BY id")]
        self.assertNotIn("tick0 tick1 tick2", " ".join(c or "" for c in contents))  # it did not run on


class NativeLifecycle(NativeFixture):
    def test_daemon_restart_reattaches_to_the_living_tui(self):
        self.turn("n-restart", "before restart")
        config = self.native_status("n-restart")["config"]
        sock = config["tmux_socket"]
        pid = tmux(sock, "display-message", "-p", "-t", "main", "#{pane_pid}").stdout.strip()
        self.bridge.proc.send_signal(signal.SIGKILL)
        self.bridge.proc.wait(10)
        self.assertEqual(tmux(sock, "has-session", "-t", "main").returncode, 0, "the TUI outlives the daemon")

        self.bridge = self.start_bridge()
        done = self.turn("n-restart", "after restart")
        self.assertEqual(done["status"], "complete", done)
        self.assertEqual(done["output"], "echo: after restart")
        status = self.native_status("n-restart")
        self.assertTrue(status["config"]["reattached"])
        self.assertEqual(status["config"]["tmux_socket"], sock)
        self.assertEqual(tmux(sock, "display-message", "-p", "-t", "main", "#{pane_pid}").stdout.strip(), pid)
        self.assertEqual(self.user_rows(), ["before restart", "after restart"])

    def test_a_turn_live_at_a_kill_9_goes_on_after_the_restart_each_row_once(self):
        run_id = self.chat("n-live", "tool sleep 3")["run_id"]
        self.bridge.wait_event(run_id, "tool.started", timeout=20)
        self.bridge.proc.send_signal(signal.SIGKILL)
        self.bridge.proc.wait(10)
        self.bridge = self.start_bridge()
        self.assertIn("runs_continued=1", self.bridge.stderr())
        done = self.bridge.wait_done(run_id, timeout=30)
        self.assertEqual(done["status"], "complete", done)
        self.assertIn("ran sleep 3", done["seen_text"])
        events = done["seen_events"]
        self.assertEqual(len(events_named(events, "tool.started")), 1)  # logged before the kill, not again
        self.assertEqual(len(events_named(events, "tool.completed")), 1)  # written while no daemon was there
        self.assertEqual(events_named(events, "bridge.recovered"), [])
        # The session goes on in the same TUI.
        after = self.turn("n-live", "after the restart")
        self.assertEqual(after["output"], "echo: after the restart")
        self.assertEqual(self.user_rows(), ["tool sleep 3", "after the restart"])

    def test_an_approval_pending_at_a_kill_9_is_answered_after_the_restart_under_its_id(self):
        run_id = self.chat("n-ask", "danger rm -rf /tmp/scratch")["run_id"]
        asked = self.bridge.wait_event(run_id, "approval.requested", timeout=20)
        self.bridge.proc.send_signal(signal.SIGKILL)
        self.bridge.proc.wait(10)
        self.bridge = self.start_bridge()
        # At once: the answer waits for the prompt to be asked again.
        answer = self.bridge.request({"action": "approval_respond", "approval_id": asked["approval_id"],
                                      "choice": "session"})
        self.assertTrue(answer["resolved"], answer)
        done = self.bridge.wait_done(run_id, timeout=20)
        self.assertEqual(done["status"], "complete", done)
        self.assertIn("approval: session", done["seen_text"])
        self.assertEqual([e["approval_id"] for e in events_named(done["seen_events"], "approval.requested")],
                         [asked["approval_id"]])  # not announced twice
        resolved = events_named(done["seen_events"], "approval.resolved")
        self.assertEqual([(r["approval_id"], r["choice"]) for r in resolved], [(asked["approval_id"], "session")])

    def test_an_approval_pending_at_a_kill_9_keeps_the_deadline_it_was_asked_with(self):
        # 6 s to live; 3 of them pass with no daemon: denied about 3 s after
        # the restart, not 6.
        self.bridge.stop()
        self.bridge = self.start_bridge(args=["--native-approval-timeout-s", "6"])
        run_id = self.chat("n-due", "danger rm -rf /tmp/scratch")["run_id"]
        asked = self.bridge.wait_event(run_id, "approval.requested", timeout=20)
        asked_at = time.monotonic()
        self.bridge.proc.send_signal(signal.SIGKILL)
        self.bridge.proc.wait(10)
        time.sleep(3)
        self.bridge = self.start_bridge(args=["--native-approval-timeout-s", "6"])
        done = self.bridge.wait_done(run_id, timeout=30)
        resolved = events_named(done["seen_events"], "approval.resolved")
        self.assertEqual([(r["approval_id"], r["choice"], r.get("reason")) for r in resolved],
                         [(asked["approval_id"], "deny", "timeout")])
        self.assertIn("approval: deny", done["seen_text"])
        self.assertLess(time.monotonic() - asked_at, 8.5)  # a fresh 6 s after the restart ends past 9 s

    def test_a_clarify_panel_showing_at_a_kill_9_is_answered_after_the_restart_under_its_id(self):
        run_id = self.chat("n-cl", "clarify Which colour? / red,blue")["run_id"]
        asked = self.bridge.wait_event(run_id, "clarify.requested", timeout=20)
        self.bridge.proc.send_signal(signal.SIGKILL)
        self.bridge.proc.wait(10)
        time.sleep(1)  # the panel counts down meanwhile
        self.bridge = self.start_bridge()
        answer = self.bridge.request({"action": "clarify_respond", "clarify_id": asked["clarify_id"],
                                      "response": "blue"})
        self.assertTrue(answer["resolved"], answer)
        done = self.bridge.wait_done(run_id, timeout=20)
        self.assertEqual(done["status"], "complete", done)
        self.assertTrue(done["seen_text"].endswith("clarified: blue"), done)
        self.assertEqual([e["clarify_id"] for e in events_named(done["seen_events"], "clarify.requested")],
                         [asked["clarify_id"]])

    def test_sigterm_lets_a_live_turn_go_on_in_the_tui(self):
        run_id = self.chat("n-term", "slow 4")["run_id"]
        self.wait_for(lambda: "slow 4" in self.user_rows(), what="user row")
        started = time.monotonic()
        self.bridge.proc.send_signal(signal.SIGTERM)
        self.assertEqual(self.bridge.proc.wait(15), 0)
        self.assertLess(time.monotonic() - started, 4, "the daemon waited for the TUI's turn")
        # Nobody pressed Ctrl-C: the TUI finishes the turn it was given.
        self.assertFalse([e for e in self.tui_log_entries() if "\\x03" in e.get("bytes", "")])
        def answered():
            with sqlite3.connect(self.state_db) as db:
                return db.execute("SELECT content FROM messages WHERE content = 'tick0 tick1 tick2 tick3 done'").fetchone()
        self.wait_for(answered, timeout=10, what="the TUI's own answer")
        self.bridge = self.start_bridge()
        out = self.bridge.request({"action": "get_output", "run_id": run_id})
        self.assertEqual(out["status"], "interrupted", out)
        self.assertIn("stopped mirroring", out["error"])

    def test_missing_binary_is_a_clear_error_not_a_crash(self):
        missing = self.start_bridge(hermes_bin=self.tmp / "no-such-hermes")
        out = missing.chat("n-missing", "hi", harness="native")
        self.assertFalse(out["ok"])
        self.assertEqual(out["error_type"], "FileNotFoundError")
        self.assertIn("no-such-hermes", out["error"])
        self.assertTrue(missing.request({"action": "ping"})["ok"])

    def test_a_tmux_older_than_3_3_is_named_in_the_error(self):
        bin_dir = self.tmp / "old-tmux"
        bin_dir.mkdir()
        fake_tmux = bin_dir / "tmux"
        fake_tmux.write_text("#!/bin/sh\necho 'tmux 3.2a'\n")
        fake_tmux.chmod(0o755)
        old = self.start_bridge(env={"PATH": f"{bin_dir}:{os.environ['PATH']}"}, args=["--harness", "native"])
        out = old.chat("n-old-tmux", "hi", harness="native", workspace=str(self.workspace))
        self.assertFalse(out["ok"], out)
        self.assertIn("tmux 3.2a is too old: native sessions need tmux 3.3 or newer", out["error"])
        self.assertIn("event=native.tmux_unusable", old.stderr())

    def test_bad_harness_and_workspace_are_refused(self):
        out = self.bridge.chat("n-bad", "hi", harness="telepathy")
        self.assertEqual((out["ok"], out["error_type"]), (False, "ValueError"))
        out = self.bridge.chat("n-bad", "hi", harness="native", workspace=str(self.tmp / "missing"))
        self.assertEqual((out["ok"], out["error_type"]), (False, "ValueError"))
        self.assertIn("not a directory", out["error"])
        out = self.bridge.chat("n-bad", "hi", harness="embedded", workspace=str(self.tmp / "missing"))
        self.assertEqual((out["ok"], out["error_type"]), (False, "ValueError"))
        self.assertIn("not a directory", out["error"])

    def test_serve_harness_native_makes_native_the_default(self):
        native = self.start_bridge(args=["--harness", "native"])
        run = native.request({"action": "chat", "session_id": "n-default", "message": "default harness",
                              "workspace": str(self.workspace)})
        self.assertTrue(run["ok"], run)
        self.assertEqual(native.wait_done(run["run_id"])["output"], "echo: default harness")
        status = native.request({"action": "status", "session_id": "n-default"})
        self.assertEqual(status["config"]["harness"], "native")
        # An embedded session still works next to it when asked for.
        emb = native.request({"action": "chat", "session_id": "e-1", "message": "hello", "harness": "embedded"})
        self.assertTrue(emb["ok"], emb)
        self.assertEqual(native.wait_done(emb["run_id"])["status"], "complete")


if __name__ == "__main__":
    unittest.main()
