// verify on a healthy log and on logs damaged on purpose: each damage is
// named with its table, run and sequence number.
#include "storage/log_verify.hpp"
#include "storage/log_writer.hpp"
#include "storage/schema.hpp"

#include <SQLiteCpp/SQLiteCpp.h>
#include <catch2/catch.hpp>

#include "temp_dir.hpp"

#include <filesystem>
#include <fstream>
#include <string>

namespace {

using hb::storage::log_problem;
using hb::storage::verify_report;

std::string delta_event(const std::string& text) { return R"({"event": "stream.delta", "delta": ")" + text + R"("})"; }

// Two finished runs of one session (the first with an answered approval)
// and one live run of another, as the daemon writes them.
void write_healthy(const std::string& path) {
  hb::storage::log_writer w(path);
  hb::storage::session_row s;
  s.session_id = "s1";
  s.config = R"({"profile": "work"})";
  w.put_session(s);
  w.open_run("r1", "s1", 1.0, R"("hi")");
  for (int i = 0; i < 5; ++i)
    w.append_delta("r1", "d" + std::to_string(i), 1.0 + i * 0.1); // event seqs 0 to 4
  w.append_event("r1", R"({"event": "approval.requested", "approval_id": "a1", "command": "ls"})", 1.6);
  w.append_event("r1", R"({"event": "approval.resolved", "approval_id": "a1", "choice": "once"})", 1.7);
  w.close_run("r1", "complete", R"({"final_response": "d0d1d2d3d4"})", std::nullopt, 2.0);
  w.open_run("r2", "s1", 3.0, R"("again")");
  w.append_delta("r2", "x", 3.1);
  w.close_run("r2", "complete", R"({})", std::nullopt, 3.5);
  w.open_run("r3", "s2", 4.0, R"("live")");
  w.append_delta("r3", "y", 4.1);
  w.commit();
  w.database().exec("PRAGMA wal_checkpoint(TRUNCATE)");
}

verify_report verify(const std::string& path) {
  SQLite::Database db(path, SQLite::OPEN_READONLY);
  return hb::storage::verify_log(db);
}

void damage(const std::string& path, const std::string& sql) {
  SQLite::Database db(path, SQLite::OPEN_READWRITE);
  db.exec(sql);
}

bool names(const verify_report& r, const std::string& table, const std::string& run, std::optional<int64_t> seq,
           const std::string& words) {
  for (const log_problem& p : r.problems)
    if (p.table == table && p.run_id == run && p.seq == seq && p.what.find(words) != std::string::npos)
      return true;
  return false;
}

std::string all(const verify_report& r) {
  std::string out;
  for (const auto& p : r.problems)
    out += p.table + " " + p.run_id + " " + (p.seq ? std::to_string(*p.seq) : "-") + ": " + p.what + "\n";
  return out;
}

} // namespace

TEST_CASE("verify finds a healthy log healthy", "[verify]") {
  hb::test::temp_log log;
  write_healthy(log.path);
  auto r = verify(log.path);
  INFO(all(r));
  CHECK(r.healthy());
  CHECK(r.schema_version == hb::storage::schema_version);
  CHECK(r.integrity == "ok");
  CHECK(r.runs == 3);
  CHECK(r.live_runs == 1); // live, not damage
  CHECK(r.deltas == 7);
  CHECK(r.events == 2); // rows: a delta's event has none
  CHECK(r.sessions == 1);
}

TEST_CASE("verify names a gap in a run's sequence", "[verify]") {
  hb::test::temp_log log;
  write_healthy(log.path);
  SECTION("an event row lost") {
    damage(log.path, "DELETE FROM events WHERE run_no=1 AND seq=5");
    auto r = verify(log.path);
    INFO(all(r));
    CHECK_FALSE(r.healthy());
    CHECK(names(r, "events", "r1", 6, "gap: 1 event seq(s) up to 6 hold neither an event nor a delta"));
  }
  SECTION("deltas lost") {
    damage(log.path, "DELETE FROM deltas WHERE run_no=1 AND seq IN (2, 3)");
    auto r = verify(log.path);
    INFO(all(r));
    CHECK(names(r, "deltas", "r1", 4, "gap: seq 2 to 3 missing"));
    CHECK(names(r, "events", "r1", 6, "gap: 2 event seq(s) up to 6"));
  }
  SECTION("a delta's text stored twice, as a version-4 log did") {
    damage(log.path, "INSERT INTO events(run_no, seq, at, body) VALUES(2, 1, 3.2, '" + delta_event("x") + "')");
    auto r = verify(log.path);
    INFO(all(r));
    CHECK(names(r, "events", "r2", std::nullopt, "1 stream.delta event row(s)"));
  }
}

TEST_CASE("verify names a sequence that does not start at 0", "[verify]") {
  hb::test::temp_log log;
  write_healthy(log.path);
  damage(log.path, "DELETE FROM deltas WHERE run_no=1 AND seq=0");
  auto r = verify(log.path);
  INFO(all(r));
  CHECK(names(r, "deltas", "r1", 1, "first row has seq 1, not 0"));
}

TEST_CASE("verify names a duplicate sequence number and the lost key that let it in", "[verify]") {
  hb::test::temp_log log;
  write_healthy(log.path);
  damage(log.path, "CREATE TABLE loose(run_no INTEGER, seq INTEGER, at REAL, body TEXT, host_seq INTEGER);"
                   "INSERT INTO loose SELECT * FROM events; DROP TABLE events; ALTER TABLE loose RENAME TO events;"
                   "INSERT INTO events(run_no, seq, at, body) VALUES(2, 1, 3.2, '{\"event\": \"step\"}');"
                   "INSERT INTO events(run_no, seq, at, body) VALUES(2, 1, 3.2, '{\"event\": \"step\"}');");
  auto r = verify(log.path);
  INFO(all(r));
  CHECK(names(r, "events", "r2", 1, "duplicate seq 1"));
  CHECK(names(r, "events", "", std::nullopt, "lost its primary key"));
}

