// One place for a worker process in the pool (worker_pool.hpp): what the
// pool's files share about it. Fields marked "mu_" are guarded by the pool's
// lock; the rest by the slot's start_mu.
#pragma once

#include "bridge/worker/worker_pool.hpp"

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

namespace hb::bridge::worker {

struct worker_pool::slot {
  using clock = std::chrono::steady_clock;
  std::string profile;
  size_t index = 0;
  std::mutex start_mu;                  // one start at a time; other slots and profiles go on
  std::shared_ptr<worker_process> proc; // mu_
  size_t sessions = 0;                  // mu_
  bool starting = false;                // mu_: a start is on its way (a spare reserved, or running())
  int crashes = 0;                      // deaths in a row, each soon after its start
  int restarts = 0;
  int recycled = 0;                     // stopped for idleness or size, not deaths
  std::string last_death;
  clock::time_point retry_at{};
  clock::time_point idle_since = clock::now(); // mu_
};

} // namespace hb::bridge::worker
