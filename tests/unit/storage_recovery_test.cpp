// Crash damage on purpose: a torn WAL, a corrupted page, a writer killed in
// the middle of a batch. Recovery must keep every committed row and settle
// what was left open.
#include "protocol/json_text.hpp"
#include "storage/log_file.hpp"
#include "storage/log_reader.hpp"
#include "storage/log_writer.hpp"
#include "storage/recovery.hpp"
#include "storage/run_events.hpp"
#include "storage/schema.hpp"

#include <SQLiteCpp/SQLiteCpp.h>
#include <catch2/catch.hpp>

#include "temp_dir.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

namespace fs = std::filesystem;

namespace {

using hb::test::temp_dir;

// `host_seq`: the first delta's number from its host (the next ones count
// on), or 0 for deltas no host numbered.
void fill_run(hb::storage::log_writer& w, const std::string& run_id, int from, int count, uint64_t host_seq = 0) {
  for (int i = from; i < from + count; ++i)
    w.append_delta(run_id, "d" + std::to_string(i) + " ", 1.0 + i, host_seq ? host_seq + uint64_t(i - from) : 0);
}

// A log as an older daemon left it: its meta table at `version`, then `sql`.
void write_old_log(temp_dir& dir, int version, const std::string& sql) {
  SQLite::Database old(dir.file("events.db"), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
  old.exec("CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
           "INSERT INTO meta VALUES('schema_version', '" + std::to_string(version) + "');" + sql);
}

int64_t run_no_of(SQLite::Database& db, const std::string& run_id) {
  SQLite::Statement q(db, "SELECT run_no FROM runs WHERE run_id=?");
  q.bind(1, run_id);
  REQUIRE(q.executeStep());
  return q.getColumn(0).getInt64();
}

} // namespace

TEST_CASE("a torn WAL loses only the transaction it tore", "[recovery]") {
  temp_dir dir;
  hb::storage::log_writer w(dir.file("events.db"));
  w.database().exec("PRAGMA wal_autocheckpoint=0"); // keep every frame in the WAL
  w.open_run("r1", "s1", 1.0);
  fill_run(w, "r1", 0, 50);
  w.commit();
  auto wal_after_first = fs::file_size(dir.file("events.db-wal"));
  fill_run(w, "r1", 50, 50);
  w.commit();
  // What a crash can leave behind: the files as they are, the second commit
  // only partly written to the WAL.
  fs::create_directory(dir.file("copy"));
  fs::copy_file(dir.file("events.db"), dir.file("copy/events.db"));
  fs::copy_file(dir.file("events.db-wal"), dir.file("copy/events.db-wal"));
  fs::resize_file(dir.file("copy/events.db-wal"), wal_after_first + 100);

  hb::storage::log_writer reopened(dir.file("copy/events.db"));
  CHECK(hb::storage::check_integrity(reopened.database()) == "ok");
  hb::storage::log_reader r(dir.file("copy/events.db"));
  auto run = r.read_run("r1", 0, 0);
  REQUIRE(run);
  REQUIRE(run->deltas.size() == 50);
  CHECK(run->deltas.back() == "d49 ");
}

TEST_CASE("a corrupted page is reported by the integrity check", "[recovery]") {
  temp_dir dir;
  {
    hb::storage::log_writer w(dir.file("events.db"));
    w.open_run("r1", "s1", 1.0);
    fill_run(w, "r1", 0, 5000);
    w.commit();
    w.database().exec("PRAGMA wal_checkpoint(TRUNCATE)");
  }
  auto size = fs::file_size(dir.file("events.db"));
  REQUIRE(size > 16 * 4096);
  {
    std::fstream f(dir.file("events.db"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size / 2 / 4096 * 4096 + 16)); // inside a b-tree page
    std::string garbage(512, '\xA5');
    f.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  }
  SQLite::Database db(dir.file("events.db"), SQLite::OPEN_READWRITE);
  std::string verdict = hb::storage::check_integrity(db);
  CHECK(verdict != "ok");
  // The run's own row lives on another page and still reads.
  SQLite::Statement q(db, "SELECT status FROM runs WHERE run_id='r1'");
  REQUIRE(q.executeStep());
  CHECK(q.getColumn(0).getString() == "running");
}

TEST_CASE("a writer killed mid-batch keeps its commits and its open run is recovered", "[recovery]") {
  temp_dir dir;
  std::string path = dir.file("events.db");
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    hb::storage::log_writer w(path);
    w.open_run("r1", "s1", 1.0);
    fill_run(w, "r1", 0, 100);
    w.append_event("r1", R"({"event": "approval.requested", "approval_id": "a1", "command": "rm"})", 2.0);
    w.append_event("r1", R"({"event": "approval.requested", "approval_id": "a2", "command": "ls"})", 2.0);
    w.append_event("r1", R"({"event": "approval.resolved", "approval_id": "a2", "choice": "once"})", 2.0);
    w.append_event("r1", R"({"event": "bridge.compression.requested", "request_id": "c1", "message_count": 4, "approx_tokens": 99, "focus_topic": null, "messages": []})", 2.0);
    w.append_event("r1", R"({"event": "clarify.requested", "clarify_id": "q1", "question": "which?", "choices": null, "timeout_ms": 300000})", 2.0);
    w.append_event("r1", R"({"event": "clarify.requested", "clarify_id": "q2", "question": "done?", "choices": null, "timeout_ms": 300000})", 2.0);
    w.append_event("r1", R"({"event": "clarify.resolved", "clarify_id": "q2", "response": "yes"})", 2.0);
    w.commit();
    fill_run(w, "r1", 100, 100); // the batch the crash interrupts
    char byte = 1;
    [[maybe_unused]] auto n = ::write(ready[1], &byte, 1);
    ::pause();
    ::_exit(0);
  }
  char byte;
  REQUIRE(::read(ready[0], &byte, 1) == 1);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);

  hb::storage::log_writer w(path);
  CHECK(hb::storage::check_integrity(w.database()) == "ok");
  auto report = hb::storage::recover_open_runs(w.database(), 10.0);
  CHECK(report.runs_interrupted == 1);
  CHECK(report.approvals_denied == 1);
  CHECK(report.compressions_failed == 1);

  hb::storage::log_reader r(path);
  auto run = r.read_run("r1", 0, 107); // after the 100 deltas' events and the 7 others
  REQUIRE(run);
  CHECK(run->deltas.size() == 100);
  CHECK(run->status == "interrupted");
  CHECK(*run->error == hb::storage::restart_reason);
  CHECK(*run->ended_at == 10.0);
  REQUIRE(run->events.size() == 4);
  CHECK(run->events[0] == R"({"event": "approval.resolved", "approval_id": "a1", "choice": "deny", "reason": "daemon restarted"})");
  CHECK(run->events[1] == R"({"event": "bridge.compression.failed", "request_id": "c1", "message_count": 4, "approx_tokens": 99, "error": "hermes-bridge restarted before the compression reply"})");
  // the clarify question nobody answered is closed too; the answered one is left alone
  CHECK(run->events[2] == R"({"event": "clarify.resolved", "clarify_id": "q1", "response": null, "reason": "daemon restarted"})");
  CHECK(run->events[3].find("\"event\": \"bridge.recovered\"") != std::string::npos);
  // A second start finds nothing left to do.
  CHECK(hb::storage::recover_open_runs(w.database(), 11.0).runs_interrupted == 0);
}

