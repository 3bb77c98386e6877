// How a native run's wish to stop is carried out: Ctrl-C while the TUI shows
// the turn running, once more after the 2 s in which a second one would
// force-exit the TUI, and the stop confirmed by what Hermes stored (the
// partial answer) or, when nothing had streamed, by the idle prompt.
#pragma once

#include "bridge/tmux/native_session_impl.hpp"

#include <string>

namespace hb::bridge::native_detail {

class interrupt_driver {
public:
  enum class state { none, stopped, unconfirmed };

  explicit interrupt_driver(native_session::impl& s) : s_(s) {}

  state poll(const tui_screen& screen, clock_type::time_point now);
  bool sent() const { return sent_ > 0; }

private:
  static constexpr milliseconds retry_after{2600};
  clock_type::time_point asked() const;

  native_session::impl& s_;
  int sent_ = 0;
  int idle_polls_ = 0;
  clock_type::time_point first_{};
};

// The run's `native.interrupt` event.
std::string interrupt_event(bool confirmed, const std::string& how);

} // namespace hb::bridge::native_detail
