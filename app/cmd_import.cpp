// `hermes-bridge import FILE`: loads an export (app/export_format.hpp) into
// an event log through storage::log_writer, so the schema and the rows are
// exactly what the daemon writes. All or nothing: the file is checked
// completely first, and everything is written in one transaction.
#include "storage/export_format.hpp"
#include "app/log_query.hpp"
#include "app/tool_commands.hpp"
#include "app/tool_support.hpp"
#include "protocol/json_text.hpp"
#include "protocol/names.hpp"
#include "protocol/wire_error.hpp"
#include "storage/log_writer.hpp"
#include "storage/private_files.hpp"

#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

namespace hb::app {

using namespace hb::storage; // the log's rows and its export format

namespace {

struct import_flags {
  log_location where;
  std::string file;
};

export_bundle read_export(const std::string& file) {
  std::ifstream in;
  if (file != "-") {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file, ec))
      throw tool_error(exit_usage, "no export file at " + file);
    in.open(file, std::ios::binary);
    if (!in)
      throw tool_error(exit_usage, "cannot read " + file);
  }
  std::istream& src = file == "-" ? std::cin : in;
  export_decoder decoder;
  try {
    std::string line;
    while (std::getline(src, line))
      decoder.line(line);
    if (src.bad())
      throw tool_error(exit_failure, "reading " + file + " failed");
    return decoder.finish();
  } catch (const export_damaged& e) {
    throw tool_error(exit_damaged, "damaged export file " + (file == "-" ? std::string("(stdin)") : file) +
                                     ": " + e.what() + "; nothing was imported");
  }
}

[[noreturn]] void refuse(const std::vector<std::string>& ids, const std::string& path) {
  std::string list;
  for (size_t i = 0; i < ids.size() && i < 5; ++i)
    list += (i ? ", " : "") + ids[i];
  if (ids.size() > 5)
    list += " and " + std::to_string(ids.size() - 5) + " more";
  throw tool_error(exit_refused, "refused: " + std::string(ids.size() == 1 ? "run " : "runs ") + list +
                                   (ids.size() == 1 ? " is" : " are") + " already in " + path +
                                   "; nothing was imported");
}

// Runs of the bundle the log already has (read-only look before writing;
// the UNIQUE run_id inside the write transaction settles any race).
void check_duplicates(const export_bundle& bundle, const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return;
  log_query log(path);
  std::vector<std::string> present;
  for (const auto& r : bundle.runs)
    if (log.run(r.row.run_id))
      present.push_back(r.row.run_id);
  if (!present.empty())
    refuse(present, path);
}

// A session's profile becomes a directory under the hermes home when a
// daemon resumes it: a file from elsewhere must not name one outside it.
void check_profiles(const export_bundle& bundle) {
  for (const auto& s : bundle.sessions) {
    auto config = protocol::json::parse(s.config, nullptr, false);
    if (!config.is_object() || !config.contains("profile") || !config["profile"].is_string())
      continue;
    try {
      protocol::check_profile_name(config["profile"].get<std::string>());
    } catch (const protocol::wire_error& e) {
      throw tool_error(exit_refused, "refused: session " + s.session_id + ": " + e.type + ": " + e.what() +
                                       "; nothing was imported");
    }
  }
}

