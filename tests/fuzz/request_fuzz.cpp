// libFuzzer target: arbitrary bytes through the request path's pure part:
// framing, decoding, every field coercion the dispatcher applies, and the
// answer encoders. Anything but a wire_error escaping is a crash to report
// (an uncaught exception here would kill the daemon's broker).
#include "protocol/json_text.hpp"
#include "protocol/line_reader.hpp"
#include "protocol/request.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

namespace {

const char* const fields[] = {"action", "session_id", "run_id", "message", "cursor", "event_cursor",
                              "wait_ms", "timeout", "choice", "approval_id", "request_id", "messages",
                              "keepalive", "id", "token", "include_output", "conversation_history"};

void exercise(const std::string& line) {
  using namespace hb::protocol;
  try {
    json req = decode_request(line);
    for (const char* key : fields) {
      try {
        (void)field_str(req, key);
        (void)field_int(req, key);
        (void)field_float(req, key);
        (void)field_truthy(req, key);
        (void)py_repr(field(req, key));
      } catch (const wire_error& e) {
        (void)error_line(e);
      }
    }
    std::string text = dumps(req);
    (void)decode_request(text); // what we write, we can read back
  } catch (const wire_error& e) {
    (void)error_line(e);
  }
  (void)to_valid_utf8(line);
  (void)py_strip(line);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  hb::protocol::line_reader reader(4096);
  reader.feed(bytes);
  while (auto line = reader.next_line())
    exercise(*line);
  exercise(reader.take_rest());
  return 0;
}
