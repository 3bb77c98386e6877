// `hermes-bridge import FILE`: loads an export (storage/export_format.hpp)
// into an event log through storage::log_writer, so the schema and the rows
// are exactly what the daemon writes. All or nothing: the file is read twice,
// line by line (memory does not grow with it): once to check it completely
// before the log is touched, once to write it, in one transaction.
#include "storage/export_format.hpp"
#include "app/log_query.hpp"
#include "app/tool_commands.hpp"
#include "app/tool_support.hpp"
#include "protocol/json_text.hpp"
#include "protocol/names.hpp"
#include "protocol/wire_error.hpp"
#include "storage/log_writer.hpp"
#include "storage/private_files.hpp"
#include "storage/run_events.hpp"

#include <sqlite3.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>

namespace hb::app {

using namespace hb::storage; // the log's rows and its export format

namespace {

struct import_flags {
  log_location where;
  std::string file;
  bool trust_configs = false;
};

// Config fields that make a daemon run something where it resumes the
// session: the directory its agent's tools (or its TUI, through tmux) start
// in, and a native session's command lines. A file from elsewhere must not
// choose them unless its reader says so (--trust-configs).
constexpr const char* launch_fields[] = {"workspace", "hermes_bin", "hermes_command", "tmux_socket",
                                         "tmux_target", "attach", "state_db"};

// The export file, readable from its start more than once. Standard input
// is copied (owner-only, unlinked: tmpfile) as it is read the first time.
class export_source {
public:
  explicit export_source(const std::string& file) : name_(file == "-" ? "(stdin)" : file) {
    if (file == "-") {
      copy_ = std::tmpfile();
      if (!copy_)
        throw tool_error(exit_failure, std::string("cannot make a temporary copy of stdin: ") + std::strerror(errno));
      return;
    }
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file, ec))
      throw tool_error(exit_usage, "no export file at " + file);
    file_ = std::fopen(file.c_str(), "rbe");
    if (!file_)
      throw tool_error(exit_usage, "cannot read " + file);
  }
  ~export_source() {
    std::free(line_);
    for (std::FILE* f : {file_, copy_})
      if (f)
        std::fclose(f);
  }
  export_source(const export_source&) = delete;
  export_source& operator=(const export_source&) = delete;

  const std::string& name() const { return name_; }

  // Hands every line (without its newline) to `decoder`, then finishes it.
  export_bundle decode(export_decoder& decoder) {
    bool first_of_stdin = copy_ && !copied_;
    std::FILE* in = first_of_stdin ? stdin : file_ ? file_ : copy_;
    if (in != stdin)
      std::rewind(in);
    ssize_t n;
    while ((n = ::getline(&line_, &capacity_, in)) > 0) {
      if (first_of_stdin && std::fwrite(line_, 1, static_cast<size_t>(n), copy_) != static_cast<size_t>(n))
        throw tool_error(exit_failure, "cannot keep a copy of stdin: " + std::string(std::strerror(errno)));
      std::string_view text(line_, static_cast<size_t>(n));
      if (text.back() == '\n')
        text.remove_suffix(1);
      decoder.line(text);
    }
    if (std::ferror(in))
      throw tool_error(exit_failure, "reading " + name_ + " failed");
    if (first_of_stdin) {
      if (std::fflush(copy_) != 0)
        throw tool_error(exit_failure, "cannot keep a copy of stdin: " + std::string(std::strerror(errno)));
      copied_ = true;
    }
    return decoder.finish();
  }

private:
  std::string name_;
  std::FILE* file_ = nullptr;
  std::FILE* copy_ = nullptr;
  bool copied_ = false;
  char* line_ = nullptr;
  size_t capacity_ = 0;
};

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

// The first reading: what would make the import refused, before the log is
// touched. Runs the log already has are collected (a read-only look; the
// UNIQUE run_id inside the write transaction settles any race).
class import_check : public export_sink {
public:
  explicit import_check(const std::string& path) : path_(path) {
    std::error_code ec;
    if (std::filesystem::exists(path, ec))
      log_ = std::make_unique<log_query>(path);
  }
  // A session's profile becomes a directory under the hermes home when a
  // daemon resumes it: a file from elsewhere must not name one outside it.
  void session(session_row&& s, size_t) override {
    auto config = protocol::json::parse(s.config, nullptr, false);
    if (!config.is_object() || !config.contains("profile") || !config["profile"].is_string())
      return;
    try {
      protocol::check_profile_name(config["profile"].get<std::string>());
    } catch (const protocol::wire_error& e) {
      throw tool_error(exit_refused, "refused: session " + s.session_id + ": " + e.type + ": " + e.what() +
                                       "; nothing was imported");
    }
  }
  void run(run_row&& r, size_t) override {
    if (log_ && log_->run(r.run_id))
      present_.push_back(r.run_id);
  }
  void delta(const std::string&, seq_row&&, size_t) override {}
  void event(const std::string&, seq_row&&, size_t) override {}
  void verdict() const {
    if (!present_.empty())
      refuse(present_, path_);
  }

private:
  std::string path_;
  std::unique_ptr<log_query> log_;
  std::vector<std::string> present_;
};

