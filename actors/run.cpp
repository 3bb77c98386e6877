#include "actors/run.hpp"

#include "actors/vocabulary.hpp"
#include "bridge/python/embedded_agent.hpp"
#include "protocol/json_text.hpp"

#include <caf/all.hpp>

#include <chrono>

namespace hb::actors {

namespace {

// How long past its own deadline a question may stay unanswered before the
// asking thread gives up on the broker (which answers at the deadline).
constexpr std::chrono::seconds broker_grace{30};

std::chrono::milliseconds millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

class actor_sink final : public bridge::turn_sink {
public:
  actor_sink(caf::actor_system& sys, const run_spec& spec)
    : sys_(sys), writer_(spec.writer), broker_(spec.broker), run_id_(spec.run_id),
      session_id_(spec.session_id) {}

  void delta(std::string text) override {
    caf::anon_send(writer_, delta_atom::value, run_id_, std::move(text), now_seconds());
  }

  void event(std::string json) override {
    caf::anon_send(writer_, event_atom::value, run_id_, std::move(json), now_seconds());
  }

  std::string ask_approval(std::string request, double timeout_s) override {
    std::string choice = "deny"; // if the broker cannot be reached, fail closed
    ask(approval_atom::value, std::move(request), timeout_s,
        [&](std::string& answer) { choice = std::move(answer); });
    return choice;
  }

  std::string ask_compression(std::string request, double timeout_s) override {
    std::string reply = R"({"failure": "bridge compression timed out"})";
    ask(compress_atom::value, std::move(request), timeout_s,
        [&](std::string& answer) { reply = std::move(answer); });
    return reply;
  }

  void gateway_notify(std::string request, double timeout_s) override {
    caf::anon_send(broker_, gateway_atom::value, run_id_, session_id_, std::move(request),
                   static_cast<int64_t>(millis(timeout_s).count()));
  }

private:
  template <class Atom, class OnAnswer>
  void ask(Atom what, std::string request, double timeout_s, OnAnswer on_answer) {
    caf::scoped_actor self{sys_};
    self
      ->request(broker_, millis(timeout_s) + broker_grace, what, run_id_, session_id_,
                std::move(request), static_cast<int64_t>(millis(timeout_s).count()))
      .receive(on_answer, [](caf::error&) {});
  }

  caf::actor_system& sys_;
  caf::actor writer_;
  caf::actor broker_;
  std::string run_id_;
  std::string session_id_;
};

struct outcome {
  std::string status = "error";
  std::string result; // JSON text, empty for none
  bool has_error = false;
  std::string error;
  bool has_history = false;
  std::string history;
  int64_t message_count = 0;
};

outcome read_outcome(const std::string& text) {
  outcome out;
  try {
    auto doc = protocol::json::parse(text);
    out.status = doc.value("status", "error");
    if (doc.contains("result") && !doc["result"].is_null())
      out.result = protocol::dumps(doc["result"]);
    if (doc.contains("error") && doc["error"].is_string()) {
      out.has_error = true;
      out.error = doc["error"].get<std::string>();
    }
    if (doc.contains("history") && doc["history"].is_array()) {
      out.has_history = true;
      out.history = protocol::dumps(doc["history"]);
      out.message_count = static_cast<int64_t>(doc["history"].size());
    }
  } catch (const std::exception& e) {
    out.status = "error";
    out.has_error = true;
    out.error = std::string("hermes-bridge could not read the turn's outcome: ") + e.what();
  }
  return out;
}

void run_actor(caf::blocking_actor* self, std::shared_ptr<run_spec> holder) {
  // Moved out so the agent reference dies on this thread, not wherever the
  // actor object happens to be destroyed (its destructor takes the GIL).
  run_spec spec = std::move(*holder);
  auto sink = std::make_shared<actor_sink>(self->system(), spec);
  spec.agent->prepare_turn();
  if (!spec.carried_steer.empty()) {
    try {
      spec.agent->steer(spec.carried_steer);
    } catch (const protocol::wire_error&) {
      // An agent without steer() already said so when the steer was sent.
    }
  }
  self->send(spec.session, armed_atom::value, spec.run_id);
  outcome out = read_outcome(spec.agent->run_turn(sink, spec.request));
  self->send(spec.session, closing_atom::value, spec.run_id, out.has_history, out.history,
             out.message_count);
  // Questions still open for this run are answered (deny / failed) and logged
  // before the terminal status, which must be the run's last word.
  self->request(spec.broker, caf::infinite, run_end_atom::value, spec.run_id)
    .receive([](bool) {}, [](caf::error&) {});
  self
    ->request(spec.writer, caf::infinite, close_run_atom::value, spec.run_id, out.status,
              out.result, out.has_error, out.error, now_seconds())
    .receive([](bool) {}, [](caf::error&) {});
  self->send(spec.session, run_done_atom::value, spec.run_id);
  spec.agent.reset();
}

} // namespace

void spawn_run(caf::actor_system& sys, run_spec spec) {
  sys.spawn<caf::detached>(run_actor, std::make_shared<run_spec>(std::move(spec)));
}

} // namespace hb::actors
