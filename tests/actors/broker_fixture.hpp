// The broker on CAF's test multiplexer: a test opens connections, sends
// request lines and reads the answer lines the broker wrote, with every
// actor on the test's thread. Around the broker: stand-in sessions (made by
// the broker's session_spawner, answering as a session does and recording
// what reached them), a stand-in log writer and reader, and the real
// questions actor.
#pragma once

#include "tests/actors/actor_fixture.hpp"

#include "actors/broker.hpp"
#include "actors/vocabulary.hpp"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace hb::test {

// What the stand-ins around the broker saw, and how they answer.
struct broker_world {
  // Sessions the broker made, in order, with what each received (the
  // message's type name and, for a chat, its message text).
  std::vector<std::string> spawned;
  std::map<std::string, std::vector<std::string>> received;
  std::map<std::string, bool> running; // what each session says of itself
  bool chats_answer = true; // false: chats wait until release_chats() (a turn not armed yet)
  std::vector<std::pair<std::string, caf::response_promise>> held_chats;
  // The reader's runs: get_output and get_result answer these lines.
  std::map<std::string, std::string> runs;
};

class broker_fixture : public actor_fixture {
public:
  broker_fixture();

  // (Re)starts the broker with these settings and sessions known from the log.
  void start(const std::vector<storage::session_row>& dormant = {});

  // A new client connection, accepted by the broker.
  caf::io::connection_handle connect();
  // Sends `line` and a newline, and lets everything it causes happen.
  void send(caf::io::connection_handle h, const std::string& line);
  // The answer lines written to `h` since the last call.
  std::vector<std::string> answers(caf::io::connection_handle h);
  // Answers the chats held while chats_answer was false.
  void release_chats();
  // One request on a connection of its own; its one answer line.
  std::string ask_once(const std::string& line);

  std::shared_ptr<actors::daemon_settings> settings = std::make_shared<actors::daemon_settings>();
  std::shared_ptr<broker_world> world = std::make_shared<broker_world>();
  caf::actor broker, writer, reader, questions;

private:
  caf::io::accept_handle acceptor_ = caf::io::accept_handle::from_int(1);
  // High ids: the broker shuts sockets down by a handle's id, and these are no fds.
  int64_t next_connection_ = 1'000'000;
  std::map<int64_t, size_t> read_; // bytes of each output buffer already returned
};

} // namespace hb::test
