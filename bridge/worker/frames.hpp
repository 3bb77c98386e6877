// The frames between the daemon and an agent worker process (FRAMES.md has
// the format, every kind and its fields). One struct per kind; this file and
// frames.cpp are the only C++ that knows how a frame looks on the wire, and
// bridge/python/worker_frames.py the only Python.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace hb::bridge::worker {

// The version of this format (FRAMES.md, "Versions"): in `ready`, `attach`
// and `attached`. A daemon re-attaches only to workers whose version it
// lists in compatible_version(); a worker it starts must speak this one.
constexpr int64_t frames_version = 5;
bool compatible_version(int64_t version);

// ---- daemon -> worker --------------------------------------------------------

struct create_session {  // build an AIAgent; answered by `reply` (value: its config JSON)
  uint64_t req = 0;
  uint64_t handle = 0;   // the daemon's name for this agent in this worker
  std::string session_id, profile, model, provider;
};
struct prepare_turn {    // clear a stale interrupt; answered by `reply`
  uint64_t req = 0;
  uint64_t handle = 0;
};
struct start_turn {      // run one turn; output comes back as text/event/ask/notify, then turn_end
  uint64_t turn = 0;     // unique per worker process, chosen by the daemon
  uint64_t handle = 0;
  std::string run;       // the daemon's run id: how a re-attaching daemon knows the turn
  std::string request;   // the chat request, JSON
  // (version 5) given to the agent before the turn, in the turn's thread;
  // empty for none: what was steered while no turn ran
  std::string steer;
  // (version 5) the worker clears a stale interrupt as it takes this frame,
  // before it reads the next: the daemon then needs no prepare_turn call
  bool clear_interrupt = false;
};
struct interrupt_turn {  // answered by `reply`
  uint64_t req = 0;
  uint64_t handle = 0;
  std::string message;   // JSON
};
struct steer_turn {      // answered by `reply` (value "1" when the agent took it, "" when not)
  uint64_t req = 0;
  uint64_t handle = 0;
  std::string text;
};
struct release_session { // close the agent; not answered
  uint64_t handle = 0;
};
struct resolve_gateway { // one waiting gateway approval (bridge_adapter.resolve_gateway); `reply` value: how many it released
  uint64_t req = 0;
  std::string session_id, choice;
  std::string request_id, token; // which one: the agent's id (0.20+), else the adapter's handle on it
};
struct session_call {    // bridge_adapter.session_call(session, op, args) -> JSON text
  uint64_t req = 0;
  uint64_t handle = 0;
  std::string op, args;
};
struct profile_call {    // bridge_adapter.profile_call(profile, op, args) -> JSON text
  uint64_t req = 0;
  std::string profile, op, args;
};
struct answer {          // the client's answer to an `ask` (empty: withdrawn)
  uint64_t turn = 0;
  uint64_t ask = 0;
  std::string text;
};
struct committed {       // the log holds the turn's frames up to `seq`: the worker lets go of them
  uint64_t turn = 0;
  uint64_t seq = 0;
};
struct shutdown {};      // interrupt every turn, exit
struct heartbeat {       // answered at once by the worker's reading thread (heartbeat_reply)
  uint64_t beat = 0;
};
// Re-attaching (FRAMES.md): the first frame on a worker's own socket ...
struct attach {
  std::string secret;    // from the worker's 0600 record file
  int64_t version = frames_version;
};
// ... then, for every turn `attached` listed, one of these two.
struct resume {          // send the turn's kept frames after `after`, then go on as before
  uint64_t turn = 0;
  uint64_t after = 0;    // the highest seq the event log holds for it
};
struct drop_turn {       // nobody follows this turn: interrupt it, keep and send nothing of it
  uint64_t turn = 0;
};
// Every version understands this one (FRAMES.md, "Versions"): instead of
// `attach`, from a daemon that cannot drive the worker's version.
struct drain {           // finish your live turns on your own, then exit; answered by `drained`
  std::string secret;
};

// ---- worker -> daemon --------------------------------------------------------