int import_file(const import_flags& f) {
  if (f.file.empty())
    throw tool_error(exit_usage, "which file? give the export FILE (- for stdin)");
  export_bundle bundle = read_export(f.file);
  check_profiles(bundle);
  std::string path = log_path(f.where);
  check_duplicates(bundle, path);

  std::unique_ptr<storage::log_writer> writer;
  try {
    storage::make_private_dirs(std::filesystem::path(path).parent_path().string());
    writer = std::make_unique<storage::log_writer>(path);
  } catch (const std::exception& e) {
    throw tool_error(exit_usage, "cannot open event log " + path + " for writing: " + e.what());
  }

  int64_t deltas = 0, events = 0, sessions_added = 0;
  std::vector<std::string> kept_sessions, still_running;
  try {
    auto& db = writer->database();
    SQLite::Statement mark_pruned(db, "UPDATE runs SET pruned_at=? WHERE run_id=?");
    for (const auto& run : bundle.runs) {
      const run_row& r = run.row;
      writer->open_run(r.run_id, r.session_id, r.started_at, r.user_message.value_or(""));  // takes the write lock
      for (const auto& d : run.deltas)
        writer->append_delta(r.run_id, d.text, d.at);
      for (const auto& e : run.events)
        writer->append_event(r.run_id, e.text, e.at);
      deltas += static_cast<int64_t>(run.deltas.size());
      events += static_cast<int64_t>(run.events.size());
      if (r.status != "running")
        writer->close_run(r.run_id, r.status, r.result, r.error, *r.ended_at);
      else
        still_running.push_back(r.run_id);
      if (r.pruned_at) {
        mark_pruned.bind(1, *r.pruned_at);
        mark_pruned.bind(2, r.run_id);
        mark_pruned.exec();
        mark_pruned.reset();
      }
    }
    // A session the log already has keeps its own row (a daemon may be using it).
    SQLite::Statement has_session(db, "SELECT 1 FROM sessions WHERE session_id=?");
    for (const auto& s : bundle.sessions) {
      has_session.bind(1, s.session_id);
      bool present = has_session.executeStep();
      has_session.reset();
      if (present) {
        kept_sessions.push_back(s.session_id);
        continue;
      }
      storage::session_row row;
      row.session_id = s.session_id;
      row.created_at = s.created_at;
      row.last_used_at = s.last_used_at;
      row.config = s.config;
      row.history = s.history;
      row.history_known = true;
      row.message_count = s.message_count;
      row.destroyed = s.destroyed;
      writer->put_session(row);
      ++sessions_added;
    }
    writer->commit();
  } catch (const SQLite::Exception& e) {
    writer->rollback();
    if (e.getExtendedErrorCode() == SQLITE_CONSTRAINT_UNIQUE ||
        e.getExtendedErrorCode() == SQLITE_CONSTRAINT_PRIMARYKEY) {
      throw tool_error(exit_refused, std::string("refused: a run of the file appeared in ") + path +
                                       " meanwhile (" + e.what() + "); nothing was imported");
    }
    throw tool_error(exit_failure, std::string("import into ") + path + " failed, nothing was imported: " +
                                     e.what());
  }

  std::cout << "imported " << bundle.runs.size() << " run(s) (" << deltas << " deltas, " << events
            << " events) and " << sessions_added << " session(s) into " << path << std::endl;
  for (const auto& id : kept_sessions)
    std::cout << "session " << id << " was already in the log: kept its row there" << std::endl;
  for (const auto& id : still_running)
    std::cout << "run " << id << " was still running when exported: it stays 'running' until a daemon "
              << "starts on this log (recovery marks it interrupted)" << std::endl;
  return exit_ok;
}

} // namespace

void add_import_command(CLI::App& app, std::function<int()>& chosen) {
  auto f = std::make_shared<import_flags>();
  auto* sub = app.add_subcommand("import", "Load an export file (hermes-bridge export) into an event log.");
  sub->allow_extras();
  sub->add_option("FILE", f->file, "the export file (- for stdin)");
  add_log_options(sub, f->where);
  sub->footer(std::string("Creates the log (with the daemon's schema) when it does not exist. Run and session ids\n"
                          "are kept, and each run answers get_result with the same bytes. All or nothing: a\n"
                          "damaged file or a run already in the log writes nothing. A session the log already\n"
                          "has keeps its row. Best done while no daemon serves the log: the import holds the\n"
                          "log's write lock until it commits, and a serving daemon's appends wait for it.\n") +
              exit_codes_footer);
  on_chosen(sub, chosen, "import", [f] { return import_file(*f); });
}

} // namespace hb::app
