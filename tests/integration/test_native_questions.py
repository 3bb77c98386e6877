"""Native sessions' questions: the Dangerous Command panel and the clarify
panel of the hermes TUI (tests/fake_hermes/hermes) as client questions,
answered with the panels' own keys, through the real daemon's socket."""

from __future__ import annotations

from harness import events_named
from native_support import NativeFixture, tmux


class NativeApprovals(NativeFixture):
    def digit_keys_sent(self) -> list[dict]:
        return [e for e in self.tui_log_entries()
                if e.get("event") == "input" and e.get("bytes") in ("1", "2", "3", "4")]

    def test_a_long_command_is_shown_in_full_before_it_is_announced(self):
        cmd = "rm -rf " + " ".join(f"/tmp/some-rather/long-path/number/{i}/of-many" for i in range(8))
        run_id = self.chat("n-long-cmd", "danger " + cmd)["run_id"]
        asked = self.bridge.wait_event(run_id, "approval.requested", timeout=20)
        self.assertEqual(asked["command"], cmd)
        self.assertEqual(asked["description"], "recursive delete")
        self.assertEqual(asked["choices"], ["once", "session", "always", "deny"])
        views = [e for e in self.tui_log_entries() if e.get("event") == "approval_view"]
        self.assertEqual([v["key"] for v in views], ["5"])
        self.bridge.request({"action": "approval_respond", "approval_id": asked["approval_id"], "choice": "once"})
        done = self.bridge.wait_done(run_id, timeout=20)
        self.assertIn("approval: once", done["output"])

    def test_approval_answered_through_the_socket(self):
        run_id = self.chat("n-approve", "danger rm -rf /tmp/scratch")["run_id"]
        asked = self.bridge.wait_event(run_id, "approval.requested", timeout=20)
        self.assertEqual(asked["command"], "rm -rf /tmp/scratch")
        self.assertEqual(asked["choices"], ["once", "session", "always", "deny"])
        self.assertTrue(asked["allow_permanent"])
        answer = self.bridge.request({"action": "approval_respond", "approval_id": asked["approval_id"],
                                      "choice": "session"})
        self.assertTrue(answer["resolved"], answer)
        done = self.bridge.wait_done(run_id, timeout=20)
        self.assertEqual(done["status"], "complete", done)
        self.assertIn("approval: session", done["output"])
        resolved = events_named(done["seen_events"], "approval.resolved")
        self.assertEqual([(r["approval_id"], r["choice"]) for r in resolved], [(asked["approval_id"], "session")])
        keys = self.digit_keys_sent()
        self.assertEqual([k["bytes"] for k in keys], ["2"])
        self.assertTrue(all(k["panel"] for k in keys), keys)

    def test_a_steer_while_a_panel_shows_is_refused_and_answers_nothing(self):
        # Typed into a panel, a steer's Enter would pick the highlighted row
        # (the approval panel preselects "once"; a clarify panel, its first choice).
        run_id = self.chat("n-steer-panel", "danger rm -rf /tmp/scratch")["run_id"]
        asked = self.bridge.wait_event(run_id, "approval.requested", timeout=20)
        out = self.bridge.request({"action": "steer", "session_id": "n-steer-panel", "text": "go on then"})
        self.assertFalse(out["accepted"], out)
        self.assertEqual([e for e in self.tui_log_entries() if e.get("event") == "approval"], [])
        self.bridge.request({"action": "approval_respond", "approval_id": asked["approval_id"], "choice": "deny"})
        self.assertIn("approval: deny", self.bridge.wait_done(run_id, timeout=20)["output"])
        run_id = self.chat("n-steer-panel", "clarify Which colour? / red,blue")["run_id"]
        sock = self.native_status("n-steer-panel")["config"]["tmux_socket"]
        self.wait_for(lambda: "Hermes needs your input" in tmux(sock, "capture-pane", "-p", "-t", "main").stdout,
                      what="the clarify panel")
        out = self.bridge.request({"action": "steer", "session_id": "n-steer-panel", "text": "pick any"})
        self.assertFalse(out["accepted"], out)
        self.assertEqual([e for e in self.tui_log_entries() if e.get("event") == "clarify"], [])
        self.assertTrue(self.bridge.request({"action": "interrupt", "session_id": "n-steer-panel"})["ok"])
        self.assertEqual(self.bridge.wait_done(run_id, timeout=20)["status"], "interrupted")

    def test_a_choice_the_panel_does_not_offer_is_denied(self):
        run_id = self.chat("n-three", "danger3 shutdown now")["run_id"]
        asked = self.bridge.wait_event(run_id, "approval.requested", timeout=20)
        self.assertEqual(asked["choices"], ["once", "session", "deny"])
        self.assertFalse(asked["allow_permanent"])
        self.bridge.request({"action": "approval_respond", "approval_id": asked["approval_id"], "choice": "always"})
        done = self.bridge.wait_done(run_id, timeout=20)
        self.assertIn("approval: deny", done["output"])
        self.assertEqual([k["bytes"] for k in self.digit_keys_sent()], ["3"])

    def test_approval_answered_in_the_terminal(self):
        run_id = self.chat("n-term", "danger rm -rf /tmp/other")["run_id"]
        asked = self.bridge.wait_event(run_id, "approval.requested", timeout=20)
        sock = self.native_status("n-term")["config"]["tmux_socket"]
        self.assertEqual(tmux(sock, "send-keys", "-t", "main", "1").returncode, 0)  # the person at the TUI
        done = self.bridge.wait_done(run_id, timeout=20)
        self.assertEqual(done["status"], "complete", done)
        self.assertIn("approval: once", done["output"])
        resolved = events_named(done["seen_events"], "approval.resolved")
        self.assertEqual(len(resolved), 1, resolved)
        self.assertEqual(resolved[0]["approval_id"], asked["approval_id"])
        self.assertIsNone(resolved[0]["choice"])
        self.assertEqual(resolved[0]["reason"], "answered in the terminal")
        late = self.bridge.request({"action": "approval_respond", "approval_id": asked["approval_id"],
                                    "choice": "deny"})
        self.assertFalse(late["resolved"], late)
        # Only the person's key reached the TUI; the daemon sent none.
        self.assertEqual(len(self.digit_keys_sent()), 1)

    def test_legacy_prompt_is_answered_with_its_letter(self):
        run_id = self.chat("n-legacy", "danger-legacy chmod -R 777 /")["run_id"]
        asked = self.bridge.wait_event(run_id, "approval.requested", timeout=20)
        self.assertEqual(asked["command"], "chmod -R 777 /")  # not the header's danger description
        self.assertEqual(asked["description"], "dangerous command")
        self.bridge.request({"action": "approval_respond", "approval_id": asked["approval_id"], "choice": "once"})
        done = self.bridge.wait_done(run_id, timeout=20)
        self.assertIn("approval: once", done["output"])

    def test_a_panel_without_digits_is_answered_with_arrows_and_enter(self):
        run_id = self.chat("n-nodigits", "danger-nodigits mkfs /dev/sdz")["run_id"]
        asked = self.bridge.wait_event(run_id, "approval.requested", timeout=20)
        self.assertEqual(asked["choices"], ["once", "session", "always", "deny"])
        self.assertIn("mkfs /dev/sdz", asked["command"])
        self.bridge.request({"action": "approval_respond", "approval_id": asked["approval_id"], "choice": "session"})
        done = self.bridge.wait_done(run_id, timeout=20)
        self.assertIn("approval: session", done["output"])
        answers = [e for e in self.tui_log_entries() if e.get("event") == "approval"]
        self.assertEqual([a["key"] for a in answers], ["Enter on row 2"])

    def test_an_answer_to_a_prompt_replaced_by_one_with_the_same_text_is_refused(self):
        # The person denies at the terminal and the agent at once asks the same
        # command again (a new tool call): the screen shows the same text, but
        # it is another prompt, and the first question's answer must not land on it.
        run_id = self.chat("n-again", "danger-again rm -rf /tmp/again")["run_id"]
        first = self.bridge.wait_event(run_id, "approval.requested", timeout=20)
        sock = self.native_status("n-again")["config"]["tmux_socket"]
        self.assertEqual(tmux(sock, "send-keys", "-t", "main", "4").returncode, 0)

        def events(name: str) -> list[dict]:
            out = self.bridge.request({"action": "get_output", "run_id": run_id, "cursor": 0})
            return events_named(out["events"], name)

        [closed] = self.wait_for(lambda: [r for r in events("approval.resolved")
                                          if r["approval_id"] == first["approval_id"]], what="the first closed")
        self.assertEqual((closed["choice"], closed["reason"]), (None, "answered in the terminal"))
        late = self.bridge.request({"action": "approval_respond", "approval_id": first["approval_id"],
                                    "choice": "once"})
        self.assertFalse(late["resolved"], late)
        [second] = self.wait_for(lambda: [a for a in events("approval.requested")
                                          if a["approval_id"] != first["approval_id"]], what="the second asked")
        self.assertEqual(second["command"], first["command"])
        answer = self.bridge.request({"action": "approval_respond", "approval_id": second["approval_id"],
                                      "choice": "session"})
        self.assertTrue(answer["resolved"], answer)
        done = self.bridge.wait_done(run_id, timeout=20)
        self.assertIn("approval: deny, session", done["output"])
        self.assertEqual([k["bytes"] for k in self.digit_keys_sent()], ["4", "2"])

    def test_no_key_is_sent_while_no_panel_shows(self):
        self.turn("n-quiet", "tool echo hi")
        self.turn("n-quiet", "hello")
        self.assertEqual(self.digit_keys_sent(), [])
        self.assertTrue(all(not e.get("panel") for e in self.tui_log_entries() if e.get("event") == "input"))


