// libFuzzer target: arbitrary bytes through the request path's pure part:
// framing, decoding, every field coercion the dispatcher applies, and the
// answer encoders, and the checks agent JSON passes on its way into the log.
// Anything but a wire_error escaping is a crash to report (an uncaught
// exception here would kill the daemon's broker), and so is a stack overflow:
// inputs may be long (scripts/fuzz raises -max_len) and nest deeply (the
// corpus has 100,000-level seeds), which the old 4 KiB cap never let through.
#include "protocol/json_check.hpp"
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
  // Whatever an agent sends, what goes into answers must parse.
  std::string value = checked_json_value(line);
  if (!json::accept(checked_event_json(line)) || (!value.empty() && !json::accept(value)))
    __builtin_trap();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  hb::protocol::line_reader reader(1u << 20); // the daemon's cap is larger still; deep lines are short enough
  reader.feed(bytes);
  while (auto line = reader.next_line())
    exercise(*line);
  exercise(reader.take_rest());
  return 0;
}
