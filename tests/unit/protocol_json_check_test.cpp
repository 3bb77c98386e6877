// Deep and malformed JSON from outside: requests nest at most 64 levels,
// writing a value never recurses, and an agent's event or result text
// always leaves the daemon as valid JSON.
#include "protocol/json_check.hpp"
#include "protocol/json_text.hpp"
#include "protocol/request.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

using hb::protocol::accepts_json;
using hb::protocol::nests_deeper_than;
using hb::protocol::json;
using hb::protocol::wire_error;

namespace {

std::string nested(size_t depth, const std::string& inner = "0") {
  return std::string(depth, '[') + inner + std::string(depth, ']');
}

wire_error decode_error(const std::string& line) {
  try {
    hb::protocol::decode_request(line);
  } catch (const wire_error& e) {
    return e;
  }
  FAIL("no error for a line of " << line.size() << " bytes");
  return wire_error("", "");
}

} // namespace

TEST_CASE("nesting is counted outside strings only", "[json_check]") {
  using hb::protocol::nests_deeper_than;
  CHECK_FALSE(nests_deeper_than(nested(64), 64));
  CHECK(nests_deeper_than(nested(65), 64));
  CHECK_FALSE(nests_deeper_than(R"({"a": "[[[[[[[[[[", "b": "\"{{{{{{"})", 2));
  CHECK(nests_deeper_than(R"({"a": {"b": {"c": 1}}})", 2));
  CHECK_FALSE(nests_deeper_than("]]]]]]", 0)); // not JSON, but not deep either
}

TEST_CASE("a request nested deeper than 64 levels is a ValueError, before it is parsed", "[json_check]") {
  json req = hb::protocol::decode_request(R"({"action": "ping", "x": )" + nested(62) + "}");
  CHECK(req["action"] == "ping");
  auto deep = decode_error(R"({"action": "ping", "x": )" + nested(64) + "}");
  CHECK(deep.type == "ValueError");
  CHECK(std::string(deep.what()).find("deeper than 64 levels") != std::string::npos);
  // The line from the issue: 100,000 levels in 200 KB.
  auto huge = decode_error(R"({"action": "ping", "x": )" + nested(100'000) + "}");
  CHECK(huge.type == "ValueError");
  // Unbalanced brackets are not mistaken for depth by a valid prefix: still bad JSON.
  CHECK(decode_error(R"({"x": [1]]]]]]]]]]})").type == "JSONDecodeError");
}

TEST_CASE("dumps writes a value nested far deeper than a stack could recurse", "[json_check]") {
  // Built by hand: parsing is limited, but values are made in other ways too.
  json deep = json::array();
  json* at = &deep;
  for (int i = 0; i < 200'000; ++i) {
    at->push_back(json::object());
    at = &(*at)[0];
    (*at)["k"] = json::array();
    at = &(*at)["k"];
  }
  std::string text = hb::protocol::dumps(deep);
  CHECK(text.size() == 2 + 200'000 * std::string(R"({"k": []})").size());
  CHECK(text.substr(0, 12) == R"([{"k": [{"k")");
  CHECK(hb::protocol::dumps(json::parse(R"({"a": [1, {"b": []}, {}], "c": "d"})")) ==
        R"({"a": [1, {"b": []}, {}], "c": "d"})");
  // The destructor of such a value is iterative in nlohmann_json (3.10+); if
  // it were not, this test would crash here.
}

TEST_CASE("repr of a value deeper than Python's recursion limit is a RecursionError", "[json_check]") {
  json deep = json::parse(nested(800));
  CHECK(hb::protocol::py_repr(deep).size() == 1601);
  json deeper = json::array();
  json* at = &deeper;
  for (int i = 0; i < 5000; ++i) {
    at->push_back(json::array());
    at = &(*at)[0];
  }
  try {
    hb::protocol::py_repr(deeper);
    FAIL("no error");
  } catch (const wire_error& e) {
    CHECK(e.type == "RecursionError");
  }
}

TEST_CASE("an agent's JSON text is spliced as is only when it is one valid value", "[json_check]") {
  using hb::protocol::checked_event_json;
  using hb::protocol::checked_json_value;
  CHECK(checked_json_value(R"({"a": [1, 2]})") == R"({"a": [1, 2]})");
  CHECK(checked_json_value("") == ""); // none
  CHECK(checked_json_value("\"text\"") == "\"text\"");
  CHECK(checked_json_value("{\"a\": 1") == R"("{\"a\": 1")");        // cut short: kept, as a string
  CHECK(checked_json_value("{} {}") == R"("{} {}")");                // two values
  CHECK(checked_json_value("NaN") == R"("NaN")");                    // Python's, not JSON
  CHECK(checked_json_value("\"\xff\"") == "\"\\\"\xEF\xBF\xBD\\\"\""); // bad UTF-8 replaced
  CHECK(checked_json_value(R"("\ud800")") == R"("\ufffd")");         // as requests get it
  CHECK(checked_json_value(nested(600)) == "\"" + nested(600) + "\"");
  CHECK(json::accept(checked_json_value(nested(600))));

  CHECK(checked_event_json(R"({"event": "tool.started"})") == R"({"event": "tool.started"})");
  CHECK(checked_event_json(R"(["not", "an", "object"])") ==
        R"({"event": "bridge.invalid_event", "text": "[\"not\", \"an\", \"object\"]"})");
  std::string broken = checked_event_json("{\"event\": \"x\", \"oops\n");
  CHECK(json::accept(broken));
  CHECK(json::parse(broken)["text"] == "{\"event\": \"x\", \"oops\n");
}

TEST_CASE("timeouts from outside are clamped to a range a duration can hold", "[json_check]") {
  using hb::protocol::clamp_timeout_s;
  CHECK(clamp_timeout_s(2.5) == 2.5);
  CHECK(clamp_timeout_s(0) == 0);
  CHECK(clamp_timeout_s(-3) == 0);
  CHECK(clamp_timeout_s(std::nan("")) == 0);
  CHECK(clamp_timeout_s(std::numeric_limits<double>::infinity()) == hb::protocol::max_timeout_s);
  CHECK(clamp_timeout_s(1e300) == hb::protocol::max_timeout_s);
}

namespace {
// nests_deeper_than() as it was written first, a character at a time: the
// oracle for the one that jumps from quote to quote.
bool nests_deeper_one_by_one(std::string_view text, size_t limit) {
  size_t depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"')
      in_string = true;
    else if ((c == '[' || c == '{') && ++depth > limit)
      return true;
    else if ((c == ']' || c == '}') && depth > 0)
      --depth;
  }
  return false;
}
} // namespace

// accepts_json() checks long strings itself and gives the rest to nlohmann:
// it must say what nlohmann's accept() says, for any text. Random texts from
// JSON's pieces and near misses, every string "long" (0 and 2 bytes).
TEST_CASE("accepts_json says what nlohmann's accept says", "[protocol]") {
  const std::vector<std::string> pieces = {
    "{", "}", "[", "]", ",", ":", " ", "\n", "\"", "\"a\"", "\"key\":", "1", "-0.5e3", "01", "1.", "true", "nul",
    "null", "\\", "\\\"", "\\\\", "\\/", "\\b", "\\n", "\\t", "\\x", "\\u00e9", "\\u12", "\\ud83d\\ude00", "\\ud83d",
    "\\ude00", "\\ud83dx", "\\uD800\\uDBFF", "\xc3\xa9", "\xc3", "\xed\xa0\x80", "\xf0\x9f\x98\x80", "\xf4\x90\x80\x80",
    "\x01", "\x7f", "\t", "abc", "\xe2\x82"};
  std::mt19937 random(17);
  int valid = 0;
  for (int n = 0; n < 60000; ++n) {
    std::string text;
    if (n % 3 == 0) { // a string value made of pieces: mostly near-valid strings
      text = "\"";
      for (int k = random() % (n % 7 == 0 ? 40 : 6); k > 0; --k) // some long: checked 8 bytes at a time
        text += pieces[20 + random() % (pieces.size() - 20)];
      text += "\"";
      if (n % 2)
        text = "{\"k\": [" + text + ", 1]}";
    } else {
      for (int k = 1 + random() % 8; k > 0; --k)
        text += pieces[random() % pieces.size()];
    }
    bool expected = json::accept(text);
    valid += expected;
    INFO(text);
    REQUIRE(accepts_json(text, 0) == expected);
    REQUIRE(accepts_json(text, 2) == expected);
    REQUIRE(accepts_json(text) == expected);
    REQUIRE(nests_deeper_than(text, 1) == nests_deeper_one_by_one(text, 1));
  }
  CHECK(valid > 5000); // the random texts are not all garbage
}

TEST_CASE("accepts_json checks a long string without handing it to nlohmann", "[protocol]") {
  std::string long_text(1 << 20, 'x');
  CHECK(accepts_json("{\"final_response\": \"" + long_text + "\", \"n\": [1, \"" + long_text + "\"]}"));
  CHECK(!accepts_json("{\"final_response\": \"" + long_text + "\x01\"}"));            // a control character
  CHECK(!accepts_json("{\"final_response\": \"" + long_text + "\\ud800\"}"));         // a lone surrogate
  CHECK(!accepts_json("{\"final_response\": \"" + long_text + "\xff\"}"));            // not UTF-8
  CHECK(!accepts_json("{\"final_response\": \"" + long_text + "\"} trailing"));       // the rest still checked
  CHECK(!accepts_json("{\"final_response\": \"" + long_text));                        // unterminated
}
