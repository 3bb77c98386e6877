// Deltas packed several to a row (schema version 6): how a row's sizes
// split its text, and that every reader sees a packed run exactly as it
// saw a run written a delta per row: from any cursor, cut or not, across
// restarts, migrations and damage.
#include "storage/delta_rows.hpp"
#include "storage/log_file.hpp"
#include "storage/log_reader.hpp"
#include "storage/log_verify.hpp"
#include "storage/log_writer.hpp"
#include "storage/run_events.hpp"
#include "storage/schema.hpp"

#include <SQLiteCpp/SQLiteCpp.h>
#include <catch2/catch.hpp>

#include "temp_dir.hpp"

#include <cmath>
#include <string>
#include <vector>

namespace {

using hb::storage::timed_text;

std::vector<std::string> split(const std::string& text, const std::string& sizes, int64_t n, bool& exact) {
  std::vector<std::string_view> pieces;
  exact = hb::storage::split_delta_row(text, sizes, n, pieces);
  return {pieces.begin(), pieces.end()};
}

// (seq, at, text) of every delta from `from`, through the cursor.
struct read_delta {
  int64_t seq;
  double at;
  std::string text;
  bool operator==(const read_delta& o) const {
    return seq == o.seq && std::abs(at - o.at) < 1e-9 && text == o.text; // (times summed in steps of 0.01)
  }
};

std::vector<read_delta> deltas_from(SQLite::Database& db, int64_t run_no, int64_t from) {
  hb::storage::delta_cursor cursor(db);
  cursor.open(run_no, from);
  std::vector<read_delta> out;
  while (cursor.next())
    out.push_back({cursor.seq(), cursor.at(), std::string(cursor.text())});
  cursor.close();
  return out;
}

std::vector<std::pair<int64_t, std::string>> events_from(SQLite::Database& db, int64_t run_no, int64_t from) {
  hb::storage::run_events events(db);
  events.open(run_no, from);
  std::vector<std::pair<int64_t, std::string>> out;
  while (events.next())
    out.emplace_back(events.seq(), events.body());
  events.close();
  return out;
}

std::vector<timed_text> texts(std::initializer_list<const char*> list, double at) {
  std::vector<timed_text> out;
  for (const char* t : list)
    out.push_back({t, at += 0.01});
  return out;
}

// One turn twice: a delta per row in "one", packed in "packed"; event
// seqs 0 to 10 in both: a, [b c], step, [d "e" ü], tool, f, [(empty) gh].
const std::vector<std::string> turn_texts = {"a", "b", "c", "d", "\"e\"\n", "\xc3\xbc", "f", "", "gh"};

void write_turn(hb::storage::log_writer& w, const std::string& run_id, bool packed) {
  auto put = [&](std::vector<timed_text> ds) {
    if (packed)
      w.append_deltas(run_id, ds);
    else
      for (const auto& d : ds)
        w.append_delta(run_id, d.text, d.at);
  };
  w.open_run(run_id, "s", 1.0);
  put(texts({"a"}, 1.0));
  put(texts({"b", "c"}, 1.1));
  w.append_event(run_id, R"({"event": "step"})", 1.2);
  put(texts({"d", "\"e\"\n", "\xc3\xbc"}, 1.3));
  w.append_event(run_id, R"({"event": "tool.started"})", 1.4);
  put(texts({"f"}, 1.5));
  put(texts({"", "gh"}, 1.6)); // an empty delta is a delta
  w.commit();
}

} // namespace

