// What happens to agent worker processes (one died, one was killed as
// unresponsive), for the daemon's log, where an operator alerts on it.
// bridge/ has no log of its own (the daemon's is in actors/, above it): the
// app plugs it in before the first worker starts; until then events go nowhere.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace hb::bridge::worker {

struct worker_event {
  bool warning = true; // else informational
  std::string name;    // stable: "worker.died", "worker.unresponsive"
  std::string message;
  std::vector<std::pair<std::string, std::string>> fields;
};

// Set once, before any worker starts (it is read without a lock afterwards).
void set_worker_event_sink(std::function<void(const worker_event&)> sink);
void report_worker_event(const worker_event& event);

} // namespace hb::bridge::worker
