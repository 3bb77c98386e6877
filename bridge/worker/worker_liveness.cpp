// Whether a worker is still there, and how it ended. A worker that stops
// answering (a deadlock, a C call holding the GIL, SIGSTOP) sends nothing
// and dies of nothing; only asking notices it. A thread per worker sends a
// heartbeat every `heartbeat` while the worker has a turn or a call on its
// way, every two beats while it has none, and sleeps in between (the idle
// daemon and its idle workers stay quiet: each beat wakes both); any frame
// read from the worker counts as an answer. Silent past a beat and a half
// (of the current pace), it shows as unresponsive in health; silent for
// `unresponsive_after` (and using no CPU: see busy_allowance), it is killed,
// and its death settles its runs and sessions as any death does
// (worker_process::died).
#include "bridge/worker/worker_events.hpp"
#include "bridge/worker/worker_process.hpp"

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <utility>

namespace hb::bridge::worker {

namespace {

using steady = std::chrono::steady_clock;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now().time_since_epoch()).count();
}

std::string seconds_text(std::chrono::milliseconds ms) {
  double s = ms.count() / 1000.0;
  if (s == std::floor(s))
    return std::to_string(static_cast<int64_t>(s)) + " s";
  std::string t = std::to_string(s);
  t.erase(t.find_last_not_of('0') + 1);
  return t + " s";
}

// How soon acknowledgements that could not be sent (the socket busy) are tried again.
constexpr std::chrono::milliseconds ack_retry{20};

// How long acknowledgements gather before they go, as one write. A streaming
// turn's output is committed hundreds of times a second, and each
// `committed` frame woke this thread, then the worker's reading thread and
// its GIL: a quarter of the context switches of 64 streaming sessions. The
// worker only lets go of its kept frames this much later (its bound is
// 64 MB).
constexpr std::chrono::milliseconds ack_gather{20};

// A silent worker that keeps using the CPU is working, not hung (encoding a
// turn's 100 MB outcome holds the GIL for seconds on a loaded machine, and
// its heartbeat replies wait behind it); it is given this many times
// --worker-unresponsive-s before it is killed all the same (a loop that never
// ends). A deadlock, SIGSTOP or a blocking call uses none.
constexpr int busy_allowance = 6;

// The CPU time the process has used, in clock ticks; 0 when unreadable.
uint64_t cpu_ticks(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  auto close = line.rfind(')');
  if (close == std::string::npos)
    return 0;
  std::istringstream fields(line.substr(close + 2));
  std::string field;
  uint64_t utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) { // (3) state ... (14) utime, (15) stime
    if (i == 14)
      utime = std::strtoull(field.c_str(), nullptr, 10);
    else if (i == 15)
      stime = std::strtoull(field.c_str(), nullptr, 10);
  }
  return utime + stime;
}

const char* signal_name(int sig) {
  switch (sig) {
  case SIGKILL: return "SIGKILL";
  case SIGTERM: return "SIGTERM";
  case SIGSEGV: return "SIGSEGV";
  case SIGABRT: return "SIGABRT";
  case SIGINT: return "SIGINT";
  case SIGBUS: return "SIGBUS";
  case SIGHUP: return "SIGHUP";
  case SIGPIPE: return "SIGPIPE";
  default: return nullptr;
  }
}

} // namespace

std::string describe_exit(int status) {
  if (WIFEXITED(status))
    return "exit code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    const char* name = signal_name(sig);
    return "killed by signal " + std::to_string(sig) + (name ? std::string(" (") + name + ")" : "");
  }
  return "ended with status " + std::to_string(status);
}

void worker_process::heard() {
  last_heard_ns_ = now_ns();
  unresponsive_ = false;
}

bool worker_process::try_post(const to_worker& frame) {
  // Never waits: a worker that does not read must not hold its watcher
  // (or a writer stuck on its full socket keep the watcher from the kill).
  return try_write(encode(frame));
}

