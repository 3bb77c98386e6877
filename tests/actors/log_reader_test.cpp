// The log readers: answers from committed rows only, cursors and bounded
// reads, results and histories, and finished runs served from memory.
#define CAF_SUITE log_reader
#include "tests/actors/actor_fixture.hpp"

#include "actors/errors.hpp"

#include <nlohmann/json.hpp>

using namespace hb::actors;
using nlohmann::json;

namespace {

struct reader_fixture : hb::test::log_fixture {
  caf::actor reader = spawn_reader();

  // A run written straight into the log (no writer actor): `deltas`
  // committed, and finished when `status` is not "running".
  void write_run(const std::string& run_id, const std::vector<std::string>& deltas,
                 const std::string& status = "running") {
    log->open_run(run_id, "s1", 100.0);
    double at = 101.0;
    for (const auto& d : deltas)
      log->append_delta(run_id, d, at++);
    if (status != "running")
      log->close_run(run_id, status, std::string("{\"final_response\": \"ok\"}"), std::nullopt, at);
    log->commit();
  }

  output_reply output(const std::string& run_id, int64_t cursor = 0, int64_t max_bytes = 0,
                      bool include_output = true, int64_t event_cursor = 0) {
    auto reply = ask<output_reply>(reader, output_query{run_id, cursor, event_cursor, include_output, max_bytes});
    CAF_REQUIRE(reply);
    return *reply;
  }

