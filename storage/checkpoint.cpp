#include "storage/checkpoint.hpp"

#include "storage/log_file.hpp"

namespace hb::storage {

checkpoint_connection::checkpoint_connection(const std::string& path) : db_(path, SQLite::OPEN_READWRITE) {
  db_.setBusyTimeout(1000);
  limit_page_cache(db_);
}

bool checkpoint_connection::checkpoint(std::string* failure) {
  try {
    SQLite::Statement q(db_, "PRAGMA wal_checkpoint(PASSIVE)");
    // (busy, frames in the WAL, frames copied into the database file)
    if (q.executeStep())
      return q.getColumn(0).getInt() == 0 && q.getColumn(1).getInt() == q.getColumn(2).getInt();
  } catch (const std::exception& e) {
    if (failure)
      *failure = e.what();
  }
  return false;
}

int64_t checkpoint_connection::data_version() { return db_.execAndGet("PRAGMA data_version").getInt64(); }

} // namespace hb::storage
