#include "app/tool_text.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <ctime>

using hb::app::clip_text;
using hb::app::display_width;
using hb::app::format_duration;
using hb::app::parse_time;
using hb::app::render_table;
using hb::app::shell_quoted;
using hb::app::visible_text;

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

TEST_CASE("controls in someone else's text are shown, not obeyed", "[app][visible]") {
  // The approval that hid its first half: CR and erase-line print `ls -la` alone.
  CHECK(visible_text("rm -rf ~/x\r\x1b[2Kls -la") == "rm -rf ~/x\\x0d\\x1b[2Kls -la");
  // Newline and tab stay, and a CR that ends a line; a CR alone does not.
  CHECK(visible_text("a\tb\nc\r\nd\re") == "a\tb\nc\r\nd\\x0de");
  CHECK(visible_text(std::string("nul\0bel\a del\x7f", 13)) == "nul\\x00bel\\x07 del\\x7f");
  CHECK(visible_text("\x1b]0;title\x07") == "\\x1b]0;title\\x07");
  // C1 controls as UTF-8 (U+009B is CSI on their own for some terminals) and as lone bytes.
  CHECK(visible_text("a\xc2\x9b" "2Kb\xc2\x85") == "a\\u009b2Kb\\u0085");
  CHECK(visible_text("\x9b" "31m") == "\\x9b31m");
  // Text reordered by bidi overrides and isolates.
  CHECK(visible_text("ls \xe2\x80\xae" "fr- mr") == "ls \\u202efr- mr");
  CHECK(visible_text("\xe2\x81\xa6x\xe2\x81\xa9") == "\\u2066x\\u2069");
  // Bytes that are not UTF-8: overlong, a surrogate, beyond U+10FFFF, cut short.
  CHECK(visible_text("\xc0\xaf") == "\\xc0\\xaf");
  CHECK(visible_text("\xed\xa0\x80") == "\\xed\\xa0\\x80");
  CHECK(visible_text("\xf4\x90\x80\x80") == "\\xf4\\x90\\x80\\x80");
  CHECK(visible_text("end\xe2\x82") == "end\\xe2\\x82");
  // Everything else is left alone.
  const std::string plain = "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80 \xc2\xa0 \\x1b {\"a\": 1}";
  CHECK(visible_text(plain) == plain);
  CHECK(visible_text("") == "");
}

TEST_CASE("a command to approve is one quoted shell word", "[app][visible]") {
  CHECK(shell_quoted("ls -la") == "'ls -la'");
  CHECK(shell_quoted("echo it's") == "'echo it'\\''s'");
  CHECK(shell_quoted("") == "''");
  CHECK(shell_quoted("rm -rf ~/x\r\x1b[2Kls -la") == "'rm -rf ~/x\\x0d\\x1b[2Kls -la'");
}

TEST_CASE("table cells are made visible and padded as shown", "[app][visible]") {
  std::string out = render_table({"SESSION", "N"}, {{"s\x1b[2J", "1"}, {"plain", "22"}}, {false, true});
  CHECK(out == "SESSION    N\ns\\x1b[2J   1\nplain     22\n");
}
