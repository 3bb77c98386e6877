// `hermes-bridge export RUN_ID` / `export --session S`: runs, their sessions
// and every delta and event, as one self-contained JSON-lines file
// (app/export_format.hpp), read from one snapshot of the log.
#include "storage/export_format.hpp"
#include "app/log_query.hpp"
#include "app/private_output.hpp"
#include "app/tool_commands.hpp"
#include "app/tool_support.hpp"
#include "storage/log_file.hpp"

#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>

namespace hb::app {

using namespace hb::storage; // the log's rows and its export format

namespace {

struct export_flags {
  log_location where;
  std::string run_id, session, output;
};

double now_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

int export_runs(const export_flags& f) {
  if (f.run_id.empty() == f.session.empty())
    throw tool_error(exit_usage, "give a RUN_ID or --session S (one of them)");
  log_query log(log_path(f.where));
  auto snapshot = log.snapshot();

  std::vector<run_row> runs;
  if (!f.run_id.empty()) {
    runs.push_back(require_readable_run(log, f.run_id));
  } else {
    if (!log.session_known(f.session))
      throw tool_error(exit_unknown, "unknown session: " + f.session);
    runs = log.runs_of_session(f.session);
  }
  std::vector<session_row> sessions;
  if (auto s = log.session(runs.empty() ? f.session : runs.front().session_id))
    sessions.push_back(std::move(*s));

  export_header header;
  header.schema_version = storage::stored_schema_version(log.db());
  header.exported_at = now_seconds();
  header.source = std::filesystem::absolute(log.path()).lexically_normal().string();
  header.sessions = static_cast<int64_t>(sessions.size());
  header.runs = static_cast<int64_t>(runs.size());

  private_output out(f.output);
  export_counts counts;
  out.line(encode_header(header));
  for (const auto& s : sessions) {
    out.line(encode_session(s));
    ++counts.sessions;
  }
  for (const auto& r : runs) {
    out.line(encode_run(r));
    ++counts.runs;
  }
  for (const auto& r : runs) {
    log.each_delta(r.run_no, [&](const seq_row& d) {
      out.line(encode_delta(r.run_id, d));
      ++counts.deltas;
    });
    log.each_event(r.run_no, [&](const seq_row& e) {
      out.line(encode_event(r.run_id, e));
      ++counts.events;
    });
  }
  out.line(encode_end(counts));
  snapshot.reset();
  out.finish();
  if (!f.output.empty() && f.output != "-")
    std::cerr << "exported " << counts.runs << " run(s) (" << counts.deltas << " deltas, " << counts.events
              << " events) and " << counts.sessions << " session(s) to " << f.output << std::endl;
  return exit_ok;
}

} // namespace

void add_export_command(CLI::App& app, std::function<int()>& chosen) {
  auto f = std::make_shared<export_flags>();
  auto* sub = app.add_subcommand("export", "Write runs, with every delta and event, to a self-contained "
                                           "JSONL file (read-only on the log).");
  sub->allow_extras();
  sub->add_option("RUN_ID", f->run_id, "the run to export");
  add_value(sub, "--session", f->session, "export every run of this session instead (pruned ones as tombstones)");
  add_value(sub, "-o,--output", f->output, "the file to write (default: stdout)");
  add_log_options(sub, f->where);
  sub->footer(std::string("The file: a header line {\"format\": \"hermes-bridge-export\", \"version\": 1, ...}, the\n"
                          "session row, the run rows, every delta and event row with its seq and at (JSON text\n"
                          "columns kept as exact strings), and an end line with counts. `hermes-bridge import`\n"
                          "loads it into another log with the same ids and bytes.\n") +
              exit_codes_footer);
  on_chosen(sub, chosen, "export", [f] { return export_runs(*f); });
}

} // namespace hb::app
