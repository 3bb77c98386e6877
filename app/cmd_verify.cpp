// `hermes-bridge verify`: checks an event log against its invariants
// (storage/log_verify.hpp) and prints a verdict; the exit code says whether
// it is damaged, so scripts and supervisors can act on it.
#include "app/tool_commands.hpp"
#include "app/tool_support.hpp"
#include "protocol/json_text.hpp"
#include "storage/log_verify.hpp"

#include <filesystem>
#include <iostream>
#include <memory>

namespace hb::app {

namespace {

struct verify_flags {
  log_location where;
  bool json = false;
};

std::string problem_json(const storage::log_problem& p) {
  protocol::object_writer w;
  w.str("table", p.table);
  if (p.run_id.empty())
    w.null(p.table == "sessions" ? "session_id" : "run_id");
  else
    w.str(p.table == "sessions" ? "session_id" : "run_id", p.run_id);
  if (p.seq)
    w.integer("seq", *p.seq);
  else
    w.null("seq");
  return w.str("problem", p.what).finish();
}

std::string problem_text(const storage::log_problem& p) {
  std::string where = p.table;
  if (!p.run_id.empty())
    where += (p.table == "sessions" ? " session " : " run ") + p.run_id;
  if (p.seq)
    where += " seq " + std::to_string(*p.seq);
  return "  " + where + ": " + p.what;
}

int verify(const verify_flags& f) {
  std::string path = log_path(f.where);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw tool_error(exit_usage, "no event log at " + path);
  storage::verify_report report;
  try {
    SQLite::Database db(path, SQLite::OPEN_READONLY);
    db.setBusyTimeout(5000);
    report = storage::verify_log(db);
  } catch (const std::exception& e) {
    report.problems.push_back({"sqlite", "", std::nullopt, std::string("cannot open: ") + e.what()});
    report.integrity = e.what();
  }
  bool healthy = report.healthy();
  if (f.json) {
    std::string problems = "[";
    for (size_t i = 0; i < report.problems.size(); ++i)
      problems += (i ? ", " : "") + problem_json(report.problems[i]);
    problems += "]";
    std::cout << protocol::object_writer{}
                   .boolean("ok", healthy)
                   .str("verdict", healthy ? "healthy" : "damaged")
                   .str("path", path)
                   .integer("schema_version", report.schema_version)
                   .str("integrity_check", report.integrity)
                   .integer("sessions", report.sessions)
                   .integer("runs", report.runs)
                   .integer("live_runs", report.live_runs)
                   .integer("deltas", report.deltas)
                   .integer("events", report.events)
                   .raw("problems", problems)
                   .integer("problems_left_out", report.problems_left_out)
                   .finish()
              << std::endl;
  } else {
    std::cout << path << ": " << (healthy ? "healthy" : "DAMAGED") << " (schema version " << report.schema_version
              << ", " << report.sessions << " sessions, " << report.runs << " runs, " << report.deltas
              << " deltas, " << report.events << " events; integrity_check: " << report.integrity << ")\n";
    if (report.live_runs > 0)
      std::cout << report.live_runs
                << " run(s) still 'running': live, or cut by a crash (the daemon's next start settles them)\n";
    for (const auto& p : report.problems)
      std::cout << problem_text(p) << "\n";
    if (report.problems_left_out > 0)
      std::cout << "  ... and " << report.problems_left_out << " more\n";
    std::cout << std::flush;
  }
  return healthy ? exit_ok : exit_damaged;
}

} // namespace

void add_verify_command(CLI::App& app, std::function<int()>& chosen) {
  auto f = std::make_shared<verify_flags>();
  auto* sub = app.add_subcommand("verify", "Check an event log's invariants and SQLite's integrity (read-only).");
  sub->allow_extras();
  add_log_options(sub, f->where);
  sub->add_flag("--json", f->json,
                "one JSON object: ok, verdict, path, schema_version, integrity_check, counts, and problems "
                "[{table, run_id or session_id, seq, problem}]");
  sub->footer(std::string("Checks: seq contiguous from 0 per run (deltas, events), one terminal status per\n"
                          "finished run written with its last events, no orphan rows, every approval asked\n"
                          "once and resolved once, the schema version, PRAGMA integrity_check. Safe while a\n"
                          "daemon serves the log. Exit code 0 healthy, 5 damaged (each problem named).\n") +
              exit_codes_footer);
  on_chosen(sub, chosen, "verify", [f] { return verify(*f); });
}

} // namespace hb::app
