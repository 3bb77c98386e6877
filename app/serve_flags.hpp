// serve's flags, every one of them: what the daemon listens on, where its
// log and agents are, its limits. The sequence that starts the daemon from
// them is in app/serve.cpp.
#pragma once

#include "app/connection_flags.hpp"
#include "app/native_flags.hpp"
#include "app/worker_hosting.hpp"
#include "protocol/endpoint.hpp"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace hb::app {

struct serve_flags {
  std::string endpoint = protocol::default_endpoint();
  std::string token_file;
  size_t max_connections = 4096;
  uint64_t max_pending_bytes = 256u << 20;
  size_t max_sessions = 10'000;
  std::string agent_root; // empty: searched (bridge/agent_env.cpp)
  std::string agent_host = "worker";
  std::string agent_python;
  worker_flags workers;
  std::string hermes_home = "~/.hermes";
  std::string db;
  std::string synchronous = "NORMAL";
  std::string log_level = "info";
  std::string log_format = "logfmt";
  int64_t idle_timeout_s = 30 * 60;
  int64_t gc_interval_s = 60;
  bool skip_integrity_check = false;
  bool take_over = false;
  uint64_t integrity_check_max_mb = 256;
  uint64_t finished_cache_mb = 32;
  double retain_days = 30;
  int64_t retain_mb = 4096;
  double prune_interval_s = 60;
  std::string harness = "embedded";
  native_flags native;
  connection_flags connections;
};

// Adds the `serve` subcommand with its flags (bound to `flags`) to `app`.
CLI::App* add_serve_command(CLI::App& app, serve_flags& flags);

} // namespace hb::app
