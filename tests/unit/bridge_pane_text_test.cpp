// The pane rules of the native harness: what a paste carries, when it has
// arrived, and reading a Dangerous Command prompt off the screen.
#include "bridge/tmux/pane_text.hpp"

#include <catch2/catch.hpp>

using namespace hb::bridge;
using keys = std::vector<std::string>;

TEST_CASE("a paste keeps tabs, sends every line break as CR and drops control bytes") {
  CHECK(paste_payload("a\tb\r\nc\nd\re") == "a\tb\rc\rd\re");
  CHECK(paste_payload(std::string("x\x1b[201~y\x07z", 10)) == "x[201~yz");
  CHECK(paste_payload("ends with backslash \\") == "ends with backslash \\");
  CHECK(paste_payload("héllo ✓") == "héllo ✓");
}

TEST_CASE("the commit needle comes from the last line of at least four characters") {
  CHECK(commit_needle("first line\nsecond line\nok") == "second line");
  CHECK(commit_needle("hi") == "hi");
  CHECK(commit_needle("  \n \t ") == "");
  CHECK(commit_needle("a line that is much longer than twenty-four characters") == "a line that is much long");
  // 24 code points, not bytes
  CHECK(commit_needle("ééééééééééééééééééééééééééé") == "éééééééééééééééééééééééé");
}

TEST_CASE("messages compare with line breaks unified and the ends stripped") {
  CHECK(normalized_message("  a\r\nb\rc \n") == "a\nb\nc");
  CHECK(normalized_message("tab\there\\") == "tab\there\\");
}

namespace {

// As hermes 0.18.2 draws it (the trailing cells after the box are its own).
const char* panel = R"(● delete it
╭────────────────────────────────────────────────╮
│ ⚠️  Dangerous Command                          │
│                                                │
│ rm -rf /tmp/scratch                            │       
│                                                │
│ ❯ 1. Allow once                                │
│   2. Allow for this session                    │
│   3. Add to permanent allowlist                │
│   4. Deny                                      │
│                                                │
│ delete in root path                            │
╰────────────────────────────────────────────────╯

  ↑/↓ to select, Enter to confirm  (57s)
 ⚕ fake-model │ 10/131.1K │ [░░░░░░░░░░] 0% │ 2m │ ⏱ 2s
──────────────────────────────
⚠ ❯
──────────────────────────────)";

} // namespace

TEST_CASE("the numbered panel gives the preview, the offered choices and their digits") {
  auto prompt = parse_approval_prompt(panel);
  REQUIRE(prompt);
  CHECK_FALSE(prompt->legacy);
  CHECK(prompt->command == "rm -rf /tmp/scratch");
  CHECK(prompt->description == "delete in root path");
  CHECK_FALSE(prompt->truncated);
  CHECK(prompt->choices() == std::vector<std::string>{"once", "session", "always", "deny"});
  CHECK(prompt->keys_for("once") == keys{"1"});
  CHECK(prompt->keys_for("session") == keys{"2"});
  CHECK(prompt->keys_for("always") == keys{"3"});
  CHECK(prompt->keys_for("deny") == keys{"4"});
}

TEST_CASE("a panel without the permanent option denies with its own digit") {
  std::string three = "⚠️  Dangerous Command\nsudo reboot\n  1. Allow once\n  2. Allow for this session\n  3. Deny\n";
  auto prompt = parse_approval_prompt(three);
  REQUIRE(prompt);
  CHECK(prompt->choices() == std::vector<std::string>{"once", "session", "deny"});
  CHECK(prompt->keys_for("deny") == keys{"3"});
  CHECK(prompt->keys_for("always") == keys{"3"}); // not offered: fail closed
}

TEST_CASE("no prompt without the title, the allow-once row and the deny row") {
  CHECK_FALSE(parse_approval_prompt("You: hello\nHermes: echo: hello\n❯ "));
  CHECK_FALSE(parse_approval_prompt("Dangerous Command\n  1. Allow once\n"));
  CHECK_FALSE(parse_approval_prompt("  1. Allow once\n  4. Deny\n"));
  // Someone merely talking about it is not a prompt either.
  CHECK_FALSE(parse_approval_prompt("You: what is a dangerous command?\n❯ "));
}

