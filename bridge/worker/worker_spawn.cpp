// Starting a worker process (worker_process.hpp): the interpreter spawned
// on one end of a socket pair, its reading and watching threads, and the
// wait for its `ready` frame.
#include "bridge/worker/worker_process.hpp"

#include "bridge/tmux/subprocess.hpp"
#include "bridge/worker/module_dir.hpp"

#include "protocol/wire_error.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

extern char** environ;

namespace hb::bridge::worker {

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

} // namespace

std::shared_ptr<worker_process> worker_process::start(const launch_options& how, const std::string& profile) {
  if (how.python.argv.empty())
    throw protocol::runtime_error("no interpreter to run the agent worker with");
  static std::once_flag swept;
  std::call_once(swept, [&] { remove_stale_module_dirs(how.runtime_dir); });
  std::shared_ptr<worker_process> w(new worker_process());
  w->profile_ = profile;
  w->heartbeat_ = how.heartbeat;
  w->unresponsive_after_ = how.unresponsive_after;
  w->max_open_asks_ = how.max_open_asks;
  module_dir dir = write_modules(how.runtime_dir);
  w->module_dir_ = dir.path;
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
    throw protocol::runtime_error(std::string("socketpair: ") + std::strerror(errno));

  std::vector<std::string> argv = how.python.argv;
  for (auto& a : bootstrap_args(dir, how.safe_path, {"--fd", "3", "--agent-root", how.agent_root, "--hermes-home",
                                                     how.hermes_home, "--profile", profile}))
    argv.push_back(std::move(a));
  std::vector<char*> c_argv;
  for (auto& a : argv)
    c_argv.push_back(a.data());
  c_argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pair[1], 3);     // dup2 clears CLOEXEC: inherited
  posix_spawn_file_actions_adddup2(&actions, 2, 1);           // the agent prints; never on our stdout
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addclosefrom_np(&actions, 4);      // no client socket leaks into the agent
  posix_spawnattr_t attr;
  // Its own process group: a Ctrl-C meant for the daemon does not reach the
  // agent, which the daemon stops itself once its runs are drained.
  init_child_spawnattr(attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = -1;
  int rc = ::posix_spawnp(&pid, c_argv[0], &actions, &attr, c_argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(pair[1]);
  if (rc != 0) {
    ::close(pair[0]);
    std::filesystem::remove_all(w->module_dir_);
    throw protocol::runtime_error("cannot start the agent worker " + how.python.display() + ": " +
                                  std::strerror(rc));
  }
  w->pid_ = pid;
  w->fd_ = pair[0];
  w->started_at_ = now_s();
  w->alive_ = true;
  // The reader keeps the object alive until the process is gone and reaped.
  std::thread([w] { w->read_loop(); }).detach();

  std::unique_lock<std::mutex> lock(w->mu_);
  bool up = w->cv_.wait_for(lock, how.ready_deadline, [&] { return w->ready_seen_ || !w->alive_; });
  if (!up) {
    lock.unlock();
    ::kill(pid, SIGKILL);
    throw protocol::runtime_error("the agent worker (" + how.python.display() + ") did not start within " +
                                  std::to_string(how.ready_deadline.count() / 1000) + " s");
  }
  if (!w->alive_)
    throw protocol::runtime_error("the agent worker (" + how.python.display() + ") exited before it was ready: " +
                                  w->death_reason_ + " (its stderr is in the daemon's log)");
  lock.unlock();
  w->heard();
  std::thread([w] { w->watch(); }).detach(); // it ends with the process
  return w;
}

} // namespace hb::bridge::worker
