// Hermes' state.db as the native harness reads it (read-only, columns
// introspected, compression children followed) and the rows turned into a
// run's stream.
#include "bridge/tmux/hermes_state.hpp"
#include "bridge/tmux/row_mirror.hpp"

#include <SQLiteCpp/SQLiteCpp.h>
#include <catch2/catch.hpp>

#include "temp_dir.hpp"
#include <nlohmann/json.hpp>

#include <filesystem>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace hb::bridge;
using nlohmann::json;

namespace {

struct fake_state_db {
  fake_state_db() {
    SQLite::Database db(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    db.exec("PRAGMA journal_mode=WAL");
    db.exec("CREATE TABLE sessions(id TEXT PRIMARY KEY, source TEXT, parent_session_id TEXT, "
            "started_at REAL NOT NULL, cwd TEXT)");
    db.exec("CREATE TABLE messages(id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT, role TEXT, "
            "content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT, timestamp REAL, "
            "finish_reason TEXT, active INTEGER DEFAULT 1)");
  }

  void session(const std::string& id, double started, const std::string& cwd, const std::string& parent = "") {
    SQLite::Database db(path, SQLite::OPEN_READWRITE);
    SQLite::Statement q(db, "INSERT INTO sessions(id, source, parent_session_id, started_at, cwd) VALUES (?, 'cli', ?, ?, ?)");
    q.bind(1, id);
    if (parent.empty())
      q.bind(2);
    else
      q.bind(2, parent);
    q.bind(3, started);
    q.bind(4, cwd);
    q.exec();
  }
  int64_t row(const std::string& session, const std::string& role, const std::string& content,
              const std::string& tool_calls = "", const std::string& call_id = "", int active = 1) {
    SQLite::Database db(path, SQLite::OPEN_READWRITE);
    SQLite::Statement q(db, "INSERT INTO messages(session_id, role, content, tool_calls, tool_call_id, "
                            "tool_name, timestamp, active) VALUES (?, ?, ?, ?, ?, 'terminal', 0, ?)");
    q.bind(1, session);
    q.bind(2, role);
    q.bind(3, content);
    if (tool_calls.empty())
      q.bind(4);
    else
      q.bind(4, tool_calls);
    q.bind(5, call_id);
    q.bind(6, active);
    q.exec();
    return db.getLastInsertRowid();
  }

  hb::test::temp_dir tmp;
  std::string dir = tmp.path, path = tmp.file("state.db");
};

struct recording_sink : turn_sink {
  std::vector<std::string> deltas;
  std::vector<json> events;
  void delta(std::string text) override { deltas.push_back(text); }
  void event(std::string text) override { events.push_back(json::parse(text)); }
  std::string ask_approval(std::string, double) override { return "deny"; }
  std::string ask_compression(std::string, double) override { return "{}"; }
  std::string ask_clarify(std::string, double) override { return {}; }
  void gateway_notify(std::string, double) override {}
  void withdraw_questions(std::string) override {}
};

const char* one_call = R"([{"id": "call_1", "type": "function", "function": {"name": "terminal", "arguments": "{\"command\": \"ls\"}"}}])";

} // namespace

TEST_CASE("state.db is unavailable until Hermes has created it") {
  hermes_state state("/nonexistent/dir/state.db");
  CHECK_FALSE(state.available());
  CHECK(state.max_message_id() == 0);
  CHECK(state.rows_after({"x"}, 0).empty());
}

TEST_CASE("rows are read in order, inactive ones skipped, children found") {
  fake_state_db db;
  db.session("s1", 100, db.dir);
  db.row("s1", "user", "hello");
  db.row("s1", "assistant", "hidden", "", "", 0);
  int64_t last = db.row("s1", "assistant", "hi there");
  hermes_state state(db.path);
  REQUIRE(state.available());
  CHECK(state.max_message_id() == last);
  auto rows = state.rows_after({"s1"}, 0);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].role == "user");
  CHECK(rows[1].content == "hi there");
  CHECK(state.rows_after({"s1"}, last).empty());

  auto sessions = state.sessions_since(50);
  REQUIRE(sessions.size() == 1);
  CHECK(sessions[0].cwd == fs::canonical(db.dir).string());
  CHECK(state.sessions_since(150).empty());

  CHECK_FALSE(state.newest_child("s1"));
  db.session("s2", 200, db.dir, "s1");
  CHECK(state.newest_child("s1") == std::optional<std::string>("s2"));
  db.row("s2", "assistant", "after compression");
  CHECK(state.rows_after({"s1", "s2"}, last).size() == 1);
}

