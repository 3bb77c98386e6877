// `hermes-bridge replay RUN_ID`: a run shown again as it happened, from the
// event log (read-only). Rendering is app/replay_render.cpp; this file reads
// the run and keeps the time.
#include "app/log_query.hpp"
#include "app/replay_render.hpp"
#include "app/tool_commands.hpp"
#include "app/tool_support.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

namespace hb::app {

using namespace hb::storage; // the log's rows and its export format

namespace {

struct replay_flags {
  log_location where;
  std::string run_id;
  std::string speed, max_pause, color; // color: auto when not given
  bool instant = false, json = false, full = false;
};

void write_out(const std::string& s) {
  if (!s.empty())
    std::fwrite(s.data(), 1, s.size(), stdout);
}

int replay(const replay_flags& f) {
  if (f.run_id.empty())
    throw tool_error(exit_usage, "which run? give its RUN_ID (hermes-bridge runs lists them)");
  if (f.instant && !f.speed.empty())
    throw tool_error(exit_usage, "give --speed or --instant, not both");
  double speed = f.speed.empty() ? 1.0 : parse_positive(f.speed, "--speed");
  double max_pause = f.max_pause.empty() ? 0.0 : parse_positive(f.max_pause, "--max-pause");
  bool color = false;
  if (f.color == "always")
    color = true;
  else if (f.color == "auto" || f.color.empty())
    color = ::isatty(STDOUT_FILENO) == 1;
  else if (f.color != "never")
    throw tool_error(exit_usage, "--color is auto, always or never, not '" + f.color + "'");

  log_query log(log_path(f.where));
  auto snapshot = log.snapshot();
  run_row run = require_readable_run(log, f.run_id);
  std::vector<seq_row> events;
  log.each_event(run.run_no, [&](const seq_row& r) { events.push_back(r); });
  snapshot.reset();

  replay_renderer render(render_options{color, f.full});
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  double offset = 0, prev = run.started_at;
  // Sleeps until the moment (in replay time) that `at` happened; measured
  // from the start, so pauses never add up drift.
  auto wait_for = [&](double at) {
    if (f.instant)
      return;
    offset += replay_pause(prev, at, speed, max_pause);
    prev = std::max(prev, at);
    std::this_thread::sleep_until(t0 + std::chrono::duration_cast<clock::duration>(
                                           std::chrono::duration<double>(offset)));
  };

  if (!f.json)
    write_out(render.header(run));
  for (const auto& ev : events) {
    wait_for(ev.at);
    // --json: each body exactly as clients received it, one per line.
    write_out(f.json ? ev.text + "\n" : render.event(ev.text, ev.at));
    if (!f.instant)
      std::fflush(stdout);
  }
  if (!f.json) {
    if (run.ended_at)
      wait_for(*run.ended_at);
    write_out(render.footer(run));
  }
  std::fflush(stdout);
  return exit_ok;
}

} // namespace

void add_replay_command(CLI::App& app, std::function<int()>& chosen) {
  auto f = std::make_shared<replay_flags>();
  auto* sub = app.add_subcommand("replay", "Show a run again in the terminal, as it happened (read-only).");
  sub->allow_extras();
  sub->add_option("RUN_ID", f->run_id, "the run (hermes-bridge runs lists them)");
  add_log_options(sub, f->where);
  add_value(sub, "--speed", f->speed, "play N times faster than it happened (0.5: half as fast; default 1)");
  sub->add_flag("--instant", f->instant, "no pauses: print the whole run at once");
  add_value(sub, "--max-pause", f->max_pause, "never wait longer than S seconds between two events");
  add_value(sub, "--color", f->color, "auto (default: when stdout is a terminal), always or never");
  sub->add_flag("--full", f->full, "show tool arguments and results in full (default: clipped to 20 lines)");
  sub->add_flag("--json", f->json,
                "print the run's events, one JSON object per line, in the order and with the bytes "
                "clients received them (timing as above)");
  sub->footer(std::string("Text, tool calls, reasoning (dimmed), approvals with their answers, compression\n"
                          "requests and the final status, each when it happened (the log's `at` times).\n"
                          "A run still going shows what the log holds so far.\n") +
              exit_codes_footer);
  on_chosen(sub, chosen, "replay", [f] { return replay(*f); });
}

} // namespace hb::app