TEST_CASE("a version 1 log is migrated in place", "[recovery]") {
  temp_dir dir;
  write_old_log(dir, 1,
                "CREATE TABLE runs(run_no INTEGER PRIMARY KEY, run_id TEXT NOT NULL UNIQUE, session_id TEXT NOT NULL,"
                " status TEXT NOT NULL, started_at REAL NOT NULL, ended_at REAL, result TEXT, error TEXT);"
                "INSERT INTO runs(run_id, session_id, status, started_at) VALUES('old', 's', 'complete', 1.0);");
  hb::storage::log_writer w(dir.file("events.db"));
  CHECK(hb::storage::stored_schema_version(w.database()) == hb::storage::schema_version);
  SQLite::Statement q(w.database(), "SELECT run_id, pruned_at FROM runs");
  REQUIRE(q.executeStep());
  CHECK(q.getColumn(0).getString() == "old");
  CHECK(q.getColumn(1).isNull());
  CHECK(w.database().tableExists("events"));
}

TEST_CASE("a version 2 log is migrated in place: runs gain user_message and host_seq, rows are kept",
          "[recovery]") {
  temp_dir dir;
  write_old_log(dir, 2,
                "CREATE TABLE sessions(session_id TEXT PRIMARY KEY, created_at REAL NOT NULL, last_used_at REAL NOT NULL,"
                " config TEXT NOT NULL, history TEXT NOT NULL DEFAULT '[]', message_count INTEGER NOT NULL DEFAULT 0,"
                " destroyed INTEGER NOT NULL DEFAULT 0);"
                "CREATE TABLE runs(run_no INTEGER PRIMARY KEY, run_id TEXT NOT NULL UNIQUE, session_id TEXT NOT NULL,"
                " status TEXT NOT NULL, started_at REAL NOT NULL, ended_at REAL, result TEXT, error TEXT, pruned_at REAL);"
                "CREATE TABLE events(run_no INTEGER NOT NULL, seq INTEGER NOT NULL, at REAL NOT NULL, body TEXT NOT NULL,"
                " PRIMARY KEY(run_no, seq)) WITHOUT ROWID;"
                "INSERT INTO sessions VALUES('s', 1.0, 1.0, '{}', '[{\"role\": \"user\", \"content\": \"a\"}]', 1, 0);"
                "INSERT INTO runs(run_id, session_id, status, started_at) VALUES('cut', 's', 'running', 1.0);"
                "CREATE TABLE deltas(run_no INTEGER NOT NULL, seq INTEGER NOT NULL, at REAL NOT NULL, text TEXT NOT NULL,"
                " PRIMARY KEY(run_no, seq)) WITHOUT ROWID;"
                "INSERT INTO deltas VALUES(1, 0, 1.0, 'half');"
                "INSERT INTO events VALUES(1, 0, 1.0, '{\"event\": \"stream.delta\", \"delta\": \"half\"}');"
                "INSERT INTO events VALUES(1, 1, 1.1, '{\"event\": \"step\"}');");
  hb::storage::log_writer w(dir.file("events.db"));
  CHECK(hb::storage::stored_schema_version(w.database()) == hb::storage::schema_version);
  SQLite::Statement q(w.database(), "SELECT run_id, status, user_message, host_seq FROM runs");
  REQUIRE(q.executeStep());
  CHECK(q.getColumn(0).getString() == "cut");
  CHECK(q.getColumn(1).getString() == "running");
  CHECK(q.getColumn(2).isNull());
  CHECK(q.getColumn(3).getInt64() == 0);
  // Version 5: the delta's event row goes, its delta is its event now.
  CHECK(w.database().execAndGet("SELECT count(*) FROM deltas").getInt() == 1);
  CHECK(w.database().execAndGet("SELECT group_concat(seq) FROM events").getString() == "1");
  // A run logged before version 3 has no user message: recovery settles it
  // and leaves the history as it was rather than invent half a turn.
  auto report = hb::storage::recover_open_runs(w.database(), 2.0);
  CHECK(report.runs_interrupted == 1);
  CHECK(report.turns_kept == 0);
  CHECK(w.database().execAndGet("SELECT message_count FROM sessions").getInt() == 1);
}