TEST_CASE("a state.db without newer columns still reads") {
  fake_state_db db;
  {
    SQLite::Database raw(db.path, SQLite::OPEN_READWRITE);
    raw.exec("CREATE TABLE old_messages AS SELECT id, session_id, role, content FROM messages");
    raw.exec("DROP TABLE messages");
    raw.exec("ALTER TABLE old_messages RENAME TO messages");
    raw.exec("INSERT INTO messages(id, session_id, role, content) VALUES (1, 's', 'assistant', 'plain')");
  }
  hermes_state state(db.path);
  REQUIRE(state.available());
  auto rows = state.rows_after({"s"}, 0);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].tool_calls.empty());
  CHECK(rows[0].content == "plain");
}

TEST_CASE("a tool turn becomes deltas, tool events and history, finished by the final answer") {
  fake_state_db db;
  db.session("s", 1, db.dir);
  int64_t user = db.row("s", "user", "tool ls");
  db.row("s", "assistant", "Let me run that.", one_call);
  db.row("s", "tool", "file_a\nfile_b", "", "call_1");
  db.row("s", "assistant", "ran ls");
  hermes_state state(db.path);
  recording_sink sink;
  row_mirror mirror(sink, json::array({{{"role", "user"}, {"content", "earlier"}}}));
  mirror.delivered(user);
  for (const auto& row : state.rows_after({"s"}, 0)) {
    CHECK_FALSE(mirror.finished());
    mirror.feed(row);
  }
  CHECK(mirror.finished());
  CHECK_FALSE(mirror.interrupted());
  CHECK(mirror.final_text() == "ran ls");
  CHECK(sink.deltas == std::vector<std::string>{"Let me run that.", "\n\nran ls"});
  REQUIRE(sink.events.size() == 2);
  CHECK(sink.events[0]["event"] == "tool.started");
  CHECK(sink.events[0]["tool_call_id"] == "call_1");
  CHECK(sink.events[0]["args"] == json{{"command", "ls"}});
  CHECK(sink.events[1]["event"] == "tool.completed");
  CHECK(sink.events[1]["tool_name"] == "terminal");
  CHECK(sink.events[1]["result"] == "file_a\nfile_b");
  CHECK(sink.events[1]["result_preview"] == "file_a\nfile_b");
  CHECK(sink.events[1]["args"] == json{{"command", "ls"}});
  const auto& history = mirror.history();
  REQUIRE(history.size() == 5);
  CHECK(history[2]["tool_calls"][0]["id"] == "call_1");
  CHECK(history[3]["role"] == "tool");
  CHECK(mirror.cursor() > user);
}

TEST_CASE("a steer's user row keeps the turn going until it is answered") {
  recording_sink sink;
  row_mirror mirror(sink, json::array());
  mirror.delivered(10);
  mirror.feed({11, "s", "user", "also do this", "", "", "", ""});
  mirror.feed({9, "s", "assistant", "stale answer", "", "", "", ""});
  CHECK_FALSE(mirror.finished());
  mirror.feed({12, "s", "assistant", "Interrupted.", "", "", "", "interrupted"});
  CHECK(mirror.finished());
  CHECK(mirror.interrupted());
}

TEST_CASE("a /steer carried by a tool result: the final answer ends the turn") {
  recording_sink sink;
  row_mirror mirror(sink, json::array());
  mirror.delivered(10);
  mirror.steered(11);
  mirror.feed({12, "s", "assistant", "", R"([{"id": "c1", "function": {"name": "terminal", "arguments": "{}"}}])", "",
               "", "tool_calls"});
  mirror.feed({13, "s", "tool", "output", "", "c1", "terminal", ""});
  mirror.feed({14, "s", "assistant", "done, and the steer too", "", "", "", "stop"});
  CHECK(mirror.finished());
  CHECK_FALSE(mirror.awaiting_steer());
}

TEST_CASE("a /steer no tool result carried: the run waits for it as the next turn and its answer") {
  recording_sink sink;
  row_mirror mirror(sink, json::array());
  mirror.delivered(10);
  mirror.steered(10);
  mirror.feed({11, "s", "assistant", "tick0 done", "", "", "", "stop"});
  CHECK_FALSE(mirror.finished());
  CHECK(mirror.awaiting_steer());
  mirror.feed({12, "s", "user", "and then stop", "", "", "", ""});
  CHECK_FALSE(mirror.awaiting_steer());
  mirror.feed({13, "s", "assistant", "echo: and then stop", "", "", "", "stop"});
  CHECK(mirror.finished());
  CHECK(mirror.final_text() == "echo: and then stop");
}

TEST_CASE("a /steer that never came back: the answer already mirrored ends the run") {
  recording_sink sink;
  row_mirror mirror(sink, json::array());
  mirror.delivered(10);
  mirror.steered(10);
  mirror.feed({11, "s", "assistant", "answer", "", "", "", "stop"});
  REQUIRE(mirror.awaiting_steer());
  mirror.steer_not_coming();
  CHECK(mirror.finished());
  CHECK(mirror.final_text() == "answer");
}
