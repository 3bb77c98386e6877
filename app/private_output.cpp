#include "app/private_output.hpp"

#include "app/tool_support.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hb::app {

namespace {

int create_exclusive(const std::string& tmp) {
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0 && errno == EEXIST) {
    // Left by an earlier process that had our pid and did not finish; a
    // link is removed, not followed.
    ::unlink(tmp.c_str());
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  }
  return fd;
}

} // namespace

private_output::private_output(const std::string& path) : path_(path) {
  if (path_.empty() || path_ == "-") {
    file_ = stdout;
    return;
  }
  tmp_ = path_ + ".partial-" + std::to_string(::getpid());
  int fd = create_exclusive(tmp_);
  if (fd < 0)
    throw tool_error(exit_usage, "cannot write " + tmp_ + ": " + std::strerror(errno));
  ::fchmod(fd, 0600); // exactly 0600, also under an unusual umask such as 0277
  file_ = ::fdopen(fd, "wb");
  if (!file_) {
    ::close(fd);
    ::unlink(tmp_.c_str());
    throw tool_error(exit_failure, "cannot write " + tmp_ + ": " + std::strerror(errno));
  }
}

private_output::~private_output() {
  if (tmp_.empty())
    return;
  if (file_)
    std::fclose(file_);
  if (!done_)
    ::unlink(tmp_.c_str());
}

void private_output::write(std::string_view bytes) {
  if (!bytes.empty())
    std::fwrite(bytes.data(), 1, bytes.size(), file_);
}

void private_output::finish() {
  const std::string& name = tmp_.empty() ? std::string("stdout") : tmp_;
  if (std::fflush(file_) != 0 || std::ferror(file_))
    throw tool_error(exit_failure, "writing " + name + " failed");
  if (tmp_.empty())
    return;
  int closed = std::fclose(file_);
  file_ = nullptr;
  if (closed != 0)
    throw tool_error(exit_failure, "writing " + tmp_ + " failed: " + std::strerror(errno));
  if (::rename(tmp_.c_str(), path_.c_str()) != 0)
    throw tool_error(exit_failure, "cannot move " + tmp_ + " to " + path_ + ": " + std::strerror(errno));
  done_ = true;
}

} // namespace hb::app
