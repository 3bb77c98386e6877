// A run drawn on a time axis as one self-contained HTML page (inline CSS,
// inline SVG, a few lines of inline JS; nothing fetched): model streaming,
// tool calls, approval waits, compressions and deltas per second. Pure (no
// I/O, no clock): build_timeline reads the stored events into spans,
// render_timeline_html lays them out. The model and the layout helpers are
// in app/timeline_html.cpp, the page in app/timeline_page.cpp; unit tested
// in tests/unit/app_timeline_html_test.cpp.
#pragma once

#include "storage/log_rows.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hb::app {

using storage::run_row;
using storage::seq_row;

// One bar on the axis. All text is plain (escaped when written).
struct timeline_span {
  std::string label;   // what the bar says: tool name, approval command, ...
  std::string detail;  // the longer story: arguments, answer, result, outcome
  std::string outcome; // a style: "ok", "deny", "failed" or "open"
  double start = 0, end = 0;
  bool open = false;   // never ended in the log: drawn up to the axis end
  int row = 0;         // row inside its lane (pack_rows)
};

struct timeline_data {
  run_row run;
  double t0 = 0, t1 = 0; // the axis: the run's start .. its end (or last event)
  std::vector<timeline_span> streams, tools, approvals, compressions;
  std::vector<double> delta_times; // every stream.delta's `at`
  std::vector<std::pair<double, std::string>> marks; // instants: daemon restarts
  int64_t events = 0;
};

// Streaming periods split where no delta came for this long (seconds), and
// at every tool call, approval, compression and turn boundary.
constexpr double stream_gap_s = 1.0;

// `events` are the run's stored event rows, in seq order. Unreadable bodies
// are skipped; a tool call, approval or compression without its end is
// `open` and ends at t1.
timeline_data build_timeline(const run_row& run, const std::vector<seq_row>& events);

// Deltas counted from t0 to t1 in bins of `width` seconds: the smallest
// round width (1, 2 or 5 x 10^k, at least 10 ms) giving at most max_bins.
// The chart shows each bin as a rate, count / width deltas per second.
struct delta_bins {
  double width = 1;
  std::vector<int64_t> counts;
};
delta_bins bin_deltas(const std::vector<double>& times, double t0, double t1, size_t max_bins = 120);

// Tick offsets (seconds from t0) at a round step (1, 2 or 5 x 10^k) giving
// about `target` ticks over [0, duration].
std::vector<double> axis_ticks(double duration, int target = 8);

// Maps time to x pixels: the plot starts at `left` and is `width` wide;
// labels may run on to `limit` (the drawing's right edge).
struct time_scale {
  double t0 = 0, duration = 1, left = 0, width = 1, limit = 1;
  double x(double t) const;
};

// Pixels a label of this text takes (an estimate: code points x char_px).
double label_px(std::string_view text, double char_px = 6.6);

// Where a bar and its label go: the label inside the bar when it fits,
// else after it when that stays left of `limit`, else before it.
struct bar_place {
  double x0 = 0, x1 = 0;     // the bar (at least min_bar_px wide)
  double text_x = 0;         // the label's anchor
  bool text_end = false;     // anchored at its end (label before the bar)
  bool inside = false;       // label drawn on the bar
  double left = 0, right = 0; // what bar and label cover together
};
constexpr double min_bar_px = 3;
bar_place place_bar(const timeline_span& span, const time_scale& scale);

// Gives each span a row so that no two placed bars overlap (first fit, in
// order of start); returns the number of rows (at least 1).
int pack_rows(std::vector<timeline_span>& spans, const time_scale& scale);

// Text for HTML (content and quoted attributes): & < > " ' escaped, C0
// controls other than tab and newline shown as spaces, bytes that are not
// UTF-8 replaced by U+FFFD.
std::string html_escape(std::string_view text);

// At most max_chars code points, with "…" when cut.
std::string clip_chars(std::string_view utf8, size_t max_chars);

// "4ms", "0.42s", "12.3s", "2m03s".
std::string short_duration(double seconds);

// The whole page.
std::string render_timeline_html(const timeline_data& data);

} // namespace hb::app