TEST_CASE("a row's sizes split its text into its deltas, and damage is told", "[delta_rows]") {
  std::string sizes, text;
  std::vector<std::string> want;
  for (size_t size : {0, 1, 127, 128, 300, 16384, 70000}) {
    hb::storage::append_delta_size(sizes, size);
    want.emplace_back(size, static_cast<char>('a' + want.size()));
    text += want.back();
  }
  CHECK(sizes.size() == 1 + 1 + 1 + 2 + 2 + 3 + 3); // varints: 7 bits a byte
  bool exact = false;
  CHECK(split(text, sizes, 7, exact) == want);
  CHECK(exact);
  CHECK(split("abc", "", 1, exact) == std::vector<std::string>{"abc"});
  CHECK(exact);

  SECTION("sizes that add up to less than the text: the last delta takes the rest, and it is told") {
    CHECK(split("abcdef", std::string("\x01\x02", 2), 2, exact) == std::vector<std::string>{"a", "bcdef"});
    CHECK_FALSE(exact);
  }
  SECTION("sizes past the text: the pieces stop at its end") {
    CHECK(split("abc", std::string("\x05\x05\x05", 3), 3, exact) == std::vector<std::string>{"abc", "", ""});
    CHECK_FALSE(exact);
  }
  SECTION("a varint cut short") {
    CHECK(split("abc", std::string("\x01\x80", 2), 2, exact) == std::vector<std::string>{"a", "bc"});
    CHECK_FALSE(exact);
  }
  SECTION("sizes on a row of one delta, or more sizes than deltas") {
    CHECK(split("abc", std::string("\x03", 1), 1, exact) == std::vector<std::string>{"abc"});
    CHECK_FALSE(exact);
    CHECK(split("abc", std::string("\x01\x02\x00", 3), 2, exact) == std::vector<std::string>{"a", "bc"});
    CHECK_FALSE(exact);
  }
}

TEST_CASE("deltas that follow each other share a row, and read back one by one from every cursor",
          "[delta_rows]") {
  hb::test::temp_log log;
  hb::storage::log_writer w(log.path);
  write_turn(w, "one", false);
  write_turn(w, "packed", true);
  auto& db = w.database();
  CHECK(db.execAndGet("SELECT count(*) FROM deltas WHERE run_no=1").getInt() == 9);
  CHECK(db.execAndGet("SELECT group_concat(seq || ':' || n, ' ') FROM deltas WHERE run_no=2").getString() ==
        "0:1 1:2 3:3 6:1 7:2");
  CHECK(db.execAndGet("SELECT count(*) FROM deltas WHERE n = 1 AND sizes IS NOT NULL").getInt() == 0);
  // A packed row is stamped with its last delta's time.
  CHECK(db.execAndGet("SELECT at FROM deltas WHERE run_no=2 AND seq=3").getDouble() == Approx(1.33));

  hb::storage::delta_cursor cursor(db);
  CHECK(cursor.count(1) == 9);
  CHECK(cursor.count(2) == 9);
  CHECK(cursor.count(3) == 0);
  auto all = deltas_from(db, 2, 0);
  std::vector<std::string> got;
  for (size_t i = 0; i < all.size(); ++i) {
    CHECK(all[i].seq == static_cast<int64_t>(i));
    got.push_back(all[i].text);
  }
  CHECK(got == turn_texts);
  for (int64_t from = 0; from <= 11; ++from) {
    INFO("from " << from);
    auto packed = deltas_from(db, 2, from);
    auto one = deltas_from(db, 1, from);
    REQUIRE(packed.size() == one.size());
    for (size_t i = 0; i < one.size(); ++i) {
      CHECK(packed[i].seq == one[i].seq);
      CHECK(packed[i].text == one[i].text);
    }
    // The events, deltas' included, byte for byte as from a delta per row.
    CHECK(events_from(db, 2, from) == events_from(db, 1, from));
  }
  CHECK(hb::storage::run_events(db).count(2) == 11);
}

TEST_CASE("the reader takes a packed run from any cursor, and a cut read ends inside a row", "[delta_rows]") {
  hb::test::temp_log log;
  {
    hb::storage::log_writer w(log.path);
    write_turn(w, "one", false);
    write_turn(w, "packed", true);
  }
  hb::storage::log_reader reader(log.path);
  for (int64_t from = 0; from <= 9; ++from) {
    INFO("from " << from);
    auto one = reader.read_run("one", from, 0);
    auto packed = reader.read_run("packed", from, 0);
    REQUIRE(one);
    REQUIRE(packed);
    CHECK(packed->deltas == one->deltas);
    CHECK(packed->delta_from == from);
    CHECK(packed->delta_count == 9);
  }
  // Two bytes a read: a row's deltas come a few at a time, cursors move on.
  std::vector<std::string> got;
  int64_t cursor = 0;
  for (int reads = 0; cursor < 9 && reads < 20; ++reads) {
    auto part = reader.read_run("packed", cursor, 11, 2);
    REQUIRE(part);
    got.insert(got.end(), part->deltas.begin(), part->deltas.end());
    cursor = part->delta_count;
  }
  CHECK(got == turn_texts);
}

