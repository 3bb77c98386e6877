#include "storage/private_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace hb::storage {

namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path, int err) {
  throw std::runtime_error(what + " " + path + ": " + std::strerror(err));
}

// Opens `path` without following a final symbolic link (a link planted
// where the log goes must not make us create or chmod a file elsewhere) and
// takes group and other bits off it. False: it does not exist and was not
// to be created.
bool make_owner_only(const std::string& path, bool create) {
  int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | (create ? O_CREAT : 0);
  int fd = ::open(path.c_str(), flags, 0600);
  if (fd < 0) {
    if (errno == ENOENT && !create)
      return false;
    if (errno == ELOOP)
      throw std::runtime_error(path + " is a symbolic link: give the event log's real path (--db)");
    fail("cannot open", path, errno);
  }
  struct stat st {};
  int err = ::fstat(fd, &st) == 0 ? 0 : errno;
  bool regular = err == 0 && S_ISREG(st.st_mode);
  if (regular && (st.st_mode & 077) != 0 && ::fchmod(fd, st.st_mode & 0700) != 0)
    err = errno;
  ::close(fd);
  if (err != 0)
    fail("cannot make owner-only (chmod go-rwx)", path, err);
  if (!regular)
    throw std::runtime_error(path + " is not a regular file");
  return true;
}

} // namespace

void make_private_dirs(const std::string& dir) {
  if (dir.empty())
    return;
  std::filesystem::path so_far;
  for (const auto& part : std::filesystem::path(dir)) {
    so_far /= part;
    if (::mkdir(so_far.c_str(), 0700) != 0 && errno != EEXIST)
      fail("cannot create directory", so_far.string(), errno);
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw std::runtime_error(dir + " is not a directory");
}

void prepare_private_log_file(const std::string& db_path) {
  make_owner_only(db_path, true);
  for (const char* suffix : {"-wal", "-shm", "-journal"})
    make_owner_only(db_path + suffix, false);
}

} // namespace hb::storage
