#include "protocol/line_reader.hpp"

#include <catch2/catch.hpp>

TEST_CASE("lines are reassembled across chunks", "[line_reader]") {
  hb::protocol::line_reader r(1024);
  CHECK(r.feed("{\"act"));
  CHECK_FALSE(r.next_line());
  CHECK(r.feed("ion\": 1}\n{\"x\""));
  auto line = r.next_line();
  REQUIRE(line);
  CHECK(*line == "{\"action\": 1}");
  CHECK_FALSE(r.next_line());
  CHECK(r.take_rest() == "{\"x\"");
}

TEST_CASE("a line over the cap is refused, not buffered", "[line_reader]") {
  hb::protocol::line_reader r(8);
  CHECK(r.feed("12345678"));
  CHECK_FALSE(r.feed("9"));
  CHECK(r.overflowed());
  CHECK(r.buffered() == 0);
}

TEST_CASE("a long line that ends within the same chunk is still refused", "[line_reader]") {
  hb::protocol::line_reader r(4);
  r.feed("1234567\n");
  CHECK_FALSE(r.next_line());
  CHECK(r.overflowed());
}

TEST_CASE("several lines in one chunk come out one by one", "[line_reader]") {
  hb::protocol::line_reader r(64);
  r.feed("a\nb\n\nc");
  CHECK(*r.next_line() == "a");
  CHECK(*r.next_line() == "b");
  CHECK(*r.next_line() == "");
  CHECK_FALSE(r.next_line());
}

TEST_CASE("the cap can be raised between feeds, and the tail of what is held read", "[line_reader]") {
  hb::protocol::line_reader r(8);
  CHECK(r.feed("abcdef"));
  CHECK(r.tail(3) == "def");
  CHECK(r.tail(100) == "abcdef");
  r.set_max_line_bytes(64); // e.g. the token has been seen
  CHECK(r.feed("ghijklmnop"));
  CHECK_FALSE(r.overflowed());
  CHECK(r.feed("\nxy"));
  CHECK(r.next_line() == std::optional<std::string>("abcdefghijklmnop"));
  CHECK(r.tail(5) == "xy"); // only what is not yet a line
}
