"""Self-test of the fake hermes TUI: drives it in a private tmux server the way
the daemon does (settle, C-Home, C-k, bracketed paste, wait for the text,
Enter) and checks that it behaves like hermes-agent 0.18.2's TUI and writes
the rows the real agent writes to state.db.

Run: /usr/bin/python3 tests/fake_hermes/selftest.py
"""

import json
import os
import re
import shutil
import sqlite3
import subprocess
import tempfile
import time
import unittest
from pathlib import Path

FAKE = Path(__file__).resolve().parent / "hermes"
SESSION_ID = re.compile(r"^\d{8}_\d{6}_[0-9a-f]{6}$")


class FakeHermesTest(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="fake_hermes_"))
        self.ws = self.tmp / "ws"
        self.ws.mkdir()
        self.sock = str(self.tmp / "t.sock")
        self.db = self.tmp / "state.db"
        self.log = self.tmp / "log.jsonl"

    def tearDown(self):
        subprocess.run(["tmux", "-S", self.sock, "kill-server"], capture_output=True)
        shutil.rmtree(self.tmp, ignore_errors=True)

    # ---- driving, as the daemon does ----------------------------------------------

    def tmux(self, *args, **kw):
        return subprocess.run(["tmux", "-S", self.sock, *args], capture_output=True, **kw)

    def start(self, **env):
        full = {k: v for k, v in os.environ.items() if k != "TMUX"}
        full.setdefault("TERM", "xterm")
        full.update(HERMES_STATE_DB=str(self.db), FAKE_HERMES_LOG=str(self.log),
                    FAKE_HERMES_STARTUP_S="0.2", **env)
        self.launched = time.time()
        # the first command starts the server, which hands its environment to the pane
        r = self.tmux("-f", "/dev/null", "new-session", "-d", "-s", "main", "-x", "160",
                      "-y", "48", "-c", str(self.ws), str(FAKE), env=full)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.settle()

    def capture(self, target="main"):
        return self.tmux("capture-pane", "-p", "-t", target).stdout.decode()

    def settle(self, target="main"):
        """Non-empty and unchanged over 3 captures 0.2 s apart, the status bar
        (its clocks tick every second) left out. The loading screen is static
        too, so also wait for the prompt (the daemon relies on re-delivery)."""
        last, same, deadline = None, 0, time.time() + 10
        while time.time() < deadline:
            text = "\n".join(ln for ln in self.capture(target).splitlines() if "│ ctx" not in ln)
            same = same + 1 if text == last and text.strip() else 1
            last = text
            if same >= 3 and "❯" in text:
                return
            time.sleep(0.2)
        self.fail("pane never settled:\n" + last)

    def input_area(self, target="main"):
        """The draft as drawn between the last two rules, prompt symbol included."""
        lines = self.capture(target).rstrip("\n").splitlines()
        rules = [i for i, ln in enumerate(lines) if ln.startswith("────")]
        return "\n".join(lines[rules[-2] + 1:rules[-1]])

    def keys(self, *keys, target="main"):
        self.assertEqual(self.tmux("send-keys", "-t", target, *keys).returncode, 0)

    def deliver(self, text, target="main", enter=("Enter",)):
        rows = self.rows()
        self.mark = rows[-1]["id"] if rows else 0  # final_reply() waits past this row
        self.keys("C-Home", target=target)
        self.keys(*["C-k"] * 8, target=target)
        self.tmux("load-buffer", "-b", "b", "-", input=text.encode(), check=True)
        self.tmux("paste-buffer", "-p", "-d", "-b", "b", "-t", target, check=True)
        if text.count("\n") >= 5 or len(text) >= 2000:
            self.wait_screen("[Pasted text #", target)
        else:
            line = [ln.strip() for ln in text.split("\n") if len(ln.strip()) >= 4][-1]
            self.wait_screen(line[:24].replace("\t", "^I"), target)
        self.keys(*enter, target=target)

    def wait_screen(self, text, target="main"):
        """The pane's text once it shows `text`."""
        def shown():
            screen = self.capture(target)
            return screen if text in screen else None
        return self.wait_for(shown, f"{text!r} on screen")

    def wait_for(self, predicate, what, timeout=5.0):
        deadline = time.time() + timeout
        while time.time() < deadline:
            value = predicate()
            if value:
                return value
            time.sleep(0.05)
        self.fail(f"timed out waiting for {what}; pane:\n{self.capture()}")

    # ---- reading state.db and the log ---------------------------------------------

    def query(self, sql, args=()):
        if not self.db.exists():
            return []
        conn = sqlite3.connect(self.db, timeout=10)
        conn.row_factory = sqlite3.Row
        try:
            return [dict(r) for r in conn.execute(sql, args)]
        finally:
            conn.close()

    def rows(self):
        return self.query("SELECT * FROM messages WHERE active=1 ORDER BY id")

    def sessions(self):
        return self.query("SELECT * FROM sessions ORDER BY started_at")

    def final_reply(self):
        """All rows once an assistant row without tool calls closes the turn
        started by the last deliver()."""
        def done():
            rows = self.rows()
            last = rows[-1] if rows else None
            if last and last["id"] > self.mark and last["role"] == "assistant" \
                    and not last["tool_calls"]:
                return rows
        return self.wait_for(done, "a final assistant row")

    def events(self, kind):
        lines = self.log.read_text().splitlines() if self.log.exists() else []
        return [e for e in map(json.loads, lines) if e["event"] == kind]

    def brief(self, rows):
        return [(r["role"], r["content"]) for r in rows]

    # ---- tests ------------------------------------------------------------------------

    def test_plain_turn(self):
        self.start()
        self.assertIn("Hermes Agent (fake)", self.capture())
        self.assertEqual(self.sessions(), [], "the session row is created lazily")
        self.deliver("hello world")
        rows = self.final_reply()
        self.assertEqual(self.brief(rows), [("user", "hello world"),
                                            ("assistant", "echo: hello world")])
        [s] = self.sessions()
        self.assertRegex(s["id"], SESSION_ID)
        self.assertEqual((s["source"], s["model"], s["cwd"]),
                         ("cli", "fake-model", os.path.realpath(self.ws)))
        self.assertGreaterEqual(s["started_at"], self.launched - 1)
        self.assertEqual({r["session_id"] for r in rows}, {s["id"]})
        self.assertEqual(self.query("PRAGMA journal_mode")[0]["journal_mode"], "wal")

    def test_tool_turn(self):
        self.start()
        self.deliver("tool ls -la")
        rows = self.final_reply()
        self.assertEqual(self.brief(rows), [
            ("user", "tool ls -la"), ("assistant", "Let me run that."),
            ("tool", "output of ls -la"), ("assistant", "ran ls -la")])
        [call] = json.loads(rows[1]["tool_calls"])
        self.assertEqual(call["type"], "function")
        self.assertEqual(call["function"]["name"], "terminal")
        self.assertEqual(json.loads(call["function"]["arguments"]), {"command": "ls -la"})
        self.assertEqual((rows[2]["tool_call_id"], rows[2]["tool_name"]), (call["id"], "terminal"))

    def test_a_running_tool_has_a_live_line_that_ticks(self):
        self.start()
        self.deliver("tool sleep 1.5")
        first = re.search(r"💻 sleep 1\.5  \(\s*([\d.]+)s · ↓ 5 tok\)", self.wait_screen("tok)"))
        self.assertIsNotNone(first)
        later = self.wait_for(lambda: (m := re.search(r"\(\s*([\d.]+)s · ↓", self.capture())) and
                              float(m.group(1)) > float(first.group(1)) and m, "the clock to move")
        self.assertLess(float(later.group(1)), 1.6)
        self.final_reply()
        self.assertNotIn("tok)", self.capture())

    def test_multiline_message_arrives_verbatim(self):
        self.start()
        text = "first line\n\tindented\twith tabs\n\nlast line ends with a backslash \\"
        # 0.20: Enter right after the trailing backslash continues the line...
        self.deliver(text + "\n", enter=())  # a trailing newline is stripped on submit
        self.keys("Enter")
        self.wait_for(lambda: self.events("input")[-1]["bytes"] == r"\r", "the Enter")
        time.sleep(0.2)
        self.assertEqual([r["role"] for r in self.rows()], [])
        self.assertNotIn("last line ends with a backslash \\", self.capture())
        # ...and with the cursor one step left, it submits: the backslash stays
        self.keys("C-c")  # clears the draft
        self.deliver(text + "\n", enter=("Left", "Enter"))
        rows = self.final_reply()
        self.assertEqual(rows[0]["content"], text)
        pasted = [e["bytes"] for e in self.events("input") if "200~" in e["bytes"]]
        self.assertEqual(len(pasted), 2)  # one paste each time
        # tmux turns each \n into \r inside the brackets and keeps the tab
        self.assertIn(r"\x1b[200~first line\r\tindented\twith tabs\r\rlast", pasted[0])

    def test_danger_panel_has_the_real_layout(self):
        self.start()
        self.deliver("danger rm -rf /tmp/x")
        screen = self.wait_screen("Dangerous Command")
        lines = [ln.strip().strip("│").strip() for ln in screen.splitlines()]
        title = next(i for i, ln in enumerate(lines) if "Dangerous Command" in ln)
        # title in its own row, blank rows around the command, the description below the choices
        self.assertEqual(lines[title + 1:title + 10], [
            "", "rm -rf /tmp/x", "", "❯ 1. Allow once", "2. Allow for this session",
            "3. Add to permanent allowlist", "4. Deny", "", "recursive delete"])
        self.assertIn("⚠ ❯", self.input_area())
        self.assertFalse(any(e["panel"] for e in self.events("input")))
        self.keys("Escape")  # no binding: the panel stays
        time.sleep(0.3)
        self.assertIn("Dangerous Command", self.capture())
        self.keys("4")
        rows = self.final_reply()
        self.assertEqual(self.brief(rows)[-2:], [("tool", "denied: rm -rf /tmp/x"),
                                                 ("assistant", "approval: deny")])
        answers = [(e["choice"], e["key"]) for e in self.events("approval")]
        self.assertEqual(answers, [("deny", "4")])
        self.assertNotIn("Dangerous Command", self.capture())

    def test_long_command_offers_show_full_command(self):
        self.start()
        cmd = "rm -rf " + " ".join(f"/tmp/some-rather/long-path/number/{i}/of-many" for i in range(8))
        self.deliver("danger " + cmd)
        screen = self.wait_screen("5. Show full command")
        self.assertIn("… (choose Show full command)", screen)
        self.keys("5")  # shows the whole command; the row goes away
        screen = self.wait_for(lambda: (lambda t: t if "Show full command" not in t else None)(self.capture()),
                               "the whole command")
        self.assertIn("of-many", screen.splitlines()[[i for i, ln in enumerate(screen.splitlines())
                                                       if "1. Allow once" in ln][0] - 2])
        self.assertIn("4. Deny", screen)
        self.keys("1")
        self.assertEqual(self.final_reply()[-1]["content"], "approval: once")
        self.assertEqual([e["key"] for e in self.events("approval_view")], ["5"])

    def test_danger3_and_legacy_prompt(self):
        self.start()
        self.deliver("danger3 git push --force")
        self.wait_screen("3. Deny")
        self.keys("2")
        self.assertEqual(self.final_reply()[-1]["content"], "approval: session")
        self.deliver("danger-legacy chmod 777 /")
        screen = self.wait_screen("Choice [o/s/a/D]:")  # capture-pane drops trailing blanks
        lines = screen.splitlines()
        at = next(i for i, ln in enumerate(lines) if "⚠️  DANGEROUS COMMAND: dangerous command" in ln)
        self.assertEqual(lines[at + 1], "      chmod 777 /")  # the command has its own line
        self.keys("a")
        self.keys("Enter")
        rows = self.final_reply()
        self.assertEqual(self.brief(rows)[-2:], [
            ("tool", "approved (always): output of chmod 777 /"),
            ("assistant", "approval: always")])

    def clarify_panel(self):
        """The clarify panel's rows (text between "│ " and " │", right-trimmed),
        its two lines below and the input's first line; None while none shows."""
        lines = self.capture().splitlines()
        top = [i for i, ln in enumerate(lines) if ln.startswith("╭─ Hermes needs your input ")]
        if not top:
            return None
        bottom = next(i for i in range(top[0], len(lines)) if lines[i].startswith("╰"))
        self.assertEqual({len(ln) for ln in lines[top[0]:bottom + 1]}, {len(lines[top[0]])})  # a box
        self.assertGreaterEqual(len(lines[top[0]]), 50)  # inner width at least 48
        rows = [ln[1:-1].strip() for ln in lines[top[0] + 1:bottom]]
        rules = [i for i, ln in enumerate(lines) if ln.startswith("────")]
        prompt = lines[rules[-2] + 1] if len(rules) >= 2 else None  # from the same capture
        return rows, lines[bottom + 1:bottom + 3], prompt

    def clarify_calls(self, rows):
        """(arguments of each clarify call, content of each clarify tool row), checking the ids."""
        calls = [c for r in rows if r["tool_calls"] for c in json.loads(r["tool_calls"])]
        results = [r for r in rows if r["role"] == "tool"]
        self.assertEqual([c["function"]["name"] for c in calls], ["clarify"] * len(calls))
        self.assertEqual([(r["tool_name"], r["tool_call_id"]) for r in results],
                         [("clarify", c["id"]) for c in calls])
        return ([json.loads(c["function"]["arguments"]) for c in calls],
                [json.loads(r["content"]) for r in results])

    def test_clarify_single_select_panel_digit_and_arrows(self):
        self.start()
        self.deliver("clarify Which colour? / red,blue,green")
        rows, below, prompt = self.wait_for(self.clarify_panel, "the clarify panel")
        self.assertEqual(rows, ["", "Which colour?", "", "❯ 1. red (Recommended)", "2. blue", "3. green",
                                "4. Other (type your answer)", ""])
        self.assertRegex(below[0], r"^  ❓ Which colour\?  \(\s*[\d.]+s · ↓ 5 tok\)$")
        self.assertRegex(below[1], r"^  ↑/↓ to select, Enter to confirm  \(1[12]\ds\)$")
        self.assertEqual(prompt, "? ❯")
        self.keys("x", "9")  # printable keys and a digit without a row do nothing
        self.keys("Down", "Down", "Down", "Down")  # clamped at Other...
        self.wait_for(lambda: self.clarify_panel()[0][6] == "❯ 4. Other (type your answer)", "❯ on Other")
        self.keys("Up")  # ...so one step up is green
        self.wait_for(lambda: self.clarify_panel()[0][5] == "❯ 3. green", "❯ on green")
        self.keys("2")  # a choice's digit answers at once
        rows = self.final_reply()
        self.assertIsNone(self.clarify_panel())
        self.assertEqual(rows[-1]["content"], "clarified: blue")
        self.assertEqual(rows[1]["finish_reason"], "tool_calls")
        args, results = self.clarify_calls(rows)
        self.assertEqual(args, [{"question": "Which colour?", "choices": ["red", "blue", "green"]}])
        self.assertEqual(results, [{"question": "Which colour?", "choices_offered": ["red", "blue", "green"],
                                    "user_response": "blue"}])
        # Enter picks the highlighted row; the answer never carries "(Recommended)"
        self.deliver("clarify Which colour? / red,blue")
        self.wait_for(self.clarify_panel, "the clarify panel")
        self.keys("Enter")
        self.assertEqual(self.final_reply()[-1]["content"], "clarified: red")
        self.deliver("clarify Which colour? / red,blue")
        self.wait_for(self.clarify_panel, "the clarify panel")
        self.keys("Down")
        self.keys("Enter")
        self.assertEqual(self.final_reply()[-1]["content"], "clarified: blue")
        self.assertEqual([e["answer"] for e in self.events("clarify")], ["blue", "red", "blue"])
        self.assertEqual([r["content"] for r in self.rows() if r["role"] == "user"],
                         ["clarify Which colour? / red,blue,green"] + ["clarify Which colour? / red,blue"] * 2)

    def test_clarify_other_then_a_typed_answer(self):
        self.start()
        self.deliver("clarify Which colour? / red,blue")
        self.wait_for(self.clarify_panel, "the clarify panel")
        self.keys("Down", "Down")
        self.wait_for(lambda: self.clarify_panel()[0][5] == "❯ 3. Other (type your answer)", "❯ on Other")
        self.keys("Enter")  # Other: a typed answer
        rows, below, prompt = self.wait_for(
            lambda: (p := self.clarify_panel()) and p[2].startswith("✎") and p, "the typed-answer state")
        self.assertEqual(rows, ["", "Which colour?", "", "1. red (Recommended)", "2. blue",
                                "❯ 3. Other (type below)", ""])
        self.assertRegex(below[1], r"^  type your answer and press Enter  \(1[12]\ds\)$")
        self.assertEqual(prompt, "✎ ❯ type your answer here and press Enter")
        self.keys("Enter")  # an empty answer: nothing happens
        time.sleep(0.3)
        self.assertIsNotNone(self.clarify_panel())
        self.keys("-l", "purpel")
        self.keys("BSpace", "BSpace", "BSpace")
        self.tmux("load-buffer", "-b", "b", "-", input=b"ple\nish ", check=True)
        self.tmux("paste-buffer", "-p", "-d", "-b", "b", "-t", "main", check=True)
        self.wait_for(lambda: self.input_area() == "✎ ❯ purple ish", "the typed answer")
        self.keys("Enter")
        rows = self.final_reply()
        self.assertIsNone(self.clarify_panel())
        self.wait_for(lambda: "\n❯\n" in self.capture(), "an empty idle prompt")  # no answer left in the draft
        self.assertEqual(rows[-1]["content"], "clarified: purple ish")
        self.assertEqual([r["content"] for r in rows if r["role"] == "user"], ["clarify Which colour? / red,blue"])
        self.assertEqual(self.clarify_calls(rows)[1][0]["user_response"], "purple ish")
        self.assertEqual([e["answer"] for e in self.events("clarify")], ["purple ish"])

    def test_clarify_open_ended_typed_answer(self):
        self.start()
        self.deliver("clarify What name?")
        rows, below, prompt = self.wait_for(self.clarify_panel, "the clarify panel")
        self.assertEqual(rows, ["", "What name?", "", "Type your answer in the prompt below, then",
                                "press Enter.", "", ""])
        self.assertRegex(below[0], r"^  ❓ What name\?  \(")
        self.assertRegex(below[1], r"^  type your answer and press Enter  \(1[12]\ds\)$")
        self.assertEqual(prompt, "✎ ❯ type your answer here and press Enter")
        self.keys("-l", "Ada 1")
        self.wait_for(lambda: self.input_area() == "✎ ❯ Ada 1", "the typed answer")
        self.keys("Enter")
        rows = self.final_reply()
        self.assertEqual(rows[-1]["content"], "clarified: Ada 1")
        args, results = self.clarify_calls(rows)
        self.assertEqual(args, [{"question": "What name?"}])  # no choices key
        self.assertEqual(results, [{"question": "What name?", "choices_offered": None, "user_response": "Ada 1"}])

    def test_clarify_multi_select_toggles(self):
        self.start()
        self.deliver("clarify-some Which toppings? / cheese,ham,pepper")
        rows, below, prompt = self.wait_for(self.clarify_panel, "the clarify panel")
        self.assertEqual(rows, ["Which toppings?", "❯ [ ] 1. cheese (Recommended)"])  # compact
        self.assertEqual(prompt, "? ❯")
        self.keys("2")  # toggles ham (and shows it); nothing is submitted
        self.wait_for(lambda: self.clarify_panel()[0] == ["Which toppings?", "❯ [x] 2. ham"], "ham checked")
        self.keys("3", "1", "1")  # pepper on, cheese on and off again
        self.wait_for(lambda: self.clarify_panel()[0][1] == "❯ [ ] 1. cheese (Recommended)", "cheese unchecked")
        self.keys("Down")
        self.wait_for(lambda: self.clarify_panel()[0][1] == "❯ [x] 2. ham", "❯ on ham")
        self.keys("Enter")
        rows = self.final_reply()
        self.assertEqual(rows[-1]["content"], "clarified: ham, pepper")
        args, results = self.clarify_calls(rows)
        self.assertEqual(args, [{"question": "Which toppings?", "choices": ["cheese", "ham", "pepper"],
                                 "multi_select": True}])
        self.assertEqual(results[0]["user_response"], ["ham", "pepper"])
        # Other checked: Enter asks for a typed answer, which follows the checked choices
        self.deliver("clarify-some Which toppings? / cheese,ham")
        self.wait_for(self.clarify_panel, "the clarify panel")
        self.keys("3", "1")
        self.wait_for(lambda: self.clarify_panel()[0][1] == "❯ [x] 1. cheese (Recommended)", "cheese checked")
        self.keys("Enter")
        self.wait_for(lambda: self.clarify_panel()[0] == ["Which toppings?", "❯ [x] 3. Other (type below)"],
                      "the typed-answer state")
        self.assertEqual(self.input_area(), "✎ ❯ type your answer here and press Enter")
        self.keys("-l", "olives")
        self.wait_for(lambda: self.input_area() == "✎ ❯ olives", "the typed answer")
        self.keys("Enter")
        rows = self.final_reply()
        self.assertEqual(rows[-1]["content"], "clarified: cheese, olives")
        self.assertEqual(self.clarify_calls(rows)[1][-1]["user_response"], ["cheese", "olives"])
        # nothing checked: an empty answer
        self.deliver("clarify-some Which toppings? / cheese,ham")
        self.wait_for(self.clarify_panel, "the clarify panel")
        self.keys("Enter")
        rows = self.final_reply()
        self.assertEqual(rows[-1]["content"], "clarified: ")
        self.assertEqual(self.clarify_calls(rows)[1][-1]["user_response"], [])
        self.assertEqual([e["answer"] for e in self.events("clarify")],
                         [["ham", "pepper"], ["cheese", "olives"], []])

    def test_clarify_keeps_four_choices_and_times_out(self):
        self.start(FAKE_HERMES_CLARIFY_S="1.5")
        self.deliver("clarify Pick one / a,b,c,d,e")
        rows = self.wait_for(self.clarify_panel, "the clarify panel")[0]
        self.assertEqual(rows[3:9], ["❯ 1. a (Recommended)", "2. b", "3. c", "4. d",
                                     "5. Other (type your answer)", ""])
        self.wait_screen("(clarify timed out after 1.5s — agent will decide)")
        rows = self.final_reply()
        self.assertIsNone(self.clarify_panel())
        timeout = ("The user did not provide a response within the time limit. "
                   "Use your best judgement to make the choice and proceed.")
        self.assertEqual(rows[-1]["content"], "clarified: " + timeout)
        args, results = self.clarify_calls(rows)
        self.assertEqual(args[0]["choices"], ["a", "b", "c", "d", "e"])  # as the model asked
        self.assertEqual(results, [{"question": "Pick one", "choices_offered": ["a", "b", "c", "d"],
                                    "user_response": timeout}])
        [event] = self.events("clarify")
        self.assertEqual((event["answer"], event["timeout"]), (None, True))

    def test_ctrl_c_at_a_clarify_panel_interrupts_the_turn(self):
        self.start()
        self.deliver("clarify Which colour? / red,blue")
        self.wait_for(self.clarify_panel, "the clarify panel")
        self.keys("C-c")
        self.wait_screen("⚡ Interrupted during API call.")
        self.assertIsNone(self.clarify_panel())
        self.assertEqual([r["role"] for r in self.rows()], ["user", "assistant"])  # no tool row
        self.assertEqual(self.events("clarify"), [])

    def test_ctrl_c_interrupts_and_keeps_the_partial_text(self):
        self.start()
        self.deliver("slow 30")
        self.wait_screen("⚕ ❯ msg=interrupt")
        time.sleep(1.5)
        self.keys("Escape")  # not bound: the turn goes on
        time.sleep(0.3)
        self.assertIn("⚕ ❯", self.input_area())
        t0 = time.time()
        self.keys("C-c")
        self.wait_screen("⚡ Interrupted during API call.")
        self.assertLess(time.time() - t0, 2)
        rows = self.rows()
        self.assertEqual(self.brief(rows)[0], ("user", "slow 30"))
        self.assertRegex(rows[1]["content"], r"^tick0 tick1( tick2)?$")  # what streamed so far
        self.assertEqual(len(rows), 2)
        self.assertIsNone(rows[-1]["finish_reason"])
        self.wait_for(lambda: self.input_area().startswith("❯"), "the idle prompt")
        self.deliver("still here")
        self.wait_for(lambda: self.rows()[-1]["content"] == "echo: still here", "the next turn")

    def test_ctrl_c_right_away_stores_nothing_and_twice_force_exits(self):
        self.start()
        self.deliver("slow 30")
        self.wait_for(lambda: self.rows(), "the user row")
        self.keys("C-c")
        self.wait_screen("⚡ Interrupted during API call.")
        self.assertEqual(self.brief(self.rows()), [("user", "slow 30")])  # nothing streamed yet
        time.sleep(2.1)  # the TUI remembers the last Ctrl-C across turns
        self.deliver("slow 30")
        self.wait_screen("⚕ ❯")
        self.keys("C-c")
        self.keys("C-c")
        self.wait_for(lambda: self.tmux("has-session", "-t", "main").returncode != 0, "a forced exit")

    def test_ctrl_c_when_idle_clears_the_draft_then_exits(self):
        self.start()
        self.tmux("load-buffer", "-b", "b", "-", input=b"draft text", check=True)
        self.tmux("paste-buffer", "-p", "-d", "-b", "b", "-t", "main", check=True)
        self.wait_screen("draft text")
        self.keys("C-c")
        self.wait_for(lambda: "draft text" not in self.capture(), "the draft cleared")
        self.assertEqual(self.tmux("has-session", "-t", "main").returncode, 0)
        self.keys("C-c")
        self.wait_for(lambda: self.tmux("has-session", "-t", "main").returncode != 0, "the exit")

    def test_a_stuck_turn_ignores_ctrl_c(self):
        self.start()
        self.deliver("stuck 2")
        self.wait_screen("⚕ ❯")
        self.keys("C-c")
        self.wait_screen("⚡ Interrupting agent...")
        time.sleep(1)
        self.assertIn("⚕ ❯", self.input_area())  # still in the turn
        self.wait_screen("⚡ Interrupted during API call.")
        self.assertEqual(self.brief(self.rows()), [("user", "stuck 2")])
        self.deliver("stuck 1")  # left alone it answers
        self.assertEqual(self.final_reply()[-1]["content"], "unstuck after 1")

    def test_message_while_busy_interrupts_and_starts_a_new_turn(self):
        self.start()
        self.deliver("slow 30")
        self.wait_screen("⚕ ❯")
        time.sleep(1.2)
        self.deliver("new question")
        self.wait_for(lambda: self.rows()[-1]["content"] == "echo: new question", "the new turn")
        rows = self.brief(self.rows())
        self.assertEqual([rows[0], rows[2], rows[3]], [
            ("user", "slow 30"), ("user", "new question"), ("assistant", "echo: new question")])
        self.assertEqual(rows[1][0], "assistant")
        self.assertRegex(rows[1][1], r"^tick0 tick1( tick2)*$")  # the partial answer, before the new turn

    def test_steer_rides_on_the_next_tool_result(self):
        self.start()
        self.deliver("tool sleep 1.5")
        self.wait_screen("⚕ ❯")
        self.deliver("/steer also check the logs")
        self.wait_screen("⏩ Steer queued")
        rows = self.final_reply()
        self.assertEqual(self.brief(rows), [
            ("user", "tool sleep 1.5"), ("assistant", "Let me run that."),
            ("tool", "output of sleep 1.5"),
            ("assistant", "ran sleep 1.5 (steered: also check the logs)")])

    def test_steer_without_a_tool_call_becomes_the_next_turn(self):
        self.start()
        self.deliver("slow 2")
        self.wait_screen("⚕ ❯")
        self.deliver("/steer and then stop")
        self.wait_for(lambda: len(self.rows()) == 4, "the leftover turn")
        self.assertEqual(self.brief(self.rows()), [
            ("user", "slow 2"), ("assistant", "tick0 tick1 done"),
            ("user", "and then stop"), ("assistant", "echo: and then stop")])
        self.assertIn("Delivering leftover /steer as next turn", self.capture())

    def test_bang_and_slash_lines_are_the_tuis_own_as_in_0_20(self):
        self.start()
        marker = self.tmp / "banged"
        self.deliver(f"!echo ran >> {marker}")
        self.wait_for(marker.exists, "the shell command's file")
        self.deliver("/yolo")
        self.wait_screen("YOLO mode ON")
        self.deliver("/nosuch thing")
        self.wait_screen("Unknown command: /nosuch")
        self.assertEqual(self.rows(), [], "no line so far was a message")
        self.assertEqual([e["command"] for e in self.events("bang")], [f"echo ran >> {marker}"])
        self.assertEqual([e["name"] for e in self.events("command")], ["/yolo", "/nosuch"])
        self.deliver("danger rm -rf /tmp/x")  # approvals are off: no panel, no wait
        self.assertEqual(self.final_reply()[-1]["content"], "approval: yolo")
        self.deliver("/src/main.c why?")  # a path as the first word is a message
        self.assertEqual(self.final_reply()[-1]["content"], "echo: /src/main.c why?")
        # Typed while a turn runs, a bang line waits for the turn and runs once.
        self.deliver("slow 2")
        self.wait_screen("⚕ ❯")
        self.deliver(f"!echo again >> {marker}")
        self.assertEqual(self.final_reply()[-1]["content"], "tick0 tick1 done")
        self.wait_for(lambda: marker.read_text() == "ran\nagain\n", "the queued shell command")

    def test_a_bang_line_is_a_message_for_0_18(self):
        self.start(FAKE_HERMES_VERSION="0.18")
        self.deliver("!echo hi")
        self.assertEqual(self.brief(self.final_reply()), [("user", "!echo hi"), ("assistant", "echo: !echo hi")])
        self.assertEqual(self.events("bang"), [])

    def test_danger_again_replaces_the_prompt_with_a_new_one_of_the_same_text(self):
        self.start()
        self.deliver("danger-again rm -rf /tmp/again")
        self.wait_screen("4. Deny")
        self.keys("4")
        self.wait_for(lambda: len(self.rows()) == 4, "the second tool call")
        self.assertIn("4. Deny", self.capture())  # the panel never went away
        self.keys("1")
        rows = self.final_reply()
        self.assertEqual([r["role"] for r in rows], ["user", "assistant", "tool", "assistant", "tool", "assistant"])
        self.assertEqual((rows[2]["content"], rows[4]["content"], rows[5]["content"]),
                         ("denied: rm -rf /tmp/again", "approved (once): output of rm -rf /tmp/again",
                          "approval: deny, once"))
        self.assertNotEqual(rows[1]["tool_calls"], rows[3]["tool_calls"])

    def test_long_paste_is_collapsed_and_expanded_on_submit(self):
        self.start()
        text = "\n".join(f"line {i}\twith a tab" for i in range(6))
        self.deliver(text)
        rows = self.final_reply()
        self.assertEqual(rows[0]["content"], text)
        [path] = (self.tmp / "pastes").glob("paste_1_*.txt")  # beside state.db: no HERMES_HOME here
        self.assertEqual(path.read_text(), text)

    def test_draft_keys_are_line_wise(self):
        self.start()
        self.tmux("load-buffer", "-b", "b", "-", input=b"first\tline\nsecond line", check=True)
        self.tmux("paste-buffer", "-p", "-d", "-b", "b", "-t", "main", check=True)
        self.wait_screen("second line")
        self.assertEqual(self.input_area(), "❯ first^Iline\nsecond line")  # no indent, tab as ^I
        self.keys("C-a")
        self.keys("C-k")  # only the current (last) line goes
        self.wait_for(lambda: self.input_area() == "❯ first^Iline\n", "a line-wise C-k")
        self.keys("C-Home")
        self.keys("C-k", "C-k")
        self.wait_for(lambda: self.input_area() == "❯", "the draft cleared")

    def test_status_bar_clock_ticks(self):
        self.start()
        first = self.capture()
        time.sleep(1.3)
        second = self.capture()
        self.assertNotEqual(first, second)
        strip = lambda t: [ln for ln in t.splitlines() if "│ ctx" not in ln]
        self.assertEqual(strip(first), strip(second))

    def test_drop_first(self):
        self.start(FAKE_HERMES_DROP_FIRST="1")
        self.deliver("hello one")
        self.wait_for(lambda: "hello one" not in self.capture(), "the draft to clear")
        time.sleep(0.5)
        self.assertEqual(self.rows(), [])
        self.deliver("hello two")
        rows = self.final_reply()
        self.assertEqual(self.brief(rows), [("user", "hello two"),
                                            ("assistant", "echo: hello two")])

    def test_compress_continues_in_child(self):
        self.start()
        self.deliver("compress the story so far")
        rows = self.final_reply()
        parent, child = self.sessions()
        self.assertEqual(child["parent_session_id"], parent["id"])
        self.assertEqual(parent["end_reason"], "compression")
        self.assertIsNotNone(parent["ended_at"])
        self.assertEqual(child["cwd"], parent["cwd"])
        self.assertEqual([(r["session_id"], r["content"]) for r in rows], [
            (parent["id"], "compress the story so far"),
            (child["id"], "compressed: the story so far")])
        self.deliver("after compression")
        rows = self.final_reply()
        self.assertEqual({r["session_id"] for r in rows[-2:]}, {child["id"]})

    def test_two_tuis_share_state_db(self):
        self.start()
        other = self.tmp / "ws2"
        other.mkdir()
        self.tmux("new-session", "-d", "-s", "second", "-x", "160", "-y", "48",
                  "-c", str(other), str(FAKE), check=True)
        self.settle("second")
        self.deliver("tool uname -a")
        self.deliver("tool date", "second")
        def finals():
            return sorted(r["content"] for r in self.rows() if r["content"].startswith("ran "))
        self.wait_for(lambda: len(finals()) == 2, "both turns")
        self.assertEqual(finals(), ["ran date", "ran uname -a"])
        by_cwd = {s["cwd"]: s["id"] for s in self.sessions()}
        self.assertEqual(set(by_cwd), {os.path.realpath(self.ws), os.path.realpath(other)})
        for r in self.rows():
            cwd = self.ws if "uname" in (r["content"] or "") + (r["tool_calls"] or "") else other
            self.assertEqual(r["session_id"], by_cwd[os.path.realpath(cwd)], r)

    def test_destroy_sends_sighup(self):
        self.start()
        pid = int(self.tmux("display", "-p", "-t", "main", "#{pane_pid}").stdout)
        self.tmux("kill-session", "-t", "main", check=True)

        def gone():
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
        self.wait_for(gone, "the fake to exit")

    def test_exit_ends_tmux_session(self):
        self.start()
        self.deliver("exit")
        self.wait_for(lambda: self.tmux("has-session", "-t", "main").returncode != 0,
                      "the tmux session to end")
        self.assertEqual(self.brief(self.rows()), [("user", "exit")])


if __name__ == "__main__":
    unittest.main()