// The second reading: every row into the writer's one open transaction.
class import_write : public export_sink {
public:
  import_write(storage::log_writer& writer, bool trust_configs)
    : writer_(writer), trust_configs_(trust_configs),
      mark_pruned_(writer.database(), "UPDATE runs SET pruned_at=? WHERE run_id=?"),
      has_session_(writer.database(), "SELECT 1 FROM sessions WHERE session_id=?") {}

  // A session the log already has keeps its own row (a daemon may be using it).
  void session(session_row&& s, size_t) override {
    has_session_.bind(1, s.session_id);
    bool present = has_session_.executeStep();
    has_session_.reset();
    if (present) {
      kept_sessions.push_back(s.session_id);
      return;
    }
    if (!trust_configs_)
      strip_launch_fields(s);
    s.history_known = true;
    writer_.put_session(s);
    ++sessions_added;
  }
  void run(run_row&& r, size_t) override {
    writer_.put_imported_run(r); // the first row takes the write lock
    if (r.status == "running")
      still_running.push_back(r.run_id);
    if (r.pruned_at) {
      mark_pruned_.bind(1, *r.pruned_at);
      mark_pruned_.bind(2, r.run_id);
      mark_pruned_.exec();
      mark_pruned_.reset();
    }
  }
  void delta(const std::string& run_id, seq_row&& d, size_t) override {
    writer_.append_delta(run_id, d.text, d.at);
    ++deltas;
  }
  // A delta's event is its delta in this log (storage/run_events.hpp): the
  // others keep the seqs the export gave them, and those between are the deltas'.
  void event(const std::string& run_id, seq_row&& e, size_t) override {
    if (!storage::is_stream_delta_body(e.text))
      writer_.put_imported_event(run_id, e.seq, e.text, e.at);
    ++events;
  }

  int64_t deltas = 0, events = 0, sessions_added = 0;
  std::vector<std::string> kept_sessions, still_running;
  std::vector<std::pair<std::string, std::string>> stripped; // session, the fields dropped

private:
  void strip_launch_fields(session_row& s) {
    auto config = protocol::json::parse(s.config, nullptr, false);
    if (!config.is_object())
      return;
    std::string dropped;
    for (const char* key : launch_fields)
      if (config.erase(key) > 0)
        dropped += (dropped.empty() ? "" : ", ") + std::string(key);
    if (dropped.empty())
      return;
    s.config = protocol::dumps(config);
    stripped.emplace_back(s.session_id, dropped);
  }

  storage::log_writer& writer_;
  bool trust_configs_;
  SQLite::Statement mark_pruned_, has_session_;
};

int import_file(const import_flags& f) {
  if (f.file.empty())
    throw tool_error(exit_usage, "which file? give the export FILE (- for stdin)");
  export_source source(f.file);
  auto damaged = [&](const export_damaged& e) {
    return tool_error(exit_damaged, "damaged export file " + source.name() + ": " + e.what() +
                                      "; nothing was imported");
  };
  std::string path = log_path(f.where);
  export_bundle counted;
  try {
    import_check check(path);
    export_decoder decoder(check);
    counted = source.decode(decoder);
    check.verdict();
  } catch (const export_damaged& e) {
    throw damaged(e);
  }

  std::unique_ptr<storage::log_writer> writer;
  try {
    storage::make_private_dirs(std::filesystem::path(path).parent_path().string());
    writer = std::make_unique<storage::log_writer>(path);
  } catch (const std::exception& e) {
    throw tool_error(exit_usage, "cannot open event log " + path + " for writing: " + e.what());
  }

  import_write into(*writer, f.trust_configs);
  try {
    export_decoder decoder(into);
    source.decode(decoder);
    writer->commit();
  } catch (const export_damaged& e) { // the file changed between the two readings
    writer->rollback();
    throw damaged(e);
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

  std::cout << "imported " << counted.counts.runs << " run(s) (" << into.deltas << " deltas, " << into.events
            << " events) and " << into.sessions_added << " session(s) into " << path << std::endl;
  for (const auto& id : into.kept_sessions)
    std::cout << "session " << id << " was already in the log: kept its row there" << std::endl;
  for (const auto& [id, fields] : into.stripped)
    std::cout << "session " << id << ": left out " << fields
              << " from its config (a daemon would run there; --trust-configs keeps them)" << std::endl;
  for (const auto& id : into.still_running)
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
  sub->add_flag("--trust-configs", f->trust_configs,
                 "keep the sessions' workspace and native launch fields (hermes_bin, hermes_command, "
                 "tmux_socket, tmux_target, attach, state_db); left out by default");
  add_log_options(sub, f->where);
  sub->footer(std::string("Creates the log (with the daemon's schema) when it does not exist. Run and session ids\n"
                          "are kept, and each run answers get_result with the same bytes. All or nothing: a\n"
                          "damaged file, a run status the log does not know or a run already in the log\n"
                          "writes nothing. A session the log already has keeps its row. An imported session's\n"
                          "workspace and native launch fields are left out of its config (the daemon would\n"
                          "start its agent or TUI there) unless --trust-configs is given. The file is read\n"
                          "twice, line by line (stdin through a temporary copy), so memory stays small. Best\n"
                          "done while no daemon serves the log: the import holds the log's write lock until it\n"
                          "commits, and a serving daemon's appends wait for it.\n") +
              exit_codes_footer);
  on_chosen(sub, chosen, "import", [f] { return import_file(*f); });
}

} // namespace hb::app
