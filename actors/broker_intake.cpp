// One request line, from the connection's framing to the router: its place
// in the connection's answer order, the token, what it says about its
// connection (keepalive, id), and its decoding into one typed request. A
// line that is no request gets its error answer here and goes no further.
#include "actors/broker_state.hpp"

#include "actors/requests.hpp"
#include "protocol/request.hpp"

namespace hb::actors {

using protocol::error_line;
using protocol::json;

namespace {

// Same time whatever prefix matches, so the comparison leaks nothing.
bool token_matches(const std::string& expected, const json& given) {
  if (!given.is_string())
    return false;
  const std::string& text = given.get_ref<const std::string&>();
  unsigned char differs = text.size() != expected.size();
  for (size_t i = 0; i < expected.size(); ++i)
    differs |= static_cast<unsigned char>(expected[i] ^ (i < text.size() ? text[i] : 0));
  return differs == 0;
}

void refuse_unauthorized(broker_actor* self, connection& conn, const reply_to& to) {
  // A rejected client learns nothing but the rejection.
  conn.keepalive = false;
  conn.one_shot_taken = true;
  respond(self, to, error_line("PermissionError", "unauthorized"));
}

} // namespace

void take_request(broker_actor* self, handle h, const std::string& line) {
  auto& conn = self->state.connections.at(h.id());
  reply_to to{h, conn.next_request++, ""};
  const std::string& token = self->state.settings->token;
  json req;
  try {
    req = protocol::decode_request(line);
  } catch (const protocol::wire_error& e) {
    // A line that is no request cannot ask to keep the connection.
    conn.keepalive = false;
    conn.one_shot_taken = true;
    if (!token.empty() && !conn.authenticated)
      return refuse_unauthorized(self, conn, to);
    return respond_error(self, to, e);
  }
  if (!token.empty() && !conn.authenticated) {
    if (!token_matches(token, protocol::field(req, "token")))
      return refuse_unauthorized(self, conn, to);
    authenticate(self, conn);
  }
  req.erase("token"); // never passed on, stored or logged
  // Every request says whether the connection stays: one without
  // "keepalive": true is the client's last, answered and then closed.
  requests::envelope envelope = requests::read_envelope(req);
  conn.keepalive = envelope.keepalive;
  to.id = std::move(envelope.id);
  if (!conn.keepalive)
    conn.one_shot_taken = true; // like the seed: one request, then the answer, then close
  try {
    route(self, to, requests::decode(req));
  } catch (const protocol::wire_error& e) {
    respond_error(self, to, e);
  } catch (const std::exception& e) {
    respond(self, to, error_line("RuntimeError", e.what()));
  }
}

} // namespace hb::actors