TEST_CASE("verify names a finished run whose terminal status is missing", "[verify]") {
  hb::test::temp_log log;
  write_healthy(log.path);
  SECTION("back to 'running' although a later run of its session finished") {
    damage(log.path, "UPDATE runs SET status='running', ended_at=NULL, result=NULL WHERE run_id='r1'");
    auto r = verify(log.path);
    INFO(all(r));
    CHECK(names(r, "runs", "r1", std::nullopt, "its terminal status is missing"));
    CHECK_FALSE(names(r, "runs", "r3", std::nullopt, "terminal status")); // the live run is fine
  }
  SECTION("back to 'running' after recovery settled it") {
    damage(log.path, "INSERT INTO events(run_no, seq, at, body) VALUES(3, 2, 5.0, '{\"event\": \"bridge.recovered\", \"status\": \"interrupted\"}')");
    auto r = verify(log.path);
    INFO(all(r));
    CHECK(names(r, "runs", "r3", std::nullopt, "although recovery settled it"));
  }
  SECTION("'running' with an end") {
    damage(log.path, "UPDATE runs SET status='running' WHERE run_id='r2'");
    auto r = verify(log.path);
    INFO(all(r));
    CHECK(names(r, "runs", "r2", std::nullopt, "terminal status is lost"));
  }
  SECTION("finished without ended_at, or with a status nobody writes") {
    damage(log.path, "UPDATE runs SET ended_at=NULL WHERE run_id='r1'; UPDATE runs SET status='done' WHERE run_id='r2'");
    auto r = verify(log.path);
    INFO(all(r));
    CHECK(names(r, "runs", "r1", std::nullopt, "without ended_at"));
    CHECK(names(r, "runs", "r2", std::nullopt, "unknown status 'done'"));
  }
  SECTION("stamped before its last events") {
    damage(log.path, "UPDATE runs SET ended_at=1.2 WHERE run_id='r1'");
    auto r = verify(log.path);
    INFO(all(r));
    CHECK(names(r, "events", "r1", std::nullopt, "not written with its last events"));
  }
}

TEST_CASE("verify names orphan rows and orphan or open approvals", "[verify]") {
  hb::test::temp_log log;
  write_healthy(log.path);
  damage(log.path,
         "INSERT INTO events(run_no, seq, at, body) VALUES(99, 0, 9.0, '{\"event\": \"step\"}');"
         "INSERT INTO deltas(run_no, seq, at, text) VALUES(99, 0, 9.0, 'lost');"
         "INSERT INTO events(run_no, seq, at, body) VALUES(2, 1, 3.2, '{\"event\": \"approval.resolved\", \"approval_id\": \"zz\", \"choice\": \"deny\"}');"
         "INSERT INTO events(run_no, seq, at, body) VALUES(2, 2, 3.3, '{\"event\": \"approval.requested\", \"approval_id\": \"b2\"}');"
         "INSERT INTO events(run_no, seq, at, body) VALUES(1, 7, 1.8, '{\"event\": \"approval.resolved\", \"approval_id\": \"a1\", \"choice\": \"deny\"}');");
  auto r = verify(log.path);
  INFO(all(r));
  CHECK(names(r, "events", "run_no 99", std::nullopt, "orphan row(s)"));
  CHECK(names(r, "deltas", "run_no 99", std::nullopt, "orphan row(s)"));
  CHECK(names(r, "events", "r2", 1, "orphan approval.resolved"));
  CHECK(names(r, "events", "r2", 2, "never resolved"));
  CHECK(names(r, "events", "r1", 7, "resolved twice"));
}

TEST_CASE("verify names a session whose profile would be a path, and a history that does not add up", "[verify]") {
  hb::test::temp_log log;
  write_healthy(log.path);
  damage(log.path, "UPDATE sessions SET config='{\"profile\": \"../../etc\"}', message_count=3");
  auto r = verify(log.path);
  INFO(all(r));
  CHECK(names(r, "sessions", "s1", std::nullopt, "plain name"));
  CHECK(names(r, "sessions", "s1", std::nullopt, "message_count 3 but history holds 0"));
}

TEST_CASE("verify reports a flipped page through SQLite's integrity_check", "[verify]") {
  hb::test::temp_log log;
  {
    hb::storage::log_writer w(log.path);
    w.open_run("big", "s", 1.0, R"("x")");
    for (int i = 0; i < 4000; ++i)
      w.append_delta("big", "delta " + std::to_string(i), 1.0);
    w.close_run("big", "complete", R"({})", std::nullopt, 2.0);
    w.commit();
    w.database().exec("PRAGMA wal_checkpoint(TRUNCATE)");
  }
  REQUIRE(verify(log.path).healthy());
  int64_t page_size, root;
  {
    SQLite::Database db(log.path, SQLite::OPEN_READONLY);
    page_size = db.execAndGet("PRAGMA page_size").getInt64();
    root = db.execAndGet("SELECT rootpage FROM sqlite_master WHERE name='events'").getInt64();
  }
  {
    std::fstream f(log.path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>((root - 1) * page_size));
    std::string flipped(64, '\xA5');
    f.write(flipped.data(), static_cast<std::streamsize>(flipped.size()));
  }
  auto r = verify(log.path);
  INFO(all(r));
  CHECK_FALSE(r.healthy());
  CHECK(r.integrity != "ok");
  bool sqlite_named = false;
  for (const auto& p : r.problems)
    sqlite_named = sqlite_named || p.table == "sqlite";
  CHECK(sqlite_named);
}
