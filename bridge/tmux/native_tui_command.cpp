// A chat that opted in to sending the TUI one of its own commands (`!cmd`,
// `/yolo`): typed once, like a message, but never confirmed by a user row
// (there is none) and so never typed again.
#include "bridge/tmux/native_session_impl.hpp"

#include "protocol/json_text.hpp"
#include "protocol/wire_error.hpp"

namespace hb::bridge {

void native_session::impl::send_tui_command(const std::string& text) {
  std::lock_guard<std::mutex> lock(input_mu);
  if (interrupt_sent || let_go)
    throw protocol::runtime_error("interrupted before the command was typed");
  type(text, options.settle_timeout);
}

namespace native_detail {

std::string tui_command_event(const std::string& text) {
  nlohmann::json e;
  e["event"] = "native.tui_command";
  e["text"] = text;
  e["sent"] = true;
  return protocol::dumps(e);
}

} // namespace native_detail

} // namespace hb::bridge
