#include "actors/run.hpp"

#include "actors/log_actors.hpp"
#include "actors/log_messages.hpp"
#include "actors/question_messages.hpp"
#include "actors/run_output.hpp"
#include "actors/vocabulary.hpp"
#include "bridge/agent_host.hpp"
#include "protocol/json_check.hpp"
#include "protocol/json_text.hpp"
#include "storage/log_reader.hpp"

#include <caf/all.hpp>

#include <atomic>
#include <chrono>
#include <algorithm>
#include <map>
#include <thread>

namespace hb::actors {

namespace {

// How long past its own deadline a question may stay unanswered before the
// asking thread gives up on the broker (which answers at the deadline).
constexpr std::chrono::seconds broker_grace{30};

// An agent's timeout (NaN, negative or 1e300 included) as a duration that
// cannot overflow.
std::chrono::milliseconds millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(protocol::clamp_timeout_s(seconds) * 1000));
}

class actor_sink final : public bridge::turn_sink {
public:
  actor_sink(caf::actor_system& sys, const run_spec& spec)
    : sys_(sys), writer_(spec.writer), broker_(spec.broker), run_id_(spec.run_id),
      session_id_(spec.session_id), output_(open_run_output(spec.run_id)) {}

  std::string run_id() const override { return run_id_; }
  void delta(std::string text) override { numbered_delta(std::move(text), 0); }

  void event(std::string json) override { numbered_event(std::move(json), 0); }

  void numbered_delta(std::string text, uint64_t seq) override {
    if (!closed_.load(std::memory_order_relaxed))
      send_run_output(writer_, run_id_, output_.get(), false, std::move(text), now_seconds(), seq);
  }

  void numbered_deltas(std::vector<std::string> texts, uint64_t first_seq) override {
    if (!closed_.load(std::memory_order_relaxed))
      send_run_deltas(writer_, run_id_, *output_, std::move(texts), now_seconds(), first_seq);
  }

  void numbered_event(std::string json, uint64_t seq) override {
    if (!closed_.load(std::memory_order_relaxed))
      send_run_output(writer_, run_id_, output_.get(), true, protocol::checked_event_json(std::move(json)),
                      now_seconds(), seq);
  }

  void on_committed(std::function<void(uint64_t)> told) override { output_->on_committed(std::move(told)); }
  // The run's end is committed: everything its host numbered up to `last` is in the log.
  void ended_in_log(uint64_t last) { output_->committed(last); }

  bool backlogged() const override { return writer_backlogged(); }
  void wait_for_room() override {
    wait_for_writer([this] { return closed_.load(std::memory_order_relaxed); });
  }

  // The turn returned: threads it left behind write nothing more into it.
  void close() { closed_ = true; }

  std::string ask_approval(std::string request, double timeout_s) override {
    std::string choice = "deny"; // if the broker cannot be reached, fail closed
    ask(question_topic::approval, std::move(request), timeout_s,
        [&](std::string& answer) { choice = std::move(answer); });
    return choice;
  }

  std::string ask_compression(std::string request, double timeout_s) override {
    std::string reply = R"({"failure": "bridge compression timed out"})";
    ask(question_topic::compression, std::move(request), timeout_s,
        [&](std::string& answer) { reply = std::move(answer); });
    return reply;
  }

  std::string ask_clarify(std::string request, double timeout_s) override {
    std::string reply; // nobody answered
    ask(question_topic::clarify, std::move(request), timeout_s,
        [&](std::string& answer) { reply = std::move(answer); });
    return reply;
  }

  void gateway_notify(std::string request, double timeout_s) override {
    caf::anon_send(broker_, gateway_approval_asked{run_id_, session_id_, std::move(request),
                                                   static_cast<int64_t>(millis(timeout_s).count()), {}});
  }

  // The questions the log announced before the restart, by the host's
  // number for them: set before the turn is continued.
  void reopen(const std::vector<storage::reopened_question>& reopened) {
    for (const auto& q : reopened)
      reopened_[q.ask] = q;
  }

