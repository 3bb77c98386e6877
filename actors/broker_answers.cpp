// Answers on their way out of the daemon: in request order, with the
// client's id; what waits for a client that does not read (per connection,
// across all connections, and for how long); and closing a connection only
// once what it was sent has left the daemon.
//
// CAF keeps a connection's unsent answer in its own buffers, and after a
// graceful close it keeps the buffer and the socket until the client acts.
// So a connection stays counted (--max-connections, health) until its
// answers have drained: every connection acks its writes
// (data_transferred_msg says how much CAF still holds), and one the daemon
// is done with is closed when that reaches 0, or cut when its client has
// taken nothing for --write-timeout-ms.
#include "actors/broker_state.hpp"
#include "actors/errors.hpp"

#include "actors/daemon_log.hpp"
#include "protocol/request.hpp"

#include <sys/socket.h>

#include <algorithm>

namespace hb::actors {

using protocol::error_line;

namespace {

std::string with_id(std::string line, const std::string& id) {
  if (id.empty())
    return line;
  // Every answer opens with {"ok": true or {"ok": false; the id goes next.
  static const std::string ok_true = "{\"ok\": true", ok_false = "{\"ok\": false";
  size_t at = line.compare(0, ok_true.size(), ok_true) == 0    ? ok_true.size()
              : line.compare(0, ok_false.size(), ok_false) == 0 ? ok_false.size()
                                                                : std::string::npos;
  if (at != std::string::npos)
    line.insert(at, ", \"id\": " + id);
  return line;
}

void set_unsent(broker_state& st, connection& conn, uint64_t bytes) {
  st.queued_bytes = st.queued_bytes - conn.unsent_bytes + bytes;
  conn.unsent_bytes = bytes;
}

// Counted from here until CAF acks it as handed to the socket.
void write_line(broker_actor* self, handle h, connection& conn, const std::string& text) {
  append_line(self->wr_buf(h), text);
  if (conn.unsent_bytes == 0)
    conn.write_progress = std::chrono::steady_clock::now(); // the write deadline starts
  set_unsent(self->state, conn, conn.unsent_bytes + text.size() + 1);
}

// Closing a socket that still holds bytes from the client resets the
// connection: the client reads an error instead of the end after its
// answer (on TCP the answer itself may be lost). Reading is shut first:
// from then on a client still sending (a large write arrives in pieces)
// fails at once (EPIPE) and nothing more arrives; then what came before is
// read and dropped, up to a bound. A client that sent more than the bound
// is reset, as before.
void drop_unread(int fd) {
  static char sink[64u << 10]; // the broker's one thread
  ::shutdown(fd, SHUT_RD);
  for (int i = 0; i < 8 && ::recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0; ++i) {
  }
}

// Closed at once: nothing is left to send. A connection CAF is not writing
// to, CAF shuts down and closes itself. One whose last bytes CAF has just
// written (`in_write`: the ack of its write) it would keep, with its fd,
// until the client did something: that socket is shut down here. Both
// before the close: a scribe CAF holds for nothing else is destroyed inside
// it, its fd closed, and the number may already name another thread's file.
void release(broker_actor* self, handle h, bool in_write) {
  forget_connection(self, h);
  if (self->state.direct_sends) { // a real socket, not a test's handle
    drop_unread(static_cast<int>(h.id()));
    if (in_write)
      ::shutdown(static_cast<int>(h.id()), SHUT_RDWR);
  }
  self->close(h);
}

// Cut: what it holds is dropped, not sent, since nobody is reading it.
void cut(broker_actor* self, handle h) {
  drop_watchers_of(self, h);
  std::vector<char>().swap(self->wr_buf(h)); // not yet handed to the socket: gone
  // What CAF already took for the socket would keep its memory until the
  // client reads or leaves; shutting the socket down fails that write at once.
  ::shutdown(static_cast<int>(h.id()), SHUT_RDWR);
  forget_connection(self, h);
  self->close(h);
}

// A client that asks and does not read (pipelined requests, never a recv)
// would make the daemon hold every answer. Past --client-buffer-bytes
// waiting for it, the connection is cut.
bool over_client_limit(broker_actor* self, handle h, const connection& conn, uint64_t more) {
  uint64_t waiting = conn.unsent_bytes + conn.ready_bytes;
  uint64_t limit = self->state.settings->client_buffer_bytes;
  if (waiting == 0 || waiting + more <= limit)
    return false; // one answer larger than the limit still goes out whole
  log_event(log_level::warn, "connection.cut_off", "a client stopped reading its answers",
            {{"connection", std::to_string(h.id())},
             {"waiting_bytes", std::to_string(waiting)},
             {"next_answer_bytes", std::to_string(more)},
             {"limit", std::to_string(limit) + " (--client-buffer-bytes)"}});
  cut(self, h);
  return true;
}

// Across all connections, answers not yet taken by their clients are capped
// (--max-queued-answer-bytes). An answer that would pass the cap is replaced
// by an error saying so, rather than reading fewer requests: answers to
// requests already taken (a chat that finishes later) would still come, and
// a pause would stall the clients that read as much as those that do not.
// What was refused is not lost: runs are in the log and can be asked again.
// Small answers (ping, health, errors, most polls) always go out, so clients
// that do not read can hold up big answers only, for --write-timeout-ms.
constexpr uint64_t always_sent_answer_bytes = 64u << 10;

bool over_queued_cap(broker_actor* self, const reply_to& to, uint64_t more) {
  auto& st = self->state;
  uint64_t cap = st.settings->max_queued_answer_bytes;
  if (more <= always_sent_answer_bytes || st.queued_bytes == 0 || st.queued_bytes + more <= cap)
    return false; // one answer alone always goes out
  log_event(log_level::warn, "connection.answer_refused", "answers clients have not read hold too many bytes",
            {{"connection", std::to_string(to.h.id())},
             {"queued_bytes", std::to_string(st.queued_bytes)},
             {"answer_bytes", std::to_string(more)},
             {"limit", std::to_string(cap) + " (--max-queued-answer-bytes)"}});
  return true;
}

} // namespace

void append_line(std::vector<char>& buf, const std::string& text) {
  // Grown once to size: a 200 MB answer (a big run's result) appended into
  // a buffer that doubles held up to three times its size at once. Still
  // doubling for many small lines; a line as big as the buffer gets exactly
  // its room.
  size_t need = buf.size() + text.size() + 1;
  if (buf.capacity() < need)
    buf.reserve(text.size() >= buf.capacity() ? need : std::max(need, 2 * buf.capacity()));
  buf.insert(buf.end(), text.begin(), text.end());
  buf.push_back('\n');
}

// Hands a connection's answers to its socket. When CAF holds nothing else
// for the client (the usual case: one answer on a quiet connection), a
// small answer is sent here and now, without a round through CAF's event
// loop to learn that the socket can take it, and without an ack. What the
// socket does not take (it is full, or it failed) stays with CAF, which
// sends it and acks it, or reports the failure, as for any other answer.
void send_answers(broker_actor* self, handle h, connection& conn) {
  constexpr size_t direct_send_bytes = 64u << 10; // bigger: no copying what remains to the front
  auto& buf = self->wr_buf(h);
  // CAF acks what it holds, in flight and waiting, and unsent_bytes is that
  // plus what was written since: equal to what waits, nothing is in flight.
  // (That holds because CAF acks at once, from its write, before it moves
  // waiting bytes to the socket, and on_transferred writes nothing.)
  if (self->state.direct_sends && !buf.empty() && buf.size() <= direct_send_bytes && conn.unsent_bytes == buf.size()) {
    ssize_t sent = ::send(static_cast<int>(h.id()), buf.data(), buf.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent > 0) {
      buf.erase(buf.begin(), buf.begin() + sent);
      conn.write_progress = std::chrono::steady_clock::now();
      set_unsent(self->state, conn, buf.size());
    }
  }
  if (!buf.empty())
    self->flush(h);
}

void forget_connection(broker_actor* self, handle h) {
  auto& st = self->state;
  auto it = st.connections.find(h.id());
  if (it == st.connections.end())
    return;
  st.held_bytes -= it->second.held_bytes;
  st.queued_bytes -= it->second.unsent_bytes;
  st.connections.erase(it);
}

void close_now(broker_actor* self, handle h) {
  drop_watchers_of(self, h);
  auto it = self->state.connections.find(h.id());
  if (it == self->state.connections.end())
    return;
  if (it->second.unsent_bytes == 0)
    return release(self, h, false);
  it->second.closing = true; // closed when drained (on_transferred) or cut (cut_stalled_writers)
}

void close_if_done(broker_actor* self, handle h) {
  auto it = self->state.connections.find(h.id());
  if (it == self->state.connections.end())
    return;
  const connection& conn = it->second;
  if (!conn.streaming && !conn.closing && conn.next_answer == conn.next_request &&
      (conn.peer_done || (!conn.keepalive && conn.one_shot_taken)))
    close_now(self, h);
}

void respond(broker_actor* self, const reply_to& to, std::string line) {
  auto it = self->state.connections.find(to.h.id());
  if (it == self->state.connections.end() || !it->second.owns(to.seq) || it->second.closing)
    return; // the client left before its answer was ready
  auto& conn = it->second;
  std::string text = with_id(std::move(line), to.id);
  // Subscriptions have their own limit (push_line).
  if (!conn.streaming) {
    if (over_client_limit(self, to.h, conn, text.size() + 1))
      return;
    if (over_queued_cap(self, to, text.size() + 1))
      text = with_id(error_line("RuntimeError",
                                "the daemon holds too many bytes of answers its clients have not read "
                                "(--max-queued-answer-bytes " +
                                  std::to_string(self->state.settings->max_queued_answer_bytes) +
                                  "); ask again later"),
                     to.id);
  }
  if (conn.ready.empty() && to.seq == conn.next_answer) {
    write_line(self, to.h, conn, text); // the usual case: nothing earlier is missing
    ++conn.next_answer;
  } else {
    auto& slot = conn.ready[to.seq]; // a subscription may queue several lines here
    conn.ready_bytes += text.size() + 1; // its text and a newline
    if (slot.empty()) {
      slot = std::move(text);
    } else {
      slot += '\n';
      slot += text;
    }
    while (!conn.ready.empty() && conn.ready.begin()->first == conn.next_answer) {
      auto first = conn.ready.begin();
      conn.ready_bytes -= std::min<uint64_t>(conn.ready_bytes, first->second.size() + 1);
      write_line(self, to.h, conn, first->second);
      conn.ready.erase(first);
      ++conn.next_answer;
    }
  }
  send_answers(self, to.h, conn);
  conn.last_activity = std::chrono::steady_clock::now();
  close_if_done(self, to.h);
}

void respond_error(broker_actor* self, const reply_to& to, const protocol::wire_error& e) {
  respond(self, to, error_line(e));
}

void respond_failure(broker_actor* self, const reply_to& to, const caf::error& err) {
  respond(self, to, actors::error_line(err));
}

void cut_off(broker_actor* self, const watcher& w, const std::string& why, const char* error_type) {
  std::string last = protocol::object_writer{}
                       .boolean("ok", false)
                       .str("error", "subscription ended: " + why + "; subscribe again with these cursors")
                       .str("error_type", error_type)
                       .str("run_id", w.run_id)
                       .integer("cursor", w.cursor)
                       .integer("event_cursor", w.event_cursor)
                       .finish();
  handle h = w.to.h;
  auto it = self->state.connections.find(h.id());
  if (it != self->state.connections.end()) {
    write_line(self, h, it->second, with_id(last, w.to.id));
    send_answers(self, h, it->second);
  }
  close_now(self, h); // drops the watcher too
}

bool push_line(broker_actor* self, const reply_to& to, std::string line, const watcher& w) {
  auto it = self->state.connections.find(to.h.id());
  if (it == self->state.connections.end() || !it->second.owns(to.seq) || it->second.closing)
    return false;
  auto& conn = it->second;
  uint64_t limit = self->state.settings->subscriber_buffer_bytes;
  uint64_t behind = conn.unsent_bytes + conn.ready_bytes;
  if (behind > 0 && behind + line.size() + 1 > limit) {
    // A client that stops reading must not make the daemon buffer without
    // bound: with a backlog already waiting, a line that would take it past
    // the limit ends the stream instead, telling the client where to resume.
    // (Lines are only sent on a drained connection, except a run's last one,
    // so a reader that keeps reading, however slowly, is never cut off.)
    cut_off(self, w, "the client stopped reading (" + std::to_string(behind) +
                       " bytes unsent, --subscriber-buffer-bytes " + std::to_string(limit) + ")", "SlowReader");
    return false;
  }
  if (conn.next_answer > to.seq) {
    write_line(self, to.h, conn, with_id(std::move(line), to.id));
    send_answers(self, to.h, conn);
  } else {
    respond(self, to, std::move(line)); // behind earlier answers on this connection
  }
  return true;
}

void begin_stream(broker_actor* self, handle h) {
  auto it = self->state.connections.find(h.id());
  if (it != self->state.connections.end())
    it->second.streaming = true; // no more requests on this connection
}

void end_stream(broker_actor* self, handle h) {
  if (self->state.connections.count(h.id()))
    close_now(self, h);
}

void on_transferred(broker_actor* self, const caf::io::data_transferred_msg& msg) {
  auto it = self->state.connections.find(msg.handle.id());
  if (it == self->state.connections.end())
    return;
  auto& conn = it->second;
  if (msg.written > 0)
    conn.write_progress = std::chrono::steady_clock::now();
  set_unsent(self->state, conn, msg.remaining);
  if (msg.remaining > 0)
    return;
  if (conn.closing)
    return release(self, msg.handle, true);
  if (conn.streaming) // only subscriptions hold news back for a drained client
    self->send(self, connection_drained{msg.handle.id()});
}

uint64_t unsent_bytes(broker_actor* self, handle h) {
  auto it = self->state.connections.find(h.id());
  return it == self->state.connections.end() ? 0 : it->second.unsent_bytes;
}

steady_time last_taken(broker_actor* self, handle h) {
  auto it = self->state.connections.find(h.id());
  return it == self->state.connections.end() ? steady_time{} : it->second.write_progress;
}

void cut_stalled_writers(broker_actor* self, steady_time now) {
  auto& st = self->state;
  std::vector<int64_t> stalled;
  for (auto& [id, conn] : st.connections)
    if (conn.unsent_bytes > 0 && (!conn.streaming || conn.closing) &&
        now - conn.write_progress >= st.settings->write_timeout)
      stalled.push_back(id); // a live subscription has --subscriber-stall-ms instead
  for (int64_t id : stalled) {
    log_event(log_level::warn, "connection.write_timeout", "a client took none of its answer in time",
              {{"connection", std::to_string(id)},
               {"unsent_bytes", std::to_string(st.connections.at(id).unsent_bytes)},
               {"limit", std::to_string(st.settings->write_timeout.count()) + " ms (--write-timeout-ms)"}});
    cut(self, handle::from_int(id));
  }
}

} // namespace hb::actors
