// The timeline page: a header, one inline SVG (time axis, a lane per kind of
// span, deltas per second) and a table of every span. Nothing is fetched:
// styles and the script are inline, and the page's Content-Security-Policy
// forbids loading anything. The script only links bars to table rows; the
// SVG's <title> tooltips and the table work without it.
#include "app/timeline_html.hpp"

#include "app/tool_text.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <utility>

namespace hb::app {

namespace {

constexpr double gutter = 130, plot_width = 940, right_margin = 50;
constexpr double axis_h = 26, row_h = 20, bar_h = 14, chart_h = 64;

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// Deltas per second: "130", "4.5", "0.25".
std::string rate_text(int64_t count, double width) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", static_cast<double>(count) / (width > 0 ? width : 1));
  return buf;
}

std::string offset_text(double seconds) {
  return "+" + short_duration(seconds);
}

constexpr const char* style = R"(
:root{--fg:#1d2330;--muted:#677086;--line:#e3e6ee;--lane:#f6f7fa;--stream:#5b8def;--tool:#1f9d8b;
--ok:#2f9e44;--deny:#d9480f;--failed:#c92a2a;--open:#f08c00;--compress:#7950f2;--chart:#8a94a8}
@media (prefers-color-scheme:dark){:root{--fg:#e6e9f0;--muted:#9aa3b5;--line:#2d3340;--lane:#1b1f27}
body{background:#12151b}}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);margin:24px;max-width:1200px}
h1{font-size:20px;margin:0 0 8px}
code,.mono{font-family:ui-monospace,"SFMono-Regular",Menlo,Consolas,monospace;font-size:12.5px}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:0 0 12px}
dl.meta dt{color:var(--muted)}dl.meta dd{margin:0}
.status-complete{color:var(--ok)}.status-error{color:var(--failed)}
.status-interrupted,.status-running{color:var(--open)}
p.error{color:var(--failed);white-space:pre-wrap}
.legend span{display:inline-block;margin-right:14px;color:var(--muted);font-size:12.5px}
.legend i{display:inline-block;width:11px;height:11px;border-radius:2px;margin-right:5px;vertical-align:-1px}
svg.timeline{display:block;max-width:100%;height:auto;margin:8px 0 16px}
svg text{font:11px system-ui,sans-serif;fill:var(--fg)}
svg .lane-name{font-weight:600}svg .tick{fill:var(--muted)}svg .grid{stroke:var(--line)}
svg .lane-bg{fill:var(--lane)}
svg .bar{cursor:pointer}svg .bar:hover rect,svg .bar.sel rect{stroke:var(--fg);stroke-width:1.5}
.k-stream rect{fill:var(--stream)}.k-tool rect{fill:var(--tool)}.k-approval rect{fill:var(--ok)}
.k-compression rect{fill:var(--compress)}
.o-deny rect{fill:var(--deny)}.o-failed rect{fill:var(--failed)}
.o-open rect{fill:var(--open);fill-opacity:.55;stroke:var(--open);stroke-dasharray:3 2}
svg .bar text.in{fill:#fff}
svg .rate{fill:var(--chart)}svg .mark{stroke:var(--failed);stroke-width:2}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:3px 8px;vertical-align:top;
border-bottom:1px solid var(--line)}th{color:var(--muted);font-weight:600}
td.detail{white-space:pre-wrap;word-break:break-word;font-family:ui-monospace,Menlo,Consolas,monospace;
font-size:12px;max-width:620px}
tr.sel{background:rgba(91,141,239,.16)}#js-state{color:var(--muted);font-size:12.5px}
)";

// Links each bar to its table row. Writes data-timeline="ready" on <html>
// once it ran (the browser check looks for it).
constexpr const char* script = R"(
(function(){
  var picked=[];
  function pick(i){
    picked.forEach(function(e){e.classList.remove('sel');});
    picked=Array.prototype.slice.call(document.querySelectorAll('svg [data-row="'+i+'"]'));
    var row=document.getElementById('row-'+i);
    if(row){picked.push(row);row.scrollIntoView({block:'nearest'});}
    picked.forEach(function(e){e.classList.add('sel');});
  }
  document.querySelectorAll('svg [data-row]').forEach(function(g){
    g.addEventListener('click',function(){pick(g.getAttribute('data-row'));});
    g.addEventListener('keydown',function(e){if(e.key==='Enter')pick(g.getAttribute('data-row'));});
  });
  document.getElementById('js-state').textContent='Click a bar to find it in the table below.';
  document.documentElement.setAttribute('data-timeline','ready');
})();
)";

struct lane {
  const char* name;
  const char* kind;
  std::vector<timeline_span> spans;
};

struct listed {
  const timeline_span* span;
  const char* lane;
};

} // namespace

std::string render_timeline_html(const timeline_data& d) {
  const double duration = std::max(d.t1 - d.t0, 0.0);
  time_scale scale{d.t0, duration > 0 ? duration : 1, gutter, plot_width, gutter + plot_width + right_margin};
  std::vector<lane> lanes = {{"model streaming", "stream", d.streams},
                             {"tool calls", "tool", d.tools},
                             {"approvals", "approval", d.approvals},
                             {"compression", "compression", d.compressions}};

  // Every span once, by start: the table rows, numbered for the bars.
  std::vector<listed> all;
  for (const auto& l : lanes)
    for (const auto& s : l.spans)
      all.push_back({&s, l.name});
  std::stable_sort(all.begin(), all.end(),
                   [](const listed& a, const listed& b) { return a.span->start < b.span->start; });
  std::map<const timeline_span*, size_t> index;
  for (size_t i = 0; i < all.size(); ++i)
    index[all[i].span] = i;

  std::string body;
  double y = axis_h;
  bool shade = true;
  for (auto& l : lanes) {
    int rows = pack_rows(l.spans, scale);
    double h = rows * row_h + 8;
    if (shade)
      body += "<rect class=\"lane-bg\" x=\"0\" y=\"" + num(y) + "\" width=\"" + num(scale.limit) + "\" height=\"" +
              num(h) + "\"/>";
    shade = !shade;
    body += "<text class=\"lane-name\" x=\"8\" y=\"" + num(y + 18) + "\">" + html_escape(l.name) + "</text>";
    if (l.spans.empty())
      body += "<text class=\"tick\" x=\"" + num(gutter) + "\" y=\"" + num(y + 18) + "\">none</text>";
    for (const auto& s : l.spans) {
      bar_place p = place_bar(s, scale);
      double top = y + 4 + s.row * row_h;
      std::string tip = s.label + (s.detail.empty() ? "" : "\n" + clip_chars(s.detail, 600));
      body += "<g class=\"bar k-" + std::string(l.kind) + " o-" + s.outcome + "\" data-row=\"" +
              std::to_string(index[&s]) + "\" tabindex=\"0\"><title>" + html_escape(tip) + "</title>";
      body += "<rect x=\"" + num(p.x0) + "\" y=\"" + num(top) + "\" width=\"" + num(p.x1 - p.x0) + "\" height=\"" +
              num(bar_h) + "\" rx=\"2\"/>";
      body += "<text" + std::string(p.inside ? " class=\"in\"" : "") + (p.text_end ? " text-anchor=\"end\"" : "") +
              " x=\"" + num(p.text_x) + "\" y=\"" + num(top + 11) + "\">" + html_escape(s.label) + "</text></g>";
    }
    y += h;
  }

  // Deltas per second, counted in round bins (finer than a second on short
  // runs, wider on long ones) and drawn as rates.
  delta_bins bins = bin_deltas(d.delta_times, d.t0, d.t0 + duration);
  int64_t peak = 0;
  for (auto c : bins.counts)
    peak = std::max(peak, c);
  body += "<text class=\"lane-name\" x=\"8\" y=\"" + num(y + 18) + "\">deltas / s</text>";
  body += "<text class=\"tick\" x=\"8\" y=\"" + num(y + 34) + "\">peak " + rate_text(peak, bins.width) +
          "/s</text><text class=\"tick\" x=\"8\" y=\"" + num(y + 48) + "\">bins of " +
          html_escape(short_duration(bins.width)) + "</text>";
  const double base = y + chart_h - 6;
  for (size_t i = 0; i < bins.counts.size(); ++i) {
    if (bins.counts[i] == 0)
      continue;
    double from = d.t0 + static_cast<double>(i) * bins.width;
    double x0 = scale.x(from), x1 = scale.x(std::min(from + bins.width, d.t0 + duration));
    double w = std::max(1.0, x1 - x0 - (x1 - x0 > 4 ? 1 : 0));
    double h = std::max(1.0, (chart_h - 14) * static_cast<double>(bins.counts[i]) / static_cast<double>(peak));
    body += "<rect class=\"rate\" x=\"" + num(x0) + "\" y=\"" + num(base - h) + "\" width=\"" + num(w) +
            "\" height=\"" + num(h) + "\"><title>" + html_escape(offset_text(from - d.t0)) + ": " +
            std::to_string(bins.counts[i]) + " deltas (" + rate_text(bins.counts[i], bins.width) +
            "/s)</title></rect>";
  }
  y += chart_h;

  // Axis and grid under everything, daemon restarts over it.
  std::string axis;
  for (double t : axis_ticks(duration)) {
    double x = scale.x(d.t0 + t);
    axis += "<line class=\"grid\" x1=\"" + num(x) + "\" y1=\"" + num(axis_h - 6) + "\" x2=\"" + num(x) + "\" y2=\"" +
            num(y) + "\"/><text class=\"tick\" text-anchor=\"middle\" x=\"" + num(x) + "\" y=\"14\">" +
            html_escape(offset_text(t)) + "</text>";
  }
  for (const auto& [at, what] : d.marks) {
    double x = scale.x(at);
    body += "<line class=\"mark\" x1=\"" + num(x) + "\" y1=\"" + num(axis_h - 6) + "\" x2=\"" + num(x) + "\" y2=\"" +
            num(y) + "\"><title>" + html_escape(offset_text(at - d.t0) + " " + what) + "</title></line>";
  }

  const run_row& run = d.run;
  bool running = !run.ended_at || run.status == "running";
  std::string status = running ? "running (the log so far)" : run.status;
  std::string out;
  out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
         "script-src 'unsafe-inline'\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += "<title>hermes-bridge run " + html_escape(run.run_id) + "</title>\n<style>" + style + "</style>\n</head>\n";
  out += "<body>\n<header>\n<h1>Run timeline</h1>\n<dl class=\"meta\">\n";
  auto meta = [&](const std::string& key, const std::string& value_html) {
    out += "<dt>" + html_escape(key) + "</dt><dd>" + value_html + "</dd>\n";
  };
  meta("run", "<code id=\"run-id\">" + html_escape(run.run_id) + "</code>");
  meta("session", "<code id=\"session-id\">" + html_escape(run.session_id) + "</code>");
  meta("status", "<span id=\"status\" class=\"status-" + html_escape(running ? "running" : run.status) + "\">" +
                   html_escape(status) + "</span>");
  meta("started", html_escape(format_local_time(run.started_at)));
  meta(running ? "so far" : "duration", "<span id=\"duration\">" + html_escape(short_duration(duration)) + "</span>");
  meta("contents", html_escape(std::to_string(d.delta_times.size()) + " deltas in " +
                               std::to_string(d.streams.size()) + " streaming periods, " +
                               std::to_string(d.tools.size()) + " tool calls, " + std::to_string(d.approvals.size()) +
                               " approvals, " + std::to_string(d.compressions.size()) + " compressions, " +
                               std::to_string(d.events) + " events"));
  out += "</dl>\n";
  if (run.error)
    out += "<p class=\"error\">error: " + html_escape(*run.error) + "</p>\n";
  out += "</header>\n<div class=\"legend\"><span><i style=\"background:var(--stream)\"></i>model streaming</span>"
         "<span><i style=\"background:var(--tool)\"></i>tool call</span>"
         "<span><i style=\"background:var(--ok)\"></i>approval granted</span>"
         "<span><i style=\"background:var(--deny)\"></i>approval denied</span>"
         "<span><i style=\"background:var(--compress)\"></i>compression</span>"
         "<span><i style=\"background:var(--failed)\"></i>failed / daemon restart</span>"
         "<span><i style=\"background:var(--open)\"></i>no end in the log</span></div>\n";
  out += "<svg class=\"timeline\" role=\"img\" aria-label=\"run timeline\" viewBox=\"0 0 " + num(scale.limit) + " " +
         num(y + 4) + "\" width=\"" + num(scale.limit) + "\" height=\"" + num(y + 4) + "\">\n" + axis + "\n" + body +
         "\n</svg>\n<p id=\"js-state\"></p>\n";

  out += "<table>\n<thead><tr><th>at</th><th>lane</th><th>what</th><th>details</th></tr></thead>\n<tbody>\n";
  for (size_t i = 0; i < all.size(); ++i) {
    const timeline_span& s = *all[i].span;
    out += "<tr id=\"row-" + std::to_string(i) + "\"><td class=\"mono\">" +
           html_escape(offset_text(s.start - d.t0)) + "</td><td>" + html_escape(all[i].lane) + "</td><td>" +
           html_escape(s.label) + "</td><td class=\"detail\">" + html_escape(s.detail) + "</td></tr>\n";
  }
  if (all.empty())
    out += "<tr><td colspan=\"4\">nothing on the timeline: the run has no deltas, tool calls, approvals or "
           "compressions</td></tr>\n";
  out += "</tbody>\n</table>\n<script>" + std::string(script) + "</script>\n</body>\n</html>\n";
  return out;
}

} // namespace hb::app
