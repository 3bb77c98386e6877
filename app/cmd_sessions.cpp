// `hermes-bridge sessions`: the sessions in the event log, most recently
// used first.
#include "app/log_query.hpp"
#include "app/tool_commands.hpp"
#include "app/tool_support.hpp"
#include "app/tool_text.hpp"
#include "protocol/json_text.hpp"

#include <iostream>
#include <memory>

namespace hb::app {

using namespace hb::storage; // the log's rows and its export format

namespace {

struct sessions_flags {
  log_location where;
  bool json = false;
};

// Every session runs AIAgent embedded in the daemon; native (tmux) sessions
// will say otherwise once they exist.
constexpr const char* harness = "embedded";

// Read offline, a session not destroyed is dormant: whether a daemon has
// its agent loaded right now is only known to that daemon.
const char* state_of(const session_listing& s) {
  return s.row.destroyed ? "destroyed" : "dormant";
}

std::string json_line(const session_listing& s) {
  return protocol::object_writer{}
    .str("session_id", s.row.session_id)
    .str("profile", s.profile)
    .str("model", s.model)
    .str("harness", harness)
    .integer("runs", s.runs)
    .integer("message_count", s.row.message_count)
    .number("created_at", s.row.created_at)
    .number("last_used_at", s.row.last_used_at)
    .str("state", state_of(s))
    .finish();
}

int list_sessions(const sessions_flags& f) {
  log_query log(log_path(f.where));
  auto sessions = log.sessions();
  if (f.json) {
    std::string out;
    for (const auto& s : sessions)
      out += json_line(s) + "\n";
    std::cout << out << std::flush;
    return exit_ok;
  }
  if (sessions.empty()) {
    std::cerr << "no sessions in " << log.path() << std::endl;
    return exit_ok;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& s : sessions)
    rows.push_back({s.row.session_id, s.profile.empty() ? "default" : s.profile,
                    s.model.empty() ? "-" : s.model, harness, std::to_string(s.runs),
                    format_local_time(s.row.last_used_at), state_of(s)});
  std::cout << render_table({"SESSION", "PROFILE", "MODEL", "HARNESS", "RUNS", "LAST USED", "STATE"}, rows,
                            {false, false, false, false, true, false, false})
            << std::flush;
  return exit_ok;
}

} // namespace

void add_sessions_command(CLI::App& app, std::function<int()>& chosen) {
  auto f = std::make_shared<sessions_flags>();
  auto* sub = app.add_subcommand("sessions", "List the sessions in the event log (read-only).");
  sub->allow_extras();
  add_log_options(sub, f->where);
  sub->add_flag("--json", f->json,
                "one JSON object per line: session_id, profile, model, harness, runs, message_count, "
                "created_at, last_used_at, state");
  sub->footer(std::string("Reads the log directly, read-only; safe while the daemon runs. STATE is destroyed\n"
                          "or dormant: a session not destroyed comes back dormant when the daemon starts (whether\n"
                          "a running daemon has its agent loaded right now, only `status` on the socket says).\n"
                          "MODEL is the model the session asked for (- : the profile's default).\n") +
              exit_codes_footer);
  on_chosen(sub, chosen, "sessions", [f] { return list_sessions(*f); });
}

} // namespace hb::app
