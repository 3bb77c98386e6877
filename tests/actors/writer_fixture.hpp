// The log writer alone on the deterministic coordinator, with helpers to
// open runs, send deltas and read health (tests/actors/log_writer*_test.cpp).
#pragma once

#include "tests/actors/actor_fixture.hpp"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hb::test {

using namespace hb::actors;

template <class T>
bool answered(const std::shared_ptr<std::optional<caf::expected<T>>>& slot) {
  return slot->has_value();
}

inline bool answered_true(const std::shared_ptr<std::optional<caf::expected<bool>>>& slot) {
  return slot->has_value() && **slot && ***slot;
}

struct writer_fixture : hb::test::log_fixture {
  caf::actor writer = spawn_writer();

  bool open_run(const std::string& run_id, const std::string& session_id = "s1") {
    auto answer = ask<bool>(writer, run_opening{run_id, session_id, 100.0, ""});
    return answer && *answer;
  }

  caf::expected<bool> end_run(const std::string& run_id, const std::string& status = "complete",
                              const std::string& result = "{\"final_response\": \"done\"}") {
    return ask<bool>(writer, run_end{run_id, status, result, false, "", 200.0});
  }

  void delta(const std::string& run_id, const std::string& text, double at = 101.0) {
    caf::anon_send(writer, run_delta{run_id, text, at});
  }

  log_health health() {
    auto h = ask<log_health>(writer, log_health_query{});
    CAF_REQUIRE(h);
    return *h;
  }

  std::vector<double> event_times(const std::string& run_id) {
    std::vector<double> at;
    if (auto events = hb::storage::log_reader(db.path).read_events_timed(run_id))
      for (auto& e : *events)
        at.push_back(e.at);
    return at;
  }
};

} // namespace hb::test
