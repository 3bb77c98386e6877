#include "actors/errors.hpp"

#include <caf/make_message.hpp>
#include <caf/message.hpp>

#include <utility>

namespace hb::actors {

namespace {

const char* python_name(errc code) {
  switch (code) {
    case errc::bad_request: return "ValueError";
    case errc::not_found: return "KeyError";
    case errc::wrong_type: return "TypeError";
    case errc::pruned: return "RunPruned";
    case errc::failed:
    case errc::agent_raised: break;
  }
  return "RuntimeError";
}

} // namespace

std::string to_string(errc code) {
  switch (code) {
    case errc::bad_request: return "bad_request";
    case errc::not_found: return "not_found";
    case errc::failed: return "failed";
    case errc::wrong_type: return "wrong_type";
    case errc::agent_raised: return "agent_raised";
    case errc::pruned: return "pruned";
  }
  return "unknown";
}

caf::error make_error(errc code, std::string message, std::string python_type) {
  return {static_cast<uint8_t>(code), error_category, caf::make_message(std::move(message), std::move(python_type))};
}

caf::error to_error(const protocol::wire_error& e) {
  // A KeyError's text is already quoted as Python prints it: it travels as
  // the agent's own, so that nothing quotes it twice.
  for (errc code : {errc::bad_request, errc::wrong_type, errc::failed, errc::pruned})
    if (e.type == python_name(code))
      return make_error(code, e.what());
  return make_error(errc::agent_raised, e.what(), e.type);
}

namespace {
// (message, python type) of an error of ours.
std::pair<std::string, std::string> words_of(const caf::error& err) {
  const auto& ctx = err.context();
  if (!ctx.match_elements<std::string, std::string>())
    return {};
  return {ctx.get_as<std::string>(0), ctx.get_as<std::string>(1)};
}
} // namespace

std::string error_message(const caf::error& err) {
  return err.category() == error_category ? words_of(err).first : caf::to_string(err);
}

std::string error_line(const caf::error& err) {
  if (err.category() != error_category)
    return protocol::error_line("RuntimeError", "hermes-bridge internal error: " + caf::to_string(err));
  auto code = static_cast<errc>(err.code());
  auto [message, python_type] = words_of(err);
  if (code == errc::not_found)
    return protocol::error_line(protocol::key_error(message));
  return protocol::error_line(code == errc::agent_raised && !python_type.empty() ? python_type : python_name(code),
                              message);
}

} // namespace hb::actors
