#include "actors/errors.hpp"

#include <caf/sec.hpp>
#include <catch2/catch.hpp>

using namespace hb::actors;

TEST_CASE("errors of ours are encoded with the Python names clients know") {
  CHECK(error_line(make_error(errc::bad_request, "model is required")) ==
        R"({"ok": false, "error": "model is required", "error_type": "ValueError"})");
  CHECK(error_line(make_error(errc::failed, "too many sessions")) ==
        R"({"ok": false, "error": "too many sessions", "error_type": "RuntimeError"})");
  CHECK(error_line(make_error(errc::wrong_type, "cursor must be int")) ==
        R"({"ok": false, "error": "cursor must be int", "error_type": "TypeError"})");
  // KeyError's text is Python's repr of its argument
  CHECK(error_line(make_error(errc::not_found, "unknown session: s1")) ==
        R"({"ok": false, "error": "'unknown session: s1'", "error_type": "KeyError"})");
}

TEST_CASE("an error from the wire keeps its type and its text, quoted once") {
  CHECK(error_line(to_error(hb::protocol::value_error("bad"))) == hb::protocol::error_line("ValueError", "bad"));
  auto key = hb::protocol::key_error("unknown clarify request: x");
  CHECK(error_line(to_error(key)) == hb::protocol::error_line(key));
  hb::protocol::wire_error raised{"FileNotFoundError", "no such file: /x"};
  auto err = to_error(raised);
  CHECK(static_cast<errc>(err.code()) == errc::agent_raised);
  CHECK(error_line(err) == hb::protocol::error_line("FileNotFoundError", "no such file: /x"));
  CHECK(error_message(err) == "no such file: /x");
}

TEST_CASE("catch_wire keeps a value or the wire error it threw") {
  auto ok = catch_wire([] { return std::string("fine"); });
  REQUIRE(ok);
  CHECK(*ok == "fine");
  auto bad = catch_wire([]() -> std::string { throw hb::protocol::runtime_error("boom"); });
  REQUIRE_FALSE(bad);
  CHECK(error_line(bad.error()) == hb::protocol::error_line("RuntimeError", "boom"));
}

TEST_CASE("another category's error is the daemon's own failure") {
  auto line = error_line(caf::make_error(caf::sec::request_timeout));
  CHECK(line.find(R"("error_type": "RuntimeError")") != std::string::npos);
  CHECK(line.find("hermes-bridge internal error") != std::string::npos);
}
