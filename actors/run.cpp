#include "actors/run.hpp"

#include "actors/blocking_call.hpp"
#include "actors/log_actors.hpp"
#include "actors/log_messages.hpp"
#include "actors/question_messages.hpp"
#include "actors/run_output.hpp"
#include "actors/run_replay.hpp"
#include "actors/vocabulary.hpp"
#include "bridge/agent_host.hpp"
#include "protocol/json_check.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>

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
    asked_ = true;
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
    asked_ = true;
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

  // Whether the turn asked anything (set on the host's threads before it
  // reports its end).
  bool asked() const { return asked_; }

private:
  template <class OnAnswer>
  void ask(question_topic topic, std::string request, double timeout_s, OnAnswer on_answer,
           std::string reopen_id = {}) {
    asked_ = true;
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
  std::atomic<bool> asked_{false};
  std::atomic<bool> closed_{false};
  std::map<uint64_t, storage::reopened_question> reopened_; // written before the turn continues, read after
};

// A run, in the order of its phases: it begins the turn (starting), the
// host says an interrupt would stop it (running), the turn returned and the
// broker settles its open questions, if it asked any (closing), its end goes to the log
// (ending). The session learns each step: run_armed, run_closing,
// run_finished. Nothing here blocks: the host reports from its own threads.
enum class run_phase { starting, running, closing, ending };

struct run_state {
  run_spec spec;
  std::shared_ptr<actor_sink> sink;
  run_phase phase = run_phase::starting;
  run_end end;           // built at the turn's return, sent once the questions are settled
  uint64_t last_seq = 0; // the host's last number for the turn
  static inline const char* name = "run";
};

using run_actor = caf::stateful_actor<run_state>;

host_ended to_message(bridge::turn_outcome out) {
  return host_ended{std::move(out.status), std::move(out.result), out.error.has_value(),
                    std::move(out.error).value_or(std::string()), out.history.has_value(),
                    std::move(out.history).value_or(std::string()), out.message_count, out.last_seq};
}

bridge::turn_outcome from_message(host_ended& m) {
  bridge::turn_outcome out;
  out.status = std::move(m.status);
  out.result = std::move(m.result);
  if (m.has_error)
    out.error = std::move(m.error);
  if (m.has_history)
    out.history = std::move(m.history);
  out.message_count = m.message_count;
  out.last_seq = m.last_seq;
  return out;
}

void arm(run_actor* self) {
  auto& st = self->state;
  if (st.phase != run_phase::starting)
    return;
  st.phase = run_phase::running;
  self->send(st.spec.session, run_armed{st.spec.run_id});
}

void done(run_actor* self, bool in_log) {
  auto& st = self->state;
  self->send(st.spec.session, run_finished{st.spec.run_id});
  if (in_log)
    st.sink->ended_in_log(st.last_seq);
  self->quit();
}

void end_in_log(run_actor* self) {
  self->state.phase = run_phase::ending;
  self->request(self->state.spec.writer, caf::infinite, std::move(self->state.end))
    .then([=](bool) { done(self, true); }, [=](caf::error&) { done(self, false); });
}

// The turn returned: the session learns it with the conversation it leaves,
// open questions (if it asked any) are settled and logged, then the terminal status is
// committed last. The outcome's texts are moved, never copied.
void on_returned(run_actor* self, host_ended& ended) {
  auto& st = self->state;
  if (st.phase == run_phase::closing || st.phase == run_phase::ending)
    return; // a host reports once; a second report is not a second end
  st.sink->close();
  arm(self); // a turn that could not begin was never armed: the session still hears it
  auto out = from_message(ended);
  st.phase = run_phase::closing;
  st.last_seq = out.last_seq;
  bool has_history = out.history.has_value();
  self->send(st.spec.session, run_closing{st.spec.run_id, has_history,
                                          std::move(out.history).value_or(std::string()), out.message_count});
  bool has_error = out.error.has_value();
  st.end = run_end{st.spec.run_id, out.status, protocol::checked_json_value(std::move(out.result)), has_error,
                   std::move(out.error).value_or(std::string()), now_seconds()};
  // A turn that asked nothing has nothing to settle: no round trip through
  // the broker. A continued one may have questions the log reopened.
  if (!st.spec.continuing && !st.sink->asked())
    return end_in_log(self);
  self->request(st.spec.broker, caf::infinite, run_questions_end{st.spec.run_id, out.status == "interrupted"})
    .then([=](bool) { end_in_log(self); }, [=](caf::error&) { end_in_log(self); });
}

