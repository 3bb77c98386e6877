// The broker as the router: request lines in on a connection, answer lines
// out, sessions made, found and dropped in its registry, each request type
// sent to whoever answers it, answers in request order. The sessions, the
// log and the connections are the test's (broker_fixture.hpp).
#define CAF_SUITE broker
#include "tests/actors/broker_fixture.hpp"

#include "protocol/json_text.hpp"

using hb::protocol::json;

namespace {

json parsed(const std::string& line) {
  return json::parse(line);
}

std::vector<std::string> of(const std::vector<std::string>& x) {
  return x;
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(broker_tests, hb::test::broker_fixture)

CAF_TEST(ping answers from the broker alone) {
  start();
  auto pong = parsed(ask_once(R"({"action": "ping"})"));
  CAF_CHECK(pong["ok"] == true);
  CAF_CHECK(pong["pong"] == true);
  CAF_CHECK(pong["agent_root"] == "/agent");
  CAF_CHECK(pong["active_sessions"] == 0);
  CAF_CHECK(pong["version"]["version"] == "test");
  CAF_CHECK(world->spawned.empty());
}

CAF_TEST(a chat for a new session id makes one session and later chats reach the same one) {
  start();
  auto first = parsed(ask_once(R"({"action": "chat", "session_id": "s1", "message": "one"})"));
  CAF_CHECK(first["run_id"] == "run-of-s1");
  CAF_CHECK(first["status"] == "running");
  ask_once(R"({"action": "chat", "session_id": "s1", "message": "two"})");
  ask_once(R"({"action": "chat", "session_id": "s2", "message": "three"})");
  CAF_CHECK_EQUAL(world->spawned, of({"s1", "s2"}));
  CAF_CHECK_EQUAL(world->received["s1"], of({"chat one", "chat two"}));
  CAF_CHECK_EQUAL(world->received["s2"], of({"chat three"}));
}

CAF_TEST(a chat without a session id gets a new one) {
  start();
  auto answer = parsed(ask_once(R"({"action": "chat", "message": "hi"})"));
  CAF_REQUIRE_EQUAL(world->spawned.size(), 1u);
  const std::string& id = world->spawned[0];
  CAF_CHECK_EQUAL(id.size(), 32u);
  CAF_CHECK(id.find_first_not_of("0123456789abcdef") == std::string::npos);
  CAF_CHECK(answer["session_id"] == id);
}

CAF_TEST(interrupt steer and history go to the named session) {
  start();
  ask_once(R"({"action": "chat", "session_id": "s1", "message": "go"})");
  CAF_CHECK_EQUAL(ask_once(R"({"action": "interrupt", "session_id": "s1"})"),
                  R"({"ok": true, "status": "interrupted", "session_id": "s1", "synced": true})");
  CAF_CHECK_EQUAL(ask_once(R"({"action": "steer", "session_id": "s1", "text": "left"})"),
                  R"({"ok": true, "status": "queued", "accepted": true, "text": "left"})");
  CAF_CHECK_EQUAL(ask_once(R"({"action": "get_history", "session_id": "s1"})"),
                  R"({"ok": true, "session_id": "s1", "history": []})");
  CAF_CHECK_EQUAL(world->received["s1"], of({"chat go", "interrupt", "steer left", "history"}));
}

CAF_TEST(a request for a session nobody made is a KeyError and makes none) {
  start();
  for (const char* line : {R"({"action": "interrupt", "session_id": "ghost"})",
                           R"({"action": "steer", "session_id": "ghost", "text": "x"})",
                           R"({"action": "get_history", "session_id": "ghost"})"})
    CAF_CHECK_EQUAL(ask_once(line), R"({"ok": false, "error": "'unknown session: ghost'", "error_type": "KeyError"})");
  CAF_CHECK(world->spawned.empty());
}

CAF_TEST(a chat past max sessions is refused and makes no session) {
  settings->max_sessions = 1;
  start();
  ask_once(R"({"action": "chat", "session_id": "s1", "message": "a"})");
  auto refused = parsed(ask_once(R"({"action": "chat", "session_id": "s2", "message": "b"})"));
  CAF_CHECK(refused["ok"] == false);
  CAF_CHECK(refused["error_type"] == "RuntimeError");
  CAF_CHECK(refused["error"].get<std::string>().find("too many sessions (--max-sessions 1)") == 0);
  CAF_CHECK_EQUAL(world->spawned, of({"s1"}));
  ask_once(R"({"action": "chat", "session_id": "s1", "message": "again"})"); // a known one still takes chats
  CAF_CHECK_EQUAL(world->received["s1"].size(), 2u);
}

CAF_TEST(destroy drops the session from the registry) {
  start();
  ask_once(R"({"action": "chat", "session_id": "s1", "message": "a"})");
  CAF_CHECK_EQUAL(ask_once(R"({"action": "destroy", "session_id": "s1"})"),
                  R"({"ok": true, "session_id": "s1", "destroyed": true})");
  CAF_CHECK_EQUAL(world->received["s1"].back(), "destroy");
  CAF_CHECK_EQUAL(ask_once(R"({"action": "destroy", "session_id": "s1"})"),
                  R"({"ok": true, "session_id": "s1", "destroyed": false})");
  CAF_CHECK_EQUAL(ask_once(R"({"action": "status", "session_id": "s1"})"),
                  R"({"ok": true, "session_id": "s1", "exists": false, "running": false, "message_count": 0})");
  CAF_CHECK_EQUAL(ask_once(R"({"action": "status_if_loaded", "session_id": "s1"})"),
                  R"({"ok": true, "session_id": "s1", "exists": false, "running": false, "loaded": false})");
}

CAF_TEST(a session that could not be built is dropped when it says so) {
  start();
  auto failed = parsed(ask_once(R"({"action": "chat", "session_id": "s1", "message": "fail to build"})"));
  CAF_CHECK(failed["ok"] == false);
  CAF_CHECK_EQUAL(ask_once(R"({"action": "interrupt", "session_id": "s1"})"),
                  R"({"ok": false, "error": "'unknown session: s1'", "error_type": "KeyError"})");
  ask_once(R"({"action": "chat", "session_id": "s1", "message": "retry"})");
  CAF_CHECK_EQUAL(world->spawned, of({"s1", "s1"})); // made anew
}

CAF_TEST(sessions known from the log are made at start and listed) {
  hb::storage::session_row row;
  row.session_id = "old";
  row.config = R"({"profile": "work"})";
  start({row});
  CAF_CHECK_EQUAL(world->spawned, of({"old (dormant)"}));
  auto list = parsed(ask_once(R"({"action": "list"})"));
  CAF_REQUIRE_EQUAL(list["sessions"].size(), 1u);
  CAF_CHECK(list["sessions"][0]["session_id"] == "old");
  auto pong = parsed(ask_once(R"({"action": "ping"})"));
  CAF_CHECK(pong["sessions_by_profile"]["work"] == 1);
  auto status = parsed(ask_once(R"({"action": "status", "session_id": "old"})"));
  CAF_CHECK(status["exists"] == true);
}

CAF_TEST(ping counts what sessions say of themselves while the registry holds them) {
  start();
  ask_once(R"({"action": "chat", "session_id": "s1", "message": "work"})");
  ask_once(R"({"action": "chat", "session_id": "s2", "message": "hi"})");
  auto pong = parsed(ask_once(R"({"action": "ping"})"));
  CAF_CHECK(pong["active_sessions"] == 2);
  CAF_CHECK(pong["running_sessions"] == 2);
  CAF_CHECK(pong["running_sessions_by_profile"]["work"] == 1);
  auto work = parsed(ask_once(R"({"action": "worker_ping", "profile": "work"})"));
  CAF_CHECK(work["session_count"] == 1);
  // Destroyed, s1's actor goes (a real session's entry with it; this one's
  // stays behind): only what the registry still holds is counted.
  ask_once(R"({"action": "destroy", "session_id": "s1"})");
  pong = parsed(ask_once(R"({"action": "ping"})"));
  CAF_CHECK(pong["active_sessions"] == 1);
  CAF_CHECK(pong["sessions_by_profile"].value("work", 0) == 0);
  // A new actor for the same id is counted by its own entry, not the old one's.
  ask_once(R"({"action": "chat", "session_id": "s1", "message": "hi"})");
  pong = parsed(ask_once(R"({"action": "ping"})"));
  CAF_CHECK(pong["active_sessions"] == 2);
  CAF_CHECK(pong["sessions_by_profile"]["default"] == 2);
}

CAF_TEST(pipelined requests are answered in request order with their ids) {
  start();
  world->chats_answer = false;
  auto h = connect();
  send(h, R"({"action": "chat", "session_id": "s1", "message": "slow", "keepalive": true, "id": 1})");
  send(h, R"({"action": "ping", "keepalive": true, "id": "two"})");
  CAF_CHECK(answers(h).empty()); // the ping's answer waits for the chat's
  release_chats();
  auto lines = answers(h);
  CAF_REQUIRE_EQUAL(lines.size(), 2u);
  CAF_CHECK(lines[0].rfind(R"({"ok": true, "id": 1, "run_id": "run-of-s1")", 0) == 0);
  CAF_CHECK(lines[1].rfind(R"({"ok": true, "id": "two", "pong": true)", 0) == 0);
}

CAF_TEST(answers to questions go through the questions actor) {
  start();
  CAF_CHECK_EQUAL(ask_once(R"({"action": "approval_respond", "approval_id": "a1", "choice": "once"})"),
                  R"({"ok": true, "approval_id": "a1", "resolved": false, "choice": "once"})");
  CAF_CHECK_EQUAL(ask_once(R"({"action": "clarify_respond", "clarify_id": "c1", "response": "x"})"),
                  R"({"ok": false, "error": "'unknown clarify request: c1'", "error_type": "KeyError"})");
  CAF_CHECK_EQUAL(ask_once(R"({"action": "compression_respond", "request_id": "r1"})"),
                  R"({"ok": false, "error": "compression request r1 not found", "error_type": "RuntimeError"})");
}

CAF_TEST(runs are read from the log reader and an unknown one is a KeyError) {
  world->runs["r1"] = R"({"ok": true, "run_id": "r1"})";
  start();
  CAF_CHECK_EQUAL(ask_once(R"({"action": "get_result", "run_id": "r1"})"), R"({"ok": true, "run_id": "r1"})");
  CAF_CHECK_EQUAL(ask_once(R"({"action": "get_output", "run_id": "r1"})"), R"({"ok": true, "run_id": "r1"})");
  CAF_CHECK_EQUAL(ask_once(R"({"action": "get_result", "run_id": "nope"})"),
                  R"({"ok": false, "error": "'unknown run: nope'", "error_type": "KeyError"})");
  CAF_CHECK_EQUAL(ask_once(R"({"action": "get_output", "run_id": "nope", "wait_ms": 10})"),
                  R"({"ok": false, "error": "'unknown run: nope'", "error_type": "KeyError"})");
}

CAF_TEST(an unknown action and a line that is no request get the seed errors) {
  start();
  CAF_CHECK_EQUAL(ask_once(R"({"action": "fly"})"),
                  R"({"ok": false, "error": "unknown action: fly", "error_type": "ValueError"})");
  auto broken = parsed(ask_once("{not json"));
  CAF_CHECK(broken["ok"] == false);
  CAF_CHECK(broken["error_type"] == "JSONDecodeError" || broken["error_type"] == "ValueError");
  CAF_CHECK(world->spawned.empty());
}

CAF_TEST(with a token a request without it is refused and one with it is served) {
  settings->token = "s3cret";
  start();
  CAF_CHECK_EQUAL(ask_once(R"({"action": "ping"})"),
                  R"({"ok": false, "error": "unauthorized", "error_type": "PermissionError"})");
  CAF_CHECK_EQUAL(ask_once(R"({"action": "chat", "session_id": "s1", "message": "x", "token": "nope"})"),
                  R"({"ok": false, "error": "unauthorized", "error_type": "PermissionError"})");
  CAF_CHECK(world->spawned.empty());
  auto pong = parsed(ask_once(R"({"action": "ping", "token": "s3cret"})"));
  CAF_CHECK(pong["pong"] == true);
}

CAF_TEST(health counts sessions connections and open questions) {
  start();
  ask_once(R"({"action": "chat", "session_id": "s1", "message": "a"})");
  world->running["s1"] = true;
  auto health = parsed(ask_once(R"({"action": "health"})"));
  CAF_CHECK(health["status"] == "ok");
  CAF_CHECK(health["sessions"] == 1);
  CAF_CHECK(health["running"] == 1);
  CAF_CHECK(health["pending_questions"] == 0);
  CAF_CHECK(health["log"]["state"] == "ok");
}

CAF_TEST_FIXTURE_SCOPE_END()
