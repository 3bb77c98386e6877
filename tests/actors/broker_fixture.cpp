#define CAF_SUITE broker_fixture
#include "tests/actors/broker_fixture.hpp"

#include "actors/errors.hpp"
#include "actors/log_messages.hpp"
#include "actors/questions.hpp"
#include "actors/session.hpp"
#include "actors/session_messages.hpp"
#include "actors/studio_messages.hpp"

namespace hb::test {

using namespace hb::actors;

namespace {

// A session as the broker sees one: it answers what a session answers and
// records what reached it.
caf::behavior fake_session(caf::event_based_actor* self, std::string id, caf::actor broker,
                           std::shared_ptr<session_activity> activity, std::shared_ptr<broker_world> w) {
  auto heard = [=](std::string what) { w->received[id].push_back(std::move(what)); };
  auto view = [=] {
    session_view v;
    v.created = true;
    v.session_id = id;
    v.running = w->running[id];
    v.current_run_id = v.running ? "run-of-" + id : "";
    v.profile = "default";
    v.harness = "embedded";
    v.agent = "{}";
    return v;
  };
  return {
    [=](chat_request& chat) -> caf::result<chat_reply> {
      heard("chat " + chat.turn.message_text);
      if (chat.turn.message_text == "fail to build") { // as a session whose first agent failed
        self->send(broker, session_unlisted{id});
        return make_error(errc::failed, "no agent");
      }
      if (!w->chats_answer) {
        auto rp = self->make_response_promise();
        w->held_chats.emplace_back(id, rp);
        return caf::result<chat_reply>{caf::delegated<chat_reply>{}};
      }
      // As a session whose turn began: running, in the table the broker counts.
      activity->put(self->id(), {id, chat.turn.message_text == "work" ? "work" : "default", true});
      return chat_reply{"run-of-" + id, id, {}};
    },
    [=](const interrupt_turn&) {
      heard("interrupt");
      return interrupt_reply{id, true};
    },
    [=](const steer_turn& s) {
      heard("steer " + s.text);
      return steer_reply{true, s.text};
    },
    [=](history_of) {
      heard("history");
      return history_reply{id, "[]"};
    },
    [=](const session_query&) { return view(); },
    [=](destroy_session) {
      heard("destroy");
      self->quit();
      return true;
    },
    [=](const collect_idle&) { return false; },
    [=](drain_session) { return true; },
    [=](const profile_of&) { return std::make_tuple(true, std::string("default")); },
  };
}

caf::behavior fake_writer(caf::event_based_actor*, int) { // (the int: see ask_later)
  return {
    [](const log_watch&) {},
    [](const log_health_query&) { return log_health{}; },
    [](run_event&) {},
  };
}

caf::behavior fake_reader(caf::event_based_actor*, std::shared_ptr<broker_world> w) {
  auto find = [w](const std::string& run_id) -> expected<std::string> {
    auto it = w->runs.find(run_id);
    if (it == w->runs.end())
      return make_error(errc::not_found, "unknown run: " + run_id);
    return it->second;
  };
  return {
    [=](const output_query& q) -> caf::result<output_reply> {
      auto line = find(q.run_id);
      if (!line)
        return line.error();
      return output_reply{*line, true, 1, 0, true, false};
    },
    [=](const result_query& q) -> caf::result<std::string> {
      auto line = find(q.run_id);
      if (!line)
        return line.error();
      return *line;
    },
  };
}

} // namespace

broker_fixture::broker_fixture() {
  settings->agent_root = "/agent";
  settings->version_json = R"({"version": "test"})";
  writer = keep(sys.spawn(fake_writer, 0));
  reader = keep(sys.spawn(fake_reader, world));
}

void broker_fixture::start(const std::vector<storage::session_row>& dormant) {
  questions = keep(spawn_questions(sys, questions_links{writer, {}, {}}));
  broker_links links;
  links.writer = writer;
  links.questions = questions;
  links.readers = {reader};
  links.spawn_session = [w = world](caf::actor_system& sys, const std::string& id, session_links_ptr around,
                                    const storage::session_row* dormant) {
    w->spawned.push_back(dormant ? id + " (dormant)" : id);
    return sys.spawn(fake_session, id, around->broker, around->activity, w);
  };
  auto acceptor = acceptor_;
  auto& mpx = this->mpx;
  listener listen = [acceptor, &mpx](caf::io::abstract_broker* self) {
    self->add_doorman(mpx.new_doorman(acceptor, 1));
    return acceptor;
  };
  broker = keep(spawn_broker(sys, std::move(listen), settings, links, dormant));
  deliver();
}

caf::io::connection_handle broker_fixture::connect() {
  auto h = caf::io::connection_handle::from_int(next_connection_++);
  mpx.add_pending_connect(acceptor_, h);
  mpx.accept_connection(acceptor_);
  deliver();
  return h;
}

void broker_fixture::send(caf::io::connection_handle h, const std::string& line) {
  std::vector<char> bytes(line.begin(), line.end());
  bytes.push_back('\n');
  mpx.virtual_send(h, bytes);
  deliver();
}

std::vector<std::string> broker_fixture::answers(caf::io::connection_handle h) {
  const auto& out = mpx.output_buffer(h);
  size_t& taken = read_[h.id()];
  std::vector<std::string> lines;
  for (size_t end; (end = std::string(out.begin() + taken, out.end()).find('\n')) != std::string::npos;) {
    lines.emplace_back(out.begin() + taken, out.begin() + taken + end);
    taken += end + 1;
  }
  return lines;
}

void broker_fixture::release_chats() {
  for (auto& [id, rp] : std::exchange(world->held_chats, {}))
    rp.deliver(chat_reply{"run-of-" + id, id, {}});
  deliver();
}

std::string broker_fixture::ask_once(const std::string& line) {
  auto h = connect();
  send(h, line);
  auto lines = answers(h);
  CAF_REQUIRE_EQUAL(lines.size(), 1u);
  return lines[0];
}

} // namespace hb::test
