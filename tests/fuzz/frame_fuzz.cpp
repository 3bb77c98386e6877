// libFuzzer target: arbitrary bytes as the stream a worker writes (or the
// daemon writes to a worker), cut into chunks as a socket would deliver
// them. Anything but a frame_error escaping is a crash to report (the
// daemon's reading thread would die with it), and whatever decodes must
// encode and decode again to the same frame. A body the fast way for
// streamed texts takes, the general decoder takes as the same frame.
#include "bridge/worker/frames.hpp"
#include "bridge/worker/stream_decoder.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

using namespace hb::bridge::worker;

namespace {

template <class Decode> void check(const std::string& body, Decode decode) {
  try {
    auto frame = decode(body);
    std::string again = encode(frame);
    auto back = decode(again.substr(4));
    if (back.index() != frame.index() || encode(back) != again)
      std::abort();
  } catch (const frame_error&) {
  }
}

void check_fast_way(const std::string& body) {
  auto fast = decode_stream_quickly(body);
  if (!fast)
    return;
  try {
    if (encode(decode_from_worker_generally(body)) != encode(*fast))
      std::abort();
  } catch (const frame_error&) {
    std::abort(); // accepted quickly, refused generally
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0)
    return 0;
  size_t chunk = 1 + data[0] % 64; // how the bytes arrive
  frame_reader reader;
  try {
    for (size_t i = 1; i < size; i += chunk) {
      reader.feed(reinterpret_cast<const char*>(data) + i, std::min(chunk, size - i));
      while (auto body = reader.next()) {
        check(*body, decode_from_worker);
        check(*body, [](const std::string& b) { return decode_taking(std::string(b)); });
        check(*body, decode_to_worker);
        check_fast_way(*body);
      }
    }
  } catch (const frame_error&) {
  }
  // The bytes as one body, too (most inputs never make a whole frame).
  std::string body(reinterpret_cast<const char*>(data), size);
  check(body, decode_from_worker);
  check(body, [](const std::string& b) { return decode_taking(std::string(b)); });
  check(body, decode_to_worker);
  check_fast_way(body);
  return 0;
}
