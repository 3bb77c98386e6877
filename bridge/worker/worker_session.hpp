// A session's agent living in a worker process: agent_host over frames.
// Holds the worker it was built in; once that worker is gone the session is
// no longer usable and its next chat builds the agent again (in a new
// worker) from the stored history.
#pragma once

#include "bridge/agent_host.hpp"
#include "bridge/worker/worker_pool.hpp"
#include "bridge/worker/worker_process.hpp"

#include <memory>
#include <string>

namespace hb::bridge::worker {

class worker_session final : public agent_host {
public:
  // `adopted_turn`: the turn the worker was running for this agent when
  // this daemon attached to it (0: none), for continue_turn or drop_turn.
  worker_session(std::shared_ptr<worker_pool> pool, std::shared_ptr<worker_pool::slot> slot,
                 std::shared_ptr<worker_process> proc, uint64_t handle, std::string session_id,
                 uint64_t adopted_turn = 0);
  ~worker_session() override;

  void prepare_turn() override;
  turn_outcome run_turn(const std::shared_ptr<turn_sink>& sink, const std::string& request_json) override;
  // Turns need no thread of the daemon's (the worker reports on its reading
  // thread), except in a worker an older daemon started: it clears a stale
  // interrupt only when called to (prepare_turn), which waits.
  bool reports_turns() const override { return proc_->info().version >= 5; }
  void start_turn(std::shared_ptr<turn_sink> sink, std::string request_json, std::string carried_steer,
                  turn_reports reports) override;
  turn_outcome continue_turn(const std::shared_ptr<turn_sink>& sink, uint64_t logged_seq) override;
  void start_continued_turn(std::shared_ptr<turn_sink> sink, uint64_t logged_seq,
                            std::function<void(turn_outcome)> ended) override;
  void drop_turn() override;
  std::vector<waiting_question> waiting_questions() const override;
  void interrupt(const std::string& message_json) override;
  bool steer(const std::string& text) override;
  bool usable() const override { return proc_->accepting(); }
  protocol::json host_members() const override;
  std::string call(const std::string& op, const std::string& args_json) override;

private:
  std::shared_ptr<worker_pool> pool_;
  std::shared_ptr<worker_pool::slot> slot_;
  std::shared_ptr<worker_process> proc_;
  uint64_t handle_;
  std::string session_id_;
  uint64_t adopted_turn_;
};

} // namespace hb::bridge::worker
