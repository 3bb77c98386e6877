#include "storage/log_file.hpp"

#include "storage/schema.hpp"

#include <stdexcept>

namespace hb::storage {

int stored_schema_version(SQLite::Database& db) {
  if (!db.tableExists("meta"))
    return 0;
  SQLite::Statement get(db, "SELECT value FROM meta WHERE key='schema_version'");
  return get.executeStep() ? std::stoi(get.getColumn(0).getString()) : 0;
}

int stored_schema_version(const std::string& path) {
  try {
    SQLite::Database db(path, SQLite::OPEN_READONLY);
    db.setBusyTimeout(5000);
    return stored_schema_version(db);
  } catch (const std::exception&) {
    return 0;
  }
}

void limit_page_cache(SQLite::Database& db) {
  db.exec("PRAGMA cache_size=-" + std::to_string(page_cache_kib)); // negative: KiB, not pages
}

void prepare_log(SQLite::Database& db, const std::string& synchronous) {
  db.setBusyTimeout(5000);
  limit_page_cache(db);
  std::string mode = db.execAndGet("PRAGMA journal_mode=WAL").getString();
  if (mode != "wal")
    throw std::runtime_error("event log: cannot switch to WAL mode (got " + mode + ")");
  if (synchronous != "OFF" && synchronous != "NORMAL" && synchronous != "FULL" && synchronous != "EXTRA")
    throw std::runtime_error("event log: synchronous must be OFF, NORMAL, FULL or EXTRA, not " + synchronous);
  db.exec("PRAGMA synchronous=" + synchronous);
  if (stored_schema_version(db) == 0)
    db.exec("PRAGMA auto_vacuum=INCREMENTAL"); // only possible before the first table

  SQLite::Transaction tx(db);
  int found = stored_schema_version(db);
  if (found > schema_version)
    throw std::runtime_error("event log " + db.getFilename() + " has schema version " +
                             std::to_string(found) + ", newer than this hermes-bridge (" +
                             std::to_string(schema_version) +
                             "); upgrade hermes-bridge or point --db at another file");
  if (found > 0)
    for (const auto& step : migrations)
      if (step.from_version >= found && (!step.needs_table || db.tableExists(step.needs_table)))
        db.exec(step.sql);
  db.exec(schema_sql);
  db.exec("INSERT INTO meta(key, value) VALUES('schema_version', '" + std::to_string(schema_version) +
          "') ON CONFLICT(key) DO UPDATE SET value=excluded.value");
  tx.commit();
}

} // namespace hb::storage
