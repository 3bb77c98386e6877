// Rows of the event log as the daemon and the log tools carry them (storage/FORMAT.md
// describes every column). Text columns holding JSON (config, history,
// result, event bodies) stay the exact stored text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace hb::storage {

// The statuses a run can have in the log (storage/FORMAT.md).
inline bool is_run_status(std::string_view s) {
  return s == "running" || s == "complete" || s == "interrupted" || s == "error";
}

struct run_row {
  int64_t run_no = 0; // internal key; not carried by exports
  std::string run_id;
  std::string session_id;
  std::string status;
  double started_at = 0;
  std::optional<double> ended_at;
  std::optional<std::string> result; // JSON text
  std::optional<std::string> error;
  std::optional<double> pruned_at;
  std::optional<std::string> user_message; // JSON text; none for replays and logs before version 3
};

// A row of `sessions`, as the daemon writes it and the tools read it.
struct session_row {
  std::string session_id;
  double created_at = 0;
  double last_used_at = 0;
  std::string config = "{}";  // JSON object text
  std::string history = "[]"; // JSON array text
  bool history_known = true;  // writing: false keeps the stored history (a dormant session has not loaded it)
  int64_t message_count = 0;
  bool destroyed = false;
};

// A delta as the writer takes it: its text, when the agent produced it and
// the seq of the host's frame that carried it (0: a host that numbers nothing).
struct timed_text {
  std::string text;
  double at;
  uint64_t host_seq = 0;
};

// One delta (text) or event (body) row.
struct seq_row {
  int64_t seq = 0;
  double at = 0;
  std::string text;
};

} // namespace hb::storage
