#include "bridge/worker/worker_process.hpp"

#include "bridge/worker/worker_events.hpp"

#include "protocol/json_text.hpp"
#include "protocol/wire_error.hpp"

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

namespace hb::bridge::worker {

namespace {

template <class T, class = void> struct has_req : std::false_type {};
template <class T> struct has_req<T, std::void_t<decltype(std::declval<T&>().req)>> : std::true_type {};

} // namespace

worker_process::~worker_process() {
  if (fd_ >= 0)
    ::close(fd_);
  if (pidfd_ >= 0)
    ::close(pidfd_);
}

std::string worker_process::death_reason() const {
  std::lock_guard<std::mutex> lock(mu_);
  return death_reason_;
}

size_t worker_process::live_turns() const {
  std::lock_guard<std::mutex> lock(mu_);
  return turns_.size();
}

double worker_process::rss_mb() const {
  std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0)
      return std::atof(line.c_str() + 6) / 1024.0;
  return 0;
}

bool worker_process::write(const std::string& bytes) {
  std::lock_guard<std::mutex> lock(write_mu_);
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false; // the reader sees the same end and settles everything
    done += static_cast<size_t>(n);
  }
  return true;
}

void worker_process::post(const to_worker& frame) {
  if (alive_)
    write(encode(frame));
}

reply worker_process::call(to_worker frame, std::chrono::milliseconds deadline,
                           std::function<void(const reply&)> on_reply) {
  auto pending = std::make_shared<pending_call>();
  pending->hook = std::move(on_reply);
  uint64_t req = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!alive_)
      return reply{0, false, "", "RuntimeError", "the agent worker for profile " + profile_ + " is gone: " + death_reason_};
    req = ++next_req_;
    calls_.emplace(req, pending);
  }
  std::visit([&](auto& f) {
    if constexpr (has_req<std::decay_t<decltype(f)>>::value)
      f.req = req;
  }, frame);
  write(encode(frame));
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, deadline, [&] { return pending->r.has_value(); })) {
    calls_.erase(req); // a late reply finds nothing, and the hook never runs
    return reply{req, false, "", "TimeoutError", "the agent worker for profile " + profile_ + " did not answer within " +
                                                    std::to_string(deadline.count() / 1000) + " s"};
  }
  return *pending->r;
}

std::string worker_process::call_value(to_worker frame, std::chrono::milliseconds deadline) {
  reply r = call(std::move(frame), deadline);
  if (!r.ok)
    throw protocol::wire_error(r.error_type.empty() ? "RuntimeError" : r.error_type, r.error);
  return r.value;
}

bool worker_process::wait_until_warm(std::chrono::milliseconds deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, deadline, [&] { return warm_.load() || !alive_.load(); }) && warm_.load();
}

bool worker_process::retire_if_idle() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!turns_.empty() || !alive_)
    return false;
  stopping_ = true;
  return true;
}

void worker_process::stop(std::chrono::milliseconds grace) {
  stopping_ = true;
  if (!alive_)
    return;
  post(shutdown{});
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, grace, [&] { return !alive_.load(); })) {
    lock.unlock();
    send_signal(SIGKILL); // the reader reaps it and settles what is left
  }
}

void worker_process::read_loop() {
  frame_reader frames;
  std::string why;
  char buffer[65536];
  try {
    for (;;) {
      ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      frames.feed(buffer, static_cast<size_t>(n));
      heard();
      // Decoding a big frame, or waiting for room in the log (back-pressure
      // from handle), is our time, not the worker's: it is not silent then.
      reader_busy_ = true;
      while (auto body = frames.next())
        handle(decode_taking(std::move(*body)));
      reader_busy_ = false;
      heard();
    }
  } catch (const frame_error& e) {
    why = std::string("sent a corrupt frame (") + e.what() + ")";
    send_signal(SIGKILL); // it can no longer be understood
  } catch (const std::exception& e) {
    // A frame we could not act on: the worker goes, never the daemon.
    why = std::string("could not be served (") + e.what() + ")";
    send_signal(SIGKILL);
  }
  ::shutdown(fd_, SHUT_RDWR);
  std::string reason = reap();
  if (!why.empty())
    reason = why + ", " + reason;
  if (std::string killed = [&] { std::lock_guard<std::mutex> l(mu_); return kill_reason_; }(); !killed.empty())
    reason = killed + ", " + reason;
  std::error_code ec;
  std::filesystem::remove_all(module_dir_, ec);
  died(reason);
}

