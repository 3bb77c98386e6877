#include "storage/delta_rows.hpp"

#include <algorithm>

namespace hb::storage {

void append_delta_size(std::string& sizes, uint64_t size) {
  do {
    auto low = static_cast<unsigned char>(size & 0x7f);
    size >>= 7;
    sizes.push_back(static_cast<char>(size ? low | 0x80 : low));
  } while (size);
}

namespace {

// The next varint of `sizes` from `at`; false when none is whole there.
bool read_size(std::string_view sizes, size_t& at, uint64_t& size) {
  size = 0;
  for (int shift = 0; at < sizes.size() && shift < 64; shift += 7) {
    auto byte = static_cast<unsigned char>(sizes[at++]);
    size |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if (!(byte & 0x80))
      return true;
  }
  return false;
}

} // namespace

std::string_view column_bytes(SQLite::Statement& row, int index) {
  auto column = row.getColumn(index);
  const auto* data = static_cast<const char*>(column.getBlob()); // before getBytes (SQLite's rule)
  return {data, static_cast<size_t>(column.getBytes())};
}

bool split_delta_row(std::string_view text, std::string_view sizes, int64_t n, std::vector<std::string_view>& out) {
  out.clear();
  if (n <= 1) {
    out.push_back(text);
    return n == 1 && sizes.empty();
  }
  // Each size takes a byte at least: a row that claims more deltas than
  // that is damaged, and not taken at its word (it could claim billions).
  bool exact = n <= static_cast<int64_t>(sizes.size());
  int64_t pieces = exact ? n : static_cast<int64_t>(sizes.size()) + 1;
  size_t at = 0, offset = 0;
  for (int64_t i = 0; i < pieces; ++i) {
    uint64_t size = 0;
    if (!read_size(sizes, at, size))
      exact = false;
    size_t left = text.size() - offset;
    if (i == pieces - 1) {
      exact = exact && size == left;
      size = left;
    } else if (size > left) {
      exact = false;
      size = left;
    }
    out.push_back(text.substr(offset, size));
    offset += size;
  }
  return exact && at == sizes.size();
}

bool has_packed_deltas(SQLite::Database& db) {
  SQLite::Statement q(db, "SELECT 1 FROM pragma_table_info('deltas') WHERE name='n'");
  return q.executeStep();
}

namespace {

// A log the tools read as it is (before version 6): one delta per row.
std::string delta_count_sql(bool packed) {
  return "SELECT coalesce((SELECT seq + " + std::string(packed ? "n" : "1") +
         " FROM deltas WHERE run_no=?1 ORDER BY seq DESC LIMIT 1), 0)";
}

// From the row that holds delta ?2: the last row starting at or before it.
std::string delta_rows_sql(bool packed) {
  return "SELECT seq, at, " + std::string(packed ? "n, sizes" : "1, NULL") + ", text" +
         " FROM deltas WHERE run_no=?1 AND seq >="
         " coalesce((SELECT max(seq) FROM deltas WHERE run_no=?1 AND seq<=?2), 0) ORDER BY seq";
}

} // namespace

delta_cursor::delta_cursor(SQLite::Database& db)
  : delta_cursor(db, has_packed_deltas(db)) {}

delta_cursor::delta_cursor(SQLite::Database& db, bool packed)
  : count_(db, delta_count_sql(packed)), rows_(db, delta_rows_sql(packed)) {}

int64_t integer_for_run(SQLite::Statement& query, int64_t run_no) {
  query.reset();
  query.bind(1, run_no);
  query.executeStep();
  int64_t n = query.getColumn(0).getInt64();
  query.reset();
  return n;
}

int64_t delta_cursor::count(int64_t run_no) { return integer_for_run(count_, run_no); }

void delta_cursor::open(int64_t run_no, int64_t from) {
  rows_.reset();
  rows_.bind(1, run_no);
  rows_.bind(2, from);
  skip_ = from;
  done_ = false;
  pieces_.clear();
  piece_ = 0;
}

bool delta_cursor::load_row() {
  if (done_ || !rows_.executeStep()) {
    pieces_.clear();
    done_ = true; // (stepping a finished statement again would throw)
    return false;
  }
  int64_t seq = row_seq_ = rows_.getColumn(0).getInt64();
  at_ = rows_.getColumn(1).getDouble();
  split_delta_row(column_bytes(rows_, 4), column_bytes(rows_, 3), rows_.getColumn(2).getInt64(), pieces_);
  // Only the first row can start before `from`.
  piece_ = skip_ > seq ? static_cast<size_t>(std::min<int64_t>(skip_ - seq, static_cast<int64_t>(pieces_.size()))) : 0;
  skip_ = 0;
  return true;
}

bool delta_cursor::next() {
  if (piece_ + 1 < pieces_.size()) { // (a row has a piece at least)
    ++piece_;
    return true;
  }
  while (load_row())
    if (piece_ < pieces_.size())
      return true;
  return false;
}

void delta_cursor::close() {
  rows_.reset();
  done_ = true;
  pieces_.clear();
}

} // namespace hb::storage