class NativeClarify(NativeFixture):
    """The clarify panel as a client question, answered with the panel's own keys."""

    extra_env = {"FAKE_HERMES_CLARIFY_S": "40"}

    def ask(self, session_id: str, message: str) -> tuple[str, dict]:
        run_id = self.chat(session_id, message)["run_id"]
        return run_id, self.bridge.wait_event(run_id, "clarify.requested", timeout=20)

    def respond(self, asked: dict, response: str) -> None:
        out = self.bridge.request({"action": "clarify_respond", "clarify_id": asked["clarify_id"],
                                   "response": response})
        self.assertTrue(out["resolved"], out)

    def tui_answers(self) -> list:
        return [e["answer"] for e in self.tui_log_entries() if e.get("event") == "clarify"]

    def test_a_choice_is_asked_as_the_agent_asked_it_and_picked_with_its_digit(self):
        run_id, asked = self.ask("n-cl-pick", "clarify Which colour? / red,blue,green")
        self.assertEqual(asked["question"], "Which colour?")
        self.assertEqual(asked["choices"], ["red", "blue", "green"])  # bare: no "(Recommended)"
        self.assertEqual(asked["harness"], "native")
        self.assertNotIn("multi_select", asked)
        self.assertTrue(30_000 <= asked["timeout_ms"] <= 40_000, asked)  # the TUI's own countdown
        self.respond(asked, "Green")
        done = self.bridge.wait_done(run_id, timeout=20)
        self.assertEqual(done["status"], "complete", done)
        self.assertTrue(done["output"].endswith("clarified: green"), done)
        self.assertEqual(self.tui_answers(), ["green"])
        self.assertIn("3", [e["bytes"] for e in self.tui_log_entries() if e.get("event") == "input"])
        [resolved] = events_named(done["seen_events"], "clarify.resolved")
        self.assertEqual(resolved["response"], "Green")

    def test_an_answer_that_is_no_choice_goes_through_other(self):
        run_id, asked = self.ask("n-cl-other", "clarify Which size? / small,large")
        self.respond(asked, "purple")
        done = self.bridge.wait_done(run_id, timeout=20)
        self.assertTrue(done["output"].endswith("clarified: purple"), done)
        run_id, asked = self.ask("n-cl-other", "clarify Which size now? / small,large")
        self.respond(asked, "medium\nplease")  # one line at the prompt: Enter would send half of it
        done = self.bridge.wait_done(run_id, timeout=20)
        self.assertTrue(done["output"].endswith("clarified: medium please"), done)
        self.assertEqual(self.user_rows(), ["clarify Which size? / small,large", "clarify Which size now? / small,large"])

    def test_an_open_question_is_answered_by_typing(self):
        run_id, asked = self.ask("n-cl-open", "clarify What name?")
        self.assertIsNone(asked["choices"])
        self.respond(asked, "Bob")
        done = self.bridge.wait_done(run_id, timeout=20)
        self.assertTrue(done["output"].endswith("clarified: Bob"), done)

    def test_a_typed_answer_ending_in_semicolons_arrives_whole(self):
        # tmux reads an argument's trailing ';' as a command separator.
        run_id, asked = self.ask("n-cl-semi", "clarify What name?")
        self.respond(asked, "Bob; Alice;;")
        done = self.bridge.wait_done(run_id, timeout=20)
        self.assertTrue(done["output"].endswith("clarified: Bob; Alice;;"), done)
        self.assertEqual(self.tui_answers(), ["Bob; Alice;;"])

    def test_a_multi_select_answer_checks_each_choice_and_types_the_rest(self):
        run_id, asked = self.ask("n-cl-some", "clarify-some Which toppings? / cheese,ham,olives")
        self.assertEqual((asked["choices"], asked["multi_select"]), (["cheese", "ham", "olives"], True))
        self.respond(asked, "olives, cheese, pepper")
        done = self.bridge.wait_done(run_id, timeout=20)
        self.assertTrue(done["output"].endswith("clarified: cheese, olives, pepper"), done)
        self.assertEqual(self.tui_answers(), [["cheese", "olives", "pepper"]])

    def test_the_tuis_own_deadline_closes_the_question(self):
        self.bridges.remove(self.bridge)
        self.bridge.stop()
        self.bridge = self.start_bridge(env={"FAKE_HERMES_CLARIFY_S": "4"})
        run_id, asked = self.ask("n-cl-late", "clarify Which colour? / red,blue")
        self.assertLessEqual(asked["timeout_ms"], 4_000)
        done = self.bridge.wait_done(run_id, timeout=30)
        self.assertEqual(done["status"], "complete", done)
        self.assertIn("did not provide a response", done["output"])
        [closed] = events_named(done["seen_events"], "clarify.resolved")  # asked once
        self.assertIsNone(closed["response"])
        self.assertIn(closed["reason"], ("timed out in the terminal", "timeout"))
        answer = self.bridge.request({"action": "clarify_respond", "clarify_id": asked["clarify_id"],
                                      "response": "red"})
        self.assertFalse(answer["resolved"], answer)  # too late: nothing typed into the next prompt
        self.assertEqual(self.tui_answers(), [None])


if __name__ == "__main__":
    import unittest

    unittest.main()
