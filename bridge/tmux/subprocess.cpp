#include "bridge/tmux/subprocess.hpp"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <system_error>
#include <unistd.h>

extern char** environ;

namespace hb::bridge {

namespace {

struct pipe_pair {
  int fd[2] = {-1, -1};
  pipe_pair() {
    if (::pipe2(fd, O_CLOEXEC) != 0)
      throw std::system_error(errno, std::generic_category(), "pipe");
  }
  ~pipe_pair() { close_both(); }
  void close_end(int i) {
    if (fd[i] >= 0)
      ::close(fd[i]);
    fd[i] = -1;
  }
  void close_both() {
    close_end(0);
    close_end(1);
  }
};

std::vector<std::string> child_environment(const process_env& env) {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) {
    std::string entry(*e);
    std::string name = entry.substr(0, entry.find('='));
    bool dropped = env.set.count(name) > 0;
    for (const auto& u : env.unset)
      dropped = dropped || u == name;
    if (!dropped)
      out.push_back(std::move(entry));
  }
  for (const auto& [name, value] : env.set)
    out.push_back(name + "=" + value);
  return out;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings)
    out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

} // namespace

void init_child_spawnattr(posix_spawnattr_t& attr, short extra_flags) {
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGTERM, SIGINT, SIGHUP})
    sigaddset(&defaults, sig);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, static_cast<short>(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | extra_flags));
}

process_result run_process(const std::vector<std::string>& argv_in, const std::string& input,
                           std::chrono::milliseconds deadline, const process_env& env) {
  pipe_pair in, out, err;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in.fd[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out.fd[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err.fd[1], 2);
  // tmux's server is forked by the client we start and lives on: any other
  // descriptor the daemon holds without close-on-exec (a client's socket,
  // the ready line's pipe) would stay open in it for as long as the TUI runs.
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  posix_spawnattr_t attr;
  init_child_spawnattr(attr);

  std::vector<std::string> argv = argv_in;
  std::vector<std::string> envs = child_environment(env);
  auto c_argv = c_strings(argv);
  auto c_env = c_strings(envs);
  pid_t pid = -1;
  int rc = ::posix_spawnp(&pid, c_argv[0], &actions, &attr, c_argv.data(), c_env.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0)
    throw std::system_error(rc, std::generic_category(), "cannot start " + argv_in.front());
  in.close_end(0);
  out.close_end(1);
  err.close_end(1);

  process_result result;
  size_t written = 0;
  if (input.empty())
    in.close_end(1);
  else
    ::fcntl(in.fd[1], F_SETFL, O_NONBLOCK); // poll says "some room", not "room for all"
  auto until = std::chrono::steady_clock::now() + deadline;
  char buffer[16384];
  while (out.fd[0] >= 0 || err.fd[0] >= 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    pollfd fds[3];
    int n = 0;
    int which[3];
    auto watch = [&](int fd, short events, int id) {
      if (fd >= 0) {
        fds[n] = pollfd{fd, events, 0};
        which[n++] = id;
      }
    };
    watch(out.fd[0], POLLIN, 0);
    watch(err.fd[0], POLLIN, 1);
    watch(in.fd[1], POLLOUT, 2);
    int ready = ::poll(fds, static_cast<nfds_t>(n), static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR)
      break;
    for (int i = 0; i < n && ready > 0; ++i) {
      if (fds[i].revents == 0)
        continue;
      if (which[i] == 2) {
        ssize_t w = ::write(in.fd[1], input.data() + written, input.size() - written);
        if (w > 0)
          written += static_cast<size_t>(w);
        if ((w < 0 && errno != EAGAIN && errno != EINTR) || written == input.size())
          in.close_end(1);
        continue;
      }
      pipe_pair& p = which[i] == 0 ? out : err;
      ssize_t r = ::read(p.fd[0], buffer, sizeof buffer);
      if (r > 0)
        (which[i] == 0 ? result.out : result.err).append(buffer, static_cast<size_t>(r));
      else if (r == 0 || errno != EINTR)
        p.close_end(0);
    }
  }
  in.close_end(1);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!result.timed_out && WIFEXITED(status))
    result.exit_code = WEXITSTATUS(status);
  return result;
}

std::string find_executable(const std::string& name) {
  auto executable = [](const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
  };
  if (name.empty())
    return {};
  if (name.find('/') != std::string::npos)
    return executable(name) ? name : std::string();
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos)
      end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (executable(candidate))
      return candidate;
    start = end + 1;
  }
  return {};
}

} // namespace hb::bridge
