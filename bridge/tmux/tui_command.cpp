#include "bridge/tmux/tui_command.hpp"

#include "protocol/wire_error.hpp"

#include <cstdint>

namespace hb::bridge {

namespace {

// The length of the whitespace character at `at` as Python's str.isspace()
// sees it (the TUI strips with str.strip() and splits with str.split()), 0
// for none. Other control bytes count too: the paste drops them.
size_t space_at(const std::string& s, size_t at) {
  auto byte = [&](size_t i) { return i < s.size() ? static_cast<unsigned char>(s[i]) : 0u; };
  unsigned char c = byte(at);
  if (c < 0x21 || c == 0x7F)
    return 1;
  if (c == 0xC2 && (byte(at + 1) == 0x85 || byte(at + 1) == 0xA0))
    return 2;
  if (c == 0xE1 && byte(at + 1) == 0x9A && byte(at + 2) == 0x80) // U+1680
    return 3;
  if (c == 0xE2 && byte(at + 1) == 0x80 &&
      (byte(at + 2) <= 0x8A || byte(at + 2) == 0xA8 || byte(at + 2) == 0xA9 || byte(at + 2) == 0xAF))
    return byte(at + 2) >= 0x80 ? 3 : 0; // U+2000-200A, U+2028, U+2029, U+202F
  if (c == 0xE2 && byte(at + 1) == 0x81 && byte(at + 2) == 0x9F) // U+205F
    return 3;
  if (c == 0xE3 && byte(at + 1) == 0x80 && byte(at + 2) == 0x80) // U+3000
    return 3;
  return 0;
}

} // namespace

std::optional<std::string> tui_command_kind(const std::string& text) {
  size_t at = 0;
  while (at < text.size()) {
    size_t n = space_at(text, at);
    if (n == 0)
      break;
    at += n;
  }
  if (at >= text.size())
    return std::nullopt;
  if (text[at] == '!')
    return "a shell command";
  if (text[at] != '/')
    return std::nullopt;
  size_t end = at + 1;
  while (end < text.size() && space_at(text, end) == 0)
    ++end;
  if (text.find('/', at + 1) < end)
    return std::nullopt; // a path, sent to the agent
  return "a TUI command";
}

void check_native_text(const std::string& text, bool tui_command) {
  auto kind = tui_command_kind(text);
  if (kind && !tui_command)
    throw protocol::value_error(
      "the hermes TUI would run this message as " + *kind + " (it starts with '" +
      std::string(*kind == "a shell command" ? "!" : "/") + "'), not send it to the agent; add \"tui_command\": true to send it to the TUI as such, once");
  if (!kind && tui_command)
    throw protocol::value_error("tui_command is for text the hermes TUI runs itself (starting with '!' or "
                                "'/'); this message would go to the agent");
}

} // namespace hb::bridge
