#include "bridge/worker/worker_session.hpp"

#include "bridge/worker/worker_pool_slot.hpp"

#include "protocol/json_text.hpp"
#include "protocol/wire_error.hpp"

namespace hb::bridge::worker {

namespace {
// Quick calls on a live agent; a worker this slow to answer is stuck.
constexpr std::chrono::seconds quick_call{15};
// Named operations may do real work (a model switch, an MCP probe).
constexpr std::chrono::seconds long_call{300};
} // namespace

protocol::json worker_session::host_members() const {
  protocol::json members;
  members["worker_key"] = worker_pool::key_of(*slot_);
  members["worker_pid"] = proc_->pid();
  return members;
}

worker_session::worker_session(std::shared_ptr<worker_pool> pool, std::shared_ptr<worker_pool::slot> slot,
                               std::shared_ptr<worker_process> proc, uint64_t handle, std::string session_id,
                               uint64_t adopted_turn)
  : pool_(std::move(pool)), slot_(std::move(slot)), proc_(std::move(proc)), handle_(handle),
    session_id_(std::move(session_id)), adopted_turn_(adopted_turn) {}

worker_session::~worker_session() {
  proc_->post(release_session{handle_});
  pool_->forget(session_id_, proc_.get(), *slot_);
}

void worker_session::prepare_turn() {
  // An agent without clear_interrupt() has nothing to clear; a dead worker
  // shows itself in run_turn.
  proc_->call(worker::prepare_turn{0, handle_}, quick_call);
}

turn_outcome worker_session::run_turn(const std::shared_ptr<turn_sink>& sink, const std::string& request_json) {
  pool_->turn_starting(slot_->profile, proc_.get());
  return proc_->run_turn(handle_, sink, request_json);
}

void worker_session::start_turn(std::shared_ptr<turn_sink> sink, std::string request_json, std::string carried_steer,
                                turn_reports reports) {
  pool_->turn_starting(slot_->profile, proc_.get());
  proc_->start_turn(handle_, sink, std::move(request_json), std::move(carried_steer), std::move(reports));
}

void worker_session::start_continued_turn(std::shared_ptr<turn_sink> sink, uint64_t logged_seq,
                                          std::function<void(turn_outcome)> ended) {
  if (adopted_turn_ == 0)
    return agent_host::start_continued_turn(std::move(sink), logged_seq, std::move(ended));
  proc_->start_continued_turn(std::exchange(adopted_turn_, 0), sink, logged_seq, std::move(ended));
}

turn_outcome worker_session::continue_turn(const std::shared_ptr<turn_sink>& sink, uint64_t logged_seq) {
  if (adopted_turn_ == 0)
    return agent_host::continue_turn(sink, logged_seq);
  return proc_->continue_turn(std::exchange(adopted_turn_, 0), sink, logged_seq);
}

std::vector<waiting_question> worker_session::waiting_questions() const {
  return adopted_turn_ == 0 ? std::vector<waiting_question>{} : proc_->waiting_questions(adopted_turn_);
}

void worker_session::drop_turn() {
  if (adopted_turn_ != 0)
    proc_->drop_turn(std::exchange(adopted_turn_, 0));
}

void worker_session::interrupt(const std::string& message_json) {
  if (!proc_->alive())
    return; // its turn already ended with the worker
  // An interrupt is how a person stops an agent: one the worker does not
  // answer in time is a hung worker, and killing it is what stops the run.
  auto grace = proc_->unresponsive_after();
  reply r = proc_->call(interrupt_turn{0, handle_, message_json}, grace);
  if (r.ok)
    return;
  if (r.error_type == "TimeoutError") {
    proc_->kill_unresponsive("did not answer an interrupt within " + std::to_string(grace.count() / 1000) + " s");
    return;
  }
  throw protocol::wire_error(r.error_type.empty() ? "RuntimeError" : r.error_type, r.error);
}

bool worker_session::steer(const std::string& text) {
  return !proc_->call_value(steer_turn{0, handle_, text}, quick_call).empty();
}

std::string worker_session::call(const std::string& op, const std::string& args_json) {
  return proc_->call_value(session_call{0, handle_, op, args_json}, long_call);
}

} // namespace hb::bridge::worker
