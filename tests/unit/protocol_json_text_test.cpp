#include "protocol/json_text.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <cstdio>
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

TEST_CASE("floats print like Python's repr across their range", "[json_text]") {
  // The oracle: Python's rule spelled out with strings (positional for
  // decimal exponents -4..15, else scientific with at least two digits).
  auto python_repr = [](double d) {
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
    std::string sci(buf, res.ptr), sign;
    if (sci[0] == '-')
      sign = "-", sci.erase(0, 1);
    size_t e = sci.find('e');
    std::string digits = sci.substr(0, e);
    digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
    while (digits.size() > 1 && digits.back() == '0')
      digits.pop_back();
    int exponent = std::stoi(sci.substr(e + 1));
    if (exponent >= -4 && exponent < 16) {
      int point = exponent + 1;
      if (point <= 0)
        return sign + "0." + std::string(-point, '0') + digits;
      if (static_cast<size_t>(point) >= digits.size())
        return sign + digits + std::string(point - digits.size(), '0') + ".0";
      return sign + digits.substr(0, point) + "." + digits.substr(point);
    }
    std::string exp = std::to_string(std::abs(exponent));
    return sign + digits.substr(0, 1) + (digits.size() > 1 ? "." + digits.substr(1) : "") + "e" +
           (exponent < 0 ? "-" : "+") + (exp.size() < 2 ? "0" : "") + exp;
  };
  uint64_t bits = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < 20000; ++i) {
    bits ^= bits << 13, bits ^= bits >> 7, bits ^= bits << 17;
    double d;
    if (i % 2) {
      std::memcpy(&d, &bits, sizeof d); // anywhere in the range
    } else {
      d = 1.7e9 + static_cast<double>(bits % 100000000) / 1e7; // a timestamp
    }
    if (!std::isfinite(d))
      continue;
    REQUIRE(repr(d) == python_repr(d));
  }
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

TEST_CASE("strings escaped a run at a time match an escape of each byte alone", "[json_text]") {
  // The oracle: each byte on its own, as json.dumps(ensure_ascii=False)
  // writes it (bytes of UTF-8 pass through).
  auto one_by_one = [](const std::string& s) {
    std::string out = "\"";
    for (unsigned char c : s) {
      const char* named = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\n' ? "\\n" : c == '\r' ? "\\r"
                          : c == '\t' ? "\\t" : c == '\b' ? "\\b" : c == '\f' ? "\\f" : nullptr;
      if (named) {
        out += named;
      } else if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else {
        out += static_cast<char>(c);
      }
    }
    return out + "\"";
  };
  uint32_t seed = 12345;
  auto next = [&] { return seed = seed * 1103515245u + 12345u, (seed >> 16) & 0x7fff; };
  for (int round = 0; round < 2000; ++round) {
    std::string s;
    size_t length = next() % 40;
    for (size_t i = 0; i < length; ++i)
      s += static_cast<char>(next() % 4 == 0 ? next() % 0x24 : next() % 256); // escapes often, at either end too
    std::string out = "x";
    hb::protocol::append_quoted(out, s);
    REQUIRE(out == "x" + one_by_one(s));
  }
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
