#include "bridge/worker/worker_events.hpp"

namespace hb::bridge::worker {

namespace {
std::function<void(const worker_event&)>& sink() {
  static std::function<void(const worker_event&)> s;
  return s;
}
} // namespace

void set_worker_event_sink(std::function<void(const worker_event&)> s) { sink() = std::move(s); }

void report_worker_event(const worker_event& event) {
  if (sink())
    sink()(event);
}

} // namespace hb::bridge::worker
