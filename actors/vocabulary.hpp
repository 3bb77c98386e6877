// What every part of the daemon shares: how it was started (its settings),
// the clock its records carry, and how ids are made. (The actors' messages
// are structs in the *_messages.hpp headers beside this one.)
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <set>
#include <string>

namespace hb::bridge {
struct native_options; // bridge/tmux/native_session.hpp
}

namespace hb::actors {

// What the actors need to know about how the daemon was started.
struct daemon_settings {
  std::string endpoint;
  std::string agent_root;   // as ping reports it
  std::string hermes_home;  // as worker_ping reports it
  std::string db_path;
  std::string version_json = "{}"; // this build (app/build_info.hpp), in ping and health
  std::string socket_path;  // ipc:// endpoints: unlinked on stop
  size_t max_line_bytes = 64u << 20;
  std::chrono::milliseconds read_timeout{30'000};
  std::chrono::milliseconds keepalive_idle{300'000};
  uint64_t subscriber_buffer_bytes = 8u << 20;
  std::chrono::milliseconds subscriber_stall{30'000};
  uint64_t client_buffer_bytes = 64u << 20; // answers waiting for a client that does not read
  uint64_t max_queued_answer_bytes = 512u << 20; // answers not yet taken, all connections together
  std::chrono::milliseconds write_timeout{30'000}; // a waiting answer none of which is taken: cut
  std::chrono::seconds idle_timeout{30 * 60};
  std::chrono::seconds gc_interval{60};
  std::chrono::seconds drain_timeout{5};
  size_t readers = 2;
  size_t max_connections = 4096;
  uint64_t max_pending_bytes = 256u << 20; // unfinished request lines, all connections together
  size_t max_sessions = 10'000;
  std::string token; // empty: no token required (never logged)
  double retain_days = 30;
  int64_t retain_mb = 4096;
  std::chrono::milliseconds prune_interval{60'000};
  uint64_t finished_cache_bytes = 32u << 20; // finished runs kept in memory for reads
  std::string default_harness = "embedded"; // serve --harness
  std::shared_ptr<const bridge::native_options> native; // how native sessions are hosted
  // Questions the log shows open in runs that go on after a restart: an
  // answer to one waits (briefly) for its run to open it again.
  std::set<std::string> reopening_questions;
};

double now_seconds();
std::string new_id(); // 32 lowercase hex digits, like uuid4().hex

} // namespace hb::actors
