#include "protocol/json_text.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

using hb::protocol::json;

namespace {
std::string repr(double d) {
  std::string out;
  hb::protocol::append_double(out, d);
  return out;
}
} // namespace

TEST_CASE("dumps uses Python's separators and keeps key order", "[json_text]") {
  json v = json::parse(R"({"b": 1, "a": [true, null, "x"], "c": {}})");
  CHECK(hb::protocol::dumps(v) == R"({"b": 1, "a": [true, null, "x"], "c": {}})");
}

TEST_CASE("floats print like Python's repr", "[json_text]") {
  CHECK(repr(1.0) == "1.0");
  CHECK(repr(0.1) == "0.1");
  CHECK(repr(-2.5) == "-2.5");
  CHECK(repr(1e16) == "1e+16");
  CHECK(repr(1234567890123456.0) == "1234567890123456.0");
  CHECK(repr(0.0001) == "0.0001");
  CHECK(repr(0.00001) == "1e-05");
  CHECK(repr(1.5e-7) == "1.5e-07");
  CHECK(repr(1764468250.1234567) == "1764468250.1234567");
  CHECK(repr(1e300) == "1e+300");
}

TEST_CASE("NaN and infinities are written as null, never as literals", "[json_text]") {
  CHECK(repr(std::nan("")) == "null");
  CHECK(repr(std::numeric_limits<double>::infinity()) == "null");
  json v = json::array({std::nan(""), 1.5});
  CHECK(hb::protocol::dumps(v) == "[null, 1.5]");
}

TEST_CASE("strings are escaped as json.dumps(ensure_ascii=False) does", "[json_text]") {
  std::string out;
  hb::protocol::append_quoted(out, "a\"b\\c\nd\te\x01 \xc3\xa9 \xe2\x80\xa8");
  CHECK(out == "\"a\\\"b\\\\c\\nd\\te\\u0001 \xc3\xa9 \xe2\x80\xa8\"");
}

TEST_CASE("Python repr, str and truthiness of JSON values", "[json_text]") {
  CHECK(hb::protocol::py_repr(json::parse(R"(["a", 1, null, true, {"k": 1.5}])")) ==
        "['a', 1, None, True, {'k': 1.5}]");
  CHECK(hb::protocol::py_repr_string("it's") == "\"it's\"");
  CHECK(hb::protocol::py_repr_string("say \"hi\" it's") == "'say \"hi\" it\\'s'");
  CHECK(hb::protocol::py_str(json("plain")) == "plain");
  CHECK(hb::protocol::py_str(json(false)) == "False");
  CHECK_FALSE(hb::protocol::py_truthy(json::array()));
  CHECK_FALSE(hb::protocol::py_truthy(json(0.0)));
  CHECK(hb::protocol::py_truthy(json("0")));
}

TEST_CASE("ill-formed UTF-8 becomes U+FFFD", "[json_text]") {
  CHECK(hb::protocol::to_valid_utf8("ok\xff!") == "ok\xef\xbf\xbd!");
  CHECK(hb::protocol::to_valid_utf8("\xed\xa0\x80") == "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
  CHECK(hb::protocol::to_valid_utf8("\xe2\x82\xac") == "\xe2\x82\xac");
}

TEST_CASE("object_writer splices raw JSON", "[json_text]") {
  std::string line = hb::protocol::object_writer{}
                       .boolean("ok", true)
                       .raw("events", R"([{"event": "x"}])")
                       .integer("n", -3)
                       .null("e")
                       .finish();
  CHECK(line == R"({"ok": true, "events": [{"event": "x"}], "n": -3, "e": null})");
}

TEST_CASE("py_strip and py_lower", "[json_text]") {
  CHECK(hb::protocol::py_strip("  \t x y \n") == "x y");
  CHECK(hb::protocol::py_strip("   ").empty());
  CHECK(hb::protocol::py_lower("OnCe") == "once");
}