  // A question the log announced keeps the deadline it was announced with,
  // counted from then, whatever the host says is left (a TUI cannot say).
  std::string ask_again(const bridge::waiting_question& asked) override {
    auto q = asked;
    auto it = reopened_.find(q.ask);
    std::string id = it == reopened_.end() ? std::string() : it->second.id;
    if (it != reopened_.end() && it->second.due_at > 0)
      q.timeout_s = std::max(0.0, std::min(q.timeout_s, it->second.due_at - now_seconds()));
    if (q.kind == "gateway") {
      caf::anon_send(broker_, gateway_approval_asked{run_id_, session_id_, q.request,
                                                     static_cast<int64_t>(millis(q.timeout_s).count()), id});
      return {};
    }
    auto topic = q.kind == "compression" ? question_topic::compression
                 : q.kind == "clarify"   ? question_topic::clarify
                                         : question_topic::approval;
    std::string reply = topic == question_topic::approval      ? "deny"
                        : topic == question_topic::compression ? R"({"failure": "bridge compression timed out"})"
                                                               : "";
    ask(topic, q.request, q.timeout_s, [&](std::string& answer) { reply = std::move(answer); }, id);
    return reply;
  }

  void withdraw_questions(std::string reason) override {
    caf::anon_send(broker_, questions_withdrawn{run_id_, std::move(reason)});
  }

private:
  template <class OnAnswer>
  void ask(question_topic topic, std::string request, double timeout_s, OnAnswer on_answer,
           std::string reopen_id = {}) {
    caf::scoped_actor self{sys_};
    self
      ->request(broker_, millis(timeout_s) + broker_grace,
                question_asked{topic, run_id_, session_id_, std::move(request),
                               static_cast<int64_t>(millis(timeout_s).count()), std::move(reopen_id)})
      .receive(on_answer, [](caf::error&) {});
  }

  caf::actor_system& sys_;
  caf::actor writer_;
  caf::actor broker_;
  std::string run_id_;
  std::string session_id_;
  std::shared_ptr<run_output> output_; // to the writer, in order (run_output.hpp)
  std::atomic<bool> closed_{false};
  std::map<uint64_t, storage::reopened_question> reopened_; // written before the turn continues, read after
};

// The end of every run: the session learns the turn is over, open questions
// are settled and logged, then the terminal status is committed last.
// The outcome's texts are moved into the messages, never copied.
// True once the run's end is committed.
bool finish(caf::blocking_actor* self, const run_spec& spec, bridge::turn_outcome out) {
  bool has_history = out.history.has_value();
  self->send(spec.session, run_closing{spec.run_id, has_history, std::move(out.history).value_or(std::string()),
                                       out.message_count});
  self->request(spec.broker, caf::infinite, run_questions_end{spec.run_id, out.status == "interrupted"})
    .receive([](bool) {}, [](caf::error&) {});
  bool has_error = out.error.has_value();
  bool in_log = false;
  self
    ->request(spec.writer, caf::infinite,
              run_end{spec.run_id, out.status, protocol::checked_json_value(std::move(out.result)), has_error,
                      std::move(out.error).value_or(std::string()), now_seconds()})
    .receive([&](bool) { in_log = true; }, [](caf::error&) {});
  self->send(spec.session, run_finished{spec.run_id});
  return in_log;
}

// A run the last daemon opened whose turn went on in a worker: the log takes
// it up again (its sequences continue) and says how far the worker's output
// is in it; the worker sends what comes after.
bridge::turn_outcome continue_run(caf::blocking_actor* self, const run_spec& spec,
                                  const std::shared_ptr<actor_sink>& sink) {
  std::vector<storage::waiting_question> waiting;
  for (auto& q : spec.agent->waiting_questions())
    waiting.push_back(storage::waiting_question{q.ask, std::move(q.kind), std::move(q.request)});
  std::optional<uint64_t> logged;
  std::string why;
  self->request(spec.writer, caf::infinite, run_continuing{spec.run_id, spec.session_id, std::move(waiting)})
    .receive(
      [&](storage::continued_run& run) {
        logged = run.host_seq;
        sink->reopen(run.reopened);
      },
      [&](caf::error& err) { why = caf::to_string(err); });
  self->send(spec.session, run_armed{spec.run_id});
  if (logged)
    return spec.agent->continue_turn(sink, *logged);
  spec.agent->drop_turn();
  bridge::turn_outcome out;
  out.error = "cannot continue the run after a restart: " + why;
  return out;
}