TEST_CASE("a run cut by a crash stays in its session's history", "[recovery]") {
  temp_dir dir;
  hb::storage::log_writer w(dir.file("events.db"));
  hb::storage::session_row s;
  s.session_id = "s1";
  s.history = R"([{"role": "user", "content": "first"}, {"role": "assistant", "content": "ok"}])";
  s.message_count = 2;
  w.put_session(s);
  w.open_run("r1", "s1", 1.0, R"("list the files, then explain")");
  w.append_delta("r1", "Listing ", 1.1);
  w.append_delta("r1", "now.", 1.2);
  w.append_event("r1", R"({"event": "tool.started", "tool_call_id": "c1", "tool_name": "terminal", "args": {"cmd": "ls"}})", 1.3);
  w.append_event("r1", R"({"event": "tool.completed", "tool_call_id": "c1", "tool_name": "terminal", "args": {"cmd": "ls"}, "result": "a b", "result_preview": "a b"})", 1.4);
  w.append_delta("r1", "Two files; ", 1.5);
  w.append_event("r1", R"({"event": "tool.started", "tool_call_id": "c2", "tool_name": "terminal", "args": {"cmd": "wc a"}})", 1.6);
  w.commit();

  auto report = hb::storage::recover_open_runs(w.database(), 5.0);
  CHECK(report.turns_kept == 1);
  auto history = hb::protocol::json::parse(w.database().execAndGet("SELECT history FROM sessions").getString());
  CHECK(w.database().execAndGet("SELECT message_count FROM sessions").getInt() == static_cast<int>(history.size()));
  REQUIRE(history.size() == 8);
  CHECK(history[1]["content"] == "ok"); // what was there stays first
  CHECK(history[2] == hb::protocol::json::parse(R"({"role": "user", "content": "list the files, then explain"})"));
  CHECK(history[3]["content"] == "Listing now.");
  CHECK(history[3]["tool_calls"][0]["id"] == "c1");
  CHECK(history[3]["tool_calls"][0]["function"]["arguments"] == R"({"cmd": "ls"})");
  CHECK(history[4] == hb::protocol::json::parse(R"({"role": "tool", "tool_call_id": "c1", "content": "a b"})"));
  CHECK(history[5]["content"] == "Two files; ");
  CHECK(history[5]["tool_calls"][0]["id"] == "c2");
  CHECK(history[6]["role"] == "tool");
  CHECK(history[6]["tool_call_id"] == "c2");
  std::string unknown = history[6]["content"];
  CHECK(unknown.find("hermes-bridge restarted before this tool reported") != std::string::npos);
  CHECK(unknown.find("unknown") != std::string::npos);
  // Cut while a tool ran: the cut is said in a reply of its own, so the
  // next user message follows an assistant message as usual.
  CHECK(history[7]["role"] == "assistant");
  CHECK(history[7]["content"] == "[this reply was cut off: hermes-bridge restarted before the turn finished]");
}

