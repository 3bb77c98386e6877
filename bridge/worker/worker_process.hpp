// One agent worker process: the agent's own interpreter running the bridge's
// Python adapter (bridge/python/worker_main.py), connected to the daemon by
// a socket pair it inherits as fd 3, or, for a worker a previous daemon
// started, by its own socket (adopt(), worker_attach.hpp). This object starts it, writes frames to
// it from any thread, and reads its frames on a thread of its own, handing
// a turn's output to that turn's sink. When the process dies it settles what
// was waiting on it: calls fail, live turns end with status error and the
// reason (exit code or signal), their open questions are withdrawn.
//
// Every function may block: call them from detached actors or threads.
#pragma once

#include "bridge/agent_env.hpp"
#include "bridge/agent_host.hpp"
#include "bridge/worker/frames.hpp"

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <set>
#include <memory>
#include <mutex>
#include <string>

namespace hb::bridge::worker {

struct launch_options {
  interpreter python;
  std::string agent_root;  // empty: the adapter searches itself
  std::string hermes_home;
  std::string runtime_dir; // a private 0700 directory for the adapter's sources goes here
  bool safe_path = false;  // the interpreter has -P (Python 3.11+)
  std::chrono::milliseconds ready_deadline{60'000};
  // A worker is asked this often whether it still answers (its reading
  // thread answers, not an agent's) ...
  std::chrono::milliseconds heartbeat{2'000};
  // ... and killed when it has said nothing for this long, or has not
  // answered an interrupt within it: a deadlock, a C call holding the GIL.
  std::chrono::milliseconds unresponsive_after{10'000};
  // Questions of one worker waiting for a client at once; more are answered
  // at once with the fail-closed default (a flood cannot start thousands of
  // threads in the daemon).
  size_t max_open_asks = 64;
  // How long a worker whose daemon went away (no `shutdown`) keeps its turns
  // running and waits for a new daemon to attach (0: it exits at once).
  std::chrono::milliseconds orphan_timeout{180'000};
  std::string daemon_key; // the event log's path: only a daemon of the same log takes the worker over
  // How much nicer the worker's warm-up thread (the agent's imports, seconds
  // of CPU for the real one) runs than the rest of it: a spare started
  // while turns run must not take the cores from them. 0: not nicer.
  int warm_nice = 0;
};

struct found_worker;

class worker_process : public std::enable_shared_from_this<worker_process> {
public:
  // Starts the process and waits for its ready frame; throws protocol::wire_error.
  static std::shared_ptr<worker_process> start(const launch_options& how, const std::string& profile);
  // Takes over a worker a previous daemon started, attached to (its turns
  // held until continue_turn or drop_turn names them).
  // Takes found's connection (found.fd is -1 afterwards).
  static std::shared_ptr<worker_process> adopt(found_worker& found, const launch_options& how);
  ~worker_process();

  bool alive() const { return alive_.load(); }
  // The agent's imports are done (its `warm` frame): a session placed here
  // waits for nothing but its own AIAgent.
  bool warm() const { return warm_.load(); }
  // Waits until it is warm; false if it died first or `deadline` passed.
  bool wait_until_warm(std::chrono::milliseconds deadline);
  // Alive and not being retired: new turns may go to it.
  bool accepting() const { return alive_.load() && !stopping_.load(); }
  // Marks it as being retired if no turn runs in it (atomically with
  // run_turn's check, so no turn starts in a worker about to stop).
  bool retire_if_idle();
  std::string death_reason() const;
  pid_t pid() const { return pid_; }
  const std::string& profile() const { return profile_; }
  const ready& info() const { return ready_; }
  size_t live_turns() const;
  double started_at() const { return started_at_; }
  // Resident memory of the process in MB, from /proc (0 when gone).
  double rss_mb() const;

  uint64_t next_handle() { return ++handles_; }

  // Sends a frame that carries `req` (set here) and waits for its reply, the
  // deadline or the process's death (both answer ok=false). `on_reply` runs on
  // the reading thread before any later frame of the worker is read.
  reply call(to_worker frame, std::chrono::milliseconds deadline,
             std::function<void(const reply&)> on_reply = {});
  // Throws protocol::wire_error with the worker's Python error when not ok.
  std::string call_value(to_worker frame, std::chrono::milliseconds deadline);
  // A frame nobody answers; dropped when the worker is gone.
  void post(const to_worker& frame);
  // Begins one turn and returns without waiting for the worker: a stale
  // interrupt cleared and `carried_steer` given to the agent first (frame
  // version 5), output to `sink` as it arrives, `reports.armed` once the
  // frame is written, `reports.ended` (on the reading thread) at turn_end,
  // or with status error when the worker dies first or takes no turns.
  void start_turn(uint64_t handle, const std::shared_ptr<turn_sink>& sink, std::string request,
                  std::string carried_steer, turn_reports reports);
  // The same turn without clearing or steering, waited for (a worker of
  // version 4 or older, whose daemon calls prepare_turn first).
  turn_outcome run_turn(uint64_t handle, const std::shared_ptr<turn_sink>& sink, const std::string& request);
  // A turn the worker ran when this daemon attached to it: its frames after
  // `after` (what the event log holds) go to `sink`; `ended` at its turn_end.
  void start_continued_turn(uint64_t turn, const std::shared_ptr<turn_sink>& sink, uint64_t after,
                            std::function<void(turn_outcome)> ended);
  turn_outcome continue_turn(uint64_t turn, const std::shared_ptr<turn_sink>& sink, uint64_t after);
  // The questions `turn` waited on when this daemon attached, in the order
  // asked, each with what is left of its deadline; continue_turn asks them
  // again (turn_sink::ask_again).
  std::vector<waiting_question> waiting_questions(uint64_t turn) const;
  // A turn the worker ran when this daemon attached that nobody follows.
  void drop_turn(uint64_t turn);
  // Started by another daemon and attached to at this one's start.
  bool adopted() const { return adopted_; }
  // Asks the worker to interrupt its turns and exit; kills it after `grace`.
  void stop(std::chrono::milliseconds grace);

  // The event log holds `turn`'s frames up to `seq`: the worker is told
  // (`committed`, FRAMES.md) by the watcher's thread, never the caller's (the
  // log writer's), acknowledgements of a turn coalesced to the highest.
  void acknowledge(uint64_t turn, uint64_t seq);
  // What the worker said it still keeps unacknowledged, at its last heartbeat.
  uint64_t unacknowledged_frames() const { return unacknowledged_.load(); }

  // It missed a heartbeat: shown in health until it answers or is killed.
  bool unresponsive() const { return unresponsive_.load(); }
  std::chrono::milliseconds unresponsive_after() const { return unresponsive_after_; }
  // SIGKILLs it; its runs end with `why` before the exit status.
  void kill_unresponsive(const std::string& why);

private:
  worker_process() = default;
  // worker_liveness.cpp: sends heartbeats and watches for silence, on a
  // thread of its own that sleeps between beats.
  void watch();
  void heard();
  bool try_post(const to_worker& frame);
  bool try_write(const std::string& bytes); // never waits for the lock or a full socket to start
  // A new turn for `sink` (its id), or 0 when this worker takes none: the
  // turn has then ended, through `ended`, already.
  uint64_t open_turn(const std::shared_ptr<turn_sink>& sink, std::function<void(turn_outcome)> ended);
  void watch_commits(uint64_t turn, const std::shared_ptr<turn_sink>& sink); // acknowledge what the log holds
  bool send_acks(std::map<uint64_t, uint64_t>& acks); // false when some could not go now
  void ask_client(ask f, std::shared_ptr<turn_sink> sink);
  // Waits on a thread of its own for what `asking` answers (a client's
  // answer), then hands it to the worker's question `ask_no` of `turn`.
  void wait_for_answer(uint64_t turn, uint64_t ask_no, const std::string& kind,
                       std::function<std::string()> asking);
  void read_loop();
  void handle(from_worker frame);
  void died(const std::string& reason);
  bool write(const std::string& bytes);
  void send_signal(int sig);   // through its pidfd when there is one: never a stranger reusing the pid
  std::string reap();          // after its socket ended: the process's end, in words
  void begin_watching();       // its reading and watching threads

  struct pending_call {
    std::optional<reply> r;
    std::function<void(const reply&)> hook;
  };
  struct live_turn {
    std::shared_ptr<turn_sink> sink;
    std::function<void(turn_outcome)> ended; // called once, outside mu_
    std::set<uint64_t> asked_again; // seqs of questions continue_turn asked again: their frames, resent, are not
  };

  std::string profile_;
  pid_t pid_ = -1;
  int pidfd_ = -1;
  bool adopted_ = false; // not our child: its exit status goes to whoever reaps it
  int fd_ = -1;
  std::string module_dir_;
  double started_at_ = 0;
  ready ready_;
  std::atomic<bool> alive_{false};
  std::atomic<bool> warm_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> handles_{0};
  std::chrono::milliseconds heartbeat_{2'000}, unresponsive_after_{10'000};
  size_t max_open_asks_ = 64;
  std::atomic<size_t> open_asks_{0};
  std::atomic<int64_t> last_heard_ns_{0};  // steady clock: the last frame read from it
  std::atomic<bool> reader_busy_{false}; // decoding or waiting for the log: its silence is ours
  std::atomic<bool> unresponsive_{false};
  std::atomic<uint64_t> unacknowledged_{0};

  mutable std::mutex mu_; // everything below
  std::condition_variable cv_;
  bool ready_seen_ = false;
  std::string death_reason_;
  std::string kill_reason_;               // why the daemon killed it, when it did
  std::condition_variable watch_cv_;      // the watcher's sleep, woken by its death
  uint64_t next_req_ = 0;
  uint64_t next_turn_ = 0;
  std::map<uint64_t, std::shared_ptr<pending_call>> calls_;
  std::map<uint64_t, std::shared_ptr<live_turn>> turns_;
  std::map<uint64_t, uint64_t> acks_;     // turn -> highest committed seq, not yet sent
  std::map<uint64_t, std::vector<held_ask>> adopted_asks_; // turn -> questions waiting when this daemon attached

  std::mutex write_mu_; // one frame at a time on the socket
};

// "exit code 3", "killed by signal 9 (SIGKILL)": a waitpid status in words.
std::string describe_exit(int wait_status);

} // namespace hb::bridge::worker
