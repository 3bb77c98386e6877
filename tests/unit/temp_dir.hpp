// Scratch space for unit tests: a fresh directory under /tmp, removed with
// everything in it when the test ends.
#pragma once

#include <filesystem>
#include <string>

#include <stdlib.h>

namespace hb::test {

struct temp_dir {
  temp_dir() {
    char name[] = "/tmp/hb-test-XXXXXX";
    path = ::mkdtemp(name);
  }
  ~temp_dir() { std::filesystem::remove_all(path); }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  std::string file(const std::string& name) const { return path + "/" + name; }
  std::string path;
};

// An event log's path, in a directory of its own.
struct temp_log {
  temp_dir dir;
  std::string path = dir.file("events.db");
};

} // namespace hb::test
