#include "bridge/tmux/native_interrupt.hpp"

#include "protocol/json_text.hpp"

namespace hb::bridge::native_detail {

interrupt_driver::state interrupt_driver::poll(const tui_screen& screen, clock_type::time_point now) {
  if (!s_.interrupt_sent)
    return state::none;
  if (sent_ == 0 || (sent_ == 1 && screen.busy && now - first_ > retry_after)) {
    if (s_.ctrl_c_if_busy()) {
      if (sent_++ == 0)
        first_ = now;
      idle_polls_ = 0;
      return state::none;
    }
  }
  auto since = sent_ ? now - first_ : now - asked();
  if (screen.busy)
    idle_polls_ = 0;
  else if (sent_ && screen.input_found && ++idle_polls_ >= 2)
    return state::stopped;
  if (since > s_.options.interrupt_grace)
    return state::unconfirmed;
  return state::none;
}

clock_type::time_point interrupt_driver::asked() const {
  return clock_type::time_point(clock_type::duration(s_.interrupt_at.load()));
}

std::string interrupt_event(bool confirmed, const std::string& how) {
  nlohmann::json e;
  e["event"] = "native.interrupt";
  e["confirmed"] = confirmed;
  e["how"] = how;
  return protocol::dumps(e);
}

} // namespace hb::bridge::native_detail
