#include "actors/requests.hpp"

#include "protocol/json_text.hpp"
#include "protocol/wire_error.hpp"

#include <catch2/catch.hpp>

namespace rq = hb::actors::requests;
using hb::protocol::json;

namespace {

rq::any decode(const std::string& line) {
  return rq::decode(json::parse(line));
}

template <class T>
T decoded(const std::string& line) {
  auto request = decode(line);
  REQUIRE(std::holds_alternative<T>(request));
  return std::get<T>(request);
}

// The wire error decoding raises, as "<type>: <message>".
std::string refusal(const std::string& line) {
  try {
    decode(line);
  } catch (const hb::protocol::wire_error& e) {
    return e.type + ": " + e.what();
  }
  return "accepted";
}

} // namespace

TEST_CASE("every action decodes into its own type", "[requests]") {
  CHECK(std::holds_alternative<rq::ping>(decode(R"({"action": " ping "})")));
  CHECK(std::holds_alternative<rq::health>(decode(R"({"action": "health"})")));
  CHECK(std::holds_alternative<rq::list>(decode(R"({"action": "list"})")));
  CHECK(std::holds_alternative<rq::destroy_all>(decode(R"({"action": "destroy_all"})")));
  CHECK(std::holds_alternative<rq::shutdown>(decode(R"({"action": "shutdown"})")));
  CHECK(decoded<rq::chat>(R"({"action": "chat", "session_id": "s", "message": "m"})").session_id == "s");
  CHECK(decoded<rq::get_result>(R"({"action": "get_result", "run_id": "r"})").run_id == "r");
  CHECK(decoded<rq::get_history>(R"({"action": "get_history", "session_id": "s"})").session_id == "s");
  CHECK(decoded<rq::status>(R"({"action": "status", "session_id": "s"})").session_id == "s");
  CHECK(decoded<rq::status_if_loaded>(R"({"action": "status_if_loaded", "session_id": "s"})").session_id == "s");
  CHECK(decoded<rq::destroy>(R"({"action": "destroy", "session_id": "s"})").session_id == "s");
  CHECK(decoded<rq::interrupt>(R"({"action": "interrupt", "session_id": "s"})").message == "null");
  CHECK(decoded<rq::interrupt>(R"({"action": "interrupt", "session_id": "s", "message": "stop"})").message ==
        "\"stop\"");
}

TEST_CASE("an action is required and must be known", "[requests]") {
  CHECK(refusal(R"({})") == "ValueError: action is required");
  CHECK(refusal(R"({"action": "  "})") == "ValueError: action is required");
  CHECK(refusal(R"({"action": "fly"})") == "ValueError: unknown action: fly");
  // Only a daemon started with HERMES_BRIDGE_TEST_FAULTS=actions knows it.
  CHECK(refusal(R"({"action": "test_fault", "fault": "kill_writer"})") == "ValueError: unknown action: test_fault");
}

TEST_CASE("get_output's cursors and wait are read as the seed coerces them", "[requests]") {
  auto r = decoded<rq::get_output>(
    R"({"action": "get_output", "run_id": "r", "cursor": -4, "event_cursor": "7", "wait_ms": 99999999})");
  CHECK(r.cursor == 0);
  CHECK(r.event_cursor == 7);
  CHECK(r.include_output);
  CHECK(r.wait_ms == rq::max_wait_ms);
  CHECK_FALSE(decoded<rq::get_output>(R"({"action": "get_output", "include_output": 0})").include_output);
  CHECK(refusal(R"({"action": "get_output", "cursor": "x"})").rfind("ValueError", 0) == 0);
}

TEST_CASE("subscribe needs a run or a session", "[requests]") {
  CHECK(refusal(R"({"action": "subscribe"})") == "ValueError: subscribe needs a run_id or a session_id");
  auto run = decoded<rq::subscribe>(R"({"action": "subscribe", "run_id": "r", "cursor": 3})");
  CHECK(run.cursor == 3);
  auto session = decoded<rq::subscribe>(R"({"action": "subscribe", "session_id": "s", "cursor": "x"})");
  CHECK(session.session_id == "s"); // a session stream reads no cursor
}

TEST_CASE("steer takes text, else message, stripped and not empty", "[requests]") {
  CHECK(decoded<rq::steer>(R"({"action": "steer", "session_id": "s", "text": " go "})").text == "go");
  CHECK(decoded<rq::steer>(R"({"action": "steer", "session_id": "s", "text": "", "message": "m"})").text == "m");
  CHECK(refusal(R"({"action": "steer", "session_id": "s", "text": "   "})") == "ValueError: text is required");
}

