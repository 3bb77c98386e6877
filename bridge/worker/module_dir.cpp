#include "bridge/worker/module_dir.hpp"

#include "bridge/python/embedded_modules.hpp"
#include "protocol/trust.hpp"
#include "protocol/wire_error.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <random>

namespace hb::bridge::worker {

namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path) {
  throw protocol::runtime_error("cannot " + what + " " + path + " for the agent worker: " + std::strerror(errno));
}

// An fd that closes itself.
struct fd_guard {
  int fd = -1;
  ~fd_guard() {
    if (fd >= 0)
      ::close(fd);
  }
};

void check_owner_only(int fd, const std::string& path, mode_t others_mask) {
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    fail("check", path);
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & others_mask))
    throw protocol::runtime_error("the agent worker directory " + path +
                                  " is not an owner-only directory of this user; refusing to write code there");
}

void write_all(int fd, const std::string& data, const std::string& path) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      fail("write", path);
    done += static_cast<size_t>(n);
  }
}

// Runs with `-c`: sys.argv is ["-c", dir, dev, ino, worker args...].
constexpr const char* bootstrap = R"(import os, stat, sys
if not getattr(sys.flags, "safe_path", False):
    del sys.path[0]  # the current directory, which -c puts first
d, dev, ino = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
st = os.lstat(d)
if not stat.S_ISDIR(st.st_mode) or (st.st_dev, st.st_ino) != (dev, ino) or st.st_uid != os.geteuid() \
        or st.st_mode & 0o077:
    sys.exit("hermes-bridge worker: " + d + " is not the directory the daemon wrote; not importing from it")
sys.path.insert(0, d)
sys.argv = [os.path.join(d, "worker_main.py")] + sys.argv[4:]
import worker_main
sys.exit(worker_main.main(sys.argv[1:]))
)";

} // namespace

module_dir write_modules(const std::string& runtime_dir) {
  try {
    protocol::make_trusted_dir(runtime_dir, "agent worker directory");
  } catch (const std::runtime_error& e) {
    throw protocol::runtime_error(e.what());
  }
  fd_guard parent{::open(runtime_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
  if (parent.fd < 0)
    fail("open", runtime_dir);
  check_owner_only(parent.fd, runtime_dir, S_IWGRP | S_IWOTH);
  // The daemon's pid in the name: a daemon that starts after one was killed
  // removes what that one left (remove_stale_module_dirs).
  std::random_device entropy;
  std::string name;
  for (int attempt = 0;; ++attempt) {
    char suffix[16];
    std::snprintf(suffix, sizeof suffix, "%08x", static_cast<unsigned>(entropy()));
    name = "worker-" + std::to_string(::getpid()) + "-" + suffix;
    if (::mkdirat(parent.fd, name.c_str(), 0700) == 0)
      break;
    if (errno != EEXIST || attempt > 100)
      fail("create a directory in", runtime_dir);
  }
  module_dir out;
  out.path = runtime_dir + "/" + name;
  fd_guard dir{::openat(parent.fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
  if (dir.fd < 0)
    fail("open", out.path);
  ::fchmod(dir.fd, 0700); // the modes are ours to say, not the umask's
  check_owner_only(dir.fd, out.path, 0077);
  struct stat st {};
  if (::fstat(dir.fd, &st) != 0)
    fail("check", out.path);
  out.dev = st.st_dev;
  out.ino = st.st_ino;
  for (std::size_t i = 0; i < embedded_module_count; ++i) {
    std::string file = std::string(embedded_modules[i].name) + ".py";
    fd_guard f{::openat(dir.fd, file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)};
    if (f.fd < 0)
      fail("create", out.path + "/" + file);
    ::fchmod(f.fd, 0600);
    write_all(f.fd, embedded_modules[i].source, out.path + "/" + file);
  }
  return out;
}

namespace {
std::mutex kept_mu;
std::set<std::string> kept_dirs; // guarded by kept_mu
} // namespace

void keep_module_dir(const std::string& path) {
  std::lock_guard<std::mutex> lock(kept_mu);
  kept_dirs.insert(path);
}

void remove_stale_module_dirs(const std::string& runtime_dir) {
  std::error_code ec;
  std::lock_guard<std::mutex> lock(kept_mu);
  for (const auto& entry : std::filesystem::directory_iterator(runtime_dir, ec)) {
    std::string name = entry.path().filename().string();
    // Directories only: a live worker's record, socket and log are files
    // beside them (worker-<pid>.json, .sock, .log), its own business.
    if (name.rfind("worker-", 0) != 0 || entry.is_regular_file(ec) || entry.is_socket(ec) ||
        kept_dirs.count(entry.path().string()))
      continue;
    char* end = nullptr;
    long pid = std::strtol(name.c_str() + 7, &end, 10);
    bool named = pid > 0 && end && *end == '-'; // else from before pids were put in the names
    bool owner_alive = named && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
    if (!owner_alive)
      std::filesystem::remove_all(entry.path(), ec); // removes a symlink, never what it points to
  }
}

std::vector<std::string> bootstrap_args(const module_dir& dir, bool has_safe_path,
                                        const std::vector<std::string>& worker_args) {
  std::vector<std::string> args;
  if (has_safe_path)
    args.push_back("-P");
  args.insert(args.end(), {"-B", "-c", bootstrap, dir.path, std::to_string(dir.dev), std::to_string(dir.ino)});
  args.insert(args.end(), worker_args.begin(), worker_args.end());
  return args;
}

bool version_has_safe_path(const std::string& v) {
  int major = 0, minor = 0;
  if (std::sscanf(v.c_str(), "%d.%d", &major, &minor) != 2)
    return false;
  return major > 3 || (major == 3 && minor >= 11);
}

} // namespace hb::bridge::worker
