// A run's events read from a log that keeps each delta's text once (schema
// version 5), and from one that kept it twice (version 4), before and after
// its migration.
#include "protocol/json_text.hpp"
#include "storage/log_file.hpp"
#include "storage/log_reader.hpp"
#include "storage/log_writer.hpp"
#include "storage/run_events.hpp"
#include "storage/schema.hpp"

#include <SQLiteCpp/SQLiteCpp.h>
#include <catch2/catch.hpp>

#include "temp_dir.hpp"

#include <string>
#include <vector>

namespace {

std::string sd(const std::string& text) {
  std::string body;
  hb::storage::stream_delta_body(body, text);
  return body;
}

struct read_event {
  int64_t seq;
  double at;
  std::string body;
  bool delta;
  bool operator==(const read_event& o) const {
    return seq == o.seq && at == o.at && body == o.body && delta == o.delta;
  }
};

std::vector<read_event> read_from(SQLite::Database& db, int64_t run_no, int64_t from) {
  hb::storage::run_events events(db);
  events.open(run_no, from);
  std::vector<read_event> out;
  while (events.next())
    out.push_back({events.seq(), events.at(), events.body(), events.delta()});
  events.close();
  return out;
}

// A delta, a step, two deltas, a tool event, a delta with a quote and a
// newline: the shape of a turn, event seqs 0 to 5.
void write_turn(hb::storage::log_writer& w) {
  w.open_run("r1", "s1", 1.0);
  w.append_delta("r1", "Hel", 1.1);
  w.append_event("r1", R"({"event": "step"})", 1.2);
  w.append_delta("r1", "lo", 1.3);
  w.append_delta("r1", " wor", 1.4);
  w.append_event("r1", R"({"event": "tool.started", "tool_name": "x"})", 1.5);
  w.append_delta("r1", "ld \"\n", 1.6);
  w.commit();
}

const std::vector<read_event> turn = {
  {0, 1.1, sd("Hel"), true},
  {1, 1.2, R"({"event": "step"})", false},
  {2, 1.3, sd("lo"), true},
  {3, 1.4, sd(" wor"), true},
  {4, 1.5, R"({"event": "tool.started", "tool_name": "x"})", false},
  {5, 1.6, R"({"event": "stream.delta", "delta": "ld \"\n"})", true},
};

} // namespace

TEST_CASE("a delta's event is its delta, in the seq the event rows leave free", "[run_events]") {
  hb::test::temp_log log;
  hb::storage::log_writer w(log.path);
  write_turn(w);
  auto& db = w.database();
  CHECK(db.execAndGet("SELECT group_concat(seq) FROM events").getString() == "1,4"); // no row repeats a text
  CHECK(db.execAndGet("SELECT count(*) FROM deltas").getInt() == 4);
  hb::storage::run_events events(db);
  CHECK(events.count(1) == 6);
  CHECK(read_from(db, 1, 0) == turn);
  // From every cursor, what follows it, the deltas' events included.
  for (int64_t from = 0; from <= 6; ++from) {
    INFO("from " << from);
    CHECK(read_from(db, 1, from) == std::vector<read_event>(turn.begin() + from, turn.end()));
  }
  CHECK(read_from(db, 2, 0).empty()); // no such run
}

TEST_CASE("events appended after a taken up run's last delta keep their places", "[run_events]") {
  hb::test::temp_log log;
  {
    hb::storage::log_writer w(log.path);
    write_turn(w);
  }
  hb::storage::log_writer w(log.path); // a daemon after a restart, taking the run up
  REQUIRE(w.continue_run("r1", 2.0));
  w.append_event("r1", R"({"event": "tool.completed"})", 2.1);
  w.append_delta("r1", "!", 2.2);
  w.commit();
  auto all = read_from(w.database(), 1, 0);
  REQUIRE(all.size() == 8);
  CHECK(all[6] == read_event{6, 2.1, R"({"event": "tool.completed"})", false});
  CHECK(all[7] == read_event{7, 2.2, sd("!"), true});
}

TEST_CASE("a version 4 log reads the same before and after its migration, which drops the repeated rows",
          "[run_events]") {
  hb::test::temp_log log;
  {
    // As a version-4 daemon wrote it: each delta and, beside it, its event.
    SQLite::Database v4(log.path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    v4.exec("CREATE TABLE deltas(run_no INTEGER NOT NULL, seq INTEGER NOT NULL, at REAL NOT NULL,"
            " text TEXT NOT NULL, PRIMARY KEY(run_no, seq)) WITHOUT ROWID;" // (before version 6)
            "CREATE TABLE events(run_no INTEGER NOT NULL, seq INTEGER NOT NULL, at REAL NOT NULL,"
            " body TEXT NOT NULL, PRIMARY KEY(run_no, seq)) WITHOUT ROWID;"); // (before version 7)
    v4.exec(hb::storage::schema_sql);
    v4.exec("INSERT INTO meta VALUES('schema_version', '4');"
            "INSERT INTO runs(run_id, session_id, status, started_at) VALUES('r1', 's1', 'running', 1.0);");
    SQLite::Statement delta(v4, "INSERT INTO deltas VALUES(1, ?, ?, ?)");
    SQLite::Statement event(v4, "INSERT INTO events VALUES(1, ?, ?, ?)");
    int64_t delta_seq = 0;
    for (const auto& e : turn) {
      if (e.delta) {
        auto text = hb::protocol::json::parse(e.body)["delta"].get<std::string>();
        delta.bind(1, delta_seq++);
        delta.bind(2, e.at);
        delta.bind(3, text);
        delta.exec();
        delta.reset();
      }
      event.bind(1, e.seq);
      event.bind(2, e.at);
      event.bind(3, e.body);
      event.exec();
      event.reset();
    }
    CHECK(hb::storage::run_events(v4).count(1) == 6);
    for (int64_t from = 0; from <= 6; ++from)
      CHECK(read_from(v4, 1, from) == std::vector<read_event>(turn.begin() + from, turn.end()));
  }
  hb::storage::log_writer w(log.path); // migrates
  auto& db = w.database();
  CHECK(hb::storage::stored_schema_version(db) == hb::storage::schema_version);
  CHECK(db.execAndGet("SELECT group_concat(seq) FROM events").getString() == "1,4");
  CHECK(read_from(db, 1, 0) == turn);
  hb::storage::log_reader r(log.path);
  auto run = r.read_run("r1", 0, 3);
  REQUIRE(run);
  CHECK(run->event_count == 6);
  CHECK(run->deltas == std::vector<std::string>{"Hel", "lo", " wor", "ld \"\n"});
  CHECK(run->events == std::vector<std::string>{sd(" wor"), turn[4].body, turn[5].body});
}
