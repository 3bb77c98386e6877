#include "app/serve.hpp"

#include "actors/daemon.hpp"
#include "actors/daemon_log.hpp"
#include "actors/vocabulary.hpp"
#include "app/access.hpp"
#include "app/build_info.hpp"
#include "app/embedded_hosting.hpp"
#include "app/handover.hpp"
#include "app/open_files.hpp"
#include "app/tool_support.hpp"
#include "app/worker_hosting.hpp"
#include "bridge/agent_env.hpp"
#include "bridge/agent_hosting.hpp"
#include "bridge/tmux/native_session.hpp"
#include "bridge/tmux/tmux_server.hpp"
#include "protocol/endpoint.hpp"
#include "protocol/json_text.hpp"
#include "protocol/trust.hpp"
#include "storage/log_file.hpp"
#include "storage/log_startup.hpp"
#include "storage/recovery.hpp"
#include "storage/schema.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace hb::app {

using actors::log_event;
using actors::log_level;

namespace {

void report_background_check(const std::string& path, const std::string& verdict) {
  if (verdict == "ok")
    log_event(log_level::info, "log.integrity_ok", "", {{"path", path}});
  else
    log_event(log_level::error, "log.damaged", storage::damage_advice(path, verdict), {{"path", path}});
}

// How long a daemon handing over may take to answer what it was asked,
// flush its log and exit (its own drain of connections stops after 5 s).
constexpr std::chrono::seconds handover_deadline{60};

// Re-attaches to each TUI whose turn the log shows live and offers it to its
// session, which mirrors the rest of the turn.
void adopt_native_turns(const std::vector<bridge::native_live_turn>& turns, const bridge::native_options& options,
                        const storage::opened_log& log) {
  std::map<std::string, bridge::adopted_agent> agents;
  for (const auto& t : turns) {
    auto run = log.continuing.find(t.run_id);
    if (run == log.continuing.end() || run->second.session_id != t.session_id)
      continue; // the log does not show it live (or shows it elsewhere)
    std::string history = "[]";
    for (const auto& row : log.sessions)
      if (row.session_id == t.session_id && row.history_known)
        history = row.history;
    try {
      if (auto agent = bridge::native_session::adopt(t, options, history))
        agents[t.session_id] = bridge::adopted_agent{std::move(agent), t.run_id};
    } catch (const std::exception& e) {
      log_event(log_level::warn, "native.adopt_failed", e.what(), {{"session", t.session_id}, {"run", t.run_id}});
    }
  }
  bridge::offer_adopted_agents(std::move(agents));
}

// The runs the last daemon left live: those an adopted worker or TUI still
// runs go on; the rest are recovered now, interrupted like any other.
void continue_or_interrupt(storage::opened_log& log) {
  if (log.continuing.empty())
    return;
  auto followed = bridge::adopted_live_runs();
  auto late = storage::recover_open_runs(log.writer->database(), actors::now_seconds(), followed);
  log.recovered.runs_interrupted += late.runs_interrupted;
  log_event(log_level::info, "log.runs_continued", "runs live in workers or TUIs that outlived the last daemon go on",
            {{"runs_continued", std::to_string(followed.size())},
             {"runs_interrupted", std::to_string(late.runs_interrupted)}});
}

int refuse_to_start(std::string_view message) {
  log_event(log_level::error, "daemon.start_failed", message);
  return 1;
}

int run_serve(const serve_flags& flags, int ready_fd) {
  actors::set_log_level(actors::parse_log_level(flags.log_level).value_or(log_level::info));
  if (auto format = actors::parse_log_format(flags.log_format))
    actors::set_log_format(*format);
  protocol::endpoint endpoint;
  try {
    endpoint = protocol::parse_endpoint(flags.endpoint);
  } catch (const std::exception& e) {
    return refuse_to_start(e.what());
  }
  std::string home = absolute_path(flags.hermes_home);
  std::string db_path = flags.db.empty() ? home + "/hermes-bridge/events.db" : absolute_path(flags.db);

  // A daemon serving this log now hands its socket over and exits first:
  // until then the log and the workers are its own.
  std::optional<int> taken_fd;
  std::string handover_path;
  try {
    std::string runtime_dir = default_worker_dir();
    protocol::make_trusted_dir(runtime_dir, "agent worker directory");
    handover_path = handover_socket_path(runtime_dir, db_path);
    if (flags.take_over) {
      taken_fd = take_over(handover_path, handover_deadline);
      if (taken_fd)
        log_event(log_level::info, "daemon.took_over", "the daemon serving this log handed over its socket and exited",
                  {{"path", db_path}});
      else
        log_event(log_level::info, "daemon.take_over_nobody", "no daemon serves this log: starting as usual",
                  {{"path", db_path}});
    }
  } catch (const std::exception& e) {
    return refuse_to_start(std::string("cannot take over: ") + e.what());
  }

  // Workers an earlier daemon left running, found before the log is
  // recovered: the runs they still run go on instead of being interrupted.
  std::vector<bridge::worker::found_worker> survivors;
  if (flags.agent_host == "worker") {
    try {
      survivors = attach_to_surviving_workers(db_path);
    } catch (const std::exception& e) {
      return refuse_to_start(e.what());
    }
  }
  // Native turns the last daemon was mirroring whose TUI still runs go on too.
  auto native = native_options_from(flags.native, home);
  std::vector<bridge::native_live_turn> native_turns;
  try {
    native_turns = bridge::find_live_native_turns(*native);
  } catch (const std::exception& e) {
    log_event(log_level::warn, "native.live_turns_unreadable", e.what());
  }
  storage::opened_log log;
  try {
    storage::startup_options options;
    for (const auto& w : survivors)
      for (const auto& turn : w.held.turns)
        options.continuing.insert(turn.run);
    for (const auto& t : native_turns)
      options.continuing.insert(t.run_id);
    options.synchronous = flags.synchronous;
    options.skip_integrity_check = flags.skip_integrity_check;
    options.check_before_serving_max_bytes = flags.integrity_check_max_mb << 20;
    int found = storage::stored_schema_version(db_path);
    if (found > 0 && found < storage::schema_version) // a rewrite of the log: minutes for a large one
      log_event(log_level::info, "log.migrating", "bringing the event log up to this build's schema, once",
                {{"path", db_path}, {"from", std::to_string(found)}, {"to", std::to_string(storage::schema_version)}});
    log = storage::open_for_serving(db_path, options, actors::now_seconds());
  } catch (const std::exception& e) {
    return refuse_to_start("cannot serve event log " + db_path + ": " + e.what());
  }
  log_event(log_level::info, "log.recovered", "",
            {{"path", db_path},
             {"ms", std::to_string(static_cast<int>(log.seconds * 1000))},
             {"runs_interrupted", std::to_string(log.recovered.runs_interrupted)},
             {"approvals_denied", std::to_string(log.recovered.approvals_denied)},
             {"compressions_failed", std::to_string(log.recovered.compressions_failed)},
             {"turns_kept", std::to_string(log.recovered.turns_kept)},
             {"sessions_dormant", std::to_string(log.sessions.size())}});

  actors::daemon_settings settings;
  settings.hermes_home = home;
  settings.version_json = build_info_json();
  // Found the way Hermes Studio finds it, whichever host runs it.
  auto env = bridge::find_agent_env(
    bridge::agent_env_inputs::from_process(flags.agent_root, home, flags.agent_python));
  if (flags.agent_host == "worker") {
    if (int rc = host_in_workers(flags.workers, home, env, settings, std::move(survivors), log); rc != 0)
      return rc;
  } else if (int rc = host_embedded(flags.agent_root, flags.harness == "native", home, env, settings); rc != 0) {
    return rc;
  }
  adopt_native_turns(native_turns, *native, log);
  continue_or_interrupt(log);
  settings.reopening_questions = storage::open_question_ids(log.writer->database(), bridge::adopted_live_runs());
  settings.default_harness = flags.harness;
  settings.native = native;
  if (flags.harness == "native") {
    // Said at start as well as on each native chat: a person starting a
    // native daemon should learn at once what it lacks.
    std::string tmux = bridge::find_executable("tmux");
    if (tmux.empty())
      log_event(log_level::warn, "native.tmux_missing",
                std::string("tmux not found on PATH: native sessions need tmux ") + bridge::minimum_tmux +
                  " or newer");
    else if (auto problem = bridge::tmux_version_problem(tmux))
      log_event(log_level::warn, "native.tmux_unusable", *problem, {{"tmux", tmux}});
  }

  int listen_fd = taken_fd.value_or(-1);
  bool activated = false;
  try {
    if (listen_fd < 0)
      listen_fd = inherited_listener();
    activated = listen_fd >= 0 && !taken_fd;
    if (!flags.token_file.empty())
      settings.token = read_token_file(flags.token_file);
    protocol::require_trusted_tree(settings.native->runtime_dir, "native session directory");
    if (listen_fd < 0)
      listen_fd = protocol::listen_on(endpoint);
    check_listener_reach(listen_fd, activated, !settings.token.empty());
  } catch (const std::exception& e) {
    if (listen_fd >= 0)
      ::close(listen_fd);
    return refuse_to_start(e.what());
  }
  settings.endpoint = flags.endpoint;
  settings.db_path = db_path;
  try {
    auto budget = fit_connections(flags.max_connections);
    settings.max_connections = budget.max_connections;
    if (budget.lowered)
      log_event(log_level::warn, "connections.capped", "--max-connections lowered to fit the open-file limit",
                {{"max_connections", std::to_string(budget.max_connections)},
                 {"open_file_limit", std::to_string(budget.open_file_limit)}});
  } catch (const std::exception& e) {
    ::close(listen_fd);
    return refuse_to_start(e.what());
  }
  settings.max_pending_bytes = flags.max_pending_bytes;
  settings.max_sessions = flags.max_sessions;
  if (taken_fd)
    settings.socket_path = unix_path_of(listen_fd); // ours now, whatever --endpoint says
  else if (endpoint.type == protocol::endpoint::kind::ipc && !activated)
    settings.socket_path = endpoint.path; // unlinked on stop (systemd owns an inherited one)
  settings.idle_timeout = std::chrono::seconds(flags.idle_timeout_s);
  settings.gc_interval = std::chrono::seconds(flags.gc_interval_s);
  settings.finished_cache_bytes = flags.finished_cache_mb << 20;
  apply_connection_flags(flags.connections, settings);
  settings.retain_days = flags.retain_days;
  settings.retain_mb = flags.retain_mb;
  settings.prune_interval = std::chrono::milliseconds(static_cast<int64_t>(flags.prune_interval_s * 1000));

  std::unique_ptr<handover_offer> offer;
  return actors::serve(settings, listen_fd, log.writer, log.sessions, [&] {
    // Offered once serving: a successor's request then finds the daemon whole.
    try {
      offer = std::make_unique<handover_offer>(handover_path, listen_fd, actors::request_handover);
    } catch (const std::exception& e) {
      log_event(log_level::warn, "daemon.no_handover", std::string("no upgrade without downtime: ") + e.what());
    }
    std::string line = protocol::object_writer{}
                         .str("event", "ready")
                         .str("endpoint", flags.endpoint).raw("agent", bridge::agent_summary_json())
                         .finish() + "\n";
    [[maybe_unused]] auto n = ::write(ready_fd, line.data(), line.size());
    if (log.check_after_serving)
      storage::check_in_background(db_path, report_background_check);
  });
}

} // namespace

// stdout carries exactly one line, the ready line. Everything else that
// would write there (the agent prints, so do some libraries) goes to stderr.
int run_serve_command(const serve_flags& flags) {
  int ready_fd = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 0); // never inherited by a child (tmux, workers)
  ::dup2(STDERR_FILENO, STDOUT_FILENO);
  return run_serve(flags, ready_fd);
}

} // namespace hb::app
