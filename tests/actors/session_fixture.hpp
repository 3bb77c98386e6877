// Stand-ins around one session actor: a broker, a log writer and a reader
// that record what the session tells them, an agent host whose agents only
// count what is asked of them, and runs that the test plays itself (run_armed,
// run_closing, run_finished), so every step of a turn happens when the test
// says so.
#pragma once

#include "tests/actors/actor_fixture.hpp"

#include "actors/chat_request.hpp"
#include "actors/session.hpp"
#include "bridge/agent_host.hpp"
#include "protocol/json_text.hpp"

#include <map>
#include <optional>
#include <memory>
#include <string>
#include <vector>

namespace hb::test {

class counting_agent : public bridge::agent_host {
public:
  void prepare_turn() override {}
  bridge::turn_outcome run_turn(const std::shared_ptr<bridge::turn_sink>&, const std::string&) override {
    return {}; // runs are played by the test, never run
  }
  void interrupt(const std::string& message) override { interrupts.push_back(message); }
  void let_go(const std::string& message) override { let_go_with.push_back(message); }
  bool steer(const std::string& text) override {
    steers.push_back(text);
    return takes_steers;
  }
  bool usable() const override { return alive; }
  void close() override { ++closes; }
  std::string call(const std::string& op, const std::string& args) override {
    calls.push_back(op);
    if (op == "switch_model") {
      auto want = protocol::json::parse(args);
      return protocol::object_writer{}.str("model", want["model"].get<std::string>())
        .str("provider", want["provider"].get<std::string>())
        .finish();
    }
    return R"({"tokens": 7})";
  }

  std::vector<std::string> interrupts, let_go_with, steers, calls;
  int closes = 0;
  bool alive = true;
  bool takes_steers = true;
};

// What the stand-ins saw, and how they answer.
struct session_world {
  // agents
  std::vector<actors::agent_recipe> built;             // every recipe an agent was built from
  std::vector<std::shared_ptr<counting_agent>> agents; // in the order they were built
  std::string build_fails_with;                        // non-empty: the next build raises ValueError(this)
  // agents that outlived the last daemon, by session (taken once, as bridge::take_adopted_agent)
  std::map<std::string, bridge::adopted_agent> survivors;
  // runs
  std::vector<actors::run_spec> runs;
  // log
  std::vector<std::string> opened_runs;
  std::vector<storage::session_row> puts; // each with its history, shared or not, in `history`
  std::vector<std::shared_ptr<const std::string>> put_histories; // the shared text each row came with, or null
  std::vector<size_t> puts_at_opening; // how many rows had come when each run opened
  bool hold_openings = false; // run_opening answered only by release_openings()
  std::vector<caf::response_promise> held_openings;
  std::string stored_history = R"([{"role": "user", "content": "before"}])";
  // broker
  std::vector<std::string> cancelled; // session_questions_cancelled reasons
  std::vector<std::string> unlisted;
  std::shared_ptr<actors::session_activity> activity = std::make_shared<actors::session_activity>();
};

class session_fixture : public actor_fixture {
public:
  session_fixture();

  // A new session (as the broker spawns one for a chat).
  caf::actor session(const std::string& id = "s1");
  // One known from the log, with `message_count` messages stored.
  caf::actor dormant(const std::string& id = "s1", int64_t message_count = 2);

  static actors::chat_request chat_of(const std::string& line) {
    return actors::read_chat(protocol::json::parse(line));
  }
  // Sends a chat; its answer comes once the run is armed (or at once, for a refusal).
  std::shared_ptr<std::optional<caf::expected<std::string>>> chat(const caf::actor& s, const std::string& line) {
    auto slot = ask_line_later<actors::chat_reply>(s, chat_of(line));
    deliver();
    return slot;
  }
  // Plays the run's messages to its session, as actors/run.cpp sends them.
  void arm(const caf::actor& s, const std::string& run_id);
  void close(const caf::actor& s, const std::string& run_id, const std::string& history = "");
  void finish(const caf::actor& s, const std::string& run_id);
  // A whole chat: started, armed, answered; returns the run's id.
  std::string run_chat(const caf::actor& s, const std::string& line);
  void end_run(const caf::actor& s, const std::string& run_id) {
    close(s, run_id);
    finish(s, run_id);
  }
  actors::session_view view(const caf::actor& s);
  // What session actor `s` says it is in the activity table the broker reads, if anything.
  std::optional<actors::session_activity::entry> activity_of(const caf::actor& s);
  // Whether the session actor still takes messages.
  bool alive(const caf::actor& s);
  void release_openings();

  std::shared_ptr<session_world> world = std::make_shared<session_world>();
  caf::actor broker, writer, reader;
};

// The error an answer holds, as the client reads it ({"ok": false, ...}).
std::string error_line_of(const std::optional<caf::expected<std::string>>& answer);

} // namespace hb::test
