// The timeline's model (spans read from a run's events) and its layout
// helpers; the page itself is app/timeline_page.cpp.
#include "app/timeline_html.hpp"

#include "app/tool_text.hpp"
#include "protocol/json_text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <map>
#include <numeric>

namespace hb::app {

using protocol::json;

namespace {

std::string as_text(const json& v) {
  return v.is_string() ? v.get<std::string>() : protocol::dumps(v);
}

std::string field_text(const json& ev, const char* key) {
  return ev.contains(key) && !ev[key].is_null() ? as_text(ev[key]) : std::string();
}

void add_line(std::string& detail, const std::string& line) {
  if (!line.empty())
    detail += (detail.empty() ? "" : "\n") + line;
}

// Events that belong to the model's own output and do not end a period of
// streaming (everything else does: a tool call, a question, a new step).
bool streaming_chatter(const std::string& name) {
  return name == "reasoning.delta" || name == "thinking.delta" || name == "status" ||
         name == "reasoning.available";
}

constexpr size_t detail_chars = 2000;

} // namespace

timeline_data build_timeline(const run_row& run, const std::vector<seq_row>& events) {
  timeline_data d;
  d.run = run;
  d.t0 = run.started_at;
  d.events = static_cast<int64_t>(events.size());
  double last = run.started_at;

  bool streaming = false;
  timeline_span stream;
  int64_t stream_deltas = 0;
  std::string stream_text;
  auto close_stream = [&] {
    if (!streaming)
      return;
    stream.label = std::to_string(stream_deltas) + (stream_deltas == 1 ? " delta" : " deltas");
    stream.detail = clip_chars(stream_text, detail_chars);
    d.streams.push_back(stream);
    streaming = false;
  };
  // Open calls by tool_call_id (or name, when the id is empty), oldest first.
  std::map<std::string, std::deque<size_t>> open_tools;
  std::map<std::string, size_t> open_approvals, open_compressions;
  auto close_span = [](timeline_span& s, double at, const char* outcome) {
    s.end = std::max(s.start, at);
    s.open = false;
    s.outcome = outcome;
  };

  for (const auto& row : events) {
    last = std::max(last, row.at);
    json ev = json::parse(row.text, nullptr, false);
    if (!ev.is_object())
      continue;
    const std::string name = field_text(ev, "event");
    if (name == "stream.delta") {
      d.delta_times.push_back(row.at);
      if (streaming && row.at - stream.end > stream_gap_s)
        close_stream();
      if (!streaming) {
        streaming = true;
        stream = timeline_span{};
        stream.start = stream.end = row.at;
        stream.outcome = "ok";
        stream_deltas = 0;
        stream_text.clear();
      }
      stream.end = std::max(stream.end, row.at);
      ++stream_deltas;
      if (stream_text.size() < detail_chars * 4)
        stream_text += field_text(ev, "delta");
      continue;
    }
    if (!streaming_chatter(name))
      close_stream();

    if (name == "tool.started") {
      timeline_span s;
      s.label = field_text(ev, "tool_name");
      s.start = s.end = row.at;
      s.open = true;
      s.outcome = "open";
      std::string args = ev.contains("args") ? as_text(ev["args"]) : std::string();
      add_line(s.detail, args.empty() || args == "{}" ? std::string() : "args: " + clip_chars(args, detail_chars));
      std::string id = field_text(ev, "tool_call_id");
      open_tools[id.empty() ? "#" + s.label : id].push_back(d.tools.size());
      d.tools.push_back(std::move(s));
    } else if (name == "tool.completed") {
      std::string tool = field_text(ev, "tool_name"), id = field_text(ev, "tool_call_id");
      auto& queue = open_tools[id.empty() ? "#" + tool : id];
      if (queue.empty()) { // a completion the log has no start for
        timeline_span s;
        s.label = tool;
        s.start = row.at;
        d.tools.push_back(s);
        queue.push_back(d.tools.size() - 1);
      }
      timeline_span& s = d.tools[queue.front()];
      queue.pop_front();
      close_span(s, row.at, "ok");
      std::string result = field_text(ev, "result");
      if (result.empty())
        result = field_text(ev, "result_preview");
      add_line(s.detail, result.empty() ? std::string() : "result: " + clip_chars(result, detail_chars));
    } else if (name == "approval.requested") {
      timeline_span s;
      s.label = clip_chars(field_text(ev, "command"), 80);
      s.start = s.end = row.at;
      s.open = true;
      s.outcome = "open";
      add_line(s.detail, "command: " + clip_chars(field_text(ev, "command"), detail_chars));
      add_line(s.detail, clip_chars(field_text(ev, "description"), detail_chars));
      if (ev.contains("timeout_ms") && ev["timeout_ms"].is_number())
        add_line(s.detail, "times out after " + short_duration(ev["timeout_ms"].get<double>() / 1000));
      open_approvals[field_text(ev, "approval_id")] = d.approvals.size();
      d.approvals.push_back(std::move(s));
    } else if (name == "approval.resolved") {
      auto it = open_approvals.find(field_text(ev, "approval_id"));
      if (it == open_approvals.end())
        continue;
      timeline_span& s = d.approvals[it->second];
      open_approvals.erase(it);
      std::string choice = field_text(ev, "choice"), reason = field_text(ev, "reason");
      close_span(s, row.at, choice == "deny" ? "deny" : "ok");
      s.label += " \u2192 " + choice;
      add_line(s.detail, "answer: " + choice + (reason.empty() ? "" : " (" + reason + ")"));
    } else if (name == "bridge.compression.requested") {
      timeline_span s;
      std::string count = field_text(ev, "message_count"), tokens = field_text(ev, "approx_tokens");
      s.label = "compression of " + count + " messages";
      s.start = s.end = row.at;
      s.open = true;
      s.outcome = "open";
      add_line(s.detail, count + " messages" + (tokens.empty() ? "" : ", ~" + tokens + " tokens"));
      std::string focus = field_text(ev, "focus_topic");
      add_line(s.detail, focus.empty() ? std::string() : "focus: " + clip_chars(focus, 200));
      open_compressions[field_text(ev, "request_id")] = d.compressions.size();
      d.compressions.push_back(std::move(s));
    } else if (name == "bridge.compression.completed" || name == "bridge.compression.failed") {
      auto it = open_compressions.find(field_text(ev, "request_id"));
      if (it == open_compressions.end())
        continue;
      timeline_span& s = d.compressions[it->second];
      open_compressions.erase(it);
      if (name == "bridge.compression.completed") {
        close_span(s, row.at, "ok");
        s.label = "compression " + field_text(ev, "message_count") + " \u2192 " +
                  field_text(ev, "result_messages") + " messages";
        add_line(s.detail, "completed: " + field_text(ev, "result_messages") + " messages");
      } else {
        close_span(s, row.at, "failed");
        s.label = "compression failed";
        add_line(s.detail, "failed: " + clip_chars(field_text(ev, "error"), detail_chars));
      }
    } else if (name == "bridge.recovered") {
      d.marks.emplace_back(row.at, "daemon restarted: " + field_text(ev, "reason"));
    }
  }
  close_stream();

  d.t1 = std::max(d.t0, last);
  if (run.ended_at)
    d.t1 = std::max(d.t1, *run.ended_at);
  for (auto* lane : {&d.tools, &d.approvals, &d.compressions})
    for (auto& s : *lane) {
      if (s.open)
        s.end = d.t1;
      s.label += (s.label.empty() ? "" : " \u00b7 ") + short_duration(s.end - s.start) +
                 (s.open ? " (no end in the log)" : "");
    }
  for (auto& s : d.streams)
    s.label += " \u00b7 " + short_duration(s.end - s.start);
  return d;
}

namespace {

// The smallest of 1, 2, 5 x 10^k that is at least `raw` (and at least 1 ms).
double nice_step(double raw) {
  raw = std::max(raw, 0.001);
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (mag * m >= raw * (1 - 1e-9))
      return mag * m;
  return mag * 10;
}

} // namespace

delta_bins bin_deltas(const std::vector<double>& times, double t0, double t1, size_t max_bins) {
  delta_bins b;
  double duration = std::max(0.0, t1 - t0);
  b.width = nice_step(std::max(duration / static_cast<double>(std::max<size_t>(1, max_bins)), 0.01));
  size_t n = std::max<size_t>(1, static_cast<size_t>(std::ceil(duration / b.width - 1e-9)));
  b.counts.assign(n, 0);
  for (double t : times) {
    double k = std::floor(std::max(0.0, t - t0) / b.width);
    ++b.counts[std::min(n - 1, static_cast<size_t>(k))];
  }
  return b;
}

std::vector<double> axis_ticks(double duration, int target) {
  if (!(duration > 0) || target < 1)
    return {0.0};
  double step = nice_step(duration / target);
  std::vector<double> ticks;
  for (int k = 0; k * step <= duration * (1 + 1e-9); ++k)
    ticks.push_back(k * step);
  return ticks;
}

double time_scale::x(double t) const {
  double d = duration > 0 ? duration : 1;
  return left + (t - t0) / d * width;
}

double label_px(std::string_view text, double char_px) {
  size_t points = 0;
  for (unsigned char c : text)
    points += (c & 0xC0) != 0x80;
  return static_cast<double>(points) * char_px;
}

bar_place place_bar(const timeline_span& span, const time_scale& scale) {
  bar_place p;
  p.x0 = scale.x(span.start);
  p.x1 = std::max(scale.x(span.end), p.x0 + min_bar_px);
  double w = label_px(span.label) + 8;
  if (p.x1 - p.x0 >= w) {
    p.inside = true;
    p.text_x = p.x0 + 4;
    p.left = p.x0;
    p.right = p.x1;
  } else if (p.x1 + w <= scale.limit || p.x0 - w < 0) {
    p.text_x = p.x1 + 4;
    p.left = p.x0;
    p.right = p.x1 + w;
  } else {
    p.text_end = true;
    p.text_x = p.x0 - 4;
    p.left = p.x0 - w;
    p.right = p.x1;
  }
  return p;
}

int pack_rows(std::vector<timeline_span>& spans, const time_scale& scale) {
  std::vector<size_t> order(spans.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return spans[a].start < spans[b].start; });
  std::vector<double> row_end;
  for (size_t i : order) {
    bar_place p = place_bar(spans[i], scale);
    size_t r = 0;
    while (r < row_end.size() && row_end[r] > p.left)
      ++r;
    if (r == row_end.size())
      row_end.push_back(0);
    row_end[r] = p.right + 4;
    spans[i].row = static_cast<int>(r);
  }
  return std::max<int>(1, static_cast<int>(row_end.size()));
}

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    unsigned char c = s[i];
    if (c < 0x80) {
      switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&#39;"; break;
        default: out += (c < 0x20 && c != '\n' && c != '\t') || c == 0x7F ? ' ' : static_cast<char>(c);
      }
      ++i;
      continue;
    }
    // A well-formed UTF-8 sequence is copied; anything else is one U+FFFD.
    size_t len = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    bool ok = len > 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; ++k)
      ok = (s[i + k] & 0xC0) == 0x80;
    if (ok && len >= 3) {
      unsigned char c1 = s[i + 1];
      ok = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 > 0x9F) && !(c == 0xF0 && c1 < 0x90) &&
           !(c == 0xF4 && c1 > 0x8F);
    }
    if (!ok) {
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    out.append(text.substr(i, len));
    i += len;
  }
  return out;
}

std::string clip_chars(std::string_view utf8, size_t max_chars) {
  size_t points = 0;
  for (size_t i = 0; i < utf8.size(); ++i) {
    if ((static_cast<unsigned char>(utf8[i]) & 0xC0) == 0x80)
      continue;
    if (points++ == max_chars)
      return std::string(utf8.substr(0, i)) + "\u2026";
  }
  return std::string(utf8);
}

std::string short_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0)
    seconds = 0;
  if (std::llround(seconds * 1000) < 1000) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0fms", seconds * 1000);
    return buf;
  }
  return format_duration(seconds);
}

} // namespace hb::app