TEST_CASE("a cursor asked again after its last delta still says there is none", "[delta_rows]") {
  hb::test::temp_log log;
  hb::storage::log_writer w(log.path);
  write_turn(w, "packed", true);
  hb::storage::delta_cursor cursor(w.database());
  cursor.open(1, 7);
  REQUIRE(cursor.next());
  CHECK(cursor.text() == "");
  REQUIRE(cursor.next());
  CHECK(cursor.text() == "gh");
  CHECK_FALSE(cursor.next());
  CHECK_FALSE(cursor.next());
  cursor.open(1, 9); // at the end
  CHECK_FALSE(cursor.next());
  cursor.open(1, 8); // and open again
  REQUIRE(cursor.next());
  CHECK(cursor.seq() == 8);
  CHECK(cursor.text() == "gh");
  cursor.close();
  CHECK_FALSE(cursor.next());
}

TEST_CASE("a row holds at most max_delta_row_bytes of text, but always one delta", "[delta_rows]") {
  hb::test::temp_log log;
  hb::storage::log_writer w(log.path);
  w.open_run("r", "s", 1.0);
  size_t third = hb::storage::log_writer::max_delta_row_bytes / 3 + 1;
  std::vector<timed_text> big;
  for (char c : std::string("abcd"))
    big.push_back({std::string(third, c), 2.0});
  big.push_back({std::string(hb::storage::log_writer::max_delta_row_bytes + 5, 'e'), 2.0});
  big.push_back({"f", 2.0});
  w.append_deltas("r", big);
  w.commit();
  CHECK(w.database().execAndGet("SELECT group_concat(seq || ':' || n, ' ') FROM deltas").getString() ==
        "0:2 2:2 4:1 5:1");
  auto read = deltas_from(w.database(), 1, 0);
  REQUIRE(read.size() == 6);
  for (size_t i = 0; i < 6; ++i)
    CHECK(read[i].text == big[i].text);
}

TEST_CASE("a run taken up after a restart goes on after its last packed row", "[delta_rows]") {
  hb::test::temp_log log;
  {
    hb::storage::log_writer w(log.path);
    w.open_run("r", "s", 1.0);
    w.append_deltas("r", texts({"a", "b", "c"}, 1.0));
    w.commit();
  }
  hb::storage::log_writer w(log.path);
  REQUIRE(w.continue_run("r", 2.0));
  w.append_deltas("r", texts({"d", "e"}, 2.0));
  w.append_event("r", R"({"event": "step"})", 2.1);
  w.commit();
  CHECK(w.counts("r")->deltas == 5);
  CHECK(w.counts("r")->events == 6);
  auto read = deltas_from(w.database(), 1, 0);
  REQUIRE(read.size() == 5);
  CHECK(read[3] == read_delta{3, 2.02, "d"});
  CHECK(events_from(w.database(), 1, 5) == std::vector<std::pair<int64_t, std::string>>{{5, R"({"event": "step"})"}});
}

