#include "app/serve_flags.hpp"

namespace hb::app {

CLI::App* add_serve_command(CLI::App& app, serve_flags& flags) {
  CLI::App& serve = *app.add_subcommand("serve", "Serve the bridge protocol (the default command).");
  serve.add_option("--endpoint", flags.endpoint,
                   "ipc://PATH (unix socket, created 0600) or tcp://HOST:PORT; the default is per user. "
                   "Under systemd socket activation the inherited socket is served")
    ->envname("HERMES_AGENT_BRIDGE_ENDPOINT")
    ->capture_default_str();
  serve.add_option("--token-file", flags.token_file,
                   "clients must send this file's token as \"token\" in their requests "
                   "(required for a TCP socket not bound to loopback, inherited ones included; the "
                   "file must be 0600)")
    ->envname("HERMES_BRIDGE_TOKEN_FILE");
  serve.add_option("--max-connections", flags.max_connections,
                   "connections beyond this many are refused with an error (lowered, with a warning, to "
                   "fit under the open-file limit, which is raised to its hard limit at start)")
    ->envname("HERMES_BRIDGE_MAX_CONNECTIONS")
    ->check(CLI::PositiveNumber)
    ->capture_default_str();
  serve.add_option("--max-pending-bytes", flags.max_pending_bytes,
                   "bytes of unfinished request lines held for all connections together; data beyond "
                   "is refused with an error")
    ->envname("HERMES_BRIDGE_MAX_PENDING_BYTES")
    ->check(CLI::PositiveNumber)
    ->capture_default_str();
  serve.add_option("--max-sessions", flags.max_sessions,
                   "sessions (live or dormant) the daemon keeps; a chat for a new session id beyond is "
                   "refused with an error")
    ->envname("HERMES_BRIDGE_MAX_SESSIONS")
    ->check(CLI::PositiveNumber)
    ->capture_default_str();
  serve.add_option("--agent-root", flags.agent_root,
                   "hermes-agent source tree (the directory holding run_agent.py); when it has none: "
                   "<hermes-home>/hermes-agent, near the hermes command, the current directory, "
                   "/usr/local/lib/hermes-agent and other usual places")
    ->envname("HERMES_AGENT_ROOT")
    ->capture_default_str();
  serve.add_option("--agent-host", flags.agent_host,
                   "where agents run: worker (a process per profile on the agent's own Python, found as "
                   "Hermes Studio finds it) or embedded (in this process, on the Python linked into it)")
    ->envname("HERMES_BRIDGE_AGENT_HOST")
    ->check(CLI::IsMember({"embedded", "worker"}))
    ->capture_default_str();
  serve.add_option("--agent-python", flags.agent_python,
                   "the interpreter agent workers run with (default: <agent-root>/venv/bin/python3, "
                   ".venv, the hermes command's shebang, uv run, python3 on PATH)")
    ->envname("HERMES_AGENT_PYTHON");
  add_worker_flags(serve, flags.workers);
  serve.add_option("--hermes-home", flags.hermes_home, "Hermes home (config.yaml, .env, state.db, profiles/)")
    ->envname("HERMES_HOME")
    ->capture_default_str();
  serve.add_option("--harness", flags.harness,
                   "how new sessions host their agent unless a chat names one: embedded (hermes-agent "
                   "in this process) or native (the hermes TUI in a private tmux server)")
    ->envname("HERMES_BRIDGE_HARNESS")
    ->check(CLI::IsMember({"embedded", "native"}))
    ->capture_default_str();
  add_native_flags(serve, flags.native);
  serve.add_option("--db", flags.db, "event log file (default: <hermes-home>/hermes-bridge/events.db)")
    ->envname("HERMES_BRIDGE_DB");
  serve.add_option("--log-level", flags.log_level,
                   "debug, info, warn or error: the least important log line written to stderr")
    ->envname("HERMES_BRIDGE_LOG_LEVEL")
    ->check(CLI::IsMember({"debug", "info", "warn", "error"}))
    ->capture_default_str();
  serve.add_option("--log-format", flags.log_format,
                   "logfmt (key=value, for people and grep) or json (one JSON object a line, the same "
                   "fields, for log shippers)")
    ->envname("HERMES_BRIDGE_LOG_FORMAT")
    ->check(CLI::IsMember({"logfmt", "json"}))
    ->capture_default_str();
  serve.add_option("--synchronous", flags.synchronous,
                   "SQLite synchronous mode of the event log: NORMAL survives kill -9, FULL also "
                   "power loss (slower)")
    ->envname("HERMES_BRIDGE_SYNCHRONOUS")
    ->check(CLI::IsMember({"OFF", "NORMAL", "FULL", "EXTRA"}))
    ->capture_default_str();
  serve.add_option("--idle-timeout", flags.idle_timeout_s,
                   "seconds an idle session keeps its agent before it is collected (never while running)")
    ->envname("HERMES_BRIDGE_IDLE_TIMEOUT")
    ->check(CLI::PositiveNumber)
    ->capture_default_str();
  serve.add_option("--gc-interval", flags.gc_interval_s, "seconds between idle-session sweeps")
    ->envname("HERMES_BRIDGE_GC_INTERVAL")
    ->check(CLI::PositiveNumber)
    ->capture_default_str();
  serve.add_option("--finished-cache-mb", flags.finished_cache_mb,
                   "finished runs kept in memory to answer reads without the log (0: none; a run "
                   "over half of it is never kept)")
    ->envname("HERMES_BRIDGE_FINISHED_CACHE_MB")
    ->capture_default_str();
  add_connection_flags(serve, flags.connections);
  serve.add_option("--retain-days", flags.retain_days,
                   "finished runs older than this lose their deltas and events (0: keep forever); "
                   "each session's latest run is always kept")
    ->envname("HERMES_BRIDGE_RETAIN_DAYS")
    ->check(CLI::NonNegativeNumber)
    ->capture_default_str();
  serve.add_option("--retain-mb", flags.retain_mb,
                   "above this size the oldest finished runs are pruned first (0: no limit)")
    ->envname("HERMES_BRIDGE_RETAIN_MB")
    ->check(CLI::NonNegativeNumber)
    ->capture_default_str();
  serve.add_option("--prune-interval", flags.prune_interval_s, "seconds between retention checks")
    ->envname("HERMES_BRIDGE_PRUNE_INTERVAL")
    ->check(CLI::PositiveNumber)
    ->capture_default_str();
  serve.add_flag("--take-over", flags.take_over,
                 "upgrade without downtime: take the listening socket of the daemon serving this event log, "
                 "which answers what it was asked and exits, then serve on it with its workers and live runs "
                 "(no daemon running: start as usual)");
  serve.add_flag("--skip-integrity-check", flags.skip_integrity_check,
                 "start even when the event log fails SQLite's quick_check");
  serve.add_option("--integrity-check-max-mb", flags.integrity_check_max_mb,
                   "logs up to this size are checked before the ready line (a damaged one is refused); "
                   "larger ones right after it, so start-up time stays bounded")
    ->capture_default_str();
  serve.footer(
    "Prints {\"event\": \"ready\", \"endpoint\": ...} on stdout once it listens; logs go to stderr.\n"
    "Stops on the `shutdown` action, SIGTERM or SIGINT: live runs are interrupted, the log flushed.\n"
    "A leading *.py argument (Hermes Studio's way of starting hermes_bridge.py) is ignored.");
  return &serve;
}

} // namespace hb::app