// What the host reports, as messages to this actor (from the host's threads).
bridge::turn_reports reports_to(run_actor* self) {
  caf::actor me = caf::actor_cast<caf::actor>(self);
  return {[me] { caf::anon_send(me, host_armed{}); },
          [me](bridge::turn_outcome out) { caf::anon_send(me, to_message(std::move(out))); }};
}

// A host whose turn runs on the calling thread (embedded, native, a replay)
// gets a thread of its own (blocking_call: the actor system knows it), and
// that thread lets go of the agent before it reports: an embedded agent's
// last reference must never die on the scheduler (its destructor takes the
// GIL).
template <class Turn>
void on_own_thread(run_actor* self, std::shared_ptr<bridge::agent_host> agent, Turn turn) {
  caf::actor me = caf::actor_cast<caf::actor>(self);
  blocking_call(self, [agent = std::move(agent), turn = std::move(turn), me]() mutable {
                  bridge::turn_outcome out;
                  try {
                    out = turn(*agent, me);
                  } catch (const std::exception& e) {
                    out = bridge::failed_turn(e.what());
                  }
                  agent.reset();
                  return to_message(std::move(out));
                })
    .then([=](host_ended& ended) { on_returned(self, ended); },
          [=](caf::error& err) {
            auto ended = to_message(bridge::failed_turn("the turn's thread failed: " + caf::to_string(err)));
            on_returned(self, ended);
          });
}

// A new turn: a stale interrupt cleared, a steer sent while idle handed on.
// The run itself keeps no reference to the agent.
void start(run_actor* self) {
  auto& spec = self->state.spec;
  auto agent = std::move(spec.agent);
  if (agent->reports_turns()) // a worker's agent: only a frame is written when it goes
    return agent->start_turn(self->state.sink, std::move(spec.request), std::move(spec.carried_steer),
                             reports_to(self));
  on_own_thread(self, std::move(agent),
                [sink = self->state.sink, request = std::move(spec.request),
                 steer = std::move(spec.carried_steer)](bridge::agent_host& agent, const caf::actor& me) {
                  agent.prepare_turn();
                  if (!steer.empty()) {
                    try {
                      agent.steer(steer);
                    } catch (const protocol::wire_error&) {
                      // An agent without steer() already said so when the steer was sent.
                    }
                  }
                  caf::anon_send(me, host_armed{});
                  return agent.run_turn(sink, request);
                });
}

// A run the last daemon opened whose turn went on in a worker: the log takes
// it up again (its sequences continue) and says how far the worker's output
// is in it; the worker sends what comes after.
void continue_run(run_actor* self) {
  auto& spec = self->state.spec;
  std::vector<storage::waiting_question> waiting;
  for (auto& q : spec.agent->waiting_questions())
    waiting.push_back(storage::waiting_question{q.ask, std::move(q.kind), std::move(q.request)});
  self->request(spec.writer, caf::infinite, run_continuing{spec.run_id, spec.session_id, std::move(waiting)})
    .then(
      [=](storage::continued_run& run) {
        auto& st = self->state;
        st.sink->reopen(run.reopened);
        arm(self);
        auto agent = std::move(st.spec.agent);
        if (!agent->reports_turns())
          return on_own_thread(self, std::move(agent),
                               [sink = st.sink, logged = run.host_seq](bridge::agent_host& agent, const caf::actor&) {
                                 return agent.continue_turn(sink, logged);
                               });
        caf::actor me = caf::actor_cast<caf::actor>(self);
        agent->start_continued_turn(st.sink, run.host_seq, [me](bridge::turn_outcome out) {
          caf::anon_send(me, to_message(std::move(out)));
        });
      },
      [=](caf::error& err) {
        auto agent = std::move(self->state.spec.agent);
        agent->drop_turn(); // a worker's: a frame, written at once
        bridge::turn_outcome out;
        out.error = "cannot continue the run after a restart: " + caf::to_string(err);
        auto ended = to_message(std::move(out));
        on_returned(self, ended);
      });
}

caf::behavior run(run_actor* self, std::shared_ptr<run_spec> holder) {
  auto& st = self->state;
  st.spec = std::move(*holder);
  st.sink = std::make_shared<actor_sink>(self->system(), st.spec);
  if (st.spec.continuing)
    continue_run(self);
  else
    start(self);
  return {
    [=](host_armed) { arm(self); },
    [=](host_ended& ended) { on_returned(self, ended); },
  };
}

} // namespace

caf::actor spawn_run(caf::actor_system& sys, run_spec spec) {
  if (!spec.replay.run_id.empty())
    spec.agent = recorded_run(spec.replay);
  return sys.spawn(run, std::make_shared<run_spec>(std::move(spec)));
}

} // namespace hb::actors