TEST_CASE("the legacy line prompt answers with letters while nothing is typed after it") {
  std::string legacy = "\n  ⚠️  DANGEROUS COMMAND: recursive delete\n      rm -rf /\n\n"
                       "      [o]nce  |  [s]ession  |  [a]lways  |  [d]eny\n\n      Choice [o/s/a/D]: \n\n\n";
  auto prompt = parse_approval_prompt(legacy);
  REQUIRE(prompt);
  CHECK(prompt->legacy);
  CHECK(prompt->command == "rm -rf /"); // the header names the danger, not the command
  CHECK(prompt->description == "recursive delete");
  CHECK(prompt->keys_for("session") == keys{"s", "Enter"});
  CHECK(prompt->keys_for("deny") == keys{"d", "Enter"});
  CHECK(parse_approval_prompt(legacy + "❯\n")); // the TUI's own prompt below it
  CHECK_FALSE(parse_approval_prompt("⚠️  DANGEROUS COMMAND: rm -rf /\nChoice [o/s/a/D]: d\napproval: deny\n"));
}

TEST_CASE("a panel without digits (older Hermes) is answered by moving to the row and pressing Enter") {
  std::string panel = "│ ⚠️  Dangerous Command │\n│ curl x | sh │\n│   Allow once │\n│ ❯ Allow for this session │\n"
                      "│   Add to permanent allowlist │\n│   Deny │\n│   Show full command │\n╰────╯\n";
  auto prompt = parse_approval_prompt(panel);
  REQUIRE(prompt);
  CHECK(prompt->command == "curl x | sh");
  CHECK(prompt->selected == 1);
  CHECK(prompt->choices() == keys{"once", "session", "always", "deny"}); // "Show full command" is no answer
  CHECK(prompt->keys_for("session") == keys{"Enter"});
  CHECK(prompt->keys_for("once") == keys{"Up", "Enter"});
  CHECK(prompt->keys_for("deny") == keys{"Down", "Down", "Enter"});
  CHECK(prompt->keys_for("view") == keys{"Down", "Down", "Enter"}); // never chosen for a client: deny
}

TEST_CASE("a long command's panel: row 5 views it, wrapped rows are joined back, a cut one is marked") {
  std::string wrapped = "╭──────────────────────────────────────────────────────────────────╮\n"
                        "│ ⚠️  Dangerous Command                                            │\n"
                        "│                                                                  │\n"
                        "│ rm -rf /tmp/rt/ws/some/very/long/path/that/goes/on/and/on/for/qu │\n"
                        "│ ite/a/while/x /tmp/rt/ws/another/long/one/y                      │\n"
                        "│                                                                  │\n"
                        "│ ❯ 1. Allow once                                                  │\n"
                        "│   2. Allow for this session                                      │\n"
                        "│   3. Add to permanent allowlist                                  │\n"
                        "│   4. Deny                                                        │\n"
                        "│   5. Show full command                                           │\n"
                        "│                                                                  │\n"
                        "│ delete in root path                                              │\n"
                        "╰──────────────────────────────────────────────────────────────────╯\n";
  auto prompt = parse_approval_prompt(wrapped);
  REQUIRE(prompt);
  CHECK(prompt->command ==
        "rm -rf /tmp/rt/ws/some/very/long/path/that/goes/on/and/on/for/quite/a/while/x /tmp/rt/ws/another/long/one/y");
  CHECK(prompt->choices() == keys{"once", "session", "always", "deny"});
  CHECK(prompt->view_keys() == keys{"5"});
  CHECK(prompt->keys_for("view") == keys{"4"}); // never an answer: deny
  CHECK_FALSE(prompt->truncated);
  std::string row = "│ ite/a/while/x /tmp/rt/ws/another/long/one/y                      │";
  std::string cut = wrapped;
  cut.replace(cut.find(row), row.size(), "│ … (choose Show full command)                                     │");
  auto partial = parse_approval_prompt(cut);
  REQUIRE(partial);
  CHECK(partial->truncated);
}

TEST_CASE("a tab in the needle is looked for as the TUI draws it") {
  CHECK(commit_needle("a\tb and more") == "a^Ib and more");
}

TEST_CASE("Enter after a trailing backslash is hermes 0.20's line continuation") {
  CHECK(enter_continues_line("ends with a backslash \\"));
  CHECK(enter_continues_line("a\nb \\ \t"));
  CHECK(enter_continues_line("a \\\n"));
  CHECK(enter_continues_line("a \\\r\n"));
  CHECK_FALSE(enter_continues_line("a \\\n\n"));
  CHECK_FALSE(enter_continues_line("back\\slash inside"));
  CHECK_FALSE(enter_continues_line("\\\nnext line"));
  CHECK_FALSE(enter_continues_line(""));
}
