// Where an answer goes, apart from the broker that writes it: the output hub
// (output_hub.hpp) keeps these for its watchers without the whole broker.
#pragma once

#include <caf/io/connection_handle.hpp>

#include <chrono>
#include <cstdint>
#include <string>

namespace hb::actors {

using handle = caf::io::connection_handle;
using steady_time = std::chrono::steady_clock::time_point;

// Where an answer goes: a connection, the request's place in that
// connection's order, and the client's "id" to echo (JSON text, or empty).
struct reply_to {
  handle h;
  uint64_t seq = 0;
  std::string id;
};

} // namespace hb::actors
