// The run windows (run_windows.hpp) as the log writer and the broker share
// them: the writer brings them up to date at each commit, on its own thread,
// and the broker answers polls from them. A client that only polls (Studio
// asks every 100 ms) then costs no commit notice: the writer tells the
// broker a commit only while the broker has long-polls or subscribers to
// wake (`following`). Before, every commit woke the broker (about six a
// turn) just to bring its windows up to date.
//
// Why no follower misses a commit: the broker sets `following` before it
// looks for a new follower's news (in these windows or in the log) and
// clears it only while it has no follower; the writer updates the windows
// first and reads `following` after. A commit the broker's look did not
// see took the lock after it, so its read of the flag comes after the
// broker set it.
//
// Why a cursor past a window's end may be answered from it: a client can
// only hold such a cursor from a log read of a commit the windows do not
// hold yet (or by its own mistake, which the log would answer the same way).
// The writer counts a change as begun before any reader can see it and says
// the windows hold it only once they do; while the two counts differ, the
// log answers. A commit is told more finely: before it, the writer says
// where it lands each run it touches, and until the windows hold it, a
// cursor past a run's window is answered from it only when past that too
// (a status poll's, which no read gave); the log answers the rest.
#pragma once

#include "actors/run_windows.hpp"

#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace hb::actors {

class shared_run_windows {
public:
  explicit shared_run_windows(run_windows::limits lim = {}) : windows_(lim) {}

  // The writer, after a commit (its notice's texts are taken): whether the
  // broker needs the notice too.
  bool committed(log_committed& touched) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      windows_.on_committed(touched);
    }
    return following_.load();
  }

  std::optional<output_reply> answer(const output_query& q) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto landing = landing_.find(q.run_id);
    return windows_.answer(q, !lost_ && held_ == begun_.load(),
                           landing == landing_.end() ? nullptr : &landing->second);
  }

  // The writer's bracket around anything that changes what a read of the
  // log sees (a commit, a retry, a pruning step), made before it and ended
  // once the windows hold the change; left by an exception, the windows
  // never count as holding the log again (the log answers past ends).
  // A commit's bracket says where it lands the runs it touches instead of
  // counting as a change: other runs, and cursors no read gave, are still
  // answered from memory while it is in flight.
  class change {
  public:
    explicit change(shared_run_windows* windows) : windows_(windows) {
      if (windows_)
        windows_->begun_.fetch_add(1);
    }
    change(shared_run_windows* windows, run_landings commit) : windows_(windows), commit_(true) {
      if (!windows_)
        return;
      std::lock_guard<std::mutex> lock(windows_->mu_);
      for (auto& [run_id, landing] : commit)
        windows_->landing_.insert_or_assign(std::move(run_id), landing);
    }
    ~change() {
      if (!windows_)
        return;
      std::lock_guard<std::mutex> lock(windows_->mu_);
      if (std::uncaught_exceptions() != exceptions_)
        windows_->lost_ = true;
      else if (commit_)
        windows_->landing_.clear();
      else
        windows_->held_ = windows_->begun_.load();
    }
    change(const change&) = delete;
    change& operator=(const change&) = delete;

  private:
    shared_run_windows* windows_;
    bool commit_ = false;
    int exceptions_ = std::uncaught_exceptions();
  };

  // The broker: true before it looks for a new follower's news; false once
  // it has none.
  void following(bool yes) { following_.store(yes); }
  bool following() const { return following_.load(); }

  struct sizes {
    size_t live_runs = 0, ended_runs = 0, bytes = 0;
  };
  sizes size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return {windows_.runs() - windows_.ended_runs(), windows_.ended_runs(), windows_.bytes()};
  }

private:
  mutable std::mutex mu_;
  run_windows windows_;
  std::atomic<bool> following_{false};
  std::atomic<uint64_t> begun_{0};
  uint64_t held_ = 0;  // under mu_
  bool lost_ = false;  // under mu_: a change may be missing for good
  std::unordered_map<std::string, run_landing> landing_; // under mu_: the commit in flight's runs
};

} // namespace hb::actors
