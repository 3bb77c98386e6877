// The log checkpointer: moves the WAL into the database file (see
// storage/checkpoint.hpp for why not the writer), sleeps while nothing is
// committed or read, and hands freed memory back after big runs.
#include "actors/log_actors.hpp"

#include "actors/daemon_log.hpp"
#include "actors/log_messages.hpp"
#include "actors/test_faults.hpp"
#include "storage/checkpoint.hpp"

#include <caf/all.hpp>

#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>

namespace hb::actors {

namespace {

// Run output that went through the log actors (deltas and events written,
// answers read). A big run leaves freed memory in the allocator's arenas;
// once this has grown by trim_after_bytes and the log has been quiet for a
// checkpoint period, it is handed back to the OS (see trim_when_quiet).
std::atomic<uint64_t> output_bytes_moved{0};
constexpr uint64_t trim_after_bytes = 4u << 20;

// The checkpointer stops its timer once a tick finds nothing new and the WAL
// all in the database file; whoever commits or moves output next wakes it.
// Only the checkpointer sets `asleep`, after it has set `who`, so a waker
// that takes `asleep` sees `who`. (One checkpointer per process.)
struct checkpointer_alarm {
  std::atomic<bool> asleep{false};
  caf::weak_actor_ptr who;
};
checkpointer_alarm sleeper;

struct checkpointer_state {
  std::string path;
  std::unique_ptr<storage::checkpoint_connection> db;
  int open_failures = 0;      // in a row; the next try waits longer
  uint64_t moved_seen = 0;    // output_bytes_moved at the previous tick
  uint64_t moved_trimmed = 0; // ... at the last trim
  int64_t data_version = -1;  // SQLite's count of other connections' commits, at the previous look
  uint64_t moved_looked = 0;  // output_bytes_moved then
  static inline const char* name = "log_checkpointer";
};

// glibc keeps freed memory in its arenas: free chunks in the middle of an
// arena go back to the OS only through malloc_trim. Even with the thresholds
// pinned (see serve()), a 100,000-delta run and three full reads of it left
// 51 MB against a 26 MB baseline; 39 MB after a trim. So once a lot of
// output has gone through and the log has been quiet for a whole period,
// trim. It walks the arenas once (1 to 4 ms measured) and never runs while
// output keeps flowing.
void trim_when_quiet(checkpointer_state& st) {
  uint64_t moved = output_bytes_moved.load(std::memory_order_relaxed);
  if (moved != st.moved_seen) {
    st.moved_seen = moved; // still busy
    return;
  }
  if (moved - st.moved_trimmed < trim_after_bytes)
    return;
  st.moved_trimmed = moved;
  auto started = std::chrono::steady_clock::now();
  int released = ::malloc_trim(0);
  log_event(log_level::debug, "memory.trimmed", "",
            {{"released", released ? "yes" : "no"},
             {"ms", std::to_string(std::chrono::duration<double, std::milli>(
                                     std::chrono::steady_clock::now() - started).count())}});
}

// Whether anything was committed or moved since the previous look.
bool something_new(checkpointer_state& st) {
  int64_t version = 0;
  try {
    if (st.db)
      version = st.db->data_version();
  } catch (const std::exception&) {
    version = st.data_version + 1; // cannot tell: assume so, and keep the timer
  }
  uint64_t moved = output_bytes_moved.load(std::memory_order_relaxed);
  bool fresh = version != st.data_version || moved != st.moved_looked;
  st.data_version = version;
  st.moved_looked = moved;
  return fresh;
}

// True when the whole WAL is in the database file (a reader's snapshot can
// hold part of it back: then the next tick tries again).
bool checkpoint(checkpointer_state& st) {
  if (!st.db)
    return true;
  std::string failure;
  bool settled = st.db->checkpoint(&failure);
  if (!failure.empty())
    log_event(log_level::warn, "log.checkpoint_failed", failure);
  return settled;
}

// Without its connection the checkpointer does nothing and the WAL grows
// with every commit (the writer never checkpoints), so an open that fails
// (the file briefly unreadable, no descriptor left) is tried again, each
// time twice as late (0.5 s up to a minute), and each failure is logged.
std::chrono::milliseconds open_connection(checkpointer_state& st) {
  try {
    if (test_fault_enabled("checkpointer_open_fails") && st.open_failures < 2)
      throw std::runtime_error("test fault: checkpointer_open_fails");
    st.db = std::make_unique<storage::checkpoint_connection>(st.path);
  } catch (const std::exception& e) {
    ++st.open_failures;
    auto wait = std::chrono::milliseconds(500) * (1 << std::min(st.open_failures - 1, 7));
    wait = std::min<std::chrono::milliseconds>(wait, std::chrono::minutes(1));
    log_event(st.open_failures == 1 ? log_level::error : log_level::warn, "log.checkpointer_open_failed",
              e.what(), {{"attempt", std::to_string(st.open_failures)},
                         {"retry_in_ms", std::to_string(wait.count())}});
    return wait;
  }
  if (st.open_failures > 0)
    log_event(log_level::info, "log.checkpointer_opened", "",
              {{"after_failures", std::to_string(st.open_failures)}});
  st.open_failures = 0;
  return std::chrono::milliseconds(0);
}

caf::behavior log_checkpointer_actor(caf::stateful_actor<checkpointer_state>* self, std::string path,
                                     std::chrono::milliseconds period) {
  self->state.path = std::move(path);
  sleeper.who = caf::weak_actor_ptr{self->ctrl()};
  self->send(self, checkpoint_due{});
  return {
    [=](checkpoint_due) {
      auto& st = self->state;
      if (!st.db) {
        // Not asleep while it has no connection: the retry's own timer
        // is the one outstanding tick.
        if (auto retry = open_connection(st); retry.count() > 0) {
          trim_when_quiet(st);
          self->delayed_send(self, retry, checkpoint_due{});
          return;
        }
      }
      bool settled = checkpoint(st);
      bool fresh = something_new(st);
      trim_when_quiet(st);
      if (fresh || !settled) {
        self->delayed_send(self, period, checkpoint_due{});
        return;
      }
      // A whole period without news, the WAL in the file and the memory
      // trimmed if it was due: nothing to do until the next commit. A commit
      // between the look above and going to sleep did not see us asleep, so
      // look once more.
      sleeper.asleep.store(true, std::memory_order_release);
      if (something_new(st) && sleeper.asleep.exchange(false, std::memory_order_acq_rel))
        self->delayed_send(self, period, checkpoint_due{});
    },
  };
}

} // namespace

void wake_checkpointer() {
  if (!sleeper.asleep.load(std::memory_order_relaxed))
    return; // the usual case while output flows: one load, no write
  if (sleeper.asleep.exchange(false, std::memory_order_acq_rel))
    if (auto who = caf::actor_cast<caf::actor>(sleeper.who))
      caf::anon_send(who, checkpoint_due{});
}

void note_output_moved(size_t bytes) {
  output_bytes_moved.fetch_add(bytes, std::memory_order_relaxed);
  wake_checkpointer(); // its memory trim waits for output to stop moving
}

caf::actor spawn_log_checkpointer(caf::actor_system& sys, const std::string& db_path,
                                  std::chrono::milliseconds period, spawn_mode mode) {
  if (mode == spawn_mode::scheduled)
    return sys.spawn(log_checkpointer_actor, db_path, period);
  return sys.spawn<caf::detached>(log_checkpointer_actor, db_path, period);
}

} // namespace hb::actors
