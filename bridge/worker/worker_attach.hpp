// Finding the workers a previous daemon left running and attaching to them
// (FRAMES.md, "Re-attaching"): each worker's record in the daemon's private
// worker directory names its socket and secret; the socket's peer must be
// this user and the record's pid; the worker answers `attached` with what it
// holds. Runs once at start, before the event log is recovered, so that the
// runs those workers still run are continued instead of interrupted.
#pragma once

#include "bridge/worker/frames.hpp"

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace hb::bridge::worker {

struct worker_record {
  pid_t pid = -1;
  std::string profile;
  std::string socket;  // always <dir>/worker-<pid>.sock
  std::string secret;
  std::string modules; // the directory its bridge modules were written to (kept while it lives)
  std::string daemon;  // the event log of the daemon that started it
  int64_t version = 0;
  double started_at = 0;
};

// A worker attached to: `fd` is the connection, already past the handshake.
struct found_worker {
  worker_record record;
  int fd = -1;
  attached held;
};

// Every live worker in `dir` started by a daemon of the event log `daemon`
// that this daemon could attach to. Records of dead workers are removed with
// their sockets; a worker that refuses, speaks an incompatible version,
// fails a check or does not answer within `deadline` is left alone (said in
// the daemon's log, through report_worker_event); another log's workers are
// not touched (`daemon` empty: every daemon's, for `hermes-bridge stop --all`).
std::vector<found_worker> attach_to_live_workers(const std::string& dir, const std::string& daemon,
                                                 std::chrono::milliseconds deadline);

// Whether `pid` is a process that has not ended (a zombie has ended: whoever
// adopted it has not reaped it yet).
bool process_alive(pid_t pid);

// A record file's contents; throws std::runtime_error for anything that is
// not a well-formed record of a worker in `dir`.
worker_record parse_worker_record(const std::string& text, const std::string& dir);

} // namespace hb::bridge::worker
