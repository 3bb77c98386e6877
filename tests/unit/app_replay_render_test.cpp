#include "app/replay_render.hpp"

#include <catch2/catch.hpp>

using hb::app::render_options;
using hb::app::replay_pause;
using hb::app::replay_renderer;
using hb::app::run_row;

namespace {

run_row sample_run() {
  run_row r;
  r.run_id = "0123456789abcdef0123456789abcdef";
  r.session_id = "s1";
  r.status = "complete";
  r.started_at = 1000.0;
  r.ended_at = 1002.5;
  return r;
}

} // namespace

TEST_CASE("replay shows text, tool blocks, approvals and the final status", "[app]") {
  replay_renderer r(render_options{false, false});
  std::string out = r.header(sample_run());
  CHECK(out.find("run 0123456789abcdef0123456789abcdef (session s1)") != std::string::npos);
  out.clear();
  out += r.event(R"({"event": "stream.delta", "delta": "hi "})", 1000.1);
  out += r.event(R"({"event": "stream.delta", "delta": "there"})", 1000.2);
  out += r.event(R"({"event": "turn.boundary"})", 1000.2);
  out += r.event(R"({"event": "tool.started", "tool_call_id": "c1", "tool_name": "terminal", "args": {"command": "ls"}})",
                 1000.3);
  out += r.event(R"({"event": "tool.completed", "tool_call_id": "c1", "tool_name": "terminal", "args": {"command": "ls"}, "result": "ran terminal: ls", "result_preview": "ran terminal: ls"})",
                 1000.55);
  out += r.event(R"({"event": "approval.requested", "approval_id": "a1", "command": "rm -rf /", "description": "dangerous", "choices": ["once", "session", "always", "deny"], "allow_permanent": true, "timeout_ms": 3000})",
                 1001.0);
  out += r.event(R"({"event": "approval.resolved", "approval_id": "a1", "choice": "once"})", 1001.5);
  out += r.event(R"({"event": "stream.delta", "delta": "done"})", 1002.0);
  out += r.footer(sample_run());
  CHECK(out.find("hi there\n[tool terminal] c1\n  command: ls\n") == 0);
  CHECK(out.find("[tool terminal done] after 0.25s\n  ran terminal: ls\n") != std::string::npos);
  CHECK(out.find("[approval requested] rm -rf /\n  description: dangerous\n  choices: once, session, always, "
                 "deny; times out after 3.00s\n") != std::string::npos);
  CHECK(out.find("[approval answered] once at ") != std::string::npos);
  CHECK(out.find(", 0.50s after it was asked\ndone\n== complete after 2.50s ==\n") != std::string::npos);
  CHECK(out.find('\x1b') == std::string::npos);
}

TEST_CASE("reasoning is dimmed and kept off the answer's lines", "[app]") {
  replay_renderer r(render_options{true, false});
  r.header(sample_run());
  std::string out = r.event(R"({"event": "stream.delta", "delta": "a"})", 1);
  out += r.event(R"({"event": "reasoning.delta", "text": "hmm"})", 1);
  out += r.event(R"({"event": "stream.delta", "delta": "b"})", 1);
  out += r.event(R"({"event": "reasoning.available", "text": "ab"})", 1);
  out += r.event(R"({"event": "thinking.delta", "text": "(o_o) pondering..."})", 1);
  out += r.event(R"({"event": "thinking.delta", "text": ""})", 1);
  out += r.event(R"({"event": "reasoning.delta", "text": "so"})", 1);
  CHECK(out == "a\n\x1b[2mhmm\x1b[0m\nb\n\x1b[2m(o_o) pondering...\x1b[0m\n\x1b[2mso\x1b[0m");
}

TEST_CASE("compression, recovery, errors and unknown events", "[app]") {
  replay_renderer r(render_options{false, false});
  r.header(sample_run());
  std::string out =
    r.event(R"({"event": "bridge.compression.requested", "request_id": "q", "message_count": 12, "approx_tokens": 1234, "focus_topic": "test", "messages": []})",
            1000);
  out += r.event(R"({"event": "bridge.compression.completed", "request_id": "q", "message_count": 12, "result_messages": 3, "approx_tokens": 1234, "compressed": true})",
                 1001);
  out += r.event(R"({"event": "bridge.recovered", "status": "interrupted", "reason": "restarted"})", 1002);
  out += r.event(R"({"event": "brand.new", "x": 1})", 1002);
  out += r.event("not json", 1002);
  CHECK(out == "[compression requested] 12 messages, ~1234 tokens, focus: test\n"
               "[compression completed] 12 -> 3 messages, 1.00s after the request\n"
               "[daemon restarted] run interrupted: restarted\n"
               "[brand.new] {\"x\": 1}\n"
               "[unreadable event] not json\n");
  run_row failed = sample_run();
  failed.status = "error";
  failed.error = "boom";
  CHECK(r.footer(failed) == "== error after 2.50s ==\nerror: boom\n");
  run_row live = sample_run();
  live.status = "running";
  live.ended_at.reset();
  CHECK(r.footer(live).find("still running") != std::string::npos);
}

TEST_CASE("pauses follow the log's times, scaled and capped", "[app]") {
  CHECK(replay_pause(10.0, 10.4, 1, 0) == Approx(0.4));
  CHECK(replay_pause(10.0, 10.4, 4, 0) == Approx(0.1));
  CHECK(replay_pause(10.0, 9.0, 1, 0) == 0.0);
  CHECK(replay_pause(10.0, 70.0, 1, 2.0) == Approx(2.0));
}
