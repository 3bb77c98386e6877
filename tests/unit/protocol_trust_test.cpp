#include "protocol/trust.hpp"

#include <catch2/catch.hpp>

#include "temp_dir.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>
#include <string>

using hb::protocol::reach;
using hb::protocol::reach_of;

namespace {

int bound_v4(const char* address) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  ::inet_pton(AF_INET, address, &a.sin_addr);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  return fd;
}

std::string refusal(const std::string& path) {
  try {
    hb::protocol::require_trusted_dir(path, "socket directory");
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST_CASE("loopback is decided by the address a socket is bound to", "[trust]") {
  for (const char* address : {"127.0.0.1", "127.3.4.5"}) {
    int fd = bound_v4(address);
    CHECK(reach_of(fd).who == reach::loopback);
    CHECK(reach_of(fd).address.rfind(address, 0) == 0);
    ::close(fd);
  }
  int any = bound_v4("0.0.0.0");
  CHECK(reach_of(any).who == reach::network);
  ::close(any);
  int v6 = ::socket(AF_INET6, SOCK_STREAM, 0);
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_loopback;
  if (v6 >= 0 && ::bind(v6, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0)
    CHECK(reach_of(v6).who == reach::loopback);
  if (v6 >= 0)
    ::close(v6);
  hb::test::temp_dir dir;
  int unix_fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un u{};
  u.sun_family = AF_UNIX;
  std::string path = dir.file("s.sock");
  std::memcpy(u.sun_path, path.c_str(), path.size() + 1);
  REQUIRE(::bind(unix_fd, reinterpret_cast<sockaddr*>(&u), sizeof u) == 0);
  CHECK(reach_of(unix_fd).who == reach::unix_socket);
  ::close(unix_fd);
}

TEST_CASE("a directory others can write to is refused, naming it", "[trust]") {
  hb::test::temp_dir dir;
  CHECK(refusal(dir.path) == "");
  ::chmod(dir.path.c_str(), 0770);
  CHECK(refusal(dir.path).find(dir.path + " is writable by group or others") != std::string::npos);
  ::chmod(dir.path.c_str(), 0700);
  std::string made = dir.file("a/b/c");
  hb::protocol::make_trusted_dir(made, "native session directory");
  struct stat st {};
  REQUIRE(::stat(dir.file("a/b").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
}

namespace {
std::string refused_to_make(const std::string& path) {
  try {
    hb::protocol::make_trusted_dir(path, "agent worker directory");
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}
} // namespace

TEST_CASE("a directory made below one others can write to is refused, naming that one", "[trust]") {
  hb::test::temp_dir dir;
  std::string root = dir.file("hermes-bridge-1000"); // made first by someone else, say
  REQUIRE(::mkdir(root.c_str(), 0700) == 0);
  ::chmod(root.c_str(), 0777);
  std::string message = refused_to_make(root + "/workers");
  CHECK(message.find("agent worker directory " + root + " is writable by group or others") != std::string::npos);
  struct stat st {};
  CHECK(::stat((root + "/workers").c_str(), &st) != 0); // nothing made below it
  CHECK_THROWS(hb::protocol::require_trusted_path(root + "/workers/x", "agent worker directory"));
  ::chmod(root.c_str(), 0700);
  CHECK(refused_to_make(root + "/workers") == "");
  CHECK_NOTHROW(hb::protocol::require_trusted_path(root + "/workers/not-yet", "agent worker directory"));
}

TEST_CASE("a symlink on the way is followed and what it points to is checked", "[trust]") {
  hb::test::temp_dir dir;
  std::string open_dir = dir.file("open");
  REQUIRE(::mkdir(open_dir.c_str(), 0700) == 0);
  ::chmod(open_dir.c_str(), 0777);
  std::string link = dir.file("hermes-bridge-1000");
  REQUIRE(::symlink(open_dir.c_str(), link.c_str()) == 0);
  CHECK(refused_to_make(link + "/workers").find(open_dir + " is writable by group or others") != std::string::npos);
  ::chmod(open_dir.c_str(), 0700);
  CHECK(refused_to_make(link + "/workers") == "");
}

TEST_CASE("a root-owned sticky directory on the way passes", "[trust]") {
  struct stat st {};
  REQUIRE(::stat("/tmp", &st) == 0);
  if (st.st_uid != 0 || !(st.st_mode & S_ISVTX)) {
    WARN("/tmp is not a root-owned sticky directory here: nothing to check");
    return;
  }
  hb::test::temp_dir dir; // made in /tmp
  CHECK(refused_to_make(dir.file("a/b")) == "");
}
