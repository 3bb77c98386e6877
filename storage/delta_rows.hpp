// A run's deltas in `deltas` rows that may each hold several (FORMAT.md,
// schema version 6): a row at `seq` with `n` deltas holds deltas seq ..
// seq + n - 1, their texts one after another in `text`, and, when n > 1,
// each one's byte length in `sizes`. A streaming run's deltas arrive in
// bunches (a worker's `texts` frame, what a writer's queue held); one row per
// bunch costs SQLite one B-tree insert where a row per delta cost one each,
// which was about half of the daemon's CPU per streamed delta.
#pragma once

#include <SQLiteCpp/SQLiteCpp.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hb::storage {

// `sizes` for texts of these byte lengths: each as an unsigned LEB128
// varint (one byte for a delta shorter than 128 bytes).
void append_delta_size(std::string& sizes, uint64_t size);

// Splits a row's text into its n deltas by its sizes. A row whose sizes do
// not add up to its text (a damaged log: `verify` reports it) still yields
// its text in pieces, n of them (at most one more than its sizes have
// bytes), the short ones empty, the last taking what is left. Returns
// whether the sizes were whole and exact.
bool split_delta_row(std::string_view text, std::string_view sizes, int64_t n, std::vector<std::string_view>& out);

// A TEXT or BLOB column's bytes, valid until the statement moves on.
std::string_view column_bytes(SQLite::Statement& row, int index);

// A one-value query about a run (its ?1) answered, the statement left reset.
int64_t integer_for_run(SQLite::Statement& query, int64_t run_no);

// Whether the log's `deltas` has version 6's columns (the log tools read
// older logs as they are, a delta per row).
bool has_packed_deltas(SQLite::Database& db);

// Reads a run's deltas one at a time from any seq, across packed rows.
class delta_cursor {
public:
  explicit delta_cursor(SQLite::Database& db);

  int64_t count(int64_t run_no);
  // Starts at delta `from` (inside a row when a row holds it).
  void open(int64_t run_no, int64_t from);
  // The next delta, false after the last (and from then on, until the next
  // open()); at(), seq() and text() describe it until the next call
  // (text() points into SQLite's row).
  bool next();
  int64_t seq() const { return row_seq_ + static_cast<int64_t>(piece_); }
  double at() const { return at_; }
  std::string_view text() const { return pieces_[piece_]; }
  // Lets go of the rows being read (a statement left mid-way keeps the
  // database's read snapshot open).
  void close();

private:
  delta_cursor(SQLite::Database& db, bool packed);
  bool load_row();

  SQLite::Statement count_;
  SQLite::Statement rows_;
  std::vector<std::string_view> pieces_; // the current row's; none before the first row and after the last
  size_t piece_ = 0;
  int64_t skip_ = 0; // deltas of the first row before `from`
  int64_t row_seq_ = 0;
  double at_ = 0;
  bool done_ = false; // past the last row, or closed
};

} // namespace hb::storage
