// Opening the event log file for writing: WAL mode, the durability setting,
// and the schema created or migrated to this build's version.
#pragma once

#include <SQLiteCpp/SQLiteCpp.h>

#include <string>

namespace hb::storage {

// Throws std::runtime_error with a clear message when the file holds a
// newer schema than this build knows, or cannot be put in WAL mode.
void prepare_log(SQLite::Database& db, const std::string& synchronous);

// Caps the connection's page cache (SQLite's default: 2 MiB each). The
// daemon's connections append at the end of the tables or read a run's
// rows in order, so a small cache keeps what they touch; the rest of the
// file stays in the kernel's page cache, shared by every connection.
// Measured in tests/bench/RESULTS.md (W7: SQLite's default caches were
// about 1.5 kB of each of a thousand idle sessions; tail reads and the
// streaming rate did not move).
inline constexpr int page_cache_kib = 256;
void limit_page_cache(SQLite::Database& db);

// 0 for a file that holds no event log yet.
int stored_schema_version(SQLite::Database& db);
// The same for the file at `path`, read only; 0 when there is none or it
// cannot be read (opening it for writing says why).
int stored_schema_version(const std::string& path);

} // namespace hb::storage