TEST_CASE("a version 5 log gains the packed columns; its rows read as before and new ones pack", "[delta_rows]") {
  hb::test::temp_log log;
  {
    SQLite::Database v5(log.path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    v5.exec("CREATE TABLE deltas(run_no INTEGER NOT NULL, seq INTEGER NOT NULL, at REAL NOT NULL, text TEXT NOT NULL,"
            " PRIMARY KEY(run_no, seq)) WITHOUT ROWID;"
            "CREATE TABLE events(run_no INTEGER NOT NULL, seq INTEGER NOT NULL, at REAL NOT NULL, body TEXT NOT NULL,"
            " PRIMARY KEY(run_no, seq)) WITHOUT ROWID;");
    v5.exec(hb::storage::schema_sql); // (keeps those tables)
    v5.exec("INSERT INTO meta VALUES('schema_version', '5');"
            "INSERT INTO runs(run_id, session_id, status, started_at) VALUES('r', 's', 'running', 1.0);"
            "INSERT INTO deltas VALUES(1, 0, 1.1, 'x'); INSERT INTO deltas VALUES(1, 1, 1.2, 'y');"
            "INSERT INTO events VALUES(1, 1, 1.15, '{\"event\": \"step\"}');");
    // The log tools read it as it is, a delta per row.
    CHECK(!hb::storage::has_packed_deltas(v5));
    CHECK(deltas_from(v5, 1, 1) == std::vector<read_delta>{{1, 1.2, "y"}});
    CHECK(hb::storage::run_events(v5).count(1) == 3);
  }
  hb::storage::log_writer w(log.path); // migrates
  auto& db = w.database();
  CHECK(hb::storage::stored_schema_version(db) == hb::storage::schema_version);
  CHECK(hb::storage::has_packed_deltas(db));
  CHECK(db.execAndGet("SELECT group_concat(n) FROM deltas").getString() == "1,1");
  REQUIRE(w.continue_run("r", 2.0));
  w.append_deltas("r", texts({"z", "w"}, 2.0));
  w.commit();
  auto read = deltas_from(db, 1, 1);
  REQUIRE(read.size() == 3);
  CHECK(read[0].text == "y");
  CHECK(read[2] == read_delta{3, 2.02, "w"});
  CHECK(events_from(db, 1, 0) == std::vector<std::pair<int64_t, std::string>>{
                                   {0, R"({"event": "stream.delta", "delta": "x"})"},
                                   {1, R"({"event": "step"})"},
                                   {2, R"({"event": "stream.delta", "delta": "y"})"},
                                   {3, R"({"event": "stream.delta", "delta": "z"})"},
                                   {4, R"({"event": "stream.delta", "delta": "w"})"}});
}

TEST_CASE("verify counts a packed run's deltas and names a damaged packed row", "[delta_rows][verify]") {
  hb::test::temp_log log;
  {
    hb::storage::log_writer w(log.path);
    write_turn(w, "packed", true);
    w.close_run("packed", "complete", std::string("{}"), std::nullopt, 2.0);
    w.commit();
  }
  auto verify = [&] {
    SQLite::Database db(log.path, SQLite::OPEN_READONLY);
    return hb::storage::verify_log(db);
  };
  auto names = [](const hb::storage::verify_report& r, std::optional<int64_t> seq, const std::string& words) {
    for (const auto& p : r.problems)
      if (p.table == "deltas" && p.run_id == "packed" && p.seq == seq && p.what.find(words) != std::string::npos)
        return true;
    return false;
  };
  auto healthy = verify();
  CHECK(healthy.healthy());
  CHECK(healthy.deltas == 9);
  auto damage = [&](const std::string& sql) {
    SQLite::Database db(log.path, SQLite::OPEN_READWRITE);
    db.exec(sql);
  };
  SECTION("sizes that do not split the text") {
    damage("UPDATE deltas SET sizes=x'0102' WHERE seq=3");
    auto r = verify();
    CHECK_FALSE(r.healthy());
    CHECK(names(r, 3, "sizes do not split its text into its 3 deltas"));
  }
  SECTION("a row that claims more deltas than the next row leaves it") {
    damage("UPDATE deltas SET n=3, sizes=x'010000' WHERE seq=1");
    auto r = verify();
    CHECK(names(r, 3, "seq 3 is already held by an earlier row (up to 3)"));
  }
  SECTION("a row that claims the seqs of several after it") {
    damage("UPDATE deltas SET n=8, sizes=x'0101000000000000' WHERE seq=1");
    auto r = verify();
    CHECK(names(r, 3, "seq 3 is already held by an earlier row (up to 8)"));
    CHECK(names(r, 6, "seq 6 is already held by an earlier row (up to 8)"));
    CHECK(names(r, 7, "seq 7 is already held by an earlier row (up to 8)"));
    CHECK_FALSE(names(r, 7, "gap"));
  }
  SECTION("a row that claims a billion deltas is read as what its sizes can hold") {
    damage("UPDATE deltas SET n=1000000000 WHERE seq=3");
    auto r = verify();
    CHECK(names(r, 3, "sizes do not split its text into its 1000000000 deltas"));
    SQLite::Database db(log.path, SQLite::OPEN_READONLY);
    auto read = deltas_from(db, 1, 0);
    CHECK(read.size() < 20);
  }
  SECTION("a packed row lost") {
    damage("DELETE FROM deltas WHERE seq=3");
    auto r = verify();
    CHECK(names(r, 6, "gap: seq 3 to 5 missing"));
    CHECK(r.deltas == 6);
  }
}