TEST_CASE("a run whose turn goes on in a surviving worker is left running, and taken up where the log ends",
          "[recovery]") {
  temp_dir dir;
  {
    hb::storage::log_writer w(dir.file("events.db"));
    w.open_run("goes-on", "s1", 1.0, "\"hi\"");
    w.open_run("cut", "s2", 1.0, "\"hi\"");
    fill_run(w, "goes-on", 0, 30, 1); // the worker's frames 1 to 30
    w.append_event("goes-on", R"({"event": "tool.started"})", 2.0, 31);
    // (frames 32 to 40 held no rows: an ask, say)
    w.append_event("goes-on", R"({"event": "approval.requested", "approval_id": "a1", "command": "ls"})", 2.5, 41);
    fill_run(w, "cut", 0, 5);
    w.commit();
    fill_run(w, "goes-on", 30, 10, 42); // a crash before this commit: never in the log
  }
  hb::storage::log_writer w(dir.file("events.db"));
  std::map<std::string, hb::storage::continuing_run> kept;
  auto report = hb::storage::recover_open_runs(w.database(), 9.0, {"goes-on", "unknown"}, &kept);
  CHECK(report.runs_interrupted == 1);
  REQUIRE(kept.size() == 1);
  CHECK(kept["goes-on"].session_id == "s1");
  CHECK(kept["goes-on"].host_seq == 41); // the committed value, not the lost one

  // Taken up: its sequences continue where the committed rows end.
  auto continued = w.continue_run("goes-on", 10.0);
  REQUIRE(continued);
  CHECK(continued->host_seq == 41);
  CHECK(continued->reopened.empty());
  CHECK_FALSE(w.continue_run("cut", 10.0)); // interrupted: nothing to continue
  CHECK_FALSE(w.continue_run("unknown", 10.0));
  fill_run(w, "goes-on", 30, 3, 42);
  w.append_event("goes-on", R"({"event": "tool.completed"})", 3.0, 45);
  w.close_run("goes-on", "complete", std::string("{}"), std::nullopt, 10.0);
  w.commit();
  hb::storage::log_reader r(dir.file("events.db"));
  auto run = r.read_run("goes-on", 0, 0);
  REQUIRE(run);
  CHECK(run->status == "complete");
  REQUIRE(run->deltas.size() == 33);
  for (int i = 0; i < 33; ++i)
    CHECK(run->deltas[static_cast<size_t>(i)] == "d" + std::to_string(i) + " ");
  // The question its dead daemon asked is settled when it is taken up; the
  // events go on after that in their own sequence, the deltas' among them.
  REQUIRE(run->events.size() == 37);
  CHECK(run->event_count == 37);
  std::vector<std::string> others;
  for (const auto& e : run->events)
    if (!hb::storage::is_stream_delta_body(e))
      others.push_back(e);
  REQUIRE(others.size() == 4);
  CHECK(run->events[32] == others[2]);
  CHECK(run->events[33] == R"({"event": "stream.delta", "delta": "d30 "})");
  auto settled = hb::protocol::json::parse(others[2]);
  CHECK(settled["event"] == "approval.resolved");
  CHECK(settled["approval_id"] == "a1");
  CHECK(settled["choice"] == "deny");
  CHECK(settled["reason"] == "daemon restarted");
  CHECK(others[3] == R"({"event": "tool.completed"})");
  CHECK(run->events.back() == others[3]);
  CHECK(hb::storage::logged_host_seq(w.database(), run_no_of(w.database(), "goes-on")) == 45);
  auto cut = r.read_run("cut", 0, 0);
  REQUIRE(cut);
  CHECK(cut->status == "interrupted");
}

