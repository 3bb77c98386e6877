// Reading the hermes TUI's state off its pane, and splitting --hermes-bin.
#include "bridge/tmux/command_line.hpp"
#include "bridge/tmux/tui_screen.hpp"
#include "protocol/wire_error.hpp"

#include <catch2/catch.hpp>

using namespace hb::bridge;

namespace {

std::string rule(int n = 40) {
  std::string r;
  for (int i = 0; i < n; ++i)
    r += "─";
  return r;
}

std::string screen_with(const std::string& input, const std::string& status = " ⚕ fake-model │ ctx -- │ 3s │ ⏲ 0s ") {
  return "● hello\n    echo: hello\n" + status + "\n" + rule() + "\n" + input + "\n" + rule() + "\n\n";
}

} // namespace

TEST_CASE("the idle prompt, a running turn and an approval are told apart by the prompt's icon") {
  auto idle = read_tui_screen(screen_with("❯ "));
  CHECK(idle.input_found);
  CHECK_FALSE(idle.busy);
  CHECK(idle.draft_lines == 0);
  auto running = read_tui_screen(screen_with("⚕ ❯ msg=interrupt · /queue · /bg · /steer · Ctrl+C cancel"));
  CHECK(running.busy);
  CHECK(running.draft.empty());
  auto asking = read_tui_screen(screen_with("⚠ ❯ "));
  CHECK(asking.busy);
  CHECK(asking.approval);
  CHECK(asking.asking);
  CHECK_FALSE(running.asking);
  auto question = read_tui_screen(screen_with("? ❯ "));  // a clarify panel (0.18.2 and 0.20.3)
  CHECK(question.busy);
  CHECK(question.asking);
  CHECK_FALSE(question.approval);
  CHECK(read_tui_screen(screen_with("🔐 ❯ ")).asking);
  auto profile = read_tui_screen(screen_with("coder ❯ draft"));

  CHECK_FALSE(profile.busy);
  CHECK(profile.draft == "draft");
  CHECK_FALSE(read_tui_screen("Loading Hermes…\n").input_found);
}

TEST_CASE("a multi-line draft is read with its rows; tabs show as ^I") {
  auto s = read_tui_screen(screen_with("❯ a^Ib tab\nsecond line\nthird"));
  CHECK(s.draft == "a^Ib tab\nsecond line\nthird");
  CHECK(s.draft_lines == 3);
}

TEST_CASE("settling ignores the status bar's clocks and countdowns") {
  CHECK(settle_view(screen_with("❯ ", " ⚕ fake-model │ 3s │ ⏲ 0s ")) ==
        settle_view(screen_with("❯ ", " ⚕ fake-model │ 4s │ ⏲ 1s ")));
  CHECK(settle_view("Enter to confirm  (57s)\n") == settle_view("Enter to confirm  (56s)\n"));
  // hermes 0.20's live tool line, above the status bar, ticks every 0.1 s
  CHECK(settle_view(screen_with("⚕ ❯ ", "  💻 sleep 4  (  4.5s · ↓ 5 tok)\n ⚕ fake-model │ 3s │ ⏱ 1s ")) ==
        settle_view(screen_with("⚕ ❯ ", "  💻 sleep 4  ( 12.7s · ↓ 9 tok)\n ⚕ fake-model │ 3s │ ⏱ 2s ")));
  CHECK(settle_view("💻 sleep 4  (4s · ↓ 5 tok)\n") != settle_view("💻 sleep 5  (4s · ↓ 5 tok)\n"));
  CHECK(settle_view(screen_with("❯ a")) != settle_view(screen_with("❯ b")));
}

TEST_CASE("a paste collapses at 5 line breaks or 2000 characters") {
  CHECK_FALSE(collapses_as_paste("1\n2\n3\n4\n5"));
  CHECK(collapses_as_paste("1\n2\n3\n4\n5\n6"));
  CHECK(collapses_as_paste("1\r\n2\r3\n4\n5\n6"));
  CHECK_FALSE(collapses_as_paste(std::string(1999, 'x')));
  CHECK(collapses_as_paste(std::string(2000, 'x')));
}

TEST_CASE("the hermes command line (--hermes-bin) is split as a shell would, without a shell") {
  using words = std::vector<std::string>;
  CHECK(split_command_line("hermes", "/home/u") == words{"hermes"});
  CHECK(split_command_line("uv run --project ~/hermes-agent hermes", "/home/u") ==
        words{"uv", "run", "--project", "/home/u/hermes-agent", "hermes"});
  CHECK(split_command_line("/usr/bin/python3 '/opt/my hermes/hermes'", "/h") ==
        words{"/usr/bin/python3", "/opt/my hermes/hermes"});
  CHECK(split_command_line(R"(a "b \"c\" $d" e\ f '~/x')", "/h") == words{"a", R"(b "c" $d)", "e f", "~/x"});
  CHECK_THROWS_AS(split_command_line("a 'b", "/h"), hb::protocol::wire_error);
}
