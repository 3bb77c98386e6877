// The export file: JSON lines carrying runs (with every delta and event) and
// their sessions from one event log to another. Pure encoding and decoding,
// unit tested in tests/unit/storage_export_format_test.cpp.
//
//   {"format": "hermes-bridge-export", "version": 1, "type": "header", "schema_version": 2,
//    "exported_at": T, "source": PATH, "sessions": S, "runs": R}
//   {"type": "session", "session_id", "created_at", "last_used_at", "config", "history",
//    "message_count", "destroyed"}                                   (S lines)
//   {"type": "run", "run_id", "session_id", "status", "started_at", "ended_at", "result",
//    "error", "pruned_at", "user_message" (JSON text; only when the run has one)}  (R lines)
//   {"type": "delta", "run_id", "seq", "at", "text"}                 (each run's deltas, by seq)
//   {"type": "event", "run_id", "seq", "at", "body"}                 (each run's events, by seq,
//                                                                    its deltas' stream.delta events included)
//   {"type": "end", "sessions": S, "runs": R, "deltas": D, "events": E}
//
// Columns holding JSON text (config, history, result, body) are carried as
// JSON strings holding that exact text, so an imported run answers with the
// same bytes; times are floats written with Python's repr digits, which read
// back as the same double.
#pragma once

#include "storage/log_rows.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace hb::storage {

constexpr const char* export_format_name = "hermes-bridge-export";
constexpr int export_format_version = 1;

struct export_header {
  int version = export_format_version;
  int schema_version = 0;
  double exported_at = 0;
  std::string source;
  int64_t sessions = 0;
  int64_t runs = 0;
};

struct export_counts {
  int64_t sessions = 0, runs = 0, deltas = 0, events = 0;
};

// Each returns one line without its newline.
std::string encode_header(const export_header& h);
std::string encode_session(const session_row& s);
std::string encode_run(const run_row& r);
std::string encode_delta(const std::string& run_id, const seq_row& d);
std::string encode_event(const std::string& run_id, const seq_row& e);
std::string encode_end(const export_counts& c);

struct export_run {
  run_row row; // run_no unused
  std::vector<seq_row> deltas, events;
};

struct export_bundle {
  export_header header;
  std::vector<session_row> sessions;
  std::vector<export_run> runs;
  export_counts counts;
};

// What is wrong with an export file, and on which line (1-based; 0: the file
// as a whole).
struct export_damaged : std::runtime_error {
  export_damaged(size_t line, const std::string& why);
  size_t line;
};

// Receives an export's rows one line at a time, each already checked, so a
// file of any size can be loaded without holding it. `line` is the row's
// line in the file (for messages); what a sink throws passes through.
class export_sink {
public:
  virtual ~export_sink() = default;
  virtual void header(const export_header&) {}
  virtual void session(session_row&& s, size_t line) = 0;
  virtual void run(run_row&& r, size_t line) = 0;
  virtual void delta(const std::string& run_id, seq_row&& d, size_t line) = 0;
  virtual void event(const std::string& run_id, seq_row&& e, size_t line) = 0;
};

// Reads an export line by line, checking everything: the header first and
// a version this build reads, each run before its rows and with a status the
// log knows, each run's deltas and events contiguous from seq 0, no run or
// session twice, and an end line whose counts match (so a truncated file is
// caught). With a sink, it keeps only the ids and next seqs of the runs
// (finish() then has no rows in its bundle); without one, it collects the
// whole file into the bundle finish() returns.
class export_decoder {
public:
  export_decoder() = default;
  explicit export_decoder(export_sink& sink) : sink_(&sink) {}
  void line(std::string_view text); // throws export_damaged
  export_bundle finish();           // throws export_damaged

private:
  struct run_progress {
    size_t index = 0; // in bundle_.runs, when collecting
    int64_t next_delta = 0, next_event = 0;
    int64_t delta_events = 0; // its stream.delta events: one per delta
  };

  export_sink* sink_ = nullptr;
  size_t line_no_ = 0;
  bool header_seen_ = false, end_seen_ = false;
  export_bundle bundle_;
  export_counts end_;
  std::unordered_map<std::string, run_progress> runs_;
  std::unordered_set<std::string> session_ids_;
};

} // namespace hb::storage
