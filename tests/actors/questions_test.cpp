// The questions actor, message by message: every question is settled exactly
// once (the client's answer, its deadline, the end of its run, a cancelled
// session, the TUI withdrawing it), the asker hears one answer, and the log
// hears one settlement. The log writer and hermes-agent's gateway queue are
// played by the test.
#define CAF_SUITE questions
#include "tests/actors/actor_fixture.hpp"

#include "actors/errors.hpp"
#include "actors/questions.hpp"
#include "protocol/json_text.hpp"

#include <set>

using namespace hb::actors;
using hb::protocol::json;
using namespace std::chrono_literals;

namespace {

using answer_slot = std::shared_ptr<std::optional<caf::expected<std::string>>>;

struct gateway_call {
  std::string session_id, choice, agent_request_id, bridge_token;
};

class questions_fixture : public hb::test::actor_fixture {
public:
  questions_fixture() {
    writer = keep(sys.spawn(
      [log = logged](caf::event_based_actor*, int) -> caf::behavior { // (the int: see ask_later)
        return {[=](run_event& e) { log->emplace_back(e.run_id, json::parse(e.body)); }};
      },
      0));
    questions = make_questions({});
  }

  // `reopening`: ids the log shows open in runs that go on after a restart.
  caf::actor make_questions(std::set<std::string> reopening) {
    questions_links links{writer,
                          [this](const std::string& session_id, const std::string& choice,
                                 const std::string& request_id, const std::string& token,
                                 const std::function<void(int, const std::string&)>& holding_gil) {
                            gateway_calls.push_back({session_id, choice, request_id, token});
                            holding_gil(gateway_released, gateway_failure);
                            return gateway_released;
                          },
                          std::move(reopening)};
    return keep(spawn_questions(sys, std::move(links)));
  }

  // The run `run_id` of session `session_id` asks; returns where its answer
  // lands and the question's id as the client was told it.
  std::pair<answer_slot, std::string> ask_question(question_topic topic, const std::string& run_id,
                                                   const std::string& session_id = "s1",
                                                   const std::string& request = R"({"command": "rm -rf /"})",
                                                   int64_t timeout_ms = 60'000) {
    auto slot = ask_later<std::string>(questions, question_asked{topic, run_id, session_id, request, timeout_ms, {}});
    deliver();
    CAF_REQUIRE(!logged->empty());
    const json& announced = logged->back().second;
    const char* id_key = topic == question_topic::compression ? "request_id"
                         : topic == question_topic::clarify   ? "clarify_id"
                                                              : "approval_id";
    return {slot, announced.at(id_key).get<std::string>()};
  }

  std::string ask_gateway(const std::string& run_id, int64_t timeout_ms = 60'000) {
    caf::anon_send(questions, gateway_approval_asked{run_id, "s1",
                                                     R"({"command": "sudo x", "agent_request_id": "req-7",
                                                         "bridge_token": "tok-9"})",
                                                     timeout_ms, {}});
    deliver();
    return logged->back().second.at("approval_id").get<std::string>();
  }

  template <class Outcome, class Answer>
  caf::expected<Outcome> answer(Answer a) {
    return ask<Outcome>(questions, std::move(a));
  }

  // The events logged with this name and id key/value.
  std::vector<json> events(const std::string& name, const char* key, const std::string& id) const {
    std::vector<json> found;
    for (const auto& [run, event] : *logged)
      if (event.value("event", "") == name && event.value(key, "") == id)
        found.push_back(event);
    return found;
  }

  std::vector<json> resolutions(const std::string& approval_id) const {
    return events("approval.resolved", "approval_id", approval_id);
  }

  std::shared_ptr<std::vector<std::pair<std::string, json>>> logged =
    std::make_shared<std::vector<std::pair<std::string, json>>>();
  caf::actor writer;
  caf::actor questions;
  std::vector<gateway_call> gateway_calls;
  int gateway_released = 1;
  std::string gateway_failure;
};

