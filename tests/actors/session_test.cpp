// The session actor's phases, message by message: a chat's way to a run,
// what each phase refuses, interrupt, steer, destroy, idle collection and
// drain, with the run and the agent played by the test.
#define CAF_SUITE session
#include "tests/actors/session_fixture.hpp"

#include "actors/session_messages.hpp"
#include "actors/studio_messages.hpp"

using namespace hb::actors;
using hb::protocol::json;
using hb::test::error_line_of;

namespace {

const char* hello = R"({"action": "chat", "session_id": "s1", "message": "hello"})";

std::string answer_of(const std::shared_ptr<std::optional<caf::expected<std::string>>>& slot) {
  if (!slot->has_value())
    return "no answer";
  return **slot ? ***slot : error_line_of(*slot);
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(session_tests, hb::test::session_fixture)

CAF_TEST(a first chat builds the agent and answers once the run is armed) {
  auto s = session();
  auto answer = chat(s, hello);
  CAF_CHECK_EQUAL(world->built.size(), 1u);
  CAF_REQUIRE_EQUAL(world->runs.size(), 1u);
  CAF_CHECK(!answer->has_value()); // not before the run is armed
  auto run_id = world->runs[0].run_id;
  CAF_CHECK_EQUAL(world->opened_runs, std::vector<std::string>{run_id});
  arm(s, run_id);
  auto line = json::parse(answer_of(answer));
  CAF_CHECK(line["run_id"] == run_id);
  CAF_CHECK(line["session_id"] == "s1");
  auto v = view(s);
  CAF_CHECK(v.created && v.running);
  CAF_CHECK_EQUAL(v.current_run_id, run_id);
  CAF_CHECK(json::parse(world->runs[0].request)["message"] == "hello");
}

CAF_TEST(a chat while a run is live is refused and builds nothing) {
  auto s = session();
  auto run_id = run_chat(s, hello);
  auto second = chat(s, R"({"message": "again", "model": "other"})");
  CAF_CHECK_EQUAL(answer_of(second),
                  R"({"ok": false, "error": "session s1 is already running", "error_type": "RuntimeError"})");
  CAF_CHECK_EQUAL(world->built.size(), 1u);
  CAF_CHECK_EQUAL(world->runs.size(), 1u);
  end_run(s, run_id);
  CAF_CHECK(!view(s).running);
}

CAF_TEST(a chat while the agent is still starting is refused) {
  world->hold_openings = true;
  auto s = session();
  auto first = chat(s, hello);
  CAF_CHECK(world->runs.empty()); // its row is not written yet
  auto second = chat(s, hello);
  CAF_CHECK(answer_of(second).find("already running") != std::string::npos);
  release_openings();
  CAF_CHECK_EQUAL(world->runs.size(), 1u);
}

CAF_TEST(a busy session says so before it looks at a bad field) {
  auto s = session();
  run_chat(s, hello);
  auto bad = chat(s, R"({"message": "x", "harness": "vim"})");
  CAF_CHECK(answer_of(bad).find("already running") != std::string::npos);
}

CAF_TEST(an idle session refuses a bad field and keeps its agent) {
  auto s = session();
  end_run(s, run_chat(s, hello));
  auto bad = chat(s, R"({"message": "x", "harness": "vim"})");
  CAF_CHECK(answer_of(bad).find("\"error_type\": \"ValueError\"") != std::string::npos);
  CAF_CHECK_EQUAL(world->built.size(), 1u);
  CAF_CHECK(view(s).created);
}

CAF_TEST(a first agent that cannot be built leaves the session unlisted) {
  world->build_fails_with = "no such model";
  auto s = session();
  auto answer = chat(s, hello);
  CAF_CHECK_EQUAL(answer_of(answer), R"({"ok": false, "error": "no such model", "error_type": "ValueError"})");
  CAF_CHECK_EQUAL(world->unlisted, std::vector<std::string>{"s1"});
  CAF_CHECK(!view(s).created);
  CAF_CHECK(world->runs.empty());
}

CAF_TEST(the same agent serves the next chat and a new model is switched in place) {
  auto s = session();
  end_run(s, run_chat(s, hello));
  end_run(s, run_chat(s, hello));
  CAF_CHECK_EQUAL(world->built.size(), 1u);
  end_run(s, run_chat(s, R"({"message": "x", "model": "m2"})"));
  CAF_CHECK_EQUAL(world->built.size(), 1u);
  CAF_CHECK_EQUAL(world->agents[0]->calls, std::vector<std::string>{"switch_model"});
  CAF_CHECK(json::parse(view(s).config)["model"] == "m2");
}

CAF_TEST(a new profile replaces the agent) {
  auto s = session();
  end_run(s, run_chat(s, hello));
  end_run(s, run_chat(s, R"({"message": "x", "profile": "other"})"));
  CAF_REQUIRE_EQUAL(world->built.size(), 2u);
  CAF_CHECK_EQUAL(world->built[1].profile, "other");
  CAF_CHECK_EQUAL(world->agents[0]->closes, 1); // the old one goes
}

CAF_TEST(a run shows as running until its end is committed) {
  auto s = session();
  auto run_id = run_chat(s, hello);
  close(s, run_id);
  auto v = view(s);
  CAF_CHECK(v.running);
  CAF_CHECK_EQUAL(v.current_run_id, run_id);
  finish(s, run_id);
  v = view(s);
  CAF_CHECK(!v.running);
  CAF_CHECK(v.current_run_id.empty());
}

CAF_TEST(a chat that waits is answered with the result at the end of the run) {
  auto s = session();
  auto answer = chat(s, R"({"message": "x", "wait": true})");
  auto run_id = world->runs.at(0).run_id;
  arm(s, run_id);
  CAF_CHECK(!answer->has_value());
  close(s, run_id);
  CAF_CHECK(!answer->has_value()); // the end is not committed yet
  finish(s, run_id);
  CAF_CHECK(json::parse(answer_of(answer))["status"] == "complete");
}

CAF_TEST(interrupt stops the live turn and answers once the turn has returned) {
  auto s = session();
  auto run_id = run_chat(s, hello);
  auto answer = ask_line_later<interrupt_reply>(s, interrupt_turn{"\"stop\""});
  deliver();
  CAF_CHECK_EQUAL(world->agents[0]->interrupts, std::vector<std::string>{"\"stop\""});
  CAF_CHECK_EQUAL(world->cancelled, std::vector<std::string>{"interrupted"});
  CAF_CHECK(!answer->has_value());
  close(s, run_id);
  CAF_CHECK(json::parse(answer_of(answer))["synced"] == true);
}

CAF_TEST(an interrupt whose turn does not return is answered unsynced) {
  auto s = session();
  run_chat(s, hello);
  auto answer = ask_line_later<interrupt_reply>(s, interrupt_turn{"null"});
  deliver();
  let_pass(std::chrono::seconds(10));
  CAF_CHECK(json::parse(answer_of(answer))["synced"] == false);
}

CAF_TEST(interrupt in the phases without a turn) {
  auto fresh = session("new");
  CAF_CHECK_EQUAL(answer_of([&] {
                    auto a = ask_line_later<interrupt_reply>(fresh, interrupt_turn{"null"});
                    deliver();
                    return a;
                  }()),
                  R"({"ok": false, "error": "'unknown session: new'", "error_type": "KeyError"})");
  auto d = dormant("old");
  auto a = ask_line<interrupt_reply>(d, interrupt_turn{"null"});
  CAF_REQUIRE(a);
  CAF_CHECK(json::parse(*a)["synced"] == true);
  CAF_CHECK(world->built.empty()); // nothing was built to be stopped
  auto s = session();
  end_run(s, run_chat(s, hello));
  auto idle = ask_line<interrupt_reply>(s, interrupt_turn{"null"});
  CAF_REQUIRE(idle);
  CAF_CHECK(json::parse(*idle)["synced"] == true);
  CAF_CHECK_EQUAL(world->agents[0]->interrupts.size(), 1u); // the agent clears it before the next turn
}

CAF_TEST(the log gets a history only when it changed) {
  auto s = session();
  auto run_id = run_chat(s, hello);
  CAF_REQUIRE(!world->puts.empty());
  CAF_CHECK(world->puts.front().history_known); // a new session's row: its empty history too
  CAF_CHECK_EQUAL(world->puts.front().history, "[]");
  CAF_CHECK(!world->puts.back().history_known); // the run began: the row changed, its history did not
  const std::string after = R"([{"role": "user", "content": "hello"}])";
  close(s, run_id, after);
  finish(s, run_id);
  CAF_CHECK(world->puts.back().history_known);
  CAF_CHECK_EQUAL(world->puts.back().history, after);
  auto before = world->puts.size();
  run_chat(s, hello);
  CAF_REQUIRE(world->puts.size() > before);
  CAF_CHECK(!world->puts.back().history_known); // sent once: the next turn's start does not write it again
  CAF_CHECK_EQUAL(world->puts.back().history, "[]");
}

CAF_TEST(a turns history is held once as the writer shares the text the run handed over) {
  auto s = session();
  auto run_id = run_chat(s, hello);
  // Long enough to live on the heap, where a move keeps the text where it is
  // and a copy does not.
  std::string history = R"([{"role": "assistant", "content": ")" + std::string(1 << 16, 'x') + R"("}])";
  const char* text = history.data();
  caf::anon_send(s, run_closing{run_id, true, std::move(history), 1});
  deliver();
  CAF_REQUIRE(!world->put_histories.empty() && world->put_histories.back());
  CAF_CHECK(world->put_histories.back()->data() == text);
  CAF_CHECK(world->puts.back().history_known);
  finish(s, run_id);
  // The session answers get_history from the same text.
  auto answer = ask_line<history_reply>(s, history_of{});
  CAF_REQUIRE(answer);
  CAF_CHECK_EQUAL(json::parse(*answer)["history"][0]["content"].get<std::string>().size(), size_t{1} << 16);
}

CAF_TEST(a turns row reaches the writer ahead of its opening and not again after it) {
  auto s = session();
  end_run(s, run_chat(s, hello));
  auto before = world->puts.size();
  run_chat(s, hello);
  CAF_REQUIRE_EQUAL(world->puts_at_opening.size(), 2u);
  CAF_CHECK_EQUAL(world->puts_at_opening.back(), before + 1); // one commit of the writer holds both
  CAF_CHECK_EQUAL(world->puts.size(), before + 1);
  auto activity = activity_of(s);
  CAF_REQUIRE(activity);
  CAF_CHECK(activity->running); // the broker still learns of the run once it opened
}

CAF_TEST(a dormant session never writes back the history it read) {
  auto d = dormant("old", 2);
  run_chat(d, R"({"message": "more"})");
  CAF_REQUIRE(!world->puts.empty());
  for (const auto& put : world->puts)
    CAF_CHECK(!put.history_known);
}

CAF_TEST(a steer while idle is carried into the next turn) {
  auto s = session();
  end_run(s, run_chat(s, hello));
  auto steered = ask_line<steer_reply>(s, steer_turn{"go left"});
  CAF_REQUIRE(steered);
  CAF_CHECK(json::parse(*steered)["accepted"] == true);
  run_chat(s, hello);
  CAF_CHECK_EQUAL(world->runs.back().carried_steer, "go left");
}

CAF_TEST(steer where there is no agent) {
  auto d = dormant();
  auto steered = ask_line<steer_reply>(d, steer_turn{"x"});
  CAF_REQUIRE(steered);
  CAF_CHECK(json::parse(*steered)["accepted"] == false);
  auto fresh = session("new");
  auto unknown = ask_line_later<steer_reply>(fresh, steer_turn{"x"});
  deliver();
  CAF_CHECK(answer_of(unknown).find("KeyError") != std::string::npos);
}

CAF_TEST(destroy of an idle session ends it and its agent at once) {
  auto s = session();
  end_run(s, run_chat(s, hello));
  auto destroyed = ask<bool>(s, destroy_session{});
  CAF_REQUIRE(destroyed);
  CAF_CHECK(*destroyed);
  CAF_CHECK_EQUAL(world->agents[0]->closes, 1);
  CAF_CHECK(world->puts.back().destroyed);
  CAF_CHECK(!alive(s));
}

CAF_TEST(a session says in the activity table whether it runs and its entry goes with it) {
  auto s = session();
  CAF_CHECK(!activity_of(s)); // fresh: nothing to count yet
  auto run_id = run_chat(s, hello);
  auto running = activity_of(s);
  CAF_REQUIRE(running);
  CAF_CHECK_EQUAL(running->session_id, "s1");
  CAF_CHECK_EQUAL(running->profile, "default");
  CAF_CHECK(running->running);
  end_run(s, run_id);
  auto idle = activity_of(s);
  CAF_REQUIRE(idle);
  CAF_CHECK(!idle->running);
  ask<bool>(s, destroy_session{});
  CAF_CHECK(!alive(s));
  CAF_CHECK(world->activity->all().empty());
}

CAF_TEST(destroy of a fresh session says it did not exist) {
  auto s = session("never");
  auto destroyed = ask<bool>(s, destroy_session{});
  CAF_REQUIRE(destroyed);
  CAF_CHECK(!*destroyed);
  CAF_CHECK(!alive(s));
}

CAF_TEST(destroy mid run stops the turn and ends the session after the run) {
  auto s = session();
  auto run_id = run_chat(s, hello);
  auto destroyed = ask<bool>(s, destroy_session{});
  CAF_REQUIRE(destroyed);
  CAF_CHECK(*destroyed);
  CAF_CHECK_EQUAL(world->agents[0]->interrupts, std::vector<std::string>{"\"Session destroyed\""});
  CAF_CHECK(alive(s));
  close(s, run_id);
  CAF_CHECK(alive(s));
  finish(s, run_id);
  CAF_CHECK(!alive(s));
}

CAF_TEST(destroy while the agent is being built ends the chat and the session) {
  world->hold_openings = true;
  auto s = session();
  auto answer = chat(s, hello);
  auto destroyed = ask<bool>(s, destroy_session{});
  CAF_REQUIRE(destroyed);
  release_openings();
  // The run it had begun still runs to its end, which lets the session go.
  CAF_REQUIRE_EQUAL(world->runs.size(), 1u);
  end_run(s, world->runs[0].run_id);
  CAF_CHECK(!alive(s));
}

CAF_TEST(idle collection frees the agent and the next chat resumes the stored history) {
  auto s = session();
  end_run(s, run_chat(s, hello));
  auto young = ask<bool>(s, collect_idle{3600});
  CAF_REQUIRE(young);
  CAF_CHECK(!*young);
  auto collected = ask<bool>(s, collect_idle{0});
  CAF_REQUIRE(collected);
  CAF_CHECK(*collected);
  CAF_CHECK(view(s).created); // still listed
  auto steered = ask_line<steer_reply>(s, steer_turn{"x"}); // dormant: no turn to steer, not an unknown session
  CAF_REQUIRE(steered);
  CAF_CHECK(json::parse(*steered)["accepted"] == false);
  auto history = ask_line<history_reply>(s, history_of{});
  CAF_REQUIRE(history);
  run_chat(s, hello);
  CAF_CHECK_EQUAL(world->built.size(), 2u);
}

CAF_TEST(a session whose agent outlived the last daemon is idle with it and builds nothing) {
  auto survivor = std::make_shared<hb::test::counting_agent>();
  world->survivors["old"] = hb::bridge::adopted_agent{survivor, ""};
  auto d = dormant("old", 2);
  auto v = view(d);
  CAF_CHECK(v.created && !v.running);
  auto run_id = run_chat(d, hello);
  CAF_CHECK(world->built.empty()); // no rebuild, no history reload: the same agent
  CAF_REQUIRE_EQUAL(world->runs.size(), 1u);
  CAF_CHECK(world->runs[0].agent == survivor);
  CAF_CHECK(!world->runs[0].continuing);
  CAF_CHECK_EQUAL(world->runs[0].run_id, run_id);
}

CAF_TEST(a session whose turn goes on in a surviving worker follows it to its end) {
  auto survivor = std::make_shared<hb::test::counting_agent>();
  world->survivors["old"] = hb::bridge::adopted_agent{survivor, "r-live"};
  auto d = dormant("old", 2);
  CAF_REQUIRE_EQUAL(world->runs.size(), 1u);
  CAF_CHECK(world->runs[0].continuing); // followed, not started: no run row is opened
  CAF_CHECK_EQUAL(world->runs[0].run_id, "r-live");
  CAF_CHECK(world->opened_runs.empty());
  auto activity = activity_of(d);
  CAF_CHECK(activity && activity->running);
  auto v = view(d);
  CAF_CHECK(v.running);
  CAF_CHECK_EQUAL(v.current_run_id, "r-live");
  CAF_CHECK_EQUAL(answer_of(chat(d, hello)), R"({"ok": false, "error": "session old is already running", "error_type": "RuntimeError"})");
  arm(d, "r-live");
  end_run(d, "r-live");
  CAF_CHECK(!view(d).running);
  run_chat(d, hello);
  CAF_CHECK(world->built.empty());
  CAF_REQUIRE_EQUAL(world->runs.size(), 2u);
  CAF_CHECK(world->runs[1].agent == survivor);
}

CAF_TEST(a dormant session resumes from the log with its profile and history) {
  auto d = dormant("old", 2);
  auto v = view(d);
  CAF_CHECK(v.created && !v.running);
  run_chat(d, R"({"message": "more"})");
  CAF_REQUIRE_EQUAL(world->built.size(), 1u);
  CAF_CHECK_EQUAL(world->built[0].profile, "work");
  CAF_CHECK_EQUAL(world->built[0].model, "m1");
  auto request = json::parse(world->runs[0].request);
  CAF_CHECK(request["conversation_history"] == json::parse(world->stored_history));
  CAF_CHECK(json::parse(view(d).config)["resumed"] == true);
}

CAF_TEST(the own history of a client wins over the stored one) {
  auto d = dormant("old", 2);
  run_chat(d, R"({"message": "more", "conversation_history": []})");
  CAF_CHECK(json::parse(world->runs[0].request)["conversation_history"] == json::array());
}

CAF_TEST(a collection during a run frees nothing) {
  auto s = session();
  run_chat(s, hello);
  auto collected = ask<bool>(s, collect_idle{0});
  CAF_REQUIRE(collected);
  CAF_CHECK(!*collected);
  CAF_CHECK_EQUAL(world->agents[0]->closes, 0);
}

CAF_TEST(drain lets the turn go and answers at its end) {
  auto s = session();
  auto run_id = run_chat(s, hello);
  auto drained = ask_later<bool>(s, drain_session{});
  deliver();
  CAF_CHECK_EQUAL(world->agents[0]->let_go_with.size(), 1u);
  CAF_CHECK(!drained->has_value());
  end_run(s, run_id);
  CAF_REQUIRE(drained->has_value() && **drained);
  auto idle = ask<bool>(s, drain_session{});
  CAF_REQUIRE(idle);
  CAF_CHECK(*idle);
}

CAF_TEST(history is unknown before the session is listed) {
  auto s = session("new");
  auto history = ask_line_later<history_reply>(s, history_of{});
  deliver();
  CAF_CHECK(answer_of(history).find("KeyError") != std::string::npos);
}

CAF_TEST(a model switch waits for the turn and applies after it) {
  auto s = session();
  auto run_id = run_chat(s, hello);
  auto later = ask_line<switch_reply>(s, switch_model{"m9", ""});
  CAF_REQUIRE(later);
  CAF_CHECK(json::parse(*later)["reason"] == "session_running");
  CAF_CHECK(world->agents[0]->calls.empty());
  end_run(s, run_id);
  CAF_CHECK_EQUAL(world->agents[0]->calls, std::vector<std::string>{"switch_model"});
  CAF_CHECK(json::parse(view(s).config)["model"] == "m9");
}

CAF_TEST(an estimate builds an agent for a new session and leaves it idle) {
  auto s = session();
  auto estimate = ask_line<estimate_reply>(s, estimate_context{agent_recipe{}, R"({"messages": []})"});
  CAF_REQUIRE(estimate);
  CAF_CHECK(json::parse(*estimate)["tokens"] == 7);
  CAF_CHECK(view(s).created && !view(s).running);
  run_chat(s, hello);
  CAF_CHECK_EQUAL(world->built.size(), 1u);
}

CAF_TEST_FIXTURE_SCOPE_END()