TEST_CASE("how far a host's output is in the log is read from its rows, whichever kind comes last", "[recovery]") {
  temp_dir dir;
  hb::storage::log_writer w(dir.file("events.db"));
  auto& db = w.database();
  w.open_run("r", "s", 1.0);
  int64_t run = run_no_of(db, "r");
  CHECK(hb::storage::logged_host_seq(db, run) == 0);
  CHECK(hb::storage::logged_host_seq(db, run + 1) == 0); // no such run
  fill_run(w, "r", 0, 3, 1);
  CHECK(hb::storage::logged_host_seq(db, run) == 3); // deltas last
  w.append_event("r", R"({"event": "step"})", 2.0, 4);
  w.append_event("r", R"({"event": "approval.resolved"})", 2.1); // the daemon's own: numbered 0
  CHECK(hb::storage::logged_host_seq(db, run) == 4);
  // Deltas packed into one row carry their last delta's number.
  w.append_deltas("r", {{"a", 3.0, 5}, {"b", 3.0, 6}, {"c", 3.1, 7}});
  CHECK(db.execAndGet("SELECT count(*) FROM deltas").getInt() == 4);
  CHECK(hb::storage::logged_host_seq(db, run) == 7);
  // A log from before version 7 kept the number in the run's row.
  db.exec("UPDATE runs SET host_seq=9 WHERE run_id='r'");
  CHECK(hb::storage::logged_host_seq(db, run) == 9);
}

TEST_CASE("a version 6 log is migrated in place: its rows gain host_seq, a live run's number stays readable",
          "[recovery]") {
  temp_dir dir;
  write_old_log(dir, 6,
                "CREATE TABLE runs(run_no INTEGER PRIMARY KEY, run_id TEXT NOT NULL UNIQUE, session_id TEXT NOT NULL,"
                " status TEXT NOT NULL, started_at REAL NOT NULL, ended_at REAL, result TEXT, error TEXT,"
                " pruned_at REAL, user_message TEXT, host_seq INTEGER NOT NULL DEFAULT 0);"
                "CREATE TABLE deltas(run_no INTEGER NOT NULL, seq INTEGER NOT NULL, at REAL NOT NULL,"
                " n INTEGER NOT NULL DEFAULT 1, sizes BLOB, text TEXT NOT NULL, PRIMARY KEY(run_no, seq)) WITHOUT ROWID;"
                "CREATE TABLE events(run_no INTEGER NOT NULL, seq INTEGER NOT NULL, at REAL NOT NULL, body TEXT NOT NULL,"
                " PRIMARY KEY(run_no, seq)) WITHOUT ROWID;"
                "INSERT INTO runs(run_id, session_id, status, started_at, user_message, host_seq)"
                " VALUES('live', 's', 'running', 1.0, '\"hi\"', 12);"
                "INSERT INTO deltas(run_no, seq, at, text) VALUES(1, 0, 1.0, 'half');"
                "INSERT INTO events VALUES(1, 1, 1.1, '{\"event\": \"step\"}');");
  hb::storage::log_writer w(dir.file("events.db"));
  CHECK(hb::storage::stored_schema_version(w.database()) == hb::storage::schema_version);
  CHECK(w.database().execAndGet("SELECT group_concat(host_seq) FROM deltas").getString() == "0");
  CHECK(w.database().execAndGet("SELECT group_concat(host_seq) FROM events").getString() == "0");
  std::map<std::string, hb::storage::continuing_run> kept;
  hb::storage::recover_open_runs(w.database(), 2.0, {"live"}, &kept);
  CHECK(kept["live"].host_seq == 12);
  auto continued = w.continue_run("live", 3.0);
  REQUIRE(continued);
  CHECK(continued->host_seq == 12);
  w.append_delta("live", "rest", 3.0, 13);
  w.commit();
  CHECK(hb::storage::logged_host_seq(w.database(), 1) == 13);
  hb::storage::log_reader r(dir.file("events.db"));
  auto run = r.read_run("live", 0, 0);
  REQUIRE(run);
  REQUIRE(run->deltas.size() == 2);
  CHECK(run->deltas[1] == "rest");
}

