#include "actors/log_operations.hpp"

#include "storage/log_writer.hpp"

#include <utility>

namespace hb::actors::log_operations {

operation open_run(std::string run_id, std::string session_id, double started_at, std::string user_message) {
  return [run_id = std::move(run_id), session_id = std::move(session_id), started_at,
          user_message = std::move(user_message)](storage::log_writer& w) {
    w.open_run(run_id, session_id, started_at, user_message);
  };
}

operation append_delta(std::string run_id, std::string text, double at) {
  std::vector<timed_text> one;
  one.push_back({std::move(text), at});
  return append_deltas(std::move(run_id), std::move(one));
}

operation append_deltas(std::string run_id, std::vector<timed_text> deltas) {
  return [run_id = std::move(run_id), deltas = std::move(deltas)](storage::log_writer& w) {
    w.append_deltas(run_id, deltas);
  };
}

operation append_event(std::string run_id, std::string body, double at, uint64_t host_seq) {
  return [run_id = std::move(run_id), at, host_seq, body = std::move(body)](storage::log_writer& w) {
    w.append_event(run_id, body, at, host_seq);
  };
}

operation close_run(std::string run_id, std::string status, std::optional<std::string> result,
                    std::optional<std::string> error, double ended_at) {
  return [run_id = std::move(run_id), status = std::move(status), ended_at, result = std::move(result),
          error = std::move(error)](storage::log_writer& w) {
    w.close_run(run_id, status, result, error, ended_at);
    w.forget_bound_values(); // (a result holds the run's output twice)
  };
}

operation put_session(storage::session_row row, std::shared_ptr<const std::string> history) {
  return [row = std::move(row), history = std::move(history)](storage::log_writer& w) {
    w.put_session(row, history ? *history : row.history);
    w.forget_bound_values(); // (a history can be big)
  };
}

operation nothing() {
  return [](storage::log_writer&) {};
}

} // namespace hb::actors::log_operations
