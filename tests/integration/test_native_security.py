"""Native sessions under hostile input (issue 21 items 2, 5, 11 and 12, the
native parts): a workspace tmux would read as a format, chat text the TUI
would run as its own command, the cap on live TUIs, a tmux that cannot be
asked, and what the tmux server inherits from the daemon."""

from __future__ import annotations

import os
import sqlite3
import unittest
from pathlib import Path

from native_support import NativeFixture, tmux


class NativeWorkspaceText(NativeFixture):
    def hermes_cwds(self) -> list[str]:
        with sqlite3.connect(self.state_db) as db:
            return [r[0] for r in db.execute("SELECT cwd FROM sessions ORDER BY started_at")]

    def test_a_workspace_named_like_a_tmux_format_is_only_a_directory(self):
        pwned = self.tmp / "pwned"
        # tmux expands `-c DIR` as a format: #(...) runs a shell command (its
        # environment is the daemon's, so $HB_PWNED names the marker).
        b = self.start_bridge(env={"HB_PWNED": str(pwned)})
        for i, name in enumerate(["#(touch $HB_PWNED)", "#{pane_id}x", "x##y"]):
            ws = self.tmp / name
            ws.mkdir()
            run = b.chat(f"n-format-{i}", f"hello {i}", harness="native", workspace=str(ws))
            self.assertTrue(run["ok"], run)
            done = b.wait_done(run["run_id"])
            self.assertEqual(done["status"], "complete", done)
            self.assertFalse(pwned.exists(), f"tmux ran a command named by workspace {name!r}")
            # The TUI runs in that very directory.
            self.assertEqual(self.hermes_cwds()[-1], str(ws.resolve()))
            status = b.request({"action": "status", "session_id": f"n-format-{i}"})
            self.assertEqual(status["config"]["workspace"], str(ws.resolve()))

    def test_a_workspace_with_control_characters_is_refused(self):
        for i, name in enumerate(["esc\x1b[2Jhere", "line\nbreak", "csi\u009bx"]):
            ws = self.tmp / name
            ws.mkdir()
            out = self.bridge.chat(f"n-ctl-{i}", "hello", harness="native", workspace=str(ws))
            self.assertEqual((out["ok"], out.get("error_type")), (False, "ValueError"), out)
            self.assertIn("control characters", out["error"])
        self.assertEqual(list(self.native_dir.glob("*/tmux.sock")) if self.native_dir.exists() else [], [])


class NativeTuiCommands(NativeFixture):
    def entries(self, name: str) -> list[dict]:
        return [e for e in self.tui_log_entries() if e.get("event") == name]

    def test_bang_and_slash_text_is_refused_unless_asked_for(self):
        marker = self.tmp / "banged"
        self.turn("n-bang", "hello first")  # a TUI that runs, so a paste would reach it
        inputs_before = len(self.entries("input"))
        for text in (f"!touch {marker}", "  /yolo", "\n/model other"):
            out = self.bridge.chat("n-bang", text, harness="native", workspace=str(self.workspace))
            self.assertEqual((out["ok"], out.get("error_type")), (False, "ValueError"), out)
            self.assertIn('"tui_command": true', out["error"])
        self.assertIn("shell command", self.bridge.chat("n-bang", "!ls", harness="native",
                                                        workspace=str(self.workspace))["error"])
        # Nothing was typed, nothing ran.
        self.assertEqual(len(self.entries("input")), inputs_before)
        self.assertEqual(self.entries("bang") + self.entries("command"), [])
        self.assertFalse(marker.exists())
        # A path as the first word is a message, as the TUI sees it too.
        done = self.turn("n-bang", "/src/main.c: why?")
        self.assertEqual(done["output"], "echo: /src/main.c: why?")
        # Opting in with plain text is a mistake, said so.
        out = self.bridge.chat("n-bang", "hello", harness="native", workspace=str(self.workspace),
                               tui_command=True)
        self.assertEqual((out["ok"], out.get("error_type")), (False, "ValueError"), out)

    def test_an_opted_in_shell_command_is_typed_once(self):
        marker = self.tmp / "banged"
        # No user row ever comes for it: the confirm timeout (3 s here) must
        # not paste it again.
        done = self.turn("n-bang-once", f"!echo ran >> {marker}", tui_command=True)
        self.assertEqual(done["status"], "complete", done)
        self.assertEqual([e["event"] for e in done["seen_events"] if e["event"] == "native.tui_command"],
                         ["native.tui_command"])
        self.wait_for(marker.exists, what="the shell command's file")
        # A later turn that completes proves the TUI is done with our typing.
        after = self.turn("n-bang-once", "and now a message")
        self.assertEqual(after["output"], "echo: and now a message")
        self.assertEqual(len(self.entries("bang")), 1)
        self.assertEqual(marker.read_text(), "ran\n")
        self.assertEqual(self.user_rows(), ["and now a message"])
        history = self.bridge.request({"action": "get_history", "session_id": "n-bang-once"})["history"]
        self.assertEqual([m["role"] for m in history], ["user", "assistant"])

    def test_an_opted_in_slash_command_reaches_the_tui_as_a_command(self):
        done = self.turn("n-yolo", "/yolo", tui_command=True)
        self.assertEqual(done["status"], "complete", done)
        self.assertEqual([e["name"] for e in self.entries("command")], ["/yolo"])
        # Approvals are off now in that TUI: a dangerous command runs unasked.
        danger = self.turn("n-yolo", "danger rm -rf /tmp/nothing-here")
        self.assertIn("approval: yolo", danger["output"])
        self.assertEqual(len(self.entries("command")), 1)


