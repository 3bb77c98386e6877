// serve's flags for what one connection may cost the daemon: line length,
// read and write deadlines, idle keepalives, and the bytes of answers held
// for clients that do not read them.
#pragma once

#include "actors/vocabulary.hpp"

#include <CLI/CLI.hpp>

#include <cstdint>

namespace hb::app {

struct connection_flags {
  size_t max_line_bytes = 64u << 20;
  int64_t read_timeout_ms = 30'000;
  int64_t write_timeout_ms = 30'000;
  int64_t keepalive_idle_ms = 300'000;
  uint64_t subscriber_buffer_bytes = 8u << 20;
  int64_t subscriber_stall_ms = 30'000;
  uint64_t client_buffer_bytes = 64u << 20;
  uint64_t max_queued_answer_bytes = 512u << 20;
};

void add_connection_flags(CLI::App& serve, connection_flags& flags);
void apply_connection_flags(const connection_flags& flags, actors::daemon_settings& settings);

} // namespace hb::app
