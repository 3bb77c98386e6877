// A native session's life between turns: what the daemon asks of it while a
// turn runs (interrupt, steer, let go), its status, and closing it. Launch is
// in native_launch.cpp, the turn itself in native_turn.cpp.
#include "bridge/tmux/native_session_impl.hpp"

#include "protocol/json_text.hpp"
#include "protocol/wire_error.hpp"

#include <unistd.h>

namespace hb::bridge {

using nlohmann::json;
using namespace native_detail;

namespace {

constexpr milliseconds steer_settle{3000};

} // namespace

native_session::native_session(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

native_session::~native_session() = default;

void native_session::prepare_turn() {
  impl_->interrupt_sent = false;
  impl_->let_go = false;
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->steers.clear();
}

// Only asks: the turn's own loop sends Ctrl-C when the TUI shows the turn
// running (Escape, which older code sent, is bound to nothing in the TUI).
void native_session::interrupt(const std::string&) {
  auto& s = *impl_;
  s.interrupt_at = clock_type::now().time_since_epoch().count();
  s.interrupt_sent = true;
}

void native_session::let_go(const std::string&) {
  impl_->let_go = true;
}

// Hermes' mid-turn steer is its inline command; plain text would interrupt
// the turn and start a new one.
bool native_session::steer(const std::string& text) {
  auto& s = *impl_;
  std::string flat = normalized_message(text);
  for (auto& c : flat)
    if (c == '\n' || c == '\t')
      c = ' '; // one command line
  if (!s.turn_live || flat.empty())
    return false; // idle: a paste would start a turn nobody is mirroring
  std::lock_guard<std::mutex> lock(s.input_mu);
  // Idle at the prompt, /steer would be queued as a new turn; before our
  // message is stored, the turn running is someone else's. While a panel
  // or prompt asks, what is typed answers it: its Enter would pick the
  // highlighted row (an approval panel preselects "once").
  tui_screen now = s.screen();
  if (!s.own_turn || !now.busy || now.asking)
    return false;
  int64_t at = s.state.max_message_id();
  s.type("/steer " + flat, steer_settle);
  std::lock_guard<std::mutex> steers(s.mu);
  s.steers.push_back(at);
  return true;
}

std::vector<waiting_question> native_session::waiting_questions() const {
  auto& s = *impl_;
  if (s.adopted_row == 0)
    return {};
  std::string pane;
  try {
    pane = s.tmux.capture();
  } catch (const protocol::wire_error&) {
    return {}; // the TUI is gone: continue_turn says so
  }
  std::optional<waiting_question> q;
  if (auto prompt = parse_approval_prompt(pane))
    // How long it has waited is the TUI's to know; the client's deadline starts again.
    q = waiting_question{1, "approval", approval_request(*prompt, s.options), s.options.approval_timeout_s};
  else if (auto panel = parse_clarify_panel(pane))
    // Its countdown on the panel is what is left of its deadline.
    q = waiting_question{1, "clarify", clarify_request(clarify_call_for(s, s.adopted_row, *panel), *panel),
                         clarify_timeout_s(*panel)};
  if (!q)
    return {};
  std::lock_guard<std::mutex> lock(s.mu);
  s.reopening = q;
  return {*q};
}

bool native_session::usable() const { return impl_->alive; }

std::string native_session::live_status() const {
  auto& s = *impl_;
  json status;
  status["harness"] = "native";
  status["alive"] = s.alive.load();
  status["workspace"] = s.workspace;
  status["tmux_socket"] = s.tmux.socket_path();
  status["tmux_target"] = s.tmux.target();
  status["attach"] = s.tmux.attach_command();
  auto p = s.pinned();
  status["hermes_session_id"] = p ? json(*p) : json(nullptr);
  status["reattached"] = s.reattached;
  return protocol::dumps(status);
}

void native_session::close() {
  auto& s = *impl_;
  s.stop_watching();
  s.tmux.kill();
  s.alive = false;
  ::unlink((s.dir + "/launch.json").c_str());
  ::unlink((s.dir + "/tmux.sock").c_str());
  ::rmdir(s.dir.c_str());
}

} // namespace hb::bridge
