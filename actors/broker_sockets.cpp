// The broker's sockets in CAF's event loop: the listening socket, and
// client connections that keep answering after the client's EOF and that
// come out of accept ready to use.
//
// Both are CAF servants of our own (a doorman, a scribe) around CAF's
// event handlers, written against CAF 0.17's sources (the same from 0.17.3
// to 0.17.6, Debian's). Ids of connection handles are socket fds.
#include "actors/broker_state.hpp"

#include <caf/config.hpp>
#include <caf/io/doorman.hpp>
#include <caf/io/network/acceptor_impl.hpp>
#include <caf/io/network/default_multiplexer.hpp>
#include <caf/io/network/interfaces.hpp>
#include <caf/io/network/native_socket.hpp>
#include <caf/io/network/stream_impl.hpp>
#include <caf/io/scribe.hpp>
#include <caf/policy/tcp.hpp>

#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <utility>

namespace hb::actors {

namespace {

namespace net = caf::io::network;

static_assert(CAF_MAJOR_VERSION == 0 && CAF_MINOR_VERSION == 17,
              "check these servants against this CAF version's scribe_impl, doorman_impl and manager::detach");

// A socket's address or port, or nothing (as CAF's own servants answer).
template <class T>
T or_nothing(caf::expected<T> found) {
  return found ? std::move(*found) : T{};
}

// -- connections ready from accept -------------------------------------------------
//
// CAF accepts with accept() and then sets a connection's flags one system
// call at a time: close-on-exec (fcntl twice) in its accept, non-blocking
// (fcntl twice) and TCP_NODELAY (a setsockopt that fails on a unix socket)
// in every event handler's constructor. That was 5 of the 14 system calls
// a one-request connection cost the broker's one I/O thread. accept4 makes
// the socket with its flags; the stream below skips CAF's setting them again.

struct accept_ready {
  explicit accept_ready(bool tcp) : tcp(tcp) {}

  // CAF's contract: false on an error, true with `result` invalid when there
  // was nothing to accept after all.
  bool try_accept(net::native_socket& result, net::native_socket listening) const {
    result = ::accept4(listening, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (result == net::invalid_native_socket)
      return errno == EAGAIN || errno == EWOULDBLOCK;
    if (tcp) { // as CAF's own TCP connections; on a unix socket they mean nothing
      net::tcp_nodelay(result, true);
      net::keepalive(result, true);
    }
    return true;
  }

  bool tcp;
};

// A stream over a socket whose flags are already set: constructed on no
// socket, so that CAF's event handler does not set them again, then given
// its own (closed by the event handler when it goes, as usual).
class ready_stream final : public net::stream_impl<caf::policy::tcp> {
public:
  ready_stream(net::default_multiplexer& mx, net::native_socket fd) : stream_impl(mx, net::invalid_native_socket) {
    fd_ = fd;
  }
};

// -- a client's EOF --------------------------------------------------------------
//
// CAF 0.17 treats a read of 0 bytes (the client's EOF) like a broken
// connection: the scribe leaves the broker with a connection_closed_msg,
// and nothing can be written to it any more. A client that sends its
// request and then shuts down its sending side (`sendall(...);
// shutdown(SHUT_WR); recv()`, or `nc -N`) is still waiting for its
// answers, and the seed answers it. This scribe stays with the broker when
// the client has only finished sending, and reports that as a 0-byte
// new_data_msg (a real read never delivers 0 bytes); the broker answers
// what was asked, then closes the connection as usual. Answers keep going
// through the one stream of the socket, so they stay in order.
//
// The hooks are the ones CAF calls while detaching a servant after an I/O
// failure (manager::detach: detach_from, then detach_message).
class client_scribe final : public caf::io::scribe {
public:
  client_scribe(net::default_multiplexer& mx, net::native_socket fd)
    : scribe(net::conn_hdl_from_socket(fd)), stream_(mx, fd) {}

  void configure_read(caf::io::receive_policy::config config) override {
    stream_.configure_read(config);
    if (!launched_) { // the broker configures a connection's reads first: it starts reading then
      launched_ = true;
      stream_.start(this);
    }
  }
  void ack_writes(bool enable) override { stream_.ack_writes(enable); }
  std::vector<char>& wr_buf() override { return stream_.wr_buf(); }
  std::vector<char>& rd_buf() override { return stream_.rd_buf(); }
  void flush() override { stream_.flush(this); }