TEST_CASE("questions a surviving worker's agent still waits on stay open under their ids; the rest are settled",
          "[recovery]") {
  temp_dir dir;
  {
    hb::storage::log_writer w(dir.file("events.db"));
    w.open_run("r", "s1", 1.0, "\"hi\"");
    w.append_event("r", R"({"event": "approval.requested", "approval_id": "a1", "command": "ls", "timeout_ms": 60000})", 2.0);
    w.append_event("r", R"({"event": "clarify.requested", "clarify_id": "c1", "question": "which?"})", 2.1);
    w.append_event("r", R"({"event": "approval.requested", "approval_id": "a2", "command": "rm", "timeout_ms": 60000})", 2.2);
    w.append_event("r", R"({"event": "bridge.compression.requested", "request_id": "k1", "message_count": 3})", 2.3);
    w.append_event("r", R"({"event": "approval.requested", "approval_id": "a3", "command": "cp", "timeout_ms": 60000})", 2.4);
    w.append_event("r", R"({"event": "approval.resolved", "approval_id": "a3", "choice": "once"})", 2.5);
    w.commit();
  }
  hb::storage::log_writer w(dir.file("events.db"));
  std::map<std::string, hb::storage::continuing_run> kept;
  hb::storage::recover_open_runs(w.database(), 9.0, {"r"}, &kept);
  // What the worker reports: a gateway approval (with the routing the log
  // never showed), the clarify question, an approval the log never got, and
  // one answered already (a3) which must not be taken for a new one.
  std::vector<hb::storage::waiting_question> waiting{
    {5, "gateway", R"({"command": "rm", "timeout_ms": 60000, "agent_request_id": "x", "bridge_token": "t"})"},
    {6, "clarify", R"({"question": "which?"})"},
    {7, "approval", R"({"command": "new", "timeout_ms": 60000})"},
    {8, "approval", R"({"command": "cp", "timeout_ms": 60000})"},
  };
  auto continued = w.continue_run("r", 10.0, waiting);
  REQUIRE(continued);
  REQUIRE(continued->reopened.size() == 2);
  CHECK(continued->reopened[0].ask == 5);
  CHECK(continued->reopened[0].id == "a2");
  CHECK(continued->reopened[0].due_at == Approx(62.2)); // announced at 2.2 with 60 s to live
  CHECK(continued->reopened[1].ask == 6);
  CHECK(continued->reopened[1].id == "c1");
  CHECK(continued->reopened[1].due_at == 0); // announced with no deadline
  w.commit();
  hb::storage::log_reader r(dir.file("events.db"));
  auto run = r.read_run("r", 0, 0);
  REQUIRE(run);
  std::vector<std::string> settled;
  for (size_t i = 6; i < run->events.size(); ++i) {
    auto ev = hb::protocol::json::parse(run->events[i]);
    settled.push_back(ev["event"].get<std::string>() + ":" +
                      ev.value("approval_id", ev.value("request_id", ev.value("clarify_id", ""))));
  }
  CHECK(settled == std::vector<std::string>{"approval.resolved:a1", "bridge.compression.failed:k1"});
}