struct ready {           // first frame: who the worker is
  int64_t pid = 0;
  int64_t version = 0;
  std::string python, python_version, agent_root, agent_version;
  std::string error;     // the adapter could not be configured (every create then fails)
};
struct reply {           // the answer to a frame with `req`
  uint64_t req = 0;
  bool ok = false;
  std::string value;     // ok: the payload
  std::string error_type, error; // not ok: the Python exception
};
// A turn's frames carry `seq`: 1, 2, 3... per turn, in the order the worker
// wrote them, so a re-attached daemon can tell what it already has.
struct text {
  uint64_t turn = 0, seq = 0;
  std::string text;
};
// Version 3: a turn's texts with consecutive seq, from `seq` on, as one frame
// (what a streaming agent's worker mostly sends).
struct texts {
  uint64_t turn = 0, seq = 0;
  std::vector<std::string> texts;
};
struct event {
  uint64_t turn = 0, seq = 0;
  std::string json;      // the event object, as the adapter encoded it
};
struct ask {             // a question for a client; the turn's thread waits for `answer`
  uint64_t turn = 0, seq = 0;
  uint64_t ask = 0;
  std::string kind;      // "approval", "compression" or "clarify"
  std::string request;   // JSON
  double timeout_s = 0;
};
struct notify {          // a gateway approval the agent waits for by itself
  uint64_t turn = 0, seq = 0;
  std::string request;
  double timeout_s = 0;
};
struct heartbeat_reply {
  uint64_t beat = 0;
  uint64_t unacknowledged = 0; // turn frames it keeps until the log holds them (`committed`)
};
struct turn_end {
  uint64_t turn = 0, seq = 0;
  std::string status;
  std::optional<std::string> result, error, history;
  int64_t message_count = 0;
};
struct warm {};           // the agent's imports are done (or failed): sessions may come
// What a worker holds, as it tells a daemon that attaches to it.
struct held_session {
  uint64_t handle = 0;
  std::string session_id;
};
struct held_turn {
  uint64_t turn = 0, handle = 0;
  std::string run;
  uint64_t seq = 0;      // the last seq it wrote for the turn
  bool ended = false;    // its turn_end is written (and kept until committed)
};
struct held_ask {        // a question whose thread still waits for its answer
  uint64_t turn = 0, ask = 0, seq = 0;
  std::string kind, request;
  double timeout_s = 0, waited_s = 0;
};
struct attached {        // the answer to a good `attach`
  ready who;             // as its `ready` said (the fields travel at the top level)
  bool warm = false;
  uint64_t req = 0;      // the highest req it has seen: the new daemon's start above it
  std::vector<held_session> sessions;
  std::vector<held_turn> turns;
  std::vector<held_ask> asks;
};
struct attach_refused {
  std::string reason;
};
struct drained {         // the answer to `drain`: it exits once its `turns` live turns end
  int64_t version = 0;
  uint64_t turns = 0;
};
// The turn frames that piled up while the worker's writer was busy, in the
// order (and with the seq) they would have gone one by one.
using turn_frame = std::variant<text, texts, event, ask, notify, turn_end>;
struct batch {
  std::vector<turn_frame> frames;
};

using to_worker = std::variant<create_session, prepare_turn, start_turn, interrupt_turn, steer_turn,
                               release_session, resolve_gateway, session_call, profile_call, answer,
                               committed, shutdown, heartbeat, attach, resume, drop_turn, drain>;
using from_worker = std::variant<ready, reply, text, texts, event, ask, notify, turn_end, heartbeat_reply, warm, batch,
                                 attached, attach_refused, drained>;

// A frame that cannot be read: the stream is corrupt and the worker is cut off.
struct frame_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A frame goes in parts of at most max_part_bytes, each behind a 4-byte
// big-endian length whose top bit (more_parts) says another part follows:
// no single read announces more than a part, and nothing but a frame's
// real bytes is ever held for it. A whole frame stays under max_frame_bytes.
constexpr uint32_t max_part_bytes = 32u << 20;
constexpr uint32_t more_parts = 1u << 31;
constexpr size_t max_frame_bytes = size_t{1} << 30; // a 100 MB turn's outcome fits a few times over

// The whole frame: 4-byte big-endian length, then the body.
std::string encode(const to_worker& frame);
std::string encode(const from_worker& frame);

// A body (without its length) back into a frame; throws frame_error.
to_worker decode_to_worker(std::string_view body);
from_worker decode_from_worker(std::string_view body);
// The same, with the body's buffer given to its last raw field (a long
// run's result) rather than copied.
from_worker decode_taking(std::string&& body);
// Both go the fast way for a streaming turn's texts and events (stream_decoder.hpp);
// this one never does (tests hold the two against each other).
from_worker decode_from_worker_generally(std::string_view body);

// Cuts a byte stream into bodies. feed() what arrives; next() hands out each
// complete body once, its parts joined. Throws frame_error on a part over
// max_part_bytes or a frame over max_frame_bytes.
class frame_reader {
public:
  void feed(const char* data, size_t size);
  std::optional<std::string> next();
  size_t buffered() const { return buffer_.size() - start_ + parts_bytes_; }

private:
  void drop_taken();
  std::string joined_parts();

  std::string buffer_;
  // The parts so far of a frame sent in parts, apart: one string grown part
  // by part would copy what it holds at every doubling, and hold it twice
  // meanwhile (a 300 MB turn's outcome: 256 MB old and new at once).
  std::vector<std::string> parts_;
  size_t parts_bytes_ = 0;
  size_t start_ = 0;
};

} // namespace hb::bridge::worker
