#include "bridge/agent_host.hpp"

#include "protocol/json_text.hpp"

namespace hb::bridge {

turn_outcome failed_turn(std::string why) {
  turn_outcome out;
  out.error = std::move(why);
  out.result = protocol::object_writer{}.str("error", *out.error).finish();
  return out;
}

} // namespace hb::bridge