// A new turn: a stale interrupt cleared, a steer sent while idle handed on.
bridge::turn_outcome start_turn(caf::blocking_actor* self, const run_spec& spec,
                                const std::shared_ptr<actor_sink>& sink) {
  spec.agent->prepare_turn();
  if (!spec.carried_steer.empty()) {
    try {
      spec.agent->steer(spec.carried_steer);
    } catch (const protocol::wire_error&) {
      // An agent without steer() already said so when the steer was sent.
    }
  }
  self->send(spec.session, run_armed{spec.run_id});
  return spec.agent->run_turn(sink, spec.request);
}

void run_actor(caf::blocking_actor* self, std::shared_ptr<run_spec> holder) {
  // Moved out so the agent reference dies on this thread, not wherever the
  // actor object happens to be destroyed (its destructor takes the GIL).
  run_spec spec = std::move(*holder);
  auto sink = std::make_shared<actor_sink>(self->system(), spec);
  auto outcome = spec.continuing ? continue_run(self, spec, sink) : start_turn(self, spec, sink);
  sink->close();
  uint64_t last_seq = outcome.last_seq;
  if (finish(self, spec, std::move(outcome)))
    sink->ended_in_log(last_seq);
  spec.agent.reset();
}

// Sleeps until `due`, in short steps so an interrupt is noticed.
bool wait_until(std::chrono::steady_clock::time_point due, const std::atomic<bool>& stop) {
  while (!stop) {
    auto now = std::chrono::steady_clock::now();
    if (now >= due)
      return true;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(due - now, std::chrono::milliseconds(20)));
  }
  return false;
}

// A recorded run streamed back through the daemon: same deltas and events
// with the recorded timing (scaled), approvals asked of the client again.
// The client's answer is what the replay's approval.resolved reports; what
// the recording did next (its tool results, its text, its status) is
// replayed as it was, whatever the answer.
void replay_actor(caf::blocking_actor* self, std::shared_ptr<run_spec> holder) {
  run_spec spec = std::move(*holder);
  auto sink = std::make_shared<actor_sink>(self->system(), spec);
  self->send(spec.session, run_armed{spec.run_id});
  bridge::turn_outcome out;
  try {
    storage::log_reader log(spec.replay.db_path);
    auto recorded = log.read_run(spec.replay.run_id, 0, 0);
    if (!recorded || recorded->pruned_at)
      throw std::runtime_error("nothing to replay: run " + spec.replay.run_id +
                               (recorded ? " was pruned" : " is not in the event log"));
    // A live run has no end to copy: its replay would take over its
    // `running` status and never finish.
    if (recorded->status == "running")
      throw std::runtime_error("cannot replay run " + spec.replay.run_id +
                               ": it is still running; only finished runs can be replayed");
    auto events = log.read_events_timed(spec.replay.run_id).value_or(std::vector<storage::log_reader::timed_event>{});
    auto start = std::chrono::steady_clock::now();
    bool stopped = false;
    for (const auto& ev : events) {
      auto offset = std::chrono::duration<double>((ev.at - recorded->started_at) / spec.replay.speed);
      if (!wait_until(start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(offset),
                      *spec.replay.stop)) {
        stopped = true;
        break;
      }
      auto body = protocol::json::parse(ev.body, nullptr, false);
      std::string name = body.is_object() ? body.value("event", "") : "";
      if (name == "stream.delta") {
        sink->delta(body.value("delta", ""));
      } else if (name == "approval.requested") {
        protocol::json ask = body;
        ask.erase("event");
        ask.erase("approval_id");
        double timeout_s = ask.value("timeout_ms", 60'000) / 1000.0;
        sink->ask_approval(protocol::dumps(ask), timeout_s); // the broker logs its own resolution
      } else if (name != "approval.resolved") {
        sink->event(ev.body);
      }
      if (sink->backlogged()) // a fast replay of a big run waits for the log like an agent
        sink->wait_for_room();
    }
    out.status = stopped ? "interrupted" : recorded->status;
    out.result = recorded->result.value_or("");
    out.error = recorded->error;
  } catch (const std::exception& e) {
    out.status = "error";
    out.error = e.what();
  }
  finish(self, spec, std::move(out));
}

} // namespace

void spawn_run(caf::actor_system& sys, run_spec spec) {
  bool replay = !spec.replay.run_id.empty();
  auto holder = std::make_shared<run_spec>(std::move(spec));
  if (replay)
    sys.spawn<caf::detached>(replay_actor, holder);
  else
    sys.spawn<caf::detached>(run_actor, holder);
}

} // namespace hb::actors
