#include "protocol/names.hpp"
#include "protocol/sha256.hpp"
#include "protocol/wire_error.hpp"

#include <catch2/catch.hpp>

#include <string>

using hb::protocol::check_profile_name;
using hb::protocol::sha256_hex;

TEST_CASE("plain profile names pass", "[names]") {
  for (const char* name : {"", "default", "work", "Work_2", "team.alpha", "a-b", "_private", "x"})
    CHECK_NOTHROW(check_profile_name(name));
  CHECK_NOTHROW(check_profile_name(std::string(64, 'p')));
}

TEST_CASE("profile names that could leave the hermes home are a ValueError", "[names]") {
  for (std::string name : std::initializer_list<std::string>{"..", ".", "../etc", "a/..", "/etc", "/", "a/b", "a\\b", "..hidden", ".env", "-rf",
                           "a b", "a\nb", "tab\t", std::string("nul\0x", 5), "caf\xc3\xa9",
                           std::string(65, 'p')}) {
    INFO(name);
    try {
      check_profile_name(name);
      FAIL("accepted");
    } catch (const hb::protocol::wire_error& e) {
      CHECK(e.type == "ValueError");
      CHECK(std::string(e.what()).find("plain name") != std::string::npos);
    }
  }
}

TEST_CASE("sha256 matches the FIPS 180-4 examples", "[names]") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // Lengths around the padding boundary (55, 56, 64 bytes) and a million 'a's.
  CHECK(sha256_hex(std::string(55, 'a')) == "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  CHECK(sha256_hex(std::string(56, 'a')) == "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
  CHECK(sha256_hex(std::string(64, 'a')) == "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
  CHECK(sha256_hex(std::string(1000000, 'a')) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}
