// `hermes-bridge runs`: the runs in the event log, newest first.
#include "app/log_query.hpp"
#include "app/tool_commands.hpp"
#include "app/tool_support.hpp"
#include "app/tool_text.hpp"
#include "protocol/json_text.hpp"

#include <chrono>
#include <iostream>
#include <memory>

namespace hb::app {

using namespace hb::storage; // the log's rows and its export format

namespace {

struct runs_flags {
  log_location where;
  std::string session, status, since, until, limit; // limit: 50 when not given
  bool json = false;
};

double now_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

double time_flag(const std::string& text, const char* option) {
  auto t = parse_time(text);
  if (!t)
    throw tool_error(exit_usage, std::string(option) + " wants ISO-8601 (2024-06-10, 2024-06-10T08:30:00Z, ...) "
                                                       "or Unix seconds, not '" + text + "'");
  return *t;
}

std::string json_line(const run_row& r, const run_stats& s) {
  protocol::object_writer w;
  w.str("run_id", r.run_id)
    .str("session_id", r.session_id)
    .str("status", r.status)
    .number("started_at", r.started_at);
  if (r.ended_at)
    w.number("ended_at", *r.ended_at).number("duration_s", *r.ended_at - r.started_at);
  else
    w.null("ended_at").null("duration_s");
  w.integer("deltas", s.deltas)
    .integer("events", s.events)
    .integer("tool_calls", s.tool_calls)
    .integer("approvals", s.approvals);
  if (r.error)
    w.str("error", *r.error);
  else
    w.null("error");
  if (r.pruned_at)
    w.number("pruned_at", *r.pruned_at);
  else
    w.null("pruned_at");
  return w.finish();
}

int list_runs(const runs_flags& f) {
  run_filter filter;
  filter.session = f.session;
  filter.status = f.status;
  if (!f.since.empty())
    filter.since = time_flag(f.since, "--since");
  if (!f.until.empty())
    filter.until = time_flag(f.until, "--until");
  filter.limit = f.limit.empty() ? 50 : parse_count(f.limit, "--limit");

  log_query log(log_path(f.where));
  auto snapshot = log.snapshot();
  if (!f.session.empty() && !log.session_known(f.session))
    throw tool_error(exit_unknown, "unknown session: " + f.session);
  auto runs = log.runs(filter);
  std::vector<run_stats> stats;
  for (const auto& r : runs)
    stats.push_back(log.stats(r.run_no));
  snapshot.reset();

  if (f.json) {
    std::string out;
    for (size_t i = 0; i < runs.size(); ++i)
      out += json_line(runs[i], stats[i]) + "\n";
    std::cout << out << std::flush;
    return exit_ok;
  }
  if (runs.empty()) {
    std::cerr << "no runs" << (f.session.empty() && f.status.empty() && f.since.empty() && f.until.empty()
                                 ? std::string(" in ") + log.path()
                                 : std::string(" match"))
              << std::endl;
    return exit_ok;
  }
  double now = now_seconds();
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[i];
    const auto& s = stats[i];
    bool pruned = r.pruned_at.has_value();
    std::string duration = r.ended_at ? format_duration(*r.ended_at - r.started_at)
                                      : format_duration(now - r.started_at) + "+";
    auto count = [&](int64_t n) { return pruned ? std::string("-") : std::to_string(n); };
    rows.push_back({r.run_id, r.session_id, r.status + (pruned ? " (pruned)" : ""),
                    format_local_time(r.started_at), duration, count(s.deltas), count(s.events),
                    count(s.tool_calls), count(s.approvals)});
  }
  std::cout << render_table({"RUN", "SESSION", "STATUS", "STARTED", "DURATION", "DELTAS", "EVENTS", "TOOLS",
                             "APPROVALS"},
                            rows, {false, false, false, false, true, true, true, true, true})
            << std::flush;
  return exit_ok;
}

} // namespace

void add_runs_command(CLI::App& app, std::function<int()>& chosen) {
  auto f = std::make_shared<runs_flags>();
  auto* sub = app.add_subcommand("runs", "List the runs in the event log, newest first (read-only).");
  sub->allow_extras();
  add_log_options(sub, f->where);
  add_value(sub, "--session", f->session, "only this session's runs");
  add_value(sub, "--status", f->status, "only runs with this status (running, complete, interrupted, error)");
  add_value(sub, "--since", f->since, "only runs started at or after TIME (ISO-8601, local unless it ends "
                                      "in Z or +HH:MM; or Unix seconds)");
  add_value(sub, "--until", f->until, "only runs started at or before TIME");
  add_value(sub, "--limit", f->limit, "at most N runs (default 50; 0: all)");
  sub->add_flag("--json", f->json,
                "one JSON object per line: run_id, session_id, status, started_at, ended_at, duration_s, "
                "deltas, events, tool_calls, approvals, error, pruned_at");
  sub->footer(std::string("Reads the log directly, read-only; safe while the daemon runs.\n"
                          "TOOLS counts tool.started events, APPROVALS approval.requested events; a running\n"
                          "run's DURATION is the time so far (marked +).\n") +
              exit_codes_footer);
  on_chosen(sub, chosen, "runs", [f] { return list_runs(*f); });
}

} // namespace hb::app
