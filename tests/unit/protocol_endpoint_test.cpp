#include "protocol/endpoint.hpp"

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <stdexcept>

using hb::protocol::parse_endpoint;

namespace {
std::string message_of(const std::string& text) {
  try {
    parse_endpoint(text);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}
} // namespace

TEST_CASE("endpoints parse like the seed's", "[endpoint]") {
  auto ipc = parse_endpoint("ipc:///tmp/x/bridge.sock");
  CHECK(ipc.type == hb::protocol::endpoint::kind::ipc);
  CHECK(ipc.path == "/tmp/x/bridge.sock");
  auto tcp = parse_endpoint("tcp://127.0.0.1:18765");
  CHECK(tcp.type == hb::protocol::endpoint::kind::tcp);
  CHECK(tcp.host == "127.0.0.1");
  CHECK(tcp.port == 18765);
  CHECK(parse_endpoint("tcp://:9000").host == "127.0.0.1");
  CHECK(parse_endpoint("tcp://[::1]:9000").host == "::1");
}

TEST_CASE("bad endpoints get the seed's messages", "[endpoint]") {
  CHECK(message_of("http://x") == "unsupported endpoint scheme: http://x");
  CHECK(message_of("tcp://127.0.0.1") == "tcp endpoint requires a port: tcp://127.0.0.1");
  CHECK(message_of("tcp://127.0.0.1:0") == "tcp endpoint requires a port: tcp://127.0.0.1:0");
  CHECK(message_of("tcp://127.0.0.1:99999") == "Port out of range 0-65535");
  CHECK(message_of("tcp://h:abc") == "Port could not be cast to integer value as 'abc'");
}

TEST_CASE("an ipc endpoint creates its directory and replaces a stale socket file", "[endpoint]") {
  char dir_template[] = "/tmp/hb-endpoint-XXXXXX";
  std::string dir = ::mkdtemp(dir_template);
  auto ep = parse_endpoint("ipc://" + dir + "/sub/bridge.sock");
  int fd = hb::protocol::listen_on(ep);
  REQUIRE(fd >= 0);
  ::close(fd);
  int again = hb::protocol::listen_on(ep);
  REQUIRE(again >= 0);
  ::close(again);
  struct stat st {};
  CHECK(::stat(ep.path.c_str(), &st) == 0);
  CHECK(S_ISSOCK(st.st_mode));
  ::unlink(ep.path.c_str());
}
