// The WAL checkpoint, on a connection of its own. Checkpoints copy the WAL
// back into the database file and fsync it; done by the committing writer
// (SQLite's default), each one would hold up every delta waiting behind it,
// so the daemon's writer never checkpoints (writer_options) and the log
// checkpointer does it through this connection, which does not block appends.
#pragma once

#include <SQLiteCpp/SQLiteCpp.h>

#include <cstdint>
#include <string>

namespace hb::storage {

class checkpoint_connection {
public:
  // Throws when the log cannot be opened for writing.
  explicit checkpoint_connection(const std::string& path);

  // A passive checkpoint (it waits for no reader or writer). True when the
  // whole WAL is in the database file now; false when a reader's snapshot
  // held part of it back or the checkpoint failed (`failure` says why then).
  bool checkpoint(std::string* failure = nullptr);
  // SQLite's count of commits by other connections: it changes whenever
  // something was committed since the previous call. Throws when SQLite
  // cannot tell.
  int64_t data_version();

private:
  SQLite::Database db_;
};

} // namespace hb::storage