TEST_CASE("answers to questions", "[requests]") {
  CHECK(refusal(R"({"action": "approval_respond"})") == "ValueError: approval_id is required");
  CHECK(decoded<rq::approval_respond>(R"({"action": "approval_respond", "approval_id": "a", "choice": " ONCE "})")
          .choice == "once");
  CHECK(decoded<rq::approval_respond>(R"({"action": "approval_respond", "approval_id": "a", "choice": "yes"})")
          .choice == "deny");
  CHECK(decoded<rq::approval_respond>(R"({"action": "approval_respond", "approval_id": "a"})").choice == "deny");
  CHECK(refusal(R"({"action": "clarify_respond"})") == "ValueError: clarify_id is required");
  CHECK(decoded<rq::clarify_respond>(R"({"action": "clarify_respond", "clarify_id": "c", "response": " b "})")
          .response == "b");
  CHECK(refusal(R"({"action": "compression_respond"})") == "ValueError: request_id is required");
  CHECK(refusal(R"({"action": "compression_respond", "request_id": "q", "messages": "x"})") ==
        "ValueError: messages must be a list");
  auto c = decoded<rq::compression_respond>(R"({"action": "compression_respond", "request_id": "q",
                                                "messages": [], "system_message": "s"})");
  CHECK(json::parse(c.reply) ==
        json::parse(R"({"request_id": "q", "messages": [], "system_message": "s", "error": null})"));
}

TEST_CASE("Hermes Studio's actions", "[requests]") {
  auto cmd = decoded<rq::profile_op>(R"({"action": "command", "session_id": "s", "command": "/x", "id": 4})");
  CHECK(cmd.op == "command");
  CHECK(cmd.profile == "default");
  CHECK_FALSE(cmd.profile_named);
  CHECK(json::parse(cmd.args) == json::parse(R"({"session_id": "s", "command": "/x"})"));
  CHECK(refusal(R"({"action": "command", "session_id": "s"})") == "ValueError: command is required");
  CHECK(refusal(R"({"action": "command", "command": "/x"})") == "ValueError: session_id is required");
  CHECK(decoded<rq::profile_op>(R"({"action": "get_session_title", "session_id": "s"})").op == "session_title");
  auto mcp = decoded<rq::profile_op>(R"({"action": "mcp_list", "profile": "work"})");
  CHECK(mcp.op == "mcp_list");
  CHECK(mcp.profile == "work");
  CHECK(decoded<rq::unknown_mcp>(R"({"action": "mcp_fly"})").action == "mcp_fly");
  CHECK(refusal(R"({"action": "skills_reload", "profile": "../x"})").rfind("ValueError", 0) == 0);
  CHECK(decoded<rq::worker_ping>(R"({"action": "worker_ping"})").worker_key == "default");
  CHECK(decoded<rq::worker_ping>(R"({"action": "worker_ping", "worker_key": "k"})").worker_key == "k");
  CHECK(decoded<rq::destroy_profile>(R"({"action": "destroy_profile", "profile": "p"})").profile == "p");
  CHECK(refusal(R"({"action": "switch_session_model", "session_id": "s"})") == "ValueError: model is required");
  auto sw = decoded<rq::switch_session_model>(R"({"action": "switch_session_model", "session_id": "s",
                                                  "model": " m ", "provider": "p"})");
  CHECK(sw.model == "m");
  auto est = decoded<rq::context_estimate>(R"({"action": "context_estimate", "conversation_history": [1],
                                               "system_message": "sys", "harness": "native"})");
  CHECK(est.recipe.harness == "embedded");
  CHECK(json::parse(est.args) == json::parse(R"({"messages": [1], "instructions": "sys", "workspace": ""})"));
  CHECK(refusal(R"({"action": "context_estimate", "messages": {"a": 1}})") == "ValueError: messages must be a list");
}

TEST_CASE("the envelope: keepalive and the id to echo", "[requests]") {
  auto e = rq::read_envelope(json::parse(R"({"keepalive": 1, "id": {"n": 1}})"));
  CHECK(e.keepalive);
  CHECK(e.id == R"({"n": 1})");
  auto bare = rq::read_envelope(json::parse(R"({})"));
  CHECK_FALSE(bare.keepalive);
  CHECK(bare.id.empty());
}
