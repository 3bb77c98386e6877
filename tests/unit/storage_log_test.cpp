#include "storage/log_file.hpp"
#include "storage/log_reader.hpp"
#include "storage/log_writer.hpp"
#include "storage/run_events.hpp"

#include <SQLiteCpp/SQLiteCpp.h>
#include <catch2/catch.hpp>

#include "temp_dir.hpp"

#include <unistd.h>

#include <string>

using temp_db = hb::test::temp_log;

namespace {

// A delta's event, as readers build it.
std::string sd(const std::string& text) {
  std::string body;
  hb::storage::stream_delta_body(body, text);
  return body;
}

} // namespace

TEST_CASE("appends become visible to readers only when committed", "[storage]") {
  temp_db db;
  hb::storage::log_writer w(db.path);
  hb::storage::log_reader r(db.path);
  w.open_run("r1", "s1", 100.0);
  w.commit();
  REQUIRE(w.append_delta("r1", "hel", 100.1));
  REQUIRE(w.append_event("r1", R"({"event": "x"})", 100.2));
  auto before = r.read_run("r1", 0, 0);
  REQUIRE(before);
  CHECK(before->deltas.empty());
  CHECK(before->event_count == 0);
  CHECK(w.commit() == 2);
  auto after = r.read_run("r1", 0, 0);
  REQUIRE(after);
  CHECK(after->deltas == std::vector<std::string>{"hel"});
  // A delta is an event as well, in its place among the others.
  CHECK(after->events == std::vector<std::string>{R"({"event": "stream.delta", "delta": "hel"})", R"({"event": "x"})"});
  CHECK(after->status == "running");
}

TEST_CASE("a run's terminal status commits with its last events", "[storage]") {
  temp_db db;
  hb::storage::log_writer w(db.path);
  hb::storage::log_reader r(db.path);
  w.open_run("r1", "s1", 1.0);
  w.append_delta("r1", "a", 1.0);
  w.append_delta("r1", "b", 1.1);
  w.close_run("r1", "complete", std::string(R"({"final_response": "ab"})"), std::nullopt, 2.0);
  w.commit();
  auto run = r.read_run("r1", 0, 0);
  REQUIRE(run);
  CHECK(run->status == "complete");
  CHECK(run->deltas.size() == 2);
  CHECK(*run->result == R"({"final_response": "ab"})");
  CHECK(*run->ended_at == 2.0);
  CHECK_FALSE(run->error);
  // The run is closed: late callbacks are refused, not appended.
  CHECK_FALSE(w.append_delta("r1", "late", 3.0));
}

TEST_CASE("event cursors read from the middle and clamp past the end", "[storage]") {
  temp_db db;
  hb::storage::log_writer w(db.path);
  hb::storage::log_reader r(db.path);
  w.open_run("r1", "s1", 1.0);
  for (int i = 0; i < 5; ++i)
    w.append_event("r1", "{\"i\": " + std::to_string(i) + "}", 1.0);
  w.commit();
  auto mid = r.read_run("r1", 0, 3);
  CHECK(mid->events == std::vector<std::string>{"{\"i\": 3}", "{\"i\": 4}"});
  CHECK(mid->event_count == 5);
  auto past = r.read_run("r1", 0, 99);
  CHECK(past->events.empty());
  CHECK(past->event_count == 5);
  CHECK(past->event_from == 5);
  CHECK_FALSE(r.read_run("nope", 0, 0));
}

TEST_CASE("deltas read from a cursor come with the run's full count", "[storage]") {
  temp_db db;
  hb::storage::log_writer w(db.path);
  hb::storage::log_reader r(db.path);
  w.open_run("r1", "s1", 1.0);
  for (int i = 0; i < 4; ++i)
    w.append_delta("r1", std::to_string(i), 1.0);
  w.commit();
  auto tail = r.read_run("r1", 2, 0);
  CHECK(tail->deltas == std::vector<std::string>{"2", "3"});
  CHECK(tail->delta_from == 2);
  CHECK(tail->delta_count == 4);
  CHECK(r.read_run("r1", 9, 0)->deltas.empty());
}

