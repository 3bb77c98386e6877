#include "protocol/request.hpp"

#include <catch2/catch.hpp>

using hb::protocol::json;
using hb::protocol::wire_error;

namespace {
wire_error decode_error(const std::string& line) {
  try {
    hb::protocol::decode_request(line);
  } catch (const wire_error& e) {
    return e;
  }
  FAIL("no error for: " << line);
  return wire_error("", "");
}
} // namespace

TEST_CASE("a request line decodes to an object", "[request]") {
  json req = hb::protocol::decode_request(R"(  {"action": "ping"} )");
  CHECK(req["action"] == "ping");
}

TEST_CASE("bad request lines get the seed's error types", "[request]") {
  auto empty = decode_error("   ");
  CHECK(empty.type == "RuntimeError");
  CHECK(std::string(empty.what()) == "empty request");

  auto bad_json = decode_error("{nope");
  CHECK(bad_json.type == "JSONDecodeError");
  CHECK(std::string(bad_json.what()).find("not valid JSON") != std::string::npos);

  auto overflow = decode_error(R"({"cursor": 1e400})"); // nlohmann throws out_of_range here
  CHECK(overflow.type == "JSONDecodeError");
  CHECK(std::string(overflow.what()).find("number overflow") != std::string::npos);

  auto list = decode_error("[1, 2]");
  CHECK(list.type == "ValueError");
  CHECK(std::string(list.what()) == "request must be a JSON object, got list");

  auto utf8 = decode_error("{\"a\": \"\xff\"}");
  CHECK(utf8.type == "UnicodeDecodeError");
  CHECK(std::string(utf8.what()) ==
        "'utf-8' codec can't decode byte 0xff in position 7: invalid start byte");
}

TEST_CASE("lone surrogate escapes become U+FFFD, pairs stay", "[request]") {
  CHECK(hb::protocol::replace_lone_surrogate_escapes(R"("a\ud800b")") == R"("a\ufffdb")");
  CHECK(hb::protocol::replace_lone_surrogate_escapes(R"("\udc00")") == R"("\ufffd")");
  CHECK(hb::protocol::replace_lone_surrogate_escapes(R"("\ud83d\ude00")") == R"("\ud83d\ude00")");
  CHECK(hb::protocol::replace_lone_surrogate_escapes(R"("\\ud800")") == R"("\\ud800")");
  json req = hb::protocol::decode_request(R"({"message": "x\ud800y"})");
  CHECK(req["message"] == "x\xef\xbf\xbdy");
}

TEST_CASE("str(x or \"\") coercion", "[request]") {
  json req = json::parse(R"({"a": null, "b": 0, "c": "id", "d": 5, "e": true, "f": [1, "x"]})");
  CHECK(hb::protocol::field_str(req, "a").empty());
  CHECK(hb::protocol::field_str(req, "b").empty());
  CHECK(hb::protocol::field_str(req, "c") == "id");
  CHECK(hb::protocol::field_str(req, "d") == "5");
  CHECK(hb::protocol::field_str(req, "e") == "True");
  CHECK(hb::protocol::field_str(req, "f") == "[1, 'x']");
  CHECK(hb::protocol::field_str(req, "missing").empty());
}

TEST_CASE("int(x or 0) coercion and its errors", "[request]") {
  json req = json::parse(R"({"a": "12", "b": " -3 ", "c": 3.9, "d": "1_000", "e": "abc",
                            "f": [1], "g": [], "h": true, "i": "1__0"})");
  CHECK(hb::protocol::field_int(req, "a") == 12);
  CHECK(hb::protocol::field_int(req, "b") == -3);
  CHECK(hb::protocol::field_int(req, "c") == 3);
  CHECK(hb::protocol::field_int(req, "d") == 1000);
  CHECK(hb::protocol::field_int(req, "g") == 0);
  CHECK(hb::protocol::field_int(req, "h") == 1);
  CHECK(hb::protocol::field_int(req, "missing") == 0);
  try {
    hb::protocol::field_int(req, "e");
    FAIL("expected ValueError");
  } catch (const wire_error& e) {
    CHECK(e.type == "ValueError");
    CHECK(std::string(e.what()) == "invalid literal for int() with base 10: 'abc'");
  }
  CHECK_THROWS_AS(hb::protocol::field_int(req, "i"), wire_error);
  try {
    hb::protocol::field_int(req, "f");
    FAIL("expected TypeError");
  } catch (const wire_error& e) {
    CHECK(e.type == "TypeError");
  }
}

TEST_CASE("float(x or 0) coercion", "[request]") {
  json req = json::parse(R"({"a": "2.5", "b": 3, "c": "soon"})");
  CHECK(hb::protocol::field_float(req, "a") == 2.5);
  CHECK(hb::protocol::field_float(req, "b") == 3.0);
  try {
    hb::protocol::field_float(req, "c");
    FAIL("expected ValueError");
  } catch (const wire_error& e) {
    CHECK(std::string(e.what()) == "could not convert string to float: 'soon'");
  }
}

TEST_CASE("KeyError messages carry Python's quotes", "[request]") {
  CHECK(std::string(hb::protocol::key_error("unknown run: x").what()) == "'unknown run: x'");
  CHECK(hb::protocol::error_line("KeyError", "'unknown run: x'") ==
        R"({"ok": false, "error": "'unknown run: x'", "error_type": "KeyError"})");
}