  static std::string field(const std::string& line, const char* key) {
    auto doc = json::parse(line);
    return doc.contains(key) && doc[key].is_string() ? doc[key].get<std::string>() : std::string();
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(log_reader_tests, reader_fixture)

CAF_TEST(output answers from committed rows only) {
  write_run("r1", {"Hel", "lo"});
  log->append_delta("r1", " world", 110.0); // not committed
  auto reply = output("r1");
  CAF_CHECK_EQUAL(field(reply.line, "output"), "Hello");
  CAF_CHECK_EQUAL(reply.cursor, 2);
  CAF_CHECK(!reply.done);
  log->commit();
  reply = output("r1");
  CAF_CHECK_EQUAL(field(reply.line, "output"), "Hello world");
  CAF_CHECK_EQUAL(reply.cursor, 3);
}

CAF_TEST(output honours the cursor and says whether anything is new) {
  write_run("r1", {"a", "b", "c"});
  auto reply = output("r1", 2, 0, false);
  CAF_CHECK_EQUAL(field(reply.line, "delta"), "c");
  CAF_CHECK(reply.news);
  CAF_CHECK_EQUAL(reply.cursor, 3);
  reply = output("r1", 2, 0, true); // the whole output, and the delta since the cursor
  CAF_CHECK_EQUAL(field(reply.line, "output"), "abc");
  CAF_CHECK_EQUAL(field(reply.line, "delta"), "c");
  reply = output("r1", 3, 0, false, 2); // the last delta's event is new
  CAF_CHECK(reply.news);
  reply = output("r1", 3, 0, false, 3); // each delta is an event as well
  CAF_CHECK_EQUAL(field(reply.line, "delta"), "");
  CAF_CHECK(!reply.news);
  CAF_CHECK(!reply.done);
}

CAF_TEST(a bounded read stops early and says more is there) {
  write_run("r1", {std::string(100, 'a'), std::string(100, 'b'), std::string(100, 'c')}, "complete");
  auto first = output("r1", 0, 150, false);
  CAF_CHECK(first.more);
  CAF_CHECK(!first.done); // the run as it stood at the cut
  CAF_CHECK_LESS(first.cursor, 3);
  auto rest = output("r1", first.cursor, 0, false);
  CAF_CHECK(!rest.more);
  CAF_CHECK(rest.done);
  CAF_CHECK_EQUAL(rest.cursor, 3);
  CAF_CHECK(field(first.line, "delta") + field(rest.line, "delta") ==
            std::string(100, 'a') + std::string(100, 'b') + std::string(100, 'c'));
}

CAF_TEST(result answers a finished run whole) {
  write_run("r1", {"Hel", "lo"}, "complete");
  auto line = ask<std::string>(reader, result_query{"r1"});
  CAF_REQUIRE(line);
  auto doc = json::parse(*line);
  CAF_CHECK_EQUAL(doc.value("status", ""), "complete");
  CAF_CHECK_EQUAL(doc.value("output", ""), "Hello");
  CAF_CHECK_EQUAL(doc["result"].value("final_response", ""), "ok");
  CAF_CHECK_EQUAL(doc["deltas"].size(), 2u);
}

CAF_TEST(an unknown run is answered with a KeyError) {
  auto reply = ask<output_reply>(reader, output_query{"nope", 0, 0, true, 0});
  CAF_REQUIRE(!reply);
  CAF_CHECK_EQUAL(error_line(reply.error()),
                  R"({"ok": false, "error": "'unknown run: nope'", "error_type": "KeyError"})");
  auto line = ask<std::string>(reader, result_query{"nope"});
  CAF_REQUIRE(!line);
  CAF_CHECK_EQUAL(error_line(line.error()), error_line(reply.error()));
}

CAF_TEST(a pruned run is answered with RunPruned) {
  write_run("r1", {"a"}, "complete");
  log->database().exec("UPDATE runs SET pruned_at = 500 WHERE run_id = 'r1'");
  auto reply = ask<output_reply>(reader, output_query{"r1", 0, 0, true, 0});
  CAF_REQUIRE(!reply);
  auto line = json::parse(error_line(reply.error()));
  CAF_CHECK(line["error_type"] == "RunPruned");
  CAF_CHECK(line["error"].get<std::string>().find("run r1 was pruned") == 0);
}

CAF_TEST(history answers the stored history of a session) {
  hb::storage::session_row row;
  row.session_id = "s1";
  row.history = R"([{"role": "user", "content": "hi"}])";
  log->put_session(row);
  log->commit();
  auto history = ask<std::string>(reader, history_query{"s1"});
  CAF_REQUIRE(history);
  CAF_CHECK_EQUAL(*history, row.history);
  auto none = ask<std::string>(reader, history_query{"s2"});
  CAF_REQUIRE(none);
  CAF_CHECK_EQUAL(*none, "[]");
}

CAF_TEST(a finished run read twice is kept and then served from memory) {
  write_run("r1", {"Hel", "lo"}, "complete");
  output("r1");
  CAF_CHECK(!finished->find("r1")); // most finished runs are read once
  output("r1");
  CAF_REQUIRE(finished->find("r1"));
  log->database().exec("DELETE FROM deltas"); // the log no longer has it: memory does
  auto reply = output("r1");
  CAF_CHECK_EQUAL(field(reply.line, "output"), "Hello");
  CAF_CHECK_EQUAL(reply.cursor, 2);
  CAF_CHECK(reply.done);
}

CAF_TEST(a running run is never kept in memory) {
  write_run("r1", {"a"});
  output("r1");
  output("r1");
  CAF_CHECK(!finished->find("r1"));
}

CAF_TEST(a reader that could not open the log opens it at a later read) {
  std::string later = db.dir.file("later.db");
  auto late_reader = keep(spawn_log_reader(sys, later, finished, spawn_mode::scheduled));
  auto reply = ask<output_reply>(late_reader, output_query{"r1", 0, 0, true, 0});
  CAF_REQUIRE(!reply);
  CAF_CHECK(error_line(reply.error()).find("event log read failed") != std::string::npos);
  CAF_CHECK(error_line(reply.error()).find("RuntimeError") != std::string::npos);
  hb::storage::log_writer other(later);
  other.open_run("r1", "s1", 100.0);
  other.append_delta("r1", "found", 101.0);
  other.commit();
  reply = ask<output_reply>(late_reader, output_query{"r1", 0, 0, true, 0});
  CAF_REQUIRE(reply);
  CAF_CHECK_EQUAL(field(reply->line, "output"), "found");
}

CAF_TEST_FIXTURE_SCOPE_END()
