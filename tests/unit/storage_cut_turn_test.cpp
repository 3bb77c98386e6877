#include "storage/cut_turn.hpp"

#include <catch2/catch.hpp>

using hb::protocol::json;
using hb::storage::cut_turn_messages;

TEST_CASE("a cut turn's text is kept and marked as cut", "[cut_turn]") {
  json out = cut_turn_messages(json("hello"),
                               {R"({"event": "stream.delta", "delta": "Hi, "})", R"({"event": "step", "step_info": null})",
                                R"({"event": "stream.delta", "delta": "I am"})"},
                               "the agent's worker died");
  REQUIRE(out.size() == 2);
  CHECK(out[0] == json::parse(R"({"role": "user", "content": "hello"})"));
  CHECK(out[1]["role"] == "assistant");
  CHECK(out[1]["content"] == "Hi, I am\n\n[this reply was cut off: the agent's worker died before the turn finished]");
  CHECK_FALSE(out[1].contains("tool_calls"));
}

TEST_CASE("a turn cut before any text still gets an answer saying so", "[cut_turn]") {
  json blocks = json::parse(R"([{"type": "text", "text": "look"}])");
  json out = cut_turn_messages(blocks, {}, "hermes-bridge restarted");
  REQUIRE(out.size() == 2);
  CHECK(out[0]["content"] == blocks); // content blocks as the client sent them
  CHECK(out[1]["content"] == "[this reply was cut off: hermes-bridge restarted before the turn finished]");
}

TEST_CASE("tools of a cut turn: finished ones keep their result, running ones an unknown one", "[cut_turn]") {
  json out = cut_turn_messages(
    json("go"),
    {R"({"event": "tool.started", "tool_call_id": "", "tool_name": "web", "args": {}})",
     R"({"event": "tool.started", "tool_call_id": "b", "tool_name": "terminal", "args": {"c": 1}})",
     R"({"event": "tool.completed", "tool_call_id": "b", "tool_name": "terminal", "args": {"c": 1}, "result": {"rc": 0}})",
     R"({"event": "tool.completed", "tool_call_id": "nobody", "tool_name": "x", "args": {}, "result": "?"})"},
    "hermes-bridge restarted");
  REQUIRE(out.size() == 5);
  CHECK(out[1]["content"] == "");
  REQUIRE(out[1]["tool_calls"].size() == 2);
  std::string unnamed = out[1]["tool_calls"][0]["id"];
  CHECK_FALSE(unnamed.empty()); // a call without an id still gets one its result can name
  CHECK(out[2] == json::parse(R"({"role": "tool", "tool_call_id": "b", "content": "{\"rc\": 0}"})"));
  CHECK(out[3]["tool_call_id"] == unnamed);
  CHECK(out[3]["content"].get<std::string>().find("whether it ran, and what it did, is unknown") != std::string::npos);
  CHECK(out[4]["role"] == "assistant");
}