TEST_CASE("a bounded read stops at a moment of the run, deltas and events alike", "[storage]") {
  temp_db db;
  hb::storage::log_writer w(db.path);
  hb::storage::log_reader r(db.path);
  w.open_run("r1", "s1", 1.0);
  // Four 10-byte deltas at t=2..5, an event between each (t=2.5, 3.5, 4.5).
  for (int i = 0; i < 4; ++i) {
    w.append_delta("r1", std::string(10, static_cast<char>('a' + i)), 2.0 + i);
    if (i < 3)
      w.append_event("r1", "{\"after\": " + std::to_string(i) + "}", 2.5 + i);
  }
  w.close_run("r1", "complete", std::string(R"({"final_response": "all"})"), std::nullopt, 9.0);
  w.commit();

  // Events: sd(a) t=2, after 0 t=2.5, sd(b) t=3, after 1, sd(c), after 2, sd(d).
  // 60 bytes: all four deltas fit (40 bytes), the events stop after
  // "after 0" (48 + 12 bytes, t=2.5), so only the delta logged before that
  // (t=2) comes with them.
  auto first = r.read_run("r1", 0, 0, 60);
  REQUIRE(first);
  CHECK(first->cut);
  CHECK(first->deltas == std::vector<std::string>{std::string(10, 'a')});
  CHECK(first->events == std::vector<std::string>{sd(std::string(10, 'a')), "{\"after\": 0}"});
  CHECK(first->delta_count == 1);
  CHECK(first->event_count == 2);
  // As the run stood then: still running, no result yet.
  CHECK(first->status == "running");
  CHECK_FALSE(first->result);
  CHECK_FALSE(first->ended_at);

  // From there on, with room for everything: the rest and the outcome.
  auto rest = r.read_run("r1", first->delta_count, first->event_count, 1000);
  REQUIRE(rest);
  CHECK_FALSE(rest->cut);
  CHECK(rest->deltas.size() == 3);
  CHECK(rest->events.size() == 5);
  CHECK(rest->events.front() == sd(std::string(10, 'b')));
  CHECK(rest->delta_count == 4);
  CHECK(rest->event_count == 7);
  CHECK(rest->status == "complete");
  CHECK(*rest->result == R"({"final_response": "all"})");

  // A budget smaller than one row still moves on by a row each time, and
  // walking the run in the smallest steps yields every row once, in order.
  int64_t d = 0, e = 0, reads = 0;
  std::vector<std::string> deltas, events;
  for (;;) {
    auto step = r.read_run("r1", d, e, 1);
    REQUIRE(step);
    REQUIRE(++reads < 20);
    deltas.insert(deltas.end(), step->deltas.begin(), step->deltas.end());
    events.insert(events.end(), step->events.begin(), step->events.end());
    REQUIRE((step->delta_count > d || step->event_count > e || !step->cut));
    d = step->delta_count;
    e = step->event_count;
    if (!step->cut)
      break;
  }
  CHECK(deltas.size() == 4);
  CHECK(events == std::vector<std::string>{sd(std::string(10, 'a')), "{\"after\": 0}", sd(std::string(10, 'b')),
                                           "{\"after\": 1}", sd(std::string(10, 'c')), "{\"after\": 2}",
                                           sd(std::string(10, 'd'))});
  CHECK(deltas[3] == std::string(10, 'd'));
}

TEST_CASE("a bounded read never lets an event of the same instant overtake text", "[storage]") {
  temp_db db;
  hb::storage::log_writer w(db.path);
  hb::storage::log_reader r(db.path);
  w.open_run("r1", "s1", 1.0);
  w.append_delta("r1", "aaaa", 2.0);
  w.append_delta("r1", "bbbb", 2.0);
  w.append_event("r1", "{\"after\": \"b\"}", 2.0); // logged after "bbbb", same timestamp
  w.commit();
  // Reads with room for one row: "after b" never comes before the text
  // streamed ahead of it.
  int64_t d = 0, e = 0;
  std::vector<std::string> deltas;
  for (int reads = 0;; ++reads) {
    REQUIRE(reads < 10);
    auto step = r.read_run("r1", d, e, 4);
    REQUIRE(step);
    deltas.insert(deltas.end(), step->deltas.begin(), step->deltas.end());
    for (const auto& event : step->events)
      if (event == "{\"after\": \"b\"}")
        CHECK(deltas == std::vector<std::string>{"aaaa", "bbbb"});
    d = step->delta_count;
    e = step->event_count;
    if (!step->cut)
      break;
  }
  CHECK(deltas == std::vector<std::string>{"aaaa", "bbbb"});
  CHECK(e == 3);
}

TEST_CASE("rolled back appends never reach readers", "[storage]") {
  temp_db db;
  hb::storage::log_writer w(db.path);
  hb::storage::log_reader r(db.path);
  w.open_run("r1", "s1", 1.0);
  w.commit();
  w.append_delta("r1", "gone", 1.0);
  w.rollback();
  CHECK(r.read_run("r1", 0, 0)->deltas.empty());
}

TEST_CASE("sessions are upserted", "[storage]") {
  temp_db db;
  hb::storage::log_writer w(db.path);
  w.put_session({"s1", 1.0, 2.0, R"({"profile": "default"})", "[]", true, 0, false});
  w.put_session({"s1", 1.0, 3.0, R"({"profile": "default"})", R"([{"role": "user"}])", true, 1, false});
  // A dormant session that has not loaded its history must not overwrite it.
  w.put_session({"s1", 1.0, 4.0, R"({"profile": "default"})", "[]", false, 1, false});
  w.commit();
  SQLite::Database check(db.path, SQLite::OPEN_READONLY);
  SQLite::Statement q(check, "SELECT last_used_at, message_count, history FROM sessions WHERE session_id='s1'");
  REQUIRE(q.executeStep());
  CHECK(q.getColumn(0).getDouble() == 4.0);
  CHECK(q.getColumn(1).getInt() == 1);
  CHECK(q.getColumn(2).getString() == R"([{"role": "user"}])");
}

TEST_CASE("a log from a newer hermes-bridge is refused with a clear message", "[storage]") {
  temp_db db;
  { hb::storage::log_writer w(db.path); }
  {
    SQLite::Database raw(db.path, SQLite::OPEN_READWRITE);
    raw.exec("UPDATE meta SET value='999' WHERE key='schema_version'");
  }
  try {
    hb::storage::log_writer again(db.path);
    FAIL("a newer schema was accepted");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find("schema version 999") != std::string::npos);
  }
}

TEST_CASE("the writer's page cache is capped below SQLite's default", "[storage]") {
  temp_db db;
  hb::storage::log_writer w(db.path);
  int64_t cache = w.database().execAndGet("PRAGMA cache_size").getInt64();
  CHECK(cache == -hb::storage::page_cache_kib); // negative: KiB, not pages
  CHECK(hb::storage::page_cache_kib < 2000);    // below SQLite's 2 MiB default
}
