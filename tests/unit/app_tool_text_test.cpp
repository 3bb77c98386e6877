#include "app/tool_text.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <ctime>

using hb::app::clip_text;
using hb::app::display_width;
using hb::app::format_duration;
using hb::app::parse_time;
using hb::app::render_table;

TEST_CASE("durations read at a glance", "[app]") {
  CHECK(format_duration(0) == "0.00s");
  CHECK(format_duration(0.4237) == "0.42s");
  CHECK(format_duration(9.994) == "9.99s");
  CHECK(format_duration(9.996) == "10.0s");
  CHECK(format_duration(12.34) == "12.3s");
  CHECK(format_duration(59.94) == "59.9s");
  CHECK(format_duration(59.96) == "1m00s");
  CHECK(format_duration(123) == "2m03s");
  CHECK(format_duration(3599.4) == "59m59s");
  CHECK(format_duration(3725) == "1h02m");
  CHECK(format_duration(86400 * 3 + 3600 * 4 + 5) == "3d04h");
  CHECK(format_duration(-5) == "0.00s");
}

TEST_CASE("times on the command line: Unix seconds or ISO-8601", "[app]") {
  CHECK(parse_time("1718000000") == Approx(1718000000.0));
  CHECK(parse_time("1718000000.25") == Approx(1718000000.25));
  CHECK(*parse_time(" 0 ") == 0.0);
  CHECK(parse_time("2024-06-10T08:30:15Z") == Approx(1718008215.0));
  CHECK(parse_time("2024-06-10T08:30:15.5Z") == Approx(1718008215.5));
  CHECK(parse_time("2024-06-10 08:30Z") == Approx(1718008200.0));
  CHECK(parse_time("2024-06-10T10:30:15+02:00") == Approx(1718008215.0));
  CHECK(parse_time("2024-06-10T10:30:15+0200") == Approx(1718008215.0));
  CHECK(parse_time("2024-06-10T03:30:15-05:00") == Approx(1718008215.0));
  CHECK(parse_time("2024-06-10T03:30:15-05") == Approx(1718008215.0));
  for (const char* bad : {"", "yesterday", "2024-13-01", "2024-02-31", "2024-06-10T25:00", "2024-06-10T08",
                          "2024-06-10T08:30:15.", "2024-06-10X", "12abc", "2024-06-10T08:30Zjunk", "."})
    CHECK_FALSE(parse_time(bad).has_value());
}

TEST_CASE("times without a zone are local", "[app]") {
  const char* old = std::getenv("TZ");
  std::string saved = old ? old : "";
  ::setenv("TZ", "EST5EDT,M3.2.0,M11.1.0", 1); // POSIX rule: no tzdata needed
  ::tzset();
  CHECK(parse_time("2024-06-10T04:30:15") == Approx(1718008215.0)); // EDT, UTC-4
  CHECK(parse_time("2024-01-10") == Approx(1704862800.0));          // EST, UTC-5
  CHECK(hb::app::format_local_time(1718008215.7) == "2024-06-10 04:30:15");
  CHECK(hb::app::format_local_clock(1718008215.25) == "04:30:15.250");
  if (old)
    ::setenv("TZ", saved.c_str(), 1);
  else
    ::unsetenv("TZ");
  ::tzset();
}

TEST_CASE("tables pad by characters, numbers to the right", "[app]") {
  CHECK(display_width("héllo") == 5);
  std::string t = render_table({"A", "NUM"}, {{"héllo", "5"}, {"x", "123"}}, {false, true});
  CHECK(t == "A      NUM\n"
             "héllo    5\n"
             "x      123\n");
}

TEST_CASE("long tool output is clipped with a note", "[app]") {
  CHECK(clip_text("short", 3, 100) == "short");
  CHECK(clip_text("a\nb\nc\nd", 2, 100) == "a\nb\n... (4 more bytes, 2 more lines)");
  std::string cut = clip_text("ééé", 10, 3); // never half a character
  CHECK(cut.rfind("é\n...", 0) == 0);
}
