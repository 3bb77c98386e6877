// A file descriptor closed when it goes out of scope, and the send and
// receive deadlines of a blocking socket: what the daemon's small socket
// exchanges (worker re-attach, upgrade hand-over) share.
#pragma once

#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <utility>

namespace hb::protocol {

struct owned_fd {
  int fd = -1;
  owned_fd() = default;
  explicit owned_fd(int f) : fd(f) {}
  owned_fd(const owned_fd&) = delete;
  owned_fd& operator=(const owned_fd&) = delete;
  ~owned_fd() {
    if (fd >= 0)
      ::close(fd);
  }
  int release() { return std::exchange(fd, -1); }
};

// Blocking calls on `fd` fail with EAGAIN after `deadline` (0: never).
inline void set_socket_timeouts(int fd, std::chrono::milliseconds deadline) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(deadline.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((deadline.count() % 1000) * 1000);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

} // namespace hb::protocol
