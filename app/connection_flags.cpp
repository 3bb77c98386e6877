#include "app/connection_flags.hpp"

namespace hb::app {

void add_connection_flags(CLI::App& serve, connection_flags& flags) {
  serve.add_option("--read-timeout-ms", flags.read_timeout_ms,
                   "deadline for a whole request line, from its first byte (or from connecting): a "
                   "connection that has not completed it by then gets an error, however it trickles in")
    ->envname("HERMES_BRIDGE_READ_TIMEOUT_MS")
    ->check(CLI::PositiveNumber)
    ->capture_default_str();
  serve.add_option("--write-timeout-ms", flags.write_timeout_ms,
                   "a connection whose client takes none of its waiting answer for this long is cut "
                   "(subscriptions: --subscriber-stall-ms)")
    ->envname("HERMES_BRIDGE_WRITE_TIMEOUT_MS")
    ->check(CLI::PositiveNumber)
    ->capture_default_str();
  serve.add_option("--keepalive-idle-ms", flags.keepalive_idle_ms,
                   "a keepalive connection with nothing in flight is closed after this long")
    ->envname("HERMES_BRIDGE_KEEPALIVE_IDLE_MS")
    ->check(CLI::PositiveNumber)
    ->capture_default_str();
  serve.add_option("--subscriber-buffer-bytes", flags.subscriber_buffer_bytes,
                   "a subscriber this far behind (bytes written, not yet read) is cut off with "
                   "the cursors to resume from")
    ->envname("HERMES_BRIDGE_SUBSCRIBER_BUFFER_BYTES")
    ->check(CLI::PositiveNumber)
    ->capture_default_str();
  serve.add_option("--subscriber-stall-ms", flags.subscriber_stall_ms,
                   "a subscriber that has not read what it was sent for this long is cut off with "
                   "the cursors to resume from")
    ->envname("HERMES_BRIDGE_SUBSCRIBER_STALL_MS")
    ->check(CLI::PositiveNumber)
    ->capture_default_str();
  serve.add_option("--client-buffer-bytes", flags.client_buffer_bytes,
                   "a connection with this many bytes of answers waiting for its client to read "
                   "them is closed (one larger answer still goes out whole)")
    ->envname("HERMES_BRIDGE_CLIENT_BUFFER_BYTES")
    ->check(CLI::PositiveNumber)
    ->capture_default_str();
  serve.add_option("--max-queued-answer-bytes", flags.max_queued_answer_bytes,
                   "bytes of answers not yet taken by their clients, all connections together; an "
                   "answer over 64 KiB that would pass it is replaced by an error (one answer alone, "
                   "and smaller answers, always go out)")
    ->envname("HERMES_BRIDGE_MAX_QUEUED_ANSWER_BYTES")
    ->check(CLI::PositiveNumber)
    ->capture_default_str();
  serve.add_option("--max-line-bytes", flags.max_line_bytes,
                   "longest request line accepted (before a --token-file token has been shown: 64 KiB)")
    ->envname("HERMES_BRIDGE_MAX_LINE_BYTES")
    ->check(CLI::PositiveNumber)
    ->capture_default_str();
}

void apply_connection_flags(const connection_flags& flags, actors::daemon_settings& settings) {
  settings.max_line_bytes = flags.max_line_bytes;
  settings.read_timeout = std::chrono::milliseconds(flags.read_timeout_ms);
  settings.write_timeout = std::chrono::milliseconds(flags.write_timeout_ms);
  settings.keepalive_idle = std::chrono::milliseconds(flags.keepalive_idle_ms);
  settings.subscriber_buffer_bytes = flags.subscriber_buffer_bytes;
  settings.subscriber_stall = std::chrono::milliseconds(flags.subscriber_stall_ms);
  settings.client_buffer_bytes = flags.client_buffer_bytes;
  settings.max_queued_answer_bytes = flags.max_queued_answer_bytes;
}

} // namespace hb::app
