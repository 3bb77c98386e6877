// The log checkpointer: it moves committed pages from the WAL into the
// database file, sleeps without a timer while nothing is new, wakes at the
// next commit, and keeps trying a log it could not open.
#define CAF_SUITE log_checkpointer
#include "tests/actors/actor_fixture.hpp"

#include <filesystem>

using namespace hb::actors;

namespace {

constexpr auto period = std::chrono::milliseconds(1000);

struct checkpointer_fixture : hb::test::log_fixture {
  // Commits a run with `bytes` of output through the writer's connection,
  // which never checkpoints: it all stays in the WAL.
  void commit_output(const std::string& run_id, size_t bytes) {
    log->open_run(run_id, "s1", 100.0);
    log->append_delta(run_id, std::string(bytes, 'x'), 101.0);
    log->commit();
  }

  uintmax_t database_file_bytes() { return std::filesystem::file_size(db.path); }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(log_checkpointer_tests, checkpointer_fixture)

CAF_TEST(committed pages move from the WAL into the database file) {
  commit_output("r1", 1 << 20);
  auto before = database_file_bytes();
  keep(spawn_log_checkpointer(sys, db.path, period, spawn_mode::scheduled));
  deliver(); // its first look
  CAF_CHECK_GREATER(database_file_bytes(), before + (1 << 20) - 1);
}

CAF_TEST(an idle checkpointer sleeps until a commit wakes it) {
  keep(spawn_log_checkpointer(sys, db.path, period, spawn_mode::scheduled));
  deliver();
  CAF_REQUIRE(sched.has_pending_timeout()); // the first look counts as news
  let_pass(period);
  CAF_CHECK(!sched.has_pending_timeout()); // nothing new: asleep, no timer
  commit_output("r1", 1 << 20);
  auto before = database_file_bytes();
  wake_checkpointer(); // as the writer does after each commit
  CAF_CHECK_GREATER(deliver(), 0u);
  CAF_CHECK_GREATER(database_file_bytes(), before + (1 << 20) - 1);
  CAF_CHECK(sched.has_pending_timeout()); // awake again for a period
}

CAF_TEST(a checkpointer that cannot open the log tries again later) {
  std::string later = db.dir.file("later.db");
  keep(spawn_log_checkpointer(sys, later, period, spawn_mode::scheduled));
  deliver();
  CAF_REQUIRE(sched.has_pending_timeout()); // the retry, half a second on
  hb::storage::log_writer other(later, hb::storage::writer_options{"NORMAL", false});
  other.open_run("r1", "s1", 100.0);
  other.append_delta("r1", std::string(1 << 20, 'x'), 101.0);
  other.commit();
  auto before = std::filesystem::file_size(later);
  let_pass(std::chrono::milliseconds(500));
  CAF_CHECK_GREATER(std::filesystem::file_size(later), before + (1 << 20) - 1);
}

CAF_TEST_FIXTURE_SCOPE_END()
