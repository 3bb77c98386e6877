#include "actors/chat_request.hpp"

#include "protocol/json_text.hpp"
#include "protocol/wire_error.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

using hb::actors::read_chat;

TEST_CASE("a chat request's agent fields are read as the seed reads them", "[chat]") {
  auto chat = read_chat(R"({"action": "chat", "message": "hi", "profile": "work", "model": "  m1 ",
                            "provider": "p", "wait": 1, "timeout": "2.5"})",
                        "embedded");
  CHECK(chat.recipe.profile == "work");
  CHECK(chat.recipe.model == "m1"); // stripped
  CHECK(chat.recipe.provider == "p");
  CHECK(chat.recipe.harness == "embedded");
  CHECK(chat.plan.wait);
  CHECK(chat.plan.timeout == 2.5);
  CHECK(chat.plan.replay.empty());
  CHECK(chat.plan.request.find("\"message\": \"hi\"") != std::string::npos); // passed on as sent
}

TEST_CASE("the harness defaults to the session's and must be one of two", "[chat]") {
  CHECK(read_chat(R"({"message": "x"})", "native").recipe.harness == "native");
  CHECK(read_chat(R"({"message": "x", "harness": " Native "})", "embedded").recipe.harness == "native");
  CHECK_THROWS_AS(read_chat(R"({"message": "x", "harness": "vim"})", "embedded"), hb::protocol::wire_error);
}

TEST_CASE("a workspace must be a directory and is resolved, for either harness", "[chat]") {
  CHECK_THROWS_WITH(read_chat(R"({"message": "x", "workspace": "/nonexistent/hb-ws"})", "embedded"),
                    Catch::Equals("workspace is not a directory: /nonexistent/hb-ws"));
  CHECK_THROWS_WITH(read_chat(R"({"message": "x", "workspace": "/etc/hostname"})", "native"),
                    Catch::Contains("not a directory"));
  char dir[] = "/tmp/hb-chat-XXXXXX";
  REQUIRE(::mkdtemp(dir));
  std::string dotted = std::string(dir) + "/./";
  for (const char* harness : {"native", "embedded"}) {
    auto chat = read_chat(R"({"message": "x", "workspace": " )" + dotted + " \"}", harness);
    CHECK(chat.recipe.workspace == dir);
  }
  CHECK(read_chat(R"({"message": "x", "workspace": ""})", "embedded").recipe.workspace.empty());
  ::rmdir(dir);
}

TEST_CASE("a replay's speed must be positive; without wait no timeout is read", "[chat]") {
  auto chat = read_chat(R"({"message": "", "replay": " r1 ", "speed": 4})", "embedded");
  CHECK(chat.plan.replay == "r1");
  CHECK(chat.plan.replay_speed == 4);
  CHECK_THROWS_WITH(read_chat(R"({"replay": "r1", "speed": 0})", "embedded"), Catch::Contains("positive"));
  CHECK(read_chat(R"({"message": "x", "timeout": "not a number"})", "embedded").plan.timeout == 0);
  CHECK_THROWS_AS(read_chat(R"({"message": "x", "wait": true, "timeout": "soon"})", "embedded"),
                  hb::protocol::wire_error);
}

TEST_CASE("configs for replay-made and resumed sessions", "[chat]") {
  auto replay = hb::protocol::json::parse(hb::actors::replay_session_config("s1"));
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
    try {
      read_chat(bad, "embedded");
      FAIL("accepted");
    } catch (const hb::protocol::wire_error& e) {
      CHECK(e.type == "ValueError");
    }
  }
  CHECK(read_chat(R"({"message": "x", "profile": "work"})", "embedded").recipe.profile == "work");
}
