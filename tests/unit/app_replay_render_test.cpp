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

TEST_CASE("escape codes in a run are shown, never sent to the terminal", "[app][visible]") {
  for (bool color : {false, true}) {
    replay_renderer r(render_options{color, false});
    run_row run = sample_run();
    run.session_id = "s\x1b[2J";
    run.error = "boom\r\x1b[2Kfine";
    std::string out = r.header(run);
    out += r.event(R"({"event": "stream.delta", "delta": "red \u001b[31mtext\u009b"})", 1000.1);
    out += r.event(R"({"event": "tool.started", "tool_call_id": "c1", "tool_name": "term\u0007", "args": {"k\u001b": "v\r"}})",
                   1000.2);
    out += r.event(R"({"event": "tool.completed", "tool_call_id": "c1", "tool_name": "t", "result": "\u001b]0;owned\u0007"})",
                   1000.3);
    out += r.event(R"({"event": "approval.requested", "approval_id": "a1", "command": "rm -rf ~/x\r\u001b[2Kls -la", "description": "\u001b[8mhidden"})",
                   1000.4);
    out += r.event(R"({"event": "brand.new", "note": "\u009b2J"})", 1000.5);
    out += r.event("not json \x1b[2J", 1000.6);
    out += r.footer(run);
    INFO(out);
    CHECK(out.find("(session s\\x1b[2J)") != std::string::npos);
    CHECK(out.find("red \\x1b[31mtext\\u009b") != std::string::npos);
    CHECK(out.find("[tool term\\x07] c1") != std::string::npos);
    CHECK(out.find("k\\x1b: v\\x0d") != std::string::npos);
    CHECK(out.find("\\x1b]0;owned\\x07") != std::string::npos);
    CHECK(out.find("[approval requested] rm -rf ~/x\\x0d\\x1b[2Kls -la") != std::string::npos);
    CHECK(out.find("description: \\x1b[8mhidden") != std::string::npos);
    CHECK(out.find("\\u009b2J") != std::string::npos);
    CHECK(out.find("[unreadable event] not json \\x1b[2J") != std::string::npos);
    CHECK(out.find("error: boom\\x0d\\x1b[2Kfine") != std::string::npos);
    CHECK(out.find('\r') == std::string::npos);
    CHECK(out.find("\xc2\x9b") == std::string::npos);
    // Our own styles are the only escapes left.
    std::string without_styles = out;
    for (const char* sgr : {"\x1b[0m", "\x1b[1m", "\x1b[2m", "\x1b[1;36m", "\x1b[1;33m", "\x1b[1;32m", "\x1b[1;31m"})
      for (size_t at; (at = without_styles.find(sgr)) != std::string::npos;)
        without_styles.erase(at, std::string(sgr).size());
    CHECK(without_styles.find('\x1b') == std::string::npos);
  }
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
