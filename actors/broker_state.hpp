// The broker's state and the functions its translation units share. A
// request's way through them: broker_connections.cpp frames it,
// broker_intake.cpp decodes it, broker_router.cpp hands it to its handler
// (there, or in broker_sessions.cpp, broker_push.cpp, broker_questions.cpp,
// broker_studio.cpp), and broker_answers.cpp writes the answer back.
#pragma once

#include "actors/broker.hpp"
#include "actors/output_hub.hpp"
#include "actors/question_messages.hpp"
#include "actors/broker_replies.hpp"
#include "actors/reply_to.hpp"
#include "actors/requests.hpp"
#include "actors/responses.hpp"
#include "actors/session.hpp"
#include "protocol/json_text.hpp"
#include "protocol/line_reader.hpp"
#include "protocol/wire_error.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

namespace hb::actors {

// Request numbers are unique across connections: the high 32 bits are the
// connection's serial, the low 32 its requests in order. A handle's id is
// the socket's fd, which the kernel hands to the next client once this one
// is gone; an answer still on its way for the old client is then told
// apart from the new client's own answers and dropped.
constexpr int serial_shift = 32;

struct connection {
  connection(size_t max_line, uint64_t serial)
      : reader(max_line), first_seq(serial << serial_shift), next_request(first_seq),
        next_answer(first_seq) {}
  protocol::line_reader reader;
  steady_time last_activity = std::chrono::steady_clock::now();
  // When the unfinished line began (its first byte; the connection's start
  // for a first request not yet begun): --read-timeout-ms runs from here.
  steady_time line_started = last_activity;
  uint64_t held_bytes = 0; // this connection's share of broker_state::held_bytes
  bool keepalive = false;  // a request asked for it: read and answer more lines
  bool one_shot_taken = false; // without keepalive: one request, later bytes ignored
  bool streaming = false;  // a subscription owns the connection
  bool authenticated = false; // --token-file: a request carried the token
  bool token_in_sight = false; // the token's text has arrived: lines may be --max-line-bytes long
  bool peer_done = false;  // the client sent EOF: answer what was asked, then close
  bool closing = false;    // done with, but CAF still holds answers for it: closed once drained
  uint64_t first_seq;
  uint64_t next_request;
  uint64_t next_answer;
  std::map<uint64_t, std::string> ready; // answers waiting for earlier ones
  uint64_t ready_bytes = 0;              // their size
  uint64_t unsent_bytes = 0;             // written, not yet handed to the socket (CAF's acks)
  steady_time write_progress{};          // when the client last took some (--write-timeout-ms)
  bool owns(uint64_t seq) const { return seq >> serial_shift == first_seq >> serial_shift; }
};

// How long the broker waits for a session actor's own answer.
constexpr std::chrono::seconds session_reply_limit{5};

struct broker_state {
  std::shared_ptr<const daemon_settings> settings;
  broker_links links;
  session_links_ptr session_links; // what every session it makes holds (links_for_sessions)
  size_t next_reader = 0;
  std::map<std::string, caf::actor> sessions;
  uint64_t open_questions = 0; // as the questions actor last said (questions_open)
  std::unordered_map<int64_t, connection> connections;
  uint64_t held_bytes = 0; // in unfinished lines, all connections (--max-pending-bytes)
  uint64_t queued_bytes = 0; // answers not yet handed to sockets, all connections (--max-queued-answer-bytes)
  uint64_t next_serial = 0; // see connection::first_seq
  // Long-polls and subscriptions (broker_push.cpp); the hub answers through its port.
  std::unique_ptr<output_hub::port> hub_port;
  std::unique_ptr<output_hub> hub;
  caf::io::accept_handle acceptor;
  bool stopping = false;
  // Handing over (broker_hand_over): answered once no connection is left.
  std::optional<caf::response_promise> handover;
  steady_time handover_deadline{};
  bool sweep_armed = false; // a read_due is on its way (see arm_sweep)
  // Connections are real sockets (CAF's default multiplexer, not a test's):
  // small answers may be sent at once (send_answers).
  bool direct_sends = false;
  int64_t pid = 0; // ping tells it
  // Each session's profile and whether a turn runs, written by the sessions
  // (read through live_activity()).
  std::shared_ptr<session_activity> activity = std::make_shared<session_activity>();
  static inline const char* name = "broker";
};

using broker_actor = caf::stateful_actor<broker_state, caf::io::broker>;

// Before a connection has shown its --token-file token, the longest line it may send.
constexpr size_t pre_token_line_bytes = 64u << 10;

// -- broker_connections.cpp ----------------------------------------------------
void on_new_connection(broker_actor* self, handle h);
void on_data(broker_actor* self, const caf::io::new_data_msg& msg);
void on_connection_closed(broker_actor* self, handle h);
void on_transferred(broker_actor* self, const caf::io::data_transferred_msg& msg);
void sweep_connections(broker_actor* self);
std::chrono::milliseconds sweep_period(const daemon_settings& settings);
// Schedules the next sweep unless one is due already. Only open connections
// and subscriptions give a sweep work, so the timer stops with the last of
// them and the next connection starts it again: an idle daemon does not wake
// every period for nobody.
void arm_sweep(broker_actor* self);
// The connection's first request carried the token: it may send lines up to --max-line-bytes.
void authenticate(broker_actor* self, connection& conn);

// -- broker_answers.cpp ----------------------------------------------------------
// Writes the answer in request order (keepalive), or answers and closes.
void respond(broker_actor* self, const reply_to& to, std::string line);
void respond_error(broker_actor* self, const reply_to& to, const protocol::wire_error& e);
void respond_failure(broker_actor* self, const reply_to& to, const caf::error& err);
// Subscriptions: one more line on a streaming connection; false when the
// client is too far behind and the stream was ended for it.
bool push_line(broker_actor* self, const reply_to& to, std::string line,
               const watcher& w);
// Ends a subscription with a last line saying why and where to resume.
void cut_off(broker_actor* self, const watcher& w, const std::string& why, const char* error_type);
void begin_stream(broker_actor* self, handle h);
void end_stream(broker_actor* self, handle h);
void append_line(std::vector<char>& buf, const std::string& text);
void forget_connection(broker_actor* self, handle h);
// Done with the connection: closed at once when its answers have left,
// else once they have (or cut when its client stops taking them).
void close_now(broker_actor* self, handle h);
// Closes it when everything asked has been answered and no more will be asked.
void close_if_done(broker_actor* self, handle h);
// Cuts connections whose clients took nothing of their answers for --write-timeout-ms.
void cut_stalled_writers(broker_actor* self, steady_time now);
// A successor accepts on the listening socket too: closing the acceptor
// leaves the socket whole.
void share_listening_socket();
// Handing over: closes the connections that wait for nothing and have asked
// nothing for a moment (a client that connected just before the hand-over
// has sent its request by then); true once none is left.
bool close_quiet_connections(broker_actor* self, steady_time now);

// Asks `dest` and answers the client with its typed reply, encoded once
// (responses.hpp: encode), or with its error.
template <class Reply, class Message>
void ask_and_answer(broker_actor* self, const reply_to& to, const caf::actor& dest, Message msg) {
  self->request(dest, caf::infinite, std::move(msg))
    .then([=](Reply& reply) { respond(self, to, encode(reply)); },
          [=](caf::error& err) { respond_failure(self, to, err); });
}

// -- broker_questions.cpp ------------------------------------------------------
// Clients' answers, settled by the questions actor (questions.hpp).
void on_request(broker_actor* self, const reply_to& to, requests::approval_respond& r);
void on_request(broker_actor* self, const reply_to& to, requests::compression_respond& r);
void on_request(broker_actor* self, const reply_to& to, requests::clarify_respond& r);

// -- broker_studio.cpp -----------------------------------------------------------
// What Hermes Studio's current bridge answers besides the seed's actions.
void on_request(broker_actor* self, const reply_to& to, requests::context_estimate& r);
void on_request(broker_actor* self, const reply_to& to, requests::switch_session_model& r);
void on_request(broker_actor* self, const reply_to& to, requests::profile_op& r);
void on_request(broker_actor* self, const reply_to& to, requests::unknown_mcp& r);
void on_request(broker_actor* self, const reply_to& to, requests::destroy_profile& r);
void on_request(broker_actor* self, const reply_to& to, requests::worker_ping& r);
// ping's answer: this daemon, its workers and its sessions (from live_activity()).
ping_reply ping_of(broker_actor* self);

// -- broker_push.cpp -------------------------------------------------------------
// The output hub and the port through which it reads and answers.
void start_output_hub(broker_actor* self);
void on_request(broker_actor* self, const reply_to& to, requests::get_output& r);
void on_request(broker_actor* self, const reply_to& to, requests::subscribe& r);
// The writer committed news for these runs (log_messages.hpp).
void on_committed(broker_actor* self, log_committed& touched);
void on_wait_due(broker_actor* self, int64_t when);
void drop_watchers_of(broker_actor* self, handle h);
// The client of `h` has taken everything written so far.
void on_drained(broker_actor* self, handle h);
// Bytes written to the client of `h` that it has not taken yet.
uint64_t unsent_bytes(broker_actor* self, handle h);
steady_time last_taken(broker_actor* self, handle h);

// -- broker_intake.cpp -------------------------------------------------------------
// One request line of connection `h`: decoded, then routed.
void take_request(broker_actor* self, handle h, const std::string& line);

// -- broker_router.cpp -------------------------------------------------------------
void route(broker_actor* self, const reply_to& to, requests::any request);
void on_request(broker_actor* self, const reply_to& to, requests::ping& r);
void on_request(broker_actor* self, const reply_to& to, requests::shutdown& r);
void on_request(broker_actor* self, const reply_to& to, requests::test_fault& r);
void on_request(broker_actor* self, const reply_to& to, requests::chat& r);
void on_request(broker_actor* self, const reply_to& to, requests::get_result& r);
void on_request(broker_actor* self, const reply_to& to, requests::interrupt& r);
void on_request(broker_actor* self, const reply_to& to, requests::steer& r);
void on_request(broker_actor* self, const reply_to& to, requests::get_history& r);

// -- broker_sessions.cpp -----------------------------------------------------------
void on_request(broker_actor* self, const reply_to& to, requests::list& r);
void on_request(broker_actor* self, const reply_to& to, requests::status& r);
void on_request(broker_actor* self, const reply_to& to, requests::status_if_loaded& r);
void on_request(broker_actor* self, const reply_to& to, requests::destroy& r);
void on_request(broker_actor* self, const reply_to& to, requests::destroy_all& r);
void on_request(broker_actor* self, const reply_to& to, requests::health& r);
session_links_ptr links_for_sessions(broker_actor* self);
// The session actor for `id`, spawned (as a new session) if there is none;
// throws protocol::wire_error when --max-sessions sessions exist already.
caf::actor session_actor_for(broker_actor* self, const std::string& id);
// A session actor for `id` (known from the log when `dormant`), made as broker_links says.
caf::actor new_session(broker_actor* self, const std::string& id, const storage::session_row* dormant = nullptr);
const caf::actor* known_session(broker_actor* self, const std::string& id);
// The session actor for `id`; throws KeyError "unknown session: <id>".
const caf::actor& existing_session(broker_actor* self, const std::string& id);
// Destroys these sessions (already out of the table); `finish` hears how many existed.
void destroy_sessions(broker_actor* self, std::vector<caf::actor> sessions,
                      std::function<void(int64_t destroyed)> finish);
// Drops `which` from the session table if it is still the one for `id`.
void forget_session_actor(broker_actor* self, const std::string& id, const caf::actor& which);
// The activity of the sessions in the table: an entry of an actor the table
// no longer holds for its id (destroyed, replaced, not yet gone) is not one.
std::vector<session_activity::entry> live_activity(broker_actor* self);

// -- broker.cpp --------------------------------------------------------------------
const caf::actor& next_reader(broker_actor* self);

} // namespace hb::actors
