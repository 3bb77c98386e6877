#include "app/timeline_html.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace hb::app;

namespace {

run_row sample_run() {
  run_row r;
  r.run_id = "0123456789abcdef0123456789abcdef";
  r.session_id = "s1";
  r.status = "complete";
  r.started_at = 1000.0;
  r.ended_at = 1010.0;
  return r;
}

std::vector<seq_row> sample_events() {
  std::vector<std::pair<double, std::string>> raw = {
    {1000.1, R"({"event": "stream.delta", "delta": "hi "})"},
    {1000.3, R"({"event": "stream.delta", "delta": "there"})"},
    {1000.3, R"({"event": "turn.boundary"})"},
    {1000.5, R"({"event": "tool.started", "tool_call_id": "c1", "tool_name": "terminal", "args": {"command": "<script>alert(1)</script>"}})"},
    {1001.5, R"({"event": "tool.completed", "tool_call_id": "c1", "tool_name": "terminal", "args": {}, "result": "ok & done", "result_preview": "ok & done"})"},
    {1002.0, R"({"event": "approval.requested", "approval_id": "a1", "command": "rm -rf /", "description": "dangerous", "choices": ["once", "deny"], "timeout_ms": 3000})"},
    {1004.0, R"({"event": "approval.resolved", "approval_id": "a1", "choice": "deny", "reason": "timed out"})"},
    {1005.0, R"({"event": "bridge.compression.requested", "request_id": "r1", "message_count": 4, "approx_tokens": 1234, "focus_topic": "x"})"},
    {1006.0, R"({"event": "bridge.compression.completed", "request_id": "r1", "message_count": 4, "result_messages": 1, "compressed": true})"},
    {1007.0, R"({"event": "stream.delta", "delta": "a "})"},
    {1007.2, R"({"event": "stream.delta", "delta": "b "})"},
    {1009.0, R"({"event": "stream.delta", "delta": "late"})"}, // after a gap: its own period
    {1009.5, R"({"event": "tool.started", "tool_call_id": "c2", "tool_name": "web_search", "args": {}})"},
    {1009.6, "not json"},
  };
  std::vector<seq_row> out;
  for (size_t i = 0; i < raw.size(); ++i)
    out.push_back(seq_row{static_cast<int64_t>(i), raw[i].first, raw[i].second});
  return out;
}

bool has(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

} // namespace

TEST_CASE("timeline spans come from the events", "[app][timeline]") {
  timeline_data d = build_timeline(sample_run(), sample_events());
  CHECK(d.t0 == 1000.0);
  CHECK(d.t1 == 1010.0);
  CHECK(d.events == 14);
  CHECK(d.delta_times.size() == 5);

  REQUIRE(d.streams.size() == 3);
  CHECK(d.streams[0].start == 1000.1);
  CHECK(d.streams[0].end == 1000.3);
  CHECK(d.streams[0].detail == "hi there");
  CHECK(d.streams[1].label.rfind("2 deltas", 0) == 0);
  CHECK(d.streams[2].start == 1009.0);

  REQUIRE(d.tools.size() == 2);
  CHECK(d.tools[0].start == 1000.5);
  CHECK(d.tools[0].end == 1001.5);
  CHECK(d.tools[0].outcome == "ok");
  CHECK(d.tools[0].label == "terminal \u00b7 1.00s");
  CHECK(has(d.tools[0].detail, "args: {\"command\": \"<script>alert(1)</script>\"}"));
  CHECK(has(d.tools[0].detail, "result: ok & done"));
  CHECK(d.tools[1].open);
  CHECK(d.tools[1].outcome == "open");
  CHECK(d.tools[1].end == 1010.0);
  CHECK(has(d.tools[1].label, "no end in the log"));

  REQUIRE(d.approvals.size() == 1);
  CHECK(d.approvals[0].outcome == "deny");
  CHECK(d.approvals[0].label == "rm -rf / \u2192 deny \u00b7 2.00s");
  CHECK(has(d.approvals[0].detail, "answer: deny (timed out)"));

  REQUIRE(d.compressions.size() == 1);
  CHECK(d.compressions[0].label == "compression 4 \u2192 1 messages \u00b7 1.00s");
  CHECK(d.compressions[0].outcome == "ok");
}

TEST_CASE("timeline: a failed compression, a restart and a run still going", "[app][timeline]") {
  run_row r = sample_run();
  r.status = "running";
  r.ended_at.reset();
  std::vector<seq_row> ev = {
    {0, 1001, R"({"event": "bridge.compression.requested", "request_id": "r1", "message_count": 2})"},
    {1, 1002, R"({"event": "bridge.compression.failed", "request_id": "r1", "message_count": 2, "error": "nope"})"},
    {2, 1003, R"({"event": "approval.requested", "approval_id": "a1", "command": "x"})"},
    {3, 1004, R"({"event": "bridge.recovered", "status": "interrupted", "reason": "daemon restarted"})"},
  };
  timeline_data d = build_timeline(r, ev);
  CHECK(d.t1 == 1004);
  REQUIRE(d.compressions.size() == 1);
  CHECK(d.compressions[0].outcome == "failed");
  CHECK(has(d.compressions[0].detail, "failed: nope"));
  REQUIRE(d.approvals.size() == 1);
  CHECK(d.approvals[0].open);
  CHECK(d.approvals[0].end == 1004);
  REQUIRE(d.marks.size() == 1);
  std::string page = render_timeline_html(d);
  CHECK(has(page, "running (the log so far)"));
  CHECK(has(page, "class=\"mark\""));
}

TEST_CASE("html_escape escapes markup and repairs text", "[app][timeline]") {
  CHECK(html_escape("<script>alert('x') & \"y\"</script>") ==
        "&lt;script&gt;alert(&#39;x&#39;) &amp; &quot;y&quot;&lt;/script&gt;");
  CHECK(html_escape("a\x01" "b\tc\n") == "a b\tc\n");
  CHECK(html_escape("caf\xC3\xA9 \xE2\x86\x92 \xF0\x9F\x98\x80") == "caf\xC3\xA9 \xE2\x86\x92 \xF0\x9F\x98\x80");
  CHECK(html_escape("bad\xFFx") == "bad\xEF\xBF\xBDx");
  CHECK(html_escape("cut\xE2\x86") == "cut\xEF\xBF\xBD\xEF\xBF\xBD");
  CHECK(html_escape("surrogate\xED\xA0\x80") == "surrogate\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  CHECK(html_escape("overlong\xC0\xAF") == "overlong\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST_CASE("clip_chars and short_duration", "[app][timeline]") {
  CHECK(clip_chars("abcdef", 3) == "abc\u2026");
  CHECK(clip_chars("abc", 3) == "abc");
  CHECK(clip_chars("\xC3\xA9\xC3\xA9\xC3\xA9", 2) == "\xC3\xA9\xC3\xA9\u2026");
  CHECK(short_duration(0.004) == "4ms");
  CHECK(short_duration(0.9996) == "1.00s");
  CHECK(short_duration(12.34) == "12.3s");
  CHECK(short_duration(-1) == "0ms");
}

TEST_CASE("deltas are binned in round widths", "[app][timeline]") {
  auto b = bin_deltas({1000.0, 1000.5, 1001.2, 1002.99, 1003.0}, 1000, 1003, 3);
  CHECK(b.width == 1);
  CHECK(b.counts == std::vector<int64_t>{2, 1, 2});
  auto fine = bin_deltas({1000.0, 1000.265}, 1000, 1000.3);
  CHECK(fine.width == Approx(0.01));
  CHECK(fine.counts.size() == 30);
  CHECK(fine.counts[26] == 1);
  auto minute = bin_deltas({1000.0}, 1000, 1060);
  CHECK(minute.width == 0.5);
  CHECK(minute.counts.size() == 120);
  auto empty = bin_deltas({}, 1000, 1000);
  CHECK(empty.counts == std::vector<int64_t>{0});
  auto wide = bin_deltas({1000.0, 1999.0}, 1000, 2000, 100);
  CHECK(wide.width == 10);
  CHECK(wide.counts.size() == 100);
  CHECK(wide.counts.front() == 1);
  CHECK(wide.counts.back() == 1);
}

TEST_CASE("axis ticks use round steps", "[app][timeline]") {
  CHECK(axis_ticks(10) == std::vector<double>{0, 2, 4, 6, 8, 10});
  CHECK(axis_ticks(0) == std::vector<double>{0});
  auto t = axis_ticks(95);
  CHECK(t[1] == 20);
  CHECK(t.back() == 80);
  CHECK(axis_ticks(0.3).size() >= 4);
}

TEST_CASE("bars are packed into rows without overlapping", "[app][timeline]") {
  time_scale scale{0, 10, 100, 1000, 1150};
  CHECK(scale.x(0) == 100);
  CHECK(scale.x(10) == 1100);
  std::vector<timeline_span> spans(4);
  spans[0].label = "a long label that does not fit";
  spans[0].start = 0, spans[0].end = 0.1;
  spans[1].label = "b";
  spans[1].start = 0.5, spans[1].end = 2; // overlaps a's label
  spans[2].label = "c";
  spans[2].start = 5, spans[2].end = 6; // free again in row 0
  spans[3].label = "at the very end, label goes before";
  spans[3].start = 9.9, spans[3].end = 10;
  CHECK(pack_rows(spans, scale) == 2);
  CHECK(spans[0].row == 0);
  CHECK(spans[1].row == 1);
  CHECK(spans[2].row == 0);
  bar_place p1 = place_bar(spans[1], scale);
  CHECK(p1.inside);
  bar_place p3 = place_bar(spans[3], scale);
  CHECK(p3.text_end);
  CHECK(p3.right <= scale.limit);
  bar_place tiny = place_bar(spans[0], scale);
  CHECK(tiny.x1 - tiny.x0 >= min_bar_px);
  std::vector<timeline_span> none;
  CHECK(pack_rows(none, scale) == 1);
}

TEST_CASE("the page is self-contained and escapes everything from the log", "[app][timeline]") {
  run_row r = sample_run();
  r.session_id = "<b>sess</b>";
  r.status = "error";
  r.error = "boom <img src=x onerror=alert(1)>";
  std::string page = render_timeline_html(build_timeline(r, sample_events()));
  CHECK(page.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(!has(page, "http://"));
  CHECK(!has(page, "https://"));
  CHECK(!has(page, "<script>alert"));
  CHECK(!has(page, "<img"));
  CHECK(!has(page, "<b>sess"));
  CHECK(has(page, "&lt;script&gt;alert(1)&lt;/script&gt;"));
  CHECK(has(page, "&lt;b&gt;sess&lt;/b&gt;"));
  CHECK(has(page, "Content-Security-Policy"));
  CHECK(has(page, "0123456789abcdef0123456789abcdef"));
  CHECK(has(page, ">terminal \u00b7 1.00s</text>"));
  CHECK(has(page, "web_search"));
  CHECK(has(page, "deltas / s"));
  // One <script> element: the page's own.
  size_t first = page.find("<script>");
  REQUIRE(first != std::string::npos);
  CHECK(page.find("<script>", first + 1) == std::string::npos);
  CHECK(has(page, "data-timeline"));
}