void worker_process::died(const std::string& reason) {
  std::map<uint64_t, std::shared_ptr<pending_call>> calls;
  std::map<uint64_t, std::shared_ptr<live_turn>> turns;
  {
    std::lock_guard<std::mutex> lock(mu_);
    death_reason_ = reason;
    alive_ = false;
    calls.swap(calls_);
    turns.swap(turns_);
    watch_cv_.notify_all();
  }
  std::string what = "the agent worker for profile " + profile_ + " (pid " + std::to_string(pid_) + ") died: " + reason;
  bool planned = stopping_ && turns.empty(); // retired (idle, size, shutdown) with nothing running in it
  report_worker_event({!planned, planned ? "worker.exited" : "worker.died", planned ? "" : what,
                       {{"profile", profile_}, {"pid", std::to_string(pid_)}, {"reason", reason},
                        {"turns_cut", std::to_string(turns.size())}}});
  for (auto& [_, turn] : turns)
    turn->sink->withdraw_questions(what); // their askers get an empty answer, which nobody sends on
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [req, call] : calls)
      call->r = reply{req, false, "", "RuntimeError", what};
    cv_.notify_all();
  }
  for (auto& [_, turn] : turns)
    turn->ended(failed_turn(what));
}

void worker_process::handle(from_worker frame) {
  auto find_turn = [&](uint64_t id) -> std::shared_ptr<live_turn> {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = turns_.find(id);
    return it == turns_.end() ? nullptr : it->second;
  };
  auto asked_again = [&](live_turn& turn, uint64_t seq) {
    std::lock_guard<std::mutex> lock(mu_);
    return turn.asked_again.erase(seq) != 0;
  };
  std::visit(
    [&](auto& f) {
      using T = std::decay_t<decltype(f)>;
      if constexpr (std::is_same_v<T, ready>) {
        std::lock_guard<std::mutex> lock(mu_);
        ready_ = std::move(f);
        ready_seen_ = true;
        cv_.notify_all();
      } else if constexpr (std::is_same_v<T, reply>) {
        // Under the lock, so a caller that gave up (and whose hook may
        // refer to its stack) is never called back.
        std::lock_guard<std::mutex> lock(mu_);
        auto it = calls_.find(f.req);
        if (it == calls_.end())
          return;
        auto call = it->second;
        if (call->hook)
          call->hook(f); // before the next frame: see resolve_gateway in FRAMES.md
        calls_.erase(it);
        call->r = std::move(f);
        cv_.notify_all();
      } else if constexpr (std::is_same_v<T, worker::warm>) {
        std::lock_guard<std::mutex> lock(mu_);
        warm_ = true;
        cv_.notify_all();
      } else if constexpr (std::is_same_v<T, batch>) {
        // One frame for what piled up while the worker's writer was busy:
        // each handled as if it had come alone, in its order.
        for (auto& one : f.frames)
          std::visit([&](auto& x) { handle(from_worker(std::move(x))); }, one);
      } else if constexpr (std::is_same_v<T, text> || std::is_same_v<T, texts> || std::is_same_v<T, event>) {
        auto turn = find_turn(f.turn);
        if (!turn)
          return; // a thread the turn left behind
        if constexpr (std::is_same_v<T, text>)
          turn->sink->numbered_delta(std::move(f.text), f.seq);
        else if constexpr (std::is_same_v<T, texts>)
          turn->sink->numbered_deltas(std::move(f.texts), f.seq);
        else
          turn->sink->numbered_event(std::move(f.json), f.seq);
        // Waiting here holds back this worker's frames, and with them its
        // agent threads once the socket is full: the back-pressure an
        // embedded agent gets from its sink.
        if (turn->sink->backlogged())
          turn->sink->wait_for_room();
      } else if constexpr (std::is_same_v<T, notify>) {
        auto turn = find_turn(f.turn);
        if (turn && !asked_again(*turn, f.seq))
          turn->sink->gateway_notify(std::move(f.request), f.timeout_s);
      } else if constexpr (std::is_same_v<T, ask>) {
        auto turn = find_turn(f.turn);
        if (!turn) {
          post(answer{f.turn, f.ask, ""});
          return;
        }
        if (!asked_again(*turn, f.seq))
          ask_client(std::move(f), turn->sink);
      } else if constexpr (std::is_same_v<T, turn_end>) {
        std::shared_ptr<live_turn> turn;
        {
          std::lock_guard<std::mutex> lock(mu_);
          auto it = turns_.find(f.turn);
          if (it == turns_.end())
            return;
          turn = std::move(it->second);
          turns_.erase(it);
        }
        turn_outcome out;
        out.status = std::move(f.status);
        out.result = std::move(f.result).value_or(std::string());
        out.error = std::move(f.error);
        out.history = std::move(f.history);
        out.message_count = f.message_count;
        out.last_seq = f.seq;
        turn->ended(std::move(out));
      } else if constexpr (std::is_same_v<T, heartbeat_reply>) {
        unacknowledged_ = f.unacknowledged; // read_loop() already noted that it answers
      }
    },
    frame);
}

} // namespace hb::bridge::worker