bool worker_process::try_write(const std::string& bytes) {
  std::unique_lock<std::mutex> lock(write_mu_, std::try_to_lock);
  if (!lock.owns_lock())
    return false;
  ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  if (n > 0 && static_cast<size_t>(n) < bytes.size()) {
    // Part of a frame went: the rest must follow, or the stream is broken.
    size_t done = static_cast<size_t>(n);
    while (done < bytes.size()) {
      n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return false;
      done += static_cast<size_t>(n);
    }
  }
  return n > 0;
}

void worker_process::kill_unresponsive(const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!alive_)
      return;
    if (kill_reason_.empty())
      kill_reason_ = why;
  }
  unresponsive_ = true;
  report_worker_event({true, "worker.unresponsive", "killing an agent worker that does not answer",
                       {{"profile", profile_}, {"pid", std::to_string(pid_)}, {"reason", why}}});
  send_signal(SIGKILL); // works on a stopped process too; the reader reaps it
}

void worker_process::acknowledge(uint64_t turn, uint64_t seq) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!alive_)
    return;
  bool first = acks_.empty(); // else the watcher is gathering already
  auto& highest = acks_[turn];
  highest = std::max(highest, seq);
  if (first)
    watch_cv_.notify_all();
}

bool worker_process::send_acks(std::map<uint64_t, uint64_t>& acks) {
  // Never waits, as heartbeats: what could not go now stays for the next
  // try. All of them in one write: one system call here, and the worker's
  // reading thread finds them together in its buffer.
  std::string bytes;
  for (const auto& [turn, seq] : acks)
    bytes += encode(committed{turn, seq});
  if (!try_write(bytes))
    return false;
  acks.clear();
  return true;
}

void worker_process::watch() {
  uint64_t beat = 0;
  auto silent_for = [&] { return std::chrono::nanoseconds(now_ns() - last_heard_ns_.load()); };
  uint64_t cpu_seen = cpu_ticks(pid_);
  // Whether it used the CPU since the last beat.
  auto working = [&] {
    uint64_t now = cpu_ticks(pid_);
    bool used = now > cpu_seen;
    cpu_seen = now;
    return used;
  };
  auto next_beat = steady::now();
  std::unique_lock<std::mutex> lock(mu_);
  while (alive_) {
    auto pace = turns_.empty() && calls_.empty() ? 2 * heartbeat_ : heartbeat_;
    if (steady::now() >= next_beat)
      next_beat = steady::now() + pace;
    bool retry_acks = false;
    while (alive_ && steady::now() < next_beat) {
      if (retry_acks)
        watch_cv_.wait_until(lock, std::min(next_beat, steady::now() + ack_retry), [&] { return !alive_.load(); });
      else
        watch_cv_.wait_until(lock, next_beat, [&] { return !alive_.load() || !acks_.empty(); });
      if (!alive_)
        return;
      if (acks_.empty())
        continue; // the beat is due
      if (!retry_acks) {
        watch_cv_.wait_for(lock, ack_gather, [&] { return !alive_.load(); });
        if (!alive_)
          return;
      }
      auto acks = std::exchange(acks_, {});
      lock.unlock();
      retry_acks = !send_acks(acks);
      lock.lock();
      for (auto& [turn, seq] : acks) // not sent: merged back, newer ones win
        acks_[turn] = std::max(acks_[turn], seq);
    }
    if (!alive_)
      return;
    lock.unlock();
    if (reader_busy_)
      heard(); // we are not reading it: its silence says nothing
    auto silent = silent_for();
    bool busy = working();
    if (silent >= unresponsive_after_ && !(busy && silent < busy_allowance * unresponsive_after_)) {
      kill_unresponsive("unresponsive for " + seconds_text(busy ? busy_allowance * unresponsive_after_
                                                                : unresponsive_after_));
    } else {
      if (silent > pace + pace / 2)
        unresponsive_ = true;
      try_post(heartbeat{++beat});
    }
    lock.lock();
  }
}

} // namespace hb::bridge::worker
