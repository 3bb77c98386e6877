// Python's dict.update on decoded JSON objects: the answers that merge an
// agent's or a profile's members into their own ({"ok": true, **result})
// must keep the members' order and let a later member replace an earlier
// one in place, as Studio's bridge does.
#pragma once

#include "protocol/json_text.hpp"

#include <string>

namespace hb::protocol {

inline void update_from(json& into, const json& from) {
  if (from.is_object())
    for (auto it = from.begin(); it != from.end(); ++it)
      into[it.key()] = it.value();
}

// The same from JSON text; text that is not an object adds nothing.
inline void update_from_text(json& into, const std::string& object_text) {
  update_from(into, json::parse(object_text, nullptr, false));
}

} // namespace hb::protocol
