// The clarify panel as hermes 0.18.2 and 0.20.3 draw it (screens captured
// from the real TUIs in tmux), the clarify call in state.db, and the keys
// that give an answer.
#include "bridge/tmux/clarify_panel.hpp"

#include <catch2/catch.hpp>

using namespace hb::bridge;

namespace {

std::string rule() {
  std::string r;
  for (int i = 0; i < 60; ++i)
    r += "─";
  return r;
}

std::string screen(const std::string& panel, const std::string& hint, const std::string& prompt) {
  return "● clarify Which colour? / red,blue,green\n"
         "  ┊ ❓ preparing clarify…\n" +
         panel + "  ❓ Which colour?  (  1.0s · ↓ 5 tok)\n" + hint +
         " ⚕ fake-model │ 10/131.1K │ [░░░░░░░░░░] 0% │ 17s │ ⏱ 5s\n" + rule() + "\n" + prompt + "\n" + rule() + "\n";
}

// 0.20.3, single-select: every row, the first choice recommended.
const std::string full_panel = "╭─ Hermes needs your input ──────────────────────────────────────╮\n"
                               "│                                                                │\n"
                               "│ Which colour?                                                  │\n"
                               "│                                                                │\n"
                               "│ ❯ 1. red (Recommended)                                         │\n"
                               "│   2. blue                                                      │\n"
                               "│   3. green                                                     │\n"
                               "│   4. violet with a much longer label that wraps around the     │\n"
                               "│     panel width for sure yes                                   │\n"
                               "│   5. Other (type your answer)                                  │\n"
                               "│                                                                │\n"
                               "╰────────────────────────────────────────────────────────────────╯\n";
const std::string choose_hint = "  ↑/↓ to select, Enter to confirm  (118s)\n";
const std::string type_hint = "  type your answer and press Enter  (117s)\n";

// 0.18.2 (and 0.20.3 for multi-select): only the highlighted row.
const std::string compact_panel = "╭─ Hermes needs your input ──────────────────────╮\n"
                                  "│ Which colour?                                  │\n"
                                  "│ ❯ 1. red                                       │\n"
                                  "╰────────────────────────────────────────────────╯\n";
const std::string multi_panel = "╭─ Hermes needs your input ──────────────────────╮\n"
                                "│ Which toppings?                                │\n"
                                "│ ❯ [ ] 1. cheese (Recommended)                  │\n"
                                "╰────────────────────────────────────────────────╯\n";
const std::string open_panel = "╭─ Hermes needs your input ──────────────────────╮\n"
                               "│                                                │\n"
                               "│ What name?                                     │\n"
                               "│                                                │\n"
                               "│ Type your answer in the prompt below, then     │\n"
                               "│ press Enter.                                   │\n"
                               "│                                                │\n"
                               "│                                                │\n"
                               "╰────────────────────────────────────────────────╯\n";

std::string call_json(const std::string& arguments) {
  return R"([{"id": "call_1", "type": "function", "function": {"name": "clarify", "arguments": )" + arguments + "}}]";
}

clarify_call colours() {
  return *clarify_call_in(call_json(R"("{\"question\": \"Which colour?\", \"choices\": [\"red\", \"blue\", \"green\"]}")"));
}

} // namespace

TEST_CASE("the clarify panel is read in both layouts, with its question and countdown") {
  auto full = parse_clarify_panel(screen(full_panel, choose_hint, "? ❯"));
  REQUIRE(full);
  CHECK(full->question == "Which colour?");
  CHECK_FALSE(full->multi_select);
  CHECK_FALSE(full->typing);
  CHECK(full->countdown_s == 118);
  auto compact = parse_clarify_panel(screen(compact_panel, choose_hint, "? ❯"));
  REQUIRE(compact);
  CHECK(compact->question == "Which colour?");
  auto multi = parse_clarify_panel(screen(multi_panel, choose_hint, "? ❯"));
  REQUIRE(multi);
  CHECK(multi->question == "Which toppings?");
  CHECK(multi->multi_select);
}

TEST_CASE("an open-ended question, and Other once picked, take a typed answer") {
  auto open = parse_clarify_panel(screen(open_panel, type_hint, "✎ ❯ type your answer here and press Enter"));
  REQUIRE(open);
  CHECK(open->question == "What name?"); // the guidance rows are not the question
  CHECK(open->typing);
  CHECK(open->countdown_s == 117);
  std::string other = "╭─ Hermes needs your input ──────────────────────╮\n"
                      "│ Which size?                                    │\n"
                      "│ ❯ 3. Other (type below)                        │\n"
                      "╰────────────────────────────────────────────────╯\n";
  auto typing = parse_clarify_panel(screen(other, type_hint, "✎ ❯ medium please"));
  REQUIRE(typing);
  CHECK(typing->typing);
  CHECK(typing->question == "Which size?");
}

TEST_CASE("no clarify panel: none on screen, an approval prompt, or the panel going while the prompt is idle") {
  CHECK_FALSE(parse_clarify_panel(screen("", "", "❯")));
  CHECK_FALSE(parse_clarify_panel(screen(full_panel, choose_hint, "❯"))); // answered: the prompt is back
  CHECK_FALSE(parse_clarify_panel(screen(full_panel, choose_hint, "⚠ ❯")));
  CHECK_FALSE(parse_clarify_panel("just some text\n"));
}

TEST_CASE("a question too long for the panel is cut, and still matches its call") {
  std::string cut = "╭─ Hermes needs your input ──────────────────────╮\n"
                    "│ Which of these colours would you like the      │\n"
                    "│ … (question truncated)                         │\n"
                    "│ ❯ 1. red                                       │\n"
                    "╰────────────────────────────────────────────────╯\n";
  auto panel = parse_clarify_panel(screen(cut, choose_hint, "? ❯"));
  REQUIRE(panel);
  CHECK(panel->question == "Which of these colours would you like the");
  clarify_call call;
  call.question = "Which of these colours would you like the  kitchen to be painted?";
  CHECK(panel_shows(*panel, call));
  call.question = "Which size?";
  CHECK_FALSE(panel_shows(*panel, call));
}

TEST_CASE("the clarify call is read as hermes cleans it") {
  auto call = clarify_call_in(call_json(
    R"("{\"question\": \"Pick\", \"choices\": [\" a \", {\"label\": \"b\"}, {\"value\": \"x\"}, \"\", \"c\", \"d\", \"e\"], \"multi_select\": true}")"));
  REQUIRE(call);
  CHECK(call->question == "Pick");
  CHECK(call->choices == std::vector<std::string>{"a", "b", "c", "d"}); // blanks dropped, at most four
  CHECK(call->multi_select);
  auto open = clarify_call_in(call_json(R"({"question": "What name?"})")); // arguments as an object
  REQUIRE(open);
  CHECK(open->choices.empty());
  CHECK_FALSE(open->multi_select);
  CHECK_FALSE(clarify_call_in(R"([{"function": {"name": "terminal", "arguments": "{}"}}])"));
  CHECK_FALSE(clarify_call_in("not json"));
}

TEST_CASE("an answer is a choice's digit, or Other and the text typed") {
  auto panel = *parse_clarify_panel(screen(compact_panel, choose_hint, "? ❯"));
  auto call = colours();
  auto blue = keys_for_answer(panel, call, "Blue");
  CHECK(blue.keys == std::vector<std::string>{"2"});
  CHECK(blue.typed.empty());
  CHECK(keys_for_answer(panel, call, "red (Recommended)").keys == std::vector<std::string>{"1"});
  auto other = keys_for_answer(panel, call, "purple\nplease");
  CHECK(other.keys == std::vector<std::string>{"4"});
  CHECK(other.typed == "purple please"); // one line: Enter would send it half-typed
  auto none = keys_for_answer(panel, call, "  ");
  CHECK(none.keys.empty());
  CHECK(none.typed.empty());
}

TEST_CASE("multi-select answers toggle each choice, and Other carries the rest") {
  auto panel = *parse_clarify_panel(screen(multi_panel, choose_hint, "? ❯"));
  clarify_call call;
  call.question = "Which toppings?";
  call.choices = {"cheese", "ham", "olives"};
  call.multi_select = true;
  auto some = keys_for_answer(panel, call, "olives, cheese");
  CHECK(some.keys == std::vector<std::string>{"1", "3", "Enter"});
  CHECK(some.typed.empty());
  auto more = keys_for_answer(panel, call, "ham, pepper, salt");
  CHECK(more.keys == std::vector<std::string>{"2", "4", "Enter"});
  CHECK(more.typed == "pepper, salt");
}

TEST_CASE("at the typed prompt an answer is only typed; unknown choices walk down to Other") {
  auto typing = *parse_clarify_panel(screen(open_panel, type_hint, "✎ ❯"));
  clarify_call open;
  open.question = "What name?";
  auto bob = keys_for_answer(typing, open, "Bob");
  CHECK(bob.keys.empty());
  CHECK(bob.typed == "Bob");
  auto panel = *parse_clarify_panel(screen(compact_panel, choose_hint, "? ❯"));
  clarify_call unknown;
  unknown.question = "Which colour?";
  auto walked = keys_for_answer(panel, unknown, "blue");
  CHECK(walked.keys == std::vector<std::string>{"Down", "Down", "Down", "Down", "Down", "Enter"});
  CHECK(walked.typed == "blue");
}
