#include "storage/export_format.hpp"

#include <catch2/catch.hpp>

#include <sstream>

using namespace hb::storage;

namespace {

std::vector<std::string> sample_lines() {
  export_header h;
  h.schema_version = 2;
  h.exported_at = 1718008215.123456;
  h.source = "/tmp/events.db";
  h.sessions = 1;
  h.runs = 1;
  session_row s;
  s.session_id = "s1";
  s.created_at = 1718000000.5;
  s.last_used_at = 1718000100.25;
  s.config = R"({"profile": "", "model": "m"})";
  s.history = R"([{"role": "user", "content": "hi"}])";
  s.message_count = 1;
  run_row r;
  r.run_id = "r1";
  r.session_id = "s1";
  r.status = "complete";
  r.started_at = 1718000000.1;
  r.ended_at = 1718000001.0;
  r.result = R"({"final_response": "héllo\n", "score": null})";
  std::vector<std::string> lines{encode_header(h), encode_session(s), encode_run(r)};
  lines.push_back(encode_delta("r1", {0, 1718000000.3, "héllo\n"}));
  lines.push_back(encode_event("r1", {0, 1718000000.3, R"({"event": "stream.delta", "delta": "héllo\n"})"}));
  lines.push_back(encode_event("r1", {1, 1718000000.7, R"({"event": "step", "step_info": null})"}));
  lines.push_back(encode_end({1, 1, 1, 2}));
  return lines;
}

export_bundle decode(const std::vector<std::string>& lines) {
  export_decoder d;
  for (const auto& l : lines)
    d.line(l);
  return d.finish();
}

std::string damage(const std::vector<std::string>& lines) {
  try {
    decode(lines);
  } catch (const export_damaged& e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST_CASE("export lines look like the documented format", "[app]") {
  auto lines = sample_lines();
  CHECK(lines[0] == R"({"format": "hermes-bridge-export", "version": 1, "type": "header", "schema_version": 2, )"
                    R"("exported_at": 1718008215.123456, "source": "/tmp/events.db", "sessions": 1, "runs": 1})");
  CHECK(lines[2] == R"({"type": "run", "run_id": "r1", "session_id": "s1", "status": "complete", )"
                    R"("started_at": 1718000000.1, "ended_at": 1718000001.0, )"
                    R"("result": "{\"final_response\": \"héllo\\n\", \"score\": null}", "error": null, "pruned_at": null})");
  CHECK(lines[3] == R"({"type": "delta", "run_id": "r1", "seq": 0, "at": 1718000000.3, "text": "héllo\n"})");
}

TEST_CASE("an export decodes to exactly what was encoded", "[app]") {
  auto b = decode(sample_lines());
  CHECK(b.header.exported_at == 1718008215.123456);
  REQUIRE(b.sessions.size() == 1);
  CHECK(b.sessions[0].config == R"({"profile": "", "model": "m"})");
  CHECK(b.sessions[0].history == R"([{"role": "user", "content": "hi"}])");
  CHECK(b.sessions[0].last_used_at == 1718000100.25);
  REQUIRE(b.runs.size() == 1);
  const auto& r = b.runs[0];
  CHECK(r.row.started_at == 1718000000.1);
  CHECK(r.row.ended_at == 1718000001.0);
  CHECK(*r.row.result == R"({"final_response": "héllo\n", "score": null})");
  CHECK_FALSE(r.row.error);
  CHECK_FALSE(r.row.pruned_at);
  REQUIRE(r.deltas.size() == 1);
  CHECK(r.deltas[0].text == "héllo\n");
  CHECK(r.deltas[0].at == 1718000000.3);
  REQUIRE(r.events.size() == 2);
  CHECK(r.events[1].text == R"({"event": "step", "step_info": null})");
  CHECK(b.counts.events == 2);
}

TEST_CASE("times survive the round trip bit for bit", "[app]") {
  for (double t : {1718000000.123456789, 0.1, 1e-7, 1718000000.0, 1.7976931348623157e308}) {
    std::string line = encode_delta("r", {0, t, "x"});
    export_decoder d;
    d.line(encode_header({1, 2, 0, "", 0, 1}));
    d.line(encode_run([] {
      run_row r;
      r.run_id = "r";
      r.status = "running";
      return r;
    }()));
    d.line(line);
    d.line(encode_event("r", {0, t, R"({"event": "stream.delta", "delta": "x"})"})); // each delta is an event too
    d.line(encode_end({0, 1, 1, 1}));
    CHECK(d.finish().runs[0].deltas[0].at == t);
  }
}

TEST_CASE("damaged exports are refused with the line", "[app]") {
  auto good = sample_lines();
  CHECK(damage(good).empty());

  CHECK(damage({}).find("empty file") != std::string::npos);
  CHECK(damage({R"({"hello": 1})"}).find("line 1: not a hermes-bridge export") == 0);
  auto v2 = good;
  v2[0].replace(v2[0].find("\"version\": 1"), 12, "\"version\": 9");
  CHECK(damage(v2).find("line 1: export format version 9") == 0);

  auto truncated = good;
  truncated.pop_back();
  CHECK(damage(truncated).find("truncated") != std::string::npos);

  auto cut = good;
  cut[4] = cut[4].substr(0, 20);
  CHECK(damage(cut).find("line 5: not valid JSON") == 0);

  auto gap = good;
  gap.erase(gap.begin() + 4); // event seq 0 missing
  CHECK(damage(gap).find("line 5: event seq 1 of run r1 where seq 0 was due") == 0);

  auto orphan = good;
  orphan.erase(orphan.begin() + 2); // the run line
  CHECK(damage(orphan).find("which has no run line before it") != std::string::npos);

  auto twice = good;
  twice.insert(twice.begin() + 3, good[2]);
  CHECK(damage(twice).find("line 4: run r1 appears twice") == 0);

  auto counts = good;
  counts.back() = encode_end({1, 1, 1, 3});
  CHECK(damage(counts).find("the end line counts") == 0);

  auto after = good;
  after.push_back(good[3]);
  CHECK(damage(after).find("line 8: text after the end line") == 0);

  auto badbody = good;
  badbody[5] = encode_event("r1", {1, 1.0, "{not json"});
  CHECK(damage(badbody).find("line 6: field \"body\" must be a JSON object's text") == 0);

  auto missing = good;
  missing[2].replace(missing[2].find("\"started_at\""), 12, "\"begun_at\"");
  CHECK(damage(missing).find("line 3: field \"started_at\" is missing") == 0);

  auto open = good; // a finished run must say when it ended
  open[2].replace(open[2].find("\"ended_at\": 1718000001.0"), 24, "\"ended_at\": null");
  CHECK(damage(open).find("has no ended_at") != std::string::npos);

  auto unmatched = good; // the delta without its event
  unmatched.erase(unmatched.begin() + 4);
  unmatched[4] = encode_event("r1", {0, 1718000000.7, R"({"event": "step", "step_info": null})"});
  unmatched.back() = encode_end({1, 1, 1, 1});
  CHECK(damage(unmatched).find("run r1 has 1 deltas but 0 stream.delta events") != std::string::npos);

  auto blank = good; // blank lines and CRLF endings are harmless
  blank.insert(blank.begin() + 1, "");
  blank[2] += "\r";
  CHECK(damage(blank).empty());
}

TEST_CASE("a run's user message travels with it; files without one still read", "[app]") {
  auto lines = sample_lines();
  CHECK(lines[2].find("user_message") == std::string::npos); // none: the line is as before
  CHECK_FALSE(decode(lines).runs[0].row.user_message);
  run_row r;
  r.run_id = "r1";
  r.session_id = "s1";
  r.status = "running";
  r.started_at = 1.0;
  r.user_message = R"([{"type": "text", "text": "look"}])";
  lines[2] = encode_run(r);
  CHECK(lines[2].find(R"("user_message": "[{\"type\": \"text\", \"text\": \"look\"}]")") != std::string::npos);
  CHECK(*decode(lines).runs[0].row.user_message == *r.user_message);
}

TEST_CASE("a run status the log does not know is refused with its line", "[app]") {
  auto lines = sample_lines();
  lines[2].replace(lines[2].find("\"status\": \"complete\""), 20, "\"status\": \"finished\"");
  CHECK(damage(lines).find("line 3: run r1 has the unknown status \"finished\"") == 0);
  for (const char* known : {"complete", "interrupted", "error"}) {
    auto ok = sample_lines();
    ok[2].replace(ok[2].find("\"complete\""), 10, std::string("\"") + known + "\"");
    CHECK(damage(ok).empty());
  }
}

namespace {

// What a streaming reader of an export sees, in order.
struct recording_sink : export_sink {
  std::vector<std::string> seen;
  void header(const export_header& h) override { seen.push_back("header " + h.source); }
  void session(session_row&& s, size_t line) override {
    seen.push_back("session " + s.session_id + " @" + std::to_string(line));
  }
  void run(run_row&& r, size_t line) override {
    seen.push_back("run " + r.run_id + " " + r.status + " @" + std::to_string(line));
  }
  void delta(const std::string& run_id, seq_row&& d, size_t) override {
    seen.push_back("delta " + run_id + " " + std::to_string(d.seq) + " " + d.text);
  }
  void event(const std::string& run_id, seq_row&& e, size_t) override {
    seen.push_back("event " + run_id + " " + std::to_string(e.seq));
  }
};

} // namespace

TEST_CASE("with a sink the decoder hands rows on and keeps none", "[app]") {
  recording_sink sink;
  export_decoder d(sink);
  for (const auto& l : sample_lines())
    d.line(l);
  auto b = d.finish();
  CHECK(sink.seen == std::vector<std::string>{"header /tmp/events.db", "session s1 @2", "run r1 complete @3",
                                              "delta r1 0 héllo\n", "event r1 0", "event r1 1"});
  CHECK(b.sessions.empty());
  CHECK(b.runs.empty());
  CHECK(b.counts.runs == 1);
  CHECK(b.counts.events == 2);

  // the same checks as when collecting: a gap is still found
  recording_sink other;
  export_decoder gap(other);
  auto lines = sample_lines();
  lines.erase(lines.begin() + 4);
  for (size_t i = 0; i < 4; ++i)
    gap.line(lines[i]);
  CHECK_THROWS_WITH(gap.line(lines[4]), Catch::StartsWith("line 5: event seq 1 of run r1 where seq 0 was due"));
}
