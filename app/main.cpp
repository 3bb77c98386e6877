// hermes-bridge: the command line. Parses flags, prepares the event log and
// the embedded Python, binds the socket, then hands over to the actors.
#include "actors/daemon.hpp"
#include "actors/daemon_log.hpp"
#include "actors/vocabulary.hpp"
#include "app/access.hpp"
#include "app/build_info.hpp"
#include "app/commands.hpp"
#include "app/connection_flags.hpp"
#include "app/native_flags.hpp"
#include "app/open_files.hpp"
#include "app/worker_hosting.hpp"
#include "bridge/agent_env.hpp"
#include "bridge/agent_hosting.hpp"
#include "bridge/python/embedded_agent.hpp"
#include "bridge/tmux/tmux_server.hpp"
#include "protocol/endpoint.hpp"
#include "protocol/json_text.hpp"
#include "protocol/trust.hpp"
#include "storage/log_startup.hpp"

#include <CLI/CLI.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

namespace {

std::string expand_user(const std::string& path) {
  if (path == "~" || path.rfind("~/", 0) == 0) {
    const char* home = std::getenv("HOME");
    return std::string(home ? home : "") + path.substr(1);
  }
  return path;
}

std::string absolute(const std::string& path) {
  std::error_code ec;
  auto p = std::filesystem::absolute(expand_user(path), ec);
  return ec ? expand_user(path) : p.lexically_normal().string();
}

struct serve_flags {
  std::string endpoint = hb::protocol::default_endpoint();
  std::string token_file;
  size_t max_connections = 4096;
  uint64_t max_pending_bytes = 256u << 20;
  size_t max_sessions = 10'000;
  std::string agent_root; // empty: searched (bridge/agent_env.cpp)
  std::string agent_host = "worker";
  std::string agent_python;
  hb::app::worker_flags workers;
  std::string hermes_home = "~/.hermes";
  std::string db;
  std::string synchronous = "NORMAL";
  std::string log_level = "info";
  std::string log_format = "logfmt";
  int64_t idle_timeout_s = 30 * 60;
  int64_t gc_interval_s = 60;
  bool skip_integrity_check = false;
  uint64_t integrity_check_max_mb = 256;
  uint64_t finished_cache_mb = 32;
  double retain_days = 30;
  int64_t retain_mb = 4096;
  double prune_interval_s = 60;
  std::string harness = "embedded";
  hb::app::native_flags native;
  hb::app::connection_flags connections;
};

using hb::actors::log_event;
using hb::actors::log_level;

void report_background_check(const std::string& path, const std::string& verdict) {
  if (verdict == "ok")
    log_event(log_level::info, "log.integrity_ok", "", {{"path", path}});
  else
    log_event(log_level::error, "log.damaged", hb::storage::damage_advice(path, verdict), {{"path", path}});
}

int refuse_to_start(std::string_view message) {
  log_event(log_level::error, "daemon.start_failed", message);
  return 1;
}

// The agent's venv (the installer's layout) lends the embedded interpreter
// its site-packages when it is of the same Python version; another version
// cannot be loaded into this process at all.
std::vector<std::string> embedded_site_dirs(const hb::bridge::agent_env& env) {
  std::vector<std::string> dirs;
  if (!env.agent_root)
    return dirs;
  for (const auto& python : env.interpreters) {
    if (python.source != "venv" && python.source != ".venv")
      continue;
    auto probe = hb::bridge::probe_interpreter(python, env.agent_root);
    if (!probe.ran)
      continue;
    std::string mine = hb::bridge::python_runtime::version();
    if (probe.version.rfind(mine + ".", 0) != 0 && probe.version != mine)
      throw hb::protocol::runtime_error(
        "the agent's environment " + python.display() + " is Python " + probe.version +
        ", but the embedded host runs Python " + mine + "; use --agent-host worker");
    std::string venv = std::filesystem::path(python.argv[0]).parent_path().parent_path().string();
    std::string site = venv + "/lib/python" + mine + "/site-packages";
    if (std::filesystem::is_directory(site))
      dirs.push_back(site);
    break; // the first venv interpreter is the agent's
  }
  return dirs;
}

// Agents in this process, on the Python linked into it.
int host_embedded(const serve_flags& flags, const std::string& home, const hb::bridge::agent_env& env,
                  hb::actors::daemon_settings& settings) {
  bool started = false;
  try {
    auto site_dirs = embedded_site_dirs(env);
    settings.agent_root =
      hb::bridge::python_runtime::start(env.agent_root.value_or(flags.agent_root), home, site_dirs);
    started = true;
  } catch (const hb::protocol::wire_error& e) {
    // A daemon that hosts the TUI needs no embedded hermes-agent; embedded
    // chats then fail with this reason instead.
    if (flags.harness != "native")
      return refuse_to_start(e.type + ": " + e.what());
    hb::bridge::python_runtime::mark_unavailable(e.type + ": " + e.what());
    settings.agent_root = "None";
    log_event(log_level::warn, "agent.unavailable", "embedded sessions are disabled", {{"reason", e.what()}});
  }
  std::string environment = hb::protocol::object_writer{}
                              .str("python", "/usr/bin/python3")
                              .str("python_version", hb::bridge::python_runtime::version())
                              .null("agent_version")
                              .finish();
  if (started) {
    try {
      environment = hb::bridge::python_runtime::environment_json();
    } catch (const hb::protocol::wire_error& e) {
      log_event(log_level::warn, "agent.environment", "cannot describe the embedded interpreter", {{"reason", e.what()}});
    }
  }
  hb::bridge::python_runtime::release_main_thread();
  hb::bridge::host_agents_embedded(std::move(environment), home);
  return 0;
}

int run_serve(const serve_flags& flags, int ready_fd) {
  hb::actors::set_log_level(hb::actors::parse_log_level(flags.log_level).value_or(log_level::info));
  if (auto format = hb::actors::parse_log_format(flags.log_format))
    hb::actors::set_log_format(*format);
  hb::protocol::endpoint endpoint;
  try {
    endpoint = hb::protocol::parse_endpoint(flags.endpoint);
  } catch (const std::exception& e) {
    return refuse_to_start(e.what());
  }
  std::string home = absolute(flags.hermes_home);
  std::string db_path = flags.db.empty() ? home + "/hermes-bridge/events.db" : absolute(flags.db);

  hb::storage::opened_log log;
  try {
    hb::storage::startup_options options;
    options.synchronous = flags.synchronous;
    options.skip_integrity_check = flags.skip_integrity_check;
    options.check_before_serving_max_bytes = flags.integrity_check_max_mb << 20;
    log = hb::storage::open_for_serving(db_path, options, hb::actors::now_seconds());
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

  hb::actors::daemon_settings settings;
  settings.hermes_home = home;
  settings.version_json = hb::app::build_info_json();
  // Found the way Hermes Studio finds it, whichever host runs it.
  auto env = hb::bridge::find_agent_env(
    hb::bridge::agent_env_inputs::from_process(flags.agent_root, home, flags.agent_python));
  if (flags.agent_host == "worker") {
    if (int rc = hb::app::host_in_workers(flags.workers, home, env, settings); rc != 0)
      return rc;
  } else if (int rc = host_embedded(flags, home, env, settings); rc != 0) {
    return rc;
  }
  settings.default_harness = flags.harness;
  settings.native = hb::app::native_options_from(flags.native, home, absolute);
  if (flags.harness == "native") {
    // Said at start as well as on each native chat: a person starting a
    // native daemon should learn at once what it lacks.
    std::string tmux = hb::bridge::find_executable("tmux");
    if (tmux.empty())
      log_event(log_level::warn, "native.tmux_missing",
                std::string("tmux not found on PATH: native sessions need tmux ") + hb::bridge::minimum_tmux +
                  " or newer");
    else if (auto problem = hb::bridge::tmux_version_problem(tmux))
      log_event(log_level::warn, "native.tmux_unusable", *problem, {{"tmux", tmux}});
  }

  int listen_fd = -1;
  bool activated = false;
  try {
    listen_fd = hb::app::inherited_listener();
    activated = listen_fd >= 0;
    if (!flags.token_file.empty())
      settings.token = hb::app::read_token_file(flags.token_file);
    hb::protocol::require_trusted_tree(settings.native->runtime_dir, "native session directory");
    if (!activated)
      listen_fd = hb::protocol::listen_on(endpoint);
    hb::app::check_listener_reach(listen_fd, activated, !settings.token.empty());
  } catch (const std::exception& e) {
    if (listen_fd >= 0)
      ::close(listen_fd);
    return refuse_to_start(e.what());
  }
  settings.endpoint = flags.endpoint;
  settings.db_path = db_path;
  try {
    auto budget = hb::app::fit_connections(flags.max_connections);
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
  if (endpoint.type == hb::protocol::endpoint::kind::ipc && !activated)
    settings.socket_path = endpoint.path; // unlinked on stop (systemd owns an inherited one)
  settings.idle_timeout = std::chrono::seconds(flags.idle_timeout_s);
  settings.gc_interval = std::chrono::seconds(flags.gc_interval_s);
  settings.finished_cache_bytes = flags.finished_cache_mb << 20;
  hb::app::apply_connection_flags(flags.connections, settings);
  settings.retain_days = flags.retain_days;
  settings.retain_mb = flags.retain_mb;
  settings.prune_interval = std::chrono::milliseconds(static_cast<int64_t>(flags.prune_interval_s * 1000));

  return hb::actors::serve(settings, listen_fd, log.writer, log.sessions, [&] {
    std::string line = hb::protocol::object_writer{}
                         .str("event", "ready")
                         .str("endpoint", flags.endpoint).raw("agent", hb::bridge::agent_summary_json())
                         .finish() + "\n";
    [[maybe_unused]] auto n = ::write(ready_fd, line.data(), line.size());
    if (log.check_after_serving)
      hb::storage::check_in_background(db_path, report_background_check);
  });
}

// stdout carries exactly one line, the ready line. Everything else that
// would write there (the agent prints, so do some libraries) goes to stderr.
int serve_from_main(const serve_flags& flags) {
  int ready_fd = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 0); // never inherited by a child (tmux, workers)
  ::dup2(STDERR_FILENO, STDOUT_FILENO);
  return run_serve(flags, ready_fd);
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"hermes-bridge: hosts hermes-agent sessions for socket clients such as Hermes Studio.\n"
               "A drop-in for hermes_bridge.py: same protocol, concurrent runs, every run kept in an\n"
               "SQLite event log."};
  app.require_subcommand(1);
  serve_flags flags;
  // The subcommand chosen on the command line sets what runs.
  std::function<int()> chosen;
  auto* serve = app.add_subcommand("serve", "Serve the bridge protocol (the default command).");
  serve->callback([&] { chosen = [&] { return serve_from_main(flags); }; });
  serve->add_option("--endpoint", flags.endpoint,
                    "ipc://PATH (unix socket, created 0600) or tcp://HOST:PORT; the default is per user. "
                    "Under systemd socket activation the inherited socket is served")
    ->envname("HERMES_AGENT_BRIDGE_ENDPOINT")
    ->capture_default_str();
  serve->add_option("--token-file", flags.token_file,
                    "clients must send this file's token as \"token\" in their requests "
                    "(required for a TCP socket not bound to loopback, inherited ones included; the "
                    "file must be 0600)")
    ->envname("HERMES_BRIDGE_TOKEN_FILE");
  serve->add_option("--max-connections", flags.max_connections,
                    "connections beyond this many are refused with an error (lowered, with a warning, to "
                    "fit under the open-file limit, which is raised to its hard limit at start)")
    ->envname("HERMES_BRIDGE_MAX_CONNECTIONS")
    ->check(CLI::PositiveNumber)
    ->capture_default_str();
  serve->add_option("--max-pending-bytes", flags.max_pending_bytes,
                    "bytes of unfinished request lines held for all connections together; data beyond "
                    "is refused with an error")
    ->envname("HERMES_BRIDGE_MAX_PENDING_BYTES")
    ->check(CLI::PositiveNumber)
    ->capture_default_str();
  serve->add_option("--max-sessions", flags.max_sessions,
                    "sessions (live or dormant) the daemon keeps; a chat for a new session id beyond is "
                    "refused with an error")
    ->envname("HERMES_BRIDGE_MAX_SESSIONS")
    ->check(CLI::PositiveNumber)
    ->capture_default_str();
  serve->add_option("--agent-root", flags.agent_root,
                    "hermes-agent source tree (the directory holding run_agent.py); when it has none: "
                    "<hermes-home>/hermes-agent, near the hermes command, the current directory, "
                    "/usr/local/lib/hermes-agent and other usual places")
    ->envname("HERMES_AGENT_ROOT")
    ->capture_default_str();
  serve->add_option("--agent-host", flags.agent_host,
                    "where agents run: worker (a process per profile on the agent's own Python, found as "
                    "Hermes Studio finds it) or embedded (in this process, on the Python linked into it)")
    ->envname("HERMES_BRIDGE_AGENT_HOST")
    ->check(CLI::IsMember({"embedded", "worker"}))
    ->capture_default_str();
  serve->add_option("--agent-python", flags.agent_python,
                    "the interpreter agent workers run with (default: <agent-root>/venv/bin/python3, "
                    ".venv, the hermes command's shebang, uv run, python3 on PATH)")
    ->envname("HERMES_AGENT_PYTHON");
  hb::app::add_worker_flags(*serve, flags.workers);
  serve->add_option("--hermes-home", flags.hermes_home, "Hermes home (config.yaml, .env, state.db, profiles/)")
    ->envname("HERMES_HOME")
    ->capture_default_str();
  serve->add_option("--harness", flags.harness,
                    "how new sessions host their agent unless a chat names one: embedded (hermes-agent "
                    "in this process) or native (the hermes TUI in a private tmux server)")
    ->envname("HERMES_BRIDGE_HARNESS")
    ->check(CLI::IsMember({"embedded", "native"}))
    ->capture_default_str();
  hb::app::add_native_flags(*serve, flags.native);
  serve->add_option("--db", flags.db, "event log file (default: <hermes-home>/hermes-bridge/events.db)")
    ->envname("HERMES_BRIDGE_DB");
  serve->add_option("--log-level", flags.log_level,
                    "debug, info, warn or error: the least important log line written to stderr")
    ->envname("HERMES_BRIDGE_LOG_LEVEL")
    ->check(CLI::IsMember({"debug", "info", "warn", "error"}))
    ->capture_default_str();
  serve->add_option("--log-format", flags.log_format,
                    "logfmt (key=value, for people and grep) or json (one JSON object a line, the same "
                    "fields, for log shippers)")
    ->envname("HERMES_BRIDGE_LOG_FORMAT")
    ->check(CLI::IsMember({"logfmt", "json"}))
    ->capture_default_str();
  serve->add_option("--synchronous", flags.synchronous,
                    "SQLite synchronous mode of the event log: NORMAL survives kill -9, FULL also "
                    "power loss (slower)")
    ->envname("HERMES_BRIDGE_SYNCHRONOUS")
    ->check(CLI::IsMember({"OFF", "NORMAL", "FULL", "EXTRA"}))
    ->capture_default_str();
  serve->add_option("--idle-timeout", flags.idle_timeout_s,
                    "seconds an idle session keeps its agent before it is collected (never while running)")
    ->envname("HERMES_BRIDGE_IDLE_TIMEOUT")
    ->check(CLI::PositiveNumber)
    ->capture_default_str();
  serve->add_option("--gc-interval", flags.gc_interval_s, "seconds between idle-session sweeps")
    ->envname("HERMES_BRIDGE_GC_INTERVAL")
    ->check(CLI::PositiveNumber)
    ->capture_default_str();
  serve->add_option("--finished-cache-mb", flags.finished_cache_mb,
                    "finished runs kept in memory to answer reads without the log (0: none; a run "
                    "over half of it is never kept)")
    ->envname("HERMES_BRIDGE_FINISHED_CACHE_MB")
    ->capture_default_str();
  hb::app::add_connection_flags(*serve, flags.connections);
  serve->add_option("--retain-days", flags.retain_days,
                    "finished runs older than this lose their deltas and events (0: keep forever); "
                    "each session's latest run is always kept")
    ->envname("HERMES_BRIDGE_RETAIN_DAYS")
    ->check(CLI::NonNegativeNumber)
    ->capture_default_str();
  serve->add_option("--retain-mb", flags.retain_mb,
                    "above this size the oldest finished runs are pruned first (0: no limit)")
    ->envname("HERMES_BRIDGE_RETAIN_MB")
    ->check(CLI::NonNegativeNumber)
    ->capture_default_str();
  serve->add_option("--prune-interval", flags.prune_interval_s, "seconds between retention checks")
    ->envname("HERMES_BRIDGE_PRUNE_INTERVAL")
    ->check(CLI::PositiveNumber)
    ->capture_default_str();
  serve->add_flag("--skip-integrity-check", flags.skip_integrity_check,
                  "start even when the event log fails SQLite's quick_check");
  serve->add_option("--integrity-check-max-mb", flags.integrity_check_max_mb,
                    "logs up to this size are checked before the ready line (a damaged one is refused); "
                    "larger ones right after it, so start-up time stays bounded")
    ->capture_default_str();
  serve->footer(
    "Prints {\"event\": \"ready\", \"endpoint\": ...} on stdout once it listens; logs go to stderr.\n"
    "Stops on the `shutdown` action, SIGTERM or SIGINT: live runs are interrupted, the log flushed.\n"
    "A leading *.py argument (Hermes Studio's way of starting hermes_bridge.py) is ignored.");

  hb::app::add_commands(app, chosen);

  std::vector<std::string> args = hb::app::command_line_args(argc, argv, app);
  std::vector<const char*> cargs{argv[0]};
  for (const auto& a : args)
    cargs.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(cargs.size()), const_cast<char**>(cargs.data()));
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return chosen ? chosen() : 2;
}