class NativeCap(NativeFixture):
    def test_max_native_caps_live_tuis(self):
        b = self.start_bridge(args=["--max-native", "1"])
        first = b.chat("n-cap-a", "one", harness="native", workspace=str(self.workspace))
        self.assertTrue(first["ok"], first)
        self.assertEqual(b.wait_done(first["run_id"])["status"], "complete")
        out = b.chat("n-cap-b", "two", harness="native", workspace=str(self.workspace))
        self.assertEqual((out["ok"], out.get("error_type")), (False, "RuntimeError"), out)
        self.assertIn("--max-native 1", out["error"])
        # The running one is untouched, and its next turn still works.
        self.assertEqual(b.wait_done(b.chat("n-cap-a", "again", harness="native",
                                            workspace=str(self.workspace))["run_id"])["output"], "echo: again")
        sock = b.request({"action": "status", "session_id": "n-cap-a"})["config"]["tmux_socket"]
        self.assertTrue(b.request({"action": "destroy", "session_id": "n-cap-a"})["ok"])
        self.wait_for(lambda: not Path(sock).parent.exists(), what="the destroyed TUI gone")
        out = b.chat("n-cap-b", "two", harness="native", workspace=str(self.workspace))
        self.assertTrue(out["ok"], out)
        self.assertEqual(b.wait_done(out["run_id"])["output"], "echo: two")


class NativeTmuxTrouble(NativeFixture):
    def flaky_tmux(self) -> tuple[Path, Path]:
        """A tmux on PATH that answers every command (but -V) with an error
        other than "no server" while `flag` exists, and logs what it refused."""
        bin_dir = self.tmp / "flaky-tmux"
        bin_dir.mkdir()
        flag, calls = self.tmp / "tmux-broken", self.tmp / "tmux-calls"
        real = next(p for p in (Path(d) / "tmux" for d in os.environ["PATH"].split(":")) if p.is_file())
        script = bin_dir / "tmux"
        script.write_text("#!/bin/sh\n"
                          f"if [ -e '{flag}' ] && [ \"$1\" != -V ]; then echo \"refused $*\" >> '{calls}'; "
                          "echo 'lost server: Resource temporarily unavailable' >&2; exit 1; fi\n"
                          f"exec '{real}' \"$@\"\n")
        script.chmod(0o755)
        return flag, calls

    def refused(self, calls: Path, what: str) -> int:
        return sum(what in line for line in calls.read_text().splitlines()) if calls.exists() else 0

    def test_a_tmux_that_cannot_answer_is_not_a_dead_tui(self):
        flag, calls = self.flaky_tmux()
        env = {"PATH": f"{flag.parent / 'flaky-tmux'}:{os.environ['PATH']}"}
        b = self.start_bridge(env=env)
        first = b.wait_done(b.chat("n-flaky", "first", harness="native", workspace=str(self.workspace))["run_id"])
        self.assertEqual(first["status"], "complete", first)
        status = b.request({"action": "status", "session_id": "n-flaky"})
        sock, hermes_id = status["config"]["tmux_socket"], status["native"]["hermes_session_id"]
        server_pid = tmux(sock, "display-message", "-p", "#{pid}").stdout.strip()
        flag.touch()
        # The watcher asks once a second: three unanswered asks, and the TUI
        # is still taken for alive (else the next chat would replace it).
        self.wait_for(lambda: self.refused(calls, "has-session") >= 3, what="unanswered tmux calls")
        self.assertTrue(b.request({"action": "status", "session_id": "n-flaky"})["native"]["alive"])
        # A daemon started meanwhile cannot tell either: its chat is refused,
        # and nothing is killed or started over the TUI.
        b.stop()
        b = self.start_bridge(env=env)
        out = b.chat("n-flaky", "while tmux is stuck", harness="native", workspace=str(self.workspace))
        self.assertEqual((out["ok"], out.get("error_type")), (False, "RuntimeError"), out)
        self.assertIn("cannot tell whether", out["error"])
        self.assertEqual(self.refused(calls, "kill-server") + self.refused(calls, "new-session"), 0)
        self.assertTrue(Path(sock).exists())
        flag.unlink()
        again = b.wait_done(b.chat("n-flaky", "second", harness="native",
                                   workspace=str(self.workspace))["run_id"])
        self.assertEqual(again["output"], "echo: second")
        # The very same TUI: same tmux server, same Hermes session.
        self.assertEqual(tmux(sock, "display-message", "-p", "#{pid}").stdout.strip(), server_pid)
        status = b.request({"action": "status", "session_id": "n-flaky"})
        self.assertTrue(status["config"]["reattached"], status)
        self.assertEqual(status["native"]["hermes_session_id"], hermes_id)
        self.assertEqual(self.user_rows(), ["first", "second"])

    def test_the_tmux_server_and_the_tui_inherit_nothing_from_the_daemon(self):
        self.turn("n-fds", "hello")
        sock = self.native_status("n-fds")["config"]["tmux_socket"]
        pids = tmux(sock, "display-message", "-p", "#{pid} #{pane_pid}").stdout.split()
        self.assertEqual(len(pids), 2, pids)

        def targets(pid: int | str) -> set[str]:
            out = set()
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    out.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
                except OSError:
                    pass  # closed meanwhile
            return out

        # Pipes and sockets are the daemon's own objects (files like state.db
        # are opened by the TUI itself, under the same name).
        ours = {t for t in targets(self.bridge.proc.pid) if t.startswith(("pipe:", "socket:")) or
                t.endswith("events.db")}
        self.assertTrue(ours)
        for pid in pids:
            self.assertEqual(targets(pid) & ours, set(), f"pid {pid} holds the daemon's descriptors")


if __name__ == "__main__":
    unittest.main()
