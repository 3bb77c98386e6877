// Connections, the reading half: framing, one-shot versus keepalive
// connections, a client's EOF, read deadlines, the line cap before the
// token, and idle keepalive connections. Answers: broker_answers.cpp.
#include "actors/broker_state.hpp"
#include "actors/errors.hpp"

#include "actors/daemon_log.hpp"
#include "protocol/request.hpp"

#include <utility>

namespace hb::actors {

using protocol::error_line;

namespace {

// Brings the broker's count of bytes held in unfinished lines up to date
// with what this connection's reader holds now.
void recount_held(broker_actor* self, connection& conn) {
  self->state.held_bytes += conn.reader.buffered() - conn.held_bytes;
  conn.held_bytes = conn.reader.buffered();
}

// Until a connection has shown its token (--token-file), its line is cut at
// pre_token_line_bytes, so a client without the token cannot make the daemon
// hold and parse a 32 MB line. As soon as the token's text is among the
// bytes received the cap is --max-line-bytes again: a big first request
// that carries its token early enough is served as before.
void widen_line_cap_on_token(broker_actor* self, connection& conn, std::string_view data) {
  const std::string& token = self->state.settings->token;
  if (token.empty() || conn.authenticated || conn.token_in_sight)
    return;
  std::string window(conn.reader.tail(token.size() - 1)); // the token may straddle two reads
  window.append(data);
  if (window.find(token) == std::string::npos)
    return;
  conn.token_in_sight = true;
  conn.reader.set_max_line_bytes(self->state.settings->max_line_bytes);
}

bool waits_for_a_line(const connection& conn) {
  return conn.reader.buffered() > 0 || (!conn.keepalive && conn.next_request == conn.first_seq);
}

// The client sent EOF. Like the seed, what it sent without a final newline
// is its last request (on a connection that has not asked anything yet,
// even nothing at all, which is an "empty request"); the connection closes
// once every request is answered. A subscription ends, as it always did.
void on_peer_done(broker_actor* self, handle h) {
  auto it = self->state.connections.find(h.id());
  if (it == self->state.connections.end())
    return;
  auto& conn = it->second;
  conn.peer_done = true;
  if (conn.closing)
    return; // it may still read what it was sent: closed once that has drained
  if (!conn.streaming && !conn.one_shot_taken && !conn.reader.overflowed()) {
    std::string rest = conn.reader.take_rest();
    recount_held(self, conn);
    if (!rest.empty() || conn.next_request == conn.first_seq)
      take_request(self, h, rest);
  }
  it = self->state.connections.find(h.id()); // answering may have closed it
  if (it == self->state.connections.end())
    return;
  if (it->second.streaming)
    return close_now(self, h);
  close_if_done(self, h);
}

} // namespace

void on_new_connection(broker_actor* self, handle h) {
  auto& st = self->state;
  if (st.connections.size() >= st.settings->max_connections) {
    // Refused at once and clearly, so a flood of connections cannot starve
    // the clients already being served.
    append_line(self->wr_buf(h), error_line("RuntimeError", "too many connections (--max-connections " +
                                                              std::to_string(st.settings->max_connections) +
                                                              "); try again later"));
    self->flush(h);
    self->close(h);
    return;
  }
  size_t max_line = st.settings->token.empty() ? st.settings->max_line_bytes
                                               : std::min(st.settings->max_line_bytes, pre_token_line_bytes);
  st.connections.emplace(h.id(), connection(max_line, ++st.next_serial));
  self->ack_writes(h, true); // data_transferred_msg: what CAF still holds for the client (broker_answers.cpp)
  arm_sweep(self);
  self->configure_read(h, caf::io::receive_policy::at_most(8192)); // requests are small; big ones come in pieces
}

// Bytes in unfinished lines are held for their client. Past
// --max-pending-bytes across all connections, data that would hold more is
// refused with an answer, so slow or silent senders cannot fill memory.
bool refuse_if_over_pending_cap(broker_actor* self, handle h, connection& conn, std::string_view data) {
  auto& st = self->state;
  uint64_t cap = st.settings->max_pending_bytes;
  size_t nl = data.rfind('\n');
  uint64_t held_after = nl == std::string_view::npos ? conn.reader.buffered() + data.size() : data.size() - nl - 1;
  if (held_after <= conn.held_bytes || st.held_bytes - conn.held_bytes + held_after <= cap)
    return false;
  log_event(log_level::warn, "connection.refused_pending", "unfinished request lines hold too many bytes",
            {{"connection", std::to_string(h.id())},
             {"held_bytes", std::to_string(st.held_bytes)},
             {"limit", std::to_string(cap) + " (--max-pending-bytes)"}});
  conn.reader.take_rest();
  recount_held(self, conn);
  conn.keepalive = false;
  conn.one_shot_taken = true;
  respond(self, reply_to{h, conn.next_request++, ""},
          error_line("RuntimeError", "the daemon holds too many bytes of unfinished requests (--max-pending-bytes " +
                                       std::to_string(cap) + "); try again later"));
  return true;
}

void on_data(broker_actor* self, const caf::io::new_data_msg& msg) {
  auto& conns = self->state.connections;
  auto it = conns.find(msg.handle.id());
  if (it != conns.end() && msg.buf.empty())
    return on_peer_done(self, msg.handle); // see client_scribe (broker_sockets.cpp)
  if (it == conns.end() || it->second.one_shot_taken || it->second.streaming || it->second.closing)
    return; // like the seed: bytes after a one-shot request are ignored
  auto now = std::chrono::steady_clock::now();
  std::string_view data(msg.buf.data(), msg.buf.size());
  if (refuse_if_over_pending_cap(self, msg.handle, it->second, data))
    return;
  it->second.last_activity = now;
  bool had_partial = it->second.reader.buffered() > 0;
  bool took_line = false;
  widen_line_cap_on_token(self, it->second, data);
  it->second.reader.feed(data);
  // Whatever the lines below do, the count of held bytes follows the reader
  // (and a connection that takes no more lines holds none).
  struct recount_on_exit {
    broker_actor* self;
    handle h;
    ~recount_on_exit() {
      auto it = self->state.connections.find(h.id());
      if (it == self->state.connections.end())
        return;
      if (it->second.one_shot_taken || it->second.streaming)
        it->second.reader.take_rest(); // ignored from now on (on_peer_done reads it only before)
      recount_held(self, it->second);
    }
  } recount{self, msg.handle};
  for (;;) {
    it = conns.find(msg.handle.id()); // answering may have closed it
    if (it == conns.end() || it->second.one_shot_taken || it->second.streaming || it->second.closing)
      return;
    auto& conn = it->second;
    auto line = conn.reader.next_line();
    if (conn.reader.overflowed()) {
      // The rest of the stream has no trustworthy line boundary: answer, close.
      conn.keepalive = false;
      conn.one_shot_taken = true;
      if (!self->state.settings->token.empty() && !conn.authenticated && !conn.token_in_sight)
        return respond(self, reply_to{msg.handle, conn.next_request++, ""},
                       error_line("PermissionError", "unauthorized (a connection's first request must show the "
                                                     "token within its first " +
                                                       std::to_string(pre_token_line_bytes) + " bytes)"));
      return respond_error(self, reply_to{msg.handle, conn.next_request++, ""},
                           protocol::value_error("request line exceeds " +
                                                 std::to_string(conn.reader.max_line_bytes()) +
                                                 " bytes (--max-line-bytes)"));
    }
    if (!line) {
      // A line begun by this data starts its deadline now; one that was
      // already under way keeps its own, however slowly it trickles in.
      if (conn.reader.buffered() > 0 && (took_line || !had_partial))
        conn.line_started = now;
      return;
    }
    took_line = true;
    take_request(self, msg.handle, *line);
  }
}

void authenticate(broker_actor* self, connection& conn) {
  conn.authenticated = true;
  conn.reader.set_max_line_bytes(self->state.settings->max_line_bytes);
}

void on_connection_closed(broker_actor* self, handle h) {
  drop_watchers_of(self, h);
  forget_connection(self, h);
}

std::chrono::milliseconds sweep_period(const daemon_settings& settings) {
  return std::clamp(std::min({settings.read_timeout, settings.keepalive_idle, settings.subscriber_stall,
                              settings.write_timeout}) / 4,
                    std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
}

void arm_sweep(broker_actor* self) {
  auto& st = self->state;
  if (std::exchange(st.sweep_armed, true))
    return;
  self->delayed_send(self, sweep_period(*st.settings), connection_sweep_due{});
}

// Read deadlines for requests that never complete, and closing of idle
// keepalive connections: one sweep per period instead of a timer per
// connection keeps the cost flat at high request rates.
void sweep_connections(broker_actor* self) {
  auto& st = self->state;
  auto now = std::chrono::steady_clock::now();
  std::vector<int64_t> late, idle;
  for (auto& [id, conn] : st.connections) {
    if (conn.streaming || conn.one_shot_taken || conn.peer_done || conn.closing)
      continue;
    if (waits_for_a_line(conn)) {
      if (now - conn.line_started >= st.settings->read_timeout)
        late.push_back(id);
    } else if (conn.keepalive && conn.next_answer == conn.next_request &&
               now - conn.last_activity >= st.settings->keepalive_idle) {
      idle.push_back(id);
    }
  }
  for (int64_t id : late) {
    auto& conn = st.connections.at(id);
    conn.keepalive = false;
    conn.one_shot_taken = true;
    conn.reader.take_rest(); // cut off: the rest of its line is not waited for
    recount_held(self, conn);
    respond(self, reply_to{handle::from_int(id), conn.next_request++, ""},
            error_line("RuntimeError", "no complete request line within " +
                                         std::to_string(st.settings->read_timeout.count()) + " ms"));
  }
  for (int64_t id : idle)
    close_now(self, handle::from_int(id));
  cut_stalled_writers(self, now);
  st.hub->cut_stalled(); // subscribers: --subscriber-stall-ms
}

bool close_quiet_connections(broker_actor* self, steady_time now) {
  // Long enough for a client that connected just before the hand-over to
  // have sent its request; short against the drain deadline.
  constexpr std::chrono::milliseconds quiet{250};
  auto& st = self->state;
  std::vector<int64_t> quiet_ones;
  for (auto& [id, conn] : st.connections)
    if (!conn.closing && !conn.streaming && conn.next_answer == conn.next_request && conn.reader.buffered() == 0 &&
        now - conn.last_activity >= quiet)
      quiet_ones.push_back(id);
  for (int64_t id : quiet_ones)
    close_now(self, handle::from_int(id));
  return st.connections.empty();
}

} // namespace hb::actors
