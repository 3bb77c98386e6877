// Which native chat texts the hermes TUI would run itself (issue 21 item 5).
#include "bridge/tmux/tui_command.hpp"
#include "protocol/wire_error.hpp"

#include <catch2/catch.hpp>

using namespace hb::bridge;

TEST_CASE("bang and slash commands are the TUI's, as 0.20.3 strips and splits them", "[tui_command]") {
  CHECK(tui_command_kind("!touch x") == std::optional<std::string>("a shell command"));
  CHECK(tui_command_kind("  \n\t!ls") == std::optional<std::string>("a shell command"));
  CHECK(tui_command_kind("!") == std::optional<std::string>("a shell command"));
  CHECK(tui_command_kind("/yolo") == std::optional<std::string>("a TUI command"));
  CHECK(tui_command_kind("\r\n /model gpt-5 please") == std::optional<std::string>("a TUI command"));
  // Python's str.strip() and str.split() know Unicode spaces: so does the rule.
  CHECK(tui_command_kind("\xC2\xA0\xE3\x80\x80/yolo") == std::optional<std::string>("a TUI command"));
  CHECK(tui_command_kind("/yolo\xE3\x80\x80/etc/x") == std::optional<std::string>("a TUI command"));
  CHECK(tui_command_kind("\x1b!ls") == std::optional<std::string>("a shell command")); // the paste drops ESC
}

TEST_CASE("messages stay messages: text, a ! inside, a path as the first word", "[tui_command]") {
  CHECK_FALSE(tui_command_kind("hello"));
  CHECK_FALSE(tui_command_kind("fix the bug!"));
  CHECK_FALSE(tui_command_kind("echo hi / bye"));
  CHECK_FALSE(tui_command_kind("/src/main.c:45 why does this crash?"));
  CHECK_FALSE(tui_command_kind(""));
  CHECK_FALSE(tui_command_kind("   "));
}

TEST_CASE("check_native_text refuses a TUI command unless asked for, and the opt-in for a message",
          "[tui_command]") {
  CHECK_NOTHROW(check_native_text("hello", false));
  CHECK_NOTHROW(check_native_text("/yolo", true));
  try {
    check_native_text("!rm -rf ~/x", false);
    FAIL("accepted");
  } catch (const hb::protocol::wire_error& e) {
    CHECK(e.type == "ValueError");
    CHECK(std::string(e.what()).find("shell command") != std::string::npos);
    CHECK(std::string(e.what()).find("\"tui_command\": true") != std::string::npos);
  }
  CHECK_THROWS_AS(check_native_text("hello", true), hb::protocol::wire_error);
}
