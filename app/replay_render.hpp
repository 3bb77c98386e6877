// Turns a run's events into terminal text, one event at a time, the way the
// run looked: streamed text as it came, tool calls as headed blocks with
// their arguments and results, reasoning dimmed, approvals with their answer
// and when it came, compression requests, and the final status. Pure (no
// I/O, no clock), unit tested in tests/unit/app_replay_render_test.cpp.
#pragma once

#include "storage/log_rows.hpp"

#include <map>
#include <string>

namespace hb::app {

using storage::run_row;
using storage::seq_row;

struct render_options {
  bool color = false;     // ANSI styles (dim reasoning, coloured headers)
  bool full = false;      // tool arguments and results unclipped
};

class replay_renderer {
public:
  explicit replay_renderer(render_options options) : opt_(options) {}

  std::string header(const run_row& run);
  // `body` is the stored event text, `at` its time (Unix seconds).
  std::string event(const std::string& body, double at);
  std::string footer(const run_row& run);

private:
  std::string style(const char* sgr, const std::string& text) const;
  std::string block(const std::string& head_sgr, const std::string& head, const std::string& rest = {});
  std::string text(const std::string& s, bool reasoning);
  std::string indent(const std::string& s) const;
  std::string clip(const std::string& s) const;

  render_options opt_;
  bool line_start_ = true;
  bool in_reasoning_ = false;
  double started_at_ = 0;
  std::map<std::string, double> asked_at_;  // approval / compression id -> when asked
  std::map<std::string, double> tool_at_;   // tool_call_id -> when started
};

// How long to wait before showing an event logged at `at` when the previous
// one was at `prev`: the original gap divided by `speed`, never negative,
// at most `max_pause` (<= 0: no cap).
double replay_pause(double prev, double at, double speed, double max_pause);

} // namespace hb::app
