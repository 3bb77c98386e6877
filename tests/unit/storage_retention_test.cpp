#include "storage/log_reader.hpp"
#include "storage/log_writer.hpp"
#include "storage/retention.hpp"

#include <SQLiteCpp/SQLiteCpp.h>
#include <catch2/catch.hpp>

#include "temp_dir.hpp"

#include <unistd.h>

#include <filesystem>

namespace {

using hb::test::temp_log;

void finished_run(hb::storage::log_writer& w, const std::string& run_id, const std::string& session,
                  double ended_at, int deltas = 20) {
  w.open_run(run_id, session, ended_at - 1);
  for (int i = 0; i < deltas; ++i) {
    w.append_delta(run_id, "x", ended_at);
    w.append_event(run_id, "{}", ended_at);
  }
  w.close_run(run_id, "complete", std::string("{}"), std::nullopt, ended_at);
  w.commit();
}

bool pruned(hb::storage::log_reader& r, const std::string& run_id) {
  auto run = r.read_run(run_id, 0, 0);
  REQUIRE(run);
  return run->pruned_at.has_value();
}

int64_t rows_of(hb::storage::log_writer& w, const std::string& run_id) {
  SQLite::Statement q(w.database(), "SELECT (SELECT count(*) FROM deltas d WHERE d.run_no=r.run_no) +"
                                    " (SELECT count(*) FROM events e WHERE e.run_no=r.run_no)"
                                    " FROM runs r WHERE run_id=?");
  q.bind(1, run_id);
  q.executeStep();
  return q.getColumn(0).getInt64();
}

} // namespace

TEST_CASE("old finished runs are pruned, a session's latest run and live runs are kept", "[retention]") {
  temp_log log;
  hb::storage::log_writer w(log.path);
  double now = 1'000'000;
  finished_run(w, "old-a1", "a", now - 100 * 86400);
  finished_run(w, "old-a2", "a", now - 90 * 86400);
  finished_run(w, "old-b1", "b", now - 90 * 86400); // b's latest: kept whatever its age
  finished_run(w, "new-a3", "c", now - 60);
  finished_run(w, "latest-a", "a", now - 80 * 86400);
  w.open_run("live", "d", now - 200 * 86400);
  w.commit();

  hb::storage::retention_policy policy;
  policy.max_age_s = 30 * 86400;
  policy.max_bytes = 0;
  policy.rows_per_step = 7; // several steps per run
  hb::storage::pruner pruner;
  int steps = 0;
  std::vector<std::string> marked;
  while (pruner.step(w.database(), policy, now)) {
    REQUIRE(++steps < 100);
    for (auto& id : pruner.take_pruned())
      marked.push_back(id);
  }
  CHECK(steps > 2);
  CHECK(marked == std::vector<std::string>{"old-a1", "old-a2"}); // what caches must drop
  CHECK(pruner.take_pruned().empty());

  hb::storage::log_reader r(log.path);
  CHECK(pruned(r, "old-a1"));
  CHECK(pruned(r, "old-a2"));
  CHECK(rows_of(w, "old-a1") == 0);
  CHECK(rows_of(w, "old-a2") == 0);
  CHECK_FALSE(pruned(r, "old-b1"));
  CHECK_FALSE(pruned(r, "new-a3"));
  CHECK_FALSE(pruned(r, "latest-a"));
  CHECK_FALSE(pruned(r, "live"));
  CHECK(rows_of(w, "latest-a") == 40);
  CHECK(r.read_run("new-a3", 0, 0)->deltas.size() == 20);
}

TEST_CASE("over the size limit the oldest finished runs go first", "[retention]") {
  temp_log log;
  hb::storage::log_writer w(log.path);
  double now = 1'000'000;
  for (int i = 0; i < 6; ++i)
    finished_run(w, "r" + std::to_string(i), "s", now - 10 + i, 2000);
  hb::storage::retention_policy policy;
  policy.max_age_s = 0;
  policy.max_bytes = hb::storage::pruner::live_bytes(w.database()) / 2;
  hb::storage::pruner pruner;
  while (pruner.step(w.database(), policy, now)) {
  }
  hb::storage::log_reader r(log.path);
  CHECK(pruned(r, "r0"));
  CHECK(pruned(r, "r1"));
  CHECK_FALSE(pruned(r, "r5")); // the session's latest run
  CHECK(hb::storage::pruner::live_bytes(w.database()) <= policy.max_bytes);
}

TEST_CASE("nothing is due, nothing is touched", "[retention]") {
  temp_log log;
  hb::storage::log_writer w(log.path);
  finished_run(w, "r1", "s", 100);
  finished_run(w, "r2", "s", 200);
  hb::storage::pruner pruner;
  CHECK_FALSE(pruner.step(w.database(), {}, 300));
  hb::storage::log_reader r(log.path);
  CHECK_FALSE(pruned(r, "r1"));
}