  void graceful_shutdown() override {
    closing_ = true; // the broker closes it: a real detach
    // The FIN goes now (or once what CAF still writes is out), not at the
    // close: a process forked without exec (an embedded agent's
    // multiprocessing) may hold a copy of the socket, and would otherwise
    // keep the client waiting for its end of stream.
    stream_.graceful_shutdown();
    detach(&stream_.backend(), false);
  }

  std::string addr() const override { return or_nothing(net::remote_addr_of_fd(stream_.fd())); }
  uint16_t port() const override { return or_nothing(net::remote_port_of_fd(stream_.fd())); }
  void add_to_loop() override { stream_.activate(this); }
  void remove_from_loop() override { stream_.passivate(); }

protected:
  void detach_from(caf::io::abstract_broker* broker) override {
    // Called once the scribe has already let go of its broker. A first
    // failure on a socket whose peer has only finished sending is the EOF:
    // take the broker back instead of leaving it. Anything else (the broker
    // closing it, an error, a write into a gone client) detaches for good.
    eof_ = !closing_ && !eof_seen_ && peer_finished_sending();
    if (!eof_)
      return scribe::detach_from(broker);
    eof_seen_ = true;
    set_parent(broker);
  }

  caf::message detach_message() override {
    if (eof_)
      return caf::make_message(caf::io::new_data_msg{hdl(), {}});
    return scribe::detach_message();
  }

private:
  bool peer_finished_sending() const {
    char byte;
    return ::recv(static_cast<int>(hdl().id()), &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
  }

  ready_stream stream_;
  bool launched_ = false;
  bool closing_ = false;
  bool eof_seen_ = false;
  bool eof_ = false;
};

// -- the listening socket ----------------------------------------------------------

// Set once a successor holds the listening socket too (handing over).
std::atomic<bool> socket_shared{false};

class listening_doorman final : public caf::io::doorman {
public:
  listening_doorman(net::default_multiplexer& mx, net::native_socket fd, bool tcp)
    : doorman(net::accept_hdl_from_socket(fd)), acceptor_(mx, fd, tcp) {}

  bool new_connection() override {
    if (detached())
      return false; // closed while the accept was under way
    auto& mx = acceptor_.backend();
    caf::io::scribe_ptr scribe = caf::make_counted<client_scribe>(mx, acceptor_.accepted_socket());
    handle h = scribe->hdl();
    parent()->add_scribe(std::move(scribe));
    return doorman::new_connection(&mx, h);
  }

  // CAF shuts a closed acceptor's socket down, which would stop the
  // successor's accepting too: a shared one is only taken out of the loop.
  // It stays attached: the loop applies that change after the events it has
  // in hand, and an accept among them is served here like any other
  // (detached, its connection would be dropped unread, reset at exit).
  void graceful_shutdown() override {
    if (socket_shared) {
      acceptor_.passivate();
      return;
    }
    acceptor_.graceful_shutdown();
    detach(&acceptor_.backend(), false);
  }

  void launch() override { acceptor_.start(this); }
  std::string addr() const override { return or_nothing(net::local_addr_of_fd(acceptor_.fd())); }
  uint16_t port() const override { return or_nothing(net::local_port_of_fd(acceptor_.fd())); }
  void add_to_loop() override { acceptor_.activate(this); }
  void remove_from_loop() override { acceptor_.passivate(); }

private:
  net::acceptor_impl<accept_ready> acceptor_;
};

caf::io::accept_handle listen_on_fd(caf::io::abstract_broker* self, int listen_fd) {
  auto fd = static_cast<net::native_socket>(listen_fd);
  auto* mx = dynamic_cast<net::default_multiplexer*>(&self->backend());
  if (!mx)
    return self->add_doorman(fd); // another backend: EOF ends connections as CAF does
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  bool tcp = ::getsockname(listen_fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0 && addr.ss_family != AF_UNIX;
  caf::io::doorman_ptr doorman = caf::make_counted<listening_doorman>(*mx, fd, tcp);
  auto h = doorman->hdl();
  self->add_doorman(std::move(doorman));
  return h;
}

} // namespace

listener listen_on(int listen_fd) {
  return [listen_fd](caf::io::abstract_broker* self) { return listen_on_fd(self, listen_fd); };
}

void share_listening_socket() { socket_shared = true; }

} // namespace hb::actors
