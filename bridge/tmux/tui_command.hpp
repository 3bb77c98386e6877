// Text the hermes TUI runs itself instead of sending it to the agent, as
// hermes-agent 0.20.3's input loop decides (the draft stripped first):
// `!cmd` is a local shell command (0.18.2 sends it to the agent; the rule
// does not depend on the version), `/word ...` one of the TUI's commands
// (`/yolo` turns approvals off), unless the first word holds another `/`
// (a path like `/src/main.c: why?` is a message). Pure text: unit-tested.
#pragma once

#include <optional>
#include <string>

namespace hb::bridge {

// "a shell command" or "a TUI command" for such text; nullopt for a message.
std::optional<std::string> tui_command_kind(const std::string& text);

// A native chat's text: ValueError for a TUI command unless the request opts
// in (`"tui_command": true`), and for opting in with text that is none.
void check_native_text(const std::string& text, bool tui_command);

} // namespace hb::bridge
