// The event log's files are the owner's alone, whatever the umask (issue 21,
// item 9): directories made 0700, the database and its -wal and -shm 0600,
// earlier readable files tightened, a symbolic link refused.
#include "storage/log_writer.hpp"
#include "storage/private_files.hpp"
#include "temp_dir.hpp"

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

using namespace hb::storage;

namespace {

mode_t mode_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

// The usual umask of a login, for the length of a test.
struct umask_022 {
  mode_t old = ::umask(022);
  ~umask_022() { ::umask(old); }
};

} // namespace

TEST_CASE("a new log's directories are 0700 and its files 0600 under umask 022", "[storage]") {
  umask_022 mask;
  hb::test::temp_dir dir;
  std::string logs = dir.file("a/b");
  make_private_dirs(logs);
  CHECK(mode_of(dir.file("a")) == 0700);
  CHECK(mode_of(logs) == 0700);
  make_private_dirs(logs); // again: nothing to do, no error
  {
    log_writer w(logs + "/events.db");
    w.open_run("r", "s", 1.0);
    w.commit();
    CHECK(mode_of(logs + "/events.db") == 0600);
    CHECK(mode_of(logs + "/events.db-wal") == 0600);
    CHECK(mode_of(logs + "/events.db-shm") == 0600);
  }
}

TEST_CASE("a log readable by others is made owner-only, side files too", "[storage]") {
  umask_022 mask;
  hb::test::temp_log log;
  for (const char* suffix : {"", "-wal", "-journal"}) {
    std::ofstream{log.path + suffix}; // group-writable and world-readable, as a shared setup may leave it
    ::chmod((log.path + suffix).c_str(), 0664);
  }
  prepare_private_log_file(log.path);
  CHECK(mode_of(log.path) == 0600);
  CHECK(mode_of(log.path + "-wal") == 0600);
  CHECK(mode_of(log.path + "-journal") == 0600);
  ::chmod(log.path.c_str(), 0400); // an owner's own choice narrower than 0600 stays
  prepare_private_log_file(log.path);
  CHECK(mode_of(log.path) == 0400);
}

TEST_CASE("a symbolic link where the log goes is refused, not followed", "[storage]") {
  hb::test::temp_dir dir;
  std::string target = dir.file("elsewhere.db"), link = dir.file("events.db");
  REQUIRE(::symlink(target.c_str(), link.c_str()) == 0);
  CHECK_THROWS_WITH(prepare_private_log_file(link), Catch::Contains("is a symbolic link"));
  CHECK_THROWS_WITH(log_writer(link), Catch::Contains("is a symbolic link"));
  CHECK(::access(target.c_str(), F_OK) != 0);
  std::ofstream(dir.file("file")).put('x');
  CHECK_THROWS_WITH(make_private_dirs(dir.file("file")), Catch::Contains("is not a directory"));
}
