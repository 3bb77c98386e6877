#include "app/open_files.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

namespace hb::app {

namespace {

// Files the daemon opens after start-up besides its connections: two log
// readers and the checkpointer (database, WAL, shared memory each), the
// epoll and wake-up descriptors, embedded agents' files and their tools'
// pipes, native sessions' tmux clients, and the one connection accepted
// only to be refused.
constexpr size_t reserve_after_start = 128;
constexpr size_t least_useful_cap = 8;

size_t open_now() {
  std::error_code ec;
  size_t n = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec))
    ++n;
  return n;
}

rlim_t kernel_ceiling() {
  std::ifstream in("/proc/sys/fs/nr_open");
  unsigned long long n = 0;
  return in >> n ? static_cast<rlim_t>(n) : static_cast<rlim_t>(1 << 20);
}

} // namespace

connection_budget fit_connections(size_t wanted) {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    rlimit raised = lim;
    raised.rlim_cur = lim.rlim_max == RLIM_INFINITY ? kernel_ceiling() : lim.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0)
      lim = raised;
  }
  connection_budget budget;
  budget.open_file_limit = lim.rlim_cur == RLIM_INFINITY ? kernel_ceiling() : static_cast<size_t>(lim.rlim_cur);
  size_t reserved = open_now() + reserve_after_start;
  size_t room = budget.open_file_limit > reserved ? budget.open_file_limit - reserved : 0;
  if (room < least_useful_cap)
    throw std::runtime_error("the open-file limit (" + std::to_string(budget.open_file_limit) +
                             ", ulimit -n) leaves no room for connections: the daemon needs about " +
                             std::to_string(reserved + least_useful_cap) + "; raise it");
  budget.max_connections = std::min(wanted, room);
  budget.lowered = budget.max_connections < wanted;
  return budget;
}

} // namespace hb::app
