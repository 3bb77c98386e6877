// Starting a worker process (worker_process.hpp): the interpreter spawned
// on one end of a socket pair, its reading and watching threads, and the
// wait for its `ready` frame; or adopting one a previous daemon started;
// and, at the end, reaping it.
#include "bridge/worker/worker_process.hpp"

#include "bridge/worker/worker_attach.hpp"

#include "bridge/tmux/subprocess.hpp"
#include "bridge/worker/module_dir.hpp"

#include "protocol/wire_error.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
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
  std::vector<std::string> worker_args{"--fd", "3", "--agent-root", how.agent_root, "--hermes-home", how.hermes_home,
                                       "--profile", profile};
  if (how.orphan_timeout.count() > 0) // its own socket, for a daemon that comes after this one
    worker_args.insert(worker_args.end(), {"--rendezvous", how.runtime_dir, "--orphan-timeout",
                                           std::to_string(how.orphan_timeout.count() / 1000.0), "--daemon-key",
                                           how.daemon_key});
  if (how.warm_nice > 0)
    worker_args.insert(worker_args.end(), {"--warm-nice", std::to_string(how.warm_nice)});
  for (auto& a : bootstrap_args(dir, how.safe_path, worker_args))
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
  // Its own session (and so its own process group, without a terminal): a
  // Ctrl-C or a hang-up meant for the daemon, or a kill of the daemon's
  // group, does not reach the agent. The daemon stops it itself once its
  // runs are drained; a daemon that dies leaves it to finish its turns for
  // the next one (FRAMES.md, re-attaching).
  init_child_spawnattr(attr, POSIX_SPAWN_SETSID);
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
  if (w->ready_.version != frames_version) { // its modules are not ours: a broken install
    auto version = w->ready_.version;
    lock.unlock();
    ::kill(pid, SIGKILL);
    throw protocol::runtime_error("the agent worker (" + how.python.display() + ") speaks frame version " +
                                  std::to_string(version) + ", this daemon " + std::to_string(frames_version));
  }
  lock.unlock();
  w->heard();
  std::thread([w] { w->watch(); }).detach(); // it ends with the process
  return w;
}

std::shared_ptr<worker_process> worker_process::adopt(found_worker& found, const launch_options& how) {
  std::shared_ptr<worker_process> w(new worker_process());
  w->profile_ = found.record.profile;
  w->heartbeat_ = how.heartbeat;
  w->unresponsive_after_ = how.unresponsive_after;
  w->max_open_asks_ = how.max_open_asks;
  w->module_dir_ = found.record.modules;
  if (!w->module_dir_.empty())
    keep_module_dir(w->module_dir_); // its code, while it lives; removed at its end like any worker's
  w->pid_ = found.record.pid;
  // Held from now on: signals reach this process or none, whatever reuses its pid later.
  w->pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, found.record.pid, 0));
  w->adopted_ = true;
  w->fd_ = std::exchange(found.fd, -1);
  w->started_at_ = found.record.started_at;
  w->ready_ = found.held.who;
  w->ready_seen_ = true;
  w->warm_ = found.held.warm;
  w->next_req_ = found.held.req; // a late reply to the old daemon's call is no answer to ours
  uint64_t handles = 0;
  for (const auto& s : found.held.sessions)
    handles = std::max(handles, s.handle);
  w->handles_ = handles;
  for (const auto& t : found.held.turns)
    w->next_turn_ = std::max(w->next_turn_, t.turn);
  for (const auto& a : found.held.asks)
    w->adopted_asks_[a.turn].push_back(a);
  w->alive_ = true;
  w->heard();
  std::thread([w] { w->read_loop(); }).detach();
  std::thread([w] { w->watch(); }).detach();
  return w;
}

void worker_process::send_signal(int sig) {
  if (pidfd_ >= 0 && ::syscall(SYS_pidfd_send_signal, pidfd_, sig, nullptr, 0) == 0)
    return;
  if (pidfd_ < 0)
    ::kill(pid_, sig);
}

std::string worker_process::reap() {
  // The socket's end is the process's end, or a moment before it: one that
  // lingers (it closed the socket but kept running) is killed.
  if (adopted_) {
    // Not our child: whoever reaps it (init, a subreaper) gets its status.
    auto gone = [&] {
      if (pidfd_ >= 0) {
        pollfd p{pidfd_, POLLIN, 0};
        return ::poll(&p, 1, 0) == 1;
      }
      return ::kill(pid_, 0) != 0 && errno == ESRCH;
    };
    for (int i = 0; i < 200 && !gone(); ++i) {
      if (i == 100)
        send_signal(SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return "exited (started by an earlier hermes-bridge, which had its exit status)";
  }
  int status = 0;
  pid_t got = 0;
  for (int i = 0; i < 100 && (got = ::waitpid(pid_, &status, WNOHANG)) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (got == 0) {
    send_signal(SIGKILL);
    while ((got = ::waitpid(pid_, &status, 0)) < 0 && errno == EINTR) {
    }
  }
  return got > 0 ? describe_exit(status) : "lost";
}

} // namespace hb::bridge::worker
