#include "actors/chat_request.hpp"

#include "actors/errors.hpp"
#include "protocol/json_text.hpp"
#include "protocol/wire_error.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

using hb::actors::chat_request;
using hb::protocol::json;

namespace {

chat_request read(const std::string& line) {
  return hb::actors::read_chat(json::parse(line));
}

// A field the session refuses once it has said whether it is busy.
std::string refusal(const std::string& line) {
  auto chat = read(line);
  return chat.invalid ? hb::actors::error_line(chat.invalid) : std::string();
}

} // namespace

TEST_CASE("a chat request's agent fields are read as the seed reads them", "[chat]") {
  auto chat = read(R"({"action": "chat", "message": "hi", "profile": "work", "model": "  m1 ",
                       "provider": "p", "wait": 1, "timeout": "2.5", "session_id": " s1 "})");
  CHECK(!chat.invalid);
  CHECK(chat.session_id == "s1");
  CHECK(chat.recipe.profile == "work");
  CHECK(chat.recipe.model == "m1"); // stripped
  CHECK(chat.recipe.provider == "p");
  CHECK(chat.recipe.harness.empty()); // the session's, or the daemon's default
  CHECK(chat.plan.wait);
  CHECK(chat.plan.timeout == 2.5);
  CHECK(chat.plan.replay.empty());
  CHECK(chat.plan.user_message == "\"hi\"");
  CHECK(chat.turn.fields.find("\"message\": \"hi\"") != std::string::npos); // passed on as sent
  CHECK(chat.turn.message_text == "hi");
}

TEST_CASE("the agent's request is the client's with the session's workspace and history", "[chat]") {
  auto chat = read(R"({"action": "chat", "message": "hi", "workspace": "/", "conversation_history": [1],
                       "reasoning_effort": "low"})");
  CHECK(chat.turn.fields == R"({"action": "chat", "message": "hi", "reasoning_effort": "low"})");
  CHECK(chat.turn.history == "[1]");
  CHECK(hb::actors::agent_request(chat.turn, "/srv/w", "[2, 3]") ==
        R"({"action": "chat", "message": "hi", "reasoning_effort": "low", "workspace": "/srv/w", )"
        R"("conversation_history": [2, 3]})");
  CHECK(hb::actors::agent_request(chat.turn, "", "") == chat.turn.fields);
  auto bare = read(R"({})");
  CHECK(bare.turn.history.empty());
  CHECK(hb::actors::agent_request(bare.turn, "/w", "") == R"({"workspace": "/w"})");
  CHECK(json::parse(hb::actors::agent_request(bare.turn, "/w", "[]"))["conversation_history"].is_array());
}

TEST_CASE("a history or message of the wrong type is refused at once", "[chat]") {
  CHECK_THROWS_WITH(read(R"({"conversation_history": "x"})"), Catch::Contains("conversation_history must be a list"));
  CHECK_THROWS_WITH(read(R"({"message": 3})"), Catch::Contains("message must be a string or a list"));
  CHECK(read(R"({"conversation_history": null, "message": null})").turn.history.empty());
}

TEST_CASE("the harness must be one of two", "[chat]") {
  CHECK(read(R"({"message": "x", "harness": " Native "})").recipe.harness == "native");
  CHECK(refusal(R"({"message": "x", "harness": "vim"})") ==
        R"({"ok": false, "error": "harness must be 'embedded' or 'native', not 'vim'", "error_type": "ValueError"})");
}

TEST_CASE("a workspace must be a directory and is resolved", "[chat]") {
  CHECK(refusal(R"({"message": "x", "workspace": "/nonexistent/hb-ws"})").find(
          "workspace is not a directory: /nonexistent/hb-ws") != std::string::npos);
  CHECK(refusal(R"({"message": "x", "workspace": "/etc/hostname"})").find("not a directory") != std::string::npos);
  char dir[] = "/tmp/hb-chat-XXXXXX";
  REQUIRE(::mkdtemp(dir));
  std::string dotted = std::string(dir) + "/./";
  CHECK(read(R"({"message": "x", "workspace": " )" + dotted + " \"}").recipe.workspace == dir);
  CHECK(read(R"({"message": "x", "workspace": ""})").recipe.workspace.empty());
  ::rmdir(dir);
}

TEST_CASE("a replay's speed must be positive; without wait no timeout is read", "[chat]") {
  auto chat = read(R"({"message": "", "replay": " r1 ", "speed": 4})");
  CHECK(chat.plan.replay == "r1");
  CHECK(chat.plan.replay_speed == 4);
  CHECK(chat.plan.user_message.empty());
  CHECK(refusal(R"({"replay": "r1", "speed": 0})").find("positive") != std::string::npos);
  CHECK(read(R"({"message": "x", "timeout": "not a number"})").plan.timeout == 0);
  CHECK(refusal(R"({"message": "x", "wait": true, "timeout": "soon"})").find("ValueError") != std::string::npos);
}

TEST_CASE("configs for replay-made and resumed sessions", "[chat]") {
  auto replay = json::parse(hb::actors::replay_session_config("s1"));
  CHECK(replay["requested_session_id"] == "s1");
  CHECK(replay["model"] == "replay");
  CHECK(hb::actors::resumed_config(R"({"model": "m"})", 7) ==
        R"({"model": "m", "resumed": true, "resumed_message_count": 7})");
  CHECK(hb::actors::resumed_config("not json", 7) == "not json");
}

TEST_CASE("a profile that is not a plain name is a ValueError before anything is built", "[chat]") {
  for (const char* bad : {R"({"message": "x", "profile": "../../etc"})", R"({"message": "x", "profile": "/tmp/p"})",
                          R"({"message": "x", "profile": "a/b"})", R"({"message": "x", "profile": ".."})"}) {
    INFO(bad);
    CHECK(refusal(bad).find("\"error_type\": \"ValueError\"") != std::string::npos);
  }
  CHECK(read(R"({"message": "x", "profile": "work"})").recipe.profile == "work");
}
