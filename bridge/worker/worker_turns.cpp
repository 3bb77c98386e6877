// A worker's turns, begun, continued and waited for: each registered with
// its sink and the report of its end before its first frame is written,
// so that the reading thread finds both for everything the worker says.
#include "bridge/worker/worker_process.hpp"


#include <future>
#include <thread>

namespace hb::bridge::worker {

namespace {

// A frame this large may not fit the socket's buffer at once: written from
// a thread of its own, so that whoever starts a turn never waits for the
// worker to read (a request with images can be megabytes).
constexpr size_t written_in_place = 64 * 1024;

// Waits for a turn begun with a report: the blocking form of both kinds.
template <class Begin>
turn_outcome wait_for_turn(Begin begin) {
  auto done = std::make_shared<std::promise<turn_outcome>>();
  auto outcome = done->get_future();
  begin([done](turn_outcome out) { done->set_value(std::move(out)); });
  return outcome.get();
}

} // namespace

uint64_t worker_process::open_turn(const std::shared_ptr<turn_sink>& sink, std::function<void(turn_outcome)> ended) {
  auto turn = std::make_shared<live_turn>();
  turn->sink = sink;
  turn->ended = std::move(ended);
  uint64_t id = 0;
  std::string refused;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (alive_ && !stopping_) {
      id = ++next_turn_;
      turns_.emplace(id, turn);
    } else {
      refused = "the agent worker for profile " + profile_ +
                (alive_ ? std::string(" was being restarted; send the message again") : " is gone: " + death_reason_);
    }
  }
  if (id == 0) {
    turn->ended(failed_turn(std::move(refused)));
    return 0;
  }
  watch_commits(id, sink);
  return id;
}

void worker_process::watch_commits(uint64_t id, const std::shared_ptr<turn_sink>& sink) {
  std::weak_ptr<worker_process> weak = shared_from_this();
  sink->on_committed([weak, id](uint64_t seq) {
    if (auto self = weak.lock())
      self->acknowledge(id, seq);
  });
}

void worker_process::start_turn(uint64_t handle, const std::shared_ptr<turn_sink>& sink, std::string request,
                                std::string carried_steer, turn_reports reports) {
  uint64_t id = open_turn(sink, std::move(reports.ended));
  if (id == 0)
    return;
  // Armed once the frame is written: an interrupt the client sends after
  // that goes behind it on the socket, and the worker clears a stale
  // interrupt as it takes the frame, before it reads the next.
  std::string bytes =
    encode(worker::start_turn{id, handle, sink->run_id(), std::move(request), std::move(carried_steer), true});
  if (bytes.size() <= written_in_place && try_write(bytes)) {
    reports.armed();
    return;
  }
  auto write_then_arm = [self = shared_from_this(), bytes = std::move(bytes), armed = std::move(reports.armed)] {
    if (self->alive_)
      self->write(bytes);
    armed(); // a worker that died meanwhile ends the turn itself
  };
  try {
    std::thread(write_then_arm).detach();
  } catch (const std::exception&) {
    write_then_arm(); // no thread to be had: the caller waits instead
  }
}

turn_outcome worker_process::run_turn(uint64_t handle, const std::shared_ptr<turn_sink>& sink,
                                      const std::string& request) {
  return wait_for_turn([&](std::function<void(turn_outcome)> ended) {
    if (uint64_t id = open_turn(sink, std::move(ended)))
      post(worker::start_turn{id, handle, sink->run_id(), request, {}, false});
  });
}

void worker_process::start_continued_turn(uint64_t id, const std::shared_ptr<turn_sink>& sink, uint64_t after,
                                          std::function<void(turn_outcome)> ended) {
  auto turn = std::make_shared<live_turn>();
  turn->sink = sink;
  turn->ended = std::move(ended);
  std::string gone;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (alive_)
      turns_.emplace(id, turn);
    else
      gone = "the agent worker for profile " + profile_ + " is gone: " + death_reason_;
  }
  if (!gone.empty()) {
    turn->ended(failed_turn(std::move(gone)));
    return;
  }
  watch_commits(id, sink);
  // Every question its agent still waits on is open again before the rest
  // of its frames come: under its old id where the log announced it (the
  // sink knows), else as new. Its `ask` or `notify` frame, if it comes
  // again after `after`, is not asked a second time.
  std::vector<held_ask> waiting;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = adopted_asks_.find(id); it != adopted_asks_.end()) {
      waiting = std::move(it->second);
      adopted_asks_.erase(it);
    }
    for (const auto& a : waiting)
      turn->asked_again.insert(a.seq);
  }
  for (auto& a : waiting) {
    waiting_question q{a.ask, a.kind, std::move(a.request), std::max(0.0, a.timeout_s - a.waited_s)};
    if (q.kind == "gateway")
      sink->ask_again(q);
    else
      wait_for_answer(id, a.ask, a.kind, [sink, q] { return sink->ask_again(q); });
  }
  post(resume{id, after}); // registered first: its frames find their sink
}

turn_outcome worker_process::continue_turn(uint64_t id, const std::shared_ptr<turn_sink>& sink, uint64_t after) {
  return wait_for_turn(
    [&](std::function<void(turn_outcome)> ended) { start_continued_turn(id, sink, after, std::move(ended)); });
}

std::vector<waiting_question> worker_process::waiting_questions(uint64_t turn) const {
  std::vector<waiting_question> out;
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = adopted_asks_.find(turn); it != adopted_asks_.end())
    for (const auto& a : it->second)
      out.push_back(waiting_question{a.ask, a.kind, a.request, std::max(0.0, a.timeout_s - a.waited_s)});
  return out;
}

void worker_process::drop_turn(uint64_t turn) { post(worker::drop_turn{turn}); }

} // namespace hb::bridge::worker