std::string text_of(const answer_slot& slot) {
  CAF_REQUIRE(slot->has_value());
  CAF_REQUIRE(static_cast<bool>(**slot));
  return ***slot;
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(questions_tests, questions_fixture)

CAF_TEST(an approval is announced with the fields of the agent and settled by the client once) {
  auto [asker, id] = ask_question(question_topic::approval, "r1");
  CAF_CHECK_EQUAL(logged->back().first, "r1");
  CAF_CHECK(logged->back().second["event"] == "approval.requested");
  CAF_CHECK(logged->back().second["command"] == "rm -rf /");
  CAF_CHECK(!asker->has_value()); // waits for the client
  auto outcome = answer<approval_outcome>(approval_answer{id, "once"});
  CAF_REQUIRE(outcome);
  CAF_CHECK(outcome->resolved);
  CAF_CHECK_EQUAL(outcome->choice, "once");
  CAF_CHECK_EQUAL(text_of(asker), "once");
  auto settled = resolutions(id);
  CAF_REQUIRE_EQUAL(settled.size(), 1u);
  CAF_CHECK(settled[0]["choice"] == "once");
  CAF_CHECK(!settled[0].contains("reason"));
  auto again = answer<approval_outcome>(approval_answer{id, "always"});
  CAF_REQUIRE(again);
  CAF_CHECK(!again->resolved);
  CAF_CHECK_EQUAL(resolutions(id).size(), 1u);
}

CAF_TEST(an unanswered approval is denied at its deadline and not before) {
  auto [asker, id] = ask_question(question_topic::approval, "r1", "s1", "{}", 5'000);
  let_pass(4'999ms);
  CAF_CHECK(!asker->has_value());
  CAF_CHECK(resolutions(id).empty());
  let_pass(1ms);
  CAF_CHECK_EQUAL(text_of(asker), "deny");
  auto settled = resolutions(id);
  CAF_REQUIRE_EQUAL(settled.size(), 1u);
  CAF_CHECK(settled[0]["choice"] == "deny");
  CAF_CHECK(settled[0]["reason"] == "timeout");
  auto late = answer<approval_outcome>(approval_answer{id, "once"});
  CAF_REQUIRE(late);
  CAF_CHECK(!late->resolved);
  CAF_CHECK_EQUAL(resolutions(id).size(), 1u);
}

CAF_TEST(a deadline after the answer settles nothing more) {
  auto [asker, id] = ask_question(question_topic::approval, "r1", "s1", "{}", 1'000);
  CAF_CHECK(answer<approval_outcome>(approval_answer{id, "session"})->resolved);
  size_t logged_before = logged->size();
  let_pass(2'000ms);
  CAF_CHECK_EQUAL(logged->size(), logged_before);
  CAF_CHECK_EQUAL(text_of(asker), "session");
}

CAF_TEST(the end of a run settles its questions and none of another run) {
  auto [approval, approval_id] = ask_question(question_topic::approval, "r1");
  auto [compression, compression_id] = ask_question(question_topic::compression, "r1", "s1", R"({"messages": []})");
  auto [clarify, clarify_id] = ask_question(question_topic::clarify, "r1", "s1", R"({"question": "which?"})");
  auto [other, other_id] = ask_question(question_topic::approval, "r2", "s2");
  auto ended = ask<bool>(questions, run_questions_end{"r1"});
  CAF_REQUIRE(ended);
  CAF_CHECK(*ended);
  CAF_CHECK_EQUAL(text_of(approval), "deny");
  CAF_CHECK(resolutions(approval_id).at(0)["reason"] == "run ended");
  auto failure = json::parse(text_of(compression));
  CAF_CHECK(failure["request_id"] == compression_id);
  CAF_CHECK(failure["failure"] == "bridge compression cancelled: run ended");
  CAF_CHECK_EQUAL(text_of(clarify), "");
  auto clarified = events("clarify.resolved", "clarify_id", clarify_id);
  CAF_REQUIRE_EQUAL(clarified.size(), 1u);
  CAF_CHECK(clarified[0]["response"].is_null());
  CAF_CHECK(!other->has_value());
  CAF_CHECK(resolutions(other_id).empty());
  CAF_CHECK(answer<approval_outcome>(approval_answer{other_id, "once"})->resolved);
}

CAF_TEST(a cancelled session settles its own questions with the reason) {
  auto [mine, mine_id] = ask_question(question_topic::approval, "r1", "s1");
  auto [theirs, theirs_id] = ask_question(question_topic::approval, "r2", "s2");
  caf::anon_send(questions, session_questions_cancelled{"s1", "interrupted"});
  deliver();
  CAF_CHECK_EQUAL(text_of(mine), "deny");
  CAF_CHECK(resolutions(mine_id).at(0)["reason"] == "interrupted");
  CAF_CHECK(!theirs->has_value());
  CAF_CHECK(resolutions(theirs_id).empty());
}

CAF_TEST(questions withdrawn at the TUI close with no choice and leave compression open) {
  auto [approval, approval_id] = ask_question(question_topic::approval, "r1");
  auto [clarify, clarify_id] = ask_question(question_topic::clarify, "r1");
  auto [compression, compression_id] = ask_question(question_topic::compression, "r1");
  caf::anon_send(questions, questions_withdrawn{"r1", "answered in the terminal"});
  deliver();
  CAF_CHECK_EQUAL(text_of(approval), "");
  auto settled = resolutions(approval_id);
  CAF_REQUIRE_EQUAL(settled.size(), 1u);
  CAF_CHECK(settled[0]["choice"].is_null());
  CAF_CHECK(settled[0]["reason"] == "answered in the terminal");
  CAF_CHECK_EQUAL(text_of(clarify), "");
  CAF_CHECK_EQUAL(events("clarify.resolved", "clarify_id", clarify_id).size(), 1u);
  CAF_CHECK(!compression->has_value());
  CAF_CHECK(answer<compression_outcome>(compression_answer{compression_id, "{}"}));
  CAF_CHECK(!answer<approval_outcome>(approval_answer{approval_id, "once"})->resolved);
}

CAF_TEST(a clarify answer reaches the asker once and an unknown id is a KeyError) {
  auto [asker, id] = ask_question(question_topic::clarify, "r1", "s1", R"({"question": "which?"})");
  CAF_CHECK(logged->back().second["event"] == "clarify.requested");
  CAF_CHECK(logged->back().second["question"] == "which?");
  auto outcome = answer<clarify_outcome>(clarify_answer{id, "the blue one"});
  CAF_REQUIRE(outcome);
  CAF_CHECK(outcome->resolved);
  CAF_CHECK_EQUAL(text_of(asker), "the blue one");
  auto settled = events("clarify.resolved", "clarify_id", id);
  CAF_REQUIRE_EQUAL(settled.size(), 1u);
  CAF_CHECK(settled[0]["response"] == "the blue one");
  auto again = answer<clarify_outcome>(clarify_answer{id, "red"});
  CAF_REQUIRE(again);
  CAF_CHECK(!again->resolved);
  auto unknown = answer<clarify_outcome>(clarify_answer{"nope", "x"});
  CAF_REQUIRE(!unknown);
  CAF_CHECK_EQUAL(error_line(unknown.error()),
                  R"({"ok": false, "error": "'unknown clarify request: nope'", "error_type": "KeyError"})");
}

CAF_TEST(an unanswered clarify question tells the asker nobody answered) {
  auto [asker, id] = ask_question(question_topic::clarify, "r1", "s1", "{}", 3'000);
  let_pass(3s);
  CAF_CHECK_EQUAL(text_of(asker), "");
  auto settled = events("clarify.resolved", "clarify_id", id);
  CAF_REQUIRE_EQUAL(settled.size(), 1u);
  CAF_CHECK(settled[0]["reason"] == "timeout");
  CAF_CHECK(!answer<clarify_outcome>(clarify_answer{id, "late"})->resolved);
}

CAF_TEST(a compression reply is handed over as sent and an unknown id fails) {
  auto [asker, id] = ask_question(question_topic::compression, "r1", "s1", R"({"messages": [1, 2]})");
  CAF_CHECK(logged->back().second["event"] == "bridge.compression.requested");
  std::string reply = R"({"request_id": ")" + id + R"(", "messages": [{"role": "user", "content": "short"}]})";
  auto outcome = answer<compression_outcome>(compression_answer{id, reply});
  CAF_REQUIRE(outcome);
  CAF_CHECK_EQUAL(outcome->request_id, id);
  CAF_CHECK_EQUAL(text_of(asker), reply);
  auto again = answer<compression_outcome>(compression_answer{id, reply});
  CAF_REQUIRE(!again);
  CAF_CHECK_EQUAL(error_line(again.error()), R"({"ok": false, "error": "compression request )" + id +
                                               R"( not found", "error_type": "RuntimeError"})");
}

CAF_TEST(an unanswered compression request fails at its deadline) {
  auto [asker, id] = ask_question(question_topic::compression, "r1", "s1", "{}", 2'000);
  let_pass(2s);
  auto failure = json::parse(text_of(asker));
  CAF_CHECK(failure["request_id"] == id);
  CAF_CHECK(failure["failure"] == "bridge compression timed out");
  CAF_CHECK(!answer<compression_outcome>(compression_answer{id, "{}"}));
}

CAF_TEST(an approval answer to another kind of question settles nothing) {
  auto [compression, compression_id] = ask_question(question_topic::compression, "r1");
  auto [clarify, clarify_id] = ask_question(question_topic::clarify, "r1");
  for (const auto& id : {compression_id, clarify_id}) {
    auto outcome = answer<approval_outcome>(approval_answer{id, "once"});
    CAF_REQUIRE(outcome);
    CAF_CHECK(!outcome->resolved);
  }
  CAF_CHECK(gateway_calls.empty());
  CAF_CHECK(!compression->has_value());
  CAF_CHECK(!clarify->has_value());
  CAF_CHECK(answer<clarify_outcome>(clarify_answer{clarify_id, "fine"})->resolved);
}

CAF_TEST(a gateway approval keeps the handles of the agent from the client and routes the answer with them) {
  auto id = ask_gateway("r1");
  const json& announced = logged->back().second;
  CAF_CHECK(announced["event"] == "approval.requested");
  CAF_CHECK(announced["command"] == "sudo x");
  CAF_CHECK(!announced.contains("agent_request_id"));
  CAF_CHECK(!announced.contains("bridge_token"));
  auto outcome = answer<approval_outcome>(approval_answer{id, "session"});
  CAF_REQUIRE(outcome);
  CAF_CHECK(outcome->resolved);
  CAF_REQUIRE_EQUAL(gateway_calls.size(), 1u);
  CAF_CHECK_EQUAL(gateway_calls[0].session_id, "s1");
  CAF_CHECK_EQUAL(gateway_calls[0].choice, "session");
  CAF_CHECK_EQUAL(gateway_calls[0].agent_request_id, "req-7");
  CAF_CHECK_EQUAL(gateway_calls[0].bridge_token, "tok-9");
  auto settled = resolutions(id);
  CAF_REQUIRE_EQUAL(settled.size(), 1u);
  CAF_CHECK(settled[0]["choice"] == "session");
  CAF_CHECK(!answer<approval_outcome>(approval_answer{id, "once"})->resolved);
  CAF_CHECK_EQUAL(gateway_calls.size(), 1u);
}

CAF_TEST(a gateway answer the agent no longer waited for is logged as its timeout) {
  auto id = ask_gateway("r1");
  gateway_released = 0;
  auto outcome = answer<approval_outcome>(approval_answer{id, "once"});
  CAF_REQUIRE(outcome);
  CAF_CHECK(!outcome->resolved);
  auto settled = resolutions(id);
  CAF_REQUIRE_EQUAL(settled.size(), 1u);
  CAF_CHECK(settled[0]["choice"] == "deny");
  CAF_CHECK(settled[0]["reason"] == "timeout");
}

CAF_TEST(a gateway answer that cannot reach the agent says why) {
  auto id = ask_gateway("r1");
  gateway_released = 0;
  gateway_failure = "the worker is gone";
  CAF_CHECK(!answer<approval_outcome>(approval_answer{id, "once"})->resolved);
  auto settled = resolutions(id);
  CAF_REQUIRE_EQUAL(settled.size(), 1u);
  CAF_CHECK(settled[0]["reason"] == "answer not delivered to the agent: the worker is gone");
}

CAF_TEST(a gateway approval past its deadline is logged denied and no answer reaches the agent) {
  auto id = ask_gateway("r1", 1'000);
  let_pass(1s);
  auto settled = resolutions(id);
  CAF_REQUIRE_EQUAL(settled.size(), 1u);
  CAF_CHECK(settled[0]["choice"] == "deny");
  CAF_CHECK(settled[0]["reason"] == "timeout");
  CAF_CHECK(!answer<approval_outcome>(approval_answer{id, "once"})->resolved);
  CAF_CHECK(gateway_calls.empty());
  CAF_CHECK_EQUAL(resolutions(id).size(), 1u);
}

CAF_TEST(a gateway approval open when its run ends timed out in the agent unless the run was interrupted) {
  // The agent's own deadline can pass before the daemon's timer (the notice
  // took a while to arrive) and the run end first: the log still says timeout.
  auto gave_up = ask_gateway("r1", 1'000);
  auto [terminal, terminal_id] = ask_question(question_topic::approval, "r1");
  CAF_CHECK(*ask<bool>(questions, run_questions_end{"r1", false}));
  CAF_REQUIRE_EQUAL(resolutions(gave_up).size(), 1u);
  CAF_CHECK(resolutions(gave_up)[0]["reason"] == "timeout");
  CAF_CHECK(resolutions(terminal_id).at(0)["reason"] == "run ended"); // the daemon's own question
  auto stopped = ask_gateway("r2", 1'000);
  CAF_CHECK(*ask<bool>(questions, run_questions_end{"r2", true}));
  CAF_CHECK(resolutions(stopped).at(0)["reason"] == "run ended");
  let_pass(2s); // their timers settle nothing more
  CAF_CHECK_EQUAL(resolutions(gave_up).size(), 1u);
  CAF_CHECK_EQUAL(resolutions(stopped).size(), 1u);
}

CAF_TEST(an answer to a question never asked settles nothing) {
  auto outcome = answer<approval_outcome>(approval_answer{"never", "once"});
  CAF_REQUIRE(outcome);
  CAF_CHECK(!outcome->resolved);
  CAF_CHECK_EQUAL(outcome->approval_id, "never");
  CAF_CHECK(logged->empty());
}

CAF_TEST(the watcher hears how many questions are open after every change) {
  auto counts = std::make_shared<std::vector<uint64_t>>();
  keep(sys.spawn(
    [=, q = questions](caf::event_based_actor* self, int) -> caf::behavior { // (the int: see ask_later)
      self->send(q, questions_watch{});
      return {[=](const questions_open& open) { counts->push_back(open.count); }};
    },
    0));
  deliver();
  CAF_CHECK_EQUAL(*counts, std::vector<uint64_t>{0});
  auto [first, first_id] = ask_question(question_topic::approval, "r1");
  auto [second, second_id] = ask_question(question_topic::clarify, "r1");
  answer<approval_outcome>(approval_answer{first_id, "once"});
  answer<approval_outcome>(approval_answer{first_id, "once"}); // settles nothing: no new count
  ask<bool>(questions, run_questions_end{"r1"});
  CAF_CHECK_EQUAL(*counts, (std::vector<uint64_t>{0, 1, 2, 1, 0}));
}

CAF_TEST(a question asked again after a restart keeps its id and is not announced twice) {
  auto asker = ask_later<std::string>(questions, question_asked{question_topic::approval, "r1", "s1",
                                                                R"({"command": "rm -rf /"})", 60'000, "a-old"});
  deliver();
  CAF_CHECK(logged->empty()); // the log announced it before the restart
  auto outcome = answer<approval_outcome>(approval_answer{"a-old", "once"});
  CAF_REQUIRE(outcome);
  CAF_CHECK(outcome->resolved);
  CAF_CHECK_EQUAL(text_of(asker), "once");
  CAF_CHECK_EQUAL(resolutions("a-old").size(), 1u);
}

CAF_TEST(a question asked again is due when what was left of its time is up) {
  auto asker = ask_later<std::string>(questions,
                                      question_asked{question_topic::clarify, "r1", "s1", "{}", 2'000, "c-old"});
  deliver();
  let_pass(1'999ms);
  CAF_CHECK(!asker->has_value());
  let_pass(1ms);
  CAF_CHECK_EQUAL(text_of(asker), "");
  auto settled = events("clarify.resolved", "clarify_id", "c-old");
  CAF_REQUIRE_EQUAL(settled.size(), 1u);
  CAF_CHECK(settled[0]["reason"] == "timeout");
}

CAF_TEST(a gateway approval asked again is answered through the agent under its old id) {
  caf::anon_send(questions, gateway_approval_asked{"r1", "s1",
                                                   R"({"command": "sudo x", "agent_request_id": "req-7",
                                                       "bridge_token": "tok-9"})",
                                                   60'000, "g-old"});
  deliver();
  CAF_CHECK(logged->empty());
  auto outcome = answer<approval_outcome>(approval_answer{"g-old", "session"});
  CAF_REQUIRE(outcome);
  CAF_CHECK(outcome->resolved);
  CAF_REQUIRE_EQUAL(gateway_calls.size(), 1u);
  CAF_CHECK_EQUAL(gateway_calls[0].agent_request_id, "req-7");
  CAF_CHECK_EQUAL(gateway_calls[0].bridge_token, "tok-9");
  CAF_CHECK_EQUAL(gateway_calls[0].choice, "session");
}

CAF_TEST(an answer that comes before its question is opened again after a restart waits for it) {
  questions = make_questions({"a-old"});
  auto early = ask_later<approval_outcome>(questions, approval_answer{"a-old", "once"});
  CAF_CHECK(!early->has_value()); // not "no such question": its run opens it in a moment
  auto asker = ask_later<std::string>(questions, question_asked{question_topic::approval, "r1", "s1",
                                                                R"({"command": "rm -rf /"})", 60'000, "a-old"});
  deliver();
  CAF_REQUIRE(early->has_value());
  CAF_REQUIRE(static_cast<bool>(**early));
  CAF_CHECK((**early)->resolved);
  CAF_CHECK_EQUAL(text_of(asker), "once");
  CAF_CHECK_EQUAL(resolutions("a-old").size(), 1u);
}

CAF_TEST(an early answer to a question never opened again finds nothing once the window closes) {
  questions = make_questions({"c-old"});
  deliver(); // it starts: the window opens now
  auto early = ask_later<clarify_outcome>(questions, clarify_answer{"c-old", "blue"});
  let_pass(reopen_window - 1ms);
  CAF_CHECK(!early->has_value());
  let_pass(1ms);
  deliver(); // the answer, sent again to the actor, finds nothing
  CAF_REQUIRE(early->has_value());
  CAF_CHECK(!static_cast<bool>(**early)); // unknown clarify request
  auto other = answer<approval_outcome>(approval_answer{"a-other", "once"}); // never awaited: answered at once
  CAF_REQUIRE(other);
  CAF_CHECK(!other->resolved);
}

CAF_TEST(an id to reopen that is already open gets a new id and its own announcement) {
  auto [first, id] = ask_question(question_topic::approval, "r1");
  auto second = ask_later<std::string>(questions, question_asked{question_topic::approval, "r1", "s1",
                                                                 R"({"command": "ls"})", 60'000, id});
  deliver();
  const json& announced = logged->back().second;
  CAF_CHECK(announced["event"] == "approval.requested");
  CAF_CHECK(announced["command"] == "ls");
  CAF_CHECK_NOT_EQUAL(announced["approval_id"].get<std::string>(), id);
}

CAF_TEST_FIXTURE_SCOPE_END()
