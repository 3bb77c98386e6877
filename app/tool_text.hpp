// Text the log tools print or read: durations, times, tables. Pure functions
// (unit tested in tests/unit/app_tool_text_test.cpp).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hb::app {

// "0.42s", "12.3s", "2m03s", "1h02m", "3d04h".
std::string format_duration(double seconds);

// A time given on the command line, as Unix seconds: a number ("1718000000",
// "1718000000.5") or ISO-8601: "2024-06-10", "2024-06-10T08:30",
// "2024-06-10 08:30:15.25", each optionally ending in "Z" or "+HH:MM" /
// "-HH:MM" / "+HHMM". Without a zone the time is local, as Python's
// datetime.fromisoformat(...).timestamp() reads it. nullopt when unreadable.
std::optional<double> parse_time(std::string_view text);

// "2024-06-10 08:30:15" in local time.
std::string format_local_time(double unix_seconds);
// "08:30:15.250" in local time.
std::string format_local_clock(double unix_seconds);

// Columns padded to their widest cell (UTF-8 aware), two spaces apart, the
// cells made visible_text; `right` says which columns are right-aligned (numbers).
std::string render_table(const std::vector<std::string>& headers,
                         const std::vector<std::vector<std::string>>& rows,
                         const std::vector<bool>& right = {});

// Code points, which is what a terminal shows for the text we print.
size_t display_width(std::string_view utf8);

// Text that came from the daemon (an agent's, a tool's, a client's), safe to
// write to a terminal: C0 controls other than newline and tab (a CR right
// before a newline stays), DEL, the C1 controls U+0080..U+009F and the bidi
// embeddings, overrides and isolates (U+202A..U+202E, U+2066..U+2069) are
// shown as escapes (\x1b, \u009b, \u202e), and so is each byte that is not
// UTF-8. Printed as is, "rm -rf ~/x\r\x1b[2Kls -la" shows as "ls -la".
std::string visible_text(std::string_view text);

// visible_text(text) as one single-quoted shell word ('it'\''s'): where it
// starts and ends is plain to see.
std::string shell_quoted(std::string_view text);

// At most max_lines lines and max_bytes bytes (cut on a character
// boundary), with a note of what was left out.
std::string clip_text(const std::string& text, size_t max_lines, size_t max_bytes);

} // namespace hb::app
