// The event log holds every transcript: whoever can read its directory or
// its files reads every conversation. So the directories the daemon and the
// tools create for it are owner-only (0700), and the database with its -wal
// and -shm files is 0600 whatever the umask (SQLite gives -wal and -shm the
// database file's mode, so making that file first is enough).
#pragma once

#include <string>

namespace hb::storage {

// Creates the missing directories of `dir` with mode 0700; existing ones are
// left as they are (they may be shared, like /tmp). Throws
// std::runtime_error naming the directory that could not be made.
void make_private_dirs(const std::string& dir);

// Before SQLite opens `db_path` for writing: creates the file 0600 if it is
// missing, and takes group and other bits off it and off an existing -wal,
// -shm or -journal. Refuses (std::runtime_error) a symbolic link or a
// non-regular file, and a file whose mode it may not change.
void prepare_private_log_file(const std::string& db_path);

} // namespace hb::storage
